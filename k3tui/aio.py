"""Running a command's event loop to its end, Ctrl-C included, in bounded time.

``asyncio.run`` ends by cancelling every task still pending and waiting for ALL of them, with
no limit: one task that does not end when cancelled (a library's clean-up awaiting a peer that
is gone) keeps the process alive after its work is done and its recording closed. Seen with
``k3tui bisect`` interrupted by Ctrl-C: about 1 in 30 runs on a loaded machine printed nothing
more and never exited (a fault-handler dump showed ``asyncio.runners._cancel_all_tasks``). An
operator who pressed Ctrl-C must get the prompt back. :func:`run` behaves as ``asyncio.run``
(Ctrl-C cancels the main task, which may handle it and return; a cancel it lets through is a
``KeyboardInterrupt``) but gives the tasks left over ``grace`` seconds to end, then closes the
loop and says how many did not.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

GRACE_S = 5.0
"""Seconds the tasks left over when the main one ended get to end once cancelled."""


def run(main: Coroutine[Any, Any, T], *, grace: float = GRACE_S) -> T:
    """Run ``main`` on a new event loop until it ends; see the module docstring."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)  # (the current loop while it runs, as asyncio.run makes it)
    task = loop.create_task(main)
    interrupted = 0

    def on_sigint(signum: int, frame: object) -> None:
        nonlocal interrupted
        interrupted += 1
        if interrupted > 1 or task.done():
            raise KeyboardInterrupt  # a second Ctrl-C: out now, as asyncio.run does
        loop.call_soon_threadsafe(task.cancel)

    own = threading.current_thread() is threading.main_thread() and (
        signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )
    if own:
        signal.signal(signal.SIGINT, on_sigint)
    try:
        try:
            return loop.run_until_complete(task)
        except asyncio.CancelledError:
            if interrupted:
                raise KeyboardInterrupt from None
            raise
    finally:
        if own:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            _end_the_rest(loop, grace)
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def _end_the_rest(loop: asyncio.AbstractEventLoop, grace: float) -> None:
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for t in pending:
        t.cancel()
    stuck: set[asyncio.Task[Any]] = set()
    if pending:
        _, stuck = loop.run_until_complete(asyncio.wait(pending, timeout=grace))
    for t in pending:
        if t.done() and not t.cancelled() and (exc := t.exception()) is not None:
            loop.call_exception_handler(
                {"message": "unhandled exception while ending the command", "exception": exc, "task": t}
            )
    try:
        loop.run_until_complete(asyncio.wait_for(loop.shutdown_asyncgens(), grace))
    except TimeoutError:
        pass
    if stuck:
        for t in stuck:
            t._log_destroy_pending = False  # said once below, not once per task at exit
        print(f"k3tui: {len(stuck)} task(s) did not end within {grace:g} s of the end; left behind", file=sys.stderr)

"""A simulated process's stop on TERM or INT, with no lock taken inside a signal handler.

A stop often sends a process two TERMs close together: the TERM to its process group and the
same signal forwarded by its parent (the simulated ``docker run`` client forwards it, as the
real one does). Python runs a signal handler in the main thread between two bytecodes, so a
handler that calls ``Event.set()`` can run while that thread already holds the Event's lock:
inside ``Event.wait()`` (the replay's pauses) or inside the first handler's own ``set()``
when the second TERM comes. It then waits forever for a lock its own thread holds. Seen: the
simulated ``vllm serve`` hung in exactly that nested ``set()``, never printed its shutdown
lines, and was KILLed by the stop's sweep five seconds later (the demo cast test's flake).

So the handler does nothing: the C-level handler writes the signal's number to a wakeup pipe
(:func:`signal.set_wakeup_fd`), and a thread of its own reads it and sets the event, taking
the lock like any other thread.
"""

from __future__ import annotations

import os
import signal
import threading

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def stop_on_signals(event: threading.Event) -> None:
    """Set ``event`` when TERM or INT arrives. Call once, from the main thread."""
    r, w = os.pipe()
    os.set_blocking(w, False)  # the C handler must never block on a full pipe
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    for sig in STOP_SIGNALS:
        signal.signal(sig, _noop)
    threading.Thread(target=_watch, args=(r, event), daemon=True, name="stop-signals").start()


def _noop(signum: int, frame: object) -> None:
    """Installed so that TERM does not kill the process at once; the wakeup pipe does the work."""


def _watch(fd: int, event: threading.Event) -> None:
    wanted = {int(s) for s in STOP_SIGNALS}
    while True:
        try:
            data = os.read(fd, 64)
        except InterruptedError:
            continue
        if not data:
            return
        if wanted.intersection(data):
            event.set()

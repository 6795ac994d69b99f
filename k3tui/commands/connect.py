"""``k3tui connect TARGET [--run CMD] [--record FILE]`` — reach a host (or a group), headless.

Connects to every host of the target (``local`` is this machine; ``a,b`` is a group: one connection each, opened
concurrently), prints one summary line per host (address, user, host-key fingerprint,
clock skew), optionally runs CMD on every host and prints its output and exit status,
and records all of it when ``--record`` is given. The TUI wiring lives elsewhere; this
command is what a script (or a tired engineer checking reachability) uses.

Exit status: 0 when every host connected (and CMD, if any, exited 0 everywhere), 1 when
CMD failed somewhere, 2 for a connection error (one line on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from .. import aio
from ..textsafe import neutralise
from ._common import add_record_option, add_target_options

HELP = "connect to a host (or a group) and open a live session"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_target_options(p, nargs="?")
    add_record_option(p)
    p.add_argument("--run", metavar="CMD", help="run CMD on every host and print its output and exit status")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds CMD may run (default 60)")


def run(args: argparse.Namespace) -> int:
    from ..remote.target import parse_group
    from ..scene.session import reject_inventory

    reject_inventory(args)
    if getattr(args, "inventory", None):  # issue 9: the inventory's hosts, each with its own SSH options
        from ..fleet.cli import nodes_for

        targets = [n.target for n in nodes_for(args)]
    else:
        targets = parse_group(args.target)
    recorder = _recorder(args, [t.alias for t in targets])
    try:
        code = aio.run(_session(args, targets, recorder.emit if recorder else None))
    finally:
        if recorder is not None:
            recorder.close()
    if recorder is not None and recorder.failure:  # a full disk is never silent (issue 16)
        from ..errors import RecordingError

        raise RecordingError(recorder.failure)
    return code


def _recorder(args: argparse.Namespace, aliases: list[str]) -> Any:
    if not args.record:
        return None
    from ..events import Header
    from ..recording import Recorder

    return Recorder(args.record, Header(host=",".join(aliases), title="k3tui connect"))


async def _session(args: argparse.Namespace, targets: list[Any], emit: Any) -> int:
    from ..remote.ssh import connect_group

    if args.target == "local":
        from ..remote.local import LocalHost

        hosts: list[Any] = [await LocalHost(emit=emit).__aenter__()]
    elif getattr(args, "inventory", None) or len(targets) > 1:  # a group: each node's role is recorded (issue 9)
        from ..fleet.cli import connect_inventory

        results, _ = await connect_inventory(args, emit)
        hosts = [r for r in results if not isinstance(r, BaseException)]
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            await asyncio.gather(*(h.close() for h in hosts))
            raise failed[0]
    else:
        hosts = await connect_group(
            targets,
            identity=args.identity,
            known_hosts=args.known_hosts,
            accept_new_host_key=args.accept_new_host_key,
            ssh_config=args.ssh_config,
            connect_timeout=args.connect_timeout,
            emit=emit,
        )
    try:
        for h in hosts:
            skew = f"{h.clock_skew:+.3f}s" if h.clock_skew is not None else "unknown"
            key = h.fingerprint or "-"
            print(neutralise(f"connected: {h.alias} {h.address} user={h.user} key={key} clock-skew={skew}"), flush=True)
        if not args.run:
            return 0
        results = await asyncio.gather(*(h.run(args.run, timeout=args.timeout, purpose="operator") for h in hosts))
        return _print_results(hosts, results)
    finally:
        await asyncio.gather(*(h.close() for h in hosts))


def _print_results(hosts: list[Any], results: list[Any]) -> int:
    """Print each host's output, redacted (incidents are screen-shared) and neutralised."""
    from ..redact import Redactor

    red = Redactor.from_environment()
    code = 0
    many = len(hosts) > 1
    for h, res in zip(hosts, results, strict=True):
        prefix = f"[{h.alias}] " if many else ""
        for stream, text in ((sys.stdout, res.stdout), (sys.stderr, res.stderr)):
            for line in neutralise(red.text(text)).splitlines():
                print(f"{prefix}{line}", file=stream)
        why = f" ({res.error})" if res.error else ""
        print(
            f"exit: {h.alias} {res.status if res.status is not None else '-'}{why} in {res.duration:.2f}s", flush=True
        )
        code = code or (0 if res.ok else 1)
    return code

"""``k3tui replay --follow FILE|[user@]host:PATH --headless`` — print a live recording as it is written.

Read-only by construction: the follower reads one file (locally, or with ``tail``/``flock`` over
SSH) and never sends an intent to any host; the first line says so. Each event is printed as it
arrives, a chain break at once on stderr (``WARNING: … TAMPERED``), and the run ends with the
recording: its end (sealed, or the recorder killed) and the same ``result:`` line as
``replay --headless`` of the finished file. Exit 1 when the chain broke.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from .. import aio
from ..errors import UsageError

READ_ONLY = "LIVE — following (read-only: sends nothing to any host)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--follow", action="store_true", help="follow FILE or [user@]host[:port]:PATH while it is recorded (read-only)"
    )
    p.add_argument(
        "--from",
        dest="follow_from",
        choices=("START", "END"),
        default="START",
        help="with --follow: catch up from the start (default) or show only what is written from now on",
    )
    p.add_argument("-i", "--identity", action="append", default=[], help="with a remote --follow: private key file")
    p.add_argument("--known-hosts", help="with a remote --follow: known_hosts file (default: ~/.ssh/known_hosts)")
    p.add_argument(
        "--accept-new-host-key", action="store_true", help="with a remote --follow: accept an UNKNOWN host key"
    )
    p.add_argument("--ssh-config", help="with a remote --follow: ssh config file (default: ~/.ssh/config)")
    p.add_argument("--connect-timeout", type=float, default=10.0, help="with a remote --follow: seconds (default 10)")


def run_headless(args: argparse.Namespace) -> int:
    """Follow to the end of the recording, printing; returns the exit status."""
    return aio.run(_main(args, sys.stdout))


def run_screen(args: argparse.Namespace) -> int:
    """The replay screen in LIVE — following mode; a remote file is mirrored to a private spool."""
    import shutil
    import tempfile
    from pathlib import Path

    from ..follow import LiveFollow
    from ._common import app_class

    spool = Path(tempfile.mkdtemp(prefix="k3tui-follow-"))  # mode 700: the mirror is the user's alone
    try:
        live = LiveFollow(lambda: open_source(args), spool, from_end=args.follow_from == "END")
        app_class()(live=live, home_dirs=[]).run()
    finally:
        shutil.rmtree(spool, ignore_errors=True)
    return 0


async def open_source(args: argparse.Namespace) -> tuple[Any, Any]:
    """(source, host or None) for ``args.file``: a local path or ``[user@]host[:port]:PATH``."""
    from ..follow import LocalSource, SshSource, split_remote

    remote = split_remote(args.file)
    if remote is None:
        return LocalSource(args.file), None
    from ..remote.ssh import connect

    target, path = remote
    host = await connect(
        target,
        identity=args.identity,
        known_hosts=args.known_hosts,
        accept_new_host_key=args.accept_new_host_key,
        ssh_config=args.ssh_config,
        connect_timeout=args.connect_timeout,
    )
    return SshSource(host, path), host


async def _main(args: argparse.Namespace, out: TextIO) -> int:
    from ..follow import follow

    if args.follow_from not in ("START", "END"):
        raise UsageError("--from takes START or END")
    source, host = await open_source(args)
    try:
        return await _print(follow(source, from_end=args.follow_from == "END"), source.where, out)
    finally:
        await source.close()
        if host is not None:
            await host.close()


async def _print(items: Any, where: str, out: TextIO) -> int:
    from ..follow import Arrived, Broken, CaughtUp, Ended, Note
    from ..state import SessionState, reduce
    from ..textsafe import neutralise
    from .demo import result_of_state

    state, broken = SessionState(), False
    out.write(f"following {neutralise(where)}: {READ_ONLY}\n")
    async for item in items:
        if isinstance(item, Arrived):
            reduce(state, item.event)
            out.write(_event_line(item.event) + "\n")
        elif isinstance(item, Broken):
            broken = True
            out.flush()
            sys.stderr.write(f"k3tui: WARNING: {neutralise(item.message)} — what follows that line is unproven\n")
            sys.stderr.flush()
        elif isinstance(item, Note):
            sys.stderr.write(f"k3tui: note: {neutralise(item.message)}\n")
        elif isinstance(item, CaughtUp):
            out.write(f"caught up: {item.events} events; now live\n")
        elif isinstance(item, Ended):
            out.write(f"end: {neutralise(item.message)}\n")
        out.flush()
    stage, exc = result_of_state(state)
    out.write(f"result: stage={stage} exception={exc}\n")
    out.flush()
    return 1 if broken else 0


def _event_line(e: Any) -> str:
    from .. import events as ev
    from ..textsafe import neutralise

    host = f"[{e.host}] " if e.host else ""
    return neutralise(f"{e.t:8.2f}s {host}{ev.kind_of(e)}: {ev.summary(e, 150)}".replace("\n", " "))

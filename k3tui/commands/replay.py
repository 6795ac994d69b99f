"""`k3tui replay FILE` — replay a session file or a repro package (runs nothing on any host).

In the TUI by default. ``--headless`` folds the whole recording with the same replay
engine the Replay screen uses (:class:`~k3tui.replay.Replay`) and prints what the screen
shows at the end: the hosts (with their role in a multi-node deployment, ``tray01 ·
head``), each run and where it stopped, the first root exception and the node it came
from, the deployment's verdict over every node's log when a fleet freeze recorded them,
and the same ``result:`` line ``k3tui demo --headless`` ends with. Every string from the
file goes through :func:`~k3tui.textsafe.neutralise`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a .k3rec session file or a repro package (.tar.gz)")
    p.add_argument(
        "--headless", action="store_true", help="no UI: print the hosts (with roles), runs and first failure"
    )
    from .replay_follow import add_arguments as follow_arguments

    follow_arguments(p)  # issue 21: --follow FILE|[user@]host:PATH, --from END, SSH options


def run(args: argparse.Namespace) -> int:
    if getattr(args, "follow", False):
        return _follow(args)
    path = Path(args.file)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if not _is_package(path):
        from ..reader import open_recording

        open_recording(path)  # a clear one-line error before the screen starts, not inside it
    if getattr(args, "headless", False):
        return _headless(path)
    from ._common import app_class

    K3App = app_class()

    K3App(replay_path=path).run()
    return 0


def _follow(args: argparse.Namespace) -> int:
    """A recording still being written, read-only; headless prints events as they arrive."""
    from ..follow import split_remote

    if split_remote(args.file) is None:
        if not Path(args.file).exists():
            raise UsageError(f"{args.file}: no such file (a remote one is [user@]host[:port]:PATH)")
        if _is_package(Path(args.file)):
            raise UsageError(f"{args.file} is a repro package: a finished session; replay it without --follow")
    if getattr(args, "headless", False):
        from .replay_follow import run_headless

        return run_headless(args)
    from .replay_follow import run_screen

    return run_screen(args)


def _is_package(path: Path) -> bool:
    from .verify import _is_package as is_gzip  # stat first: opening a FIFO would block forever

    return is_gzip(str(path))


def _headless(path: Path) -> int:
    from ..replay import Replay
    from ..textsafe import neutralise

    session = path
    if _is_package(path):
        from ..package import session_from_package

        session = Path(session_from_package(path))
    rp = Replay(session)
    rp.seek(rp.count)
    out = sys.stdout
    for line in headless_lines(rp):
        out.write(neutralise(line.replace("\n", " ")) + "\n")
    out.flush()
    for p in rp.problems:
        sys.stderr.write(f"k3tui: {'WARNING: ' if p.tampered else ''}{neutralise(p.message)}\n")
    from .cat import integrity_exit

    return integrity_exit(rp.recording)


def headless_lines(rp: Any) -> list[str]:
    """What ``replay --headless`` prints for a :class:`~k3tui.replay.Replay` at its current position."""
    from .cat import _header_line
    from .demo import result_of_state

    st = rp.state
    lines = [_header_line(rp.recording), f"replayed {rp.position} of {rp.count} events, {rp.t:.1f}s (runs nothing)"]
    for alias in _aliases(st):
        h = st.hosts.get(alias)
        where = f"  {h.address} user={h.user or '-'}" if h is not None and h.address else ""
        sim = "  [SIMULATED]" if h is not None and h.simulated else ""
        lines.append(f"host {st.label_of(alias)}{where}{sim}")
    for run in st.runs.values():
        if not run.command:
            continue  # a config the ledger recorded (its runs carry their own ids): nothing ran
        if run.ended is not None:
            status = f"ended {run.end_reason or 'exited'} {run.status if run.status is not None else '-'}"
        else:
            status = "still running at the end of the recording"
        failed = run.classified.failed_stage if run.classified is not None else ""
        failed = failed if failed and failed != "none" else (run.exception.stage if run.exception else "")
        where = (
            f"failed at stage {failed} (last stage reached: {run.stage or '-'})"
            if failed
            else (f"last stage reached: {run.stage or '-'}")
        )
        lines.append(
            f"run {run.run} on {st.label_of(run.host) if run.host else '-'}: rung {run.rung or '-'}, {where}, {status}"
        )
    e = st.first_exception
    if e is not None:
        on = f" on {st.label_of(e.host)}" if e.host else ""
        lines.append(f"first root exception at stage {e.stage or '?'}{on} (run {e.run}): {e.line.strip()[:300]}")
    from ..classify.hostfault import headline

    lines += headline(st)  # issue 14: a host fault that is the root (or stops the ladder), and what to do
    lines += _deployment_lines(rp, st)
    from ..ladder.bisect import walk_lines

    lines += walk_lines(list(st.decisions))  # issue 20: a bisect's steps and its answer
    stage, exc = result_of_state(st)
    lines.append(f"result: stage={stage} exception={exc}")
    return lines


def _aliases(st: Any) -> list[str]:
    """Every host of the session in the order first seen (connected, running or frozen)."""
    seen = dict.fromkeys(st.hosts)
    seen.update(dict.fromkeys(r.host for r in st.runs.values()))
    seen.update(dict.fromkeys(s.host for s in st.scenes))
    seen.pop("", None)
    return list(seen)


def _deployment_lines(rp: Any, st: Any) -> list[str]:
    """The fleet freeze's deployment-level verdict, rebuilt from the recorded node logs (none: no lines)."""
    from ..fleet.replay import deployment_from_events
    from ..fleet.timeline import clock, node_root_text
    from ..reader import open_recording

    v = deployment_from_events(open_recording(rp.recording.path).events())  # its own reader: problems once
    if v is None:
        return []
    if v.node is None:
        return ["deployment: no node's log shows a root exception"]
    out = [
        f"deployment: first root exception on {st.label_of(v.node)} at {clock(v.t)} UTC, "
        f"stage {v.result.failed_stage}: {v.line[:240]}"
    ]
    for nv in v.per_node:
        what = node_root_text(nv)
        out.append(f"  {st.label_of(nv.alias)}: {what}")
    return out

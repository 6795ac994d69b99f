"""`k3tui cat FILE` — print a session as a readable timeline, like `asciinema cat`."""

from __future__ import annotations

import argparse
import sys

from .. import events as ev
from ..reader import open_recording
from ..textsafe import neutralise


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a .k3rec session file or a repro package")
    p.add_argument("--raw", action="store_true", help="print only the recorded output text")
    p.add_argument("--kind", action="append", default=[], help="only events of this kind (repeatable)")


def run(args: argparse.Namespace) -> int:
    path = args.file
    from .verify import _is_package

    if _is_package(path):
        from ..package import session_from_package

        path = session_from_package(path)
    rec = open_recording(path)
    out = sys.stdout
    h = rec.header
    sim = "  [SIMULATED host]" if h.simulated else ""
    out.write(f"# k3rec v{h.version} session {h.session_id} host {h.host or '-'} profile {h.profile or '-'}{sim}\n")
    kinds = set(args.kind)
    for e in rec.events():
        kind = ev.kind_of(e)
        if kinds and kind not in kinds:
            continue
        if args.raw:
            if isinstance(e, ev.Output):
                out.write(neutralise(e.text))
            continue
        host = f" {e.host}" if e.host else ""
        if isinstance(e, ev.Output):
            for line in neutralise(e.text).splitlines():
                out.write(f"{e.t:10.3f}{host} │ {line}\n")
        else:
            out.write(f"{e.t:10.3f}{host} {kind:17} {neutralise(ev.summary(e, 160))}\n")
    for p in rec.problems:
        sys.stderr.write(f"k3tui: {p.message}\n")
    return 0

"""`k3tui cat FILE` — print a session as a readable timeline, like `asciinema cat`.

Everything printed comes from a file that may be hostile (a colleague's attachment, a
damaged disk): every line goes through :func:`~k3tui.textsafe.neutralise`, the header and
unknown kinds included, so no escape sequence reaches the operator's terminal.

A host of a multi-node deployment is shown with its role (``tray01 · head``) from the
moment its ``HostConnected`` says so; a single host, or a recording from before roles, shows
the alias alone.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from .. import events as ev
from ..reader import Recording, open_recording
from ..state import host_label
from ..textsafe import neutralise

HELP = "print a session as a readable timeline"


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
    if not args.raw:
        out.write(_header_line(rec) + "\n")
    kinds = set(args.kind)
    roles: dict[str, str] = {}
    told = 0
    for e in rec.events():
        told = _tell(rec, told)  # a broken chain is said where it breaks, not only at the end
        if isinstance(e, ev.HostConnected) and e.role:
            roles[e.host] = e.role
        if kinds and ev.kind_of(e) not in kinds:
            continue
        _write_event(out, e, args.raw, roles)
    _tell(rec, told)
    return integrity_exit(rec)


def _tell(rec: Recording, told: int) -> int:
    """Print the problems met since the last call (stderr); returns how many are told."""
    for p in rec.problems[told:]:
        sys.stdout.flush()
        sys.stderr.write(f"k3tui: {'WARNING: ' if p.tampered else ''}{neutralise(p.message)}\n")
    return len(rec.problems)


def integrity_exit(rec: Recording) -> int:
    """After a full read: say on stderr what the chain proved, and exit 1 when it was tampered with.

    An unsealed session (interrupted, still recording, or from before seals) plays, with a line
    saying its end cannot be proven.
    """
    verdict = rec.integrity
    if verdict is None:
        return 0
    if not verdict.ok:
        sys.stderr.write(f"k3tui: WARNING: {neutralise(verdict.message)} — what follows that line is unproven\n")
        return 1
    if not verdict.sealed:
        sys.stderr.write(f"k3tui: note: {neutralise(verdict.message)}\n")
    return 0


def _header_line(rec: Recording) -> str:
    h = rec.header
    sim = "  [SIMULATED host]" if h.simulated else ""
    line = f"# k3rec v{h.version} session {h.session_id} host {h.host or '-'} profile {h.profile or '-'}{sim}"
    return neutralise(line.replace("\n", " "))


def _write_event(out: TextIO, e: ev.AnyEvent, raw: bool, roles: dict[str, str]) -> None:
    if raw:
        if isinstance(e, ev.Output):
            out.write(neutralise(e.text))
        return
    host = f" {host_label(e.host, roles.get(e.host, ''))}" if e.host else ""
    if isinstance(e, ev.Output):
        for line in e.text.removesuffix("\n").split("\n") if e.text else ():  # "\n" only: not U+2028, \x1c …
            out.write(neutralise(f"{e.t:10.3f}{host} │ {line}") + "\n")
    else:
        line = f"{e.t:10.3f}{host} {ev.kind_of(e):17} {ev.summary(e, 160)}"
        out.write(neutralise(line.replace("\n", " ")) + "\n")

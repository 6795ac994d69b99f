"""`k3tui export SESSION [-o PATH] [--cast-only]` — write a repro package (or just the .cast).

The package is what the platform team gets: a report, the fingerprint, the minimal
command, the fixed request, the first error, the change table, the checklist, the logs of
every run, the session itself and an asciicast, with a SHA-256 manifest. The work is in
:mod:`k3tui.package`; this module only parses arguments and prints one summary line.
"""

from __future__ import annotations

import argparse
import sys

from ..textsafe import neutralise

HELP = "export a session as a repro package (or just a .cast)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("session", help="the .k3rec session file to export")
    p.add_argument(
        "-o", "--output", metavar="PATH", help="output file (default: SESSION.repro.tar.gz, or SESSION.cast)"
    )
    p.add_argument("--cast-only", action="store_true", help="write only the asciicast v2 file (.cast)")
    p.add_argument("--force", action="store_true", help="replace the output file if it exists")


def run(args: argparse.Namespace) -> int:
    from ..package import export_session, verify_package

    warnings: list[str] = []
    out = export_session(args.session, args.output, cast_only=args.cast_only, force=args.force, warn=warnings.append)
    for w in warnings:  # the session's own chain: a package of a tampered session must not look clean
        tampered = "TAMPERED" in w
        print(f"k3tui: {'WARNING' if tampered else 'note'}: {neutralise(w)}", file=sys.stderr)
    bad = any("TAMPERED" in w for w in warnings)
    size = out.stat().st_size / 1024
    if args.cast_only:
        print(f"wrote {out} ({size:.1f} KiB asciicast v2): play it with `asciinema play {out}`")
        return 1 if bad else 0
    ok, message = verify_package(out)
    print(f"wrote {out} ({size:.1f} KiB)")
    print(neutralise(message))
    return 0 if ok and not bad else 1

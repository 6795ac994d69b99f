"""`k3tui verify FILE` — check a session file's digest chain (or a repro package).

Exit 0: intact (a truncated last line from an interrupted recorder is reported but is
not tampering). Exit 1: tampered, naming the first bad line. Exit 2: not readable.
"""

from __future__ import annotations

import argparse

from ..reader import verify


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a .k3rec session file or a repro package (.tar.gz)")


def run(args: argparse.Namespace) -> int:
    path = args.file
    if _is_package(path):
        from ..package import verify_package

        ok, message = verify_package(path)
        print(message)
        return 0 if ok else 1
    result = verify(path)
    print(result.message)
    return 0 if result.ok else 1


def _is_package(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"\x1f\x8b"
    except OSError:
        return False

"""`k3tui replay FILE` — replay a session file or a repro package in the TUI (runs nothing on any host)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a .k3rec session file or a repro package (.tar.gz)")


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if not _is_package(path):
        from ..reader import open_recording

        open_recording(path)  # a clear one-line error before the screen starts, not inside it
    from ._common import app_class

    K3App = app_class()

    K3App(replay_path=path).run()
    return 0


def _is_package(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"\x1f\x8b"
    except OSError:
        return False

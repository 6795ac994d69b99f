"""`k3tui classify` — not built yet (see the open issues)."""

from __future__ import annotations

import argparse

from ..errors import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("rest", nargs="*")


def run(args: argparse.Namespace) -> int:
    raise UsageError("'k3tui classify' is not available in this build yet")

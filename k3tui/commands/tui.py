"""`k3tui` with no subcommand: start the TUI on the home screen."""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    from screens.app import K3App  # the CLI is the one place core may import the UI

    K3App().run()
    return 0

"""Options shared by the commands that reach a host."""

from __future__ import annotations

import argparse


def add_target_options(p: argparse.ArgumentParser, nargs: str | None = None) -> None:
    """TARGET plus the SSH options every host-facing command takes."""
    p.add_argument("target", nargs=nargs, help="[user@]host[:port], an ~/.ssh/config alias, or a,b for a group")
    p.add_argument("-i", "--identity", action="append", default=[], help="private key file (repeatable)")
    p.add_argument("--known-hosts", help="known_hosts file (default: ~/.ssh/known_hosts)")
    p.add_argument(
        "--accept-new-host-key",
        action="store_true",
        help="accept an UNKNOWN host key (recorded as a decision); a CHANGED key always stops",
    )
    p.add_argument("--ssh-config", help="ssh config file (default: ~/.ssh/config)")
    p.add_argument("--inventory", help="TOML inventory of host groups")
    p.add_argument("--group", help="group name in the inventory")
    p.add_argument("--connect-timeout", type=float, default=10.0, help="seconds (default 10)")


def add_record_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--record", metavar="FILE", help="write the session to this .k3rec file")


def app_class() -> type:
    """The TUI's application class, for the commands that start the UI (the one door from core to UI).

    Imported by name at call time: the core package never imports the UI statically, so a
    headless command (``verify``, ``classify``, ``freeze`` …) never loads Textual.
    """
    import importlib

    return importlib.import_module("screens.app").K3App  # type: ignore[no-any-return]

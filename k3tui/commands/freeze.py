"""`k3tui freeze TARGET` — freeze the failure scene before touching anything.

Prints a readable summary per host, writes the scene(s) into the session (``--record``)
and, with ``--json``, as one JSON object (a list of objects for a group of hosts).
"""

from __future__ import annotations

import argparse
import sys

import msgspec

from .. import aio
from ..scene.diff import odd_lines, odd_nodes
from ..scene.logscan import REQUEST, ROOT_NAMED
from ..scene.session import add_scene_target_options, freeze_target, recorder_for, reject_inventory
from ..scene.summary import scene_lines
from ..textsafe import neutralise
from ._common import add_record_option, add_target_options

HELP = "freeze the failure scene of a host"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_target_options(p, nargs="?")
    add_scene_target_options(p)
    p.add_argument("--json", metavar="PATH", help="write the scene as JSON ('-' for stdout)")
    p.add_argument(
        "--log",
        metavar="PATH",
        help="the server's log file on the host: scanned there whole, only windows around the root read",
    )
    p.add_argument("--full-log", action="store_true", help="read the whole server log over SSH instead of windows")
    add_record_option(p)


def _say_root(alias: str, line: str, seconds: float) -> None:
    """The root, on stderr, as soon as the host's scan of the whole log names it (the freeze goes on)."""
    where = f"{alias}: " if alias else ""
    print(
        neutralise(f"k3tui: {where}first exception named after {seconds:.2f} s: {line.strip()[:300]}"),
        file=sys.stderr,
        flush=True,
    )
    print(
        f"k3tui: {where}the freeze goes on: the host still reads the rest of the log for its size and SHA-256",
        file=sys.stderr,
        flush=True,
    )


def run(args: argparse.Namespace) -> int:
    reject_inventory(args)
    token = REQUEST.set((args.log, args.full_log))
    told = ROOT_NAMED.set(_say_root)
    try:
        with recorder_for(args) as rec:
            outcome = aio.run(freeze_target(args, rec.emit if rec else None))
    finally:
        ROOT_NAMED.reset(told)
        REQUEST.reset(token)
    for alias, why in outcome.unreachable.items():
        print(neutralise(f"k3tui: {alias}: {why}"), file=sys.stderr)
    if args.json:
        data = [s.to_dict() for s in outcome.scenes]
        blob = msgspec.json.format(msgspec.json.encode(data[0] if len(data) == 1 else data), indent=2)
        if args.json == "-":
            sys.stdout.write(blob.decode() + "\n")
        else:
            with open(args.json, "wb") as fh:
                fh.write(blob + b"\n")
    if args.json != "-":
        for s in outcome.scenes if len(outcome.scenes) <= 8 else []:  # a fleet: the table below, scenes in --json
            print(neutralise("\n".join(scene_lines(s))))  # host names and facts come from the host
        if len(outcome.scenes) > 1:
            print(f"== {len(outcome.scenes)} nodes compared")
            print(neutralise("\n".join(odd_lines(odd_nodes(outcome.scenes)))))
        if hasattr(outcome, "nodes"):  # a group or an --inventory (k3tui.fleet, issue 9)
            from ..fleet.cli import report

            print(neutralise("\n".join(report(outcome))))
    return 1 if outcome.unreachable else 0

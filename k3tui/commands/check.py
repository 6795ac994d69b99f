"""`k3tui check TARGET [--profile kimi-k3]` — the compatibility baseline, PASS/FAIL/UNKNOWN with evidence.

Freezes the target first (the same probes as ``freeze``), then checks the scene(s)
against the profile. Exit 0 when all pass, 1 when any fails (even if others could not
run), 2 when none failed but some could not run.
"""

from __future__ import annotations

import argparse
import sys

from .. import aio
from ..profile import load_profile
from ..scene.checks import check_baseline, exit_status
from ._common import add_record_option, add_target_options

HELP = "check the compatibility baseline against a profile"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_target_options(p, nargs="?")
    from ..scene.session import add_scene_target_options

    add_scene_target_options(p)
    p.add_argument("--profile", default="kimi-k3", help="profile name (assets/profiles) or path (default kimi-k3)")
    p.add_argument(
        "--scene",
        metavar="JSON",
        action="append",
        default=[],
        help="check a saved scene (freeze --json, or a .k3rec's last scene) instead of freezing TARGET ('-' as TARGET)",
    )
    add_record_option(p)


def run(args: argparse.Namespace) -> int:
    from ..scene.session import freeze_target, recorder_for, reject_inventory

    reject_inventory(args)
    profile = load_profile(args.profile)
    emit = None

    with recorder_for(args, profile.name) as rec:
        emit = rec.emit if rec else None
        if args.scene:
            scenes, unreachable = [_load_scene(p) for p in args.scene], {}
        else:
            outcome = aio.run(freeze_target(args, emit, reason="baseline-check"))
            scenes, unreachable = outcome.scenes, outcome.unreachable
        verdicts = check_baseline(scenes, profile) if scenes else []
        for v in verdicts:
            if emit:
                emit(v)
    for alias, why in unreachable.items():
        print(f"k3tui: {alias}: {why}", file=sys.stderr)
    print(f"baseline of {', '.join(s.alias for s in scenes) or args.target} against profile {profile.name}:")
    for v in verdicts:
        print(f"  {v.verdict:7} {v.check:15} {v.evidence}")
    code = exit_status(verdicts)
    return 1 if unreachable else code


def _load_scene(path: str):  # noqa: ANN202 - a Scene
    """A saved scene: ``freeze --json`` output, or the last scene of a ``.k3rec`` session."""
    from .diff import load_scene_file

    return load_scene_file(path)

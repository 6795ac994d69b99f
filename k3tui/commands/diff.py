"""`k3tui diff A B [C …]` — what differs between frozen scenes.

Each argument is a scene JSON (``freeze --json``) or a session file (``.k3rec``: its last
``SceneFrozen``; with ``--host`` the last one of that host). Two scenes: the grouped
differences and a LOUD note when more than one variable changed. More than two (the
nodes of one deployment): the odd-node-out table. Exit 0 when nothing differs, 1 when
something does (like ``diff(1)``).
"""

from __future__ import annotations

import argparse

import msgspec

from ..errors import UsageError
from ..scene.diff import diff_lines, diff_scenes, odd_lines, odd_nodes
from ..scene.model import Scene, scene_from_dict

HELP = "diff two frozen scenes"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenes", nargs="+", metavar="SCENE", help="scene JSON or .k3rec session file (two or more)")
    p.add_argument("--host", help="in a session file, take the last scene of this host alias")
    p.add_argument(
        "--nodes", action="store_true", help="compare as nodes of one deployment (odd node out), also for two"
    )


def run(args: argparse.Namespace) -> int:
    if len(args.scenes) < 2:
        raise UsageError("diff needs two scenes (or more, with the nodes of one deployment)")
    scenes = [load_scene_file(p, args.host) for p in args.scenes]
    if len(scenes) == 2 and not args.nodes:
        d = diff_scenes(*scenes)
        print(f"--- {args.scenes[0]} ({scenes[0].alias})\n+++ {args.scenes[1]} ({scenes[1].alias})")
        print("\n".join(diff_lines(d)))
        return 1 if d.changes else 0
    findings = odd_nodes(scenes)
    print("\n".join(odd_lines(findings)))
    return 1 if findings else 0


def load_scene_file(path: str, host: str | None = None) -> Scene:
    """A scene from a JSON file or the last ``SceneFrozen`` of a session file."""
    with open(path, "rb") as fh:
        head = fh.read(64)
    if b'"format":"k3rec"' in head.replace(b" ", b"") or path.endswith(".k3rec"):
        return _from_recording(path, host)
    with open(path, "rb") as fh:
        try:
            data = msgspec.json.decode(fh.read())
        except msgspec.DecodeError as exc:
            raise UsageError(f"{path}: neither a scene JSON nor a session file ({exc})") from None
    if isinstance(data, list):
        if host:
            data = next((d for d in data if isinstance(d, dict) and d.get("alias") == host), None)
        elif len(data) == 1:
            data = data[0]
        else:
            raise UsageError(f"{path}: holds {len(data)} scenes; choose one with --host ALIAS")
    if not isinstance(data, dict) or "host" not in data:
        raise UsageError(f"{path}: not a scene (no 'host' key)")
    try:
        return scene_from_dict(data)
    except msgspec.ValidationError as exc:
        raise UsageError(f"{path}: not a valid scene: {exc}") from None


def _from_recording(path: str, host: str | None) -> Scene:
    from ..events import SceneFrozen
    from ..reader import read_all

    _, events = read_all(path)
    frozen = [e for e in events if isinstance(e, SceneFrozen) and (host is None or e.host == host)]
    if not frozen:
        raise UsageError(f"{path}: no frozen scene in this session" + (f" for host {host}" if host else ""))
    return scene_from_dict(frozen[-1].scene)

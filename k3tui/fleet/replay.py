"""The deployment's merged timeline and first root exception, rebuilt from a recording.

Replay runs nothing on any host, so everything the live fleet report shows must be in the
stream: each node's ``HostConnected.clock_skew`` and ``role`` (head/worker; an older
recording has none, and its nodes are called "node"), and the container log the fleet freeze
read (a ``CommandSent`` with purpose ``fleet-log`` whose stdout is ``date +%z`` then
``docker logs --timestamps``). The same :func:`~k3tui.fleet.timeline.classify_deployment`
then gives the same answer as the live run (the UI's replay and a colleague's
``k3tui replay`` use this).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..events import CommandSent, HostConnected, Output, SceneFrozen
from .freeze import parse_utc_offset
from .timeline import DeploymentVerdict, NodeLog, classify_deployment

PURPOSE = "fleet-log"


def node_logs_from_events(events: Iterable[Any]) -> list[NodeLog]:
    """One :class:`NodeLog` per host whose fleet log is in the stream (the last one read per host)."""
    skew: dict[str, float | None] = {}
    role: dict[str, str] = {}
    frozen_at: dict[str, float] = {}
    reads: dict[tuple[str, str], list[str]] = {}
    last: dict[str, tuple[str, str]] = {}
    for e in events:
        if isinstance(e, HostConnected):
            skew[e.host] = e.clock_skew
            role[e.host] = e.role or role.get(e.host, "")
        elif isinstance(e, CommandSent) and e.purpose == PURPOSE:
            key = (e.host, e.id)
            reads[key] = []
            last[e.host] = key
        elif isinstance(e, Output) and e.stream == "stdout" and (e.host, e.id) in reads:
            reads[(e.host, e.id)].append(e.text)
        elif isinstance(e, SceneFrozen):
            frozen_at[e.host] = float(e.scene.get("frozen_at") or 0.0)
    out = []
    for host, key in last.items():
        first, _, log = "".join(reads[key]).partition("\n")
        if log.strip():
            out.append(
                NodeLog(
                    host,
                    log,
                    role.get(host) or "node",
                    skew.get(host),
                    parse_utc_offset(first),
                    frozen_at.get(host) or None,
                )
            )
    return out


def deployment_from_events(events: Iterable[Any]) -> DeploymentVerdict | None:
    """The deployment-level classification of a recorded fleet freeze (None: no fleet log recorded)."""
    logs = node_logs_from_events(events)
    return classify_deployment(logs) if logs else None


def scenes_from_events(events: Iterable[Any]) -> list[Any]:
    """The latest frozen scene of each host, in the order the hosts first froze (for a per-node column)."""
    from ..scene.model import scene_from_dict

    latest: dict[str, Any] = {}
    for e in events:
        if isinstance(e, SceneFrozen) and e.scene:
            latest[e.host or e.scene.get("alias", "")] = e.scene
    return [scene_from_dict(s) for s in latest.values()]

"""What the ``freeze``/``check`` commands call for a group of hosts or an ``--inventory``.

The commands stay the freeze engineer's; they hand a group to :func:`freeze_group` and get
back a :class:`~k3tui.fleet.freeze.FleetOutcome` (a ``FreezeOutcome`` with per-node rows),
whose :func:`report` adds the fleet's own lines: the odd-node-out table, the clock
corrections, and the deployment's first root exception with the node it came from.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import IO, Any

from ..errors import HostError, UsageError
from ..events import Notice
from ..remote.base import Emit
from ..scene.outcome import FreezeOutcome
from .compare import differences, sentences, table, unknown_facts, unknown_lines
from .freeze import CONCURRENCY, HOST_TIMEOUT, FleetOutcome, NodeResult, freeze_fleet
from .inventory import Node, load_inventory, nodes_from_group_spec
from .timeline import NodeLog, classify_deployment, clock, first_errors_after, node_root_text, skew_lines, window


def nodes_for(args: argparse.Namespace) -> list[Node]:
    """The nodes ``args`` name: ``--inventory FILE [--group G]`` (TARGET then picks aliases), or TARGET ``a,b``."""
    inv_path = getattr(args, "inventory", None)
    if not inv_path:
        if getattr(args, "group", None):
            raise UsageError("--group names a group of an inventory: add --inventory FILE")
        return nodes_from_group_spec(args.target)
    inv = load_inventory(inv_path)
    nodes = (
        inv.select(getattr(args, "group", None))
        if (args.group or not args.target)
        else [n for g in inv.groups.values() for n in g.nodes]
    )
    if args.target:
        wanted = [s.strip() for s in args.target.split(",")]
        by_alias = {n.alias: n for n in nodes}
        missing = [w for w in wanted if w not in by_alias]
        if missing:
            raise UsageError(
                f"{', '.join(missing)}: not a host of {inv_path}{' group ' + args.group if args.group else ''}"
            )
        nodes = [by_alias[w] for w in wanted]
    return nodes


class TextProgress:
    """Progress on stderr: a rewritten bar on a terminal, one line per host otherwise."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.monotonic()
        self.failed = 0

    def __call__(self, res: NodeResult, done: int, total: int) -> None:
        self.failed += res.scene is None
        took = time.monotonic() - self.t0
        if self.tty:
            width = 30
            fill = int(width * done / max(total, 1))
            bar = "#" * fill + "." * (width - fill)
            self.stream.write(f"\r[{bar}] {done}/{total} hosts, {self.failed} unreachable, {took:.1f}s")
            if done == total:
                self.stream.write("\n")
        else:
            what = f"frozen in {res.seconds:.1f}s" if res.scene is not None else f"UNREACHABLE: {res.error}"
            self.stream.write(f"k3tui: [{done}/{total}] {res.alias} {what}\n")
        self.stream.flush()


async def freeze_group(args: argparse.Namespace, emit: Emit | None, reason: str = "operator") -> FleetOutcome:
    """Freeze the group ``args`` names (bounded, per-host deadlines, progress on stderr)."""
    nodes = nodes_for(args)
    out = await freeze_fleet(
        nodes,
        emit=emit,
        concurrency=getattr(args, "concurrency", None) or CONCURRENCY,
        host_timeout=getattr(args, "host_timeout", None) or HOST_TIMEOUT,
        connect_timeout=args.connect_timeout,
        accept_new_host_key=args.accept_new_host_key,
        ssh_config=args.ssh_config,
        identity=args.identity,
        known_hosts=args.known_hosts,
        container=getattr(args, "container", None),
        docker_socket=getattr(args, "docker_socket", None) or None,
        reason=reason,
        progress=TextProgress() if len(nodes) > 1 else None,
    )
    if not out.scenes:
        first = next(iter(out.unreachable.values()), "no host answered")
        raise HostError(first if len(nodes) == 1 else f"none of the {len(nodes)} hosts could be frozen; first: {first}")
    verdict = deployment_verdict(out)
    if emit is not None and verdict is not None and verdict.node:
        emit(
            Notice(
                host=verdict.node,
                level="error",
                message=f"the deployment's first root exception is on {verdict.node}: {verdict.line[:300]}",
            )
        )
    return out


SKEW_WARN = 1.0
"""Seconds of clock skew worth naming node by node (log lines are corrected either way)."""


def skew_summary(out: FleetOutcome) -> str:
    """One line on the nodes' clocks against ours, naming those off by more than :data:`SKEW_WARN`."""
    known = {n.alias: n.clock_skew for n in out.nodes if n.clock_skew is not None}
    unknown = [n.alias for n in out.nodes if n.scene is not None and n.clock_skew is None]
    if not known:
        return "clock skew: not measured on any node"
    worst = max(known, key=lambda a: abs(known[a] or 0.0))
    off = [f"{a} {v:+.3f} s" for a, v in known.items() if abs(v or 0.0) > SKEW_WARN]
    text = f"clock skew (host minus ours, at connect): largest {known[worst]:+.3f} s on {worst}"
    text += f"; OFF BY MORE THAN {SKEW_WARN:g} s: {', '.join(off)}" if off else f"; all within {SKEW_WARN:g} s"
    return text + (f"; not measured on {', '.join(unknown)}" if unknown else "")


def node_logs(out: FleetOutcome) -> list[NodeLog]:
    """The nodes that gave a log, with their clocks."""
    ref = time.time()
    return [
        NodeLog(n.alias, n.log, n.role, n.clock_skew, n.utc_offset, (n.scene.frozen_at if n.scene else 0) or ref)
        for n in out.nodes
        if n.log
    ]


def deployment_verdict(out: FleetOutcome) -> Any:
    """The deployment-level classification over every node's log (None without logs)."""
    if out.verdict is None:
        logs = node_logs(out)
        out.verdict = classify_deployment(logs) if logs else False
    return out.verdict or None


def report(out: FreezeOutcome) -> list[str]:
    """The fleet's lines after the per-node summaries (none for a single host's outcome)."""
    if not isinstance(out, FleetOutcome):
        return []
    aliases = [n.alias for n in out.nodes if n.scene is not None]
    lines = [
        f"== fleet: {len(out.nodes)} hosts, {len(out.scenes)} frozen, {len(out.unreachable)} unreachable, {out.wall:.1f}s"
    ]
    for alias, why in out.unreachable.items():
        lines.append(f"  UNREACHABLE {alias}: {why}")
    diffs = differences(out.scenes, head=out.head)
    lines.append("== odd node out")
    lines += table(diffs, aliases)
    lines += [f"  {s}" for s in sentences(diffs)]
    lines += [f"  {s}" for s in unknown_lines(unknown_facts(out.scenes))]
    lines.append(skew_summary(out))
    logs = node_logs(out)
    if not logs:
        return lines
    lines.append("== clocks (measured at connect; log lines corrected before merging)")
    lines += skew_lines(logs)
    v = deployment_verdict(out)
    lines.append("== deployment's first root exception")
    if v is None or v.node is None:
        lines.append("  none: no node's log shows a root exception")
        return lines
    lines.append(f"  node {v.node} at {clock(v.t)} UTC, stage {v.result.failed_stage}: {v.line[:240]}")
    from ..classify.hostfault import root_for_scenes

    root = root_for_scenes(out.scenes, v.t, {n.alias: n.clock_skew for n in out.nodes})
    if root is not None:  # issue 14: the hardware is the root, the exception above its consequence
        lines.append(f"  ROOT is a host fault: {root['summary']}; the exception above is its consequence")
    for nv in v.per_node:
        what = node_root_text(nv)
        lines.append(f"  {nv.role:6} {nv.alias}: {what}")
    lines.append("== merged timeline around it (corrected clocks)")
    lines += [f"  {x}" for x in window(v.merged, v.index if v.index is not None else 0)]
    for x in first_errors_after(v):
        delta = f"{x.t - v.t:+.1f}s" if v.t is not None and x.t != float("inf") else "later"
        lines.append(f"  then {x.alias} ({delta}): {x.text[:200]}")
    return lines


async def connect_inventory(args: argparse.Namespace, emit: Emit | None) -> tuple[list[Any], list[str]]:
    """Connect to the inventory's nodes, head first (for the ladder): (hosts or errors, aliases)."""
    import asyncio

    from ..remote.ssh import connect

    nodes = sorted(nodes_for(args), key=lambda n: not n.is_head)
    base: dict[str, Any] = {
        "identity": list(args.identity),
        "known_hosts": args.known_hosts,
        "accept_new_host_key": args.accept_new_host_key,
        "ssh_config": args.ssh_config,
        "connect_timeout": args.connect_timeout,
        "emit": emit,
    }

    async def one(n: Node) -> Any:
        return await connect(**(base | {k: v for k, v in n.connect_kwargs().items() if v not in (None, [])}))

    results = await asyncio.gather(*(one(n) for n in nodes), return_exceptions=True)
    return list(results), [n.alias for n in nodes]


def multinode_engine_for(args: argparse.Namespace) -> Any:
    """``MultiNodeLadder`` with the inventory group's ``master_addr``/``master_port`` and ``--multinode-mode``.

    The profile's ``[launch.multinode]`` gives the launch shape and its defaults; what the
    inventory group names overrides those defaults, and a mode on the command line overrides
    the profile's mode (the engine says where its mode came from).
    """
    import functools

    from .launch import MultiNodeLadder

    kw: dict[str, Any] = {}
    if getattr(args, "multinode_mode", None):
        kw["mode"] = args.multinode_mode
    group = getattr(args, "group", None)
    if getattr(args, "inventory", None) and group and "," not in group:
        g = load_inventory(args.inventory).group(group)
        if g.master_addr:
            kw["master_addr"] = g.master_addr
        if g.master_port:
            kw["master_port"] = g.master_port
    return functools.partial(MultiNodeLadder, **kw)

"""The nodes of one deployment side by side: every fact that differs, and which node is odd.

Built on :func:`k3tui.scene.diff.node_facts` (driver, image digest, versions, libcuda,
env — NCCL_* included —, GPU model/count) plus what only matters across nodes: how many
NICs and which NVLink kinds ``nvidia-smi topo -m`` shows, and the NVLink domain (each GPU's
fabric ClusterUUID / CliqueId / state, the IMEX daemon and domain, the container's channel). The reference a node is
compared against is the majority's value; when there is no majority (two nodes that
differ) it is the head node's, so the sentence reads the way an on-call engineer says
it: "node b runs driver 575.57.08 while a runs 580.95.05".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..scene.diff import node_facts
from ..scene.model import Scene

LABELS = {
    "driver.driver_version": "driver",
    "driver.kernel_module": "kernel module",
    "driver.cuda_driver_version": "driver CUDA",
    "image.image": "image",
    "image.image_id": "image id",
    "image.repo_digests": "image digest",
    "libraries.libcuda": "libcuda",
    "libraries.libcuda_version": "libcuda version",
    "gpus.count": "GPU count",
    "gpus.models": "GPU model",
    "host.kernel": "kernel",
    "host.arch": "arch",
    "nics.count": "NIC count",
    "container.shm_size": "container shm size",
    "container.ipc_mode": "container IPC mode",
    "fabric.cluster_uuid": "fabric ClusterUUID",
    "fabric.clique_id": "fabric CliqueId",
    "fabric.state": "fabric state",
    "imex.service": "IMEX daemon",
    "imex.domain_state": "IMEX domain",
    "imex.container_channel": "IMEX channel in the container",
}
VERBS = {"driver.driver_version": "runs driver", "image.repo_digests": "runs image digest", "gpus.count": "has GPUs:"}


@dataclass
class Difference:
    """One fact on which the nodes disagree."""

    fact: str
    values: dict[str, Any]
    """alias → value (None: unknown on that node)."""
    reference: str
    """The node (or majority) others are compared against."""
    odd: list[str]
    """Nodes whose value differs from the reference's."""
    majority: bool


def fleet_facts(s: Scene) -> dict[str, Any]:
    """The facts compared across nodes."""
    facts = node_facts(s)
    topo = s.topology or {}
    links = topo.get("links") or {}
    facts["nics.count"] = sum(1 for k in links if str(k).startswith("NIC")) if topo else None
    facts["gpus.nvlink"] = topo.get("nvlink") if topo else None
    c = s.container or {}
    for key in CONTAINER_KEYS:
        facts[f"container.{key}"] = c.get(key)
    for k, v in _env_dict(c.get("env") or []).items():
        facts[f"container.env.{k}"] = v
    facts.update(domain_facts(s))
    return facts


def domain_facts(s: Scene) -> dict[str, Any]:
    """The NVLink domain as this node sees it (issue 14): two trays of one deployment must agree."""

    def per_gpu(key: str) -> str | None:
        vals = sorted({str((g.fabric or {}).get(key)) for g in s.gpus if (g.fabric or {}).get(key) is not None})
        return ",".join(vals) or None

    imex = s.imex or {}
    chan = (s.imex_channels or {}).get("container")
    return {
        "fabric.cluster_uuid": per_gpu("cluster_uuid"),
        "fabric.clique_id": per_gpu("clique_id"),
        "fabric.state": per_gpu("state"),
        "imex.service": imex.get("service"),
        "imex.domain_state": imex.get("domain_state"),
        "imex.container_channel": None if chan is None else bool(chan.get("present")),
    }


CONTAINER_KEYS = ("shm_size", "ipc_mode", "network_mode", "runtime", "privileged")
"""Container settings that change NCCL's behaviour between nodes (shared memory, IPC, NICs)."""


def _env_dict(items: list[str]) -> dict[str, str]:
    """``docker inspect``'s Config.Env as a dict; a later entry wins, as in the container."""
    out: dict[str, str] = {}
    for kv in items:
        k, sep, v = str(kv).partition("=")
        if sep:
            out[k] = v
    return out


def differences(scenes: Sequence[Scene], head: str | None = None) -> list[Difference]:
    """Every fact on which the scenes disagree (facts unknown on every node are skipped)."""
    per = {s.alias or f"node{i}": fleet_facts(s) for i, s in enumerate(scenes)}
    if len(per) < 2:
        return []
    ref_node = head if head in per else next(iter(per))
    out = []
    for fact in sorted({k for f in per.values() for k in f}):
        values = {a: f.get(fact) for a, f in per.items()}
        known = {a: v for a, v in values.items() if v is not None}
        counts = Counter(repr(v) for v in known.values())
        if len(counts) <= 1:
            continue  # agreeing, or unknown on some nodes only: see unknown_facts()
        (top, n), *rest = counts.most_common()
        majority = not rest or n > rest[0][1]
        ref_repr = top if majority or ref_node not in known else repr(known[ref_node])
        odd = [a for a, v in known.items() if repr(v) != ref_repr]
        reference = (
            "the others" if majority and len(per) > 2 else next(a for a, v in values.items() if repr(v) == ref_repr)
        )
        out.append(Difference(fact, values, reference, odd, majority))
    return out


def unknown_facts(scenes: Sequence[Scene]) -> dict[str, list[str]]:
    """Facts known on some nodes but not on others (a probe failed or timed out there): fact → those nodes."""
    per = {s.alias or f"node{i}": fleet_facts(s) for i, s in enumerate(scenes)}
    out: dict[str, list[str]] = {}
    for fact in sorted({k for f in per.values() for k in f}):
        missing = [a for a, f in per.items() if f.get(fact) is None]
        if missing and len(missing) < len(per):
            out[fact] = missing
    return out


def unknown_lines(unknown: dict[str, list[str]], limit: int = 6) -> list[str]:
    """A short account of facts a comparison could not use on some nodes."""
    if not unknown:
        return []
    nodes = sorted({a for v in unknown.values() for a in v})
    facts = ", ".join(list(unknown)[:limit]) + (f" (+{len(unknown) - limit} more)" if len(unknown) > limit else "")
    shown = ", ".join(nodes[:8]) + (f" (+{len(nodes) - 8} more)" if len(nodes) > 8 else "")
    return [f"UNKNOWN on {len(nodes)} node(s) ({shown}), not compared there: {facts} — see their failed probes"]


def _fmt(v: Any, width: int = 60) -> str:
    if v is None:
        text = "(unknown)"
    elif isinstance(v, list):
        text = ",".join(str(x) for x in v) or "(none)"
    else:
        text = str(v)
    return text if len(text) <= width else text[: width - 1] + "…"


def sentences(diffs: Sequence[Difference]) -> list[str]:
    """One sentence per difference: "node b runs driver 575.57.08 while a runs 580.95.05"."""
    out = []
    for d in diffs:
        label = LABELS.get(d.fact) or _env_label(d.fact)
        verb = VERBS.get(d.fact, f"has {label}")
        ref_val = _fmt(next(v for a, v in d.values.items() if a not in d.odd and v is not None))
        odd = ", ".join(d.odd)
        node = "node" if len(d.odd) == 1 else "nodes"
        ref_verb = verb if d.reference != "the others" else _plural(verb)
        odd_verb = verb if len(d.odd) == 1 else _plural(verb)
        sep = "" if verb.endswith("=") else " "
        mine = _fmt(d.values[d.odd[0]])
        out.append(f"{node} {odd} {odd_verb}{sep}{mine} while {d.reference} {ref_verb}{sep}{ref_val}")
    return out


def _env_label(fact: str) -> str:
    for prefix, what in (("env.", "process env"), ("container.env.", "container env")):
        if fact.startswith(prefix):
            return f"{what} {fact[len(prefix) :]}="
    return fact


def _plural(verb: str) -> str:
    if verb.startswith("runs "):
        return "run " + verb[5:]
    return "have " + verb[4:] if verb.startswith("has ") else verb


def table(diffs: Sequence[Difference], aliases: Sequence[str], width: int = 28, max_columns: int = 8) -> list[str]:
    """The odd-node-out table: one row per differing fact, one column per node.

    More than ``max_columns`` nodes: one row per fact with the common value and the odd nodes.
    """
    if not diffs:
        return [f"all {len(aliases)} nodes agree on every compared fact"]
    if len(aliases) > max_columns:
        rows = [f"{'fact':32} {'most nodes':{width}} odd nodes"]
        for d in diffs:
            common = _fmt(next((v for a, v in d.values.items() if a not in d.odd and v is not None), None), width)
            odd = ", ".join(f"{a}={_fmt(d.values[a], 24)}" for a in d.odd[:6])
            more = f" (+{len(d.odd) - 6} more)" if len(d.odd) > 6 else ""
            rows.append(f"{d.fact[:32]:32} {common:{width}} {odd}{more}")
        return rows
    head = f"{'fact':32} " + " ".join(f"{a[:width]:{width}}" for a in aliases)
    rows = [head]
    for d in diffs:
        cells = []
        for a in aliases:
            cell = _fmt(d.values.get(a), width - 2)
            cells.append(f"{('*' + cell) if a in d.odd else cell:{width}}")
        rows.append(f"{d.fact[:32]:32} " + " ".join(cells).rstrip())
    rows.append("(* = differs from " + ("the majority" if any(d.majority for d in diffs) else "the head node") + ")")
    return rows

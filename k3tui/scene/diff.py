"""What differs between two scenes, and which node is the odd one out among N.

The ladder's rule is one variable per step, so a diff counts *variables*, not lines:
the driver is one variable whatever number of its fields moved, the GPU set is one, the
image is one, each environment variable is one. More than one changed variable gets a
LOUD note — a comparison that moved two things at once proves nothing.

Facts that change on their own (memory in use, timestamps, probe timings) are not
compared. Multi-node (issue 9): :func:`odd_nodes` compares the scenes of one
deployment fact by fact and names the node(s) whose value differs from the majority —
"node b runs driver 575 while a runs 580".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .model import Scene

GROUPS = ("driver", "gpus", "image", "env", "versions", "libraries", "command", "host")


@dataclass
class Change:
    group: str
    key: str
    a: Any
    b: Any


@dataclass
class SceneDiff:
    changes: list[Change] = field(default_factory=list)

    def by_group(self) -> dict[str, list[Change]]:
        out: dict[str, list[Change]] = {}
        for c in self.changes:
            out.setdefault(c.group, []).append(c)
        return out

    @property
    def variables(self) -> list[str]:
        """The changed variables: one per group, except env where each variable counts."""
        out = []
        for group, items in self.by_group().items():
            out += [f"env {c.key}" for c in items] if group == "env" else [group]
        return out

    @property
    def loud(self) -> str:
        n = len(self.variables)
        if n <= 1:
            return ""
        return f"MORE THAN ONE VARIABLE CHANGED ({n}: {', '.join(self.variables)}) — these two scenes cannot isolate a cause"


# --- facts compared, per group -------------------------------------------------------------


def _gpu_facts(s: Scene) -> dict[str, Any]:
    return {
        "count": len(s.gpus),
        "models": sorted({g.name or "?" for g in s.gpus}),
        "uuids": sorted(g.uuid or "?" for g in s.gpus),
        "compute_caps": sorted({g.compute_cap or "?" for g in s.gpus}),
        "mig_modes": sorted({g.mig_mode or "?" for g in s.gpus}),
        "container_sees": sorted(g["uuid"] for g in s.container_gpus) if s.container_gpus is not None else None,
    }


def _c(s: Scene, key: str) -> Any:
    return (s.container or {}).get(key)


def _version_of(key: str) -> Callable[[Scene], Any]:
    return lambda s: s.versions.get(key)


FACTS: dict[str, dict[str, Callable[[Scene], Any]]] = {
    "driver": {
        "driver_version": lambda s: s.host.driver_version,
        "kernel_module": lambda s: s.host.driver_version_proc,
        "cuda_driver_version": lambda s: s.host.cuda_driver_version,
    },
    "image": {
        "image": lambda s: _c(s, "image"),
        "image_id": lambda s: _c(s, "image_id"),
        "repo_digests": lambda s: sorted(_c(s, "repo_digests") or []) or None,
    },
    "versions": {k: _version_of(k) for k in ("python", "torch", "torch_cuda", "vllm", "nccl")},
    "libraries": {
        "libcuda": lambda s: (s.libcuda or {}).get("path"),
        "libcuda_version": lambda s: (s.libcuda or {}).get("version"),
        "ld_so_conf": lambda s: s.ld_so_conf or None,
    },
    "command": {
        "container_command": lambda s: _c(s, "command"),
        "process_cmdline": lambda s: (s.process or {}).get("cmdline"),
        "runtime": lambda s: _c(s, "runtime"),
        "device_requests": lambda s: _c(s, "device_requests"),
    },
    "host": {
        "os": lambda s: s.host.os,
        "kernel": lambda s: s.host.kernel,
        "arch": lambda s: s.host.arch,
    },
}


def diff_scenes(a: Scene, b: Scene) -> SceneDiff:
    """Every compared fact that differs between ``a`` and ``b``, grouped."""
    d = SceneDiff()
    for group in GROUPS:
        if group == "gpus":
            fa, fb = _gpu_facts(a), _gpu_facts(b)
            d.changes += [Change("gpus", k, fa[k], fb[k]) for k in fa if fa[k] != fb[k]]
        elif group == "env":
            for k in sorted(set(a.env) | set(b.env)):
                if a.env.get(k) != b.env.get(k):
                    d.changes.append(Change("env", k, a.env.get(k), b.env.get(k)))
        else:
            for key, get in FACTS[group].items():
                va, vb = get(a), get(b)
                if va != vb:
                    d.changes.append(Change(group, key, va, vb))
    return d


def diff_lines(d: SceneDiff, a_name: str = "A", b_name: str = "B") -> list[str]:
    """The diff for a terminal: grouped, then the loud note (or 'one variable')."""
    if not d.changes:
        return ["no differences in driver, GPUs, image, env, versions, libraries, command or host"]
    out = []
    for group, items in d.by_group().items():
        out.append(f"[{group}]")
        for c in items:
            out.append(f"  {c.key}: {_short(c.a)}  →  {_short(c.b)}")
    out.append(f"!!! {d.loud}" if d.loud else f"one variable changed: {d.variables[0]}")
    return out


def _short(v: Any, width: int = 140) -> str:
    text = (
        "(none)" if v is None else " ".join(v) if isinstance(v, list) and all(isinstance(x, str) for x in v) else str(v)
    )
    return text if len(text) <= width else text[: width - 1] + "…"


# --- N nodes: the odd node out -----------------------------------------------------------------


@dataclass
class OddNode:
    fact: str
    majority: Any
    """The value most nodes share (None when there is no majority, e.g. two nodes that differ)."""
    values: dict[str, Any]
    """alias → value, for every node."""
    odd: list[str]
    """The nodes whose value is not the majority's (all of them when there is no majority)."""


def node_facts(s: Scene) -> dict[str, Any]:
    """The flat facts compared across nodes (driver, image digest, env, libcuda, GPU count …)."""
    facts = {f"{g}.{k}": get(s) for g, keys in FACTS.items() if g not in ("command",) for k, get in keys.items()}
    gf = _gpu_facts(s)
    facts.update({"gpus.count": gf["count"], "gpus.models": gf["models"], "gpus.compute_caps": gf["compute_caps"]})
    facts.update({f"env.{k}": v for k, v in s.env.items()})
    return facts


def odd_nodes(scenes: Sequence[Scene]) -> list[OddNode]:
    """Every fact on which the nodes of one deployment disagree, with the odd node(s) named."""
    per: dict[str, dict[str, Any]] = {}
    for i, s in enumerate(scenes):
        name = s.alias or f"node{i}"
        per[name if name not in per else f"{name}#{i}"] = node_facts(s)
    keys = sorted({k for f in per.values() for k in f})
    out = []
    for k in keys:
        values = {a: f.get(k) for a, f in per.items()}
        counts = Counter(repr(v) for v in values.values())
        if len(counts) <= 1:
            continue
        (top, n), *rest = counts.most_common()
        has_majority = not rest or n > rest[0][1]
        majority = next(v for v in values.values() if repr(v) == top) if has_majority else None
        odd = [a for a, v in values.items() if not has_majority or repr(v) != top]
        out.append(OddNode(fact=k, majority=majority, values=values, odd=odd))
    return out


def odd_lines(findings: list[OddNode]) -> list[str]:
    """Odd-node-out findings as sentences."""
    if not findings:
        return ["all nodes agree on every compared fact"]
    out = []
    for f in findings:
        if f.majority is not None:
            odd = ", ".join(f"{a} has {_short(f.values[a], 80)}" for a in f.odd)
            out.append(f"ODD NODE {f.fact}: {odd} while the others have {_short(f.majority, 80)}")
        else:
            out.append(f"NODES DIFFER {f.fact}: " + ", ".join(f"{a}={_short(v, 60)}" for a, v in f.values.items()))
    return out

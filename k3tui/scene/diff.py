"""What differs between two scenes, and which node is the odd one out among N.

The ladder's rule is one variable per step, so a diff counts *variables*, not lines:
the driver is one variable whatever number of its fields moved, the GPU set is one, the
image is one, each environment variable is one. More than one changed variable gets a
LOUD note — a comparison that moved two things at once proves nothing.

Facts that change on their own (memory in use, timestamps, probe timings) are not
compared, and inside the facts that are, volatile parts — pids (``kill -0 8356``,
``pid=…``, ``/proc/N/``), timestamps, durations, k3tui's random run ids — are masked
before comparing (:func:`stable`): two scenes that differ only there are "nothing that
matters changed", never "more than one variable". A long value is shown where it
differs: the keys of a nested value that changed, the entries a list gained or lost, or
the window of text around the first difference — never a clipped common prefix. Multi-node (issue 9): :func:`odd_nodes` compares the scenes of one
deployment fact by fact and names the node(s) whose value differs from the majority —
"node b runs driver 575 while a runs 580".
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .model import Scene

GROUPS = ("driver", "gpus", "image", "env", "versions", "libraries", "command", "host", "manifest")
_MANIFEST_VOLATILE = re.compile(
    r"^metadata\.(uid|resourceVersion|creationTimestamp|generation|managedFields|name|generateName|"
    r"labels\.pod-template-hash|annotations\.kubectl\.kubernetes\.io/last-applied-configuration)|"
    r"^spec\.containers\[[^]]*\]\.env\["  # env variables are the env group's, one each
)
"""Pod manifest fields that are identity, not launch definition (or compared in another group)."""


@dataclass
class Change:
    group: str
    key: str
    a: Any
    b: Any


@dataclass
class SceneDiff:
    changes: list[Change] = field(default_factory=list)
    volatile: list[Change] = field(default_factory=list)
    """Facts that differ only in volatile parts (pids, timestamps, durations, run ids): not variables."""

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
            out += [f"{group} {c.key}" for c in items] if group in ("env", "manifest") else [group]
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


_VOLATILE = [
    (re.compile(r"\bkill -0 \d+"), "kill -0 <pid>"),
    (re.compile(r"\b(pid[=: ]\s*)\d+", re.I), r"\1<pid>"),
    (re.compile(r"/proc/\d+/"), "/proc/<pid>/"),
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b\d\d:\d\d:\d\d(?:[.,]\d+)?\b"), "<time>"),
    (re.compile(r"\b1[5-9]\d{8}(?:\.\d+)?\b"), "<epoch>"),
    (re.compile(r"\b(took|after|in) \d+(?:\.\d+)? ?(?:ms|s|sec|seconds)\b"), r"\1 <duration>"),
    (re.compile(r"\br\d+-[0-9a-f]{6}\b"), "<run>"),
]
"""Parts of a value that change on their own between two freezes of the same setup."""


def stable(v: Any) -> Any:
    """``v`` with its volatile parts masked (strings inside lists and dicts too)."""
    if isinstance(v, str):
        for rx, repl in _VOLATILE:
            v = rx.sub(repl, v)
        return v
    if isinstance(v, list):
        return [stable(x) for x in v]
    if isinstance(v, dict):
        return {k: stable(x) for k, x in v.items()}
    return v


def _compare(d: SceneDiff, c: Change) -> None:
    if c.a == c.b:
        return
    (d.changes if stable(c.a) != stable(c.b) else d.volatile).append(c)


def diff_scenes(a: Scene, b: Scene) -> SceneDiff:
    """Every compared fact that differs between ``a`` and ``b``, grouped (volatile-only ones apart)."""
    d = SceneDiff()
    for group in GROUPS:
        if group == "gpus":
            fa, fb = _gpu_facts(a), _gpu_facts(b)
            for k in fa:
                _compare(d, Change("gpus", k, fa[k], fb[k]))
        elif group == "env":
            for k in sorted(set(a.env) | set(b.env)):
                _compare(d, Change("env", k, a.env.get(k), b.env.get(k)))
        elif group == "manifest":
            _manifests(d, a, b)
        else:
            for key, get in FACTS[group].items():
                _compare(d, Change(group, key, get(a), get(b)))
    _job_changes(d, a, b)
    return d


_SLURM_SET = re.compile(r"^(SLURM|SLURMD|SRUN|PMI|PMIX)_")


def _job_changes(d: SceneDiff, a: Scene, b: Scene) -> None:
    """Two Slurm jobs (issue 19): their batch scripts line by line (group ``script``, one variable: the
    launch definition), their step envs key by key (each an ``env`` variable; what Slurm sets per job,
    ``SLURM_JOB_ID`` and the like, is volatile)."""
    ja, jb = a.job or {}, b.job or {}
    if not ja and not jb:
        return
    sa, sb = ja.get("script"), jb.get("script")
    if sa != sb:
        d.changes.append(Change("script", "batch script", sa, sb))
    ea, eb = ja.get("env") or {}, jb.get("env") or {}
    for k in sorted(set(ea) | set(eb)):
        if ea.get(k) == eb.get(k) or k in a.env or k in b.env:  # the scene's own env group has those
            continue
        c = Change("env", f"{k} (job)", ea.get(k), eb.get(k))
        (d.volatile if _SLURM_SET.match(k) else d.changes).append(c)


def script_lines(a: str | None, b: str | None) -> list[str]:
    """Two batch scripts as a unified diff (``-`` A's line, ``+`` B's), one line of context."""
    import difflib

    return list(difflib.unified_diff((a or "").split("\n"), (b or "").split("\n"), "A", "B", n=1, lineterm=""))[2:]


def _manifests(d: SceneDiff, a: Scene, b: Scene) -> None:
    """Two pods' manifests (issue 18), field by field: each changed field one variable."""
    from ..launch.manifest import diff as manifest_diff

    ma, mb = ((s.pod or {}).get("manifest") for s in (a, b))
    if not ma and not mb:
        return
    for c in manifest_diff(ma or {}, mb or {}):
        if not _MANIFEST_VOLATILE.match(c["key"]):
            _compare(d, Change("manifest", c["key"], c["old"], c["new"]))


def diff_lines(d: SceneDiff, a_name: str = "A", b_name: str = "B") -> list[str]:
    """The diff for a terminal: grouped, each change where it differs, then the verdict line."""
    out = []
    for group, items in d.by_group().items():
        out.append(f"[{group}]")
        for c in items:
            shown = script_lines(c.a, c.b) if group == "script" else change_lines(c.key, c.a, c.b)
            out += [f"  {line}" for line in shown]
    if d.volatile:
        keys = ", ".join(f"{c.group}.{c.key}" for c in d.volatile)
        out.append(f"(not variables: {keys} differ only in pids, timestamps, durations or run ids)")
    if not d.changes:
        where = "driver, GPUs, image, env, versions, libraries, command or host"
        out.append(
            f"nothing that matters changed: no difference in {where}" if d.volatile else f"no differences in {where}"
        )
    else:
        out.append(f"!!! {d.loud}" if d.loud else f"one variable changed: {d.variables[0]}")
    return out


def change_lines(key: str, a: Any, b: Any, width: int = 140) -> list[str]:
    """One change shown where it differs: nested keys that changed, list entries gained or lost, or a text window."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            if a.get(k) != b.get(k):
                out += change_lines(f"{key} {k}", a.get(k), b.get(k), width)
        return out
    if isinstance(a, list) and isinstance(b, list) and all(isinstance(x, str) for x in (*a, *b)):
        gone, new = [x for x in a if x not in b], [x for x in b if x not in a]
        if gone or new:
            return [
                f"{key}: "
                + ", ".join([*(f"+ {_short(x, width)}" for x in new), *(f"- {_short(x, width)}" for x in gone)])
            ]
    sa, sb = _text(a), _text(b)
    if len(sa) > width or len(sb) > width:
        sa, sb = where_differs(sa, sb, width)
    return [f"{key}: {sa}  →  {sb}"]


def where_differs(a: str, b: str, width: int = 140, context: int = 24) -> tuple[str, str]:
    """Both texts cut to the window around their first difference (``…`` marks what was cut)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    start = max(0, n - context)

    def window(s: str) -> str:
        part = s[start : start + width]
        return ("…" if start else "") + part + ("…" if start + width < len(s) else "")

    return window(a), window(b)


def _text(v: Any) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return " ".join(v)
    return str(v)


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
        counts = Counter(repr(stable(v)) for v in values.values())  # a pid is no difference between nodes
        if len(counts) <= 1:
            continue
        (top, n), *rest = counts.most_common()
        has_majority = not rest or n > rest[0][1]
        majority = next(v for v in values.values() if repr(stable(v)) == top) if has_majority else None
        odd = [a for a, v in values.items() if not has_majority or repr(stable(v)) != top]
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

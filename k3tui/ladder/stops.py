"""The five stop conditions: when to stop laddering here and move to an isolated environment.

A pure function over the event stream (live or replayed), so a colleague replaying the
session sees the same verdicts. Each condition is PASS (safe to continue), FAIL
(tripped: recommend an isolated node) or UNKNOWN (no evidence either way), with the
evidence and the indices of the events that decided it.

1. ``image-driver``   the image or driver is not the same between runs;
2. ``gpus-exclusive`` other processes use the GPUs;
3. ``revertible``     a change could not be reverted;
4. ``live-inference`` the work disturbs live inference (other serving processes on the host);
5. ``baseline-stable`` the official baseline does not reproduce stably.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import events as ev
from .checklist import is_server_run

TITLES = {
    "image-driver": "Image and driver the same between runs",
    "gpus-exclusive": "GPUs exclusive to this work",
    "revertible": "Every change could be reverted",
    "live-inference": "No live inference disturbed on the host",
    "baseline-stable": "Official baseline reproduces stably",
}


@dataclass
class StopCheck:
    name: str
    verdict: str
    """PASS (fine), FAIL (tripped: move to an isolated environment), UNKNOWN."""
    evidence: str
    events: list[int] = field(default_factory=list)

    @property
    def title(self) -> str:
        return TITLES[self.name]

    @property
    def tripped(self) -> bool:
        return self.verdict == "FAIL"


def evaluate(events: Sequence[Any]) -> list[StopCheck]:
    """All five conditions over ``events`` (in order)."""
    return [_image_driver(events), _exclusive(events), _revertible(events), _live(events), _baseline_stable(events)]


def _scene_facts(events: Sequence[Any]) -> list[tuple[int, str, str, str]]:
    """(index, host, driver, image id) of every frozen scene."""
    out = []
    for i, e in enumerate(events):
        if isinstance(e, ev.SceneFrozen):
            s = e.scene or {}
            c = s.get("container") or {}
            image = str(c.get("image_id") or c.get("image") or "")
            out.append((i, e.host, str((s.get("host") or {}).get("driver_version") or ""), image))
    return out


def _image_driver(events: Sequence[Any]) -> StopCheck:
    facts = _scene_facts(events)
    for i, e in enumerate(events):
        if isinstance(e, ev.RunConfigSet) and e.config.get("driver"):
            facts.append((i, e.host, str(e.config["driver"]), ""))
    if not facts:
        return StopCheck("image-driver", "UNKNOWN", "no scene frozen yet")
    for what, pos in (("driver", 2), ("image", 3)):
        by_host: dict[str, tuple[int, str]] = {}
        for f in sorted(facts):
            value = str(f[pos])
            if not value:
                continue
            first = by_host.setdefault(f[1], (f[0], value))
            if first[1] != value:
                return StopCheck(
                    "image-driver",
                    "FAIL",
                    f"{what} changed on {f[1] or 'the host'}: {first[1]} (event #{first[0]}) then {value} (event #{f[0]})",
                    [first[0], f[0]],
                )
    seen = sorted({f[2] for f in facts if f[2]})
    drivers = f"driver {', '.join(seen)}" if seen else "no NVIDIA driver seen"
    return StopCheck(
        "image-driver",
        "PASS",
        f"{len(facts)} observation(s), {drivers} throughout",
        [f[0] for f in facts][:10],
    )


def _exclusive(events: Sequence[Any]) -> StopCheck:
    """Processes seen on the GPUs while none of our runs was alive are someone else's."""
    ours_alive: set[str] = set()
    foreign: list[tuple[int, str]] = []
    looked = 0
    for i, e in enumerate(events):
        if is_server_run(e):
            ours_alive.add(e.run)
        elif isinstance(e, ev.RunEnded):
            ours_alive.discard(e.run)
        elif isinstance(e, ev.GpuSample) and e.gpus:
            looked += 1
            if not ours_alive:
                foreign += [
                    (i, f"pid {p.pid} {p.name[:60]} on GPU {p.gpu} ({p.used_mib:.0f} MiB)") for p in e.processes
                ]
        elif isinstance(e, ev.SceneFrozen) and (e.scene or {}).get("gpus"):
            looked += 1
            if not ours_alive:
                foreign += [
                    (i, f"pid {p.get('pid')} {str(p.get('name') or '')[:60]} on GPU {p.get('gpu_index')}")
                    for p in (e.scene.get("gpu_processes") or [])
                ]
    if foreign:
        return StopCheck(
            "gpus-exclusive",
            "FAIL",
            f"{len(foreign)} process(es) on the GPUs that are not this run: " + "; ".join(f for _, f in foreign[:3]),
            [i for i, _ in foreign[:10]],
        )
    if not looked:
        return StopCheck("gpus-exclusive", "UNKNOWN", "no GPU process data (no NVIDIA GPU sampled or frozen)")
    return StopCheck(
        "gpus-exclusive", "PASS", f"no other process on the GPUs in {looked} observation(s) outside our runs"
    )


def _revertible(events: Sequence[Any]) -> StopCheck:
    changes = 0
    for i, e in enumerate(events):
        if isinstance(e, ev.Notice) and "cannot revert" in e.message:
            return StopCheck("revertible", "FAIL", e.message, [i])
        if isinstance(e, ev.RunConfigSet) and e.diff:
            observed = [d for d in e.diff if d.get("key") in ("driver", "gpu_count") and d.get("old") not in (None, "")]
            if observed:
                d = observed[0]
                return StopCheck(
                    "revertible",
                    "FAIL",
                    f"{d['key']} changed outside k3tui's control: {d['old']} → {d['new']} (cannot be reverted from here)",
                    [i],
                )
            changes += 1
    return StopCheck(
        "revertible", "PASS", f"{max(changes - 1, 0)} change(s) made, each revertible from the recorded configs"
    )


def _live(events: Sequence[Any]) -> StopCheck:
    found = [
        (i, e)
        for i, e in enumerate(events)
        if isinstance(e, ev.CheckVerdict) and e.rung == "stop" and e.check == "live-inference" and e.host
    ]
    if not found:
        return StopCheck("live-inference", "UNKNOWN", "the hosts were not probed for serving processes yet")
    latest: dict[str, tuple[int, Any]] = {e.host: (i, e) for i, e in found}
    bad = [(i, e) for i, e in latest.values() if e.verdict == "FAIL"]
    if bad:
        return StopCheck(
            "live-inference", "FAIL", "; ".join(f"{e.host}: {e.evidence}" for _, e in bad), [i for i, _ in bad]
        )
    unknown = [e for _, e in latest.values() if e.verdict != "PASS"]
    verdict = "UNKNOWN" if unknown else "PASS"
    return StopCheck(
        "live-inference",
        verdict,
        "; ".join(f"{e.host}: {e.evidence}" for _, e in latest.values()),
        [i for i, _ in latest.values()],
    )


def _baseline_stable(events: Sequence[Any]) -> StopCheck:
    lefts = [(i, e) for i, e in enumerate(events) if isinstance(e, ev.RungLeft) and e.rung in ("baseline", "minimal")]
    if not lefts:
        return StopCheck("baseline-stable", "UNKNOWN", "neither the baseline nor the minimal launch has run")
    for i, e in lefts:
        if e.verdict == "DRIFT":
            return StopCheck("baseline-stable", "FAIL", f"{e.rung}: {e.summary}", [i])
        if e.verdict == "FAIL" and e.repeats and e.reproduced is not None and 0 < e.reproduced < e.repeats:
            return StopCheck(
                "baseline-stable", "FAIL", f"{e.rung} reproduced only {e.reproduced}/{e.repeats}: {e.summary}", [i]
            )
    base = [(i, e.verdict) for i, e in lefts if e.rung == "baseline"]
    if len({v for _, v in base}) > 1:
        return StopCheck(
            "baseline-stable",
            "FAIL",
            "baseline checks changed verdict between runs: " + ", ".join(f"{v} (#{i})" for i, v in base),
            [i for i, _ in base],
        )
    return StopCheck(
        "baseline-stable",
        "PASS",
        "; ".join(
            f"{e.rung} {e.verdict}" + (f" {e.reproduced}/{e.repeats}" if e.repeats and e.repeats > 1 else "")
            for _, e in lefts[-3:]
        ),
        [i for i, _ in lefts],
    )

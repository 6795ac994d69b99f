"""The five stop conditions: when to stop laddering here and move to an isolated environment.

A pure function over the event stream (live or replayed), so a colleague replaying the
session sees the same verdicts. Each condition is PASS (safe to continue), FAIL
(tripped: recommend an isolated node) or UNKNOWN (no evidence either way), with the
evidence and the indices of the events that decided it.

1. ``image-driver``   the image or driver is not the same between runs;
2. ``gpus-exclusive`` other processes use the GPUs;
3. ``revertible``     a change could not be reverted;
4. ``live-inference`` the work disturbs live inference (other serving processes on the host);
5. ``baseline-stable`` the official baseline does not reproduce stably;
6. ``hardware``       a host fault (fatal Xid, uncorrectable ECC, pending/failed row remap,
   fabric not registered, IMEX down, NVLink link down or error counters growing between two
   freezes) — broken hardware makes every later rung's evidence worthless: drain the node and
   reset the GPU first. Climbing on anyway needs a recorded reason (a ``Decision`` whose
   action is :data:`OVERRIDE`, after the fault was seen).
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
    "hardware": "No hardware fault on the hosts (Xid, ECC, NVLink, IMEX)",
}
OVERRIDE = "climb past a hardware stop"
"""The ``Decision.action`` that records why the operator climbs on despite a hardware fault."""


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
    """All six conditions over ``events`` (in order)."""
    return [
        _image_driver(events),
        _exclusive(events),
        _revertible(events),
        _live(events),
        _baseline_stable(events),
        hardware(events),
    ]


def hardware(events: Sequence[Any]) -> StopCheck:
    """The latest scene of every host: its fatal host faults; NVLink counters that grew since the one before."""
    latest: dict[str, tuple[int, dict]] = {}
    grown: list[tuple[int, str]] = []
    for i, e in enumerate(events):
        if isinstance(e, ev.SceneFrozen) and e.scene:
            before = latest.get(e.host)
            if before is not None:
                grown += [(i, g) for g in _nvlink_growth(e.host, before[1], e.scene)]
            latest[e.host] = (i, e.scene)
    if not latest:
        return StopCheck("hardware", "UNKNOWN", "no scene frozen yet")
    bad = [(i, host, f) for host, (i, sc) in latest.items() for f in sc.get("host_faults") or [] if f.get("fatal")]
    bad += _live_xids(events)
    bad.sort(key=lambda b: (b[2].get("gpu") is None, "daemon is" not in str(b[2].get("meaning"))))
    grown += _domain_split(latest, [e.host for e in events if isinstance(e, ev.HostConnected)])
    if bad or grown:
        first = bad[0] if bad else None
        what = [_fault_text(h, f) for _, h, f in bad[:3]] + [g for _, g in grown[:2]]
        lead = drain_advice(first[1], first[2]) if first else f"drain {grown[0][1].split(' ', 1)[0].rstrip(':')}"
        return StopCheck("hardware", "FAIL", f"{lead} "
                         f"before any further step: {'; '.join(what)}", [i for i, *_ in bad][:10] + [i for i, _ in grown][:5])  # fmt: skip
    return StopCheck(
        "hardware",
        "PASS",
        f"no fatal host fault in the latest scene of {', '.join(latest)}",
        [i for i, _ in latest.values()],
    )


def _live_xids(events: Sequence[Any]) -> list[tuple[int, str, dict]]:
    """Fatal Xids the GPU sampler's NVML event registration reported during the session (``XidEvent``)."""
    from ..scene.hostfaults import xid_class

    out = []
    for i, e in enumerate(events):
        if isinstance(e, ev.XidEvent) and e.xid:
            meaning, action, fatal = xid_class(e.xid, e.text)
            if fatal:
                fault = {"kind": "xid", "gpu": e.gpu if e.gpu >= 0 else None, "code": e.xid, "fatal": True,
                         "time": None, "meaning": meaning, "action": action, "line": e.text or f"NVML: Xid {e.xid}"}  # fmt: skip
                out.append((i, e.host, fault))
    return out


def drain_advice(host: str, f: dict) -> str:
    """``drain gb300-02 and reset GPU 3`` (what to do before anything else)."""
    if f.get("gpu") is not None:
        verb = (
            "replace" if "replace the GPU" in str(f.get("action")) and "reset" not in str(f.get("action")) else "reset"
        )
        return f"drain {host or 'the host'} and {verb} GPU {f['gpu']}"
    return f"drain {host or 'the host'} and fix its {f.get('kind')} fault"


def _fault_text(host: str, f: dict) -> str:
    from ..scene.hostfaults import describe

    return describe(f, host)


def _domain_split(latest: dict[str, tuple[int, dict]], order: list[str]) -> list[tuple[int, str]]:
    """Hosts of one deployment whose GPUs registered in different fabric clusters / cliques."""
    from ..scene.hostfaults import describe, domain_faults

    split = domain_faults({h: sc for h, (_, sc) in latest.items()}, order)
    return [(latest[h][0], describe(f, h)) for h, f in split]


def _nvlink_growth(host: str, old: dict, new: dict) -> list[str]:
    """``gb300-02 GPU 5 link errors crc_errors 120 → 480`` for every counter that grew."""
    out = []
    before = (old.get("nvlink") or {}).get("gpus") or {}
    for idx, info in ((new.get("nvlink") or {}).get("gpus") or {}).items():
        for name, n in (info.get("errors") or {}).items():
            was = ((before.get(idx) or {}).get("errors") or {}).get(name)
            if was is not None and n > was:
                out.append(f"{host} GPU {idx} NVLink {name} grew {was} → {n} between two freezes")
    return out


def overridden(events: Sequence[Any]) -> bool:
    """Whether the operator recorded a reason to climb on despite the hardware stop (a ``Decision``)."""
    return any(isinstance(e, ev.Decision) and e.action == OVERRIDE and e.reason.strip() for e in events)


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

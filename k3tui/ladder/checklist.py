"""The eleven deliverables of "freeze, then ladder", ticked from evidence — never by hand.

A pure function over the event stream: each item is ``done`` only when events in the
session prove it, and it names those events (index and time), so the repro package's
report can link every tick to what justifies it. ``n/a`` is for items the deployment
makes meaningless (no container on a host launch, no GPU on a CPU host); everything
else that lacks evidence is ``missing`` with what to do next.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import events as ev

CORE_RUNGS = ("baseline", "minimal", "request")
_HELPERS = ("gpu", "freeze")
"""Detached runs that are k3tui's own helpers (GPU sampler, freeze probes), not servers."""


def is_server_run(e: Any) -> bool:
    """A RunStarted of a server under test (a ladder rung's run), not a k3tui helper."""
    return isinstance(e, ev.RunStarted) and (bool(e.rung) or not e.run.startswith(_HELPERS))


@dataclass
class Item:
    key: str
    title: str
    status: str = "missing"
    """``done``, ``missing`` or ``n/a``."""
    why: str = ""
    events: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return {"done": "PASS", "missing": "FAIL"}.get(self.status, "UNKNOWN")

    def evidence_text(self) -> str:
        refs = ", ".join(f"#{i} (t={t:.1f}s)" for i, t in zip(self.events[:6], self.times[:6], strict=False))
        return f"{self.status}: {self.why}" + (f" — events {refs}" if refs else "")


def _item(key: str, title: str, events: Sequence[Any], found: list[int], why: str, status: str | None = None) -> Item:
    st = status or ("done" if found else "missing")
    return Item(key, title, st, why, found, [float(getattr(events[i], "t", 0.0)) for i in found])


def _where(events: Sequence[Any], pred: Callable[[Any], bool]) -> list[int]:
    return [i for i, e in enumerate(events) if pred(e)]


def _scenes(events: Sequence[Any]) -> list[int]:
    return _where(events, lambda e: isinstance(e, ev.SceneFrozen))


def first_stack(events: Sequence[Any]) -> Item:
    title = "First exception stack archived"
    exc = _where(events, lambda e: isinstance(e, ev.ExceptionFound) and bool(e.stack or e.line))
    if not exc:
        return _item("first-stack", title, events, [], "no failure observed in this session", "n/a")
    frozen = _where(events, lambda e: isinstance(e, ev.SceneFrozen) and e.reason == "first-exception")
    found = [exc[0], *frozen[:1]]
    return _item(
        "first-stack",
        title,
        events,
        found,
        f"root exception recorded: {events[exc[0]].line[:100]}" + (" and scene frozen on it" if frozen else ""),
    )


def drivers(events: Sequence[Any]) -> Item:
    title = "Host and container driver recorded"
    for i in reversed(_scenes(events)):
        s = events[i].scene or {}
        host_drv = (s.get("host") or {}).get("driver_version")
        if not s.get("gpus") and not host_drv:
            return _item("drivers", title, events, [i], "no NVIDIA driver/GPU on this host", "n/a")
        if host_drv and (s.get("container") is None or s.get("container_gpus") is not None):
            where = (
                "host launch, no container"
                if s.get("container") is None
                else f"container sees {len(s.get('container_gpus') or [])} GPU(s)"
            )
            return _item("drivers", title, events, [i], f"host driver {host_drv}; {where}")
    return _item("drivers", title, events, [], "freeze the scene (host and container nvidia-smi)")


def image_cuda_model(events: Sequence[Any]) -> Item:
    title = "Image tag, CUDA build and model path confirmed"
    cfgs = _where(events, lambda e: isinstance(e, ev.RunConfigSet) and bool(e.config.get("model_path")))
    scenes = _scenes(events)
    if not cfgs or not scenes:
        return _item("image-cuda-model", title, events, [], "needs a frozen scene and a run config with the model path")
    cfg, s = events[cfgs[-1]].config, events[scenes[-1]].scene or {}
    image = (s.get("container") or {}).get("image") or cfg.get("image")
    cuda = (s.get("versions") or {}).get("torch_cuda")
    if cfg.get("image") and not image:
        return _item("image-cuda-model", title, events, [], "the image of the run is not confirmed by a scene")
    if s.get("gpus") and not cuda:
        return _item("image-cuda-model", title, events, [], "the CUDA build (torch.version.cuda) was not read")
    what = f"image {image or 'none (host launch)'}, CUDA {cuda or 'n/a (no GPU)'}, model {cfg['model_path']}"
    return _item("image-cuda-model", title, events, [scenes[-1], cfgs[-1]], what)


def command_env(events: Sequence[Any]) -> Item:
    runs = _where(events, lambda e: is_server_run(e) and bool(e.command))
    why = (
        f"{len(runs)} run(s) with full command and env, e.g. {events[runs[0]].command[:80]}"
        if runs
        else "no server run started yet"
    )
    return _item("command-env", "Full command and env saved", events, runs[:3], why)


def gpu_layout(events: Sequence[Any]) -> Item:
    title = "GPU count, visibility and parallelism confirmed"
    cfgs = _where(events, lambda e: isinstance(e, ev.RunConfigSet))
    scenes = _scenes(events)
    if not cfgs or not scenes:
        return _item("gpu-layout", title, events, [], "needs a frozen scene and a run config")
    cfg, s = events[cfgs[-1]].config, events[scenes[-1]].scene or {}
    if not s.get("gpus"):
        return _item("gpu-layout", title, events, [scenes[-1]], "no GPU on this host", "n/a")
    tp = cfg.get("tensor_parallel_size") or 1
    vis = cfg.get("visible_devices") or "all"
    return _item(
        "gpu-layout",
        title,
        events,
        [scenes[-1], cfgs[-1]],
        f"{len(s['gpus'])} GPU(s) seen, visible: {vis}, tensor parallel {tp}",
    )


def stage_isolated(events: Sequence[Any]) -> Item:
    title = "Failing stage isolated with the minimal command"
    left = _where(events, lambda e: isinstance(e, ev.RungLeft) and e.rung == "minimal")
    runs = {
        e.run for e in events if isinstance(e, ev.RunStarted) and (e.rung == "minimal" or e.run.endswith("-minimal"))
    }
    cls = _where(events, lambda e: isinstance(e, ev.RunClassified) and e.run in runs)
    if not left:
        return _item("stage-isolated", title, events, [], "run the minimal launch rung")
    stages = sorted({events[i].failed_stage for i in cls}) or ["none (API ready)"]
    return _item(
        "stage-isolated",
        title,
        events,
        [left[-1], *cls[:2]],
        f"minimal launch: {events[left[-1]].verdict}; failed stage {', '.join(stages)}",
    )


def startup_runtime(events: Sequence[Any]) -> Item:
    found = _where(
        events, lambda e: isinstance(e, ev.CheckVerdict) and e.rung == "request" and e.check == "startup-vs-runtime"
    )
    why = events[found[-1]].evidence[:120] if found else "send the fixed request (single-request rung)"
    return _item("startup-runtime", "Start-up vs runtime separated with the fixed request", events, found[-1:], why)


def features(events: Sequence[Any]) -> Item:
    title = "Features added one by one"
    left = _where(events, lambda e: isinstance(e, ev.RungLeft) and e.rung not in CORE_RUNGS)
    if not left:
        return _item(
            "features",
            title,
            events,
            [],
            "no feature rung run yet (prefix caching, then context length, then concurrency)",
        )
    names = list(dict.fromkeys(events[i].rung for i in left))
    return _item(
        "features",
        title,
        events,
        left,
        "one rung each, in order: "
        + ", ".join(f"{n}={next(events[i].verdict for i in reversed(left) if events[i].rung == n)}" for n in names),
    )


def one_variable(events: Sequence[Any]) -> Item:
    title = "One variable per change, both logs kept"
    changes = _where(events, lambda e: isinstance(e, ev.RunConfigSet) and bool(e.diff))[
        1:
    ]  # the first config is the start, not a change
    if not changes:
        return _item("one-variable", title, events, [], "no change made yet")
    logged = {e.id for e in events if isinstance(e, ev.Output) and e.stream == "log"}
    overrides = _where(
        events, lambda e: isinstance(e, ev.Decision) and e.action.startswith("override one-variable rule")
    )
    wide = [i for i in changes if len(events[i].diff) > 1]
    unjustified = [i for i in wide if not any(o < i for o in overrides)]
    runs = [e.run for e in events if is_server_run(e)]
    missing = [r for r in runs if r not in logged]
    if unjustified:
        return _item(
            "one-variable",
            title,
            events,
            unjustified,
            f"{len(unjustified)} change(s) touched several variables without a recorded reason",
            "missing",
        )
    if len(runs) < 2 or missing:
        why = f"logs missing for runs {', '.join(missing)}" if missing else "a change needs a run before and after it"
        return _item("one-variable", title, events, changes[:3], why, "missing")
    return _item(
        "one-variable",
        title,
        events,
        changes[:6],
        f"{len(changes)} change(s), {len(wide)} with a recorded reason; logs kept for {len(runs)} runs",
    )


def reproduction_count(events: Sequence[Any]) -> Item:
    title = "Reproduction count and first failing stage recorded"
    rep = _where(events, lambda e: isinstance(e, ev.RungLeft) and (e.repeats or 0) >= 2)
    cls = _where(events, lambda e: isinstance(e, ev.RunClassified))
    if not rep:
        return _item("reproduction", title, events, [], "repeat a rung (--repeat K) to count how often it reproduces")
    if not cls:
        return _item("reproduction", title, events, [], "no run was classified")
    e = events[rep[-1]]
    first = next((events[i] for i in cls if events[i].failed_stage != "none"), events[cls[0]])
    return _item(
        "reproduction",
        title,
        events,
        [rep[-1], cls[0]],
        f"{e.rung} reproduced {e.reproduced}/{e.repeats}; first failing stage {first.failed_stage}",
    )


def isolated(events: Sequence[Any]) -> Item:
    title = "Isolated-node comparison done"
    marks = _where(
        events,
        lambda e: (
            (isinstance(e, ev.Decision) and "isolated" in e.action.lower())
            or (isinstance(e, ev.Marker) and "isolated" in e.label.lower())
            or (isinstance(e, ev.SceneFrozen) and "isolated" in e.reason)
        ),
    )
    why = (
        "session marked as the isolated-node comparison"
        if marks
        else "repeat the minimal launch on an isolated node (k3tui ladder NODE --isolated-node) and diff the scenes"
    )
    return _item("isolated-node", title, events, marks[:3], why)


ITEMS = (
    first_stack,
    drivers,
    image_cuda_model,
    command_env,
    gpu_layout,
    stage_isolated,
    startup_runtime,
    features,
    one_variable,
    reproduction_count,
    isolated,
)


def evaluate(events: Sequence[Any]) -> list[Item]:
    """The eleven items, in the issue's order."""
    return [f(events) for f in ITEMS]


STATUS_WORD = {"PASS": "done", "FAIL": "not done yet", "UNKNOWN": "n/a"}
"""How a checklist verdict reads: an item without evidence is work still to do, not a failure."""


def verdict_word(verdict: str) -> str:
    return STATUS_WORD.get(verdict.upper(), verdict.lower())


def as_verdicts(items: Sequence[Item]) -> list[ev.CheckVerdict]:
    """Items as the ``CheckVerdict`` events the ladder records for them (``rung="checklist"``)."""
    return [
        ev.CheckVerdict(rung="checklist", check=it.key, verdict=it.verdict, evidence=it.evidence_text(), title=it.title)
        for it in items
    ]


def session_checklist(recorded: Sequence[ev.CheckVerdict], events: Sequence[Any]) -> list[ev.CheckVerdict]:
    """The checklist of a session, the same for the screen and the package.

    What the ladder recorded (``rung="checklist"``) wins; a session that recorded none — a
    TUI session climbs rung by rung and never runs the whole ladder — is evaluated from its
    events, so the work a person did in the TUI is in ``REPORT.md`` and ``checklist.md`` too.
    ``events`` need not hold every output line: one per run shows that its log was kept.
    """
    return list(recorded) if recorded else as_verdicts(evaluate(events))


def line_of(e: ev.CheckVerdict) -> str:
    """``checklist done: First exception stack — …`` (headless progress and the live log)."""
    evidence = e.evidence
    for status in ("done: ", "missing: ", "n/a: "):  # Item.evidence_text() starts with its status
        evidence = evidence.removeprefix(status)
    return f"checklist {verdict_word(e.verdict)}: {e.title or e.check} — {evidence}"

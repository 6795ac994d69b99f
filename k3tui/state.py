"""SessionState: a fold of events. Live and replay render the same thing.

``state = reduce(state, event)`` for every event, live (as the recorder emits) or replayed
(as the reader yields). The reducer mutates and returns the state for speed; use
:meth:`SessionState.snapshot` for a checkpoint (replay keeps one every few thousand
events, so seeking folds only from the nearest checkpoint).

State holds what the screens show, bounded: counts and a short tail of output, not the
whole log (the recording keeps everything).
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from . import events as ev
from .bisect_walk import BAD, WalkRow, parse_end, parse_step, taken_of

LOG_TAIL = 2000
GPU_HISTORY = 120
STAGES = ("container", "config", "device", "weights", "engine", "api", "runtime")


@dataclass
class HostView:
    """One host of the deployment as the session knows it."""

    alias: str
    address: str = ""
    user: str = ""
    fingerprint: str = ""
    simulated: bool = False
    connected: bool = False
    reconnects: int = 0
    clock_skew: float | None = None
    role: str = ""
    """``head``/``worker`` in a multi-node deployment; "" for a single host or an old recording."""

    @property
    def label(self) -> str:
        """``tray01 · head`` (the alias alone when the role is not known)."""
        return host_label(self.alias, self.role)


def host_label(alias: str, role: str = "") -> str:
    """How every view names a host: ``tray01 · head``, or just ``tray01`` without a role."""
    return f"{alias} · {role}" if role else alias


@dataclass
class RunView:
    """One detached run (a server start) and what the classifier saw in it."""

    run: str
    host: str = ""
    command: str = ""
    rung: str = ""
    started: float = 0.0
    ended: float | None = None
    status: int | None = None
    end_reason: str = ""
    stages: list[ev.StageReached] = field(default_factory=list)
    exception: ev.ExceptionFound | None = None
    classified: ev.RunClassified | None = None
    lines: int = 0
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def stage(self) -> str:
        """The latest stage reached ("" before any)."""
        return self.stages[-1].stage if self.stages else ""


@dataclass
class RungView:
    """One rung of the ladder."""

    name: str
    state: str = "pending"
    """``pending``, ``active`` or ``done``."""
    verdict: str = ""
    attempts: int = 0
    summary: str = ""
    reproduced: int | None = None
    repeats: int | None = None
    entered: float = 0.0


@dataclass
class BisectView:
    """A ``k3tui bisect`` walk as far as the events folded so far record it (issue 20).

    Read from the same step Decisions as :func:`k3tui.bisect_walk.walk` (replay, REPORT.md).
    """

    steps: list[WalkRow] = field(default_factory=list)
    estimate: int = 0
    """The runs the search expected (the ``~n`` of its latest step)."""
    keys: list[str] = field(default_factory=list)
    """B's changeable variables (the config change recorded for the ``bad as given (B)`` step)."""
    candidates: list[str] = field(default_factory=list)
    """The variables the culprit is still among: those of the latest configuration that reproduced."""
    end: str = ""
    """How the walk ended: ``culprit``, ``interaction``, ``aborted``, ``drift`` … ("" while it runs)."""
    answer: str = ""
    """The closing Decision's line (the ``culprit: …`` line, or what an abort kept)."""
    resumed_from: str = ""
    """A resumed recording: what its first Decision says (``N step(s) judged in FILE``)."""

    @property
    def aborted(self) -> bool:
        return self.end == "aborted"

    @property
    def found(self) -> bool:
        """The walk named a culprit (or the smallest interacting set)."""
        return self.end in ("culprit", "interaction")


def _fold_bisect(state: SessionState, e: ev.Decision) -> None:
    row = parse_step(e.action, e.reason)
    end = None if row is not None else parse_end(e.action, e.reason)
    if row is None and end is None and e.action != "bisect resumed":
        return
    b = state.bisect
    if b is None:
        b = state.bisect = BisectView()
    if e.action == "bisect resumed":
        b.resumed_from, b.end, b.answer = e.reason, "", ""
        return
    if end is not None:
        b.end, b.answer = end
        return
    if row is None:  # unreachable: neither a step nor an end returned above
        return
    if b.end:  # a step after an end: the walk goes on (a resumed search appended to it)
        b.end, b.answer = "", ""
    b.steps.append(row)
    b.estimate = row.of
    if row.purpose.startswith("bad as given") and not b.keys and state.configs:
        b.keys = [str(d.get("key")) for d in state.configs[-1].diff if d.get("key") != "entry"]
        b.candidates = list(b.keys)
    taken = taken_of(row.purpose, b.keys)
    if taken is not None:
        b.keys += [k for k in taken if k not in b.keys]
        if row.verdict == BAD:
            b.candidates = taken


@dataclass
class SessionState:
    """Everything the screens render, folded from the event stream."""

    t: float = 0.0
    events: int = 0
    hosts: dict[str, HostView] = field(default_factory=dict)
    runs: dict[str, RunView] = field(default_factory=dict)
    current_run: str = ""
    first_exception: ev.ExceptionFound | None = None
    """The first root exception of the session (the freeze banner)."""
    scenes: list[ev.SceneFrozen] = field(default_factory=list)
    checks: dict[tuple[str, str], ev.CheckVerdict] = field(default_factory=dict)
    rungs: dict[str, RungView] = field(default_factory=dict)
    current_rung: str = ""
    configs: list[ev.RunConfigSet] = field(default_factory=list)
    notes: list[ev.Note] = field(default_factory=list)
    markers: list[ev.Marker] = field(default_factory=list)
    decisions: list[ev.Decision] = field(default_factory=list)
    notices: list[ev.Notice] = field(default_factory=list)
    requests: int = 0
    responses: dict[str, ev.HttpResponse] = field(default_factory=dict)
    gpu: dict[tuple[str, int], deque[float]] = field(default_factory=dict)
    gpu_total: dict[tuple[str, int], float] = field(default_factory=dict)
    xids: list[ev.XidEvent] = field(default_factory=list)
    log_tail: deque[tuple[str, str]] = field(default_factory=lambda: deque(maxlen=LOG_TAIL))
    """(command or run id, line) of the last lines of output."""
    output_lines: int = 0
    commands: int = 0
    bisect: BisectView | None = None
    """A ``k3tui bisect`` walk (its steps, candidates, answer); None when the session holds none."""

    def snapshot(self) -> SessionState:
        """A deep copy, for replay checkpoints."""
        return copy.deepcopy(self)

    @property
    def scene(self) -> dict[str, Any] | None:
        """The latest frozen scene."""
        return self.scenes[-1].scene if self.scenes else None

    @property
    def simulated(self) -> bool:
        return any(h.simulated for h in self.hosts.values())

    def role_of(self, alias: str) -> str:
        """The recorded role of a host ("" when none was recorded)."""
        h = self.hosts.get(alias)
        return h.role if h is not None else ""

    def label_of(self, alias: str) -> str:
        """``tray01 · head`` for a host with a recorded role, else the alias."""
        return host_label(alias, self.role_of(alias))


def _host(state: SessionState, alias: str) -> HostView:
    h = state.hosts.get(alias)
    if h is None:
        h = state.hosts[alias] = HostView(alias)
    return h


def _run(state: SessionState, run: str, host: str = "") -> RunView:
    r = state.runs.get(run)
    if r is None:
        r = state.runs[run] = RunView(run, host=host)
    return r


def reduce(state: SessionState, e: ev.AnyEvent) -> SessionState:  # noqa: C901 - one flat dispatch
    """Fold one event into the state (mutates and returns it)."""
    state.t = max(state.t, e.t)
    state.events += 1
    match e:
        case ev.Output():
            lines = e.text.splitlines() or [""]
            state.output_lines += len(lines)
            r = state.runs.get(e.id)
            if r is not None:
                r.lines += len(lines)
            for ln in lines:
                state.log_tail.append((e.id, ln))
        case ev.GpuSample():
            for g in e.gpus:
                key = (e.host, g.index)
                hist = state.gpu.get(key)
                if hist is None:
                    hist = state.gpu[key] = deque(maxlen=GPU_HISTORY)
                hist.append(g.used_mib)
                if g.total_mib:
                    state.gpu_total[key] = g.total_mib
        case ev.StageReached():
            r = _run(state, e.run, e.host)
            r.stages.append(e)
        case ev.ExceptionFound():
            r = _run(state, e.run, e.host)
            if r.exception is None:
                r.exception = e
            if state.first_exception is None:
                state.first_exception = e
        case ev.RunClassified():
            _run(state, e.run, e.host).classified = e
        case ev.RunStarted():
            r = _run(state, e.run, e.host)
            r.command, r.started, r.rung = e.command, e.t, e.rung or state.current_rung
            state.current_run = e.run
        case ev.RunEnded():
            r = _run(state, e.run, e.host)
            r.ended, r.status, r.end_reason = e.t, e.status, e.reason
        case ev.CommandSent():
            state.commands += 1
        case ev.HostConnected():
            h = _host(state, e.host)
            h.address, h.user, h.fingerprint = e.address, e.user, e.fingerprint
            h.simulated, h.connected, h.clock_skew = e.simulated, True, e.clock_skew
            h.role = e.role or h.role  # a recording from before roles says nothing: keep what is known
        case ev.HostDisconnected():
            _host(state, e.host).connected = False
        case ev.HostReconnected():
            h = _host(state, e.host)
            h.connected = True
            h.reconnects += 1
        case ev.SceneFrozen():
            state.scenes.append(e)
        case ev.CheckVerdict():
            state.checks[(e.rung, e.check)] = e
        case ev.RunConfigSet():
            state.configs.append(e)
            if e.run:
                _run(state, e.run, e.host).config = e.config
        case ev.RungEntered():
            rung = state.rungs.setdefault(e.rung, RungView(e.rung))
            rung.state, rung.attempts, rung.entered = "active", rung.attempts + 1, e.t
            state.current_rung = e.rung
        case ev.RungLeft():
            rung = state.rungs.setdefault(e.rung, RungView(e.rung))
            rung.state, rung.verdict, rung.summary = "done", e.verdict, e.summary
            rung.reproduced, rung.repeats = e.reproduced, e.repeats
            if state.current_rung == e.rung:
                state.current_rung = ""
        case ev.HttpRequest():
            state.requests += 1
        case ev.HttpResponse():
            state.responses[e.id] = e
        case ev.Note():
            state.notes.append(e)
        case ev.Marker():
            state.markers.append(e)
        case ev.Decision():
            state.decisions.append(e)
            if e.action.startswith("bisect "):
                _fold_bisect(state, e)
        case ev.Notice():
            state.notices.append(e)
        case ev.XidEvent():
            state.xids.append(e)
    return state


def fold(events: Iterable[ev.AnyEvent], state: SessionState | None = None) -> SessionState:
    """Fold a sequence of events from scratch (or onto a state)."""
    s = state or SessionState()
    for e in events:
        reduce(s, e)
    return s

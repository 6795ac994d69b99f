"""What the screens show, computed from events and SessionState — plain Python, no widgets.

The live session and the replay feed the same events through the same :class:`LogFeed`
and read the same :class:`~k3tui.state.SessionState`, so both render alike. Kept free of
Textual so the flood benchmark and the unit tests can drive it directly.

Every string that came from a host passes :func:`k3tui.textsafe.neutralise` here, once.
Widgets render these strings as plain ``Text`` (never as markup), so ``[bold]`` in a log
line stays literal.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from k3tui import events as ev
from k3tui.ladder.checklist import line_of
from k3tui.severity import louder, severity
from k3tui.severity import words as severity_words
from k3tui.state import RunView, SessionState
from k3tui.state import host_label as _label
from k3tui.textsafe import neutralise

STAGE_CODE = {"container": "C", "config": "F", "device": "D", "weights": "W", "engine": "E", "api": "A", "runtime": "R"}
"""One-letter gutter code of the stage a log line was printed in."""

CORE_RUNGS = ("baseline", "minimal", "request")
DEFAULT_RUNGS = ("prefix-caching", "context-length", "concurrency")

LOG_PREFIX = re.compile(
    r"\((?:[\w.-]+ )?pid=\d+\)\s*"  # (Worker_TP3 pid=9257)
    r"|\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[[^\]]*\]\s*"
)
"""vLLM's line prefixes: the process, then level, time and source (``ERROR 12-01 22:00:13 [x.py:953]``)."""


def message_start(line: str) -> int:
    """Where the message of a vLLM log line starts, after its prefixes (0 when it has none)."""
    end = 0
    while m := LOG_PREFIX.match(line, end):
        if m.end() == end:
            break
        end = m.end()
    return end


RETAG_WINDOW = 4096
"""Server-log lines kept to re-tag a root traceback found after it was printed."""


@dataclass(slots=True)
class LogLine:
    """One display line of the log view: gutter + text, and what kind of line it is."""

    kind: str
    """``out``, ``err`` (error-looking output), ``cmd``, ``stage``, ``exc``, ``note``, ``info``, ``gap``,
    or ``probe`` (output of a probe or sampler command, not of a server run: hidden unless asked for)."""
    text: str
    host: str = ""
    """The host the line came from ("" for the session's own lines: gaps, notes without a host)."""
    sev: str = "info"
    """How loud it is drawn (:data:`k3tui.severity.LEVELS`): ``fault`` ``error`` ``warn`` ``info`` ``debug``."""


class LogFeed:
    """Turns events into display lines, tracking each run's current stage for the gutter."""

    def __init__(self) -> None:
        self.stage: dict[str, str] = {}
        self.progress = ProgressTracker()
        self.runs: set[str] = set()
        """Ids of detached runs (server logs); output of anything else is probe output."""
        self._in_tb: set[str] = set()
        """Output ids inside a bare (unprefixed) traceback: its frames count as error lines."""
        self._recent: deque[tuple[str, LogLine]] = deque(maxlen=RETAG_WINDOW)
        """The latest server-log lines with their run id: a root traceback found later is re-tagged here."""
        self.retagged = False
        """Lines already handed out changed their stage letter (the view must redraw them)."""
        self.stopping: set[str] = set()
        """Runs whose server logged that it is shutting down (a normal stop, not a failure)."""
        self.failed: dict[str, str] = {}
        """Gutter letter of each run whose root exception was found: the stage it failed in. Every
        line the run prints after its root (the wrappers' tracebacks, the shutdown) is a
        consequence and carries that letter, never the stage the markers had entered."""

    def reset(self, state: SessionState | None = None, at: float | None = None) -> None:
        """Start over (after a seek): stages as they were at time ``at`` in ``state``."""
        self.stage = {}
        self.progress = ProgressTracker()
        self._in_tb = set()
        self._recent.clear()
        self.stopping = set()
        self.failed = {}
        self.runs = set()
        if state is None:
            return
        self.runs = set(state.runs)
        for run_id, run in state.runs.items():
            reached = [s for s in run.stages if at is None or s.t <= at]
            if reached:
                self.stage[run_id] = reached[-1].stage
            found = run.exception
            if found is not None and (at is None or found.t < at) and found.stage in STAGE_CODE:
                self.failed[run_id] = STAGE_CODE[found.stage]

    def lines(self, e: ev.AnyEvent) -> list[LogLine]:
        """The display lines of one event, each tagged with the event's host."""
        if isinstance(e, ev.Output):
            return self._output(e)
        out = self._event_lines(e)
        if e.host:
            host = neutralise(e.host)
            for ln in out:
                ln.host = host
        return out

    def _event_lines(self, e: ev.AnyEvent) -> list[LogLine]:  # noqa: C901 - one flat dispatch
        match e:
            case ev.StageReached():
                self.stage[e.run] = e.stage
                return [
                    LogLine("stage", f"▶│━━ stage {neutralise(e.stage)} ━━ run {neutralise(e.run)}, log line {e.line}")
                ]
            case ev.ExceptionFound():
                self._retag(e)
                return [
                    LogLine("exc", f"✖│FIRST EXCEPTION at {neutralise(e.stage)}: {neutralise(e.line)}", sev="error")
                ]
            case ev.RunStarted():
                self.runs.add(e.run)
                self.progress = ProgressTracker()
                self.stage[e.run] = ""
                self.failed.pop(e.run, None)
                return [LogLine("cmd", f"$│run {neutralise(e.run)}: {_flat(e.command)}")]
            case ev.CommandSent():
                return [LogLine("probe", f"$│{_flat(e.command)}" + (f"   [{_flat(e.purpose)}]" if e.purpose else ""))]
            case ev.Note() | ev.Marker():
                return [LogLine("note", f"◆│{neutralise(ev.summary(e, 500))}")]
            case ev.SceneFrozen() | ev.RungEntered() | ev.RungLeft():
                sev = "error" if isinstance(e, ev.RungLeft) and e.verdict.upper() in _FAILED else "info"
                return [LogLine("stage", f"■│{neutralise(ev.summary(e, 500))}", sev=sev)]
            case ev.CheckVerdict() if e.rung == "checklist":  # work still to do, not a failure
                return [LogLine("info", f"·│{neutralise(line_of(e))[:300]}", sev="info")]
            case ev.CheckVerdict() if e.verdict != "PASS":
                return [_own_line(e, "error" if e.verdict.upper() in _FAILED else "warn")]
            case ev.RunEnded() | ev.RunClassified() | ev.HostConnected() | ev.HostDisconnected() | ev.HostReconnected():
                return [_own_line(e, _event_severity(e))]
            case ev.Notice() | ev.Decision() | ev.XidEvent() | ev.HttpResponse():
                return [_own_line(e, _event_severity(e))]
        return []

    def _retag(self, e: ev.ExceptionFound) -> None:
        """Give the root traceback's lines, and every line of the run after them, the letter of
        the stage it failed in.

        The gutter letter is the stage the run had *entered* when a line was printed; the
        classifier decides the failed stage from the root's own frames, often later (an
        engine failure printed while the markers still said device). The root's stack and
        the root line are re-tagged with that stage, and so is everything the run printed
        after the root (the API server's ``RuntimeError: Engine core initialization failed``
        wrapper, the shutdown): consequences of the same failure. Lines it prints from now on
        carry the letter too (:attr:`failed`)."""
        code = STAGE_CODE.get(e.stage)
        if code is None:
            return
        self.failed[e.run] = code
        wanted = {neutralise(x).rstrip() for x in (*e.stack, e.line) if x.strip()}
        root = neutralise(e.line).rstrip()
        mine = [ln for run, ln in self._recent if run == e.run and ln.kind in _STAGED]
        hits = [i for i, ln in enumerate(mine) if ln.text[2:].rstrip() in wanted]
        if not hits:
            return
        # the root line itself closes the traceback: the last hit equal to it, else the last hit
        end = max((i for i in hits if mine[i].text[2:].rstrip() == root), default=hits[-1])
        for ln in [*(mine[i] for i in hits if i < end), *mine[end:]]:
            if ln.text[:1] != code:
                ln.text = code + ln.text[1:]
                self.retagged = True

    def _output(self, e: ev.Output) -> list[LogLine]:
        # whole-chunk checks first: most chunks have no control characters, no progress bar
        # and nothing that looks like an error, and then each line costs one object
        text = neutralise(e.text)
        raw = text.splitlines() or [""]
        host = neutralise(e.host) if e.host else ""
        if e.id not in self.runs:
            return [LogLine("probe", " │" + line, host) for line in raw]
        code = (self.failed.get(e.id) or STAGE_CODE.get(self.stage.get(e.id, ""), " ")) + "│"
        if "shards" in text or "CUDA graph" in text:
            for line in raw:
                self.progress.feed(line)
        present = [w for w in _LOUD if w in text]  # the loud words in this chunk at all (usually none)
        if e.id not in self._in_tb and e.stream != "stderr" and not present:
            out = [LogLine("out", code + line, host) for line in raw]
        else:
            out = [self._line(e.id, code, line, host, e.stream, present) for line in raw]
        if e.id in self.stopping:
            out = [_quiet(ln) for ln in out]
        elif _STOPPING in text:
            out = self._stop_seen(e.id, out)
        self._recent.extend(zip(repeat(e.id), out))
        return out

    def _stop_seen(self, run: str, out: list[LogLine]) -> list[LogLine]:
        """vLLM logged ``shutdown triggered``: a normal stop (the ladder or the operator ended the run).

        What it prints next — ``EngineDeadError`` tracebacks of every process — is how it
        shuts down, not a failure: one marked line says so (kept in the errors-only view),
        and those lines are drawn dim and left out of it."""
        i = next(i for i, ln in enumerate(out) if _STOPPING in ln.text)
        self.stopping.add(run)
        label = LogLine(
            "stage",
            f"■│normal stop of run {neutralise(run)}: the errors vLLM prints while it shuts down are not failures",
            out[i].host,
            "debug",
        )
        return [*out[: i + 1], label, *(_quiet(ln) for ln in out[i + 1 :])]

    def _line(self, src: str, code: str, line: str, host: str, stream: str, present: list[str]) -> LogLine:
        sev = "info"
        for w in present:
            if w in line:
                sev = severity(line)
                break
        if src in self._in_tb:
            if line[:1] not in (" ", "\t"):
                self._in_tb.discard(src)  # the exception line that ends the traceback
            return LogLine("err", code + line, host, louder(sev, "error"))
        if line.startswith("Traceback (most recent call last)"):
            self._in_tb.add(src)
            return LogLine("err", code + line, host, "error")
        loud = sev in ("fault", "error")
        return LogLine("err" if loud or (stream == "stderr" and line.strip()) else "out", code + line, host, sev)


def _flat(text: str) -> str:
    """One display line: newlines of a multi-line command shown as ⏎ (the log view splits on them)."""
    return neutralise(text).replace("\r", "").replace("\n", " ⏎ ")


_STAGED = ("out", "err")
"""Kinds of server-log lines: their gutter is a stage letter (the others carry their own mark)."""

_STOPPING = "shutdown triggered"
"""What vLLM's API server logs when it is told to stop (SIGTERM / SIGINT from the ladder or the operator)."""


def _quiet(ln: LogLine) -> LogLine:
    """A line printed during a normal stop: dim and out of the errors-only view (hardware faults stay loud)."""
    if ln.sev == "fault":
        return ln
    ln.kind = "out" if ln.kind == "err" else ln.kind
    ln.sev = "debug"
    return ln


_LOUD = severity_words()
"""Every line that is not plain ``info`` holds one of these (the severity table's own substrings)."""


def _maybe_loud(text: str) -> bool:
    """Cheap prefilter of :func:`k3tui.severity.severity`: substring tests run at C speed (a regex
    alternation of the same words was measured slower)."""
    return any(w in text for w in _LOUD)


def _own_line(e: ev.AnyEvent, sev: str) -> LogLine:
    """A line of k3tui's own (the ``·`` gutter) for an event, as loud as what it says."""
    text = neutralise(ev.summary(e, 300))
    sev = louder(sev, severity(text)) if sev != "debug" else sev
    return LogLine("err" if sev in ("fault", "error") else "info", f"·│{text}", sev=sev)


_FAILED = ("FAIL", "STOP", "DRIFT")
_NOTICE = {"error": "error", "warning": "warn", "warn": "warn"}


def _event_severity(e: ev.AnyEvent) -> str:  # noqa: PLR0911 - one flat table
    """How loud one of k3tui's own event lines is, by what the event says."""
    match e:
        case ev.XidEvent():
            return "fault"
        case ev.RunEnded():
            failed = e.status not in (0, None) and e.reason != "stopped"
            return "error" if failed else "debug"
        case ev.RunClassified():
            return "info" if e.failed_stage in ("", "none") else "error"
        case ev.HostDisconnected():
            return "warn"
        case ev.Notice():
            return _NOTICE.get(e.level, "info")
        case ev.HttpResponse():
            if e.status is None or e.status >= 500:
                return "error"
            return "warn" if e.status >= 400 else "debug"
        case ev.HostConnected() | ev.HostReconnected():
            return "debug"
    return "info"


def session_hosts(state: SessionState) -> list[str]:
    """The hosts of the session (connected, running or frozen), in the order first seen; "" left out.

    Neutralised, like the ``host`` of every :class:`LogLine`, so the two compare equal."""
    seen: dict[str, None] = {}
    for h in state.hosts:
        seen[h] = None
    for r in state.runs.values():
        seen[r.host] = None
    for sc in state.scenes:
        seen[sc.host] = None
    seen.pop("", None)
    return [neutralise(h) for h in seen]


def host_label(state: SessionState, host: str) -> str:
    """``tray01 · head``: a host (as :func:`session_hosts` names it) with its recorded role.

    The alias alone for a single host or a recording from before roles (role "")."""
    for alias, h in state.hosts.items():
        if h.role and neutralise(alias) == host:
            return _label(host, neutralise(h.role))
    return host


# --- progress of long stages, read from the log -------------------------------------------

_PROGRESS = [
    (
        "checkpoint shards",
        re.compile(r"Loading (?:safetensors|pt|fastsafetensors)? ?checkpoint shards:\s*(\d+)%[^|]*\|\s*(\d+)/(\d+)"),
    ),
    ("CUDA graphs", re.compile(r"Capturing CUDA graphs?[^:]*:\s*(\d+)%\|[^|]*\|\s*(\d+)/(\d+)")),
]


@dataclass
class ProgressTracker:
    """Latest done/total of each long stage seen in the log (shards loaded, CUDA graphs captured)."""

    bars: dict[str, tuple[int, int]] = field(default_factory=dict)

    def feed(self, line: str) -> None:
        if "shards" not in line and "CUDA graph" not in line:
            return
        for name, rx in _PROGRESS:
            m = rx.search(line)
            if m:
                self.bars[name] = (int(m.group(2)), int(m.group(3)))


# --- stage timing ------------------------------------------------------------------------------


@dataclass(frozen=True)
class StageTime:
    stage: str
    seconds: float
    previous: float | None
    """The same stage's time in the previous run, when that run reached it."""
    running: bool


def stage_durations(run: RunView, now: float) -> dict[str, tuple[float, bool]]:
    """Seconds spent in each stage of a run ({stage: (seconds, still running)})."""
    out: dict[str, tuple[float, bool]] = {}
    stages = run.stages
    for i, s in enumerate(stages):
        if i + 1 < len(stages):
            out[s.stage] = (stages[i + 1].t - s.t, False)
        else:
            end = run.ended if run.ended is not None else now
            out[s.stage] = (max(0.0, end - s.t), run.ended is None)
    return out


def stage_times(state: SessionState, now: float) -> list[StageTime]:
    """Per stage of the current run: elapsed time and the previous run's time for that stage."""
    runs = list(state.runs.values())
    current = state.runs.get(state.current_run) or (runs[-1] if runs else None)
    if current is None:
        return []
    idx = runs.index(current)
    prev = stage_durations(runs[idx - 1], now) if idx > 0 else {}
    cur = stage_durations(current, now)
    return [StageTime(s, secs, prev.get(s, (None,))[0], running) for s, (secs, running) in cur.items()]


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"


# --- ladder, scene, checklist --------------------------------------------------------------------


def rung_names(state: SessionState, profile: str = "") -> list[str]:
    """Rungs in ladder order: the core rungs, the profile's features, then any other rung seen."""
    names = list(CORE_RUNGS)
    try:
        from k3tui.profile import load_profile

        names += [f.name for f in load_profile(profile or "kimi-k3").features]
    except Exception:  # noqa: BLE001 - an unknown or broken profile still shows the rungs seen
        names += [r for r in DEFAULT_RUNGS if r not in names]
    return names + [r for r in state.rungs if r not in names]


def scene_rows(scene: dict[str, Any] | None) -> list[tuple[str, str, str]]:
    """(label, value, status) rows of the scene panel; status is ``ok``, ``unknown`` or ``error``."""
    if not scene:
        return [("scene", "not frozen yet", "unknown")]
    host = scene.get("host") or {}
    versions = scene.get("versions") or {}
    container = scene.get("container") or {}
    libcuda = scene.get("libcuda") or {}
    gpus = scene.get("gpus") or []
    names = sorted({str(g.get("name", "?")) for g in gpus})
    rows = [
        ("host", host.get("hostname")),
        ("os", host.get("os")),
        ("kernel", host.get("kernel")),
        ("driver", host.get("driver_version")),
        ("CUDA drv", host.get("cuda_driver_version")),
        ("GPUs", f"{len(gpus)}× {', '.join(names)}" if gpus else None),
        ("image", container.get("image")),
        ("digest", (container.get("repo_digests") or [None])[0] if container else None),
        ("python", versions.get("python")),
        ("torch", _join(versions.get("torch"), versions.get("torch_cuda"))),
        ("vLLM", versions.get("vllm")),
        ("NCCL", versions.get("nccl")),
        ("libcuda", _join(libcuda.get("version"), libcuda.get("path"))),
    ]
    out = [
        (k, neutralise(str(v)) if v not in (None, "") else "unknown", "ok" if v not in (None, "") else "unknown")
        for k, v in rows
    ]
    for p in scene.get("probes") or []:
        if not p.get("ok", True):
            out.append(
                (f"probe {neutralise(str(p.get('name', '?')))}", neutralise(str(p.get("error") or "failed")), "error")
            )
    return out


def _join(a: Any, b: Any) -> str | None:
    if a in (None, "") and b in (None, ""):
        return None
    return " ".join(str(x) for x in (a, b) if x not in (None, ""))


def checklist(state: SessionState, events: Sequence[ev.AnyEvent] = ()) -> list[tuple[str, str, str]]:
    """The eleven deliverables as (title, status, why); status ``done``, ``missing`` or ``n/a``.

    The ladder records its own verdicts (``CheckVerdict`` with rung ``checklist``); those win,
    so live and replay show what the session recorded. Before the first one, the same
    evaluator runs over the session's significant events.
    """
    from k3tui.ladder.checklist import session_checklist

    recorded = [c for (rung, _), c in state.checks.items() if rung == "checklist"]
    status = {"PASS": "done", "FAIL": "missing"}
    return [
        (c.title or c.check, status.get(c.verdict, "n/a"), _why(c.evidence))
        for c in session_checklist(recorded, events)
    ]


def _why(evidence: str) -> str:
    """``done: why — events #3 (t=1.0s)`` → ``why`` (the panel has no room for the references)."""
    return evidence.split(": ", 1)[-1].split(" — events ", 1)[0]


def stop_conditions(state: SessionState) -> list[tuple[str, str, str]]:
    """The five stop conditions as recorded by the ladder: (title, verdict, evidence)."""
    return [(c.title or c.check, c.verdict, c.evidence) for (rung, _), c in state.checks.items() if rung == "stop"]

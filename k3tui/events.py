"""Every fact of a session is an event; this module is the one schema for them.

Events are msgspec tagged-union Structs (tag field ``kind``). The schema only grows by
adding fields *with defaults* and new kinds; nothing is ever renamed. Readers keep
unknown kinds as :class:`Opaque` events instead of failing, so an old k3tui can read a
newer recording.

Every event carries ``t`` (seconds since the session started, monotonic clock) and
``host`` (the host alias it concerns, ``""`` for the session as a whole), so a
multi-node deployment is one recording with each event tagged by its node.
"""

from __future__ import annotations

from typing import Any, Union

import msgspec

FORMAT = "k3rec"
SCHEMA_VERSION = 1


class Header(msgspec.Struct, kw_only=True):
    """Line 1 of a ``.k3rec`` file."""

    format: str = FORMAT
    version: int = SCHEMA_VERSION
    k3tui_version: str = ""
    session_id: str = ""
    started: float = 0.0
    """Unix seconds at the start of the session (wall clock)."""
    host: str = ""
    """Host alias, or a comma-separated group of aliases."""
    profile: str = ""
    simulated: bool = False
    """True when the session ran against the embedded simulated host."""
    title: str = ""


class Event(msgspec.Struct, tag_field="kind", kw_only=True, omit_defaults=True):
    """Base of every event."""

    t: float = 0.0
    host: str = ""


# --- hosts -------------------------------------------------------------------------


class HostConnected(Event, tag="host_connected"):
    address: str = ""
    user: str = ""
    fingerprint: str = ""
    simulated: bool = False
    clock_skew: float | None = None
    """Remote wall clock minus local wall clock, seconds, measured at connect."""
    role: str = ""
    """The host's role in its deployment (``head``/``worker``); empty for a single host or unknown."""
    rtt: float | None = None
    """Seconds for one SSH round trip, measured at connect (None: not measured, e.g. this machine)."""
    throughput: float | None = None
    """Bytes/s towards the host, estimated at connect from a small transfer (None: not measured)."""


class HostDisconnected(Event, tag="host_disconnected"):
    reason: str = ""


class HostReconnected(Event, tag="host_reconnected"):
    attempt: int = 0
    downtime: float = 0.0


# --- commands and their output -----------------------------------------------------


class CommandSent(Event, tag="command_sent"):
    id: str = ""
    command: str = ""
    cwd: str = ""
    env: dict[str, str] = {}
    purpose: str = ""
    """Why it ran: a probe name, ``launch``, ``tail`` …"""


class Output(Event, tag="output"):
    """A chunk of output, recorded as received (after redaction)."""

    id: str = ""
    stream: str = "stdout"
    text: str = ""


class CommandExited(Event, tag="command_exited"):
    id: str = ""
    status: int | None = None
    duration: float = 0.0
    signal: str = ""


# --- detached runs and classification ------------------------------------------------


class RunStarted(Event, tag="run_started"):
    run: str = ""
    command: str = ""
    env: dict[str, str] = {}
    run_dir: str = ""
    pid: int | None = None
    rung: str = ""


class RunEnded(Event, tag="run_ended"):
    run: str = ""
    status: int | None = None
    reason: str = ""
    """``exited``, ``stopped`` (by the operator), ``failed`` …"""


class StageReached(Event, tag="stage_reached"):
    run: str = ""
    stage: str = ""
    line: int = 0
    log_time: str | None = None
    text: str = ""


class ExceptionFound(Event, tag="exception_found"):
    run: str = ""
    stage: str = ""
    line: str = ""
    """The root error line, as printed."""
    line_number: int = 0
    stack: list[str] = []
    process: str | None = None
    signature: str = ""
    oom_root_cause: bool | None = None


class RunClassified(Event, tag="run_classified"):
    """The classifier's final word on a run."""

    run: str = ""
    failed_stage: str = "none"
    signature: str = ""
    advice: str = ""
    exception: str = ""


# --- scene, checks, requests, GPUs ----------------------------------------------------


class SceneFrozen(Event, tag="scene_frozen"):
    scene: dict[str, Any] = {}
    reason: str = ""
    """``operator``, ``first-exception`` …"""
    run: str = ""


class CheckVerdict(Event, tag="check_verdict"):
    rung: str = ""
    check: str = ""
    verdict: str = "UNKNOWN"
    """``PASS``, ``FAIL`` or ``UNKNOWN``."""
    evidence: str = ""
    title: str = ""


class HttpRequest(Event, tag="http_request"):
    id: str = ""
    method: str = "GET"
    url: str = ""
    body: str = ""


class HttpResponse(Event, tag="http_response"):
    id: str = ""
    status: int | None = None
    body: str = ""
    duration: float = 0.0
    error: str = ""


class GpuMem(msgspec.Struct, omit_defaults=True):
    index: int = 0
    used_mib: float = 0.0
    total_mib: float = 0.0
    util: float | None = None


class GpuProc(msgspec.Struct, omit_defaults=True):
    gpu: int = 0
    pid: int = 0
    name: str = ""
    used_mib: float = 0.0


class GpuSample(Event, tag="gpu_sample"):
    gpus: list[GpuMem] = []
    processes: list[GpuProc] = []
    source: str = ""
    """``nvml`` or ``nvidia-smi``."""


class XidEvent(Event, tag="xid"):
    gpu: int = 0
    xid: int = 0
    text: str = ""


# --- ladder ----------------------------------------------------------------------------


class RunConfigSet(Event, tag="run_config"):
    run: str = ""
    config: dict[str, Any] = {}
    diff: list[dict[str, Any]] = []
    """One entry per changed variable: ``{"key", "old", "new"}``."""


class RungEntered(Event, tag="rung_entered"):
    rung: str = ""
    attempt: int = 1


class RungLeft(Event, tag="rung_left"):
    rung: str = ""
    verdict: str = ""
    summary: str = ""
    reproduced: int | None = None
    repeats: int | None = None


# --- the operator ----------------------------------------------------------------------


class Note(Event, tag="note"):
    text: str = ""


class Marker(Event, tag="marker"):
    label: str = ""


class Decision(Event, tag="decision"):
    action: str = ""
    reason: str = ""


class Notice(Event, tag="notice"):
    """Something the operator must know that is not a host fact (recording paused …)."""

    level: str = "info"
    message: str = ""


class Seal(Event, tag="seal"):
    """The last line of a session that closed: how many events came before it and the digest of
    the line before it (issue 16). Cutting lines from the end removes it: the end then cannot be
    proven; a seal that does not match what precedes it is tampering."""

    events: int = 0
    last: str = ""


class Opaque(msgspec.Struct, kw_only=True):
    """An event of a kind this version does not know; kept as read."""

    kind: str
    t: float = 0.0
    host: str = ""
    data: dict[str, Any] = {}


KnownEvent = Union[  # noqa: UP007 - a runtime Union: msgspec decodes it, EVENT_TYPES reads __args__
    HostConnected,
    HostDisconnected,
    HostReconnected,
    CommandSent,
    Output,
    CommandExited,
    RunStarted,
    RunEnded,
    StageReached,
    ExceptionFound,
    RunClassified,
    SceneFrozen,
    CheckVerdict,
    HttpRequest,
    HttpResponse,
    GpuSample,
    XidEvent,
    RunConfigSet,
    RungEntered,
    RungLeft,
    Note,
    Marker,
    Decision,
    Notice,
    Seal,
]

AnyEvent = Union[KnownEvent, Opaque]  # noqa: UP007

EVENT_TYPES: tuple[type[Event], ...] = KnownEvent.__args__  # type: ignore[attr-defined]
KIND_OF: dict[type, str] = {cls: cls.__struct_config__.tag for cls in EVENT_TYPES}  # type: ignore[misc]
KINDS: frozenset[str] = frozenset(KIND_OF.values())

# Events after which the recorder flushes at once (the rest wait at most 200 ms).
SIGNIFICANT: tuple[type[Event], ...] = (
    StageReached,
    ExceptionFound,
    RunClassified,
    SceneFrozen,
    CheckVerdict,
    RungEntered,
    RungLeft,
    Note,
    Marker,
    Decision,
    RunStarted,
    RunEnded,
    HostDisconnected,
    HostReconnected,
    Notice,
)

# Kinds that become markers on a timeline and in the asciicast export.
MARKER_KINDS: frozenset[str] = frozenset(
    {"rung_entered", "rung_left", "stage_reached", "exception_found", "scene_frozen", "note", "marker"}
)


def kind_of(event: AnyEvent) -> str:
    """The kind tag of an event (also for opaque ones)."""
    if isinstance(event, Opaque):
        return event.kind
    return KIND_OF[type(event)]


def summary(event: AnyEvent, width: int = 100) -> str:
    """One human line for a timeline (``k3tui cat``, markers, reports)."""
    text = _summary(event)
    text = text.replace("\n", " ⏎ ")
    return text if len(text) <= width else text[: width - 1] + "…"


def _summary(e: AnyEvent) -> str:  # noqa: C901 - one flat dispatch is clearer than a table here
    match e:
        case HostConnected():
            sim = " (SIMULATED host)" if e.simulated else ""
            return f"connected to {e.host} {e.address} as {e.user}{sim} key {e.fingerprint}"
        case HostDisconnected():
            return f"disconnected from {e.host}: {e.reason}"
        case HostReconnected():
            return f"reconnected to {e.host} after {e.downtime:.1f}s (attempt {e.attempt})"
        case CommandSent():
            return f"$ {e.command}" + (f"   [{e.purpose}]" if e.purpose else "")
        case Output():
            return e.text.rstrip("\n")
        case CommandExited():
            return f"[{e.id}] exited {e.status} after {e.duration:.2f}s"
        case RunStarted():
            return f"run {e.run} started (pid {e.pid}): {e.command}"
        case RunEnded():
            return f"run {e.run} ended: {e.reason} status {e.status}"
        case StageReached():
            return f"stage {e.stage} (log line {e.line})"
        case ExceptionFound():
            return f"FIRST EXCEPTION at {e.stage}: {e.line}"
        case RunClassified():
            return f"run {e.run}: failed stage {e.failed_stage}" + (f" — {e.exception}" if e.exception else "")
        case SceneFrozen():
            return f"scene frozen ({e.reason})"
        case CheckVerdict():
            return f"{e.verdict:7} {e.rung}/{e.check}: {e.evidence}"
        case HttpRequest():
            return f"→ {e.method} {e.url}"
        case HttpResponse():
            if e.status is None:  # no answer: say so rather than "← None"
                return f"← no answer after {e.duration * 1000:.0f} ms" + (f": {e.error}" if e.error else "")
            return f"← {e.status} in {e.duration * 1000:.0f} ms" + (f" {e.error}" if e.error else "")
        case GpuSample():
            return "gpu mem " + " ".join(f"{g.index}:{g.used_mib:.0f}" for g in e.gpus)
        case XidEvent():
            return f"Xid {e.xid} on GPU {e.gpu}: {e.text}"
        case RunConfigSet():
            from .redact import shown  # values of secret-named variables masked by name, not by scanning

            changed = ", ".join(f"{d.get('key')}={shown(str(d.get('key')), d.get('new'))}" for d in e.diff)
            changed = changed or "no change"
            return f"run config {e.run}: {changed}"
        case RungEntered():
            return f"▶ rung {e.rung} (attempt {e.attempt})"
        case RungLeft():
            rep = f" reproduced {e.reproduced}/{e.repeats}" if e.repeats else ""
            return f"■ rung {e.rung}: {e.verdict}{rep} {e.summary}".rstrip()
        case Note():
            return f"note: {e.text}"
        case Marker():
            return f"marker: {e.label}"
        case Decision():
            return f"decision: {e.action} — {e.reason}"
        case Notice():
            return f"{e.level}: {e.message}"
        case Seal():
            return f"session sealed after {e.events} events"
        case Opaque():
            return f"({e.kind}: unknown to this version)"
    return repr(e)  # pragma: no cover

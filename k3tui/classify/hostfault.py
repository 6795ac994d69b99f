"""A fatal host fault close before the first exception is the root; the vLLM exception is its consequence.

Why a separate step after the classifier: the classifier reads the *server* log, which
only ever shows software (``CUDA error: unspecified launch failure`` on a GPU that fell
off the bus). The host's own account — the kernel's Xid/SXid lines, ECC and row-remap
state, the NVLink domain — lives in the scene or a kernel log. Correlating the two needs
one clock: a kernel event's time is the *host's* clock (journalctl's stamp, or dmesg's
seconds since boot plus the host's boot time), the exception's time is the log's stamp,
and both are corrected by the clock skew measured per host at connect
(:mod:`k3tui.fleet.timeline`), so a 3 s skew never makes a consequence look like a cause.

Rules (pure; the same for ``k3tui classify --host-log``, the ladder and replay):

- a fatal fault with a time in ``[exception - BEFORE_S, exception + AFTER_S]`` is the root
  (the first of them: Xid 95 then its Xid 64 are one incident); ``AFTER_S`` absorbs the resolution
  of the stamps (a log stamped to the second);
- without a time on the exception, or for standing faults with no time at all (a failed
  row remap, a fabric not registered, IMEX down, a tray in another clique), a fatal fault
  is the root only when nothing timed contradicts it: a timed fault long before the
  exception is history (it still fails the checks and stops the ladder), not this run's root.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..fleet.timeline import NodeLog, line_time
from ..scene import hostfaults
from ..scene.parsers.hardware import parse_kernel_events

BEFORE_S = 300.0
AFTER_S = 5.0


def root_fault(
    faults: Iterable[tuple[str, dict[str, Any]]],
    exception_time: float | None,
    skews: dict[str, float | None] | None = None,
) -> dict[str, Any] | None:
    """The host fault that is the root of an exception at ``exception_time`` (our clock), or None.

    Args:
        faults: ``(host alias, fault)`` pairs (scene ``host_faults`` or a kernel log's).
        exception_time: corrected unix time of the first root exception (None: unknown).
        skews: host clock minus ours, per host (None / missing: not measured, taken as 0).
    """
    timed, standing = [], []
    for host, f in faults:
        if not f.get("fatal"):
            continue
        unix = f.get("unix")
        if unix is None:
            standing.append((host, f))
            continue
        t = float(unix) - float((skews or {}).get(host) or 0.0)
        timed.append((t, host, f))
    if exception_time is not None:
        close = [x for x in timed if exception_time - BEFORE_S <= x[0] <= exception_time + AFTER_S]
        if close:
            t, host, f = min(close, key=lambda x: x[0])  # the first of a burst (Xid 95, then 64) is the cause
            return _root(host, f, t, exception_time)
    elif timed:
        t, host, f = max(timed, key=lambda x: x[0])
        return _root(host, f, t, None)
    if standing:
        host, f = standing[0]
        return _root(host, f, None, exception_time)
    return None


def _root(host: str, f: dict[str, Any], t: float | None, exc: float | None) -> dict[str, Any]:
    keep = ("kind", "gpu", "uuid", "code", "fatal", "time", "pci", "meaning", "action", "line")
    out = {k: f.get(k) for k in keep}
    out["host"] = host
    out["seconds_before"] = round(exc - t, 3) if t is not None and exc is not None else None
    out["summary"] = hostfaults.describe(f, host)
    return out


def consequence_text(root: dict[str, Any], exception_line: str) -> str:
    """``root: … — the vLLM exception `…` is its consequence`` (one line for reports and banners)."""
    return f"root: {root['summary']}; the vLLM exception is its consequence: {exception_line.strip()[:200]}"


def faults_from_kernel_log(text: str, host: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Host faults of a kernel log file (dmesg with a ``# boot:`` line, ``dmesg -T``, journalctl)."""
    k = parse_kernel_events(text)
    from ..scene.model import Scene

    return [
        (host or _journal_host(f.get("line", "")), f)
        for f in hostfaults.kernel_faults(Scene(alias=host), k["events"], k["uuids"])
    ]


def _journal_host(line: str) -> str:
    """The host journald names in ``STAMP HOST kernel: …`` ("" for dmesg lines)."""
    head, sep, _ = line.partition(" kernel: ")
    return head.rsplit(" ", 1)[-1] if sep and " " in head else ""


def exception_time(lines: Sequence[str], node: NodeLog) -> float | None:
    """Corrected time of the first stamped line of a root exception (its line, then its stack)."""
    return line_time(list(lines), node)


# --- over an event stream (the ladder live, replay, the report) ------------------------------

RUNG, CHECK = "diagnosis", "host-fault"
TITLE = "root: a host fault before the first exception"


def diagnose_events(events: Sequence[Any], found: Any) -> Any | None:
    """The ``CheckVerdict`` naming the host fault that is the root of ``found`` (an ExceptionFound), or None.

    Uses the latest frozen scene of every host (their ``host_faults``, and the NVLink domain
    across hosts), each host's measured clock skew, and the exception's own log stamp.
    """
    import time

    from ..events import CheckVerdict, HostConnected, SceneFrozen

    scenes: dict[str, dict[str, Any]] = {}
    skews: dict[str, float | None] = {}
    for e in events:
        if isinstance(e, SceneFrozen) and e.scene:
            scenes[e.host] = e.scene
        elif isinstance(e, HostConnected):
            skews[e.host] = e.clock_skew
    pairs = [(h, f) for h, sc in scenes.items() for f in sc.get("host_faults") or []]
    pairs += hostfaults.domain_faults(scenes, list(skews))
    node = NodeLog(found.host, "", clock_skew=skews.get(found.host), ref_time=time.time())
    root = root_fault(pairs, exception_time([found.line, *found.stack], node), skews)
    if root is None:
        return None
    return CheckVerdict(
        host=root["host"],
        rung=RUNG,
        check=CHECK,
        verdict="FAIL",
        evidence=consequence_text(root, found.line),
        title=TITLE,
    )


def root_of(checks: dict[tuple[str, str], Any]) -> Any | None:
    """The diagnosis verdict in a folded session state's ``checks`` (None: no host fault is the root)."""
    return checks.get((RUNG, CHECK))


def hardware_banner(state: Any) -> dict[str, Any] | None:
    """What the freeze banner says about the hardware, from a folded ``SessionState`` (live or replay).

    ``{"kind": "root", …}`` when a host fault is the root of the first exception (the
    exception is then shown as its consequence); ``{"kind": "stop", …}`` when a frozen scene
    holds a fatal host fault and no exception came yet (the ladder stands still); None else.
    Keys: ``host``, ``summary`` (one line: host, GPU, fault, time, meaning, action),
    ``next`` (``drain gb300-02 and reset GPU 3 before any further step``), ``fault``.
    """
    import time

    from ..ladder.stops import drain_advice

    scenes: dict[str, dict[str, Any]] = {s.host: s.scene for s in state.scenes if s.scene}
    skews = {a: h.clock_skew for a, h in state.hosts.items()}
    pairs = [(h, f) for h, sc in scenes.items() for f in sc.get("host_faults") or []]
    pairs += hostfaults.domain_faults(scenes, list(state.hosts))
    e = state.first_exception
    root = None
    if e is not None:
        node = NodeLog(e.host, "", clock_skew=skews.get(e.host), ref_time=time.time())
        root = root_fault(pairs, exception_time([e.line, *e.stack], node), skews)
    kind = "root"
    if root is None:
        fatal = sorted(
            ((h, f) for h, f in pairs if f.get("fatal")),
            key=lambda p: (p[1].get("gpu") is None, "daemon is" not in str(p[1].get("meaning"))),
        )
        if not fatal:
            return None
        kind, root = (
            "stop",
            {**fatal[0][1], "host": fatal[0][0], "summary": hostfaults.describe(fatal[0][1], fatal[0][0])},
        )
    nxt = f"{drain_advice(root['host'], root)} before any further step"
    return {"kind": kind, "host": root["host"], "summary": root["summary"], "next": nxt, "fault": root}


def root_for_scenes(scenes: Sequence[Any], t: float | None, skews: dict[str, float | None]) -> dict[str, Any] | None:
    """The host fault that is the root of a deployment's first exception at ``t`` (fleet freeze, report)."""
    dicts = {s.alias: s.to_dict() for s in scenes}
    pairs = [(h, f) for h, sc in dicts.items() for f in sc.get("host_faults") or []]
    return root_fault(pairs + hostfaults.domain_faults(dicts, list(dicts)), t, skews)


def headline(state: Any) -> list[str]:
    """The lines ``replay --headless`` and the report print about the hardware (none when it is fine)."""
    hw = hardware_banner(state)
    if hw is None:
        return []
    if hw["kind"] == "root":
        return [f"root: host fault {hw['summary']}; the first root exception is its consequence", f"next: {hw['next']}"]
    return [f"hardware stop: {hw['summary']}", f"next: {hw['next']}"]

"""Logs of every node on one timeline, and the deployment's first root exception.

Why it is shaped this way:

- **Each node's clock is corrected before lines are compared.** A log line carries the
  *host's* time; two hosts whose clocks differ by 3 s would put a consequence on the
  head before its cause on the worker. ``HostConnected.clock_skew`` (host minus ours,
  measured at connect) is subtracted, and naive local stamps (vLLM prints local time,
  without a year or a zone) are turned into UTC with the host's own ``date +%z``.
  Docker's ``--timestamps`` prefix (RFC 3339, UTC, nanoseconds) wins when present.
- **Lines without a stamp** (NCCL INFO, bare tracebacks) take the stamp of the line
  before them on the same node, so a traceback sorts with the ERROR line that opened it.
- **One classifier across nodes.** The merged stream is fed to one
  :class:`~k3tui.classify.Classifier` with every line wrapped as ``alias | line`` (the
  docker-compose service prefix it already demultiplexes by), so the same process name on
  two nodes (``Worker_TP3 pid=61``) stays two processes and "an OOM after an earlier NCCL
  error is secondary" holds across nodes. Its first root is the deployment's root; the
  node it came from is named. Each node is also classified alone, for the per-node rows.
- Pure functions over text: no I/O, so a recording's logs or a test's strings work the same.
"""

from __future__ import annotations

import calendar
import heapq
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ..classify import Classifier, ClassifyResult
from ..classify.result import FirstException
from ..classify.rules import load_rules

_DOCKER = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d) ")
_LOCAL = re.compile(r"(?<![\d:])(?:(\d{4})-)?(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(?![\d])")
_JOURNAL = re.compile(r"^([A-Z][a-z]{2}) ([ \d]\d) (\d\d):(\d\d):(\d\d) ")
_MONTHS = {m: i for i, m in enumerate(calendar.month_abbr) if m}
_SERVICE = re.compile(r"[^\w.\-]")
LOOK = 96
"""Characters at the start of a line searched for a local stamp."""


@dataclass
class NodeLog:
    """One node's log text and what is known about its clock."""

    alias: str
    text: str
    role: str = "worker"
    clock_skew: float | None = None
    """Host clock minus ours (seconds); None = not measured (treated as 0, and said so)."""
    utc_offset: float | None = None
    """The host's local offset from UTC in seconds (None: assume UTC)."""
    ref_time: float | None = None
    """Unix time near the log's end (for stamps without a year); default now."""


@dataclass(slots=True)
class TimedLine:
    t: float
    """Corrected unix time (our clock)."""
    alias: str
    n: int
    """1-based line number in the node's log."""
    text: str
    stamped: bool
    """False when the time was carried from an earlier line."""


@dataclass
class NodeVerdict:
    alias: str
    role: str
    result: ClassifyResult
    t: float | None = None
    """Corrected time of the node's root exception line (None: no root, or no stamp)."""


@dataclass
class DeploymentVerdict:
    """The deployment's first root exception and where it came from."""

    node: str | None
    """The node the first root exception came from (None: no node failed)."""
    result: ClassifyResult
    """The classifier over the merged timeline (its first_exception line keeps the node prefix)."""
    t: float | None
    per_node: list[NodeVerdict] = field(default_factory=list)
    skews: dict[str, float | None] = field(default_factory=dict)
    merged: list[TimedLine] = field(default_factory=list, repr=False)
    index: int | None = None
    """Where the root line sits in ``merged`` (0-based)."""

    @property
    def line(self) -> str:
        fe = self.result.first_exception
        return _strip_service(fe.line) if fe else ""


def _frac(s: str | None) -> float:
    return float("0." + s) if s else 0.0


def stamp(line: str, node: NodeLog) -> float | None:
    """The host-clock unix time a line was printed at (None when it carries no stamp)."""
    if line[:2] == "20" and (m := _DOCKER.match(line)):
        y, mo, d, hh, mm, ss = (int(x) for x in m.groups()[:6])
        z = m.group(8)
        off = 0 if z == "Z" else (1 if z[0] == "+" else -1) * (int(z[1:3]) * 3600 + int(z[-2:]) * 60)
        return calendar.timegm((y, mo, d, hh, mm, ss)) + _frac(m.group(7)) - off
    head = line[:LOOK]
    if (m := _LOCAL.search(head)) is not None:
        year = int(m.group(1)) if m.group(1) else None
        mo, d, hh, mm, ss = (int(x) for x in m.groups()[1:6])
        return _local(node, year, mo, d, hh, mm, ss) + _frac(m.group(7))
    if (m := _JOURNAL.match(line)) is not None and m.group(1) in _MONTHS:
        return _local(node, None, _MONTHS[m.group(1)], int(m.group(2)), *(int(x) for x in m.groups()[2:5]))
    return None


def _local(node: NodeLog, year: int | None, mo: int, d: int, hh: int, mm: int, ss: int) -> float:
    ref = node.ref_time or time.time()
    off = node.utc_offset or 0.0
    y = year or time.gmtime(ref + off).tm_year
    try:
        t = calendar.timegm((y, mo, d, hh, mm, ss)) - off
    except ValueError:
        return float("nan")
    if year is None and t > ref + 2 * 86400:  # a December log read in January
        t = calendar.timegm((y - 1, mo, d, hh, mm, ss)) - off
    return float(t)


def line_time(lines: Sequence[str], node: NodeLog) -> float | None:
    """Corrected time (our clock) of the first of ``lines`` that carries a stamp; None when none does.

    For one line known out of context (a run's root exception and its stack, as the ladder
    sees them): the same stamp parsing and skew correction as the merged timeline.
    """
    for line in lines:
        t = stamp(line, node)
        if t is not None and t == t:  # not NaN
            return t - (node.clock_skew or 0.0)
    return None


def timed_lines(node: NodeLog) -> list[TimedLine]:
    """The node's lines with corrected times (carried forward; lines before the first stamp take it)."""
    skew = node.clock_skew or 0.0
    out: list[TimedLine] = []
    last: float | None = None
    pending = 0
    lines = node.text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for n, raw in enumerate(lines, 1):
        t = stamp(raw, node)
        if t is not None and t == t:  # not NaN
            t -= skew
            if last is None:
                for prev in out[len(out) - pending :]:
                    prev.t = t
            last = t
            out.append(TimedLine(t, node.alias, n, raw, True))
        else:
            out.append(TimedLine(last if last is not None else float("inf"), node.alias, n, raw, False))
            pending += last is None
    return out


def merge(nodes: Sequence[NodeLog]) -> list[TimedLine]:
    """Every node's lines in one order: corrected time, then node order, then line number."""
    order = {n.alias: i for i, n in enumerate(nodes)}
    streams = [timed_lines(n) for n in nodes]
    return list(heapq.merge(*streams, key=lambda x: (x.t, order[x.alias], x.n)))


def service(alias: str) -> str:
    """The alias as a compose-style service token (what the classifier demultiplexes by)."""
    s = _SERVICE.sub("_", alias)
    return s if s[:1].isalnum() else "n" + s


def _strip_service(line: str) -> str:
    head, sep, rest = line.partition(" | ")
    return rest if sep and _SERVICE.sub("_", head) == head else line


def classify_deployment(nodes: Sequence[NodeLog]) -> DeploymentVerdict:
    """Classify each node alone and the merged timeline; name the node of the first root exception."""
    names = {service(n.alias): n.alias for n in nodes}
    merged = merge(nodes)
    c = Classifier(run="deployment")
    for tl in merged:
        c.feed_line(f"{service(tl.alias)} | {tl.text}")
    res = c.finish()
    node = t = index = None
    if res.first_exception is not None:
        svc = res.first_exception.line.partition(" | ")[0]
        node = names.get(svc)
        if 0 < res.first_exception.line_number <= len(merged):
            index = res.first_exception.line_number - 1
            t = merged[index].t if merged[index].t != float("inf") else None
    per = [_node_verdict(n) for n in nodes]
    return DeploymentVerdict(node, res, t, per, {n.alias: n.clock_skew for n in nodes}, merged, index)


def first_errors_after(v: DeploymentVerdict) -> list[TimedLine]:
    """Each other node's first ERROR line after the deployment's root: what it reported as a consequence."""
    from ..classify.lines import parse

    if v.index is None:
        return []
    out: dict[str, TimedLine] = {}
    for x in v.merged[v.index + 1 :]:
        if x.alias != v.node and x.alias not in out and "ERROR" in x.text and parse(x.text).level == "ERROR":
            out[x.alias] = x
    return list(out.values())


def only_a_consequence(line: str) -> bool:
    """A node's root line that is itself a consequence ('WorkerProc initialization failed … see stack
    trace'): its log held nothing before it, so the root is on another node or process."""
    return bool(load_rules().consequence.search(line))


def own_root(res: ClassifyResult) -> FirstException | None:
    """The node's own root exception: None where its log holds only consequences."""
    fe = res.first_exception
    return None if fe is None or only_a_consequence(fe.line) else fe


def node_root_text(nv: NodeVerdict) -> str:
    """One node's line in a deployment verdict: its own root with its time, or that it has none."""
    fe = own_root(nv.result)
    return f"root at {clock(nv.t)}: {fe.line[:160]}" if fe else "no root exception of its own (consequences only)"


def _node_verdict(node: NodeLog) -> NodeVerdict:
    c = Classifier(run=node.alias)
    lines = timed_lines(node)
    for tl in lines:
        c.feed_line(tl.text)
    res = c.finish()
    t = None
    if res.first_exception is not None and 0 < res.first_exception.line_number <= len(lines):
        t = lines[res.first_exception.line_number - 1].t
        t = None if t == float("inf") else t
    return NodeVerdict(node.alias, node.role, res, t)


def clock(t: float | None) -> str:
    """``05:12:33.120`` (UTC) for a corrected time."""
    if t is None or t != t or t == float("inf"):
        return "--:--:--.---"
    return time.strftime("%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1000):03d}"


def skew_lines(nodes: Sequence[NodeLog]) -> list[str]:
    """How each node's clock was corrected."""
    out = []
    for n in nodes:
        if n.clock_skew is None:
            out.append(f"  {n.alias}: clock skew NOT measured — its lines are placed uncorrected")
        else:
            off = f", local time UTC{_offset(n.utc_offset)}" if n.utc_offset else ""
            out.append(f"  {n.alias}: clock {n.clock_skew:+.3f} s against ours (corrected){off}")
    return out


def _offset(secs: float | None) -> str:
    s = int(secs or 0)
    return f"{'+' if s >= 0 else '-'}{abs(s) // 3600:02d}:{abs(s) % 3600 // 60:02d}"


def window(merged: Sequence[TimedLine], idx: int, before: int = 6, after: int = 3) -> Iterator[str]:
    """Merged lines around index ``idx`` (the deployment's root), each tagged by node."""
    if not merged:
        return
    width = max(len(x.alias) for x in merged)
    for x in merged[max(0, idx - before) : idx + after + 1]:
        yield f"{clock(x.t)} {x.alias:{width}} | {x.text[:200]}"

"""Logs exported newest first: put their entries back in the order they were printed.

A log viewer (Grafana / Loki, Kibana, a cloud console, a serverless platform's log tab) shows and
exports the newest entry first, and an engineer copies it as shown: read top-down, the failure's
consequences come before its root and a traceback is upside down. The entries' own times say so.
The classifier reads a log in the order it was printed, so such a log is turned back first; the
line numbers it reports are the file's.

An entry starts at a line that carries a time of the kind that runs backwards (a viewer stamps
every entry) and takes the lines after it that carry none (a multi-line message kept together by
the viewer stays in its own order). Only a log held whole is turned (:func:`oldest_first`): a
stream is read as it comes.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import NamedTuple

from .result import ClassifyResult, FirstException, StageMark

PROBE = 400
"""Lines whose times decide whether a log runs newest first."""
MIN_BACKWARDS = 6
"""Steps back in time a log needs (and four times as many as forwards) to be taken as newest first."""
_HEAD = 48
"""How far into a line an entry's time may start (a viewer's row number, a bracket before it)."""

_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("iso", re.compile(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d(?:[.,]\d+)?)")),
    ("vllm", re.compile(r"\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) +(\d\d-\d\d) (\d\d:\d\d:\d\d)")),
    ("glog", re.compile(r"(?<![\w.])[IWEF](\d{4}) (\d\d:\d\d:\d\d\.\d+)")),
)
"""Times a log's lines carry: an ISO date and time (a viewer's, docker's, a shipper's), vLLM's
``LEVEL MM-DD HH:MM:SS``, glog's ``E1130 03:25:31.46``; each compared only with its own kind."""


class Stamp(NamedTuple):
    kind: str
    key: str
    at: int
    """Where in the line it starts."""


def stamp(line: str) -> Stamp | None:
    """The first time a line carries in its first 160 characters, or None."""
    head = line[:160]
    best: Stamp | None = None
    for kind, rx in _KINDS:
        if (m := rx.search(head)) is not None and (best is None or m.start() < best.at):
            best = Stamp(kind, f"{m.group(1)} {m.group(2).replace(',', '.')}", m.start())
    return best


def backwards_kind(lines: list[str]) -> str | None:
    """The kind of time that runs backwards through the log's first lines (newest first), or None
    when the log runs forwards (as printed) or carries too few times to tell."""
    last: dict[str, str] = {}
    steps: dict[str, list[int]] = {}
    for line in lines[:PROBE]:
        if (s := stamp(line)) is None:
            continue
        prev = last.get(s.kind)
        if prev is not None and prev != s.key:
            counts = steps.setdefault(s.kind, [0, 0])
            counts[0 if s.key > prev else 1] += 1
        last[s.kind] = s.key
    best = max(steps.items(), key=lambda kv: kv[1][1], default=None)
    if best is None:
        return None
    kind, (forwards, back) = best
    return kind if back >= MIN_BACKWARDS and back >= 4 * forwards else None


def oldest_first(lines: list[str], kind: str | None = None) -> tuple[list[str], list[int]] | None:
    """``lines`` (a log held whole, without line ends) in the order they were printed, and for each
    line of that order its number in the file (1-based); None when the log already runs forwards.
    ``kind``: the kind of time that runs backwards, when the caller has told it already."""
    kind = kind or backwards_kind(lines)
    if kind is None:
        return None
    entries: list[list[int]] = []
    lead: list[int] = []  # lines before the first entry (a title, a paste's prose): they stay first
    for i, line in enumerate(lines):
        s = stamp(line)
        if s is not None and s.kind == kind and s.at <= _HEAD:
            entries.append([i])
        elif entries:
            entries[-1].append(i)
        else:
            lead.append(i)
    order = lead + [i for entry in reversed(entries) for i in entry]
    return [lines[i] for i in order], [i + 1 for i in order]


def renumber(result: ClassifyResult, numbers: list[int]) -> ClassifyResult:
    """``result`` of a log read in another order, with every line number the file's (``numbers[n - 1]``
    is the file's number of the ``n``-th line read)."""

    def at(n: int) -> int:
        return numbers[n - 1] if 0 < n <= len(numbers) else n

    fe = result.first_exception
    ev = result.evidence
    why = None if ev is None else _LINE_IN_WHY.sub(lambda m: f"(line {at(int(m.group(1)))})", ev.why)
    return replace(
        result,
        stages=[StageMark(s.stage, at(s.line), s.time) for s in result.stages],
        first_exception=None
        if fe is None
        else FirstException(fe.line, at(fe.line_number), fe.stack, fe.process, fe.context),
        evidence=None if ev is None else replace(ev, lines=tuple(at(n) for n in ev.lines), why=why),
        newest_first=True,
    )


_LINE_IN_WHY = re.compile(r"\(line (\d+)\)")
"""A line number a verdict's reason names (``the start-up had reached api (line 78)``)."""

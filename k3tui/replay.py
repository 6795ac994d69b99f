"""Replaying a session file: seek, step, markers and search over a folded state.

Replay never runs anything on any host: it reads events from the recording and folds them
with the same :func:`k3tui.state.reduce` the live session uses, so what a colleague sees is
what the operator saw.

Seeking must be instant on long sessions, so one scan at open time keeps

- the byte offset and time of every event (two compact arrays, 16 bytes an event),
- a :meth:`~k3tui.state.SessionState.snapshot` every ``checkpoint_every`` events,
- the timeline markers (rungs, stages, exceptions, freezes, notes, operator markers).

A seek copies the nearest checkpoint at or before the target and folds forward from its
byte offset — at most ``checkpoint_every`` events, never the whole file. Stepping forward
folds one event onto the current state. Search scans the raw bytes and decodes only the
lines that can match.

This module is core: no Textual, no Rich.
"""

from __future__ import annotations

import bisect
import os
from array import array
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from .events import MARKER_KINDS, AnyEvent, GpuSample, Header, Output, kind_of, summary
from .reader import Problem, Recording, VerifyResult, decode_event, open_recording
from .recording import unseal
from .state import LOG_TAIL, SessionState, reduce

CHECKPOINT_EVERY = 2000
IDLE_GAP = 2.0
"""Seconds of recorded silence that "skip idle gaps" jumps over."""

_SEARCH_CHUNK = 1 << 20


@dataclass(frozen=True)
class MarkerPoint:
    """One point on the timeline."""

    index: int
    """Number of the event (0-based); seeking to ``index + 1`` shows the state just after it."""
    t: float
    kind: str
    label: str


class Replay:
    """A recording opened for replay, with a current position and the state there.

    ``position`` is the number of events applied (0 = nothing yet, ``count`` = all), and
    ``state`` is the fold of exactly those events.

    Args:
        path: the ``.k3rec`` file.
        checkpoint_every: events between two state checkpoints.

    Raises:
        RecordingError: the file is not a readable session file.
    """

    def __init__(self, path: str | os.PathLike[str], checkpoint_every: int = CHECKPOINT_EVERY) -> None:
        self.recording: Recording = open_recording(path)
        self.path = Path(path)
        self.every = max(1, checkpoint_every)
        self._offsets = array("q")
        self._ends = array("q")
        self._times = array("d")
        self.markers: list[MarkerPoint] = []
        self._significant: list[AnyEvent] = []
        self._significant_index = array("q")
        self._checkpoints: list[SessionState] = [SessionState()]
        self._tail_from: list[int] = [0]
        """Per checkpoint: the first event whose output lines are still in the state's log tail."""
        self._scan_state = _ScanState()
        self._scan()
        self._marker_index = [m.index for m in self.markers]
        self.position = 0
        self.state = SessionState()

    # --- facts ----------------------------------------------------------------------

    @property
    def header(self) -> Header:
        return self.recording.header

    @property
    def problems(self) -> list[Problem]:
        """Corrupt or truncated lines met while scanning (skipped, reported)."""
        return self.recording.problems

    @property
    def integrity(self) -> VerifyResult | None:
        """What the digest chain and the seal said while the file was scanned (issue 16)."""
        return self.recording.integrity

    @property
    def count(self) -> int:
        return len(self._offsets)

    @property
    def duration(self) -> float:
        return self._times[-1] if self._times else 0.0

    @property
    def t(self) -> float:
        """Time of the current position (time of the last applied event)."""
        return self._times[self.position - 1] if self.position else 0.0

    def time_of(self, index: int) -> float:
        return self._times[index]

    def event_at(self, index: int) -> AnyEvent:
        """Decode one event by number."""
        return next(self._read(index, index + 1))

    def recent(self, n: int) -> list[AnyEvent]:
        """The last ``n`` events before the current position (to rebuild a log window after a seek)."""
        return list(self._read(max(0, self.position - n), self.position))

    def significant(self, position: int | None = None) -> list[AnyEvent]:
        """Every event but output and GPU samples before ``position`` (default: the current one).

        Few and kept in memory: what evaluators over the whole stream (checklist, stop
        conditions) read, without decoding the log.
        """
        n = self.position if position is None else position
        return self._significant[: bisect.bisect_left(self._significant_index, n)]

    # --- moving -----------------------------------------------------------------------

    def seek(self, position: int) -> SessionState:
        """Make ``state`` the fold of the first ``position`` events."""
        position = max(0, min(self.count, position))
        if self.position <= position < self.position + self.every:
            self._fold_to(position)
            return self.state
        cp = min(position // self.every, len(self._checkpoints) - 1)
        self.state = self._checkpoints[cp].snapshot()
        self.position = cp * self.every
        self._refill_tail(self._tail_from[cp], self.position)
        self._fold_to(position)
        return self.state

    def seek_time(self, t: float) -> SessionState:
        """Seek to just after the last event at or before ``t`` seconds."""
        return self.seek(bisect.bisect_right(self._times, t))

    def step(self, n: int = 1) -> list[AnyEvent]:
        """Apply the next ``n`` events (forward) and return them; ``n < 0`` steps back."""
        if n < 0:
            self.seek(self.position + n)
            return []
        return self._fold_to(min(self.count, self.position + n))

    def advance_to(self, t: float) -> list[AnyEvent]:
        """Apply every event up to time ``t`` (playback); returns them."""
        return self._fold_to(bisect.bisect_right(self._times, t, lo=self.position))

    def next_time(self) -> float | None:
        """Time of the next event to apply, or None at the end."""
        return self._times[self.position] if self.position < self.count else None

    def idle_gap(self, now: float) -> float | None:
        """When playback time ``now`` sits in a silence longer than IDLE_GAP, the time to jump to."""
        nt = self.next_time()
        if nt is None or nt - max(now, self.t) < IDLE_GAP:
            return None
        return nt

    # --- markers ----------------------------------------------------------------------

    def next_marker(self) -> MarkerPoint | None:
        """The first marker after the current position."""
        i = bisect.bisect_left(self._marker_index, self.position)
        return self.markers[i] if i < len(self.markers) else None

    def prev_marker(self) -> MarkerPoint | None:
        """The last marker strictly before the event that led to the current position."""
        i = bisect.bisect_left(self._marker_index, self.position - 1) - 1
        return self.markers[i] if i >= 0 else None

    def goto_marker(self, marker: MarkerPoint) -> SessionState:
        return self.seek(marker.index + 1)

    # --- search -----------------------------------------------------------------------

    def search(self, query: str, forward: bool = True, start: int | None = None) -> int | None:
        """Number of the next (or previous) event whose text contains ``query``, case-insensitive.

        Matches output text and each event's one-line summary. Forward search starts at
        ``start`` (default: the current position); backward search ends just before the
        event that led to the current position.
        """
        q = query.lower()
        if not q:
            return None
        if forward:
            begin = self.position if start is None else start
            for i in self._matches(q, begin, self.count):
                return i
            return None
        end = (self.position - 1) if start is None else start
        last = None
        for i in self._matches(q, 0, max(0, end)):
            last = i
        return last

    def _matches(self, q: str, lo: int, hi: int) -> Iterator[int]:
        if lo >= hi:
            return
        raw_ok = q.isascii() and '"' not in q and "\\" not in q and q.isprintable()
        needle = q.encode()
        for i, line in self._raw_lines(lo, hi):
            if raw_ok and needle not in line.lower():
                continue
            ev = self._decode(line)
            if ev is None:
                continue
            text = ev.text if isinstance(ev, Output) else summary(ev, 10_000)
            if q in text.lower():
                yield i

    # --- internals --------------------------------------------------------------------

    def _scan(self) -> None:
        for i, (_, off, ev) in enumerate(self.recording.iter_lines()):
            if i:
                self._ends.append(off)
            self._add(i, off, ev)
        if self._offsets:
            self._ends.append(self.recording.path.stat().st_size)

    def _add(self, i: int, off: int, ev: AnyEvent) -> None:
        """Index event ``i`` (at byte ``off``): times, markers, significant events, checkpoints.

        Called in file order by the scan, and by a live follower as events arrive (issue 21);
        the caller keeps ``_ends`` (where each event's line ends).
        """
        scan = self._scan_state
        t = max(scan.last_t, ev.t)  # a clock that never runs backwards keeps bisection valid
        self._offsets.append(off)
        self._times.append(t)
        scan.last_t = t
        if not isinstance(ev, (Output, GpuSample)) or (
            type(ev) is Output and ev.stream == "log" and ev.id not in scan.logged and not scan.logged.add(ev.id)
        ):  # each run's first log line too: the checklist sees that its log was kept (as the export does)
            self._significant.append(ev)
            self._significant_index.append(i)
        kind = kind_of(ev)
        if kind in MARKER_KINDS:
            self.markers.append(MarkerPoint(i, t, kind, summary(ev, 80)))
        reduce(scan.state, ev)
        if type(ev) is Output:
            k = len(ev.text.splitlines()) or 1
            scan.tail.append((i, k))
            scan.tail_lines += k
            while scan.tail_lines - scan.tail[0][1] >= LOG_TAIL:
                scan.tail_lines -= scan.tail.popleft()[1]
        if (i + 1) % self.every == 0:
            self._checkpoints.append(_without_tail(scan.state))
            self._tail_from.append(scan.tail[0][0] if scan.tail else i + 1)

    def _refill_tail(self, lo: int, hi: int) -> None:
        """Rebuild the log tail a checkpoint leaves out (it would cost ~1 MB per checkpoint)."""
        tail = self.state.log_tail
        for e in self._read(lo, hi):
            if type(e) is Output:
                for ln in e.text.splitlines() or [""]:
                    tail.append((e.id, ln))

    def _fold_to(self, position: int) -> list[AnyEvent]:
        if position <= self.position:
            return []
        applied = list(self._read(self.position, position))
        for ev in applied:
            reduce(self.state, ev)
        self.position = position
        return applied

    def _read(self, lo: int, hi: int) -> Iterator[AnyEvent]:
        for _, line in self._raw_lines(lo, hi):
            ev = self._decode(line)
            if ev is not None:
                yield ev

    def _raw_lines(self, lo: int, hi: int) -> Iterator[tuple[int, bytes]]:
        """(event number, raw line) for events lo..hi-1, skipping lines that did not decode at scan."""
        if lo >= hi:
            return
        with open(self.recording.path, "rb") as fh:
            i = lo
            while i < hi:
                # read a window of whole events, at most ~1 MiB (or one event) at a time
                j = bisect.bisect_right(self._ends, self._offsets[i] + _SEARCH_CHUNK, lo=i + 1, hi=hi)
                j = max(j, i + 1)
                fh.seek(self._offsets[i])
                data = fh.read(self._ends[j - 1] - self._offsets[i])
                base = self._offsets[i]
                for k in range(i, j):
                    a, b = self._offsets[k] - base, self._ends[k] - base
                    yield k, data[a:b].rstrip(b"\n")
                i = j

    @staticmethod
    def _decode(line: bytes) -> AnyEvent | None:
        # a line may be followed by corrupt lines that the scan skipped: keep the first line only
        line = line.split(b"\n", 1)[0]
        parts = unseal(line)
        try:
            return decode_event(parts[0] if parts else line)
        except (msgspec.DecodeError, ValueError, TypeError):
            return None


@dataclass
class _ScanState:
    """What indexing carries from one event to the next (kept so a live follower can go on)."""

    state: SessionState = field(default_factory=SessionState)
    last_t: float = 0.0
    tail: deque[tuple[int, int]] = field(default_factory=deque)
    """(event number, lines) of output still in the log tail."""
    logged: set[str] = field(default_factory=set)
    tail_lines: int = 0


def _without_tail(state: SessionState) -> SessionState:
    """A snapshot of ``state`` with an empty log tail (refilled from the file on restore)."""
    saved = state.log_tail
    state.log_tail = deque(maxlen=saved.maxlen)
    try:
        return state.snapshot()
    finally:
        state.log_tail = saved

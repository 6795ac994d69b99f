"""Reading, verifying and seeking session files.

Reading is tolerant where the writer could have been interrupted and strict elsewhere:

- the header must say ``k3rec`` and a schema this version knows (else a clear error);
- a truncated *last* line (what ``kill -9`` or a full disk leaves) is reported and skipped;
- a corrupt line in the middle is an error naming its line number (``strict``) or is
  reported and skipped (``strict=False``, used by replay so a colleague's damaged file
  still plays up to the damage and beyond);
- an event of an unknown kind is kept as :class:`~k3tui.events.Opaque`.

Seeking uses the ``.idx`` sidecar the recorder writes (rebuilt by one scan when it is
missing or stale): a bisection in the index and a short forward read.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from .errors import CorruptLine, NewerSchema, NotARecording, RecordingError
from .events import FORMAT, KINDS, SCHEMA_VERSION, AnyEvent, Header, KnownEvent, Opaque
from .recording import INDEX_EVERY, chain, unseal

_event_decoder = msgspec.json.Decoder(KnownEvent)
_header_decoder = msgspec.json.Decoder(Header)
_raw_decoder = msgspec.json.Decoder()
CHUNK = 4 * 1024 * 1024


def decode_event(body: bytes) -> AnyEvent:
    """Decode one event line; unknown kinds become :class:`Opaque`.

    Raises:
        msgspec.DecodeError: the line is not a valid event.
    """
    try:
        return _event_decoder.decode(body)
    except msgspec.ValidationError:
        raw = _raw_decoder.decode(body)
        if not isinstance(raw, dict) or not isinstance(raw.get("kind"), str):
            raise
        if raw["kind"] in KINDS:
            raise
        raw.pop("h", None)
        kind = raw.pop("kind")
        t = raw.pop("t", 0.0)
        host = raw.pop("host", "")
        return Opaque(kind=kind, t=float(t) if isinstance(t, (int, float)) else 0.0, host=str(host), data=raw)


@dataclass
class Problem:
    line_number: int
    message: str
    truncated: bool = False


@dataclass
class Recording:
    """An opened session file: its header, and its events on demand."""

    path: Path
    header: Header
    header_size: int
    problems: list[Problem] = field(default_factory=list)

    def events(self, strict: bool = False, start_offset: int | None = None, start_line: int = 2) -> Iterator[AnyEvent]:
        """Yield events in file order (problems are appended to :attr:`problems`)."""
        for _, _, ev in self.iter_lines(strict=strict, start_offset=start_offset, start_line=start_line):
            yield ev

    def iter_lines(
        self, strict: bool = False, start_offset: int | None = None, start_line: int = 2
    ) -> Iterator[tuple[int, int, AnyEvent]]:
        """Yield (line_number, byte_offset, event)."""
        offset = self.header_size if start_offset is None else start_offset
        line_no = start_line
        with open(self.path, "rb") as fh:
            fh.seek(offset)
            rest = b""
            while True:
                chunk = fh.read(CHUNK)
                if not chunk:
                    break
                data = rest + chunk
                lines = data.split(b"\n")
                rest = lines.pop()
                for line in lines:
                    n = len(line) + 1
                    ev = self._decode(line, line_no, strict)
                    if ev is not None:
                        yield line_no, offset, ev
                    offset += n
                    line_no += 1
            if rest:
                if rest.strip():
                    self.problems.append(
                        Problem(line_no, f"line {line_no} is truncated (the recorder was interrupted): skipped", True)
                    )
                    if _looks_complete(rest):
                        ev = self._decode(rest, line_no, False)
                        if ev is not None:
                            self.problems.pop()
                            yield line_no, offset, ev

    def _decode(self, line: bytes, line_no: int, strict: bool) -> AnyEvent | None:
        if not line.strip():
            return None
        parts = unseal(line)
        body = parts[0] if parts else line
        try:
            return decode_event(body)
        except (msgspec.DecodeError, ValueError, TypeError) as exc:
            if strict:
                raise CorruptLine(str(self.path), line_no, _short(exc)) from None
            self.problems.append(Problem(line_no, f"line {line_no} is corrupt and was skipped: {_short(exc)}"))
            return None

    # --- seeking -------------------------------------------------------------------

    def index(self) -> Index:
        """The seek index (from the sidecar file, or built by one scan and saved)."""
        return Index.load_or_build(self)

    def events_from_time(self, t: float) -> Iterator[AnyEvent]:
        """Events with ``t >= t``, starting from the nearest index point."""
        idx = self.index()
        n, off = idx.before_time(t)
        for ev in self.events(start_offset=off, start_line=n + 2):
            if ev.t >= t:
                yield ev

    def events_from_number(self, number: int) -> Iterator[AnyEvent]:
        """Events from the ``number`` th (0-based, header excluded)."""
        idx = self.index()
        n, off = idx.before_number(number)
        for i, ev in enumerate(self.events(start_offset=off, start_line=n + 2), start=n):
            if i >= number:
                yield ev


def _looks_complete(line: bytes) -> bool:
    return line.rstrip().endswith(b"}") and unseal(line.rstrip()) is not None


def _short(exc: BaseException) -> str:
    s = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return s[:200]


def open_recording(path: str | os.PathLike[str]) -> Recording:
    """Open a session file and validate its header.

    Raises:
        RecordingError: missing, unreadable, a directory, empty, not a k3rec, or newer.
    """
    p = Path(path)
    try:
        if p.is_dir():
            raise RecordingError(f"{p} is a directory, not a session file")
        with open(p, "rb") as fh:
            first = fh.readline(1024 * 1024)
    except FileNotFoundError:
        raise RecordingError(f"{p}: no such file") from None
    except PermissionError:
        raise RecordingError(f"{p}: permission denied") from None
    except OSError as exc:
        raise RecordingError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if not first:
        raise NotARecording(f"{p} is empty: not a k3rec session file")
    parts = unseal(first.rstrip(b"\n"))
    body = parts[0] if parts else first
    try:
        raw = _raw_decoder.decode(body)
    except msgspec.DecodeError:
        raise NotARecording(f"{p} is not a k3rec session file (line 1 is not a JSON header)") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise NotARecording(f"{p} is not a k3rec session file (header format is {raw.get('format') if isinstance(raw, dict) else type(raw).__name__!r})")
    version = raw.get("version")
    if not isinstance(version, int):
        raise NotARecording(f"{p}: header has no schema version")
    if version > SCHEMA_VERSION:
        raise NewerSchema(f"{p} uses k3rec schema {version}, this k3tui reads up to {SCHEMA_VERSION}: upgrade k3tui")
    try:
        header = _header_decoder.decode(body)
    except msgspec.DecodeError as exc:
        raise NotARecording(f"{p}: invalid header: {_short(exc)}") from None
    return Recording(path=p, header=header, header_size=len(first))


def read_all(path: str | os.PathLike[str], strict: bool = False) -> tuple[Recording, list[AnyEvent]]:
    """Open a session file and read every event."""
    rec = open_recording(path)
    return rec, list(rec.events(strict=strict))


# --- verification -------------------------------------------------------------------


@dataclass
class VerifyResult:
    ok: bool
    lines: int
    message: str
    bad_line: int | None = None
    truncated: bool = False


def verify(path: str | os.PathLike[str]) -> VerifyResult:
    """Check the digest chain of a session file.

    A truncated last line is reported as truncated (not tampering) when everything before
    it chains. The first line whose digest does not follow is named.
    """
    rec = open_recording(path)
    prev = b""
    n = 0
    with open(rec.path, "rb") as fh:
        data_iter = _lines(fh)
        for n, line, complete in data_iter:
            parts = unseal(line)
            if not complete:
                if parts is not None and chain(prev, parts[0]) == parts[1]:
                    return VerifyResult(True, n, f"{rec.path}: intact, {n} lines (last line lacks its newline)")
                return VerifyResult(
                    True, n - 1, f"{rec.path}: intact up to line {n - 1}; line {n} is truncated (recording was interrupted)", None, True
                )
            if parts is None:
                return VerifyResult(False, n, f"{rec.path}: line {n} has no digest: altered or inserted", n)
            body, digest = parts
            if chain(prev, body) != digest:
                what = _what_broke(line, n)
                return VerifyResult(False, n, f"{rec.path}: TAMPERED at line {n}: {what}", n)
            prev = digest
    return VerifyResult(True, n, f"{rec.path}: intact, {n} lines, chain verified")


def _what_broke(line: bytes, n: int) -> str:
    return (
        f"line {n} does not follow line {n - 1} — it was altered, or a line before it was "
        f"removed, inserted or moved"
    )


def _lines(fh: Any) -> Iterator[tuple[int, bytes, bool]]:
    n = 0
    rest = b""
    while True:
        chunk = fh.read(CHUNK)
        if not chunk:
            break
        data = rest + chunk
        parts = data.split(b"\n")
        rest = parts.pop()
        for p in parts:
            n += 1
            yield n, p, True
    if rest:
        yield n + 1, rest, False


# --- index -------------------------------------------------------------------------


@dataclass
class Index:
    """Byte offsets of every ``INDEX_EVERY`` th event and at least every few seconds."""

    numbers: list[int]
    offsets: list[int]
    times: list[float]

    def before_time(self, t: float) -> tuple[int, int]:
        i = bisect.bisect_right(self.times, t) - 1
        if i < 0:
            return 0, self.offsets[0] if self.offsets else 0
        # events at the same time may start before this index point
        while i > 0 and self.times[i] >= t:
            i -= 1
        return self.numbers[i], self.offsets[i]

    def before_number(self, number: int) -> tuple[int, int]:
        i = bisect.bisect_right(self.numbers, number) - 1
        if i < 0:
            return 0, self.offsets[0] if self.offsets else 0
        return self.numbers[i], self.offsets[i]

    @classmethod
    def load_or_build(cls, rec: Recording) -> Index:
        side = Path(str(rec.path) + ".idx")
        size = rec.path.stat().st_size
        try:
            idx = cls._load(side, size, rec.header_size)
            if idx is not None:
                return idx
        except (OSError, ValueError):
            pass
        idx = cls._build(rec)
        try:
            with open(side, "wb") as fh:
                for n, o, t in zip(idx.numbers, idx.offsets, idx.times):
                    fh.write(b"%d %d %.6f\n" % (n, o, t))
        except OSError:
            pass
        return idx

    @classmethod
    def _load(cls, side: Path, size: int, header_size: int) -> Index | None:
        nums, offs, times = [], [], []
        with open(side, "rb") as fh:
            for line in fh:
                a, b, c = line.split()
                nums.append(int(a))
                offs.append(int(b))
                times.append(float(c))
        if not nums or offs[-1] >= size or nums[0] != 0:
            return None
        return cls(nums, offs, times)

    @classmethod
    def _build(cls, rec: Recording) -> Index:
        nums, offs, times = [0], [rec.header_size], [0.0]
        last_t = 0.0
        for i, (_, off, ev) in enumerate(rec.iter_lines()):
            if i == 0:
                times[0] = ev.t
            elif i % INDEX_EVERY == 0 or ev.t - last_t >= 5.0:
                nums.append(i)
                offs.append(off)
                times.append(ev.t)
                last_t = ev.t
        return cls(nums, offs, times)

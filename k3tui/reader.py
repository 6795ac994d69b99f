"""Reading, verifying and seeking session files.

Reading is tolerant where the writer could have been interrupted and strict elsewhere:

- the header must say ``k3rec`` and a schema this version knows (else a clear error);
- a truncated *last* line (what ``kill -9`` or a full disk leaves) is reported and skipped;
- a corrupt line in the middle is an error naming its line number (``strict``) or is
  reported and skipped (``strict=False``, used by replay so a colleague's damaged file
  still plays up to the damage and beyond);
- an event of an unknown kind is kept as :class:`~k3tui.events.Opaque`.

Session files come from colleagues and attachments, so the reader treats them as
hostile: lines are capped at :data:`MAX_LINE` (read in chunks, never quadratically
re-joined), deep nesting and out-of-range numbers are decode errors like any other, and
non-regular files (FIFOs, devices) are refused instead of blocking.

Seeking uses the ``.idx`` sidecar the recorder writes (rebuilt by one scan when it is
missing or stale, and extended over any tail it does not cover): a bisection in the
index and a short forward read.
"""

from __future__ import annotations

import bisect
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import msgspec

from .errors import CorruptLine, NewerSchema, NotARecording, RecordingError
from .events import FORMAT, KINDS, SCHEMA_VERSION, AnyEvent, Header, KnownEvent, Opaque, Seal
from .recording import DIGEST_HEX, INDEX_BYTES, INDEX_EVERY, INDEX_SECONDS, chain, unseal

_event_decoder = msgspec.json.Decoder(KnownEvent)
_header_decoder = msgspec.json.Decoder(Header)
_raw_decoder = msgspec.json.Decoder()
CHUNK = 4 * 1024 * 1024
MAX_LINE = 64 * 1024 * 1024
"""Longest line a reader accepts; the recorder splits output so it never writes one."""
MAX_HEADER = 1024 * 1024
MAX_STARTED = 2**33
"""A header's start time must be before this (year 2242): an absurd one crashed ``export``."""


class _TimeOnly(msgspec.Struct):
    t: float = 0.0


_time_decoder = msgspec.json.Decoder(_TimeOnly)


def decode_event(body: bytes) -> AnyEvent:
    """Decode one event line; unknown kinds become :class:`Opaque`.

    Raises:
        msgspec.DecodeError: the line is not a valid event (also for hostile input:
            nesting too deep, numbers out of range).
    """
    try:
        return _decode_event(body)
    except (RecursionError, OverflowError) as exc:
        raise msgspec.DecodeError(f"not a valid event: {exc}") from None


def _decode_event(body: bytes) -> AnyEvent:
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
        if not isinstance(t, (int, float)) or isinstance(t, bool):
            raise msgspec.ValidationError(f"event of kind {kind!r} has a non-numeric time") from None
        if not isinstance(host, str):
            raise msgspec.ValidationError(f"event of kind {kind!r} has a non-text host") from None
        return Opaque(kind=kind, t=float(t), host=host, data=raw)


@dataclass
class Problem:
    """Something wrong with one line that the reader skipped."""

    line_number: int
    message: str
    truncated: bool = False
    tampered: bool = False
    """The digest chain breaks here: everything from this line on is unproven (issue 16)."""


@dataclass
class Recording:
    """An opened session file: its header, and its events on demand."""

    path: Path
    header: Header
    header_size: int
    problems: list[Problem] = field(default_factory=list)
    _index: Index | None = field(default=None, repr=False)
    header_line: bytes = b""
    integrity: VerifyResult | None = None
    """What the chain said once a read from the header reached the end (None before that)."""

    @property
    def tampered(self) -> Problem | None:
        """The first line where the chain broke during a read (None: none seen)."""
        return next((p for p in self.problems if p.tampered), None)

    def events(self, strict: bool = False, start_offset: int | None = None, start_line: int = 2) -> Iterator[AnyEvent]:
        """Yield events in file order (problems are appended to :attr:`problems`).

        Raises:
            CorruptLine: with ``strict``, at the first line that does not decode.
        """
        for _, _, ev in self.iter_lines(strict=strict, start_offset=start_offset, start_line=start_line):
            yield ev

    def iter_lines(
        self, strict: bool = False, start_offset: int | None = None, start_line: int = 2
    ) -> Iterator[tuple[int, int, AnyEvent]]:
        """Yield (line_number, byte_offset, event) for every line that decodes."""
        offset = self.header_size if start_offset is None else start_offset
        check = ChainCheck(self.header_line) if start_offset is None and self.header_line else None
        with _open_regular(self.path) as fh:
            fh.seek(offset)
            for line_no, off, line, complete in raw_lines(fh, offset, start_line):
                if check is not None and (why := check.feed(line_no, line, complete)) is not None:
                    self.problems.append(Problem(line_no, f"TAMPERED at line {line_no}: {why}", tampered=True))
                ev = self._line(line, line_no, complete, strict)
                if ev is not None and type(ev) is not Seal:  # the seal is about the file, not the session
                    yield line_no, off, ev
        if check is not None:
            self.integrity = check.verdict(self)

    def _line(self, line: bytes | None, line_no: int, complete: bool, strict: bool) -> AnyEvent | None:
        if line is None:
            self._problem(line_no, f"line {line_no} is longer than {MAX_LINE >> 20} MB: skipped", strict)
            return None
        if complete:
            return self._decode(line, line_no, strict)
        if not line.strip():
            return None
        if _looks_complete(line):
            return self._decode(line, line_no, False)
        self.problems.append(
            Problem(line_no, f"line {line_no} is truncated (the recorder was interrupted): skipped", True)
        )
        return None

    def _decode(self, line: bytes, line_no: int, strict: bool) -> AnyEvent | None:
        if not line.strip():
            return None
        parts = unseal(line)
        body = parts[0] if parts else line
        try:
            return decode_event(body)
        except (msgspec.DecodeError, ValueError, TypeError) as exc:
            self._problem(line_no, f"line {line_no} is corrupt and was skipped: {_short(exc)}", strict, exc)
            return None

    def _problem(self, line_no: int, message: str, strict: bool, exc: BaseException | None = None) -> None:
        if strict:
            why = _short(exc) if exc is not None else message
            raise CorruptLine(str(self.path), line_no, why)
        self.problems.append(Problem(line_no, message))

    # --- seeking -------------------------------------------------------------------

    def index(self) -> Index:
        """The seek index (from the sidecar file, or built by one scan and saved); cached."""
        if self._index is None or self._index.size != _size(self.path):
            self._index = Index.load_or_build(self)
        return self._index

    def events_from_time(self, t: float) -> Iterator[AnyEvent]:
        """Every event with ``event.t >= t``, in file order: the full read, filtered.

        Starts at the last index point before which no event reaches ``t``, so even a
        recording whose clock went backwards gives the same answer as a full scan.
        """
        n, off = self.index().before_time(t)
        for _, _, ev in self._lines_from(off, n + 2, _at_or_after(t)):
            if ev.t >= t:
                yield ev

    def events_from_number(self, number: int) -> Iterator[AnyEvent]:
        """Events from the ``number`` th (0-based, header excluded: event n is on line n + 2)."""
        n, off = self.index().before_number(number)
        for _, _, ev in self._lines_from(off, n + 2, lambda line_no, _: line_no - 2 >= number):
            yield ev

    def _lines_from(
        self, offset: int, line_no: int, wanted: Callable[[int, bytes | None], bool]
    ) -> Iterator[tuple[int, int, AnyEvent]]:
        """Like :meth:`iter_lines`, but lines ``wanted`` rejects are skipped without decoding."""
        with _open_regular(self.path) as fh:
            fh.seek(offset)
            for n, off, line, complete in raw_lines(fh, offset, line_no):
                if not wanted(n, line):
                    continue
                ev = self._line(line, n, complete, False)
                if ev is not None and type(ev) is not Seal:
                    yield n, off, ev


def raw_lines(fh: IO[bytes], offset: int = 0, line_no: int = 1) -> Iterator[tuple[int, int, bytes | None, bool]]:
    """Yield (line_number, offset, line, complete) from the current position of ``fh``.

    ``line`` is None for a line longer than :data:`MAX_LINE` (its bytes are skipped, not
    kept); ``complete`` is False only for a last line without its newline.
    """
    parts: list[bytes] = []
    pending = 0  # bytes of the current partial line
    too_long = False
    size = min(64 * 1024, CHUNK)  # a seek usually needs a few lines: start small, then grow
    while True:
        chunk = fh.read(size)
        size = min(size * 2, CHUNK)
        if not chunk:
            break
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                piece = chunk[start:]
                pending += len(piece)
                if pending > MAX_LINE:
                    too_long, parts = True, []
                elif not too_long:
                    parts.append(piece)
                break
            piece = chunk[start:nl]
            length = pending + len(piece)
            if too_long or length > MAX_LINE:
                yield line_no, offset, None, True
            else:
                yield line_no, offset, (b"".join(parts) + piece if parts else piece), True
            offset += length + 1
            line_no += 1
            parts, pending, too_long = [], 0, False
            start = nl + 1
    if pending:
        yield line_no, offset, (None if too_long else b"".join(parts)), False


def _looks_complete(line: bytes) -> bool:
    return line.rstrip().endswith(b"}") and unseal(line.rstrip()) is not None


def _short(exc: BaseException | None) -> str:
    if exc is None:
        return ""
    s = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return s[:200]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _open_regular(path: Path) -> IO[bytes]:
    """Open a file for reading, refusing what would block or is not a file.

    Raises:
        RecordingError: missing, a directory, a device/FIFO/socket, or unreadable.
    """
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise RecordingError(f"{path} is a directory, not a session file")
        if not stat.S_ISREG(st.st_mode):
            raise RecordingError(f"{path} is not a regular file (a device, FIFO or socket): not a session file")
        return open(path, "rb")  # noqa: SIM115 - returned to the caller
    except FileNotFoundError:
        raise RecordingError(f"{path}: no such file") from None
    except PermissionError:
        raise RecordingError(f"{path}: permission denied") from None
    except IsADirectoryError:
        raise RecordingError(f"{path} is a directory, not a session file") from None
    except OSError as exc:
        raise RecordingError(f"{path}: cannot read: {exc.strerror or exc}") from None


def open_recording(path: str | os.PathLike[str]) -> Recording:
    """Open a session file and validate its header.

    Raises:
        RecordingError: missing, unreadable, a directory, empty, not a k3rec, or newer.
    """
    p = Path(path)
    try:
        with _open_regular(p) as fh:
            first = fh.readline(MAX_HEADER)
    except OSError as exc:  # read errors (EIO, EISDIR on odd filesystems)
        raise RecordingError(f"{p}: cannot read: {exc.strerror or exc}") from None
    header = _parse_header(p, first)
    return Recording(path=p, header=header, header_size=len(first), header_line=first.rstrip(b"\n"))


def _parse_header(p: Path, first: bytes) -> Header:
    if not first:
        raise NotARecording(f"{p} is empty: not a k3rec session file")
    if not first.endswith(b"\n"):
        if first.startswith(b'{"format":"k3rec"') and len(first) < MAX_HEADER:
            raise NotARecording(f"{p}: the header line is incomplete (the recording was interrupted as it started)")
        raise NotARecording(f"{p} is not a k3rec session file (no header line)")
    parts = unseal(first.rstrip(b"\n"))
    body = parts[0] if parts else first
    try:
        raw = _raw_decoder.decode(body)
    except (msgspec.DecodeError, RecursionError):
        raise NotARecording(f"{p} is not a k3rec session file (line 1 is not a JSON header)") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        what = repr(raw.get("format"))[:40] if isinstance(raw, dict) else type(raw).__name__
        raise NotARecording(f"{p} is not a k3rec session file (header format is {what})")
    version = raw.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise NotARecording(f"{p}: header has no schema version")
    if version > SCHEMA_VERSION:
        raise NewerSchema(f"{p} uses k3rec schema {version}, this k3tui reads up to {SCHEMA_VERSION}: upgrade k3tui")
    if version < 1:
        raise NotARecording(f"{p}: header has an invalid schema version {version}")
    try:
        header = _header_decoder.decode(body)
    except msgspec.DecodeError as exc:
        raise NotARecording(f"{p}: invalid header: {_short(exc)}") from None
    if not 0 <= header.started < MAX_STARTED:  # NaN fails too; exports date files and archives by it
        raise NotARecording(f"{p}: invalid header: start time {header.started!r} is not a time (seconds since 1970)")
    return header


def read_all(path: str | os.PathLike[str], strict: bool = False) -> tuple[Recording, list[AnyEvent]]:
    """Open a session file and read every event."""
    rec = open_recording(path)
    return rec, list(rec.events(strict=strict))


# --- verification -------------------------------------------------------------------


@dataclass
class VerifyResult:
    """What ``k3tui verify`` (and every reader, as it reads) says about a file."""

    ok: bool
    lines: int
    message: str
    bad_line: int | None = None
    truncated: bool = False
    sealed: bool = False
    """The session closed and its seal matches: the end is proven too."""


_SEAL_START = b'{"kind":"seal",'
_DIGEST_END = re.compile(rb"[0-9a-f]{0,%d}(?:(?<=[0-9a-f]{%d})\"(?:\})?)?" % (DIGEST_HEX, DIGEST_HEX))


class ChainCheck:
    """The digest chain, followed line by line as a reader reads (issue 16: ``cat``, ``replay``
    and ``export`` saw inserted, swapped or deleted lines without a word; ``verify`` alone checked).

    Lines are fed in order from the header on; :meth:`feed` names the first break once, and
    :meth:`verdict` says at the end whether the session was sealed, merely interrupted, or cut.
    """

    def __init__(self, header_line: bytes) -> None:
        self.prev = b""
        self.lines = 0
        self.events = 0
        self.bad: tuple[int, str] | None = None
        self.seal_line: int | None = None
        self.truncated = False
        self.no_newline = False
        self.feed(1, header_line, True)

    def feed(self, n: int, line: bytes | None, complete: bool) -> str | None:
        """Check line n (None: over-long); returns why the chain breaks there, the first time only."""
        if self.bad is not None:
            return None
        self.lines = n
        why = self._check(n, line, complete)
        if why is not None:
            self.bad = (n, why)
        return why

    def _check(self, n: int, line: bytes | None, complete: bool) -> str | None:
        if line is None:
            return "longer than k3tui ever writes"
        if not complete and not line.strip():
            return None
        if self.seal_line is not None:
            return f"it comes after the session's seal (line {self.seal_line}): added after the session closed"
        parts = unseal(line)
        if not complete:
            return self._last(n, line, parts)
        if parts is None:
            return "the header was altered" if n == 1 else "it has no digest (altered or inserted)"
        body, digest = parts
        if chain(self.prev, body) != digest:
            return _what_broke(n)
        last, self.prev = self.prev, digest
        if n > 1 and body.startswith(_SEAL_START):
            return self._sealed(n, body, last)
        if n > 1:
            self.events += 1
        return None

    def _sealed(self, n: int, body: bytes, last: bytes) -> str | None:
        try:
            raw = _raw_decoder.decode(body)
        except (msgspec.DecodeError, RecursionError):
            return "its seal does not decode"
        if raw.get("events") != self.events or raw.get("last") != last.decode():
            return f"the seal says {raw.get('events')} events, {self.events} precede it: lines were removed or added"
        self.seal_line = n
        return None

    def _last(self, n: int, line: bytes, parts: tuple[bytes, bytes] | None) -> str | None:
        """A last line without its newline: an interrupted write leaves a *prefix* of a real line."""
        if parts is not None:
            if chain(self.prev, parts[0]) != parts[1]:
                return _what_broke(n)
            self.no_newline = True
            last, self.prev = self.prev, parts[1]
            if parts[0].startswith(_SEAL_START):  # only its newline is missing: the seal still proves the end
                return self._sealed(n, parts[0], last)
            self.events += 1
            return None
        cut = line.rfind(b',"h":"')
        if cut >= 0 and _DIGEST_END.fullmatch(line, cut + 6) is None:
            return "its end is not what the recorder writes (a byte was altered, not cut off)"
        self.truncated = True
        return None

    def verdict(self, rec: Recording) -> VerifyResult:
        """The file's verdict once every line was fed."""
        path, n = rec.path, self.lines
        if self.bad is not None:
            bad, why = self.bad
            return VerifyResult(False, bad, f"{path}: TAMPERED at line {bad}: {why}", bad)
        cut = _tail_cut(rec, sealed=self.seal_line is not None)
        if cut is not None:
            return VerifyResult(False, n + 1, f"{path}: TAMPERED at line {n + 1}: {cut}", n + 1)
        nl = " (last line lacks its newline)" if self.no_newline else ""
        if self.seal_line is not None:
            return VerifyResult(
                True,
                n,
                f"{path}: intact, {n} lines{nl}, chain verified, sealed after {self.events} events",
                sealed=True,
            )
        open_end = "not closed: the end cannot be proven (no seal; lines may have been cut from the end)"
        if self.truncated:
            return VerifyResult(
                True,
                n - 1,
                f"{path}: intact up to line {n - 1}; line {n} is truncated (recording was interrupted); {open_end}",
                None,
                True,
            )
        return VerifyResult(True, n, f"{path}: intact, {n} lines{nl}, chain verified; {open_end}")


def verify(path: str | os.PathLike[str]) -> VerifyResult:
    """Check the digest chain of a session file, and its seal.

    A truncated last line is reported as truncated (not tampering) when everything before
    it chains; a last line whose end is not a prefix of what the recorder writes is
    tampering. The first line whose digest does not follow is named. A session without a
    seal is "not closed": its end cannot be proven.

    Raises:
        RecordingError: the file cannot be read or is not a session file at all.
    """
    try:
        rec = open_recording(path)
    except NotARecording:
        if _starts_with_an_event(Path(path)):
            return VerifyResult(False, 1, f"{path}: TAMPERED at line 1: the header is missing or was moved", 1)
        raise
    check = ChainCheck(rec.header_line)
    with _open_regular(rec.path) as fh:
        fh.seek(rec.header_size)
        for n, _, line, complete in raw_lines(fh, rec.header_size, 2):
            if check.feed(n, line, complete) is not None:
                break
    return check.verdict(rec)


def _tail_cut(rec: Recording, sealed: bool = False) -> str | None:
    """Evidence that whole lines were removed from the end: the chain cannot show it (a
    shorter file chains too), but the recorder writes an index point only after its line
    is on disk, and its seal into the ``.idx`` too: a valid point past the end, or a seal
    the file no longer holds, means the end was cut off."""
    size = _size(rec.path)
    try:
        cols, seal = _read_idx(Path(str(rec.path) + ".idx"), 1 << 20)
        nums, offs, times = (list(map(int, cols[0::4])), list(map(int, cols[1::4])), list(map(float, cols[2::4])))
    except (OSError, ValueError):
        return None
    if seal is not None and not sealed and seal[1] > size:
        return (
            f"lines were removed from the end: the session was sealed after {seal[0]} events at {seal[1]} bytes "
            f"(its .idx says so), the file ends at {size} bytes without its seal"
        )
    if len(cols) % 4 or not offs or offs[0] != rec.header_size or not _strictly_increasing(offs):
        return None
    inside = [i for i, o in enumerate(offs) if o < size]
    beyond = [i for i, o in enumerate(offs) if o >= size]
    if not beyond or not inside or not all(_point_matches(rec.path, offs[i], times[i]) for i in inside[-3:]):
        return None
    k = beyond[0]
    return (
        f"lines were removed from the end (or the file was copied while still being recorded): its index "
        f"(.idx) holds event {nums[k]} at byte {offs[k]}, past the end of the file ({size} bytes)"
    )


def _starts_with_an_event(p: Path) -> bool:
    """Whether line 1 is a sealed event line (so a header was removed, not a foreign file)."""
    with _open_regular(p) as fh:
        first = fh.readline(MAX_LINE).rstrip(b"\n")
    parts = unseal(first)
    if parts is None:
        return False
    try:
        raw = _raw_decoder.decode(parts[0])
    except (msgspec.DecodeError, RecursionError):
        return False
    return isinstance(raw, dict) and isinstance(raw.get("kind"), str)


def _what_broke(n: int) -> str:
    if n == 1:
        return "the header was altered"
    return f"line {n} does not follow line {n - 1} — it was altered, or a line before it was removed, inserted or moved"


# --- index -------------------------------------------------------------------------


@dataclass
class Index:
    """Byte offsets every ``INDEX_EVERY`` events, ``INDEX_BYTES`` bytes or few seconds of session.

    ``max_before[i]`` is the largest event time *before* point ``i`` (``-inf`` for the
    first), so seeking by time stays exact even if event times are not monotonic.
    """

    numbers: list[int]
    offsets: list[int]
    times: list[float]
    max_before: list[float] = field(default_factory=list)
    size: int = -1
    """Size of the recording the index was made for (a grown file re-indexes)."""

    def before_time(self, t: float) -> tuple[int, int]:
        """(event number, offset) of the last point before which no event has ``t >= t``."""
        i = bisect.bisect_left(self.max_before, t) - 1
        i = max(i, 0)
        return self.numbers[i], self.offsets[i]

    def before_number(self, number: int) -> tuple[int, int]:
        """(event number, offset) of the last point at or before event ``number``."""
        i = max(bisect.bisect_right(self.numbers, number) - 1, 0)
        return self.numbers[i], self.offsets[i]

    @classmethod
    def load_or_build(cls, rec: Recording) -> Index:
        """The sidecar if it fits this file (extended over any tail), else a fresh scan."""
        side = Path(str(rec.path) + ".idx")
        size = _size(rec.path)
        idx = None
        try:
            idx = cls._load(side, rec, size)
        except (OSError, ValueError, msgspec.DecodeError):
            idx = None
        if idx is None:
            try:
                seal = _read_idx(side)[1]  # the recorder's seal line outlives a rebuild: it is evidence
            except (OSError, ValueError):
                seal = None
            idx = cls([0], [rec.header_size], [0.0], [float("-inf")])
            idx._extend(rec, size)
            idx._save(side, seal)
        else:
            idx._extend(rec, size)
        return idx

    @classmethod
    def _load(cls, side: Path, rec: Recording, size: int) -> Index | None:
        cols, _ = _read_idx(side)
        if len(cols) % 4:
            return None
        nums = list(map(int, cols[0::4]))
        offs = list(map(int, cols[1::4]))
        times = list(map(float, cols[2::4]))
        maxb = list(map(float, cols[3::4]))
        if not nums or nums[0] != 0 or offs[0] != rec.header_size or offs[-1] >= size:
            return None
        if not (_strictly_increasing(nums) and _strictly_increasing(offs)):
            return None
        if not _max_before_consistent(times, maxb):
            return None
        if not (_point_matches(rec.path, offs[0], times[0]) and _point_matches(rec.path, offs[-1], times[-1])):
            return None
        return cls(nums, offs, times, maxb)

    def _extend(self, rec: Recording, size: int) -> None:
        """Scan from the last point to the end of the file, adding points (cheap: t only)."""
        n, off = self.numbers[-1], self.offsets[-1]
        max_t = self.max_before[-1]
        last_index_t = self.times[-1]
        with _open_regular(rec.path) as fh:
            fh.seek(off)
            for line_no, o, line, _ in raw_lines(fh, off, n + 2):
                i = line_no - 2
                t = _time_of(line)
                if t is None:
                    continue
                due = i - self.numbers[-1] >= INDEX_EVERY or o - self.offsets[-1] >= INDEX_BYTES
                if i > n and (due or t - last_index_t >= INDEX_SECONDS):
                    self.numbers.append(i)
                    self.offsets.append(o)
                    self.times.append(t)
                    self.max_before.append(max_t)
                    last_index_t = t
                elif i == n and n == 0:
                    self.times[0] = t
                max_t = max(max_t, t)
        self.size = size

    def _save(self, side: Path, seal: tuple[int, int, bytes] | None = None) -> None:
        try:
            with open(side, "wb") as fh:
                for n, o, t, m in zip(self.numbers, self.offsets, self.times, self.max_before, strict=True):
                    fh.write(b"%d %d %r %r\n" % (n, o, t, m))
                if seal is not None:
                    fh.write(b"seal %d %d %s\n" % seal)
        except OSError:
            pass  # a read-only directory: the index lives in memory only


def _read_idx(side: Path, limit: int = -1) -> tuple[list[bytes], tuple[int, int, bytes] | None]:
    """The ``.idx`` columns (4 a point) and its seal line ``seal EVENTS SIZE DIGEST``, if any.

    Raises:
        OSError: unreadable. ValueError: a malformed seal line.
    """
    with open(side, "rb") as fh:
        data = fh.read(limit)
    cols: list[bytes] = []
    seal = None
    for line in data.splitlines():
        if line.startswith(b"seal "):
            _, events, size, digest = line.split()
            seal = (int(events), int(size), digest)
        else:
            cols += line.split()
    return cols, seal


def _max_before_consistent(times: list[float], maxb: list[float]) -> bool:
    """Whether a sidecar's ``max_before`` column can be true: ``-inf`` first, never falling,
    and each at least the time of the point before it (a damaged column that claims less
    would make a seek by time start past events it should return)."""
    if not maxb or maxb[0] != float("-inf"):
        return False
    return all(m >= prev_m and m >= prev_t for m, prev_m, prev_t in zip(maxb[1:], maxb, times, strict=False))


def _strictly_increasing(xs: list[int]) -> bool:
    return xs == sorted(xs) and len(set(xs)) == len(xs)


def _at_or_after(t: float) -> Callable[[int, bytes | None], bool]:
    """A cheap line filter for seeking by time: decode only lines that may qualify."""

    def wanted(_: int, line: bytes | None) -> bool:
        found = _time_of(line)
        return found is None or found >= t

    return wanted


def _time_of(line: bytes | None) -> float | None:
    if not line:
        return None
    try:
        return _time_decoder.decode(line).t
    except (msgspec.DecodeError, RecursionError, OverflowError):
        return None


def _point_matches(path: Path, offset: int, t: float) -> bool:
    """Whether an index point lands on the start of a line holding an event at time t."""
    with open(path, "rb") as fh:
        fh.seek(max(offset - 1, 0))
        before = fh.read(1)
        line = fh.readline(MAX_LINE)
    if offset > 0 and before != b"\n":
        return False
    found = _time_of(line.rstrip(b"\n"))
    return found is not None and abs(found - t) < 1e-6

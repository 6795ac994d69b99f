"""Writing a session file (``.k3rec``): append-only, chained, redacted, crash-safe.

Shape of the file (NDJSON, in the spirit of asciicast v2)::

    {"format":"k3rec","version":1,…,"h":"<digest>"}          line 1: header
    {"kind":"output","t":1.25,"id":"c1","text":"…","h":"<digest>"}   every later line: one event

``h`` chains the file: ``h_n = blake2b(h_{n-1} ‖ body_n)`` where ``body_n`` is the line
without its ``,"h":"…"`` suffix and ``h_0`` is seeded by nothing. An edited, removed,
inserted or reordered line breaks the chain at that line; ``k3tui verify`` names it.

The caller never waits on the disk: :meth:`Recorder.emit` redacts, stamps and queues;
one writer thread encodes, chains and writes. It flushes at least every 200 ms and at
once after significant events (stage, exception, freeze, verdict, operator action). A
write error (disk full, file removed) *suspends* recording: events are held in memory
(bounded), a :class:`~k3tui.events.Notice` tells the operator, and writing resumes by
itself when the disk accepts data again — nothing recorded is lost while memory lasts.

Beside the file the recorder keeps ``FILE.idx``: the byte offset and time of every
``INDEX_EVERY`` th event (and at least every ``INDEX_SECONDS``), so a reader can seek
into a 1 GB recording in milliseconds.
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import msgspec

from . import __version__
from .errors import RecordingError
from .events import SIGNIFICANT, Event, Header, Notice, Opaque
from .redact import Redactor

DIGEST_BYTES = 12
DIGEST_HEX = DIGEST_BYTES * 2
_SUFFIX_LEN = len(',"h":""}') + DIGEST_HEX
FLUSH_INTERVAL = 0.2
INDEX_EVERY = 2000
INDEX_SECONDS = 5.0
MAX_HELD_BYTES = 256 * 1024 * 1024

_encoder = msgspec.json.Encoder()


def chain(prev: bytes, body: bytes) -> bytes:
    """The digest of a line body, chained to the previous line's digest (hex bytes)."""
    return hashlib.blake2b(prev + body, digest_size=DIGEST_BYTES).hexdigest().encode()


def seal(prev: bytes, body: bytes) -> tuple[bytes, bytes]:
    """Append the chained digest to an encoded JSON object; returns (line, digest)."""
    h = chain(prev, body)
    return body[:-1] + b',"h":"' + h + b'"}\n', h


def unseal(line: bytes) -> tuple[bytes, bytes] | None:
    """Split a sealed line (without newline) into (body, digest), or None if unsealed."""
    if len(line) < _SUFFIX_LEN or not line.endswith(b'"}'):
        return None
    cut = len(line) - _SUFFIX_LEN
    if line[cut : cut + 6] != b',"h":"':
        return None
    return line[:cut] + b"}", line[cut + 6 : -2]


def encode_event(event: Any) -> bytes:
    """Encode an event (or an opaque one, which is written back as it was read)."""
    if isinstance(event, Opaque):
        return _encoder.encode({"kind": event.kind, "t": event.t, "host": event.host, **event.data})
    return _encoder.encode(event)


class Recorder:
    """Appends events to a session file without ever blocking the caller on I/O.

    Args:
        path: the ``.k3rec`` file to create (it must not exist).
        header: the header; ``session_id``, ``started`` and ``k3tui_version`` are filled in.
        redactor: applied to every event before it is written or shown.
        opener: how to open the file (tests inject faults here).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        header: Header | None = None,
        redactor: Redactor | None = None,
        opener: Callable[[str], IO[bytes]] | None = None,
        index: bool = True,
    ) -> None:
        self.path = Path(path)
        self.redactor = redactor or Redactor.from_environment()
        h = header or Header()
        h.session_id = h.session_id or uuid.uuid4().hex[:12]
        h.started = h.started or time.time()
        h.k3tui_version = h.k3tui_version or __version__
        self.header = h
        self._t0 = time.monotonic()
        self._observers: list[Callable[[Any], None]] = []
        self._q: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self.suspended = False
        self.error: str | None = None
        self.events_written = 0
        self.events_emitted = 0
        self.closed = False
        self._opener = opener or (lambda p: open(p, "xb", buffering=1024 * 1024))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh: IO[bytes] = self._opener(str(self.path))
        except FileExistsError:
            raise RecordingError(f"{self.path} already exists: choose another name, k3tui never overwrites a recording") from None
        except OSError as exc:
            raise RecordingError(f"cannot create {self.path}: {exc.strerror or exc}") from None
        self._index_fh: IO[bytes] | None = None
        if index:
            try:
                self._index_fh = open(str(self.path) + ".idx", "wb")
            except OSError:
                self._index_fh = None
        self._thread = threading.Thread(target=self._writer, name=f"k3rec-writer:{self.path.name}", daemon=True)
        self._thread.start()
        self._q.put(h)

    # --- the caller's side ------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.header.session_id

    def now(self) -> float:
        """Seconds since the session started (monotonic)."""
        return time.monotonic() - self._t0

    def subscribe(self, observer: Callable[[Any], None]) -> None:
        """Call ``observer(event)`` with every redacted event, in order, on the emitting thread."""
        self._observers.append(observer)

    def emit(self, event: Event) -> Event:
        """Redact, time-stamp and queue an event; returns the event as recorded."""
        if self.closed:
            raise RecordingError(f"recording {self.path} is closed")
        event = self.redactor.event(event)
        if not event.t:
            event = msgspec.structs.replace(event, t=round(self.now(), 6))
        self.events_emitted += 1
        self._q.put(event)
        for obs in list(self._observers):
            obs(event)
        return event

    def close(self, timeout: float = 10.0) -> None:
        """Write everything queued, flush, sync and close. Safe to call twice."""
        if self.closed:
            return
        self.closed = True
        self._q.put(None)
        self._thread.join(timeout)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the writer thread ---------------------------------------------------------------

    def _writer(self) -> None:
        prev = b""
        held: deque[bytes] = deque()
        held_bytes = 0
        last_flush = time.monotonic()
        last_retry = 0.0
        offset = 0
        n = -1  # header is event -1
        last_index_t = -1e9
        dirty = False
        stat_check = time.monotonic()
        done = False
        while not done:
            try:
                item = self._q.get(timeout=FLUSH_INTERVAL / 2)
            except queue.Empty:
                item = False
            if item is None:
                done = True
            elif item is not False:
                body = encode_event(item) if not isinstance(item, Header) else _encoder.encode(item)
                line, prev = seal(prev, body)
                if n >= 0 and self._index_fh is not None:
                    t = item.t
                    if n % INDEX_EVERY == 0 or t - last_index_t >= INDEX_SECONDS:
                        last_index_t = t
                        try:
                            self._index_fh.write(b"%d %d %.6f\n" % (n, offset + held_bytes, t))
                        except OSError:
                            pass
                held.append(line)
                held_bytes += len(line)
                n += 1
                if held_bytes > MAX_HELD_BYTES and self.suspended:
                    dropped = held.popleft()
                    held_bytes -= len(dropped)
                    self._notify("error", "recording memory buffer full while the disk refuses writes: oldest held event dropped")
                dirty = True
            now = time.monotonic()
            urgent = done or (item not in (None, False) and isinstance(item, SIGNIFICANT))
            if self.suspended and not done and now - last_retry < 1.0:
                continue
            if held and (urgent or now - last_flush >= FLUSH_INTERVAL or held_bytes > 1 << 20 or self.suspended):
                last_retry = now
                try:
                    while held:
                        self._fh.write(held[0])
                        offset += len(held[0])
                        held_bytes -= len(held[0])
                        held.popleft()
                        self.events_written += 1
                    self._fh.flush()
                    if self._index_fh is not None:
                        self._index_fh.flush()
                    last_flush = now
                    dirty = False
                    if self.suspended:
                        self.suspended = False
                        self.error = None
                        self._notify("info", f"recording resumed: {self.path} — nothing was lost")
                except OSError as exc:
                    self._suspend(exc)
            elif dirty and now - last_flush >= FLUSH_INTERVAL and not self.suspended:
                try:
                    self._fh.flush()
                    last_flush = now
                    dirty = False
                except OSError as exc:
                    self._suspend(exc)
            if now - stat_check > 1.0 and not self.suspended:
                stat_check = now
                self._check_still_there()
        try:
            if not self.suspended:
                self._fh.flush()
                os.fsync(self._fh.fileno())
        except (OSError, ValueError, AttributeError) as exc:
            self._suspend(exc)
        for fh in (self._fh, self._index_fh):
            try:
                if fh is not None:
                    fh.close()
            except OSError:
                pass
        if held:
            self._notify("error", f"recording closed with {len(held)} events not written: {self.error}")

    def _check_still_there(self) -> None:
        try:
            st = os.stat(self.path)
            fst = os.fstat(self._fh.fileno())
            if (st.st_ino, st.st_dev) != (fst.st_ino, fst.st_dev):
                raise FileNotFoundError
        except FileNotFoundError:
            self._notify("error", f"recording file {self.path} was removed or replaced while recording; events still go to the open file")
            self._check_still_there = lambda: None  # type: ignore[method-assign]
        except (OSError, ValueError, AttributeError):
            pass

    def _suspend(self, exc: BaseException) -> None:
        why = getattr(exc, "strerror", None) or str(exc)
        msg = f"recording SUSPENDED: cannot write {self.path}: {why}. Events are held in memory and written when the disk accepts them"
        if not self.suspended:
            self.suspended = True
            self.error = why
            self._notify("error", msg)

    def _notify(self, level: str, message: str) -> None:
        """Tell observers something about the recording itself.

        Called on the writer thread: observers must be thread-safe (the TUI posts a message).
        """
        event = Notice(t=round(self.now(), 6), level=level, message=message)
        if not self.closed:
            self._q.put(event)  # the file keeps a trace of the gap once it is writable again
        for obs in list(self._observers):
            try:
                obs(event)
            except Exception:  # noqa: BLE001 - an observer must never kill the writer
                pass

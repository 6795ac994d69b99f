"""Writing a session file (``.k3rec``): append-only, chained, redacted, crash-safe.

Shape of the file (NDJSON, in the spirit of asciicast v2)::

    {"format":"k3rec","version":1,…,"h":"<digest>"}          line 1: header
    {"kind":"output","t":1.25,"id":"c1","text":"…","h":"<digest>"}   every later line: one event

``h`` chains the file: ``h_n = blake2b(h_{n-1} ‖ body_n)`` where ``body_n`` is the line
without its ``,"h":"…"`` suffix and ``h_0`` is seeded by nothing. An edited, removed,
inserted or reordered line breaks the chain at that line; ``k3tui verify`` names it.

Why it is shaped this way:

- The caller never waits on the disk: :meth:`Recorder.emit` redacts, stamps and queues;
  one writer thread takes *everything* queued, encodes it, seals it and hands it to the
  OS in one ``write``. Under load batches grow by themselves; when idle each event is
  written as soon as the thread wakes — far inside the 200 ms the architecture promises,
  and at once for significant events.
- The file is unbuffered (``FileIO``): the writer knows exactly which bytes reached the
  OS, so a partial write (disk full half-way through a batch) resumes at the right byte
  and nothing is written twice. A ``kill -9`` loses nothing the OS accepted; at most the
  last line is cut.
- Lines are sealed (chained) only when they are about to be written. A write error
  (disk full, I/O error) *suspends* recording: events wait in memory, unsealed, and a
  :class:`~k3tui.events.Notice` tells the operator. Writing resumes by itself when the
  disk accepts data again. If memory runs out first the oldest waiting events are
  dropped *before* they are sealed — the chain stays valid and a Notice in the file says
  how many were dropped.
- If the file is deleted while recording, its contents are still reachable through the
  open descriptor: the recorder writes them back to the same path and carries on.

Beside the file the recorder keeps ``FILE.idx``: event number, byte offset, time and the
largest time seen before that event, every ``INDEX_EVERY`` events, ``INDEX_BYTES`` bytes or
``INDEX_SECONDS`` of session time, whichever comes first, so a reader can seek into a 1 GB recording in milliseconds.
"""

from __future__ import annotations

import atexit
import fcntl
import hashlib
import os
import queue
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import msgspec

from . import __version__
from .errors import RecordingError
from .events import Event, Header, KnownEvent, Notice, Opaque, Output, Seal, kind_of
from .redact import Redactor

DIGEST_BYTES = 12
DIGEST_HEX = DIGEST_BYTES * 2
_SUFFIX_LEN = len(',"h":""}') + DIGEST_HEX
FLUSH_INTERVAL = 0.2
"""Longest time an event waits in the queue (the writer wakes at least this often)."""
RETRY_INTERVAL = 1.0
"""While suspended, how often the writer tries the disk again."""
CLOSE_GRACE = 3.0
"""On close while suspended, how long to keep retrying before saving a rescue copy."""
RESCUE_DIR: str | None = None
"""Where a rescue copy goes (None: the system's temporary directory)."""
STAT_INTERVAL = 1.0
"""How often the writer checks that its file still exists (deleted → restored)."""
INDEX_EVERY = 2000
INDEX_BYTES = 256 * 1024
INDEX_SECONDS = 5.0
MAX_HELD_BYTES = 256 * 1024 * 1024
"""Events held in memory while the disk refuses writes, before the oldest are dropped."""
MAX_BATCH_BYTES = 4 * 1024 * 1024
MAX_BATCH_EVENTS = 2000
"""Events the writer takes in one batch: a batch is written before the next is taken."""
MAX_QUEUED = 2000
"""Events waiting for the writer before ``emit()`` waits for it (back-pressure). At the writer's
speed (~25,000 events/s measured by bench_record) that is ~80 ms: with one batch in hand, what
a ``kill -9`` can lose stays under the 200 ms the architecture promises. Never while the disk
refuses writes (events are then held in memory by design)."""
MAX_QUEUED_BYTES = 8 * 1024 * 1024
"""Output text waiting for the writer before ``emit()`` waits for it: the count alone let 2,000 large
chunks (gigabytes, seconds of writing) sit unwritten. At the recorded path's ~74 MB/s (bench_stream)
8 MiB is ~110 ms, so with one batch in hand a ``kill -9`` still loses less than the 200 ms promised."""
BACKPRESSURE_WAIT = 1.0
"""Longest one ``emit()`` waits for room (a stuck writer must not hang the session)."""
MAX_TEXT = 4 * 1024 * 1024
"""Output longer than this is split into several events (readers cap line length)."""

_encoder = msgspec.json.Encoder()
_check_decoder = msgspec.json.Decoder(KnownEvent)
_OPAQUE_OWN = frozenset({"kind", "t", "host", "h"})


def chain(prev: bytes, body: bytes) -> bytes:
    """The digest of a line body, chained to the previous line's digest (hex bytes)."""
    h = hashlib.blake2b(prev, digest_size=DIGEST_BYTES)
    h.update(body)  # not prev + body: a copy of every body (hashlib drops the GIL for big ones)
    return h.hexdigest().encode()


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
        fields = {k: v for k, v in event.data.items() if k not in _OPAQUE_OWN}
        return _encoder.encode({"kind": event.kind, "t": event.t, "host": event.host, **fields})
    return _encoder.encode(event)


def encode_safely(item: Any) -> bytes:
    """Encode an event so that it reads back: never raises, never writes an unreadable line.

    ``NaN``/``inf`` (JSON has neither: they would become ``null`` and the line would not
    decode), lone surrogates from badly decoded remote output, and objects JSON cannot hold
    are repaired; an event beyond repair becomes a Notice saying so.
    """
    try:
        if (
            type(item) is Output
            and type(item.t) is float
            and item.t - item.t == 0
            and type(item.text) is str
            and type(item.id) is str
            and type(item.stream) is str
            and type(item.host) is str
        ):
            # The bulk of a recording. Its only float is t (finite here) and its other fields
            # are strings, so a "null" in the body is log text, not a NaN: no read-back (which
            # decoded every 64 KiB chunk holding a "null" again, twice the cost of encoding).
            return _encoder.encode(item)
        body = encode_event(item)
        if b"null" not in body or _reads_back(item, body):
            return body
    except (TypeError, ValueError, OverflowError, RecursionError):
        pass
    try:
        fixed = _repair(msgspec.to_builtins(item, enc_hook=repr, str_keys=True))
        if isinstance(item, Opaque):
            fixed = {
                "kind": item.kind,
                "t": fixed.get("t", 0.0),
                "host": fixed.get("host", ""),
                **fixed.get("data", {}),
            }
        body = _encoder.encode(fixed)
        if _reads_back(item, body):
            return body
        why = "it does not match the schema"
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        why = str(exc)[:200]
    t = getattr(item, "t", 0.0)
    t = t if isinstance(t, float) and t - t == 0 else 0.0
    msg = f"an event of kind {kind_of(item)} could not be recorded: {why}"
    return _encoder.encode(Notice(t=t, host=getattr(item, "host", ""), level="error", message=msg))


def _reads_back(item: Any, body: bytes) -> bool:
    if isinstance(item, Opaque):
        return True
    try:
        _check_decoder.decode(body)
        return True
    except (msgspec.DecodeError, RecursionError):
        return False


def _repair(v: Any) -> Any:
    if isinstance(v, str):
        return v.encode("utf-8", "replace").decode("utf-8")
    if isinstance(v, float):
        return v if v - v == 0 else 0.0
    if isinstance(v, dict):
        return {_repair(str(k)): _repair(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_repair(x) for x in v]
    return v


def _open_exclusive(path: str) -> IO[bytes]:
    # unbuffered and readable: exact byte accounting, and a way back if the file is deleted
    fh = open(path, "x+b", buffering=0)  # noqa: SIM115 - the recorder owns the handle
    try:  # issue 21: held while recording; the kernel drops it when the recorder dies (k3tui.follow)
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
    except OSError:
        pass  # a filesystem without locks: followers end only on the seal
    return fh


class Recorder:
    """Appends events to a session file without ever blocking the caller on I/O.

    Args:
        path: the ``.k3rec`` file to create (it must not exist).
        header: the header; ``session_id``, ``started`` and ``k3tui_version`` are filled in.
        redactor: applied to every event before it is written or shown.
        opener: how to open the file (tests inject faults here). It may return a raw
            file (``write`` returns the count written, maybe partial) or a buffered one.
        index: whether to keep the ``.idx`` seek sidecar.

    Raises:
        RecordingError: the file exists already or cannot be created.
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
        self.header = _complete_header(header or Header())
        self._t0 = time.monotonic()
        self._observers: list[Callable[[Any], None]] = []
        self._q: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.suspended = False
        """True while the disk refuses writes (events wait in memory)."""
        self.error: str | None = None
        self.events_written = 0
        self.events_emitted = 0
        self.events_dropped = 0
        self.closed = False
        self.notices: list[Notice] = []
        """Every notice about the recording itself (suspended, resumed, restored …)."""
        self.rescued: Path | None = None
        """Where a complete copy went when the recording could not be finished in place."""
        self.sealed: tuple[int, int, bytes] | None = None
        """(events, file size, digest of the seal line) once the closing seal is on disk."""
        self._lock = threading.Lock()
        self._queued_bytes = 0
        """Output text queued and not yet taken by the writer (bounded by MAX_QUEUED_BYTES)."""
        self._room = threading.Condition()
        """Notified by the writer after each batch: a producer waiting for room goes on."""
        self._fh = self._create(opener or _open_exclusive)
        self._index_fh = self._open_index() if index else None
        self._thread = threading.Thread(target=self._writer, name=f"k3rec-writer:{self.path.name}", daemon=True)
        self._q.put(self.header)
        self._thread.start()
        _OPEN.add(self)

    def _create(self, opener: Callable[[str], IO[bytes]]) -> IO[bytes]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RecordingError(f"cannot create {self.path}: {self.path.parent}: {exc.strerror or exc}") from None
        try:
            return opener(str(self.path))
        except FileExistsError:
            raise RecordingError(
                f"{self.path} already exists: choose another name, k3tui never overwrites a recording"
            ) from None
        except OSError as exc:
            raise RecordingError(f"cannot create {self.path}: {exc.strerror or exc}") from None

    def _open_index(self) -> IO[bytes] | None:
        try:
            return open(str(self.path) + ".idx", "wb", buffering=0)  # noqa: SIM115
        except OSError:
            return None  # the reader rebuilds a missing index by one scan

    # --- the caller's side ------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.header.session_id

    def now(self) -> float:
        """Seconds since the session started (monotonic)."""
        return time.monotonic() - self._t0

    def subscribe(self, observer: Callable[[Any], None]) -> None:
        """Call ``observer(event)`` with every redacted event, in order, on the emitting thread.

        Notices about the recording itself come from the writer thread, and the ones raised
        before this call (a full disk at start) are delivered at once, so none is missed.
        """
        with self._lock:
            self._observers.append(observer)
            earlier = list(self.notices)
        for n in earlier:
            observer(n)

    def emit(self, event: Event) -> Event:
        """Redact, time-stamp and queue an event; returns the event as recorded.

        Raises:
            RecordingError: the recorder was closed.
        """
        if self.closed:
            raise RecordingError(f"recording {self.path} is closed")
        recorded = self.redactor.event(event)
        if not recorded.t:
            t = round(time.monotonic() - self._t0, 6)
            if recorded is event:  # never stamp the caller's object: it may be emitted again
                recorded = msgspec.structs.replace(event, t=t)
            else:
                recorded.t = t
        if isinstance(recorded, Output) and len(recorded.text) > MAX_TEXT:
            pieces = [
                msgspec.structs.replace(recorded, text=recorded.text[i : i + MAX_TEXT])
                for i in range(0, len(recorded.text), MAX_TEXT)
            ]  # split after redaction, so no secret is cut in two before it is recognised
        else:
            pieces = [recorded]
        for piece in pieces:
            self.events_emitted += 1
            if isinstance(piece, Output):
                with self._lock:
                    self._queued_bytes += len(piece.text)
            self._q.put(piece)
            for obs in self._observers:
                obs(piece)
        if (self._q.qsize() > MAX_QUEUED or self._queued_bytes > MAX_QUEUED_BYTES) and not self.suspended:
            self._wait_for_room()
        return pieces[-1]

    def _wait_for_room(self) -> None:
        """Back-pressure: a producer faster than the disk waits here, so little is ever unwritten."""
        with self._room:
            self._room.wait_for(
                lambda: (
                    (self._q.qsize() <= MAX_QUEUED and self._queued_bytes <= MAX_QUEUED_BYTES)
                    or self.suspended
                    or not self._thread.is_alive()
                ),
                BACKPRESSURE_WAIT,
            )

    def close(self, timeout: float = 10.0) -> None:
        """Write everything queued, flush, sync and close. Safe to call twice."""
        if self.closed:
            return
        self.closed = True
        self._q.put(None)
        self._thread.join(timeout)
        _OPEN.discard(self)

    @property
    def failure(self) -> str | None:
        """After :meth:`close`: why the recording is not complete where it was asked for (None: it is).

        Headless commands raise it (one line on stderr, exit non-zero): a full disk used to
        end ``connect --record`` with exit 0 while a rescue copy went elsewhere without a word.
        """
        if self.rescued is not None:
            return (
                f"recording could not be finished on {self.path} ({self.error}): "
                f"the complete recording was saved to {self.rescued}"
            )
        lost = self.events_dropped + (self.events_emitted + 1 - self.events_written if self.closed else 0)
        if self.suspended or self.events_dropped or (self.error and lost > 0):
            return f"recording {self.path} is INCOMPLETE ({self.error or 'write error'}): {max(lost, 0)} events not written"
        return None

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the writer thread ---------------------------------------------------------------

    def _writer(self) -> None:
        w = _WriterState()
        done = False
        while not done:
            items = self._take(w)
            done = bool(items) and items[-1] is None
            try:
                self._step(w, items, done)
            except Exception as exc:  # noqa: BLE001 - the writer must outlive any bug: the session goes on
                self._notify("error", f"recorder internal error ({type(exc).__name__}: {exc}); recording continues")
            if items:
                with self._room:
                    self._room.notify_all()
        self._finish(w)
        with self._room:
            self._room.notify_all()

    def _step(self, w: _WriterState, items: list[Any], done: bool) -> None:
        for item in items:
            if item is not None:
                w.hold(item)
        self._trim(w)
        now = time.monotonic()
        if self.suspended and not done and now - w.last_try < RETRY_INTERVAL:
            return
        self._write(w, now)
        if now - w.stat_check > STAT_INTERVAL and not self.suspended:
            w.stat_check = now
            self._check_still_there()

    def _take(self, w: _WriterState) -> list[Any]:
        """Block for the first item (bounded), then drain whatever else is queued."""
        wait = RETRY_INTERVAL / 4 if self.suspended else FLUSH_INTERVAL
        try:
            items = [self._q.get(timeout=wait)]
        except queue.Empty:
            return []
        size = len(items[0].text) if isinstance(items[0], Output) else 0
        while items[-1] is not None and size < MAX_BATCH_BYTES and len(items) < MAX_BATCH_EVENTS:
            try:
                item = self._q.get_nowait()
            except queue.Empty:
                break
            items.append(item)
            size += len(item.text) if isinstance(item, Output) else 200
        taken = sum(len(i.text) for i in items if isinstance(i, Output))
        with self._lock:
            self._queued_bytes -= taken
        return items

    def _trim(self, w: _WriterState) -> None:
        """While suspended, keep the held events under MAX_HELD_BYTES by dropping the oldest."""
        dropped = 0
        first = 1 if w.held and w.held[0][1] is None else 0  # never the header: the file needs it
        while w.held_bytes > MAX_HELD_BYTES and len(w.held) > first + 1:
            body, _ = w.held[first]
            del w.held[first]
            w.held_bytes -= len(body)
            dropped += 1
        if dropped:
            w.dropped += dropped
            self.events_dropped += dropped

    def _write(self, w: _WriterState, now: float) -> None:
        """Seal what is held and hand it to the OS; on error, suspend (nothing is lost)."""
        w.last_try = now
        try:
            self._drain_out(w)
            if w.dropped:
                w.hold(
                    self._notice(
                        "error", f"{w.dropped} events were DROPPED while the disk refused writes (memory limit)"
                    )
                )
                w.dropped = 0
            while w.held:
                w.seal_batch(MAX_BATCH_BYTES)
                self._drain_out(w)
            self._write_index(w)
        except OSError as exc:
            self._suspend(exc)
            return
        if self.suspended:
            self.suspended = False
            self.error = None
            lost = f" ({self.events_dropped} events dropped)" if self.events_dropped else " — nothing was lost"
            self._notify("info", f"recording resumed: {self.path}{lost}")

    def _drain_out(self, w: _WriterState) -> None:
        while w.out:
            n = self._fh.write(w.out)
            n = len(w.out) if n is None else n
            if n <= 0:
                raise OSError(28, "the file accepted no data")
            del w.out[:n]
            self.events_written += w.written_lines(n)
        if hasattr(self._fh, "flush"):
            self._fh.flush()

    def _write_index(self, w: _WriterState) -> None:
        if self._index_fh is None or not w.index_lines:
            w.index_lines.clear()
            return
        try:
            self._index_fh.write(b"".join(w.index_lines))
        except OSError:
            self._index_fh = None  # a lost index is rebuilt by the reader; the recording matters
        w.index_lines.clear()

    def _finish(self, w: _WriterState) -> None:
        end = time.monotonic() + CLOSE_GRACE
        while self.suspended:
            self._drain_queue(w, write=False)
            self._write(w, time.monotonic())
            if not self.suspended or time.monotonic() >= end:
                break
            time.sleep(RETRY_INTERVAL)
        if self.suspended:
            self._rescue(w)
        self._restore_if_deleted(final=True)
        self._drain_queue(w)
        if not self.suspended and self.rescued is None and not w.held and not w.out:
            self._seal(w)
        try:
            if not self.suspended and hasattr(self._fh, "fileno"):
                os.fsync(self._fh.fileno())
        except (OSError, ValueError):
            pass
        for fh in (self._fh, self._index_fh):
            try:
                if fh is not None:
                    fh.close()
            except OSError:
                pass
        if (w.held or w.out) and self.rescued is None:
            self._notify(
                "error", f"recording closed with {len(w.held) + w.pending_lines()} events NOT written: {self.error}"
            )

    def _seal(self, w: _WriterState) -> None:
        """The last line: the event count and the digest before it, so a cut end shows (issue 16).

        Also noted in the ``.idx`` (``seal EVENTS SIZE DIGEST``): a file cut to before its seal
        while the sidecar stays is then named as cut, not merely as not closed.
        """
        w.hold_seal(round(self.now(), 6))
        self._write(w, time.monotonic())
        if w.sealed is None or self.suspended:
            return
        self.sealed = w.sealed
        events, size, digest = w.sealed
        if self._index_fh is not None:
            try:
                self._index_fh.write(b"seal %d %d %s\n" % (events, size, digest))
            except OSError:
                pass

    def _drain_queue(self, w: _WriterState, write: bool = True) -> None:
        """Take the notices raised while finishing (restored file, resumed …), and write them."""
        while True:
            try:
                item = self._q.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                if isinstance(item, Output):
                    with self._lock:
                        self._queued_bytes -= len(item.text)
                w.hold(item)
        if write and w.held and not self.suspended:
            self._write(w, time.monotonic())

    def _rescue(self, w: _WriterState) -> None:
        """The disk still refuses at close: save a complete, verifiable copy somewhere else."""
        import tempfile

        target = Path(RESCUE_DIR or tempfile.gettempdir()) / f"{self.path.stem}.rescued-{self.session_id}.k3rec"
        on_disk = w.offset - len(w.out)
        w.hold_seal(round(self.now(), 6))  # the copy is complete: it ends with its seal
        try:
            with open(target, "xb") as out:
                if on_disk:
                    _copy_fd(self._fh.fileno(), out.fileno(), on_disk)
                while True:
                    out.write(w.out)
                    w.out.clear()
                    if not w.held:
                        break
                    w.seal_batch(MAX_BATCH_BYTES)
        except (OSError, ValueError, AttributeError, TypeError) as exc:
            why = getattr(exc, "strerror", None) or str(exc)
            self._notify("error", f"recording could not be finished and no rescue copy could be saved: {why}")
            return
        w.line_ends.clear()
        self.rescued = target
        self._notify(
            "error",
            f"recording could not be finished on {self.path} ({self.error}): a complete copy was saved to {target}",
        )

    # --- file removed -------------------------------------------------------------------

    def _check_still_there(self) -> None:
        try:
            fst = os.fstat(self._fh.fileno())
        except (OSError, ValueError, AttributeError, TypeError):
            return  # an injected file object without a descriptor
        if fst.st_nlink == 0:
            self._restore_if_deleted(final=False)
            return
        try:
            st = os.stat(self.path)
            moved = (st.st_ino, st.st_dev) != (fst.st_ino, fst.st_dev)
        except OSError:
            moved = True
        if moved and not getattr(self, "_moved_told", False):
            self._moved_told = True
            self._notify(
                "error", f"recording file {self.path} was moved or replaced; events still go to the moved file"
            )

    def _restore_if_deleted(self, final: bool) -> None:
        """The file was unlinked: write its contents (still open) back to the same path."""
        try:
            fd = self._fh.fileno()
            if os.fstat(fd).st_nlink != 0:
                return
        except (OSError, ValueError, AttributeError, TypeError):
            return
        try:
            new = _open_exclusive(str(self.path))
        except OSError as exc:
            if not getattr(self, "_restore_told", False) or final:
                self._restore_told = True
                self._notify(
                    "error",
                    f"recording file {self.path} was DELETED and cannot be recreated ({exc.strerror}); events still go to the open file",
                )
            return
        try:
            _copy_fd(fd, new.fileno())
        except OSError as exc:
            new.close()
            self._notify("error", f"recording file {self.path} was DELETED; restoring it failed: {exc.strerror}")
            return
        old, self._fh = self._fh, new
        old.close()
        self._notify("error", f"recording file {self.path} was deleted while recording: restored it, nothing was lost")

    # --- telling the operator -------------------------------------------------------------

    def _suspend(self, exc: BaseException) -> None:
        why = getattr(exc, "strerror", None) or str(exc)
        if not self.suspended:
            self.suspended = True
            self.error = why
            self._notify(
                "error",
                f"recording SUSPENDED: cannot write {self.path}: {why}. "
                f"Events are held in memory and written when the disk accepts them",
            )

    def _notice(self, level: str, message: str) -> Notice:
        return Notice(t=round(self.now(), 6), level=level, message=message)

    def _notify(self, level: str, message: str) -> None:
        """Tell observers something about the recording itself, and keep it in the file.

        Called on the writer thread: observers must be thread-safe (the TUI posts a message).
        """
        event = self._notice(level, message)
        self._q.put(event)  # recorded once the disk accepts data (the writer drains the queue)
        with self._lock:
            self.notices.append(event)
            observers = list(self._observers)
        for obs in observers:
            try:
                obs(event)
            except Exception:  # noqa: BLE001 - an observer must never kill the writer
                pass


class _WriterState:
    """What the writer thread owns: held bodies, sealed-but-unwritten bytes, chain, index."""

    def __init__(self) -> None:
        self.held: deque[tuple[bytes, float | None]] = deque()
        """Encoded, not yet sealed: (body, t) — t is None for the header."""
        self.held_bytes = 0
        self.out = bytearray()
        """Sealed bytes the OS has not accepted yet."""
        self.line_ends: deque[int] = deque()
        """Cumulative end offsets (relative to ``out``'s start) of the lines in ``out``."""
        self.out_base = 0
        self.prev = b""
        self.offset = 0
        """File offset of the next sealed line."""
        self.n = -1  # the header is event -1
        self.max_t = float("-inf")
        self.last_index_t = float("-inf")
        self.last_index_n = 0
        self.last_index_offset = 0
        self.index_lines: list[bytes] = []
        self.dropped = 0
        self.sealed: tuple[int, int, bytes] | None = None
        """(events before the seal, file size after it, its digest) once the seal line is built."""
        self.last_try = 0.0
        self.stat_check = time.monotonic()

    def hold_seal(self, t: float) -> None:
        """Hold the closing seal; its body is built when it is sealed (count and digest known then)."""
        self.held.append((_SEAL_BODY, t))
        self.held_bytes += len(_SEAL_BODY)

    def hold(self, item: Any) -> None:
        body = _encoder.encode(item) if isinstance(item, Header) else encode_safely(item)
        t = None if isinstance(item, Header) else item.t
        if t is not None and not (isinstance(t, (int, float)) and t - t == 0):
            t = 0.0  # NaN/inf time: written as 0.0 by encode_safely
        self.held.append((body, t))
        self.held_bytes += len(body)

    def seal_batch(self, limit: int) -> None:
        size = 0
        out = self.out
        start = len(out)
        prev = self.prev
        while self.held and size < limit:
            body, t = self.held.popleft()
            self.held_bytes -= len(body)
            if body is _SEAL_BODY:
                body = _encoder.encode(Seal(t=t or 0.0, events=self.n + 1, last=prev.decode()))
            prev = chain(prev, body)
            if t is not None:
                self._index(t, self.offset + size)
            # the line is seal(prev, body), built in place: one copy of the body, not three
            out += memoryview(body)[:-1]
            out += b',"h":"'
            out += prev
            out += b'"}\n'
            size = len(out) - start
            self.line_ends.append(self.out_base + len(out))
            if body[:15] == b'{"kind":"seal",' and t is not None and self.n >= 0:
                self.sealed = (self.n, self.offset + size, prev)  # the seal is event n: n events before it
        self.prev = prev
        self.offset += size

    def _index(self, t: float, offset: int) -> None:
        self.n += 1
        if (
            self.n == 0
            or self.n - self.last_index_n >= INDEX_EVERY
            or offset - self.last_index_offset >= INDEX_BYTES
            or t - self.last_index_t >= INDEX_SECONDS
        ):
            self.last_index_t, self.last_index_n, self.last_index_offset = t, self.n, offset
            self.index_lines.append(b"%d %d %r %r\n" % (self.n, offset, t, self.max_t))
        if t > self.max_t:
            self.max_t = t

    def written_lines(self, n: int) -> int:
        """Account for ``n`` bytes accepted by the OS; returns how many lines completed."""
        self.out_base += n
        done = 0
        while self.line_ends and self.line_ends[0] <= self.out_base:
            self.line_ends.popleft()
            done += 1
        if not self.out:
            self.out_base = 0
            self.line_ends.clear()
        return done

    def pending_lines(self) -> int:
        return len(self.line_ends)


_SEAL_BODY = bytes(bytearray(b"{}"))
"""Held in place of the seal's body (compared by identity): built at sealing time."""

_OPEN: weakref.WeakSet[Recorder] = weakref.WeakSet()


@atexit.register
def _close_open_recorders() -> None:
    """The writer is a daemon thread: at exit, finish every recording nobody closed.

    An exception that ends the program, ``sys.exit`` in a hurry, or SIGTERM/SIGHUP turned
    into SystemExit by the CLI all reach here; what was emitted is written, not lost.
    """
    for rec in list(_OPEN):
        try:
            rec.close(timeout=5.0)
        except Exception:  # noqa: BLE001 - at exit, one failure must not stop the others
            pass


def _complete_header(h: Header) -> Header:
    h.session_id = h.session_id or uuid.uuid4().hex[:12]
    h.started = h.started or time.time()
    h.k3tui_version = h.k3tui_version or __version__
    return h


def _copy_fd(src: int, dst: int, size: int | None = None) -> None:
    size = os.fstat(src).st_size if size is None else size
    pos = 0
    while pos < size:
        data = os.pread(src, min(8 << 20, size - pos), pos)
        if not data:
            break
        view = memoryview(data)
        while view:
            k = os.write(dst, view)
            view = view[k:]
        pos += len(data)

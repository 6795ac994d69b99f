"""Following a session file while it is recorded (issue 21): locally or over SSH, read-only.

A lead watching an incident, or the next shift catching up, reads the on-call engineer's
``.k3rec`` as it grows. Nothing is ever sent to the session's hosts: the follower only reads
bytes of one file.

Shape, and why:

- **Byte offsets, whole lines.** :class:`Tail` is fed raw bytes and keeps a partial last line
  until its newline arrives; :attr:`Tail.offset` counts only bytes of complete lines, so a
  follower that loses its source (an SSH connection killed, a poll that read half a line)
  resumes from exactly there: no event lost, none twice.
- **The chain as events arrive.** Every complete line goes through the same
  :class:`~k3tui.reader.ChainCheck` the other readers use (issue 16); the first break is
  reported at once as a :class:`Broken` item, and what follows it is unproven.
- **The end is known, not guessed.** A closed session ends with its seal (:class:`Ended`,
  ``sealed``). The recorder holds an ``flock`` on its file while it writes, and the kernel
  drops it when the recorder dies, so "no seal, and nobody holds the file" is a recorder
  killed or crashed (:class:`Ended`, not sealed), checked only after a last read of the file.
- Local files are polled every :data:`POLL` seconds (no inotify: works on every filesystem);
  remote ones stream through ``tail -c +N -f`` on one SSH channel, with the same host-key
  rules as ``connect`` (:mod:`k3tui.remote.ssh`), and ``flock -n -s`` tells whether the
  recorder still holds the file.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import re
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from .errors import RecordingError
from .events import AnyEvent, Header, Seal
from .reader import MAX_HEADER, MAX_LINE, ChainCheck, _open_regular, _parse_header, decode_event
from .recording import unseal
from .replay import Replay

POLL = 0.05
"""Seconds between two reads of a local file that did not grow (the brief: at most 200 ms)."""
ALIVE_EVERY = 1.0
"""Seconds of silence after which the follower asks whether the recorder still holds the file."""
READ = 1 << 20
RESUME_BACKOFF = (0.2, 0.5, 1.0, 2.0, 4.0)


@dataclass(frozen=True)
class Arrived:
    """One event, as it arrived: its line number and the byte offset of its line."""

    event: AnyEvent
    line: int
    offset: int
    end: int = 0
    """Byte offset just past the line (where the next one starts)."""


@dataclass(frozen=True)
class Broken:
    """The chain broke (tampering): said once, at once; everything after is unproven."""

    line: int
    message: str


@dataclass(frozen=True)
class Note:
    """Something the follower wants the user to know (a resume, a skipped line)."""

    message: str


@dataclass(frozen=True)
class CaughtUp:
    """Every byte that existed when following started has been read."""

    events: int


@dataclass(frozen=True)
class Ended:
    """The recording ended: ``sealed`` (the session closed) or the recorder stopped without closing."""

    sealed: bool
    events: int
    message: str


Item = Arrived | Broken | Note | CaughtUp | Ended


class Tail:
    """The sans-IO core: feed bytes in file order, get events and verdicts.

    Args:
        where: how to name the file in messages.
    """

    def __init__(self, where: str) -> None:
        self.where = where
        self.offset = 0
        """Bytes of complete lines consumed: the resume point."""
        self.header: Header | None = None
        self.line_no = 0
        self.events = 0
        self.check: ChainCheck | None = None
        self.sealed = False
        self.broken: Broken | None = None
        self._buf = bytearray()

    @property
    def pending(self) -> int:
        """Bytes of a partial last line held until its newline arrives."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[Item]:
        """Consume bytes that follow :attr:`offset` + :attr:`pending`.

        Raises:
            RecordingError: the file does not start with a k3rec header.
        """
        self._buf += data
        out: list[Item] = []
        start = 0
        while (nl := self._buf.find(b"\n", start)) >= 0:
            line = bytes(self._buf[start:nl])
            off = self.offset
            self.offset += nl + 1 - start
            start = nl + 1
            self._line(line, off, out)
        del self._buf[:start]
        limit = MAX_HEADER if self.header is None else MAX_LINE
        if len(self._buf) > limit:
            raise RecordingError(f"{self.where}: a line longer than {limit >> 20} MB: not a k3rec session file")
        return out

    def rewind(self) -> None:
        """Forget the partial line (the source restarts at :attr:`offset`)."""
        self._buf.clear()

    def _line(self, line: bytes, off: int, out: list[Item]) -> None:
        self.line_no += 1
        n = self.line_no
        if self.header is None:
            self.header = _parse_header(Path(self.where), line + b"\n")
            self.check = ChainCheck(line)
            return
        assert self.check is not None
        why = self.check.feed(n, line, True)
        if why is not None:
            self.broken = Broken(n, f"{self.where}: TAMPERED at line {n}: {why}")
            out.append(self.broken)
        if not line.strip():
            return
        parts = unseal(line)
        try:
            ev = decode_event(parts[0] if parts else line)
        except (msgspec.DecodeError, ValueError, TypeError):
            out.append(Note(f"line {n} is corrupt and was skipped"))
            return
        if type(ev) is Seal:
            self.sealed = self.check.seal_line is not None
            return
        self.events += 1
        out.append(Arrived(ev, n, off, self.offset))

    def end(self, writer_alive: bool | None) -> Ended | None:
        """The recording's end once nothing more arrived, or None while it may still grow."""
        if self.sealed:
            verdict = "chain verified" if self.broken is None else "but the chain broke before it"
            return Ended(True, self.events, f"session closed: sealed after {self.events} events, {verdict}")
        if writer_alive is not False or self.header is None:
            return None
        if self.broken is not None:
            return Ended(
                False,
                self.events,
                f"the recording ended (nobody writes it any more) after {self.events} events; its chain broke "
                f"at line {self.broken.line}: nothing from there on is proven",
            )
        cut = f"; its last line was cut ({self.pending} bytes)" if self.pending else ""
        return Ended(
            False,
            self.events,
            f"the recorder stopped without closing the session (killed or crashed) after {self.events} events"
            f"{cut}: the end cannot be proven",
        )


# --- sources ---------------------------------------------------------------------------------


class LocalSource:
    """A local file, polled every :data:`POLL` seconds."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.where = str(path)
        _open_regular(self.path).close()  # a clear error now (missing, a FIFO, a directory)

    def size(self) -> int:
        return self.path.stat().st_size

    async def chunks(self, offset: int) -> AsyncIterator[bytes]:
        """Bytes from ``offset`` on, as they are written; ``b""`` when nothing new came for a poll."""
        with _open_regular(self.path) as fh:
            fh.seek(offset)
            while True:
                data = fh.read(READ)
                yield data
                if not data:
                    await asyncio.sleep(POLL)

    async def writer_alive(self) -> bool | None:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return None
        finally:
            os.close(fd)
        return False

    async def close(self) -> None:
        return None


class SshSource:
    """A file on another host: ``tail -c +N -f`` over one SSH channel, resumed after a drop.

    ``host`` is an open :class:`~k3tui.remote.ssh.SshHost` (it reconnects by itself on the next
    channel); only ``tail``, ``wc`` and ``flock`` are run, all of them read-only.
    """

    def __init__(self, host: Any, path: str) -> None:
        self.host = host
        self.path = path
        self.where = f"{host.alias}:{path}"
        self.resumes = 0
        self._proc: Any = None

    async def size(self) -> int:
        res = await self.host.run_quiet(f"wc -c < {shlex.quote(self.path)}", timeout=30)
        if not res.ok:
            why = (res.stderr or res.error).strip().splitlines()
            raise RecordingError(f"{self.where}: cannot read: {why[-1] if why else 'wc failed'}")
        return int(res.stdout.strip() or 0)

    async def chunks(self, offset: int) -> AsyncIterator[bytes]:
        cmd = f"exec tail -c +{offset + 1} -f {shlex.quote(self.path)}"
        self._proc = await self.host._spawn(cmd, None)
        try:
            while True:
                try:
                    data = await asyncio.wait_for(self._proc.read_out(READ), ALIVE_EVERY)
                except TimeoutError:
                    yield b""
                    continue
                except Exception as exc:
                    if not self.host._is_lost(exc):
                        raise
                    return  # the connection dropped: the caller resumes from its offset
                if not data:
                    return  # the channel ended: the caller resumes from its offset
                yield data
        finally:
            await self._stop()

    async def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.kill()
            await asyncio.wait_for(proc.close(), 2.0)
        except (Exception, asyncio.CancelledError):  # noqa: BLE001 - a dead channel closes by itself
            pass

    async def writer_alive(self) -> bool | None:
        q = shlex.quote(self.path)
        # the file as stdin: flock never creates it (``flock PATH`` would, and a follower writes nothing)
        res = await self.host.run_quiet(f"test -f {q} || exit 3; flock -n -s 0 < {q}", timeout=10)
        if res.status == 0:
            return False
        if res.status == 1:
            return True
        return None  # no flock on that host, the file is gone, or the check failed: only a seal ends it

    async def close(self) -> None:
        await self._stop()


# --- following -------------------------------------------------------------------------------


async def follow(source: Any, from_end: bool = False, tail: Tail | None = None) -> AsyncIterator[Item]:
    """Every item of a recording as it is written, until it ends (:class:`Ended` is last).

    With ``from_end`` the events that existed when following started are read and checked
    but not yielded (a :class:`CaughtUp` says how many).

    Raises:
        RecordingError: not a session file; HostError: the SSH connection cannot be re-established.
    """
    tail = tail or Tail(source.where)
    size = source.size()
    start_size = await size if asyncio.iscoroutine(size) else size
    caught_up = False
    quiet = 0.0
    attempt = 0
    while True:
        ended = False
        async for data in source.chunks(tail.offset + tail.pending):
            items = tail.feed(data) if data else []
            attempt = 0
            for item in items:
                if not (from_end and not caught_up and isinstance(item, Arrived)):
                    yield item
            if not caught_up and tail.offset + tail.pending >= start_size:
                caught_up = True
                yield CaughtUp(tail.events)
            if tail.sealed:
                ended = True
                break
            quiet = quiet + (POLL if isinstance(source, LocalSource) else ALIVE_EVERY) if not data else 0.0
            if quiet >= ALIVE_EVERY:
                quiet = 0.0
                if await source.writer_alive() is False:
                    ended = True  # read once more: the seal may have been written just before the close
                    break
        if ended:
            async for item in _last_read(source, tail):
                yield item
            end = tail.end(False if not tail.sealed else None)
            if end is not None:
                yield end
                return
            continue
        # the stream ended without a seal (the SSH channel dropped): resume at the last whole line
        tail.rewind()
        if isinstance(source, SshSource):
            source.resumes += 1
        await asyncio.sleep(RESUME_BACKOFF[min(attempt, len(RESUME_BACKOFF) - 1)])
        attempt += 1
        yield Note(f"{source.where}: the stream was cut; resuming at byte {tail.offset}")


async def _last_read(source: Any, tail: Tail) -> AsyncIterator[Item]:
    """What was written between the last read and the writer's end (the seal, a last batch)."""
    if tail.sealed:
        return
    tail.rewind()
    async for data in source.chunks(tail.offset):
        if not data:
            break
        for item in tail.feed(data):
            yield item
        if tail.sealed:
            break


_REMOTE = re.compile(r"(?P<target>[^/:]+(?::\d+)?|\[[^\]]+\](?::\d+)?):(?P<path>.+)")


def split_remote(spec: str) -> tuple[str, str] | None:
    """``[user@]host[:port]:PATH`` → (target, PATH); None for a local path (one that exists, or no ``host:``)."""
    if os.path.exists(spec):
        return None
    m = _REMOTE.fullmatch(spec)
    if m is None:
        return None
    return m["target"], m["path"]


# --- the replay screen's LIVE mode ----------------------------------------------------------------


class SpoolSource:
    """A remote source mirrored byte for byte into a local spool file (what the replay engine reads)."""

    def __init__(self, inner: Any, spool: Path) -> None:
        self.inner = inner
        self.where = inner.where
        self.spool = spool
        spool.write_bytes(b"")

    async def size(self) -> int:
        got = self.inner.size()
        return await got if asyncio.iscoroutine(got) else got  # type: ignore[no-any-return]

    async def chunks(self, offset: int) -> AsyncIterator[bytes]:
        with open(self.spool, "r+b") as fh:
            fh.truncate(offset)  # a resume starts at the last whole line: drop the partial one
            fh.seek(offset)
            async for data in self.inner.chunks(offset):
                if data:
                    fh.write(data)
                    fh.flush()
                yield data

    async def writer_alive(self) -> bool | None:
        return await self.inner.writer_alive()  # type: ignore[no-any-return]

    async def close(self) -> None:
        await self.inner.close()


class LiveReplay(Replay):
    """A :class:`~k3tui.replay.Replay` that grows as the follower reads: seek, step, markers and
    search work over everything that has arrived."""

    def _scan(self) -> None:  # nothing yet: every event comes through add(), the catch-up too
        return None

    def add(self, arrived: Arrived) -> None:
        i = self.count
        self._add(i, arrived.offset, arrived.event)
        self._ends.append(arrived.end)
        self._marker_index = [m.index for m in self.markers]


class LiveFollow:
    """What the replay screen's LIVE mode runs: open the source, build the engine, then batches.

    Args:
        opener: an async callable returning ``(source, host or None)``; run inside the UI's loop
            (an SSH connection belongs to the loop that made it).
        spool_dir: where a remote file's local mirror goes.
    """

    def __init__(self, opener: Callable[[], Awaitable[tuple[Any, Any]]], spool_dir: Path, from_end: bool = False):
        self.opener = opener
        self.spool_dir = spool_dir
        self.from_end = from_end
        self.engine: LiveReplay | None = None
        self.where = ""
        self.path: Path | None = None
        self._source: Any = None
        self._host: Any = None
        self._tail: Tail | None = None
        self._items: AsyncIterator[Item] | None = None
        self._first: list[Item] = []

    async def start(self) -> LiveReplay:
        """Connect (remote), read up to the header, and return the engine the screen shows.

        Raises:
            RecordingError, HostError: one line each, before the screen opens.
        """
        source, self._host = await self.opener()
        if isinstance(source, SshSource):
            self.spool_dir.mkdir(parents=True, exist_ok=True)
            source = SpoolSource(source, self.spool_dir / (Path(source.path).name or "live.k3rec"))
            self.path = source.spool
        else:
            self.path = source.path
        self._source, self.where = source, source.where
        self._tail = Tail(source.where)
        self._items = follow(source, False, self._tail)
        while self._tail.header is None:
            item = await anext(self._items)
            self._first.append(item)
            if isinstance(item, Ended):
                break
        self.engine = LiveReplay(self.path)
        return self.engine

    async def batches(self) -> AsyncIterator[list[Item]]:
        """Items as they arrive, a batch per read; events are already added to :attr:`engine`."""
        assert self._items is not None and self.engine is not None
        first, self._first = self._first, []
        for item in first:
            if isinstance(item, Arrived):
                self.engine.add(item)
        batch = first
        async for item in self._items:
            if isinstance(item, Arrived):
                self.engine.add(item)
            batch.append(item)
            if isinstance(item, (Ended, CaughtUp)) or self._tail is None or not self._tail.pending:
                yield batch
                batch = []
        if batch:
            yield batch

    async def close(self) -> None:
        if self._source is not None:
            await self._source.close()
        if self._host is not None:
            await self._host.close()

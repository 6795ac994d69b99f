"""What every transport shares: recorded commands, line streaming, detached runs.

A transport (SSH, local) only knows how to *spawn* a command and hand back its byte
streams (:class:`Proc`), whether a failure means the connection is gone, and how to get
it back. Everything above that — recording ``CommandSent``/``Output``/``CommandExited``,
splitting 64 KiB chunks into whole lines, the detached-run lifecycle and a tail that
resumes at a byte offset after a reconnect — lives here once.

Command ids are ``<alias>#<n>`` so they stay unique in a recording that spans a group of
hosts.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from typing import Any, Protocol

from ..errors import ConnectionLost, HostError
from ..events import CommandExited, CommandSent, Decision, Notice, Output, RunEnded, RunStarted
from ..redact import Redactor
from . import detached
from .base import Emit, RunHandle, RunResult
from .lines import LineSplitter, split

CHUNK = 64 * 1024
TAIL_POLL = 0.5
"""Seconds of silence on a tail before asking the host whether the run has ended."""
LAST_WRITERS_S = 10.0
"""Seconds the tail of a stopped run keeps reading after its exit is written while a process of its
group still lives: at a stop the run's own shell dies of TERM at once, while what it started (the
``docker run`` client, the server) is still printing its shutdown lines into the log. Bounded
(the stop's sweep KILLs what is left after a few seconds anyway)."""
MAX_TAIL_FAILURES = 20
"""Consecutive broken tails (without a line in between) before giving up."""


class Proc(Protocol):
    """One running command, as a transport hands it to :class:`BaseHost`."""

    async def read_out(self, n: int) -> bytes: ...

    async def read_err(self, n: int) -> bytes: ...

    async def wait(self) -> int | None: ...

    def kill(self) -> None: ...

    async def close(self) -> None: ...


class BaseHost:
    """Shared behaviour of every :class:`~k3tui.remote.base.Host` implementation."""

    simulated = False

    def __init__(self, alias: str, emit: Emit | None = None, redactor: Redactor | None = None) -> None:
        self.alias = alias
        self.role = ""
        """``head``/``worker`` in a deployment ("" when not known); recorded in ``HostConnected``."""
        self._emit_fn = emit
        self.redactor = redactor or Redactor.from_environment()
        self._ids = itertools.count(1)
        self._ended: set[str] = set()
        self._stopping: set[str] = set()
        """Runs :meth:`stop` signalled: their tails read on while a process of the run's group lives."""

    # --- what a transport provides -------------------------------------------------

    async def _spawn(self, command: str, stdin: bytes | None) -> Proc:
        raise NotImplementedError

    def _is_lost(self, exc: BaseException) -> bool:
        """Whether ``exc`` means the connection to the host is gone."""
        return isinstance(exc, (ConnectionError, EOFError))

    async def _recover(self, reason: str) -> None:
        """Get the connection back (or raise); the local transport has nothing to recover."""

    # --- recording -----------------------------------------------------------------

    def emit(self, event: Any) -> None:
        """Record an event tagged with this host (no-op without an ``emit``)."""
        if self._emit_fn is not None:
            event.host = event.host or self.alias
            self._emit_fn(event)

    def _new_id(self) -> str:
        return f"{self.alias}#{next(self._ids)}"

    # --- running commands ----------------------------------------------------------

    async def run(
        self, command: str, *, timeout: float = 30.0, purpose: str = "", stdin: str | None = None
    ) -> RunResult:
        """Run a command to completion, recorded; never raises for a failing command."""
        return await self._exec(command, timeout=timeout, purpose=purpose, stdin=stdin, record=True)

    async def run_quiet(self, command: str, *, timeout: float = 30.0, stdin: str | None = None) -> RunResult:
        """Run a command without recording it (internal polls: status, sizes)."""
        return await self._exec(command, timeout=timeout, purpose="", stdin=stdin, record=False)

    async def _exec(self, command: str, *, timeout: float, purpose: str, stdin: str | None, record: bool) -> RunResult:
        cid = self._new_id()
        if record:
            self.emit(CommandSent(id=cid, command=command, purpose=purpose))
        result = RunResult(command=command)
        t0 = time.monotonic()
        out: list[str] = []
        err: list[str] = []
        proc: Proc | None = None
        try:
            async with asyncio.timeout(timeout):
                proc = await self._spawn(command, stdin.encode() if stdin is not None else None)
                await asyncio.gather(
                    self._pump(proc.read_out, "stdout", cid, out, record),
                    self._pump(proc.read_err, "stderr", cid, err, record),
                )
                result.status = await proc.wait()
                if result.status is None:
                    result.error = "the command ended without an exit status (channel or connection closed)"
        except TimeoutError:
            result.timed_out = True
            result.error = f"timed out after {timeout:g}s"
        except HostError as exc:
            result.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - a probe must never abort a freeze
            result.error = f"connection lost: {exc}" if self._is_lost(exc) else f"{type(exc).__name__}: {exc}"
        finally:
            if proc is not None:
                if result.status is None:
                    proc.kill()
                await proc.close()
        result.stdout, result.stderr = "".join(out), "".join(err)
        result.duration = time.monotonic() - t0
        if record:
            self.emit(
                CommandExited(
                    id=cid, status=result.status, duration=result.duration, signal="timeout" if result.timed_out else ""
                )
            )
        return result

    async def _pump(self, read: Any, stream: str, cid: str, parts: list[str], record: bool) -> None:
        """Read one stream in chunks, keep its text, record it as whole lines."""
        sp = LineSplitter()
        while chunk := await read(CHUNK):
            text = sp.feed(chunk)
            if text:
                parts.append(text)
                if record:
                    self.emit(Output(id=cid, stream=stream, text=text))
        if rest := sp.flush():
            parts.append(rest)
            if record:
                self.emit(Output(id=cid, stream=stream, text=rest))

    async def stream(self, command: str, *, purpose: str = "", stdin: str | None = None) -> AsyncIterator[list[str]]:
        """Run a command and yield its stdout as batches of whole lines, recorded as it goes.

        stderr is recorded but not yielded. The exit status is recorded in ``CommandExited``.

        Raises:
            ConnectionLost: the connection dropped mid-stream (a stream is not resumable;
                use a detached run and :meth:`tail` for that).
        """
        cid = self._new_id()
        self.emit(CommandSent(id=cid, command=command, purpose=purpose))
        t0 = time.monotonic()
        try:
            proc = await self._spawn(command, stdin.encode() if stdin is not None else None)
        except Exception as exc:
            self.emit(CommandExited(id=cid, duration=time.monotonic() - t0, signal="failed"))
            raise self._as_host_error(exc, command) from exc
        err: list[str] = []
        err_task = asyncio.create_task(self._pump(proc.read_err, "stderr", cid, err, True))
        status: int | None = None
        try:
            sp = LineSplitter()
            while chunk := await proc.read_out(CHUNK):
                if text := sp.feed(chunk):
                    self.emit(Output(id=cid, text=text))
                    yield split(text)
            if rest := sp.flush():
                self.emit(Output(id=cid, text=rest))
                yield [rest]
            await err_task
            status = await proc.wait()
        except Exception as exc:
            raise self._as_host_error(exc, command) from exc
        finally:
            err_task.cancel()
            if status is None:
                proc.kill()
            await proc.close()
            self.emit(CommandExited(id=cid, status=status, duration=time.monotonic() - t0))

    def _as_host_error(self, exc: BaseException, command: str) -> BaseException:
        if isinstance(exc, HostError) or not self._is_lost(exc):
            return exc
        return ConnectionLost(f"{self.alias}: connection lost while running {command!r}: {exc or type(exc).__name__}")

    # --- detached runs -------------------------------------------------------------

    async def start_detached(
        self, command: str, *, run_id: str, env: dict[str, str] | None = None, cwd: str | None = None, rung: str = ""
    ) -> RunHandle:
        """Start ``command`` detached on the host (own session, log in a per-run dir).

        Raises:
            HostError: the run could not be started (the host's own message is included).
        """
        shown_env = self.redactor.env(env or {})
        shown_cmd = self.redactor.text(command)
        script = detached.launch_script(run_id, command, env=env, shown_command=shown_cmd, shown_env=shown_env, cwd=cwd)
        res = await self.run_quiet("sh -s", stdin=script, timeout=30.0)
        parts = res.stdout.split()
        if not res.ok or len(parts) != 3 or not parts[1].isdigit():
            why = (res.stderr.strip() or res.error or res.stdout.strip() or f"exit {res.status}").splitlines()[-1]
            raise HostError(f"{self.alias}: could not start run {run_id}: {why}")
        handle = RunHandle(run_id=run_id, run_dir=parts[0], pid=int(parts[1]), command=command)
        self.emit(
            RunStarted(run=run_id, command=shown_cmd, env=shown_env, run_dir=handle.run_dir, pid=handle.pid, rung=rung)
        )
        return handle

    async def run_status(self, handle: RunHandle) -> int | None:
        """The run's exit status, or None while it runs (or when it cannot be read)."""
        status, _size, _alive = await self._status(handle)
        return status

    async def _status(self, handle: RunHandle) -> tuple[int | None, int | None, bool]:
        res = await self.run_quiet(detached.status_command(handle.run_dir), timeout=15.0)
        if res.error:
            raise ConnectionError(res.error)
        return detached.parse_status(res.stdout)

    def tail(self, handle: RunHandle, offset: int = 0) -> AsyncIterator[str]:
        """Yield the run's log line by line (no newlines) from byte ``offset`` until it exits."""
        return self._tail_lines(handle, offset)

    async def _tail_lines(self, handle: RunHandle, offset: int) -> AsyncIterator[str]:
        async for batch in self.tail_batches(handle, offset):
            for line in batch:
                yield line

    async def tail_batches(
        self, handle: RunHandle, offset: int = 0, *, record: bool = True
    ) -> AsyncIterator[list[str]]:
        """Yield the run's log as batches of whole lines from byte ``offset`` until the run ends.

        Each batch is recorded as one ``Output`` event (``id`` = run id, ``stream`` = ``log``),
        so callers must not record these lines again. When the connection drops the host
        reconnects (with backoff) and the tail resumes at the byte after the last whole
        line delivered: every line exactly once. ``handle.offset`` follows along.
        """
        handle.offset = offset
        idle_restarts = failures = 0
        while True:
            got_data = False
            try:
                async for text, final in self._follow(handle):
                    got_data, failures = True, 0
                    if record:
                        self.emit(Output(id=handle.run_id, stream="log", text=text))
                    yield [text] if final else split(text)
                if await self._finish_if_ended(handle):
                    return
            except Exception as exc:
                failures += 1
                if not self._is_lost(exc):
                    raise
                if failures > MAX_TAIL_FAILURES:
                    raise ConnectionLost(f"{self.alias}: cannot keep following run {handle.run_id}: {exc}") from exc
                await self._recover(f"{type(exc).__name__}: {exc}".rstrip(": "))
                await asyncio.sleep(0.1 * failures)
                continue
            idle_restarts = 0 if got_data else idle_restarts + 1
            if idle_restarts > 5:
                raise HostError(f"{self.alias}: cannot follow the log of run {handle.run_id} in {handle.run_dir}")
            await asyncio.sleep(0.2 * idle_restarts)

    async def _finish_if_ended(self, handle: RunHandle) -> bool:
        status, size, _alive = await self._status(handle)
        if status is None or (size is not None and handle.offset < size):
            return False
        self._end(handle, status, "exited")
        return True

    def _end(self, handle: RunHandle, status: int | None, reason: str) -> None:
        if handle.run_id not in self._ended:
            self._ended.add(handle.run_id)
            self.emit(RunEnded(run=handle.run_id, status=status, reason=reason))

    async def _follow(self, handle: RunHandle) -> AsyncIterator[tuple[str, bool]]:
        """One ``tail -f`` channel: yields (whole-lines text, is_final_partial) until it breaks or the run ends."""
        proc = await self._spawn(detached.tail_command(handle.run_dir, handle.offset), None)
        queue: asyncio.Queue[bytes | BaseException] = asyncio.Queue(maxsize=16)
        reader = asyncio.create_task(self._read_into(proc, queue))
        sp = LineSplitter()
        base = handle.offset
        drained_at: float | None = None
        try:
            while True:
                try:
                    item = await asyncio.wait_for(queue.get(), TAIL_POLL)
                except TimeoutError:
                    status, size, alive = await self._status(handle)
                    if status is not None and size is not None and base + sp.consumed + sp.pending >= size:
                        drained_at = drained_at or time.monotonic()
                        if alive and handle.run_id in self._stopping and time.monotonic() - drained_at < LAST_WRITERS_S:
                            continue
                        if rest := sp.flush():
                            handle.offset = base + sp.consumed
                            yield rest, True
                        return
                    continue
                if isinstance(item, BaseException):
                    raise item
                if not item:
                    return
                if text := sp.feed(item):
                    handle.offset = base + sp.consumed
                    yield text, False
        finally:
            reader.cancel()
            proc.kill()
            await proc.close()

    @staticmethod
    async def _read_into(proc: Proc, queue: asyncio.Queue[bytes | BaseException]) -> None:
        try:
            while chunk := await proc.read_out(CHUNK):
                await queue.put(chunk)
            await queue.put(b"")
        except Exception as exc:  # noqa: BLE001 - handed to the consumer
            await queue.put(exc)

    async def stop(self, handle: RunHandle, grace: float = 10.0, reason: str = "") -> int | None:
        """Stop a detached run: TERM to its process group, KILL after ``grace`` seconds.

        Recorded as an operator ``Decision`` and a ``RunEnded(reason="stopped")``.
        """
        self.emit(Decision(action="stop-run", reason=reason or f"stop run {handle.run_id}"))
        self._stopping.add(handle.run_id)
        res = await self.run_quiet(detached.term_command(handle.run_dir), timeout=15.0)
        if res.stdout.strip() != "done":
            if await self._wait_ended(handle, grace) is None:
                await self.run_quiet(detached.kill_command(handle.run_dir), timeout=15.0)
                if await self._wait_ended(handle, 3.0) is None:
                    await self.run_quiet(detached.reap_command(handle.run_dir), timeout=15.0)
        status = await self.run_status(handle)
        self._end(handle, status, "stopped")
        await self._sweep(handle, grace)
        return status

    async def _sweep(self, handle: RunHandle, grace: float) -> None:
        """After the wrapper ended, wait (bounded) for the rest of the run's group, then KILL it.

        A child that outlives its wrapper (it ignored TERM, or is stuck flushing) would keep
        the GPUs and the port of the run: the next run's readiness would then come from it.
        """
        deadline = time.monotonic() + min(grace, 5.0)
        while True:
            res = await self.run_quiet(detached.survivors_command(handle.run_dir), timeout=15.0)
            left = int(res.stdout.strip() or 0) if res.stdout.strip().isdigit() else 0
            if left == 0:
                return
            if time.monotonic() >= deadline:
                self.emit(
                    Notice(
                        host=self.alias,
                        level="warning",
                        message=f"run {handle.run_id}: {left} process(es) outlived the stop; killed (KILL)",
                    )
                )
                await self.run_quiet(detached.sweep_command(handle.run_dir), timeout=15.0)
                return
            await asyncio.sleep(0.2)

    async def _wait_ended(self, handle: RunHandle, seconds: float) -> int | None:
        deadline = time.monotonic() + seconds
        while True:
            status = await self.run_status(handle)
            if status is not None or time.monotonic() >= deadline:
                return status
            await asyncio.sleep(0.1)

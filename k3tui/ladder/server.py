"""One server run under the ladder: started detached, its log classified live, readiness from /health.

Why a separate object: a run outlives the rung that started it (the minimal launch starts
the server, the single-request rung talks to it, a later rung stops it), and three
things watch it concurrently — the log tail feeding the classifier, the /health poll
through a forwarded port, and the freeze that fires on the first root exception. The
tail keeps going after start-up, so a worker that dies during a request is classified
(``runtime``) from the same stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from .. import events as ev
from ..errors import UsageError
from ..http import VllmClient
from .config import RunConfig

Emit = Callable[[Any], Any]
PORT_RELEASE_S = 30.0
"""How long a stopped server's port may keep answering before a warning."""
LOG_CONFIRM_S = 20.0
"""After /health answers, how long a log without any vLLM start-up marker is waited on before
readiness is taken from /health alone (a vLLM whose log the stage markers do not know)."""
EXCEPTION_GRACE_S = 20.0
"""After a root exception, how long /health may still take before start-up is called failed."""


@dataclass
class Outcome:
    """What one attempt of a rung showed."""

    ok: bool
    summary: str
    signature: str = ""
    """The failure signature ("" when the attempt did not fail)."""
    stage: str = "none"
    exception: str = ""
    error: bool = False
    """True when k3tui itself could not run the attempt (not a finding about the server)."""


@dataclass
class RungResult:
    """A rung's verdict over its attempts."""

    rung: str
    verdict: str
    summary: str
    reproduced: int = 0
    repeats: int = 1
    outcomes: list[Outcome] = field(default_factory=list)


@dataclass
class Server:
    """A detached ``vllm serve`` on the head host."""

    host: Any
    run_id: str
    config: RunConfig
    port: int
    emit: Emit
    on_exception: Callable[[Server, ev.ExceptionFound], Coroutine[Any, Any, None]] | None = None
    launcher: Any = None
    """How the run is started, followed and stopped (:mod:`k3tui.launch`; None: ``docker``, which
    also runs a bare ``vllm serve`` when the config has no image)."""
    handle: Any = None
    classifier: Any = None
    client: VllmClient | None = None
    started: float = 0.0
    ready_s: float | None = None
    local_port: int | None = None
    """The local end of the forwarded port (closed when the run stops)."""
    exception: ev.ExceptionFound | None = None
    exception_t: float = 0.0
    classified: ev.RunClassified | None = None
    stopped_by_us: bool = False
    log_confirm_s: float = LOG_CONFIRM_S
    """See :data:`LOG_CONFIRM_S` (a parameter, so a test can wait seconds instead of twenty)."""
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    last_lines: deque[str] = field(default_factory=lambda: deque(maxlen=3))
    """The last log lines (why a run that exits before /health answers did so)."""
    _tail: asyncio.Task[None] | None = None
    _followups: list[asyncio.Task[Any]] = field(default_factory=list)

    @property
    def alive(self) -> bool:
        return self.handle is not None and not self.ended.is_set()

    @property
    def api(self) -> VllmClient:
        """The HTTP client of a server that has been waited for (UsageError before that)."""
        if self.client is None:
            raise UsageError(f"run {self.run_id} has no API client yet: wait for it to be ready first")
        return self.client

    @property
    def ready(self) -> bool:
        return self.ready_s is not None and self.alive

    async def start(self, rung: str) -> None:
        """Start the run detached and begin tailing its log through the classifier."""
        from ..classify import Classifier

        self.classifier = Classifier(self.run_id, self._classifier_emit)
        self.started = time.monotonic()
        self.handle = await self._launcher().start(self.host, self.config, self.run_id, rung)
        self._tail = asyncio.create_task(self._follow())

    def _launcher(self) -> Any:
        if self.launcher is None:
            from ..launch import get

            self.launcher = get("docker")
        return self.launcher

    def _classifier_emit(self, event: Any) -> Any:
        event.host = event.host or self.host.alias
        if isinstance(event, ev.ExceptionFound) and self.exception is None:
            self.exception, self.exception_t = event, time.monotonic()
            if self.on_exception is not None:
                self._followups.append(asyncio.create_task(self.on_exception(self, event)))
        if isinstance(event, ev.RunClassified):
            self.classified = event
        return self.emit(event)

    async def _follow(self) -> None:
        try:
            async for line in self._launcher().follow(self.host, self.handle):
                self.classifier.feed(line + "\n")
                if line.strip():
                    self.last_lines.append(line)
        except Exception as exc:  # noqa: BLE001 - reported, and the run counts as ended
            self.emit(
                ev.Notice(host=self.host.alias, level="warning", message=f"lost the log of run {self.run_id}: {exc}")
            )
        finally:
            self._finish_classifier()
            self.ended.set()

    def _finish_classifier(self) -> None:
        if self.classified is None and self.classifier is not None:
            self.classifier.finish()

    async def wait_ready(self, timeout: float) -> bool:
        """Poll /health through a forwarded port until 200, the run ends, or it has clearly failed."""
        local = self.local_port = await self._launcher().forward(self.host, self.handle, self.port)
        self.client = VllmClient(f"http://127.0.0.1:{local}", self.emit, host=self.host.alias)
        deadline = time.monotonic() + timeout

        def still_starting() -> bool:
            failed = self.exception is not None and time.monotonic() - self.exception_t > EXCEPTION_GRACE_S
            return not self.ended.is_set() and not failed

        reply = await self.client.wait_ready(deadline, interval=0.5, still_running=still_starting)
        if reply is None or not await self._log_confirms_api(deadline):
            return False
        self.ready_s = time.monotonic() - self.started
        return True

    async def _log_confirms_api(self, deadline: float) -> bool:
        """After /health answered: does this run's own log agree that its API server started?

        /health says *something* serves the port; only the run's log says it is this run (a
        leftover of the previous run, still shutting down on a loaded host, can answer too).

        - True once the log reaches the ``api`` stage (or ``runtime``);
        - False as soon as the run fails or ends;
        - a log with vLLM start-up markers but no ``api`` stage yet (or no output at all) is
          a run still starting while something else answers: waited on until ``deadline``,
          then False with a notice naming the stage it is stuck at;
        - a log with output but no start-up marker at all after :attr:`log_confirm_s` (a
          vLLM whose log the stage markers do not know): True with a notice — readiness
          from /health alone, so such a server is still usable.
        """
        unmarked_until = time.monotonic() + self.log_confirm_s
        while True:
            if self.exception is not None or self.ended.is_set():
                return False
            res = self.classifier.result() if self.classifier is not None else None
            stages = [m.stage for m in res.stages] if res is not None else []
            if any(s in ("api", "runtime") for s in stages):
                return True
            now = time.monotonic()
            if stages == ["container"] and now >= unmarked_until:
                self._notice(
                    f"run {self.run_id}: /health answers but its log shows no vLLM start-up marker "
                    f"after {self.log_confirm_s:g} s: readiness from /health alone"
                )
                return True
            if now >= deadline:
                where = f"is still at stage {stages[-1]}" if stages else "is still empty"
                self._notice(
                    f"run {self.run_id}: /health answers on port {self.port} but the run's log {where}, never "
                    "showing the API server start: another process (a leftover of an earlier run?) answers; not ready"
                )
                return False
            await asyncio.sleep(0.2)

    def _notice(self, message: str) -> None:
        self.emit(ev.Notice(host=self.host.alias, level="warning", message=message))

    async def settle(self, timeout: float = 30.0) -> None:
        """Wait (bounded) for follow-ups of a failure: the run's end and the automatic freeze."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self.ended.wait()
        await self._await_followups(timeout)

    async def _await_followups(self, timeout: float) -> None:
        if self._followups:
            await asyncio.wait(self._followups, timeout=timeout)

    async def stop(self, reason: str = "", grace: float = 15.0) -> None:
        """Stop the run (TERM, then KILL) and let the classifier finish on the whole log."""
        if self.handle is not None and not self.ended.is_set():
            self.stopped_by_us = True
            await self._launcher().stop(self.host, self.handle, grace=grace, reason=reason)
        elif self.handle is not None and getattr(self._launcher(), "remove_ended_runs", False):
            await self._launcher().stop(
                self.host, self.handle, grace=grace, reason=reason
            )  # a pod outlives its process
        if self._tail is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace + 30.0):
                    await asyncio.shield(self._tail)
            if not self._tail.done():
                self._tail.cancel()
        self._finish_classifier()
        await self._await_followups(30.0)
        await self._wait_port_released()
        if self.client is not None:
            await self.client.aclose()
        unforward = getattr(self.host, "unforward", None)
        if self.local_port is not None and unforward is not None:
            with contextlib.suppress(Exception):
                await unforward(self.local_port)
            self.local_port = None

    async def _wait_port_released(self, timeout: float = PORT_RELEASE_S) -> None:
        """After a stop, wait until nothing answers /health on the port any more.

        Otherwise the next run's readiness could come from a process of this one that is
        still shutting down (or a leftover): /health must speak for the server just started.
        """
        if self.client is None or self.ready_s is None:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (await self.client.health(timeout=2.0, record=False)).status is None:
                return
            await asyncio.sleep(0.25)
        self.emit(
            ev.Notice(
                host=self.host.alias,
                level="warning",
                message=f"port {self.port} still answers /health {timeout:g} s after run {self.run_id} stopped: a leftover process serves it, so the next run's readiness is ambiguous",
            )
        )

    def outcome(self, what: str = "start-up") -> Outcome:
        """The run as an attempt outcome: failed when the classifier found a root failure."""
        res = self.classifier.result() if self.classifier is not None else None
        stage = getattr(res, "failed_stage", "none") or "none"
        # "unknown": nothing in the log looked like vLLM's (no root either); how the run ended decides
        if stage not in ("none", "unknown") or self.exception is not None:
            line = (
                self.exception.line
                if self.exception is not None
                else getattr(getattr(res, "first_exception", None), "line", "")
            )
            sig = getattr(res, "signature", "") or (self.exception.signature if self.exception is not None else "")
            return Outcome(
                False, f"{what} failed at stage {stage}: {line}".rstrip(": "), sig or f"{stage}|?|{line}", stage, line
            )
        return Outcome(True, f"{what} ok")

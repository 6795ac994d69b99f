"""The ladder engine: the one object the CLI, the TUI and ``k3tui demo`` drive.

Why one engine for all of them: what the operator does in the TUI must be what a
headless run does, so both call the same methods and the same events come out.

Using it::

    engine = LadderEngine(hosts, load_profile("kimi-k3"), recorder.emit)
    await engine.run_all()                        # baseline → minimal → request → features
    await engine.run_rung("minimal", repeat=3)    # one rung, K attempts → "reproduced k/K"
    engine.preview_change({"max_model_len": 4096})            # the diff, nothing recorded
    engine.apply_change({"max_model_len": 4096})              # one variable: fine
    engine.apply_change({"max_model_len": 4096, "env:X": "1"}, reason="why")  # two: needs a reason
    engine.revert()                               # back to the last known good config
    engine.toggle("vllm-debug-log")               # a profile debug toggle, as one change
    await engine.close()                          # stops the server it started

``hosts`` is a Host or a list of them (the first is the head node, where the server is
launched; every host is frozen and sampled). Hosts are anything implementing
:class:`k3tui.remote.base.Host`: SSH, the simulated host, this machine. ``emit`` records
an event (``Recorder.emit``); the engine reads the session's whole stream back (for
stop conditions and the checklist) by subscribing to the recorder, or from ``events=``.

Rung names: ``baseline``, ``minimal``, ``request``, then the profile's features in order
(``prefix-caching``, ``context-length``, ``concurrency``). A feature rung runs only after
the single-request rung and every earlier feature passed (``force=True`` overrides, and
the override is recorded as a decision). Verdicts: ``PASS``, ``FAIL``, ``DRIFT`` (the
failure signature changed between attempts), ``ERROR`` (k3tui could not run the rung).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import secrets
from collections.abc import Callable
from typing import Any

from .. import events as ev
from ..errors import HardwareStop, K3Error, UsageError
from ..gpu import GpuSampler
from . import checklist as checklist_mod
from . import rungs, stops
from .config import RunConfig, apply_changes, diff, from_profile
from .ledger import ConfigLedger
from .server import Outcome, RungResult, Server

Emit = Callable[[Any], Any]
CORE_RUNGS = ("baseline", "minimal", "request")
RUN_GONE_S = 60.0
"""After a stop, how long every process of each stopped run may take to end before a notice."""
_SERVING = re.compile(
    r"vllm serve|vllm\.entrypoints|sglang\.launch_server|tritonserver|text-generation-launcher|trtllm-serve"
)


class LadderEngine:
    """Runs the rungs on a deployment (see the module docstring for the whole surface)."""

    def __init__(
        self,
        hosts: Any,
        profile: Any,
        emit: Emit,
        *,
        model_path: str = "",
        port: int | None = None,
        program: str | None = None,
        events: list[Any] | None = None,
        request_repeat: int | None = None,
        ready_timeout: float | None = None,
        freeze: Callable[..., Any] | None = None,
        launcher: Any = None,
        start_config: RunConfig | None = None,
    ) -> None:
        self.hosts = list(hosts) if isinstance(hosts, (list, tuple)) else [hosts]
        if not self.hosts:
            raise UsageError("the ladder needs at least one host")
        self.head = self.hosts[0]
        self.profile = profile
        self.emit = emit
        self.model_path = model_path
        self.port = port or profile.launch.port
        self.program = program
        self._request_repeat = request_repeat
        self.ready_timeout = ready_timeout or profile.launch.ready_timeout_s
        self.ledger = ConfigLedger(emit, host=self.head.alias)
        self.server: Server | None = None
        self.verdicts: dict[str, str] = {}
        self.samplers = {h.alias: GpuSampler(h, emit) for h in self.hosts}
        self.scenes: dict[str, Any] = {}
        self._freeze = freeze
        self._runs = itertools.count(1)
        self._token = secrets.token_hex(3)
        """Run ids are unique per session: run directories on a host outlive the session."""
        self._probed_live = False
        self.launcher = launcher
        """Where runs start (:mod:`k3tui.launch`; None: ``docker`` / a bare process on the head)."""
        self.start_config = start_config
        """The first run's config when it comes from the frozen launch (a pod's manifest), not the profile."""
        self.events = events if events is not None else self._subscribe(emit)

    # --- the session's stream --------------------------------------------------------

    @property
    def request_repeat(self) -> int:
        """How many times the request rung sends the fixed request: the caller's count (bisect: one per
        repetition), else the profile's, read when the rung runs (a profile swapped in later counts)."""
        return self._request_repeat or self.profile.request.repeat

    def _subscribe(self, emit: Emit) -> list[Any]:
        seen: list[Any] = []
        owner = getattr(emit, "__self__", None)
        if owner is not None and callable(getattr(owner, "subscribe", None)):
            owner.subscribe(seen.append)
        else:
            inner = self.emit

            def keep(e: Any) -> Any:
                seen.append(e)
                return inner(e)

            self.emit = keep
            self.ledger.emit = self.emit
            for s in getattr(self, "samplers", {}).values():
                s.emit = self.emit
        return seen

    # --- rungs -------------------------------------------------------------------------

    @property
    def rungs(self) -> list[str]:
        """Every rung of this profile, in ladder order."""
        return [*CORE_RUNGS, *(f.name for f in self.profile.features)]

    async def run_all(self, repeat: int = 1) -> list[RungResult]:
        """Climb the whole ladder; stop at the first rung that is not stable (not PASS).

        A failed baseline does not stop the climb: the minimal launch still runs, because
        isolating the failing stage with the minimal command is the evidence a platform
        team needs about an incompatible host (a Notice says so).
        """
        results: list[RungResult] = []
        for name in self.rungs:
            try:
                result = await self.run_rung(name, repeat=repeat)
            except HardwareStop as exc:
                self.emit(ev.Notice(host=self.head.alias, level="error", message=f"ladder stopped: {exc}"))
                break
            results.append(result)
            if result.verdict == "PASS":
                continue
            if name == "baseline" and result.verdict == "FAIL":
                self.emit(
                    ev.Notice(
                        host=self.head.alias,
                        level="warning",
                        message=f"baseline failed ({result.summary}): running the minimal launch anyway to isolate the failing stage",
                    )
                )
                continue
            self.emit(
                ev.Notice(
                    host=self.head.alias,
                    level="warning",
                    message=f"ladder stopped at rung {name}: {result.verdict} — {result.summary}",
                )
            )
            break
        self.emit_checklist()
        return results

    async def run_rung(self, name: str, repeat: int = 1, force: bool = False) -> RungResult:
        """Run one rung ``repeat`` times; the verdict counts how often its failure reproduced.

        Raises:
            UsageError: unknown rung, or a feature rung before the rungs below it are stable.
        """
        if name not in self.rungs:
            raise UsageError(f"no rung {name!r} in profile {self.profile.name!r}: rungs are {', '.join(self.rungs)}")
        if repeat < 1:
            raise UsageError("--repeat must be at least 1")
        self._check_order(name, force)
        self._check_hardware(name)
        outcomes: list[Outcome] = []
        for attempt in range(1, repeat + 1):
            self.emit(ev.RungEntered(host=self.head.alias, rung=name, attempt=attempt))
            outcomes.append(await self._attempt(name, attempt, repeat))
        result = rungs.verdict(name, outcomes)
        if result.verdict == "DRIFT":
            self.emit(
                ev.Notice(host=self.head.alias, level="warning", message=f"DRIFT on rung {name}: {result.summary}")
            )
        self.emit(
            ev.RungLeft(
                host=self.head.alias,
                rung=name,
                verdict=result.verdict,
                summary=result.summary,
                reproduced=result.reproduced if repeat > 1 else None,
                repeats=repeat if repeat > 1 else None,
            )
        )
        self.verdicts[name] = result.verdict
        self.emit_stops()
        return result

    async def _attempt(self, name: str, attempt: int, repeat: int) -> Outcome:
        try:
            return await rungs.run(self, name, attempt, repeat)
        except K3Error as exc:
            return Outcome(False, f"could not run: {exc}", error=True)

    def _check_hardware(self, name: str) -> None:
        """A host fault seen in a frozen scene stops every rung after the baseline (issue 14)."""
        if name == "baseline" or stops.overridden(self.events):
            return
        found = stops.hardware(self.events)
        if found.tripped:
            raise HardwareStop(
                f"{found.evidence}. To climb on anyway, record why: o in the TUI, "
                "or k3tui ladder --override-hardware REASON"
            )

    def climb_past_hardware(self, reason: str) -> None:
        """Record the operator's reason to climb on although a hardware stop tripped."""
        if not reason.strip():
            raise UsageError("climbing past a hardware stop needs a reason (why the fault does not matter here)")
        self.emit(ev.Decision(host=self.head.alias, action=stops.OVERRIDE, reason=reason.strip()))

    def _check_order(self, name: str, force: bool) -> None:
        features = [f.name for f in self.profile.features]
        if name not in features:
            return
        below = ["request", *features[: features.index(name)]]
        unstable = [r for r in below if self.verdicts.get(r) != "PASS"]
        if not unstable:
            return
        why = ", ".join(f"{r}={self.verdicts.get(r, 'not run')}" for r in unstable)
        if not force:
            raise UsageError(
                f"rung {name} runs only after the rungs below it are stable (PASS): {why}; use --force to override"
            )
        self.emit(
            ev.Decision(
                host=self.head.alias,
                action=f"run {name} before the rungs below it are stable ({why})",
                reason="forced by the operator",
            )
        )

    # --- changes ------------------------------------------------------------------------

    @property
    def config(self) -> RunConfig:
        """The config the next run uses (the profile's minimal launch until something changes)."""
        if self.ledger.current is None:
            cfg = self.start_config or from_profile(self.profile, model_path=self.model_path, port=self.port)
            if self.program:
                cfg.entry = [self.program, *cfg.entry[1:]]
            self.ledger.start(cfg, run=self.peek_run_id())
        assert self.ledger.current is not None
        return self.ledger.current

    def preview_change(self, changes: dict[str, Any]) -> list[dict[str, Any]]:
        """The diff a change would make (nothing is recorded)."""
        return diff(self.config, apply_changes(self.config, changes))

    def apply_change(self, changes: dict[str, Any], reason: str | None = None) -> list[dict[str, Any]]:
        """Make a change for the next run (raises OneVariableRule for two or more without a reason)."""
        self.config  # noqa: B018 - make sure the starting config is recorded first
        _, d = self.ledger.apply(changes, reason=reason, run=self.peek_run_id())
        return d

    def revert(self, reason: str = "") -> list[dict[str, Any]]:
        """Back to the last known good config (recorded as a decision)."""
        self.config  # noqa: B018
        _, d = self.ledger.revert(reason=reason, run=self.peek_run_id())
        return d

    def toggle(self, name: str, on: bool = True, confirmed: bool = False) -> list[dict[str, Any]]:
        """Apply (or remove) a profile debug toggle as one change; toggles with a warning need ``confirmed``."""
        t = next((t for t in self.profile.debug_toggles if t.name == name), None)
        if t is None:
            known = ", ".join(x.name for x in self.profile.debug_toggles) or "none"
            raise UsageError(f"profile {self.profile.name!r} has no debug toggle {name!r} (it has: {known})")
        if t.warning and on:
            self.emit(ev.Notice(host=self.head.alias, level="warning", message=t.warning))
            if not confirmed:
                raise UsageError(f"{t.warning}. Confirm to apply {name}")
        changes: dict[str, Any] = {f"env:{k}": (v if on else None) for k, v in t.env.items()}
        if t.args:
            from .config import changes_from_args

            changes.update(changes_from_args(t.args) if on else {k: None for k in changes_from_args(t.args)})
        return self.apply_change(changes, reason=f"debug toggle {name}" if len(changes) > 1 else None)

    # --- runs ---------------------------------------------------------------------------

    def peek_run_id(self) -> str:
        """The id the next run will get (configs are recorded against it)."""
        if not hasattr(self, "_next_run"):
            self._next_run = f"r{next(self._runs)}-{self._token}"
        return self._next_run

    def _take_run_id(self, rung: str) -> str:
        base = self.peek_run_id()
        del self._next_run
        return f"{base}-{rung}"

    async def launch(self, rung: str) -> Server:
        """Stop the current server, start one with the current config, wait for /health."""
        self._refuse_pod_node()
        await self.probe_live_inference()
        await self.stop_server(reason=f"restart for rung {rung}")
        cfg = self.config
        server = Server(
            self.head,
            self._take_run_id(rung),
            cfg,
            self.port,
            self.emit,
            on_exception=self._on_exception,
            launcher=self.launcher,
        )
        if self.launcher is not None:
            for line in self.launcher.plan(cfg, server.run_id):
                self.emit(ev.Notice(host=self.head.alias, level="info", message=line))
        self.server = server
        for s in self.samplers.values():
            await s.start()
        await server.start(rung)
        ready = await server.wait_ready(self.ready_timeout)
        if not ready:
            await server.settle()
        return server

    def _refuse_pod_node(self) -> None:
        """A node whose server runs in a Kubernetes pod has no ``docker run`` to start: say how to ladder it."""
        scene = self.scenes.get(self.head.alias)
        pod = getattr(scene, "pod", None) if scene is not None else None
        if self.launcher is None and pod and getattr(scene, "launcher", "") in ("containerd", "kubernetes"):
            raise UsageError(
                f"{self.head.alias} runs the server in pod {pod.get('namespace')}/{pod.get('name')} (no dockerd): "
                f"ladder it through the Kubernetes API: k3tui ladder {self.head.alias} --pod "
                f"{pod.get('namespace')}/{pod.get('name')}"
            )

    async def ensure_server(self, rung: str) -> Server:
        """A ready server running the current config (restarted if the config changed)."""
        s = self.server
        want = self.config
        if s is not None and s.ready and _same_server(s.config, want):
            return s
        return await self.launch(rung)

    async def stop_run(self, reason: str = "stopped by the operator") -> None:
        """Stop the server the ladder is running (the TUI's stop intent)."""
        await self.stop_server(reason=reason)

    async def stop_server(self, reason: str = "") -> None:
        """Stop the server (every run of a multi-node deployment) and wait for each run's processes to end."""
        if self.server is not None:
            s, self.server = self.server, None
            await s.stop(reason=reason or "stopped by the ladder")
            await self._wait_runs_gone([r for r in getattr(s, "nodes", [s]) if r.handle is not None])

    async def _wait_runs_gone(self, runs: list[Server], timeout: float = RUN_GONE_S) -> None:
        """Wait (bounded) until no process of each stopped run is left on its host; a notice names any survivor.

        The head's port going quiet is not enough: a worker's processes that are slow to die
        still hold its GPUs when the next run starts there, and that run fails for it.
        """
        from ..remote import detached

        async def one(r: Server) -> None:
            quiet = getattr(r.host, "run_quiet", None)
            if quiet is None:
                return
            deadline = asyncio.get_running_loop().time() + timeout
            while True:
                res = await quiet(detached.survivors_command(r.handle.run_dir), timeout=15.0)
                left = res.stdout.strip()
                if not left.isdigit() or int(left) == 0:
                    return
                if asyncio.get_running_loop().time() >= deadline:
                    self.emit(
                        ev.Notice(
                            host=r.host.alias,
                            level="warning",
                            message=f"run {r.run_id}: {left} process(es) still alive {timeout:g} s after the stop; "
                            "the next run on this host may find its GPUs busy",
                        )
                    )
                    return
                await asyncio.sleep(0.25)

        await asyncio.gather(*(one(r) for r in runs))

    async def _on_exception(self, server: Server, found: ev.ExceptionFound) -> None:
        """First root exception of a run: freeze the scene of every host, no operator action needed."""
        self.emit(
            ev.Notice(
                host=server.host.alias,
                level="warning",
                message=f"first root exception in run {server.run_id} at stage {found.stage}: freezing the scene",
            )
        )
        await self.freeze_all(reason="first-exception", run=server)
        from ..classify.hostfault import diagnose_events

        root = diagnose_events(self.events, found)  # issue 14: a host fault before it is the root
        if root is not None:
            self.emit(root)

    async def freeze_all(self, reason: str, run: Server | None = None) -> dict[str, Any]:
        """Freeze every host concurrently (the head with the run's log, for its first exception)."""
        freeze = self._freeze or _default_freeze()
        runs = self._runs_by_host(run)

        async def one(h: Any) -> None:
            kw: dict[str, Any] = {"emit": self.emit, "reason": reason}
            mine = runs.get(id(h))
            if mine is not None and mine.handle is not None:
                kw["run"] = mine.handle
            try:
                self.scenes[h.alias] = await freeze(h, **kw)
            except Exception as exc:  # noqa: BLE001 - a failed freeze is reported, the ladder goes on
                self.emit(ev.Notice(host=h.alias, level="error", message=f"freeze failed: {exc}"))

        await asyncio.gather(*(one(h) for h in self.hosts))
        return self.scenes

    def _runs_by_host(self, run: Server | None) -> dict[int, Server]:
        """Which run's log each host's freeze reads (by ``id(host)``): here only the given run's."""
        return {id(run.host): run} if run is not None else {}

    async def probe_live_inference(self) -> None:
        """Before the first launch: is anything else serving on these hosts? (a stop condition)."""
        if self._probed_live:
            return
        self._probed_live = True
        for h in self.hosts:
            # -ww: never cut at COLUMNS (pytest's 80 reached ps and cut a long `vllm serve` line)
            res = await h.run("ps -ww -eo pid=,args=", timeout=15.0, purpose="live-inference")
            found = [ln.strip() for ln in res.stdout.splitlines() if _SERVING.search(ln) and "-eo pid=,args=" not in ln]
            if not res.ok:
                verdict, evidence = "UNKNOWN", f"could not list processes: {res.error or res.stderr.strip()}"
            elif found:
                verdict, evidence = (
                    "FAIL",
                    f"{len(found)} serving process(es) already running: " + " | ".join(x[:120] for x in found[:3]),
                )
            else:
                verdict, evidence = "PASS", "no other serving process on the host"
            self.emit(
                ev.CheckVerdict(
                    host=h.alias,
                    rung="stop",
                    check="live-inference",
                    verdict=verdict,
                    evidence=evidence,
                    title=stops.TITLES["live-inference"],
                )
            )

    # --- stop conditions and checklist -----------------------------------------------------

    def emit_stops(self) -> list[stops.StopCheck]:
        """Evaluate the five stop conditions over the stream and record them."""
        found = stops.evaluate(self.events)
        for s in found:
            if s.name == "live-inference" and s.verdict != "UNKNOWN":
                continue  # recorded by the probe itself, per host
            self.emit(
                ev.CheckVerdict(
                    host=self.head.alias,
                    rung="stop",
                    check=s.name,
                    verdict=s.verdict,
                    evidence=s.evidence,
                    title=s.title,
                )
            )
        return found

    def emit_checklist(self) -> list[checklist_mod.Item]:
        """Tick the eleven deliverable items from evidence in the stream, and record them."""
        items = checklist_mod.evaluate(self.events)
        for it in items:
            self.emit(
                ev.CheckVerdict(
                    host="",
                    rung="checklist",
                    check=it.key,
                    verdict=it.verdict,
                    evidence=it.evidence_text(),
                    title=it.title,
                )
            )
        return items

    async def close(self) -> None:
        """Stop the server this engine started and the GPU samplers."""
        await self.stop_server(reason="ladder finished")
        for s in self.samplers.values():
            with contextlib.suppress(Exception):
                await s.stop()


def _same_server(a: RunConfig, b: RunConfig) -> bool:
    """Two configs run the same server (client-side variables like concurrency do not count)."""
    return not [d for d in diff(a, b) if d["key"] != "concurrency"]


def _default_freeze() -> Callable[..., Any]:
    """The freeze through the launcher that runs the server on each host (:mod:`k3tui.launch`)."""
    from ..launch import freeze_host

    async def freeze(host: Any, **kw: Any) -> Any:
        return await freeze_host(host, **kw)

    return freeze

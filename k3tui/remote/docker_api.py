"""Container facts from the Docker Engine API, through the host's forwarded Docker socket.

Why the API and not ``docker inspect`` text: the Engine API gives typed JSON (image id and
RepoDigests, Config.Cmd/Entrypoint/Env, HostConfig, Mounts, State) with no parsing and no
dependence on the host's docker CLI version. The remote ``/var/run/docker.sock`` is
forwarded to a private local socket over the host's SSH connection, and the docker SDK —
synchronous — runs in a thread (``asyncio.to_thread``) so the event loop never blocks.

Env values of secret-looking variables and secret-looking command-line arguments are
redacted here, before the facts leave this module. :func:`docker_facts` never raises for
a missing container or an unreachable engine: it returns an ``error`` entry, so a freeze
records "unknown" and goes on.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from ..errors import HostError
from ..redact import MASK, Redactor

DOCKER_SOCK = "/var/run/docker.sock"
LOG_TAIL = 200

_SECRET_FLAG = re.compile(
    r"(?i)^--?(?:[a-z0-9]+[-_])*(?:password|passwd|token|secret|api[-_]?key|access[-_]?key|private[-_]?key|credentials?)$"
)


@asynccontextmanager
async def docker_client(host: Any, socket: str = DOCKER_SOCK, timeout: float = 30.0) -> AsyncIterator[Any]:
    """Forward the host's Docker socket and yield a ``docker.DockerClient`` on it.

    Raises:
        HostError: the socket cannot be forwarded or the engine does not answer.
    """
    import docker

    try:
        local = await host.forward_unix(socket)
    except Exception as exc:  # noqa: BLE001 - any forwarding failure is one line for the operator
        raise HostError(f"{host.alias}: cannot forward the Docker socket {socket}: {exc}") from exc
    try:
        client = await asyncio.to_thread(docker.DockerClient, base_url=f"unix://{local}", timeout=int(timeout))
    except docker.errors.DockerException as exc:
        await _unforward(host, local)
        user = getattr(host, "user", "the remote user")
        raise HostError(
            f"{host.alias}: no Docker engine answers on {socket} (is dockerd running, and is {user} in group docker?): "
            f"{_short(exc)}"
        ) from exc
    try:
        yield client
    finally:
        await asyncio.to_thread(client.close)
        await _unforward(host, local)


async def _unforward(host: Any, local: str) -> None:
    unforward = getattr(host, "unforward", None)
    if unforward is not None:
        await unforward(local)


def _short(exc: BaseException) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= 200 else text[:199] + "…"


async def docker_facts(
    host: Any,
    container: str | None = None,
    *,
    socket: str = DOCKER_SOCK,
    redactor: Redactor | None = None,
    log_tail: int = LOG_TAIL,
) -> dict[str, Any]:
    """Engine, container list and (for ``container``, or the only running one) its full facts.

    Returns a JSON-ready dict: ``engine``, ``containers``, and ``container`` / ``image`` /
    ``logs`` when a container is selected; ``error`` when something could not be read.
    """
    red = redactor or getattr(host, "redactor", None) or Redactor.from_environment()
    try:
        async with docker_client(host, socket) as client:
            return await asyncio.to_thread(_facts, client.api, container, red, log_tail)
    except HostError as exc:
        return {"error": str(exc)}


def _facts(api: Any, container: str | None, red: Redactor, log_tail: int) -> dict[str, Any]:
    import docker

    out: dict[str, Any] = {"engine": _engine(api), "containers": _list(api)}
    if container is None:
        running = [c for c in out["containers"] if c["state"] == "running"]
        if len(running) != 1:
            return out
        container = running[0]["id"]
    try:
        raw = api.inspect_container(container)
    except docker.errors.NotFound:
        out["error"] = f"no such container: {container}"
        return out
    out["container"] = container_facts(raw, red)
    out["image"] = _image(api, raw)
    out["logs"] = _logs(api, raw["Id"], log_tail, red)
    return out


def _engine(api: Any) -> dict[str, Any]:
    v, info = api.version(), api.info()
    return {
        "version": v.get("Version"),
        "api_version": v.get("ApiVersion"),
        "os": info.get("OperatingSystem"),
        "kernel": info.get("KernelVersion"),
        "arch": info.get("Architecture"),
        "runtimes": sorted((info.get("Runtimes") or {}).keys()),
        "default_runtime": info.get("DefaultRuntime"),
        "cgroup_driver": info.get("CgroupDriver"),
    }


def _list(api: Any) -> list[dict[str, Any]]:
    return [
        {
            "id": c["Id"],
            "name": (c.get("Names") or ["?"])[0].lstrip("/"),
            "image": c.get("Image"),
            "image_id": c.get("ImageID"),
            "state": c.get("State"),
            "status": c.get("Status"),
        }
        for c in api.containers(all=True)
    ]


def redact_argv(argv: list[str] | None, red: Redactor) -> list[str] | None:
    """Mask the value after a secret-looking flag (``--api-key X``) and secrets inside arguments."""
    if argv is None:
        return None
    out: list[str] = []
    mask_next = False
    for arg in argv:
        if mask_next:
            red.learn(arg)
            out.append(MASK)
        else:
            out.append(red.text(arg))
        mask_next = bool(_SECRET_FLAG.match(arg))
    return out


def container_facts(raw: dict[str, Any], red: Redactor) -> dict[str, Any]:
    """The facts a freeze needs from one ``inspect_container`` answer (env and secrets redacted)."""
    cfg, hc, st = raw.get("Config") or {}, raw.get("HostConfig") or {}, raw.get("State") or {}
    return {
        "id": raw.get("Id"),
        "name": (raw.get("Name") or "").lstrip("/"),
        "image_ref": cfg.get("Image"),
        "image_id": raw.get("Image"),
        "created": raw.get("Created"),
        "state": {
            "status": st.get("Status"),
            "running": st.get("Running"),
            "exit_code": st.get("ExitCode"),
            "oom_killed": st.get("OOMKilled"),
            "error": st.get("Error"),
            "started_at": st.get("StartedAt"),
            "finished_at": st.get("FinishedAt"),
            "pid": st.get("Pid"),
        },
        "restart_count": raw.get("RestartCount"),
        "entrypoint": redact_argv(cfg.get("Entrypoint"), red),
        "cmd": redact_argv(cfg.get("Cmd"), red),
        "env": red.env_list(cfg.get("Env") or []),
        "labels": red.obj(cfg.get("Labels") or {}),
        "working_dir": cfg.get("WorkingDir"),
        "user": cfg.get("User"),
        "host_config": {
            "runtime": hc.get("Runtime"),
            "network_mode": hc.get("NetworkMode"),
            "ipc_mode": hc.get("IpcMode"),
            "pid_mode": hc.get("PidMode"),
            "privileged": hc.get("Privileged"),
            "shm_size": hc.get("ShmSize"),
            "memory": hc.get("Memory"),
            "nano_cpus": hc.get("NanoCpus"),
            "device_requests": hc.get("DeviceRequests"),
            "devices": hc.get("Devices"),
            "ulimits": hc.get("Ulimits"),
            "binds": red.obj(hc.get("Binds")),
            "restart_policy": hc.get("RestartPolicy"),
        },
        "mounts": [
            {
                "type": m.get("Type"),
                "source": m.get("Source"),
                "destination": m.get("Destination"),
                "mode": m.get("Mode"),
                "rw": m.get("RW"),
            }
            for m in raw.get("Mounts") or []
        ],
    }


def _image(api: Any, raw: dict[str, Any]) -> dict[str, Any]:
    import docker

    ref = (raw.get("Config") or {}).get("Image") or ""
    try:
        img = api.inspect_image(raw.get("Image"))
    except docker.errors.NotFound:
        return {"ref": ref, "id": raw.get("Image"), "error": "image no longer present"}
    digests = img.get("RepoDigests") or []
    name = ref.split("@", 1)[0]
    repo = name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else ("latest" if "@" not in ref else None)
    matching = [d for d in digests if d.split("@", 1)[0] == repo]
    return {
        "ref": ref,
        "repository": repo,
        "tag": tag,
        "id": img.get("Id"),
        "repo_tags": img.get("RepoTags") or [],
        "repo_digests": digests,
        "digest": (ref.split("@", 1)[1] if "@" in ref else None)
        or (matching[0].split("@", 1)[1] if matching else None),
        "created": img.get("Created"),
        "architecture": img.get("Architecture"),
        "os": img.get("Os"),
        "size": img.get("Size"),
        "labels": (img.get("Config") or {}).get("Labels") or {},
    }


def _logs(api: Any, cid: str, tail: int, red: Redactor) -> list[str]:
    data = api.logs(cid, stdout=True, stderr=True, tail=tail, timestamps=True)
    return [red.text(line) for line in data.decode("utf-8", "replace").splitlines()]

"""Container facts from the Docker Engine API, through the host's forwarded Docker socket.

Why the API and not ``docker inspect`` text: the Engine API gives typed JSON (image id and
RepoDigests, Config.Cmd/Entrypoint/Env, HostConfig, Mounts, State) with no parsing, no
dependence on the host's docker CLI version and none on the remote user's shell. The
remote ``/var/run/docker.sock`` is forwarded to a private local socket over the host's
own connection (``host.forward_unix``; a local host uses the path as is), and the docker
SDK — synchronous — runs in a thread, every call under a timeout, so the event loop that
serves the forward never blocks.

One client, :class:`DockerApi`, serves two callers:

- the freeze (:mod:`k3tui.scene.freeze`): :meth:`DockerApi.connect` never raises, and each
  call returns a :class:`~k3tui.remote.base.RunResult` under the *same probe name* and in
  the *same text form* as the CLI probe it replaces (``docker ps`` JSON lines, ``docker
  inspect`` JSON, exec output), so one parser serves both paths; when the API cannot be
  reached the freeze falls back to the CLI and records why;
- :func:`docker_facts`: the typed facts as one JSON-ready dict, for a report or a test.

Secrets are redacted here, before any answer leaves this module: env values of
secret-looking variables (learnt, so their literal values are masked in logs and exec
output too), values after secret-looking flags in Cmd/Entrypoint, and secrets in text.

Errors: opening raises :class:`~k3tui.errors.HostError` with one line that says what is
wrong — the socket cannot be forwarded, there is no socket at that path, the remote user
may not open it (not in group ``docker``), or nothing answers on it (dockerd not running).
"""

from __future__ import annotations

import asyncio
import json
import shlex
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from ..errors import HostError
from ..redact import Redactor
from .base import RunResult

DEFAULT_SOCKET = "/var/run/docker.sock"
API_TIMEOUT = 8.0
"""Seconds one Engine API call may take."""
PING_TIMEOUT = 6.0
"""The first call also imports the SDK and opens the forward: generous on a loaded machine."""
FACTS_TIMEOUT = 30.0
"""Seconds :func:`docker_facts` may take for all its calls together."""
LOG_TAIL = 200
_EXEC = "docker exec {container} "


class DockerApi:
    """A docker SDK client on a (forwarded) socket of one host.

    ``sdk`` is the ``docker.DockerClient``; ``client`` its low-level ``APIClient``, whose
    answers are the Engine API's own JSON.
    """

    def __init__(
        self,
        sdk: Any,
        host: Any,
        socket_path: str,
        local: str,
        redactor: Redactor,
        version: dict[str, Any],
        timeout: float = API_TIMEOUT,
    ) -> None:
        self.sdk = sdk
        self.client = sdk.api
        self.host = host
        self.where = socket_path
        self.local = local
        self.redactor = redactor
        self.version = version
        """The engine's ``GET /version`` answer, read when the client was opened."""
        self.timeout = timeout
        """Seconds one call may take."""

    # --- opening and closing ---------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        host: Any,
        socket_path: str = DEFAULT_SOCKET,
        *,
        redactor: Redactor | None = None,
        timeout: float = API_TIMEOUT,
        ping_timeout: float = PING_TIMEOUT,
    ) -> DockerApi:
        """Forward ``socket_path`` and check that an engine answers on it within ``ping_timeout`` seconds.

        Raises:
            HostError: the socket cannot be forwarded, is missing, may not be opened, or
                nothing answers on it (one line, saying which).
        """
        import docker

        alias = getattr(host, "alias", "host")
        try:
            local = await host.forward_unix(socket_path)
        except Exception as exc:  # noqa: BLE001 - any forwarding failure is one line for the operator
            raise HostError(f"{alias}: cannot forward the Docker socket {socket_path}: {_short(exc)}") from exc

        def open_client() -> tuple[Any, dict[str, Any]]:
            # The constructor already talks to the engine: never on the event loop, which
            # must keep serving the SSH forward this very call goes through.
            sdk = docker.DockerClient(base_url=f"unix://{local}", timeout=timeout)
            return sdk, sdk.api.version()

        try:
            try:
                sdk, version = await asyncio.wait_for(asyncio.to_thread(open_client), ping_timeout)
            except docker.errors.DockerException:
                # A forward channel refused while the probes hold the connection's other
                # channels closes at once (seen under load): one more try before giving up.
                await asyncio.sleep(0.3)
                sdk, version = await asyncio.wait_for(asyncio.to_thread(open_client), ping_timeout)
        except Exception as exc:  # noqa: BLE001 - said in one line, with the likely reason
            why = await _diagnose(host, socket_path)
            await _unforward(host, local)
            timed_out = f"timed out after {ping_timeout:g}s" if isinstance(exc, TimeoutError) else _short(exc)
            raise HostError(f"{alias}: no Docker engine answers on {socket_path}: {why} ({timed_out})") from exc
        red = redactor or getattr(host, "redactor", None) or Redactor.from_environment()
        return cls(sdk, host, socket_path, local, red, version, timeout)

    @classmethod
    async def connect(cls, host: Any, socket_path: str = DEFAULT_SOCKET) -> tuple[DockerApi | None, RunResult]:
        """:meth:`open` that never raises: (api, probe result), api None when unreachable."""
        t = time.monotonic()
        cmd = f"docker-api ping unix://{socket_path}"
        try:
            api = await cls.open(host, socket_path)
        except Exception as exc:  # noqa: BLE001 - any failure means: use the CLI instead
            return None, RunResult(cmd, error=str(exc) or _short(exc), duration=time.monotonic() - t)
        v = api.version
        out = f"engine {v.get('Version')} api {v.get('ApiVersion')} {v.get('Os')}/{v.get('Arch')}\n"
        return api, RunResult(cmd, stdout=out, status=0, duration=time.monotonic() - t)

    async def aclose(self) -> None:
        """Close the client and the forward; never raises (closing must not fail a freeze)."""
        try:
            await asyncio.to_thread(self.sdk.close)
        except Exception:  # noqa: BLE001, S110
            pass
        await _unforward(self.host, self.local)

    # --- calls, as probe results ---------------------------------------------------------------

    async def _call(self, what: str, fn: Any, *args: Any, **kw: Any) -> RunResult:
        """One SDK call in a thread under ``timeout``; its answer redacted, as the CLI's text."""
        t = time.monotonic()
        try:
            value = await asyncio.wait_for(asyncio.to_thread(fn, *args, **kw), self.timeout)
        except TimeoutError:
            return RunResult(
                f"docker-api {what}",
                timed_out=True,
                error=f"timed out after {self.timeout:g}s",
                duration=time.monotonic() - t,
            )
        except Exception as exc:  # noqa: BLE001 - a probe never raises
            # ``error`` (not a status): the API itself failed, so the CLI probe may still answer.
            return RunResult(f"docker-api {what}", error=_short(exc), duration=time.monotonic() - t)
        r = RunResult(f"docker-api {what}", status=0, duration=time.monotonic() - t)
        text = self.redactor.text
        if isinstance(value, tuple):  # an exec: (exit code, stdout, stderr)
            r.status, out, err = value
            r.stdout, r.stderr = text(out.decode(errors="replace")), text(err.decode(errors="replace"))
        elif isinstance(value, bytes):
            r.stdout = text(value.decode(errors="replace"))
        else:
            r.stdout = json.dumps(self.redactor.obj(value))
        return r

    async def ps(self) -> RunResult:
        """``docker ps`` (running containers) as its JSON lines."""
        r = await self._call("GET /containers/json", self.client.containers)
        if r.ok:
            r.stdout = "".join(json.dumps(_ps_row(c)) + "\n" for c in json.loads(r.stdout))
        return r

    async def inspect(self, container: str) -> RunResult:
        """``docker inspect CONTAINER`` (env and secret arguments redacted)."""
        return await self._call(f"GET /containers/{container}/json", self.client.inspect_container, container)

    async def image(self, image_id: str) -> RunResult:
        """``docker image inspect IMAGE``."""
        return await self._call(f"GET /images/{image_id}/json", self.client.inspect_image, image_id)

    async def logs(self, container: str, tail: int = 5000) -> RunResult:
        """``docker logs --tail N CONTAINER`` (stdout and stderr)."""
        return await self._call(
            f"GET /containers/{container}/logs", self.client.logs, container, stdout=True, stderr=True, tail=tail
        )

    async def exec(self, container: str, argv: list[str]) -> RunResult:
        """``docker exec CONTAINER ARGV``: its status, stdout and stderr (redacted)."""

        def run() -> tuple[int | None, bytes, bytes]:
            ex = self.client.exec_create(container, argv, stdout=True, stderr=True)
            out, err = self.client.exec_start(ex["Id"], demux=True)
            return self.client.exec_inspect(ex["Id"]).get("ExitCode"), out or b"", err or b""

        return await self._call(f"exec {container} {' '.join(argv)[:60]}", run)


async def _diagnose(host: Any, socket_path: str) -> str:
    """Why an engine does not answer on ``socket_path``, as seen on the host itself."""
    q = shlex.quote(socket_path)
    script = (
        f"if [ ! -e {q} ]; then echo missing; elif [ ! -S {q} ]; then echo not-a-socket; "
        f"elif [ ! -r {q} ] || [ ! -w {q} ]; then echo denied; else echo silent; fi"
    )
    user = getattr(host, "user", "") or "the remote user"
    try:
        r = await asyncio.wait_for(host.run(script, timeout=5.0, purpose="docker-socket"), 7.0)
        seen = r.stdout.strip() if r.ok else ""
    except Exception:  # noqa: BLE001 - the diagnosis is a courtesy: without it, say less
        seen = ""
    return {
        "missing": "there is no such socket on the host (is dockerd running, and is this its socket?)",
        "not-a-socket": "that path is not a socket",
        "denied": f"{user} may not open it (add {user} to group docker, then reconnect)",
        "silent": "the socket is there but nothing answers on it (is dockerd running?)",
    }.get(seen, f"is dockerd running, and is {user} in group docker?")


async def _unforward(host: Any, local: str) -> None:
    unforward = getattr(host, "unforward", None)
    if unforward is not None:
        try:
            await unforward(local)
        except Exception:  # noqa: BLE001, S110 - a forward that is already gone is fine
            pass


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:300]


def _ps_row(c: dict[str, Any]) -> dict[str, Any]:
    names = [n.lstrip("/") for n in c.get("Names") or []]
    return {
        "ID": c.get("Id", ""),
        "Names": ",".join(names),
        "Image": c.get("Image", ""),
        "Command": c.get("Command", ""),
        "Status": c.get("Status", ""),
    }


# --- the freeze's container probes --------------------------------------------------------


def exec_argv(command: str) -> list[str] | None:
    """The argv the API execs for a CLI probe ``docker exec {container} …`` (None for another probe)."""
    return shlex.split(command[len(_EXEC) :]) if command.startswith(_EXEC) else None


async def container_probes(
    api: DockerApi, container: str, inspect: RunResult, probes: Iterable[Any]
) -> dict[str, RunResult]:
    """The container probes after ``docker_inspect`` (whose answer names the image), through the API.

    Args:
        probes: the freeze's container probes (``.name``, ``.command``): each ``docker exec``
            probe runs the same inner command through the API; ``docker_logs`` and
            ``docker_image_inspect`` are answered by their API calls.
    """
    execs = {p.name: argv for p in probes if (argv := exec_argv(p.command)) is not None}
    image_id = json.loads(inspect.stdout).get("Image") if inspect.ok else None
    jobs: dict[str, Any] = {"docker_logs": api.logs(container)}
    jobs.update({name: api.exec(container, argv) for name, argv in execs.items()})
    if image_id:
        jobs["docker_image_inspect"] = api.image(image_id)
    return dict(zip(jobs, await asyncio.gather(*jobs.values()), strict=True))


# --- typed facts ---------------------------------------------------------------------------


@asynccontextmanager
async def docker_client(host: Any, socket: str = DEFAULT_SOCKET) -> AsyncIterator[Any]:
    """Forward the host's Docker socket and yield a ``docker.DockerClient`` on it (run it in a thread).

    Raises:
        HostError: as :meth:`DockerApi.open`.
    """
    api = await DockerApi.open(host, socket)
    try:
        yield api.sdk
    finally:
        await api.aclose()


async def docker_facts(
    host: Any,
    container: str | None = None,
    *,
    socket: str = DEFAULT_SOCKET,
    redactor: Redactor | None = None,
    log_tail: int = LOG_TAIL,
) -> dict[str, Any]:
    """Engine, container list and (for ``container``, or the only running one) its full facts.

    Returns a JSON-ready dict: ``engine``, ``containers``, and ``container`` / ``image`` /
    ``logs`` when a container is selected; ``error`` (one line) when something could not
    be read. Never raises for a missing container or an unreachable engine.
    """
    try:
        api = await DockerApi.open(host, socket, redactor=redactor)
    except HostError as exc:
        return {"error": str(exc)}
    try:
        job = asyncio.to_thread(_facts, api.client, container, api.redactor, log_tail)
        return await asyncio.wait_for(job, FACTS_TIMEOUT)
    except TimeoutError:
        return {
            "error": f"{getattr(host, 'alias', 'host')}: the Docker engine on {socket} took over {FACTS_TIMEOUT:g}s"
        }
    except Exception as exc:  # noqa: BLE001 - an engine error is one line, not a traceback
        return {"error": f"{getattr(host, 'alias', 'host')}: Docker engine on {socket}: {_short(exc)}"}
    finally:
        await api.aclose()


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
        # env first: its secret values are learnt, then masked wherever else they stand
        "env": red.env_list(cfg.get("Env") or []),
        "entrypoint": red.obj(cfg.get("Entrypoint")),
        "cmd": red.obj(cfg.get("Cmd")),
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

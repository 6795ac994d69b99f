"""Container facts through the Docker Engine API, over a forwarded ``docker.sock``.

The API gives the same objects ``docker inspect`` prints, without depending on a docker
CLI on the host or on the remote user's shell. The socket is forwarded through the host's
own connection (``host.forward_unix``; on this machine it is used as is) and spoken to with
the docker SDK, which is synchronous: every call runs in a thread with a timeout.

Each answer is returned as a :class:`RunResult` under the *same probe name* and in the
*same text form* as the CLI probe it replaces (``docker ps`` JSON lines, ``docker inspect``
JSON, exec output), so one parser and one assembly serve both paths. When the API cannot
be reached (no socket, permission denied), the freeze falls back to the CLI probes and
records why in probe ``docker_api``.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

from ..remote.base import Host, RunResult
from .probes import probes_for

DEFAULT_SOCKET = "/var/run/docker.sock"
API_TIMEOUT = 8.0
PING_TIMEOUT = 6.0
"""The first call also imports the SDK and opens the forward: generous on a loaded machine."""


class DockerApi:
    """A docker SDK client on a (forwarded) socket; every method returns a RunResult."""

    def __init__(self, client: Any, where: str) -> None:
        self.client = client
        self.where = where

    @classmethod
    async def connect(cls, host: Host, socket_path: str = DEFAULT_SOCKET) -> tuple[DockerApi | None, RunResult]:
        """Forward the socket and ping the engine; (api, probe result) — api is None when unreachable."""
        t = time.monotonic()
        cmd = f"docker-api ping unix://{socket_path}"
        try:
            import docker

            local = await host.forward_unix(socket_path)
            if not os.path.exists(local):
                raise FileNotFoundError(f"no socket at {local}")

            def open_client() -> tuple[Any, dict]:
                # The constructor already talks to the engine: never on the event loop, which
                # must keep serving the SSH forward this very call goes through.
                c = docker.APIClient(base_url=f"unix://{local}", timeout=API_TIMEOUT)
                return c, c.version()

            try:
                client, version = await asyncio.wait_for(asyncio.to_thread(open_client), PING_TIMEOUT)
            except docker.errors.DockerException:
                # A forward channel refused while the probes hold the connection's other
                # channels closes at once (seen under load): one more try before the CLI.
                await asyncio.sleep(0.3)
                client, version = await asyncio.wait_for(asyncio.to_thread(open_client), PING_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - any failure means: use the CLI instead
            return None, RunResult(
                cmd, error=f"Docker API unreachable at {socket_path}: {_short(exc)}", duration=time.monotonic() - t
            )
        out = f"engine {version.get('Version')} api {version.get('ApiVersion')} {version.get('Os')}/{version.get('Arch')}\n"
        return cls(client, socket_path), RunResult(cmd, stdout=out, status=0, duration=time.monotonic() - t)

    async def _call(self, what: str, fn: Any, *args: Any, **kw: Any) -> RunResult:
        t = time.monotonic()
        try:
            value = await asyncio.wait_for(asyncio.to_thread(fn, *args, **kw), API_TIMEOUT)
        except TimeoutError:
            return RunResult(
                f"docker-api {what}",
                timed_out=True,
                error=f"timed out after {API_TIMEOUT:g}s",
                duration=time.monotonic() - t,
            )
        except Exception as exc:  # noqa: BLE001 - a probe never raises
            # ``error`` (not a status): the API itself failed, so the CLI probe may still answer.
            return RunResult(f"docker-api {what}", error=_short(exc), duration=time.monotonic() - t)
        text = value.decode(errors="replace") if isinstance(value, bytes) else value
        return RunResult(f"docker-api {what}", stdout=text, status=0, duration=time.monotonic() - t)

    async def ps(self) -> RunResult:
        r = await self._call("GET /containers/json", self.client.containers)
        if r.ok:
            rows: Any = json.loads(r.stdout) if isinstance(r.stdout, str) else r.stdout
            r.stdout = "".join(json.dumps(_ps_row(c)) + "\n" for c in rows)
        return r

    async def inspect(self, container: str) -> RunResult:
        return _as_json(await self._call(f"GET /containers/{container}/json", self.client.inspect_container, container))

    async def image(self, image_id: str) -> RunResult:
        return _as_json(await self._call(f"GET /images/{image_id}/json", self.client.inspect_image, image_id))

    async def logs(self, container: str) -> RunResult:
        return await self._call(
            f"GET /containers/{container}/logs", self.client.logs, container, stdout=True, stderr=True, tail=5000
        )

    async def exec(self, container: str, argv: list[str]) -> RunResult:
        def run() -> tuple[int | None, bytes, bytes]:
            ex = self.client.exec_create(container, argv, stdout=True, stderr=True)
            out, err = self.client.exec_start(ex["Id"], demux=True)
            return self.client.exec_inspect(ex["Id"]).get("ExitCode"), out or b"", err or b""

        t = time.monotonic()
        r = await self._call(f"exec {container} {' '.join(argv)[:60]}", run)
        if r.ok and isinstance(r.stdout, tuple):
            code, out, err = r.stdout
            return RunResult(
                r.command,
                stdout=out.decode(errors="replace"),
                stderr=err.decode(errors="replace"),
                status=code,
                duration=time.monotonic() - t,
            )
        return r

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:  # noqa: BLE001, S110 - closing a client must never fail a freeze
            pass


def _ps_row(c: dict[str, Any]) -> dict[str, Any]:
    names = [n.lstrip("/") for n in c.get("Names") or []]
    return {
        "ID": c.get("Id", ""),
        "Names": ",".join(names),
        "Image": c.get("Image", ""),
        "Command": c.get("Command", ""),
        "Status": c.get("Status", ""),
    }


def _as_json(r: RunResult) -> RunResult:
    if r.ok and not isinstance(r.stdout, str):
        r.stdout = json.dumps(r.stdout)
    return r


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:300]


# The in-container probes, as argv for exec (the CLI probe runs the same inner shell text).
def exec_argv(probe_name: str) -> list[str]:
    """The argv the API execs for an in-container probe (same shell text as the CLI probe)."""
    import shlex

    cmd = next(p.command for p in probes_for("container") if p.name == probe_name)
    rest = cmd.split(" {container} ", 1)[1]
    return shlex.split(rest)


async def container_probes(api: DockerApi, container: str, inspect: RunResult) -> dict[str, RunResult]:
    """The container probes after ``docker_inspect`` (whose answer names the image), through the API."""
    image_id = json.loads(inspect.stdout).get("Image") if inspect.ok else None
    names = ["container_smi_list", "container_env", "container_ldconfig", "container_ld_so_conf", "container_versions"]
    coros = [api.logs(container), *(api.exec(container, exec_argv(n)) for n in names)]
    if image_id:
        coros.append(api.image(image_id))
    outs = await asyncio.gather(*coros)
    results = {"docker_logs": outs[0], **dict(zip(names, outs[1 : 1 + len(names)], strict=True))}
    if image_id:
        results["docker_image_inspect"] = outs[-1]
    return results

"""The ``docker`` launcher: a ``docker run`` container (Docker Engine API), or a bare process on the host.

This is what k3tui did before launchers existed, moved behind the protocol unchanged:

- freeze: the host's probes, the container found through the Engine API over the forwarded
  socket (the docker CLI as fallback), the serving process by ``pgrep`` —
  :func:`k3tui.scene.freeze.freeze` does all of it; this launcher only tags the scene
  (``docker`` when a container was frozen, ``process`` for a bare server);
- a ladder run: ``docker run --rm … IMAGE vllm serve …`` (or ``vllm serve …`` when the config
  has no image), detached on the host with its log in the run's folder, followed by byte
  offset and resumed after a drop (:meth:`Host.tail`), stopped with TERM then KILL.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator
from typing import Any

from ..errors import UsageError
from .base import Pick


class DockerLauncher:
    """Docker containers and bare processes on the host (see the module docstring)."""

    name = "docker"

    def __init__(self, pick: Pick | None = None) -> None:
        self.pick = pick or Pick()

    async def freeze(self, host: Any, pick: Pick, *, emit: Any = None, reason: str = "operator", **kw: Any) -> Any:
        """:func:`k3tui.scene.freeze.freeze` as before (``kw``: its ``run``, ``log_text`` …), the scene tagged."""
        from ..scene.freeze import freeze

        if pick.image:
            raise UsageError(
                f"--image {pick.image!r} chooses a container through containerd: add --runtime containerd "
                "(a Docker container is named with --container)"
            )
        return await freeze(
            host,
            container=pick.container,
            pid=pick.pid,
            emit=emit,
            reason=reason,
            docker_socket=pick.docker_socket,
            overlay=_tag,
            **kw,
        )

    def plan(self, config: Any, run_id: str) -> list[str]:
        from ..ladder.config import command_line

        return [command_line(config, run_id)]

    async def start(self, host: Any, config: Any, run_id: str, rung: str = "") -> Any:
        from ..ladder.config import launch_argv, launch_env

        cmd, env = shlex.join(launch_argv(config, run_id)), launch_env(config)
        try:
            return await host.start_detached(cmd, run_id=run_id, env=env, rung=rung)
        except TypeError:  # a Host without the optional ``rung`` keyword
            return await host.start_detached(cmd, run_id=run_id, env=env)

    def follow(self, host: Any, handle: Any) -> AsyncIterator[str]:
        tail: AsyncIterator[str] = host.tail(handle)
        return tail

    async def forward(self, host: Any, handle: Any, port: int) -> int:
        local: int = await host.forward_port(port)
        return local

    async def stop(self, host: Any, handle: Any, grace: float = 10.0, reason: str = "") -> int | None:
        try:
            status: int | None = await host.stop(handle, grace=grace, reason=reason)
        except TypeError:  # a Host without the optional ``reason`` keyword
            status = await host.stop(handle, grace=grace)
        return status


def _tag(scene: Any) -> None:
    scene.launcher = "docker" if scene.container is not None or scene.process is None else "process"

"""Launchers: where the server under test runs, behind one protocol (:class:`~k3tui.launch.base.Launcher`).

Registered launchers::

    docker      a ``docker run`` container (Docker Engine API)                      docker.py
    process     a bare ``vllm serve`` on the host (the same module: no image, no container)
    containerd  a container on a Kubernetes node, through ``ctr`` (OCI runtime spec, CRI log)  containerd.py
    kubernetes  a pod through ``kubectl`` (manifest, owner, events, previous log), on top of
                containerd when the target is the pod's node                        kubernetes.py
    slurm       a Slurm job (``scontrol show job -dd``, the batch script, the step's env and
                output file, earlier attempts); runs are the script resubmitted     slurm.py

The scene records which one froze it (``scene.launcher``); ``--runtime NAME`` picks one,
otherwise :func:`detect` asks the host (``--pod`` → kubernetes; ``--job`` → slurm; a Docker socket → docker;
a containerd socket and no Docker → containerd; neither → docker, which still finds a
bare ``vllm serve`` process).

How to add a launcher (issue 19 adds ``slurm`` this way):

1. write ``k3tui/launch/NAME.py`` with a class that has ``name = "NAME"`` and the methods of
   :class:`~k3tui.launch.base.Launcher` (``freeze``, ``plan``, ``start``, ``follow``,
   ``forward``, ``stop``), built from a :class:`~k3tui.launch.base.Pick` (``Cls(pick)``);
   freeze through :func:`k3tui.scene.freeze.freeze` with an ``overlay`` that adds this
   launcher's facts, so the host probes, redaction and the ``SceneFrozen`` event stay one path;
2. add ``"NAME": "k3tui.launch.NAME:Cls"`` to :data:`REGISTRY` (and a line above);
3. if the host can tell that it runs there, teach :func:`detect`;
4. test it against the real part (a real daemon, a real client) in ``tests/test_launch_NAME.py``.

Launcher modules may import ``k3tui.scene``, ``k3tui.remote``, ``k3tui.ladder.config``;
nothing below them imports this package back except through :func:`get` (by name,
at call time), so there is no import circle (tests/test_import_hygiene.py).
"""

from __future__ import annotations

import importlib
import shlex
from typing import Any

from ..errors import UsageError
from .base import CONTAINERD_NAMESPACE, CONTAINERD_SOCKET, DOCKER_SOCKET, Launcher, Pick

REGISTRY: dict[str, str] = {
    "docker": "k3tui.launch.docker:DockerLauncher",
    "process": "k3tui.launch.docker:DockerLauncher",
    "containerd": "k3tui.launch.containerd:ContainerdLauncher",
    "kubernetes": "k3tui.launch.kubernetes:KubernetesLauncher",
    "slurm": "k3tui.launch.slurm:SlurmLauncher",
}
"""Launcher name → ``module:Class`` (imported only when used)."""

__all__ = [
    "CONTAINERD_NAMESPACE",
    "CONTAINERD_SOCKET",
    "DOCKER_SOCKET",
    "REGISTRY",
    "Launcher",
    "Pick",
    "detect",
    "get",
    "names",
]


def names() -> list[str]:
    """The registered launcher names, for ``--runtime`` choices and error messages."""
    return list(REGISTRY)


def get(name: str, pick: Pick | None = None) -> Launcher:
    """The launcher ``name`` for ``pick`` (UsageError naming the known ones for an unknown name)."""
    try:
        module, cls = REGISTRY[name].split(":")
    except KeyError:
        raise UsageError(f"unknown runtime {name!r}: use one of {', '.join(REGISTRY)}") from None
    launcher: Launcher = getattr(importlib.import_module(module), cls)(pick or Pick())
    return launcher


async def detect(host: Any, pick: Pick) -> str:
    """Which launcher serves ``pick`` on ``host`` (see the module docstring for the order)."""
    if pick.runtime:
        get(pick.runtime, pick)  # an unknown name fails here, before any probe
        return pick.runtime
    if pick.pod:
        return "kubernetes"
    if pick.job:
        return "slurm"
    sockets = [s for s in (pick.docker_socket, pick.containerd_socket) if s]
    if not sockets:
        return "docker"
    script = "; ".join(f"test -S {shlex.quote(s)} && echo {shlex.quote(s)}" for s in sockets) + "; exit 0"
    try:
        r = await host.run(script, timeout=5.0, purpose="launcher")
        present = set(r.stdout.split()) if r.ok else set()
    except Exception:  # noqa: BLE001 - a host that cannot say is frozen as before (docker, or a bare process)
        present = set()
    if pick.containerd_socket in present and pick.docker_socket not in present:
        return "containerd"
    return "docker"


async def freeze_host(
    host: Any, pick: Pick | None = None, *, emit: Any = None, reason: str = "operator", **docker: Any
) -> Any:
    """Freeze ``host`` through the launcher that runs its server (``pick.runtime``, or :func:`detect`).

    ``docker`` keywords (``run=``, ``log_text=`` …) go to :func:`k3tui.scene.freeze.freeze` for the
    docker launcher, whose freeze is exactly what it was before launchers existed.
    """
    pick = pick or Pick()
    name = await detect(host, pick)
    if name in ("docker", "process"):
        from .docker import DockerLauncher

        return await DockerLauncher(pick).freeze(host, pick, emit=emit, reason=reason, **docker)
    return await get(name, pick).freeze(host, pick, emit=emit, reason=reason)

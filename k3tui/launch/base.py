"""The launcher protocol: how a serving process is found, frozen, started, followed and stopped.

A launcher is the one place that knows *where* the server under test runs — a ``docker run``
container, a container of a Kubernetes pod on its node (containerd), a pod through the
Kubernetes API, a Slurm job, a bare process. Everything above it (the freeze, the check,
the ladder) talks to this protocol only, so a new kind of deployment is one new module,
not an edit in every caller.

The protocol is deliberately small:

- :meth:`Launcher.freeze` — find the serving container/process named by a :class:`Pick`
  and freeze the scene (the host's probes plus this launcher's own facts), tagged
  ``scene.launcher = name``;
- :meth:`Launcher.start` / :meth:`Launcher.follow` / :meth:`Launcher.forward` /
  :meth:`Launcher.stop` — one ladder run: start it from a :class:`~k3tui.ladder.config.RunConfig`,
  follow its log (resuming after a dropped connection), reach its port, stop it;
- :meth:`Launcher.plan` — what a run will apply, shown before it runs (the ``docker run``
  line, the pod manifest diff …).

This module imports nothing of the scene or the ladder at run time: it is the leaf every
launcher module and every caller shares.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import UsageError
from ..remote.base import RunResult

DOCKER_SOCKET = "/var/run/docker.sock"
CONTAINERD_SOCKET = "/run/containerd/containerd.sock"
CONTAINERD_NAMESPACE = "k8s.io"
"""The containerd namespace the kubelet's CRI plugin puts every pod container in."""


@dataclass
class Pick:
    """What the operator named on the command line: which serving process, and how to reach its launcher."""

    container: str | None = None
    """Container name (a pod's container name, or a Docker name) or id."""
    pod: str | None = None
    """``NAMESPACE/NAME`` of a Kubernetes pod."""
    image: str | None = None
    """An image reference, exact (``vllm/vllm-openai:v0.11.0`` = ``docker.io/vllm/vllm-openai:v0.11.0``) or a
    part of one (``vllm-openai``): the container running it (containerd; ambiguous parts are a UsageError)."""
    pid: int | None = None
    runtime: str = ""
    """A launcher name (``docker``, ``containerd``, ``kubernetes`` …); "" = detect on the host."""
    docker_socket: str | None = DOCKER_SOCKET
    containerd_socket: str = CONTAINERD_SOCKET
    containerd_namespace: str = CONTAINERD_NAMESPACE
    pod_log_root: str = "/var/log/pods"
    """Where the kubelet writes the CRI logs of pod containers on the node."""
    kube_context: str | None = None
    kubeconfig: str | None = None
    job: str | None = None
    """A Slurm job id (``--job``): the serving job (:mod:`k3tui.launch.slurm`)."""
    slurm_conf: str | None = None
    """``SLURM_CONF`` for the Slurm clients on the target (None: their default, ``/etc/slurm/slurm.conf``)."""
    node_target: str = "{node}"
    """How to reach each node of a Slurm job over SSH: a target where ``{node}`` is the Slurm node name
    and ``{addr}`` its ``NodeAddr`` (default: the node name, as your ssh config knows it)."""
    connect: Any = None
    """``await connect(target)`` → another host (a node of the job); set by the CLI from its SSH options
    (None: only the target is frozen)."""

    def pod_ref(self) -> tuple[str, str] | None:
        """(namespace, name) of ``--pod`` (UsageError when it is not ``NAMESPACE/NAME``)."""
        if not self.pod:
            return None
        ns, sep, name = self.pod.partition("/")
        if not sep or not ns or not name or "/" in name:
            raise UsageError(f"--pod {self.pod!r}: expected NAMESPACE/NAME (e.g. vllm/vllm-server-7d9c-x2x)")
        return ns, name


@runtime_checkable
class Launcher(Protocol):
    """One way a serving process runs; see the module docstring."""

    name: str
    """The registry name, also recorded as the scene's ``launcher``."""
    # Optional: ``remove_ended_runs = True`` when a run's remains outlive its process (a pod in
    # the API): the ladder then calls :meth:`stop` for a run that already ended, too.

    async def freeze(self, host: Any, pick: Pick, *, emit: Any = None, reason: str = "operator") -> Any:
        """Freeze the scene of ``host`` for the process ``pick`` names; returns a :class:`~k3tui.scene.model.Scene`.

        Never raises for a fact that cannot be read: the scene says ``None`` and ``probes`` says why.
        """
        ...

    def plan(self, config: Any, run_id: str) -> list[str]:
        """Lines the operator sees before a run starts (the command, or the manifest's diff)."""
        ...

    async def start(self, host: Any, config: Any, run_id: str, rung: str = "") -> Any:
        """Start one run of ``config``; returns its handle (a :class:`~k3tui.remote.base.RunHandle`)."""
        ...

    def follow(self, host: Any, handle: Any) -> AsyncIterator[str]:
        """The run's log as whole lines, resuming after a dropped connection, until the run ends."""
        ...

    async def forward(self, host: Any, handle: Any, port: int) -> int:
        """A local port that reaches the run's ``port``."""
        ...

    async def stop(self, host: Any, handle: Any, grace: float = 10.0, reason: str = "") -> int | None:
        """Stop the run (and remove what it created); returns its exit status when known."""
        ...


async def run_probe(
    host: Any, probes: dict[str, RunResult], name: str, command: str, timeout: float = 20.0, stdin: str | None = None
) -> RunResult:
    """Run one launcher command on ``host`` and keep its result under ``name`` (a scene probe); never raises."""
    t = time.monotonic()
    try:
        kw = {"stdin": stdin} if stdin is not None else {}
        r: RunResult = await host.run(command, timeout=timeout, purpose=name, **kw)
    except Exception as exc:  # noqa: BLE001 - a probe never raises
        r = RunResult(command, error=f"{type(exc).__name__}: {exc}", duration=time.monotonic() - t)
    probes[name] = r
    return r

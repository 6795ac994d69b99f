"""Opening the hosts of a target and freezing them all, for ``freeze`` and ``check``.

A target is ``local`` (this machine, no SSH) or a group ``a,b`` of SSH hosts: every host
gets its own connection and its own freeze, all concurrent, one recording for all (each
event tagged by its host). A host that cannot be reached is reported in one line and
the others still freeze.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from ..errors import HostError, RecordingError
from ..events import Header
from ..launch import CONTAINERD_SOCKET, DOCKER_SOCKET, Pick, freeze_host, names
from ..recording import Recorder
from ..remote.base import Emit
from .model import Scene
from .outcome import FreezeOutcome

MAX_CONCURRENT_FREEZES = 32
"""Hosts frozen at once in a group (each runs ~20 probes on its own connection)."""


@contextlib.contextmanager
def recorder_for(args: argparse.Namespace, profile: str = ""):  # noqa: ANN201 - a context manager
    """A Recorder for ``--record FILE`` (or None), closed on exit."""
    path = getattr(args, "record", None)
    if not path:
        yield None
        return
    target = args.target or getattr(args, "group", None) or ""  # an --inventory names a group (issue 9)
    rec = Recorder(path, Header(host=target, profile=profile, title=f"k3tui {args.command} {target}".rstrip()))
    try:
        yield rec
    finally:
        rec.close()
    if rec.failure:  # a full disk: one line on stderr naming where the recording went, exit non-zero
        raise RecordingError(rec.failure)


@contextlib.asynccontextmanager
async def open_hosts(args: argparse.Namespace, emit: Emit | None) -> AsyncIterator[tuple[list[Any], dict[str, str]]]:
    """Open every host of ``args.target``; yields (hosts, {alias: error}) and closes them."""
    if args.target == "local":
        from ..remote.local import LocalHost

        async with LocalHost(emit=emit) as h:
            yield [h], {}
        return
    from ..remote.ssh import connect_group

    if getattr(args, "inventory", None) or "," in (args.target or ""):  # issue 9: head first, roles recorded
        from ..fleet.cli import connect_inventory

        results, aliases = await connect_inventory(args, emit)
    else:
        results = await connect_group(
            args.target,
            return_exceptions=True,
            identity=args.identity,
            known_hosts=args.known_hosts,
            accept_new_host_key=args.accept_new_host_key,
            ssh_config=args.ssh_config,
            connect_timeout=args.connect_timeout,
            emit=emit,
        )
        from ..remote.target import parse_group

        aliases = [t.alias for t in parse_group(args.target)]
    hosts = [r for r in results if not isinstance(r, BaseException)]
    errors = {a: _one_line(r) for a, r in zip(aliases, results, strict=False) if isinstance(r, BaseException)}
    if errors and not hosts:
        raise (
            next(r for r in results if isinstance(r, HostError))
            if any(isinstance(r, HostError) for r in results)
            else HostError(next(iter(errors.values())))
        )
    try:
        yield hosts, errors
    finally:
        await asyncio.gather(*(h.close() for h in hosts), return_exceptions=True)


def reject_inventory(args: argparse.Namespace) -> None:
    """``--group`` needs ``--inventory``; without an inventory a TARGET is needed (issue 9)."""
    from ..errors import UsageError

    if getattr(args, "group", None) and not getattr(args, "inventory", None):
        raise UsageError("--group names a group of an inventory: add --inventory FILE")
    if not getattr(args, "inventory", None) and not args.target:
        raise UsageError("no target: name the host(s) as a,b or give --inventory FILE --group NAME")


def _one_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


async def freeze_target(args: argparse.Namespace, emit: Emit | None, reason: str = "operator") -> FreezeOutcome:
    """Freeze every host of the target concurrently."""
    if getattr(args, "inventory", None) or "," in (args.target or ""):
        from ..fleet.cli import freeze_group  # issue 9: bounded concurrency, per-host deadlines, progress

        return await freeze_group(args, emit, reason)
    out = FreezeOutcome()
    async with open_hosts(args, emit) as (hosts, errors):
        out.unreachable = errors
        pick = pick_from_args(args)
        bound = asyncio.Semaphore(MAX_CONCURRENT_FREEZES)

        async def one(h: Any) -> Scene:
            async with bound:
                return await freeze_launched(h, pick, emit, reason)

        scenes = await asyncio.gather(*(one(h) for h in hosts))
        out.scenes = list(scenes)
    return out


def pick_from_args(args: argparse.Namespace) -> Pick:
    """What ``--container``/``--pod``/``--pid``/``--runtime`` … name (:mod:`k3tui.launch`)."""
    pick = Pick(
        container=getattr(args, "container", None),
        pod=getattr(args, "pod", None),
        image=getattr(args, "image", None),
        pid=getattr(args, "pid", None),
        runtime=getattr(args, "runtime", None) or "",
        docker_socket=getattr(args, "docker_socket", DOCKER_SOCKET) or None,
        containerd_socket=getattr(args, "containerd_socket", None) or CONTAINERD_SOCKET,
        pod_log_root=getattr(args, "pod_log_root", None) or "/var/log/pods",
        kube_context=getattr(args, "kube_context", None),
        kubeconfig=getattr(args, "kubeconfig", None),
        job=getattr(args, "job", None),
        slurm_conf=getattr(args, "slurm_conf", None),
        node_target=getattr(args, "node_target", None) or "{node}",
        connect=_connector(args) if getattr(args, "job", None) else None,
    )
    pick.pod_ref()  # a malformed --pod is a usage error before any host is touched
    return pick


def _connector(args: argparse.Namespace) -> Any:
    """Opens another host with the command's SSH options (a Slurm job's other nodes, :mod:`k3tui.launch.slurm`)."""

    async def connect_one(target: str) -> Any:
        from ..remote.ssh import connect

        return await connect(
            target,
            identity=args.identity,
            known_hosts=args.known_hosts,
            accept_new_host_key=args.accept_new_host_key,
            ssh_config=args.ssh_config,
            connect_timeout=args.connect_timeout,
        )

    return connect_one


async def freeze_launched(host: Any, pick: Pick, emit: Emit | None, reason: str = "operator") -> Scene:
    """Freeze one host through the launcher that runs its server (``--runtime``, or detected on the host)."""
    scene: Scene = await freeze_host(host, pick, emit=emit, reason=reason)
    return scene


def add_scene_target_options(p: argparse.ArgumentParser) -> None:
    """``--container`` and ``--pid`` (shared by ``freeze`` and ``check``)."""
    p.add_argument("--container", help="serving container name or id (default: the one running vLLM)")
    p.add_argument("--pid", type=int, help="host pid of the serving process (default: found with pgrep)")
    add_launcher_options(p)
    p.add_argument(
        "--docker-socket",
        default="/var/run/docker.sock",
        help="the Docker Engine socket on the host, reached through a forward ('' = docker CLI only)",
    )
    # a group or an --inventory goes through k3tui.fleet (issue 9)
    p.add_argument("--concurrency", type=int, default=16, help="hosts frozen at once in a group (default 16)")
    p.add_argument(
        "--host-timeout", type=float, default=60.0, help="seconds one host of a group may take in all (default 60)"
    )


def add_launcher_options(p: argparse.ArgumentParser) -> None:
    """``--pod``, ``--runtime`` and how to reach containerd / the Kubernetes API (freeze, check, ladder)."""
    p.add_argument(
        "--pod", metavar="NAMESPACE/NAME", help="the serving pod (Kubernetes: kubectl, and containerd on its node)"
    )
    p.add_argument(
        "--runtime",
        choices=names(),
        help="where the server runs (default: detected: --pod -> kubernetes, a Docker socket -> docker, "
        "a containerd socket without Docker -> containerd)",
    )
    p.add_argument(
        "--containerd-socket",
        default=CONTAINERD_SOCKET,
        help=f"containerd's socket on the host (default {CONTAINERD_SOCKET})",
    )
    p.add_argument(
        "--image",
        metavar="REF",
        help="containerd: the container of this image (the exact reference, or a part that names one image)",
    )
    p.add_argument("--pod-log-root", default="/var/log/pods", help="the kubelet's pod log folder on the node")
    p.add_argument(
        "--kube-context", metavar="NAME", help="kubectl context on the target (default: its current context)"
    )
    p.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig file on the target (default: kubectl's own)")
    p.add_argument("--job", metavar="JOBID", help="the serving Slurm job (TARGET: a login node or the job's node)")
    p.add_argument(
        "--slurm-conf", metavar="PATH", help="SLURM_CONF for the Slurm clients on the target (default: theirs)"
    )
    p.add_argument(
        "--node-target",
        metavar="TEMPLATE",
        help="how to reach each node of the --job over SSH: {node} = Slurm node name, {addr} = its NodeAddr "
        "(default '{node}', as your ssh config knows it)",
    )

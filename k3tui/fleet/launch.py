"""Multi-node launch for the ladder: every node's run a detached run of one deployment.

A small layer over :class:`~k3tui.ladder.LadderEngine` (hosts[0] is the head). The launch
shape is the profile's ``[launch.multinode]`` (data, see :mod:`k3tui.profile`), in one of
two modes:

- ``vllm``: vLLM's own multi-node options. The workers start first (``vllm serve …
  --nnodes N --node-rank i --master-addr HEAD --master-port P --headless``), then the head
  (``--node-rank 0``, the API server), each a detached run on its own host, its log
  classified live.
- ``ray``: a Ray cluster. ``ray start --head --port R --block`` on the head and ``ray start
  --address HEAD:R --block`` on each worker, each a detached run; ``ray status`` is polled
  on the head until it lists every node (bounded by ``cluster_timeout_s``; a node whose
  ``ray start`` never printed "Ray runtime started." is named as missing); then ``vllm
  serve … --distributed-executor-backend ray`` starts on the head, a detached run too. When
  the cluster is incomplete at the deadline vLLM is started anyway, so its own error (the
  placement group it cannot get) is on record; a ``ray start`` that *ends* stops the wait
  and the launch instead. Stopping tears down ``vllm serve`` first, then ray on every node.

What changes from one host:

- **The config the ledger records stays the deployment's** (one variable per step); the
  node flags (``--node-rank``, ``--distributed-executor-backend ray``, ``RAY_ADDRESS``)
  are derived from the topology at launch and show in each node's ``RunStarted``
  command, so they never count as a changed variable. The launch shape (mode, head,
  workers, ports) is said once, in a Notice, when the first deployment starts.
- **A failure on any node is the deployment's failure**, and the rung names the node:
  "start-up failed on node tray02 at stage engine: …". The first root exception of the
  deployment is the one **printed first**: each node's exception line is placed on our
  clock by its own log stamp, corrected by that host's clock skew (measured at connect,
  ``HostConnected.clock_skew``) and its UTC offset (vLLM prints naive local time), as the
  merged timeline of :mod:`k3tui.fleet.timeline` does. Arrival order would be wrong
  whenever one node's log reaches us later (a slower tail, a reconnect); arrival only
  decides when a line has no stamp, or two stamps fall within the same second (vLLM
  stamps to the second).
- **The first failure on any node freezes the scene of every node**, once per launch,
  each host with its own run's log (the head's ``vllm serve``, a worker's ``vllm serve``
  or ``ray start``).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shlex
import time
from dataclasses import dataclass, field
from typing import Any

import msgspec

from .. import events as ev
from ..errors import UsageError
from ..ladder import LadderEngine
from ..ladder.config import RunConfig, apply_changes, changes_from_args, launch_argv
from ..ladder.server import EXCEPTION_GRACE_S, Outcome, Server
from ..profile import MultiNodeSpec, RayNodes, VllmNodes, fill_node_args
from .timeline import NodeLog, clock, line_time, only_a_consequence

MASTER_PORT = 29501
MODES = ("vllm", "ray")
STAMP_RESOLUTION_S = 1.0
"""vLLM's log stamps are to the second: closer than this, arrival order decides."""


def node_config(
    cfg: RunConfig,
    nnodes: int,
    rank: int,
    master_addr: str,
    master_port: int = MASTER_PORT,
    spec: VllmNodes | None = None,
) -> RunConfig:
    """The deployment's config as node ``rank`` of ``nnodes`` runs it (rank 0 = head, others headless)."""
    spec = spec or VllmNodes()
    args = spec.head_args if rank == 0 else spec.worker_args
    values = {"nnodes": nnodes, "rank": rank, "master_addr": master_addr, "master_port": master_port}
    return apply_changes(cfg, changes_from_args(fill_node_args(args, **values)))


def ray_serve_config(cfg: RunConfig, spec: RayNodes, **values: Any) -> RunConfig:
    """The head's ``vllm serve`` in ray mode: the executor flag, ``RAY_ADDRESS`` and the shared ``/tmp/ray`` added."""
    changes: dict[str, Any] = changes_from_args(fill_node_args(spec.serve_args, **values))
    filled = fill_node_args(list(spec.serve_env.values()), **values)
    changes.update({f"env:{k}": v for k, v in zip(spec.serve_env, filled, strict=True)})
    out = apply_changes(cfg, changes)
    return msgspec.structs.replace(out, docker_args=[*out.docker_args, *spec.docker_args]) if out.image else out


def helper_config(cfg: RunConfig, argv: list[str], spec: RayNodes | None = None, env: bool = True) -> RunConfig:
    """A helper command (``ray start``, ``ray status``) contained like the deployment's server.

    ``ray start`` gets the run's env and visible devices too: Ray's workers (vLLM's ranks on
    that node) are spawned by its raylet and inherit them (``NCCL_*``, ``CUDA_VISIBLE_DEVICES``).
    """
    return RunConfig(
        entry=list(argv),
        image=cfg.image,
        docker_args=[*cfg.docker_args, *(spec.docker_args if spec is not None else [])],
        visible_devices=cfg.visible_devices,
        env=dict(cfg.env) if env else {},
    )


_ACTIVE = re.compile(r"^\s*(\d+)\s+\S")
_GPUS = re.compile(r"^\s*[\d.]+/([\d.]+)\s+GPU\b")


def parse_ray_status(text: str) -> tuple[int, float] | None:
    """``ray status`` → (nodes listed as active, GPUs in the cluster); None when it shows no cluster.

    Reads Ray's own layout (``ray.autoscaler.v2.utils.ClusterStatusFormatter``): the node
    lines under ``Active:`` (``Healthy:`` in older Ray) up to ``Pending:``, and the
    ``0.0/8.0 GPU`` line under the usage.
    """
    nodes, gpus, section = 0, 0.0, ""
    seen = False
    for line in text.splitlines():
        head = line.strip()
        if head in ("Active:", "Healthy:"):
            section, seen = "active", True
            continue
        if head.endswith(":") and not _ACTIVE.match(line):
            section = ""
        if section == "active" and (m := _ACTIVE.match(line)):
            nodes += int(m.group(1))
        elif m := _GPUS.match(line):
            gpus = float(m.group(1))
    return (nodes, gpus) if seen else None


@dataclass
class DeploymentServer(Server):
    """The head's ``vllm serve``, holding the other runs of the deployment: starts, waits and stops them as one."""

    workers: list[Server] = field(default_factory=list)
    """The workers' ``vllm serve`` runs (vllm mode)."""
    cluster: list[RayNode] = field(default_factory=list)
    """The ``ray start`` runs, head first (ray mode)."""
    node_cfg: RunConfig | None = None
    utc_offsets: dict[str, float | None] = field(default_factory=dict)
    """Each host's offset from UTC (vLLM stamps are naive local time)."""
    missing: list[str] = field(default_factory=list)
    """Nodes whose ``ray start`` never joined the cluster."""
    aborted: tuple[Server, str] | None = None
    """A node run that ended before the head's ``vllm serve`` could start, and why."""

    @property
    def nodes(self) -> list[Server]:
        """Every run of the deployment: the head's server, the workers' servers, the ray runs."""
        return [self, *self.workers, *self.cluster]

    @property
    def launched(self) -> list[Server]:
        return [s for s in self.nodes if s.handle is not None]

    async def start(self, rung: str) -> None:
        base = self.config
        self.config = self.node_cfg or base
        try:
            await super().start(rung)
        finally:
            self.config = base  # the ledger's config: the same deployment is not "changed"

    async def wait_ready(self, timeout: float) -> bool:
        ready = asyncio.create_task(super().wait_ready(timeout))
        broken = asyncio.create_task(self._a_node_broke())
        done, _ = await asyncio.wait({ready, broken}, return_when=asyncio.FIRST_COMPLETED)
        if ready in done:
            broken.cancel()
            return ready.result()
        ready.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ready
        return False

    def broken_node(self) -> Server | None:
        """A node run (not the head's server) that ended, or failed longer ago than the grace period."""
        for w in (*self.workers, *self.cluster):
            failed = w.exception is not None and time.monotonic() - w.exception_t > EXCEPTION_GRACE_S
            if (w.ended.is_set() and not w.stopped_by_us) or failed:
                return w
        return None

    async def _a_node_broke(self) -> None:
        while self.broken_node() is None:
            await asyncio.sleep(0.5)

    async def settle(self, timeout: float = 30.0) -> None:
        """Wait (bounded) for the servers' end and every node's follow-ups (a ``ray start --block`` never ends)."""
        servers = [s for s in (self, *self.workers) if s.handle is not None]
        await asyncio.gather(
            *(Server.settle(s, timeout) for s in servers), *(r._await_followups(timeout) for r in self.cluster)
        )

    async def stop(self, reason: str = "", grace: float = 15.0) -> None:
        """Stop every server of the deployment, then the ray runs (vllm first: it uses the cluster)."""
        await asyncio.gather(Server.stop(self, reason, grace), *(w.stop(reason, grace) for w in self.workers))
        await asyncio.gather(*(r.stop(reason, grace) for r in self.cluster))

    def log_time(self, s: Server) -> float | None:
        """When ``s``'s root exception was printed, on our clock (its log stamp, the host's skew and offset)."""
        fe = s.exception
        if fe is None:
            return None
        node = NodeLog(
            s.host.alias,
            "",
            clock_skew=getattr(s.host, "clock_skew", None),
            utc_offset=self.utc_offsets.get(s.host.alias),
            ref_time=time.time(),
        )
        return line_time([fe.line, *fe.stack], node)

    def first_failure(self) -> Server | None:
        """The node run whose root exception was printed first (log time; arrival where that cannot tell)."""
        failed = [s for s in self.nodes if s.exception is not None]
        if not failed:
            return None
        # a node whose log holds only consequences ('WorkerProc initialization failed … see stack trace')
        # names a root elsewhere: a node with a root of its own wins whatever the times say
        failed = [s for s in failed if not only_a_consequence(s.exception.line)] or failed
        now_wall, now_mono = time.time(), time.monotonic()
        when = {id(s): self.log_time(s) for s in failed}
        stamped = [t for t in when.values() if t is not None]
        if stamped:
            earliest = min(stamped)
            # an unstamped line competes by its arrival (on the wall clock); stamps within a second are a tie
            at = {id(s): when[id(s)] or now_wall - (now_mono - s.exception_t) for s in failed}
            close = [s for s in failed if at[id(s)] < earliest + STAMP_RESOLUTION_S]
            return min(close, key=lambda s: s.exception_t)
        return min(failed, key=lambda s: s.exception_t)

    def outcome(self, what: str = "start-up") -> Outcome:
        first = self.first_failure()
        if first is not None:
            o = Server.outcome(first, what)
            o.summary = o.summary.replace(f"{what} failed", f"{what} failed on node {first.host.alias}", 1)
        elif self.aborted is not None:
            node, why = self.aborted
            o = Outcome(
                False, f"{what} failed on node {node.host.alias}: {why}", f"cluster|ray-node-ended|{why}", "device", why
            )
        elif (gone := self.broken_node()) is not None:  # a node's run ended without a root exception
            res = gone.classifier.result() if gone.classifier is not None else None
            stage = res.stages[-1].stage if res is not None and res.stages else "container"
            why = f"its run {gone.run_id} ended: {_last(gone)}"
            o = Outcome(False, f"{what} failed on node {gone.host.alias}: {why}", f"{stage}|node-ended|", stage, why)
        else:
            bad = (Server.outcome(s, what) for s in self.launched if s is not self)
            o = next((x for x in bad if not x.ok), None) or Server.outcome(self, what)
        if self.missing:  # before the (long) exception line, so a cut summary still names the missing node
            n = len(self.cluster)
            note = f" (ray cluster: {', '.join(self.missing)} did not join, {n - len(self.missing)} of {n} nodes)"
            head, sep, rest = o.summary.partition(": ")
            o.summary = f"{head}{note}{sep}{rest}"
        return o


class MultiNodeLadder(LadderEngine):
    """The ladder over a deployment of several hosts, launched as the profile's ``[launch.multinode]`` says.

    Args:
        master_addr: the head's address on the cluster network (default: the address k3tui reached it at).
        master_port: vLLM's ``--master-port`` (default: the profile's).
        mode: ``vllm`` or ``ray`` (default: the profile's).
        ray_port: the Ray head's port (default: the profile's).
        cluster_timeout: ray mode: seconds to wait for every node to join (default: the profile's).
    """

    def __init__(self, hosts: Any, profile: Any, emit: Any, *, master_addr: str | None = None,
                 master_port: int | None = None, mode: str | None = None, ray_port: int | None = None,
                 cluster_timeout: float | None = None, **kw: Any) -> None:  # fmt: skip
        super().__init__(hosts, profile, emit, **kw)
        spec: MultiNodeSpec = getattr(profile.launch, "multinode", None) or MultiNodeSpec()
        self.spec = spec
        self.mode = mode or spec.mode
        if self.mode not in MODES:
            raise UsageError(f"multi-node mode {self.mode!r} is not one of {', '.join(MODES)}")
        self.mode_from = "the command line" if mode else f"profile {profile.path or profile.name} [launch.multinode]"
        self.master_addr = master_addr or _address_of(self.head)
        self.master_port = master_port or spec.master_port
        self.ray_port = ray_port or spec.ray_port
        self.cluster_timeout = cluster_timeout or spec.cluster_timeout_s
        self._frozen_for: set[str] = set()
        self._deployment: dict[int, str] = {}
        """``id(run)`` → the deployment's run id (which launch a node run belongs to)."""
        self._offsets: dict[str, float | None] | None = None
        self._told_shape = False

    @property
    def values(self) -> dict[str, Any]:
        """The placeholders of the profile's node templates."""
        return {
            "nnodes": len(self.hosts),
            "master_addr": self.master_addr,
            "head_addr": self.master_addr,
            "master_port": self.master_port,
            "ray_port": self.ray_port,
        }

    async def launch(self, rung: str) -> Server:
        """Stop the current deployment (and wait for its runs to end); start every node; wait for the head's /health."""
        await self.probe_live_inference()
        await self.stop_server(reason=f"restart for rung {rung}")
        cfg = self.config
        run_id = self._take_run_id(rung)
        self._tell_shape()
        offsets = await self._utc_offsets()
        if self.mode == "ray":
            dep = DeploymentServer(
                self.head, run_id, cfg, self.port, self.emit, on_exception=self._on_exception,
                node_cfg=ray_serve_config(cfg, self.spec.ray, **self.values), utc_offsets=offsets,
            )  # fmt: skip
        else:
            dep = self._vllm_deployment(cfg, run_id, offsets)
        self.server = dep
        self._deployment.update({id(s): run_id for s in dep.nodes})
        for s in self.samplers.values():
            await s.start()
        if self.mode == "ray":
            await self._start_ray(dep, cfg, run_id, rung)
            if dep.aborted is not None:  # a node's ray ended: the cluster cannot form (its freeze is done)
                return dep
        for w in dep.workers:
            await w.start(rung)
        await dep.start(rung)
        self._deployment[id(dep)] = run_id
        if not await dep.wait_ready(self.ready_timeout):
            await dep.settle()
            self._tell_first(dep)
        return dep

    def _tell_first(self, dep: DeploymentServer) -> None:
        """Name the deployment's first root exception by log time, with the clock correction behind it."""
        first = dep.first_failure()
        if first is None:
            return
        t, skew = dep.log_time(first), getattr(first.host, "clock_skew", None)
        when = f"printed {clock(t)} UTC on our clock" if t is not None else "its line has no stamp: by arrival"
        when += f", host clock {skew:+.3f} s corrected" if skew is not None else ", host clock skew not measured"
        msg = f"the deployment's first root exception is on {_role(self, first)} {first.host.alias} ({when})"
        arrived = min((s for s in dep.nodes if s.exception is not None), key=lambda s: s.exception_t)
        if arrived is not first:
            msg += (
                f"; {arrived.host.alias}'s arrived first but was printed later ({clock(dep.log_time(arrived))} UTC, "
                f"host clock {getattr(arrived.host, 'clock_skew', None) or 0.0:+.3f} s)"
            )
        line = first.exception.line if first.exception is not None else ""
        self.emit(ev.Notice(host=first.host.alias, level="error", message=f"{msg}: {line[:200]}"))

    def _vllm_deployment(self, cfg: RunConfig, run_id: str, offsets: dict[str, float | None]) -> DeploymentServer:
        n, v = len(self.hosts), self.values
        head = DeploymentServer(
            self.head, run_id, cfg, self.port, self.emit, on_exception=self._on_exception,
            node_cfg=node_config(cfg, n, 0, v["master_addr"], v["master_port"], self.spec.vllm), utc_offsets=offsets,
        )  # fmt: skip
        for rank, host in enumerate(self.hosts[1:], 1):
            wcfg = node_config(cfg, n, rank, v["master_addr"], v["master_port"], self.spec.vllm)
            head.workers.append(
                Server(host, f"{run_id}-n{rank}", wcfg, self.port, self.emit, on_exception=self._on_exception)
            )
        return head

    # --- ray ------------------------------------------------------------------------------

    async def _start_ray(self, dep: DeploymentServer, cfg: RunConfig, run_id: str, rung: str) -> None:
        """``ray start`` on every node (head first), then wait until ``ray status`` lists them all."""
        ray = self.spec.ray
        for rank, host in enumerate(self.hosts):
            argv = fill_node_args(ray.head if rank == 0 else ray.worker, rank=rank, **self.values)
            node = RayNode(host, f"{run_id}-ray{rank}", helper_config(cfg, argv, ray), self.port, self.emit,
                           on_exception=self._on_exception, marker=ray.joined)  # fmt: skip
            dep.cluster.append(node)
            self._deployment[id(node)] = run_id
        for node in dep.cluster:
            await node.start(rung)
        await self._wait_cluster(dep, cfg)

    def _status_command(self, cfg: RunConfig, n: int) -> str:
        argv = fill_node_args(self.spec.ray.status, rank=0, **self.values)
        return shlex.join(launch_argv(helper_config(cfg, argv, env=False), f"{self.server_run_id()}-status{n}"))

    def server_run_id(self) -> str:
        return self.server.run_id if self.server is not None else "k3tui"

    async def _wait_cluster(self, dep: DeploymentServer, cfg: RunConfig) -> None:
        """Poll ``ray status`` on the head until every node is active, a ray run ends, or the deadline."""
        n, t0 = len(self.hosts), time.monotonic()
        quiet = getattr(self.head, "run_quiet", None) or self.head.run
        polls = 0
        while time.monotonic() - t0 < self.cluster_timeout:
            polls += 1
            seen = parse_ray_status((await quiet(self._status_command(cfg, polls), timeout=60.0)).stdout)
            if (seen is not None and seen[0] >= n) or any(r.ended.is_set() for r in dep.cluster):
                break
            await asyncio.sleep(self.spec.poll_s)
        res = await self.head.run(self._status_command(cfg, polls + 1), timeout=60.0, purpose="ray-status")
        seen = parse_ray_status(res.stdout)
        took = time.monotonic() - t0
        if seen is not None and seen[0] >= n:
            self.emit(ev.Notice(host=self.head.alias, level="info",
                                message=f"ray cluster ready: {seen[0]} of {n} nodes, {seen[1]:g} GPUs ({took:.1f} s)"))  # fmt: skip
            return
        ended = next((r for r in dep.cluster if r.ended.is_set()), None)
        dep.missing = [r.host.alias for r in dep.cluster if not r.joined] or ([] if seen else ["?"])
        listed = (
            f"`ray status` lists {seen[0]} of {n} nodes ({seen[1]:g} GPUs)" if seen else "`ray status` shows no cluster"
        )
        if ended is not None:
            why = f"its `ray start` ended before the cluster formed: {_last(ended)}"
            dep.aborted = (ended, why)
            self.emit(ev.Notice(host=ended.host.alias, level="error", message=f"{why} ({listed})"))
            await self._freeze_once(ended, f"ray on {_role(self, ended)} {ended.host.alias} ended", "node-failed")
            return
        self.emit(
            ev.Notice(
                host=self.head.alias,
                level="warning",
                message=(
                    f"ray cluster incomplete after {took:.0f} s: {listed}; not joined: {', '.join(dep.missing)}. "
                    "Starting vllm serve anyway, so vLLM's own error is on record"
                ),
            )
        )

    def _tell_shape(self) -> None:
        if self._told_shape:
            return
        self._told_shape = True
        v = self.values
        where = (
            f"ray port {v['ray_port']}, cluster wait {self.cluster_timeout:g} s"
            if self.mode == "ray"
            else f"master {v['master_addr']}:{v['master_port']}"
        )
        workers = ", ".join(h.alias for h in self.hosts[1:]) or "none"
        self.emit(
            ev.Notice(
                host=self.head.alias,
                level="info",
                message=f"multi-node launch, mode {self.mode} (from {self.mode_from}): head {self.head.alias} "
                f"at {v['master_addr']}, workers {workers}; {where}",
            )
        )

    async def _utc_offsets(self) -> dict[str, float | None]:
        """Each host's UTC offset (``date +%z``), measured once: vLLM log stamps are naive local time."""
        if self._offsets is None:
            from .freeze import parse_utc_offset

            async def one(h: Any) -> float | None:
                quiet = getattr(h, "run_quiet", None)
                if quiet is None:
                    return None
                with contextlib.suppress(Exception):
                    return parse_utc_offset((await quiet("date +%z", timeout=15.0)).stdout)
                return None

            got = await asyncio.gather(*(one(h) for h in self.hosts))
            self._offsets = {h.alias: off for h, off in zip(self.hosts, got, strict=True)}
        return self._offsets

    # --- failures ---------------------------------------------------------------------------

    async def _on_exception(self, server: Server, found: ev.ExceptionFound) -> None:
        """The first root exception on any node freezes every node, once per launch."""
        what = f"first root exception of the deployment to arrive: {_role(self, server)} {server.host.alias} (run {server.run_id}, stage {found.stage})"
        await self._freeze_once(server, what, "first-exception")

    async def _freeze_once(self, server: Server, what: str, reason: str) -> None:
        key = self._deployment.get(id(server), server.run_id)
        if key in self._frozen_for:
            return
        self._frozen_for.add(key)
        self.emit(
            ev.Notice(host=server.host.alias, level="warning", message=f"{what}: freezing the scene of every node")
        )
        await self.freeze_all(reason=reason, run=server)

    def _runs_by_host(self, run: Server | None) -> dict[int, Server]:
        """Every node's freeze reads its own run's log: a server where the node has one, else its ray run."""
        runs: dict[int, Server] = {}
        nodes = self.server.launched if isinstance(self.server, DeploymentServer) else []
        for s in nodes:
            runs.setdefault(id(s.host), s)
        if run is not None:
            runs.setdefault(id(run.host), run)
        return runs


@dataclass
class RayNode(Server):
    """One node's ``ray start --block``: a detached run whose log says when the node joined."""

    marker: str = "Ray runtime started."
    joined: bool = False

    async def start(self, rung: str) -> None:
        await super().start(rung)
        feed = self.classifier.feed  # the tail feeds every line here; it has not run yet

        def watch(text: str) -> Any:
            if self.marker and self.marker in text:
                self.joined = True
            return feed(text)

        self.classifier.feed = watch


def scenario_ladder(scenario: dict[str, Any]) -> Any:
    """The multi-node ladder a simulated deployment asks for (``k3tui demo``): its scenario's
    ``[multinode]`` table (``mode``, ``cluster_timeout_s``) over the profile's ``[launch.multinode]``."""
    import functools

    shape = scenario.get("multinode") or {}
    return functools.partial(MultiNodeLadder, mode=shape.get("mode"), cluster_timeout=shape.get("cluster_timeout_s"))


def _role(ladder: LadderEngine, s: Server) -> str:
    return "head" if s.host is ladder.head else "worker"


def _last(s: Server) -> str:
    return (s.last_lines[-1] if s.last_lines else "no output").strip()[:200]


def _address_of(host: Any) -> str:
    resolved = getattr(host, "resolved", None)
    return getattr(resolved, "hostname", None) or "127.0.0.1"

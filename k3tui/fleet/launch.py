"""Multi-node launch for the ladder: the head and every worker as detached runs of one deployment.

A small layer over :class:`~k3tui.ladder.LadderEngine` (hosts[0] is the head): each launch
starts the workers first (``vllm serve … --nnodes N --node-rank i --master-addr HEAD
--master-port P --headless``), then the head (``--node-rank 0``, the API server), each a
detached run on its own host with its log classified live. What changes from one host:

- **The config the ledger records stays the deployment's** (one variable per step); the
  node flags are derived from the topology at launch and show in each node's
  ``RunStarted`` command, so they never count as a changed variable.
- **A failure on any node is the deployment's failure.** The rung's outcome is the first
  root exception to *arrive* from any node (arrival is on our clock, so host clock skew
  cannot reorder it; per-node tails lag alike), named by node: "start-up failed on node
  tray02 at stage engine: …". The head stops waiting for ``/health`` when a worker ends
  or has failed for the grace period.
- **The first root exception on any node freezes the scene of every node**, once per
  launch, each host with its own run's log.

Ray clusters (``ray start --head`` / ``--address``, ``--distributed-executor-backend ray``)
are not launched here: only vLLM's own multi-node options.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

from .. import events as ev
from ..ladder import LadderEngine
from ..ladder.config import RunConfig, apply_changes
from ..ladder.server import EXCEPTION_GRACE_S, Outcome, Server

MASTER_PORT = 29501


def node_config(cfg: RunConfig, nnodes: int, rank: int, master_addr: str, master_port: int = MASTER_PORT) -> RunConfig:
    """The deployment's config as node ``rank`` of ``nnodes`` runs it (rank 0 = head, others headless)."""
    changes: dict[str, Any] = {
        "flag:nnodes": nnodes,
        "flag:node-rank": rank,
        "flag:master-addr": master_addr,
        "flag:master-port": master_port,
    }
    if rank > 0:
        changes["flag:headless"] = True
    return apply_changes(cfg, changes)


@dataclass
class DeploymentServer(Server):
    """The head's run, holding the workers' runs: starts, waits and stops them as one deployment."""

    workers: list[Server] = field(default_factory=list)
    node_cfg: RunConfig | None = None

    @property
    def nodes(self) -> list[Server]:
        return [self, *self.workers]

    async def start(self, rung: str) -> None:
        base = self.config
        self.config = self.node_cfg or base
        try:
            await super().start(rung)
        finally:
            self.config = base  # the ledger's config: the same deployment is not "changed"

    async def wait_ready(self, timeout: float) -> bool:
        ready = asyncio.create_task(super().wait_ready(timeout))
        broken = asyncio.create_task(self._a_worker_broke())
        done, _ = await asyncio.wait({ready, broken}, return_when=asyncio.FIRST_COMPLETED)
        if ready in done:
            broken.cancel()
            return ready.result()
        ready.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ready
        return False

    async def _a_worker_broke(self) -> None:
        while True:
            for w in self.workers:
                failed = w.exception is not None and time.monotonic() - w.exception_t > EXCEPTION_GRACE_S
                if w.ended.is_set() or failed:
                    return
            await asyncio.sleep(0.5)

    async def settle(self, timeout: float = 30.0) -> None:
        await asyncio.gather(super().settle(timeout), *(w.settle(timeout) for w in self.workers))

    async def stop(self, reason: str = "", grace: float = 15.0) -> None:
        await asyncio.gather(super().stop(reason, grace), *(w.stop(reason, grace) for w in self.workers))

    def outcome(self, what: str = "start-up") -> Outcome:
        failed = [s for s in self.nodes if s.exception is not None]
        if not failed:
            bad = next((Server.outcome(s, what) for s in self.nodes if not Server.outcome(s, what).ok), None)
            return bad or Server.outcome(self, what)
        first = min(failed, key=lambda s: s.exception_t)
        o = Server.outcome(first, what)
        o.summary = o.summary.replace(f"{what} failed", f"{what} failed on node {first.host.alias}", 1)
        return o


class MultiNodeLadder(LadderEngine):
    """The ladder over a deployment of several hosts launched with vLLM's multi-node options.

    Args:
        master_addr: the head's address on the cluster network (default: the address k3tui reached it at).
        master_port: the port the head listens on for the other nodes.
    """

    def __init__(self, hosts: Any, profile: Any, emit: Any, *, master_addr: str | None = None,
                 master_port: int = MASTER_PORT, **kw: Any) -> None:  # fmt: skip
        super().__init__(hosts, profile, emit, **kw)
        self.master_addr = master_addr or _address_of(self.head)
        self.master_port = master_port
        self._frozen_for: set[str] = set()

    async def launch(self, rung: str) -> Server:
        """Stop the current deployment; start every worker, then the head; wait for the head's /health."""
        await self.probe_live_inference()
        await self.stop_server(reason=f"restart for rung {rung}")
        cfg = self.config
        run_id = self._take_run_id(rung)
        n = len(self.hosts)
        head = DeploymentServer(
            self.head, run_id, cfg, self.port, self.emit, on_exception=self._on_exception,
            node_cfg=node_config(cfg, n, 0, self.master_addr, self.master_port),
        )  # fmt: skip
        for rank, host in enumerate(self.hosts[1:], 1):
            wcfg = node_config(cfg, n, rank, self.master_addr, self.master_port)
            head.workers.append(
                Server(host, f"{run_id}-n{rank}", wcfg, self.port, self.emit, on_exception=self._on_exception)
            )
        self.server = head
        for s in self.samplers.values():
            await s.start()
        for w in head.workers:
            await w.start(rung)
        await head.start(rung)
        if not await head.wait_ready(self.ready_timeout):
            await head.settle()
        return head

    def _deployment_of(self, server: Server) -> str:
        return server.run_id.rsplit("-n", 1)[0] if server.host is not self.head else server.run_id

    async def _on_exception(self, server: Server, found: ev.ExceptionFound) -> None:
        """The first root exception on any node freezes every node, once per launch."""
        key = self._deployment_of(server)
        if key in self._frozen_for:
            return
        self._frozen_for.add(key)
        role = "head" if server.host is self.head else "worker"
        self.emit(
            ev.Notice(
                host=server.host.alias,
                level="warning",
                message=(
                    f"first root exception of the deployment on {role} {server.host.alias} (run {server.run_id}, "
                    f"stage {found.stage}): freezing the scene of every node"
                ),
            )
        )
        await self.freeze_all(reason="first-exception", run=server)

    def _runs_by_host(self, run: Server | None) -> dict[int, Server]:
        """Every node's freeze reads its own run's log (the given run only where a node has none)."""
        runs = {id(s.host): s for s in (self.server.nodes if isinstance(self.server, DeploymentServer) else [])}
        if run is not None:
            runs.setdefault(id(run.host), run)
        return runs


def _address_of(host: Any) -> str:
    resolved = getattr(host, "resolved", None)
    return getattr(resolved, "hostname", None) or "127.0.0.1"

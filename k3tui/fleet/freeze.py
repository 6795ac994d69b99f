"""Fleet freeze: the scenes of many hosts at once, bounded, each host on its own clock.

Why it is shaped this way:

- **Bounded concurrency** (:data:`CONCURRENCY` hosts at once, a semaphore around the
  whole connect → freeze → logs → close of one host): 64 hosts at once would open 64
  connections and fan out ~20 probes each, starving the slow hosts of the client's CPU
  and hitting ``MaxStartups`` on jump hosts; 16 keeps every connection busy.
- **Per-host deadline**: a host that connects but hangs (a stuck NFS mount under
  ``docker ps``) costs at most ``host_timeout`` seconds; it is reported, never fatal.
- **Unreachable is a row, not an exit**: every host ends as a :class:`NodeResult` with a
  scene or a one-line reason; the table and the checks run over the hosts that answered.
- **Each connection is closed as soon as its host is done**, so peak memory grows with
  the concurrency, not with the fleet (scenes are small; logs are capped).
- Clock skew (``HostConnected.clock_skew``) and the host's UTC offset are kept per node:
  the merged log timeline (:mod:`.timeline`) needs both.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import K3Error
from ..remote.base import Emit
from ..scene.outcome import FreezeOutcome
from .inventory import Node

CONCURRENCY = 16
"""Hosts worked on at once."""
HOST_TIMEOUT = 60.0
"""Seconds one host may take from connect to its last log line."""
LOG_LINES = 5000
"""Lines of each container's log kept for the merged timeline."""

Progress = Callable[["NodeResult", int, int], None]
"""Called as each host finishes: (result, done, total)."""


@dataclass
class NodeResult:
    """What freezing one host gave."""

    alias: str
    role: str = "worker"
    scene: Any = None
    error: str = ""
    """One line: why there is no scene ("" when there is one)."""
    clock_skew: float | None = None
    """Host clock minus ours, seconds (measured at connect)."""
    utc_offset: float | None = None
    """The host's local-time offset from UTC, seconds (vLLM stamps its log in local time)."""
    log: str | None = None
    """The serving container's log tail (None: no container, or not read)."""
    seconds: float = 0.0


@dataclass
class FleetOutcome(FreezeOutcome):
    """A :class:`~k3tui.scene.outcome.FreezeOutcome` plus what only a fleet has."""

    nodes: list[NodeResult] = field(default_factory=list)
    wall: float = 0.0
    verdict: Any = None
    """The deployment-level classification (:func:`k3tui.fleet.cli.deployment_verdict` fills it)."""

    @property
    def head(self) -> str:
        return next((n.alias for n in self.nodes if n.role == "head"), self.nodes[0].alias if self.nodes else "")


async def freeze_fleet(
    nodes: Sequence[Node],
    *,
    emit: Emit | None = None,
    concurrency: int = CONCURRENCY,
    host_timeout: float = HOST_TIMEOUT,
    connect_timeout: float = 10.0,
    accept_new_host_key: bool = False,
    ssh_config: str | None = None,
    identity: Sequence[str] = (),
    known_hosts: str | None = None,
    container: str | None = None,
    docker_socket: str | None = "/var/run/docker.sock",
    reason: str = "operator",
    logs: bool = True,
    progress: Progress | None = None,
) -> FleetOutcome:
    """Freeze every node, ``concurrency`` at a time; unreachable nodes are reported, not raised.

    ``identity``/``known_hosts`` apply to nodes that do not name their own.
    """
    sem = asyncio.Semaphore(max(1, concurrency))
    done = 0
    t0 = time.monotonic()

    async def one(node: Node) -> NodeResult:
        nonlocal done
        async with sem:
            res = await _freeze_node(
                node,
                emit=emit,
                host_timeout=host_timeout,
                connect_timeout=connect_timeout,
                accept_new_host_key=accept_new_host_key,
                ssh_config=ssh_config,
                identity=identity,
                known_hosts=known_hosts,
                container=container,
                docker_socket=docker_socket,
                reason=reason,
                logs=logs,
            )
        done += 1
        if progress is not None:
            progress(res, done, len(nodes))
        return res

    results = list(await asyncio.gather(*(one(n) for n in nodes)))
    out = FleetOutcome(nodes=results, wall=time.monotonic() - t0)
    out.scenes = [r.scene for r in results if r.scene is not None]
    out.unreachable = {r.alias: r.error for r in results if r.scene is None}
    return out


async def _freeze_node(
    node: Node,
    *,
    emit: Emit | None,
    host_timeout: float,
    connect_timeout: float,
    accept_new_host_key: bool,
    ssh_config: str | None,
    identity: Sequence[str],
    known_hosts: str | None,
    container: str | None,
    docker_socket: str | None,
    reason: str,
    logs: bool,
) -> NodeResult:
    from ..remote.ssh import connect
    from ..scene.freeze import freeze

    res = NodeResult(alias=node.alias, role=node.role)
    t0 = time.monotonic()
    kw: dict[str, Any] = {
        "identity": list(identity),
        "known_hosts": known_hosts,
        "accept_new_host_key": accept_new_host_key,
        "ssh_config": ssh_config,
        "connect_timeout": connect_timeout,
        "emit": emit,
    }
    kw.update({k: v for k, v in node.connect_kwargs().items() if v not in (None, [])})
    host = None
    try:
        async with asyncio.timeout(host_timeout):
            host = await connect(**kw)
            res.clock_skew = host.clock_skew
            res.scene = await freeze(host, container=container, emit=emit, reason=reason, docker_socket=docker_socket)
            if logs and res.scene.container:
                res.utc_offset, res.log = await read_log(host, res.scene.container.get("name") or container)
    except TimeoutError:
        res.error = f"no answer within {host_timeout:g}s (connect, freeze and log together)"
        if res.scene is not None:  # the scene came; only the log did not
            res.error = ""
    except K3Error as exc:
        res.error = _one_line(exc)
    except Exception as exc:  # noqa: BLE001 - one host's surprise must not sink the fleet
        res.error = f"{type(exc).__name__}: {_one_line(exc)}"
    finally:
        if host is not None:
            try:
                await asyncio.wait_for(host.close(), 5.0)
            except Exception:  # noqa: BLE001 - closing a dead connection
                pass
    res.seconds = time.monotonic() - t0
    return res


async def read_log(host: Any, container: str | None, lines: int = LOG_LINES) -> tuple[float | None, str | None]:
    """The host's UTC offset and the container's log tail (with docker's own timestamps)."""
    if not container:
        return None, None
    import shlex

    r = await host.run(
        f"date +%z; docker logs --timestamps --tail {lines} {shlex.quote(container)} 2>&1",
        timeout=20.0,
        purpose="fleet-log",
    )
    first, _, rest = r.stdout.partition("\n")
    return parse_utc_offset(first), (rest if r.status == 0 else None)


def parse_utc_offset(text: str) -> float | None:
    """``+0200`` → 7200.0 (``date +%z``)."""
    t = text.strip()
    if len(t) != 5 or t[0] not in "+-" or not t[1:].isdigit():
        return None
    secs = int(t[1:3]) * 3600 + int(t[3:5]) * 60
    return float(secs if t[0] == "+" else -secs)


def _one_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__

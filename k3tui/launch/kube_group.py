"""A multi-node pod group (a LeaderWorkerSet group: one pod per tray) laddered as one deployment.

The freeze of a group's pod reads every pod of its group (:meth:`KubernetesLauncher._group`,
leader first). A ladder run of the group is then **one-off pods, one per member**, each
derived from that member's frozen manifest (:func:`k3tui.launch.manifest.run_pod`) with the
**same one variable changed** — the variable is the leader's config's difference from the
frozen leader, applied to each member's own config (a member that does not run ``vllm serve``
itself, a ``ray start`` worker, takes the env and image changes; its command stays). Before
anything is applied the operator sees every member's manifest diff.

What changes besides the variable (topology, as the node flags are in :mod:`k3tui.fleet.launch`):

- names and labels: ``k3tui-RUN`` (the leader) and ``k3tui-RUN-wI``, k3tui's labels
  (``managed-by``, ``k3tui.io/run``, ``k3tui.io/group`` = the leader's run, ``k3tui.io/role``);
  the LeaderWorkerSet controller's ``name``/``group-index``/``group-key`` labels are dropped, so
  no LWS controller, webhook or Service selects the run pods (``worker-index`` stays: a
  downward-API env may read it); a ``spec.hostname`` becomes the run pod's name;
- the leader's address: a worker's literal env value naming the frozen leader (the LWS
  webhook's ``LWS_LEADER_ADDRESS=vllm-0.vllm.NS``) is re-pointed at the run leader's pod IP,
  so the leader pod is created first and its IP awaited; in the leader itself that value
  becomes its own ``status.podIP`` (downward API).

In the ladder the group shows as nodes (:class:`PodGroupLadder`, the multi-node ladder's
:class:`~k3tui.fleet.launch.DeploymentServer`): each member a node named by its tray
(``spec.nodeName``) with role ``head`` (the leader) or ``worker``; each member's log followed
through kubectl and classified as that node's; readiness from the leader (``/health`` on its
pod IP); a failure on any member fails the run and names its node; stop deletes every pod of
the group (and the run pods an earlier session left are deleted at the start).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from .. import events as ev
from ..errors import HostError, UsageError
from ..fleet.launch import DeploymentServer
from ..ladder import LadderEngine
from ..ladder.config import apply_changes, diff
from ..ladder.server import Server
from . import manifest as M
from .kubernetes import LWS_NAME, LWS_WORKER, KubernetesLauncher, PodRun, _short

GROUP_LABEL, ROLE_LABEL = "k3tui.io/group", "k3tui.io/role"
_LWS_DROPPED = (LWS_NAME, "leaderworkerset.sigs.k8s.io/group-index", "leaderworkerset.sigs.k8s.io/group-key")
LEADER_NAME = "leaderworkerset.sigs.k8s.io/leader-name"
LEADER_IP_TIMEOUT_S = 120.0
"""How long the run leader may take to get a pod IP (assigned with its sandbox, before any image pull)."""


class PodGroup:
    """The frozen group: one :class:`KubernetesLauncher` per member (its frozen pod), leader first."""

    def __init__(self, base: KubernetesLauncher) -> None:
        if len(base.group_pods) < 2:
            raise UsageError("not a multi-node pod group")
        first = base.group_pods[0]
        if str((_meta(first).get("labels") or {}).get(LWS_WORKER, "")) != "0":
            raise UsageError(
                f"the pod group has no leader pod now (worker-index 0): found {_meta(first).get('name')} first"
            )
        self.base = base
        self.members: list[KubernetesLauncher] = []
        for pod in base.group_pods:
            m = KubernetesLauncher(base.pick)
            m.frozen = pod
            c = M.serving_container(pod, base.container or None) or M.serving_container(pod) or {}
            m.container = str(c.get("name") or "")
            self.members.append(m)
        self.leader_ip = ""
        self.node_names = _aliases([_meta(m.frozen).get("name", "") for m in self.members], self.members)

    @property
    def leader(self) -> KubernetesLauncher:
        return self.members[0]

    def role(self, i: int) -> str:
        return "head" if i == 0 else "worker"

    def run_id(self, run_id: str, i: int) -> str:
        return run_id if i == 0 else f"{run_id}-w{i}"

    def start_config(self) -> Any:
        """The leader's serving container as the ladder's first config."""
        return self.leader.start_config()

    # --- manifests --------------------------------------------------------------------------

    def member_config(self, i: int, config: Any) -> Any | None:
        """Member ``i``'s config with the leader's change applied (None: the member does not run ``vllm serve``)."""
        if i == 0:
            return config
        try:
            own = self.members[i].start_config()
        except UsageError:
            return None
        changes = {d["key"]: d["new"] for d in diff(self.leader.start_config(), config) if d["key"] != "entry"}
        return apply_changes(own, changes)

    def manifest(self, i: int, config: Any, run_id: str, leader_addr: str = "") -> dict[str, Any]:
        """Member ``i``'s run pod (see the module docstring); ``leader_addr`` replaces the frozen leader's address."""
        m, rid = self.members[i], self.run_id(run_id, i)
        cfg = self.member_config(i, config)
        pod = m.run_manifest(cfg, rid) if cfg is not None else self._env_only(i, config, rid)
        meta, spec = pod["metadata"], pod["spec"]
        labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in _LWS_DROPPED}
        labels.update({GROUP_LABEL: run_id.lower()[:63], ROLE_LABEL: "leader" if i == 0 else "worker"})
        meta["labels"] = labels
        if spec.get("hostname"):
            spec["hostname"] = meta["name"]
        if i == 0:  # the leader's own address (the LWS webhook gives it too): its pod IP, from the downward API
            own_address(pod, str(_meta(self.leader.frozen).get("name") or ""))
        else:
            old = str(_meta(self.leader.frozen).get("name") or "")
            new = leader_addr or f"<pod IP of {self.manifest_name(run_id)}>"
            readdress(pod, old, new)
            ann = meta.get("annotations") or {}
            if ann.get(LEADER_NAME) == old:
                ann[LEADER_NAME] = self.manifest_name(run_id)
        return pod

    def manifest_name(self, run_id: str, i: int = 0) -> str:
        """Member ``i``'s run pod name (as :func:`~k3tui.launch.manifest.run_pod` names it)."""
        return M.run_pod_name(self.run_id(run_id, i))

    def _env_only(self, i: int, config: Any, run_id: str) -> dict[str, Any]:
        """A member that runs something else than ``vllm serve``: its command kept, the env and image change applied."""
        m = self.members[i]
        c = M.serving_container(m.frozen or {}, m.container) or {}
        env = {k: v for k, v in M.env_pairs(c).items() if not v.startswith("<")}
        for d in diff(self.leader.start_config(), config):
            if d["key"].startswith("env:"):
                if d["new"] is None:
                    env.pop(d["key"][4:], None)
                else:
                    env[d["key"][4:]] = str(d["new"])
        if config.visible_devices:
            env["CUDA_VISIBLE_DEVICES"] = config.visible_devices
        image = config.image if config.image != self.leader.start_config().image else ""
        return M.run_pod(m.frozen or {}, m.container, M.container_argv(c), env, image, run_id)

    def references_leader(self) -> bool:
        """Whether any worker's manifest names the frozen leader (then its IP is awaited before the workers start)."""
        old = str(_meta(self.leader.frozen).get("name") or "")
        return any(_names(old).search(str(v)) for m in self.members[1:] for v in _literal_values(m.frozen or {}))

    def plan(self, config: Any, run_id: str) -> list[str]:
        """Every member's run pod and its manifest diff against that member's frozen pod."""
        lines = [f"run {run_id}: {len(self.members)} pods of group {self.group_name()}, each from its frozen pod"]
        for i, m in enumerate(self.members):
            new = self.manifest(i, config, run_id)
            frozen = _meta(m.frozen)
            lines.append(
                f"  pod {new['metadata'].get('namespace', '')}/{new['metadata']['name']} ({self.role(i)}, from "
                f"{frozen.get('name')} on {(m.frozen or {}).get('spec', {}).get('nodeName') or '?'})"
                + (
                    ""
                    if i == 0 or self.member_config(i, config) is not None
                    else ": runs no vllm serve, env/image only"
                )
            )
            lines += [
                f"    {d['key']}: {_short(d['old'])} -> {_short(d['new'])}"
                for d in M.diff(M.applied(m.frozen or {}), new)
            ]
        return lines

    def group_name(self) -> str:
        labels = _meta(self.leader.frozen).get("labels") or {}
        return (
            f"LeaderWorkerSet {labels.get(LWS_NAME, '?')}/{labels.get('leaderworkerset.sigs.k8s.io/group-index', '?')}"
        )


class MemberLauncher:
    """One member's pod of a group run, behind the launcher protocol (the pod launcher follows, reaches and deletes it)."""

    name = "kubernetes"
    remove_ended_runs = True

    def __init__(self, group: PodGroup, index: int, group_run: str) -> None:
        self.group, self.index, self.group_run = group, index, group_run
        self.pod = group.members[index]

    def plan(self, config: Any, run_id: str) -> list[str]:
        return self.group.plan(config, run_id)

    async def start(self, host: Any, config: Any, run_id: str, rung: str = "") -> PodRun:
        g, i, group_run = self.group, self.index, self.group_run
        if i > 0 and g.references_leader() and not g.leader_ip:
            raise HostError(f"run {group_run}: the leader pod has no IP: its workers cannot be pointed at it")
        pod = g.manifest(i, config, group_run, g.leader_ip)
        run = await self.pod.create(host, pod, run_id)
        host.emit(
            ev.Notice(
                host=getattr(host, "alias", ""),
                level="info",
                message=f"run {run_id}: pod {run.namespace}/{run.pod} created ({g.role(i)} of run {group_run}, from "
                f"{_meta(self.pod.frozen).get('name')} on node {(self.pod.frozen or {}).get('spec', {}).get('nodeName')})",
            )
        )
        if i == 0 and g.references_leader():
            g.leader_ip = await self._pod_ip(host, run)
        return run

    async def _pod_ip(self, host: Any, run: PodRun) -> str:
        deadline = time.monotonic() + LEADER_IP_TIMEOUT_S
        while time.monotonic() < deadline:
            pod = await self.pod.get(host, {}, "kube_pod_ip", f"/api/v1/namespaces/{run.namespace}/pods/{run.pod}")
            st = (pod or {}).get("status") or {}
            if st.get("podIP"):
                return str(st["podIP"])
            await asyncio.sleep(1.0)
        return ""

    def follow(self, host: Any, handle: PodRun) -> AsyncIterator[str]:
        return self.pod.follow(host, handle)

    async def forward(self, host: Any, handle: PodRun, port: int) -> int:
        return await self.pod.forward(host, handle, port)

    async def stop(self, host: Any, handle: PodRun, grace: float = 10.0, reason: str = "") -> int | None:
        return await self.pod.stop(host, handle, grace=grace, reason=reason)


class GroupNode:
    """A member pod as a node of the deployment: its tray's name and role; every command goes through the target."""

    def __init__(self, host: Any, alias: str, role: str) -> None:
        self._host, self.alias, self.role = host, alias, role

    def __getattr__(self, name: str) -> Any:
        return getattr(self._host, name)


class PodGroupLadder(LadderEngine):
    """The ladder over a pod group: each run every member's pod, the group's members its nodes (module docstring)."""

    def __init__(self, hosts: Any, profile: Any, emit: Any, *, group: PodGroup, **kw: Any) -> None:
        super().__init__(hosts, profile, emit, **kw)
        self.group = group
        self.nodes = [GroupNode(self.head, alias, group.role(i)) for i, alias in enumerate(group.node_names)]
        self._told = False

    def _tell_nodes(self) -> None:
        if self._told:
            return
        self._told = True
        g = self.group
        for i, node in enumerate(self.nodes):
            meta = _meta(g.members[i].frozen)
            self.emit(
                ev.HostConnected(
                    host=node.alias,
                    address=f"pod {meta.get('namespace')}/{meta.get('name')} through kubectl on {self.head.alias}",
                    role=node.role,
                )
            )
        workers = ", ".join(n.alias for n in self.nodes[1:])
        self.emit(
            ev.Notice(
                host=self.head.alias,
                level="info",
                message=f"pod group launch: {g.group_name()}, head {self.nodes[0].alias}, workers {workers}; "
                "each run one pod per member, the leader's /health for readiness",
            )
        )

    async def launch(self, rung: str) -> Server:
        """Stop the current group run (every pod deleted); create every member's pod, leader first; wait for its /health."""
        await self.probe_live_inference()
        await self.stop_server(reason=f"restart for rung {rung}")
        cfg, g = self.config, self.group
        run_id = self._take_run_id(rung)
        self._tell_nodes()
        for line in g.plan(cfg, run_id):
            self.emit(ev.Notice(host=self.head.alias, level="info", message=line))
        dep = DeploymentServer(
            self.nodes[0], run_id, cfg, self.port, self.emit, on_exception=self._on_exception,
            launcher=MemberLauncher(g, 0, run_id),
        )  # fmt: skip
        for i, node in enumerate(self.nodes[1:], 1):
            dep.workers.append(
                Server(
                    node,
                    g.run_id(run_id, i),
                    cfg,
                    self.port,
                    self.emit,
                    on_exception=self._on_exception,
                    launcher=MemberLauncher(g, i, run_id),
                )  # fmt: skip
            )
        self.server = dep
        for s in self.samplers.values():
            await s.start()
        await dep.start(rung)  # the leader first: the workers are pointed at its pod IP
        for w in dep.workers:
            await w.start(rung)
        if not await dep.wait_ready(self.ready_timeout):
            await dep.settle()
        return dep


def group_engine(group: PodGroup) -> Any:
    """``make(hosts, profile, emit, **kw)`` for ``k3tui ladder``: a :class:`PodGroupLadder` over ``group``."""

    def make(hosts: Any, profile: Any, emit: Any, **kw: Any) -> PodGroupLadder:
        return PodGroupLadder(hosts, profile, emit, group=group, **kw)

    return make


# --- pure parts ----------------------------------------------------------------------------------


def _meta(pod: dict[str, Any] | None) -> dict[str, Any]:
    return (pod or {}).get("metadata") or {}


def _aliases(names: list[str], members: list[KubernetesLauncher]) -> list[str]:
    """Each member's node name (its tray); the pod's name where two members share a node or none is known."""
    nodes = [str(((m.frozen or {}).get("spec") or {}).get("nodeName") or "") for m in members]
    return [n if n and nodes.count(n) == 1 else f"{n or 'pod'}/{p}" for n, p in zip(nodes, names, strict=True)]


def _names(old: str) -> re.Pattern[str]:
    """``old`` as a host name: alone, or the first label of a DNS name (``vllm-0.vllm.ns``), with any port after."""
    return re.compile(rf"(?<![\w.-]){re.escape(old)}(?:\.[A-Za-z0-9.-]*)?(?![\w-])")


def _literal_values(pod: dict[str, Any]) -> list[str]:
    return [
        str(e["value"])
        for c in (pod.get("spec") or {}).get("containers") or []
        for e in c.get("env") or []
        if "value" in e
    ]


def readdress(pod: dict[str, Any], old: str, new: str) -> None:
    """Re-point every literal env value that names host ``old`` (alone or as a DNS name's first label) at ``new``."""
    if not old:
        return
    pat = _names(old)
    for c in (pod.get("spec") or {}).get("containers") or []:
        for e in c.get("env") or []:
            if "value" in e:
                e["value"] = pat.sub(new, str(e["value"]))


def own_address(pod: dict[str, Any], old: str) -> None:
    """A literal env value that is exactly host ``old`` (or its DNS name) becomes the pod's own IP (``status.podIP``)."""
    if not old:
        return
    pat = _names(old)
    for c in (pod.get("spec") or {}).get("containers") or []:
        for e in c.get("env") or []:
            if "value" in e and pat.fullmatch(str(e["value"])):
                e.pop("value")
                e["valueFrom"] = {"fieldRef": {"fieldPath": "status.podIP"}}

"""The ``kubernetes`` launcher: a serving pod through the Kubernetes API (``kubectl`` on the target).

What only the API knows: the pod **as applied** (its manifest), its owner (Deployment via
its ReplicaSet, StatefulSet, LeaderWorkerSet …), the node it was scheduled to, its DRA
resource claims (a ComputeDomain's IMEX channel), its events (OOMKilled, BackOff,
FailedScheduling, Unhealthy), the restart count, and **the previous container's log** —
for a crash-looping pod the first root exception is there, not in the container running now.
A pod of a LeaderWorkerSet (one pod per tray) is frozen with its group: every member's node,
phase and restarts (``scene.pod["group"]``), so a worker that died on the other tray shows.
When the target is the pod's node and containerd answers there, the node's facts come too
(:mod:`k3tui.launch.containerd`: the OCI runtime spec with the env as injected, the task's
pid for the ``/proc`` probes).

Every API call is ``kubectl get --raw PATH`` (``create --raw`` / ``delete --raw`` for a run):
the same REST calls ``kubectl get pod -o json`` and ``kubectl logs --previous`` make, with
no discovery round trips and no dependence on which kinds the cluster serves (a
LeaderWorkerSet owner is one more GET). ``--kube-context`` and ``--kubeconfig`` go to every
call; kubectl runs on the target through its connection, so the credentials never leave it.

A ladder run is a **one-off pod**: the frozen pod with exactly the one changed variable
(:func:`k3tui.launch.manifest.run_pod`), no owner, ``restartPolicy: Never``, labelled
``app.kubernetes.io/managed-by=k3tui`` and ``k3tui.io/run=RUN``; before it is created the
operator sees the manifest's diff against the frozen pod. Its log is followed by a detached
``kubectl`` on the target (so an SSH drop resumes by byte offset) that is restarted with
``sinceTime`` when the API connection drops (lines already seen are skipped); stop deletes
the pod and waits until it is gone. A pod of a LeaderWorkerSet group ladders as its group (one run
pod per member, the members as the deployment's nodes): :mod:`k3tui.launch.kube_group`.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import time
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import HostError, UsageError
from ..remote.base import RunHandle, RunResult
from . import manifest as M
from .base import Pick, run_probe
from .containerd import ContainerdLauncher, Found, first_log, scan_cri, with_scan
from .containerd import overlay as node_overlay

NOTABLE_EVENTS = ("OOMKilled", "BackOff", "CrashLoopBackOff", "FailedScheduling", "Unhealthy", "Failed", "Evicted")
LOG_TAIL_LINES = 5000
LWS_NAME, LWS_GROUP, LWS_WORKER = (f"leaderworkerset.sigs.k8s.io/{k}" for k in ("name", "group-index", "worker-index"))
GONE_TIMEOUT_S = 60.0
_PLURAL = {"ReplicaSet": "replicasets", "Deployment": "deployments", "StatefulSet": "statefulsets",
           "LeaderWorkerSet": "leaderworkersets", "DaemonSet": "daemonsets", "Job": "jobs"}  # fmt: skip


@dataclass
class PodRun(RunHandle):
    """A ladder run's pod (its ``run_dir`` is the detached log follower's, when one runs)."""

    namespace: str = ""
    pod: str = ""
    container: str = ""
    since: str = ""
    """RFC 3339 time of the last log line delivered (the resume point after a drop)."""
    seen_at_since: int = 0
    """Lines already delivered that carry exactly ``since`` (skipped after a resume)."""
    follower: RunHandle | None = None
    follows: int = 0
    """Follow attempts so far: the first follower is the run's own id (its log recorded under it), later ones ``-logN``."""


@dataclass
class PodFacts:
    pod: dict[str, Any] | None = None
    logs: dict[str, str] = field(default_factory=dict)
    probes: dict[str, RunResult] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    facts: dict[str, Any] | None = None


class KubernetesLauncher:
    """A pod through kubectl, on top of containerd where the target is its node (see the module docstring)."""

    name = "kubernetes"
    remove_ended_runs = True
    """A run pod stays in the API after its container ended: stop deletes it even then."""

    def __init__(self, pick: Pick) -> None:
        self.pick = pick
        self.frozen: dict[str, Any] | None = None
        """The pod as frozen (the ladder's runs derive from it)."""
        self.container = pick.container or ""
        self.group_pods: list[dict[str, Any]] = []
        """A LeaderWorkerSet group's pods as read at the freeze, leader first (empty: not a group's pod)."""

    # --- kubectl -----------------------------------------------------------------------------

    def kubectl(self, args: str) -> str:
        opts = ""
        if self.pick.kubeconfig:
            opts += f" --kubeconfig {shlex.quote(self.pick.kubeconfig)}"
        if self.pick.kube_context:
            opts += f" --context {shlex.quote(self.pick.kube_context)}"
        return f"kubectl{opts} {args}"

    _run = staticmethod(run_probe)
    """One launcher command on a host, kept as a scene probe (:func:`k3tui.launch.base.run_probe`)."""

    async def check_context(self, host: Any, probes: dict[str, RunResult] | None = None) -> None:
        """``--kube-context NAME`` must name a context of the kubeconfig on the target (UsageError listing them).

        kubectl's own answer to an unknown context ("context … does not exist") would only be a probe
        note, and the freeze would go on without the pod: a misspelt context is the operator's error.
        """
        ctx = self.pick.kube_context
        if not ctx:
            return
        opts = f" --kubeconfig {shlex.quote(self.pick.kubeconfig)}" if self.pick.kubeconfig else ""
        r = await self._run(
            host, {} if probes is None else probes, "kube_contexts", f"kubectl{opts} config get-contexts -o name"
        )
        if not r.ok:
            return  # no kubectl, no kubeconfig: the API calls themselves say why
        known = r.stdout.split()
        if ctx not in known:
            where = self.pick.kubeconfig or "kubectl's kubeconfig"
            raise UsageError(
                f"--kube-context {ctx!r}: no such context in {where} on {getattr(host, 'alias', 'the target')} "
                f"(it has: {', '.join(known) or 'none'})"
            )

    async def get(self, host: Any, probes: dict[str, RunResult], name: str, path: str) -> Any:
        """``kubectl get --raw PATH`` as JSON (None when it failed: the probe says why)."""
        r = await self._run(host, probes, name, self.kubectl(f"get --raw {shlex.quote(path)}"))
        if not r.ok:
            return None
        try:
            return json.loads(r.stdout)
        except ValueError:
            r.error = "kubectl's answer is not JSON"
            return None

    # --- freeze ------------------------------------------------------------------------------

    async def pod_facts(self, host: Any, ns: str, name: str) -> PodFacts:
        """The pod, its owner chain, events and logs (current and previous) from the API."""
        out = PodFacts()
        base = f"/api/v1/namespaces/{_q(ns)}/pods/{_q(name)}"
        pod = await self.get(host, out.probes, "kube_pod", base)
        if not isinstance(pod, dict) or pod.get("kind") != "Pod":
            r = out.probes["kube_pod"]
            out.notes.append(f"pod {ns}/{name} not read through kubectl: {_why(r)}")
            return out
        out.pod = pod
        c = M.serving_container(pod, self.container or None)
        if c is None:
            out.notes.append(f"pod {ns}/{name} has no container {self.container!r}")
            return out
        self.container = c["name"]
        status: dict[str, Any] = next(
            (s for s in (pod.get("status") or {}).get("containerStatuses") or [] if s.get("name") == c["name"]), {}
        )
        owner, events = await asyncio.gather(self._owner(host, out, ns, pod), self._events(host, out, ns, name))
        logs = f"{base}/log?container={_q(c['name'])}"
        jobs = {"current": self._log(host, out, "kube_log", f"{logs}&tailLines={LOG_TAIL_LINES}")}
        if status.get("restartCount") or (status.get("lastState") or {}).get("terminated"):
            jobs["previous"] = self._log(host, out, "kube_log_previous", f"{logs}&previous=true")
        for which, text in zip(jobs, await asyncio.gather(*jobs.values()), strict=True):
            if text is not None:
                out.logs[which] = text
        out.facts = pod_summary(pod, c, status, owner, events)
        out.facts["group"] = await self._group(host, out, ns, pod)
        return out

    async def _group(self, host: Any, out: PodFacts, ns: str, pod: dict[str, Any]) -> dict[str, Any] | None:
        """A LeaderWorkerSet's group (leader and workers, one pod per tray): each member's node, phase, restarts."""
        labels = (pod.get("metadata") or {}).get("labels") or {}
        name, index = labels.get(LWS_NAME), labels.get(LWS_GROUP)
        if not name or index is None:
            return None
        sel = urllib.parse.quote(f"{LWS_NAME}={name},{LWS_GROUP}={index}", safe="")
        got = await self.get(host, out.probes, "kube_group", f"/api/v1/namespaces/{_q(ns)}/pods?labelSelector={sel}")
        pods = [p for p in (got or {}).get("items") or [] if isinstance(p, dict)] if isinstance(got, dict) else []
        pods.sort(key=lambda p: _index(member_row(p)["worker_index"]))
        self.group_pods = pods
        members = [member_row(p) for p in pods]
        size = ((pod.get("metadata") or {}).get("annotations") or {}).get("leaderworkerset.sigs.k8s.io/size")
        for m in members:
            if m["phase"] != "Running" or m["restarts"] or m["waiting"]:
                out.notes.append(
                    f"group member {m['name']} on {m['node']}: {m['phase']}, restarts {m['restarts']}"
                    + (f", {m['waiting']}" if m["waiting"] else "")
                )
        return {"kind": "LeaderWorkerSet", "name": name, "index": index, "size": size, "members": members}

    async def _log(self, host: Any, out: PodFacts, name: str, path: str) -> str | None:
        r = await self._run(host, out.probes, name, self.kubectl(f"get --raw {shlex.quote(path)}"), 30.0)
        return r.stdout if r.ok else None

    async def _owner(self, host: Any, out: PodFacts, ns: str, pod: dict[str, Any]) -> list[dict[str, str]]:
        """The controller chain above the pod: ReplicaSet → Deployment, StatefulSet, LeaderWorkerSet …"""
        chain: list[dict[str, str]] = []
        obj = pod
        for depth in range(4):
            ref = next(
                (r for r in (obj.get("metadata") or {}).get("ownerReferences") or [] if r.get("controller")), None
            )
            if ref is None:
                break
            chain.append(
                {"kind": ref.get("kind", ""), "name": ref.get("name", ""), "api_version": ref.get("apiVersion", "")}
            )
            plural = _PLURAL.get(ref.get("kind", ""), ref.get("kind", "").lower() + "s")
            group = ref.get("apiVersion", "v1")
            prefix = "/api/v1" if group == "v1" else f"/apis/{group}"
            got = await self.get(
                host, out.probes, f"kube_owner_{depth}", f"{prefix}/namespaces/{_q(ns)}/{plural}/{_q(ref['name'])}"
            )
            if not isinstance(got, dict):
                break
            obj = got
        return chain

    async def _events(self, host: Any, out: PodFacts, ns: str, name: str) -> list[dict[str, Any]]:
        sel = urllib.parse.quote(f"involvedObject.name={name}", safe="")
        got = await self.get(host, out.probes, "kube_events", f"/api/v1/namespaces/{_q(ns)}/events?fieldSelector={sel}")
        items = (got or {}).get("items") or [] if isinstance(got, dict) else []
        return [
            event_row(e) for e in sorted(items, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
        ]

    async def freeze(self, host: Any, pick: Pick, *, emit: Any = None, reason: str = "operator") -> Any:
        from ..scene.freeze import freeze

        self.pick, self.container = pick, pick.container or self.container
        await self.check_context(host)
        node = ContainerdLauncher(pick)
        ref = pick.pod_ref()
        if ref is None:  # no --pod: the pod of the serving container on this node
            found = await node.find(host, pick)
            ref = (found.pod["namespace"], found.pod["name"]) if found.pod else None
            if ref is None:
                raise UsageError("--runtime kubernetes needs --pod NAMESPACE/NAME (no pod container serves vLLM here)")
            facts = await self.pod_facts(host, *ref)
        else:
            facts, found = await asyncio.gather(self.pod_facts(host, *ref), node.find(host, pick))
        if found.container is None:
            found.notes = [n for n in found.notes if not n.startswith("containerd not readable")]
            found.notes.append("containerd on this host does not run the pod's container: facts from the API only")
        self.frozen = facts.pod
        source, text = self._log_choice(facts, found)
        scanned = await scan_cri(host, found) if not source.startswith("previous container's log (kubectl") else None
        if scanned is not None and (scanned[1].first_exception is not None or text is None):
            source, text = scanned[0], None
        else:
            scanned = None
        return await freeze(
            host,
            pid=pick.pid,
            serving=(found.pid, (found.container or {}).get("id")),
            log_text=text,
            emit=emit,
            reason=reason,
            docker_socket=None,
            pick_container=False,
            launcher_probes={**found.probes, **facts.probes},
            overlay=lambda scene: self._overlay(scene, facts, found, source, scanned),
        )

    def _log_choice(self, facts: PodFacts, found: Found) -> tuple[str, str | None]:
        """The previous container's log first (kubectl, then the node's CRI file), else the current one."""
        from ..scene.freeze import classify_first_exception

        prev = facts.logs.get("previous")
        if prev and classify_first_exception(prev) is not None:
            return "previous container's log (kubectl logs --previous)", prev
        node_source, node_text = first_log(found.logs, found.log_paths)
        if node_source.startswith("previous") or "current" not in facts.logs:
            return node_source, node_text
        return "container log (kubectl logs)", facts.logs["current"]

    def _overlay(self, scene: Any, facts: PodFacts, found: Found, source: str, scanned: Any = None) -> None:
        node_overlay(scene, self.name, found, source)
        with_scan(scene, scanned)
        scene.notes.extend(facts.notes)
        if facts.facts is None:
            return
        scene.pod = {**(scene.pod or {}), **facts.facts}
        node, here = facts.facts.get("node"), scene.host.hostname
        if found.container is None and node and here and node.split(".")[0] != here.split(".")[0]:
            scene.notes.append(
                f"the pod runs on node {node}, not on {here}: the host facts here are {here}'s (freeze the node itself "
                "for its driver, GPUs and the OCI spec's env)"
            )
        if scene.container is None:
            scene.container = manifest_container(facts.facts)
            if (scene.process or {}).get("env") is None:
                from ..scene.assemble import SERVING_ENV

                env = M.env_pairs(M.serving_container(facts.pod or {}, self.container) or {})
                scene.env = {k: v for k, v in sorted(env.items()) if SERVING_ENV.match(k)}
                scene.env_origin = {k: "manifest" for k in scene.env}
        if scene.log_source == "given" and source:
            scene.log_source = source
        for e in facts.facts["events"]:
            if e["reason"] in NOTABLE_EVENTS:
                scene.notes.append(f"pod event {e['reason']} (x{e['count']}): {e['message'][:200]}")

    # --- a ladder run ------------------------------------------------------------------------

    def start_config(self) -> Any:
        """The frozen pod's serving container as a RunConfig (the ladder's first run; UsageError if not a vLLM server)."""
        from ..ladder.config import parse_command

        if self.frozen is None:
            raise UsageError("no frozen pod to start from: the pod could not be read through kubectl (see the freeze)")
        c = M.serving_container(self.frozen, self.container or None) or {}
        self.container = str(c.get("name") or "")
        argv = M.container_argv(c)
        try:
            cfg = parse_command(argv)
        except UsageError as exc:
            raise UsageError(
                f"pod container {c.get('name')!r} runs {' '.join(argv)[:120]!r}, not a vllm serve command line k3tui can "
                f"change one variable of ({exc})"
            ) from None
        cfg.image = str(c.get("image") or "")
        cfg.env.update({k: v for k, v in M.env_pairs(c).items() if not v.startswith("<")})
        return cfg

    def run_manifest(self, config: Any, run_id: str) -> dict[str, Any]:
        from ..ladder.config import launch_env, server_argv

        if self.frozen is None:
            raise UsageError("no frozen pod to derive a run from: freeze with --pod NAMESPACE/NAME first")
        argv = server_argv(config)
        frozen_c = M.serving_container(self.frozen, self.container or None) or {}
        if server_argv(self.start_config()) == argv:  # the same server: its args exactly as the manifest spells them
            argv = M.container_argv(frozen_c)
        env = dict(config.env)
        env.update(launch_env(config) if not config.image else {})
        if config.visible_devices:
            env["CUDA_VISIBLE_DEVICES"] = config.visible_devices
        return M.run_pod(self.frozen, self.container, argv, env, config.image, run_id)

    def plan(self, config: Any, run_id: str) -> list[str]:
        """The run pod's manifest diff against the frozen pod, one line per field."""
        new = self.run_manifest(config, run_id)
        changes = M.diff(M.applied(self.frozen or {}), new)
        head = f"run {run_id}: pod {new['metadata'].get('namespace', '')}/{new['metadata']['name']} from the frozen pod"
        return [head] + [f"  {d['key']}: {_short(d['old'])} -> {_short(d['new'])}" for d in changes]

    async def start(self, host: Any, config: Any, run_id: str, rung: str = "") -> PodRun:
        return await self.create(host, self.run_manifest(config, run_id), run_id)

    async def create(self, host: Any, pod: dict[str, Any], run_id: str) -> PodRun:
        """Create the run pod ``pod`` through kubectl (HostError with kubectl's reason when the API refuses it)."""
        ns = pod["metadata"].get("namespace") or (self.frozen or {}).get("metadata", {}).get("namespace", "default")
        pod["metadata"]["namespace"] = ns
        probes: dict[str, RunResult] = {}
        cmd = self.kubectl(f"create --raw {shlex.quote(f'/api/v1/namespaces/{_q(ns)}/pods')} -f -")
        r = await self._run(host, probes, "kube_create", cmd, 30.0, stdin=json.dumps(pod))
        if not r.ok:
            raise HostError(
                f"{getattr(host, 'alias', 'host')}: kubectl could not create pod {ns}/{pod['metadata']['name']}: {_why(r)}"
            )
        return PodRun(
            run_id,
            "",
            command=f"pod {ns}/{pod['metadata']['name']}",
            namespace=ns,
            pod=pod["metadata"]["name"],
            container=self.container,
        )

    def _log_path(self, run: PodRun) -> str:
        q = f"container={_q(run.container)}&follow=true&timestamps=true"
        if run.since:
            q += f"&sinceTime={_q(run.since)}"
        return f"/api/v1/namespaces/{_q(run.namespace)}/pods/{_q(run.pod)}/log?{q}"

    async def follow(self, host: Any, handle: PodRun) -> AsyncIterator[str]:  # type: ignore[override]
        """Lines of the run pod's log until it ends; a dropped API stream resumes at the last line's time."""
        misses = 0
        while True:
            n = 0
            async for line in self._follow_once(host, handle):
                n += 1
                yield line
            phase = await self.phase(host, handle)
            if phase in ("Succeeded", "Failed", "gone"):
                return
            misses = 0 if n else misses + 1
            await asyncio.sleep(min(0.5 * (misses + 1), 5.0))

    async def _follow_once(self, host: Any, run: PodRun) -> AsyncIterator[str]:
        n, run.follows = run.follows, run.follows + 1
        follower = await host.start_detached(
            self.kubectl(f"get --raw {shlex.quote(self._log_path(run))}"),
            run_id=run.run_id if n == 0 else f"{run.run_id}-log{n}",
        )
        run.follower = follower
        skip = run.seen_at_since
        async for raw in host.tail(follower):
            ts, _, text = raw.partition(" ")
            if not ts[:4].isdigit():
                continue
            if ts == run.since and skip > 0:
                skip -= 1
                continue
            if ts != run.since:
                run.since, run.seen_at_since = ts, 0
            run.seen_at_since += 1
            yield text

    async def phase(self, host: Any, run: PodRun) -> str:
        """The run pod's phase (``gone`` once deleted)."""
        probes: dict[str, RunResult] = {}
        pod = await self.get(host, probes, "kube_phase", f"/api/v1/namespaces/{_q(run.namespace)}/pods/{_q(run.pod)}")
        if pod is None:
            return "gone" if "NotFound" in (probes["kube_phase"].stderr + probes["kube_phase"].stdout) else "unknown"
        return str((pod.get("status") or {}).get("phase") or "Pending")

    async def forward(self, host: Any, handle: PodRun, port: int) -> int:
        """The pod's own address on the target (the pod IP, or the node's for a hostNetwork pod)."""
        ip = ""
        for _ in range(60):
            pod = await self.get(
                host, {}, "kube_pod_ip", f"/api/v1/namespaces/{_q(handle.namespace)}/pods/{_q(handle.pod)}"
            )
            ip = ((pod or {}).get("status") or {}).get("podIP") or ""
            if ip:
                break
            await asyncio.sleep(1.0)
        local: int = await host.forward_port(port, remote_host=ip or "127.0.0.1")
        return local

    async def leftovers(self, host: Any, delete: bool = True) -> list[str]:
        """Run pods an earlier session left behind (k3tui's label, the frozen pod's namespace); deleted unless told not to."""
        ns = ((self.frozen or {}).get("metadata") or {}).get("namespace") or "default"
        sel = urllib.parse.quote(f"{M.MANAGED_BY}=k3tui", safe="")
        got = await self.get(host, {}, "kube_leftovers", f"/api/v1/namespaces/{_q(ns)}/pods?labelSelector={sel}")
        names = (
            [str((p.get("metadata") or {}).get("name")) for p in (got or {}).get("items") or []]
            if isinstance(got, dict)
            else []
        )
        for name in names if delete else []:
            path = f"/api/v1/namespaces/{_q(ns)}/pods/{_q(name)}"
            await self._run(host, {}, "kube_delete", self.kubectl(f"delete --raw {shlex.quote(path)}"), 30.0)
        return [f"{ns}/{n}" for n in names]

    async def stop(self, host: Any, handle: PodRun, grace: float = 10.0, reason: str = "") -> int | None:  # type: ignore[override]
        """Delete the run pod and wait until the API no longer has it (bounded)."""
        probes: dict[str, RunResult] = {}
        path = f"/api/v1/namespaces/{_q(handle.namespace)}/pods/{_q(handle.pod)}"
        r = await self._run(host, probes, "kube_delete", self.kubectl(f"delete --raw {shlex.quote(path)}"), 30.0)
        deadline = time.monotonic() + GONE_TIMEOUT_S
        while r.ok and time.monotonic() < deadline and await self.phase(host, handle) != "gone":
            await asyncio.sleep(0.5)
        if handle.follower is not None:
            try:
                await host.stop(handle.follower, grace=2.0)
            except Exception:  # noqa: BLE001, S110 - the follower ends with the pod anyway
                pass
        return 0 if r.ok else None


# --- pure parts ----------------------------------------------------------------------------------


def _q(part: str) -> str:
    return urllib.parse.quote(str(part), safe="")


def _index(v: Any) -> int:
    return int(v) if str(v).isdigit() else 0


def _short(v: Any) -> str:
    text = "(none)" if v is None else str(v)
    return text if len(text) <= 120 else text[:117] + "..."


def _why(r: RunResult) -> str:
    last = ((r.stderr or r.stdout).strip().splitlines() or [""])[-1]
    return r.error or (f"exit {r.status}: {last[:300]}" if last else f"exit {r.status}")


def member_row(p: dict[str, Any]) -> dict[str, Any]:
    """One pod of a group: name, its tray, leader or worker, phase, restarts, why it waits."""
    meta, st = p.get("metadata") or {}, p.get("status") or {}
    cs = (st.get("containerStatuses") or [{}])[0]
    return {
        "name": meta.get("name"),
        "node": (p.get("spec") or {}).get("nodeName"),
        "worker_index": (meta.get("labels") or {}).get(LWS_WORKER, ""),
        "phase": st.get("phase"),
        "restarts": cs.get("restartCount", 0),
        "waiting": ((cs.get("state") or {}).get("waiting") or {}).get("reason"),
    }


def event_row(e: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": e.get("type"),
        "reason": e.get("reason") or "",
        "message": e.get("message") or "",
        "count": e.get("count") or 1,
        "last": e.get("lastTimestamp") or e.get("eventTime"),
        "source": (e.get("source") or {}).get("component") or e.get("reportingComponent"),
    }


def pod_summary(
    pod: dict[str, Any],
    c: dict[str, Any],
    status: dict[str, Any],
    owner: list[dict[str, str]],
    events: list[dict[str, Any]],
) -> dict[str, Any]:
    """The scene's ``pod``: identity, node, owner, restarts, the manifest as applied, claims, events."""
    meta, spec, st = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    last = (status.get("lastState") or {}).get("terminated") or {}
    return {
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "container": c.get("name"),
        "node": spec.get("nodeName"),
        "owner": owner[-1] if owner else None,
        "owner_chain": owner,
        "phase": st.get("phase"),
        "restarts": status.get("restartCount", 0),
        "last_termination": {k: last.get(k) for k in ("reason", "exitCode", "finishedAt", "message") if k in last}
        or None,
        "waiting": ((status.get("state") or {}).get("waiting") or {}).get("reason"),
        "image": c.get("image"),
        "image_id": status.get("imageID"),
        "resource_claims": spec.get("resourceClaims") or [],
        "claim_statuses": st.get("resourceClaimStatuses") or [],
        "gpus": ((c.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu"),
        "manifest": M.applied(pod),
        "events": events,
    }


def manifest_container(facts: dict[str, Any]) -> dict[str, Any]:
    """Container facts from the pod alone (no containerd on this host): image, digest from ``imageID``, argv, env."""
    man = facts["manifest"]
    c = M.serving_container(man, facts["container"]) or {}
    image_id = str(facts.get("image_id") or "")
    digest = image_id.rsplit("@", 1)[1] if "@" in image_id else None
    repo = image_id.split("://", 1)[-1].split("@", 1)[0] if digest else ""
    return {
        "name": c.get("name"),
        "id": None,
        "image": c.get("image") or "",
        "image_id": None,
        "digest": digest,
        "repo_digests": [f"{repo}@{digest}"] if digest else [],
        "command": M.container_argv(c),
        "env": [f"{k}={v}" for k, v in M.env_pairs(c).items()],
        "labels": (man.get("metadata") or {}).get("labels") or {},
        "source": "pod manifest (kubectl)",
    }

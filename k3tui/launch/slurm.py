"""The ``slurm`` launcher: the server is a Slurm job; its launch definition is the batch script.

Freeze (``k3tui freeze TARGET --job N``; TARGET a login node or the job's node):

- ``scontrol show job -dd N``: state, reason, exit code, times, nodes, and per node the GRES
  as bound (``GRES=gpu:h200:2(IDX:0-1)``) — :mod:`k3tui.scene.parsers.slurm`;
- the batch script as submitted (``scontrol write batch_script N -``) with its ``#SBATCH``
  directives and container flags (pyxis ``--container-image``/``--container-mounts``,
  ``apptainer exec IMAGE``; a digest where the reference pins one);
- the step's environment: ``scontrol listpids N`` answers only on a node of the job (it asks
  that node's slurmd), so on the node the serving task's ``/proc/PID/environ`` is read and the
  host's process probes run on that pid; on a login node the scene says so and keeps the
  variables the script exports;
- the job's output file (``StdOut=``) is the server log: scanned whole on the target by the
  big-log prefilter (:func:`k3tui.scene.freeze.freeze` with ``log_path``), which needs the
  file on a filesystem the target sees (a shared one, or the node itself);
- earlier attempts of the same job name by the job's owner: ``sacct -D -X -P -u UID`` (requeued
  attempts included; ``-u`` because sacct otherwise answers only for whoever runs it);
  where accounting is off (``sacct`` answers nothing) the ``jobcomp/filetxt`` file named by
  ``scontrol show config`` and ``squeue -t all``. Repeated failures, or ``Restarts`` ≥ 2, are
  a **requeue loop** finding.

Everything goes through :func:`k3tui.scene.freeze.freeze` with an overlay, so the host probes,
redaction (the job env is learnt by the redactor before the walk: its secret values are masked
in the script and the output too) and the ``SceneFrozen`` event stay one path.

A ladder run is the frozen script resubmitted with exactly one variable changed
(:mod:`k3tui.launch.slurm_script`; the script's diff is the plan shown before ``sbatch``),
with the frozen job's working directory and job name. Its output file is followed by a
detached follower on the target (``tail -F`` until the job leaves the queue), so an SSH drop
resumes by byte offset; stop is ``scancel`` and waits until the job has left its running
states. A multi-node job is one run: one ``sbatch``, one output, one ``scancel`` for all nodes.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import shlex
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import HostError, UsageError
from ..remote.base import RunHandle, RunResult
from ..scene.parsers import slurm as S
from ..scene.parsers._common import ParseError
from . import slurm_script as SS
from .base import Pick, run_probe

ACTIVE_STATES = frozenset(
    {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
     "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED"}
)  # fmt: skip
"""Job states in which the job still holds (or waits for) its nodes."""
FAILED_STATES = frozenset(
    {"FAILED", "NODE_FAIL", "BOOT_FAIL", "OUT_OF_MEMORY", "TIMEOUT", "PREEMPTED", "REQUEUED", "DEADLINE"}
)
LOOP_ATTEMPTS = 2
"""Failed attempts of one job name (or restarts of one job) from which a requeue loop is reported."""
HISTORY_DAYS = 7
GONE_TIMEOUT_S = 60.0
IMAGE_FILE = re.compile(r"\.(sif|sqsh|squashfs|simg)$")
"""Local image files (apptainer SIF, enroot squashfs) whose own bytes are the image."""
IMAGE_HASH_TIMEOUT_S = 180.0
NODE_CONCURRENCY = 16
"""Nodes of one job frozen at once."""
NODE_WAIT_S = 300.0
"""How long ``forward`` waits for a submitted run to get its batch host."""
SERVER_PATTERN = "vllm"


@dataclass
class SlurmRun(RunHandle):
    """A ladder run's job; ``run_dir`` is its output follower's (the ladder's freeze reads that log)."""

    job_id: str = ""
    output: str = ""
    follower: RunHandle | None = None


@dataclass
class JobFacts:
    """What the launcher read about one job (before it becomes ``scene.job``)."""

    job: dict[str, Any] = field(default_factory=dict)
    script: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    pid: int | None = None
    env: dict[str, str] | None = None
    node: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    history_source: str = ""
    probes: dict[str, RunResult] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    image_digest: dict[str, str] | None = None
    """``digest``/``source`` of a local image file the script runs (:meth:`SlurmLauncher._image_digest`)."""
    """One row per other node of the job, frozen over SSH (:meth:`SlurmLauncher._other_nodes`)."""


class SlurmLauncher:
    """A Slurm job through scontrol/sbatch/scancel on the target (see the module docstring)."""

    name = "slurm"

    def __init__(self, pick: Pick | None = None) -> None:
        self.pick = pick or Pick()
        self.frozen: JobFacts | None = None
        """The job as frozen (the ladder's runs derive from its script)."""

    # --- running Slurm clients ------------------------------------------------------------

    def cmd(self, command: str) -> str:
        """``command`` with ``SLURM_CONF`` set when ``--slurm-conf`` names one."""
        conf = self.pick.slurm_conf
        return f"SLURM_CONF={shlex.quote(conf)} {command}" if conf else command

    _run = staticmethod(run_probe)
    """One launcher command on a host, kept as a scene probe (:func:`k3tui.launch.base.run_probe`)."""

    async def show_job(
        self, host: Any, job_id: str, probes: dict[str, RunResult], name: str = "slurm_job"
    ) -> dict[str, Any]:
        """``scontrol show job -dd`` of one job, parsed (HostError naming scontrol's answer when it has none)."""
        r = await self._run(host, probes, name, self.cmd(f"scontrol show job -dd {shlex.quote(job_id)}"))
        try:
            jobs = S.parse_jobs(r.stdout) if r.ok else []
        except ParseError:
            jobs = []
        job = next(
            (j for j in jobs if job_id in (j.get("JobId"), f"{j.get('ArrayJobId')}_{j.get('ArrayTaskId')}")), None
        )
        if job is None and jobs:
            job = jobs[0]
        if job is None:
            raise HostError(f"{getattr(host, 'alias', 'host')}: Slurm job {job_id} not readable: {_why(r)}")
        return job

    # --- freeze ---------------------------------------------------------------------------

    async def job_facts(self, host: Any, job_id: str) -> JobFacts:
        """Everything Slurm says about ``job_id`` on ``host`` (see the module docstring)."""
        out = JobFacts()
        out.job = await self.show_job(host, job_id, out.probes)
        jid = out.job.get("JobId", job_id)
        script, _, _, _ = await asyncio.gather(
            self._run(
                host, out.probes, "slurm_batch_script", self.cmd(f"scontrol write batch_script {shlex.quote(jid)} -")
            ),
            self._steps(host, out, jid),
            self._history(host, out),
            self._node(host, out),
        )
        if script.ok:
            out.script = script.stdout
            await self._image_digest(host, out)
        else:
            out.notes.append(f"batch script of job {jid} not readable: {_why(script)}")
        return out

    async def _image_digest(self, host: Any, out: JobFacts) -> None:
        """The SHA-256 of a local image file (apptainer ``.sif``, enroot ``.sqsh``) the script runs, computed on the target."""
        c = S.container_flags(out.script or "")
        image = (c or {}).get("image") or ""
        if not c or c.get("digest") or not IMAGE_FILE.search(image):
            return
        workdir = S.null(out.job.get("WorkDir")) or "."
        r = await self._run(
            host, out.probes, "slurm_image_sha256",
            f"cd {shlex.quote(workdir)} && sha256sum -- {shlex.quote(image)}", timeout=IMAGE_HASH_TIMEOUT_S,
        )  # fmt: skip
        digest = r.stdout.split()[0] if r.ok and r.stdout.split() else ""
        if len(digest) == 64:
            out.image_digest = {"digest": f"sha256:{digest}", "source": f"sha256sum of {image} on the target"}
        else:
            out.notes.append(f"image file {image} not hashed on this host: {_why(r)}")

    async def _steps(self, host: Any, out: JobFacts, jid: str, node: str | None = None) -> None:
        """The job's processes on ``host`` (``scontrol listpids``, for ``node`` when named), the serving one, its env."""
        on = f" {shlex.quote(node)}" if node else ""
        r = await self._run(host, out.probes, "slurm_listpids", self.cmd(f"scontrol listpids {shlex.quote(jid)}{on}"))
        out.steps = S.parse_listpids(r.stdout) if r.ok else []
        if not out.steps:
            where = node or out.job.get("BatchHost") or out.job.get("NodeList") or "?"
            out.notes.append(
                f"no process of job {jid} on this host (scontrol listpids: {_why(r) if not r.ok else 'none'}): "
                f"the step's env and process probes need TARGET = the job's node ({where})"
            )
            return
        pids = " ".join(str(s["pid"]) for s in out.steps)
        r = await self._run(
            host, out.probes, "slurm_step_cmdlines",
            f"for p in {pids}; do printf '%s\\t' $p; tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null; echo; done",
        )  # fmt: skip
        cmdlines = dict(line.split("\t", 1) for line in r.stdout.splitlines() if "\t" in line) if r.ok else {}
        for s in out.steps:
            s["cmdline"] = cmdlines.get(str(s["pid"]), "").strip()
        out.pid = serving_pid(out.steps)
        if out.pid is None:
            return
        r = await self._run(host, out.probes, "slurm_step_environ", f"tr '\\0' '\\n' < /proc/{out.pid}/environ")
        if r.ok:
            out.env = environ_map(r.stdout)
        else:
            out.notes.append(f"environment of job {jid}'s pid {out.pid} not readable: {_why(r)}")

    async def _other_nodes(self, host: Any, facts: JobFacts, emit: Any, reason: str) -> list[dict[str, Any]]:
        """Every node of the job the target is not: reached over SSH (``--node-target``), frozen there, one row each."""
        nodes = S.expand_hostlist(facts.job.get("NodeList"))
        if not nodes or self.pick.connect is None:
            return []
        addrs, hostnames = await self._addrs(host, nodes)
        here = (facts.env or {}).get("SLURMD_NODENAME") or await self._which_node(host, hostnames)
        nodes = [n for n in nodes if n != here]
        bound = asyncio.Semaphore(NODE_CONCURRENCY)

        async def one(node: str) -> dict[str, Any]:
            async with bound:
                return await self._freeze_node(node, addrs.get(node) or node, facts, emit, reason)

        return list(await asyncio.gather(*(one(n) for n in nodes)))

    async def _addrs(self, host: Any, nodes: list[str]) -> tuple[dict[str, str], dict[str, str]]:
        """``NodeAddr`` and ``NodeHostName`` of each node."""
        r = await self._run(host, {}, "slurm_nodes", self.cmd(f"scontrol show node {shlex.quote(','.join(nodes))}"))
        addrs: dict[str, str] = {}
        names: dict[str, str] = {}
        for rec in r.stdout.split("\n\n") if r.ok else []:
            got = dict(kv for line in rec.splitlines() for kv in S.parse_kv_line(line.strip()))
            if got.get("NodeName"):
                addrs[got["NodeName"]] = got.get("NodeAddr") or got["NodeName"]
                names[got["NodeName"]] = got.get("NodeHostName") or got["NodeName"]
        return addrs, names

    async def _which_node(self, host: Any, hostnames: dict[str, str]) -> str | None:
        """The job node the target is, by host name (None when none or several match: then every node is visited)."""
        r = await self._run(host, {}, "hostname", "hostname; hostname -s")
        mine = set(r.stdout.split()) if r.ok else set()
        hits = [n for n, h in hostnames.items() if h in mine or h.split(".")[0] in mine]
        return hits[0] if len(hits) == 1 else None

    async def _freeze_node(self, node: str, addr: str, facts: JobFacts, emit: Any, reason: str) -> dict[str, Any]:
        from ..scene.freeze import freeze

        target = self.pick.node_target.replace("{node}", node).replace("{addr}", addr)
        row: dict[str, Any] = {"node": node, "target": target}
        try:
            h = await self.pick.connect(target)
        except Exception as exc:  # noqa: BLE001 - an unreachable node is a row, not a failed freeze
            return {**row, "error": f"not reached over SSH ({target}): {exc}"}
        try:
            mine = JobFacts(job=facts.job)
            await self._steps(h, mine, str(facts.job.get("JobId")), node)

            def tag(scene: Any) -> None:
                scene.launcher = self.name
                scene.job = {
                    "id": facts.job.get("JobId"),
                    "name": facts.job.get("JobName"),
                    "node": node,
                    "role": "node",
                }
                scene.notes.extend(mine.notes)

            scene = await freeze(
                h, pid=mine.pid, emit=emit, reason=reason, docker_socket=None, pick_container=False,
                launcher_probes=mine.probes, overlay=tag,
            )  # fmt: skip
        finally:
            await h.close()
        return {**row, **node_row(scene, mine)}

    async def _node(self, host: Any, out: JobFacts) -> None:
        batch = S.null(out.job.get("BatchHost"))
        if batch is None:
            return
        r = await self._run(host, out.probes, "slurm_node", self.cmd(f"scontrol show node {shlex.quote(batch)}"))
        if r.ok:
            pairs = [kv for line in r.stdout.splitlines() for kv in S.parse_kv_line(line.strip())]
            got = dict(pairs)
            out.node = {
                "name": batch,
                "addr": got.get("NodeAddr"),
                "hostname": got.get("NodeHostName"),
                "state": got.get("State"),
            }

    async def _history(self, host: Any, out: JobFacts) -> None:
        """Earlier attempts of the job's name by the job's owner: sacct, else the jobcomp file and squeue (accounting off).

        ``-u`` names the owner: without it sacct answers only for the user running it, so an
        operator freezing someone else's job would get nothing and fall back as if accounting were off.
        """
        name = out.job.get("JobName") or ""
        fields = ",".join(S.SACCT_FIELDS[:7])
        owner = job_owner(out.job.get("UserId"))
        who = f"-u {shlex.quote(owner)}" if owner else "-a"
        r = await self._run(
            host, out.probes, "slurm_sacct",
            self.cmd(f"sacct -D -X -P -n {who} -S now-{HISTORY_DAYS}days --name {shlex.quote(name)} -o {fields}"),
        )  # fmt: skip
        rows = S.parse_sacct(r.stdout, S.SACCT_FIELDS[:7]) if r.ok else []
        if rows:
            out.history, out.history_source = [_sacct_row(x) for x in rows], "sacct"
            return
        await self._jobcomp_history(host, out, name)

    async def _jobcomp_history(self, host: Any, out: JobFacts, name: str) -> None:
        r = await self._run(host, out.probes, "slurm_config", self.cmd("scontrol show config"))
        conf = config_map(r.stdout)
        rows: list[dict[str, Any]] = []
        if conf.get("JobCompType") == "jobcomp/filetxt" and S.null(conf.get("JobCompLoc")):
            loc = conf["JobCompLoc"]
            got = await self._run(
                host,
                out.probes,
                "slurm_jobcomp",
                f"grep -F -- {shlex.quote(f'Name={name} ')} {shlex.quote(loc)} | tail -n 500",
            )
            rows = [_jobcomp_row(x) for x in S.parse_jobcomp(got.stdout) if x.get("Name") == name]
            out.history_source = f"jobcomp file {loc} (sacct has no records: accounting storage is off)"
        sq = await self._run(
            host,
            out.probes,
            "slurm_squeue",
            self.cmd(f"squeue -h -t all --name {shlex.quote(name)} -o '%i|%j|%T|%r|%S|%e|%N'"),
        )
        known = {(x["id"], x["end"]) for x in rows}
        for line in sq.stdout.splitlines() if sq.ok else []:
            f = [*line.split("|", 6), *[""] * 7][:7]
            if f[0] and (f[0], f[5]) not in known and not any(x["id"] == f[0] and x["state"] == f[2] for x in rows):
                rows.append(
                    {
                        "id": f[0],
                        "name": f[1],
                        "state": f[2],
                        "exit_code": None,
                        "start": f[4],
                        "end": f[5],
                        "nodes": f[6],
                    }
                )
        if rows and not out.history_source:
            out.history_source = "squeue -t all (jobs the controller still holds)"
        out.history = rows

    async def freeze(self, host: Any, pick: Pick, *, emit: Any = None, reason: str = "operator") -> Any:
        from ..scene.freeze import freeze

        if not pick.job:
            raise UsageError("--runtime slurm needs --job JOBID (the serving job)")
        if not re.fullmatch(r"\d+(?:_\d+|\+\d+)?", pick.job):
            raise UsageError(
                f"--job {pick.job!r}: expected a Slurm job id (1234, an array task 1234_7, a het component 1234+1)"
            )
        self.pick = pick
        facts = await self.job_facts(host, pick.job)
        self.frozen = facts
        facts.nodes = await self._other_nodes(host, facts, emit, reason)
        stdout = S.null(facts.job.get("StdOut"))
        return await freeze(
            host,
            pid=pick.pid or facts.pid,
            emit=emit,
            reason=reason,
            docker_socket=None,
            pick_container=False,
            launcher_probes=facts.probes,
            log_path=stdout,
            overlay=lambda scene: self._overlay(scene, facts, stdout),
        )

    def _overlay(self, scene: Any, facts: JobFacts, stdout: str | None) -> None:
        scene.launcher = self.name
        scene.job = job_summary(facts)
        scene.notes.extend(facts.notes)
        scene.notes.extend(scene.job["findings"])
        if stdout and scene.log_source.startswith("log file"):
            scene.log_source = f"job {scene.job['id']} output (StdOut={stdout})"
        if (scene.process or {}).get("env") is None and scene.job["env"]:
            from ..scene.assemble import SERVING_ENV

            scene.env = {k: v for k, v in sorted(scene.job["env"].items()) if SERVING_ENV.match(k)}
            scene.env_origin = {k: origin_of(scene.job, k) for k in scene.env}

    # --- a ladder run ---------------------------------------------------------------------

    def _script(self) -> str:
        if self.frozen is None or not self.frozen.script:
            raise UsageError("no frozen batch script to derive a run from: freeze with --job JOBID first")
        return self.frozen.script

    def start_config(self) -> Any:
        """The frozen script's server line as the ladder's first config (env: what the script exports)."""
        from ..ladder.config import parse_command

        script = self._script()
        argv = SS.server_argv_of(script)
        cfg = parse_command(["vllm", *argv[1:]] if argv[1:2] == ["serve"] else argv)
        cfg.entry = [argv[0], *cfg.entry[1:]]
        for k, v in S.script_exports(script).items():
            if k == "CUDA_VISIBLE_DEVICES":
                cfg.visible_devices = v
            else:
                cfg.env[k] = v
        self._base_env = dict(cfg.env, **({"CUDA_VISIBLE_DEVICES": cfg.visible_devices} if cfg.visible_devices else {}))
        return cfg

    def run_script(self, config: Any) -> str:
        """The frozen script with ``config``'s server argv and env (one variable apart, if the ladder says so).

        Option changes are edited into the server line where they stand; anything else (a new
        model path, a changed entry) rebuilds the line from the config.
        """
        from ..ladder.config import diff, server_argv

        script = self._script()
        base = self.start_config()
        changes = [d for d in diff(base, config) if not d["key"].startswith("env:") and d["key"] != "visible_devices"]
        for d in changes:
            if d["key"] in ("image", "docker_args", "driver", "gpu_count", "concurrency"):
                if d["key"] == "image":
                    raise UsageError(
                        "a Slurm run's image is its script's container flags: change the script, not 'image'"
                    )
                changes = [c for c in changes if c is not d]
        edited = SS.edit_in_place(script, changes) if changes else script
        env: dict[str, str | None] = dict(config.env)
        if config.visible_devices:
            env["CUDA_VISIBLE_DEVICES"] = config.visible_devices
        for k in self._base_env:
            env.setdefault(k, None)
        if edited is not None:
            return SS.rewrite(edited, SS.server_argv_of(edited), env)
        return SS.rewrite(script, server_argv(config), env)

    def sbatch_argv(self) -> list[str]:
        """``sbatch`` with the frozen job's name and working directory, and the resources it was given on
        sbatch's command line rather than in its script (partition, nodes, GRES, time limit): a run gets
        what the frozen job got, whichever way it was asked for."""
        job = self.frozen.job if self.frozen else {}
        argv = ["sbatch", "--parsable"]
        if S.null(job.get("JobName")):
            argv.append(f"--job-name={job['JobName']}")
        if S.null(job.get("WorkDir")):
            argv.append(f"--chdir={job['WorkDir']}")
        return argv + outside_options(job, S.sbatch_directives(self.frozen.script or "") if self.frozen else [])

    def plan(self, config: Any, run_id: str) -> list[str]:
        """The sbatch line and the script's diff against the frozen one, shown before the run is submitted."""
        new = self.run_script(config)
        jid = self.frozen.job.get("JobId", "?") if self.frozen else "?"
        head = f"run {run_id}: {shlex.join(self.sbatch_argv())} < batch script of job {jid}"
        diff = SS.script_diff(self._script(), new, f"job {jid} script", f"run {run_id}")
        return [head, *(diff or ["  (the frozen script unchanged)"])]

    async def start(self, host: Any, config: Any, run_id: str, rung: str = "") -> SlurmRun:
        probes: dict[str, RunResult] = {}
        r = await self._run(
            host, probes, "slurm_sbatch", self.cmd(shlex.join(self.sbatch_argv())), 60.0, stdin=self.run_script(config)
        )
        job_id = r.stdout.strip().split(";")[0] if r.ok else ""
        if not job_id.isdigit():
            raise HostError(f"{getattr(host, 'alias', 'host')}: sbatch did not submit run {run_id}: {_why(r)}")
        job = await self.show_job(host, job_id, probes)
        output = S.null(job.get("StdOut")) or ""
        run = SlurmRun(run_id, "", command=f"slurm job {job_id}", job_id=job_id, output=output)
        follower_id = f"{run_id}-job{job_id}-{secrets.token_hex(3)}"  # job ids repeat across clusters and resets
        run.follower = await host.start_detached(self._follower(job_id, output), run_id=follower_id)
        run.run_dir = run.follower.run_dir
        return run

    def _follower(self, job_id: str, output: str) -> str:
        """A shell loop on the target: the output file (``tail -F``) until the job leaves the queue; exits with its code."""
        conf = f"export SLURM_CONF={shlex.quote(self.pick.slurm_conf)}\n" if self.pick.slurm_conf else ""
        body = _FOLLOWER.replace("@JOB@", shlex.quote(job_id)).replace("@OUT@", shlex.quote(output))
        return "sh -c " + shlex.quote(conf + body.replace("@ACTIVE@", "|".join(sorted(ACTIVE_STATES))))

    def follow(self, host: Any, handle: Any) -> AsyncIterator[str]:
        """The run's output file line by line until the job has ended (resumed by byte offset after a drop)."""
        if not isinstance(handle, SlurmRun) or handle.follower is None:
            raise UsageError("not a Slurm run")
        lines: AsyncIterator[str] = host.tail(handle.follower)
        return lines

    async def forward(self, host: Any, handle: Any, port: int) -> int:
        """A local port reaching ``port`` on the run's batch host (its ``NodeAddr``), once the job has one."""
        probes: dict[str, RunResult] = {}
        deadline = time.monotonic() + NODE_WAIT_S
        addr = ""
        while not addr:
            job = await self.show_job(host, handle.job_id, probes, "slurm_run_job")
            batch = S.null(job.get("BatchHost"))
            if batch is not None:
                r = await self._run(
                    host, probes, "slurm_run_node", self.cmd(f"scontrol show node {shlex.quote(batch)}")
                )
                got = dict(kv for line in r.stdout.splitlines() for kv in S.parse_kv_line(line.strip()))
                addr = got.get("NodeAddr") or batch
            elif job.get("JobState") not in ACTIVE_STATES or time.monotonic() > deadline:
                addr = "127.0.0.1"  # never started: /health will not answer, the run's end says why
            else:
                await asyncio.sleep(1.0)
        local: int = await host.forward_port(port, remote_host=addr)
        return local

    async def stop(self, host: Any, handle: Any, grace: float = 10.0, reason: str = "") -> int | None:
        """``scancel`` the run's job, wait (bounded) until it has left its running states, stop the follower."""
        probes: dict[str, RunResult] = {}
        await self._run(host, probes, "slurm_scancel", self.cmd(f"scancel {shlex.quote(handle.job_id)}"))
        deadline = time.monotonic() + GONE_TIMEOUT_S
        job: dict[str, Any] = {}
        while time.monotonic() < deadline:
            try:
                job = await self.show_job(host, handle.job_id, probes, "slurm_run_job")
            except HostError:
                break
            if job.get("JobState") not in ACTIVE_STATES:
                break
            await asyncio.sleep(0.5)
        if handle.follower is not None:
            try:
                await host.stop(handle.follower, grace=2.0)
            except Exception:  # noqa: BLE001, S110 - the follower ends with the job anyway
                pass
        return S.exit_code(job.get("ExitCode"))[0]


def job_freeze(job_id: str) -> Any:
    """A ladder engine's ``freeze`` that freezes Slurm job ``job_id`` (the demo's Slurm node); a freeze of a
    ladder run (``run=``) stays the default one, on that run's own log."""

    async def freeze(host: Any, **kw: Any) -> Any:
        if kw.get("run") is not None:
            from . import freeze_host

            return await freeze_host(host, **kw)
        pick = Pick(job=job_id)
        return await SlurmLauncher(pick).freeze(host, pick, emit=kw.get("emit"), reason=kw.get("reason", "operator"))

    return freeze


# --- pure parts ----------------------------------------------------------------------------------

_FOLLOWER = r"""tail -n +1 -F @OUT@ 2>/dev/null & T=$!
miss=0
while :; do
  s=$(scontrol show job -o @JOB@ 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
  case "$s" in
    @ACTIVE@) miss=0; sleep 1;;
    "") miss=$((miss+1)); [ $miss -gt 60 ] && break; sleep 1;;
    *) break;;
  esac
done
sleep 2; kill $T 2>/dev/null; wait $T 2>/dev/null
e=$(scontrol show job -o @JOB@ 2>/dev/null | sed -n 's/.* ExitCode=\([0-9]*\):.*/\1/p')
exit ${e:-0}
"""
"""The output follower (see :meth:`SlurmLauncher._follower`): its log is the job's output, its exit the job's code."""


def _why(r: RunResult) -> str:
    last = ((r.stderr or r.stdout).strip().splitlines() or [""])[-1]
    return r.error or (f"exit {r.status}: {last[:300]}" if last else f"exit {r.status}")


def environ_map(text: str) -> dict[str, str]:
    """``/proc/PID/environ`` with NULs made newlines → ``{name: value}`` (a value's own newlines are rare; kept whole)."""
    env: dict[str, str] = {}
    last = ""
    for line in text.split("\n"):
        k, eq, v = line.partition("=")
        if eq and k and (k.replace("_", "a").isalnum() or k.startswith("BASH_FUNC_")):
            env[k], last = v, k
        elif last and line:
            env[last] += "\n" + line
    return env


def serving_pid(steps: list[dict[str, Any]]) -> int | None:
    """The step process that serves: one running vLLM, else the first task of the latest step, else the batch shell."""
    tasks = [s for s in steps if s.get("local_id") is not None]
    for s in tasks + [s for s in steps if s not in tasks]:
        if SERVER_PATTERN in (s.get("cmdline") or ""):
            return int(s["pid"])
    numbered = sorted((s for s in tasks if str(s["step"]).isdigit()), key=lambda s: (-int(s["step"]), s["local_id"]))
    batch = [s for s in tasks if s["step"] == "batch"]
    chosen = numbered or batch or steps
    return int(chosen[0]["pid"]) if chosen else None


def config_map(text: str) -> dict[str, str]:
    """``scontrol show config`` (``Key = Value`` lines) → ``{key: value}``."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        k, sep, v = line.partition(" = ")
        if sep:
            out[k.strip()] = v.strip()
    return out


def env_origins(env: dict[str, str], script: str | None, binding: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Which job env variables come from where: ``script`` (exported there), ``slurm`` (set by Slurm, the GRES
    binding's ``CUDA_VISIBLE_DEVICES`` included), else ``submit`` (inherited from the shell that ran sbatch).

    Grouped by origin (names in lists), so that no value sits under a secret-named key (the redactor
    would mask it: ``{"HF_TOKEN": "script"}``).
    """
    exported = S.script_exports(script or "")
    out: dict[str, list[str]] = {"script": [], "slurm": [], "submit": []}
    for k in env:
        if k in exported:
            out["script"].append(k)
        elif k.startswith(("SLURM_", "SLURMD_", "SRUN_", "PMI_", "PMIX_")) or (k in _GRES_ENV and binding):
            out["slurm"].append(k)
        else:
            out["submit"].append(k)
    return out


_GRES_ENV = ("CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES")


def origin_of(job: dict[str, Any], key: str) -> str:
    """The origin of one job env variable (``script``, ``slurm``, ``submit``; ``job`` if unknown)."""
    return next((o for o, names in (job.get("env_origin") or {}).items() if key in names), "job")


def job_owner(user_id: str | None) -> str | None:
    """``UserId=alice(1001)`` → ``1001`` (the uid: sacct needs no name lookup on the target), ``alice`` → ``alice``."""
    m = re.fullmatch(r"\s*([^()\s]*)(?:\((\d+)\))?\s*", user_id or "")
    return (m.group(2) or S.null(m.group(1))) if m else None


def _sacct_row(x: dict[str, str]) -> dict[str, Any]:
    return {
        "id": x.get("JobID", ""), "name": x.get("JobName", ""), "state": (x.get("State") or "").split(" ")[0],
        "exit_code": S.exit_code(x.get("ExitCode"))[0], "start": x.get("Start"), "end": x.get("End"), "nodes": x.get("NodeList"),
    }  # fmt: skip


def _jobcomp_row(x: dict[str, str]) -> dict[str, Any]:
    return {
        "id": x.get("JobId", ""), "name": x.get("Name", ""), "state": x.get("JobState", ""),
        "exit_code": S.exit_code(x.get("ExitCode"))[0], "start": x.get("StartTime"), "end": x.get("EndTime"),
        "nodes": x.get("NodeList"),
    }  # fmt: skip


def requeue_findings(job: dict[str, Any], history: list[dict[str, Any]]) -> list[str]:
    """A requeue loop: the job restarted ``LOOP_ATTEMPTS`` times or more, or as many failed attempts of its name."""
    out = []
    restarts = int(job.get("Restarts") or 0) if str(job.get("Restarts") or "0").isdigit() else 0
    failed = [h for h in history if h.get("state") in FAILED_STATES or (h.get("exit_code") or 0) != 0]
    if restarts >= LOOP_ATTEMPTS or len(failed) >= LOOP_ATTEMPTS:
        states = ", ".join(
            f"{h['id']} {h['state']}" + (f" exit {h['exit_code']}" if h.get("exit_code") else "") for h in failed[-6:]
        )
        out.append(
            f"requeue loop: job {job.get('JobId')} ({job.get('JobName')}) restarted {restarts} time(s); "
            f"{len(failed)} failed attempt(s) of this name" + (f": {states}" if states else "")
        )
    return out


def _container(facts: JobFacts, directives: list[tuple[str, str]]) -> dict[str, Any] | None:
    c = S.container_flags(facts.script or "", directives) if facts.script else None
    if c is not None and facts.image_digest:
        c["digest"], c["digest_source"] = facts.image_digest["digest"], facts.image_digest["source"]
    return c


_OUTSIDE = (  # (option, its short form, the scontrol key, how the value becomes the option's)
    ("--partition", "-p", "Partition", lambda v: v),
    ("--nodes", "-N", "NumNodes", lambda v: v),
    (
        "--gres",
        None,
        "TresPerNode",
        lambda v: ",".join(x.removeprefix("gres:").replace("gres/", "") for x in v.split(",")),
    ),
    ("--time", "-t", "TimeLimit", lambda v: v),
)


def outside_options(job: dict[str, Any], directives: list[tuple[str, str]]) -> list[str]:
    """The frozen job's resources its script does not ask for (given on sbatch's command line), as sbatch options."""
    asked = {k for k, _ in directives}
    out = []
    for opt, short, key, conv in _OUTSIDE:
        value = S.null(job.get(key))
        if value is None or opt in asked or (short and short in asked) or (key == "TimeLimit" and value == "UNLIMITED"):
            continue
        if key == "NumNodes" and value == "1":
            continue
        out.append(f"{opt}={conv(value)}")
    return out


def node_row(scene: Any, facts: JobFacts) -> dict[str, Any]:
    """What the job's scene keeps of another node's scene (the whole one is its own ``SceneFrozen``)."""
    env = facts.env or {}
    return {
        "alias": scene.alias, "driver": scene.host.driver_version, "gpus": len(scene.gpus),
        "serving_pid": facts.pid, "slurmd_nodename": env.get("SLURMD_NODENAME"),
        "cuda_visible_devices": env.get("CUDA_VISIBLE_DEVICES"), "libcuda": (scene.libcuda or {}).get("path"),
        "xids": len(scene.xids), "host_faults": len(scene.host_faults), "notes": list(scene.notes),
    }  # fmt: skip


def job_summary(facts: JobFacts) -> dict[str, Any]:
    """The scene's ``job`` (see :mod:`k3tui.scene.model`)."""
    j = facts.job
    status, signal = S.exit_code(j.get("ExitCode"))
    binding = S.gres_binding(j)
    directives = S.sbatch_directives(facts.script or "")
    # on the job's node, the step's own environ; elsewhere (a login node) what the script exports,
    # which is what the step ran under less what Slurm and the submitting shell added
    env = facts.env if facts.env is not None else S.script_exports(facts.script or "")
    return {
        "id": j.get("JobId"), "name": j.get("JobName"), "state": j.get("JobState"), "reason": S.null(j.get("Reason")),
        "exit_code": status, "signal": signal, "derived_exit_code": S.exit_code(j.get("DerivedExitCode"))[0],
        "restarts": int(j["Restarts"]) if str(j.get("Restarts", "")).isdigit() else None,
        "user": j.get("UserId"), "partition": j.get("Partition"), "batch_host": S.null(j.get("BatchHost")),
        "nodes": S.expand_hostlist(j.get("NodeList")), "num_nodes": j.get("NumNodes"), "node": facts.node or None,
        "gres": {"requested": S.null(j.get("TresPerNode")) or S.null(j.get("JOB_GRES")), "per_node": binding},
        "times": {k.lower(): S.null(j.get(f"{k}Time")) for k in ("Submit", "Start", "End")} | {"run": j.get("RunTime")},
        "workdir": S.null(j.get("WorkDir")), "command": S.null(j.get("Command")), "comment": S.null(j.get("Comment")),
        "script": facts.script, "directives": [list(d) for d in directives],
        "env": dict(sorted(env.items())), "env_origin": env_origins(env, facts.script, binding),
        "env_source": f"/proc/{facts.pid}/environ"
        if facts.env is not None
        else ("the batch script's exports" if env else None),
        "container": _container(facts, directives),
        "output": {"stdout": S.null(j.get("StdOut")), "stderr": S.null(j.get("StdErr"))},
        "steps": facts.steps, "serving_pid": facts.pid, "node_scenes": facts.nodes,
        "history": facts.history, "history_source": facts.history_source,
        "findings": requeue_findings(j, facts.history),
    }  # fmt: skip

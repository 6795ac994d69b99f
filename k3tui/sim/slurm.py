"""Slurm on the simulated host: ``scontrol``, ``sacct``, ``squeue`` answering for the scenario's ``[slurm]`` job.

A scenario with a ``[slurm]`` table is a GB300 node of a Slurm cluster whose serving process is
a job's step: the scenario's server (its container's ``vllm serve``) is step 0 of job
``job_id``, its output file (``stdout``, under ``/var/log`` so the host's virtual files hold it)
is the server's log, and ``history`` lists the earlier attempts ``sacct`` reports — enough for
``k3tui freeze gb300-sim --job N`` (and the demo) to show a job, its script, its GRES binding,
its env and a requeue loop. The answers copy the layout of Slurm 22.05's real output (the one
the real-cluster tests read, tests/support/slurm.py). Submitting and cancelling are not
simulated: ``sbatch``/``scancel`` say so. Without a ``[slurm]`` table the tools are absent
(``command not found``), as on a host without Slurm. Stdlib only (runs under ``python -S``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from . import containers as C

TOOLS = ("scontrol", "sacct", "squeue", "sbatch", "scancel")


def main(state: dict[str, Any], tool: str, args: list[str]) -> int:
    """Answer one Slurm client command (the forms k3tui's slurm launcher sends)."""
    job = state.get("slurm")
    if not job:
        sys.stderr.write(f"bash: {tool}: command not found\n")
        return 127
    if tool == "scontrol":
        return _scontrol(state, job, args)
    if tool == "sacct":
        return _sacct(job, args)
    if tool == "squeue":
        return 0
    sys.stderr.write(f"{tool}: error: submitting and cancelling jobs is not simulated (k3tui simulated host)\n")
    return 1


def _scontrol(state: dict[str, Any], job: dict[str, Any], args: list[str]) -> int:
    words = [a for a in args if a not in ("-dd", "-d", "--details")]
    jid = str(job["job_id"])
    if words[:2] == ["show", "job"] and words[2:3] in ([jid], []):
        print(show_job(job))
    elif words[:2] == ["write", "batch_script"] and words[2:3] == [jid]:
        sys.stdout.write(job["script"])
    elif words[:1] == ["listpids"] and words[1:2] == [jid]:
        pid = C.main_pid(state)
        print("PID      JOBID    STEPID   LOCALID GLOBALID")
        if pid and job.get("state", "RUNNING") == "RUNNING":
            print(f"{pid:<8} {jid:<8} 0        0       0")
    elif words[:2] == ["show", "node"]:
        print(f"NodeName={job['node']} Arch=aarch64 CoresPerSocket=72\n   Gres={job['gres']}\n"
              f"   NodeAddr=127.0.0.1 NodeHostName={job['node']} Version=22.05.8\n   State=ALLOCATED")  # fmt: skip
    elif words[:2] == ["show", "config"]:
        print("Configuration data as of 2026-12-01T00:00:00\nJobCompType             = jobcomp/none")
    else:
        sys.stderr.write(f"slurm_load_jobs error: Invalid job id specified ({' '.join(args)})\n")
        return 1
    return 0


def show_job(job: dict[str, Any]) -> str:
    """``scontrol show job -dd`` of the scenario's job, in Slurm 22.05's layout."""
    running = job.get("state", "RUNNING") == "RUNNING"
    return "\n".join([
        f"JobId={job['job_id']} JobName={job['name']}",
        f"   UserId={job.get('user', 'kimi(1000)')} GroupId=kimi(1000) MCS_label=N/A",
        f"   JobState={job.get('state', 'RUNNING')} Reason={job.get('reason', 'None')} Dependency=(null)",
        f"   Requeue=1 Restarts={job.get('restarts', 0)} BatchFlag=1 Reboot=0 ExitCode={job.get('exit_code', '0:0')}",
        f"   SubmitTime={job['submit']} EligibleTime={job['submit']}",
        f"   StartTime={job['start']} EndTime={'Unknown' if running else job['start']} Deadline=N/A",
        f"   Partition={job.get('partition', 'gb300')} AllocNode:Sid=login-01:4242",
        f"   NodeList={job['node']}", f"   BatchHost={job['node']}",
        "   NumNodes=1 NumCPUs=144 NumTasks=1 CPUs/Task=144 ReqB:S:C:T=0:0:*:*",
        f"   JOB_GRES={job['gres']}",
        f"     Nodes={job['node']} CPU_IDs=0-143 Mem=0 GRES={job['gres']}(IDX:{job['idx']})",
        f"   Command={job['workdir']}/serve.sbatch", f"   WorkDir={job['workdir']}",
        f"   Comment={job.get('comment', '')}",
        f"   StdErr={job['stdout']}", "   StdIn=/dev/null", f"   StdOut={job['stdout']}",
        f"   TresPerNode=gres:{job['gres']}", "",
    ])  # fmt: skip


def _sacct(job: dict[str, Any], args: list[str]) -> int:
    fields = next(
        (args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-o", "--format")), "JobID,JobName,State,ExitCode"
    )
    for row in job.get("history") or []:
        cells = {"JobID": str(job["job_id"]), "JobName": job["name"], "NodeList": job["node"], **row}
        print("|".join(str(cells.get(f, "")) for f in fields.split(",")))
    return 0


def lay_out(root: Path, state: dict[str, Any], log: bytes) -> None:
    """The job's output file (the server's log) where ``StdOut=`` says, in the host's virtual files."""
    out = root / "fs" / str(state["slurm"]["stdout"]).lstrip("/")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(log)

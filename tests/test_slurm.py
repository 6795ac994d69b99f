"""The Slurm launcher against a REAL Slurm cluster (munged, slurmctld, slurmd, slurmdbd on MariaDB; loopback) over a REAL sshd.

Jobs are submitted as the sshd user and run a stand-in ``vllm``: a tiny program that prints a real
vLLM log from the corpus line by line (and its own argv first, so a ladder run shows what it was
started with), then holds or exits with the failure's code. k3tui reaches the cluster only the
way an operator does: SSH to the node, Slurm's own clients there (``--slurm-conf``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from k3tui.launch import Pick, get
from tests.support.corpus import SHARED_CORPUS

SECRET = "hf_SlurmJobSecretValue0123456789abcd"
INJECTED = "/opt/injected/cuda-compat/lib"
_LABELS = [json.loads(x) for x in (SHARED_CORPUS / "vllm-cpu" / "labels.jsonl").read_text().splitlines() if x.strip()]
FAILED_LOGS = [x for x in _LABELS if x.get("first_exception")][:3]

STANDIN = """\
#!/usr/bin/python3
import os, sys, time
print("standin argv: " + " ".join(sys.argv[1:]), flush=True)
JOINED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "joined-" + os.environ.get("SLURM_JOB_ID", "-"))
if os.environ.get("STANDIN_SERVE"):  # every node joins, as vLLM's ranks do
    open(f"{JOINED}-{os.environ.get('SLURM_NODEID', '0')}", "w").close()
for line in open(os.environ["STANDIN_LOG"], errors="replace"):
    sys.stdout.write(line); sys.stdout.flush(); time.sleep(float(os.environ.get("STANDIN_DELAY", "0")))
time.sleep(float(os.environ.get("STANDIN_HOLD", "0")))
if os.environ.get("STANDIN_SERVE") and os.environ.get("SLURM_NODEID", "0") != "0":
    time.sleep(3600)  # a worker node of a multi-node job: only the head (node 0) serves HTTP
if os.environ.get("STANDIN_SERVE"):  # the head serves only once every node has joined, like vLLM's head
    n, end = int(os.environ.get("SLURM_NNODES", "1")), time.monotonic() + 120
    while sum(os.path.exists(f"{JOINED}-{i}") for i in range(n)) < n:
        if time.monotonic() > end:
            sys.exit("standin: a node never joined")
        time.sleep(0.1)
if os.environ.get("STANDIN_SERVE"):  # answer /health and /v1/models like the server the argv describes
    import json
    from http.server import BaseHTTPRequestHandler, HTTPServer
    a = sys.argv
    opt = lambda k, d: a[a.index(k) + 1] if k in a else d
    models = {"data": [{"id": opt("--served-model-name", a[2]), "max_model_len": int(opt("--max-model-len", "0"))}]}
    class H(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(models).encode() if self.path.startswith("/v1/models") else b""
            self.send_response(200 if self.path in ("/health", "/v1/models") else 404)
            self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
        def log_message(self, *args):
            pass
    HTTPServer(("0.0.0.0", int(opt("--port", "8000"))), H).serve_forever()
sys.exit(int(os.environ.get("STANDIN_EXIT", "1")))
"""


def _script(slurm, log: Path, *, hold: float = 0, code: int = 1, name: str = "kimi-serve", extra: str = "") -> str:
    bin_dir = slurm.jobs / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "vllm").write_text(STANDIN)
    (bin_dir / "vllm").chmod(0o755)
    return textwrap.dedent(f"""\
        #!/bin/bash
        #SBATCH --job-name={name}
        #SBATCH --gres=gpu:h200:2
        #SBATCH --output={slurm.jobs}/%x-%j.out
        #SBATCH --comment="kimi k3 serve, with spaces and a=b"
        export PATH={bin_dir}:$PATH
        export HF_TOKEN={SECRET}
        export STANDIN_LOG={log} STANDIN_HOLD={hold} STANDIN_EXIT={code}
        @EXTRA@srun vllm serve /models/kimi-k3 --port 18123 --max-model-len 4096 \\
            --enable-prefix-caching
        """).replace("@EXTRA@", extra)


def _submit(slurm, script: str) -> str:
    env_opt = f"--export=ALL,LD_LIBRARY_PATH={INJECTED}"
    return slurm.sbatch(script, env_opt, f"--chdir={slurm.jobs}", f"--nodelist={slurm.node}")


def _wait_output(slurm, job_id: str, needle: str, timeout: float = 60.0) -> str:
    path = Path(slurm.job(job_id)["StdOut"])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        if needle in text:
            return text
        time.sleep(0.3)
    raise AssertionError(f"{needle!r} never in {path}")


def _same_root(scene: dict, log: Path, label: dict) -> None:
    """The scene's first exception is the one the classifier finds in the whole log, at the labelled stage."""
    from k3tui.classify import classify_text

    ref = classify_text(log.read_text(errors="replace"))
    assert ref.first_exception is not None and scene["first_exception"] is not None, scene["notes"]
    assert scene["first_exception"]["line"] == ref.first_exception.line
    assert scene["first_exception"]["stage"] == label["stage"]


def _k3tui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "k3tui.cli", *args], capture_output=True, text=True, timeout=240)


def _common(sshd, slurm) -> list[str]:
    return [
        sshd.target,
        "-i",
        str(sshd.key_path),
        "--known-hosts",
        str(sshd.known_hosts),
        "--slurm-conf",
        str(slurm.conf),
    ]


def _freeze_json(sshd, slurm, job_id: str, out: Path) -> dict:
    r = _k3tui("freeze", *_common(sshd, slurm), "--job", job_id, "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert SECRET not in out.read_text() and SECRET not in r.stdout
    return json.loads(out.read_text())


def test_freeze_a_running_job_on_its_node(sshd, slurm, tmp_path: Path) -> None:
    """Done-when: the batch script, the job env with an injected path, the GRES binding, the first exception."""
    label = FAILED_LOGS[0]
    log = SHARED_CORPUS / "vllm-cpu" / label["file"]
    script = _script(slurm, log, hold=300)
    job_id = _submit(slurm, script)
    try:
        slurm.wait_state(job_id, "RUNNING")
        _wait_output(slurm, job_id, log.read_text(errors="replace").splitlines()[-1][:60])
        scene = _freeze_json(sshd, slurm, job_id, tmp_path / "scene.json")
    finally:
        slurm.client("scancel", job_id)
    job = scene["job"]
    assert scene["launcher"] == "slurm" and job["id"] == job_id and job["state"] == "RUNNING"
    assert job["name"] == "kimi-serve" and job["nodes"] == [slurm.node] and job["batch_host"] == slurm.node
    assert job["comment"] == "kimi k3 serve, with spaces and a=b"
    assert job["script"] == script.replace(SECRET, "<redacted>")
    assert job["env"]["LD_LIBRARY_PATH"] == INJECTED and "LD_LIBRARY_PATH" in job["env_origin"]["submit"]
    assert job["env"]["HF_TOKEN"] == "<redacted>" and "HF_TOKEN" in job["env_origin"]["script"]
    assert job["env"]["CUDA_VISIBLE_DEVICES"] == "0,1" and "CUDA_VISIBLE_DEVICES" in job["env_origin"]["slurm"]
    assert job["gres"]["per_node"] == [
        {
            "node": slurm.node,
            "gres": [{"name": "gpu", "type": "h200", "count": 2, "idx": [0, 1]}],
            "cpu_ids": "0",
            "mem": "0",
        }
    ]
    assert scene["process"]["pid"] == job["serving_pid"] and "vllm" in " ".join(scene["process"]["cmdline"])
    assert scene["env"]["LD_LIBRARY_PATH"] == INJECTED
    _same_root(scene, log, label)
    assert scene["log_source"].startswith(f"job {job_id} output")
    assert job["output"]["stdout"] == f"{slurm.jobs}/kimi-serve-{job_id}.out"


@pytest.mark.parametrize("label", FAILED_LOGS[1:], ids=lambda x: x["file"])
def test_freeze_a_failed_job_names_exit_code_and_first_exception(sshd, slurm, tmp_path: Path, label) -> None:  # noqa: ANN001
    log = SHARED_CORPUS / "vllm-cpu" / label["file"]
    job_id = _submit(slurm, _script(slurm, log, code=3, name=f"fail-{label['file'][:8]}"))
    slurm.wait_state(job_id, "FAILED")
    scene = _freeze_json(sshd, slurm, job_id, tmp_path / "scene.json")
    job = scene["job"]
    assert job["state"] == "FAILED" and job["exit_code"] == 3 and job["reason"] == "NonZeroExitCode"
    _same_root(scene, log, label)
    assert job["steps"] == [] and any("TARGET = the job's node" in n for n in scene["notes"])
    assert job["script"].startswith("#!/bin/bash")
    # not on the job's node: the env is what the script exports (its secrets masked), and it says so
    exported = {k for k in job["env"]}
    assert exported and exported <= set(job["env_origin"]["script"]), job["env_origin"]
    assert job["env_source"] == "the batch script's exports" and job["env"].get("HF_TOKEN") == "<redacted>"


@pytest.fixture(scope="module")
def requeued(slurm) -> str:  # noqa: ANN001
    """A job that failed three times (exit 7): twice requeued by hand, as a ``--requeue`` job that keeps failing is."""
    log = SHARED_CORPUS / "vllm-cpu" / FAILED_LOGS[0]["file"]
    job_id = _submit(slurm, _script(slurm, log, code=7, name="requeue-me"))
    slurm.wait_state(job_id, "FAILED")
    for _ in range(2):
        slurm.client("scontrol", "requeue", job_id, user="root")
        slurm.wait_state(job_id, "PENDING")
        slurm.client("scontrol", "update", f"JobId={job_id}", "StartTime=now", user="root")
        slurm.wait_state(job_id, "FAILED")
    told = slurm.wait_sacct(job_id, "requeue-me", 3)  # accounting has every attempt before k3tui asks
    assert [(r["State"], r["ExitCode"]) for r in told] == [("REQUEUED", "7:0"), ("REQUEUED", "7:0"), ("FAILED", "7:0")]
    return job_id


def test_a_requeue_loop_is_a_finding(sshd, slurm, requeued: str, tmp_path: Path) -> None:
    scene = _freeze_json(sshd, slurm, requeued, tmp_path / "scene.json")
    job = scene["job"]
    assert job["restarts"] == 2 and job["exit_code"] == 7
    assert job["history_source"] == "sacct"  # slurmdbd keeps every attempt: sacct -D, no fallback
    attempts = [(h["id"], h["name"], h["state"], h["exit_code"], h["nodes"]) for h in job["history"]]
    assert attempts == [(requeued, "requeue-me", s, 7, slurm.node) for s in ("REQUEUED", "REQUEUED", "FAILED")]
    assert all(h["start"] and h["end"] for h in job["history"])
    finding = next(f for f in job["findings"] if f.startswith("requeue loop"))
    assert f"job {requeued} (requeue-me) restarted 2 time(s); 3 failed attempt(s) of this name" in finding
    assert finding in scene["notes"]


def test_without_accounting_the_attempts_come_from_the_jobcomp_file(sshd, slurm, requeued: str, tmp_path: Path) -> None:
    """A client whose slurm.conf has accounting off: sacct refuses, k3tui reads the controller's jobcomp file."""
    out = tmp_path / "scene.json"
    common = [*_common(sshd, slurm)[:-1], str(slurm.conf_without_accounting())]
    r = _k3tui("freeze", *common, "--job", requeued, "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    job = json.loads(out.read_text())["job"]
    assert job["history_source"] == f"jobcomp file {slurm.jobcomp} (sacct has no records: accounting storage is off)"
    ends = [h for h in job["history"] if h["id"] == requeued and h["state"] == "FAILED"]
    assert len(ends) == 3 and all(h["name"] == "requeue-me" and h["exit_code"] == 7 for h in ends)
    assert any(f.startswith(f"requeue loop: job {requeued} (requeue-me) restarted 2 time(s)") for f in job["findings"])


def test_another_users_job_has_its_attempts_from_sacct(sshd, slurm, tmp_path: Path) -> None:
    """The operator (the SSH user) is not the job's owner: sacct still answers, for the owner (``-u``)."""
    log = SHARED_CORPUS / "vllm-cpu" / FAILED_LOGS[0]["file"]
    script = _script(slurm, log, code=5, name="someone-elses")
    job_id = slurm.sbatch(script, f"--chdir={slurm.jobs}", f"--nodelist={slurm.node}", user="root")
    slurm.wait_state(job_id, "FAILED")
    slurm.wait_sacct(job_id, "someone-elses", 1)
    # the operator's own plain sacct sees none of it; k3tui asks for the owner's (-u)
    assert slurm.sacct("someone-elses", user=slurm.user, all_users=False) == []
    scene = _freeze_json(sshd, slurm, job_id, tmp_path / "scene.json")
    job = scene["job"]
    assert job["user"].startswith("root(") and job["history_source"] == "sacct"
    assert [(h["id"], h["state"], h["exit_code"]) for h in job["history"]] == [(job_id, "FAILED", 5)]


def test_diff_of_two_jobs_shows_the_script_line_and_the_env_key(sshd, slurm, tmp_path: Path) -> None:
    log = SHARED_CORPUS / "vllm-cpu" / FAILED_LOGS[0]["file"]
    script = _script(slurm, log, hold=300, name="diff-me")
    a = slurm.sbatch(script, "--export=ALL,SITE_KNOB=one", f"--chdir={slurm.jobs}", "-w", "n1")
    b = slurm.sbatch(
        script.replace("--max-model-len 4096", "--max-model-len 2048"),
        "--export=ALL,SITE_KNOB=two",
        f"--chdir={slurm.jobs}",
        "-w",
        "n1",
    )
    try:
        for j in (a, b):
            slurm.wait_state(j, "RUNNING")
            _wait_output(slurm, j, "standin argv")
        _freeze_json(sshd, slurm, a, tmp_path / "a.json")
        _freeze_json(sshd, slurm, b, tmp_path / "b.json")
    finally:
        slurm.client("scancel", a, b)
    r = _k3tui("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    out = r.stdout.splitlines()
    assert "  -srun vllm serve /models/kimi-k3 --port 18123 --max-model-len 4096 \\" in out, r.stdout
    assert "  +srun vllm serve /models/kimi-k3 --port 18123 --max-model-len 2048 \\" in out, r.stdout
    assert "  SITE_KNOB (job): one  →  two" in out, r.stdout
    assert not any("SLURM_JOB_ID" in ln and "→" in ln for ln in out), r.stdout  # per-job, not a variable
    assert "MORE THAN ONE VARIABLE CHANGED" in r.stdout and "script" in out[-1] and "SITE_KNOB" in out[-1], r.stdout
    same = _k3tui("diff", str(tmp_path / "a.json"), str(tmp_path / "a.json"))
    assert "-srun" not in same.stdout and "MORE THAN ONE" not in same.stdout


async def _follow_and_drop(launcher, host, run, log: Path, sshd) -> None:  # noqa: ANN001
    """Follow the run's output; drop the SSH link after 5 lines; every line must still come once, in order."""
    lines, dropped = [], False
    async for line in launcher.follow(host, run):
        lines.append(line)
        if len(lines) == 5 and not dropped:
            dropped = bool(sshd.kill_sessions())
        if len(lines) == len(log.read_text(errors="replace").splitlines()) + 1:
            break
    assert dropped and lines[0].startswith("standin argv: serve /models/kimi-k3") and "--max-model-len 2048" in lines[0]
    assert lines[1:] == log.read_text(errors="replace").splitlines()


async def test_a_ladder_run_is_submitted_followed_through_a_drop_and_cancelled(sshd, slurm) -> None:
    from k3tui.ladder.config import apply_changes, diff
    from k3tui.remote.ssh import connect

    log = SHARED_CORPUS / "vllm-cpu" / FAILED_LOGS[0]["file"]
    frozen_id = slurm.sbatch(
        _script(slurm, log, code=1, name="ladder-me"), "--time=00:30:00", f"--chdir={slurm.jobs}", "-w", "n1"
    )
    slurm.wait_state(frozen_id, "FAILED")
    pick = Pick(job=frozen_id, slurm_conf=str(slurm.conf))
    launcher = get("slurm", pick)
    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        await launcher.freeze(host, pick)
        start = launcher.start_config()
        assert start.max_model_len == 4096 and start.flags["enable-prefix-caching"] is True
        cfg = apply_changes(start, {"max_model_len": 2048, "env:STANDIN_HOLD": "300", "env:STANDIN_DELAY": "0.01"})
        assert [d["key"] for d in diff(start, cfg)] == ["max_model_len", "env:STANDIN_HOLD", "env:STANDIN_DELAY"]
        plan = launcher.plan(cfg, "r1-test")
        changed = [ln for ln in plan[1:] if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
        assert sorted(changed) == sorted(
            [
                "+export STANDIN_HOLD=300",
                "+export STANDIN_DELAY=0.01",
                "-srun vllm serve /models/kimi-k3 --port 18123 --max-model-len 4096 \\",
                "+srun vllm serve /models/kimi-k3 --port 18123 --max-model-len 2048 \\",
            ]
        ), plan
        run = await launcher.start(host, cfg, "r1-test")
        try:
            await _follow_and_drop(launcher, host, run, log, sshd)
        finally:
            status = await launcher.stop(host, run)
        assert run.job_id != frozen_id and slurm.job(run.job_id)["JobName"] == "ladder-me"
        assert slurm.job(run.job_id)["TimeLimit"] == "00:30:00"  # given on sbatch's command line, not in the script
    info = slurm.job(run.job_id)
    assert info["JobState"] == "CANCELLED", info
    assert f"{run.job_id} CANCELLED" in slurm.client("squeue", "-h", "-t", "all", "-o", "%i %T").splitlines()
    assert status is not None
    assert any(
        ln.startswith(f"JobId={run.job_id} ") and "JobState=CANCELLED" in ln
        for ln in slurm.jobcomp.read_text().splitlines()
    )


def _ladder_one_change(sshd, slurm, frozen: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:  # noqa: ANN001
    """Let the frozen serving job come up, cancel it, then ``ladder --job`` it with max_model_len=2048:
    (the CLI's result, the job ids the ladder submitted)."""
    slurm.wait_state(frozen, "RUNNING")
    _wait_output(slurm, frozen, "Application startup complete")
    slurm.client("scancel", frozen)
    slurm.wait_state(frozen, "CANCELLED")
    before = set(slurm.client("squeue", "-h", "-t", "all", "-o", "%i").split())
    r = _k3tui("ladder", *_common(sshd, slurm), "--job", frozen, "--rung", "minimal", "--set", "max_model_len=2048")
    assert r.returncode == 0, r.stdout + r.stderr
    return r, set(slurm.client("squeue", "-h", "-t", "all", "-o", "%i").split()) - before


def test_cli_ladder_submits_the_one_change_and_cancels_the_job_on_stop(sshd, slurm, tmp_path: Path) -> None:
    """Done-when: ``ladder --job N --set …`` submits the frozen script with one change, and scancels it on stop."""
    from tests.support.sshd import free_port

    log = SHARED_CORPUS / "vllm-cpu" / "01-baseline-startup-only.log"
    port = free_port()
    script = _script(slurm, log, code=0, name="ladder-cli", extra="export STANDIN_SERVE=1\n").replace(
        "--port 18123", f"--port {port} --served-model-name moonshotai/Kimi-K3"
    )
    frozen = _submit(slurm, script)
    r, runs = _ladder_one_change(sshd, slurm, frozen)
    assert len(runs) == 1, runs
    run = runs.pop()
    info = slurm.job(run)
    assert info["JobState"] == "CANCELLED" and info["JobName"] == "ladder-cli", info
    out = Path(info["StdOut"]).read_text()
    assert out.startswith(
        f"standin argv: serve /models/kimi-k3 --port {port} --served-model-name moonshotai/Kimi-K3 --max-model-len 2048"
    )
    assert (
        f"-srun vllm serve /models/kimi-k3 --port {port} --served-model-name moonshotai/Kimi-K3 --max-model-len 4096 \\"
        in r.stdout
    )
    assert (
        f"+srun vllm serve /models/kimi-k3 --port {port} --served-model-name moonshotai/Kimi-K3 --max-model-len 2048 \\"
        in r.stdout
    )
    assert "result: rung=minimal verdict=PASS" in r.stdout and SECRET not in r.stdout


def test_cli_ladder_runs_a_two_node_job_as_one_group_and_cancels_it_whole(sshd, slurm, tmp_path: Path) -> None:
    """A multi-node job is one run: one sbatch holding both nodes, readiness from the head, one scancel for all."""
    from tests.support.sshd import free_port

    log = SHARED_CORPUS / "vllm-cpu" / "01-baseline-startup-only.log"
    port = free_port()
    script = (
        _script(slurm, log, code=0, name="ladder-2n", extra="export STANDIN_SERVE=1\n")
        .replace("--port 18123", f"--port {port} --served-model-name moonshotai/Kimi-K3")
        .replace("#SBATCH --gres", "#SBATCH --nodes=2\n#SBATCH --gres")
    )
    frozen = slurm.sbatch(script, f"--chdir={slurm.jobs}")
    r, runs = _ladder_one_change(sshd, slurm, frozen)
    assert len(runs) == 1, runs  # one submission for the whole group, not one per node
    info = slurm.job(runs.pop())
    assert info["JobState"] == "CANCELLED" and info["NumNodes"] == "2" and info["NodeList"] == "n[1-2]", info
    out = Path(info["StdOut"]).read_text()
    argv = [ln for ln in out.splitlines() if ln.startswith("standin argv: ")]
    assert len(argv) == 2 and all("--max-model-len 2048" in ln for ln in argv), argv  # both nodes ran the change
    assert "result: rung=minimal verdict=PASS" in r.stdout and SECRET not in r.stdout
    assert not [ln for ln in slurm.client("squeue", "-h", "-o", "%i %T").splitlines() if ln.strip()]  # nothing left


def test_a_two_node_job_is_frozen_on_every_node_over_ssh(sshd, slurm, tmp_path: Path) -> None:
    """The target is one node; the other is reached over SSH (``--node-target``) and frozen there, its own step and GPUs."""
    log = SHARED_CORPUS / "vllm-cpu" / FAILED_LOGS[0]["file"]
    script = _script(slurm, log, hold=300, name="two-nodes").replace(
        "#SBATCH --gres", "#SBATCH --nodes=2\n#SBATCH --gres"
    )
    job_id = slurm.sbatch(script, f"--chdir={slurm.jobs}")
    try:
        slurm.wait_state(job_id, "RUNNING")
        deadline = time.monotonic() + 60
        while _wait_output(slurm, job_id, "standin argv").count("standin argv") < 2 and time.monotonic() < deadline:
            time.sleep(0.3)
        out = tmp_path / "scene.json"
        r = _k3tui("freeze", *_common(sshd, slurm), "--job", job_id, "--json", str(out),
                   "--node-target", f"{sshd.user}@127.0.0.1:{sshd.port}", "--record", str(tmp_path / "s.k3rec"))  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
        scene = json.loads(out.read_text())
    finally:
        slurm.client("scancel", job_id)
    job = scene["job"]
    assert job["nodes"] == ["n1", "n2"] and job["env"]["SLURMD_NODENAME"] == "n1"
    bound = {g["node"]: g["gres"][0]["idx"] for g in job["gres"]["per_node"]}
    assert sorted(bound) == ["n1", "n2"] and all(len(v) == 2 for v in bound.values()), bound
    assert job["env"]["CUDA_VISIBLE_DEVICES"] == ",".join(map(str, bound["n1"]))
    (other,) = job["node_scenes"]
    assert other["node"] == "n2" and "error" not in other, other
    assert other["slurmd_nodename"] == "n2" and other["cuda_visible_devices"] == ",".join(map(str, bound["n2"]))
    assert other["serving_pid"] not in (None, job["serving_pid"])
    frozen = [ln for ln in (tmp_path / "s.k3rec").read_text().splitlines() if '"kind":"scene_frozen"' in ln]
    assert len(frozen) == 2, len(frozen)  # the node's own scene is recorded too
    assert SECRET not in (tmp_path / "s.k3rec").read_text()


def test_cli_check_and_summary_of_a_job_with_an_injected_compat_path(sshd, slurm) -> None:
    """``check --job``: the baseline runs on the job's step (its env as injected); ``freeze`` prints the job."""
    log = SHARED_CORPUS / "vllm-cpu" / FAILED_LOGS[0]["file"]
    compat = "/usr/local/cuda/compat/lib"
    job_id = slurm.sbatch(
        _script(slurm, log, hold=300, name="check-me"),
        f"--export=ALL,LD_LIBRARY_PATH={compat}",
        f"--chdir={slurm.jobs}",
        "-w",
        "n1",
    )
    try:
        slurm.wait_state(job_id, "RUNNING")
        _wait_output(slurm, job_id, "standin argv")
        chk = _k3tui("check", *_common(sshd, slurm), "--job", job_id)
        frz = _k3tui("freeze", *_common(sshd, slurm), "--job", job_id)
    finally:
        slurm.client("scancel", job_id)
    line = next(ln for ln in chk.stdout.splitlines() if "injected-env" in ln)
    assert chk.returncode == 1 and line.split()[0] == "FAIL" and f"LD_LIBRARY_PATH adds {compat}" in line, chk.stdout
    assert f"launcher  slurm: job {job_id} (check-me) RUNNING on n1" in frz.stdout, frz.stdout
    assert "  gres    n1: gpu:h200:2 IDX [" in frz.stdout and "  script  10 lines as submitted" in frz.stdout
    assert SECRET not in chk.stdout + frz.stdout


def test_an_apptainer_job_names_its_image_and_the_image_files_digest(sshd, slurm, tmp_path: Path) -> None:
    import hashlib

    image = slurm.jobs / "vllm-k3.sif"
    image.write_bytes(os.urandom(256 * 1024))
    script = (
        "#!/bin/bash\n#SBATCH --job-name=sif-job\n#SBATCH --output=%x-%j.out\n"
        "srun apptainer exec --nv -B /models:/models,/scratch:/s vllm-k3.sif vllm serve /models/k3 --port 8000\n"
    )
    job_id = _submit(slurm, script)
    slurm.wait_state(
        job_id, "FAILED"
    )  # no apptainer on this machine: the job fails, its definition is still the scene's
    job = _freeze_json(sshd, slurm, job_id, tmp_path / "scene.json")["job"]
    c = job["container"]
    assert (
        c["kind"] == "apptainer" and c["image"] == "vllm-k3.sif" and c["mounts"] == ["/models:/models", "/scratch:/s"]
    )
    assert (
        c["digest"] == "sha256:" + hashlib.sha256(image.read_bytes()).hexdigest() and "sha256sum" in c["digest_source"]
    )
    assert job["exit_code"] != 0


def test_cli_ladder_runs_the_real_vllm_as_a_slurm_job(sshd, slurm, tiny_model, tmp_path: Path) -> None:
    """The frozen job (held, never run) names the real vllm-cpu server; the ladder's run is that script with
    one change, submitted, ready on /health through the batch host's address, and scancelled after the rung."""
    from tests.support.sshd import free_port
    from tests.support.vllm import SERVER_ENV, VLLM_VENV

    port = free_port()
    env = "\n".join(f"export {k}={v}" for k, v in SERVER_ENV.items())
    script = (
        f"#!/bin/bash\n#SBATCH --job-name=tiny-vllm\n#SBATCH --output={slurm.jobs}/%x-%j.out\n{env}\n"
        f"srun {VLLM_VENV}/bin/vllm serve {tiny_model} --served-model-name moonshotai/Kimi-K3 --max-model-len 1024 \\\n"
        f"  --enforce-eager --no-enable-prefix-caching --host 0.0.0.0 --port {port}\n"
    )
    frozen = slurm.sbatch(script, "--hold", f"--chdir={slurm.jobs}")
    before = set(slurm.client("squeue", "-h", "-t", "all", "-o", "%i").split())
    try:
        r = subprocess.run(
            [sys.executable, "-m", "k3tui.cli", "ladder", *_common(sshd, slurm), "--job", frozen, "--profile", "tiny-cpu",
             "--rung", "minimal", "--set", "max_model_len=512"],
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip
    finally:
        slurm.client("scancel", frozen)
    runs = set(slurm.client("squeue", "-h", "-t", "all", "-o", "%i").split()) - before
    assert r.returncode == 0 and len(runs) == 1, r.stdout[-3000:] + r.stderr
    run = runs.pop()
    info = slurm.job(run)
    assert info["JobState"] == "CANCELLED", info
    assert (
        "+srun " in r.stdout and "--max-model-len 512" in r.stdout and "result: rung=minimal verdict=PASS" in r.stdout
    )
    assert "Application startup complete" in Path(info["StdOut"]).read_text(errors="replace")


def test_a_job_that_does_not_exist_is_one_line(sshd, slurm) -> None:
    r = _k3tui("freeze", *_common(sshd, slurm), "--job", "987654")
    assert r.returncode != 0 and r.stderr.count("\n") == 1, r.stderr
    assert "Slurm job 987654 not readable" in r.stderr and "Invalid job id" in r.stderr
    bad = _k3tui("freeze", *_common(sshd, slurm), "--job", "12; rm -rf /")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "expected a Slurm job id" in bad.stderr, bad.stderr


def test_a_pending_job_is_frozen_with_what_it_waits_for(sshd, slurm, tmp_path: Path) -> None:
    log = SHARED_CORPUS / "vllm-cpu" / FAILED_LOGS[0]["file"]
    job_id = slurm.sbatch(_script(slurm, log, name="later"), "--begin=now+1hour", f"--chdir={slurm.jobs}")
    try:
        scene = _freeze_json(sshd, slurm, job_id, tmp_path / "scene.json")
    finally:
        slurm.client("scancel", job_id)
    job = scene["job"]
    assert job["state"] == "PENDING" and job["reason"] == "BeginTime" and job["batch_host"] is None
    assert job["gres"]["per_node"] == [] and job["gres"]["requested"] == "gres:gpu:h200:2"
    assert scene["first_exception"] is None and job["script"].startswith("#!/bin/bash")
    assert any(f"later-{job_id}.out" in n for n in scene["notes"]), scene["notes"]  # the output file does not exist yet


def test_the_secret_env_values_never_reach_disk(sshd, slurm, tmp_path: Path) -> None:
    os.environ.get("CI")  # the freeze tests above assert it per scene; this one checks the session file too
    log = SHARED_CORPUS / "vllm-cpu" / FAILED_LOGS[0]["file"]
    job_id = _submit(slurm, _script(slurm, log, code=1, name="secret-job"))
    slurm.wait_state(job_id, "FAILED")
    rec = tmp_path / "s.k3rec"
    r = _k3tui("freeze", *_common(sshd, slurm), "--job", job_id, "--record", str(rec))
    assert r.returncode == 0, r.stderr
    assert SECRET not in rec.read_text(errors="replace") and "secret-job" in rec.read_text(errors="replace")

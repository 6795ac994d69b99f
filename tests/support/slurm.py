"""A REAL Slurm cluster on loopback for the tests: Debian's munged, slurmctld, slurmd and slurmdbd (22.05) on MariaDB.

Fixture:

- ``slurm`` → :class:`SlurmCluster` (session-scoped): one controller on 127.0.0.1 and two
  compute nodes ``n1``/``n2`` (``NodeAddr=127.0.0.2``/``.3``, a slurmd each on this machine) with
  four fake H200 GPUs each, torn down at the end.

Everything lives under one temp dir: a generated munge key (its own ``munged`` with its own
socket, pid, log and seed files), a generated ``slurm.conf``, ``gres.conf`` and
``slurmdbd.conf``, the controller's state, the node's spool, the database (``db/``), logs, the
job-completion file and ``dev/nvidia0..7``.
Those GPU "devices" are real character devices with ``/dev/null``'s numbers (``mknod c 1 3``):
``gres/gpu`` binds them per job exactly as it binds real ones (``GRES=gpu:h200:2(IDX:0-1)`` in
``scontrol show job -dd``, ``CUDA_VISIBLE_DEVICES`` in the step's environment), and reading or
writing one does nothing.

The daemons run as root (``SlurmUser=root``); jobs are submitted as the sshd fixture's
user (``k3test``) so that what k3tui does over SSH as that user (``scontrol write batch_script``,
``scontrol listpids``, ``/proc/PID/environ``) is what a job owner can do on a real cluster.
Clients find the cluster through ``SLURM_CONF`` (:meth:`SlurmCluster.env`; k3tui's
``--slurm-conf``).

Accounting is real: a private MariaDB server (``mariadb-install-db`` then ``mariadbd`` on a free
127.0.0.1 port, its data dir, socket and log under the temp dir), ``slurmdbd`` (22.05, Debian's,
the controller's version) on another free port with a mode-600 ``slurmdbd.conf`` pointing at it,
and ``AccountingStorageType=accounting_storage/slurmdbd`` in ``slurm.conf``; the cluster
``k3test``, the account ``k3`` and the test user are registered with ``sacctmgr`` before
slurmctld starts. So ``sacct -D`` answers with every attempt of a job, requeued ones included
(``AccountingStoragePass`` names the private munge socket: the clients' connection to slurmdbd
does not use ``AuthInfo``'s). slurmctld hands job records to slurmdbd asynchronously: a test
that reads ``sacct`` right after a job ends waits for the record
(:meth:`SlurmCluster.wait_sacct`). The cluster also keeps finished jobs in the controller for an
hour (``MinJobAge=3600``: ``scontrol show job`` still answers for them) and writes every job
end, each requeued attempt included, to ``JobCompType=jobcomp/filetxt``: k3tui reads that file
where ``sacct`` has nothing (:mod:`k3tui.launch.slurm`), which a test shows with a copy of the
conf whose accounting is off (:meth:`SlurmCluster.conf_without_accounting`).

Needs root, ``/usr/sbin/slurmctld``, ``/usr/sbin/slurmdbd`` and MariaDB's server (``.ci/install --test``):
under ``CI=true`` a missing piece fails the run; elsewhere it skips with the reason. Each daemon
gets :data:`READY_S` to answer, and one that exits or never answers fails the start with the
end of its own log.
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
SLURMDBD, MARIADBD = "/usr/sbin/slurmdbd", "/usr/sbin/mariadbd"
MARIADB_INSTALL_DB, MARIADB_ADMIN = "/usr/bin/mariadb-install-db", "/usr/bin/mariadb-admin"
CLUSTER, ACCOUNT = "k3test", "k3"
READY_S = 90.0
"""How long each daemon may take to answer (a loaded 2-core CI machine included)."""
PROBE_S = 5.0
"""One readiness probe of mariadbd/slurmdbd (a hung one is retried until :data:`READY_S`: whoever took the port may
accept and never answer)."""
PORT_TRIES = 3
"""Starts of mariadbd/slurmdbd on a fresh port when the free one was taken meanwhile."""
_INNODB = (
    "--innodb-log-file-size=64M", "--innodb-lock-wait-timeout=900", "--innodb-flush-log-at-trx-commit=0",
    "--innodb-doublewrite=0", "--skip-log-bin", "--performance-schema=OFF",
)  # fmt: skip
"""Two of slurmdbd's recommended InnoDB settings (the buffer pool stays at MariaDB's 128 MiB: slurmdbd logs that it
would like more, harmless for a few jobs); no flush per commit and no doublewrite: a throwaway test database."""
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
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={dbd_port}
AccountingStoragePass={d}/run/munge.socket
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

_DBD_CONF = """\
AuthType=auth/munge
AuthInfo=socket={d}/run/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={dbd_port}
SlurmUser=root
PidFile={d}/run/slurmdbd.pid
LogFile={d}/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={db_port}
StorageUser=root
StorageLoc=slurm_acct_db
"""


@dataclass
class SlurmCluster:
    """The running cluster; see the module docstring."""

    dir: Path
    user: str
    node: str = NODE
    node_addr: str = NODE_ADDR
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)
    ports: dict[str, int] = field(default_factory=dict, repr=False)
    """``slurm.conf``'s and ``slurmdbd.conf``'s ports by their placeholder (``db_port``: mariadbd, ``dbd_port``: slurmdbd)."""

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

    def sbatch(self, script: str, *opts: str, user: str | None = None) -> str:
        """Submit ``script`` (text) as ``user`` (default: the test user); returns the job id."""
        path = Path(tempfile.mkstemp(prefix="job-", suffix=".sh", dir=self.jobs)[1])
        path.write_text(script)
        path.chmod(0o755)
        return self.client("sbatch", "--parsable", *opts, str(path), user=user).strip().split(";")[0]

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

    def sacct(self, name: str, user: str | None = None, all_users: bool = True) -> list[dict[str, str]]:
        """Every attempt of every job named ``name`` in the last week (the test's own plain reading, not k3tui's).

        As ``user`` (default: the test user); ``all_users=False`` leaves out ``-a``: then sacct
        answers only with that user's own jobs.
        """
        keys = ("JobID", "JobName", "User", "State", "ExitCode")
        who = ["-a"] if all_users else []
        out = self.client(
            "sacct", "-D", "-X", "-P", "-n", *who, "-S", "now-7days", "--name", name, "-o", ",".join(keys), user=user
        )
        return [dict(zip(keys, line.split("|"), strict=True)) for line in out.splitlines() if line.strip()]

    def wait_sacct(self, job_id: str, name: str, attempts: int, timeout: float = 60.0) -> list[dict[str, str]]:
        """Wait until a query by ``name`` finds ``attempts`` finished attempts of the job; returns them.

        slurmctld hands records to slurmdbd asynchronously, and a job's end may land first: until
        its start record follows, the row has no name (``allocation``) and no eligible time, so a
        query by name misses it.
        """
        deadline = time.monotonic() + timeout
        while True:
            rows = [r for r in self.sacct(name) if r["JobID"] == job_id]
            if len(rows) >= attempts and not any(r["State"] in ("PENDING", "RUNNING", "COMPLETING") for r in rows):
                return rows
            if time.monotonic() > deadline:
                raise AssertionError(f"sacct never held {attempts} finished attempts of job {job_id} ({name}): {rows}")
            time.sleep(0.3)

    def conf_without_accounting(self) -> Path:
        """A copy of ``slurm.conf`` whose clients see accounting off (``sacct`` refuses): the jobcomp file's case."""
        d = self.dir / "no-accounting"
        d.mkdir(mode=0o755, exist_ok=True)
        lines = [ln for ln in self.conf.read_text().splitlines() if not ln.startswith("AccountingStorage")]
        (d / "slurm.conf").write_text("\n".join([*lines, "AccountingStorageType=accounting_storage/none", ""]))
        return d / "slurm.conf"

    def log(self) -> str:
        return "".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}\n"
            for p in sorted((self.dir / "log").glob("*.log"))
            if p.exists()
        )

    # --- life cycle ------------------------------------------------------------------------

    def start(self) -> None:
        self._layout()
        self._munged()
        self._mariadb()
        self._slurmdbd()
        self._register()
        self._daemon("slurmctld", [SLURMCTLD, "-D", "-f", str(self.conf)])
        self._wait(lambda: self._answers("scontrol", "ping"), "slurmctld does not answer scontrol ping")
        for n in NODES:
            self._daemon(f"slurmd-{n}", [SLURMD, "-D", "-N", n, "-f", str(self.conf)])
        self._wait(self._node_idle, f"nodes {', '.join(NODES)} never became idle")

    def _layout(self) -> None:
        d = self.dir
        for sub in ("state", "spool", "log", "dev", "db", "db-tmp"):
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
        self.ports = {k: free_port() for k in ("ctl_port", "d_port", "port1", "port2", "db_port", "dbd_port")}
        self._write_confs()
        (d / "gres.conf").write_text(
            "".join(
                f"NodeName={n} Name=gpu Type=h200 File={d}/dev/nvidia[{i * GPUS}-{i * GPUS + GPUS - 1}]\n"
                for i, n in enumerate(NODES)
            )
        )

    def _write_confs(self) -> None:
        """``slurm.conf`` and ``slurmdbd.conf`` (mode 600, as slurmdbd demands) from :attr:`ports`."""
        d = self.dir
        conf = _CONF.format(
            d=d, ctl_host=socket.gethostname().split(".")[0], hostname=socket.gethostname(), gpus=GPUS, **self.ports
        )
        self.conf.write_text(conf)
        dbd = d / "slurmdbd.conf"
        dbd.touch(mode=0o600)
        dbd.chmod(0o600)
        dbd.write_text(_DBD_CONF.format(d=d, db_port=self.ports["db_port"], dbd_port=self.ports["dbd_port"]))

    def _munged(self) -> None:
        m = self.dir / "munge"
        argv = [
            MUNGED, "--force", f"--socket={self.dir}/run/munge.socket", f"--key-file={m}/munge.key",
            f"--log-file={m}/munged.log", f"--pid-file={m}/munged.pid", f"--seed-file={m}/munged.seed",
        ]  # fmt: skip
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            raise RuntimeError(f"munged exited {out.returncode}: {out.stderr.strip()}")

    def _mariadb(self) -> None:
        """A private MariaDB: a fresh data dir (root without password), then ``mariadbd`` on 127.0.0.1 only."""
        d = self.dir
        out = subprocess.run(
            [MARIADB_INSTALL_DB, "--no-defaults", f"--datadir={d}/db", f"--tmpdir={d}/db-tmp", "--user=root",
             "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve", *_INNODB],
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        if out.returncode != 0:
            raise RuntimeError(f"mariadb-install-db exited {out.returncode}:\n{(out.stdout + out.stderr)[-3000:]}")

        def argv() -> list[str]:
            return [
                MARIADBD, "--no-defaults", f"--datadir={d}/db", f"--tmpdir={d}/db-tmp", "--user=root",
                f"--socket={d}/run/mariadbd.sock", f"--pid-file={d}/run/mariadbd.pid", f"--log-error={d}/log/mariadbd.log",
                "--bind-address=127.0.0.1", f"--port={self.ports['db_port']}", "--skip-name-resolve", *_INNODB,
            ]  # fmt: skip

        ping = [MARIADB_ADMIN, "--no-defaults", "--protocol=tcp", "-h", "127.0.0.1", "-u", "root", "--connect-timeout=3"]  # fmt: skip
        self._listening(
            "mariadbd",
            argv,
            "db_port",
            lambda: self._answers(*ping, "-P", str(self.ports["db_port"]), "ping", timeout=PROBE_S),
        )

    def _slurmdbd(self) -> None:
        self._listening(
            "slurmdbd", lambda: [SLURMDBD, "-D"], "dbd_port",
            lambda: self._answers("sacctmgr", "-n", "-P", "list", "cluster", "format=cluster", timeout=PROBE_S),
        )  # fmt: skip

    def _listening(self, name: str, argv: object, port: str, ready: object) -> None:
        """Start ``name`` and wait until ``ready()``; a port another process took meanwhile is retried on a fresh one."""
        from .sshd import free_port

        log = self.dir / "log" / f"{name}.log"
        for attempt in range(1, PORT_TRIES + 1):
            log.unlink(missing_ok=True)
            self._daemon(name, argv())  # type: ignore[operator]
            try:
                self._wait(ready, f"{name} not ready after {READY_S:.0f} s")
                return
            except RuntimeError as exc:
                if self.procs[name].poll() is None:  # still running, never answered: its log says why
                    raise RuntimeError(f"{exc}:\n{self._tail(name)}") from exc
                if attempt == PORT_TRIES or "already in use" not in self._tail(name).lower():
                    raise
                self.procs.pop(name)
                print(f"{name}: port {self.ports[port]} was taken ({exc}); again on a fresh one", flush=True)
                self.ports[port] = free_port()
                self._write_confs()

    def _register(self) -> None:
        """The cluster, an account and the test user in the accounting database (slurmctld starts after)."""
        self._sacctmgr("add", "cluster", CLUSTER)
        self._sacctmgr("add", "account", ACCOUNT, f"Cluster={CLUSTER}", "Description=k3tui tests", "Organization=k3tui")
        self._sacctmgr("add", "user", self.user, f"Account={ACCOUNT}", f"Cluster={CLUSTER}")
        got = subprocess.run(
            ["sacctmgr", "-n", "-P", "list", "assoc", f"cluster={CLUSTER}", f"user={self.user}", "format=account"],
            env=self.env(), capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if got.stdout.split() != [ACCOUNT]:
            raise RuntimeError(f"{self.user} not registered under {ACCOUNT}: {got.stdout!r} {got.stderr.strip()}")

    def _sacctmgr(self, *argv: str) -> None:
        """``sacctmgr -i`` ARGV, retried until it answers (a fresh slurmdbd may refuse a first connection)."""
        deadline = time.monotonic() + READY_S
        while True:
            try:
                out = subprocess.run(
                    ["sacctmgr", "-i", *argv], env=self.env(), capture_output=True, text=True, timeout=60
                )
                said = (out.stdout + out.stderr).strip()
                if out.returncode == 0 or "already exists" in said or "Nothing new added" in said:
                    return
            except subprocess.TimeoutExpired as exc:
                said = f"no answer in {exc.timeout} s"
            if time.monotonic() > deadline:
                raise RuntimeError(f"sacctmgr {' '.join(argv)}: {said}\n{self._tail('slurmdbd')}")
            time.sleep(0.5)

    def _daemon(self, name: str, argv: list[str]) -> None:
        out = open(self.dir / "log" / f"{name}.out", "wb")  # noqa: SIM115 - closed with the daemon
        self.procs[name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=self.env())
        out.close()

    def _tail(self, name: str) -> str:
        """The end of a daemon's own log and of what it printed."""
        return "".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}\n"
            for p in (self.dir / "log" / f"{name}.log", self.dir / "log" / f"{name}.out")
            if p.exists()
        )

    def _answers(self, *argv: str, timeout: float = 30.0) -> bool:
        """Whether ``argv`` succeeds (False when it hangs past ``timeout``); a daemon that exited is an error."""
        for name, p in self.procs.items():
            if p.poll() is not None:
                raise RuntimeError(f"{name} exited {p.returncode}:\n{self._tail(name)}")
        try:
            return subprocess.run(argv, env=self.env(), capture_output=True, timeout=timeout).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def _node_idle(self) -> bool:
        if not self._answers("scontrol", "ping"):
            return False
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], env=self.env(), capture_output=True, text=True)
        return out.stdout.split() == ["idle"] * len(NODES)

    @staticmethod
    def _wait(ready: object, what: str, timeout: float = READY_S) -> None:
        deadline = time.monotonic() + timeout
        while not ready():  # type: ignore[operator]
            if time.monotonic() > deadline:
                raise RuntimeError(what)
            time.sleep(0.2)

    def stop(self) -> None:
        if "slurmctld" in self.procs:
            subprocess.run(["scancel", "--full", "-u", self.user], env=self.env(), capture_output=True, timeout=30)
            time.sleep(1.0)
        for name in (*(f"slurmd-{n}" for n in NODES), "slurmctld", "slurmdbd", "mariadbd"):
            p = self.procs.pop(name, None)
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(30)
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
    for path in (SLURMCTLD, SLURMD, MUNGED, SLURMDBD, MARIADBD, MARIADB_INSTALL_DB, MARIADB_ADMIN):
        if not os.path.exists(path):
            return (
                f"{path} is not installed (apt-get install slurmctld slurmd slurm-client munge slurmdbd mariadb-server)"
            )
    for tool in ("sacct", "sacctmgr"):
        if not shutil.which(tool):
            return f"{tool} is not installed (apt-get install slurm-client)"
    if os.geteuid() != 0:
        return "the slurm fixture needs root (the daemons run as SlurmUser=root)"
    if not shutil.which("setpriv"):
        return "setpriv (util-linux) is missing"
    return ""


@pytest.fixture(scope="session")
def slurm() -> Iterator[SlurmCluster]:
    """A real Slurm cluster (munged, MariaDB, slurmdbd, slurmctld, slurmd) on loopback; see the module docstring."""
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

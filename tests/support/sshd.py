"""A REAL OpenSSH sshd on 127.0.0.1 for the tests (session-scoped), as a dedicated user.

Fixtures:

- ``sshd`` → :class:`SshServer`: one server, started once per test session.
- ``sshd_factory`` → ``start(name="node") -> SshServer``: more servers (each its own port
  and host key, same user and client key) for multi-node tests; stopped at session end.

Using it::

    async def test_x(sshd):
        async with connect(sshd.target, **sshd.connect_kwargs()) as host:
            res = await host.run("uname -a")

``SshServer`` gives ``host``, ``port``, ``user``, ``home``, ``target`` (``user@127.0.0.1:port``),
``key_path`` (client private key), ``known_hosts`` (a file holding exactly this server's
key), ``host_key_pub``, ``connect_kwargs()`` (``identity``/``known_hosts`` for
:func:`k3tui.remote.ssh.connect`), ``ssh_argv()`` (an OpenSSH client command line),
``connection_count()``, ``session_pids()`` and ``kill_sessions()`` (SIGKILL every sshd
process serving the current connections: a dropped link; the listener stays up), ``restart()``, ``log()``.

The server runs as user ``k3test`` (created if missing; groups ``tty`` and ``docker``,
so it reaches the Docker socket of the ``dockerd`` fixture) through ``setpriv``, with
its own config, host key and authorized_keys under a temp dir (``StrictModes no``).
Needs root and ``/usr/sbin/sshd`` (``.ci/install --test`` installs openssh-server):
under ``CI=true`` a missing piece fails the run; elsewhere it skips with the reason.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh
import pytest

from . import unavailable

SSHD = "/usr/sbin/sshd"
TEST_USER = "k3test"


def proc_state(pid: int) -> str:
    """The state letter of a process (``Z`` for a zombie), ``?`` if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "?"
    return stat[stat.rindex(")") + 2 :].split()[0]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _admin(*argv: str) -> None:
    """Run a user-admin command, retrying while another test process holds /etc/passwd's lock."""
    for attempt in range(50):
        out = subprocess.run(argv, capture_output=True, text=True)
        if out.returncode == 0:
            return
        time.sleep(0.1 + 0.02 * attempt)
    raise RuntimeError(f"{' '.join(argv)} failed: {out.stderr.strip()}")


def _locked(name: str) -> bool:
    for line in Path("/etc/shadow").read_text().splitlines():
        user, _, rest = line.partition(":")
        if user == name:
            return rest.startswith("!")
    return True


def ensure_user(name: str = TEST_USER) -> pwd.struct_passwd:
    """Create (once) an unlocked login user in groups tty and docker; safe from parallel test runs."""
    import grp

    try:
        pwd.getpwnam(name)
    except KeyError:
        try:
            _admin("useradd", "-m", "-s", "/bin/bash", name)
        except RuntimeError:
            pwd.getpwnam(name)  # created meanwhile by another test process
    if _locked(name):
        _admin("usermod", "-p", "*", name)
    try:
        grp.getgrnam("docker")
    except KeyError:
        _admin("groupadd", "-f", "docker")
    if any(name not in grp.getgrnam(g).gr_mem for g in ("tty", "docker")):
        _admin("usermod", "-aG", "tty,docker", name)
    return pwd.getpwnam(name)


def _write_key(path: Path, key: asyncssh.SSHKey) -> None:
    key.write_private_key(str(path))
    key.write_public_key(str(path) + ".pub")
    path.chmod(0o600)


@dataclass
class SshServer:
    """One running sshd; see the module docstring."""

    dir: Path
    port: int
    user: str
    home: str
    key_path: Path
    known_hosts: Path
    host_key_pub: str
    uid: int
    gid: int
    host: str = "127.0.0.1"
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def target(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    @property
    def config(self) -> Path:
        return self.dir / "sshd_config"

    def connect_kwargs(self) -> dict[str, object]:
        """Keyword arguments for :func:`k3tui.remote.ssh.connect`."""
        return {"identity": [str(self.key_path)], "known_hosts": str(self.known_hosts)}

    def ssh_argv(self, *command: str) -> list[str]:
        """An OpenSSH client command line reaching this server."""
        return [
            "ssh", "-F", "/dev/null", "-p", str(self.port), "-i", str(self.key_path),
            "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "StrictHostKeyChecking=yes",
            "-o", "BatchMode=yes", f"{self.user}@{self.host}", *command,
        ]  # fmt: skip

    def log(self) -> str:
        return (self.dir / "sshd.log").read_text(errors="replace")

    def session_pids(self) -> list[int]:
        """PIDs of the sshd processes serving connections right now (``[priv]`` and ``user@notty``).

        Each connection has a per-connection sshd and, below it, the process that holds the
        socket and serves the channels: killing only the first leaves the link up.
        """
        assert self.proc is not None
        parent: dict[int, int] = {}
        comm: dict[int, str] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
                parent[int(entry.name)], comm[int(entry.name)] = int(rest[1]), name
        found, frontier = [], [self.proc.pid]
        while frontier:
            pid = frontier.pop()
            kids = [c for c, pp in parent.items() if pp == pid and comm.get(c) == "sshd" and proc_state(c) != "Z"]
            found += kids
            frontier += kids
        return sorted(found)

    def connection_count(self) -> int:
        """How many client connections the server holds (one per-connection sshd each)."""
        assert self.proc is not None
        out = subprocess.run(["ps", "-o", "pid=,stat=", "--ppid", str(self.proc.pid)], capture_output=True, text=True)
        return sum(1 for line in out.stdout.splitlines() if not line.split()[1].startswith("Z"))

    def kill_sessions(self) -> list[int]:
        """SIGKILL every sshd child serving a connection (the listener stays up)."""
        pids = self.session_pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return pids

    def start(self) -> None:
        log = self.dir / "sshd.log"
        argv = [
            "setpriv",
            f"--reuid={self.uid}",
            f"--regid={self.gid}",
            "--init-groups",
            SSHD,
            "-D",
            "-f",
            str(self.config),
            "-E",
            str(log),
        ]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise RuntimeError(
                    f"sshd exited {self.proc.returncode}: {err} {log.read_text() if log.exists() else ''}"
                )
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"sshd did not listen on {self.port}: {self.log()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill_sessions()
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()
        self.proc = None

    def restart(self) -> None:
        """Stop everything (all connections drop) and start again on the same port and key."""
        self.stop()
        self.start()


_CONFIG = """\
Port {port}
ListenAddress 127.0.0.1
HostKey {dir}/host_key
PidFile {dir}/sshd.pid
AuthorizedKeysFile {dir}/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowTcpForwarding yes
AllowStreamLocalForwarding yes
StreamLocalBindUnlink yes
PermitUserEnvironment no
MaxStartups 100:30:200
LogLevel VERBOSE
Subsystem sftp internal-sftp
"""


class _Factory:
    """Starts sshd instances sharing one user and one client key."""

    def __init__(self, base: Path) -> None:
        if not os.path.exists(SSHD):
            unavailable("sshd", f"{SSHD} is not installed (apt-get install openssh-server)")
        if os.geteuid() != 0:
            unavailable("sshd", "the sshd fixture needs root to run sshd as a dedicated test user")
        if not shutil.which("setpriv"):
            unavailable("sshd", "setpriv (util-linux) is missing")
        self.base = base
        self.pw = ensure_user()
        base.chmod(0o755)
        self.client_key = asyncssh.generate_private_key("ssh-ed25519")
        self.key_path = base / "client_key"
        _write_key(self.key_path, self.client_key)
        self.servers: list[SshServer] = []

    def start(self, name: str = "node") -> SshServer:
        d = Path(tempfile.mkdtemp(prefix=f"sshd-{name}-", dir=self.base))
        d.chmod(0o755)
        host_key = asyncssh.generate_private_key("ssh-ed25519")
        _write_key(d / "host_key", host_key)
        pub = host_key.export_public_key("openssh").decode().strip()
        (d / "authorized_keys").write_text(self.client_key.export_public_key("openssh").decode())
        port = free_port()
        (d / "sshd_config").write_text(_CONFIG.format(port=port, dir=d))
        kh = d / "known_hosts"
        kh.write_text(f"[127.0.0.1]:{port} {pub}\n")
        for p in (d, d / "host_key", d / "host_key.pub", d / "authorized_keys", d / "sshd_config"):
            os.chown(p, self.pw.pw_uid, self.pw.pw_gid)
        server = SshServer(
            dir=d, port=port, user=self.pw.pw_name, home=self.pw.pw_dir, key_path=self.key_path,
            known_hosts=kh, host_key_pub=pub, uid=self.pw.pw_uid, gid=self.pw.pw_gid,
        )  # fmt: skip
        server.start()
        self.servers.append(server)
        return server

    def stop_all(self) -> None:
        for s in self.servers:
            s.stop()


@pytest.fixture(scope="session")
def sshd_factory():
    """``start(name) -> SshServer``: real sshd instances (own port and host key each)."""
    # Not under tmp_path_factory: pytest's base dir is 0700 and sshd runs as another user.
    base = Path(tempfile.mkdtemp(prefix="k3tui-sshd-"))
    factory = _Factory(base)
    yield factory.start
    factory.stop_all()
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def sshd(sshd_factory) -> SshServer:
    """One real OpenSSH sshd on 127.0.0.1 for the whole session."""
    return sshd_factory("main")

"""``SimHost``: the simulated GB300 host, an asyncssh server on 127.0.0.1.

A FAKE host on purpose (``k3tui demo``, tests): it says so in its banner, its hostname's
motd, ``/etc/motd``, its kernel log and ``K3TUI_SIMULATED=1`` in every session's env.

Why a real SSH server and real processes: the product's SSH transport, detached runs
(``setsid`` + ``nohup`` + per-run directory), tailing by byte offset, forwarding, kill and
exit status all run for real against it. Each exec request runs ``bash -c COMMAND`` with
``ROOT/bin`` first on PATH (the fake tools, see :mod:`k3tui.sim.rootfs`), virtual paths in
the command rewritten to the scenario's files and stripped back out of the output. The
exact commands of a freeze are the exception: the same answers, computed in this process
or remembered from a real run, without starting a process (:mod:`k3tui.sim.fastpath`;
``SimHost(fast_path=False)`` turns that off).

Forwarding is virtualised where a real host's names would collide on one machine:
``direct-tcpip`` to port P reaches the simulated ``vllm serve`` that asked for P (it binds
an ephemeral port), and ``direct-streamlocal`` to ``/var/run/docker.sock`` reaches the
simulated Docker Engine API in ``ROOT/docker.sock``. SFTP works, rooted at the real file
system with relative paths under the session's ``$HOME`` (``ROOT/home``).
"""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import asyncssh

from ..remote.local import end_subprocess
from . import dockerapi, fastpath, rootfs
from .pathmap import recorded_alive
from .scenario import info_of, load_raw

HOST_ALIAS = "gb300-sim"
DOCKER_SOCK = "/var/run/docker.sock"


class SimHost:
    """The simulated host: ``async with SimHost(scenario="nccl-init") as sim: …``.

    Attributes (valid inside the ``async with``):
        port: the SSH port on 127.0.0.1.
        host_alias: ``gb300-sim`` (an ssh_config alias in ``ssh_config_path``).
        known_hosts_path / client_key_path / ssh_config_path: files for a strict client.
        username: the login name it accepts (only with ``client_key_path``).
        root: its private temp directory (see :mod:`k3tui.sim.rootfs`).
        info: the scenario's :class:`~k3tui.sim.scenario.ScenarioInfo`.
    """

    def __init__(
        self,
        scenario: str = "healthy",
        *,
        node: int = 0,
        speed: float | None = None,
        keep_root: bool = False,
        fast_path: bool = True,
    ) -> None:
        self.scenario = scenario
        self.node = node
        self.data = load_raw(scenario)
        self.info = info_of(self.data)
        self.speed = speed
        self.keep_root = keep_root
        self.host_alias = HOST_ALIAS if node == 0 else f"{HOST_ALIAS}-{node}"
        self.username = getpass.getuser()
        self.port = 0
        self.root = Path()
        self.state: dict[str, Any] = {}
        self._listener: asyncssh.SSHAcceptor | None = None
        self._docker: asyncio.AbstractServer | None = None
        self._children: set[int] = set()
        self.fast_path = fast_path
        """Answer the freeze's probes without a process (:mod:`k3tui.sim.fastpath`); False: always bash."""
        self.fast: fastpath.FastPath | None = None
        self.counts = {"bash": 0, "computed": 0, "remembered": 0}
        """Exec requests so far: run in bash, answered by the fast path (computed, remembered)."""

    # --- files a client needs ----------------------------------------------------------

    @property
    def known_hosts_path(self) -> str:
        return str(self.root / "keys" / "known_hosts")

    @property
    def client_key_path(self) -> str:
        return str(self.root / "keys" / "id_ed25519")

    @property
    def ssh_config_path(self) -> str:
        return str(self.root / "keys" / "ssh_config")

    @property
    def docker_socket(self) -> str:
        """The simulated Engine API socket (what ``/var/run/docker.sock`` forwards reach)."""
        return str(self.root / "docker.sock")

    @property
    def target(self) -> str:
        """``user@127.0.0.1:port`` of this host."""
        return f"{self.username}@127.0.0.1:{self.port}"

    def connect_kwargs(self) -> dict[str, Any]:
        """Arguments for ``k3tui.remote.ssh.connect(**sim.connect_kwargs())``: strict known_hosts, our key."""
        return {
            "target": self.target,
            "identity": [self.client_key_path],
            "known_hosts": self.known_hosts_path,
            "alias": self.host_alias,
            "simulated": True,
        }

    def asyncssh_kwargs(self) -> dict[str, Any]:
        """Arguments for a plain ``asyncssh.connect`` with strict host-key checking."""
        return {
            "host": "127.0.0.1",
            "port": self.port,
            "username": self.username,
            "client_keys": [self.client_key_path],
            "known_hosts": self.known_hosts_path,
        }

    # --- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> SimHost:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Build the root, generate keys, listen on 127.0.0.1:0, serve the Docker API."""
        _sweep_stale_roots()
        self.root = Path(tempfile.mkdtemp(prefix="k3sim-"))
        (self.root / "owner").write_text(str(os.getpid()))
        self._start_watchdog()
        self.state = rootfs.build(self.root, self.data, self.node)
        self._start_container_placeholder()
        self.fast = fastpath.FastPath(self.root, self.session_env)
        host_key = asyncssh.generate_private_key("ssh-ed25519")
        client_key = asyncssh.generate_private_key("ssh-ed25519")
        keys = self.root / "keys"
        keys.mkdir()
        client_key.write_private_key(self.client_key_path)
        client_key.write_public_key(self.client_key_path + ".pub")
        os.chmod(self.client_key_path, 0o600)
        self._docker = await dockerapi.serve(self.docker_socket, self.root)
        self._listener = await asyncssh.listen(
            host="127.0.0.1",
            port=0,
            server_host_keys=[host_key],
            authorized_client_keys=asyncssh.import_authorized_keys(client_key.export_public_key().decode()),
            server_factory=lambda: _Server(self),
            process_factory=self._process,
            sftp_factory=lambda chan: _Sftp(chan, str(self.root / "home")),
            allow_scp=True,
            encoding=None,
            line_editor=False,
            agent_forwarding=False,
            x11_forwarding=False,
            keepalive_interval=0,
        )
        self.port = self._listener.sockets[0].getsockname()[1]
        pub = host_key.export_public_key().decode().strip()
        (keys / "known_hosts").write_text(f"[127.0.0.1]:{self.port},[{self.host_alias}]:{self.port} {pub}\n")
        (keys / "ssh_config").write_text(
            f"# k3tui SIMULATED GB300 host\nHost {self.host_alias}\n  HostName 127.0.0.1\n  Port {self.port}\n"
            f"  User {self.username}\n  IdentityFile {self.client_key_path}\n  UserKnownHostsFile {self.known_hosts_path}\n"
            "  StrictHostKeyChecking yes\n"
        )

    async def stop(self) -> None:
        """Stop listening, end every process this host started, remove the root."""
        if self._listener is not None:
            self._listener.close()
            await self._listener.wait_closed()
            self._listener = None
        if self._docker is not None:
            self._docker.close()
            await self._docker.wait_closed()
            self._docker = None
        self._kill_leftovers()
        self._end_watchdog()
        if not self.keep_root and self.root.is_dir():
            shutil.rmtree(self.root, ignore_errors=True)

    def _start_watchdog(self) -> None:
        """A process that ends this host's processes when this one ends, however it ends.

        Detached runs (``setsid nohup``) outlive their bash by design; after ``kill -9`` of
        ``k3tui demo`` nothing called :meth:`stop`, and the simulated ``vllm serve`` kept its
        port (issue 16). The watchdog blocks reading a pipe whose only write end this process
        holds (close-on-exec: no child inherits it): the kernel closes it when this process
        dies, the read returns, and the watchdog TERMs then KILLs what the host started.
        """
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the watchdog: its own session, so a Ctrl-C to the demo's group does not end it first
            try:
                # every other descriptor goes: a copy of ANOTHER host's watchdog pipe (a fork inherits
                # it; only exec drops it) would keep that watchdog from ever seeing its end
                os.closerange(3, r)
                os.closerange(r + 1, os.sysconf("SC_OPEN_MAX"))
                os.setsid()
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                while True:
                    try:
                        os.read(r, 1)
                        break
                    except InterruptedError:
                        continue
                self._children.discard(os.getpid())
                self._kill_leftovers()
                if not self.keep_root:
                    shutil.rmtree(self.root, ignore_errors=True)
            finally:
                os._exit(0)
        os.close(r)
        self._watch_fd = w
        self._watchdog: int | None = pid

    def _end_watchdog(self) -> None:
        """After a normal stop: the watchdog finds nothing left, and is reaped."""
        pid = getattr(self, "_watchdog", None)
        if pid is None:
            return
        os.close(self._watch_fd)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        self._watchdog = None

    def _start_container_placeholder(self) -> None:
        """The running container's main process: a real, idle process (its pid is State.Pid)."""
        c = self.state.get("container") or {}
        if not c or c.get("state", "running") != "running":
            return
        owner = os.getpid()
        env = self._container_process_env(c)
        pid = os.fork()
        if pid == 0:  # child: sleep until told to stop; never returns into the event loop
            try:
                os.setsid()
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                # idle until the simulating process is gone (no orphan outlives a killed test run);
                # its environ is the container's (a freeze reads it), never the operator's own PATH
                os.execve(
                    "/bin/sh",
                    ["sh", "-c", f"while kill -0 {owner} 2>/dev/null; do sleep 1; done", "vllm-k3-init"],
                    env,
                )
            finally:
                os._exit(0)
        self._children.add(pid)
        (self.root / "ctr" / c["name"] / "pid").write_text(str(pid))

    def _container_process_env(self, c: dict[str, Any]) -> dict[str, str]:
        """What the container's main process has in ``/proc/PID/environ``: the image's env, then the run's."""
        from .containers import env_list

        env = {"HOSTNAME": str(self.state["host"].get("hostname", "")), "HOME": "/root", "K3TUI_SIMULATED": "1"}
        for kv in env_list(c):
            k, _, v = kv.partition("=")
            env[k] = v
        env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        return env

    def _kill_leftovers(self) -> None:
        """TERM then KILL what this host started: its container placeholder and detached runs."""
        pids = set(self._children)
        for f in (self.root / "state" / "procs").glob("*.json") if self.root.is_dir() else []:
            try:
                rec = json.loads(f.read_text())
                if recorded_alive(rec):  # not a later process that got a dead one's pid
                    pids.add(int(rec["pid"]))
            except (OSError, ValueError, KeyError, TypeError):
                pass
        for f in (self.root / "home").glob(".k3tui/runs/*/pgid") if self.root.is_dir() else []:
            try:
                pids.add(-int(f.read_text()))
            except (OSError, ValueError):
                pass
        pids |= _processes_of(self.root)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            if sig == signal.SIGTERM:
                time.sleep(0.05)
        # a process still starting when the host ended has no record yet, and would write its first
        # file (``mkdir -p``: the root again) after the root is gone: end all that carry the root
        end = time.monotonic() + 5
        while (late := _processes_of(self.root)) and time.monotonic() < end:
            for pid in late:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.05)
        for pid in self._children:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass

    # --- sessions -------------------------------------------------------------------------

    def session_env(self) -> dict[str, str]:
        """The environment of a login on the simulated host."""
        env = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "TERM", "TZ")}
        env.update(
            PATH=f"{self.root / 'bin'}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            HOME=str(self.root / "home"),
            USER=self.username,
            LOGNAME=self.username,
            SHELL="/bin/bash",
            K3TUI_SIMULATED="1",
            K3SIM_ROOT=str(self.root),
            K3SIM_SCENARIO=self.scenario,
            K3SIM_OWNER=str(os.getpid()),
        )
        if self.speed is not None:
            env["K3SIM_SPEED"] = str(self.speed)
        elif "K3SIM_SPEED" in os.environ:
            env["K3SIM_SPEED"] = os.environ["K3SIM_SPEED"]
        return env

    async def _process(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        await _Session(self, process).run()

    def forward_port(self, port: int) -> int | None:
        """Where a forward to this host's ``port`` really goes: the simulated server that asked for it.

        None when no simulated server listens there: the simulated host has nothing else
        on its ports, and a forward must never reach a real service of this machine.
        """
        f = self.root / "state" / "ports" / str(port)
        try:
            return int(json.loads(f.read_text())["port"])
        except (OSError, ValueError, KeyError):
            return None


class _Session:
    """One exec/shell channel: ``bash -c`` with the simulated host's overlay.

    The exact commands of a freeze are answered without bash where the host knows them
    (:mod:`k3tui.sim.fastpath`); a terminal, an env sent by the client or any other
    command runs in bash as always.
    """

    def __init__(self, sim: SimHost, process: asyncssh.SSHServerProcess[bytes]) -> None:
        self.sim = sim
        self.process = process
        self.paths = rootfs.PathMap([sim.root / "fs"])
        self.cut = False
        """Some output could not be delivered (the client went away): what was kept is not the whole answer."""

    async def run(self) -> None:
        cmd = self.process.command
        fast = self.sim.fast if self.sim.fast_path and self.sim.fast is not None else None
        if (
            cmd is not None
            and fast is not None
            and fast.knows(cmd)
            and not self.process.env
            and not self.process.get_terminal_type()
            and not fast.tools_changed(cmd)
        ):
            answer = fast.computed(cmd)
            if answer is not None:
                self.sim.counts["computed"] += 1
                self._reply(answer)
                return
            reads_stdin = fast.reads_stdin(cmd)
            if reads_stdin is not None:
                await self._remembered(fast, cmd, reads_stdin)
                return
        await self._bash(cmd)

    def _reply(self, answer: fastpath.Answer) -> None:
        try:
            self.process.stdout.write(answer.stdout)
            self.process.stderr.write(answer.stderr)
            self.process.exit(answer.status)
        except (OSError, asyncssh.Error):
            pass

    async def _remembered(self, fast: fastpath.FastPath, cmd: str, reads_stdin: bool) -> None:
        """A remembered command: its kept answer, or a real run whose answer is kept."""
        stdin: bytes | None = None
        if reads_stdin:
            try:
                stdin = await self.process.stdin.read()
            except (asyncssh.Error, OSError):
                return
        key = fast.key(cmd, stdin or b"")
        answer = await fast.recall(key)
        if answer is not None:
            self.sim.counts["remembered"] += 1
            self._reply(answer)
            return
        running = fast.begin(key)
        answer = None
        try:
            answer = await self._bash(cmd, stdin=stdin, keep=True)
        finally:
            fast.finish(key, running, answer)

    async def _bash(self, cmd: str | None, *, stdin: bytes | None = None, keep: bool = False) -> fastpath.Answer | None:
        """Run ``cmd`` in bash on the channel; with ``keep``, also return what it printed if it ended by itself.

        ``stdin``: the channel's input, already read to its end (None: copied from the channel).
        """
        if cmd is None:
            self.process.stdout.write((rootfs.BANNER + "\n").encode())
            cmd = "exec bash -i" if self.process.get_terminal_type() else "exec bash"
        self.sim.counts["bash"] += 1
        env = self.sim.session_env()
        env.update({k: v for k, v in (self.process.env or {}).items() if isinstance(k, str) and isinstance(v, str)})
        env["PATH"] = self.sim.session_env()["PATH"]
        try:
            proc = await asyncio.create_subprocess_exec(
                "/bin/bash",
                "-c",
                self.paths.command(cmd),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=env["HOME"],
                start_new_session=True,
            )
        except OSError as exc:
            self.process.stderr.write(f"k3tui simulated host: cannot start bash: {exc}\n".encode())
            self.process.exit(127)
            return None
        out: list[bytes] | None = [] if keep else None
        err: list[bytes] | None = [] if keep else None
        pumps = [
            asyncio.ensure_future(self._copy_in(proc, stdin)),
            asyncio.ensure_future(self._copy_out(proc.stdout, self.process.stdout, out)),
            asyncio.ensure_future(self._copy_out(proc.stderr, self.process.stderr, err)),
        ]
        try:
            status, ended = await self._wait(proc, pumps)
        except BaseException:  # cancelled (an interrupted k3tui): end the command now, not after the loop
            for p in pumps:
                p.cancel()
            end_subprocess(proc)
            raise
        for p in pumps[:1]:
            p.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
        try:
            self.process.exit(status if status >= 0 else 128 - status)
        except (OSError, asyncssh.Error):
            pass
        if out is None or err is None or not ended or self.cut:
            return None
        return fastpath.Answer(b"".join(out), b"".join(err), status)

    async def _wait(self, proc: asyncio.subprocess.Process, pumps: Sequence[asyncio.Future[Any]]) -> tuple[int, bool]:
        """The command's status, and whether it ended by itself; if the client goes away first, end the command's process group."""
        closed = asyncio.ensure_future(self.process.channel.wait_closed())
        done_wait = asyncio.ensure_future(proc.wait())
        await asyncio.wait({closed, done_wait}, return_when=asyncio.FIRST_COMPLETED)
        ended = done_wait.done()
        if not ended:
            _killpg(proc.pid)
            await done_wait
        closed.cancel()
        await asyncio.gather(*pumps[1:], return_exceptions=True)
        return done_wait.result(), ended

    async def _copy_in(self, proc: asyncio.subprocess.Process, given: bytes | None = None) -> None:
        assert proc.stdin is not None
        try:
            if given is not None:
                proc.stdin.write(given)
                await proc.stdin.drain()
                return
            while True:
                data = await self.process.stdin.read(65536)
                if not data:
                    break
                proc.stdin.write(data)
                await proc.stdin.drain()
        except (asyncssh.Error, OSError, asyncio.IncompleteReadError, BrokenPipeError, ConnectionResetError):
            pass
        finally:
            try:
                proc.stdin.close()
            except (OSError, RuntimeError):
                pass

    async def _copy_out(self, src: asyncio.StreamReader | None, dst: Any, keep: list[bytes] | None = None) -> None:
        assert src is not None
        carry = b""
        while True:
            data = await src.read(65536)
            if not data:
                break
            data = self.paths.output(carry + data)
            data, carry = _hold_partial(data, self.paths.overlays)
            if keep is not None:
                keep.append(data)
            try:
                dst.write(data)
            except (OSError, asyncssh.Error, BrokenPipeError):
                self.cut = True
                return
        if carry:
            if keep is not None:
                keep.append(carry)
            try:
                dst.write(carry)
            except (OSError, asyncssh.Error, BrokenPipeError):
                self.cut = True


def _hold_partial(data: bytes, overlays: list[str]) -> tuple[bytes, bytes]:
    """Split off a tail that may be the start of an overlay path cut between two reads."""
    for o in overlays:
        ob = o.encode()
        for k in range(min(len(ob) - 1, len(data)), 0, -1):
            if data.endswith(ob[:k]):
                return data[:-k], data[-k:]
    return data, b""


def _sweep_stale_roots(max_age: float = 1800.0) -> None:
    """Remove roots left by simulated hosts whose process was killed before it could clean up."""
    for d in Path(tempfile.gettempdir()).glob("k3sim-*"):
        try:
            owner = int((d / "owner").read_text())
            os.kill(owner, 0)
            continue  # its simulator is alive
        except ProcessLookupError:
            pass
        except (OSError, ValueError):  # no owner file: only when clearly abandoned
            try:
                if time.time() - d.stat().st_mtime < max_age:
                    continue
            except OSError:
                continue
        shutil.rmtree(d, ignore_errors=True)


def _processes_of(root: Path) -> set[int]:
    """Every live process started in this simulated host: its environment names the host's root.

    A login's environment carries ``K3SIM_ROOT`` and every process below it inherits it, so
    this finds what no record names yet (a ``vllm serve`` still importing). Zombies show an
    empty environment: they are already gone.
    """
    mark = b"\0K3SIM_ROOT=" + os.fsencode(str(root)) + b"\0"
    me, found = os.getpid(), set()
    try:
        entries = list(Path("/proc").iterdir())
    except OSError:
        return found
    for proc in entries:
        if not proc.name.isdigit() or int(proc.name) == me:
            continue
        try:
            env = b"\0" + (proc / "environ").read_bytes()
        except OSError:
            continue
        if mark in env:
            found.add(int(proc.name))
    return found


def _killpg(pid: int) -> None:
    for sig in (signal.SIGTERM,):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


class _Server(asyncssh.SSHServer):
    """Auth by the generated client key only; forwarding mapped to the simulated services."""

    def __init__(self, sim: SimHost) -> None:
        self.sim = sim
        self.conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self.conn = conn
        conn.send_auth_banner(rootfs.BANNER + "\n")

    def begin_auth(self, username: str) -> bool:
        return True

    def password_auth_supported(self) -> bool:
        return False

    def connection_requested(self, dest_host: str, dest_port: int, orig_host: str, orig_port: int) -> Any:
        if dest_host not in ("127.0.0.1", "localhost", "0.0.0.0", "::1", HOST_ALIAS):
            raise asyncssh.ChannelOpenError(asyncssh.OPEN_CONNECT_FAILED, "simulated host: only loopback is reachable")
        assert self.conn is not None
        real = self.sim.forward_port(dest_port)
        if real is None:
            raise asyncssh.ChannelOpenError(asyncssh.OPEN_CONNECT_FAILED, "Connection refused")
        return self.conn.forward_connection("127.0.0.1", real)

    def unix_connection_requested(self, dest_path: str) -> Any:
        assert self.conn is not None
        if dest_path in (DOCKER_SOCK, "/run/docker.sock"):
            return self.conn.forward_unix_connection(self.sim.docker_socket)
        raise asyncssh.ChannelOpenError(asyncssh.OPEN_CONNECT_FAILED, f"simulated host: no socket at {dest_path}")

    def server_requested(self, listen_host: str, listen_port: int) -> bool:
        return False


class _Sftp(asyncssh.SFTPServer):
    """SFTP on the real file system, relative paths under the session's $HOME."""

    def __init__(self, chan: asyncssh.SSHServerChannel, home: str) -> None:
        super().__init__(chan)
        self._home = home.encode()

    def map_path(self, path: bytes) -> bytes:
        if not path.startswith(b"/"):
            path = self._home + b"/" + path if path not in (b"", b".") else self._home
        return path

    def reverse_map_path(self, path: bytes) -> bytes:
        return path

"""``SshHost``: the :class:`~k3tui.remote.base.Host` protocol over one asyncssh connection.

Shape, and why:

- **One connection per host, many channels.** Every command, tail and forward is a channel
  on the same connection; at most :data:`MAX_CHANNELS` session channels are open at once
  because OpenSSH refuses more than ``MaxSessions`` (10) per connection.
- **Strict host keys.** asyncssh is given our own known_hosts matcher and a client whose
  ``validate_host_public_key`` is only asked about keys *not* on record. It remembers the
  key offered, so a refusal becomes :class:`HostKeyUnknown` (no key on record for that
  host: fingerprint + how to accept) or :class:`HostKeyChanged` (a different key on
  record: always a stop, both fingerprints shown). ``--accept-new-host-key`` accepts only
  an *unknown* key, appends it to known_hosts and records the operator's decision.
- **Reconnect with backoff.** When the connection drops, the next use reconnects (emitting
  ``HostDisconnected``/``HostReconnected``); forwards are re-opened on the same local port
  or socket path; a detached run's tail resumes at its byte offset (see ``_host.py``).
  Host-key and auth failures are never retried.
- Bulk reads are 64 KiB chunks split by :class:`~k3tui.remote.lines.LineSplitter`, and
  ``aes128-gcm@openssh.com`` is preferred when the server offers it (1.2–1.9× faster).
- **The link is measured at connect** (``host.link``, and ``HostConnected.rtt`` /
  ``throughput``), so a freeze scales its probe timeouts to it
  (:func:`k3tui.scene.probes.timeout_for`). No process is started for it: the round trip is
  the fastest of :data:`LINK_PINGS` global requests of a name no server knows (RFC 4254: it
  answers "failure" at once, from its transport); the throughput is :data:`LINK_SAMPLE`
  bytes of random padding on such requests, sent back to back, over the time they took less
  one round trip — towards the host, the direction that is usually no faster. A link that
  is slow on the first 16 KiB is not sent the rest. Cost: 3 round trips and 16–80 KiB.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import tempfile
import time
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import asyncssh

from ..errors import AuthFailed, ConnectionLost, HostError, HostKeyChanged, HostKeyUnknown, HostUnreachable, UsageError
from ..events import Decision, HostConnected, HostDisconnected, HostReconnected
from ..redact import Redactor
from ._host import BaseHost
from .base import Emit, Link
from .target import DEFAULT_KNOWN_HOSTS, Resolved, Target, config_paths, parse_group, parse_target, resolve

MAX_CHANNELS = 8
OPEN_RETRIES = 6
CLOSE_WAIT = 2.0
"""Seconds to wait for the server to confirm a channel closed before moving on."""
PREFERRED_CIPHER = "aes128-gcm@openssh.com"
BACKOFF = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0)
"""Seconds between reconnect attempts (the last repeats, capped at 10 s)."""
LINK_REQUEST = b"link-probe@k3tui"
"""A global request no server implements: answered "failure" by the server's transport (no process, no log line)."""
LINK_PINGS = 3
"""Round trips timed at connect; the fastest is the link's RTT."""
LINK_SAMPLE = (16 * 1024, 64 * 1024)
"""Bytes sent to estimate the throughput: the first batch, then the second only if the first went fast."""
LINK_CHUNK = 8 * 1024
"""Padding per request: well under the 32 KiB every SSH server must accept in one packet."""
LINK_SLOW = 0.05
"""Seconds beyond the round trip after which a batch is a measurement (no second, larger batch)."""
LINK_FASTEST = 1e9
"""Bytes/s reported when a batch took no measurable time beyond the round trip."""

_LOST = (
    ConnectionError,
    EOFError,
    BrokenPipeError,
    asyncssh.ConnectionLost,
    asyncssh.DisconnectError,
    asyncssh.ChannelOpenError,
)


def fingerprint(key: asyncssh.SSHKey) -> str:
    """``SHA256:…`` as OpenSSH prints it."""
    return key.get_fingerprint("sha256")


def _ciphers() -> list[str]:
    from asyncssh.encryption import get_default_encryption_algs

    algs = [a.decode() for a in get_default_encryption_algs()]
    return [PREFERRED_CIPHER, *[a for a in algs if a != PREFERRED_CIPHER]] if PREFERRED_CIPHER in algs else algs


class _Client(asyncssh.SSHClient):
    """Reports an untrusted host key and a lost connection back to its :class:`SshHost`."""

    def __init__(self, owner: SshHost) -> None:
        self._owner = owner
        owner._client = self

    def validate_host_public_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        return self._owner._on_untrusted_key(host, addr, port, key)

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner._on_connection_lost(self, exc)


class _SshProc:
    """An asyncssh process seen through the :class:`~k3tui.remote._host.Proc` interface."""

    def __init__(self, proc: asyncssh.SSHClientProcess[bytes], release: Any) -> None:
        self._p = proc
        self._release = release

    async def read_out(self, n: int) -> bytes:
        return await self._p.stdout.read(n)

    async def read_err(self, n: int) -> bytes:
        return await self._p.stderr.read(n)

    async def wait(self) -> int | None:
        await self._p.wait()
        code = self._p.returncode
        return 128 - code if code is not None and code < 0 else code

    def kill(self) -> None:
        if self._p.returncode is None:
            try:
                self._p.send_signal("KILL")  # OpenSSH honours it for non-root logins
            except Exception:  # noqa: BLE001 - refused or already closed
                pass
        self._p.close()

    async def close(self) -> None:
        try:
            self._p.close()
            # sshd holds a session channel open until its process exits; do not wait for a stuck one.
            await asyncio.wait_for(self._p.wait_closed(), CLOSE_WAIT)
        except Exception:  # noqa: BLE001 - closing a channel on a dead connection, or one that will not die
            pass
        finally:
            if self._release is not None:
                self._release()
                self._release = None


class SshHost(BaseHost):
    """A remote host over SSH. Create it with :func:`connect`."""

    def __init__(
        self,
        resolved: Resolved,
        *,
        alias: str | None = None,
        identity: Sequence[str] = (),
        known_hosts: str | None = None,
        accept_new_host_key: bool = False,
        ssh_config: str | None = None,
        connect_timeout: float = 10.0,
        emit: Emit | None = None,
        redactor: Redactor | None = None,
        reconnect_for: float = 300.0,
        simulated: bool = False,
        role: str = "",
        accept_fingerprint: str = "",
    ) -> None:
        super().__init__(alias or resolved.target.alias, emit, redactor)
        self.simulated = simulated
        self.role = role
        self.resolved = resolved
        self.identity = tuple(os.path.expanduser(i) for i in identity)
        kh = known_hosts or (resolved.known_hosts_files[0] if resolved.known_hosts_files else DEFAULT_KNOWN_HOSTS)
        self.known_hosts = os.path.expanduser(kh)
        self.accept_new_host_key = accept_new_host_key or bool(accept_fingerprint)
        self.accept_fingerprint = accept_fingerprint
        """When set, only an unknown key with exactly this ``SHA256:…`` fingerprint is accepted."""
        self.ssh_config = ssh_config
        self.connect_timeout = connect_timeout
        self.reconnect_for = reconnect_for
        self.address = resolved.address
        self.user = resolved.user
        self.fingerprint = ""
        self.clock_skew: float | None = None
        self.link: Link | None = None
        """The link as measured at connect (None: not measured); probe timeouts scale to it."""
        self._conn: asyncssh.SSHClientConnection | None = None
        self._client: _Client | None = None
        self._lost: str | None = None
        self._closing = False
        self._offered: tuple[str, asyncssh.SSHKey] | None = None
        self._expected: list[asyncssh.SSHKey] = []
        self._accepted: tuple[str, int | None, asyncssh.SSHKey] | None = None
        self._channels = asyncio.Semaphore(MAX_CHANNELS)
        self._reconnect_lock = asyncio.Lock()
        self._generation = 0
        self._port_forwards: dict[int, tuple[str, int]] = {}
        self._path_forwards: dict[str, str] = {}
        self._listeners: dict[int | str, asyncssh.SSHListener] = {}
        self._fwd_seq = 0
        self._sock_dir: str | None = None
        self._watcher: asyncio.Task[None] | None = None

    @property
    def _where(self) -> str:
        return self.alias if self.alias == self.address else f"{self.alias} ({self.address})"

    # --- context manager -------------------------------------------------------------

    async def __aenter__(self) -> SshHost:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- connecting ------------------------------------------------------------------

    async def open(self) -> SshHost:
        """Connect, check the host key, measure the link and the clock skew; emits ``HostConnected``."""
        await self._connect_once()
        self.link = await self._measure_link()
        await self._measure_skew()
        self.emit(
            HostConnected(
                address=self.address,
                user=self.user,
                fingerprint=self.fingerprint,
                clock_skew=self.clock_skew,
                simulated=self.simulated,
                role=self.role,
                rtt=self.link.rtt if self.link else None,
                throughput=self.link.throughput if self.link else None,
            )
        )
        return self

    def _known_hosts_match(self, host: str, addr: str, port: int | None) -> Any:
        if not Path(self.known_hosts).is_file():
            self._expected = []
            return [], [], []
        result = asyncssh.match_known_hosts(self.known_hosts, host, addr, port)
        self._expected = list(result[0])
        return result

    def _on_untrusted_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        self._offered = (host, key)
        if self._expected or not self.accept_new_host_key:
            return False
        if self.accept_fingerprint and fingerprint(key) != self.accept_fingerprint:
            return False  # not the key the operator saw and accepted: refused, nothing written
        self._accepted = (host, port, key)
        return True

    def _on_connection_lost(self, client: _Client, exc: Exception | None) -> None:
        if not self._closing and client is self._client:
            self._lost = str(exc) if exc else "connection closed by the host"
            if self._port_forwards or self._path_forwards:
                # Forwards have no command to notice the loss: reconnect now, in the background.
                self._watcher = asyncio.get_running_loop().create_task(self._recover_quietly(self._lost))

    async def _recover_quietly(self, reason: str) -> None:
        try:
            await self._recover(reason)
        except Exception:  # noqa: BLE001 - the next use of the host raises it again, where it is handled
            pass

    def _options(self) -> dict[str, Any]:
        t = self.resolved.target
        kw: dict[str, Any] = {
            "config": config_paths(self.ssh_config),
            "known_hosts": self._known_hosts_match,
            "client_factory": lambda: _Client(self),
            "connect_timeout": self.connect_timeout,
            "encryption_algs": _ciphers(),
            "keepalive_interval": 15,
            "keepalive_count_max": 4,
        }
        if t.port:
            kw["port"] = t.port
        if t.user:
            kw["username"] = t.user
        if self.identity:
            kw["client_keys"] = list(self.identity)
        return kw

    async def _connect_once(self) -> None:
        self._offered = self._accepted = None
        try:
            conn = await self._connect_checked()
        except asyncssh.HostKeyNotVerifiable as exc:
            raise self._host_key_error() from exc
        except asyncssh.PermissionDenied as exc:
            raise AuthFailed(
                f"{self.user}@{self._where}: authentication refused ({exc.reason}); "
                f"pass -i KEY or load the key into ssh-agent"
            ) from exc
        except socket.gaierror as exc:
            raise HostUnreachable(
                f"{self.alias}: cannot resolve host name {self.resolved.hostname!r} ({exc.strerror})"
            ) from exc
        except ConnectionRefusedError as exc:
            raise HostUnreachable(
                f"{self._where}: connection refused: is sshd running on port {self.resolved.port}?"
            ) from exc
        except TimeoutError as exc:
            raise HostUnreachable(
                f"{self._where}: no answer within {self.connect_timeout:g}s (host down or port filtered?)"
            ) from exc
        except asyncssh.DisconnectError as exc:
            raise HostUnreachable(f"{self._where}: the server closed the connection: {exc.reason}") from exc
        except OSError as exc:
            raise HostUnreachable(f"{self._where}: {exc.strerror or exc}") from exc
        except (asyncssh.Error, ValueError) as exc:  # key file problems, bad config values
            raise HostError(f"{self.alias}: cannot connect: {exc}") from exc
        self._conn = conn
        self._lost = None
        self._generation += 1
        peer = conn.get_extra_info("peername") or (self.resolved.hostname, self.resolved.port)
        host = f"[{peer[0]}]" if ":" in str(peer[0]) else str(peer[0])
        self.address = f"{host}:{peer[1]}"
        self.user = conn.get_extra_info("username") or self.user
        key = conn.get_server_host_key()
        self.fingerprint = fingerprint(key) if key else ""
        if self._accepted:
            self._record_accepted_key(*self._accepted)

    async def _connect_checked(self) -> Any:
        """asyncssh's connect, beside a probe that says at once when the peer is not an SSH server.

        asyncssh takes what a web server answers (``HTTP/1.1 400``) for lines before a version and
        waits for one until the timeout: the operator read "no answer" after the whole timeout.
        No probe behind a ProxyJump (the address may not be reachable directly).
        """
        task = asyncio.ensure_future(asyncssh.connect(self.resolved.target.host, **self._options()))
        if self.resolved.proxy_jump:
            return await task
        probe = asyncio.ensure_future(not_ssh(self.resolved.hostname, self.resolved.port, self.connect_timeout))
        try:
            done, _ = await asyncio.wait({task, probe}, return_when=asyncio.FIRST_COMPLETED)
            if task not in done or task.exception() is not None:
                got = await asyncio.wait_for(asyncio.shield(probe), 1.0 if task in done else None)
                if got is not None:
                    task.cancel()
                    raise HostUnreachable(f"{self._where}: not an SSH server (got {got!r})")
            return await task
        except TimeoutError:
            return await task  # the probe learnt nothing in time: asyncssh's own answer stands
        finally:
            probe.cancel()

    def _host_key_error(self) -> HostError:
        got = fingerprint(self._offered[1]) if self._offered else "an unverifiable key"
        if self._expected or (self.accept_fingerprint and got != self.accept_fingerprint):
            if not self._expected:  # the key changed between the operator's look and this connect
                return HostKeyChanged(self.alias, got, self.accept_fingerprint)
            expected = dict.fromkeys(fingerprint(k) for k in self._expected)
            return HostKeyChanged(self.alias, got, ", ".join(expected))
        return HostKeyUnknown(self.alias, got, self.known_hosts)

    def _record_accepted_key(self, host: str, port: int | None, key: asyncssh.SSHKey) -> None:
        """Append an accepted new key to known_hosts and record the decision."""
        name = host if not port or port == 22 else f"[{host}]:{port}"
        line = f"{name} {key.export_public_key('openssh').decode().strip()}\n"
        path = Path(self.known_hosts)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(line)
        self._accepted = None
        self.emit(
            Decision(
                action="accept-new-host-key",
                reason=f"operator accepted the unknown host key {fingerprint(key)} of {name}; added to {path}",
            )
        )

    async def _measure_link(self) -> Link | None:
        """Round trip and throughput of the connection (see the module docstring); None if not measurable.

        Never fails the connect: a server that does not answer within the connect timeout
        leaves what was measured so far. A batch cut short by that timeout (under 1.6 KB/s)
        gives an upper bound of the throughput; on such a link every timeout is at its cap.
        """
        ask = getattr(self._conn, "_make_global_request", None)  # asyncssh's own (keepalives use it)
        if ask is None:
            return None
        from asyncssh.packet import String

        deadline = time.monotonic() + self.connect_timeout
        rtt: float | None = None
        try:
            for _ in range(LINK_PINGS):
                t = time.monotonic()
                await asyncio.wait_for(ask(LINK_REQUEST), max(deadline - t, 0.001))
                rtt = min(rtt if rtt is not None else float("inf"), time.monotonic() - t)
        except Exception:  # noqa: BLE001 - a measurement never fails the connect
            return None if rtt is None else Link(rtt=round(rtt, 4))
        assert rtt is not None
        throughput: float | None = None
        for size in LINK_SAMPLE:
            t = time.monotonic()
            asks = [ask(LINK_REQUEST, String(os.urandom(LINK_CHUNK))) for _ in range(size // LINK_CHUNK)]
            try:
                await asyncio.wait_for(asyncio.gather(*asks), max(deadline - t, 0.001))
            except Exception:  # noqa: BLE001 - a measurement never fails the connect
                took = time.monotonic() - t
                return Link(rtt=round(rtt, 4), throughput=round(size / took) if took > rtt else None)
            beyond = time.monotonic() - t - rtt
            throughput = min(size / beyond, LINK_FASTEST) if beyond > 0 else LINK_FASTEST
            if beyond > LINK_SLOW:
                break
        return Link(rtt=round(rtt, 4), throughput=round(throughput) if throughput else None)

    async def _measure_skew(self) -> None:
        t1 = time.time()
        res = await self.run_quiet("date +%s.%N", timeout=10.0)
        t2 = time.time()
        try:
            self.clock_skew = round(float(res.stdout.strip().replace(".N", "")) - (t1 + t2) / 2, 3)
        except ValueError:
            self.clock_skew = None

    # --- losing and regaining the connection ---------------------------------------

    def _is_lost(self, exc: BaseException) -> bool:
        return self._lost is not None or isinstance(exc, _LOST)

    async def _ensure(self) -> asyncssh.SSHClientConnection:
        if self._closing:
            raise ConnectionLost(f"{self.alias}: the connection was closed")
        if self._conn is None or self._lost is not None:
            await self._recover(self._lost or "not connected")
        assert self._conn is not None
        return self._conn

    async def _recover(self, reason: str) -> None:
        """Reconnect with backoff; re-open forwards. Host-key and auth failures are not retried."""
        generation = self._generation
        async with self._reconnect_lock:
            if self._generation != generation and self._lost is None:
                return  # another task already reconnected
            await self._drop_connection()
            self.emit(HostDisconnected(reason=reason))
            down = time.monotonic()
            attempt = 0
            while True:
                attempt += 1
                try:
                    await self._connect_once()
                    break
                except (HostUnreachable, HostError) as exc:
                    if isinstance(exc, (HostKeyChanged, HostKeyUnknown, AuthFailed)):
                        raise
                    if time.monotonic() - down > self.reconnect_for:
                        raise ConnectionLost(
                            f"{self.alias}: connection lost ({reason}) and not back after {self.reconnect_for:g}s: {exc}"
                        ) from exc
                    await asyncio.sleep(min(BACKOFF[min(attempt - 1, len(BACKOFF) - 1)], 10.0))
            await self._reopen_forwards()
            self.emit(HostReconnected(attempt=attempt, downtime=round(time.monotonic() - down, 3)))

    async def _drop_connection(self) -> None:
        conn, self._conn, self._client = self._conn, None, None
        for listener in self._listeners.values():
            listener.close()
        self._listeners = {}
        if conn is not None:
            conn.abort()

    async def _reopen_forwards(self) -> None:
        for local_port, (rhost, rport) in self._port_forwards.items():
            self._listeners[local_port] = await self._open_port_forward(local_port, rhost, rport)
        for local_path, remote_path in self._path_forwards.items():
            self._listeners[local_path] = await self._open_path_forward(local_path, remote_path)

    # --- channels ------------------------------------------------------------------

    async def _spawn(self, command: str, stdin: bytes | None) -> _SshProc:
        await self._channels.acquire()
        try:
            proc = await self._open_session(command)
        except BaseException:
            self._channels.release()
            raise
        if stdin:
            proc.stdin.write(stdin)
        proc.stdin.write_eof()
        return _SshProc(proc, self._channels.release)

    async def _open_session(self, command: str) -> asyncssh.SSHClientProcess[bytes]:
        """Open a session channel running ``command``; the command never ran if this raises.

        A refused channel on a live connection (the server's ``MaxSessions``, counting
        channels still closing) is retried after a short pause; a dead connection is
        re-established first. Either way the command has not run yet, so retrying is safe.
        """
        for attempt in range(OPEN_RETRIES):
            conn = await self._ensure()
            try:
                return await conn.create_process(command, encoding=None)
            except _LOST as exc:
                if self._lost is None and not conn.is_closed():
                    if attempt + 1 < OPEN_RETRIES:
                        await asyncio.sleep(0.05 * 2**attempt)
                        continue
                    raise HostError(f"{self.alias}: the server refuses new channels: {exc}") from exc
                await self._recover(self._lost or f"{type(exc).__name__}: {exc}")
        raise HostError(f"{self.alias}: could not open a channel for {command!r}")

    async def put(self, local: str | os.PathLike[str], remote: str) -> None:
        """Copy a local file to the host over SFTP."""
        conn = await self._ensure()
        async with conn.start_sftp_client() as sftp:
            await sftp.put(os.fspath(local), remote)

    async def get(self, remote: str, local: str | os.PathLike[str]) -> None:
        """Copy a file from the host over SFTP."""
        conn = await self._ensure()
        async with conn.start_sftp_client() as sftp:
            await sftp.get(remote, os.fspath(local))

    # --- forwarding ----------------------------------------------------------------

    async def forward_port(self, remote_port: int, remote_host: str = "127.0.0.1") -> int:
        """Forward a new loopback port here to ``remote_host:remote_port`` as seen from the host."""
        listener = await self._open_port_forward(0, remote_host, remote_port)
        port = listener.get_port()
        self._listeners[port] = listener
        self._port_forwards[port] = (remote_host, remote_port)
        return port

    async def _open_port_forward(self, local_port: int, rhost: str, rport: int) -> asyncssh.SSHListener:
        conn = await self._ensure()
        return await conn.forward_local_port("127.0.0.1", local_port, rhost, rport)

    async def forward_unix(self, remote_path: str) -> str:
        """Forward a new local unix socket (in a private 0700 directory) to ``remote_path`` on the host."""
        if self._sock_dir is None:
            self._sock_dir = tempfile.mkdtemp(prefix="k3tui-fwd-")
        self._fwd_seq += 1
        local = os.path.join(self._sock_dir, f"{self._fwd_seq}-{os.path.basename(remote_path) or 'sock'}")
        self._listeners[local] = await self._open_path_forward(local, remote_path)
        self._path_forwards[local] = remote_path
        return local

    async def _open_path_forward(self, local: str, remote_path: str) -> asyncssh.SSHListener:
        conn = await self._ensure()
        if os.path.exists(local):
            os.unlink(local)
        return await conn.forward_local_path(local, remote_path)

    async def unforward(self, local: int | str) -> None:
        """Stop a forward opened by :meth:`forward_port` or :meth:`forward_unix`."""
        listener = self._listeners.pop(local, None)
        if isinstance(local, int):
            self._port_forwards.pop(local, None)
        else:
            self._path_forwards.pop(local, None)
        if listener is not None:
            listener.close()
        if isinstance(local, str) and os.path.exists(local):
            os.unlink(local)

    # --- closing -------------------------------------------------------------------

    async def close(self) -> None:
        """Close forwards and the connection (detached runs keep running)."""
        if self._closing:
            return
        self._closing = True
        if self._watcher is not None and not self._watcher.done():
            self._watcher.cancel()
        for listener in self._listeners.values():
            listener.close()
        self._listeners = {}
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            try:
                await conn.wait_closed()
            except Exception:  # noqa: BLE001 - already gone
                pass
        if self._sock_dir:
            for name in os.listdir(self._sock_dir):
                os.unlink(os.path.join(self._sock_dir, name))
            os.rmdir(self._sock_dir)
            self._sock_dir = None
        self.emit(HostDisconnected(reason="closed"))


class _Connecting:
    """What :func:`connect` returns: await it for the host, or use it with ``async with``."""

    def __init__(self, host: SshHost) -> None:
        self._host = host

    def __await__(self) -> Generator[Any, None, SshHost]:
        return self._host.open().__await__()

    async def __aenter__(self) -> SshHost:
        return await self._host.open()

    async def __aexit__(self, *exc: object) -> None:
        await self._host.close()


_NOT_SSH_AT_ONCE = re.compile(rb"HTTP/|[0-9]{3}[ -]|[+*<{\[]|.*[\x00-\x08\x0e-\x1f\x7f]")
"""First lines no SSH server sends before its version: a web, mail or FTP server, TLS, binary."""


async def not_ssh(host: str, port: int, timeout: float) -> str | None:
    """What a peer that is not an SSH server answered (its first line), or None: an SSH server,
    or nothing learnt (refused, silent). RFC 4253 allows text lines before ``SSH-``: only a line
    no SSH server would send decides at once; otherwise up to five lines and the end are read."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except (OSError, TimeoutError):
        return None
    try:
        writer.write(b"SSH-2.0-k3tui_probe\r\n")
        buf = b""
        while len(buf) < 4096:
            data = await asyncio.wait_for(reader.read(256), timeout)
            if not data:  # the peer closed without a version
                return _shown(buf) if buf else None
            buf += data
            lines = buf.split(b"\n")
            if any(ln.startswith(b"SSH-") for ln in lines):
                return None
            if any(_NOT_SSH_AT_ONCE.match(ln) for ln in lines if ln) or len(lines) > 5:
                return _shown(buf)
        return _shown(buf)
    except (OSError, TimeoutError, ValueError):
        return None
    finally:
        writer.close()


def _shown(data: bytes) -> str:
    """The first line of what the peer sent, short and printable."""
    return data.split(b"\n", 1)[0][:80].decode("ascii", "replace").strip()


def connect(
    target: str | Target,
    *,
    identity: Sequence[str] = (),
    known_hosts: str | None = None,
    accept_new_host_key: bool = False,
    ssh_config: str | None = None,
    connect_timeout: float = 10.0,
    emit: Emit | None = None,
    alias: str | None = None,
    redactor: Redactor | None = None,
    reconnect_for: float = 300.0,
    simulated: bool = False,
    role: str = "",
    accept_fingerprint: str = "",
) -> _Connecting:
    """Connect to one host: ``host = await connect("gb300-01")`` or ``async with connect(...) as host``.

    ``simulated=True`` marks the host (and its ``HostConnected``) as the embedded simulated host;
    ``role`` (``head``/``worker``) is recorded in ``HostConnected`` so a replay knows the node's part.
    ``accept_fingerprint`` accepts an unknown host key only if it is exactly that one (the key
    an operator was shown); any other key fails with :class:`HostKeyChanged`, nothing written.

    Raises (on await):
        HostKeyUnknown, HostKeyChanged, AuthFailed, HostUnreachable: one actionable line each.
    """
    t = parse_target(target) if isinstance(target, str) else target
    for key in identity:
        if not os.path.isfile(os.path.expanduser(key)):
            raise UsageError(f"{key}: identity file not found")
    host = SshHost(
        resolve(t, ssh_config),
        alias=alias,
        identity=identity,
        known_hosts=known_hosts,
        accept_new_host_key=accept_new_host_key,
        ssh_config=ssh_config,
        connect_timeout=connect_timeout,
        emit=emit,
        redactor=redactor,
        reconnect_for=reconnect_for,
        simulated=simulated,
        role=role,
        accept_fingerprint=accept_fingerprint,
    )
    return _Connecting(host)


async def connect_group(spec: str | Sequence[Target], *, return_exceptions: bool = False, **kwargs: Any) -> list[Any]:
    """Connect to every host of a group (``"a,b"``) concurrently, one connection each.

    With ``return_exceptions`` a host that fails yields its :class:`HostError` in its place;
    otherwise the first failure closes the others and is raised.
    """
    targets = parse_group(spec) if isinstance(spec, str) else list(spec)
    results = await asyncio.gather(*(connect(t, **kwargs) for t in targets), return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors and not return_exceptions:
        await asyncio.gather(*(r.close() for r in results if isinstance(r, SshHost)))
        raise errors[0]
    return list(results)

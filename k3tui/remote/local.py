"""``LocalHost``: the :class:`~k3tui.remote.base.Host` protocol on this machine.

For freezing a GPU host from itself (``k3tui freeze local``) and for tests. Commands run
through ``/bin/sh -c`` as asyncio subprocesses in their own process group, so a timeout
can kill the whole tree. Detached runs use the very same wrapper scripts as SSH
(:mod:`k3tui.remote.detached`), so what is tested here is what runs remotely.
Forwarding is the identity: the port or socket is already local.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import signal
import socket

from ..events import HostConnected, HostDisconnected
from ..redact import Redactor
from ._host import BaseHost
from .base import Emit


def end_subprocess(proc: asyncio.subprocess.Process) -> None:
    """End ``proc``'s process group and close its pipes now, while the event loop runs.

    For a task cancelled with its child still running (``asyncio.run`` cancels every task at
    Ctrl-C): asyncio's child watcher keeps the transport until the child exits, which can be
    after the loop closed; the transport is then closed by the garbage collector, which calls
    into the closed loop and prints ``Exception ignored … Event loop is closed`` on the
    operator's terminal. Closed here, it has nothing left to do then.
    """
    _kill_group(proc)
    transport = getattr(proc, "_transport", None)  # asyncio.subprocess.Process keeps it here (3.8-3.13)
    if transport is not None:
        transport.close()


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL ``proc``'s process group (its session: started with ``start_new_session``) if it runs."""
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class _LocalProc:
    """An asyncio subprocess seen through the :class:`~k3tui.remote._host.Proc` interface."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._p = proc

    async def read_out(self, n: int) -> bytes:
        assert self._p.stdout is not None
        return await self._p.stdout.read(n)

    async def read_err(self, n: int) -> bytes:
        assert self._p.stderr is not None
        return await self._p.stderr.read(n)

    async def wait(self) -> int | None:
        return await self._p.wait()

    def kill(self) -> None:
        _kill_group(self._p)

    async def unforward(self, local: int | str) -> None:
        """Nothing was forwarded."""

    async def close(self) -> None:
        if self._p.returncode is None:
            self.kill()
        try:
            await self._p.wait()
        finally:
            end_subprocess(self._p)


class LocalHost(BaseHost):
    """This machine as a host. ``async with LocalHost() as h: await h.run("uname -a")``."""

    def __init__(self, alias: str = "local", *, emit: Emit | None = None, redactor: Redactor | None = None) -> None:
        super().__init__(alias, emit, redactor)
        self.address = "local"
        self.user = getpass.getuser()
        self.fingerprint = ""
        self.clock_skew = 0.0

    async def __aenter__(self) -> LocalHost:
        self.emit(
            HostConnected(address=f"local:{socket.gethostname()}", user=self.user, clock_skew=0.0, role=self.role)
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _spawn(self, command: str, stdin: bytes | None) -> _LocalProc:
        proc = await asyncio.create_subprocess_shell(
            command,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        if stdin is not None:
            assert proc.stdin is not None
            proc.stdin.write(stdin)
            try:
                await proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                pass
            proc.stdin.close()
        return _LocalProc(proc)

    async def forward_port(self, remote_port: int, remote_host: str = "127.0.0.1") -> int:
        """Already local: returns ``remote_port`` itself."""
        return remote_port

    async def forward_unix(self, remote_path: str) -> str:
        """Already local: returns ``remote_path`` itself."""
        return remote_path

    async def unforward(self, local: int | str) -> None:
        """Nothing was forwarded."""

    async def close(self) -> None:
        """Nothing to close; recorded for symmetry with remote hosts."""
        self.emit(HostDisconnected(reason="closed"))

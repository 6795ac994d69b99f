"""The one interface every transport implements (SSH, simulated, local).

A deployment is a group of hosts; each host is one ``Host`` object (one SSH connection,
many channels). Commands run through :meth:`Host.run` are recorded as events when the
host was given an ``emit`` callable (``CommandSent`` → ``Output`` → ``CommandExited``).
Probes never raise for a failing command: they get a :class:`RunResult` with a status
and an error, so a freeze can record "unknown" and move on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

Emit = Callable[[Any], Any]
"""Records an event (usually ``Recorder.emit``); returns the event as recorded."""


@dataclass
class RunResult:
    """What one command did."""

    command: str
    stdout: str = ""
    stderr: str = ""
    status: int | None = None
    duration: float = 0.0
    timed_out: bool = False
    error: str = ""
    """Why the command could not run or finish (timeout, channel failure …); "" if it ran."""

    @property
    def ok(self) -> bool:
        """Ran to completion with exit status 0."""
        return self.status == 0 and not self.timed_out and not self.error


@dataclass(frozen=True)
class Link:
    """The link to a host as measured at connect (:meth:`k3tui.remote.ssh.SshHost.open`).

    Probe timeouts are scaled to it (:func:`k3tui.scene.probes.timeout_for`); a transport
    without one (this machine, a capture) keeps the probes' own timeouts.
    """

    rtt: float
    """Seconds for one SSH round trip (the fastest of a few, answered by the server's transport, no process)."""
    throughput: float | None = None
    """Bytes per second towards the host, estimated from a small transfer (None: not measured)."""


@dataclass
class RunHandle:
    """A detached run on a host: its process outlives the SSH connection."""

    run_id: str
    run_dir: str
    """Per-run directory on the host: ``cmd``, ``env``, ``pid``, ``log``, ``exit``."""
    pid: int | None = None
    command: str = ""
    offset: int = 0
    """Bytes of ``log`` already delivered as whole lines by ``tail`` (resume point)."""


@runtime_checkable
class Host(Protocol):
    """A host k3tui can probe and run things on."""

    alias: str
    simulated: bool

    async def run(
        self, command: str, *, timeout: float = 30.0, purpose: str = "", stdin: str | None = None
    ) -> RunResult:
        """Run a command to completion (never raises for a non-zero status or a timeout)."""
        ...

    async def start_detached(
        self, command: str, *, run_id: str, env: dict[str, str] | None = None, cwd: str | None = None
    ) -> RunHandle:
        """Start a long process detached on the host, output to ``run_dir/log``."""
        ...

    def tail(self, handle: RunHandle, offset: int = 0) -> AsyncIterator[str]:
        """Yield the run's log as whole lines from byte ``offset``, reconnecting as needed, until the run exits."""
        ...

    async def run_status(self, handle: RunHandle) -> int | None:
        """The run's exit status, or None while it runs."""
        ...

    async def stop(self, handle: RunHandle, grace: float = 10.0) -> int | None:
        """Stop a detached run (TERM, then KILL after ``grace`` seconds); returns its status."""
        ...

    async def forward_port(self, remote_port: int, remote_host: str = "127.0.0.1") -> int:
        """Forward a local loopback port to ``remote_host:remote_port`` on the host; returns the local port."""
        ...

    async def forward_unix(self, remote_path: str) -> str:
        """Forward a local unix socket to a remote one (``/var/run/docker.sock``); returns the local path."""
        ...

    async def close(self) -> None:
        """Close the connection (detached runs keep running)."""
        ...

"""Targets: ``[user@]host[:port]``, an ``~/.ssh/config`` alias, or a group ``a,b``.

A deployment is a group of hosts (two 4-GPU GB300 trays, or one 8-GPU server), so a
target string always parses to a *list*; a single host is a group of one. Each target
keeps the name the operator typed as its **alias** — the tag on every event about that
host — and is resolved against the ssh config (HostName, User, Port, IdentityFile,
ProxyJump, UserKnownHostsFile) the way OpenSSH would, so ``k3tui connect gb300-01`` reaches
what ``ssh gb300-01`` reaches.
"""

from __future__ import annotations

import getpass
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError

DEFAULT_SSH_CONFIG = "~/.ssh/config"
DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"

_TARGET = re.compile(
    r"^(?:(?P<user>[^@\s]+)@)?(?:\[(?P<v6>[0-9A-Fa-f:.%\w]+)\]|(?P<host>[^:@\s\[\],]+))(?::(?P<port>\d{1,5}))?$"
)


@dataclass(frozen=True)
class Target:
    """One host as the operator named it."""

    host: str
    """Host name, address or ssh-config alias, as typed."""
    user: str | None = None
    port: int | None = None
    alias: str = ""
    """The event tag for this host (``host`` or ``host:port``) unless set explicitly."""

    def __post_init__(self) -> None:
        if not self.alias:
            object.__setattr__(self, "alias", f"{self.host}:{self.port}" if self.port else self.host)

    def __str__(self) -> str:
        user = f"{self.user}@" if self.user else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{user}{host}:{self.port}" if self.port else f"{user}{host}"


@dataclass(frozen=True)
class Resolved:
    """A target after the ssh config has had its say."""

    target: Target
    hostname: str
    port: int
    user: str
    identity_files: tuple[str, ...] = ()
    proxy_jump: str | None = None
    known_hosts_files: tuple[str, ...] = field(default_factory=tuple)

    @property
    def address(self) -> str:
        """``host:port`` as connected to."""
        host = f"[{self.hostname}]" if ":" in self.hostname else self.hostname
        return f"{host}:{self.port}"


def parse_target(spec: str) -> Target:
    """Parse ``[user@]host[:port]`` (IPv6 as ``[addr]:port``).

    Raises:
        UsageError: the string is not a target.
    """
    m = _TARGET.match(spec.strip())
    if not m:
        raise UsageError(f"not a target: {spec!r} (expected [user@]host[:port] or an ssh config alias)")
    port = int(m["port"]) if m["port"] else None
    if port is not None and not 0 < port < 65536:
        raise UsageError(f"port out of range in target {spec!r}")
    return Target(host=m["v6"] or m["host"], user=m["user"], port=port)


def parse_group(spec: str) -> list[Target]:
    """Parse ``a,b,c`` into targets with distinct aliases (a single host is a group of one)."""
    parts = [s.strip() for s in spec.split(",")]
    if not any(parts):
        raise UsageError("no target given")
    if not all(parts):
        raise UsageError(f"empty host name in target group {spec!r}")
    targets = [parse_target(p) for p in parts]
    seen: set[str] = set()
    for t in targets:
        if t.alias in seen:
            raise UsageError(f"host {t.alias} appears twice in {spec!r}")
        seen.add(t.alias)
    return targets


def config_paths(ssh_config: str | None) -> list[str]:
    """The ssh config files to read: the given one, else ``~/.ssh/config`` if it exists."""
    if ssh_config:
        path = Path(ssh_config).expanduser()
        if not path.is_file():
            raise UsageError(f"{ssh_config}: no such ssh config file")
        return [str(path)]
    default = Path(DEFAULT_SSH_CONFIG).expanduser()
    return [str(default)] if default.is_file() else []


def resolve(target: Target, ssh_config: str | None = None) -> Resolved:
    """Apply the ssh config to a target (explicit user/port in the target win)."""
    from asyncssh.config import SSHClientConfig

    local_user = getpass.getuser()
    paths = config_paths(ssh_config)
    cfg = SSHClientConfig.load(
        None, paths, False, False, False, local_user, target.user or (), target.host, target.port or ()
    )
    jump = cfg.get("ProxyJump")
    return Resolved(
        target=target,
        hostname=str(cfg.get("Hostname") or target.host),
        port=int(target.port or str(cfg.get("Port") or 22)),
        user=str(target.user or cfg.get("User") or local_user),
        identity_files=_paths(cfg.get("IdentityFile")),
        proxy_jump=str(jump) if jump and jump != "none" else None,
        known_hosts_files=_paths(cfg.get("UserKnownHostsFile")),
    )


def _paths(value: object) -> tuple[str, ...]:
    items = value if isinstance(value, (list, tuple)) else ([value] if value else [])
    return tuple(os.path.expanduser(str(p)) for p in items)

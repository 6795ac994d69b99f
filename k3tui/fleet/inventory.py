"""Inventory files: named groups of hosts (one deployment each) with their SSH options and roles.

Why a file: a production fleet runs many deployments, each a group of hosts (two 4-GPU
GB300 trays, or one 8-GPU server), and typing ``a,b`` with per-host keys and ports does
not scale to 64 hosts. The inventory says, once, which hosts make a deployment, which of
them is the **head** node (where the API server starts, ``--node-rank 0``) and which are
**workers**, and how to reach each one::

    [defaults]                      # optional: SSH options for every host
    user = "ops"
    identity = "~/.ssh/k3"          # a path or a list of paths
    known_hosts = "~/.ssh/known_hosts"

    [groups.k3-a]
    description = "Kimi K3 on two NVL72 trays"
    profile = "kimi-k3"             # optional: the profile `check`/`ladder` use
    master_addr = "192.168.50.11"   # optional: the head on the cluster network (ladder --multinode)
    master_port = 29501             # optional (both override the profile's [launch.multinode] defaults)
    user = "root"                   # optional: overrides [defaults] for this group

    [[groups.k3-a.hosts]]
    name = "tray01"                 # the alias: the tag on every event about this host
    address = "10.1.0.11"           # default: name (resolved through ~/.ssh/config)
    role = "head"

    [[groups.k3-a.hosts]]
    name = "tray02"
    address = "10.1.0.12"
    port = 2222
    role = "worker"

Host options override group options, which override ``[defaults]``. Without any
``role`` the first host is the head. Decoded strictly (msgspec ``forbid_unknown_fields``):
a typo (``rol = "head"``) is an :class:`InventoryError` naming the key and where it is,
never a silently ignored option.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import msgspec

from ..errors import ProfileError
from ..profile import read_toml
from ..remote.target import Target

ROLES = ("head", "worker")


class InventoryError(ProfileError):
    """The inventory file is missing, not TOML, or not a valid inventory."""


class _Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class SshOptions(_Strict, kw_only=True):
    """SSH options settable at every level (defaults, group, host)."""

    user: str | None = None
    port: int | None = None
    identity: str | list[str] | None = None
    """Private key file(s)."""
    known_hosts: str | None = None
    connect_timeout: float | None = None


class HostEntry(SshOptions, kw_only=True):
    name: str
    """The alias (event tag, what tables and messages call the host)."""
    address: str | None = None
    """Host name, address or ssh-config alias to connect to (default: ``name``)."""
    role: str | None = None
    """``head`` or ``worker``."""


class GroupEntry(SshOptions, kw_only=True):
    description: str = ""
    profile: str | None = None
    master_addr: str | None = None
    """The head's address on the cluster network, for ``--master-addr`` (default: the head's SSH address)."""
    master_port: int | None = None
    """The head's port for the other nodes (``--master-port``)."""
    hosts: list[HostEntry] = []


class InventoryFile(_Strict, kw_only=True):
    defaults: SshOptions = msgspec.field(default_factory=SshOptions)
    groups: dict[str, GroupEntry] = {}


@dataclass(frozen=True)
class Node:
    """One host of a deployment, with everything needed to reach it."""

    alias: str
    target: Target
    role: str
    identity: tuple[str, ...] = ()
    known_hosts: str | None = None
    connect_timeout: float | None = None
    group: str = ""

    @property
    def is_head(self) -> bool:
        return self.role == "head"

    def connect_kwargs(self) -> dict[str, object]:
        """Arguments for :func:`k3tui.remote.ssh.connect` (``target`` included)."""
        kw: dict[str, object] = {"target": self.target, "alias": self.alias, "identity": list(self.identity)}
        kw["role"] = self.role
        if self.known_hosts:
            kw["known_hosts"] = self.known_hosts
        if self.connect_timeout is not None:
            kw["connect_timeout"] = self.connect_timeout
        return kw


@dataclass(frozen=True)
class Group:
    name: str
    nodes: tuple[Node, ...]
    description: str = ""
    profile: str | None = None
    master_addr: str | None = None
    master_port: int | None = None

    @property
    def head(self) -> Node:
        return next(n for n in self.nodes if n.is_head)

    @property
    def workers(self) -> list[Node]:
        return [n for n in self.nodes if not n.is_head]


@dataclass(frozen=True)
class Inventory:
    path: str
    groups: dict[str, Group]

    def select(self, spec: str | None) -> list[Node]:
        """The nodes of group ``spec`` (``a,b`` joins groups; their aliases must not collide).

        Raises:
            InventoryError: no such group, or two selected groups share an alias.
        """
        if not spec:
            if len(self.groups) == 1:
                return list(next(iter(self.groups.values())).nodes)
            raise InventoryError(f"{self.path} has {len(self.groups)} groups: pick one with --group ({self._names()})")
        out: list[Node] = []
        seen: dict[str, str] = {}
        for name in (s.strip() for s in spec.split(",")):
            if name not in self.groups:
                raise InventoryError(f"no group {name!r} in {self.path}: groups are {self._names()}")
            for n in self.groups[name].nodes:
                if n.alias in seen:
                    raise InventoryError(f"host {n.alias} is in both group {seen[n.alias]} and group {name}")
                seen[n.alias] = name
                out.append(n)
        return out

    def group(self, name: str) -> Group:
        if name not in self.groups:
            raise InventoryError(f"no group {name!r} in {self.path}: groups are {self._names()}")
        return self.groups[name]

    def _names(self) -> str:
        return ", ".join(self.groups) or "none"


def load_inventory(path: str | os.PathLike[str]) -> Inventory:
    """Read and validate an inventory file.

    Raises:
        InventoryError: one line naming the file and what is wrong.
    """
    raw = read_toml(Path(path).expanduser(), "inventory", InventoryError, missing=f"inventory {path}: no such file")
    return parse_inventory(raw, str(path))


def parse_inventory(raw: dict, where: str = "<inventory>") -> Inventory:
    """Validate an already-parsed TOML table as an inventory."""
    try:
        f = msgspec.convert({**raw, "groups": {}}, InventoryFile)
        groups_raw = msgspec.convert(raw.get("groups", {}), dict[str, dict])
    except msgspec.ValidationError as exc:
        raise InventoryError(f"inventory {where}: {exc}") from None
    for name, g in groups_raw.items():
        try:
            f.groups[name] = msgspec.convert(g, GroupEntry)
        except msgspec.ValidationError as exc:
            msg = str(exc).replace("- at `$", f"- at `groups.{name}")
            raise InventoryError(f"inventory {where}: {msg}") from None
    if not f.groups:
        raise InventoryError(f"inventory {where}: no [groups.NAME] table (a group is one deployment's hosts)")
    groups = {name: _group(name, g, f.defaults, where) for name, g in f.groups.items()}
    return Inventory(where, groups)


def _group(name: str, g: GroupEntry, defaults: SshOptions, where: str) -> Group:
    at = f"inventory {where}: group {name}"
    if not g.hosts:
        raise InventoryError(f"{at}: no hosts (add [[groups.{name}.hosts]] entries)")
    roles = [h.role for h in g.hosts]
    bad = [r for r in roles if r is not None and r not in ROLES]
    if bad:
        raise InventoryError(f"{at}: role {bad[0]!r} is not one of {', '.join(ROLES)}")
    heads = [h.name for h in g.hosts if h.role == "head"]
    if len(heads) > 1:
        raise InventoryError(f"{at}: {len(heads)} head nodes ({', '.join(heads)}); a deployment has one head")
    seen: set[str] = set()
    nodes = []
    for i, h in enumerate(g.hosts):
        if not h.name.strip() or any(c in h.name for c in " ,\t"):
            raise InventoryError(f"{at}: host name {h.name!r} must be one word (no spaces or commas)")
        if h.name in seen:
            raise InventoryError(f"{at}: host {h.name} appears twice")
        seen.add(h.name)
        role = h.role or ("head" if not heads and i == 0 else "worker")
        nodes.append(_node(name, h, g, defaults, role, at))
    if g.master_port is not None and not 0 < g.master_port < 65536:
        raise InventoryError(f"{at}: master_port {g.master_port} out of range")
    return Group(name, tuple(nodes), g.description, g.profile, g.master_addr, g.master_port)


def _pick(attr: str, *levels: SshOptions) -> object:
    for level in levels:
        v = getattr(level, attr)
        if v is not None:
            return v
    return None


def _node(group: str, h: HostEntry, g: GroupEntry, d: SshOptions, role: str, at: str) -> Node:
    port = _pick("port", h, g, d)
    if port is not None and not 0 < int(port) < 65536:  # type: ignore[call-overload]
        raise InventoryError(f"{at}: host {h.name}: port {port} out of range")
    identity = _pick("identity", h, g, d)
    keys = [identity] if isinstance(identity, str) else list(identity or [])  # type: ignore[call-overload]
    known = _pick("known_hosts", h, g, d)
    timeout = _pick("connect_timeout", h, g, d)
    address = (h.address or h.name).strip()
    if not address:
        raise InventoryError(f"{at}: host {h.name}: empty address")
    target = Target(host=address, user=_pick("user", h, g, d), port=port, alias=h.name)  # type: ignore[arg-type]
    return Node(
        alias=h.name,
        target=target,
        role=role,
        identity=tuple(os.path.expanduser(k) for k in keys),
        known_hosts=os.path.expanduser(str(known)) if known else None,
        connect_timeout=float(timeout) if timeout is not None else None,  # type: ignore[arg-type]
        group=group,
    )


def nodes_from_group_spec(spec: str) -> list[Node]:
    """``a,b`` as nodes (the first is the head) — the same shape an inventory gives."""
    from ..remote.target import parse_group

    return [Node(alias=t.alias, target=t, role="head" if i == 0 else "worker") for i, t in enumerate(parse_group(spec))]

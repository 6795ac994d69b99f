"""Inventory files: strict decoding, option precedence, roles, one-line errors (issue 9)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from k3tui.errors import ProfileError
from k3tui.fleet.inventory import InventoryError, load_inventory

GOOD = """
[defaults]
user = "ops"
identity = "~/.ssh/k3"
known_hosts = "/etc/k3/known_hosts"

[groups.k3-a]
description = "two NVL72 trays"
profile = "kimi-k3"
port = 2222
master_addr = "192.168.50.12"
master_port = 29600

[[groups.k3-a.hosts]]
name = "tray01"
address = "10.1.0.11"

[[groups.k3-a.hosts]]
name = "tray02"
address = "10.1.0.12"
role = "head"
user = "root"
port = 22
identity = ["/keys/a", "/keys/b"]

[groups.k3-b]
[[groups.k3-b.hosts]]
name = "srv01"
"""


def _inv(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "inv.toml"
    p.write_text(text)
    return p


def test_options_fall_from_host_to_group_to_defaults_and_roles_are_kept(tmp_path: Path) -> None:
    inv = load_inventory(_inv(tmp_path, GOOD))
    a = inv.group("k3-a")
    assert a.head.alias == "tray02" and [w.alias for w in a.workers] == ["tray01"]
    t1, t2 = a.nodes
    assert (t1.target.host, t1.target.user, t1.target.port) == ("10.1.0.11", "ops", 2222)
    assert (t2.target.user, t2.target.port, t2.identity) == ("root", 22, ("/keys/a", "/keys/b"))
    assert t1.identity == (str(Path("~/.ssh/k3").expanduser()),) and t1.known_hosts == "/etc/k3/known_hosts"
    assert a.profile == "kimi-k3" and (a.master_addr, a.master_port) == ("192.168.50.12", 29600)
    # without any role the first host is the head; a host's alias is its name, address defaults to it
    (srv,) = inv.select("k3-b")
    assert srv.role == "head" and srv.target.host == "srv01" and srv.alias == "srv01"
    assert [n.alias for n in inv.select("k3-a,k3-b")] == ["tray01", "tray02", "srv01"]
    kw = t1.connect_kwargs()
    assert kw["alias"] == "tray01" and kw["known_hosts"] == "/etc/k3/known_hosts"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('[groups.g]\n[[groups.g.hosts]]\nname = "a"\nrol = "head"\n', "unknown field `rol` - at `groups.g.hosts[0]`"),
        ('[groups.g]\n[[groups.g.hosts]]\nname = "a"\nport = "22"\n', "Expected `int | null`, got `str`"),
        ("[groups.g]\n", "group g: no hosts"),
        ('[default]\nuser = "x"\n', "unknown field `default`"),
        ('[defaults]\nuser = "x"\n', "no [groups.NAME] table"),
        ('[groups.g]\n[[groups.g.hosts]]\nname = "a"\nrole = "leader"\n', "role 'leader' is not one of head, worker"),
        (
            '[groups.g]\n[[groups.g.hosts]]\nname = "a"\nrole = "head"\n[[groups.g.hosts]]\nname = "b"\nrole = "head"\n',
            "2 head nodes (a, b)",
        ),
        ('[groups.g]\n[[groups.g.hosts]]\nname = "a"\n[[groups.g.hosts]]\nname = "a"\n', "host a appears twice"),
        ('[groups.g]\n[[groups.g.hosts]]\nname = "a,b"\n', "must be one word"),
        ('[groups.g]\n[[groups.g.hosts]]\nname = "a"\nport = 70000\n', "port 70000 out of range"),
        ("[groups.g\n", "not valid TOML"),
        ('[groups.g]\nhosts = "a,b"\n', "Expected `array`, got `str` - at `groups.g.hosts`"),
    ],
)
def test_invalid_inventories_are_one_line_errors_naming_the_problem(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(InventoryError) as exc:
        load_inventory(_inv(tmp_path, text))
    msg = str(exc.value)
    assert says in msg and "\n" not in msg and str(tmp_path / "inv.toml") in msg
    assert isinstance(exc.value, ProfileError)


def test_selecting_groups(tmp_path: Path) -> None:
    inv = load_inventory(_inv(tmp_path, GOOD))
    with pytest.raises(InventoryError, match="no group 'k3-c' in .*: groups are k3-a, k3-b"):
        inv.select("k3-c")
    with pytest.raises(InventoryError, match="has 2 groups: pick one with --group"):
        inv.select(None)
    dup = GOOD + '[groups.k3-c]\n[[groups.k3-c.hosts]]\nname = "tray01"\n'
    with pytest.raises(InventoryError, match="host tray01 is in both group k3-a and group k3-c"):
        load_inventory(_inv(tmp_path, dup)).select("k3-a,k3-c")
    with pytest.raises(InventoryError, match="no such file"):
        load_inventory(tmp_path / "missing.toml")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "k3tui.cli", *args], capture_output=True, text=True, timeout=60)


def test_cli_refuses_bad_inventory_use_in_one_line(tmp_path: Path) -> None:
    r = _cli("freeze", "--group", "k3-a")
    assert r.returncode == 2 and "add --inventory FILE" in r.stderr and r.stderr.strip().count("\n") == 0
    r = _cli("freeze")
    assert r.returncode == 2 and "no target" in r.stderr
    bad = _inv(tmp_path, '[groups.g]\n[[groups.g.hosts]]\nname = "a"\nrol = "head"\n')
    r = _cli("check", "--inventory", str(bad), "--group", "g")
    assert r.returncode == 2 and "unknown field `rol`" in r.stderr and r.stderr.strip().count("\n") == 0
    good = _inv(tmp_path, GOOD)
    r = _cli("freeze", "--inventory", str(good), "--group", "nope")
    assert r.returncode == 2 and "no group 'nope'" in r.stderr
    r = _cli("freeze", "--inventory", str(good), "--group", "k3-a", "tray09")
    assert r.returncode == 2 and "tray09: not a host of" in r.stderr


def test_the_inventory_group_overrides_the_profiles_multinode_defaults(tmp_path: Path) -> None:
    import argparse

    from k3tui.fleet.cli import multinode_engine_for
    from k3tui.profile import load_profile

    class _Host:
        simulated, resolved = True, None

        def __init__(self, alias: str) -> None:
            self.alias = alias

    inv = _inv(tmp_path, GOOD)
    hosts = [_Host("tray02"), _Host("tray01")]
    profile = load_profile("kimi-k3")
    args = argparse.Namespace(inventory=str(inv), group="k3-a", multinode=True, multinode_mode=None)
    engine = multinode_engine_for(args)(hosts, profile, lambda e: e, events=[])
    assert (engine.mode, engine.master_addr, engine.master_port) == ("vllm", "192.168.50.12", 29600)
    assert engine.ray_port == profile.launch.multinode.ray_port == 6379
    # a group without master_addr/port: the profile's defaults (and the head's SSH address); the mode from the CLI
    args = argparse.Namespace(inventory=str(inv), group="k3-b", multinode=False, multinode_mode="ray")
    engine = multinode_engine_for(args)([_Host("srv01")], profile, lambda e: e, events=[])
    assert (engine.mode, engine.master_port, engine.master_addr) == ("ray", 29501, "127.0.0.1")
    assert engine.mode_from == "the command line"

"""Roles (head/worker) are recorded where a deployment's hosts connect, and replay shows them (issue 9).

Recordings are made for real: ``k3tui demo`` over two simulated trays, ``k3tui connect``
and ``k3tui freeze`` over two REAL OpenSSH servers on loopback, a fleet freeze through an
inventory; then ``k3tui replay --headless`` and ``k3tui cat`` read them back. Recordings
from before roles (the committed demo samples, a role-less two-tray session) still replay,
with the aliases alone.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from k3tui.driver import group_connector
from k3tui.events import HostConnected
from k3tui.fleet.replay import node_logs_from_events
from k3tui.reader import read_all
from k3tui.sim import SimHost
from k3tui.sim.scenario import host_list, info_of, load_raw

from .test_multinode_sim import write_inventory
from .ui_recordings import write_two_hosts

RECORDINGS = Path(__file__).resolve().parent.parent / "recordings"


def k3(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "k3tui.cli", *args], capture_output=True, text=True, timeout=timeout)


def roles_in(path: Path) -> dict[str, str]:
    _, events = read_all(path)
    return {e.host: e.role for e in events if isinstance(e, HostConnected)}


@pytest.fixture(scope="module")
def two_trays(tmp_path_factory) -> Path:
    """``k3tui demo`` over the two simulated trays of multinode-worker-nccl (baseline, then minimal)."""
    path = tmp_path_factory.mktemp("demo") / "trays.k3rec"
    r = k3("demo", "--scenario", "multinode-worker-nccl", "--headless", "--rung", "baseline", "--rung", "minimal",
           "--record", str(path))  # fmt: skip
    assert r.returncode == 0, r.stderr
    return path


def test_the_simulated_demo_records_each_trays_role_from_its_scenario(two_trays):
    hosts = host_list(load_raw("multinode-worker-nccl"))
    # SimHost(node=i) is reached as gb300-sim (node 0) / gb300-sim-N: the scenario's role of each node
    want = {("gb300-sim" if i == 0 else f"gb300-sim-{i}"): h["role"] for i, h in enumerate(hosts)}
    assert sorted(want.values()) == ["head", "worker"]
    assert roles_in(two_trays) == want


def test_replay_headless_and_cat_show_the_roles(two_trays):
    roles = roles_in(two_trays)
    head = next(a for a, r in roles.items() if r == "head")
    worker = next(a for a, r in roles.items() if r == "worker")
    r = k3("replay", str(two_trays), "--headless")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(ln.startswith(f"host {head} · head  127.0.0.1:") for ln in lines), r.stdout
    assert any(ln.startswith(f"host {worker} · worker  127.0.0.1:") for ln in lines), r.stdout
    # the root exception is on the worker tray (the head only reports the consequence), named with its role
    expected = info_of(load_raw("multinode-worker-nccl"))
    first = next(ln for ln in lines if ln.startswith("first root exception"))
    assert f" on {worker} · worker (run " in first and expected.expected_exception in first
    assert lines[-1].startswith(f"result: stage={expected.expected_stage} ")
    assert any(ln.startswith("run ") and f"on {head} · head:" in ln for ln in lines)

    c = k3("cat", str(two_trays), "--kind", "host_connected", "--kind", "exception_found")
    assert c.returncode == 0, c.stderr
    said = c.stdout.splitlines()[1:]
    assert any(f" {head} · head host_connected " in ln for ln in said), c.stdout
    assert any(f" {worker} · worker host_connected " in ln for ln in said), c.stdout
    assert any(f" {worker} · worker exception_found " in ln for ln in said), c.stdout


def test_recordings_from_before_roles_still_replay_without_roles(tmp_path):
    sample = RECORDINGS / "demo-nccl-init.k3rec"
    assert set(roles_in(sample).values()) == {""}, "the committed samples predate roles"
    r = k3("replay", str(sample), "--headless")
    # issue 16: a recording from before seals replays, its end reported as not proven (and nothing else)
    assert r.returncode == 0 and all("not closed" in ln for ln in r.stderr.splitlines()), r.stderr
    hosts = [ln for ln in r.stdout.splitlines() if ln.startswith("host ")]
    assert hosts and not any(" · " in ln for ln in hosts)
    assert r.stdout.splitlines()[-1].startswith(f"result: stage={info_of(load_raw('nccl-init')).expected_stage} ")
    c = k3("cat", str(sample))
    assert c.returncode == 0 and " · head" not in c.stdout and " · worker" not in c.stdout

    old = write_two_hosts(tmp_path / "old.k3rec", roles=False)
    r = k3("replay", str(old), "--headless")
    assert r.returncode == 0, r.stderr
    assert "host tray-a  10.0.0.1:22 user=oncall" in r.stdout and "host tray-b  10.0.0.2:22" in r.stdout
    assert " on tray-b (run rb): ERROR RuntimeError: NCCL error" in r.stdout
    assert " · " not in "".join(ln for ln in r.stdout.splitlines() if not ln.startswith("#"))
    # the same session with roles says them
    new = k3("replay", str(write_two_hosts(tmp_path / "new.k3rec")), "--headless")
    assert "host tray-a · head  10.0.0.1:22" in new.stdout and " on tray-b · worker (run rb)" in new.stdout


async def test_a_fleet_freeze_records_the_inventorys_roles_and_its_replay_names_the_worker(tmp_path):
    # node 0 of the scenario is the worker tray; the inventory lists the head second, so the
    # roles must come from the inventory, not from the order
    async with AsyncExitStack() as stack:
        sims = [await stack.enter_async_context(SimHost(scenario="multinode-worker-nccl", node=i)) for i in range(2)]
        inv = write_inventory(tmp_path / "inv.toml", "k3", sims, ["worker-02", "head-01"], ["worker", "head"])
        rec = tmp_path / "fleet.k3rec"
        # the simulated nodes are served by this event loop: the CLI must not block it
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "k3tui.cli", "freeze", "--inventory", str(inv), "--group", "k3", "--record", str(rec),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    assert roles_in(rec) == {"worker-02": "worker", "head-01": "head"}
    _, events = read_all(rec)
    assert {n.alias: n.role for n in node_logs_from_events(events)} == {"worker-02": "worker", "head-01": "head"}
    h = k3("replay", str(rec), "--headless")
    assert h.returncode == 0, h.stderr
    assert "deployment: first root exception on worker-02 · worker at " in h.stdout
    assert "  head-01 · head: no root exception of its own (consequences only)" in h.stdout


# --- real sshd nodes -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pair(sshd, sshd_factory, tmp_path_factory):  # noqa: ANN001, ANN201
    """Two real sshd servers and one known_hosts file that knows both."""
    b = sshd_factory("roles-b")
    kh = tmp_path_factory.mktemp("kh") / "known_hosts"
    kh.write_text(Path(sshd.known_hosts).read_text() + Path(b.known_hosts).read_text())
    return sshd, b, kh


def _ssh_args(pair) -> list[str]:  # noqa: ANN001
    a, b, kh = pair
    return ["-i", str(a.key_path), "-i", str(b.key_path), "--known-hosts", str(kh), "--connect-timeout", "10"]


@pytest.mark.sshd
def test_connect_to_two_real_sshd_nodes_records_head_then_worker(pair, tmp_path):  # noqa: ANN001
    a, b, _ = pair
    rec = tmp_path / "connect.k3rec"
    r = k3("connect", f"{a.target},{b.target}", *_ssh_args(pair), "--run", "echo hi", "--record", str(rec))
    assert r.returncode == 0, r.stderr
    head, worker = f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"
    assert roles_in(rec) == {head: "head", worker: "worker"}
    h = k3("replay", str(rec), "--headless")
    assert f"host {head} · head  127.0.0.1:{a.port} user={a.user}" in h.stdout, h.stdout
    assert f"host {worker} · worker  127.0.0.1:{b.port} user={b.user}" in h.stdout, h.stdout
    c = k3("cat", str(rec), "--kind", "command_sent")
    assert f" {head} · head command_sent " in c.stdout and f" {worker} · worker command_sent " in c.stdout

    # one host is not a deployment: no role
    one = tmp_path / "one.k3rec"
    r = k3("connect", a.target, *_ssh_args(pair), "--record", str(one))
    assert r.returncode == 0, r.stderr
    assert roles_in(one) == {head: ""}
    assert " · " not in k3("cat", str(one)).stdout.split("\n", 1)[1]


@pytest.mark.sshd
def test_freezing_a_group_of_real_sshd_nodes_records_the_roles(pair, tmp_path):  # noqa: ANN001
    a, b, _ = pair
    rec = tmp_path / "freeze.k3rec"
    r = k3("freeze", f"{a.target},{b.target}", *_ssh_args(pair), "--docker-socket", "", "--record", str(rec))
    assert rec.exists(), r.stderr
    assert roles_in(rec) == {f"127.0.0.1:{a.port}": "head", f"127.0.0.1:{b.port}": "worker"}


@pytest.mark.sshd
async def test_the_live_drivers_group_connector_sets_the_roles(pair):  # noqa: ANN001
    a, b, kh = pair
    kw = {"identity": [str(a.key_path), str(b.key_path)], "known_hosts": str(kh)}
    events: list = []
    hosts = await group_connector(f"{b.target},{a.target}", **kw)(events.append)
    try:
        assert [(h.alias, h.role) for h in hosts] == [
            (f"127.0.0.1:{b.port}", "head"),
            (f"127.0.0.1:{a.port}", "worker"),
        ]
        recorded = sorted((e.host, e.role) for e in events if isinstance(e, HostConnected))
        assert recorded == sorted((h.alias, h.role) for h in hosts)
    finally:
        for h in hosts:
            await h.close()
    single = await group_connector(a.target, **kw)(events.append)
    try:
        assert [h.role for h in single] == [""]
    finally:
        await single[0].close()


@pytest.mark.sshd
async def test_the_ladders_hosts_of_a_group_are_opened_head_first_with_roles(pair):  # noqa: ANN001
    """``k3tui ladder a,b`` (and every command that opens a group's hosts) records the roles."""
    import argparse

    from k3tui.scene.session import open_hosts

    a, b, kh = pair
    args = argparse.Namespace(
        target=f"{a.target},{b.target}", inventory=None, group=None, identity=[str(a.key_path), str(b.key_path)],
        known_hosts=str(kh), accept_new_host_key=False, ssh_config=None, connect_timeout=10.0,
    )  # fmt: skip
    events: list = []
    async with open_hosts(args, events.append) as (hosts, errors):
        assert errors == {} and [(h.alias, h.role) for h in hosts] == [
            (f"127.0.0.1:{a.port}", "head"),
            (f"127.0.0.1:{b.port}", "worker"),
        ]
    recorded = {e.host: e.role for e in events if isinstance(e, HostConnected)}
    assert recorded == {f"127.0.0.1:{a.port}": "head", f"127.0.0.1:{b.port}": "worker"}

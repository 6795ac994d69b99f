"""Fleet freeze against REAL OpenSSH servers on loopback standing for nodes (issue 9).

Three sshd instances (own port and host key each, reached through an inventory with a
known_hosts file per host), one port nobody listens on, and one listener that accepts
TCP and never speaks SSH (a hung host): the dead and hung hosts are rows, not failures.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from k3tui.events import HostConnected, HostDisconnected, SceneFrozen
from k3tui.fleet.freeze import freeze_fleet
from k3tui.fleet.inventory import load_inventory
from k3tui.reader import read_all

from .support.sshd import free_port

pytestmark = pytest.mark.sshd


def _inventory(path: Path, servers, extra: list[tuple[str, int]] = ()) -> Path:  # noqa: ANN001
    lines = ["[groups.fleet]", 'description = "real sshd nodes"']
    for i, s in enumerate(servers):
        lines += [
            "[[groups.fleet.hosts]]",
            f'name = "node{i}"',
            'address = "127.0.0.1"',
            f"port = {s.port}",
            f'user = "{s.user}"',
            f'identity = "{s.key_path}"',
            f'known_hosts = "{s.known_hosts}"',
            f'role = "{"head" if i == 0 else "worker"}"',
        ]
    for name, port in extra:
        lines += ["[[groups.fleet.hosts]]", f'name = "{name}"', 'address = "127.0.0.1"', f"port = {port}",
                  f'known_hosts = "{servers[0].known_hosts}"', f'identity = "{servers[0].key_path}"']  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def nodes(sshd, sshd_factory):  # noqa: ANN001, ANN201
    return [sshd, sshd_factory("fleet-b"), sshd_factory("fleet-c")]


def test_fleet_freeze_cli_reports_the_dead_host_and_freezes_the_rest(nodes, tmp_path: Path) -> None:  # noqa: ANN001
    dead = free_port()
    inv = _inventory(tmp_path / "inv.toml", nodes, [("dead", dead)])
    rec = tmp_path / "fleet.k3rec"
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "freeze", "--inventory", str(inv), "--group", "fleet",
         "--docker-socket", "", "--record", str(rec), "--connect-timeout", "5", "--concurrency", "2",
         "--host-timeout", "90"],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert r.returncode == 1, r.stderr  # one host unreachable: not fatal, but not a clean exit either
    assert "== fleet: 4 hosts, 3 frozen, 1 unreachable" in r.stdout
    assert f"UNREACHABLE dead: dead (127.0.0.1:{dead}): connection refused" in r.stdout
    progress = [ln for ln in r.stderr.splitlines() if ln.startswith("k3tui: [")]
    assert len(progress) == 4 and any("dead UNREACHABLE" in ln for ln in progress), r.stderr
    _, events = read_all(rec)
    skews = {e.host: e.clock_skew for e in events if isinstance(e, HostConnected)}
    assert set(skews) == {"node0", "node1", "node2"} and all(s is not None and abs(s) < 2 for s in skews.values())
    assert sorted(e.host for e in events if isinstance(e, SceneFrozen)) == ["node0", "node1", "node2"]
    assert "== clocks" not in r.stdout, "no container on these nodes: no logs to merge"
    assert "clock skew (host minus ours, at connect): largest" in r.stdout and "all within 1 s" in r.stdout


async def test_concurrency_is_bounded_and_a_hung_host_costs_only_its_timeout(nodes, tmp_path: Path) -> None:  # noqa: ANN001
    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(8)  # accepts TCP, never says a word of SSH
    try:
        inv = _inventory(tmp_path / "inv.toml", nodes, [("hung", hung.getsockname()[1])])
        events: list = []
        seen: list = []
        t0 = asyncio.get_running_loop().time()
        out = await freeze_fleet(
            load_inventory(inv).select("fleet"),
            emit=events.append,
            concurrency=2,
            connect_timeout=2.0,
            docker_socket=None,
            progress=lambda res, done, total: seen.append((res.alias, done, total)),
        )
        took = asyncio.get_running_loop().time() - t0
    finally:
        hung.close()
    assert [s.alias for s in out.scenes] == ["node0", "node1", "node2"]
    assert list(out.unreachable) == ["hung"] and "no answer within 2s" in out.unreachable["hung"]
    assert [d for _, d, _ in seen] == [1, 2, 3, 4] and {t for *_, t in seen} == {4}
    assert took < 30
    # never more than two connections open at once (whether two ever overlap here depends on how fast each
    # node's freeze is; that the bound is reached is shown with slow nodes below)
    open_now = peak = 0
    for e in events:
        if isinstance(e, HostConnected):
            open_now += 1
            peak = max(peak, open_now)
        elif isinstance(e, HostDisconnected) and e.reason == "closed":
            open_now -= 1
    assert 1 <= peak <= 2, peak


@pytest.mark.parametrize("concurrency", [1, 2, 3])
async def test_the_bound_is_reached_and_never_passed_when_nodes_are_slow(
    monkeypatch, tmp_path: Path, concurrency: int
) -> None:  # noqa: ANN001, E501
    """Each node's freeze is held 0.1 s (the SSH part is replaced: this is the scheduler's bound alone)."""
    import k3tui.fleet.freeze as fz

    inv = tmp_path / "inv.toml"
    inv.write_text(
        "[groups.g]\n" + "".join(f'[[groups.g.hosts]]\nname = "n{i}"\naddress = "10.0.0.{i}"\n' for i in range(7))
    )
    now = peak = 0

    async def slow(node, **_kw):  # noqa: ANN001, ANN202
        nonlocal now, peak
        now += 1
        peak = max(peak, now)
        await asyncio.sleep(0.1)
        now -= 1
        return fz.NodeResult(alias=node.alias, scene=None, error="held")

    monkeypatch.setattr(fz, "_freeze_node", slow)
    out = await fz.freeze_fleet(load_inventory(inv).select("g"), concurrency=concurrency)
    assert peak == concurrency and len(out.unreachable) == 7


def test_check_with_an_inventory_compares_the_nodes(nodes, tmp_path: Path) -> None:  # noqa: ANN001
    inv = _inventory(tmp_path / "inv.toml", nodes)
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "check", "--inventory", str(inv), "--group", "fleet", "--docker-socket", ""],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert "baseline of node0, node1, node2 against profile kimi-k3" in r.stdout, r.stdout + r.stderr
    assert "nodes-driver" in r.stdout and "gpus" in r.stdout
    assert r.returncode in (1, 2)  # loopback nodes have no GB300: never a PASS


def test_connect_with_an_inventory_runs_on_every_node(nodes, tmp_path: Path) -> None:  # noqa: ANN001
    inv = _inventory(tmp_path / "inv.toml", nodes)
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "connect", "--inventory", str(inv), "--group", "fleet", "--run", "echo hi"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    for i, s in enumerate(nodes):
        assert f"connected: node{i} 127.0.0.1:{s.port}" in r.stdout and f"[node{i}] hi" in r.stdout
    assert "clock-skew=unknown" not in r.stdout

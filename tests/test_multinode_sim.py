"""The simulated host as several nodes of one deployment (issue 9).

Each node is its own SimHost (its own SSH port, host key, client key and known_hosts),
reached through an inventory file that names them, so per-host SSH options are exercised.
Planted differences (``multinode-odd-node``) must be named by the comparison; a root
exception planted on the WORKER (``multinode-worker-nccl``) must be named as the
deployment's first failure even though the head only reports the consequence.
"""

from __future__ import annotations

import asyncio
import calendar
import json
import sys
from contextlib import AsyncExitStack
from pathlib import Path

from k3tui.events import HostConnected, Notice, SceneFrozen
from k3tui.fleet.cli import deployment_verdict, report
from k3tui.fleet.compare import differences, sentences
from k3tui.fleet.freeze import freeze_fleet
from k3tui.fleet.inventory import load_inventory
from k3tui.fleet.replay import deployment_from_events, scenes_from_events
from k3tui.fleet.timeline import only_a_consequence, own_root
from k3tui.profile import load_profile
from k3tui.reader import read_all
from k3tui.scene.checks import check_baseline
from k3tui.sim import SimHost


def write_inventory(path: Path, group: str, sims: list[SimHost], names: list[str], roles: list[str]) -> Path:
    """An inventory naming each simulated node with its own port, key and known_hosts."""
    lines = [f"[groups.{group}]", 'description = "simulated nodes"', 'profile = "kimi-k3"']
    for sim, name, role in zip(sims, names, roles, strict=True):
        lines += [
            f"[[groups.{group}.hosts]]",
            f'name = "{name}"',
            'address = "127.0.0.1"',
            f"port = {sim.port}",
            f'user = "{sim.username}"',
            f'identity = "{sim.client_key_path}"',
            f'known_hosts = "{sim.known_hosts_path}"',
            f'role = "{role}"',
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


async def _start(stack: AsyncExitStack, scenario: str, n: int) -> list[SimHost]:
    sims = [SimHost(scenario=scenario, node=i) for i in range(n)]
    for s in sims:
        await stack.enter_async_context(s)
    return sims


async def test_the_comparison_names_every_planted_difference_of_the_odd_node(tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        sims = await _start(stack, "multinode-odd-node", 2)
        inv = write_inventory(tmp_path / "inv.toml", "k3", sims, ["tray-a", "tray-b"], ["head", "worker"])
        events: list = []
        out = await freeze_fleet(load_inventory(inv).select("k3"), emit=events.append)
    assert out.unreachable == {} and [s.alias for s in out.scenes] == ["tray-a", "tray-b"]
    found = {d.fact: d for d in differences(out.scenes, head=out.head)}
    for fact in ("driver.driver_version", "image.repo_digests", "container.env.LD_LIBRARY_PATH"):
        assert found[fact].odd == ["tray-b"], (fact, found[fact])
    said = "\n".join(sentences(list(found.values())))
    assert "node tray-b runs driver 575.57.08 while tray-a runs driver 580.95.05" in said
    assert "/opt/site/cuda-12.9/lib64" in said
    verdicts = {v.check: v for v in check_baseline(out.scenes, load_profile("kimi-k3"))}
    assert verdicts["nodes-driver"].verdict == "FAIL" and "575.57.08" in verdicts["nodes-driver"].evidence
    assert verdicts["nodes-image"].verdict == "FAIL"
    assert verdicts["gpus"].verdict == "PASS" and "8 × NVIDIA GB300 across 2 nodes" in verdicts["gpus"].evidence
    # one stream, every event tagged by its host, clock skew measured on each
    skews = {e.host: e.clock_skew for e in events if isinstance(e, HostConnected)}
    assert set(skews) == {"tray-a", "tray-b"} and all(abs(s) < 2.0 for s in skews.values())
    assert sorted(e.host for e in events if isinstance(e, SceneFrozen)) == ["tray-a", "tray-b"]


async def test_a_root_exception_on_the_worker_is_named_as_the_deployments_first_failure(tmp_path: Path) -> None:
    # node 0 of the scenario is the worker tray (NCCL fails there), node 1 the head (consequences only)
    async with AsyncExitStack() as stack:
        sims = await _start(stack, "multinode-worker-nccl", 2)
        inv = write_inventory(
            tmp_path / "inv.toml", "k3", [sims[1], sims[0]], ["head-01", "worker-02"], ["head", "worker"]
        )
        out = await freeze_fleet(load_inventory(inv).select("k3"))
    assert out.head == "head-01"
    head_scene = next(s for s in out.scenes if s.alias == "head-01")
    fe = head_scene.first_exception  # the head's own log holds only consequences
    assert fe is None or only_a_consequence(fe["line"]), fe
    v = deployment_verdict(out)
    assert v.node == "worker-02"
    assert "RuntimeError: NCCL error: unhandled system error" in v.line
    assert v.result.failed_stage == "engine"
    per = {nv.alias: nv for nv in v.per_node}
    assert own_root(per["head-01"].result) is None and per["worker-02"].t is not None
    text = "\n".join(report(out))
    assert "node worker-02 at" in text and "no root exception of its own" in text
    # the head's consequence sits later than the worker's root on the merged timeline
    assert "Engine core initialization failed" not in v.line
    # the difference that explains it is named: the worker's container has a 64 MiB /dev/shm, no --ipc=host
    found = {d.fact: d for d in differences(out.scenes, head=out.head)}
    assert found["container.shm_size"].values["worker-02"] == 67108864
    assert found["container.ipc_mode"].values["worker-02"] == "private"


async def test_freeze_cli_with_an_inventory_of_simulated_nodes(tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        sims = await _start(stack, "multinode-worker-nccl", 2)
        inv = write_inventory(
            tmp_path / "inv.toml", "k3", [sims[1], sims[0]], ["head-01", "worker-02"], ["head", "worker"]
        )
        rec = tmp_path / "fleet.k3rec"
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "k3tui.cli", "freeze", "--inventory", str(inv), "--group", "k3",
            "--json", str(tmp_path / "scenes.json"), "--record", str(rec),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 120)
    out, err = stdout.decode(), stderr.decode()
    assert proc.returncode == 0, err
    assert "k3tui: [1/2]" in err and "k3tui: [2/2]" in err, err
    assert "== fleet: 2 hosts, 2 frozen, 0 unreachable" in out
    assert "container.shm_size" in out and "node worker-02 at" in out
    assert [s["alias"] for s in json.loads((tmp_path / "scenes.json").read_text())] == ["head-01", "worker-02"]
    recording, events = read_all(rec)
    assert recording.header.host == "k3" and recording.header.title == "k3tui freeze k3"
    named = [e for e in events if isinstance(e, Notice) and "first root exception" in e.message]
    assert named and named[0].host == "worker-02"
    # replay: the same verdict from the recording alone (skews and logs are in the stream)
    replayed = deployment_from_events(events)
    assert replayed is not None and replayed.node == "worker-02" and "NCCL error" in replayed.line
    assert set(replayed.skews) == {"head-01", "worker-02"} and None not in replayed.skews.values()
    scenes = scenes_from_events(events)
    assert [s.alias for s in scenes] and {d.fact for d in differences(scenes)} >= {"container.shm_size"}


def _run_clock_ahead(sim: SimHost, seconds: int) -> None:
    """Plant a clock that runs ``seconds`` ahead on one simulated node: its ``date`` and the
    stamps its container log carries (what a host with a drifting clock shows)."""
    import re
    import time

    (sim.root / "bin" / "date").write_text(
        f'#!/bin/sh\n# planted by the test: this node\'s clock runs {seconds} s ahead\nexec /bin/date -d "@$(( $(/bin/date +%s) + {seconds} ))" "$@"\n'
    )
    (sim.root / "bin" / "date").chmod(0o755)
    log = sim.root / "ctr" / sim.state["container"]["name"] / "log"
    year = time.gmtime().tm_year

    def later(m: re.Match[str]) -> str:
        t = time.strptime(f"{year}-{m.group(0)}", "%Y-%m-%d %H:%M:%S")
        return time.strftime("%m-%d %H:%M:%S", time.gmtime(calendar.timegm(t) + seconds))

    log.write_text(re.sub(r"\b\d\d-\d\d \d\d:\d\d:\d\d\b", later, log.read_text()))


async def test_clock_skew_is_measured_over_ssh_and_corrected_on_the_merged_timeline(tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        worker, head = await _start(stack, "multinode-worker-nccl", 2)
        _run_clock_ahead(worker, 40)
        inv = write_inventory(tmp_path / "inv.toml", "k3", [head, worker], ["head-01", "worker-02"], ["head", "worker"])
        out = await freeze_fleet(load_inventory(inv).select("k3"))
    skew = {n.alias: n.clock_skew for n in out.nodes}
    assert 38.5 < skew["worker-02"] < 41.5 and abs(skew["head-01"]) < 1.5, skew
    v = deployment_verdict(out)
    assert v.node == "worker-02"
    text = "\n".join(report(out))
    assert "worker-02: clock +" in text and "(corrected)" in text
    assert "OFF BY MORE THAN 1 s: worker-02 +" in text
    # by the worker's own clock its NCCL failure (log +3 s) comes AFTER the head's consequence
    # (log +31 s); corrected, it comes 28 s before it, as it happened
    then = next(line for line in text.splitlines() if line.strip().startswith("then head-01"))
    delta = float(then.split("(")[1].split("s)")[0])
    # 28 s, give or take the skew's measurement (±1.5 s, asserted above) and the stamps' 1 s resolution
    assert 25.5 <= delta <= 30.5, then

"""Multi-node launch as a Ray cluster, against two simulated trays (issue 9).

Every node's ``ray start`` is a detached run on its host (the simulated host's ``ray`` is a
fake that says so: k3tui/sim/ray.py); ``vllm serve --distributed-executor-backend ray`` is a
detached run on the head once ``ray status`` lists every node. In
``multinode-ray-worker-missing`` the worker's ray never joins, so the head's vLLM cannot get
its placement group of 8 GPUs: the rung fails naming the head and the worker that did not
join, every node is frozen, and everything is torn down afterwards.
"""

from __future__ import annotations

import asyncio
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import msgspec

from k3tui import events as ev
from k3tui.fleet.launch import MultiNodeLadder, parse_ray_status
from k3tui.profile import load_profile
from k3tui.remote import detached
from k3tui.remote.ssh import connect
from k3tui.sim import SimHost


def _of(events, kind, **match):  # noqa: ANN001, ANN202
    return [e for e in events if isinstance(e, kind) and all(getattr(e, k) == v for k, v in match.items())]


async def _nodes(stack: AsyncExitStack, scenario: str, events: list) -> list:
    hosts = []
    for node, alias in enumerate(("tray01", "tray02")):  # node 0 is the head tray
        sim = await stack.enter_async_context(SimHost(scenario, node=node, speed=8))
        host = await connect(emit=events.append, **(sim.connect_kwargs() | {"alias": alias}))
        stack.push_async_callback(host.close)
        hosts.append(host)
    return hosts


async def _minimal_rung(scenario: str, events: list, profile: object = None, **kw: object) -> object:
    """The minimal rung of a ray-mode deployment of two simulated trays; afterwards nothing is left running."""
    async with AsyncExitStack() as stack:
        hosts = await _nodes(stack, scenario, events)
        engine = MultiNodeLadder(
            hosts, profile or load_profile("kimi-k3"), events.append, events=events, mode="ray", **kw
        )
        try:
            result = await engine.run_rung("minimal")
        finally:
            await engine.close()
        await _nothing_left(hosts, events)
    return result


async def _nothing_left(hosts: list, events: list) -> None:
    """Every run of the session has ended on its host, no process of its group is left, and no cluster."""
    by_alias = {h.alias: h for h in hosts}
    started = _of(events, ev.RunStarted)
    ended = {e.run for e in _of(events, ev.RunEnded)}
    assert {e.run for e in started} <= ended, "every detached run ended"
    for e in started:
        res = await by_alias[e.host].run(detached.survivors_command(e.run_dir))
        assert res.stdout.strip() == "0", (e.run, res.stdout)
    res = await hosts[0].run("ray status --address 127.0.0.1:6379")
    assert res.status == 1 and "Could not find any running Ray instance" in res.stderr


async def test_a_healthy_ray_cluster_serves_from_the_head() -> None:
    events: list = []
    result = await _minimal_rung("nvl72-2x4-healthy", events)
    assert result.verdict == "PASS", result.summary
    runs = {e.run.rsplit("-", 1)[-1]: e for e in _of(events, ev.RunStarted)}
    assert runs["ray0"].host == "tray01" and "--entrypoint ray" in runs["ray0"].command
    assert "start --head --port 6379 --block" in runs["ray0"].command
    assert runs["ray1"].host == "tray02" and "start --address 127.0.0.1:6379 --block" in runs["ray1"].command
    serve = runs["minimal"]
    assert serve.host == "tray01" and "--distributed-executor-backend ray" in serve.command
    assert "-e RAY_ADDRESS=127.0.0.1:6379" in serve.command
    # the head's ray and vllm serve containers share /tmp/ray (the driver reaches the raylet's sockets there)
    assert "-v /tmp/ray:/tmp/ray" in serve.command and "-v /tmp/ray:/tmp/ray" in runs["ray0"].command
    # ray first on every node, vllm serve only after ray status listed both nodes
    order = [e.run.rsplit("-", 1)[-1] for e in _of(events, ev.RunStarted)]
    assert order == ["ray0", "ray1", "minimal"]
    status = [e for e in _of(events, ev.CommandSent) if e.purpose == "ray-status"]
    assert status and parse_ray_status(_output(events, status[-1].id)) == (2, 8.0)
    assert any("ray cluster ready: 2 of 2 nodes, 8 GPUs" in e.message for e in _of(events, ev.Notice))
    assert any("mode ray (from the command line)" in e.message for e in _of(events, ev.Notice))
    assert not _of(events, ev.SceneFrozen, reason="first-exception")
    configs = _of(events, ev.RunConfigSet)
    assert len(configs) == 1 and "ray" not in str(configs[0].config), "the launch shape is not a changed variable"


async def test_a_worker_that_never_joins_fails_the_rung_names_it_and_freezes_every_node() -> None:
    events: list = []
    result = await _minimal_rung("multinode-ray-worker-missing", events, cluster_timeout=3.0)
    assert result.verdict == "FAIL", result.summary
    assert result.summary.startswith(
        "start-up failed on node tray01 at stage device (ray cluster: tray02 did not join, 1 of 2 nodes): "
    )
    assert "ValueError: Cannot provide a placement group requiring 8.0 GPUs" in result.summary
    notices = [e.message for e in _of(events, ev.Notice)]
    assert any(
        "ray cluster incomplete" in m and "lists 1 of 2 nodes (4 GPUs); not joined: tray02" in m for m in notices
    )
    # the worker's own log shows why: Ray's GCS connection warnings, never "Ray runtime started."
    worker_log = "".join(e.text for e in _of(events, ev.Output, host="tray02", stream="log"))
    assert (
        "Failed to connect to GCS at address 127.0.0.1:6379" in worker_log and "Ray runtime started" not in worker_log
    )
    found = _of(events, ev.ExceptionFound)
    assert found and found[0].host == "tray01" and "placement group" in found[0].line
    assert any(m.startswith("the deployment's first root exception is on head tray01 (printed ") for m in notices)
    frozen = {e.host: e for e in _of(events, ev.SceneFrozen, reason="first-exception")}
    assert sorted(frozen) == ["tray01", "tray02"], "a failure on any node freezes every node"
    assert frozen["tray01"].run == found[0].run and frozen["tray02"].run.endswith("-ray1")
    # the head's vllm ran against the incomplete cluster (ray status showed it waiting for 8 GPUs)
    status = [e for e in _of(events, ev.CommandSent) if e.purpose == "ray-status"]
    assert parse_ray_status(_output(events, status[-1].id)) == (1, 4.0)


async def test_a_ray_start_that_ends_stops_the_launch_and_freezes_every_node() -> None:
    # a profile whose worker command lacks the head's port: the worker's `ray start` exits at once
    profile = load_profile("kimi-k3")
    ray = msgspec.structs.replace(profile.launch.multinode.ray, worker=["ray", "start", "--address", "{head_addr}"])
    multi = msgspec.structs.replace(profile.launch.multinode, ray=ray)
    profile = msgspec.structs.replace(profile, launch=msgspec.structs.replace(profile.launch, multinode=multi))
    events: list = []
    result = await _minimal_rung("nvl72-2x4-healthy", events, profile=profile, cluster_timeout=60.0)
    assert result.verdict == "FAIL"
    assert result.summary.startswith("start-up failed on node tray02 (ray cluster: tray02 did not join, 1 of 2 nodes)")
    assert "its `ray start` ended before the cluster formed" in result.summary and "HEAD:PORT" in result.summary
    assert [e.run.rsplit("-", 1)[-1] for e in _of(events, ev.RunStarted)] == ["ray0", "ray1"], "no vllm serve"
    frozen = {e.host: e.run for e in _of(events, ev.SceneFrozen, reason="node-failed")}
    assert sorted(frozen) == ["tray01", "tray02"] and frozen["tray02"].endswith("-ray1")


async def test_the_ladder_cli_runs_the_profiles_ray_launch(tmp_path: Path) -> None:
    from k3tui.reader import read_all

    from .test_multinode_sim import write_inventory

    # the launch shape is the profile's: a copy of kimi-k3 that says mode = "ray" (no CLI mode option)
    text = Path(load_profile("kimi-k3").path).read_text()
    assert 'mode = "vllm"' in text and "cluster_timeout_s = 600" in text
    prof = tmp_path / "k3-ray.toml"
    prof.write_text(
        text.replace('mode = "vllm"', 'mode = "ray"').replace("cluster_timeout_s = 600", "cluster_timeout_s = 3")
    )
    async with AsyncExitStack() as stack:
        head = await stack.enter_async_context(SimHost("multinode-ray-worker-missing", node=0, speed=8))
        worker = await stack.enter_async_context(SimHost("multinode-ray-worker-missing", node=1, speed=8))
        inv = write_inventory(tmp_path / "inv.toml", "k3", [head, worker], ["tray01", "tray02"], ["head", "worker"])
        rec = tmp_path / "ladder.k3rec"
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "k3tui.cli", "ladder", "--inventory", str(inv), "--group", "k3", "--multinode",
            "--profile", str(prof), "--rung", "minimal", "--record", str(rec),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 240)
    out = stdout.decode() + stderr.decode()
    assert proc.returncode == 1, out[-3000:]
    assert "start-up failed on node tray01 at stage device (ray cluster: tray02 did not join" in out, out[-3000:]
    _, recorded = read_all(rec)
    assert any(f"mode ray (from profile {prof} [launch.multinode])" in e.message for e in _of(recorded, ev.Notice))
    assert sorted(e.host for e in _of(recorded, ev.SceneFrozen, reason="first-exception")) == ["tray01", "tray02"]


def _output(events: list, cid: str) -> str:
    return "".join(e.text for e in _of(events, ev.Output, id=cid))


def test_the_demo_launches_a_scenario_the_way_its_multinode_table_says() -> None:
    from k3tui.fleet.launch import scenario_ladder
    from k3tui.sim.scenario import load_raw

    ray = scenario_ladder(load_raw("multinode-ray-worker-missing"))
    assert ray.keywords == {"mode": "ray", "cluster_timeout": 10}
    assert scenario_ladder(load_raw("nvl72-2x4-healthy")).keywords == {"mode": None, "cluster_timeout": None}

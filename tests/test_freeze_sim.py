"""Freeze and check the simulated GB300 host over real SSH (asyncssh server, real processes)."""

from __future__ import annotations

import json

import pytest

from k3tui.profile import load_profile
from k3tui.remote.ssh import connect
from k3tui.scene.checks import check_baseline, exit_status
from k3tui.scene.diff import odd_nodes
from k3tui.scene.freeze import freeze
from k3tui.sim.scenario import host_list, load_raw, scenarios
from k3tui.sim.server import SimHost
from tests.test_freeze import freeze_limit


def _no_nvml(p) -> bool:  # noqa: ANN001
    """The simulated host has python3 but no libnvidia-ml: the NVML probe says so, and only that."""
    return p.name == "nvml" and "NVML Shared Library Not Found" in p.error


async def _freeze_sim(scenario: str):  # noqa: ANN202 - (scene, seconds)
    async with SimHost(scenario=scenario) as sim:
        kw = sim.connect_kwargs()
        async with connect(kw.pop("target"), **kw) as host:
            scene = await freeze(host)
    return scene


async def test_healthy_sim_host_freezes_fast_and_passes_the_baseline() -> None:
    s = await _freeze_sim("healthy")
    assert s.simulated or s.alias == "gb300-sim"
    assert s.seconds < freeze_limit(), f"freeze of the simulated host took {s.seconds:.2f}s"
    assert [p.name for p in s.probes if not p.ok and not _no_nvml(p)] == []
    assert (
        len(s.gpus) == 8
        and {g.name for g in s.gpus} == {"NVIDIA GB300"}
        and {g.compute_cap for g in s.gpus} == {"10.3"}
    )
    assert s.host.driver_version == "580.95.05" and s.container["image"] == "vllm/vllm-openai:kimi-k3"
    assert sorted(g["uuid"] for g in s.container_gpus) == sorted(g.uuid for g in s.gpus)
    assert s.versions["vllm"] and s.versions["torch_cuda"] == "13.0"
    verdicts = {v.check: v.verdict for v in check_baseline(s, load_profile("kimi-k3"))}
    assert all(v == "PASS" for k, v in verdicts.items() if k != "libcuda"), verdicts
    assert exit_status(check_baseline(s, load_profile("kimi-k3"))) in (0, 2)
    assert "<redacted>" not in json.dumps(s.gpus and s.to_dict()["gpus"])


# What the baseline must say on the scenarios that plant a compatibility problem (by name;
# scenarios added later are frozen and must not break a probe, whatever they plant).
EXPECT = {
    "driver-r575": {"driver": "FAIL"},
    "cuda-compat-803": {"libcuda": "FAIL"},
}


# k8s-node-*: no dockerd there, so the docker probes fail by design; it freezes through containerd
# (tests/test_launch_containerd.py::test_the_simulated_kubernetes_node_freezes_through_containerd)
@pytest.mark.parametrize(
    "info", [i for i in scenarios() if i.name != "healthy" and not i.name.startswith("k8s-node")], ids=lambda i: i.name
)
async def test_every_scenario_freezes_without_a_failed_probe(info) -> None:  # noqa: ANN001
    s = await _freeze_sim(info.name)
    assert s.seconds < freeze_limit()
    assert [p.name for p in s.probes if not p.ok and not _no_nvml(p)] == [], [p for p in s.probes if not p.ok]
    verdicts = {v.check: v.verdict for v in check_baseline(s, load_profile("kimi-k3"))}
    for check, verdict in EXPECT.get(info.name, {}).items():
        assert verdicts[check] == verdict, (check, verdicts)


MULTI = [i for i in scenarios() if len(host_list(load_raw(i.name))) > 1]
# host-table keys a scenario may plant per node → the odd-node-out fact that must name it
PLANTED = {"driver": "driver.driver_version", "gpu_count": "gpus.count", "kernel": "host.kernel", "arch": "host.arch"}


async def _freeze_node(scenario: str, node: int):  # noqa: ANN202 - a Scene
    async with SimHost(scenario=scenario, node=node) as sim:
        kw = sim.connect_kwargs()
        async with connect(kw.pop("target"), **kw) as host:
            return await freeze(host)


@pytest.mark.parametrize("info", MULTI, ids=lambda i: i.name)
async def test_multi_node_scenario_names_the_planted_difference(info) -> None:  # noqa: ANN001
    tables = host_list(load_raw(info.name))
    scenes = [await _freeze_node(info.name, n) for n in range(len(tables))]
    assert len({s.alias for s in scenes}) == len(scenes)
    findings = {f.fact: f for f in odd_nodes(scenes)}
    planted = [k for k in PLANTED if len({repr(t.get(k)) for t in tables}) > 1]
    for key in planted:
        assert PLANTED[key] in findings, (key, sorted(findings))
    verdicts = {v.check: v.verdict for v in check_baseline(scenes, load_profile("kimi-k3"))}
    if "driver" in planted:
        assert verdicts["nodes-driver"] == "FAIL"
    if not planted and info.expected_stage == "none":
        # a healthy multi-node deployment: the nodes agree, the GPUs add up to the profile's 8
        assert list(findings) == [] and verdicts["gpus"] == "PASS" and verdicts["nodes-image"] == "PASS"
        assert {k for k, v in verdicts.items() if v != "PASS"} <= {"libcuda"}

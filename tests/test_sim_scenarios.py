"""Every scenario keeps its promise: the log its ``vllm serve`` replays is classified by the
real classifier at the scenario's expected stage, with its expected root exception."""

from __future__ import annotations

import pytest

from k3tui.classify import classify_text
from k3tui.sim import scenarios
from k3tui.sim.logplay import LogVars, ops, render
from k3tui.sim.scenario import host_list, load_raw
from k3tui.sim.vllm import choose_template, parse_args

MINIMAL = "moonshotai/Kimi-K3 --tensor-parallel-size 8 --trust-remote-code --load-format fastsafetensors".split()
REQUIRED = {
    "healthy",
    "driver-r575",
    "cuda-compat-803",
    "nccl-init",
    "oom-profiling",
    "fastsafetensors-missing",
    "runtime-worker-dies",
}


def test_the_required_scenarios_exist_and_state_their_promise() -> None:
    infos = {s.name: s for s in scenarios()}
    assert REQUIRED <= set(infos)
    for s in infos.values():
        assert s.title and s.expected_stage in (
            "none",
            "container",
            "config",
            "device",
            "weights",
            "engine",
            "api",
            "runtime",
        )
        assert bool(s.expected_exception) == (s.expected_stage != "none")


@pytest.mark.parametrize("info", scenarios(), ids=lambda i: i.name)
def test_replayed_log_classifies_as_promised(info) -> None:  # noqa: ANN001
    data = load_raw(info.name)
    text, status = render(choose_template(data["vllm"], MINIMAL), LogVars(tp=8))
    result = classify_text(text)
    assert result.failed_stage == info.expected_stage
    if info.expected_stage == "none":
        assert result.first_exception is None and status == 0
    else:
        assert info.expected_exception in result.first_exception.line


def test_nccl_scenario_oom_is_a_consequence() -> None:
    text, _ = render("nccl-init.log", LogVars(tp=8))
    result = classify_text(text)
    assert "torch.OutOfMemoryError" in text and result.oom_root_cause is False


def test_tp8_tracebacks_interleave_by_process() -> None:
    lines = [o.text for o in ops("driver-r575.log", LogVars(tp=8)) if o.kind == "line"]
    first = next(i for i, t in enumerate(lines) if "WorkerProc failed to start." in t)
    assert [f"Worker_TP{r} " in lines[first + r] for r in range(8)] == [True] * 8


def test_fastsafetensors_failure_needs_the_flag() -> None:
    data = load_raw("fastsafetensors-missing")
    assert choose_template(data["vllm"], MINIMAL) == "fastsafetensors-missing.log"
    assert (
        choose_template(data["vllm"], ["moonshotai/Kimi-K3", "--load-format=fastsafetensors"])
        == "fastsafetensors-missing.log"
    )
    assert choose_template(data["vllm"], ["moonshotai/Kimi-K3", "--tensor-parallel-size", "8"]) == "healthy.log"


def test_launch_args_reach_the_log() -> None:
    ns = parse_args(["moonshotai/Kimi-K3", "--port", "8123", "--no-enable-prefix-caching", "-tp", "4"])
    text, _ = render("healthy.log", LogVars(tp=ns.tensor_parallel_size, port=ns.port, prefix_caching=ns.prefix))
    assert "Starting vLLM server on http://0.0.0.0:8123" in text and "enable_prefix_caching=False" in text
    assert "(Worker_TP3 pid=" in text and "(Worker_TP4 pid=" not in text


def test_gpu_facts_are_distinct_per_gpu_and_per_host() -> None:
    single = host_list(load_raw("healthy"))
    trays = host_list(load_raw("nvl72-2x4-healthy"))
    assert [len(h["gpus"]) for h in single] == [8] and [len(h["gpus"]) for h in trays] == [4, 4]
    uuids = [g["uuid"] for h in single + trays for g in h["gpus"]]
    buses = [g["bus_id"] for g in single[0]["gpus"]]
    assert len(set(uuids)) == len(uuids) == 16 and len(set(buses)) == 8
    assert {h["arch"] for h in trays} == {"aarch64"} and single[0]["arch"] == "x86_64"


@pytest.mark.parametrize("info", scenarios(), ids=lambda i: i.name)
def test_container_log_is_the_deployments_own_failure(info) -> None:  # noqa: ANN001
    """``docker logs`` of the scenario's container holds its last start-up, failing as promised."""
    from k3tui.sim.rootfs import _container_log

    data = load_raw(info.name)
    ctr = dict(data["container"], _vllm=data["vllm"])
    result = classify_text(_container_log(ctr))
    assert result.failed_stage == info.expected_stage

"""The whole ladder against the SIMULATED GB300 host, every scenario, through the real SSH client.

Each scenario file states the first failure it produces (``expected_stage``,
``expected_exception``); the ladder must find exactly that, at the right rung, freeze
the scene on it, and give the verdicts an operator expects: a healthy host climbs every
rung; a start-up failure stops the minimal launch; a runtime failure passes the minimal
launch and fails the single request.
"""

from __future__ import annotations

import pytest

from k3tui import events as ev
from k3tui.ladder import LadderEngine, stops
from k3tui.ladder.rungs import verdict
from k3tui.ladder.server import Outcome
from k3tui.profile import load_profile
from k3tui.sim import SimHost, scenarios

SINGLE_HOST = [s for s in scenarios() if not s.name.startswith("nvl72") and not s.name.startswith("k8s-node")]
# k8s-node-*: a Kubernetes node has no dockerd; its runs are pods through kubectl (tests/test_launch_kubernetes.py)


async def _ladder(scenario: str, body, *, nodes: int = 1):
    """Run ``body(engine, events)`` against a simulated deployment of ``nodes`` hosts."""
    from contextlib import AsyncExitStack

    from k3tui.remote.ssh import connect

    events: list = []
    async with AsyncExitStack() as stack:
        hosts = []
        for node in range(nodes):
            sim = await stack.enter_async_context(SimHost(scenario=scenario, node=node))
            host = await connect(emit=events.append, **sim.connect_kwargs())
            stack.push_async_callback(host.close)
            hosts.append(host)
        engine = LadderEngine(hosts, load_profile("kimi-k3"), events.append, events=events)
        try:
            return await body(engine, events), events
        finally:
            await engine.close()


def _of(events, kind, **match):
    return [e for e in events if isinstance(e, kind) and all(getattr(e, k) == v for k, v in match.items())]


@pytest.mark.parametrize("info", SINGLE_HOST, ids=[s.name for s in SINGLE_HOST])
async def test_every_scenario_gives_its_expected_first_failure_at_the_right_rung(info):
    async def body(engine, events):
        base = await engine.run_rung("baseline")
        if stops.hardware(events).tripped:  # a hardware scenario (test_ladder_hardware.py): climb on, with a reason
            engine.climb_past_hardware("test: the software symptom of the planted hardware fault")
        minimal = await engine.run_rung("minimal")
        request = await engine.run_rung("request") if minimal.verdict == "PASS" else None
        return base, minimal, request

    (base, minimal, request), events = await _ladder(info.name, body)
    classified = [e for e in _of(events, ev.RunClassified) if e.failed_stage != "none"]
    found = _of(events, ev.ExceptionFound)
    if info.expected_stage == "none":
        assert (minimal.verdict, request.verdict) == ("PASS", "PASS"), (minimal.summary, request.summary)
        assert not found and not classified
        return
    assert found, f"{info.name}: no root exception found"
    assert found[0].stage == info.expected_stage and info.expected_exception in found[0].line, found[0].line
    assert classified[0].failed_stage == info.expected_stage
    frozen = _of(events, ev.SceneFrozen, reason="first-exception")
    assert frozen and frozen[0].run == found[0].run, "the scene is frozen on the first root exception"
    if info.expected_stage == "runtime":
        assert minimal.verdict == "PASS" and request.verdict == "FAIL"
        split = _of(events, ev.CheckVerdict, rung="request", check="startup-vs-runtime")[-1]
        assert "RUNTIME" in split.evidence
        same = _of(events, ev.CheckVerdict, rung="request", check="same-stage")
        assert same and same[0].verdict == "PASS"
    else:
        assert minimal.verdict == "FAIL" and f"stage {info.expected_stage}" in minimal.summary
        assert _of(events, ev.CheckVerdict, rung="minimal", check="api-ready")[0].verdict == "FAIL"
    if info.name == "driver-r575":
        assert (
            base.verdict == "FAIL"
            and _of(events, ev.CheckVerdict, rung="baseline", check="driver")[0].verdict == "FAIL"
        )


async def test_healthy_host_climbs_every_rung_and_ticks_the_checklist_from_evidence():
    async def body(engine, events):
        return await engine.run_all()

    results, events = await _ladder("healthy", body)
    why = [(r.rung, r.verdict, r.summary) for r in results if r.verdict != "PASS"]
    assert [(r.rung, r.verdict) for r in results] == [
        ("baseline", "PASS"),
        ("minimal", "PASS"),
        ("request", "PASS"),
        ("prefix-caching", "PASS"),
        ("context-length", "PASS"),
        ("concurrency", "PASS"),
    ], why
    # features one at a time: every config change after the first is exactly one variable
    changes = [e for e in _of(events, ev.RunConfigSet) if e.diff][1:]
    assert changes and all(len(c.diff) == 1 for c in changes)
    assert [c.diff[0]["key"] for c in changes[:2]] == ["flag:enable-prefix-caching", "max_model_len"]
    hits = _of(events, ev.CheckVerdict, rung="prefix-caching", check="prefix-cache-hits")[0]
    assert "cache hit as expected" in hits.evidence
    control = _of(events, ev.CheckVerdict, rung="prefix-caching", check="control-caching-off")[0]
    assert control.verdict == "PASS" and "hits +0" in control.evidence
    mem = _of(events, ev.CheckVerdict, rung="request", check="gpu-memory")[0]
    assert mem.verdict == "PASS" and _of(events, ev.GpuSample), "the simulated host has GPUs: memory is measured"
    checklist = {e.check: e for e in _of(events, ev.CheckVerdict, rung="checklist")}
    assert len(checklist) == 11
    done = {k for k, e in checklist.items() if e.verdict == "PASS"}
    missing = {k: e.evidence for k, e in checklist.items() if e.verdict != "PASS"}
    assert done >= {
        "drivers",
        "image-cuda-model",
        "command-env",
        "gpu-layout",
        "stage-isolated",
        "startup-runtime",
        "features",
        "one-variable",
    }, missing.get("one-variable")
    assert checklist["reproduction"].verdict == "FAIL" and checklist["first-stack"].verdict == "UNKNOWN"
    stops = {e.check: e.verdict for e in _of(events, ev.CheckVerdict, rung="stop")}
    assert stops["image-driver"] == "PASS" and stops["revertible"] == "PASS" and stops["gpus-exclusive"] == "PASS"


async def test_repeated_minimal_launch_counts_reproduction_and_ticks_the_item():
    async def body(engine, events):
        return await engine.run_rung("minimal", repeat=2)

    result, events = await _ladder("fastsafetensors-missing", body)
    assert (result.verdict, result.reproduced, result.repeats) == ("FAIL", 2, 2)
    left = _of(events, ev.RungLeft, rung="minimal")[0]
    assert (left.reproduced, left.repeats) == (2, 2) and left.summary.startswith("reproduced 2/2")
    assert len(_of(events, ev.RungEntered, rung="minimal")) == 2
    assert len({e.run for e in _of(events, ev.RunStarted)}) == 2, "each attempt is a fresh run"
    from k3tui.ladder import checklist

    assert {i.key: i.status for i in checklist.evaluate(events)}["reproduction"] == "done"


def _stepped_profile():
    """kimi-k3 without fastsafetensors in the minimal launch, and a one-value-at-a-time load-format feature."""
    import msgspec

    from k3tui.profile import Feature

    p = load_profile("kimi-k3")
    i = p.launch.minimal.index("--load-format")
    minimal = p.launch.minimal[:i] + p.launch.minimal[i + 2 :]
    feature = Feature(
        name="load-format",
        args=["--load-format", "{value}"],
        values=["safetensors", "fastsafetensors"],
        check="completes",
    )
    return msgspec.structs.replace(p, launch=msgspec.structs.replace(p.launch, minimal=minimal), features=[feature])


async def test_a_failing_feature_value_is_classified_and_reverted_to_the_last_good_config():
    async def body(engine, events):
        engine.profile = _stepped_profile()
        for name in ("minimal", "request"):
            assert (await engine.run_rung(name)).verdict == "PASS"
        return await engine.run_rung("load-format")

    result, events = await _ladder("fastsafetensors-missing", body)
    assert (
        result.verdict == "FAIL"
        and "load-format=fastsafetensors" in result.summary
        and "stage weights" in result.summary
    )
    checks = {e.check: e.verdict for e in _of(events, ev.CheckVerdict, rung="load-format")}
    assert checks == {"load-format=safetensors": "PASS", "api-ready": "FAIL", "load-format=fastsafetensors": "FAIL"}
    found = _of(events, ev.ExceptionFound)[0]
    assert found.stage == "weights" and "No module named 'fastsafetensors'" in found.line
    revert = [d for d in _of(events, ev.Decision) if d.action.startswith("revert")]
    assert revert and "load-format=fastsafetensors failed" in revert[0].reason
    last = [e for e in _of(events, ev.RunConfigSet) if e.diff][-1]
    assert last.diff == [{"key": "flag:load-format", "old": "fastsafetensors", "new": "safetensors"}]


def test_drift_between_attempts_is_its_own_verdict_and_names_both_signatures():
    outs = [
        Outcome(False, "a", "engine|RuntimeError|NCCL error"),
        Outcome(False, "b", "engine|OutOfMemoryError|CUDA out of memory"),
        Outcome(False, "a", "engine|RuntimeError|NCCL error"),
    ]
    r = verdict("minimal", outs)
    assert r.verdict == "DRIFT" and r.reproduced == 2 and r.repeats == 3
    assert "NCCL error" in r.summary and "CUDA out of memory" in r.summary
    assert verdict("minimal", [Outcome(True, "ok"), Outcome(False, "x", "s")]).summary.startswith("reproduced 1/2")
    assert verdict("minimal", [Outcome(False, "could not run", error=True)]).verdict == "ERROR"


async def test_two_tray_nvl72_deployment_freezes_and_checks_both_nodes():
    async def body(engine, events):
        return await engine.run_rung("baseline")

    result, events = await _ladder("nvl72-2x4-healthy", body, nodes=2)
    scenes = _of(events, ev.SceneFrozen, reason="baseline")
    assert len({s.host for s in scenes}) == 2
    gpus = _of(events, ev.CheckVerdict, rung="baseline", check="gpus")[0]
    assert gpus.verdict == "PASS", gpus.evidence
    assert result.verdict == "PASS", result.summary


async def test_debug_toggles_are_single_changes_and_trace_function_needs_confirmation():
    from k3tui.errors import UsageError

    async def body(engine, events):
        with pytest.raises(UsageError, match="very slow"):
            engine.toggle("vllm-trace-function")
        assert engine.toggle("nccl-debug") == [{"key": "env:NCCL_DEBUG", "old": None, "new": "TRACE"}]
        return await engine.run_rung("minimal")

    result, events = await _ladder("healthy", body)
    assert result.verdict == "PASS"
    warnings = [n for n in _of(events, ev.Notice) if n.level == "warning" and "VLLM_TRACE_FUNCTION" in n.message]
    assert warnings, "the slow-start warning is recorded even when the operator declines"
    assert not any(e.config.get("env", {}).get("VLLM_TRACE_FUNCTION") for e in _of(events, ev.RunConfigSet))
    assert "-e NCCL_DEBUG=TRACE" in _of(events, ev.RunStarted)[0].command


async def test_two_trays_that_differ_fail_the_baseline_and_name_the_odd_node():
    async def body(engine, events):
        return await engine.run_rung("baseline")

    result, events = await _ladder("multinode-odd-node", body, nodes=2)
    assert result.verdict == "FAIL"
    failed = [e for e in _of(events, ev.CheckVerdict, rung="baseline") if e.verdict == "FAIL"]
    assert any("575" in e.evidence for e in failed), [e.evidence for e in failed]
    assert len({s.host for s in _of(events, ev.SceneFrozen, reason="baseline")}) == 2


async def test_run_all_on_an_old_driver_still_isolates_the_failing_stage_with_the_minimal_launch():
    async def body(engine, events):
        return await engine.run_all()

    results, events = await _ladder("driver-r575", body)
    assert [(r.rung, r.verdict) for r in results] == [("baseline", "FAIL"), ("minimal", "FAIL")]
    assert "stage device" in results[1].summary
    notes = [n.message for n in _of(events, ev.Notice) if n.level == "warning"]
    assert any("running the minimal launch anyway" in m for m in notes) and any(
        "ladder stopped at rung minimal" in m for m in notes
    )
    checklist = {e.check: e.verdict for e in _of(events, ev.CheckVerdict, rung="checklist")}
    assert checklist["stage-isolated"] == "PASS" and checklist["first-stack"] == "PASS"

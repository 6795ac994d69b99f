"""The five stop conditions and the eleven checklist items, as pure functions of an event stream.

Each condition is shown both tripped and clear, from the events that would be recorded
in that situation; an item is never ticked without the events that justify it.
"""

from __future__ import annotations

from k3tui import events as ev
from k3tui.ladder import checklist, stops


def _by_name(events):
    return {s.name: s for s in stops.evaluate(events)}


def _scene(driver="580.159.04", image_id="sha256:aaa", procs=(), gpus=1, container=True):
    return {
        "host": {"driver_version": driver},
        "gpus": [{"index": i} for i in range(gpus)],
        "gpu_processes": list(procs),
        "container": {"image": "vllm/vllm-openai:kimi-k3", "image_id": image_id} if container else None,
        "container_gpus": [{"index": 0}] if container else None,
        "versions": {"torch_cuda": "13.0"},
    }


def test_nothing_known_yet_is_unknown_not_pass():
    got = _by_name([])
    assert {n: s.verdict for n, s in got.items()} == {
        "image-driver": "UNKNOWN",
        "gpus-exclusive": "UNKNOWN",
        "revertible": "PASS",
        "live-inference": "UNKNOWN",
        "baseline-stable": "UNKNOWN",
        "hardware": "UNKNOWN",
    }


def test_driver_change_between_runs_trips_and_names_both_events():
    events = [
        ev.SceneFrozen(host="a", scene=_scene("580.65.06")),
        ev.Note(text="x"),
        ev.SceneFrozen(host="a", scene=_scene("575.57.08")),
    ]
    s = _by_name(events)["image-driver"]
    assert s.tripped and s.events == [0, 2] and "580.65.06" in s.evidence and "575.57.08" in s.evidence


def test_image_digest_change_trips_but_two_hosts_are_judged_separately():
    assert _by_name(
        [
            ev.SceneFrozen(host="a", scene=_scene(image_id="sha256:1")),
            ev.SceneFrozen(host="a", scene=_scene(image_id="sha256:2")),
        ]
    )["image-driver"].tripped
    same = [
        ev.SceneFrozen(host="a", scene=_scene()),
        ev.SceneFrozen(host="b", scene=_scene()),
        ev.SceneFrozen(host="a", scene=_scene()),
    ]
    assert _by_name(same)["image-driver"].verdict == "PASS"


def test_processes_on_the_gpus_outside_our_runs_trip_exclusivity():
    other = ev.GpuSample(
        gpus=[ev.GpuMem(index=0, used_mib=9000)],
        processes=[ev.GpuProc(gpu=0, pid=4242, name="python train.py", used_mib=9000)],
    )
    s = _by_name([other])["gpus-exclusive"]
    assert s.tripped and "4242" in s.evidence
    ours = [ev.RunStarted(run="r1-minimal"), other, ev.RunEnded(run="r1-minimal")]
    assert _by_name(ours)["gpus-exclusive"].verdict == "PASS"
    frozen = ev.SceneFrozen(scene=_scene(procs=[{"pid": 7, "name": "tritonserver", "gpu_index": 0}]))
    assert _by_name([frozen])["gpus-exclusive"].tripped


def test_observed_driver_change_in_a_config_diff_is_not_revertible():
    events = [
        ev.RunConfigSet(run="r1", config={"driver": "580"}, diff=[{"key": "driver", "old": None, "new": "580"}]),
        ev.RunConfigSet(run="r2", config={"driver": "575"}, diff=[{"key": "driver", "old": "580", "new": "575"}]),
    ]
    s = _by_name(events)["revertible"]
    assert s.tripped and s.events == [1]
    assert _by_name([ev.Notice(level="warning", message="cannot revert driver: observed on the host")])[
        "revertible"
    ].tripped


def test_live_inference_takes_the_latest_probe_per_host():
    fail = ev.CheckVerdict(
        host="a", rung="stop", check="live-inference", verdict="FAIL", evidence="1 serving process(es): vllm serve x"
    )
    ok_b = ev.CheckVerdict(host="b", rung="stop", check="live-inference", verdict="PASS", evidence="none")
    assert _by_name([fail, ok_b])["live-inference"].tripped
    ok_a = ev.CheckVerdict(host="a", rung="stop", check="live-inference", verdict="PASS", evidence="none")
    assert _by_name([fail, ok_b, ok_a])["live-inference"].verdict == "PASS"


def test_drift_or_intermittent_minimal_launch_means_the_baseline_is_not_stable():
    drift = ev.RungLeft(rung="minimal", verdict="DRIFT", summary="DRIFT: a ≠ b", reproduced=2, repeats=3)
    assert _by_name([drift])["baseline-stable"].tripped
    flaky = ev.RungLeft(rung="minimal", verdict="FAIL", summary="x", reproduced=2, repeats=3)
    assert _by_name([flaky])["baseline-stable"].tripped
    steady = ev.RungLeft(rung="minimal", verdict="FAIL", summary="x", reproduced=3, repeats=3)
    assert _by_name([steady])["baseline-stable"].verdict == "PASS"
    flip = [ev.RungLeft(rung="baseline", verdict="PASS"), ev.RungLeft(rung="baseline", verdict="FAIL")]
    assert _by_name(flip)["baseline-stable"].tripped


def _session():
    """A session that has everything the checklist asks for, in the order a ladder records it."""
    cfg = {
        "model_path": "moonshotai/Kimi-K3",
        "image": "vllm/vllm-openai:kimi-k3",
        "tensor_parallel_size": 8,
        "max_model_len": 1024,
    }
    return [
        ev.SceneFrozen(t=1, host="a", scene=_scene(gpus=8), reason="baseline"),
        ev.RunConfigSet(t=2, run="r1", config=cfg, diff=[{"key": "model_path", "old": None, "new": "m"}]),
        ev.RunStarted(t=3, run="r1-minimal", command="docker run … vllm serve", env={"A": "1"}, rung="minimal"),
        ev.Output(t=4, id="r1-minimal", stream="log", text="log\n"),
        ev.RunClassified(t=5, run="r1-minimal", failed_stage="none"),
        ev.RungLeft(t=5, rung="minimal", verdict="PASS", reproduced=0, repeats=3),
        ev.CheckVerdict(
            t=6, rung="request", check="startup-vs-runtime", verdict="FAIL", evidence="the failure is at RUNTIME"
        ),
        ev.RunConfigSet(
            t=7,
            run="r2",
            config={**cfg, "max_model_len": 4096},
            diff=[{"key": "max_model_len", "old": 1024, "new": 4096}],
        ),
        ev.RunStarted(t=8, run="r2-context-length", command="docker run …", rung="context-length"),
        ev.Output(t=9, id="r2-context-length", stream="log", text="log\n"),
        ev.ExceptionFound(
            t=9, run="r2-context-length", stage="config", line="ValueError: max_model_len", stack=["Traceback"]
        ),
        ev.SceneFrozen(t=10, host="a", scene=_scene(gpus=8), reason="first-exception", run="r2-context-length"),
        ev.RunClassified(t=11, run="r2-context-length", failed_stage="config"),
        ev.RungLeft(t=12, rung="context-length", verdict="FAIL"),
        ev.Decision(t=13, action="isolated-node comparison", reason="node b"),
    ]


def test_a_complete_session_ticks_all_eleven_items_with_their_events():
    items = checklist.evaluate(_session())
    assert len(items) == 11
    assert {i.key: i.status for i in items if i.status != "done"} == {}
    first = items[0]
    assert first.events == [10, 11] and first.times == [9.0, 10.0] and "#10 (t=9.0s)" in first.evidence_text()


def test_each_item_is_missing_without_its_evidence():
    full = _session()
    drop = {
        "first-stack": lambda e: isinstance(e, ev.ExceptionFound),
        "drivers": lambda e: isinstance(e, ev.SceneFrozen),
        "command-env": lambda e: isinstance(e, ev.RunStarted),
        "stage-isolated": lambda e: isinstance(e, ev.RungLeft) and e.rung == "minimal",
        "startup-runtime": lambda e: isinstance(e, ev.CheckVerdict),
        "features": lambda e: isinstance(e, ev.RungLeft) and e.rung == "context-length",
        "one-variable": lambda e: isinstance(e, ev.Output),
        "reproduction": lambda e: isinstance(e, ev.RungLeft) and e.rung == "minimal",
        "isolated-node": lambda e: isinstance(e, ev.Decision),
    }
    for key, pred in drop.items():
        got = {i.key: i for i in checklist.evaluate([e for e in full if not pred(e)])}[key]
        assert got.status in ("missing", "n/a") and got.verdict != "PASS", key


def test_two_variables_without_a_reason_fail_the_one_variable_item_and_with_a_reason_pass():
    two = ev.RunConfigSet(
        t=7.5, run="r3", config={}, diff=[{"key": "a", "old": 1, "new": 2}, {"key": "b", "old": 1, "new": 2}]
    )
    items = {i.key: i for i in checklist.evaluate([*_session(), two])}
    assert items["one-variable"].status == "missing" and "without a recorded reason" in items["one-variable"].why
    reason = ev.Decision(action="override one-variable rule: a, b", reason="vendor asked")
    items = {i.key: i for i in checklist.evaluate([*_session(), reason, two])}
    assert items["one-variable"].status == "done" and "1 with a recorded reason" in items["one-variable"].why


def test_a_cpu_host_makes_gpu_items_not_applicable_rather_than_done():
    events = [
        ev.SceneFrozen(scene={"host": {}, "gpus": [], "container": None}),
        ev.RunConfigSet(config={"model_path": "/m"}, diff=[{"key": "model_path"}]),
    ]
    items = {i.key: i for i in checklist.evaluate(events)}
    assert items["drivers"].status == "n/a" and items["gpu-layout"].status == "n/a"
    assert items["image-cuda-model"].status == "done"


def test_k3tuis_own_helper_runs_are_not_servers_under_test():
    helpers = [ev.RunStarted(run="freeze-1-2", command="sh probe"), ev.RunStarted(run="gpu-1", command="nvidia-smi")]
    items = {i.key: i for i in checklist.evaluate([*_session(), *helpers])}
    assert items["one-variable"].status == "done", items[
        "one-variable"
    ].why  # helpers have no server log: not asked for
    assert "2 run(s)" in items["command-env"].why
    sample = ev.GpuSample(gpus=[ev.GpuMem(index=0)], processes=[ev.GpuProc(gpu=0, pid=9, name="other")])
    assert _by_name([helpers[0], sample])[
        "gpus-exclusive"
    ].tripped  # a freeze probe does not make foreign GPU users ours


def test_an_api_with_another_max_model_len_is_not_the_run_just_started():
    import asyncio

    from k3tui.ladder.config import RunConfig
    from k3tui.ladder.rungs import _wrong_server
    from k3tui.ladder.server import Server

    class _H:
        alias = "h"

    s = Server(_H(), "r2-x-minimal", RunConfig(max_model_len=4096), 8000, lambda e: e, ended=asyncio.Event())
    assert "another process answers on port 8000" in _wrong_server(s, [{"id": "m", "max_model_len": 1024}])
    assert _wrong_server(s, [{"id": "m", "max_model_len": 4096}]) == ""
    assert _wrong_server(s, [{"id": "m"}]) == ""  # cannot tell: not flagged

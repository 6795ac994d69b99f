"""The bisect search against a pure oracle: classes of configs, not examples.

The oracle is a set of causes: a configuration (G plus some of B's variables) fails with B's
signature exactly when it contains one whole cause. Properties: the search names the cause
(or the smallest interacting set), confirms it, needs fewer runs than a linear walk for one
culprit among 8+, stops on drift with both runs named, and repeats flaky configurations.
"""

from __future__ import annotations

import asyncio
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from k3tui.ladder.bisect import Attempt, Bisector, expected_runs, plan, worst_runs
from k3tui.ladder.config import RunConfig

SIG = "weights|ModuleNotFoundError|No module named <name>"


def oracle(causes: list[frozenset[str]], *, drift_on: str = "", flaky: float = 0.0, seed: int = 0):
    rng = random.Random(seed)
    count = [0]

    async def probe(changes, repeats):
        out = []
        for _ in range(repeats):
            count[0] += 1
            rid = f"r{count[0]}"
            if drift_on and drift_on in changes:
                out.append(Attempt(False, "engine|RuntimeError|NCCL error", rid))
            elif any(c <= set(changes) for c in causes):
                out.append(Attempt(flaky > 0 and rng.random() < flaky, SIG, rid))
            else:
                out.append(Attempt(True, "", rid))
        return out

    return probe


def run(changes, probe, **kw):
    return asyncio.run(Bisector(changes, probe, **kw).run())


keys_st = st.integers(min_value=1, max_value=20).map(lambda n: [f"env:V{i}" for i in range(n)])


@settings(max_examples=120, deadline=None)
@given(keys=keys_st, data=st.data(), repeat=st.integers(1, 3))
def test_one_culprit_named_confirmed_within_worst_case(keys, data, repeat):
    culprit = data.draw(st.sampled_from(keys))
    changes = {k: f"v-{k}" for k in keys}
    out = run(changes, oracle([frozenset({culprit})]), repeat=repeat)
    assert out.kind == "culprit", out.line
    assert out.culprits == [culprit] and out.confirmed
    assert out.line.startswith(f"culprit: {culprit}=v-{culprit} ")
    assert (
        f"good with (unset): {repeat}/{repeat} passed; bad with v-{culprit}: {repeat}/{repeat} reproduced" in out.line
    )
    assert out.runs <= worst_runs(len(keys))
    by_taken = {frozenset(t.taken): t.verdict for t in out.trials}
    assert by_taken[frozenset({culprit})] == "bad"  # G plus only the culprit fails
    assert by_taken[frozenset(keys) - {culprit}] == "good"  # B minus only the culprit passes


@settings(max_examples=80, deadline=None)
@given(keys=st.integers(3, 16).map(lambda n: [f"flag:f{i}" for i in range(n)]), data=st.data())
def test_interaction_gives_smallest_set(keys, data):
    pair = data.draw(st.lists(st.sampled_from(keys), min_size=2, max_size=3, unique=True))
    out = run({k: True for k in keys}, oracle([frozenset(pair)]))
    assert out.kind == "interaction", out.line
    assert sorted(out.culprits) == sorted(pair) and out.confirmed
    assert "no single variable flips it" in out.line


@settings(max_examples=60, deadline=None)
@given(keys=st.integers(2, 12).map(lambda n: [f"env:E{i}" for i in range(n)]), data=st.data())
def test_drift_stops_with_both_runs(keys, data):
    culprit, other = data.draw(st.lists(st.sampled_from(keys), min_size=2, max_size=2, unique=True))
    changes = {k: "1" for k in keys}
    probe = oracle([frozenset({culprit})], drift_on=other)

    async def b_first(ch, rep):  # B itself carries the drifting variable: B's signature must be its own
        return await probe(ch, rep) if ch != changes else [Attempt(False, SIG, "rB")] * rep

    out = run(changes, b_first)
    if out.kind == "drift":
        assert "rB" in out.line and "NCCL error" in out.line
    else:  # the search never ran a config holding `other` without B's full set
        assert out.kind == "culprit" and out.culprits == [culprit]


def test_flaky_gets_more_repetitions():
    keys = [f"env:X{i}" for i in range(8)]
    out = run({k: "1" for k in keys}, oracle([frozenset({"env:X5"})], flaky=0.4, seed=3), repeat=4)
    assert any("flaky" in t.purpose and t.repeats == 8 for t in out.trials)
    assert out.culprits == ["env:X5"]


def test_good_failing_and_bad_passing_are_outcomes():
    ch = {"env:A": "1", "env:B": "2", "env:C": "3", "env:D": "4"}
    assert run(ch, oracle([])).kind == "not-reproduced"
    assert run(ch, oracle([frozenset()])).kind == "good-fails"


def test_budget_stops_with_what_is_known():
    ch = {f"env:V{i}": "1" for i in range(16)}
    out = run(ch, oracle([frozenset({"env:V9"})]), budget=3)
    assert out.kind == "budget" and out.runs == 3


def test_fewer_runs_than_linear_walk_for_eight_or_more():
    for n in (8, 16):
        keys = [f"env:V{i}" for i in range(n)]
        runs = [run({k: "1" for k in keys}, oracle([frozenset({c})])).runs for c in keys]
        linear = [2 + keys.index(c) + 1 + 2 for c in keys]  # G, B, the walk to the culprit, confirmations
        assert sum(runs) < sum(linear), (n, runs)


def test_plan_separates_observed_variables():
    g = RunConfig(image="vllm/vllm-openai:kimi-k3", driver="580.95.05", max_model_len=4096)
    b = RunConfig(image="vllm/vllm-openai:kimi-k3-cu129", driver="575.57.08", max_model_len=262144, env={"NCCL_X": "1"})
    p = plan(g, b)
    assert p.fixed == ["driver"]
    assert set(p.changeable) == {"image", "max_model_len", "env:NCCL_X"}
    assert p.expected_runs == expected_runs(3) <= p.worst_runs


def test_a_session_file_is_a_side_of_the_bisect(tmp_path):
    """``--good SESSION.k3rec`` takes the config of its last recorded run; the differences are listed."""
    import subprocess
    import sys

    import msgspec

    from k3tui import events as ev
    from k3tui.ladder.config import parse_command
    from k3tui.recording import Recorder

    cfg = parse_command("vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 8 --max-model-len 4096 --enforce-eager")
    path = tmp_path / "g.k3rec"
    with Recorder(path, ev.Header(host="h")) as rec:
        rec.emit(ev.RunConfigSet(run="r1", config=msgspec.to_builtins(cfg)))
    argv = [sys.executable, "-m", "k3tui.cli", "bisect", "demo:healthy", "--good", str(path), "--bad-set", "env:X=1"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert "1 variable(s) differ" in proc.stdout and "env:X: None -> '1'" in proc.stdout, proc.stdout + proc.stderr
    empty = tmp_path / "e.k3rec"
    with Recorder(empty, ev.Header(host="h")):
        pass
    argv[6] = str(empty)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "records no run config" in proc.stderr


def test_a_frozen_scene_is_a_side_of_the_bisect(tmp_path):
    """``--good SCENE.json``: the server the scene froze (a real simulated freeze: the container's
    ``vllm serve`` entrypoint and args, image, driver, GPUs, serving env); a scene with no vLLM server
    is a one-line refusal."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from k3tui import events as ev
    from k3tui.reader import read_all

    rec = Path(__file__).resolve().parent.parent / "recordings" / "demo-cuda-compat-803.k3rec"
    scene = next(e.scene for e in read_all(str(rec))[1] if isinstance(e, ev.SceneFrozen))
    good = tmp_path / "good.json"
    good.write_text(json.dumps(scene))
    argv = [
        sys.executable,
        "-m",
        "k3tui.cli",
        "bisect",
        "demo:healthy",
        "--good",
        str(good),
        "--bad-set",
        "max_model_len=4096",
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert "1 variable(s) differ" in proc.stdout and "max_model_len: None -> 4096" in proc.stdout, (
        proc.stdout + proc.stderr
    )

    from k3tui.commands.bisect import scene_config

    cfg = scene_config(str(good))
    assert cfg.image == "vllm/vllm-openai:kimi-k3" and cfg.model_path == "moonshotai/Kimi-K3"
    assert (
        cfg.tensor_parallel_size == 8
        and cfg.gpu_count == len(scene["gpus"])
        and cfg.driver == scene["host"]["driver_version"]
    )
    assert cfg.flags.get("enable-prefix-caching") is True

    other = dict(scene, process={"pid": 1, "cmdline": ["sleep", "60"]}, container=None)
    bad_scene = tmp_path / "not-vllm.json"
    bad_scene.write_text(json.dumps(other))
    argv[6] = str(bad_scene)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert (
        proc.returncode == 2
        and "holds no vLLM server launch" in proc.stderr
        and len(proc.stderr.strip().splitlines()) == 1
    )


def test_a_driver_below_the_profile_is_reported_not_bisectable(tmp_path):
    """The driver is observed, not set by a run: a bad side on an older driver (r575, below the
    profile's 580) is listed as "not bisectable here: compare on an isolated node", left out of the
    search; when it is the only difference there is nothing to bisect (exit 1, no run started)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from k3tui import events as ev
    from k3tui.reader import read_all

    rec = Path(__file__).resolve().parent.parent / "recordings" / "demo-cuda-compat-803.k3rec"
    scene = next(e.scene for e in read_all(str(rec))[1] if isinstance(e, ev.SceneFrozen))
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(scene))
    bad.write_text(json.dumps(dict(scene, host=dict(scene["host"], driver_version="575.57.08"))))
    cli = [sys.executable, "-m", "k3tui.cli", "bisect", "demo:driver-r575", "--good", str(good), "--bad", str(bad)]
    proc = subprocess.run(
        [*cli, "--bad-set", "max_model_len=4096"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    out = proc.stdout
    driver = next(line for line in out.splitlines() if line.strip().startswith("driver:"))
    assert driver.strip() == (
        f"driver: {scene['host']['driver_version']!r} -> '575.57.08'  (not bisectable here: compare on an isolated node)"
    ), out
    assert "2 variable(s) differ" in out and "bisectable: 1;" in out
    assert "not bisectable" not in next(line for line in out.splitlines() if "max_model_len:" in line)
    only = subprocess.run(cli + ["--yes"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert only.returncode == 1 and "not bisectable here: compare on an isolated node" in only.stdout
    assert only.stdout.strip().splitlines()[-1] == "result: nothing to bisect (no changeable variable differs)"


@settings(max_examples=25, deadline=None)
@given(n=st.integers(min_value=3, max_value=16), data=st.data())
def test_a_search_interrupted_anywhere_resumes_from_its_recording(n, data):
    """Cancelled after any number of judged steps, the recorded steps (a RunConfigSet then the step's
    Decision, as the CLI records them) resume the search: same answer, same walk, and no judged
    configuration is probed again."""
    import msgspec

    from k3tui import events as ev
    from k3tui.ladder.bisect import judged_steps, step_decision
    from k3tui.ladder.config import apply_changes

    keys = [f"env:V{i}" for i in range(n)]
    changes = {k: "1" for k in keys}
    causes = [frozenset({data.draw(st.sampled_from(keys))})]
    full = run(changes, oracle(causes))
    stop_after = data.draw(st.integers(min_value=1, max_value=full.runs - 1))
    calls = [0]
    inner = oracle(causes)

    async def interrupted(taken, repeats):
        if calls[0] == stop_after:
            raise asyncio.CancelledError
        calls[0] += 1
        return await inner(taken, repeats)

    b = Bisector(changes, interrupted)
    try:
        asyncio.run(b.run())
    except asyncio.CancelledError:
        pass
    assert len(b.trials) == stop_after and b.candidates
    good = RunConfig()
    events = []
    for t in b.trials:
        cfg = apply_changes(good, {k: changes[k] for k in t.taken})
        events.append(ev.RunConfigSet(config=msgspec.to_builtins(cfg)))
        action, reason = step_decision(t, b.estimate, b.target)
        events.append(ev.Decision(action=action, reason=reason))
    known, target, kept = judged_steps(events, {k: None for k in keys}, changes)
    assert [t.taken for t in known] == [t.taken for t in b.trials] and len(kept) == len(events)
    assert target == (SIG if any(t.verdict == "bad" for t in b.trials) else "")
    probed = []
    again = oracle(causes)

    async def recorder(taken, repeats):
        probed.append(frozenset(taken))
        return await again(taken, repeats)

    out = run(changes, recorder, known=known, target=target)
    assert (out.kind, out.culprits, out.line, out.confirmed) == (full.kind, full.culprits, full.line, full.confirmed)
    assert [t.purpose for t in out.trials] == [t.purpose for t in full.trials]
    assert not set(probed) & {frozenset(t.taken) for t in known}
    assert len(probed) == full.runs - stop_after

"""The sample sessions in recordings/ (made by `k3tui demo --headless`) stay readable and truthful.

They are what the home screen offers and what a new colleague replays first: each must
verify, say it was simulated, and show the failure its scenario promises.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from k3tui import events as ev
from k3tui.assets import recordings_dir
from k3tui.reader import read_all, verify
from k3tui.sim import scenarios
from k3tui.state import fold

SAMPLES = sorted(recordings_dir().glob("*.k3rec"))
EXPECTED = {s.name: s for s in scenarios()}


def test_there_are_samples() -> None:
    assert len(SAMPLES) >= 3


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_sample_verifies_and_shows_its_scenario(path: Path) -> None:
    result = verify(path)
    assert result.ok and not result.truncated, result.message
    rec, events = read_all(path, strict=True)
    assert rec.header.simulated, "a demo recording must say the host was simulated"
    state = fold(events)
    assert state.simulated
    scenario = EXPECTED[path.stem.removeprefix("demo-")]
    if scenario.expected_stage == "none":
        assert state.first_exception is None
    else:
        assert state.first_exception is not None
        assert state.first_exception.stage == scenario.expected_stage
        assert scenario.expected_exception in state.first_exception.line
    assert state.scenes, "every demo freezes the scene at least once"


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_sample_has_no_false_alarm(path: Path) -> None:
    """Nothing else served on the simulated host: a FAIL here came from another sim on the
    machine that recorded it (the samples of the first session said so) and misleads a reader."""
    _, events = read_all(path, strict=True)
    live = [e for e in events if isinstance(e, ev.CheckVerdict) and (e.rung, e.check) == ("stop", "live-inference")]
    assert live and all(e.verdict == "PASS" for e in live), [e.evidence for e in live]


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_headless_replay_says_where_each_run_failed(path: Path) -> None:
    from k3tui.commands.replay import headless_lines
    from k3tui.replay import Replay

    rp = Replay(path)
    rp.seek(rp.count)
    lines = headless_lines(rp)
    runs = [ln for ln in lines if ln.startswith("run ")]
    assert runs and all("configured, not started" not in ln for ln in runs), lines
    scenario = EXPECTED[path.stem.removeprefix("demo-")]
    failed = [ln for ln in runs if "failed at stage" in ln]
    if scenario.expected_stage == "none":
        assert not failed, failed
    else:
        assert any(f"failed at stage {scenario.expected_stage} " in ln for ln in failed), runs

"""The TUI's bisect view (issue 20) on recordings made by the real ``k3tui bisect`` against the simulated host.

One module-scoped pair of runs (started together, ~10 s): a whole bisect of
``fastsafetensors-missing`` (the culprit is ``flag:load-format``) and the same bisect
interrupted with SIGINT after two judged steps (its closing ``bisect aborted`` Decision). The
replay screen shows the walk from the fold: at the end the steps, verdicts and the culprit line;
seeked back to the middle fewer steps and no culprit; the aborted one says how to resume.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from k3tui import events as ev
from k3tui.bisect_walk import taken_of, walk
from k3tui.reader import read_all
from k3tui.state import fold
from screens.app import K3App
from screens.replay.replay_screen import ReplayScreen
from screens.session.bisect_panel import BisectPanel

from .test_bisect_sim import CASES, NOISE, interrupt_after_two_steps
from .ui_recordings import open_screen

SCENARIO = "fastsafetensors-missing"
CULPRIT = "flag:load-format=fastsafetensors"


def _argv(record: Path) -> list[str]:
    good, cause, _ = CASES[SCENARIO]
    return [
        sys.executable, "-m", "k3tui.cli", "bisect", f"demo:{SCENARIO}", "--good", "profile", *good,
        *cause, *NOISE, "--speed", "4", "--yes", "--record", str(record),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def bisects(tmp_path_factory) -> tuple[Path, Path]:
    """(a whole bisect, one interrupted after two judged steps), both recorded by the real CLI."""
    d = tmp_path_factory.mktemp("bisect")
    whole, cut = d / "whole.k3rec", d / "cut.k3rec"
    pipe = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    p_whole = subprocess.Popen(_argv(whole), **pipe)
    p_cut = subprocess.Popen(_argv(cut), **pipe)
    interrupt_after_two_steps(p_cut, cut)
    out, err = p_whole.communicate(timeout=240)
    assert p_whole.returncode == 0, out[-1500:] + err[-1500:]
    assert out.strip().splitlines()[-1].startswith(f"culprit: {CULPRIT} (")
    return whole, cut


def _panel(rs: ReplayScreen) -> str:
    panel = rs.query_one(BisectPanel)
    return str(panel.render()) if panel.display else ""


def _step_decisions(events: list) -> list[int]:
    """Indexes of the step Decisions in ``events``."""
    return [i for i, e in enumerate(events) if isinstance(e, ev.Decision) and e.action.startswith("bisect step")]


def test_the_fold_holds_the_walk_that_walk_reads(bisects):
    """SessionState.bisect is the same walk as replay --headless / REPORT.md (one parser), plus candidates."""
    whole, _ = bisects
    _, events = read_all(whole)
    b = fold(events).bisect
    rows, answer = walk(e for e in events if isinstance(e, ev.Decision))
    assert b is not None and b.steps == rows and b.answer == answer and b.end == "culprit" and b.found
    assert len(b.keys) == 5 and b.candidates == ["flag:load-format"]
    assert b.estimate == rows[0].of
    # before the first judged step there is no walk; after step 1 (B reproduced) every variable is a candidate
    first = _step_decisions(events)[0]
    assert fold(events[:first]).bisect is None
    early = fold(events[: first + 1]).bisect
    assert early is not None and len(early.steps) == 1 and early.candidates == early.keys and not early.end


def test_the_purposes_the_search_writes_parse_back_to_what_it_took():
    """taken_of reads back every purpose the Bisector writes (culprit at each position, and an interaction)."""
    import asyncio

    from k3tui.ladder.bisect import Attempt, Bisector

    keys = [f"k{i}" for i in range(6)]
    for bad_when in ([{"k0"}], [{"k3"}], [{"k5"}], [{"k1", "k4"}]):

        async def probe(changes, repeat, bad_when=bad_when):  # noqa: ANN001, ANN202
            bad = any(s <= set(changes) for s in bad_when)
            return [Attempt(not bad, "sig" if bad else "") for _ in range(repeat)]

        b = Bisector({k: 1 for k in keys}, probe)
        out = asyncio.run(b.run())
        assert out.kind in ("culprit", "interaction")
        for t in out.trials:
            assert taken_of(t.purpose, keys) is not None, t.purpose
            assert set(taken_of(t.purpose, keys)) == set(t.taken), t.purpose


async def test_replay_shows_the_walk_and_the_culprit_and_seeking_back_shows_less(bisects):
    whole, _ = bisects
    _, events = read_all(whole)
    steps = _step_decisions(events)
    app = K3App(replay_path=whole, home_dirs=[])
    async with app.run_test(size=(120, 40)) as pilot:
        rs = await open_screen(app, pilot, ReplayScreen)
        assert not rs.query_one(BisectPanel).display  # position 0: no bisect step folded yet
        await pilot.press("G")
        await pilot.pause(0.2)
        text = _panel(rs)
        assert f"bisect step {len(steps)} of ~" in text and "1 candidate left" in text
        assert f"culprit: {CULPRIT} (" in text
        assert "B (as given)" in text and "G (as given)" in text and "✓ B-flag:load-format" in text
        assert text.count(" bad ") >= 2 and text.count(" good ") >= 2
        # seek to the middle: just after the third step's Decision
        rs.seek(steps[2] + 1)
        await pilot.pause(0.2)
        mid = _panel(rs)
        assert "bisect step 3 of ~" in mid and "culprit" not in mid and "earlier step" not in mid
        rows = [ln for ln in mid.splitlines() if ln[:2].strip().isdigit()]
        assert [ln.split()[0] for ln in rows] == ["1", "2", "3"]
        assert "5 candidates left" not in mid and "3 candidates left" in mid  # step 3 reproduced with 3 of B's 5
        # and forward again: the answer is back
        await pilot.press("G")
        await pilot.pause(0.2)
        assert f"culprit: {CULPRIT}" in _panel(rs)


async def test_an_aborted_bisect_says_aborted_and_how_to_resume(bisects):
    _, cut = bisects
    _, events = read_all(cut)
    assert [e for e in events if isinstance(e, ev.Decision)][-1].action == "bisect aborted"
    app = K3App(replay_path=cut, home_dirs=[])
    async with app.run_test(size=(120, 40)) as pilot:
        rs = await open_screen(app, pilot, ReplayScreen)
        await pilot.press("G")
        await pilot.pause(0.2)
        text = _panel(rs)
        n = len(_step_decisions(events))
        assert f"bisect step {n} of ~" in text and "culprit:" not in text
        said = [e for e in events if isinstance(e, ev.Decision)][-1].reason.partition("; resume with: ")[2]
        assert said.startswith("k3tui bisect demo:fastsafetensors-missing") and "--bad-set" in said, said
        assert "aborted after" in text and said in "".join(text.split("\n"))  # the exact command, recorded
        assert "flag:load-format" in text.split("culprit among", 1)[1]  # the candidates left name the culprit


async def test_follow_shows_the_walk_of_a_bisect_being_recorded(bisects, tmp_path):
    """``replay --follow``: a colleague watches; steps appended to the file appear in the panel."""
    whole, _ = bisects
    header_line, *lines = whole.read_bytes().splitlines(keepends=True)
    _, events = read_all(whole)
    third = _step_decisions(events)[2] + 1  # events are lines 2… of the file (the header is line 1)
    live = tmp_path / "live.k3rec"
    live.write_bytes(header_line + b"".join(lines[:third]))
    from k3tui.follow import LiveFollow, LocalSource

    async def opener():  # noqa: ANN202
        return LocalSource(live), None

    app = K3App(live=LiveFollow(opener, tmp_path / "spool"), home_dirs=[])
    async with app.run_test(size=(120, 40)) as pilot:
        rs = await open_screen(app, pilot, ReplayScreen)
        for _ in range(60):
            await pilot.pause(0.1)
            if "bisect step 3 of" in _panel(rs):
                break
        assert "bisect step 3 of" in _panel(rs) and "culprit" not in _panel(rs)
        with live.open("ab") as f:
            f.write(b"".join(lines[third:]))
        for _ in range(100):
            await pilot.pause(0.1)
            if "culprit:" in _panel(rs):
                break
        assert f"culprit: {CULPRIT}" in _panel(rs)


def test_bisect_panel_at_80x24(snap_compare, bisects, tmp_path):
    """The end of the walk at 80×24 from a deterministic copy of the real recording (its decisions, configs
    and rungs at fixed times, run ids and timings dropped): the panel sits first in the side column, the answer whole."""
    from k3tui.recording import Recorder
    from k3tui.redact import Redactor

    whole, _ = bisects
    _, events = read_all(whole)
    keep = (ev.Decision, ev.RunConfigSet, ev.RungEntered, ev.RungLeft)
    path = tmp_path / "bisect.k3rec"
    rec = Recorder(
        path,
        ev.Header(host="demo:fastsafetensors-missing", profile="kimi-k3", title="k3tui bisect", started=1764475200.0),
        redactor=Redactor(),
    )
    for i, e in enumerate(x for x in events if isinstance(x, keep)):
        fixed = {"t": 1.0 + i}
        if isinstance(e, ev.RunConfigSet):
            fixed["run"] = ""
        if isinstance(e, ev.RungLeft):
            fixed["summary"] = ""  # "API ready in 1.7 s": the run's own timing
        rec.emit(type(e)(**{**{f: getattr(e, f) for f in e.__struct_fields__}, **fixed}))
    rec.close()
    app = K3App(replay_path=path, home_dirs=[])

    async def go(pilot):  # noqa: ANN001
        await open_screen(app, pilot, ReplayScreen)
        await pilot.press("G")
        await pilot.pause(0.3)
        app.clear_notifications()
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=(80, 24), run_before=go)

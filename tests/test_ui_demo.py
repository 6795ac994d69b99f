"""The whole path, for real: the TUI drives the LiveDriver against the simulated GB300 host over SSH.

Connect, run the baseline and the minimal launch on the ``nccl-init`` scenario, see the
freeze banner, add a note, quit — then the recording verifies and holds the note.
"""

from __future__ import annotations

import pytest

from k3tui import events as ev
from k3tui.reader import read_all, verify
from screens.session.freeze_banner import FreezeBanner
from screens.session.session_screen import SessionScreen
from tests.ui_recordings import demo_app

pytestmark = pytest.mark.slow


async def _until(pilot, cond, seconds: float) -> None:  # noqa: ANN001
    for _ in range(int(seconds / 0.1)):
        if cond():
            return
        await pilot.pause(0.1)
    raise AssertionError("condition not reached in time")


def _operator_freezes(path) -> int:  # noqa: ANN001
    _, events = read_all(path)
    return sum(1 for e in events if isinstance(e, ev.SceneFrozen) and e.reason == "operator")


async def test_demo_nccl_init_freeze_banner_and_note(tmp_path):
    path = tmp_path / "demo.k3rec"
    app = demo_app("nccl-init", path)  # as `k3tui demo` does
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.ready, 60)
        ss = app.screen
        assert ss.query_one("#simbar").has_class("-shown")
        await pilot.press("r")
        await _until(
            pilot, lambda: ss.view.state.rungs.get("baseline") and ss.view.state.rungs["baseline"].state == "done", 120
        )
        await pilot.press("r")
        await _until(pilot, lambda: ss.query_one(FreezeBanner).display, 180)
        text = str(ss.query_one(FreezeBanner).render())
        assert "ENGINE" in text and "NCCL" in text
        await _until(
            pilot, lambda: ss.view.state.rungs.get("minimal") and ss.view.state.rungs["minimal"].state == "done", 120
        )
        await pilot.press("x")
        # x lands on the root line itself, tagged with the stage it failed in (engine), not the last one entered
        root = ss.view.log_view.lines[ss.view.log_view.current]
        assert root.startswith("E│") and "NCCL error" in root, root
        await pilot.press("f")  # an operator freeze, on top of the automatic one
        await _until(pilot, lambda: _operator_freezes(path) >= 1, 60)
        await pilot.press("n")
        await pilot.pause(0.2)
        await pilot.press(*"shm exhausted on the host", "enter")
        await _until(pilot, lambda: any(n.text == "shm exhausted on the host" for n in ss.view.state.notes), 10)
        await pilot.press("q")
        await pilot.pause(0.5)
    assert verify(path).ok
    _, events = read_all(path)
    assert any(isinstance(e, ev.Note) and e.text == "shm exhausted on the host" for e in events)
    assert any(isinstance(e, ev.ExceptionFound) and "NCCL" in e.line for e in events)

"""The TUI names the hardware fault and the node: the runtime-xid79 demo (simulated host over SSH).

Issue 14: on this scenario the banner used to blame ``CUDA error: unspecified launch failure``
and advise ``CUDA_LAUNCH_BLOCKING=1`` on a GPU that had fallen off the bus. Now the baseline's
freeze holds the kernel's Xid 79, the hardware stop trips, and the banner says which host,
which GPU, what happened and what to do before anything else.
"""

from __future__ import annotations

import pytest

from screens.session.freeze_banner import FreezeBanner
from screens.session.session_screen import SessionScreen
from tests.test_ui_demo import _until
from tests.ui_recordings import demo_app

pytestmark = pytest.mark.slow


async def test_runtime_xid79_demo_banner_names_the_xid_the_gpu_and_the_node(tmp_path) -> None:
    app = demo_app("runtime-xid79", tmp_path / "d.k3rec")
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.ready, 60)
        ss = app.screen
        await pilot.press("r")  # the baseline: its freeze reads the kernel log
        await _until(pilot, lambda: ss.query_one(FreezeBanner).display, 120)
        text = str(ss.query_one(FreezeBanner).render())
        assert "HARDWARE" in text and "gb300-sim GPU 3: Xid 79 at " in text, text
        assert (
            "GPU has fallen off the bus" in text and "drain gb300-sim and reset GPU 3 before any further step" in text
        )
        assert "CUDA_LAUNCH_BLOCKING" not in text
        await pilot.press("q")
        await pilot.pause(0.5)


@pytest.mark.parametrize(
    "scenario", ["gpu-ecc-row-remap", "nvl72-clique-mismatch", "nvl72-imex-down", "runtime-nvlink-errors"]
)
async def test_every_static_hardware_fault_demo_stops_with_a_hardware_banner_naming_the_node(
    tmp_path, scenario
) -> None:
    """The other planted faults (uncorrectable ECC / failed row remap, trays in two NVLink cliques, IMEX
    down on one tray): the baseline's freeze sees them, and the banner says HARDWARE, names a simulated
    node and says what to do before any further step."""
    app = demo_app(scenario, tmp_path / "d.k3rec")
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.ready, 60)
        ss = app.screen
        await pilot.press("r")
        await _until(pilot, lambda: ss.query_one(FreezeBanner).display, 120)
        text = str(ss.query_one(FreezeBanner).render())
        assert "HARDWARE" in text and "gb300-sim" in text and "before any further step" in text, text
        assert "CUDA_LAUNCH_BLOCKING" not in text
        await pilot.press("q")
        await pilot.pause(0.5)


async def test_o_climbs_past_the_hardware_stop_with_a_recorded_reason_and_the_banner_shows_root_then_consequence(
    tmp_path,
) -> None:
    """In the TUI a hardware stop is not a dead end: ``o`` asks why, records the Decision, and the next
    rungs run; the runtime failure that follows is shown as the Xid's consequence (issue 14)."""
    from k3tui import events as ev
    from k3tui.ladder import stops
    from k3tui.reader import read_all
    from screens.common.prompt_dialog import PromptDialog

    rec = tmp_path / "d.k3rec"
    app = demo_app("runtime-xid79", rec)
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.ready, 60)
        ss = app.screen
        rung = lambda name: ss.view.state.rungs.get(name)  # noqa: E731
        await pilot.press("r")  # baseline: its freeze holds the Xid 79 (GPU 3 owes a reboot); the stop trips
        await _until(pilot, lambda: rung("baseline") and rung("baseline").state == "done", 120)
        assert rung("baseline").verdict == "FAIL" and "kernel-faults" in rung("baseline").summary
        await pilot.press("o")
        await _until(pilot, lambda: isinstance(app.screen, PromptDialog), 10)
        await pilot.press("enter")  # an empty reason: the stop holds, nothing is recorded
        await _until(pilot, lambda: app.screen is ss, 10)
        await pilot.press("o")
        await _until(pilot, lambda: isinstance(app.screen, PromptDialog), 10)
        for ch in "see the software symptom":
            await pilot.press("space" if ch == " " else ch)
        await pilot.press("enter")
        await _until(pilot, lambda: app.screen is ss, 10)
        await pilot.press("r")  # minimal launch: it runs now
        await _until(pilot, lambda: rung("minimal") and rung("minimal").state == "done", 180)
        await pilot.press("r")  # the fixed request: the GPU that fell off the bus fails it
        await _until(pilot, lambda: "root:" in str(ss.query_one(FreezeBanner).render()), 180)
        text = str(ss.query_one(FreezeBanner).render())
        assert "root: " in text and "Xid 79" in text and "consequence: " in text, text
        assert text.index("root: ") < text.index("consequence: ")
        await pilot.press("q")
        await pilot.pause(0.5)
    decisions = [e for e in read_all(str(rec))[1] if isinstance(e, ev.Decision) and e.action == stops.OVERRIDE]
    assert [d.reason for d in decisions] == ["see the software symptom"]

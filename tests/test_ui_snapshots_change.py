"""Snapshot of the live session's run-config panel after ``c`` previews a change, at 80×24.

Beside ``test_ui_snapshots.py`` (same scripted session, same settling); update with
``--snapshot-update`` and read the SVG before committing it.
"""

from __future__ import annotations

from screens.session.session_screen import SessionScreen

from .test_ui_snapshots import _settle
from .ui_recordings import ScriptedDriver, live_app


def test_live_session_change_preview_80x24(snap_compare, tmp_path, shared):
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text("Host gb300-01\n")
    driver = ScriptedDriver(tmp_path / "live.k3rec", shared)

    app = live_app(driver, ssh_config=ssh_config)

    async def go(pilot):  # noqa: ANN001
        await _settle(pilot, SessionScreen)
        await pilot.press("c")
        await pilot.pause(0.2)
        pilot.app.screen.query_one("#dialog-input").value = "max_model_len=4096"
        await pilot.press("enter")
        await pilot.pause(0.4)
        pilot.app.clear_notifications()
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=(80, 24), run_before=go)

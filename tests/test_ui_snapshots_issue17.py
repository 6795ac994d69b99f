"""Snapshots of issue 17's screens at 80×24 and 160×48: the expanded banner, the wrapped log with
a search position (the demo's scenario list has a Pilot test instead: other engineers add
scenarios, and a snapshot of the list would change with each). Deterministic: the scripted session of
``ui_recordings`` (fixed times), toasts cleared.

Update after an intended change with ``--snapshot-update`` and look at the SVGs first.
"""

from __future__ import annotations

import pytest

from .ui_recordings import ScriptedDriver, failed_session, live_app

SIZES = [(80, 24), (160, 48)]
LONG = "INFO " + " ".join(f"part{i:02d}" for i in range(40)) + " needle-at-the-end"


async def _quiet(pilot) -> None:  # noqa: ANN001
    await pilot.pause(0.3)
    pilot.app.clear_notifications()
    await pilot.pause(0.1)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_banner_expanded(snap_compare, tmp_path, shared, size):
    app = live_app(ScriptedDriver(tmp_path / "live.k3rec", shared))

    async def go(pilot):  # noqa: ANN001
        await failed_session(pilot, settle=0.4)
        await pilot.press("b")
        await _quiet(pilot)

    assert snap_compare(app, terminal_size=size, run_before=go)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_wrapped_log_with_search_position(snap_compare, tmp_path, shared, size):
    app = live_app(ScriptedDriver(tmp_path / "live.k3rec", shared, extra_lines=[LONG, LONG]))

    async def go(pilot):  # noqa: ANN001
        await failed_session(pilot, settle=0.4)
        await pilot.press("w", "slash")
        await pilot.press(*"needle-at", "enter", "escape")
        await _quiet(pilot)

    assert snap_compare(app, terminal_size=size, run_before=go)

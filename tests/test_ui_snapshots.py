"""Snapshots of the main screens at 80×24 and 160×48 (deterministic: fixed times, no clocks, no toasts).

Update after an intended change with ``pytest tests/test_ui_snapshots.py --snapshot-update``
and look at the SVGs in ``tests/__snapshots__/`` before committing them.
"""

from __future__ import annotations

import pytest

from screens.app import K3App
from screens.replay.replay_screen import ReplayScreen
from screens.session.session_screen import SessionScreen

from .ui_recordings import ScriptedDriver, live_app, write_session, write_two_hosts

SIZES = [(80, 24), (160, 48)]


@pytest.fixture
def recdir(tmp_path, shared):
    d = tmp_path / "recs"
    d.mkdir()
    write_session(d / "incident-nccl.k3rec", shared)
    return d


@pytest.fixture
def no_ssh(tmp_path):
    p = tmp_path / "ssh_config"
    p.write_text("Host gb300-01\n")
    return p


async def _steady(pilot) -> None:  # noqa: ANN001
    """Wait until the screen stops changing (two renders alike in a row): a loaded machine can lag a
    fixed pause behind a key's effect (a CI run took the snapshot before the replay had redrawn)."""
    last = None
    for _ in range(100):
        await pilot.pause(0.05)
        now = pilot.app.export_screenshot()
        if now == last:
            return
        last = now


async def _settle(pilot, screen_type) -> None:  # noqa: ANN001
    for _ in range(200):
        await pilot.pause(0.05)
        s = pilot.app.screen
        if isinstance(s, screen_type) and getattr(s, "ready", True):
            break
    await pilot.pause(0.3)
    pilot.app.clear_notifications()
    await pilot.pause(0.1)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_home(snap_compare, recdir, no_ssh, size):
    app = K3App(home_dirs=[recdir], ssh_config=no_ssh)
    assert snap_compare(app, terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_replay_at_the_end(snap_compare, recdir, no_ssh, size):
    app = K3App(replay_path=recdir / "incident-nccl.k3rec", home_dirs=[recdir], ssh_config=no_ssh)

    async def go(pilot):  # noqa: ANN001
        await _settle(pilot, ReplayScreen)
        await pilot.press("G")
        await _steady(pilot)

    assert snap_compare(app, terminal_size=size, run_before=go)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_replay_mid_weights_with_progress(snap_compare, recdir, no_ssh, size):
    app = K3App(replay_path=recdir / "incident-nccl.k3rec", home_dirs=[recdir], ssh_config=no_ssh)

    async def go(pilot):  # noqa: ANN001
        await _settle(pilot, ReplayScreen)
        rs = pilot.app.screen
        rs.seek(rs.engine.search("27/64", forward=False, start=rs.engine.count) + 1)
        await _steady(pilot)

    assert snap_compare(app, terminal_size=size, run_before=go)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_live_session_after_failure(snap_compare, tmp_path, shared, no_ssh, size):
    driver = ScriptedDriver(tmp_path / "live.k3rec", shared)

    app = live_app(driver, ssh_config=no_ssh)

    async def go(pilot):  # noqa: ANN001
        await _settle(pilot, SessionScreen)
        await pilot.press("r")
        for _ in range(200):
            await pilot.pause(0.05)
            r = pilot.app.screen.view.state.rungs.get("minimal")
            if r is not None and r.state == "done" and not pilot.app.screen.view.backlog:
                break
        await pilot.pause(0.4)
        pilot.app.clear_notifications()
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=size, run_before=go)


def test_help_80x24(snap_compare, recdir, no_ssh):
    app = K3App(replay_path=recdir / "incident-nccl.k3rec", home_dirs=[recdir], ssh_config=no_ssh)

    async def go(pilot):  # noqa: ANN001
        await _settle(pilot, ReplayScreen)
        await pilot.press("question_mark")
        await _steady(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=go)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_replay_two_hosts_at_the_end(snap_compare, tmp_path, no_ssh, size):
    """Two trays: a host column in the log, "⌂ all 2 hosts" in its status line, a scene column per node
    named with its recorded role (``tray-a · head``), the banner naming the worker it failed on."""
    path = write_two_hosts(tmp_path / "trays.k3rec")
    app = K3App(replay_path=path, home_dirs=[], ssh_config=no_ssh)

    async def go(pilot):  # noqa: ANN001
        await _settle(pilot, ReplayScreen)
        await pilot.press("G")
        await _steady(pilot)

    assert snap_compare(app, terminal_size=size, run_before=go)

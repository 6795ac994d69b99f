"""Pilot tests of the host selector: a session over two hosts (two GB300 trays), live and replayed.

``h`` (and the command palette's "Host filter") cycles the log through every host → tray-a →
tray-b → every host; with every host shown each line carries its host's column, and the
log's status line says which hosts are shown. A recorded role is shown beside its host
(``tray-a · head``) in the selector, the status line, the scene column and the banner; a
recording from before roles shows the aliases alone. With one host none of it appears.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from screens.app import K3App
from screens.common.help_screen import HelpScreen
from screens.replay.replay_screen import ReplayScreen
from screens.session.freeze_banner import FreezeBanner
from screens.session.scene_panel import ScenePanel
from screens.session.session_screen import SessionScreen

from .ui_recordings import TRAY_ROOT, ScriptedDriver, open_screen, two_host_events, write_session, write_two_hosts


@pytest.fixture
def trays(tmp_path) -> Path:
    return write_two_hosts(tmp_path / "trays.k3rec")


def _status(screen) -> str:  # noqa: ANN001
    return str(screen.query_one("#logstatus").render())


def _says(lines: list[str], host: str) -> list[str]:
    return [ln for ln in lines if f"INFO {host} says" in ln]


def _notes(app) -> list[str]:  # noqa: ANN001
    return [n.message for n in app._notifications]


async def _check_cycle(pilot, screen, roles: bool = True) -> None:  # noqa: ANN001
    a, b = ("tray-a · head", "tray-b · worker") if roles else ("tray-a", "tray-b")
    log = screen.view.log_view
    assert log.hosts == ["tray-a", "tray-b"]
    # every host: both trays' lines, each with its host column after the stage gutter
    lines = list(log.lines)
    assert len(_says(lines, "tray-a")) >= 30 and len(_says(lines, "tray-b")) >= 30
    assert all(ln[2:9] == "tray-a│" for ln in _says(lines, "tray-a"))
    assert all(ln[2:9] == "tray-b│" for ln in _says(lines, "tray-b"))
    assert _status(screen).startswith("⌂ all 2 hosts")

    await pilot.press("h")
    await pilot.pause(0.05)
    lines = list(log.lines)
    assert log.host_filter == "tray-a"
    assert _says(lines, "tray-a") and not _says(lines, "tray-b")
    assert not any("tray-b│" in ln for ln in lines)
    assert all(ln.startswith(("C│INFO tray-a", " │INFO tray-a")) for ln in _says(lines, "tray-a"))  # no host column
    assert not any(TRAY_ROOT in ln for ln in lines)
    assert _status(screen).startswith(f"⌂ {a} only  ")
    assert _notes(screen.app)[-1] == f"log: {a} only (h: next host)"

    await pilot.press("h")
    await pilot.pause(0.05)
    lines = list(log.lines)
    assert log.host_filter == "tray-b"
    assert _says(lines, "tray-b") and not _says(lines, "tray-a")
    assert any(TRAY_ROOT in ln for ln in lines)
    assert _status(screen).startswith(f"⌂ {b} only  ")
    assert _notes(screen.app)[-1] == f"log: {b} only (h: next host)"

    await pilot.press("h")
    await pilot.pause(0.05)
    lines = list(log.lines)
    assert log.host_filter is None
    assert len(_says(lines, "tray-a")) >= 30 and len(_says(lines, "tray-b")) >= 30
    assert _status(screen).startswith("⌂ all 2 hosts")


async def test_replay_cycles_the_log_through_the_hosts(trays):
    app = K3App(replay_path=trays, home_dirs=[])
    async with app.run_test(size=(140, 40)) as pilot:
        rs = await open_screen(app, pilot, ReplayScreen)
        await pilot.press("G")
        await pilot.pause(0.1)
        await _check_cycle(pilot, rs)
        # the banner names the node of the first root exception (and its role); a scene column per node
        banner = str(rs.query_one(FreezeBanner).render())
        assert "on node tray-b · worker" in banner
        scene = str(rs.query_one(ScenePanel).render())
        assert "── tray-a · head frozen" in scene and "── tray-b · worker frozen" in scene
        assert "≠ nodes differ: driver" in scene
        # x on tray-a's log: the first exception is tray-b's, so the host filter is cleared to show it
        await pilot.press("h", "x")
        await pilot.pause(0.05)
        log = rs.view.log_view
        assert log.host_filter is None and log.current is not None
        assert log.lines[log.current].startswith("D│tray-b│ERROR RuntimeError: NCCL error")  # the root line


async def test_host_filter_survives_a_seek_and_the_errors_filter(trays):
    app = K3App(replay_path=trays, home_dirs=[])
    async with app.run_test(size=(140, 40)) as pilot:
        rs = await open_screen(app, pilot, ReplayScreen)
        await pilot.press("G", "h", "h")  # tray-b
        await pilot.pause(0.05)
        await pilot.press("e")
        await pilot.pause(0.05)
        log = rs.view.log_view
        assert [ln for ln in log.lines if TRAY_ROOT in ln]
        assert not _says(list(log.lines), "tray-a")
        await pilot.press("e", "g", "G")  # all lines again, seek to start and back to the end
        await pilot.pause(0.1)
        assert log.host_filter == "tray-b"
        assert _says(list(log.lines), "tray-b") and not _says(list(log.lines), "tray-a")


async def test_palette_and_help_offer_the_host_filter_only_with_several_hosts(trays, tmp_path, shared):
    app = K3App(replay_path=trays, home_dirs=[])
    async with app.run_test(size=(140, 40)) as pilot:
        rs = await open_screen(app, pilot, ReplayScreen)
        await pilot.press("G")
        await pilot.pause(0.1)
        names = [c.title for c in app.get_system_commands(rs)]
        assert any(n.startswith("Host filter") for n in names)
        await pilot.press("question_mark")
        await pilot.pause(0.1)
        assert isinstance(app.screen, HelpScreen)
        assert any(d.startswith("Host filter") for _, d in app.screen.keys)

    one = write_session(tmp_path / "one.k3rec", shared)
    app = K3App(replay_path=one, home_dirs=[])
    async with app.run_test(size=(140, 40)) as pilot:
        rs = await open_screen(app, pilot, ReplayScreen)
        await pilot.press("G")
        await pilot.pause(0.1)
        log = rs.view.log_view
        before = list(log.lines)
        assert log.hosts == ["gb300-sim"] and log.body_start == 2
        assert not any(c.title.startswith("Host filter") for c in app.get_system_commands(rs))
        await pilot.press("h")
        await pilot.pause(0.05)
        assert log.host_filter is None and list(log.lines) == before
        assert "⌂" not in _status(rs)
        assert "on node" not in str(rs.query_one(FreezeBanner).render())


async def test_live_session_cycles_the_log_through_the_hosts(tmp_path, shared):
    driver = ScriptedDriver(tmp_path / "live.k3rec", shared)
    driver._script = two_host_events()

    async def factory():
        return driver

    app = K3App(driver_factory=factory, home_dirs=[])
    async with app.run_test(size=(140, 40)) as pilot:
        ss = await open_screen(app, pilot, SessionScreen)
        for _ in range(100):
            await pilot.pause(0.05)
            if ss.ready:
                break
        await pilot.press("r")
        for _ in range(200):
            await pilot.pause(0.05)
            r = ss.view.state.rungs.get("minimal")
            if r is not None and r.state == "done" and not ss.view.backlog:
                break
        await pilot.pause(0.1)
        await _check_cycle(pilot, ss)
        assert "on node tray-b · worker" in str(ss.query_one(FreezeBanner).render())
        assert {h.alias: h.role for h in ss.view.state.hosts.values()} == {"tray-a": "head", "tray-b": "worker"}


async def test_a_recording_from_before_roles_shows_the_hosts_without_roles(tmp_path):
    old = write_two_hosts(tmp_path / "old.k3rec", roles=False)
    app = K3App(replay_path=old, home_dirs=[])
    async with app.run_test(size=(140, 40)) as pilot:
        rs = await open_screen(app, pilot, ReplayScreen)
        await pilot.press("G")
        await pilot.pause(0.1)
        await _check_cycle(pilot, rs, roles=False)
        banner = str(rs.query_one(FreezeBanner).render())
        scene = str(rs.query_one(ScenePanel).render())
        assert "on node tray-b " in banner and "── tray-a frozen" in scene and "── tray-b frozen" in scene
        assert " · head" not in banner + scene and " · worker" not in banner + scene

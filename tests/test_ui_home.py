"""Pilot tests of Home (recent sessions, connect, demo, open) and of the command palette entries."""

from __future__ import annotations

import shutil

import pytest

from screens.app import K3App
from screens.common.help_screen import HelpScreen
from screens.home.home_screen import HomeScreen
from screens.home.recent_sessions import RecentSessions
from screens.home.ssh_aliases import ssh_aliases
from screens.replay.replay_screen import ReplayScreen
from screens.session.session_screen import SessionScreen

from .ui_recordings import ScriptedDriver, write_session


@pytest.fixture
def recdir(tmp_path, shared):
    d = tmp_path / "recs"
    d.mkdir()
    write_session(d / "incident-a.k3rec", shared)
    (d / "garbage.k3rec").write_bytes(b"\x1b]0;pwned\x07 not a session\n")
    return d


def test_ssh_aliases_skip_wildcards_and_follow_includes(tmp_path):
    (tmp_path / "more").write_text("Host gb300-02 gb300-03\n  HostName 10.0.0.3\n")
    cfg = tmp_path / "config"
    cfg.write_text("# comment\nHost gb300-01\n  User oncall\nHost *.lab !bad\nInclude more\nHost gb300-01\n")
    assert ssh_aliases(cfg) == ["gb300-01", "gb300-02", "gb300-03"]
    assert ssh_aliases(tmp_path / "missing") == []


async def test_recent_sessions_open_and_back(recdir, tmp_path):
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host gb300-01\n")
    app = K3App(home_dirs=[recdir], ssh_config=cfg)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        home = app.screen
        assert isinstance(home, HomeScreen)
        table = home.query_one(RecentSessions)
        names = [e.path.name for e in table.entries]
        assert names == ["incident-a.k3rec", "garbage.k3rec"]
        assert "not a k3rec session file" in table.entries[1].problem
        assert "\x1b" not in str(table.get_row_at(1))
        await pilot.press("enter")
        for _ in range(60):
            await pilot.pause(0.05)
            if isinstance(app.screen, ReplayScreen):
                break
        assert isinstance(app.screen, ReplayScreen)
        await pilot.press("escape")
        assert app.screen is home
        # the broken file: a clear error, still on Home
        await pilot.press("down", "enter")
        await pilot.pause(0.4)
        assert app.screen is home
        assert any("not a k3rec session file" in n.message for n in app._notifications)
        # connect without a session factory says how to start one
        await pilot.press("c", *"gb3")
        assert home.query_one("#target").value == "gb3"
        await pilot.press("right")  # accept the ssh-config suggestion
        assert home.query_one("#target").value == "gb300-01"
        await pilot.press("enter")
        assert any("k3tui connect gb300-01" in n.message for n in app._notifications)
        await pilot.press("escape", "question_mark")
        await pilot.pause(0.05)
        assert isinstance(app.screen, HelpScreen)


async def test_open_by_path_and_copy_elsewhere(recdir, tmp_path):
    other = tmp_path / "elsewhere.k3rec"
    shutil.copy(recdir / "incident-a.k3rec", other)
    app = K3App(home_dirs=[recdir])
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        await pilot.press("o")
        await pilot.pause(0.1)
        app.screen.query_one("#dialog-input").value = str(other)
        await pilot.press("enter")
        for _ in range(60):
            await pilot.pause(0.05)
            if isinstance(app.screen, ReplayScreen):
                break
        assert isinstance(app.screen, ReplayScreen) and app.screen.path == other


async def test_connect_and_demo_go_through_the_session_factory(recdir, tmp_path, shared):
    targets = []

    async def factory(target):
        targets.append(target)
        return ScriptedDriver(tmp_path / f"{len(targets)}.k3rec", shared)

    app = K3App(home_dirs=[recdir], session_factory=factory)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        await pilot.press("d")  # the scenario is picked from a list, not typed
        await pilot.pause(0.1)
        options = app.screen.query_one("#choices")
        options.highlighted = [o.id for o in options.options].index("nccl-init")
        await pilot.press("enter")
        for _ in range(60):
            await pilot.pause(0.05)
            if isinstance(app.screen, SessionScreen) and app.screen.ready:
                break
        assert targets == ["demo:nccl-init"]
        assert app.screen.ready and app.screen.query_one("#simbar").has_class("-shown")
        await pilot.press("escape", "y")  # leaving a live session asks first
        for _ in range(60):
            await pilot.pause(0.05)
            if not isinstance(app.screen, SessionScreen) and app.screen.is_current:
                break
        await pilot.pause(0.4)  # the rest of a burst typed after the y is swallowed; a pause ends it
        await pilot.press("c", *"oncall@gb300-01:2222", "enter")
        for _ in range(60):
            await pilot.pause(0.05)
            if len(targets) == 2:
                break
        assert targets[1] == "oncall@gb300-01:2222"


async def test_command_palette_lists_every_action(recdir, tmp_path, shared):
    app = K3App(replay_path=recdir / "incident-a.k3rec", home_dirs=[recdir])
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(60):
            await pilot.pause(0.05)
            if isinstance(app.screen, ReplayScreen):
                break
        rs = app.screen
        commands = {c.title: c for c in app.get_system_commands(rs)}
        for title in (
            "Play/pause",
            "Step",
            "Back",
            "Next mark",
            "Prev mark",
            "Faster",
            "Slower",
            "Skip idle",
            "Seek",
            "Search",
            "Errors",
            "1st exc",
            "Export",
            "Diff scenes",
            "Help",
            "Follow/pause",
            "Only matches",
        ):
            assert title in commands, title
        commands["Next mark"].callback()
        await pilot.pause(0.1)
        assert rs.engine.position == rs.engine.markers[0].index + 1

    driver = ScriptedDriver(tmp_path / "live.k3rec", shared)

    async def make():
        return driver

    app = K3App(driver_factory=make, home_dirs=[])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Run rung", "Pick rung", "Freeze", "Note", "Mark", "Change", "Apply", "Revert", "Toggles"} <= titles
        assert {"Stop run", "Export"} <= titles

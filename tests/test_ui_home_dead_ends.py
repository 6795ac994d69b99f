"""No dead ends from Home (issue 17, item 7), with the real session factory of ``k3tui``.

A scenario that does not exist or a host that cannot be reached used to open a full live
session screen that was not connected, with a toast that faded; the way out asked about
stopping a server that never started, and an empty recording joined Recent sessions. Now
Home stays, says why in a line that stays, and records nothing. The demo's scenario is
picked from a list whose default is the CLI's (``healthy``).
"""

from __future__ import annotations

import socket

from k3tui.commands import demo as demo_cmd
from k3tui.commands.tui import session_factory
from screens.app import K3App
from screens.common.choice_dialog import ChoiceDialog
from screens.common.confirm_dialog import ConfirmDialog
from screens.home.home_screen import DEFAULT_SCENARIO, HomeScreen
from screens.session.session_screen import SessionScreen


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


async def _back_on_home(app, pilot) -> HomeScreen:  # noqa: ANN001
    for _ in range(300):
        await pilot.pause(0.05)
        assert not isinstance(app.screen, ConfirmDialog), "a session that never started asked to be left"
        s = app.screen
        if isinstance(s, HomeScreen) and s.query_one("#home-error").display:
            assert not any(isinstance(x, SessionScreen) for x in app.screen_stack)  # no dead session left
            return s
    raise AssertionError(f"not back on Home with an error: {app.screen}")


async def test_unreachable_host_stays_on_home_with_the_reason_and_no_recording(tmp_path):
    sims: list = []
    recs = tmp_path / "recs"
    recs.mkdir()
    app = K3App(home_dirs=[recs], session_factory=session_factory(sims, directory=recs))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.2)
        await pilot.press("c", *f"oncall@127.0.0.1:{_free_port()}", "enter")
        home = await _back_on_home(app, pilot)
        await pilot.pause(3.0)  # longer than a toast lives
        error = str(home.query_one("#home-error").render())
        assert home.query_one("#home-error").display and "could not start the session" in error
        assert "127.0.0.1" in error or "refused" in error.lower() or "connect" in error.lower()
        assert list(recs.iterdir()) == []  # no empty recording
        assert home.query_one("#recent-title").render().plain.startswith("No recorded sessions")


async def test_a_scenario_that_does_not_exist_stays_on_home(tmp_path):
    sims: list = []
    recs = tmp_path / "recs"
    recs.mkdir()
    app = K3App(home_dirs=[recs], session_factory=session_factory(sims, directory=recs))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.2)
        app.start_session("demo:nccl-int")  # a typo, as an older prompt or a script could send it
        home = await _back_on_home(app, pilot)
        error = str(home.query_one("#home-error").render())
        assert "nccl-int" in error
        assert list(recs.iterdir()) == []
    for sim in sims:
        await sim.__aexit__(None, None, None)


async def test_demo_scenario_is_a_list_defaulting_to_the_clis(tmp_path):
    import argparse

    p = argparse.ArgumentParser()
    demo_cmd.add_arguments(p)
    assert p.parse_args([]).scenario == DEFAULT_SCENARIO == "healthy"
    app = K3App(home_dirs=[tmp_path])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        await pilot.press("d")
        await pilot.pause(0.2)
        assert isinstance(app.screen, ChoiceDialog)
        options = app.screen.query_one("#choices")
        names = [o.id for o in options.options]
        assert options.options[options.highlighted].id == "healthy"
        assert {"healthy", "nccl-init", "runtime-xid79"} <= set(names)
        await pilot.press("escape")

"""Pilot tests of the live session screen over a driver that records through a real Recorder."""

from __future__ import annotations

from textual.app import App, ComposeResult

from k3tui import events as ev
from k3tui.reader import read_all
from screens.app import K3App
from screens.session.freeze_banner import FreezeBanner
from screens.session.session_screen import SessionScreen
from screens.session.session_view import SessionView

from .ui_recordings import ROOT, ScriptedDriver, live_app


async def _session(app: K3App, pilot) -> SessionScreen:  # noqa: ANN001
    for _ in range(100):
        await pilot.pause(0.05)
        if isinstance(app.screen, SessionScreen) and app.screen.ready:
            await pilot.pause(0.1)
            return app.screen
    raise AssertionError("session did not start")


async def _until(pilot, cond, tries: int = 100) -> None:  # noqa: ANN001
    for _ in range(tries):
        if cond():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached")


async def test_run_rung_freeze_banner_note_marker_and_quit(tmp_path, shared):
    driver = ScriptedDriver(tmp_path / "live.k3rec", shared)
    exited = []

    async def on_exit():
        exited.append(True)

    app = live_app(driver, on_exit=on_exit)
    async with app.run_test(size=(120, 40)) as pilot:
        ss = await _session(app, pilot)
        assert ss.query_one("#simbar").has_class("-shown")
        assert "SIMULATED" in str(ss.query_one("#simbar").render())
        assert ss.view.state.rungs["baseline"].verdict == "PASS"
        banner_seen = []
        ss.view.post_message = lambda m, _orig=ss.view.post_message: (banner_seen.append(m), _orig(m))[1]
        await pilot.press("r")  # the next rung that has not passed: minimal
        await _until(pilot, lambda: ss.query_one(FreezeBanner).display)
        assert ("run_rung", "minimal", 1) in driver.calls
        text = str(ss.query_one(FreezeBanner).render())
        assert "ENGINE" in text and "No available memory" in text and "next:" in text
        assert any(isinstance(m, SessionView.FirstException) for m in banner_seen)
        await _until(
            pilot, lambda: ss.view.state.rungs.get("minimal") and ss.view.state.rungs["minimal"].state == "done"
        )
        # note
        await pilot.press("n")
        await pilot.pause(0.1)
        await pilot.press(*"restarted with NCCL_DEBUG=INFO", "enter")
        # marker (default label offered)
        await pilot.press("m")
        await pilot.pause(0.1)
        await pilot.press("enter")
        # freeze again
        await pilot.press("f")
        await _until(pilot, lambda: ("freeze", "operator") in driver.calls)
        await _until(pilot, lambda: len(ss.view.state.notes) >= 2 and ss.view.state.markers)
        # stop needs two presses
        await pilot.press("s")
        await pilot.pause(0.05)
        assert ("stop_run",) not in driver.calls
        await pilot.press("s")
        await _until(pilot, lambda: ("stop_run",) in driver.calls)
        await pilot.press("q")  # asks, as Esc does (it used to stop the server and quit at once)
        await _until(pilot, lambda: type(app.screen).__name__ == "ConfirmDialog")
        assert not driver.closed
        await pilot.press("y")
        await _until(pilot, lambda: driver.closed)
        await pilot.pause(0.2)
    assert driver.closed and exited == [True]
    _, events = read_all(driver.recording_path)
    notes = [e.text for e in events if isinstance(e, ev.Note)]
    assert "restarted with NCCL_DEBUG=INFO" in notes
    assert any(isinstance(e, ev.Marker) and e.label.startswith("marker at") for e in events)
    assert sum(isinstance(e, ev.SceneFrozen) and e.reason == "operator" for e in events) == 2
    assert any(isinstance(e, ev.ExceptionFound) and ROOT in e.line for e in events)


async def test_live_log_filters_search_and_change_preview(tmp_path, shared):
    driver = ScriptedDriver(tmp_path / "live.k3rec", shared)

    app = live_app(driver)
    async with app.run_test(size=(160, 48)) as pilot:
        ss = await _session(app, pilot)
        await pilot.press("r")
        await _until(
            pilot, lambda: ss.view.state.rungs.get("minimal") and ss.view.state.rungs["minimal"].state == "done"
        )
        await pilot.pause(0.2)
        log = ss.view.log_view
        assert log.auto_scroll
        await pilot.press("slash", *"kv_cache", "enter")
        assert log.current is not None and "kv_cache" in log.lines[log.current].lower()
        assert not log.auto_scroll  # a search pauses following
        first = log.current
        await pilot.press("escape", "right_square_bracket")
        assert log.current > first
        await pilot.press("left_square_bracket")
        assert log.current == first
        await pilot.press("F")
        assert log.auto_scroll and log.current is None
        await pilot.press("x")  # the root line itself, not the synthetic ✖ line after the traceback
        assert ROOT in log.lines[log.current] and log.lines[log.current].startswith("E│")
        # preview the next change: the diff appears in the run-config panel before anything is applied
        await pilot.press("c")
        await pilot.pause(0.1)
        box = app.screen.query_one("#dialog-input")
        box.value = "gpu_memory_utilization=0.85, max_model_len=4096"
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert [d["key"] for d in ss.view.preview] == ["gpu_memory_utilization", "max_model_len"]
        panel = str(ss.query_one("#change").render())
        assert "next change (not applied)" in panel and "2 variables change at once" in panel


class _FloodApp(App):
    def compose(self) -> ComposeResult:
        yield SessionView(window=2000)


async def test_log_flood_is_batched_and_bounded():
    app = _FloodApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = app.query_one(SessionView)
        n = 30_000
        view.receive(ev.RunStarted(run="r1", command="vllm serve"))
        for i in range(n):
            view.receive(ev.Output(t=i * 1e-4, id="r1", text=f"line {i}"))
        log = view.log_view
        before = log.line_count
        view.flush()
        assert 0 < log.line_count - before <= 1000  # one batch per tick, never the whole flood at once
        await _until(pilot, lambda: view.backlog == 0, tries=400)
        assert view.state.output_lines == n  # every event folded
        assert log.line_count == 2000  # the view keeps a bounded window
        assert log.lines[-1].endswith(f"line {n - 1}")
        assert log.lines[0].endswith(f"line {n - 2000}")
        assert view.skipped_lines == n - 2000  # skipped, and said so in a marked line

    app = _FloodApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = app.query_one(SessionView)
        view.receive(ev.RunStarted(run="r1", command="vllm serve"))
        for i in range(1500):  # a burst the view keeps up with: nothing skipped
            view.receive(ev.Output(id="r1", text=f"line {i}"))
        await _until(pilot, lambda: view.backlog == 0, tries=400)
        assert view.skipped_lines == 0
        assert view.log_view.lines[-1].endswith("line 1499") and not any(
            ln.startswith("⋯") for ln in view.log_view.lines
        )


async def test_a_failing_connect_is_reported_once(tmp_path):
    async def factory():
        raise ConnectionRefusedError("gb300-01:22 refused the connection")

    app = K3App(driver_factory=factory, home_dirs=[])
    async with app.run_test(size=(100, 30)) as pilot:
        await _until(pilot, lambda: app._notifications)
        await pilot.pause(0.2)
        msgs = [n.message for n in app._notifications]
        assert sum("refused the connection" in m for m in msgs) == 1, msgs
        assert app.screen.sub_title == "not connected"


class _SceneApp(App):
    def compose(self) -> ComposeResult:
        yield SessionView()


async def test_two_nodes_scene_flags_the_odd_node_out():
    from copy import deepcopy

    from screens.session.scene_panel import ScenePanel

    from .ui_recordings import SCENE

    other = deepcopy(SCENE)
    other["host"]["driver_version"] = "575.57.08"
    app = _SceneApp()
    async with app.run_test(size=(120, 60)) as pilot:
        view = app.query_one(SessionView)
        view.receive(ev.SceneFrozen(t=1.0, host="tray-a", scene=SCENE, reason="operator"))
        view.receive(ev.SceneFrozen(t=1.1, host="tray-b", scene=other, reason="operator"))
        await _until(pilot, lambda: "tray-b" in str(view.query_one(ScenePanel).render()))
        text = str(view.query_one(ScenePanel).render())
        assert "≠ nodes differ: driver" in text
        assert "575.57.08" in text and "580.82.07" in text


async def test_help_lists_the_config_keys_and_a_driver_without_them_refuses_clearly(tmp_path, shared):
    from screens.common.help_screen import HelpScreen

    driver = ScriptedDriver(tmp_path / "live.k3rec", shared)  # previews, but cannot apply or revert

    app = live_app(driver)
    async with app.run_test(size=(120, 40)) as pilot:
        ss = await _session(app, pilot)
        await pilot.press("question_mark")
        await _until(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = str(app.screen.query_one("#help-text").render())
        for key, what in (
            ("c", "preview a change"),
            ("a", "apply the previewed change"),
            ("u", "revert"),
            ("t", "debug toggles"),
        ):
            assert f"{key}  {what}" in text, (key, text)
        await pilot.press("escape")
        await pilot.press("a")
        await _until(pilot, lambda: any("nothing to apply" in n.message for n in app._notifications))
        await pilot.press("c")
        await pilot.pause(0.1)
        app.screen.query_one("#dialog-input").value = "max_model_len=4096"
        await pilot.press("enter", "a")
        await _until(
            pilot, lambda: any("this session cannot apply the change" in n.message for n in app._notifications)
        )
        assert ss.view.preview is not None  # refused: the preview stays, nothing was applied


async def test_leaving_a_live_session_asks_then_closes_it(tmp_path, shared):
    """Esc from a live session opened from Home used to drop the screen and leave its driver open:
    the connections, the server it started and an unfinished recording lived on unseen."""
    from screens.common.confirm_dialog import ConfirmDialog
    from screens.home.home_screen import HomeScreen

    driver = ScriptedDriver(tmp_path / "live.k3rec", shared)
    app = K3App(home_dirs=[])
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, HomeScreen))
        app.push_screen(SessionScreen(driver=driver))
        ss = await _session(app, pilot)
        await pilot.press("escape")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.pause(0.1)  # the dialog pushed is not yet the dialog listening: a key sent now can be lost
        await pilot.press("n")  # changed my mind: still in the session, nothing closed
        await _until(pilot, lambda: app.screen is ss)
        assert not driver.closed
        await pilot.press("escape")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.pause(0.1)
        await pilot.press("y")
        await _until(pilot, lambda: isinstance(app.screen, HomeScreen))
        assert driver.closed and ss.driver is None

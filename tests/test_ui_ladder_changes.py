"""Climbing the ladder from the live session, no CLI: the TUI drives the LiveDriver against the SIMULATED host.

Real parts: the simulated GB300 host over the real SSH client, the real ladder engine and
ledger, a real recording. Each test checks what the recording says afterwards, since
that is what a colleague (and the repro package) will see.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from k3tui import events as ev
from k3tui.reader import read_all
from screens.app import K3App
from screens.common.confirm_dialog import ConfirmDialog
from screens.common.prompt_dialog import PromptDialog
from screens.session.change_panel import ChangePanel
from screens.session.session_screen import SessionScreen, parse_changes
from screens.session.toggle_picker import TogglePicker

pytestmark = pytest.mark.slow


async def _until(pilot, cond, seconds: float = 10.0) -> None:  # noqa: ANN001
    for _ in range(int(seconds / 0.05)):
        if cond():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached in time")


@contextlib.asynccontextmanager
async def _live(tmp_path, scenario: str = "healthy") -> AsyncIterator[tuple[Any, Any, SessionScreen]]:  # noqa: ANN001
    """A live session on the simulated host, as ``k3tui demo`` starts it; the driver is closed after."""
    from k3tui.commands.demo import SimNodes, make_driver

    nodes = SimNodes(scenario)
    hosts = await nodes.__aenter__()

    async def factory():
        return make_driver(argparse.Namespace(scenario=scenario, speed=None), tmp_path / "live.k3rec", hosts)

    app = K3App(driver_factory=factory, home_dirs=[])
    ss = None
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await _until(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.ready, 60)
            ss = app.screen
            yield app, pilot, ss
    finally:
        if ss is not None:
            await ss.close_driver()
        await nodes.__aexit__(None, None, None)


async def _type(pilot, keys: str, dialog=PromptDialog) -> None:  # noqa: ANN001
    """Type into the open prompt (replacing what it offers) and press Enter."""
    await _until(pilot, lambda: isinstance(pilot.app.screen, dialog))
    pilot.app.screen.query_one("#dialog-input").value = keys
    await pilot.press("enter")
    await pilot.pause(0.05)


def _messages(app) -> list[str]:  # noqa: ANN001
    return [n.message for n in app._notifications]


def _done(ss, rung: str) -> bool:  # noqa: ANN001
    r = ss.view.state.rungs.get(rung)
    return r is not None and r.state == "done"


def _panel(ss) -> str:  # noqa: ANN001
    return str(ss.query_one(ChangePanel).render())


def test_parse_changes_is_strict():
    assert parse_changes("max_model_len=4096, env:NCCL_DEBUG=TRACE, flag:enforce-eager=true") == {
        "max_model_len": 4096,
        "env:NCCL_DEBUG": "TRACE",
        "flag:enforce-eager": True,
    }
    for bad in ("max_model_len", "=3", "a=1, a=2", " , "):
        with pytest.raises(Exception, match="not a change|given twice|no change given"):
            parse_changes(bad)


async def test_apply_one_change_and_the_next_run_carries_it(tmp_path):
    async with _live(tmp_path) as (app, pilot, ss):
        configs = len(ss.view.state.configs)
        await pilot.press("c")
        await _type(pilot, "max_model_len=4096")
        assert ss.view.preview == [{"key": "max_model_len", "old": None, "new": 4096}]
        assert "next change (not applied)" in _panel(ss)
        assert not any(d["new"] == 4096 for c in ss.view.state.configs for d in c.diff)  # nothing applied yet
        await pilot.press("a")
        await _until(pilot, lambda: ss.view.preview is None)
        last = ss.view.state.configs[-1]
        assert len(ss.view.state.configs) > configs
        assert last.diff == [{"key": "max_model_len", "old": None, "new": 4096}]
        await _until(pilot, lambda: "max_model_len=4096" in _panel(ss))
        assert "next run" in _panel(ss)
        # the minimal launch runs with it; while it runs, a change is refused and changes nothing
        await pilot.press("R")
        await _type(pilot, "minimal")
        await _until(pilot, lambda: any(r.command for r in ss.view.state.runs.values()), 60)
        n = len(ss.view.state.configs)
        await pilot.press("c")
        await _type(pilot, "gpu_memory_utilization=0.8")
        await pilot.press("a")
        await _until(pilot, lambda: any("while a rung runs" in m for m in _messages(app)))
        assert len(ss.view.state.configs) == n
        await _until(pilot, lambda: _done(ss, "minimal"), 240)
        path = ss.driver.recording_path
    _, events = read_all(path)
    started = [e for e in events if isinstance(e, ev.RunStarted)]
    assert started and "--max-model-len 4096" in started[0].command
    set_at = next(i for i, e in enumerate(events) if isinstance(e, ev.RunConfigSet) and e.diff == last.diff)
    assert set_at < events.index(started[0])
    assert not any(isinstance(e, ev.RunConfigSet) and "gpu_memory_utilization" in str(e.diff) for e in events)


async def test_two_changes_need_a_reason_bad_input_changes_nothing_and_revert(tmp_path):
    async with _live(tmp_path) as (app, pilot, ss):
        st = ss.view.state
        # bad input: one error line each, nothing pending, nothing changed (the first preview
        # records the session's starting config: changes are the configs after it)
        for text, why in (
            ("max_model_len", "is not a change"),
            ("no_such_var=1", "unknown run variable 'no_such_var'"),
            ("max_model_len=lots", "max_model_len must be a number"),
        ):
            await pilot.press("c")
            await _type(pilot, text)
            await _until(pilot, lambda why=why: any(why in m for m in _messages(app)))
            assert ss.view.preview is None and len(st.configs) <= 1
            await pilot.press("a")
            await _until(pilot, lambda: any("nothing to apply" in m for m in _messages(app)))
            app.clear_notifications()
        await pilot.press("c")  # what was typed is offered again: a typo loses nothing
        await _until(pilot, lambda: isinstance(app.screen, PromptDialog))
        assert app.screen.query_one("#dialog-input").value == "max_model_len=lots"
        await _type(pilot, "max_model_len=4096, gpu_memory_utilization=0.8")
        assert len(ss.view.preview) == 2
        n = len(st.configs)
        # without a reason: refused, nothing changes
        await pilot.press("a")
        await _type(pilot, "")
        await _until(pilot, lambda: any("needs a reason" in m for m in _messages(app)))
        assert len(st.configs) == n and not st.decisions and ss.view.preview is not None
        # the driver refuses it too (the one-variable rule lives in the ledger, not in the screen)
        from k3tui.errors import OneVariableRule

        with pytest.raises(OneVariableRule):
            await ss.driver.apply_change({"max_model_len": 4096, "gpu_memory_utilization": 0.8})
        assert len(st.configs) == n
        # with a reason: applied, and the reason is recorded as a decision
        await pilot.press("a")
        await _type(pilot, "KV cache sizing at short context")
        await _until(pilot, lambda: len(st.configs) > n)
        assert {d["key"] for d in st.configs[-1].diff} == {"max_model_len", "gpu_memory_utilization"}
        assert any(d.reason == "KV cache sizing at short context" for d in st.decisions)
        # revert: back to the minimal launch, with the reason recorded
        n = len(st.configs)
        await pilot.press("u")
        await _type(pilot, "short context did not help")
        await _until(pilot, lambda: len(st.configs) > n)
        assert {d["key"]: d["new"] for d in st.configs[-1].diff} == {
            "max_model_len": None,
            "gpu_memory_utilization": None,
        }
        await _until(pilot, lambda: "= the minimal launch" in _panel(ss))
        # a revert with an empty reason does nothing
        n = len(st.configs)
        await pilot.press("u")
        await _type(pilot, "")
        await _until(pilot, lambda: any("a revert needs a reason" in m for m in _messages(app)))
        assert len(st.configs) == n
        path = ss.driver.recording_path
    _, events = read_all(path)
    decisions = [e for e in events if isinstance(e, ev.Decision)]
    assert [d.reason for d in decisions] == ["KV cache sizing at short context", "short context did not help"]
    assert decisions[0].action.startswith("override one-variable rule")
    assert decisions[1].action.startswith("revert")


async def test_debug_toggles_and_a_warning_needs_an_explicit_yes(tmp_path):
    async with _live(tmp_path) as (app, pilot, ss):
        st = ss.view.state
        names = [t["name"] for t in ss.driver.toggles()]
        assert {"nccl-debug", "cuda-launch-blocking", "vllm-trace-function"} <= set(names)

        async def pick(name: str) -> None:
            await pilot.press("t")
            await _until(pilot, lambda: isinstance(app.screen, TogglePicker))
            await pilot.press(*["down"] * names.index(name), "enter")
            await pilot.pause(0.05)

        # a toggle without a warning applies at once, as one change
        n = len(st.configs)
        await pick("nccl-debug")
        await _until(pilot, lambda: len(st.configs) > n)
        assert st.configs[-1].diff == [{"key": "env:NCCL_DEBUG", "old": None, "new": "TRACE"}]
        assert next(t for t in ss.driver.toggles() if t["name"] == "nccl-debug")["on"]
        # a toggle with a warning shows it; Enter (on "No") and n change nothing
        n = len(st.configs)
        for key in ("enter", "n"):
            await pick("vllm-trace-function")
            await _until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
            assert "traces every Python call" in str(app.screen.query_one("#dialog-text").render())
            await pilot.press(key)
            await _until(pilot, lambda: any("stays off" in m for m in _messages(app)))
            app.clear_notifications()
            assert len(st.configs) == n
            await pilot.pause(0.4)  # after a letter answered a dialog, the rest of a typed burst is swallowed
        # y confirms: applied, the warning and the decision are recorded
        await pick("vllm-trace-function")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.press("y")
        await _until(pilot, lambda: len(st.configs) > n)
        assert st.configs[-1].diff == [{"key": "env:VLLM_TRACE_FUNCTION", "old": None, "new": "1"}]
        await pilot.pause(0.4)
        # picking an active toggle turns it off
        n = len(st.configs)
        await pick("nccl-debug")
        await _until(pilot, lambda: len(st.configs) > n)
        assert st.configs[-1].diff == [{"key": "env:NCCL_DEBUG", "old": "TRACE", "new": None}]
        path = ss.driver.recording_path
    _, events = read_all(path)
    assert any(isinstance(e, ev.Notice) and "VLLM_TRACE_FUNCTION=1 traces" in e.message for e in events)
    assert any(
        isinstance(e, ev.Decision) and e.action == "debug toggle vllm-trace-function on" and "confirmed" in e.reason
        for e in events
    )

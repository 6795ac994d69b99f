"""The answer always visible and right (issue 17, items 1–3, 6 and 8), driven with Pilot.

Severity is the loudest signal; the root line, its stage and the next step are never cut
off at 80×24 or 120×40; 80 columns keep the controls; keystrokes are neither lost nor
leaked; search says where it is. The session is the scripted one of ``ui_recordings``
(a real vLLM log from ../shared/corpus through a real Recorder).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k3tui import events as ev
from k3tui.severity import severity
from screens.common.confirm_dialog import ConfirmDialog
from screens.common.help_screen import HelpScreen
from screens.common.prompt_dialog import PromptDialog
from screens.session.freeze_banner import FreezeBanner, advice_for, split_advice
from screens.session.ladder_panel import short_summary
from screens.session.log_view import SEVERITY_STYLE, STAGE_STYLE
from screens.session.session_screen import SessionScreen
from screens.viewmodel import LogFeed

from .ui_recordings import ROOT, ScriptedDriver, failed_session, live_app

# --- severity (item 1) ----------------------------------------------------------------------

hex2 = st.text("0123456789abcdef", min_size=2, max_size=2)
XID = st.builds(
    "[{:>12.6f}] NVRM: Xid (PCI:0000:{}:00): {}, pid={}, name=python3, {}".format,
    st.floats(0, 1e6),
    hex2,
    st.sampled_from([13, 31, 43, 48, 62, 63, 64, 74, 79, 94, 95, 109, 119, 154]),
    st.integers(1, 10**6),
    st.sampled_from(["GPU has fallen off the bus.", "Ch 00000008", "uncorrectable ECC error", ""]),
)
HW = st.one_of(
    XID,
    st.builds(
        "nvidia-nvswitch{}: SXid (PCI:0000:{}:00.0): 12028, Non-fatal, Link {} egress".format,
        st.integers(0, 7),
        hex2,
        st.integers(0, 63),
    ),
    st.sampled_from(
        [
            "NVLink link 3 is down on GPU 2",
            "GPU 4: NVLink error counters increasing: replay errors 120",
            "Uncorrectable ECC error detected on GPU 1 (double bit)",
            "nvidia-fabricmanager: fabric manager failed to start: NVSwitch not found",
            "IMEX daemon not running: channel /dev/nvidia-caps-imex-channels/channel0 unavailable",
        ]
    ),
)
PREFIX = st.sampled_from(["", "(Worker_TP3 pid=9257) ", "kernel: ", "2026-12-01T03:12:44.123456+0000 host kernel: "])


@given(PREFIX, HW)
def test_hardware_fault_lines_are_faults_and_errors_in_the_log(prefix, line):
    text = prefix + line
    assert severity(text) == "fault", text
    feed = LogFeed()
    feed.lines(ev.RunStarted(run="r1", command="vllm serve"))
    (shown,) = feed.lines(ev.Output(id="r1", text=text))
    assert shown.sev == "fault" and shown.kind == "err"  # red, and in the errors-only view


@given(st.sampled_from(["INFO", "DEBUG", "WARNING", "ERROR"]), st.text("abcdefgh ", max_size=40))
def test_ordinary_lines_are_coloured_by_level_never_by_stage(level, msg):
    feed = LogFeed()
    feed.lines(ev.RunStarted(run="r1", command="vllm serve"))
    feed.lines(ev.StageReached(run="r1", stage="engine", line=1))
    (shown,) = feed.lines(ev.Output(id="r1", text=f"(EngineCore_DP0 pid=7) {level} 12-01 10:00:00 [x.py:1] {msg}"))
    assert shown.text.startswith("E│")
    assert shown.sev == {"INFO": "info", "DEBUG": "debug", "WARNING": "warn", "ERROR": "error"}[level]


def test_stage_letters_never_look_like_severity():
    loud = {"red", "magenta", "yellow", "bright_red", "bright_magenta", "bright_yellow"}
    for code, style in STAGE_STYLE.items():
        assert style not in loud and not any(w in style for w in ("red", "magenta", "pink", "yellow", "orange")), code
    assert SEVERITY_STYLE["error"] != SEVERITY_STYLE["warn"] != SEVERITY_STYLE["debug"]


@pytest.mark.parametrize(
    ("event", "sev"),
    [
        (ev.CheckVerdict(rung="request", check="completes", verdict="FAIL", evidence="0/3"), "error"),
        (ev.CheckVerdict(rung="minimal", check="api-ready", verdict="FAIL", evidence="start-up failed"), "error"),
        (ev.CheckVerdict(rung="baseline", check="libcuda", verdict="UNKNOWN", evidence="no process"), "warn"),
        (ev.Notice(message="the deployment's first root exception is on worker tray-b"), "error"),
        (ev.XidEvent(gpu=3, xid=79, text="GPU has fallen off the bus"), "fault"),
        (ev.RunEnded(run="r1", status=1, reason="exited"), "error"),
        (ev.RunEnded(run="r1", status=0, reason="stopped"), "debug"),
        (ev.HostConnected(host="h", address="a", user="u"), "debug"),
        (ev.RungLeft(rung="minimal", verdict="FAIL", summary="x"), "error"),
    ],
)
def test_own_lines_are_coloured_by_what_they_say(event, sev):
    (line,) = LogFeed().lines(event)
    assert line.sev == sev, line


def test_a_root_traceback_is_tagged_with_the_stage_it_failed_in():
    """Printed while the markers said device, found (by its frames) to be an engine failure:
    the root's stack and everything printed after the root (its consequences) say engine."""
    feed = LogFeed()
    feed.lines(ev.RunStarted(run="r1", command="vllm serve"))
    feed.lines(ev.StageReached(run="r1", stage="device", line=1))
    stack = ["Traceback (most recent call last):", '  File "vllm/v1/worker.py", line 9, in init', ROOT]
    shown = [
        ln for text in ["INFO device ok", *stack, "INFO after"] for ln in feed.lines(ev.Output(id="r1", text=text))
    ]
    assert all(ln.text.startswith("D│") for ln in shown)
    feed.lines(ev.ExceptionFound(run="r1", stage="engine", line=ROOT, line_number=4, stack=stack))
    assert feed.retagged
    assert [ln.text[0] for ln in shown] == ["D", "E", "E", "E", "E"]
    feed.lines(ev.StageReached(run="r1", stage="api", line=9))  # a marker after the failure changes nothing
    (later,) = feed.lines(ev.Output(id="r1", text="RuntimeError: Engine core initialization failed."))
    assert later.text.startswith("E│")


# --- the live session, 80×24 and 120×40 ---------------------------------------------------------


def _visible_text(widget) -> str:  # noqa: ANN001
    """What a widget shows on screen (its rendered lines, clipped to its region)."""
    rows = [strip.text.replace("█", "").replace("▌", "") for strip in widget.render_lines(widget.region.reset_offset)]
    return " ".join(rows)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_root_stage_and_next_step_readable_in_full(tmp_path, shared, size):
    driver = ScriptedDriver(tmp_path / "live.k3rec", shared)
    app = live_app(driver)
    async with app.run_test(size=size) as pilot:
        ss = await failed_session(pilot)
        banner = ss.query_one(FreezeBanner)
        seen = " ".join(_visible_text(banner).split())
        _, step = split_advice(advice_for("engine", ss.view.state))
        assert "stage ENGINE" in seen
        assert " ".join(ROOT.split()) in seen  # the whole root line, wrapped, not clipped
        assert " ".join(step.split()) in seen  # the whole next step
        assert "b: more" in seen
        await pilot.press("b")
        await pilot.pause(0.2)
        assert "b: less" in " ".join(_visible_text(banner).split())
        ladder = str(ss.query_one("#ladder").render())
        assert "ER…" not in ladder


async def test_80x24_footer_keeps_the_controls_and_help_lists_q_and_h(tmp_path, shared):
    driver = ScriptedDriver(tmp_path / "live.k3rec", shared)
    app = live_app(driver)
    async with app.run_test(size=(80, 24)) as pilot:
        ss = await failed_session(pilot)
        from textual.widgets._footer import FooterKey

        # the keys the footer shows whole within the 80 columns
        footer = " ".join(
            k.description for k in ss.query(FooterKey) if k.region.width and k.region.right <= 80 and k.description
        )
        for label in ("Run rung", "Freeze", "Change", "Apply", "Revert", "Toggles", "Help", "Quit"):
            assert label in footer, (label, footer)
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text").render())
        assert "q  Quit" in text.replace("  q  ", "q  ") or "\nq  " in text or " q  Quit" in text
        assert "h  Host filter" in text and "only with several hosts" in text
        assert "E engine" in text and "✖ the first root exception" in text  # the legend
        await pilot.press("escape")


async def test_wrap_shows_a_long_line_in_full(tmp_path, shared):
    long = "INFO " + " ".join(f"word{i:03d}" for i in range(60)) + " THE-END"
    driver = ScriptedDriver(tmp_path / "live.k3rec", shared, extra_lines=[long])
    app = live_app(driver)
    async with app.run_test(size=(80, 24)) as pilot:
        ss = await failed_session(pilot)
        log = ss.view.log_view
        assert not any("THE-END" in ln for ln in log.lines if len(ln) <= log.size.width)
        await pilot.press("w")
        await pilot.pause(0.2)
        rows = [ln for ln in log.lines if "word" in ln or "THE-END" in ln]
        assert all(len(r) <= log.size.width for r in rows)
        assert "".join(r[2:] for r in rows if "word" in r or "THE-END" in r).replace(" ", "").endswith("THE-END")
        assert "wrapped" in str(ss.query_one("#logstatus").render())
        await pilot.press("w")
        await pilot.pause(0.1)
        assert not log.wrap


def _burst(app, keys: str) -> None:  # noqa: ANN001
    from textual import events

    for ch in keys:
        app.post_message(events.Key(ch, ch))


async def test_keystrokes_are_kept_in_prompts_and_do_not_leak_from_a_confirm(tmp_path, shared, monkeypatch):
    from screens.common import key_guard

    monkeypatch.setattr(key_guard, "GAP", 1.0)  # this 2-core machine can take longer than a person to close a dialog
    driver = ScriptedDriver(tmp_path / "live.k3rec", shared)
    app = live_app(driver)
    async with app.run_test(size=(120, 40)) as pilot:
        ss = await failed_session(pilot)
        _burst(app, "nhi")  # as a terminal delivers fast typing: all queued before the dialog has focus
        for _ in range(60):
            await pilot.pause(0.05)
            if isinstance(app.screen, PromptDialog) and app.screen.query_one("#dialog-input").value == "hi":
                break
        assert isinstance(app.screen, PromptDialog) and app.screen.query_one("#dialog-input").value == "hi"
        await pilot.press("enter")
        for _ in range(60):
            await pilot.pause(0.05)
            if "hi" in ss.view.state.notes or any(getattr(n, "text", n) == "hi" for n in ss.view.state.notes):
                break
        notes = [getattr(n, "text", n) for n in ss.view.state.notes]
        assert "hi" in notes, notes
        assert isinstance(app.screen, SessionScreen)
        log = ss.view.log_view
        # q asks; typing "no" into the question closes it with the n — the o must not filter the log
        await pilot.press("q")
        for _ in range(40):
            await pilot.pause(0.05)
            if isinstance(app.screen, ConfirmDialog):
                break
        assert isinstance(app.screen, ConfirmDialog)
        _burst(app, "noe")
        await pilot.pause(0.3)
        assert app.screen is ss and log.mode == "all" and not driver.closed
        await pilot.pause(1.2)
        await pilot.press("e")  # after a pause, keys are commands again
        await pilot.pause(0.1)
        assert log.mode == "errors"


async def test_search_gives_a_position_and_shows_hits_past_the_edge(tmp_path, shared):
    far = "INFO " + "x" * 150 + " needle-far-right"
    driver = ScriptedDriver(tmp_path / "live.k3rec", shared, extra_lines=[far, far, far])
    app = live_app(driver)
    async with app.run_test(size=(80, 24)) as pilot:
        ss = await failed_session(pilot)
        log = ss.view.log_view
        await pilot.press("slash")
        await pilot.press(*"needle-far", "enter")
        await pilot.pause(0.2)
        status = str(ss.query_one("#logstatus").render())
        assert "1/3" in status, status
        await pilot.press("escape", "right_square_bracket")
        await pilot.pause(0.1)
        assert "2/3" in str(ss.query_one("#logstatus").render())
        # the hit is on screen: the view scrolled right to it
        x = log.scroll_offset.x
        line = log.lines[log.current]
        col = line.index("needle-far")
        assert x <= col and col + len("needle-far") <= x + log.size.width
        await pilot.press("x")  # the root line itself, its message in view
        await pilot.pause(0.1)
        assert ROOT in log.lines[log.current] and not log.lines[log.current].startswith("✖")


def test_ladder_summaries_keep_the_exception_not_the_log_prefix():
    text = (
        "start-up failed at stage engine: (Worker_TP3 pid=9257) ERROR 12-01 22:00:13 "
        "[multiproc_executor.py:953] RuntimeError: NCCL error: unhandled system error"
    )
    short = short_summary(text)
    assert "RuntimeError: NCCL error" in short and "pid=" not in short and not short.endswith("ER…")


async def test_a_paused_log_says_how_many_new_lines_wait_below(tmp_path, shared):
    driver = ScriptedDriver(tmp_path / "live.k3rec", shared)
    app = live_app(driver)
    async with app.run_test(size=(80, 24)) as pilot:
        ss = await failed_session(pilot)
        await pilot.press("F")  # pause following
        for i in range(7):
            ss.view.receive(ev.Output(t=500.0 + i, host="gb300-sim", id="r1", text=f"INFO late line {i}"))
        await pilot.pause(0.5)
        ss.view.render_panels()
        assert "7 new lines below" in str(ss.query_one("#logstatus").render())
        await pilot.press("F")  # follow again: caught up
        await pilot.pause(0.1)
        assert "new lines below" not in str(ss.query_one("#logstatus").render())

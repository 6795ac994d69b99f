"""Gaps an audit of issue 17 found after it was built, driven with Pilot.

- the consequences of a failure (the API server's ``RuntimeError: Engine core
  initialization failed`` wrapper printed after the root) carry the failed stage's letter,
  never the stage the markers had entered, which the Stages panel contradicts;
- a toast raised while a dialog's input is open waits until the dialog closes;
- a log line cut at the pane's edge says so (``…`` in its last visible cell, a hint in the
  status line) and ``w`` shows it whole.
"""

from __future__ import annotations

from textual.widgets._toast import Toast

from k3tui import events as ev
from screens.common.prompt_dialog import PromptDialog
from screens.session.session_screen import SessionScreen

from .ui_recordings import ROOT, ScriptedDriver, failed_session, live_app

WRAPPER = "RuntimeError: Engine core initialization failed. See root cause above."
LETTERS = "CFDWEAR "
"""A server-log line's gutter: a stage letter (blank before any stage); k3tui's own lines have marks."""


def _server_line(ln: str) -> bool:
    return ln[:1] in LETTERS and ln[1:2] == "│"


class _EngineFailureSeenAsWeights(ScriptedDriver):
    """The scripted session without its ``engine`` marker: the root is printed while the markers
    still say weights, and the classifier finds (by its frames) that the engine failed."""

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self._script = [e for e in self._script if not (isinstance(e, ev.StageReached) and e.stage == "engine")]


async def test_a_failures_consequences_carry_the_failed_stage_letter(tmp_path, shared):
    app = live_app(_EngineFailureSeenAsWeights(tmp_path / "live.k3rec", shared))
    async with app.run_test(size=(160, 48)) as pilot:
        ss = await failed_session(pilot)
        stages = str(ss.query_one("#stages").render())
        assert "✖ engine" in stages, stages
        lines = ss.view.log_view.lines
        root = max(i for i, ln in enumerate(lines) if ROOT[:40] in ln and _server_line(ln))
        assert lines[root][0] == "E", lines[root]
        after = [ln for ln in lines[root + 1 :] if _server_line(ln)]
        assert any(WRAPPER[:40] in ln for ln in after)
        assert {ln[0] for ln in after} == {"E"}, [ln for ln in after if ln[0] != "E"][:3]


def _toasts(screen) -> list[str]:  # noqa: ANN001
    return [str(t.render()) for t in screen.query(Toast)]


async def test_a_toast_raised_over_a_dialog_waits_until_it_closes(tmp_path, shared):
    app = live_app(ScriptedDriver(tmp_path / "live.k3rec", shared))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        ss = await failed_session(pilot)
        app.clear_notifications()
        await pilot.press("n")
        for _ in range(40):
            await pilot.pause(0.05)
            if isinstance(app.screen, PromptDialog):
                break
        dialog = app.screen
        assert isinstance(dialog, PromptDialog)
        # raised from elsewhere while the note is typed; its timeout is 3 s, not 1, so that the toast shown after the
        # dialog closes lives long enough to be seen by a loaded machine's polling (CI under load missed a 1 s one)
        app.notify("freeze finished: scene 3", timeout=3)
        await pilot.pause(0.3)
        assert not _toasts(dialog), _toasts(dialog)
        await pilot.pause(3.2)  # longer than its timeout: held, it must not have been spent unseen
        await pilot.press("escape")
        for _ in range(100):
            await pilot.pause(0.05)
            if app.screen is ss and _toasts(ss):
                break
        assert app.screen is ss
        assert any("freeze finished: scene 3" in t for t in _toasts(ss)), _toasts(ss)


async def test_a_line_cut_at_the_panes_edge_says_so_and_w_shows_it(tmp_path, shared):
    """The live session's first line (``connected to … key SHA256:…``) is wider than the log at 120×40."""
    app = live_app(ScriptedDriver(tmp_path / "live.k3rec", shared))
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if isinstance(app.screen, SessionScreen) and app.screen.ready:
                break
        ss = app.screen
        await pilot.pause(0.3)
        log = ss.view.log_view
        seen = log.scrollable_content_region.width
        first = log.lines[0]
        assert first.startswith("·│connected to") and len(first) > seen
        row = log.render_line(0).text
        assert row[seen - 1] == "…" and row[: seen - 1] == first[: seen - 1], row
        short = next(i for i, ln in enumerate(log.lines) if len(ln) < seen)
        assert "…" not in log.render_line(short).text  # a line that fits is left alone
        assert "(w wraps)" in str(ss.query_one("#logstatus").render())
        await pilot.press("w")
        await pilot.pause(0.2)
        rows = [log.render_line(y).text for y in range(3)]
        assert "…" not in "".join(rows)
        assert "".join(r[2:seen].rstrip() for r in rows[:2]) == first[2:], rows
        assert "(w wraps)" not in str(ss.query_one("#logstatus").render())

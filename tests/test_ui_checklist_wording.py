"""A checklist item without evidence yet reads as work to do, never as a failure (issue 17, item 9).

The headless demo used to print ``FAIL    checklist/…`` for every item the session simply had
not reached; the live log drew the same line red. Checked over every item of the real
evaluator and both verdicts it records, through the headless printer and the log feed.
"""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from k3tui import events as ev
from k3tui.commands.demo import _progress
from k3tui.ladder.checklist import ITEMS, as_verdicts, evaluate
from screens.viewmodel import LogFeed

TITLES = [i.title for i in evaluate([])]


@given(st.sampled_from(TITLES), st.sampled_from(["PASS", "FAIL", "UNKNOWN"]), st.text(max_size=80))
def test_checklist_verdicts_print_as_done_or_not_done_yet(title, verdict, why):
    e = ev.CheckVerdict(t=1.0, rung="checklist", check="x", verdict=verdict, title=title, evidence=f"missing: {why}")
    out = io.StringIO()
    _progress(out, e)
    printed = out.getvalue()
    assert "FAIL" not in printed.split("—")[0]
    word = {"PASS": "done", "FAIL": "not done yet", "UNKNOWN": "n/a"}[verdict]
    assert f"checklist {word}: " in printed
    (line,) = LogFeed().lines(e)
    assert line.sev == "info" and line.kind == "info"  # not drawn red, not in the errors-only view


def test_an_empty_session_has_every_item_not_done_yet_not_failed():
    items = as_verdicts(evaluate([]))
    assert len(items) == len(ITEMS)
    out = io.StringIO()
    for e in items:
        _progress(out, e)
    assert out.getvalue().count("checklist ") == len(ITEMS) and "FAIL" not in out.getvalue()

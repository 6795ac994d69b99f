"""The look-back window (``k3tui/classify/history.py``) a mutation run found unpinned (issue 22).

A normal stop (``shutdown triggered``) is found by looking back from the line that would be a
failure, over the last MiB of the log (``LOOKBACK``): a stop that far back still
explains a traceback cut by it; one further back does not.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from k3tui.classify import classify_text
from k3tui.classify.history import LOOKBACK, History

_A = "(APIServer pid=9) INFO 11-30 06:13:00 [launcher.py:254] "
_E = "(EngineCore_0 pid=77) ERROR 11-30 06:13:01 [core.py:700] "


def _log(flood_chars: int) -> str:
    filler = _A + "GET /metrics 200 OK " + "x" * 60
    flood = [filler] * (flood_chars // (len(filler) + 1))
    cut = [
        _E + "EngineCore failed.",
        _E + "Traceback (most recent call last):",
        _E + '  File "/x/vllm/v1/m.py", line 3, in run',
    ]
    lines = [
        "(APIServer pid=9) INFO 11-30 06:12:30 [api_server.py:1] Application startup complete.",
        _A + "[shutdown] API server: shutdown triggered",
        *flood,
        *cut,
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("flood", "stopped"), [(768 << 10, True), (1152 << 10, False)])
def test_a_stop_within_the_last_mib_explains_a_cut_traceback(flood, stopped):
    r = classify_text(_log(flood))
    assert (r.failed_stage == "none") is stopped, r.evidence


_lines = st.lists(
    st.sampled_from(["INFO ok", "x", "", "Traceback (most recent call last):", "  File a", "E: stop here"]), max_size=30
)


@settings(max_examples=60, deadline=None)
@example(lines=["Traceback (most recent call last):", "x", "E: stop here", "x"], cuts=[2], chars=5)
@example(lines=["", "Traceback (most recent call last):", "x", "", "E: stop here", "x"], cuts=[3], chars=5)
@given(lines=_lines, cuts=st.lists(st.integers(0, 30), max_size=5), chars=st.integers(1, 200))
def test_the_text_before_each_line_is_what_was_fed_before_it_whatever_the_chunks(lines, cuts, chars):
    """Asked at any line (and after the last), ``before`` gives the last characters before it and
    ``since`` the text from the line holding the last needle: the same for any chunking. The
    examples: a needle on the first line of a buffer, and on the line after a buffer's first, empty line."""
    h = History()
    full, n = "", 0
    bounds = sorted({min(c, len(lines)) for c in cuts} | {len(lines)})
    start = 0
    for b in bounds:
        chunk = "".join(f"{ln}\n" for ln in lines[start:b])
        start = b
        if not chunk:
            continue
        h.begin(chunk)
        off = 0
        for ln in chunk.split("\n")[:-1]:
            h.at(off)
            _check(h, full + chunk[:off], chars)
            off += len(ln) + 1
        h.end(len(chunk))
        full += chunk
        n += 1
    h.at_end()
    _check(h, full, chars)


def _check(h: History, before: str, chars: int) -> None:
    assert h.before(chars) == before[-chars:] if before else h.before(chars) == ""
    for needle in ("Traceback", "stop here"):
        at = before.rfind(needle)
        want = None if at < 0 else before[before.rfind("\n", 0, at) + 1 :]
        assert h.since(needle) == want


def test_the_whole_last_mib_is_kept_when_a_part_ends_exactly_one_mib_back():
    """The window keeps every part that reaches into the last ``LOOKBACK`` characters: with a later
    part of ``LOOKBACK - 1`` characters, the one before it still holds the first character of
    the window (its newline) and is kept; only when the later parts fill the window is it let go."""
    for later, kept in ((LOOKBACK - 1, True), (LOOKBACK, False)):
        h = History()
        first, second = "old\n", "x" * (later - 1) + "\n"
        for chunk in (first, second):
            h.begin(chunk)
            h.end(len(chunk))
        h.at_end()
        assert h.before(LOOKBACK) == (first + second)[-LOOKBACK:]
        assert (h.before(LOOKBACK + 4) == first + second) is kept


def test_a_window_asked_before_anything_was_fed_holds_nothing():
    """Asked before the first buffer: nothing before the current line and no needle."""
    h = History()
    assert h.before(10) == ""
    assert h.since("Traceback") is None

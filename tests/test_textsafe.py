"""Hostile remote text cannot drive the operator's terminal: no escape sequence and no control
character survives neutralise(), while ordinary text (and tabs/newlines) is left alone."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k3tui.textsafe import neutralise

_DANGEROUS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

_ESC_PIECES = st.sampled_from(
    ["\x1b", "\x1b[", "\x1b]", "\x1bP", "\x1b_", "\x07", "\x9b", "\x9d", "\x90", "\x1b\\", "\r", "\x00", "\x7f",
     "52;c;", "2J", "31m", "0;title", "[", "]", ";", "?1049h", "\u202e", "é", "日本", "\t", "\n", " "]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(_ESC_PIECES | st.text(max_size=5), max_size=30).map("".join))
def test_no_control_character_survives(text):
    out = neutralise(text)
    assert not _DANGEROUS.search(out), repr(out)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_neutralise_is_idempotent_and_total(text):
    once = neutralise(text)
    assert neutralise(once) == once


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        st.characters(
            blacklist_categories=("Cc",), blacklist_characters="\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
        ),
        max_size=200,
    )
)
def test_ordinary_text_is_untouched(text):
    assert neutralise(text + "\tx\n") == text + "\tx\n"


@pytest.mark.parametrize(
    ("hostile", "shown"),
    [
        ("\x1b]52;c;cm0gLXJmIH4=\x07after", "after"),  # OSC 52: write to the clipboard
        ("\x1b]0;owned\x1b\\after", "after"),  # retitle the terminal
        ("\x1b[2J\x1b[H\x1b[31mred\x1b[0m", "red"),  # clear screen, move cursor, colours
        ("\x9b2Jx", "x"),  # 8-bit CSI
        ("\x1bPq#0;2;0;0;0\x1b\\x", "x"),  # DCS (sixel)
        ("a\x00b\x7fc\x08d", "a^@b^?c^Hd"),  # controls made visible
        ("progress 50%\rprogress 100%\n", "progress 50%progress 100%\n"),
        ("lone escape at the end \x1b", "lone escape at the end ^["),
        ("access \u202edenied\u202c", "access <U+202E>denied<U+202C>"),  # bidi override
    ],
)
def test_known_attacks(hostile, shown):
    assert neutralise(hostile) == shown

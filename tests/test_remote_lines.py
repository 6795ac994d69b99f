"""LineSplitter: whole lines out, whatever the chunking (multi-byte characters included)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.remote.lines import LineSplitter, split


@given(st.lists(st.text(alphabet="ab\né€😀", max_size=40), max_size=20), st.lists(st.integers(1, 50), max_size=30))
def test_any_chunking_gives_the_same_lines(parts, cuts):
    data = "".join(parts).encode()
    sp = LineSplitter()
    texts, pos = [], 0
    for n in cuts:
        texts.append(sp.feed(data[pos : pos + n]))
        pos += n
    texts.append(sp.feed(data[pos:]))
    assert all(t == "" or t.endswith("\n") for t in texts)  # only whole lines come out while streaming
    tail = sp.flush()
    assert "".join(texts) + tail == data.decode()
    assert sp.consumed == len(data)
    lines = [line for t in texts for line in split(t)] + ([tail] if tail else [])
    expected = data.decode().split("\n")
    if expected[-1] == "":
        expected.pop()
    assert lines == expected


def test_utf8_cut_inside_a_character():
    sp = LineSplitter()
    b = "é\n€".encode()
    assert sp.feed(b[:1]) == ""
    assert sp.feed(b[1:4]) == "é\n" and sp.pending == 1
    assert sp.feed(b[4:]) == "" and sp.flush() == "€"

"""Every control character's visible form, one by one (issue 22: mutants the fuzz tests let live).

The property tests say no control character survives; they do not say which form each
takes, so a ``\\r`` turned into ``None`` or a C1 control shown wrongly went unnoticed. Here
every code point the neutraliser rewrites is checked against its documented form: ``\\r``
dropped, C0 as ``^X``, DEL as ``^?``, C1 as ``\\xNN``, bidi overrides as ``<U+NNNN>``.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.textsafe import neutralise

_C0 = [c for c in range(0x20) if c not in (0x09, 0x0A, 0x1B)]
_C1 = [c for c in range(0x80, 0xA0) if c not in (0x9B, 0x9D)]  # CSI/OSC: sequence starters, dropped with what follows
_BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]


def _form(c: int) -> str:
    if c == 0x0D:
        return ""
    if c < 0x20:
        return "^" + chr(c + 64)
    if c == 0x7F:
        return "^?"
    if c >= 0x2000:
        return f"<U+{c:04X}>"
    return f"\\x{c:02x}"


def test_every_control_character_takes_its_documented_form():
    for c in [*_C0, 0x7F, *_C1, *_BIDI]:
        assert neutralise(f"a{chr(c)}b") == f"a{_form(c)}b", hex(c)


def test_the_characters_next_to_the_classes_are_left_alone():
    for c in (0x09, 0x0A, 0x20, 0x7E, 0xA0, 0xFF, 0x100, 0x2029, 0x202F, 0x2065, 0x206A):
        assert neutralise(f"a{chr(c)}b") == f"a{chr(c)}b", hex(c)


@given(
    parts=st.lists(
        st.one_of(
            st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=8),
            st.sampled_from([*_C0, 0x7F, *_C1, *_BIDI]).map(chr),
        ),
        max_size=20,
    )
)
def test_a_line_of_mixed_controls_is_the_concatenation_of_their_forms(parts):
    text = "".join(parts)
    assert neutralise(text) == "".join(p if len(p) != 1 or p.isprintable() else _form(ord(p)) for p in parts)

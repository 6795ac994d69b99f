"""Neutralising terminal control sequences in remote text before it is displayed.

Recordings keep output as received (after redaction). Anything that prints it — the
TUI, ``k3tui cat``, the report — passes it through :func:`neutralise` first, so a hostile
log line can neither move the operator's cursor, retitle their terminal, nor write to
their clipboard (OSC 52). Escape sequences are dropped; other control characters become
visible ``^X`` forms, and bidi overrides (which make a line read differently from what it
says) become ``<U+202E>``; tabs and newlines stay.
"""

from __future__ import annotations

import re

# CSI … final byte; OSC … BEL/ST; DCS/SOS/PM/APC … ST; two-byte ESC sequences; 8-bit C1 CSI/OSC.
# A string sequence (OSC, DCS …) never runs past the end of its line: an unterminated one in
# a hostile line is dropped up to the newline, and every later line is shown.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b\n]*(?:\x1b\\)?"
    r"|\x1b[ -/]*[0-~]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
    r"|\x9d[^\x07\x9c\n]*[\x07\x9c]?"
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u202a-\u202e\u2066-\u2069]")
_QUICK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(m: re.Match[str]) -> str:
    c = ord(m.group())
    if c == 0x0D:
        return ""
    if c < 0x20:
        return "^" + chr(c + 64)
    if c == 0x7F:
        return "^?"
    if c > 0xFF:  # bidi overrides: they reorder what the operator reads ("Trojan Source")
        return f"<U+{c:04X}>"
    return f"\\x{c:02x}"


def neutralise(text: str) -> str:
    """Text safe to put on a terminal: no escape sequences, controls made visible."""
    if not _QUICK.search(text):
        return text
    text = _ESCAPES.sub("", text)
    return _CONTROLS.sub(_visible, text)

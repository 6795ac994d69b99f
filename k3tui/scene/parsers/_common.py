"""Small helpers every parser shares: the parse error, capture wrappers, N/A and units."""

from __future__ import annotations

import re

from ...errors import K3Error


class ParseError(K3Error, ValueError):
    """A probe's output is not what its parser expects (one line says what was expected)."""


_NA = {"", "N/A", "[N/A]", "n/a", "None", "[Not Supported]", "Not Supported", "[Unknown Error]", "Unknown Error"}


def strip_transcript(text: str) -> str:
    """Drop a capture's ``$ command`` first line and ``[exit N]`` last line, if present."""
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[0].startswith("$ "):
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and re.fullmatch(r"\[exit -?\d+\]", lines[-1].strip()):
        lines.pop()
    return "\n".join(lines)


def na(value: str | None) -> str | None:
    """nvidia-smi's ``N/A`` / ``[N/A]`` / ``[Not Supported]`` → None; other text stripped."""
    if value is None:
        return None
    v = value.strip()
    return None if v in _NA else v


def as_float(value: str | float | int | None) -> float | None:
    """``143771 MiB`` → 143771.0; None / N/A → None."""
    if isinstance(value, (int, float)):
        return float(value)
    v = na(value)
    if v is None:
        return None
    m = re.match(r"-?\d+(?:\.\d+)?", v)
    return float(m.group(0)) if m else None


def as_int(value: str | int | None) -> int | None:
    """``"3"`` → 3; None / N/A / not a number → None."""
    f = as_float(value)
    return int(f) if f is not None else None

"""Small helpers every parser shares: the parse error, capture wrappers, N/A and units."""

from __future__ import annotations

import functools
import re
import xml.etree.ElementTree as ET

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


@functools.lru_cache(maxsize=8)
def smi_xml_root(text: str) -> ET.Element:
    """The root of an ``nvidia-smi -q -x`` report, parsed once per text (the GPU list and the
    health sections both read it; parsing 27 KB per GPU twice was most of a freeze's own cost).
    Callers only read the tree."""
    body = strip_transcript(text)
    start = body.find("<nvidia_smi_log")
    if start < 0:
        raise ParseError("not nvidia-smi XML: no <nvidia_smi_log> element")
    body = re.sub(r"<!DOCTYPE[^>]*>", "", body[body.rfind("<?xml", 0, start) if "<?xml" in body[:start] else start :])
    try:
        return ET.fromstring(body)
    except ET.ParseError as exc:
        raise ParseError(f"nvidia-smi XML is malformed: {exc}") from None

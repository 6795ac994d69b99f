"""Failure signatures and reproduction counts: "is this the same failure as last time?"

Two runs fail the same way when their signatures match. A signature is
``stage|ExceptionType|message`` with everything that differs between two runs of the
same failure normalised away: paths, sizes, addresses, hashes, pids, ports, numbers.
A signature that changes between runs with the same configuration is drift, which the
ladder shows loudly: the procedure cannot isolate a variable while the failure moves.
"""

from __future__ import annotations

import re
from collections import Counter

_SUBS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), r)
    for p, r in (
        (r"(?<![\w.])(?:/[\w.\-+@~%]+)+/?", "<path>"),
        (r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", "<uuid>"),
        (r"\b0x[0-9a-fA-F]+\b", "<addr>"),
        (r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{12,}\b", "<hash>"),
        (r"\b\d+(?:\.\d+)?\s*(?:[KMGTP]i?B|bytes|B)\b", "<size>"),
        (r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", "<ip>"),
        (r"\b(?:pid|PID|Process|process)[ =:]*\d+", "pid <n>"),
        (r"\d+(?:[.,]\d+)*", "<n>"),
        (r"\s+", " "),
    )
)

MAX_MESSAGE = 240


def normalise(message: str) -> str:
    """The message with run-specific details replaced by placeholders."""
    text = message.strip()
    for pattern, repl in _SUBS:
        text = pattern.sub(repl, text)
    return text[:MAX_MESSAGE].strip()


def make_signature(stage: str, exception_type: str, message: str) -> str:
    """``stage|type|normalised message``; the empty string means "no failure"."""
    if stage == "none":
        return ""
    short_type = exception_type.rsplit(".", 1)[-1]
    return f"{stage}|{short_type}|{normalise(message)}"


def reproduction(signatures: list[str]) -> tuple[int, int, bool, list[str]]:
    """How often the failure reproduced over K runs.

    Args:
        signatures: one per run, in run order; ``""`` for a run that did not fail.

    Returns:
        ``(k, K, drift, distinct)``: k runs show the most frequent failure signature (the
        earliest one on a tie), K runs in all, drift when more than one distinct failure
        signature appeared, and the distinct failure signatures in order of appearance.
    """
    failures = [s for s in signatures if s]
    distinct = list(dict.fromkeys(failures))
    if not distinct:
        return 0, len(signatures), False, []
    counts = Counter(failures)
    top = max(distinct, key=lambda s: (counts[s], -distinct.index(s)))
    return counts[top], len(signatures), len(distinct) > 1, distinct

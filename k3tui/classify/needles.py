"""The one source of truth for "lines worth reading": what can make a line matter to the classifier.

A remote prefilter (issue 15) scans a multi-GB log on the host and sends only windows
around lines that hold one of these literals; classifying those windows, in order, must
give the same answer as classifying the whole file. So the list is derived from the
classifier's own rules (``assets/classify/*.toml``) and constants, never copied: a new
marker, crash pattern or sentinel word reaches the prefilter by itself. The remote
prefilter (``k3tui.remote.prefilter``) reads the parts below, not the rules.

Why these and no others: after the first :data:`~.classifier.HEAD_LINES` lines, the
classifier only acts on a line that holds a sentinel (``rror``) or a pending stage marker;
everything else it reads is either inside an open traceback or a pending root (the
``after`` window of a hit) or found by looking back from a hit (the ``before`` window:
a traceback's ERROR header, a native crash before ``Fatal Python error``). The
unprefixed traceback head, the normal-stop line and the native crash / kill lines are
needles too, because the classifier looks back for them from a later hit.
``tests/test_classify_needles.py`` checks, on every corpus log, that every line the
classifier acts on holds a needle.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from .classifier import CAPTURE, CRASH_CHARS, CRASH_LOOKBACK, EMIT_AFTER, HEAD_LINES, HEADER_WINDOW, SHARDS, WRAP_WINDOW
from .rules import load_rules
from .traces import TB_HEAD


@dataclass(frozen=True)
class Needles:
    """What a prefilter must find, and how much around it to send."""

    literals: tuple[str, ...]
    """Lowercase literals. CASE-INSENSITIVE: lower the line (``str.lower``), then look for
    each with ``in`` (or ``grep -F -i``). A line holding none of them never matters alone."""
    head_lines: int
    """The first lines of the file always matter (an excerpt starts mid-traceback)."""
    before: int
    """Lines before a hit the classifier may read (traceback header, crash look-back)."""
    after: int
    """Lines after a hit it may read (the rest of a traceback, a wrapper's inner root,
    a faulthandler dump, the lines a one-line root waits for)."""
    once: tuple[str, ...]
    """Words, as printed, whose FIRST hit alone matters, in any case (``vllm`` and the words only
    vLLM prints: is this a vLLM log at all)."""
    # --- the same literals by the way the classifier uses them (what a scan on the host needs) ---
    words: tuple[str, ...]
    """Matched case-insensitively on every line (``rror``; a warning root's or a platform's words)."""
    plain: tuple[tuple[int, str], ...]
    """(stage index, marker): stage markers found on any line (uvicorn's, tqdm's), as printed."""
    gate: str
    """What every vLLM logger line carries (``.py:``): ``gated`` markers count only on such lines."""
    gated: tuple[tuple[int, str], ...]
    """(stage index, lowercase marker): logger-line markers; a ``done`` marker reaches the next stage."""
    lookback: tuple[str, ...]
    """Looked for, exactly, before a would-be root (a traceback's head, a normal stop) or before the
    end (the loader's progress bar)."""
    before_chars: int
    """Characters before every line the classifier acts on that it may read back (the native-crash
    look-back), so every window sent starts at least that far before its first needle."""


@cache
def needles() -> Needles:
    """The literals that can make a line matter to the classifier, and the windows around them."""
    rules = load_rules()
    words = tuple(dict.fromkeys((*rules.always, *rules.warning_needles, *rules.hang_needles)))
    plain = tuple((s.index, m) for s in rules.stages for m in s.plain)
    gated = tuple((s.index, m.lower()) for s in rules.stages for m in s.markers)
    gated += tuple((s.index + 1, m.lower()) for s in rules.stages for m in s.done)
    lookback = (TB_HEAD, *rules.normal_stop, SHARDS, CAPTURE)
    every = [*words, *lookback, *(m for _, m in plain), *(m for _, m in gated), *rules.crash_needles]
    return Needles(
        literals=tuple(dict.fromkeys(w.lower() for w in every if w)),
        head_lines=HEAD_LINES,
        before=max(HEADER_WINDOW, CRASH_LOOKBACK),
        after=max(WRAP_WINDOW, EMIT_AFTER, HEADER_WINDOW),
        once=rules.recognise,
        words=words,
        plain=plain,
        gate=rules.gate,
        gated=gated,
        lookback=lookback,
        before_chars=CRASH_CHARS,
    )

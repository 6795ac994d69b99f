"""The one source of truth for "lines worth reading": what can make a line matter to the classifier.

A remote prefilter (issue 15) scans a multi-GB log on the host and sends only windows
around lines that hold one of these literals; classifying those windows, in order, must
give the same answer as classifying the whole file. So the list is derived from the
classifier's own rules (``assets/classify/*.toml``) and constants, never copied: a new
marker, crash pattern or sentinel word reaches the prefilter by itself.

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

from .classifier import CRASH_LOOKBACK, EMIT_AFTER, HEAD_LINES, HEADER_WINDOW, WRAP_WINDOW
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
    first_only: tuple[str, ...]
    """Lowercase literals whose FIRST hit alone matters (``vllm`` and the words only vLLM prints: is
    this a vLLM log at all)."""


def needles() -> Needles:
    """The literals that can make a line matter to the classifier, and the windows around them."""
    rules = load_rules()
    words: list[str] = [*rules.always, *rules.normal_stop, TB_HEAD]
    for stage in rules.stages:
        words += [*stage.markers, *stage.plain, *stage.done]
    words += rules.crash_needles
    words += rules.warning_needles  # a platform without vllm._C, torch unable to initialise CUDA
    literals = tuple(dict.fromkeys(w.lower() for w in words if w))
    return Needles(
        literals=literals,
        head_lines=HEAD_LINES,
        before=max(HEADER_WINDOW, CRASH_LOOKBACK),
        after=max(WRAP_WINDOW, EMIT_AFTER, HEADER_WINDOW),
        first_only=tuple(dict.fromkeys(w.lower() for w in rules.recognise)),
    )

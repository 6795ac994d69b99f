"""Log classification: which layer of a vLLM start-up failed first, and with what root error.

The heart of "first failure". A streaming :class:`Classifier` reads a server log as it
arrives (any chunking), reports the stage timeline and the first ROOT exception as
events the moment they are known (the ladder freezes the scene on them), tells an OOM
that is the cause from one that is a consequence, and gives the failure a signature so
that two runs can be compared (:func:`reproduction`: reproduced k/K, drift).

Everything version-specific (stage markers, root and consequence patterns, the layer
decision table and its advice) is data in ``assets/classify/``. Core module: never
imports a UI toolkit.

Public API (other parts of k3tui code against exactly this)::

    c = Classifier(run="r1", emit=None)
    c.feed(chunk); c.result(); c.finish()
    classify_text(text, run="") -> ClassifyResult   # a newest-first export read oldest first
    advice_for(stage) -> str
    reproduction(signatures) -> (k, K, drift, distinct)
    needles() -> Needles   # the literals a remote prefilter looks for, and its windows
"""

from __future__ import annotations

from .classifier import Classifier
from .layers import Verdict, advice_text
from .needles import Needles, needles
from .order import PROBE, backwards_kind, oldest_first, renumber
from .result import ClassifyResult, FirstException, StageMark
from .rules import STAGES, load_rules
from .signature import make_signature, normalise, reproduction

__all__ = [
    "STAGES",
    "Classifier",
    "ClassifyResult",
    "FirstException",
    "Needles",
    "StageMark",
    "Verdict",
    "advice_for",
    "classify_text",
    "make_signature",
    "needles",
    "normalise",
    "reproduction",
]


def classify_text(text: str, run: str = "") -> ClassifyResult:
    """Classify a whole log held in memory; one exported newest first (a log viewer's order) is read
    in the order it was printed, its line numbers still the file's (:mod:`.order`)."""
    c = Classifier(run=run)
    if (kind := backwards_kind(text.split("\n", PROBE)[:PROBE])) is not None:
        rows = text.split("\n")
        if rows[-1] == "":
            rows.pop()  # (the last line's end)
        if (turned := oldest_first(rows, kind)) is not None:
            lines, numbers = turned
            c.feed("\n".join(lines) + "\n")
            return renumber(c.finish(), numbers)
    c.feed(text)
    return c.finish()


def advice_for(stage: str) -> str:
    """What a failed layer means and the one next step to take there (``none`` too)."""
    return advice_text(load_rules(), stage)

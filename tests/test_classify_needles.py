"""k3tui.classify.needles(): every line the classifier acts on holds one of its literals.

The remote prefilter of issue 15 sends only windows around needle hits; that is exact
only if no line without a needle can change the answer. This spies on the classifier's
entry points for lines outside a traceback (an error line, a traceback opened, a stage
reached, a warning root or a platform taken note of, and the crash look-back's adopted line) over every real log we have, and checks
each such line past the head holds a needle (lowercased, ``in``), and that the look-back
stays within ``before``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from k3tui.classify import Classifier, needles
from k3tui.classify.classifier import Classifier as _C
from k3tui.classify.rules import load_rules
from k3tui.classify.timeline import Timeline
from tests.support.corpus import SHARED_CORPUS, cases, tuned_cases

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
LOGS = [c.path for c in cases(SHARED_CORPUS)] + [c.path for c in tuned_cases()]
LOGS += sorted((SHARED / "fixtures" / "hosts").glob("*/*.txt"))
LOGS += sorted((Path(__file__).resolve().parent / "data" / "classify-real-vllm").glob("*.log"))


def test_needles_are_lowercase_literals_with_windows() -> None:
    n = needles()
    assert n.literals and all(w == w.lower() and w for w in n.literals)
    assert "rror" in n.literals and "traceback (most recent call last):" in n.literals
    assert "application startup complete" in n.literals and "fatal python error: " in n.literals
    assert (
        n.head_lines >= 30
        and n.before >= 50
        and n.after >= 50
        and n.once[0] == "vllm"
        and n.once == load_rules().recognise
    )


def test_the_parts_a_host_scan_uses_are_the_literals() -> None:
    """The remote prefilter reads the parts (words, markers, look-back literals), the local tests the
    literals: one derivation, so every part is among the literals and the crash needles only add to them."""
    n = needles()
    parts = [*n.words, *n.lookback, n.gate, *(m for _, m in n.plain), *(m for _, m in n.gated)]
    assert {p.lower() for p in parts} - {n.gate} <= set(n.literals)
    assert set(n.literals) - {p.lower() for p in parts} <= set(load_rules().crash_needles)
    assert n.before_chars > 0 and all(0 <= i < len(load_rules().stages) + 1 for i, _ in (*n.plain, *n.gated))


@pytest.mark.parametrize("path", LOGS, ids=[f"{p.parent.name}/{p.name}" for p in LOGS])
def test_every_line_acted_on_holds_a_needle(path: Path, monkeypatch) -> None:
    n = needles()
    seen: list[tuple[int, str]] = []
    error_line, opened, reach, adopt = _C._error_line, _C._open, Timeline._reach, _C._adopt_crash
    other = _C._other

    def spy_other(self, ln, k, low):  # a warning root or a platform taken note of, outside _error_line
        before = (self._warning, self._plugin)
        out = other(self, ln, k, low)
        if (self._warning, self._plugin) != before:
            seen.append((k, ln.raw))
        return out

    def spy_error(self, ln, k):
        seen.append((k, ln.raw))
        return error_line(self, ln, k)

    def spy_open(self, ln, k):
        seen.append((k, ln.raw))
        return opened(self, ln, k)

    def spy_reach(self, idx, k, ln, new):
        if k > 1:
            seen.append((k, ln.raw))
        return reach(self, idx, k, ln, new)

    def spy_adopt(self, ln, k):
        seen.append((k, ln.raw))
        assert self._n + 1 - k <= n.before + 1, "the crash look-back reaches further than needles().before"
        return adopt(self, ln, k)

    monkeypatch.setattr(_C, "_other", spy_other)
    monkeypatch.setattr(_C, "_error_line", spy_error)
    monkeypatch.setattr(_C, "_open", spy_open)
    monkeypatch.setattr(Timeline, "_reach", spy_reach)
    monkeypatch.setattr(_C, "_adopt_crash", spy_adopt)
    c = Classifier()
    c.feed(path.read_text(encoding="utf-8", errors="replace"))
    c.finish()
    missing = [(k, raw) for k, raw in seen if k > n.head_lines and not any(w in raw.lower() for w in n.literals)]
    assert not missing, f"lines acted on without a needle: {missing[:3]}"


def test_the_needles_cannot_be_changed_by_a_caller() -> None:
    """Issue 22's run on needles.py (seed 1514076153): one object is shared by the prefilter and
    its tests; a caller that edits it would change what every later scan looks for."""
    import dataclasses

    import pytest

    from k3tui.classify import needles

    n = needles()
    with pytest.raises(dataclasses.FrozenInstanceError):
        n.literals = ()  # type: ignore[misc]

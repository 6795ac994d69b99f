"""One check the classifier's per-session tests share: a real excerpt of the TUNED part, its verdict."""

from __future__ import annotations

from k3tui.classify import classify_text
from tests.support.corpus import held_out, tuned_text


def assert_real(name: str, stage: str, said: str | None = None, folder: str = "vllm-issues") -> None:
    """A log of the tuned part (never a held-out one): its stage, and its root's line saying ``said``."""
    assert not held_out(folder, name)
    res = classify_text(tuned_text(folder, name))
    if said is not None:
        assert res.first_exception is not None and said in res.first_exception.line, (name, res.first_exception)
    assert res.failed_stage == stage, (name, res.evidence)

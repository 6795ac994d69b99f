"""The bisect view (issue 20): progress, the walk as a table, and the answer (or how to resume).

Rendered from :attr:`k3tui.state.SessionState.bisect` (the fold), so the live session, a replay
seeked anywhere and ``replay --follow`` of a bisect being recorded all show the walk as it was.
At 80×24 the side column is narrow: the table keeps its last rows ("… N earlier steps"), each
row cut to the panel's width; the answer line is wrapped, never cut.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from k3tui.state import SessionState
from k3tui.textsafe import neutralise

from ..common.panel import Panel

MAX_ROWS = 10
"""Table rows shown (the latest); the earlier ones are counted."""
SHORT_ROWS = 4
"""Rows on a short terminal (fewer than 30 lines: 80×24), so the answer stays on screen."""
_VERDICT = {"good": "green", "bad": "bold red", "drift": "bold yellow", "error": "yellow"}


class BisectPanel(Panel):
    """``bisect step 3 of ~8 · 2 candidates left``, one row per step, then ``culprit: …``."""

    _last: tuple[SessionState, str] | None = None

    def show(self, state: SessionState, recording: str | Path | None = None) -> None:
        b = state.bisect
        self.display = b is not None
        if b is None:
            return
        self._last = (state, str(recording or ""))
        width = max((self.content_size.width or 0), 24)
        t = Text()
        n = len(b.steps)
        running = not b.end and bool(state.current_rung)
        left = f"{len(b.candidates)} candidate{'s' if len(b.candidates) != 1 else ''} left" if b.keys else ""
        head = f"bisect step {n} of ~{b.estimate}" if n else "bisect resumed"
        t.append(head, style="bold")
        if left:
            t.append(f" · {left}")
        if running:
            t.append(f" · step {n + 1} running", style="cyan")
        if b.resumed_from:
            t.append("\n" + _cut(f"resumed: {neutralise(b.resumed_from)}", width), style="bright_black")
        rows = b.steps[-(SHORT_ROWS if self.app.size.height < 30 else MAX_ROWS) :]
        if n > len(rows):
            t.append(f"\n… {n - len(rows)} earlier step{'s' if n - len(rows) != 1 else ''}", style="bright_black")
        for r in rows:
            k = r.reproduced if r.reproduced != "-" else "?"
            t.append("\n")
            t.append(f"{r.step:>2} ", style="bold")
            t.append(f"{r.verdict:<5}", style=_VERDICT.get(r.verdict, "white"))
            t.append(f" {k:>3} ")
            used = 2 + 1 + 5 + 1 + max(3, len(k)) + 1
            t.append(_cut(neutralise(what_changed(r.purpose)), width - used), style="bright_black")
        if b.found:
            t.append("\n" + neutralise(b.answer), style="bold green")
        elif b.aborted:
            where = neutralise(str(recording)) if recording else "FILE"
            t.append("\naborted", style="bold yellow")
            t.append(f" after {n} run{'s' if n != 1 else ''} — resume with: ")
            said = b.answer.partition("; resume with: ")[2]  # the exact command, as the CLI recorded it
            t.append(
                neutralise(said) if said else f"k3tui bisect <same arguments> --yes --resume {where}", style="bold"
            )
            if b.keys:  # after the resume line: at 80×24 a long list must not push it off the panel
                t.append(f"\nculprit among {len(b.candidates)}: {neutralise(', '.join(b.candidates))}")
        elif b.end:
            t.append(f"\n{neutralise(b.end)}: {neutralise(b.answer)}", style="bold yellow")
        self.show_text(t)

    def on_resize(self) -> None:
        if self._last is not None:
            self.show(*self._last)


def what_changed(purpose: str) -> str:
    """A step's configuration, short: ``G+max_model_len,flag:x``, ``B (as given)``, ``✓ B-flag:x``."""
    p = purpose.replace(" (flaky: repeated)", " ×2")
    if p.startswith("bad as given"):
        return "B (as given)" + p[len("bad as given (B)") :]
    if p.startswith("good as given"):
        return "G (as given)" + p[len("good as given (G)") :]
    for head, short in (
        ("confirm: G + only ", "✓ G+"),
        ("confirm: B - only ", "✓ B-"),
        ("subset: G + ", "G+"),
        ("complement: G + ", "G+"),
    ):
        if p.startswith(head):
            return short + p[len(head) :].replace(", ", ",")
    return p


def _cut(s: str, width: int) -> str:
    width = max(width, 4)
    return s if len(s) <= width else s[: width - 1] + "…"

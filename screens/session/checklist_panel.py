"""The deliverable checklist, ticked from evidence in the event stream (never by hand)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from k3tui.state import SessionState
from k3tui.textsafe import neutralise

from ..viewmodel import checklist


class ChecklistPanel(Static):
    """``☑ first stack archived`` / ``☐ …``, with the evidence beside ticked items."""

    def show(self, state: SessionState) -> None:
        t = Text()
        items = checklist(state)
        done = sum(1 for _, ok, _ in items if ok)
        t.append(f"{done}/{len(items)} done", style="bold")
        for title, ok, evidence in items:
            t.append("\n")
            t.append("☑ " if ok else "☐ ", style="green" if ok else "bright_black")
            t.append(neutralise(title), style="white" if ok else "bright_black")
            if ok and evidence:
                t.append(f" ({neutralise(evidence)})", style="bright_black")
        self.update(t)

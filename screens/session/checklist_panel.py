"""The deliverable checklist and the stop conditions, ticked from evidence in the event stream."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from k3tui.events import AnyEvent
from k3tui.state import SessionState
from k3tui.textsafe import neutralise

from ..common.panel import Panel
from ..viewmodel import checklist, stop_conditions

_MARK = {
    "done": ("☑ ", "green", "white"),
    "missing": ("☐ ", "bright_black", "bright_black"),
    "n/a": ("– ", "bright_black", "bright_black"),
}


class ChecklistPanel(Panel):
    """``☑ First stack archived`` / ``☐ …``; then any stop condition that tripped, in red."""

    def show(self, state: SessionState, events: Sequence[AnyEvent] = ()) -> None:
        t = Text()
        items = checklist(state, events)
        done = sum(1 for _, status, _ in items if status == "done")
        t.append(f"{done}/{len(items)} done", style="bold")
        for title, status, _why in items:
            mark, mstyle, tstyle = _MARK.get(status, _MARK["missing"])
            t.append("\n")
            t.append(mark, style=mstyle)
            t.append(neutralise(title), style=tstyle)
        stops = stop_conditions(state)
        tripped = [s for s in stops if s[1] == "FAIL"]
        if stops:
            t.append(f"\nstop conditions: {len(tripped)} tripped", style="bold red" if tripped else "bold green")
        for title, _verdict, evidence in tripped:
            t.append(f"\n✖ {neutralise(title)}", style="bold red")
            if evidence:
                t.append(f": {neutralise(evidence)}", style="red")
        if tripped:
            t.append("\n→ move to an isolated node", style="bold black on red")
        self.show_text(t)

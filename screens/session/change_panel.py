"""The run-config diff of the next change (before it is applied), or of the last one."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from k3tui.state import SessionState
from k3tui.textsafe import neutralise

from ..common.panel import Panel


class ChangePanel(Panel):
    """``gpu_memory_utilization  0.9 → 0.95``; more than one variable is flagged loudly."""

    def show(self, state: SessionState, preview: list[dict[str, Any]] | None = None) -> None:
        t = Text()
        if preview is not None:
            t.append("next change (not applied)\n", style="bold yellow")
            diff = preview
        elif state.configs:
            last = state.configs[-1]
            t.append(f"last change (run {neutralise(last.run)})\n", style="bright_black")
            diff = last.diff
        else:
            t.append("no run config yet", style="bright_black")
            self.show_text(t)
            return
        if not diff:
            t.append("no change", style="bright_black")
        for d in diff:
            t.append(f"{neutralise(str(d.get('key')))}", style="bold")
            t.append(f"  {neutralise(repr(d.get('old')))} → ", style="bright_black")
            t.append(f"{neutralise(repr(d.get('new')))}\n", style="cyan")
        if len(diff) > 1:
            t.append(
                f"⚠ {len(diff)} variables change at once: one at a time, or give a reason", style="bold black on yellow"
            )
        self.show_text(t)

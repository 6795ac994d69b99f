"""The frozen scene: host, GPUs, container, versions, libcuda — unknowns and failed probes shown."""

from __future__ import annotations

from rich.text import Text

from k3tui.state import SessionState
from k3tui.textsafe import neutralise

from ..common.panel import Panel
from ..viewmodel import scene_rows

_STATUS = {"ok": "white", "unknown": "yellow", "error": "bold red"}


class ScenePanel(Panel):
    """``driver  580.82.07`` rows; ``unknown`` in yellow; a failed probe in red with its error."""

    def show(self, state: SessionState) -> None:
        t = Text()
        if state.scenes:
            last = state.scenes[-1]
            t.append(f"frozen at {last.t:.1f}s ({neutralise(last.reason)})\n", style="bright_black")
        for i, (label, value, status) in enumerate(scene_rows(state.scene)):
            if i:
                t.append("\n")
            t.append(f"{label:<9}", style="bold")
            t.append(" " + value, style=_STATUS[status])
        for host in state.hosts.values():
            if host.simulated:
                t.append(f"\n{neutralise(host.alias)} is a SIMULATED host", style="bold black on yellow")
        self.show_text(t)

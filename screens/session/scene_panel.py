"""The frozen scene: host, GPUs, container, versions, libcuda — unknowns and failed probes shown."""

from __future__ import annotations

from rich.text import Text

from k3tui.events import SceneFrozen
from k3tui.state import SessionState
from k3tui.textsafe import neutralise

from ..common.panel import Panel
from ..viewmodel import host_label, scene_rows

_STATUS = {"ok": "white", "unknown": "yellow", "error": "bold red"}


def latest_per_host(state: SessionState) -> dict[str, SceneFrozen]:
    """The latest frozen scene of each host, in the order hosts first froze."""
    out: dict[str, SceneFrozen] = {}
    for sc in state.scenes:
        out[sc.host] = sc
    return out


class ScenePanel(Panel):
    """``driver  580.82.07`` rows; ``unknown`` in yellow; a failed probe in red with its error.

    With several nodes, one block per node, and ``≠`` beside every fact that differs
    from another node (the odd-node-out is what makes errors drift).
    """

    def show(self, state: SessionState) -> None:
        t = Text()
        scenes = latest_per_host(state)
        if len(scenes) <= 1:
            last = state.scenes[-1] if state.scenes else None
            if last is not None:
                t.append(f"frozen at {last.t:.1f}s ({neutralise(last.reason)})\n", style="bright_black")
            self._rows(t, scene_rows(state.scene), set())
        else:
            rows = {host: scene_rows(sc.scene) for host, sc in scenes.items()}
            values: dict[str, set[str]] = {}
            for rs in rows.values():
                for label, value, _ in rs:
                    values.setdefault(label, set()).add(value)
            differ = {label for label, vals in values.items() if len(vals) > 1 and not label.startswith("probe")}
            if differ:
                t.append(f"≠ nodes differ: {', '.join(sorted(differ))}\n", style="bold black on yellow")
            for n, (host, sc) in enumerate(scenes.items()):
                t.append(("\n" if n else "") + f"── {host_label(state, neutralise(host or '?'))} ", style="bold cyan")
                t.append(f"frozen at {sc.t:.1f}s ({neutralise(sc.reason)})\n", style="bright_black")
                self._rows(t, rows[host], differ)
        for view in state.hosts.values():
            if view.simulated:
                t.append(f"\n{neutralise(view.alias)} is a SIMULATED host", style="bold black on yellow")
        self.show_text(t)

    @staticmethod
    def _rows(t: Text, rows: list[tuple[str, str, str]], differ: set[str]) -> None:
        for i, (label, value, status) in enumerate(rows):
            if i:
                t.append("\n")
            mark = "≠" if label in differ else " "
            t.append(mark, style="bold yellow")
            t.append(f"{label:<9}", style="bold")
            t.append(" " + value, style="bold yellow" if label in differ else _STATUS[status])

"""GPU memory per GPU as a sparkline of the recent samples, scaled to the GPU's total memory."""

from __future__ import annotations

from rich.text import Text

from k3tui.state import SessionState
from k3tui.textsafe import neutralise

from ..common.panel import Panel

BLOCKS = " ▁▂▃▄▅▆▇█"
WIDTH = 20


def sparkline(values: list[float], top: float, width: int = WIDTH) -> str:
    vals = values[-width:]
    top = top or max(vals, default=0.0) or 1.0
    return "".join(BLOCKS[min(8, max(0, round(v / top * 8)))] for v in vals).rjust(width)


class GpuPanel(Panel):
    """``0 ▁▂▃▅▇  142/284G`` — one row per GPU (per host when there are several)."""

    def show(self, state: SessionState) -> None:
        t = Text()
        if not state.gpu:
            t.append("no GPU samples yet", style="bright_black")
        many_hosts = len({h for h, _ in state.gpu}) > 1
        for i, ((host, idx), hist) in enumerate(sorted(state.gpu.items())):
            total = state.gpu_total.get((host, idx), 0.0)
            used = hist[-1] if hist else 0.0
            if i:
                t.append("\n")
            label = f"{neutralise(host)}:{idx}" if many_hosts else f"{idx}"
            t.append(f"{label:>2} ", style="bold")
            frac = used / total if total else 0.0
            t.append(sparkline(list(hist), total), style="red" if frac > 0.95 else "yellow" if frac > 0.8 else "green")
            t.append(f" {used / 1024:.0f}/{total / 1024:.0f}G" if total else f" {used / 1024:.0f}G")
        self.show_text(t)

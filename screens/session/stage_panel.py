"""Where the current run is: its stages with elapsed time beside the previous run's, and progress bars."""

from __future__ import annotations

from rich.text import Text

from k3tui.state import SessionState
from k3tui.textsafe import neutralise

from ..common.panel import Panel
from ..viewmodel import ProgressTracker, fmt_duration, stage_times

BAR = 16


def bar(done: int, total: int, width: int = BAR) -> str:
    frac = 0.0 if total <= 0 else min(1.0, done / total)
    full = int(frac * width)
    return "█" * full + "░" * (width - full)


class StagePanel(Panel):
    """``▶ weights 03:12 (prev 02:58)`` per stage, then ``shards ███░░ 27/64``."""

    def show(self, state: SessionState, now: float, progress: ProgressTracker) -> None:
        t = Text()
        run = state.runs.get(state.current_run)
        if run is None:
            t.append("no run yet", style="bright_black")
            self.show_text(t)
            return
        t.append(f"run {neutralise(run.run)}", style="bold")
        if run.ended is not None:
            t.append(f" ended ({neutralise(run.end_reason or 'exited')} {run.status})", style="bright_black")
        times = stage_times(state, now)
        if times:
            t.append(f"\n{'stage':<11}{'now':>6} {'prev':>6}", style="bright_black")
        for st in times:
            t.append("\n")
            failed = run.exception is not None and run.exception.stage == st.stage
            style = "bold red" if failed else "bold cyan" if st.running else "white"
            t.append(f"{'▶' if st.running else '✖' if failed else '✔'} {st.stage:<9}", style=style)
            t.append(f"{fmt_duration(st.seconds):>6}", style=style)
            t.append(f" {fmt_duration(st.previous):>6}", style="bright_black")
        exc = run.exception
        if exc is not None and exc.stage and exc.stage not in {st.stage for st in times}:
            t.append(f"\n✖ {neutralise(exc.stage):<9}{'failed':>6}", style="bold red")
        for name, (done, total) in progress.bars.items():
            t.append(f"\n{name}\n", style="bold")
            t.append(bar(done, total), style="green" if done >= total else "yellow")
            t.append(f" {done}/{total}")
        self.show_text(t)

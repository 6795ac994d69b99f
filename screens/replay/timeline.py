"""The replay timeline: markers along the session, the current position, play state and speed."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from ..viewmodel import fmt_duration

GLYPH = {
    "rung_entered": ("▶", "bold cyan"),
    "rung_left": ("■", "cyan"),
    "stage_reached": ("│", "blue"),
    "exception_found": ("✖", "bold red"),
    "scene_frozen": ("❄", "bold bright_white"),
    "note": ("◆", "magenta"),
    "marker": ("◆", "bold magenta"),
}
GLYPH_LEGEND = {
    "rung_entered": "a rung started",
    "rung_left": "a rung ended",
    "stage_reached": "a start-up stage reached",
    "exception_found": "the first root exception",
    "scene_frozen": "a scene frozen",
    "note": "an operator's note",
    "marker": "a marker (m / M jump between them)",
}
"""What each glyph means (the help's legend)."""
PRIORITY = ["stage_reached", "rung_left", "rung_entered", "note", "marker", "scene_frozen", "exception_found"]


@dataclass(frozen=True)
class TimelineModel:
    duration: float
    position: float
    markers: tuple[tuple[float, str], ...]
    playing: bool = False
    speed: float = 1.0
    skip_idle: bool = True
    events: tuple[int, int] = (0, 0)
    label: str = ""
    """The marker just reached (shown on the status line instead of a pop-up)."""


class Timeline(Widget):
    """Two lines: marker glyphs over a position bar, then time, play state and speed. Click to seek."""

    model: reactive[TimelineModel | None] = reactive(None)

    class Seek(Message):
        """The operator clicked the timeline at session time ``t``."""

        def __init__(self, t: float) -> None:
            super().__init__()
            self.t = t

    def render(self) -> Text:
        m = self.model
        width = max(10, self.size.width)
        if m is None:
            return Text("loading…", style="bright_black")
        scale = (width - 1) / m.duration if m.duration > 0 else 0.0
        cells: list[tuple[str, str] | None] = [None] * width
        for t, kind in m.markers:
            x = min(width - 1, int(t * scale))
            cur = cells[x]
            if cur is None or PRIORITY.index(kind) > PRIORITY.index(cur[1]):
                cells[x] = (GLYPH[kind][0], kind)
        out = Text()
        for c in cells:
            out.append(" " if c is None else c[0], style="" if c is None else GLYPH[c[1]][1])
        out.append("\n")
        pos = min(width - 1, int(m.position * scale))
        out.append("━" * pos, style="bold green")
        out.append("●", style="bold bright_white")
        out.append("─" * (width - pos - 1), style="bright_black")
        out.append("\n")
        state = "▶ playing" if m.playing else "‖ paused"
        idle = "  skip idle" if m.skip_idle else ""
        out.append(f"{fmt_duration(m.position)} / {fmt_duration(m.duration)}  ", style="bold")
        out.append(f"{state} {m.speed:g}×{idle}  event {m.events[0]:,}/{m.events[1]:,}")
        if m.label:
            used = len(out.plain.rsplit("\n", 1)[-1])
            room = width - used - 3
            if room > 8:
                label = m.label if len(m.label) <= room else m.label[: room - 1] + "…"
                out.append(f"  {label}", style="bold magenta")
        return out

    def on_click(self, event: events.Click) -> None:
        m = self.model
        if m is None or m.duration <= 0:
            return
        width = max(10, self.size.width)
        self.post_message(self.Seek(max(0.0, min(m.duration, event.x / (width - 1) * m.duration))))

"""A Static that repaints only when its text changes, and re-lays out only when its shape does.

Panels re-render from state several times a second; a Textual layout pass costs tens of
milliseconds on a full screen, so an unchanged panel must cost nothing and a ticking timer
(same line lengths) only a repaint.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class Panel(Static):
    """Base of the session panels: call :meth:`show_text` with freshly built text."""

    _shown: Text | None = None

    def show_text(self, text: Text) -> None:
        old = self._shown
        if old is not None and old == text:
            return
        shape = [len(line) for line in text.plain.split("\n")]
        layout = old is None or shape != [len(line) for line in old.plain.split("\n")]
        self._shown = text
        self.update(text, layout=layout)

"""The help screen: what freeze-then-ladder means, and every key of the screen it was opened from."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

INTRO = (
    "Freeze, then ladder. Freeze the failure scene before touching anything (host, driver, GPUs, "
    "image + digest, launch command, env, loaded libcuda, first exception). Then reproduce one layer "
    "at a time: baseline → minimal launch → one fixed request → one feature at a time, one variable "
    "per step. Everything is recorded; replay never runs anything."
)


class HelpScreen(ModalScreen[None]):
    """Keys of the calling screen, from its bindings (so help never drifts from the code)."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, screen_title: str, keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self.screen_title = screen_title
        self.keys = keys

    def compose(self) -> ComposeResult:
        t = Text()
        t.append(INTRO + "\n\n", style="italic")
        width = max((len(k) for k, _ in self.keys), default=4)
        for key, desc in self.keys:
            t.append(f"{key:>{width}}  ", style="bold cyan")
            t.append(desc + "\n")
        t.append("\nCommand palette: ctrl+p lists every action by name.", style="bright_black")
        with Vertical(id="dialog"):
            yield Label(f"Help — {self.screen_title}", id="dialog-title", markup=False)
            with VerticalScroll(id="dialog-body"):
                yield Static(t, id="help-text")
            yield Label("Esc to close", classes="dialog-hint")

    def action_close(self) -> None:
        self.dismiss(None)

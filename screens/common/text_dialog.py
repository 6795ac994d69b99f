"""Show a block of text (a scene diff, an export result) in a scrollable modal."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static


class TextDialog(ModalScreen[None]):
    """Read-only text; Esc or q closes it."""

    BINDINGS = [Binding("escape,q", "close", "Close")]

    def __init__(self, title: str, body: Text) -> None:
        super().__init__()
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.title_text, id="dialog-title", markup=False)
            with VerticalScroll(id="dialog-body"):
                yield Static(self.body, id="dialog-text")
            yield Label("Esc to close", classes="dialog-hint")

    def action_close(self) -> None:
        self.dismiss(None)

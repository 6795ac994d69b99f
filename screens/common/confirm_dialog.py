"""Ask for an explicit yes before something that cannot be taken back lightly.

Used for an unknown host key (trusting it is written to known_hosts) and for a debug
toggle with a warning. Only ``y`` or the yes button confirms; Enter lands on the no
button, so a tired operator hitting Enter twice never says yes by accident.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from . import key_guard


class ConfirmDialog(ModalScreen[bool]):
    """A question with yes/no; dismisses with True only on ``y`` or the yes button."""

    AUTO_FOCUS = "#no"
    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, title: str, body: Text, yes: str = "Yes", no: str = "No") -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.yes = yes
        self.no = no

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.title_text, id="dialog-title", markup=False)
            with VerticalScroll(id="dialog-body"):
                yield Static(self.body, id="dialog-text")
            with Horizontal(id="dialog-buttons"):
                yield Button(f"{self.yes} (y)", id="yes", variant="warning")
                yield Button(f"{self.no} (n)", id="no", variant="primary")
            yield Label("y confirms · n or Esc cancels", classes="dialog-hint")

    def on_mount(self) -> None:
        self.app.clear_notifications()  # a toast must not sit on the question

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        key_guard.arm(self.app)  # answered by a letter: the rest of a typed word is no command
        self.dismiss(yes)

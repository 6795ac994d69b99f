"""Ask one line of text (a note, a marker label, a time to seek to, a path)."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class PromptDialog(ModalScreen[str | None]):
    """A modal with a label and an input; dismisses with the text, or None on Esc.

    Keys typed before the input has focus (``n`` then ``hi`` at typing speed: the dialog is
    still being mounted) are kept and put into the input, never dropped."""

    AUTO_FOCUS = "#dialog-input"
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, placeholder: str = "", value: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.placeholder = placeholder
        self.value = value
        self._early: list[str] = []

    def on_mount(self) -> None:
        self.app.clear_notifications()  # a toast must not sit on the input
        self._take_early()

    def on_key(self, event: events.Key) -> None:
        if event.is_printable and event.character and not isinstance(self.focused, Input):
            event.stop()
            event.prevent_default()
            self.type_ahead(event.character)

    def type_ahead(self, char: str) -> bool:
        """Keep a character typed before the input had focus (the app hands over the ones that went astray)."""
        self._early.append(char)
        self._take_early()
        return True

    def _take_early(self) -> None:
        if not self._early:
            return
        try:
            box = self.query_one("#dialog-input", Input)
        except NoMatches:
            return
        typed = "".join(self._early)
        self._early.clear()
        # typing replaces an untouched suggested value, as it would with the input focused
        box.value = typed if box.value == self.value else box.value + typed
        box.cursor_position = len(box.value)
        box.focus()

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.title_text, id="dialog-title", markup=False)
            yield Input(value=self.value, placeholder=self.placeholder, id="dialog-input")
            yield Label("Enter to confirm · Esc to cancel", classes="dialog-hint")

    answered = False
    """Dismissed already (a second Enter must not dismiss the screen below)."""

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._answer(event.value.strip() or None)

    def action_cancel(self) -> None:
        self._answer(None)

    def _answer(self, value: str | None) -> None:
        if not self.answered:
            self.answered = True
            self.dismiss(value)

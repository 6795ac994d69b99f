"""Pick one of a few named choices from a list (the demo's scenario): no free text, so no typo.

Each row shows the name and what it is; Enter picks the highlighted row, typing a name's
first letters moves to it, Esc cancels.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from k3tui.textsafe import neutralise


class ChoiceDialog(ModalScreen[str | None]):
    """``choices``: (name, what it is); dismisses with the picked name, or None on Esc."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, choices: list[tuple[str, str]], default: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.choices = choices
        self.default = default

    def compose(self) -> ComposeResult:
        width = max((len(n) for n, _ in self.choices), default=8)
        options = []
        for name, what in self.choices:
            t = Text(f"{neutralise(name):<{width}}  ", style="bold")
            t.append(neutralise(what), style="bright_black")
            options.append(Option(t, id=name))
        with Vertical(id="dialog"):
            yield Label(self.title_text, id="dialog-title", markup=False)
            yield OptionList(*options, id="choices")
            yield Label("Enter picks · ↑↓ move · Esc cancels", classes="dialog-hint")

    def on_mount(self) -> None:
        self.app.clear_notifications()
        options = self.query_one(OptionList)
        names = [n for n, _ in self.choices]
        options.highlighted = names.index(self.default) if self.default in names else 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)

"""Pick one of the profile's debug toggles (``NCCL_DEBUG=TRACE``, ``CUDA_LAUNCH_BLOCKING=1`` …).

The list comes from the driver (``Driver.toggles()``), so the profile stays the only
place that names them. Each row says whether the next run has the toggle on; picking a
row flips it. A toggle with a warning is marked ⚠ here and is confirmed separately.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from k3tui.textsafe import neutralise


def toggle_label(item: dict[str, Any]) -> Text:
    """``● on   nccl-debug  NCCL_DEBUG=TRACE`` (⚠ and the warning's gist for a warned toggle)."""
    t = Text()
    t.append("● on   " if item.get("on") else "○ off  ", style="bold green" if item.get("on") else "bright_black")
    t.append(neutralise(str(item.get("name", ""))), style="bold")
    setting = " ".join([*(f"{k}={v}" for k, v in (item.get("env") or {}).items()), *(item.get("args") or [])])
    t.append(f"  {neutralise(setting)}", style="cyan")
    if item.get("warning"):
        t.append("  ⚠ needs confirmation", style="bold yellow")
    return t


class TogglePicker(ModalScreen[str | None]):
    """The toggles as a list; dismisses with the picked toggle's name, or None on Esc."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, items: list[dict[str, Any]]) -> None:
        super().__init__()
        self.items = items

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Debug toggles for the next run (Enter flips one)", id="dialog-title", markup=False)
            yield OptionList(*(Option(toggle_label(i), id=str(i["name"])) for i in self.items), id="toggles")
            yield Label("Enter flips the toggle · Esc cancels · one toggle is one change", classes="dialog-hint")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)

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


def binding_help(screen: object, app: object) -> list[tuple[str, str]]:
    """(keys, description) of a screen's bindings: its own first, then inherited, in declaration order."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for cls in type(screen).__mro__:
        for b in cls.__dict__.get("BINDINGS", []):
            if not isinstance(b, Binding) or not b.description or b.action in seen:
                continue
            if b.action == "cycle_host" and not screen.check_action(b.action, ()):  # type: ignore[attr-defined]
                continue  # one host: no host selector
            seen.add(b.action)
            keys = " ".join(app.get_key_display(Binding(k.strip(), b.action)) for k in b.key.split(","))  # type: ignore[attr-defined]
            out.append((keys, b.tooltip or b.description))  # the tooltip, where given, says more
    return out


class HelpScreen(ModalScreen[None]):
    """Keys of the calling screen, from its bindings (so help never drifts from the code)."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, screen_title: str, keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self.screen_title = screen_title
        self.keys = keys

    def compose(self) -> ComposeResult:
        t = Text()
        width = max((len(k) for k, _ in self.keys), default=4)
        for key, desc in self.keys:
            t.append(f"{key:>{width}}  ", style="bold cyan")
            t.append(desc + "\n")
        t.append(f"{'ctrl+p':>{width}}  ", style="bold cyan")
        t.append("command palette: every action by name\n\n")
        t.append(INTRO, style="italic bright_black")
        with Vertical(id="dialog"):
            yield Label(f"Help — {self.screen_title}", id="dialog-title", markup=False)
            with VerticalScroll(id="dialog-body"):
                yield Static(t, id="help-text")
            yield Label("Esc to close", classes="dialog-hint")

    def action_close(self) -> None:
        self.dismiss(None)

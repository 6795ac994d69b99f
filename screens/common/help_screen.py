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
            desc = b.tooltip or b.description  # the tooltip, where given, says more
            if b.action == "cycle_host" and not screen.check_action(b.action, ()):  # type: ignore[attr-defined]
                desc += " — only with several hosts; this session has one"
            seen.add(b.action)
            keys = " ".join(app.get_key_display(Binding(k.strip(), b.action)) for k in b.key.split(","))  # type: ignore[attr-defined]
            out.append((keys, desc))
    return out


def legend() -> Text:
    """What the log's gutter letters and marks, its colours, and the replay timeline's glyphs mean."""
    from ..replay.timeline import GLYPH, GLYPH_LEGEND
    from ..session.log_view import LINE_LEGEND, LINE_STYLE, SEVERITY_STYLE, STAGE_LEGEND, STAGE_STYLE

    t = Text()
    t.append("Log gutter — the stage a line belongs to:\n", style="bold")
    for code, stage in STAGE_LEGEND.items():
        t.append(f"  {code}", style=STAGE_STYLE[code])
        t.append(f" {stage}")
    t.append("\n")
    for mark, what in LINE_LEGEND.items():
        t.append(f"  {mark}", style=LINE_STYLE[mark])
        t.append(f" {what}\n")
    t.append("Colours — how loud a line is:\n", style="bold")
    sev_words = {
        "fault": "host hardware fault (Xid, SXid, ECC, NVLink, fabric, IMEX)",
        "error": "failure or error",
        "warn": "warning, unknown verdict",
        "info": "ordinary output",
        "debug": "routine / debug chatter",
    }
    for level, what in sev_words.items():
        t.append(f"  {level:5}", style=SEVERITY_STYLE[level] or "default")
        t.append(f" {what}\n")
    t.append("Replay timeline:\n", style="bold")
    for kind, what in GLYPH_LEGEND.items():
        glyph, style = GLYPH[kind]
        t.append(f"  {glyph}", style=style)
        t.append(f" {what}\n")
    t.append("  ━●─", style="bold green")
    t.append(" played so far, the current position, still to come\n")
    return t


class HelpScreen(ModalScreen[None]):
    """Keys of the calling screen, from its bindings (so help never drifts from the code)."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, screen_title: str, keys: list[tuple[str, str]], legend: Text | None = None) -> None:
        super().__init__()
        self.screen_title = screen_title
        self.keys = keys
        self.legend = legend

    def compose(self) -> ComposeResult:
        t = Text()
        width = max((len(k) for k, _ in self.keys), default=4)
        for key, desc in self.keys:
            t.append(f"{key:>{width}}  ", style="bold cyan")
            t.append(desc + "\n")
        t.append(f"{'ctrl+p':>{width}}  ", style="bold cyan")
        t.append("command palette: every action by name\n\n")
        if self.legend is not None:
            t.append_text(self.legend)
            t.append("\n")
        t.append(INTRO, style="italic bright_black")
        with Vertical(id="dialog"):
            yield Label(f"Help — {self.screen_title}", id="dialog-title", markup=False)
            with VerticalScroll(id="dialog-body"):
                yield Static(t, id="help-text")
            yield Label("Esc to close", classes="dialog-hint")

    def action_close(self) -> None:
        self.dismiss(None)

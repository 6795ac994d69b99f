"""Home: recent sessions, connect to a host, start the demo, open a recording or a repro package."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.suggester import SuggestFromList
from textual.widgets import Footer, Header, Input, Label, Static
from textual.worker import Worker

from k3tui.assets import asset, recordings_dir
from k3tui.textsafe import neutralise

from ..common.choice_dialog import ChoiceDialog
from ..common.help_screen import HelpScreen, binding_help
from ..common.prompt_dialog import PromptDialog
from ..common.workers import forward_worker_state
from .recent_sessions import RecentSessions, scan, user_recordings_dir
from .ssh_aliases import ssh_aliases

INTRO = "Freeze the failure scene, then reproduce it one variable at a time. Every step is recorded."


DEFAULT_SCENARIO = "healthy"
"""The scenario Home offers first — the same as ``k3tui demo`` without ``--scenario``."""


def demo_scenarios() -> list[str]:
    """Scenario names of the simulated host (data files under assets/scenarios)."""
    return [name for name, _ in demo_choices()]


def demo_choices() -> list[tuple[str, str]]:
    """(name, title) of every scenario of the simulated host, by name."""
    d = asset("scenarios")
    try:
        paths = sorted(p for p in d.iterdir() if p.suffix == ".toml" and not p.stem.startswith("_"))
    except OSError:
        return []
    out = []
    for p in paths:
        try:
            title = str(tomllib.loads(p.read_text()).get("title", ""))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            title = "(unreadable scenario file)"
        out.append((p.stem, title))
    return out


class HomeScreen(Screen):
    """Where k3tui starts. ``dirs``: where to look for recent sessions (default: user's + samples)."""

    BINDINGS = [
        Binding("c", "connect", "Connect"),
        Binding("d", "demo", "Demo"),
        Binding("o", "open", "Open file"),
        Binding("question_mark", "help", "Help"),
        Binding("q", "app.quit", "Quit"),
        Binding("escape", "focus_list", "Recent sessions", show=False),
    ]

    def __init__(self, dirs: list[Path] | None = None, ssh_config: Path | None = None) -> None:
        super().__init__()
        self.dirs = dirs if dirs is not None else [user_recordings_dir(), recordings_dir()]
        self.aliases = ssh_aliases(ssh_config)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(INTRO), id="intro")
        with Horizontal(id="connect-row"):
            yield Label("host ", id="connect-label")
            yield Input(
                placeholder="ssh alias or [user@]host[:port], Enter to connect"
                + (f" — e.g. {self.aliases[0]}" if self.aliases else ""),
                suggester=SuggestFromList(self.aliases, case_sensitive=False),
                id="target",
            )
        yield Static(id="home-error")
        yield Label("Recent sessions — Enter replays (runs nothing)", id="recent-title")
        yield RecentSessions(id="recent")
        yield Footer(compact=True)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        forward_worker_state(self, event)

    def on_mount(self) -> None:
        self.title = "k3tui"
        self.sub_title = "home"
        self.query_one("#home-error").display = False
        self.refresh_sessions()
        self.query_one(RecentSessions).focus()

    def refresh_sessions(self) -> None:
        entries = scan(self.dirs)
        self.query_one(RecentSessions).show(entries)
        self.query_one("#recent-title", Label).update(
            f"Recent sessions ({len(entries)}) — Enter replays (runs nothing)"
            if entries
            else "No recorded sessions yet — press d for the demo"
        )

    @property
    def _k3(self) -> Any:
        """The k3tui app (its ``open_path``/``start_session``; Textual types ``self.app`` as a plain App)."""
        return self.app

    @on(RecentSessions.Open)
    def _open_selected(self, event: RecentSessions.Open) -> None:
        self._k3.open_path(event.path)

    def action_focus_list(self) -> None:
        self.query_one(RecentSessions).focus()

    def action_connect(self) -> None:
        self.query_one("#target", Input).focus()

    @on(Input.Submitted, "#target")
    def _connect(self, event: Input.Submitted) -> None:
        target = event.value.strip()
        if not target:
            self.notify("type an ssh alias or user@host", severity="warning", markup=False)
            return
        self.show_error("")
        self._k3.start_session(target)

    def action_demo(self) -> None:
        choices = demo_choices()
        if not choices:
            self.show_error("no demo scenarios found in this installation (assets/scenarios is empty)")
            return
        self.app.push_screen(
            ChoiceDialog("Demo against the SIMULATED host — which scenario?", choices, default=DEFAULT_SCENARIO),
            self._demo,
        )

    def _demo(self, scenario: str | None) -> None:
        if scenario:
            self.show_error("")
            self._k3.start_session(f"demo:{neutralise(scenario)}")

    def show_error(self, text: str) -> None:
        """A session that could not start says why here, until the next try (not in a toast that fades)."""
        box = self.query_one("#home-error", Static)
        box.update(Text(f"✖ {text}" if text else "", style="bold red"))
        box.display = bool(text)

    def action_open(self) -> None:
        self.app.push_screen(
            PromptDialog("Open a session file (.k3rec) or a repro package (.tar.gz)"), self._open_typed
        )

    def _open_typed(self, text: str | None) -> None:
        if text:
            self._k3.open_path(Path(text).expanduser())

    def action_help(self) -> None:
        keys = [("enter", "replay the selected session (runs nothing)"), *binding_help(self, self.app)]
        self.app.push_screen(HelpScreen("home", keys))

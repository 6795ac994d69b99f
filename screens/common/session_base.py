"""What the live session and the replay screens share: the views, log keys, export, diff, help.

Subclasses provide :attr:`recording_path` and may override :meth:`search_next` (replay
searches the whole recording, live searches the log window).
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Static
from textual.worker import Worker

from k3tui.textsafe import neutralise

from ..session.session_view import SessionView
from ..viewmodel import host_label
from . import key_guard
from .help_screen import HelpScreen, binding_help, legend
from .text_dialog import TextDialog
from .workers import forward_worker_state


class SessionBase(Screen):
    """Header, SIMULATED bar, the session views and the footer; log, export, diff and help actions."""

    BINDINGS = [
        Binding("slash", "search", "Search"),
        Binding("right_square_bracket", "search_next", "Next match", show=False),
        Binding("left_square_bracket", "search_prev", "Prev match", show=False),
        Binding("e", "filter('errors')", "Errors"),
        Binding("o", "filter('match')", "Only matches", show=False),
        Binding("x", "first_exception", "1st exc"),
        Binding("w", "wrap", "Wrap long lines (again: clip them)", show=False),
        Binding("b", "banner", "Banner: the whole first exception, advice and scene", show=False),
        Binding("F", "follow", "Follow/pause", show=False),
        Binding("P", "probes", "Probe output", show=False),
        Binding("h", "cycle_host", "Host filter (all → each host)", show=False),
        Binding("E", "export", "Export", show=False),
        Binding("D", "diff", "Diff scenes", show=False),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit_session", "Quit"),
        Binding("escape", "escape", "Back", show=False),
    ]
    FOOTER_FIRST: tuple[str, ...] = ()
    """Actions the footer shows first, in this order (at 80 columns the rest falls off its end)."""

    recording_path: Path | None = None

    def __init__(self, *, fold: bool, **kwargs) -> None:  # noqa: ANN003
        super().__init__(**kwargs)
        self._fold = fold

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="simbar")
        yield SessionView(fold=self._fold, id="view")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.view.log_view.focus()

    def on_screen_resume(self) -> None:
        key_guard.resumed(self.app)

    def on_key(self, event: events.Key) -> None:
        if key_guard.swallow(self.app, event):  # the tail of a word typed into a yes/no dialog
            return
        # a key typed in the burst that opened a text dialog: into the dialog (or the search box)
        take = getattr(self.app, "type_ahead", self.type_ahead)
        if event.is_printable and event.character and take(event.character):
            event.stop()
            event.prevent_default()

    def type_ahead(self, char: str) -> bool:
        """A character typed right after ``/`` while the box was still being shown: the query, not a command."""
        try:
            box = self.query_one("#search", Input)
        except NoMatches:
            return False
        if not box.display or box.has_focus:
            return False
        box.value += char
        box.cursor_position = len(box.value)
        box.focus()
        return True

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        """The screen's bindings with :attr:`FOOTER_FIRST` first: the footer shows them in this order."""
        found = super().active_bindings
        order = {a: i for i, a in enumerate(self.FOOTER_FIRST)}

        def name(k: str) -> str:
            return found[k].binding.action.split("(", 1)[0]  # step(1) → step

        first = sorted((k for k in found if name(k) in order), key=lambda k: order[name(k)])
        rest = [k for k in found if name(k) not in order]
        return {k: found[k] for k in (*first, *rest)}

    def on_resize(self) -> None:
        # at 80 columns the command palette's hint costs the controls their place (help names ctrl+p)
        self.query_one(Footer).show_command_palette = self.size.width >= 110

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        forward_worker_state(self, event)
        self.worker_changed(event)

    def worker_changed(self, event: Worker.StateChanged) -> None:
        """Hook for subclasses (a failure is already reported by the app)."""

    @property
    def view(self) -> SessionView:
        return self.query_one(SessionView)

    def show_simulated(self, text: str) -> None:
        bar = self.query_one("#simbar", Static)
        bar.update(Text(text))
        bar.add_class("-shown")

    # --- log ------------------------------------------------------------------------

    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.display = True
        box.focus()

    @on(Input.Changed, "#search")
    def _search_changed(self, event: Input.Changed) -> None:
        self.view.log_view.set_query(event.value)
        self.view.render_panels(everything=False)

    @on(Input.Submitted, "#search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        self.search_next(True)

    def action_escape(self) -> None:
        """Close the search box, else go back to the previous screen."""
        box = self.query_one("#search", Input)
        if box.display:
            box.display = False
            self.view.log_view.focus()
        else:
            self.app.action_back()  # type: ignore[unused-coroutine]  # K3App's is synchronous

    def action_search_next(self) -> None:
        self.search_next(True)

    def action_search_prev(self) -> None:
        self.search_next(False)

    def search_next(self, forward: bool) -> None:
        log = self.view.log_view
        if not log.query_text:
            self.notify("no search yet: press / and type", severity="warning", markup=False)
        elif not log.find(forward):
            self.notify(
                f"no {'further' if forward else 'earlier'} match for {neutralise(log.query_text)!r} in the log window",
                markup=False,
            )
        self.view.render_panels(everything=False)

    def action_filter(self, mode: str) -> None:
        log = self.view.log_view
        if mode == "match" and not log.query_text:
            self.notify("search first (/), then show only matching lines", severity="warning", markup=False)
            return
        log.set_filter("all" if log.mode == mode else mode)
        self.view.render_panels()

    def action_first_exception(self) -> None:
        st = self.view.state
        if st.first_exception is None:
            self.notify("no root exception in this session (yet)", markup=False)
            return
        if not self.view.log_view.jump_to_exception(neutralise(st.first_exception.line)):
            self.notify(
                "the first exception has scrolled out of the log window; it is in the freeze banner",
                severity="warning",
                markup=False,
            )
        self.view.render_panels()

    def action_probes(self) -> None:
        log = self.view.log_view
        log.set_probes(not log.show_probes)
        self.notify(
            "showing probe and sampler output too" if log.show_probes else "server log only (P shows probe output)",
            markup=False,
        )
        self.view.render_panels()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # the host selector exists only when the session spans more than one host
        if action == "cycle_host":
            try:
                return len(self.view.log_view.hosts) > 1
            except NoMatches:  # not composed yet
                return False
        return True

    def action_cycle_host(self) -> None:
        log = self.view.log_view
        if len(log.hosts) < 2:
            self.notify("one host in this session: nothing to select", markup=False)
            return
        host = log.cycle_host()
        self.notify(
            f"log: {host_label(self.view.state, host)} only (h: next host)"
            if host is not None
            else "log: every host (h: one host)",
            markup=False,
        )
        self.view.render_panels(everything=False)

    def action_follow(self) -> None:
        log = self.view.log_view
        log.follow(not log.auto_scroll)
        self.view.render_panels()

    def action_wrap(self) -> None:
        log = self.view.log_view
        log.set_wrap(not log.wrap)
        self.view.render_panels(everything=False)

    def action_banner(self) -> None:
        if not self.view.toggle_banner():
            self.notify("no first exception yet: the banner opens when one is found", markup=False)

    # --- export, diff, help --------------------------------------------------------------

    def action_export(self) -> None:
        if self.recording_path is None:
            self.notify("nothing recorded yet to export", severity="warning", markup=False)
            return
        self.notify(f"exporting {self.recording_path.name}…", markup=False)
        self._export(self.recording_path)

    @work(thread=True, exclusive=True, group="export", description="export repro package", exit_on_error=False)
    def _export(self, path: Path) -> None:
        try:
            from k3tui.package import export_session
        except ImportError:
            self.app.call_from_thread(
                self.notify,
                "export is not in this build yet (k3tui.package is missing); run `k3tui export` later",
                severity="error",
                markup=False,
            )
            return
        out = export_session(path, _free_name(path))
        self.app.call_from_thread(self.notify, f"repro package written: {out}", timeout=10, markup=False)

    def action_diff(self) -> None:
        scenes = self.view.state.scenes
        if len(scenes) < 2:
            self.notify("diff needs two frozen scenes (f freezes the scene again)", severity="warning", markup=False)
            return
        a, b = scenes[-2], scenes[-1]
        t = Text()
        t.append(
            f"scene at {a.t:.1f}s ({neutralise(a.reason)}) → scene at {b.t:.1f}s ({neutralise(b.reason)})\n\n",
            style="bold",
        )
        t.append_text(scene_diff_text(a.scene, b.scene))
        self.app.push_screen(TextDialog("Scene diff", t))

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self.title or "session", binding_help(self, self.app), legend()))

    async def action_quit_session(self) -> None:
        """``q``: quit k3tui (the live session asks first, as Esc does)."""
        await self.app.action_quit()


def scene_diff_text(a: dict, b: dict) -> Text:
    """Two frozen scenes compared as ``k3tui diff`` does: variables, not volatile fields, shown where they differ."""
    from k3tui.scene.diff import diff_lines, diff_scenes
    from k3tui.scene.model import scene_from_dict

    try:
        d = diff_scenes(scene_from_dict(a), scene_from_dict(b))
    except Exception as exc:  # noqa: BLE001 - a scene recorded by another version: say so, show nothing wrong
        return Text(f"these scenes cannot be compared: {neutralise(str(exc))}", style="yellow")
    t = Text()
    for line in diff_lines(d):
        style = ""
        if line.startswith("["):
            style = "bold"
        elif line.startswith("!!!"):
            style = "bold black on yellow"
        elif line.startswith(("nothing that matters", "no differences", "one variable")):
            style = "green"
        elif line.startswith("(not variables"):
            style = "bright_black"
        t.append(neutralise(line) + "\n", style=style)
    return t


def _free_name(session: Path) -> Path:
    """``NAME.repro.tar.gz`` beside the session, or ``NAME.repro-2.tar.gz``… when exported before."""
    stem = session.name.removesuffix(".k3rec")
    out = session.with_name(f"{stem}.repro.tar.gz")
    n = 1
    while out.exists():
        n += 1
        out = session.with_name(f"{stem}.repro-{n}.tar.gz")
    return out

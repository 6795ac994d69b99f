"""The k3tui Textual app: wiring only (screens hold the behaviour).

How to start it::

    K3App()                                   # Home: recent sessions, connect, demo, open
    K3App(replay_path="s.k3rec")              # straight into the replay of a recording (or a package)
    K3App(driver_factory=make, on_exit=done)  # straight into a live session

- ``driver_factory``: async callable returning a :class:`k3tui.driver.Driver`, not yet
  started; the session screen awaits it, subscribes, then ``await driver.start()`` in a
  worker. On quit the app awaits ``driver.close()`` and then ``on_exit()``.
- ``session_factory``: async callable ``(target) -> Driver`` that lets Home connect to
  ``target`` (an ssh alias / ``user@host:port``) or start the demo (``demo:SCENARIO``).
  Without it, Home says how to start a live session from the command line.
- ``home_dirs``: where Home looks for recent sessions (tests pass temporary folders).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from textual import events, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.notifications import Notify
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from k3tui.assets import asset
from k3tui.errors import K3Error
from k3tui.replay import Replay
from k3tui.textsafe import neutralise

from .common import key_guard
from .common.held_toasts import HeldToasts
from .common.prompt_dialog import PromptDialog
from .home.home_screen import HomeScreen
from .replay.replay_screen import ReplayScreen
from .session.session_screen import SessionScreen


class K3App(App):
    """k3tui: freeze, then ladder."""

    TITLE = "k3tui"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    CSS_PATH = [asset("styles", f"{name}.tcss") for name in ("app", "home", "session", "replay", "dialogs")]
    BINDINGS = [
        Binding("q", "quit", "Quit", show=False),
        Binding("escape", "back", "Back", show=False),
    ]

    def __init__(
        self,
        driver_factory: Callable[[], Awaitable[Any]] | None = None,
        on_exit: Callable[[], Awaitable[None]] | None = None,
        replay_path: str | Path | None = None,
        session_factory: Callable[[str], Awaitable[Any]] | None = None,
        home_dirs: list[Path] | None = None,
        ssh_config: Path | None = None,
        live: Any = None,
    ) -> None:
        super().__init__()
        self.live = live
        """A :class:`k3tui.follow.LiveFollow`: start in the replay screen's LIVE mode (issue 21)."""
        self.driver_factory = driver_factory
        self.on_exit_cb = on_exit
        self.replay_path = Path(replay_path) if replay_path else None
        self.session_factory = session_factory
        self.home_dirs = home_dirs
        self.ssh_config = ssh_config
        self.toasts = HeldToasts(self)
        """Toasts raised while a dialog is open, waiting for it to close."""

    def on_mount(self) -> None:
        self.theme = "textual-dark"
        self.toasts.start()
        self.push_screen(HomeScreen(self.home_dirs, self.ssh_config))
        if self.live is not None:
            self.run_worker(self._open_live(), group="open", exit_on_error=False)
        elif self.replay_path is not None:
            self.open_path(self.replay_path)
        elif self.driver_factory is not None:
            self.push_screen(SessionScreen(driver_factory=self.driver_factory))

    # --- opening things -------------------------------------------------------------------

    def open_path(self, path: Path) -> None:
        """Replay a session file or a repro package (opened in a thread: big files take a scan)."""
        self.notify(f"opening {neutralise(path.name)}…", timeout=2, markup=False)
        self._open(path)

    @work(thread=True, exclusive=True, group="open", description="open a recording for replay", exit_on_error=False)
    def _open(self, path: Path) -> None:
        try:
            session = _session_file(path)
            engine = Replay(session)
        except K3Error as exc:
            self.call_from_thread(
                self.notify, neutralise(str(exc)), title="cannot open", severity="error", timeout=10, markup=False
            )
            return
        self.call_from_thread(self.push_screen, ReplayScreen(session, engine))

    async def _open_live(self) -> None:
        try:
            engine = await self.live.start()
        except K3Error as exc:
            self.notify(neutralise(str(exc)), title="cannot follow", severity="error", timeout=10, markup=False)
            return
        self.push_screen(ReplayScreen(self.live.path, engine, live=self.live))

    def start_session(self, target: str) -> None:
        """Connect to ``target`` or start ``demo:SCENARIO`` (needs a session factory)."""
        if self.session_factory is None:
            what = "k3tui demo" if target.startswith("demo") else f"k3tui connect {target}"
            self.notify(
                f"live sessions start from the command line in this build: run `{neutralise(what)}`",
                severity="warning",
                timeout=8,
                markup=False,
            )
            return
        self.push_screen(SessionScreen(driver_factory=partial(self.session_factory, target), from_home=True))

    def on_notify(self, event: Notify) -> None:
        """A toast raised while a dialog is open waits until it closes (it would cover the input)."""
        if self.toasts.hold(event.notification):
            event.prevent_default()

    # --- keys typed ahead -----------------------------------------------------------------

    async def _on_key(self, event: events.Key) -> None:
        """Keys typed ahead: into a text dialog just opened, never as commands after a yes/no.

        Fast typing arrives as a burst: ``n`` opens the note dialog, but ``h`` and ``i`` were
        already on their way to the screen below and come back here unhandled. The dialog
        (or the search box that ``/`` just opened) takes them instead of losing them."""
        # Textual runs App._on_key (the bindings) after this one unless the default is prevented
        if key_guard.swallow(self, event):  # the rest of a word typed into a yes/no dialog just answered
            event.prevent_default()
        elif event.is_printable and event.character and self.type_ahead(event.character):
            event.prevent_default()
            event.stop()

    def type_ahead(self, char: str) -> bool:
        """Hand ``char`` to a text dialog just opened (not answered yet), else to the screen's waiting box."""
        dialog = self.prompt
        if dialog is not None and not dialog.answered and dialog in self.screen_stack:
            return dialog.type_ahead(char)
        take = getattr(self.screen, "type_ahead", None)
        return bool(take is not None and take(char))

    prompt: PromptDialog | None = None
    """The text dialog pushed last: keys typed in the same burst as the key that opened it go there."""

    def push_screen(self, screen, *args, **kwargs):  # type: ignore[no-untyped-def, override]  # noqa: ANN001, ANN002, ANN003, ANN201
        if isinstance(screen, PromptDialog):
            self.prompt = screen
        return super().push_screen(screen, *args, **kwargs)

    # --- every action in the command palette --------------------------------------------------

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        seen: set[str] = set()
        for bindings in screen._bindings.key_to_bindings.values():
            for b in bindings:
                if b.description and b.action not in seen:
                    seen.add(b.action)
                    if b.action == "cycle_host" and not screen.check_action(b.action, ()):
                        continue  # one host: no host selector
                    key = self.get_key_display(b)
                    yield SystemCommand(
                        b.description, f"{b.action} — key {key}", partial(self.call_later, screen.run_action, b.action)
                    )

    # --- leaving ----------------------------------------------------------------------------

    def action_back(self) -> None:  # type: ignore[override]  # synchronous here: screens call it directly
        if len(self.screen_stack) > 2:
            self.pop_screen()

    async def action_quit(self) -> None:
        for s in self.screen_stack:
            if isinstance(s, SessionScreen):
                try:
                    await s.close_driver()
                except Exception as exc:  # noqa: BLE001 - quitting must not fail
                    self.log.error(f"closing the driver failed: {exc}")
        if self.on_exit_cb is not None:
            await self.on_exit_cb()
        self.exit()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Every worker failure ends here, as one line the operator can act on.

        ``Worker.StateChanged`` does not bubble: the screens forward theirs here
        (:func:`forward_worker_state`).
        """
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            err = event.worker.error
            what = event.worker.description or event.worker.name
            self.notify(neutralise(f"{what}: {err}"), title="failed", severity="error", timeout=15, markup=False)


def _session_file(path: Path) -> Path:
    if not path.exists():
        raise K3Error(f"{path}: no such file")
    if _is_package(path):
        try:
            from k3tui.package import session_from_package
        except ImportError:
            raise K3Error("opening repro packages is not in this build yet (k3tui.package is missing)") from None
        return Path(session_from_package(path))
    return path


def _is_package(path: Path) -> bool:
    """A repro package is a gzip archive (whatever its name)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"\x1f\x8b"
    except OSError:
        return False

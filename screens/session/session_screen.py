"""The live session: the views over a driver, and the operator's intents sent to it.

The screen never runs anything itself: every intent is an awaited driver call in a worker
(``run_rung``, ``freeze``, ``note``, ``marker``, ``stop_run``, ``apply_change``, ``revert``,
``toggle``), and what happens comes back as events through :meth:`SessionView.receive`.
The recording is written by the driver.

Climbing the ladder without the CLI: ``c`` previews a change (the change panel shows the
diff), ``a`` applies it to the next run — asking for a reason when more than one variable
changes, since the one-variable rule needs one — ``u`` reverts to the last known good
config, ``t`` flips a profile debug toggle (one with a warning needs a yes). A change the
driver refuses (bad value, unknown variable, the rule, a rung running) is one error line
and changes nothing.

Connecting, an unknown host key is shown with its fingerprint and trusted only on an
explicit yes (see :mod:`screens.home.host_key`); a changed one is never offered.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual import work
from textual.binding import Binding
from textual.worker import Worker, WorkerState

from k3tui.errors import HostKeyChanged, HostKeyUnknown
from k3tui.textsafe import neutralise

from ..common.prompt_dialog import PromptDialog
from ..common.session_base import SessionBase
from ..home.host_key import changed_key_dialog, unknown_key_dialog
from ..viewmodel import rung_names
from .config_intents import ConfigIntents, parse_changes
from .session_view import SessionView

__all__ = ["SessionScreen", "parse_changes"]

DriverFactory = Callable[[], Awaitable[Any]]


class SessionScreen(ConfigIntents, SessionBase):
    """A live session. Give it a ``driver`` (not started) or an async ``driver_factory``."""

    BINDINGS = [
        Binding("r", "run_next", "Run rung"),
        Binding("R", "run_pick", "Pick rung", show=False),
        Binding("f", "freeze", "Freeze"),
        Binding("n", "note", "Note"),
        Binding("m", "marker", "Mark", tooltip="drop a marker (a label on the timeline)"),
        Binding("c", "change", "Change", tooltip="preview a change to the next run's config (key=value, …)"),
        Binding("a", "apply", "Apply", tooltip="apply the previewed change to the next run (2+ variables: a reason)"),
        Binding("u", "revert", "Revert", tooltip="revert to the last known good config (asks for a reason)"),
        Binding("t", "toggles", "Toggles", tooltip="debug toggles (NCCL_DEBUG=TRACE, CUDA_LAUNCH_BLOCKING=1 …)"),
        Binding(
            "o",
            "override_hardware",
            "Override HW",
            show=False,
            tooltip="climb on past a hardware stop (asks why; the reason is recorded)",
        ),
        Binding("s", "stop", "Stop run", show=False, tooltip="stop the running server (press s twice)"),
    ]
    FOOTER_FIRST = (
        "run_next",
        "freeze",
        "change",
        "apply",
        "revert",
        "toggles",
        "help",
        "quit_session",
        "note",
        "marker",
    )

    def __init__(
        self, driver: Any = None, driver_factory: DriverFactory | None = None, from_home: bool = False
    ) -> None:
        super().__init__(fold=True)
        self.driver = driver
        self.driver_factory = driver_factory
        self.from_home = from_home
        """Started from Home: a session that cannot start goes back there, with the reason."""
        self.ready = False
        """True once the driver has connected and probed."""
        self._stop_armed = 0.0

    @property
    def recording_path(self) -> Path | None:  # type: ignore[override]
        return getattr(self.driver, "recording_path", None)

    def on_mount(self) -> None:
        self.title = "k3tui — live session"
        self.sub_title = "connecting…"
        self._start()

    @work(exclusive=True, group="driver", description="connect to the host and probe it", exit_on_error=False)
    async def _start(self) -> None:
        try:
            await self._open()
        except Exception as exc:
            if not await self._back_home(exc):
                raise

    async def _back_home(self, exc: Exception) -> bool:
        """Opened from Home and never connected: close it, drop its empty recording, and say why on Home.

        A typo in a scenario or an unreachable host must not leave a dead session screen
        behind a toast that fades. False when there is no Home to go back to."""
        from ..home.home_screen import HomeScreen

        stack = self.app.screen_stack
        home = next((s for s in stack if isinstance(s, HomeScreen)), None)
        if not self.from_home or home is None or self.ready or self not in stack:
            return False
        path = self.recording_path
        learnt = self.driver is not None and bool(getattr(self.driver.state, "hosts", None))
        try:
            await self.close_driver()
        except Exception as close_exc:  # noqa: BLE001 - the connect error is the one to show
            self.log.error(f"closing a session that never connected: {close_exc}")
        if path is not None and not learnt:
            path.unlink(missing_ok=True)  # nothing was recorded but a failed connect
            path.with_name(path.name + ".idx").unlink(missing_ok=True)
        while self.app.screen is not self and self in self.app.screen_stack:
            self.app.pop_screen()  # a dialog this session opened
        self.app.pop_screen()
        home.show_error(f"could not start the session: {neutralise(str(exc)) or type(exc).__name__}")
        home.refresh_sessions()
        return True

    async def _open(self) -> None:
        if self.driver is None:
            if self.driver_factory is None:
                raise RuntimeError("no driver and no driver factory: nothing to connect to")
            self.driver = await self.driver_factory()
        view = self.query_one(SessionView)
        view.state = self.driver.state  # the driver folds it; the view only reads it
        view.fold = False
        view.profile = str(getattr(self.driver, "profile_name", "") or "")
        self.driver.subscribe(view.receive)
        self._show_identity()
        if not await self._connect():
            self.sub_title = "not connected"
            return
        self.ready = True
        self._show_identity()
        self.notify("connected: r runs the next rung, f freezes the scene, n adds a note", markup=False)

    async def _connect(self) -> bool:
        """``driver.start()``; an unknown host key is offered for trust (once per host), a changed one never."""
        asked: set[str] = set()
        while True:
            try:
                await self.driver.start()
                return True
            except HostKeyChanged as exc:
                await self.app.push_screen_wait(changed_key_dialog(exc))
                return False
            except HostKeyUnknown as exc:
                if exc.host in asked or not getattr(self.driver, "can_accept_host_keys", False):
                    raise
                asked.add(exc.host)
                if not await self.app.push_screen_wait(unknown_key_dialog(exc)):
                    self.notify(
                        f"not connected: the host key of {neutralise(exc.host)} was not trusted",
                        severity="warning",
                        markup=False,
                    )
                    return False
                self.driver.accept_host_key(exc.host, exc.fingerprint)
                self.notify(f"trusting {neutralise(exc.fingerprint)}: connecting again…", markup=False)

    def _show_identity(self) -> None:
        d = self.driver
        path = getattr(d, "recording_path", None)
        self.sub_title = f"recording {path.name}" if path else ""
        if getattr(d, "simulated", False) or self.view.state.simulated:
            self.show_simulated("SIMULATED HOST — nothing here touches a real GPU")

    def worker_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "driver" and event.state == WorkerState.ERROR:
            self.sub_title = "not connected"

    # --- intents ----------------------------------------------------------------------

    def _driver_ready(self) -> bool:
        if not self.ready:
            self.notify("not connected yet", severity="warning", markup=False)
        return self.ready

    def action_run_next(self) -> None:
        st = self.view.state
        pending = [r for r in rung_names(st) if r not in st.rungs or st.rungs[r].verdict.upper() not in ("PASS",)]
        if self._climbing_past_hardware and pending[:1] == ["baseline"] and "baseline" in st.rungs:
            pending = pending[1:]  # the operator recorded why the baseline's hardware fault does not stop them
        if not pending:
            self.notify("every rung has passed", markup=False)
            return
        self._run_rung(pending[0])

    def action_run_pick(self) -> None:
        names = ", ".join(rung_names(self.view.state))
        self.app.push_screen(PromptDialog("Run which rung? (name, optionally ×K: minimal 3)", names), self._picked)

    def _picked(self, text: str | None) -> None:
        if text:
            name, _, rep = text.partition(" ")
            self._run_rung(name, int(rep) if rep.strip().isdigit() else 1)

    def _run_rung(self, rung: str, repeat: int = 1) -> None:
        if not self._driver_ready():
            return
        if any(w.group == "rung" and w.is_running for w in self.workers):
            self.notify("a rung is already running (s s stops the run)", severity="warning", markup=False)
            return
        self.notify(f"running rung {rung}" + (f" ×{repeat}" if repeat > 1 else ""), markup=False)
        self._rung_worker(rung, repeat)

    @work(group="rung", description="run a ladder rung", exit_on_error=False)
    async def _rung_worker(self, rung: str, repeat: int) -> None:
        await self.driver.run_rung(rung, repeat=repeat)

    def action_freeze(self) -> None:
        if self._driver_ready():
            self.notify("freezing the scene…", markup=False)
            self._intent("freeze", "operator")

    def action_note(self) -> None:
        def add(text: str | None) -> None:
            if text:
                self._intent("note", text)

        self.app.push_screen(PromptDialog("Add a note to the session"), add)

    def action_marker(self) -> None:
        label = f"marker at {self.view.state.t:.1f}s"

        def drop(text: str | None) -> None:
            if text:
                self._intent("marker", text)

        self.app.push_screen(PromptDialog("Drop a marker (label)", value=label), drop)

    @work(group="intent", description="send an operator intent to the driver", exit_on_error=False)
    async def _intent(self, name: str, arg: str) -> None:
        if self.driver is None:
            raise RuntimeError("not connected: nothing to send the intent to")
        await getattr(self.driver, name)(arg)

    def action_stop(self) -> None:
        if not self._driver_ready():
            return
        now = time.monotonic()
        if now - self._stop_armed > 3.0:
            self._stop_armed = now
            self.notify("press s again within 3 s to STOP the running server", severity="warning", markup=False)
            return
        self._stop_armed = 0.0
        self._stop_worker()

    @work(exclusive=True, group="stop", description="stop the running server", exit_on_error=False)
    async def _stop_worker(self) -> None:
        await self.driver.stop_run()
        self.notify("run stopped", markup=False)

    def action_escape(self) -> None:
        """Esc closes the search box; leaving a live session asks first, then closes it properly."""
        box = self.query_one("#search")
        if box.display or self.driver is None or len(self.app.screen_stack) <= 2:
            super().action_escape()
            return
        self._ask_leave("Leave the live session?", "Leave", self._leave)

    async def action_quit_session(self) -> None:
        """``q`` asks, as Esc does: it stops what this session started and ends the recording."""
        self._ask_leave("Quit k3tui?", "Quit", self._quit)

    def _ask_leave(self, title: str, yes: str, then: Callable[[], object]) -> None:
        """Ask before leaving a connected session; a session that never connected just goes."""
        if not self.ready or self.driver is None:
            then()
            return
        from rich.text import Text

        from ..common.confirm_dialog import ConfirmDialog

        running = [r for r in self.view.state.runs.values() if r.ended is None]
        body = Text("The recording is finished and the connections are closed.")
        if running:
            body.append(f"\nThe server this session started ({neutralise(running[-1].run)}) is STOPPED.", style="bold")

        def answered(ok: bool | None) -> None:
            if ok:
                then()

        self.app.push_screen(ConfirmDialog(title, body, yes=yes), answered)

    def _quit(self) -> None:
        self.app.call_later(self.app.action_quit)

    @work(exclusive=True, group="leave", description="close the live session", exit_on_error=False)
    async def _leave(self) -> None:
        await self.close_driver()
        self.app.pop_screen()

    async def close_driver(self) -> None:
        """Close the driver (the app calls this on quit)."""
        if self.driver is not None:
            await self.driver.close()
            self.driver = None

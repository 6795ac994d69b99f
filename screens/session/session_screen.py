"""The live session: the views over a driver, and the operator's intents sent to it.

The screen never runs anything itself: every intent is an awaited driver call in a worker
(``run_rung``, ``freeze``, ``note``, ``marker``, ``stop_run``), and what happens comes back
as events through :meth:`SessionView.receive`. The recording is written by the driver.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual import work
from textual.binding import Binding
from textual.worker import Worker, WorkerState

from k3tui.textsafe import neutralise

from ..common.prompt_dialog import PromptDialog
from ..common.session_base import SessionBase
from ..viewmodel import rung_names
from .session_view import SessionView

DriverFactory = Callable[[], Awaitable[Any]]


class SessionScreen(SessionBase):
    """A live session. Give it a ``driver`` (not started) or an async ``driver_factory``."""

    BINDINGS = [
        Binding("r", "run_next", "Run rung"),
        Binding("R", "run_pick", "Pick rung", show=False),
        Binding("f", "freeze", "Freeze"),
        Binding("n", "note", "Note"),
        Binding("m", "marker", "Marker"),
        Binding("c", "change", "Preview change", show=False),
        Binding("s", "stop", "Stop run", show=False),
    ]

    def __init__(self, driver: Any = None, driver_factory: DriverFactory | None = None) -> None:
        super().__init__(fold=True)
        self.driver = driver
        self.driver_factory = driver_factory
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
        await self.driver.start()
        self.ready = True
        self._show_identity()
        self.notify("connected: r runs the next rung, f freezes the scene, n adds a note", markup=False)

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
        self.app.push_screen(
            PromptDialog("Add a note to the session"), lambda text: text and self._intent("note", text)
        )

    def action_marker(self) -> None:
        label = f"marker at {self.view.state.t:.1f}s"
        self.app.push_screen(
            PromptDialog("Drop a marker (label)", value=label), lambda text: text and self._intent("marker", text)
        )

    @work(group="intent", description="send an operator intent to the driver", exit_on_error=False)
    async def _intent(self, name: str, arg: str) -> None:
        if self.driver is None:
            raise RuntimeError("not connected: nothing to send the intent to")
        await getattr(self.driver, name)(arg)

    def action_change(self) -> None:
        self.app.push_screen(
            PromptDialog("Preview a change (key=value, …)", "gpu_memory_utilization=0.85"), self._preview
        )

    def _preview(self, text: str | None) -> None:
        if not text or self.driver is None:
            return
        changes = dict(_parse_assignment(part) for part in text.split(",") if "=" in part)
        self.view.preview = self.driver.preview_change(changes)
        self.view.render_panels()
        if len(self.view.preview) > 1:
            self.notify(
                "more than one variable changes: the ladder will ask for a reason", severity="warning", markup=False
            )

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

    async def close_driver(self) -> None:
        """Close the driver (the app calls this on quit)."""
        if self.driver is not None:
            await self.driver.close()
            self.driver = None


def _parse_assignment(part: str) -> tuple[str, Any]:
    key, _, raw = part.partition("=")
    raw = raw.strip()
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    return neutralise(key.strip()), value

"""Everything a session shows, live or replayed: banner, ladder, stages, scene, GPUs, change, checklist, log.

Events come in through :meth:`SessionView.receive` (thread-safe: a deque append, so a
driver may call it from any thread) and are applied on the UI thread by a 50 ms timer:
at most ``MAX_EVENTS`` events are folded and ``BATCH`` lines written per tick, and lines
waiting to be written are kept in a window of the log's size, so a flood coalesces instead
of freezing the UI or growing memory. Panels re-render at most every ``PANEL_EVERY`` s.

Live, the view folds its own :class:`~k3tui.state.SessionState` on the UI thread (the
driver's state is folded on whatever thread emits). In replay the engine folds, and the
screen hands the view its state with :meth:`load` after a seek and :meth:`push` while playing.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Input, Static

from k3tui.events import AnyEvent, GpuSample, Output
from k3tui.state import SessionState, reduce

from ..viewmodel import LogFeed, LogLine
from .change_panel import ChangePanel
from .checklist_panel import ChecklistPanel
from .freeze_banner import FreezeBanner
from .gpu_panel import GpuPanel
from .ladder_panel import LadderPanel
from .log_view import WINDOW, LogView
from .scene_panel import ScenePanel
from .stage_panel import StagePanel

FLUSH_EVERY = 0.05
PANEL_EVERY = 0.25
BATCH = 1000
MAX_EVENTS = 5000


class SessionView(Vertical):
    """The shared session views. ``fold=True`` live (the view folds events), False in replay."""

    class FirstException(Message):
        """The first root exception arrived (the freeze banner is up)."""

    def __init__(self, state: SessionState | None = None, *, fold: bool = True, window: int = WINDOW, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.state = state or SessionState()
        """The state rendered (folded here when ``fold``)."""
        self.fold = fold
        self.window = window
        self.feed = LogFeed()
        self.preview: list[dict[str, Any]] | None = None
        """Diff of a change proposed but not applied (shown in the change panel)."""
        self.clock: Callable[[], float] | None = None
        """Session time to show timers at; default: live (last event time + wall time since)."""
        self._inbox: deque[AnyEvent] = deque()
        self._lines: deque[LogLine] = deque(maxlen=window)
        self._dirty = True
        self._banner_shown = False
        self._last_event_wall = time.monotonic()
        self.events_applied = 0
        self.profile = ""
        """Profile name (for the ladder's feature rungs)."""
        self.significant: list[AnyEvent] = []
        """Every event but output and GPU samples (few): what the checklist evaluator reads."""

    def compose(self) -> ComposeResult:
        yield FreezeBanner(id="banner")
        with Horizontal(id="body"):
            with VerticalScroll(id="side"):
                yield _titled(LadderPanel(id="ladder"), "Ladder")
                yield _titled(StagePanel(id="stages"), "Stages")
                yield _titled(ScenePanel(id="scene"), "Scene")
                yield _titled(GpuPanel(id="gpus"), "GPU memory")
                yield _titled(ChangePanel(id="change"), "Run config")
                yield _titled(ChecklistPanel(id="checklist"), "Checklist")
            with Vertical(id="logpane"):
                yield Static(id="logstatus")
                yield LogView(window=self.window, id="log")
                yield Input(placeholder="search the log (Enter: next match, Esc: close)", id="search")

    def on_mount(self) -> None:
        self.query_one("#banner").display = False
        self.query_one("#search").display = False
        self.set_interval(FLUSH_EVERY, self.flush, name="log-flush")
        self.set_interval(PANEL_EVERY, self._tick_panels, name="panels")
        self.render_panels()

    @property
    def log_view(self) -> LogView:
        return self.query_one(LogView)

    # --- input ----------------------------------------------------------------------

    def receive(self, event: AnyEvent) -> None:
        """Queue one event (safe from any thread)."""
        self._inbox.append(event)

    def push(self, events: Iterable[AnyEvent]) -> None:
        """Queue events (replay playback: the engine already folded them)."""
        self._inbox.extend(events)

    def load(self, state: SessionState, recent: list[AnyEvent], significant: list[AnyEvent] | None = None) -> None:
        """Show ``state`` after a seek, with the log rebuilt from the ``recent`` events before it."""
        self.state = state
        self.significant = list(significant or [])
        self._inbox.clear()
        self._lines.clear()
        self.feed.reset(state, recent[0].t if recent else None)
        lines: list[LogLine] = []
        for e in recent:
            lines.extend(self.feed.lines(e))
        self.log_view.replace(lines[-self.window :])
        self._banner_shown = state.first_exception is not None and self._banner_shown
        self.render_panels()

    # --- applying -------------------------------------------------------------------------

    def flush(self) -> None:
        """Apply queued events and write at most one batch of lines (runs every 50 ms)."""
        inbox, lines = self._inbox, self._lines
        n = 0
        while inbox and n < MAX_EVENTS:
            e = inbox.popleft()
            if self.fold:
                reduce(self.state, e)
            if not isinstance(e, (Output, GpuSample)):
                self.significant.append(e)
            lines.extend(self.feed.lines(e))
            n += 1
        if n:
            self.events_applied += n
            self._dirty = True
            self._last_event_wall = time.monotonic()
        if lines:
            take = min(BATCH, len(lines))
            self.log_view.append([lines.popleft() for _ in range(take)])
        if self.state.first_exception is not None and not self._banner_shown:
            self.render_panels()

    @property
    def backlog(self) -> int:
        """Events and lines waiting to be applied."""
        return len(self._inbox) + len(self._lines)

    def now(self) -> float:
        if self.clock is not None:
            return self.clock()
        run = self.state.runs.get(self.state.current_run)
        if run is None or run.ended is not None:
            return self.state.t
        return self.state.t + (time.monotonic() - self._last_event_wall)

    def _tick_panels(self) -> None:
        log = self.log_view
        if log.auto_scroll and log.scroll_y < log.max_scroll_y:
            # a horizontal scrollbar that appeared after the last write must not hide the last line
            log.scroll_end(animate=False, immediate=True)
        run = self.state.runs.get(self.state.current_run)
        if self._dirty or (run is not None and run.ended is None):
            self.render_panels()

    def render_panels(self) -> None:
        s = self.state
        self._dirty = False
        self.query_one(LadderPanel).show(s, self.profile)
        self.query_one(StagePanel).show(s, self.now(), self.feed.progress)
        self.query_one(ScenePanel).show(s)
        self.query_one(GpuPanel).show(s)
        self.query_one(ChangePanel).show(s, self.preview)
        self.query_one(ChecklistPanel).show(s, self.significant)
        self._render_log_status()
        shown = self.query_one(FreezeBanner).show(s)
        if shown and not self._banner_shown:
            self._banner_shown = True
            self.post_message(self.FirstException())
        elif not shown:
            self._banner_shown = False

    def _render_log_status(self) -> None:
        log = self.log_view
        follow = "● following" if log.auto_scroll else "‖ paused"
        mode = {"all": "all lines", "errors": "errors only", "match": "matching only"}[log.mode]
        q = f"  /{log.query_text}" if log.query_text else ""
        self.query_one("#logstatus", Static).update(Text(f"{follow}  {mode}{q}  {log.line_count:,} shown · {log.kept:,} kept"))


def _titled(widget: Static, title: str) -> Static:
    widget.border_title = title
    widget.add_class("panel")
    return widget

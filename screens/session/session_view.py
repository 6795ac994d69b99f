"""Everything a session shows, live or replayed: banner, ladder, stages, scene, GPUs, change, checklist, log.

Events come in through :meth:`SessionView.receive` (thread-safe: a deque append, so a
driver may call it from any thread) and are applied on the UI thread by a 50 ms timer:
events are handled for at most ``BUDGET`` seconds and ``BATCH`` lines written per tick;
under a flood, output already pushed out of the window is never formatted and a backlog
beyond ``MAX_PENDING`` lines is skipped (the gap is marked in the log, the recording keeps
every line), so a flood coalesces instead of freezing the UI or growing memory. Panels
re-render at most every ``PANEL_EVERY`` s, and only when their text changed.

Live, the driver folds the :class:`~k3tui.state.SessionState` (one fold, on the loop
thread) and the view only reads it (``fold=False``); in replay the engine folds, and the
screen hands the view its state with :meth:`load` after a seek and :meth:`push` while
playing. ``fold=True`` (the default) makes the view fold what it receives itself.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from itertools import islice
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Input, Static

from k3tui.events import AnyEvent, GpuSample, Output
from k3tui.state import SessionState, reduce

from ..viewmodel import LogFeed, LogLine, host_label, session_hosts
from .bisect_panel import BisectPanel
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
"""Lines written to the log per tick (measured: 1,000-line batches keep stalls well under 100 ms)."""
MAX_PENDING = 10 * BATCH
"""Lines waiting beyond this (half a second of writing) are skipped, newest kept, gap marked."""
BUDGET = 0.015
"""Seconds of event handling per tick before the rest waits for the next tick."""


class SessionView(Vertical):
    """The shared session views. ``fold=True`` live (the view folds events), False in replay."""

    class FirstException(Message):
        """The first root exception arrived (the freeze banner is up)."""

    def __init__(
        self, state: SessionState | None = None, *, fold: bool = True, window: int = WINDOW, **kwargs: Any
    ) -> None:
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
        self._lines_in = 0
        """Output lines received (written only by the receiving thread)."""
        self._lines_done = 0
        """Output lines taken from the inbox (written only by the UI thread)."""
        self.skipped_lines = 0
        """Lines this view did not show because of a flood (each gap is marked in the log)."""
        self._gap = 0
        self._dirty_all = True
        self._lines: deque[LogLine] = deque()
        self._dirty = True
        self._banner_shown = False
        self._last_event_wall = time.monotonic()
        self.events_applied = 0
        self._status_text = ""
        self.profile = ""
        """Profile name (for the ladder's feature rungs)."""
        self.significant: list[AnyEvent] = []
        """Every event but output and GPU samples (few), and each run's first log line: what the checklist reads."""
        self._logged: set[str] = set()

    def compose(self) -> ComposeResult:
        yield FreezeBanner(id="banner")
        with Horizontal(id="body"):
            with VerticalScroll(id="side"):
                yield _titled(BisectPanel(id="bisect"), "Bisect")  # first: at 80×24 it must stay on screen
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
        """Queue one event (safe from any thread: one producer thread at a time for output)."""
        if type(event) is Output:
            self._lines_in += event.text.count("\n") or 1
        self._inbox.append(event)

    def push(self, events: Iterable[AnyEvent]) -> None:
        """Queue events (replay playback: the engine already folded them)."""
        for e in events:
            self.receive(e)

    def load(self, state: SessionState, recent: list[AnyEvent], significant: list[AnyEvent] | None = None) -> None:
        """Show ``state`` after a seek, with the log rebuilt from the ``recent`` events before it."""
        self.state = state
        self.significant = list(significant or [])
        self._inbox.clear()
        self._lines.clear()
        self._gap = 0
        self._lines_done = self._lines_in
        self.feed.reset(state, recent[0].t if recent else None)
        lines: list[LogLine] = []
        feed = self.feed
        for e in recent:
            lines.extend(feed.lines(e))
        feed.retagged = False
        self.log_view.replace(lines[-self.window :])
        self._banner_shown = state.first_exception is not None and self._banner_shown
        self.render_panels()

    # --- applying -------------------------------------------------------------------------

    def flush(self) -> None:
        """Apply queued events and write at most one batch of lines (runs every 50 ms).

        Under a flood the view coalesces: output already pushed out of the window by newer
        queued lines is folded but never formatted, and when more than two batches wait,
        only the newest batch is written. Either way one marked line says how many lines
        this view skipped (the recording keeps every one), so the view is never behind by
        more than a tick and never silently incomplete.
        """
        inbox, lines, feed, window = self._inbox, self._lines, self.feed, self.window
        logged = self._logged
        deadline = time.perf_counter() + BUDGET
        n = 0
        significant = False
        while inbox:
            e = inbox.popleft()
            n += 1
            if self.fold:
                reduce(self.state, e)
            if type(e) is Output:
                if e.id not in logged and e.stream == "log":  # the checklist sees that this run's log was kept
                    logged.add(e.id)
                    self.significant.append(e)
                k = e.text.count("\n") or 1
                self._lines_done += k
                if self._lines_in - self._lines_done >= window:
                    self._gap += k
                    continue
            elif type(e) is not GpuSample:
                self.significant.append(e)
                significant = True
            lines.extend(feed.lines(e))
            if time.perf_counter() > deadline:
                break
        if feed.retagged:  # a root traceback already on screen now carries its failed stage's letter
            feed.retagged = False
            self.log_view.redraw()
        if n:
            self.events_applied += n
            self._dirty = True
            self._dirty_all = self._dirty_all or significant
            self._last_event_wall = time.monotonic()
        if len(lines) > MAX_PENDING:
            drop = len(lines) - BATCH
            self._gap += drop
            self._lines = lines = deque(islice(lines, drop, None))
        if lines:
            batch = [lines.popleft() for _ in range(min(BATCH, len(lines)))]
            if self._gap:
                self.skipped_lines += self._gap
                batch.insert(
                    0,
                    LogLine(
                        "gap",
                        f"⋯│{self._gap:,} lines skipped here: output came faster than the view — every line is in the recording",
                    ),
                )
                self._gap = 0
            self.log_view.append(batch)
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
            self.render_panels(everything=False)

    def render_panels(self, everything: bool = True) -> None:
        """Re-render the panels from state (only the cheap, fast-changing ones unless ``everything``)."""
        s = self.state
        self._dirty = False
        self.query_one(StagePanel).show(s, self.now(), self.feed.progress)
        self.query_one(GpuPanel).show(s)
        if everything or self._dirty_all:
            self._dirty_all = False
            self.log_view.note_hosts(session_hosts(s))
            self.query_one(BisectPanel).show(s, getattr(self.screen, "recording_path", None))
            self.query_one(LadderPanel).show(s, self.profile)
            self.query_one(ScenePanel).show(s)
            self.query_one(ChangePanel).show(s, self.preview)
            self.query_one(ChecklistPanel).show(s, self.significant)
        self._render_log_status()
        # whether a line is cut depends on the layout (a vertical scrollbar appearing narrows the pane):
        # say it again once the lines just written are laid out, so it never depends on timing
        self.call_after_refresh(self._render_log_status)
        shown = self.query_one(FreezeBanner).show(s)
        if shown and not self._banner_shown:
            self._banner_shown = True
            self.post_message(self.FirstException())
        elif not shown:
            self._banner_shown = False

    def toggle_banner(self) -> bool:
        """Expand or collapse the freeze banner (``b``); False when there is none."""
        if self.state.first_exception is None:
            return False
        banner = self.query_one(FreezeBanner)
        banner.toggle()
        banner.show(self.state)
        return True

    def _render_log_status(self) -> None:
        log = self.log_view
        follow = "● following" if log.auto_scroll else "‖ paused"
        if not log.auto_scroll and log.unseen:
            follow += f" — {log.unseen:,} new lines below (F follows)"
        mode = {"all": "all lines", "errors": "errors only", "match": "matching only"}[log.mode]
        mode += " +probes" if log.show_probes else ""
        mode += " wrapped" if log.wrap else ""
        q = ""
        if log.query_text:
            at, n = log.position()
            q = f"  /{log.query_text} {at}/{n}" if at else f"  /{log.query_text} {n} hits"
        text = f"{follow}  {mode}{q}  {log.line_count:,} shown · {log.kept:,} kept"
        text += "  long lines cut… (w wraps)" if log.cut else ""  # last: the counts stay at 80 columns
        if len(log.hosts) > 1:
            # first, so that it stays on screen at 80 columns (h cycles it)
            selected = log.host_filter
            which = (
                f"{host_label(self.state, selected)} only" if selected is not None else f"all {len(log.hosts)} hosts"
            )
            text = f"⌂ {which}  {text}"
        if text != self._status_text:
            self._status_text = text
            self.query_one("#logstatus", Static).update(Text(text), layout=False)


def _titled(widget: Static, title: str) -> Static:
    widget.border_title = title
    widget.add_class("panel")
    return widget

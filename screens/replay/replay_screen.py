"""Replay: the session views driven from a recording by :class:`k3tui.replay.Replay`.

Runs nothing on any host. Playback advances a session clock by wall time × speed on a
50 ms timer and applies the events up to it; seeks (time, markers, search hits, step back)
take the engine's nearest checkpoint, so they cost at most a few thousand folded events
however long the session is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Header, Input, Static

from k3tui.replay import Replay
from k3tui.textsafe import neutralise

from ..common.prompt_dialog import PromptDialog
from ..common.session_base import SessionBase
from ..session.session_view import SessionView
from .timeline import Timeline, TimelineModel

TICK = 0.05
SPEEDS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
WINDOW_EVENTS = 4000
LIVE_BANNER = "LIVE — following · read-only: sends nothing to any host · G: back to the live edge"


def parse_time(text: str, duration: float) -> float:
    """``90``, ``1:30``, ``1:02:03`` or ``50%`` → seconds.

    Raises:
        ValueError: not a time.
    """
    text = text.strip()
    if text.endswith("%"):
        return duration * float(text[:-1]) / 100.0
    secs = 0.0
    for part in text.split(":"):
        secs = secs * 60 + float(part)
    return secs


class ReplayScreen(SessionBase):
    """Replays ``path`` (a .k3rec). ``engine`` may be given already opened."""

    BINDINGS = [
        Binding("space", "play", "Play/pause"),
        Binding("right", "step(1)", "Step", priority=True),
        Binding("left", "step(-1)", "Back", show=False, priority=True),
        Binding("m", "marker(1)", "Next mark"),
        Binding("M", "marker(-1)", "Prev mark", show=False),
        Binding("plus,equals_sign", "speed(1)", "Faster", show=False),
        Binding("minus", "speed(-1)", "Slower", show=False),
        Binding("i", "skip_idle", "Skip idle", show=False),
        Binding("t", "seek_time", "Seek"),
        Binding("g", "seek_to(0)", "Start", show=False),
        Binding("G", "seek_to(-1)", "End", show=False),
    ]

    FOOTER_FIRST = ("play", "step", "marker", "seek_time", "search", "first_exception", "help", "quit_session")

    def __init__(self, path: str | Path, engine: Replay | None = None, live: Any = None) -> None:
        super().__init__(fold=False)
        self.path = Path(path)
        self.engine = engine or Replay(self.path)
        self.live = live
        """A :class:`k3tui.follow.LiveFollow` in LIVE — following mode (issue 21), else None."""
        self._live_seen = self.engine.count
        self._live_broken: int | None = None
        """The line where the followed chain broke (the bar stays red from then on)."""
        self.playing = False
        self.speed = 1.0
        self.skip_idle = True
        self.clock_t = 0.0
        """Playback time (between the last applied event and the next)."""
        self.marker_label = ""
        """Label of the marker last jumped to (cleared by any other move)."""
        self._marks = tuple((m.t, m.kind) for m in self.engine.markers)

    @property
    def recording_path(self) -> Path:  # type: ignore[override]
        return self.path

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="simbar")
        if self.live is not None:
            yield Static(LIVE_BANNER, id="livebar")
        yield Static(id="chainbar")
        yield SessionView(fold=False, id="view")
        yield Timeline(id="timeline")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        h = self.engine.header
        self.title = f"k3tui — REPLAY {neutralise(h.title or self.path.name)}"
        self.sub_title = f"{neutralise(h.host)} · {self.path.name} · runs nothing"
        if self.live is not None:
            self.title = f"k3tui — LIVE — following {neutralise(h.title or self.live.where)}"
            self.sub_title = f"{neutralise(self.live.where)} · read-only: sends nothing to any host"
            self.run_worker(self._follow_live(), exclusive=True, group="live", exit_on_error=False)
        if h.simulated:
            self.show_simulated("REPLAY — recorded against a SIMULATED host")
        self.view.profile = h.profile
        self.view.clock = lambda: max(self.clock_t, self.engine.t)
        self._timer = self.set_interval(TICK, self._tick, pause=True, name="playback")
        self.view.load(self.engine.state, [])
        self._update_timeline()
        verdict = self.engine.integrity  # issue 16: a replay verifies the chain as it reads
        chainbar = self.query_one("#chainbar", Static)
        chainbar.display = False
        if verdict is not None and not verdict.ok:
            msg = f"{neutralise(verdict.message)} — what follows that line is unproven"
            self.notify(msg, title="TAMPERED", severity="error", timeout=30, markup=False)
            chainbar.update(Text(f" TAMPERED — {msg}", style="bold white on red"))  # stays: a toast fades
            chainbar.display = True
        elif verdict is not None and not verdict.sealed and self.live is None:
            chainbar.update(
                Text(" NOT CLOSED — no seal: lines may have been cut from the end (k3tui verify)", style="bold yellow")
            )
            chainbar.display = True
        if self.engine.problems:
            first = self.engine.problems[0].message
            self.notify(
                f"{len(self.engine.problems)} damaged line(s) skipped; first: {neutralise(first)}",
                severity="warning",
                timeout=10,
                markup=False,
            )

    # --- LIVE — following (issue 21) ----------------------------------------------------------

    async def _follow_live(self) -> None:
        try:
            async for batch in self.live.batches():
                self._live_batch(batch)
        finally:
            await self.live.close()

    def _live_batch(self, batch: list[Any]) -> None:
        from k3tui.follow import Broken, Ended

        eng = self.engine
        at_edge = eng.position >= self._live_seen
        self._live_seen = eng.count
        self._marks = tuple((m.t, m.kind) for m in eng.markers)
        bar = self.query_one("#livebar", Static)
        for item in batch:
            if isinstance(item, Broken):
                self._live_broken = item.line
                msg = f"{neutralise(item.message)} — what follows that line is unproven"
                self.notify(msg, title="TAMPERED", severity="error", timeout=60, markup=False)
                bar.update(Text(f"TAMPERED — {msg}", style="bold white on red"))
            elif isinstance(item, Ended) and self._live_broken is not None:  # the end never hides a break
                end = f"TAMPERED at line {self._live_broken} — ENDED — {neutralise(item.message)} · read-only"
                bar.update(Text(end, style="bold white on red"))
            elif isinstance(item, Ended):
                bar.update(Text(f"ENDED — {neutralise(item.message)} · read-only", style="bold"))
        if at_edge and not self.playing and eng.position < eng.count:
            self.view.push(eng.step(eng.count - eng.position))
            self.clock_t = eng.t
            self.view.flush()
            self.view.render_panels()
        self._update_timeline()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # arrows step the replay, except while typing in the search box
        if action == "step" and isinstance(self.focused, Input):
            return False
        return super().check_action(action, parameters)

    # --- moving ----------------------------------------------------------------------

    def seek(self, position: int) -> None:
        """Seek to ``position`` events and show the state there."""
        self.marker_label = ""
        eng = self.engine
        eng.seek(position)
        self.clock_t = eng.t
        self.view.load(eng.state, eng.recent(WINDOW_EVENTS), eng.significant())
        self._update_timeline()

    def action_seek_to(self, position: int) -> None:
        self.seek(self.engine.count if position < 0 else position)

    def action_step(self, n: int) -> None:
        self._pause()
        if n < 0:
            self.seek(self.engine.position + n)
            return
        applied = self.engine.step(n)
        self.clock_t = self.engine.t
        self.view.push(applied)
        self.view.flush()
        self.view.render_panels()
        self._update_timeline()

    def action_marker(self, direction: int) -> None:
        m = self.engine.next_marker() if direction > 0 else self.engine.prev_marker()
        if m is None:
            self.notify("no more markers that way", markup=False)
            return
        self.seek(m.index + 1)
        self.marker_label = f"◆ {m.t:.1f}s {neutralise(m.label)}"
        self._update_timeline()

    def action_seek_time(self) -> None:
        self.app.push_screen(
            PromptDialog("Seek to time (90, 1:30, 50%)", value=f"{self.engine.t:.0f}"), self._seek_typed
        )

    def _seek_typed(self, text: str | None) -> None:
        if not text:
            return
        try:
            t = parse_time(text, self.engine.duration)
        except ValueError:
            self.notify(f"not a time: {neutralise(text)!r} (try 90, 1:30 or 50%)", severity="error", markup=False)
            return
        self.seek_to_time(t)

    def seek_to_time(self, t: float) -> None:
        self.engine.seek_time(t)
        pos = self.engine.position
        self.seek(pos)
        self.clock_t = max(self.engine.t, min(t, self.engine.duration))
        self._update_timeline()

    @on(Timeline.Seek)
    def _clicked(self, event: Timeline.Seek) -> None:
        self.seek_to_time(event.t)

    # --- playback ----------------------------------------------------------------------

    def action_play(self) -> None:
        if self.playing:
            self._pause()
        else:
            if self.engine.position >= self.engine.count:
                self.seek(0)
            self.playing = True
            self._timer.resume()
        self._update_timeline()

    def _pause(self) -> None:
        self.playing = False
        self._timer.pause()
        self._update_timeline()

    def action_speed(self, direction: int) -> None:
        i = min(range(len(SPEEDS)), key=lambda k: abs(SPEEDS[k] - self.speed))
        self.speed = SPEEDS[max(0, min(len(SPEEDS) - 1, i + direction))]
        self._update_timeline()

    def action_skip_idle(self) -> None:
        self.skip_idle = not self.skip_idle
        self._update_timeline()

    def _tick(self) -> None:
        self.marker_label = ""
        eng = self.engine
        self.clock_t = max(self.clock_t, eng.t) + TICK * self.speed
        if self.skip_idle:
            gap = eng.idle_gap(self.clock_t)
            if gap is not None:
                self.clock_t = gap
        applied = eng.advance_to(self.clock_t)
        if applied:
            self.view.push(applied)
        if eng.position >= eng.count:
            self._pause()
        self._update_timeline()

    # --- search: the whole recording, not just the log window --------------------------------

    def search_next(self, forward: bool) -> None:
        q = self.view.log_view.query_text
        if not q:
            self.notify("no search yet: press / and type", severity="warning", markup=False)
            return
        self._search(q, forward)

    @work(thread=True, exclusive=True, group="search", description="search the recording", exit_on_error=False)
    def _search(self, query: str, forward: bool) -> None:
        eng = self.engine
        hit = eng.search(query, forward=forward)
        wrapped = False
        if hit is None:  # past the last (or before the first) match: wrap around, as less does
            hit = eng.search(query, forward=forward, start=0 if forward else eng.count)
            wrapped = hit is not None
        self.app.call_from_thread(self._found, query, hit, forward, wrapped)

    def _found(self, query: str, hit: int | None, forward: bool, wrapped: bool = False) -> None:
        if hit is None:
            self.notify(f"no match for {neutralise(query)!r} in the recording", markup=False)
            return
        if wrapped:
            self.notify(f"search wrapped to the {'start' if forward else 'end'} of the recording", markup=False)
        self._pause()
        self.seek(hit + 1)
        log = self.view.log_view
        log.current = None
        log.find(forward=False)  # the hit is the last matching line before the new position
        self.view.render_panels()

    def _update_timeline(self) -> None:
        eng = self.engine
        self.query_one(Timeline).model = TimelineModel(
            duration=eng.duration,
            position=min(max(self.clock_t, eng.t), eng.duration),
            markers=self._marks,
            playing=self.playing,
            speed=self.speed,
            skip_idle=self.skip_idle,
            events=(eng.position, eng.count),
            label=self.marker_label,
        )

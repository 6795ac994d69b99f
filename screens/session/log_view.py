"""The server log: a bounded window with a stage gutter, filters, highlight and search.

With more than one host (a multi-node deployment), the log can show every host's lines,
each with a host column after the stage gutter (``E│tray-a│…``), or one host's only
(:meth:`LogView.cycle_host`); with one host there is no host column and nothing changes.

Built on Textual's ``Log`` (plain strings, measured at ~510k lines/s in batches of 1,000),
not ``RichLog``: lines are never parsed as markup, so ``[bold]`` in a log line stays
literal, and styling is applied only to the lines on screen by a highlighter. The view keeps
the last ``window`` lines (the recording keeps everything); filters re-render from that
window.
"""

from __future__ import annotations

import re
from collections import deque

from rich.highlighter import Highlighter
from rich.style import Style
from rich.text import Text
from textual.strip import Strip
from textual.widgets import Log

from ..viewmodel import _ERRORISH, LogLine, _maybe_error

WINDOW = 20_000

_STAGE_STYLE = {
    "C": "bright_black",
    "F": "blue",
    "D": "cyan",
    "W": "yellow",
    "E": "magenta",
    "A": "green",
    "R": "bright_green",
}
_LINE_STYLE = {
    "✖": "bold bright_white on dark_red",
    "▶": "bold cyan",
    "■": "bold bright_cyan",
    "◆": "bold magenta",
    "$": "green",
    "·": "bright_black",
    "⋯": "bold yellow",
}
_HOST_STYLES = ("bold cyan", "bold magenta", "bold green", "bold yellow", "bold blue", "bold red")
"""Colour of each host's column, by the order hosts were first seen."""
HOST_WIDTH = 12
"""Widest host column (longer aliases are clipped there)."""
_MATCH = Style(color="black", bgcolor="yellow", bold=True)
_CURRENT = Style(bgcolor="grey30")


class _Highlighter(Highlighter):
    """Colours the gutter by stage, error lines in red, and every match of the query."""

    def __init__(self, view: LogView) -> None:
        self.view = view

    def highlight(self, text: Text) -> None:
        plain = text.plain
        mark = plain[:1]
        if mark in _LINE_STYLE:
            text.stylize(_LINE_STYLE[mark])
        else:
            text.stylize(_STAGE_STYLE.get(mark, "bright_black"), 0, 1)
            if _maybe_error(plain) and _ERRORISH.search(plain):
                text.stylize("bold red", self.view.body_start)
        text.stylize("bright_black", 1, 2)
        body = self.view.body_start
        if body > 2:
            host = plain[2 : body - 1].rstrip()
            text.stylize(self.view.host_style(host), 2, body - 1)
            text.stylize("bright_black", body - 1, body)
        rx = self.view.query_rx
        if rx is not None:
            for m in rx.finditer(plain, body):
                text.stylize(_MATCH, m.start(), m.end())


class LogView(Log):
    """The live log. Feed it with :meth:`append`; filter with :meth:`set_filter`."""

    MODES = ("all", "errors", "match")

    def __init__(self, window: int = WINDOW, **kwargs) -> None:  # noqa: ANN003 - Widget kwargs
        super().__init__(highlight=True, max_lines=window, **kwargs)
        self.window = window
        self.highlighter = _Highlighter(self)
        self._all: deque[LogLine] = deque(maxlen=window)
        self.mode = "all"
        """``all`` lines, only ``errors`` (and markers), or only lines that ``match`` the query."""
        self.show_probes = False
        """Also show the output of probe and sampler commands (hidden: the scene panel has it)."""
        self.query_text = ""
        self.query_rx: re.Pattern[str] | None = None
        self.current: int | None = None
        """Index (in the shown lines) of the current search hit."""
        self._k3_rich_style: Style | None = None
        self.hosts: list[str] = []
        """Every host seen (never forgotten after a seek, so the columns stay put)."""
        self.host_filter: str | None = None
        """Show only this host's lines (and the session's own); None: every host."""
        self._host_width = 0
        self.body_start = 2
        """Where a shown line's text starts: after the stage gutter, and the host column when shown."""

    # --- feeding -----------------------------------------------------------------------

    def append(self, lines: list[LogLine]) -> None:
        """Add lines at the end (kept in the window; shown if they pass the filter)."""
        if not lines:
            return
        self._all.extend(lines)
        if self._new_hosts(lines):
            self._refilter()
            return
        shown = self._shown_lines(lines)
        if shown:
            if self.current is not None and len(self._lines) + len(shown) > self.window:
                self.current = max(0, self.current - (len(self._lines) + len(shown) - self.window))
            self.write_lines(shown)

    def replace(self, lines: list[LogLine]) -> None:
        """Show exactly these lines (after a seek in replay)."""
        self._all.clear()
        self._all.extend(lines)
        self._new_hosts(lines)
        self._refilter()

    @property
    def kept(self) -> int:
        """Lines held in the window (shown or filtered out)."""
        return len(self._all)

    # --- hosts --------------------------------------------------------------------------

    def note_hosts(self, hosts: list[str]) -> None:
        """Hosts the session knows of (connected, running, frozen) even before they print a line."""
        if self._add_hosts(hosts):
            self._refilter()

    def cycle_host(self) -> str | None:
        """All hosts → the first → the second → … → all again; returns the new filter (None: all)."""
        if len(self.hosts) < 2:
            self.host_filter = None
        elif self.host_filter not in self.hosts:
            self.host_filter = self.hosts[0]
        else:
            i = self.hosts.index(self.host_filter) + 1
            self.host_filter = self.hosts[i] if i < len(self.hosts) else None
        self._refilter()
        return self.host_filter

    def host_style(self, host: str) -> str:
        for i, h in enumerate(self.hosts):
            if h[:HOST_WIDTH] == host:
                return _HOST_STYLES[i % len(_HOST_STYLES)]
        return "bright_black"

    def _new_hosts(self, lines: list[LogLine]) -> bool:
        known = self.hosts
        new = {ln.host: None for ln in lines if ln.host and ln.host not in known}
        return self._add_hosts(list(new))

    def _add_hosts(self, hosts: list[str]) -> bool:
        """Remember new hosts; True when the host column's width changed (the lines must be re-rendered)."""
        added = False
        for h in hosts:
            if h and h not in self.hosts:
                self.hosts.append(h)
                added = True
        if not added:
            return False
        before = self.body_start
        self._set_columns()
        return self.body_start != before

    def _set_columns(self) -> None:
        if len(self.hosts) > 1 and self.host_filter is None:
            self._host_width = min(HOST_WIDTH, max(len(h) for h in self.hosts))
            self.body_start = 2 + self._host_width + 1
        else:
            self.body_start = 2

    def _shown_lines(self, lines) -> list[str]:  # noqa: ANN001 - any iterable of LogLine
        """The kept lines as shown: with the host column when several hosts are shown together."""
        keep = self._keep
        if self.body_start == 2:
            return [ln.text for ln in lines if keep(ln)]
        w = self._host_width
        return [ln.text[:2] + ln.host[:w].ljust(w) + "│" + ln.text[2:] for ln in lines if keep(ln)]

    # --- filtering and search --------------------------------------------------------------

    def set_query(self, text: str) -> None:
        self.query_text = text
        self.query_rx = re.compile(re.escape(text), re.IGNORECASE) if text else None
        if self.mode == "match":
            self._refilter()
        else:
            self._repaint()

    def set_probes(self, show: bool) -> None:
        self.show_probes = show
        self._refilter()

    def set_filter(self, mode: str) -> None:
        if mode not in self.MODES:
            raise ValueError(mode)
        self.mode = mode
        self._refilter()

    def find(self, forward: bool = True) -> bool:
        """Move to the next (or previous) shown line matching the query, wrapping around; pauses following."""
        rx = self.query_rx
        if rx is None:
            return False
        lines = self._lines
        n = len(lines)
        if not n:
            return False
        start = self.current if self.current is not None else (self.scroll_offset.y - 1 if forward else n)
        start = max(-1, min(start, n))
        if forward:
            order = [*range(start + 1, n), *range(0, start + 1)]
        else:
            order = [*range(start - 1, -1, -1), *range(n - 1, start - 1, -1)]
        for i in order:
            if rx.search(lines[i], self.body_start):
                self.show_line(i)
                return True
        return False

    def jump_to_exception(self) -> bool:
        """Show the first-exception line (clearing a filter that hides it, the host filter too)."""
        idx = self._index_of(lambda s: s.startswith("✖│"))
        if idx is None and (self.mode != "all" or self.host_filter is not None):
            self.host_filter = None
            self.set_filter("all")
            idx = self._index_of(lambda s: s.startswith("✖│"))
        if idx is None:
            return False
        self.show_line(idx)
        return True

    def find_text(self, needle: str) -> bool:
        idx = self._index_of(lambda s: needle in s)
        if idx is None:
            return False
        self.show_line(idx)
        return True

    def show_line(self, index: int) -> None:
        self.auto_scroll = False
        self.current = index
        self.scroll_to(y=max(0, index - self.size.height // 2), animate=False, immediate=True)
        self._repaint()

    # --- internals ---------------------------------------------------------------------------

    def _index_of(self, pred) -> int | None:  # noqa: ANN001
        for i, s in enumerate(self._lines):
            if pred(s):
                return i
        return None

    def _keep(self, ln: LogLine) -> bool:
        if ln.kind == "gap":
            return True
        if self.host_filter is not None and ln.host and ln.host != self.host_filter:
            return False
        if ln.kind == "probe" and not self.show_probes:
            return False
        if self.mode == "errors":
            return ln.kind in ("err", "exc", "stage")
        if self.mode == "match":
            return self.query_rx is None or bool(self.query_rx.search(ln.text, 2)) or ln.kind == "exc"
        return True

    def _refilter(self) -> None:
        self.current = None
        self.clear()
        self._set_columns()
        shown = self._shown_lines(self._all)
        if shown:
            self.write_lines(shown, scroll_end=self.auto_scroll)
        self._repaint()

    def _repaint(self) -> None:
        self._render_line_cache.clear()
        self.refresh()

    @property
    def rich_style(self) -> Style:
        # Log asks for it once per rendered line and Textual walks the ancestors each time;
        # it changes only when styles do (notify_style_update)
        cached = self._k3_rich_style
        if cached is None:
            cached = self._k3_rich_style = super().rich_style
        return cached

    def notify_style_update(self) -> None:
        self._k3_rich_style = None
        super().notify_style_update()

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        if self.current is not None and self.scroll_offset.y + y == self.current:
            strip = strip.apply_style(_CURRENT)
        return strip

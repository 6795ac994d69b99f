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
from bisect import bisect_left
from collections import deque

from rich.highlighter import Highlighter
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip
from textual.widgets import Log

from ..viewmodel import LogLine, message_start

WINDOW = 20_000

STAGE_STYLE = {
    # cool colours only: a stage letter must never read as a severity (red, amber, pink are taken)
    "C": "grey50",
    "F": "steel_blue1",
    "D": "cyan",
    "W": "sky_blue3",
    "E": "dodger_blue1",
    "A": "green",
    "R": "bright_green",
}
STAGE_LEGEND = {
    "C": "container",
    "F": "config",
    "D": "device",
    "W": "weights",
    "E": "engine",
    "A": "api",
    "R": "runtime",
}
LINE_STYLE = {
    "✖": "bold bright_white on dark_red",
    "▶": "bold cyan",
    "■": "bold bright_cyan",
    "◆": "bold magenta",
    "$": "green",
    "·": "bright_black",
    "⋯": "bold yellow",
}
LINE_LEGEND = {
    "✖": "the first root exception (x jumps to its root line)",
    "▶": "a stage the run entered",
    "■": "a rung entered or left, a scene frozen",
    "◆": "a note or a marker",
    "$": "a command k3tui ran",
    "·": "k3tui's own findings and events, coloured by severity",
    "⋯": "lines this view skipped under a flood (the recording has them)",
}
SEVERITY_STYLE = {
    "fault": "bold #ffffff on #d70000",
    "error": "bold #ff1f1f",
    "warn": "#ffaf00",
    "info": "",
    "debug": "bright_black",
}
"""Body style by :mod:`k3tui.severity` level: faults and failures red, warnings amber, routine dim."""
_OWN_STYLE = {**SEVERITY_STYLE, "info": "bright_black"}
"""k3tui's own ``·`` lines: routine stays dim, what they report decides the rest."""
_HOST_STYLES = ("bold cyan", "bold magenta", "bold green", "bold yellow", "bold blue", "bold red")
"""Colour of each host's column, by the order hosts were first seen."""
HOST_WIDTH = 12
"""Widest host column (longer aliases are clipped there)."""
_MATCH = Style(color="black", bgcolor="yellow", bold=True)
_CURRENT_MATCH = Style(color="black", bgcolor="#ff8700", bold=True, underline=True)
_CURRENT = Style(bgcolor="#3a3a3a")
_WRAP = "┆"
"""Gutter separator of a wrapped line's continuation rows."""
_MORE = Style(color="black", bgcolor="grey70", bold=True)
"""The ``…`` drawn in a line's last visible cell when it goes on past the pane's edge (``w`` wraps it)."""


class _Highlighter(Highlighter):
    """Colours the gutter by stage, each line's body by its severity, and every match of the query."""

    def __init__(self, view: LogView) -> None:
        self.view = view

    def highlight(self, text: Text) -> None:
        view = self.view
        plain = text.plain
        mark = plain[:1]
        body = view.body_start
        sev = view.severity_at(view.render_y)
        if mark in LINE_STYLE:
            if mark == "·":
                text.stylize(_OWN_STYLE.get(sev) or LINE_STYLE["·"])
            elif mark == "■" and sev == "error":
                text.stylize(SEVERITY_STYLE["error"])
            else:
                text.stylize(LINE_STYLE[mark])
        else:
            text.stylize(STAGE_STYLE.get(mark, "bright_black"), 0, 1)
            style = SEVERITY_STYLE.get(sev, "")
            if style:
                text.stylize(style, body)
        text.stylize("bright_black", 1, 2)
        if body > 2:
            host = plain[2 : body - 1].rstrip()
            text.stylize(view.host_style(host), 2, body - 1)
            text.stylize("bright_black", body - 1, body)
        current = view.render_y == view.current
        if current:  # over the line's own colours (a style under them would never show)
            text.stylize(_CURRENT)
            text.stylize("reverse", 0, 2)
        rx = view.query_rx
        if rx is not None:
            hit = _CURRENT_MATCH if current else _MATCH
            for m in rx.finditer(plain, body):
                text.stylize(hit, m.start(), m.end())


class LogView(Log):
    """The live log. Feed it with :meth:`append`; filter with :meth:`set_filter`."""

    MODES = ("all", "errors", "match")

    _widest = 0
    """Characters of the widest line written since the last clear (what ``cut`` compares with the pane)."""

    def __init__(self, window: int = WINDOW, **kwargs) -> None:  # noqa: ANN003 - Widget kwargs
        super().__init__(highlight=True, max_lines=window, **kwargs)
        self.window = window
        self.highlighter = _Highlighter(self)
        self._all: deque[LogLine] = deque(maxlen=window)
        self._sev: list[str] = []
        """Severity of each shown line (parallel to ``_lines``)."""
        self.render_y = -1
        """The shown line being rendered (what the highlighter asks the severity of)."""
        self.mode = "all"
        """``all`` lines, only ``errors`` (and markers), or only lines that ``match`` the query."""
        self.show_probes = False
        """Also show the output of probe and sampler commands (hidden: the scene panel has it)."""
        self.wrap = False
        """Long lines wrapped at the pane's edge (``w``) instead of clipped there."""
        self._wrap_width = 0
        self.query_text = ""
        self.query_rx: re.Pattern[str] | None = None
        self.current: int | None = None
        """Index (in the shown lines) of the current search hit."""
        self.unseen = 0
        """Lines shown below the view since following was paused (``N new lines below``)."""
        self._k3_rich_style: Style | None = None
        self._hits_key: tuple | None = None
        self._hits: list[int] = []
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
        texts, sevs = self._shown_lines(lines)
        if texts:
            if self.current is not None and len(self._lines) + len(texts) > self.window:
                self.current = max(0, self.current - (len(self._lines) + len(texts) - self.window))
            if not self.auto_scroll:
                self.unseen += len(texts)
            self._write(texts, sevs)

    def replace(self, lines: list[LogLine]) -> None:
        """Show exactly these lines (after a seek in replay)."""
        self._all.clear()
        self._all.extend(lines)
        self._new_hosts(lines)
        self._refilter()

    def redraw(self) -> None:
        """Show the kept lines again (their text changed: a root traceback was re-tagged)."""
        keep = self.current
        self._refilter()
        if keep is not None and keep < len(self._lines):
            self.current = keep
            self._repaint()

    @property
    def kept(self) -> int:
        """Lines held in the window (shown or filtered out)."""
        return len(self._all)

    def _write(self, texts: list[str], sevs: list[str], scroll_end: bool | None = None) -> None:
        # Log splits on every line separator Python knows; keep one severity per stored line
        if any("\u2028" in t or "\u2029" in t for t in texts):
            pairs = [(part, sev) for t, sev in zip(texts, sevs, strict=True) for part in t.splitlines() or [t]]
            texts, sevs = [p for p, _ in pairs], [v for _, v in pairs]
        self._sev.extend(sevs)
        # the widest line, known now (Log measures it in a thread: its virtual width arrives later)
        self._widest = max(self._widest, max(map(len, texts), default=0))
        self.write_lines(texts, scroll_end=scroll_end)

    def _prune_max_lines(self) -> None:
        extra = len(self._sev) - (self.max_lines or len(self._sev))
        if extra > 0:
            del self._sev[:extra]
        super()._prune_max_lines()

    def clear(self) -> LogView:
        self._sev.clear()
        self._widest = 0
        return super().clear()

    def severity_at(self, y: int) -> str:
        sev = self._sev
        return sev[y] if 0 <= y < len(sev) else "info"

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

    def _shown_lines(self, lines) -> tuple[list[str], list[str]]:  # noqa: ANN001 - any iterable of LogLine
        """The kept lines as shown (with the host column when several hosts are shown together,
        wrapped into rows when wrapping is on), and the severity of each."""
        keep = self._keep
        kept = [ln for ln in lines if keep(ln)]
        w = self._host_width
        if self.body_start == 2:
            texts = [ln.text for ln in kept]
        else:
            texts = [ln.text[:2] + ln.host[:w].ljust(w) + "│" + ln.text[2:] for ln in kept]
        sevs = [ln.sev for ln in kept]
        if self.wrap and self._wrap_width > self.body_start + 8:
            return self._wrapped(texts, sevs)
        return texts, sevs

    def _wrapped(self, texts: list[str], sevs: list[str]) -> tuple[list[str], list[str]]:
        width, body = self._wrap_width, self.body_start
        room = width - body
        out_t: list[str] = []
        out_s: list[str] = []
        for text, sev in zip(texts, sevs, strict=True):
            if len(text) <= width:
                out_t.append(text)
                out_s.append(sev)
                continue
            lead = text[:body]
            cont = lead[0] + _WRAP + lead[2:]
            rest = text[body:]
            out_t.append(lead + rest[:room])
            out_s.append(sev)
            for i in range(room, len(rest), room):
                out_t.append(cont + rest[i : i + room])
                out_s.append(sev)
        return out_t, out_s

    # --- wrapping --------------------------------------------------------------------------

    def set_wrap(self, on: bool) -> None:
        """Wrap long lines at the pane's edge (``w``, as in lnav), or clip them there."""
        self.wrap = on
        self._wrap_width = self._usable_width()
        self.scroll_to(x=0, animate=False, immediate=True)
        self._refilter()

    def _usable_width(self) -> int:
        return max(0, self.scrollable_content_region.width - 1)

    def on_resize(self) -> None:
        if self.wrap and self._usable_width() != self._wrap_width:
            self._wrap_width = self._usable_width()
            self._refilter()

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

    def hits(self) -> list[int]:
        """Shown lines that match the query, in order."""
        rx, body = self.query_rx, self.body_start
        if rx is None:
            return []
        return [i for i, line in enumerate(self._lines) if rx.search(line, body)]

    def position(self) -> tuple[int, int]:
        """(the current hit's number counting from 1 — 0 when none is current, hits shown)."""
        lines = self._lines
        key = (self.query_text, len(lines), lines[0] if lines else None, lines[-1] if lines else None, self.body_start)
        if key != self._hits_key:
            self._hits_key, self._hits = key, self.hits()
        hits, cur = self._hits, self.current
        return (bisect_left(hits, cur) + 1 if cur is not None and cur in hits else 0), len(hits)

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
            m = rx.search(lines[i], self.body_start)
            if m:
                self.show_line(i, column=m.start(), end=m.end())
                return True
        return False

    def jump_to_exception(self, root: str = "") -> bool:
        """Show the root line of the first exception (else the ``✖`` line), clearing a filter that hides it."""
        idx = self._exception_index(root)
        if idx is None and (self.mode != "all" or self.host_filter is not None):
            self.host_filter = None
            self.set_filter("all")
            idx = self._exception_index(root)
        if idx is None:
            return False
        line = self._lines[idx]
        start = self.body_start + message_start(line[self.body_start :])
        self.show_line(idx, column=start, end=len(line))  # the message, not vLLM's prefix, in view
        return True

    def _exception_index(self, root: str) -> int | None:
        """The root line itself: the last line before the ``✖`` line that starts like it; else the ``✖`` line."""
        mark = self._index_of(lambda s: s[:2] == "✖│")
        if mark is None:
            return None
        body = self.body_start
        room = self._wrap_width - body if self.wrap else 40
        needle = root.strip()[: max(8, min(40, room))]
        if not needle:
            return mark
        lines = self._lines
        for i in range(mark - 1, max(-1, mark - 5000), -1):
            if lines[i][1:2] == "│" and needle in lines[i][body:]:
                return i
        return mark

    def find_text(self, needle: str) -> bool:
        idx = self._index_of(lambda s: needle in s)
        if idx is None:
            return False
        self.show_line(idx)
        return True

    def show_line(self, index: int, column: int | None = None, end: int | None = None) -> None:
        """Make line ``index`` the current one, in the middle of the view; a hit at ``column`` is scrolled into view."""
        self.auto_scroll = False
        self.current = index
        x = self.scroll_offset.x
        if column is not None and not self.wrap:
            width = self._usable_width()
            if column < x + self.body_start or (end or column) > x + width:
                x = max(0, column - width // 3)
        elif column is None:
            x = 0
        self.scroll_to(x=x, y=max(0, index - self.size.height // 2), animate=False, immediate=True)
        self._repaint()

    def follow(self, on: bool) -> None:
        """Follow new lines (scroll to the end) or pause where the view is."""
        self.auto_scroll = on
        if on:
            self.current = None
            self.unseen = 0
            self.scroll_end(animate=False)

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
            return ln.kind in ("err", "exc", "stage") or ln.sev in ("fault", "error")
        if self.mode == "match":
            return self.query_rx is None or bool(self.query_rx.search(ln.text, 2)) or ln.kind == "exc"
        return True

    def _refilter(self) -> None:
        self.current = None
        self.clear()
        self._set_columns()
        texts, sevs = self._shown_lines(self._all)
        if texts:
            self._write(texts, sevs, scroll_end=self.auto_scroll)
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

    @property
    def cut(self) -> bool:
        """Some line is wider than the pane (clipped there: ``w`` wraps it)."""
        return not self.wrap and self._widest > self.scrollable_content_region.width

    def _render_line(self, y: int, scroll_x: int, width: int) -> Strip:
        # a line that goes on past the right edge says so in its last cell (the text is unchanged)
        # (``width`` counts the vertical scrollbar's column too: the mark goes before it)
        strip = super()._render_line(y, scroll_x, width)
        seen = min(width, self.scrollable_content_region.width)
        if seen > 1 and y < len(self._lines):
            full = self._render_line_strip(y, self.rich_style).cell_length
            if full > scroll_x + seen:
                parts = [*strip.crop(0, seen - 1), Segment("…", _MORE), *strip.crop(seen, width)]
                strip = Strip(parts, width).apply_offsets(scroll_x, y)
        return strip

    def _render_line_strip(self, y: int, rich_style: Style) -> Strip:
        # the highlighter sees only the text; it asks the severity of the line being rendered
        self.render_y = y
        return super()._render_line_strip(y, rich_style)

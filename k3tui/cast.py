"""Writing a session as an asciicast v2 file (``.cast``) that asciinema 2.x and its web player read.

Shape (https://docs.asciinema.org/manual/asciicast/v2/)::

    {"version": 2, "width": 160, "height": 48, "timestamp": 1764470000, "title": "…"}
    [0.52, "o", "text printed to the terminal"]
    [3.10, "m", "rung minimal (attempt 1)"]

Why it is shaped this way:

- **Streaming.** :class:`CastWriter` takes events one at a time, so an export of a 1 GB
  session never holds the log in memory; the export writes the cast in the same pass
  that writes the per-run logs.
- **Times never go backwards.** Event times come from the recorder's monotonic clock, but a
  merged or hand-made recording may not be sorted; the writer clamps each time to the
  previous one (players seek by time and assume order).
- **Nothing hostile reaches the viewer's terminal.** ``asciinema cat`` and ``asciinema
  play`` write the ``o`` text *raw* to the terminal of whoever opens the package — a
  platform engineer who never chose to trust this log. A log line carrying OSC 52 could
  write to their clipboard, OSC 0/2 could retitle their terminal, DCS/CSI could clear the
  screen or switch modes. So every piece of recorded text goes through
  :func:`k3tui.textsafe.neutralise` (all escape sequences dropped, other controls made
  visible). The only escapes in the file are the few SGR colours this module adds itself
  to the banner lines it writes at markers.
- **Newlines become CR LF**, because a player's terminal is in raw mode and a bare LF
  would staircase the log.
- **Markers** (``m`` events) at every rung, stage change, exception, freeze and note —
  the kinds in :data:`k3tui.events.MARKER_KINDS` — plus a visible banner line in the
  output, so ``asciinema cat`` shows where the markers are too.
- Secrets were already removed by the recorder; the export redacts every event again with
  its own :class:`~k3tui.redact.Redactor` before it reaches this writer (defence in depth).
"""

from __future__ import annotations

import json
from typing import IO, Any

from . import events as ev
from .ladder.checklist import is_server_run
from .redact import Redactor
from .textsafe import neutralise

WIDTH = 160
HEIGHT = 48
IDLE_TIME_LIMIT = 2.0
"""Seconds: long waits (a 20-minute weight load) are shortened when played back."""

_DIM = "\x1b[2m"
_BOLD_RED = "\x1b[1;31m"
_BOLD_CYAN = "\x1b[1;36m"
_RESET = "\x1b[0m"


def _same(text: str) -> str:
    return text


def header_of(h: ev.Header, width: int = WIDTH, height: int = HEIGHT) -> dict[str, Any]:
    """The asciicast v2 header for a session header."""
    sim = " [SIMULATED host]" if h.simulated else ""
    title = f"k3tui session {h.session_id} on {h.host or '-'}" + (f" — {h.title}" if h.title else "")
    return {
        "version": 2,
        "width": width,
        "height": height,
        "timestamp": int(h.started),
        "idle_time_limit": IDLE_TIME_LIMIT,
        "title": _clean(title + sim),
        "env": {"TERM": "xterm-256color", "SHELL": "/bin/sh"},
    }


def _utf8(text: str) -> str:
    """Lone surrogates (possible in decoded JSON) become U+FFFD, so the file is valid UTF-8."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _clean(text: str) -> str:
    """One line of text, safe for a terminal."""
    return _utf8(neutralise(text)).replace("\n", " ").replace("\r", " ")


def terminal_text(text: str) -> str:
    """Recorded text as it may go into an ``o`` event: neutralised, CR LF line ends."""
    return _utf8(neutralise(text)).replace("\r\n", "\n").replace("\n", "\r\n")


HELPER_PURPOSES = frozenset({"gpu-sampler"})
"""Commands whose output is k3tui's own data stream (the GPU sampler's JSON), not a log to watch."""


class CastWriter:
    """Writes asciicast v2 lines to a text file object, one event at a time.

    Args:
        fh: a text file opened for writing (UTF-8).
        header: the session header (for size, time and title).
        redactor: applied to every text before it is written; ``None`` when the caller
            feeds events its own redactor has just produced (the export), so the same
            text is not redacted twice.
    """

    def __init__(self, fh: IO[str], header: ev.Header, redactor: Redactor | None = None) -> None:
        self._fh = fh
        self._redact = redactor.text if redactor is not None else _same
        self._last = 0.0
        self.events = 0
        self.markers = 0
        self._helpers: set[str] = set()
        """Ids of k3tui's helper runs (GPU sampler, freeze): their output stays out of the cast."""
        self._line(header_of(header))

    def _line(self, obj: Any) -> None:
        self._fh.write(json.dumps(obj, ensure_ascii=False, separators=(", ", ": ")) + "\n")

    def _time(self, t: float) -> float:
        self._last = max(self._last, round(float(t), 6))
        return self._last

    def output(self, t: float, text: str) -> None:
        """An ``o`` event (neutralised here; redacted too when the writer has a redactor)."""
        if not text:
            return
        self._line([self._time(t), "o", terminal_text(self._redact(text))])
        self.events += 1

    def marker(self, t: float, label: str) -> None:
        """An ``m`` event with a one-line label."""
        self._line([self._time(t), "m", _clean(self._redact(label))[:200]])
        self.markers += 1

    def add(self, e: ev.AnyEvent) -> None:
        """Write whatever one session event contributes to the cast.

        k3tui's own helpers (the GPU sampler's JSON — a ``gpu-sampler`` command or a ``gpu…``
        run — and the freeze's ``freeze…`` runs) are not shown: they are the scene panel's data, and a cast that ends on minutes of
        sampler JSON buries the server's log."""
        if isinstance(e, ev.Output):
            if e.id not in self._helpers:
                self.output(e.t, e.text)
        elif isinstance(e, ev.RunStarted) and not is_server_run(e):
            self._helpers.add(e.run)
        elif isinstance(e, ev.CommandSent) and e.purpose in HELPER_PURPOSES:
            self._helpers.add(e.id)
        elif isinstance(e, (ev.CommandSent, ev.RunStarted)):
            self._banner(e.t, _DIM, f"{e.host + ' ' if e.host else ''}$ {e.command}")
        kind = ev.kind_of(e)
        if kind in ev.MARKER_KINDS:
            label = ev.summary(e, 160)
            self.marker(e.t, label)
            colour = _BOLD_RED if kind == "exception_found" else _BOLD_CYAN
            self._banner(e.t, colour, f"── {label} ──")

    def _banner(self, t: float, colour: str, text: str) -> None:
        safe = _clean(self._redact(text))
        self._line([self._time(t), "o", f"\r\n{colour}{safe}{_RESET}\r\n"])
        self.events += 1

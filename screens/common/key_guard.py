"""Letters typed in one burst must not outlive the yes/no dialog they were typed into.

Someone who types ``no`` (or ``nope``, ``yes``) into a confirm dialog closes it with the
first letter; the rest would reach the screen below as commands (``o`` switches the log's
filter, ``s`` arms a stop). The dialog arms this guard when a letter answers it; the
screens below swallow printable keys until typing pauses for :data:`GAP` seconds. Esc is
never swallowed, and a key after the pause works as always.
"""

from __future__ import annotations

import time

from textual import events
from textual.app import App

GAP = 0.3
"""Seconds after the answer (and after each key swallowed since) in which printable keys do nothing."""


def arm(app: App) -> None:
    """Start swallowing the rest of a burst of typing (called when a letter answered a dialog)."""
    app._k3_guard_until = time.monotonic() + GAP  # type: ignore[attr-defined]
    app._k3_guard_pending = True  # type: ignore[attr-defined]


def resumed(app: App) -> None:
    """The screen below a dialog answered by a letter is back: the guard counts from now.

    Closing the dialog takes its time on a loaded machine; the rest of the word waits in
    the queue meanwhile and must still find the guard up."""
    if getattr(app, "_k3_guard_pending", False):
        app._k3_guard_pending = False  # type: ignore[attr-defined]
        app._k3_guard_until = time.monotonic() + GAP  # type: ignore[attr-defined]


def swallow(app: App, event: events.Key) -> bool:
    """Stop ``event`` if it belongs to the burst that answered a dialog; True when it was swallowed."""
    now = time.monotonic()
    if now >= getattr(app, "_k3_guard_until", 0.0) or not event.is_printable or event.key == "escape":
        return False
    app._k3_guard_until = now + GAP  # type: ignore[attr-defined]
    event.stop()
    event.prevent_default()
    return True

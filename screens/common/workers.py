"""Worker failures, one place: ``Worker.StateChanged`` does not bubble, so screens forward it to the app."""

from __future__ import annotations

from textual.screen import Screen
from textual.worker import Worker


def forward_worker_state(screen: Screen, event: Worker.StateChanged) -> None:
    """Hand a screen's worker state change to the app's handler (it reports failures)."""
    handler = getattr(screen.app, "on_worker_state_changed", None)
    if handler is not None:
        handler(event)

"""Toasts raised while a modal dialog is open wait until it closes.

Textual draws a toast on the active screen's toast rack, so one raised while a dialog is
on top lands over the input being typed into (the dialogs clear the toasts already shown
when they open, not those raised later: a worker's failure, a freeze that finished). The
app hands every notification to :meth:`HeldToasts.hold` first; one raised while a
``ModalScreen`` is active is kept and shown, with its whole timeout, once a screen that is
not modal is active again.
"""

from __future__ import annotations

from dataclasses import replace
from time import time

from textual.app import App, ScreenStackError
from textual.notifications import Notification, Notify
from textual.screen import ModalScreen, Screen


class HeldToasts:
    """The notifications waiting for the dialog on top to close, in the order they were raised."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.held: list[Notification] = []

    def start(self) -> None:
        """Release the kept toasts whenever the active screen changes (call once the app runs)."""
        self.app.screen_change_signal.subscribe(self.app, self.release)

    def hold(self, notification: Notification) -> bool:
        """Keep ``notification`` while a modal dialog is active; True when it was kept."""
        modal = self.hold_now()
        if modal:
            self.held.append(notification)
        return modal

    def hold_now(self) -> bool:
        """A modal dialog is the active screen."""
        try:
            return isinstance(self.app.screen, ModalScreen)
        except ScreenStackError:
            return False

    def release(self, _screen: Screen | None = None) -> None:
        """Show the kept notifications if the active screen is not a dialog (any more)."""
        if not self.held or self.hold_now():
            return
        held, self.held = self.held, []
        for n in held:  # raised now: the timeout counts from when it can be seen
            self.app.post_message(Notify(replace(n, raised_at=time())))

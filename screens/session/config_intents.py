"""The live session's run-config intents: preview a change, apply it, revert, flip a debug toggle.

A mixin of :class:`~screens.session.session_screen.SessionScreen` (which declares the keys
``c a u t``), kept apart so the screen stays wiring. Every change goes through the driver
(``preview_change``, ``apply_change``, ``revert``, ``toggle``), which enforces the rules:
one variable per change unless a reason is given (recorded as a Decision), no change while
a rung runs. Here the operator is asked for what the rules need — a reason, a yes to a
warning — and a refusal is one error line that changes nothing.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work

from k3tui.errors import K3Error, UsageError
from k3tui.textsafe import neutralise

from ..common.confirm_dialog import ConfirmDialog
from ..common.prompt_dialog import PromptDialog
from .change_panel import ChangePanel
from .toggle_picker import TogglePicker


class ConfigIntents:
    """``c`` preview · ``a`` apply · ``u`` revert · ``t`` debug toggles · ``o`` climb past a hardware stop
    (needs ``driver``, ``view``, ``_driver_ready``)."""

    driver: Any
    if TYPE_CHECKING:  # what the screen it is mixed into provides
        from textual.app import App

        app: App[Any]
        view: Any

        def notify(self, message: str, **kwargs: Any) -> None: ...
        def _driver_ready(self) -> bool: ...

    _climbing_past_hardware = False
    """``o`` recorded a reason: ``r`` goes on past a baseline that failed on the hardware."""
    _pending: dict[str, Any] | None = None
    """The change previewed with ``c`` and not applied yet (what ``a`` applies)."""
    _change_text = ""
    """What the operator last typed for ``c`` (offered again, so a typo loses nothing)."""

    def action_change(self) -> None:
        if not self._driver_ready():
            return
        self.app.push_screen(
            PromptDialog(
                "Change for the next run (key=value, …; env:NAME=V, flag:NAME=true)",
                "max_model_len=4096",
                value=self._change_text,
            ),
            self._preview,
        )

    def _preview(self, text: str | None) -> None:
        if not text or self.driver is None:
            return
        self._change_text = text
        try:
            changes = parse_changes(text)
            diff = self.driver.preview_change(changes)
        except K3Error as exc:
            self._error("not a change", exc)
            return
        if not diff:
            self.notify("that changes nothing in the next run's config", severity="warning", markup=False)
            return
        self._pending = changes
        self._show_change(diff)
        if len(diff) > 1:
            self.notify(
                f"{len(diff)} variables change at once: a asks for the reason (one variable per step)",
                severity="warning",
                markup=False,
            )
        else:
            self.notify("a applies it to the next run", markup=False)

    def action_apply(self) -> None:
        if not self._driver_ready():
            return
        if self._pending is None:
            self.notify("nothing to apply: c previews a change first", severity="warning", markup=False)
            return
        changes, n = self._pending, len(self.view.preview or ())
        if n <= 1:
            self._config_worker("apply the change", "apply_change", changes, None)
            return

        def with_reason(reason: str | None) -> None:
            if not reason:
                self.notify(
                    f"not applied: changing {n} variables at once needs a reason (or change one at a time)",
                    severity="warning",
                    markup=False,
                )
                return
            self._config_worker("apply the change", "apply_change", changes, reason)

        self.app.push_screen(
            PromptDialog(f"{n} variables change at once — why? (recorded as a decision; empty cancels)"), with_reason
        )

    def action_revert(self) -> None:
        if not self._driver_ready():
            return

        def with_reason(reason: str | None) -> None:
            if not reason:
                self.notify("not reverted: a revert needs a reason", severity="warning", markup=False)
                return
            self._config_worker("revert", "revert", reason)

        self.app.push_screen(
            PromptDialog(
                "Revert to the last known good config — why? (recorded as a decision)",
                value="back to the last known good config",
            ),
            with_reason,
        )

    def action_override_hardware(self) -> None:
        """``o``: climb on past a hardware stop, with the reason recorded (what ``--override-hardware`` does)."""
        if not self._driver_ready():
            return

        def with_reason(reason: str | None) -> None:
            if not reason or not reason.strip():
                self.notify(
                    "the hardware stop holds: climbing past it needs a reason", severity="warning", markup=False
                )
                return
            self._override_worker(reason.strip())

        self.app.push_screen(
            PromptDialog(
                "Climb on past the hardware stop — why does the fault not matter for this step? "
                "(recorded as a decision; empty cancels)"
            ),
            with_reason,
        )

    @work(group="config", description="climb past the hardware stop", exit_on_error=False)
    async def _override_worker(self, reason: str) -> None:
        call = getattr(self.driver, "climb_past_hardware", None)
        if call is None:
            self.notify("this session cannot climb past a hardware stop", severity="error", markup=False)
            return
        try:
            await call(reason)
        except K3Error as exc:
            self._error("the hardware stop holds", exc)
            return
        self._climbing_past_hardware = True
        self.notify(
            neutralise(f"recorded: climbing past the hardware stop ({reason}); r runs the next rung"),
            title="hardware stop overridden",
            markup=False,
        )

    def action_toggles(self) -> None:
        if not self._driver_ready():
            return
        items = self.driver.toggles()
        if not items:
            self.notify("this session's profile has no debug toggles", markup=False)
            return

        def picked(name: str | None) -> None:
            if name:
                self._flip(items, name)

        self.app.push_screen(TogglePicker(items), picked)

    def _flip(self, items: list[dict[str, Any]], name: str) -> None:
        item = next(i for i in items if i["name"] == name)
        on = not item["on"]
        if not (on and item.get("warning")):
            self._config_worker(f"toggle {name}", "toggle", name, on, False)
            return
        body = Text()
        body.append(neutralise(str(item["warning"])) + "\n\n", style="bold yellow")
        body.append(f"Turn {neutralise(name)} on for the next run? The warning is recorded with your decision.")

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._config_worker(f"toggle {name}", "toggle", name, True, True)
            else:
                self.notify(f"not applied: {neutralise(name)} stays off", markup=False)

        self.app.push_screen(ConfirmDialog(f"{neutralise(name)}: are you sure?", body, yes="Turn it on"), confirmed)

    @work(group="config", description="change the next run's config", exit_on_error=False)
    async def _config_worker(self, what: str, method: str, *args: Any) -> None:
        call = getattr(self.driver, method, None)
        if call is None:  # a driver that cannot change the config (none of the shipped ones)
            self.notify(f"this session cannot {what}", severity="error", markup=False)
            return
        try:
            diff = await call(*args)
        except K3Error as exc:
            self._error(f"{what}: nothing changed", exc)
            return
        self._pending = None
        self._show_change(None)
        changed = ", ".join(f"{d.get('key')} {d.get('old')!r} → {d.get('new')!r}" for d in diff) or "no change"
        self.notify(neutralise(f"next run: {changed}"), title=what, markup=False)

    def _show_change(self, preview: list[dict[str, Any]] | None) -> None:
        self.view.preview = preview
        self.view.render_panels()
        # at the top of the side column: the panel's new height is not laid out yet
        self.view.query_one(ChangePanel).scroll_visible(animate=False, top=True)

    def _error(self, title: str, exc: Exception) -> None:
        self.notify(neutralise(str(exc)), title=title, severity="error", timeout=10, markup=False)


def parse_changes(text: str) -> dict[str, Any]:
    """``max_model_len=4096, env:NCCL_DEBUG=TRACE`` → ``{"max_model_len": 4096, "env:NCCL_DEBUG": "TRACE"}``.

    Values are JSON where they parse (numbers, true/false, null removes), text otherwise.

    Raises:
        UsageError: a part that is not ``key=value``, or a key given twice.
    """
    changes: dict[str, Any] = {}
    for part in (p.strip() for p in text.split(",")):
        key, eq, raw = part.partition("=")
        key, raw = neutralise(key.strip()), raw.strip()
        if not part:
            continue
        if not eq or not key:
            raise UsageError(f"{part!r} is not a change: write key=value (e.g. max_model_len=4096)")
        if key in changes:
            raise UsageError(f"{key} is given twice")
        try:
            changes[key] = json.loads(raw)
        except ValueError:
            changes[key] = raw
    if not changes:
        raise UsageError("no change given: write key=value (e.g. max_model_len=4096)")
    return changes

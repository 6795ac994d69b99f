"""The ledger of run configs: one variable per change, every change revertible, every override recorded.

Why a ledger and not just "the current config": the procedure's promise is that any two
consecutive runs differ in exactly one variable and that the operator can always go back
to the last known state. So the ledger keeps the stack of configs that were *run*,
refuses a change that touches more than one variable unless a reason is given (the
reason becomes a :class:`~k3tui.events.Decision`), and :meth:`ConfigLedger.revert`
returns to the previous config. Observed variables (driver, GPU count) cannot be set by
k3tui; a change in one of them between runs is recorded and makes the change
non-revertible (a stop condition).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from .. import events as ev
from ..errors import OneVariableRule, UsageError
from ..redact import shown
from .config import OBSERVED, RunConfig, apply_changes, diff

Emit = Callable[[Any], Any]


def _describe(d: list[dict[str, Any]]) -> str:
    return ", ".join(f"{x['key']}: {shown(x['key'], x['old'])} → {shown(x['key'], x['new'])}" for x in d) or "no change"


class ConfigLedger:
    """Configs in the order they were set; the last is the one the next run uses."""

    def __init__(self, emit: Emit, host: str = "") -> None:
        self.emit = emit
        self.host = host
        self.history: list[RunConfig] = []
        self.good: RunConfig | None = None
        """The last config whose run passed its rung (the "last known state" to go back to)."""

    @property
    def current(self) -> RunConfig | None:
        return self.history[-1] if self.history else None

    def preview(self, changes: dict[str, Any]) -> list[dict[str, Any]]:
        """The diff ``changes`` would make against the current config (nothing is recorded)."""
        base = self._require_current()
        return diff(base, apply_changes(base, changes))

    def start(self, cfg: RunConfig, run: str = "") -> RunConfig:
        """Set the first config of the session (or replace it wholesale with an explicit reset)."""
        d = diff(self.current, cfg)
        self.history.append(cfg)
        self._record(run, cfg, d)
        return cfg

    def apply(
        self, changes: dict[str, Any], reason: str | None = None, run: str = ""
    ) -> tuple[RunConfig, list[dict[str, Any]]]:
        """Apply a change; more than one changed variable needs a ``reason``.

        Raises:
            OneVariableRule: two or more variables change and no reason was given.
            UsageError: nothing would change, or an unknown variable.
        """
        base = self._require_current()
        new = apply_changes(base, changes)
        d = diff(base, new)
        if not d:
            raise UsageError("that change does not change anything in the run config")
        if len(d) > 1 and not (reason or "").strip():
            raise OneVariableRule(
                f"{len(d)} variables would change at once ({_describe(d)}); change one at a time, or give a reason to override"
            )
        if len(d) > 1:
            self.emit(
                ev.Decision(host=self.host, action=f"override one-variable rule: {_describe(d)}", reason=str(reason))
            )
        self.history.append(new)
        self._record(run, new, d)
        return new, d

    def observe(self, **observed: Any) -> list[dict[str, Any]]:
        """Fold observed facts (driver, gpu_count, image) into the current config; returns what changed."""
        base = self._require_current()
        new = msgspec.structs.replace(base, **{k: v for k, v in observed.items() if v not in (None, "")})
        d = diff(base, new)
        if d:
            self.history[-1] = new
        return d

    def mark_good(self) -> None:
        """The current config's run passed: it becomes the state to revert to."""
        self.good = self.current

    def revert(self, reason: str = "", run: str = "") -> tuple[RunConfig, list[dict[str, Any]]]:
        """Go back to the last known good config (else the previous one); recorded as a decision.

        Observed variables keep their observed values: k3tui cannot revert a driver, and
        says so with a warning notice.
        """
        target = (
            self.good
            if self.good is not None and self.good is not self.current
            else (self.history[-2] if len(self.history) > 1 else None)
        )
        if target is None:
            raise UsageError("nothing to revert: this is the first config of the session")
        cur = self._require_current()
        stuck = [k for k in OBSERVED if getattr(cur, k) != getattr(target, k) and getattr(target, k) not in (None, "")]
        restored = msgspec.structs.replace(target, **{k: getattr(cur, k) for k in stuck})
        d = diff(cur, restored)
        self.emit(
            ev.Decision(
                host=self.host, action=f"revert: {_describe(d)}", reason=reason or "back to the last known state"
            )
        )
        if stuck:
            self.emit(
                ev.Notice(
                    host=self.host,
                    level="warning",
                    message=f"cannot revert {', '.join(stuck)}: observed on the host, not set by k3tui (stop condition: change not revertible)",
                )
            )
        self.history.append(restored)
        self._record(run, restored, d)
        return restored, d

    def _require_current(self) -> RunConfig:
        if self.current is None:
            raise UsageError("no run config yet: run the minimal launch first")
        return self.current

    def _record(self, run: str, cfg: RunConfig, d: list[dict[str, Any]]) -> None:
        self.emit(
            ev.RunConfigSet(host=self.host, run=run, config=msgspec.to_builtins(cfg), diff=msgspec.to_builtins(d))
        )

"""The run config: a change previewed (not applied yet), or the last change and how the config now differs.

Two questions an operator asks before pressing ``r`` again: "what changes in the next
run?" (the last change, marked *next run* until a run starts after it) and "how far am I
from the minimal launch?" (the current config against the session's first one). More
than one variable at once is flagged loudly: the ladder changes one variable per step.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from k3tui import events as ev
from k3tui.state import SessionState
from k3tui.textsafe import neutralise

from ..common.panel import Panel

_NOT_VARIABLES = ("entry", "docker_args", "flags", "env")


class ChangePanel(Panel):
    """``gpu_memory_utilization  0.9 → 0.95``; more than one variable is flagged loudly."""

    def show(self, state: SessionState, preview: list[dict[str, Any]] | None = None) -> None:
        t = Text()
        if preview is not None:
            t.append("next change (not applied)\n", style="bold yellow")
            _diff_lines(t, preview)
            t.append("a applies it · c changes it\n", style="bright_black")
        elif state.configs:
            last = state.configs[-1]
            _last_change(t, state, last)
        else:
            t.append("no run config yet", style="bright_black")
        self.show_text(_trim(t))


def _last_change(t: Text, state: SessionState, last: ev.RunConfigSet) -> None:
    pending = _for_next_run(state, last)
    where = "next run" if pending else "run"
    t.append(f"{where} {neutralise(last.run)}\n", style="bold cyan" if pending else "bright_black")
    first = len(state.configs) == 1 and all(d.get("old") is None for d in last.diff)
    if first:
        t.append("the profile's minimal launch\n", style="bright_black")
        return
    t.append("last change:\n", style="bright_black")
    _diff_lines(t, last.diff)
    if len(state.configs) < 2:
        return
    away = _changed_since(state.configs[0].config, last.config)
    if not away:
        t.append("= the minimal launch\n", style="green")
        return
    t.append(f"vs minimal launch ({len(away)}):\n", style="bright_black")
    for key, value in away:
        t.append(f"  {neutralise(key)}={neutralise(repr(value))}\n")


def _diff_lines(t: Text, diff: list[dict[str, Any]]) -> None:
    if not diff:
        t.append("no change\n", style="bright_black")
    for d in diff:
        t.append(f"{neutralise(str(d.get('key')))}", style="bold")
        t.append(f"  {neutralise(repr(d.get('old')))} → ", style="bright_black")
        t.append(f"{neutralise(repr(d.get('new')))}\n", style="cyan")
    if len(diff) > 1:
        t.append(
            f"⚠ {len(diff)} variables change at once: one at a time, or give a reason\n", style="bold black on yellow"
        )


def _for_next_run(state: SessionState, cfg: ev.RunConfigSet) -> bool:
    """No run has started since this config was set: it is what the next run uses."""
    started = [r.started for r in state.runs.values() if r.command]
    return not started or cfg.t >= max(started)


def _flat(cfg: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in cfg.items() if k not in _NOT_VARIABLES}
    out.update({f"flag:{k}": v for k, v in (cfg.get("flags") or {}).items()})
    out.update({f"env:{k}": v for k, v in (cfg.get("env") or {}).items()})
    return out


def _changed_since(first: dict[str, Any], now: dict[str, Any]) -> list[tuple[str, Any]]:
    """Variables of ``now`` that differ from ``first`` (``None`` where one was removed)."""
    a, b = _flat(first), _flat(now)
    return [(k, b.get(k)) for k in [*b, *(k for k in a if k not in b)] if a.get(k) != b.get(k)]


def _trim(t: Text) -> Text:
    t.rstrip()
    return t

"""The ladder: each rung's state, verdict and reproduction count."""

from __future__ import annotations

from rich.text import Text

from k3tui.state import SessionState
from k3tui.textsafe import neutralise

from ..common.panel import Panel
from ..viewmodel import LOG_PREFIX, rung_names

_VERDICT = {"PASS": "bold green", "FAIL": "bold red", "UNKNOWN": "yellow", "STOP": "bold red", "DRIFT": "bold yellow"}


class LadderPanel(Panel):
    """One line per rung: ``✔ baseline PASS``, ``▶ minimal running (attempt 2)``."""

    def show(self, state: SessionState, profile: str = "") -> None:
        t = Text()
        for name in rung_names(state, profile):
            r = state.rungs.get(name)
            if t:
                t.append("\n")
            if r is None:
                t.append(f"· {name}", style="bright_black")
                continue
            if r.state == "active":
                t.append(f"▶ {name}", style="bold cyan")
                t.append(f" running (attempt {r.attempts})", style="cyan")
                continue
            verdict = r.verdict.upper() or "done"
            mark = "✔" if verdict == "PASS" else "✖" if verdict in ("FAIL", "STOP") else "•"
            t.append(f"{mark} {name} ", style=_VERDICT.get(verdict, "white"))
            t.append(neutralise(verdict), style=_VERDICT.get(verdict, "white"))
            if r.repeats:
                t.append(f" {r.reproduced or 0}/{r.repeats}", style="bold")
            if r.summary:
                t.append(f" {short_summary(neutralise(r.summary))}", style="bright_black")
        self.show_text(t)


SUMMARY_MAX = 90


def short_summary(text: str, limit: int = SUMMARY_MAX) -> str:
    """A rung's summary without vLLM's log prefixes (process, level, time, source), cut at a word.

    ``start-up failed at stage engine: (Worker_TP3 pid=9) ERROR 12-01 … [x.py:9] RuntimeError: NCCL error``
    → ``start-up failed at stage engine: RuntimeError: NCCL error``: the exception, not ``ER…``."""
    text = " ".join(LOG_PREFIX.sub("", text).split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip(" ,:;") + "…"

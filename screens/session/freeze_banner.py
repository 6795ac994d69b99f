"""The freeze banner: shown when the first root exception arrives."""

from __future__ import annotations

from rich.text import Text

from k3tui.state import SessionState
from k3tui.textsafe import neutralise

from ..common.panel import Panel
from ..viewmodel import host_label, session_hosts


def advice_for(stage: str, state: SessionState) -> str:
    """Layer advice: the classifier's table when it exists, else the run's classified advice."""
    try:
        from k3tui.classify import advice_for as table  # built by the classifier engineer

        text = table(stage)
        if text:
            return str(text)
    except (ImportError, AttributeError, KeyError, ValueError):
        pass
    for run in reversed(list(state.runs.values())):
        if run.classified is not None and run.classified.advice:
            return run.classified.advice
    return f"reproduce at the {stage} layer with the minimal launch before changing anything else"


class FreezeBanner(Panel):
    """Stage, root exception, what was frozen, and what to try next at that layer."""

    def show(self, state: SessionState) -> bool:
        """Render the banner; returns True when there is something to show."""
        e = state.first_exception
        if e is None:
            self.display = False
            return False
        t = Text()
        t.append(" FROZEN ", style="bold white on red")
        t.append(f" first root exception at stage {neutralise(e.stage or '?').upper()}", style="bold")
        if e.process:
            t.append(f" in {neutralise(e.process)}", style="bold")
        multi = len(session_hosts(state)) > 1
        if multi and e.host:
            t.append(f" on node {host_label(state, neutralise(e.host))}", style="bold")
        t.append(f"  (run {neutralise(e.run)}, log line {e.line_number}, {e.t:.1f}s)\n", style="bright_black")
        t.append(_clip(neutralise(e.line.strip()), 160), style="bold red")
        t.append("\nnext: ", style="bold")
        t.append(_clip(neutralise(advice_for(e.stage, state)), 240))
        frozen = [s for s in state.scenes if s.t >= e.t]
        if multi:  # that node's scene first
            frozen = [s for s in frozen if s.host == e.host] or frozen
        t.append("\nscene: ", style="bold")
        if frozen:
            t.append(
                f"frozen at {frozen[0].t:.1f}s ({neutralise(frozen[0].reason)}): {neutralise(scene_summary(frozen[0].scene))}"
            )
            if multi and frozen[0].host:
                t.append(f" on {host_label(state, neutralise(frozen[0].host))}", style="bright_black")
        else:
            t.append("freezing…", style="yellow")
        self.show_text(t)
        self.display = True
        return True


def scene_summary(scene: dict) -> str:
    """``8 GPUs, driver 580.95.05, vllm/vllm-openai:kimi-k3, 29 probes (2 failed)``."""
    parts = []
    gpus = scene.get("gpus") or []
    if gpus:
        parts.append(f"{len(gpus)} GPUs")
    driver = (scene.get("host") or {}).get("driver_version")
    if driver:
        parts.append(f"driver {driver}")
    image = (scene.get("container") or {}).get("image")
    if image:
        parts.append(str(image))
    probes = scene.get("probes") or []
    failed = sum(1 for p in probes if not p.get("ok", True))
    if probes:
        parts.append(f"{len(probes)} probes" + (f" ({failed} failed)" if failed else ""))
    return ", ".join(parts) or "empty"


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"

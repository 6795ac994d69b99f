"""The freeze banner: shown when the first root exception arrives."""

from __future__ import annotations

from rich.text import Text

from k3tui.classify.hostfault import hardware_banner
from k3tui.state import SessionState
from k3tui.textsafe import neutralise

from ..common.panel import Panel
from ..viewmodel import host_label, message_start, session_hosts

WIDE = 110
"""Columns from which the collapsed banner has room for the scene line too."""


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
    """Stage, root exception, what to try next at that layer, and what was frozen — never clipped.

    Collapsed (the default) it shows the root exception's message, its stage and the next
    step in full (and the scene, where there are columns for it); ``b`` expands it with the
    line as logged, what the failed layer means, the scene and the run. The CSS caps the collapsed height; the
    expanded one may take most of the screen.
    """

    expanded = False

    def toggle(self) -> None:
        self.expanded = not self.expanded
        self.set_class(self.expanded, "-expanded")
        self._shown = None  # rebuild the text (expanded shows more)

    def show(self, state: SessionState) -> bool:
        """Render the banner; returns True when there is something to show."""
        e = state.first_exception
        hw = hardware_banner(state)  # issue 14: a host fault is the root (or stops the ladder)
        if e is None and hw is None:
            self.display = False
            return False
        if e is None:
            return self._show_hardware(hw)
        multi = len(session_hosts(state)) > 1
        meaning, nxt = split_advice(advice_for(e.stage, state))
        if hw is not None and hw["kind"] == "root":
            meaning, nxt = "", hw["next"]
        t = Text()
        t.append(" FROZEN ", style="bold white on red")
        t.append(f" stage {neutralise(e.stage or '?').upper()}", style="bold")
        if multi and e.host:
            t.append(f" on node {host_label(state, neutralise(e.host))}", style="bold")
        if e.process:
            t.append(f" · {neutralise(e.process)}", style="bold")
        t.append(f" · log line {e.line_number} · {e.t:.1f}s", style="bright_black")
        t.append("  b: less" if self.expanded else "  b: more", style="bold cyan")
        t.append("\n")
        if hw is not None and hw["kind"] == "root":
            t.append(f"root: {neutralise(hw['summary'])}\n", style="bold red")
            t.append("consequence: ", style="bold")
        line = neutralise(e.line.strip())
        # collapsed, the message only (the process is in the first line); expanded, the line as logged
        t.append(line if self.expanded else line[message_start(line) :], style="bold red")
        t.append("\nnext: ", style="bold")
        t.append(neutralise(nxt))
        if self.expanded and meaning:
            t.append("\nwhy: ", style="bold")
            t.append(neutralise(meaning))
        if self.expanded or self.app.size.width >= WIDE:  # at 80 columns the scene waits for b
            self._scene_line(t, state, e, multi)
        if self.expanded:
            t.append(
                f"\nrun {neutralise(e.run)} · first root exception of the session; x jumps to it in the log",
                style="bright_black",
            )
        self.show_text(t)
        self.display = True
        return True

    def _show_hardware(self, hw: dict) -> bool:
        """No exception yet, but a frozen scene holds a fatal host fault: the ladder stands still."""
        t = Text()
        t.append(" HARDWARE ", style="bold white on red")
        t.append(f" stop on {neutralise(hw['host'])}\n", style="bold")
        t.append(neutralise(hw["summary"]), style="bold red")
        t.append("\nnext: ", style="bold")
        t.append(neutralise(hw["next"]))
        self.show_text(t)
        self.display = True
        return True

    @staticmethod
    def _scene_line(t: Text, state: SessionState, e, multi: bool) -> None:  # noqa: ANN001 - an ExceptionView
        frozen = [s for s in state.scenes if s.t >= e.t]
        if multi:  # that node's scene first
            frozen = [s for s in frozen if s.host == e.host] or frozen
        t.append("\nscene: ", style="bold")
        if not frozen:
            t.append("freezing…", style="yellow")
            return
        t.append(
            f"frozen at {frozen[0].t:.1f}s ({neutralise(frozen[0].reason)}): {neutralise(scene_summary(frozen[0].scene))}"
        )
        if multi and frozen[0].host:
            t.append(f" on {host_label(state, neutralise(frozen[0].host))}", style="bright_black")


def split_advice(text: str) -> tuple[str, str]:
    """``"meaning Next: step"`` → (meaning, step); advice without ``Next:`` is all step."""
    meaning, sep, step = text.partition(" Next: ")
    return (meaning.strip(), step.strip()) if sep else ("", text.strip())


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

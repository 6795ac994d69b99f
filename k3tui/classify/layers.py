"""The layer verdict: which stage a root failure belongs to, and what to do there.

Evidence is weighed in a fixed order, strongest first: the root's own text when it is
unambiguous (Error 803 is the device, a bind failure is the API), then the function
names of its stack (a failure inside ``load_weights`` is the weights, whatever printed
it), then how far the start-up had got when it was printed, then weak hints (an
``ImportError`` with nothing else to go on is the container). Rules are data in
``assets/classify/patterns.toml``; the advice is the decision table ``advice.toml``.
"""

from __future__ import annotations

from .rules import STAGES, Rules
from .traces import frame_names


def decide(rules: Rules, text: str, stack: list[str], stage_idx: int) -> str:
    """The stage of a root whose message is ``text``, printed when ``stage_idx`` was reached."""
    for rule in rules.stage_rules:
        if rule.strong and rule.match.search(text):
            return rule.stage
    names = frame_names(stack)
    for stage, rx in rules.frame_rules:
        if any(rx.match(name) for name in names):
            return stage
    if stage_idx > 0:
        return STAGES[stage_idx]
    for rule in rules.stage_rules:
        if not rule.strong and rule.match.search(text):
            return rule.stage
    return STAGES[max(stage_idx, 0)]


def advice_text(rules: Rules, stage: str) -> str:
    """What a failed layer means, then ``Next:`` the one step to take there ("" for no such layer)."""
    if stage not in rules.advice:
        return ""
    meaning, nxt = rules.advice[stage]
    return f"{meaning} Next: {nxt}".strip()

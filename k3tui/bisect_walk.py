"""A bisect's walk read back from its recorded Decisions (issue 20): one pure parser, no imports.

``k3tui bisect`` records every judged step as a Decision ``bisect step i of ~n: PURPOSE`` whose
reason is ``verdict V: reproduced k/K, passed p/K[; signature: S]``, and closes (or pauses) the
walk with ``bisect KIND`` (``culprit``, ``interaction``, ``aborted`` …). The search
(:mod:`k3tui.ladder.bisect`), ``replay --headless``, REPORT.md and the folded session state
(:mod:`k3tui.state`, which the TUI's bisect view renders) all read the walk through this module,
so it sits below both: it imports nothing of k3tui.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

GOOD, BAD, DRIFT, ERROR = "good", "bad", "drift", "error"

STEP = re.compile(r"^bisect step (\d+) of ~(\d+): (.*)$")
VERDICT = re.compile(r"^verdict (\w+): reproduced (\d+)/(\d+), passed (\d+)/(\d+)")
_FLAKY = " (flaky: repeated)"


@dataclass
class WalkRow:
    """One recorded bisect step, as the Decision that closed it says."""

    step: int
    of: int
    purpose: str
    verdict: str
    reproduced: str
    passed: str


def parse_step(action: str, reason: str) -> WalkRow | None:
    """The step a Decision records (None when it is not a step Decision)."""
    m = STEP.match(action)
    if not m:
        return None
    v = VERDICT.match(reason)
    verdict, rep, passed = (v[1], f"{v[2]}/{v[3]}", f"{v[4]}/{v[5]}") if v else ("?", "-", "-")
    return WalkRow(int(m[1]), int(m[2]), m[3], verdict, rep, passed)


def parse_end(action: str, reason: str) -> tuple[str, str] | None:
    """``(kind, line)`` of a Decision that ends or pauses the walk (``bisect culprit`` …), else None.

    ``bisect resumed`` (a resumed recording's first Decision) is neither a step nor an end.
    """
    if not action.startswith("bisect ") or action.startswith("bisect step") or action == "bisect resumed":
        return None
    return action[len("bisect ") :], reason or action


def taken_of(purpose: str, keys: Iterable[str]) -> list[str] | None:
    """The variables of B a step's configuration took, from its purpose (None: the purpose does not say).

    ``keys`` are all the changeable variables (B's side of the walk), in order.
    """
    keys = list(keys)
    p = purpose.removesuffix(_FLAKY)
    if p.startswith("bad as given"):
        return keys
    if p.startswith("good as given"):
        return []
    for head, invert in (("confirm: G + only ", False), ("confirm: B - only ", True)):
        if p.startswith(head):
            named = _names(p[len(head) :])
            return [k for k in keys if k not in named] if invert else named
    head, sep, rest = p.partition(": G + ")
    if sep and head in ("subset", "complement"):
        return _names(rest)
    return None


def _names(s: str) -> list[str]:
    return [x for x in (y.strip() for y in s.split(",")) if x]


def walk(decisions: Iterable[Any]) -> tuple[list[WalkRow], str]:
    """The bisect steps and its answer line from a recording's Decision events (``[]``, "" when none)."""
    rows, answer = [], ""
    for d in decisions:
        action, reason = getattr(d, "action", ""), getattr(d, "reason", "")
        row = parse_step(action, reason)
        if row is not None:
            rows.append(row)
            continue
        end = parse_end(action, reason)
        if end is not None:
            answer = end[1]
    return rows, answer


def walk_lines(decisions: Iterable[Any]) -> list[str]:
    """The walk as text lines (``replay --headless``); nothing when the session holds no bisect."""
    rows, answer = walk(decisions)
    if not rows:
        return []
    out = [f"bisect walk ({len(rows)} runs):"]
    out += [f"  step {r.step:>2}/~{r.of}  {r.verdict:5}  reproduced {r.reproduced:>5}  {r.purpose}" for r in rows]
    return out + ([f"bisect answer: {answer}"] if answer else [])

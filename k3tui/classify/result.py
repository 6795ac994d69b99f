"""What the classifier says about one log: plain values that scripts and the UI consume.

``to_json`` has exactly the keys issue 4 promises (scripts rely on them) plus issue 13's
``evidence`` and ``confidence`` and the root's ``context``; the extra ``exception_type``
attribute is for Python callers only. Fields are only ever added, with defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .layers import Verdict


class StageMark(NamedTuple):
    """A stage reached: its name, the log line number (1-based), the log's own time."""

    stage: str
    line: int
    time: str | None


class FirstException(NamedTuple):
    """The root failure: its line as printed, where, the full stack as printed, which process."""

    line: str
    line_number: int
    stack: list[str]
    process: str | None
    context: str | None = None
    """The wrapper line the root was unwrapped from (pydantic's header, ``RayTaskError(…)``)."""


@dataclass
class ClassifyResult:
    failed_stage: str = "none"
    """The layer of the first root failure, or ``none``."""
    stages: list[StageMark] = field(default_factory=list)
    first_exception: FirstException | None = None
    oom_root_cause: bool | None = None
    """True: an OOM is the root; False: an OOM only followed another root; None: no OOM."""
    signature: str = ""
    """``stage|Type|normalised message``; empty for a run without failure."""
    advice: str = ""
    exception_type: str = ""
    lines: int = 0
    """Lines read so far."""
    evidence: Verdict | None = None
    """What decided ``failed_stage``: the rule, the log lines it rests on, why in one line."""
    confidence: str = ""
    """``high`` (the root's message or stack), ``medium`` (timeline, wording, markers), ``low``."""
    newest_first: bool = False
    """The log was exported newest first and read in the order it was printed (its line numbers
    are still the file's); for the human report, not a JSON key."""

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` object: exactly the documented keys."""
        fe, ev = self.first_exception, self.evidence
        return {
            "failed_stage": self.failed_stage,
            "stages": [{"stage": s.stage, "line": s.line, "time": s.time} for s in self.stages],
            "first_exception": (
                None
                if fe is None
                else {
                    "line": fe.line,
                    "line_number": fe.line_number,
                    "stack": list(fe.stack),
                    "process": fe.process,
                    "context": fe.context,
                }
            ),
            "oom_root_cause": self.oom_root_cause,
            "signature": self.signature,
            "advice": self.advice,
            "evidence": None if ev is None else {"rule": ev.rule, "lines": list(ev.lines), "why": ev.why},
            "confidence": self.confidence or None,
        }

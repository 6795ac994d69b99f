"""What the classifier says about one log: plain values that scripts and the UI consume.

``to_json`` has exactly the keys issue 4 promises (scripts rely on them); the extra
``exception_type`` attribute is for Python callers only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


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

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` object: exactly the documented keys."""
        fe = self.first_exception
        return {
            "failed_stage": self.failed_stage,
            "stages": [{"stage": s.stage, "line": s.line, "time": s.time} for s in self.stages],
            "first_exception": (
                None
                if fe is None
                else {"line": fe.line, "line_number": fe.line_number, "stack": list(fe.stack), "process": fe.process}
            ),
            "oom_root_cause": self.oom_root_cause,
            "signature": self.signature,
            "advice": self.advice,
        }

"""The stage timeline: which start-up layers a log has reached, and what still to look for.

Markers are literals from ``assets/classify/stages.toml``. Only the markers of stages
not reached yet are looked for, so once the server is up the prefilter searches for no
marker at all; while stages are pending it searches for one gate (``.py:``, carried by
every vLLM logger line) rather than for each marker, plus the few markers printed
without a logger prefix; markers only worth seeing in the log's first lines, which are always read
(an offline engine's progress bars in an excerpt), are never searched for.
"""

from __future__ import annotations

from .lines import Line
from .result import StageMark
from .rules import STAGES, Rules


class Timeline:
    """Stages reached so far, each with its line number and the log's own time."""

    def __init__(self, rules: Rules, head_lines: int) -> None:
        self._rules = rules
        self._head = head_lines
        self._gate = rules.gate.lower()
        self.marks: list[StageMark] = []
        self._max = -1
        self._done = -1
        self._pending: list[tuple[str, int, bool, bool]] = []
        self._unsearched: set[str] = set()
        """Markers never searched for: seen only in the log's first lines, which are always read (so
        the prefilter changes nothing)."""
        self.needles: tuple[str, ...] = ()
        """Lowercase literals the prefilter must find for the pending markers."""
        self._head_seen = 0
        self._head_gated = 0
        self._ungated = False
        """The log's lines carry no logger's prefix (``VLLM_CONFIGURE_LOGGING=0``, an application's own
        logging): markers are looked for in every line, not only in a logger's."""
        self._refresh()

    @property
    def now(self) -> int:
        """Index in STAGES of the furthest stage reached (or begun, after a `done` marker)."""
        return min(max(self._max, self._done), len(STAGES) - 1)

    @property
    def pending(self) -> bool:
        return bool(self._pending)

    def first_line(self, ln: Line) -> list[StageMark]:
        """Stages reached by the log having a first line at all (the container started)."""
        new: list[StageMark] = []
        for st in self._rules.stages:
            if st.at_first_line:
                self._reach(st.index, 1, ln, new)
        return new

    def see(self, ln: Line, n: int, low: str) -> list[StageMark]:
        """Check one line (``low`` is its lowercase text); returns the stages it reaches."""
        new: list[StageMark] = []
        before = self._done
        gate = self._gate in low
        if n <= self._head:
            self._head_seen += 1
            self._head_gated += gate
        logger_line = n <= self._head or gate
        for marker, idx, done, gated in self._pending:
            if (logger_line or not gated) and marker in low and (n <= self._head or marker not in self._unsearched):
                self._reach(idx, n, ln, new)
                if done:
                    self._done = max(self._done, idx + 1)
        if new or self._done != before:
            self._refresh()
        return new

    def reach_behind(self, idx: int, n: int) -> list[StageMark]:
        """Stage ``idx`` reached at line ``n``, read back out of the history (a line the prefilter passed, within
        a crash's look-back window, which the remote prefilter sends too): only when it is further than any
        stage reached and its line after theirs."""
        if idx <= self._max or (self.marks and self.marks[-1].line >= n):
            return []
        self._max = idx
        mark = StageMark(STAGES[idx], n, None)
        self.marks.append(mark)
        self._refresh()
        return [mark]

    def end_of_head(self) -> None:
        """The log's first lines are read: when few of them are a logger's (a third or less), its
        lines carry no prefix, and the markers are looked for in every line from now on."""
        if not self._ungated and self._head_seen >= 10 and 3 * self._head_gated <= self._head_seen:
            self._ungated = True
            self._refresh()

    def _reach(self, idx: int, n: int, ln: Line, new: list[StageMark]) -> None:
        if idx <= self._max:
            return
        self._max = idx
        mark = StageMark(STAGES[idx], n, ln.time)
        self.marks.append(mark)
        new.append(mark)

    def _refresh(self) -> None:
        pending = []
        unsearched: set[str] = set()
        for st in self._rules.stages:
            gated = not self._ungated
            if st.index > self._max:
                pending += [(m.lower(), st.index, False, gated) for m in st.markers]
                pending += [(m.lower(), st.index, False, False) for m in st.plain]
                pending += [(m.lower(), st.index, False, False) for m in st.read]
                unsearched.update(m.lower() for m in st.read)
            if st.index + 1 > self._done:
                pending += [(m.lower(), st.index, True, gated) for m in st.done]
        self._pending = pending
        self._unsearched = unsearched
        needles = [m for m, _, _, gated in pending if not gated and m not in unsearched]
        if any(gated for *_, gated in pending):
            needles.append(self._gate)
        self.needles = tuple(dict.fromkeys(needles))

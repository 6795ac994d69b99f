"""The streaming classifier: feed it a vLLM log in any chunks, ask it what failed first.

Why it is shaped this way:

- **Most lines cost almost nothing.** A server log is mostly INFO floods (NCCL alone
  prints thousands of lines per communicator). Each chunk is lowered once and searched
  in C with ``str.find`` for ONE word, ``rror`` (every ERROR line, every ``…Error:``),
  plus, only while start-up stages are pending, the ``.py:`` of vLLM logger lines;
  lines without them are only counted. Measured on this project's machines: a ``re``
  alternation of ~40 words scans ~15x slower than splitting the chunk into lines, and
  each ``str.find`` pass costs ~0.6x of that split, so every extra word is expensive
  (``bench/bench_classify.py``). What carries no such word (an unprefixed traceback's
  head and frames, a normal stop) is found by looking back (:mod:`.history`).
- **Only while a traceback is open** (or a root waits for its stack) is every line
  parsed, so that its frames are kept; tracebacks are short, so this is rare.
- **Bounded memory**: per process only an open traceback (capped), a partial line
  (capped), seven stage marks and one root. The log itself is never kept.
- **Same answer for any chunking**: which lines get parsed depends only on the state
  left by earlier lines, never on where a chunk ends (a property test checks it).
- **The root is the first failure that is not a consequence**, decided per process after
  demultiplexing; consequence patterns, decoy WARNINGs and a normal stop are data
  (``assets/classify/patterns.toml``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..events import Event, ExceptionFound, RunClassified, StageReached
from .history import History
from .layers import advice_text, decide
from .lines import QUIET_LEVELS, Line, parse
from .result import ClassifyResult, FirstException, StageMark
from .rules import Rules, load_rules
from .signature import make_signature
from .timeline import Timeline
from .traces import STALE_AFTER, TB_HEAD, Trace, opens_trace, rebuild

MAX_LINE = 65536
"""Characters kept of one line; the rest of a longer line is ignored (binary garbage)."""
EMIT_AFTER = 50
"""Lines after a one-line root (no traceback followed) when it is announced anyway."""
HEADER_WINDOW = 50
"""A traceback takes the ERROR line logged at most this many lines before it as its header."""
MAX_TRACES = 32
"""Tracebacks assembled at once (TP=8 x DP plus the API server fit); the oldest is dropped."""
HEAD_LINES = 30
"""The first lines are always parsed in full: excerpts and cut logs start mid-traceback."""


@dataclass(slots=True)
class _Root:
    raw: str
    n: int
    body: str
    type: str
    message: str
    process: str | None
    key: tuple[str, str]
    stage_idx: int
    """The furthest stage reached when the root was printed."""
    stack: list[str] = field(default_factory=list)
    trace: Trace | None = None
    emitted: bool = False
    stage: str | None = None


class Classifier:
    """Streaming classifier of one run's server log.

    Args:
        run: the run id put on every event.
        emit: called with :class:`StageReached` and :class:`ExceptionFound` as soon as
            they are known, and :class:`RunClassified` on :meth:`finish`.
        prefilter: False parses every line (slower; the tests use it to prove the
            prefilter changes nothing).
    """

    def __init__(self, run: str = "", emit: Callable[[Event], None] | None = None, *, prefilter: bool = True) -> None:
        self.run = run
        self._emit = emit
        self._rules: Rules = load_rules()
        self._prefilter = prefilter
        self._n = 0
        self._tail = ""
        self._finished: ClassifyResult | None = None
        self._timeline = Timeline(self._rules, HEAD_LINES)
        self._history = History()
        self._traces: dict[tuple[str, str], Trace] = {}
        self._headers: dict[tuple[str, str], tuple[Line, int]] = {}
        self._root: _Root | None = None
        self._fallback: _Root | None = None
        self._oom_seen = False
        self._stopped = False
        self._always = tuple(a.lower() for a in self._rules.always)
        self._sentinels: tuple[str, ...] = ()
        self._needles: tuple[str, ...] = ()
        self._refresh_sentinels()

    # --- feeding ---------------------------------------------------------------------

    def feed(self, chunk: str) -> None:
        """Feed any piece of the log; a partial last line waits for the next chunk."""
        if self._finished is not None:
            raise RuntimeError("Classifier.feed() after finish()")
        if not chunk:
            return
        buf = self._tail + chunk if self._tail else chunk
        end = buf.rfind("\n") + 1
        if end:
            self._scan(buf, end)
        self._tail = buf[end : end + MAX_LINE] if len(buf) - end > MAX_LINE else buf[end:]

    def feed_line(self, line: str) -> None:
        """Feed one complete line (without its newline)."""
        self.feed(line + "\n")

    def result(self) -> ClassifyResult:
        """The current view (live); does not finish."""
        if self._finished is not None:
            return self._finished
        return self._result()

    def finish(self) -> ClassifyResult:
        """Flush the partial line, close open tracebacks, emit ``RunClassified``, return the answer."""
        if self._finished is not None:
            return self._finished
        if self._tail:
            tail, self._tail = self._tail, ""
            self._scan(tail + "\n", len(tail) + 1)
        for trace in list(self._traces.values()):
            self._close(trace)
        if self._root is None and self._fallback is not None and not self._stopped:
            self._root = self._fallback
        if self._root is not None and not self._root.emitted:
            self._announce(self._root)
        res = self._finished = self._result()
        exc = res.first_exception.line if res.first_exception else ""
        self._send(
            RunClassified(
                run=self.run, failed_stage=res.failed_stage, signature=res.signature, advice=res.advice, exception=exc
            )
        )
        return res

    # --- the fast scan -----------------------------------------------------------------

    def _busy(self) -> bool:
        return bool(self._traces) or (self._root is not None and not self._root.emitted) or not self._prefilter

    def _scan(self, buf: str, end: int) -> None:
        self._history.begin(buf)
        low = buf.lower()
        aligned = len(low) == len(buf)  # lower() never shrinks; a longer copy would shift offsets
        pos = 0
        nexts: dict[str, int] = {}
        while pos < end:
            if not aligned or self._busy() or self._n < HEAD_LINES:
                nl = buf.index("\n", pos, end)
                self._line(buf, pos, nl)
                pos = nl + 1
                continue
            hit = self._next_hit(low, pos, end, nexts)
            if hit < 0:
                self._n += buf.count("\n", pos, end)
                break
            start = buf.rfind("\n", pos, hit) + 1 or pos
            self._n += buf.count("\n", pos, start)
            nl = buf.index("\n", hit, end)
            self._line(buf, start, nl)
            pos = nl + 1
        self._history.end(end)

    def _next_hit(self, buf: str, pos: int, end: int, nexts: dict[str, int]) -> int:
        """Index of the first sentinel at or after pos, or -1; finds are cached per sentinel."""
        best = -1
        for s in self._sentinels:
            i = nexts.get(s, -2)
            if i == -2 or (i != -1 and i < pos):
                i = nexts[s] = buf.find(s, pos, end)
            if i != -1 and (best < 0 or i < best):
                best = i
        return best

    # --- one line ----------------------------------------------------------------------

    def _line(self, buf: str, start: int, nl: int) -> None:
        self._n += 1
        n = self._n
        raw = buf[start : min(nl, start + MAX_LINE)]
        self._history.at(start)
        ln = parse(raw)
        if n == 1:
            self._announce_stages(self._timeline.first_line(ln), ln)
        self._expire(n)
        trace = self._traces.get(ln.key)
        if trace is None or not self._continue(trace, ln, n):
            low = raw.lower()
            if n <= HEAD_LINES or any(s in low for s in self._sentinels):
                self._other(ln, n, low)
        self._maybe_announce(ln, n)

    def _continue(self, trace: Trace, ln: Line, n: int) -> bool:
        """Feed a line to its process's open trace; False when the line is not part of it."""
        what = trace.step(ln, n)
        if what == "exception":
            self._exception_line(trace, ln, n)
            return True
        if what in ("frame", "end"):
            if what == "end":
                self._close(trace)
            return True
        if what == "other":
            self._close(trace)
        return False

    def _other(self, ln: Line, n: int, low: str) -> None:
        """A relevant line outside any traceback: a trace start, a root, an OOM, a marker."""
        if opens_trace(ln.body):
            self._open(ln, n)
            return
        if ln.body[:1].isspace():
            return  # code or a continuation printed outside any traceback we follow
        if (n <= HEAD_LINES or any(s in low for s in self._always)) and ln.level not in QUIET_LEVELS:
            self._error_line(ln, n)
        if self._timeline.pending:
            self._announce_stages(self._timeline.see(ln, n, low), ln)

    def _error_line(self, ln: Line, n: int) -> None:
        rules = self._rules
        if rules.oom.search(ln.body):
            self._oom_seen = True
        if ln.level == "WARN":  # NCCL WARN: evidence, never the root (Python raises it)
            return
        m = rules.exception.match(ln.body)
        if m and ln.level is None and ln.key not in self._traces:
            text = self._history.since(TB_HEAD)
            trace = rebuild(text, ln, n, MAX_LINE) if text else None
            if trace is not None:  # an unprefixed traceback: its frames carried no sentinel
                self._traces[ln.key] = trace
                self._continue(trace, ln, n)
                return
        if m:
            self._candidate(ln, n, m["type"], m["msg"] if m["msg"] is not None else (m["rmsg"] or ""))
        else:
            rule = next((r for r in rules.roots if r.match.search(ln.body)), None)
            if rule is not None:
                self._candidate(ln, n, rule.type, ln.body)
        if ln.level in ("ERROR", "CRITICAL"):
            self._headers[ln.key] = (ln, n)
            if len(self._headers) > 256:
                self._headers.clear()

    # --- traces --------------------------------------------------------------------------

    def _open(self, ln: Line, n: int) -> None:
        quiet = ln.level in QUIET_LEVELS
        own_header = not ln.body.startswith(("Traceback", " "))
        if own_header and not quiet:
            self._error_line(ln, n)  # V0 workers: "Exception in worker …: <error>, Traceback (…):"
        header = self._headers.pop(ln.key, None)
        trace = Trace(ln.key, ln.process, n, quiet=quiet, level=ln.level)
        if own_header:
            trace.header = (ln, n)
        elif header is not None and n - header[1] <= HEADER_WINDOW:
            trace.header = header
            trace.add(header[0].raw, header[1])
        trace.add(ln.raw, n)
        trace.frames = 0 if ln.body.endswith("Traceback (most recent call last):") else 1
        self._traces[ln.key] = trace
        if len(self._traces) > MAX_TRACES:
            self._close(min(self._traces.values(), key=lambda t: t.last))
        root = self._root
        if root and not root.emitted and root.trace is None and root.key == ln.key and n - root.n <= HEADER_WINDOW:
            root.trace, root.stack = trace, trace.lines

    def _exception_line(self, trace: Trace, ln: Line, n: int) -> None:
        body = ln.body
        if self._rules.oom.search(body) and not trace.quiet:
            self._oom_seen = True
        if trace.quiet:
            return
        m = self._rules.exception.match(body)
        if m:
            typ, msg = m["type"], (m["msg"] if m["msg"] is not None else (m["rmsg"] or ""))
        else:
            typ, _, msg = body.partition(": ") if ": " in body else ("", "", body)
        if self._root is None:
            self._candidate(ln, n, typ, msg, trace)

    def _close(self, trace: Trace) -> None:
        if trace.mode == "tb" and not trace.quiet and self._fallback is None:
            self._fallback = self._truncated_root(trace)
        trace.mode = "closed"
        self._traces.pop(trace.key, None)

    def _truncated_root(self, trace: Trace) -> _Root | None:
        """A traceback cut before its exception line: its ERROR header is the best root left."""
        if trace.header is None or self._rules.consequence.search(trace.header[0].body):
            return None
        head, hn = trace.header
        return _Root(
            head.raw, hn, head.body, "", head.body, trace.process, trace.key, self._timeline.now, trace.lines, trace
        )

    def _expire(self, n: int) -> None:
        for trace in [t for t in self._traces.values() if n - t.last > STALE_AFTER]:
            self._close(trace)

    # --- roots -----------------------------------------------------------------------------

    def _candidate(self, ln: Line, n: int, typ: str, msg: str, trace: Trace | None = None) -> None:
        if self._root is not None or self._stopped:
            return
        if self._rules.consequence.search(ln.body):
            return
        if self._stop_before():
            self._stopped = True
            return
        root = _Root(ln.raw, n, ln.body, typ, msg, ln.process, ln.key, self._timeline.now)
        if trace is not None:
            root.trace, root.stack = trace, trace.lines
        else:
            root.stack = [ln.raw]
        if self._rules.oom.search(ln.body):
            self._oom_seen = True
        self._root = root

    def _maybe_announce(self, ln: Line, n: int) -> None:
        root = self._root
        if root is None or root.emitted:
            return
        if root.trace is not None:
            if root.trace.mode != "tb":
                self._announce(root)
        elif n - root.n >= EMIT_AFTER or (n > root.n and ln.key == root.key):
            self._announce(root)

    def _announce(self, root: _Root) -> None:
        root.emitted = True
        root.stage = self._stage_of(root)
        self._send(
            ExceptionFound(
                run=self.run,
                stage=root.stage,
                line=root.raw,
                line_number=root.n,
                stack=list(root.stack),
                process=root.process,
                signature=make_signature(root.stage, root.type, root.message),
                oom_root_cause=self._oom_flag(),
            )
        )

    def _oom_flag(self) -> bool | None:
        if self._root is not None and self._rules.oom.search(self._root.body):
            return True
        return False if self._oom_seen else None

    def _stage_of(self, root: _Root) -> str:
        return decide(self._rules, root.body, root.stack, root.stage_idx)

    def _stop_before(self) -> bool:
        """Did the operator stop the server (``shutdown triggered``) shortly before this line?"""
        return any(self._history.since(s) is not None for s in self._rules.normal_stop)

    # --- stages ------------------------------------------------------------------------------

    def _announce_stages(self, marks: list[StageMark], ln: Line) -> None:
        for m in marks:
            self._send(StageReached(run=self.run, stage=m.stage, line=m.line, log_time=m.time, text=ln.raw[:300]))
        if self._timeline.needles is not self._needles:
            self._refresh_sentinels()

    def _refresh_sentinels(self) -> None:
        self._needles = self._timeline.needles
        self._sentinels = tuple(dict.fromkeys([*self._always, *self._needles]))

    # --- output --------------------------------------------------------------------------------

    def _send(self, event: Event) -> None:
        if self._emit is not None:
            self._emit(event)

    def _result(self) -> ClassifyResult:
        root = self._root
        res = ClassifyResult(stages=list(self._timeline.marks), lines=self._n)
        if root is None:
            res.oom_root_cause = None
            res.advice = advice_text(self._rules, "none")
            return res
        stage = root.stage or self._stage_of(root)
        res.failed_stage = stage
        res.first_exception = FirstException(root.raw, root.n, list(root.stack), root.process)
        res.oom_root_cause = self._oom_flag()
        res.exception_type = root.type
        res.signature = make_signature(stage, root.type, root.message)
        res.advice = advice_text(self._rules, stage)
        return res

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
  parsed, so that its frames are kept; tracebacks are short, so this is rare. Once a
  traceback logged at ERROR level (its lines spell ``ERROR``) has printed its exception
  line, it no longer counts: every line it may still take carries ``rror`` and is found
  anyway, so a flood after a logged consequence is not parsed while the traceback waits
  for a continuation line or goes stale.
- **Bounded memory**: per process only an open traceback (capped), a partial line
  (capped), seven stage marks and one root. The log itself is never kept.
- **Same answer for any chunking**: which lines get parsed depends only on the state
  left by earlier lines, never on where a chunk ends (a property test checks it).
- **The root is the first failure that is not a consequence**, decided per process after
  demultiplexing; consequence patterns, decoy WARNINGs and a normal stop are data
  (``assets/classify/patterns.toml``). Some roots take more than one line to recognise:
  a WRAPPER (``RayTaskError(X)``, ``CalledProcessError``, pydantic's header) waits for
  the inner line it wraps; a native crash or a kill prints no traceback and often no
  sentinel word, so it is found by looking back from the line it causes (``Fatal Python
  error: Aborted``, ``died unexpectedly``, ``EngineDeadError``); a broken ``vllm._C`` is
  only a WARNING, the root once anything fails after it.
- **The stage is decided by evidence** (:mod:`.layers`): the root's message and stack
  first, then when it came, then the markers, then its type; the result says which.
- **Not a vLLM log** (``/etc/passwd``): no root, no marker, no ``vllm`` anywhere gives
  ``failed_stage = "unknown"`` instead of a healthy ``none``.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..events import Event, ExceptionFound, RunClassified, StageReached
from .history import History
from .layers import Evidence, Verdict, advice_text, decide, furthest
from .lines import (
    FLAT_MIN,
    QUIET_LEVELS,
    SOURCE_PREFIX,
    Line,
    envelope,
    escaped_lines,
    ipython_type,
    opens_log_line,
    parse,
    unflatten,
    unglue,
    unjson,
)
from .result import ClassifyResult, FirstException, StageMark
from .rules import STAGES, Rules, Wrapper, load_rules
from .signature import make_signature
from .timeline import Timeline
from .traces import (
    EMPTY_MESSAGE,
    EXC_TYPE,
    MAX_TRACE_LINES,
    STALE_AFTER,
    TB_HEAD,
    Trace,
    ends_trace,
    frames,
    from_program_start,
    opens_trace,
    rebuild,
)

MAX_LINE = 65536
"""Characters kept of one line; the rest of a longer line is ignored (binary garbage)."""
QUIET_CHAIN_GAP = 4
"""Lines from a survived traceback's end to the head of one chained to it (blank, 'During handling …', blank, head)."""
MAX_BETWEEN = 8
"""Lines of other processes (or a workload manager's) that may land inside that gap, or inside the gap between a
root's traceback and the one chained to it, without cutting the chain: more, and the chain is over (a flood of
another process's lines never keeps every line read)."""
EMIT_AFTER = 50
"""Lines after a one-line root (no traceback followed) when it is announced anyway."""
TYPED_AGAIN = 2000
"""Lines within which a message printed without its type may be followed by its typed exception line."""
TYPED_MIN = 24
"""Characters of a message that make it the same failure's (not a short, common one such as ``'text'``)."""
HEADER_WINDOW = 50
"""A traceback takes the ERROR line logged at most this many lines before it as its header."""
MAX_TRACES = 32
"""Tracebacks assembled at once (TP=8 x DP plus the API server fit); the oldest is dropped."""
HEAD_LINES = 30
"""The first lines are always parsed in full: excerpts and cut logs start mid-traceback."""
MAX_SOURCES = 16
"""Shapes of sources' names learnt at most (a job's tasks, a pdsh run's hosts, pods: one shape each)."""
WRAP_PROBE = 400
"""A hard wrap at a terminal's width is looked for in the log's first lines (pastes are short)."""
WRAP_MIN = 60
"""Narrower than any terminal a log is copied from."""
WRAP_WINDOW = 200
"""Lines a wrapper root waits for the inner root it wraps."""
CRASH_LOOKBACK = 100
"""Lines looked back from a crash's consequence for the native crash or kill line."""
CRASH_CHARS = 1 << 16
"""Characters of that look-back."""
_BARE = Wrapper(re.compile(r"$^"), "chained")
"""A root exception without a message: if Python chains another one to it ("The above
exception was the direct cause …"), that one, with the message, is reported (the bare one
stays as its context); otherwise the bare one stays the root."""
MESSAGE_BELOW = 10
"""Lines under an exception line with an empty first line of message where its message is looked for."""


def _states(body: str) -> bool:
    """A line that states a failure in words: an error word, mostly letters (no banner of dashes), not a
    label ending in a colon."""
    if not body or body.endswith(":") or not _FAILURE_WORDS.search(body):
        return False
    solid = body.replace(" ", "")
    return 2 * sum(c.isalpha() for c in solid) >= len(solid)


_ERROR_LABEL = re.compile(r"^\s*(?:Error|ERROR|Error message|Error details):\s*$")
"""A line that only says an error follows (a wrapper's ``print(f"Error:\\n{e}")``, Unsloth's retry): the
next line is its message."""
_FRAME_TAIL = re.compile(r'\.py"?, line \d+,? in [\w<>.]+\s*$')
"""A traceback frame's line, its start cut (``…/config.py", line 136, in _verify_load_format``): never a message."""
_LOG_INSIDE = re.compile(r"pid=\d+\)|\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) +\d\d-\d\d \d\d:\d\d")
"""A logger's prefix inside a line (one whose start was cut): a log's line, not a message."""
_FAILURE_WORDS = re.compile(
    r"(?i)\b(?:error|fail\w*|cannot|can.t|unable|invalid|exceeds?|must|does not|no such|only supported|requires?|incompatible"
    r"|not (?:supported|allowed|found|available|defined|enough|compatible))\b"
)
_CHAINED = re.compile(r"(?:The above exception was the direct cause|During handling of the above exception)")
_WORKLOAD = re.compile(r"^(?:srun|slurmstepd|salloc|sbatch)(?:-[\w.\-]+)?(?:\[\d+\])?: ")
"""A line of Slurm's own (srun, slurmstepd) in a job's output, wherever it comes."""
_FIELD = re.compile(r"^[A-Za-z_][\w.\[\]]*$")
"""The field a pydantic error names on its own line, between its header and its ``Input should …``."""
_MID_SENTENCE = re.compile(r"""(?:,|\b[a-z]+|\w['"])$""")
"""A message line that stops mid-sentence: a comma, a lowercase word or a quoted name last (``module 'vllm.x'`` before ``has no attribute 'Y'``; no full stop, no bracket)."""
_GOES_ON = re.compile(r"[a-z0-9('_]")
"""A line that continues a sentence: a lowercase word, a number, a bracket, a quoted name first (not a new message)."""
MESSAGE_GOES_ON = 3
"""At most so many lines of a one-line root's wrapped message are read as its own."""
_PY_WARNING = re.compile(r"\b[A-Z]\w*Warning: ")
"""Python's ``warnings`` output (torchvision's 'Failed to load image Python extension' decoy)."""
_PY_WARNING_HEAD = re.compile(r"\b[A-Z]\w*Warning:\s*$")
"""Python's ``warnings`` line whose message begins on the next line (``…/_auth.py:94: UserWarning: ``)."""
_TORCH_TAIL = re.compile(
    r"^\s*(?:(?:CUDA|HIP) kernel errors might be asynchronously reported|For debugging consider passing "
    r"(?:CUDA_LAUNCH_BLOCKING|AMD_SERIALIZE_KERNEL)|Compile with .TORCH_USE_(?:CUDA|HIP)_DSA.)"
)
"""The advice torch prints under a CUDA or HIP error, line by line: logged line by line (V0's
``engine.py:381``), the error's own line above it is the header of the traceback that follows."""
_PYTEST_E = re.compile(r"E(?: {2,}(?=\S)| *$)")
"""pytest's report of a failed test puts ``E`` and the source's indentation before each line of the
exception it caught (``E       IndexError: list index out of range``)."""
_PYTEST_AT = re.compile(r"(?P<path>[^\s:]+\.py):\d+: (?P<type>[A-Za-z_][\w.]*)\s*$")
"""…then where it was raised, after a blank line: ``../vllm/v1/core/sched/scheduler.py:558: AssertionError``."""
_TEST_FILE = re.compile(r"(?:^|/)(?:tests?/|test_[^/]*\.py$|[^/]*_test\.py$|conftest\.py$)")
"""A test suite's own file: an exception raised there is the test's verdict (an ``assert`` that a value
is close), not a failure of the code under test."""
PYTEST_AT_WITHIN = 3
"""Lines after a pytest ``E`` line within which its location line is looked for."""
_PYTEST_FAILED = re.compile(r"FAILED \S+ - (?=[A-Za-z_][\w.]*: )")
"""pytest's short summary of a failed test, ``FAILED tests/x.py::test_y[p] - AssertionError: msg``."""
_QUOTE_REST = re.compile(r"""([a-z0-9(_'][^`"”]*)[`"”]""")
"""The rest of a quoted message a wrap moved to the next line, up to the closing mark (a lowercase word,
a number, a name first: the sentence goes on)."""
_IGNORED = "Exception ignored in"
_CUSTOMIZE = ("Error in sitecustomize", "Error in usercustomize")
"""CPython's site module: a ``sitecustomize`` that raised, reported (``Error in sitecustomize; set
PYTHONVERBOSE for traceback:`` then ``Type: msg``) and ignored: the process goes on without it."""
_LOGGING_FRAME = re.compile(r'File "[^"]*/logging/__init__\.py", line \d+, in ')
"""The first frame of a traceback Python's logging printed for a record it could not emit."""
HANG_TAIL = 3
"""Lines a log may go on after its last ``[hang]`` line and still end with it (blank lines, a paste's fence)."""
_SERVER_STOPPING = "Shutting down"
"""The web server's first word of its shutdown (uvicorn's ``Shutting down``, vLLM's ``Shutting down FastAPI
HTTP server.``): an output handler failing after it is the stop's doing, logged the same way."""
_ARG_ERRORS = ("ValueError", "TypeError")
"""What vLLM's checks of a call's arguments raise (an offline call refused: ``_call_refused``)."""
_AT_EXIT = re.compile(r"Python is likely shutting down|(?:after|at|during) interpreter shutdown")
"""CPython's words for an exception raised while the interpreter exits (``sys.meta_path is None, Python
is likely shutting down``, ``cannot schedule new futures after interpreter shutdown``): noise at exit,
as what ``Exception ignored in`` reports, never the run's failure."""
_INLINE_EXC = re.compile(
    rf"(?<![\w.`])`+ ?(?P<type>{EXC_TYPE})"
    r"(?:: ?(?P<msg>[^`]*[^\s`])(?:`|\s*$)|\((?P<rmsg>[^`]*\S)\)`)"
    rf"|(?<![\w.])[\"“](?P<qtype>{EXC_TYPE}): ?(?P<qmsg>[^\"”]*[^\s\"”])(?:[\"”]|$)"
    rf"|(?<=[a-z,:>] )(?P<ptype>{EXC_TYPE}): (?P<pmsg>\S.*\S)"
)
"""An exception with its message (``Type: msg`` or its repr, ``Type("msg")``) quoted inline in a
reporter's sentence (the closing mark may be lost to the line's wrap), in markdown's backticks (``You're seeing: `OSError: [Errno 98] Address already in use` ``, "times out with the following error
```torch.distributed.DistStoreError: Timed out …```")."""
_MAY_CAUSE = re.compile(
    r"(?i)\b(?:(?:can|could|may|might) (?:\w+ )?(?:cause|lead to|result in|trigger)|to (?:avoid|prevent)|e\.g\.|for example)"
    r"\b[^.!?]{0,60}$"
)
"""A sentence that names an exception as what COULD happen (a warning's advice: ``This can cause fd limit
errors like `OSError: [Errno 24] Too many open files` ``): no report of a failure. ("It will raise X", "leads
to errors like X" report what happened, and stay roots.)"""
_CJK_EXC = re.compile(
    rf"(?<=[\u3000-\u30ff\u3400-\u9fff\uac00-\ud7af\uff00-\uffef])(?:[:：]? ?\[?[\w.\-/]+\.py:\d+\] ?)?(?P<type>{EXC_TYPE})"
    r"(?:: ?(?P<msg>.*\S)|\((?P<rmsg>.*\S)\))"
)
"""An exception glued to a sentence in a language written without spaces (``…发送图片报错ValueError:
Attempted to assign …``, after ``：`` or a word): quoted inline as ``_INLINE_EXC`` is, to the line's end."""
_VLLM_LINE = re.compile(
    r"\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w/.\-]+\.py:\d+\]"
    r"|^\[[\w/.\-]+\.py:\d+\] \S"  # a paste that kept only the logger's location: [backend_xgrammar.py:158] …
    r"|^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) +\[?[\w/.\-]+\.py:\d+\]? \S"  # … or its level too: WARNING x.py:137 …
)
"""vLLM's own logger prefix anywhere in a line (an excerpt quoting one line inline in prose)."""
NCCL_NEAR = 20
"""Lines after an NCCL WARN reporting a failure within which a cut traceback is its report."""
_NCCL_DETAILS = re.compile(r"NCCL_DEBUG=WARN for details")
"""torch's NCCL error (``NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)``): what failed is in NCCL's WARN line."""
_NCCL_FAILURE = re.compile(r"(?i)\b(?:fail(?:ure|ed)?|error|duplicate GPU|invalid usage|abort(?:ed|ing)?)\b")
"""An NCCL WARN line that reports a failure (not a notice such as a tuning hint): an error, and the
misuses NCCL refuses to go on with (two ranks on one GPU: ``Duplicate GPU detected``)."""
_CRASH_TYPES = frozenset({"FatalError", "WorkerDied"})
_CANCELLED_AT = re.compile(r" CANCELLED AT (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)")
"""When the workload manager cancelled a job or step (slurmstepd's ``*** JOB 7 ON n1 CANCELLED AT 2026-12-06T23:19:57``)."""
_CLOCK = re.compile(r"(?:\d{4}-)?(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)")
KILL_REACH = 300
"""Seconds after a cancel within which a process's death is its doing (Slurm's KillWait is 30 s by default,
a server's shutdown takes some more)."""


def _interleaved(ln: Line, key: tuple[str, str]) -> bool:
    """Is ``ln`` another writer's line among process ``key``'s: another process's, or the workload manager's report
    (srun's may land anywhere, with no process prefix of its own)?"""
    return ln.key != key or _WORKLOAD.match(ln.body) is not None


def _clock(time: str | None) -> int | None:
    """Seconds since the start of a year of a log's time (vLLM's ``12-06 23:19:59``, ISO's with its year);
    None when it has none (a year's turn is not worth more)."""
    if time is None or (m := _CLOCK.match(time)) is None:
        return None
    month, day, hour, minute, second = (int(x) for x in m.groups())
    return (((month * 31 + day) * 24 + hour) * 60 + minute) * 60 + second


_CPP_STACK = "Exception raised from "
"""torch's C++ stack under a message (``Exception raised from recvBytes at …Utils.hpp:682``): the
message above it (often a warning) is what it belongs to, never a native error of its own."""
_CPP_FRAME0 = "frame #0: c10::Error::Error("
"""The first frame of that stack: a ``c10::Error`` was thrown (its message two lines up)."""
_CPP_REPORT = re.compile(r"(?i)\b(?:fail(?:ed|ure|s)?|errors?|timed out|refused|reset|closed|out of memory)\b")
"""Words of a C++ exception's message that report a failure (``recvValue failed on SocketImpl(…)``, an
AOTInductor kernel's ``Exception in aoti_torch: CUDA out of memory``)."""
_CPP_RETRY = re.compile(r"(?i)\b(?:will retry|retrying)\b")
"""A message that says torch tries again (a rendezvous waiting for its peers): a notice, not a failure."""
_IN_FLAG = re.compile(r"(?:^|[\s=\"'`(\[])--?[\w.-]*\Z")
"""The text before a talk word when the word is inside a command-line flag (``--disable-log-requests``,
``--enable-chunked-prefill``): what the command configures, not what was going on."""
_CPP_AT_SHUTDOWN = re.compile(r'Failed to check the "should dump" flag on TCPStore')
"""torch's NCCL heartbeat monitor finding the store's server gone (``(maybe TCPStore server has shut down too
early), with error: Broken pipe``): every rank prints it, with the socket's failure after it, when the ranks
stop after the first one (the store's host) has: a shutdown's noise, not a failure."""


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
    numbers: list[int] = field(default_factory=list)
    trace: Trace | None = None
    emitted: bool = False
    stage: str | None = None
    marks: list[tuple[str, int]] = field(default_factory=list)
    """The stages reached when the root was printed."""
    header: tuple[str, int] | None = None
    context: str | None = None
    """The wrapper line this root was unwrapped from (pydantic's header, RayTaskError(…))."""
    wrap: Wrapper | None = None
    """Set while this root is a wrapper waiting for the line it wraps."""
    dump: bool = False
    """A faulthandler dump follows (``Fatal Python error``): its lines join the stack."""
    chained: bool = False
    """Python printed ``The above exception …`` after this wrapper: what follows is not the
    subprocess's own traceback but a new exception (only another wrapper takes over)."""
    chain_borrow: bool = False
    """A one-line root Python chained another exception to: that one's stack is its evidence."""
    borrowed: list[str] = field(default_factory=list)
    """A native crash's stage evidence: the traceback the same incident printed next."""
    cut: bool = False
    """A traceback cut before its exception line: its last frame is not where it failed."""
    borrowed_numbers: list[int] = field(default_factory=list)
    part: int = 0
    """Which part of its line the root is, when a flattened paste was split (0: the first or only)."""
    survived: bool = False
    """An exception the code that logged it went on after (a plugin that did not load): the root only if
    what fails later is its doing (no platform), or nothing does before the end of a log that never got ready."""
    verdict: Verdict | None = None
    outer: list[Trace] = field(default_factory=list)
    """The tracebacks Python chained after this root's own (``The above exception was the direct
    cause …``, ``During handling …``), innermost first: their frames are the callers of the root's
    frames (the engine's busy loop around a collective that timed out), evidence of its stage."""
    chain_at: int = 0
    """The line of the last chain sentence seen after this root's traceback (0: none)."""
    chain_skipped: int = 0
    """Other writers' lines (another process's, srun's) printed after the root's line or traceback (or its last
    chained one) and before the chained head: not in the gap that ties them (up to MAX_BETWEEN)."""
    during: bool = False
    """That sentence was ``During handling of the above exception …``, not ``The above exception was the direct cause …``."""
    handling: list[Trace] = field(default_factory=list)
    """Those of ``outer`` chained by ``During handling …`` (see :func:`_callers`)."""
    goes_on: int = 0
    """Lines a paste wrapped a one-line root's message onto (its stage evidence, not its line)."""
    following: bool = True
    """Still watching for a chained traceback after this root's (every line is read meanwhile:
    the chain sentence carries no prefilter word). The root is announced without waiting for
    it; only the final verdict uses the callers' frames."""
    pytest: bool = False
    """Read from a pytest ``E`` line: held until pytest says where it was raised (see ``_PYTEST_AT``)."""
    wrapped: bool = False
    """A quote in a sentence that the line's wrap cut: the next line holds the rest of its message."""


BORROW_WITHIN = 5
"""Lines after a one-line root (no traceback of its own) within which the same process's next
traceback is taken as its stage evidence: V0's ``Engine iteration timed out`` is followed at once
by the ``Engine background task failed`` traceback of the step that hung."""
MAX_CHAIN = 4
"""Chained tracebacks followed after a root's own (Python chains rarely go deeper)."""


def _continues(cut: str, line: str) -> bool:
    """Could ``line`` be the rest of ``cut``, a line a hard wrap cut at its width? Not when ``cut``
    ends in spaces or a box's border after one (a padded line, a rich panel's), nor when ``line`` is blank,
    indented (a traceback's code), starts the way a log's line, a traceback or a frame starts, or
    starts as ``cut`` does (the same line repeated, a longer number in it)."""
    body = line.lstrip(" \t").rstrip("\r")
    end = cut.rstrip("\r")[-1:]
    padded = cut.rstrip("\r").endswith("  ") or (end in "│┃|║" and cut.rstrip("\r")[-2:-1] == " ")
    if not body or not end or padded or line.startswith(("  ", "\t")):
        return False
    if (end.isalnum() or end in "._") and _PIECE_OF_NAME.match(line):
        return True  # the cut fell inside a dotted name or a word: "torch.Out" + "OfMemoryError: …"
    return not (body.startswith((TB_HEAD, 'File "', "```")) or opens_log_line(body) or line[:8] == cut[:8])


_INDENTED_KEY = re.compile(r" +[^\d\s]")
"""An indented line that does not start with a number (a padded task number is ``srun --label``'s)."""
_EXCEPTION_START = re.compile(EXC_TYPE + r"(?::|\(|\s*$)")
"""An exception's line: after a would-be source name, a value's text as likely as a source's line."""
_PIECE_OF_NAME = re.compile(r"[\w.]*(?:Error|Exception|Exit|Interrupt|Failure|Fault|Timeout)(?::|$)", re.ASCII)
"""The rest of an exception's name a cut left (``OfMemoryError: …``, ``_safetensors_rust.SafetensorError: …``)."""


_FIND_FROM = 8
"""Needles at least this long are searched for with ``str.find`` (measured: ``bench/README.md``)."""


@functools.cache
def _finder(needle: str) -> Callable[[str, int, int], re.Match[str] | None] | None:
    """How the prefilter searches a chunk for ``needle``: a short one (``rror``, the ``.py:`` gate) by a
    compiled literal pattern, whose scan for its first character runs about twice as fast as ``str.find``
    on log text (find's skip table of a 4-character needle aliases the digits and letters a log is full
    of); a long one (a marker's words) by ``str.find`` (None), which skips by its length."""
    return re.compile(re.escape(needle)).search if len(needle) < _FIND_FROM else None


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
        self._native: _Root | None = None
        """The first native library's error line (no Python exception): the root when nothing else is."""
        self._quiet_chain: dict[tuple[str, str], int] = {}
        """Per process, the line that chained a new traceback to a survived (quiet) one."""
        self._quiet_skipped: dict[tuple[str, str], int] = {}
        """Per process, other writers' lines that landed in that gap (not counted in it, up to MAX_BETWEEN)."""
        self._chain_gap_until = 0
        """Up to this line every line is read: a survived traceback's chain may still come (and srun's lines
        between its end and the chained head must be seen to be left out of the gap)."""
        self._plugin = False
        """A platform without vllm._C (a plugin's, TPU) was said to be in use."""
        self._named: _Root | None = None
        """A head line with no logger's prefix that states a failure naming one layer: the root when nothing else is."""
        self._phrase: _Root | None = None
        """A head line of prose quoting a failure's words in a code span (no exception's type with them): the
        root only when nothing else is, after a quoted exception (``_named``) too."""
        self._oom_seen = False
        self._stopped = False
        self._relaunch_at: int | None = None
        """The line where the server was launched again after the operator's last stop (``_relaunched``)."""
        self._relaunch_marks: list[tuple[str, int]] = []
        """The stages the relaunched run's start-up reached (name, line), read back from the history."""
        self._relaunch_now = (0, 0)
        """The furthest stage (or begun, after a stage's closing line) it reached, and up to which line it was read."""
        self._warning: _Root | None = None
        self._step_cancelled: _Root | None = None
        """The workload manager's cancel of a start-up: the root at the end if nothing else failed."""
        self._looked_back = -CRASH_LOOKBACK
        self._ended = False
        self._teardown: _Root | None = None
        """The client's 'engine core died' note, waiting for a failure after it to be the root."""
        self._serving_after: int | None = None
        """The first line after the root saying the engine had been serving (an EngineDeadError)."""
        self._loop_failed_after: int | None = None
        """The first line after the root where the engine core says its busy loop failed."""
        self._unexplained: _Root | None = None
        """The first "start-up failed, see above" consequence: the root left when above holds none
        (a worker SIGKILLed while starting prints nothing of its own)."""
        self._dead: _Root | None = None
        """The first report of an engine dead under a request in flight (EngineDeadError): the root when
        nothing else is (an excerpt that kept only the front end's report)."""
        self._hangs = self._rules.hang_needles
        self._hang: list[int] = []
        """The lines of the last ``[hang]`` lines read (a server waiting on a part that never answers)."""
        self._hang_device = False
        """The last ``[hang]`` line read waits for the accelerators themselves (its ``device`` needles)."""
        self._part = 0
        """The part of the current line being read, when a flattened paste was split."""
        self._ready_part = 0
        """The part of its line the API's ready marker was read in."""
        self._followed = False
        """A logger's line came after line 1 within the first lines (every one of them is read)."""
        self._block = 0
        """Spaces a paste put before every line of the block being read (a markdown code block by
        indentation, a list item, a whole log indented): learnt from the first line of the log or after
        a blank line, lowered by a less indented line, ended by a line at the left edge."""
        self._blank = True
        """The last line read was blank (or none was read yet): an indented line now starts a block."""
        self._dedent = 0
        """Spaces (4 or more) before every line of the log's first lines: a whole log pasted indented."""
        self._py_warning_at = -10
        """The line of a Python warning whose message is on the lines after it (a decoy's text, not a root)."""
        self._labelled = False
        """The last line read was a bare ``Error:``: this one is the error's message (read even without a
        sentinel)."""
        self._double = False
        """The log was pasted double-spaced (a blank line after each line): its blank lines are not read."""
        self._cancelled: _Root | None = None
        """A traceback's CancelledError, kept aside: the root only if Python chains a timeout to it."""
        self._cancel_until = 0
        """The last line where the chain that decides it may still come."""
        self._nccl_warn: _Root | None = None
        """The first NCCL WARN line reporting a failure: the root only if no other line is one."""
        self._nccl_said: _Root | None = None
        """The last NCCL WARN line before any root: what torch's ``NCCL error: … NCCL_DEBUG=WARN`` refers to."""
        self._vllm = False
        """Seen the word vllm anywhere (lines without a root or marker may still be a vLLM log)."""
        self._python = False
        """A Python traceback or exception line was read, even one that is no failure (a request refused,
        an exception ignored at exit): the text is a program's log, read as the vLLM log it was given as."""
        self._pytest_e = 0
        """The last line pytest marked ``E`` (0: none yet)."""
        self._said: dict[tuple[str, str], tuple[Line, int] | None] = {}
        """Per process, the ERROR line logged before the one in ``_headers`` (see ``_reason``)."""
        self._wrap = 0
        """The width a paste hard-wrapped its lines at (a terminal's copy, a pager's, a web form's),
        0 if none: a line cut at exactly that width is joined with the line it continues."""
        self._wrap_probe: list[tuple[int, bool]] = []
        """(length, the next line may be its rest) of the first lines, while the width is looked for."""
        self._wrap_last = ""
        self._prefixes: list[re.Pattern[str]] = []
        """Sources' names a multiplexing tool put before each line (``srun --label``, ``pdsh``, ``stern``)."""
        self._envelopes: dict[str, int] | None = {}
        """Envelopes seen around a vLLM line in the log's first lines (shape: lines), while looked for:
        one seen on two lines is learnt as a source's name is (see ``lines.envelope``)."""
        self._envelope_lines = 0
        self._talk_lines = 0
        self._talk: dict[str, str] = {}
        """The first server's word and start-up's word in the log's first lines ("serving", "startup":
        what a root that nothing else places is decided by, see ``layers.Evidence.talk``)."""
        self._joins: list[tuple[int, int]] = []
        """(line, pieces after it so far) of each line joined from a hard wrap's pieces: lines are
        counted as the log printed them, and reported by the file's numbering (:meth:`_physical`)."""
        self._always = tuple(a.lower() for a in self._rules.always)
        self._recognise = tuple(w.lower() for w in self._rules.recognise)
        self._sentinels: tuple[str, ...] = ()
        self._finders: tuple[tuple[str, Callable[[str, int, int], re.Match[str] | None] | None], ...] = ()
        """Each sentinel with how it is searched for (see :func:`_finder`)."""
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
        self._history.at_end()  # before closing: a cut traceback looks back for a stop from the end
        if (self._relaunch_at is None or self._stopped) and self._relaunched(self._n + 1, self._since_stop()):
            self._stopped = False  # the server was launched again after the operator's last stop
        for trace in list(self._traces.values()):
            self._close(trace, at_end=True)
        if self._root is None and self._named is not None and not self._stopped:
            self._root = self._named
        if self._root is None and self._phrase is not None and not self._stopped:
            self._root = self._phrase
        if self._root is None and not self._stopped:
            self._crash_lookback(self._n + 1, force=True)
            quoted = self._quoted()
            if quoted is not None and (self._root is None or quoted.n < self._root.n):
                self._root = quoted  # it names the failure; a crash line after it is its end
            warning = self._warning
            if self._root is None and warning is not None:
                never_ready = self._timeline.now < len(STAGES) - 1  # and this is all it said
                if (
                    never_ready
                    or self._rules.warning_failure.search(warning.body)
                    # one that ended a thread while the server was serving (ready before it, not after)
                    or (warning.trace is not None and warning.trace.thread and not self._ready_after(warning.n))
                ):
                    self._root = warning
            if self._root is None and self._unexplained is not None and not self._stop_before():
                self._root = self._unexplained
            if self._root is None and (cancel := self._step_cancelled) is not None and not self._ready_after(cancel.n):
                self._root = cancel  # (a server that got ready after it was not killed in its start-up by it)
        if self._root is None and self._native is not None and not self._stopped:
            self._root = self._native  # a library said what failed; a cut traceback after it says less
        if self._root is None and not self._stopped and (self._fallback is None or self._fallback.cut):
            at = self._assert_at_end()  # (after a cut traceback's head whose lines were not read as its own)
            if at is not None and (self._fallback is None or at.n > self._fallback.n):
                self._fallback = at
        if self._root is None and self._fallback is not None and not self._stopped:
            warn = self._nccl_warn
            if warn is not None and 0 < (cut := self._fallback).n - warn.n <= NCCL_NEAR:
                # a traceback cut before its exception line says where it failed (its frames), not what:
                # NCCL's failure printed right before it says what
                warn.context = cut.raw
                warn.stack, warn.numbers = [warn.raw, *cut.stack], [warn.n, *cut.numbers]
                self._root = warn
            else:
                self._root = self._fallback
        if self._root is None and self._dead is not None and not self._stopped:
            self._root = self._dead  # the engine died under a request and nothing else said why
        if self._root is None and self._nccl_warn is not None and not self._stopped:
            self._root = self._nccl_warn  # NCCL said what failed and nothing after it did (an excerpt, a hang)
        if self._root is not None and not self._root.emitted:
            self._announce(self._root)
        self._ended = True
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
        root = self._root
        return (
            any(t.mode != "exc" or not t.tagged for t in self._traces.values())
            or (root is not None and (not root.emitted or root.following))
            or self._cancelled is not None  # until it is known whether a timeout was chained to it
            or self._labelled  # the message a bare "Error:" line announced
            or self._n < self._chain_gap_until
            or not self._prefilter
        )

    def _scan(self, buf: str, end: int) -> None:
        self._history.begin(buf)
        low = buf.lower()
        aligned = len(low) == len(buf)  # lower() never shrinks; a longer copy would shift offsets
        pos = 0
        if not self._vllm and (any(w in low for w in self._recognise) or self._rules.stack.search(buf)):
            self._vllm = True  # (the stack's words: a fragment of a vLLM run that quotes none of vLLM's own)
        nexts: dict[str, int] = {}
        if self._wrap_probe is not None and self._n < WRAP_PROBE:
            self._probe_wrap(buf, pos, end)
        if self._envelopes is not None:
            self._probe_envelope(buf, pos, end)
        if self._talk_lines < HEAD_LINES:
            self._probe_talk(buf, pos, end)
        if self._n == 0:  # the log's first lines, once: is the whole paste indented, or double-spaced?
            first = buf[pos:end].split("\n", WRAP_PROBE)[:WRAP_PROBE]
            self._probe_indent(first)
            self._probe_double(first)
        while pos < end:
            if self._wrap:
                nl, lines = self._wrapped_end(buf, pos, end)
                self._line(buf, pos, nl, buf[pos:nl].replace("\r\n", "").replace("\n", "") if lines else None)
                if lines:  # one line of the log; the file's numbering goes on after its pieces
                    self._joins.append((self._n, (self._joins[-1][1] if self._joins else 0) + lines))
                pos = nl + 1
                continue
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

    def _probe_wrap(self, buf: str, pos: int, end: int) -> None:
        """Learn whether the log's first lines were hard-wrapped at one width (see ``_wrap``).

        The signature of a cut at a width: the longest line is that width, at least three lines
        are exactly that long, and most of them are followed by a line that does not start the way a
        log's line does (the rest of the line they were cut from). A log whose lines merely repeat
        (a warning from eight workers) has its next lines start with a prefix, and is left alone; so
        is prose wrapped at words (more lines end a little short of the width than at it)."""
        probe = self._wrap_probe
        assert probe is not None
        at = pos
        while at < end and len(probe) < WRAP_PROBE:
            nl = buf.index("\n", at, end)
            line = buf[at:nl].rstrip("\r")
            if probe:
                probe[-1] = (probe[-1][0], _continues(self._wrap_last, line))
            probe.append((len(line), False))
            self._wrap_last = line
            at = nl + 1
        widest = max(length for length, _ in probe)
        cut = [cont for length, cont in probe[:-1] if length == widest]
        near = sum(1 for length, _ in probe if widest - 8 <= length < widest)  # a word wrap's ragged edge
        if widest >= WRAP_MIN and len(cut) >= 3 and 3 * sum(cut) >= 2 * len(cut) and near <= 2 * len(cut):
            self._wrap = widest
            self._wrap_probe = None
        elif len(probe) >= WRAP_PROBE:
            self._wrap_probe = None  # not wrapped; never looked for again

    def _probe_indent(self, rows: list[str]) -> None:
        """Learn whether every line of the log's first lines (``rows``) is indented by the same 4 spaces
        or more (a whole log pasted as a markdown code block, a quoted mail): that indentation is the
        paste's, taken off each line (see ``_unindent``), until a line is less indented."""
        least, lines = 0, 0
        for row in rows:
            line = row.rstrip("\r")
            body = line.lstrip(" ")
            if not body.strip() or body.startswith(("```", "~~~")):
                continue
            w = len(line) - len(body)
            least = w if not lines else min(least, w)
            lines += 1
            if least < 4:
                return
        if lines >= 2:
            self._dedent = least

    def _probe_double(self, rows: list[str]) -> None:
        """Learn whether the log's first lines (``rows``) were pasted double-spaced (a blank line after
        every line: a web form's or a chat's copy): then its blank lines say nothing (a traceback does not
        end at one) and are not read. Told by lines almost never followed by a line that is not blank."""
        lines = followed = 0
        for i, row in enumerate(rows[:-1]):
            if row.strip():
                lines += 1
                followed += bool(rows[i + 1].strip())
        if lines >= 6 and followed * 20 <= lines and sum(1 for r in rows if not r.strip()) >= lines:
            self._double = True

    def _probe_envelope(self, buf: str, pos: int, end: int) -> None:
        """Learn, from the log's first lines, what another program put in front of the vLLM lines it
        carries (a harness re-logging a server's output, a syslog relay, a spreadsheet's columns): an
        envelope seen on two lines is taken off every line that starts with its shape, before the line is
        read, as a multiplexing tool's source name is."""
        seen = self._envelopes
        assert seen is not None
        at = pos
        while at < end and self._envelope_lines < WRAP_PROBE:
            nl = buf.index("\n", at, end)
            self._envelope_lines += 1
            if (
                shape := envelope(buf[at:nl].rstrip("\r").lstrip(" \t"))
            ) is not None:  # (a paste's indentation is not its)
                seen[shape] = seen.get(shape, 0) + 1
                if seen[shape] == 2 and len(self._prefixes) < MAX_SOURCES:
                    self._prefixes.append(re.compile(shape))
            at = nl + 1
        if self._envelope_lines >= WRAP_PROBE:
            self._envelopes = None  # looked for in the first lines only

    def _probe_talk(self, buf: str, pos: int, end: int) -> None:
        """Note the first server's and start-up's words of the log's first lines (see ``_talk``): its
        first ``HEAD_LINES``, the lines a remote scan always reads (``k3tui.remote.prefilter``)."""
        stop = pos
        while stop < end and self._talk_lines < HEAD_LINES:
            stop = buf.index("\n", stop, end) + 1
            self._talk_lines += 1
        for kind, words in (("serving", self._rules.serving_talk), ("startup", self._rules.startup_talk)):
            if kind not in self._talk:
                for m in words.finditer(buf, pos, stop):
                    if not _IN_FLAG.search(buf, max(pos, m.start() - 64), m.start()):
                        self._talk[kind] = m.group(0)
                        break

    def _wrapped_end(self, buf: str, pos: int, end: int) -> tuple[int, int]:
        """(end of the line at ``pos`` with the lines that continue it, how many lines were joined)."""
        nl = buf.index("\n", pos, end)
        seg, lines = pos, 0
        while len(buf[seg:nl].rstrip("\r")) == self._wrap and nl + 1 < end:
            nxt = buf.index("\n", nl + 1, end)
            if not _continues(buf[seg:nl], buf[nl + 1 : nxt]):
                break
            seg, nl, lines = nl + 1, nxt, lines + 1
        if len(buf[seg:nl].rstrip("\r")) > self._wrap:
            self._wrap = 0  # a longer line: the log was not cut at this width after all
        return nl, lines

    def _next_hit(self, buf: str, pos: int, end: int, nexts: dict[str, int]) -> int:
        """Index of the first sentinel at or after pos, or -1; finds are cached per sentinel."""
        best = -1
        for s, search in self._finders:
            i = nexts.get(s, -2)
            if i == -2 or (i != -1 and i < pos):
                if search is None:
                    i = buf.find(s, pos, end)
                else:
                    i = m.start() if (m := search(buf, pos, end)) is not None else -1
                nexts[s] = i
            if i != -1 and (best < 0 or i < best):
                best = i
        return best

    # --- one line ----------------------------------------------------------------------

    def _unindent(self, raw: str) -> str:
        """The line without the indentation a paste put before its whole block (see ``_block``)."""
        body = raw.lstrip(" \t")
        if not body or body == "\r" or body.startswith(("```", "~~~")):
            self._blank = True  # (a markdown fence opens a block as a blank line does)
            return raw
        w = len(raw) - len(body)
        if w < self._dedent:
            self._dedent = 0  # a line less indented: the log was not pasted indented as a whole
        if not w:
            self._block = 0
        elif self._blank:  # a block starts: indented by the paste if a log's line starts it, or if the
            # paste's indentation before the blank line goes on (a whole log indented, blank lines in it)
            if body.startswith(TB_HEAD) or opens_log_line(body):
                self._block = w
            elif self._dedent:
                self._block = self._dedent
            elif not (self._block and w >= self._block):
                self._block = 0
        elif self._block > w:
            self._block = w
        self._blank = False
        return raw[self._block :] if self._block else raw

    def _line(self, buf: str, start: int, nl: int, joined: str | None = None) -> None:
        self._n += 1
        n = self._n
        raw = buf[start : min(nl, start + MAX_LINE)] if joined is None else joined[:MAX_LINE]
        self._history.at(start)
        if self._double and not raw.strip():
            return  # a double-spaced paste's blank line: counted, never read
        if (parts := _flattened(raw)) is not None:
            for self._part, part in enumerate(parts):  # a paste that lost its line breaks: each part is a line
                self._one(part, n)
            self._part = 0
        else:
            self._one(raw, n)

    def _reparse(self, raw: str) -> Line:
        """``parse`` of a line read before, without a source's name learnt for it (see ``_unprefix``); of a
        structured record (docker's ``{"log": …}``), its text's last line, as it was read."""
        if raw[:2] in ('{"', "{ ") and (lines := unjson(raw)) is not None:
            raw = lines[-1]
        return parse(self._known_source_off(raw))

    def _known_source_off(self, text: str) -> str:
        """``text`` without the first learnt source name's shape it starts with (unchanged if none)."""
        for shape in self._prefixes:
            if m := shape.match(text):
                return text[m.end() :]
        if self._prefixes and text[:1] in (" ", "\t") and (bare := text.lstrip(" \t")):
            for shape in self._prefixes:  # the same shape behind a paste's indentation
                if m := shape.match(bare):
                    return bare[m.end() :]
        return text

    def _unprefix(self, text: str) -> str:
        """The line without a source's name a multiplexing tool put before it (see
        ``lines.SOURCE_PREFIX``): learnt from a line where a log's line or a traceback's head follows
        it, then taken off every line that starts with its shape. (The sources' lines are told apart by the
        process prefix vLLM puts on each, not by this name: an editor's ``Line 98: `` is no source.)"""
        if (bare := self._known_source_off(text)) is not text:
            return bare
        if (
            len(self._prefixes) < MAX_SOURCES
            and text[:1] not in "([\t"
            and (m := SOURCE_PREFIX.match(text)) is not None
            and not opens_log_line(text)
            and (
                (
                    opens_log_line(rest := text[m.end(1) :])
                    and not (_INDENTED_KEY.match(text) and _EXCEPTION_START.match(rest))
                )
                or rest.startswith((TB_HEAD, 'File "'))
            )
        ):  # (an indented "    on_error: ValueError: …" is a value in a dump, not a source's name)
            # the name's shape: its numbers may change from line to line (task 0, 1; node-01, 02; Line 98, 99)
            shape = re.compile(re.sub(r"\d+", r"\\d+", re.escape(m.group(1))))
            if all(shape.pattern != known.pattern for known in self._prefixes):
                self._prefixes.append(shape)
            return text[m.end(1) :]
        return text

    def _one(self, raw: str, n: int) -> None:
        text = self._unindent(raw)
        text = self._unprefix(text)
        text = self._pytest(text, n)
        ln = parse(text)
        if text is not raw:
            ln.raw = raw.rstrip("\r")  # (the line as printed, indentation and all: what labels quote)
        if ln.body[-1:] in (" ", "\t") and ln.body.strip():
            ln.body = ln.body.rstrip(" \t")  # a terminal's copy pads lines with spaces: they say nothing
        if (named := self._named) is not None and named.wrapped:
            named.wrapped = False
            if n == named.n + 1 and ln.level is None and (rest := _QUOTE_REST.match(ln.body.strip())):
                named.stack.append(rest.group(1))  # the quoted message's rest: its evidence, not its line
                named.numbers.append(n)
        if n <= HEAD_LINES and not self._vllm and (ln.level is not None or _VLLM_LINE.search(raw)):
            self._vllm = True  # a logger's line (vLLM, uvicorn, NCCL, glog), or vLLM's quoted in prose
        if n == 1:
            self._announce_stages(self._timeline.first_line(ln), ln)
        elif (
            n <= HEAD_LINES
            and not self._followed
            and (ln.level is not None or ln.process is not None or _VLLM_LINE.search(raw))
        ):
            self._followed = True  # (a vLLM line behind a prefix not known, a platform's console record, too)
        if self._traces:
            self._expire(n)
        if self._quiet_chain and n <= self._chain_gap_until:  # (only while a survived traceback's gap is open)
            self._between(ln, n)
        root = self._root
        if root is not None and not root.emitted:
            if root.dump and self._dump_line(ln, n):
                return
            trace = self._traces.get(ln.key)
            if (
                trace is None
                and root.wrap is not None
                and (ln.body[:1].isspace() or _field_error(ln.body) or (root.wrap is _BARE and ln.key == root.key))
            ):  # indented, pydantic's field line that lost its indentation, an empty-headed message's lines
                self._unwrap_continuation(None, ln, n)
        else:
            trace = self._traces.get(ln.key)
        labelled, self._labelled = self._labelled, False
        if trace is None or not self._continue(trace, ln, n):
            low = raw.lower()
            if (
                labelled
                and ln.level is None
                and ln.body[:1].isalpha()
                and not _LOG_INSIDE.search(ln.body)
                and not _FRAME_TAIL.search(ln.body)
                and not self._stopped
                and self._root is None
            ):
                self._candidate(ln, n, "Error", ln.body.strip())  # what a bare "Error:" line announced
            elif (
                n <= HEAD_LINES
                or any(s in low for s in self._sentinels)
                or (self._root is not None and self._root.chain_at and ln.body.startswith(TB_HEAD))
            ):  # (the head of a traceback Python chained to the root's carries no sentinel when unprefixed)
                self._other(ln, n, low)
            if ln.level is None and _ERROR_LABEL.match(ln.body):
                self._labelled = True  # the message is the next line
        if ln.body.endswith(("Warning: ", "Warning:")) and _PY_WARNING_HEAD.search(ln.body):
            self._py_warning_at = n  # Python's warning whose message starts on the next line
        if self._cancelled is not None and self._root is None:
            self._cancel_caused(self._cancelled, ln, n)
        self._maybe_announce(ln, n)
        if self._root is not None and self._root.following:
            self._follow_chain(self._root, ln, n)
        if n == HEAD_LINES:
            self._timeline.end_of_head()  # (a log with no logger's prefix: markers in every line)
            if self._timeline.needles is not self._needles:
                self._refresh_sentinels()

    def _pytest(self, text: str, n: int) -> str:
        """The line without pytest's ``E`` (an exception's line is one again); a root read from one is
        dropped when pytest then says it was raised in a test's own file; the short summary's
        ``FAILED … - X: msg`` is read as its exception when no ``E`` line came before (it repeats one
        if one did)."""
        if text[:1] == "E" and (m := _PYTEST_E.match(text)) is not None:
            self._pytest_e = n
            return text[m.end() :]
        if text[:7] == "FAILED " and (m := _PYTEST_FAILED.match(text)) is not None:
            return "" if self._pytest_e else text[m.end() :]  # (after E lines it repeats one of theirs)
        if not self._pytest_e:
            return text
        root = self._root
        if (
            root is not None
            and root.pytest
            and not root.emitted
            and n - self._pytest_e <= PYTEST_AT_WITHIN
            and (at := _PYTEST_AT.match(text)) is not None
            and at["type"].rsplit(".", 1)[-1] == root.type.rsplit(".", 1)[-1]
        ):
            if _TEST_FILE.search(at["path"]):
                self._root, self._python = None, True  # the test's own verdict: no failure of the code it ran
            else:
                root.pytest = False
        return text

    def _cancel_caused(self, cancelled: _Root, ln: Line, n: int) -> None:
        """A cancellation Python chained as the DIRECT cause of the next exception (asyncio's timeout
        turning it into ``TimeoutError``: an engine step that never returned) is not a stop's noise:
        it becomes a bare root, and the exception it caused, with the message, is reported."""
        if n > self._cancel_until:
            self._cancelled = None
        elif ln.key != cancelled.key:
            return
        elif ln.body.startswith("During handling of the above exception"):
            self._cancel_until = n + HEADER_WINDOW  # cancelled again while handling it: the first one counts
        elif ln.body.startswith("The above exception was the direct cause") and not self._stop_before():
            cancelled.wrap, cancelled.chained = _BARE, True
            self._root, self._cancelled = cancelled, None

    def _follow_chain(self, root: _Root, ln: Line, n: int) -> None:
        """After the root's traceback: a chained one (``The above exception …``) holds its callers (a workload
        manager's report of a step's end printed between them, as srun's may be anywhere, is not in the way)."""
        another = _interleaved(ln, root.key)
        if root.chain_at and n - root.chain_at <= 2 and another and root.chain_skipped < MAX_BETWEEN:
            root.chain_skipped += 1
            root.chain_at += 1
            return
        last = root.outer[-1] if root.outer else root.trace
        if last is None:
            self._message_goes_on(root, ln, n)
            if n - root.n > HEADER_WINDOW:
                root.following = False  # no traceback of its own came: nothing to follow
            return
        if last.mode == "tb" or n == last.last:
            return  # still being printed
        gap = n - last.last - root.chain_skipped
        if gap <= 3 and another and root.chain_skipped < MAX_BETWEEN:
            root.chain_skipped += 1
            return
        if ln.key == root.key and len(root.outer) < MAX_CHAIN and _CHAINED.match(ln.body) and gap <= 3:
            root.chain_at, root.during = n, ln.body.startswith("During")
        elif gap > 3 and (not root.chain_at or n - root.chain_at > 2):
            root.following = False

    def _message_goes_on(self, root: _Root, ln: Line, n: int) -> None:
        """A one-line root whose message a paste or a terminal wrapped: the line before it ends
        mid-sentence (a comma, a word) and this one goes on with a lowercase word or a number, printed
        by the same process and not by a logger. Its words are the root's evidence (the KV cache
        "needed" of ``To serve at least one request …,`` on the next line)."""
        if n != root.n + root.goes_on + 1 or root.goes_on >= MESSAGE_GOES_ON or ln.key != root.key or ln.level:
            return
        before = (root.stack[-1] if root.goes_on else root.body).rstrip()
        body = ln.body.strip()
        if (
            _MID_SENTENCE.search(before)
            and _GOES_ON.match(body)
            and not self._rules.exception.match(body)
            and not _WORKLOAD.match(body)  # (srun's report: another writer's line)
        ):
            root.stack.append(ln.raw[:4096])
            root.numbers.append(n)
            root.goes_on += 1

    def _continue(self, trace: Trace, ln: Line, n: int) -> bool:
        """Feed a line to its process's open trace; False when the line is not part of it."""
        if trace.indent:
            body = ln.body
            if trace.indent < 0 and body.lstrip(" \t").startswith('File "'):
                trace.indent = max(0, len(body) - len(body.lstrip(" \t")) - 2)  # Python indents a frame by 2
            if trace.indent > 0 and body[: trace.indent].isspace():  # (spaces or a tab)
                ln = replace(ln, body=body[trace.indent :])  # the paste's indentation is not Python's
        if _WORKLOAD.match(ln.body):
            return False  # srun's report, wherever it landed (even before the first frame): never the trace's
        if trace.tagged and trace.mode == "exc" and n > trace.last + 1 and not ends_trace(ln.body):
            # a logged message goes on on the next line or not at all (the prefilter skips what came between, so a
            # line in between must end it whether read or not); the line that ends a traceback ends it still (srun's
            # lines may land between a logged traceback's last line and its end)
            self._close(trace)
            return False
        what = trace.step(ln, n)
        if what == "exception":
            self._exception_line(trace, ln, n)
            return True
        if what in ("frame", "end"):
            if what == "frame" and self._wrapping() and trace.mode == "exc":
                self._unwrap_continuation(trace, ln, n)
            if what == "end":
                if self._wrapping() and self._root is not None and self._root.trace is trace:
                    self._root.chained = True
                if trace.quiet:
                    self._chain_ended(ln.key, n)
                self._close(trace)
            return True
        if what == "other":
            self._close(trace)
        return False

    def _other(self, ln: Line, n: int, low: str) -> None:
        """A relevant line outside any traceback: a trace start, a root, an OOM, a marker."""
        if any(h in ln.body for h in self._hangs):
            self._hang = [*self._hang[-1:], n]  # (the last two are all the end of the log needs)
            self._hang_device = any(h in ln.body for h in self._rules.hang_device)
            return
        if opens_trace(ln.body):
            self._open(ln, n)
            return
        if ln.body[:1].isspace():
            stripped = ln.body.lstrip()
            if not (
                stripped.startswith(("Value error, ", "× "))
                or (ln.level is None and self._rules.exception.match(stripped))
            ):
                return  # code or a continuation printed outside any traceback we follow
            # pydantic's field line, an exception line a paste indented, uv's error (it indents its `× …` by two)
            ln = replace(ln, body=stripped)
        if (
            (said := self._warning) is not None
            and said.type == "PlatformError"
            and self._root is None
            and self._rules.py_warning_root.search(ln.body)
        ):
            self._warning = self._new_root(ln, n, "UserWarning", ln.body)  # torch says why no platform was found
        if (
            ln.level in ("INFO", "DEBUG")
            and (said := self._warning) is not None
            and said.type == "PlatformError"
            and self._root is None
            and self._rules.plugin_platform.search(ln.body)
        ):
            self._warning = None  # a plugin's platform was activated after vLLM's own look found none (marked below)
        if ln.level in ("WARNING", "INFO", "DEBUG", None) and self._warning is None and self._root is None:
            rules = self._rules
            if ln.level in ("INFO", "DEBUG"):  # (newer vLLMs log their platform probe at DEBUG)
                if n <= HEAD_LINES and rules.info_root.search(ln.body):
                    self._warning = self._new_root(ln, n, "PlatformError", ln.body)
                elif rules.plugin_platform.search(ln.body):
                    self._plugin = True
            elif self._plugin and rules.noise_on_plugin.search(ln.body):
                pass  # vllm._C is not part of this platform: its failed import is every start's noise
            elif rules.warning_root.search(ln.body) and not _PY_WARNING.search(ln.body):
                self._warning = self._new_root(ln, n, "ImportError", ln.body)
            elif rules.py_warning_root.search(ln.body):
                self._warning = self._new_root(ln, n, "UserWarning", ln.body)
        if (n <= HEAD_LINES or any(s in low for s in self._always)) and ln.level not in QUIET_LEVELS:
            self._error_line(ln, n)
        if self._timeline.pending:
            self._announce_stages(self._timeline.see(ln, n, low), ln)

    def _error_line(self, ln: Line, n: int) -> None:
        rules = self._rules
        self._late(ln, n)
        if rules.teardown.search(ln.body):
            if self._teardown is None and self._root is None and not self._stopped:
                self._teardown = self._new_root(ln, n, "WorkerDied", ln.body)
            return
        if rules.oom.search(ln.body):
            self._oom_seen = True
        if ln.level == "WARN":  # NCCL WARN: evidence; the root only when nothing else fails (Python raises it)
            if self._root is None:
                warn = self._new_root(replace(ln, body=f"NCCL WARN {ln.body}"), n, "NCCLWarn", ln.body)
                said = self._nccl_said
                if said is None or said.message != ln.body:  # (every rank prints it: the first said it first)
                    self._nccl_said = warn  # the details torch's 'NCCL error: …' points at
                if self._nccl_warn is None and _NCCL_FAILURE.search(ln.body):
                    self._nccl_warn = warn
            return
        if ln.body.startswith(_CPP_FRAME0) and self._root is None and self._native is None:
            self._cpp_report(n)
        m = rules.exception.match(ln.body)
        if m and ln.level is None and ln.key not in self._traces:
            text = self._history.since(TB_HEAD)
            trace = rebuild(_as_read(text), ln, n, MAX_LINE, self._reparse) if text else None
            if trace is not None:  # an unprefixed traceback: its frames carried no sentinel
                trace.quiet = self._ignored_before(len(text))
                self._bare_header(trace, len(text))
                self._traces[ln.key] = trace
                self._continue(trace, ln, n)
                return
        if m:
            self._candidate(ln, n, m["type"], m["msg"] if m["msg"] is not None else (m["rmsg"] or ""))
        elif _PY_WARNING.search(ln.body) and not rules.py_warning_root.search(ln.body):
            pass  # a Python warning (multiprocessing's 'process died unexpectedly, relaunching'): its words are not a failure
        else:
            rule, hit = next(((r, m) for r in rules.roots if (m := r.match.search(ln.body))), (None, None))
            if (
                rule is not None
                and n <= HEAD_LINES
                and ln.level is None
                and (_in_code_span(hit, ln.body) or _told(ln.body, hit))
            ):
                if self._phrase is None:  # a reporter's sentence quoting the failure's words: the root only if
                    self._phrase = self._new_root(ln, n, rule.type, ln.body)  # the log itself names none
            elif rule is not None:
                self._candidate(ln, n, rule.type, ln.body)
            elif rules.crash.search(ln.body):
                self._candidate(ln, n, "NativeCrash", ln.body)
            elif (
                self._native is None
                and self._root is None
                and (rules.native_error.search(ln.raw) or rules.native_error.search(ln.body))
                and not ln.body.startswith(_CPP_STACK)
            ):
                self._native = self._new_root(ln, n, "NativeError", ln.body)
            elif (
                n <= HEAD_LINES
                and ln.level is None
                and self._named is None
                and (q := _INLINE_EXC.search(ln.body) or _cjk_quote(ln.body)) is not None
                and not rules.request_refused.search(_quoted_msg(q))
                and not _advice(ln.body, q)
            ):
                # the reporter's sentence quotes the exception: the root only if the log itself names none
                self._named = self._new_root(ln, n, _quoted_type(q), _quoted_msg(q))
                self._named.wrapped = q.group(0)[-1:] not in ("`", '"', "”", ")")  # the line ends inside the quote
                self._named.body = f"{_quoted_type(q)}: {_quoted_msg(q)}"  # what it says, not the sentence around
            elif (
                n <= HEAD_LINES
                and ln.level is None
                and self._named is None
                and not _PY_WARNING.search(ln.body)  # a Python warning is a decoy, unless [warning_root] says
                and not 0 < n - self._py_warning_at <= 3  # ... and so are the lines of its message after it
                and self._names_a_layer(ln.body)
                and not _advice(ln.body)  # (a warning's advice names what could fail)
            ):
                if rules.consequence.search(ln.body):
                    # a consequence quoting what failed ('Worker failed with error …'): a candidate as any
                    self._candidate(ln, n, "", ln.body)
                else:
                    # an excerpt quoting only the message, or the reporter's sentence above a log: the root
                    # only if the log itself names none (issue threads open with "I get an error with …")
                    self._named = self._new_root(ln, n, "", ln.body)
        if ln.level in ("ERROR", "CRITICAL") and not _TORCH_TAIL.search(ln.body):
            self._said[ln.key] = self._headers.get(ln.key)
            self._headers[ln.key] = (ln, n)  # (torch's advice under a CUDA error is that error's text)
            if len(self._headers) > 256:
                self._headers.clear()
                self._said.clear()

    def _names_a_layer(self, body: str) -> bool:
        """A failure statement that names one layer unambiguously (the strong stage rules)."""
        if not _FAILURE_WORDS.search(body):
            return False  # "Downloading … from huggingface.co" names a layer but states no failure
        return any(r.strength in ("strong", "startup") and r.match.search(body) for r in self._rules.stage_rules)

    # --- traces --------------------------------------------------------------------------

    def _line_before(self, back: int = 0) -> str:
        """The line that ends ``back`` characters before the current one (0: the line before it), as read,
        up to 400 characters of its end."""
        text = self._history.before(back + 400)
        return text[: len(text) - back].rstrip("\n").rsplit("\n", 1)[-1]

    def _ignored_before(self, back: int) -> bool:
        """Is the line ``back`` characters before the current one Python's ``Exception ignored in: …``?
        The traceback after it is an exception a destructor or a callback raised at the interpreter's
        exit, which Python reports and ignores: the run's noise, never its failure."""
        return self._line_before(back).lstrip().startswith(_IGNORED)

    def _bare_header(self, trace: Trace, back: int) -> None:
        """A request handler's or the plugin loader's header printed without a logger's prefix (before logging
        was set up, or cut off by a paste) on the line right before a traceback that starts ``back`` characters
        before the current line: read out of the history (a prefiltered scan may not have read it), it makes
        the traceback one request's, or a plugin's that was skipped, as the same ERROR header would."""
        head = self._reparse(self._line_before(back))
        if said := head.body.strip():
            self._headed(trace, said)
            if trace.header is None and self._rules.runtime_wording.search(said):
                trace.header = (head, trace.start - 1)  # (``AsyncLLM output_handler failed.``: what failed)

    def _headed(self, trace: Trace, header: str) -> None:
        """What the header logged before a traceback says of it: one request failed and was answered with an
        error (logged, survived); a plugin did not load (the root only if what fails later is its doing)."""
        if self._rules.request_error.search(header):
            trace.quiet = trace.request = True
        elif self._rules.survived.search(header):
            trace.quiet = trace.survived = True
        elif self._rules.thread_died.search(header) and not (
            self._root or self._teardown or self._dead or self._unexplained or self._native
        ):
            trace.quiet = trace.survived = trace.thread = True  # (after a failure, a thread's death is its end)

    def _open(self, ln: Line, n: int) -> None:
        quiet = ln.level in QUIET_LEVELS or (
            ln.level is None and ln.body.startswith(TB_HEAD) and self._ignored_before(0)
        )
        # "Exception in worker …: <error>, Traceback (…):" is its own header; a frame is not
        own_header = ln.body.endswith(TB_HEAD) and not ln.body.startswith("Traceback")
        if own_header and not quiet:
            self._error_line(ln, n)  # V0 workers: "Exception in worker …: <error>, Traceback (…):"
        header = self._headers.pop(ln.key, None)
        trace = Trace(ln.key, ln.process, n, quiet=quiet, level=ln.level)
        self._python = True
        if ln.level == "ERROR" and ln.raw.endswith(ln.body):
            trace.tagged = "rror" in ln.raw[: len(ln.raw) - len(ln.body)].lower()
        if own_header:
            trace.header = (ln, n)
        elif header is not None and n - header[1] <= HEADER_WINDOW:
            trace.header, trace.said = header, self._said.get(ln.key)
            trace.add(header[0].raw, header[1])
            self._headed(trace, header[0].body)
        elif ln.level is None and ln.body.startswith(TB_HEAD):
            self._bare_header(trace, 0)
        trace.add(ln.raw, n)
        trace.frames = 0 if ln.body.endswith(TB_HEAD) else 1
        trace.code_next = ln.body.startswith('File "')  # a frame that lost its indentation: its code follows
        if ln.body[:1] in (" ", "\t") and ln.body.endswith(TB_HEAD):
            trace.indent = -1  # a paste indented the traceback: by how much, its first frame says
        self._traces[ln.key] = trace
        if len(self._traces) > MAX_TRACES:
            self._close(min(self._traces.values(), key=lambda t: t.last))
        root = self._root
        if root and not root.emitted and root.trace is None and root.key == ln.key and n - root.n <= HEADER_WINDOW:
            root.trace, root.stack = trace, trace.lines
        elif root and root.following and root.chain_at and root.key == ln.key and n - root.chain_at <= 2:
            root.outer.append(trace)  # the traceback Python chained to the root's: its callers
            if root.during:
                root.handling.append(trace)
            root.chain_at = root.chain_skipped = 0

    def _exception_line(self, trace: Trace, ln: Line, n: int) -> None:
        body = ln.body
        self._late(ln, n)
        if trace.request and self._root is None and self._dead is None and self._rules.consequence.search(body):
            # the request failed because the engine had died under it: not its own error (the first such report
            # says all of it: the next ones, one per request in flight, stay quiet)
            trace.quiet = False
        if self._rules.oom.search(body) and not trace.quiet:
            self._oom_seen = True
        if trace.quiet:
            if (
                trace.survived
                and self._warning is None
                and self._root is None
                and (m := self._rules.exception.match(body))
            ):
                # like a broken import's warning: the root when what fails later is its doing, or nothing does
                self._warning = self._new_root(ln, n, m["type"], m["msg"] or m["rmsg"] or "", trace)
                self._warning.survived = True
            return
        m = self._rules.exception.match(body)
        if m:
            typ, msg = m["type"], (m["msg"] if m["msg"] is not None else (m["rmsg"] or ""))
        else:
            typ, _, msg = body.partition(": ") if ": " in body else ("", "", body)
        refused = self._refused(ln, msg, trace, typ)
        if refused or self._chained_to_quiet(trace) or self._one_request(trace, body):
            trace.quiet = True  # one request refused and answered: logged, survived
            if refused and (root := self._root) is not None and trace in root.outer:
                self._root = None  # the root's traceback was chained to the refusal: it was the refusal's cause
            return
        if self._helper_noise(trace):
            trace.quiet = True  # Python's own helper process (the resource tracker) cleaning up: noise
            return
        if _AT_EXIT.search(msg):
            trace.quiet = True  # raised while the interpreter was exiting: the run's noise
            return
        if self._root is None and typ.rsplit(".", 1)[-1] == "CancelledError":
            if self._cancelled is None or n > self._cancel_until:
                self._cancelled = self._new_root(ln, n, typ, msg, trace)  # a consequence, unless a timeout follows
            self._cancel_until = n + 3
        if self._root is None or self._wrapping() or self._typed_again(self._root, ln, n, typ, msg):
            self._candidate(ln, n, typ, msg, trace)

    def _close(self, trace: Trace, at_end: bool = False) -> None:
        root = self._root
        if (
            root is not None
            and not root.emitted
            and (root.type == "NativeCrash" or root.chain_borrow)
            and not root.borrowed
        ):
            consequence = any(self._rules.consequence.search(x) for x in trace.lines[-3:])
            if trace.start > root.n and trace is not root.trace and not trace.quiet and not consequence:
                root.borrowed, root.borrowed_numbers = list(trace.lines), list(trace.numbers)
        if (
            trace.mode == "tb"
            and not trace.quiet
            and self._fallback is None
            and not self._chained_to_quiet(trace)
            and not self._one_request(trace, "")
        ):
            if self._stop_before():  # a cut traceback after the operator's stop is the stop's noise
                self._stopped = True
            elif (gone := self._teardown) is not None and self._root is None and trace.start > gone.n:
                self._root = gone  # the engine died and a call into it failed (its exception line cut off)
            else:
                self._fallback = self._truncated_root(trace, at_end)
        trace.mode = "closed"
        self._traces.pop(trace.key, None)

    def _truncated_root(self, trace: Trace, at_end: bool = False) -> _Root | None:
        """A traceback cut before its exception line: its ERROR header is the best root left; for
        one the END of the log cut (a paste that stops mid-traceback, a process killed while it
        printed), without a header, its own first line: a log that ends in a traceback did not end
        well, and its frames still name the layer."""
        if (root := self._cut_at_assert(trace)) is not None:
            return root
        if trace.header is None:
            if not at_end or not trace.lines:
                return None
            head, hn = self._reparse(trace.lines[0]), trace.numbers[0]
        elif self._rules.consequence.search(trace.header[0].body) or self._refused(
            trace.header[0], trace.header[0].body, trace
        ):
            return None  # (a header that is one request refused: its cut traceback is that request's)
        elif (said := self._reason(trace.said, trace.header[1])) is not None:
            return said
        else:
            head, hn = trace.header
        typ = (ipython_type(head.raw) or "") if head.body == TB_HEAD else ""  # (IPython's head names the type)
        if typ and self._rules.consequence.search(typ):
            return None  # the user's interrupt of a cell, a stop: no failure
        body = typ or head.body
        root = _Root(head.raw, hn, body, typ, body, trace.process, trace.key, self._timeline.now)
        root.stack, root.numbers, root.trace, root.cut = trace.lines, trace.numbers, trace, True
        root.marks = [(m.stage, m.line) for m in self._timeline.marks]
        return root

    def _cut_at_assert(self, trace: Trace) -> _Root | None:
        """A traceback whose last line is the ``assert …`` its innermost frame ran (a paste that left
        out the bare ``AssertionError`` under it): that statement is the root, an AssertionError; or the
        ``raise ValueError("…")`` it ran (a paste that left out the exception's line): that exception."""
        lines = list(trace.lines)
        while lines and _PASTE_END.match(self._reparse(lines[-1]).body):
            lines.pop()  # the paste's closing fence, a blank line
        if trace.dropped or len(lines) < 2:
            return None
        return self._assert_root(lines, trace.numbers[: len(lines)], trace)

    def _assert_root(self, lines: list[str], numbers: list[int], trace: Trace | None) -> _Root | None:
        """The root of a stack (``lines``, innermost last) that ends in a frame and its ``assert`` or its
        ``raise`` of a named exception."""
        if len(lines) < 2:
            return None
        last = self._reparse(lines[-1])
        if not _FRAME_LINE.search(self._reparse(lines[-2]).body):
            return None  # (searched, not matched: behind a prefix not known, the frame and its code still read)
        if (m := _ASSERT.search(last.body)) is not None:
            typ, msg = "AssertionError", m["expr"]
        elif (m := _RAISE.search(last.body)) is not None:
            typ, msg = m["type"], m["said"] if m["said"] is not None else (m["args"] or "")
        else:
            return None
        root = _Root(last.raw, numbers[-1], m.group(0).strip(), typ, msg, last.process, last.key, self._timeline.now)
        root.stack, root.numbers, root.trace, root.cut = lines, numbers, trace, True
        root.marks = [(mark.stage, mark.line) for mark in self._timeline.marks]
        return root

    def _assert_at_end(self) -> _Root | None:
        """The log ends in a frame and the ``assert`` it ran, with no traceback head before them (an
        excerpt that starts mid-stack and left the bare ``AssertionError`` out): that statement is the
        root, and the frames above it its stack."""
        text = self._history.before(_ASSERT_TAIL)
        rows = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
        n = self._n
        while rows and _PASTE_END.match(rows[-1]):
            rows.pop()
            n -= 1
        if (
            len(rows) < 2
            or ("assert " not in rows[-1] and "raise " not in rows[-1])
            or (m := _ASSERT.search(body := self._reparse(rows[-1]).body) or _RAISE.search(body)) is None
        ):
            return None  # (no line is parsed unless the last one holds an assert or a raise)
        shape = _DIGITS.sub("0", body[: m.start()])  # a prefix parse() does not know: the same on each line
        k = len(rows) - 1  # the stack: the frames, code and caret lines right above the assert
        while k > 0 and len(rows) - k < MAX_TRACE_LINES:
            above = self._reparse(rows[k - 1]).body
            if _DIGITS.sub("0", above[: len(shape)]) != shape or not _STACK_LINE.match(above, len(shape)):
                break
            k -= 1
        stack = rows[k:]
        return self._assert_root(stack, list(range(n - len(stack) + 1, n + 1)), None)

    def _expire(self, n: int) -> None:
        for trace in [t for t in self._traces.values() if n - t.last > STALE_AFTER]:
            self._close(trace)

    # --- roots -----------------------------------------------------------------------------

    def _new_root(self, ln: Line, n: int, typ: str, msg: str, trace: Trace | None = None) -> _Root:
        root = _Root(ln.raw, n, ln.body, typ, msg, ln.process, ln.key, self._timeline.now)
        root.part = self._part
        root.pytest = n == self._pytest_e
        root.marks = [(m.stage, m.line) for m in self._timeline.marks]
        if root.marks and root.marks[-1][1] > n:  # found after its line (a look back): the stages its line had reached
            self._place(root, n)
        if trace is not None:
            root.trace, root.stack, root.numbers = trace, trace.lines, trace.numbers
            if trace.header is not None and trace.header[1] != n:
                root.header = (trace.header[0].body, trace.header[1])
        else:
            root.stack, root.numbers = [ln.raw], [n]
        return root

    def _place(self, root: _Root, upto: int) -> None:
        """The root's stages: those the log had reached by line ``upto``."""
        root.marks = [(m.stage, m.line) for m in self._timeline.marks if m.line <= upto]
        root.stage_idx = furthest(root.marks)

    def _chain_ended(self, key: tuple[str, str], n: int, skipped: int = 0) -> None:
        """A survived traceback of process ``key`` ended (or is taken to have ended, ``skipped`` other lines
        after its end) at line ``n``: one chained to it within the gap is part of it, and until then every line
        is read."""
        self._quiet_chain[key] = n
        self._quiet_skipped[key] = skipped
        self._chain_gap_until = max(self._chain_gap_until, n + QUIET_CHAIN_GAP)

    def _between(self, ln: Line, n: int) -> None:
        """A line of another process, or a workload manager's (srun's may land anywhere), printed between a
        survived traceback's end and the head of one chained to it is not in the gap that ties them (up to
        MAX_BETWEEN of them: past that, they count)."""
        for key, ended in self._quiet_chain.items():
            if not 0 < n - ended <= QUIET_CHAIN_GAP or not _interleaved(ln, key):
                continue
            chained = self._traces.get(key)
            if (chained is None or chained.start < ended) and self._quiet_skipped[key] < MAX_BETWEEN:
                self._chain_ended(key, ended + 1, self._quiet_skipped[key] + 1)  # (until the chained head came)

    def _chained_to_quiet(self, trace: Trace) -> bool:
        """Python chained this traceback to a survived one of the same process (``During handling of the
        above exception …`` between them: a blank, that line, a blank): it is the same request's."""
        ended = self._quiet_chain.get(trace.key)
        return ended is not None and 0 < trace.start - ended <= QUIET_CHAIN_GAP

    def _under_request(self, ln: Line, msg: str, trace: Trace | None) -> bool:
        """An engine-dead report raised to a request in flight (a request handler's frames or logger
        location), or V0's background loop ending (it runs only while requests come): the engine died
        while serving. (The output handler alone also fails so when the operator stops the server.)"""
        rules = self._rules
        if self._stop_before():
            return False
        if rules.handler_at.search(ln.raw) or rules.runtime_wording.search(msg):
            return True
        if (
            trace is not None
            and trace.header is not None
            and rules.runtime_wording.search(trace.header[0].body)
            and self._history.since(_SERVER_STOPPING) is None
        ):  # its header says so (``AsyncLLM output_handler failed.``: that task serves requests), and the
            return True  # web server was not stopping before it (a stop ends the engine, and that task, too)
        return trace is not None and any(rules.request_frames.search(f) for f in _frame_names(trace))

    def _through_engine_loop(self, trace: Trace | None) -> bool:
        """The traceback runs through the engine's own loop: nothing caught what it raised for one
        request or one client, it ended the engine."""
        return trace is not None and any(self._rules.engine_loop.search(f) for f in _frame_names(trace))

    def _engine_connection(self, body: str, trace: Trace | None) -> bool:
        """A broken connection raised through the engine's own loop (its KV cache server's socket, a
        peer's transfer), or that ended the program (its traceback runs from the program's first frame:
        nothing caught it, as a server catches a client that went away): a failure, not a client gone."""
        if self._rules.peer.search(body) is None:
            return False
        return self._through_engine_loop(trace) or (trace is not None and from_program_start(trace.lines))

    def _helper_noise(self, trace: Trace) -> bool:
        """Every frame of the traceback is one of Python's own helper processes (multiprocessing's
        resource tracker cleaning up shared memory): its noise, whatever it raised."""
        paths = [path for _i, (path, _func) in frames(trace.lines) if path]
        return bool(paths) and all(self._rules.noise_frames.search(p) for p in paths)

    def _one_request(self, trace: Trace, exception: str) -> bool:
        """The traceback is confined to one request's handling (the web server's dispatch, vLLM's
        request handlers, nothing of the engine) and its exception says nothing of the engine failing:
        that request was answered with an error and the server went on."""
        rules = self._rules
        if exception and rules.engine_failed.search(exception):
            return False
        seen = _frame_names(trace)
        if not any(rules.request_frames.search(f) for f in seen) or any(rules.engine_frames.search(f) for f in seen):
            return False
        # the main program's whole stack is the program failing, unless it is a client's
        return not from_program_start(trace.lines) or any(rules.client_frames.search(f) for f in seen)

    def _refused(self, ln: Line, msg: str, trace: Trace | None = None, typ: str = "") -> bool:
        """ONE request refused and answered (the server goes on): too long for the model, one of vLLM's
        client errors, a front-end request handler that could not prepare its input (its chat template,
        processor, grammar), or an offline script's call whose input vLLM refused. Not when its
        traceback runs through the engine's own loop: nothing caught it for that request, it ended
        the engine."""
        rules = self._rules
        refused = (
            rules.request_refused.search(msg) is not None
            or (typ != "" and rules.refused_types.search(typ) is not None and self._a_call(trace))
            or (rules.handler_at.search(ln.raw) is not None and rules.handler_refused.search(ln.body) is not None)
            or rules.parser_at.search(ln.raw) is not None
            or self._call_refused(typ, trace)
        )
        # (the frames are read only for a refusal: most exception lines are none)
        return refused and not self._through_engine_loop(trace)

    def _a_call(self, trace: Trace | None) -> bool:
        """The traceback is a call's: a request's handling (it does not run from the program's first
        frame: the server runs each request in a task of its own) or an offline script's call of an
        ``LLM`` method. (A server's start-up checking its arguments runs from the first frame.)"""
        if trace is None:
            return False
        return not from_program_start(trace.lines) or any(
            self._rules.offline_call.search(f) for f in _frame_names(trace)
        )

    def _call_refused(self, typ: str, trace: Trace | None) -> bool:
        """An offline script's call of an ``LLM`` method (``embed`` on a generative model) that vLLM's
        own code refused with a ValueError or TypeError in the script's process, nothing of the engine
        on the stack: that call's input was refused; the engine was healthy and never asked."""
        if trace is None or typ.rsplit(".", 1)[-1] not in _ARG_ERRORS or not from_program_start(trace.lines):
            return False
        seen = _frame_names(trace)
        if not seen or "/vllm/" not in seen[-1].rsplit(" ", 1)[0]:
            return False  # raised by the script's own code, or by a library vLLM called
        rules = self._rules
        return any(rules.offline_call.search(f) for f in seen) and not any(rules.engine_frames.search(f) for f in seen)

    def _candidate(self, ln: Line, n: int, typ: str, msg: str, trace: Trace | None = None) -> None:
        if trace is None and typ and self._reparse(self._line_before()).body.lstrip().startswith(_CUSTOMIZE):
            return  # Python reported a broken sitecustomize and went on
        if self._stopped and self._relaunched(n, self._since_stop()):
            self._stopped = False  # the server was launched again after the stop: a new run's failure
        if self._stopped or (typ and (self._refused(ln, msg, trace, typ) or _AT_EXIT.search(msg))):
            self._python = self._python or bool(typ)
            return
        if self._named is not None and self._root is None and ln.level is None and ln.process is None:
            self._root = self._named  # a quoted message, then another bare one: the first said it
        if self._root is not None:
            if (
                self._wrapping()
                and self._inner_of(self._root, typ, ln.body)
                and not self._rules.consequence.search(ln.body)
            ):
                self._unwrap(self._new_root(ln, n, typ, msg, trace))
            elif self._typed_again(self._root, ln, n, typ, msg):
                self._root = self._new_root(ln, n, typ, msg, trace)
            return
        if self._rules.consequence.search(ln.body) and not self._engine_connection(ln.body, trace):
            if (cancel := self._cancel_caused_it(ln, n, trace)) is not None:
                self._root = cancel  # (a crash line after it is its doing: the look-back takes only one before it)
            self._crash_lookback(n)
            # the workload manager's own line is said of the job's end, wherever it was interleaved, never of a
            # warning logged and survived before it (the end of the log decides that one)
            warning = None if _WORKLOAD.match(ln.body) else self._warning
            if self._root is None and (self._teardown or warning) is not None:
                self._root = self._teardown or warning
            if self._root is None and (said := self._reason_before(ln, n, trace)) is not None:
                self._root = said  # the same process's ERROR line right before it named the failing layer
                return
            if self._root is None and self._rules.crash.search(ln.body) and not self._stop_before():
                self._root = self._new_root(ln, n, "Killed", ln.body)  # the only word of a kill
            elif (
                self._root is None
                and self._step_cancelled is None
                and self._rules.cancelled.search(ln.body)
                and self._timeline.now < len(STAGES) - 1
                and not self._stop_before()
            ):
                # the start-up's kill by the workload manager: the root unless a failure of the job's own
                # follows (Slurm may append the line before the job's last relayed lines)
                self._step_cancelled = self._new_root(ln, n, "Killed", ln.body)
            elif self._unexplained is None and (
                self._rules.startup_wording.search(ln.body) or self._rules.carries.search(ln.body)
            ):
                self._unexplained = self._new_root(ln, n, typ or "StartupFailed", msg or ln.body, trace)
            elif (
                self._dead is None
                and typ
                and (self._rules.runtime_after.search(typ) or (trace is not None and trace.request))
                and self._under_request(ln, msg, trace)
            ):
                self._dead = self._new_root(ln, n, typ, msg or ln.body, trace)
            return
        if self._stop_before(n):
            self._stopped = True
            return
        if self._rules.assert_before.search(msg):  # the kernel's own assertion, printed before it, says which failed
            self._crash_lookback(n, force=True)
            if self._root is not None:
                return
        if (typ in _CRASH_TYPES or typ == "NativeCrash") and (
            cancel := self._cancel_caused_it(ln, n, trace)
        ) is not None:
            self._root = cancel  # a worker's death after the workload manager's kill: the kill's doing
            self._crash_lookback(n, force=True)  # (a crash before the cancel stays the root)
            return
        if (typ in _CRASH_TYPES or typ == "NativeCrash") and (quoted := self._quoted()) is not None:
            self._root = quoted  # "Worker failed with error 'X'" came first; the worker's death is its end
            return
        if typ == "NativeCrash" and self._native_before(n):
            return
        if (warn := self._nccl_said) is not None and n - warn.n <= CRASH_LOOKBACK and _NCCL_DETAILS.search(msg):
            warn.context = ln.raw  # NCCL's Python error points at its WARN line for the details: that one is the root
            self._root = warn
            return
        warning = self._warning
        if warning is not None and self._rules.warning_failure.search(warning.body):
            warning = None  # it reported a failure that is now logged itself: that one is the root
        elif (
            warning is not None
            and (warning.type == "ImportError" or warning.survived)
            and not self._rules.warning_caused.search(ln.body)
        ):
            warning = None  # a failure a broken import does not cause: it is its own root
        elif (
            warning is not None
            and warning.type == "PlatformError"
            and typ
            and any(r.stage == "device" and r.match.search(ln.body) for r in self._rules.stage_rules)
        ):
            warning = None  # the error says itself that the device is missing (no platform's own words): the root
        elif (
            warning is not None
            and warning.type == "PlatformError"
            and typ
            and self._rules.platform_library.search(ln.body)
        ):
            warning = None  # a library the platform's probe imports failed to load: why no platform was found
        root = self._teardown or warning or self._new_root(ln, n, typ, msg, trace)
        if root is not self._warning and root is not self._teardown:
            root.wrap = next((w for w in self._rules.wrappers if w.match.search(ln.body)), None)
            if root.wrap is None and not msg.strip() and (trace is not None or ln.body.rstrip().endswith(":")):
                root.wrap = _BARE  # a bare `TimeoutError`, or `X: ` whose message is on the next lines
            root.dump = ln.body.startswith("Fatal Python error")
        self._root = root
        if typ in _CRASH_TYPES or typ == "NativeCrash":
            self._crash_lookback(n, force=True)
        if self._rules.oom.search(self._root.body):
            self._oom_seen = True

    def _reason_before(self, ln: Line, n: int, trace: Trace | None) -> _Root | None:
        """``_reason`` for a consequence: the ERROR line right before it, or before its traceback's header."""
        if _WORKLOAD.match(ln.body):
            return None  # another process than the one whose lines it sits among: that ERROR line is not its reason
        if (said := self._reason(self._headers.get(ln.key), n)) is not None:
            return said
        return None if trace is None or trace.header is None else self._reason(trace.said, trace.header[1])

    def _cancel_caused_it(self, ln: Line, n: int, trace: Trace | None) -> _Root | None:
        """The workload manager's cancel of the start-up (a time limit, a preemption, a user's scancel), when the
        server's own consequence line comes after it and nothing of the job's own had failed before: the kill
        caused what the server says next (a worker's death, the engine's start-up failure). Not when a warning,
        a teardown or an ERROR line just before names a failure of the job's own, and not for the workload
        manager's own lines, which may land anywhere among the job's last lines."""
        cancel = self._step_cancelled
        if cancel is None or self._root is not None or self._warning is not None or self._teardown is not None:
            return None
        if _WORKLOAD.match(ln.body) or self._ready_after(cancel.n) or self._reason_before(ln, n, trace) is not None:
            return None
        # the line's own time within the kill's reach of the cancel's: Slurm relays a job's last lines late, so a
        # failure printed before the cancel may come after its line (no time on either: nothing said)
        cancelled = _CANCELLED_AT.search(cancel.body)
        at, said = _clock(cancelled[1] if cancelled else None), _clock(ln.time)
        if at is None or said is None:
            return None
        return cancel if 0 <= said - at <= KILL_REACH else None

    def _reason(self, said: tuple[Line, int] | None, n: int) -> _Root | None:
        """The ERROR line the same process logged just before line ``n``, a failure's report (``EngineCore
        failed to start.``, a consequence), when it names a layer's failure in words (``[nixl_connector.py:343]
        NIXL is not available``): no exception line of its own, but the reason that failure reports."""
        if said is None or not 0 < n - said[1] <= 2 or said[0].level not in ("ERROR", "CRITICAL"):
            return None
        body = said[0].body
        if self._rules.consequence.search(body) or not self._names_a_layer(body):
            return None
        return self._new_root(said[0], said[1], "", body)

    def _quoted(self) -> _Root | None:
        """The first start-up consequence when it quotes the failure it reports (V1's ``Worker failed
        with error '…'``): a better root than a worker's death reported after it."""
        quoted = self._unexplained
        return quoted if quoted is not None and self._rules.carries.search(quoted.body) else None

    # --- wrappers: report the root a wrapper line wraps ---------------------------------------

    def _typed_again(self, root: _Root, ln: Line, n: int, typ: str, msg: str) -> bool:
        """The root is a message printed without its exception's type (V0's engine logging ``str(e)``
        before the traceback ``logger.exception`` prints, a library's line), and the same process now
        prints the exception line that carries that very message with its type: the same failure, told
        whole (its stack is the traceback that ends there)."""
        if not typ or ln.key != root.key or not 0 < n - root.n <= TYPED_AGAIN or root.wrap is not None:
            return False
        if not self._rules.exception.match(ln.body.strip()):
            return False  # (a native crash's, a kill's or a root form's own line: no Python exception line)
        said = root.body.strip()
        if self._rules.exception.match(said):
            return False  # the root already has its type
        again = msg.strip()
        return len(again) >= TYPED_MIN and (said == again or said.startswith(again) or again.startswith(said))

    def _wrapping(self) -> bool:
        root = self._root
        return root is not None and root.wrap is not None and not root.emitted

    def _inner_of(self, root: _Root, typ: str, body: str) -> bool:
        """Is this exception line (type ``typ``) the one the pending wrapper root waits for?"""
        wrap = root.wrap
        if wrap is None or wrap.inner == "value-error" or not typ:
            return False
        if wrap.inner == "chained":
            return root.chained
        if wrap.inner == "next":
            return True  # (its own report's tracebacks and blank lines come between: no chain of Python's)
        if wrap.inner == "any":
            return not root.chained or any(w.match.search(body) for w in self._rules.wrappers)
        m = wrap.match.search(root.body)
        return m is not None and typ.rsplit(".", 1)[-1] == m.group(1)

    def _unwrap(self, inner: _Root) -> None:
        """The wrapper's inner line becomes the root; the wrapper stays as its context."""
        outer = self._root
        assert outer is not None
        inner.context = outer.context or outer.raw
        inner.stage_idx, inner.marks = outer.stage_idx, outer.marks
        if inner.trace is not outer.trace and outer.trace is not None and outer.stack:
            # a traceback of its own under the wrapper's (TorchScript's, a subprocess's): the wrapper's frames called it
            inner.stack, inner.numbers = [*outer.stack, *inner.stack], [*outer.numbers, *inner.numbers]
        if inner.header is None:
            inner.header = outer.header
        inner.wrap = next((w for w in self._rules.wrappers if w.match.search(inner.body)), None)
        self._root = inner

    def _unwrap_continuation(self, trace: Trace | None, ln: Line, n: int) -> None:
        """A line printed under the wrapper's exception line (pydantic's ``Value error, …``)."""
        root = self._root
        if root is None or root.trace is not trace or ln.key != root.key:
            return
        body = ln.body.strip()
        wrap = root.wrap
        if wrap is not None and wrap.inner == "value-error" and _field_error(body):
            root.context, root.raw, root.n, root.message = root.raw, ln.raw, n, body
            root.body = f"{body} ({root.body})"
            root.wrap = None
            return
        if wrap is _BARE and root.raw.rstrip().endswith(":") and n - root.n <= MESSAGE_BELOW and _states(body):
            # Python printed the type, then a message that starts with a line end: the message's line that
            # states the failure (after a compiler's banner, a "… encounters error:") is the root's line
            root.context, root.raw, root.n, root.message = root.raw, ln.raw, n, body
            root.body = f"{root.type}: {body}"
            root.wrap = None
            return
        m = self._rules.exception.match(body)
        if m and self._inner_of(root, m["type"], body):
            inner = self._new_root(ln, n, m["type"], m["msg"] or m["rmsg"] or "", trace)
            self._unwrap(inner)

    # --- native crashes and kills: no traceback, found by looking back -----------------------

    def _crash_lookback(self, n: int, force: bool = False) -> None:
        """The earliest native crash / kill line in the lines before line n becomes the root.

        A flood of consequences (thousands of EngineDeadError lines) looks back at most once
        per half window: the cost stays bounded, and the answer depends only on line numbers.
        """
        if not force and n - self._looked_back < CRASH_LOOKBACK // 2:
            return
        self._looked_back = n
        text = self._history.before(CRASH_CHARS)
        cut = len(text)
        for _ in range(CRASH_LOOKBACK + 1):  # only the last CRASH_LOOKBACK whole lines are read: scan no more
            cut = text.rfind("\n", 0, cut)
            if cut < 0:
                break
        text = text[cut + 1 :]
        low = text.lower()  # (once: not once per needle)
        if not text or not any(s in low for s in self._rules.crash_needles):
            return
        lines = text.split("\n")[:-1]  # (at most CRASH_LOOKBACK: the text was cut to them above)
        for i, j, raw in _parts(lines):
            low = raw.lower()
            if not any(s in low for s in self._rules.crash_needles):
                continue
            ln = self._reparse(raw[:MAX_LINE])
            if ln.level in QUIET_LEVELS and ln.level != "WARNING":
                continue
            rules = self._rules
            if (
                rules.crash.search(ln.body)
                and not rules.consequence.search(ln.body)
                and not rules.teardown.search(ln.body)
                and not _PY_WARNING.search(ln.body)
                and not ln.body.lstrip().startswith("warnings.warn(")  # the source line Python prints under a warning
            ):
                first = self._physical(n) - len(lines)  # (the file's number of the look-back's first line)
                noted = self._logical(first + i)
                if rules.own_stop_noted.search(ln.body):
                    if self._own_stop(lines[:i]):
                        continue  # the client had terminated its engine core itself: its note of it is no kill
                    if (signalled := self._signalled(lines[:i])) is not None:
                        i, j, raw = signalled  # the core said it got a signal that its client never sent: the kill
                        ln = self._reparse(raw[:MAX_LINE])
                k = self._logical(first + i)
                if self._root is not None and self._root.n <= k:
                    return
                if self._native_before(k):
                    return
                self._progress_behind(lines[:i], first)
                self._adopt_crash(ln, k)
                self._root.part = j  # the look-back's line, not the one being read
                if noted > k:  # a signal the core put off until its start-up's end: it died where its client noted it
                    self._place(self._root, noted)
                return

    def _progress_behind(self, lines: list[str], before: int) -> None:
        """An offline engine's progress bars (``Processed prompts: ``, ``Adding requests: ``) among the lines a
        crash's look-back read (``lines``, the first of them the file's line ``before``): it was running requests when it
        died, though past the log's first lines the bars carry nothing the prefilter looks for."""
        last = len(STAGES) - 1
        if self._timeline.now >= last:
            return
        seen = self._rules.stages[last].read
        at = next((m for m in range(len(lines) - 1, -1, -1) if any(s in lines[m] for s in seen)), None)
        if at is not None:
            self._announce_stages(
                self._timeline.reach_behind(last, self._logical(before + at)), self._reparse(lines[at])
            )

    def _signalled(self, lines: list[str]) -> tuple[int, int, str] | None:
        """The engine core's own word that a signal reached it (``[shutdown] EngineCore: trigger received
        signal=SIGTERM``) among ``lines`` (those before the client's note that the core exited), when its client
        had not sent it one before: it was stopped from outside (``_parts``' index, part, line)."""
        rules = self._rules
        for i, j, raw in _parts(lines):
            if rules.own_stop.search(raw):
                return None
            if rules.own_stop_acked.search(raw):
                return i, j, raw
        return None

    def _own_stop(self, lines: list[str]) -> bool:
        """Did the client send its engine core SIGTERM, and the core say after that it received it (``lines``:
        those before the client's note that the core exited)? Then the core stopped as asked."""
        rules = self._rules
        sent = next((k for k in range(len(lines) - 1, -1, -1) if rules.own_stop.search(lines[k])), None)
        return sent is not None and any(rules.own_stop_acked.search(x) for x in lines[sent + 1 :])

    def _cpp_report(self, n: int) -> None:
        """torch's report of a C++ exception it caught (a ``c10::Error``): its message, then ``Exception
        raised from F at FILE:N (most recent call first):``, then ``frame #0: c10::Error::Error(…)``. Logged
        at a warning's level when torch goes on (the TCPStore client's ``[W… TCPStore.cpp:125] [c10d]
        recvValue failed on SocketImpl(…): Connection reset by peer``); a native error's root like a
        library's error line when nothing else fails (1416, 5011). Not one that says torch tries again
        (``The server socket has timed out, will retry.``: a rendezvous waiting for its peers), nor one right
        after the heartbeat monitor's notice that the store's server is gone (a shutdown's, ``_CPP_AT_SHUTDOWN``)."""
        rows = self._history.before(8192).rsplit("\n", 4)  # (before, the message, the stack's head, the end)
        if len(rows) < 3 or not rows[-2].lstrip().startswith(_CPP_STACK):
            return
        if len(rows) >= 4 and _CPP_AT_SHUTDOWN.search(rows[-4]):  # (one line: the split keeps the rest in rows[0])
            return
        ln = self._reparse(rows[-3].rstrip("\r"))
        if (
            _CPP_REPORT.search(ln.body)
            and not _CPP_RETRY.search(ln.body)
            and not ln.body.lstrip().startswith(_CPP_STACK)
        ):
            self._native = self._new_root(ln, n - 2, "NativeError", ln.body)

    def _native_before(self, k: int) -> bool:
        """A native library's error line shortly before the crash at line k is the root (it says why)."""
        native = self._native
        if native is None or not 0 < k - native.n <= CRASH_LOOKBACK:
            return False
        if self._root is None or native.n < self._root.n:
            self._root = native
        return True

    def _adopt_crash(self, ln: Line, k: int) -> None:
        later = self._root
        root = self._new_root(ln, k, "NativeCrash", ln.body)
        root.dump = later is not None and later.dump
        if later is not None:
            root.stack, root.numbers = [ln.raw, *later.stack], [k, *later.numbers]
            root.trace = later.trace if later.trace is not None and later.trace.mode == "tb" else None
        self._root = root

    def _dump_line(self, ln: Line, n: int) -> bool:
        """A faulthandler line after ``Fatal Python error``: part of the root's stack."""
        root = self._root
        if root is None or root.emitted or not root.dump or ln.key != root.key or n <= root.numbers[-1]:
            return False
        if n - root.numbers[-1] > 1 or not self._rules.faulthandler.match(ln.body):
            root.dump = False
            return False
        root.stack.append(ln.raw[:4096])
        root.numbers.append(n)
        return True

    def _maybe_announce(self, ln: Line, n: int) -> None:
        root = self._root
        if root is None or root.emitted:
            return
        if root.pytest and n - self._pytest_e <= PYTEST_AT_WITHIN:
            return  # where pytest says it was raised comes next
        if root.wrap is not None:
            trace_over = (
                root.trace.mode == "closed"
                if root.trace is not None
                else n > root.n
                and ln.key == root.key
                and not ln.body[:1].isspace()
                and not _FIELD.match(ln.body)
                and not self._rules.consequence.search(ln.body)  # a workload manager's line in between
            )
            if n - root.n < WRAP_WINDOW and not (root.wrap.inner == "value-error" and trace_over):
                return
            root.wrap = None
        if root.dump:
            return
        since = n - root.n - root.chain_skipped  # (another process's lines and srun's in between not counted)
        if root.trace is None and 0 < since <= 3 and root.chain_skipped < MAX_BETWEEN and _interleaved(ln, root.key):
            root.chain_skipped += 1
            return
        if root.trace is None and ln.key == root.key and since <= 3 and _CHAINED.match(ln.body):
            root.chain_borrow = True
        if root.trace is None and not root.borrowed and ln.key == root.key and since <= BORROW_WITHIN:
            if opens_trace(ln.body):
                root.chain_borrow = True  # the same process's traceback printed right after: its frames tell the stage
            elif ln.level in ("ERROR", "CRITICAL") and not root.chain_borrow:
                return  # perhaps the header logged before that traceback: one more line
        if (root.type == "NativeCrash" or root.chain_borrow) and not root.borrowed and n - root.n < EMIT_AFTER:
            return  # the incident's traceback, printed next, tells the stage
        if root.trace is not None:
            if root.trace.mode != "tb":
                self._announce(root)
        elif n - root.n >= EMIT_AFTER or (n > root.n and ln.key == root.key and (ln.body.strip() or since > 1)):
            self._announce(root)

    def _announce(self, root: _Root) -> None:
        root.emitted = True
        root.verdict = self._verdict(root)
        root.stage = root.verdict.stage
        self._send(
            ExceptionFound(
                run=self.run,
                stage=root.stage,
                line=root.raw,
                line_number=self._physical(root.n),
                stack=_stack(root),
                process=root.process,
                signature=make_signature(root.stage, root.type, root.message),
                oom_root_cause=self._oom_flag(),
            )
        )

    def _oom_flag(self) -> bool | None:
        if self._root is not None and self._rules.oom.search(self._root.body):
            return True
        return False if self._oom_seen else None

    def _verdict(self, root: _Root) -> Verdict:
        text = root.body if root.context is None else f"{root.body} {self._reparse(root.context).body}"
        more = [self._reparse(x).body.strip() for x, k in zip(root.stack, root.numbers, strict=False) if k > root.n]
        if more := [x for x in more if not self._rules.consequence.search(x)]:  # not a workload manager's line
            text = f"{text} {' '.join(more)}"  # the message's own next lines (a tool's stderr it quotes)
        outer = [t for t in reversed(root.outer) if t is not root.trace and _callers(t, root)]  # outermost first
        stack = [x for t in outer for x in t.lines] + root.stack + root.borrowed
        numbers = [x for t in outer for x in t.numbers] + root.numbers + root.borrowed_numbers
        marks, stage_idx = root.marks, root.stage_idx
        if (r := self._relaunch_at) is not None and root.n >= r:  # the new run's start-up, not the stopped run's
            marks = [mark for mark in self._relaunch_marks if mark[1] <= root.n]
            now, upto = self._relaunch_now
            stage_idx = now if upto < root.n else furthest(marks)
        ev = Evidence(text, root.n, stack, numbers, root.header, stage_idx, marks, root.raw)
        ev.native = root.type in ("NativeCrash", "NativeError", "Killed", "FatalError", "LinkError", "CompileError")
        ev.said = root.type in ("NativeError", "CompileError") or (
            ev.native and self._rules.crash_ran.search(root.body) is not None
        )
        ev.process, ev.cut, ev.part = root.process, root.cut, root.part
        ev.silent = root is self._unexplained
        ev.ready_part = self._ready_part
        ev.followed = self._followed
        if "serving" in self._talk and "startup" not in self._talk:
            ev.talk = ("serving", self._talk["serving"])
        elif "startup" in self._talk:
            ev.talk = ("startup", self._talk["startup"])
        return decide(self._rules, ev)

    def _stop_before(self, n: int | None = None) -> bool:
        """Did the operator stop the server (``shutdown triggered``) shortly before this line, and not launch it
        again since? (With ``n``, the line being classified: a launch since is noted, :meth:`_relaunched`.)"""
        since = self._since_stop()
        if since is None:
            return False
        if n is not None:
            return not self._relaunched(n, since)
        return self._rules.relaunch.search(since) is None

    def _since_stop(self) -> str | None:
        """The text from the operator's last stop to this line (None: no stop in the last MiB)."""
        texts = [t for s in self._rules.normal_stop if (t := self._history.since(s)) is not None]
        return min(texts, key=len) if texts else None

    def _relaunched(self, n: int, since: str | None) -> bool:
        """Was the server launched again (its arguments' line: ``non-default args``) after the operator's last
        stop, before line ``n`` (the line being classified)? ``since``: the text from that stop (:meth:`_since_stop`).
        A requeued job's next attempt appended to its output file, a container's restart in ``docker logs``: what
        fails after it is the new run's. Notes the line."""
        if since is None or (m := self._rules.relaunch.search(since)) is None:
            return False
        at = n - since.count("\n", m.start())
        if at != self._relaunch_at:  # the new run's own start-up, read back: the stages it reached
            self._relaunch_at, timeline = at, Timeline(self._rules, 0)
            for k, raw in enumerate(since[since.rfind("\n", 0, m.start()) + 1 :].splitlines()):
                timeline.see(self._reparse(raw), at + k, raw.lower())
            self._relaunch_marks = [(STAGES[0], at), *((mark.stage, mark.line) for mark in timeline.marks)]
            self._relaunch_now = (timeline.now, n - 1)
        return True

    # --- stages ------------------------------------------------------------------------------

    def _announce_stages(self, marks: list[StageMark], ln: Line) -> None:
        for m in marks:
            if m.stage == "runtime":
                self._ready_part = self._part  # (the part of a flattened line it was read in)
                root = self._root
                if root is not None and root.n < m.line and self._rules.script_survivable.match(root.body):
                    self._root = None  # a launch script's failed command the start-up got past: the server is ready
            self._send(
                StageReached(
                    run=self.run, stage=m.stage, line=self._physical(m.line), log_time=m.time, text=ln.raw[:300]
                )
            )
        if self._timeline.needles is not self._needles:
            self._refresh_sentinels()

    def _refresh_sentinels(self) -> None:
        self._needles = self._timeline.needles
        self._sentinels = tuple(dict.fromkeys([*self._always, *self._needles]))
        self._finders = tuple((s, _finder(s)) for s in self._sentinels)

    # --- output --------------------------------------------------------------------------------

    def _send(self, event: Event) -> None:
        if self._emit is not None:
            self._emit(event)

    def _physical(self, n: int) -> int:
        """The file's number of the log's line ``n`` (they differ after a hard wrap's joined pieces)."""
        joins = self._joins
        if not joins or n <= joins[0][0]:
            return n
        i = bisect.bisect_left(joins, (n,)) - 1  # the last joined line before n
        return n + joins[i][1]

    def _logical(self, p: int) -> int:
        """The log's line that holds the file's line ``p`` (the inverse of :meth:`_physical`: a hard wrap's
        piece is part of the line joined from it). What is read back out of the history is numbered by the file."""
        joins = self._joins
        if not joins or p <= joins[0][0]:
            return p
        i = bisect.bisect_left(joins, p, key=lambda j: j[0] + j[1])  # the first joined line ending at or after p
        if i == len(joins):
            return p - joins[-1][1]
        before = joins[i - 1][1] if i else 0
        n = joins[i][0]
        return n if p >= n + before else p - before

    def _hung(self) -> Verdict | None:
        """A log with no failure line that ENDS with a server waiting on a part that never answers, said at
        least twice (``[hang]``): it hung there. Before the API was ready, in the engine's start-up (what
        the waiting is for, whatever marker the log reached before it), or the device's when what it waits
        for is the accelerators (a placement group); after, while serving."""
        if not self._ended or len(self._hang) < 2 or self._n - self._hang[-1] > HANG_TAIL:
            return None
        ready = self._ready_line()
        now = self._timeline.now
        if ready is not None and ready < self._hang[0]:
            stage = "runtime"
        elif self._hang_device:
            stage = "device"  # (the workers wait for GPUs that were never given: no marker past them counts)
        elif STAGES.index("weights") <= now < STAGES.index("runtime"):
            stage = STAGES[now]
        else:
            stage = "engine"  # (no marker past the config: the waiting is for the engine core's start-up)
        why = f"the log ends with the server waiting on a part that never answered (line {self._hang[-1]}): it hung"
        return Verdict(stage, "hang", tuple(self._hang), "low", why)

    def _result(self) -> ClassifyResult:
        res = self._logical_result()
        if not self._joins:
            return res
        at = self._physical
        res.stages = [m._replace(line=at(m.line)) for m in res.stages]
        res.lines += self._joins[-1][1]
        if (fe := res.first_exception) is not None:
            res.first_exception = fe._replace(line_number=at(fe.line_number))
        if res.evidence is not None:
            res.evidence = replace(res.evidence, lines=tuple(at(k) for k in res.evidence.lines))
        return res

    def _logical_result(self) -> ClassifyResult:
        root = self._root
        res = ClassifyResult(stages=list(self._timeline.marks), lines=self._n)
        if root is None:
            res.oom_root_cause = None
            if self._n == 0 and self._ended:
                res.failed_stage, res.confidence = "container", "low"
                why = "the server printed nothing at all: it died before its first line"
                res.evidence = Verdict("container", "empty-log", (), "low", why)
                res.advice = advice_text(self._rules, "container")
            elif (hung := self._hung()) is not None:
                res.failed_stage, res.evidence = hung.stage, hung
                res.advice, res.confidence = advice_text(self._rules, hung.stage), "low"
            elif self._recognised() or not self._ended:  # a live view never calls a log "unknown" yet
                res.advice = advice_text(self._rules, "none")
                res.confidence = "high" if self._ready_line() is not None else "medium"
                res.evidence = Verdict("none", "no-root", (), res.confidence, "no root failure in the log")
            else:
                res.failed_stage = "unknown"
                res.advice = advice_text(self._rules, "unknown")
                res.confidence = "low"
                why = "no vLLM log line, start-up marker, exception or word of its stack in it: not a vLLM server log"
                res.evidence = Verdict("unknown", "not-a-vllm-log", (), "low", why)
            return res
        # decided again when more came after the announcement: the callers' traceback, or the message's own next lines
        more = (root.trace is not None and root.trace.continuation > 0) or root.goes_on > 0
        verdict = self._verdict(root) if root.outer or more or root.verdict is None else root.verdict
        verdict = self._serving(root, self._unfinished(root, verdict))
        stage = verdict.stage
        res.failed_stage = stage
        said = _message_line(root)  # (a bare assert's statement, a message begun on the next line)
        context = said if said is not None else _context(root)
        res.first_exception = FirstException(root.raw, root.n, _stack(root), root.process, context)
        res.oom_root_cause = self._oom_flag()
        res.exception_type = root.type
        message = self._reparse(said).body.strip() if said is not None else root.message
        res.signature = make_signature(stage, root.type, message)
        res.advice = advice_text(self._rules, stage)
        res.evidence, res.confidence = verdict, verdict.confidence
        return res

    def _late(self, ln: Line, n: int) -> None:
        """Note the first line after the root that says the engine had been serving, and the first where the
        engine core says its busy loop failed (one of those lines)."""
        root = self._root
        if root is None or n <= root.n:
            return
        if (self._serving_after is None or self._loop_failed_after is None) and self._rules.runtime_after.search(
            ln.body
        ):
            if self._serving_after is None:
                self._serving_after = n
            if self._loop_failed_after is None and self._rules.loop_failed.search(ln.body):
                self._loop_failed_after = n

    def _serving(self, root: _Root, verdict: Verdict) -> Verdict:
        """A root with only weak evidence that an EngineDeadError followed: it killed a serving engine. A root
        the markers alone place between the engine's build and the API's ready (:func:`_built`) that the engine
        core's own word of its busy loop failing followed: it was running requests."""
        if verdict.confidence == "low":
            n, why = self._serving_after, "an EngineDeadError followed it (line {}): the engine died while serving"
        elif _built(verdict):
            n, why = (
                self._loop_failed_after,
                "the engine core said its busy loop failed (line {}): it was running requests",
            )
        else:
            return verdict
        if n is None or n <= root.n:
            return verdict
        return Verdict("runtime", "wording", (n,), "medium", why.format(n))

    def _unfinished(self, root: _Root, verdict: Verdict) -> Verdict:
        """A root with only weak evidence, and a start-up progress bar stuck short of its total after
        it: the loader's (``Loading safetensors checkpoint shards: 3% Completed | 1/37``, printed when
        the OOM that stopped the load flushed it) or the CUDA-graph capture's (``Capturing CUDA graphs
        (…): 53%|… | 27/51``, another worker's bar printed as the first one's kernel failed): the root
        stopped that work. Asked at the end of the log only (a bar still moving is not stuck), only of
        the last bar of each kind, and only while the start-up had not got past that bar's stage."""
        if verdict.confidence != "low" or not self._ended:
            return verdict
        for literal, bar, stage, work in _BARS:
            if root.stage_idx > STAGES.index(stage):
                continue
            tail = self._history.since(literal)
            if tail is None or not (m := bar.search(tail.split("\n", 1)[0].rstrip("\r").rsplit("\r", 1)[-1])):
                continue
            done, total = int(m["done"]), int(m["total"])
            n = self._n - tail.count("\n") + (1 if tail.endswith("\n") else 0)  # the bar's own line
            if done >= total or n <= root.n:
                continue
            why = f"{work} stopped at {done}/{total} (line {n}): it failed there"
            return Verdict(stage, "markers", (n,), "medium", why)
        return verdict

    def _ready_line(self) -> int | None:
        """The log's line where the API became ready (the timeline reaches each stage once), or None."""
        return next((m.line for m in self._timeline.marks if m.stage == "runtime"), None)

    def _ready_after(self, n: int) -> bool:
        """The API became ready after the log's line ``n``."""
        return (ready := self._ready_line()) is not None and ready > n

    def _recognised(self) -> bool:
        """Anything that says this is a vLLM log: the word vllm, a stage past the first line, or a Python
        exception's report that is no failure (every other one is a root: a log's, so it is read as one)."""
        return self._vllm or self._timeline.now > 0 or self._n == 0 or self._python


def _built(verdict: Verdict) -> bool:
    """The start-up markers alone place the root after the engine was built and before the API was ready
    (``init engine … took`` and no ``Application startup complete``): in a server's start-up, or in an offline
    ``LLM(...)``, which has no API and generates next."""
    return verdict.rule == "markers" and verdict.stage == "api"


SHARDS = "checkpoint shards:"
"""The look-back literal of the loader's progress bar (the remote prefilter reads a MiB past each one)."""
_SHARDS_BAR = re.compile(re.escape(SHARDS) + r" +\d+% Completed \| (?P<done>\d+)/(?P<total>\d+)")
"""tqdm's bar of vLLM's weight loaders (``Loading safetensors checkpoint shards: 3% Completed | 1/37 […]``)."""
_FRAME_LINE = re.compile(r'(?:(?:^|\s)File "[^"]*|^\s*\S*\.py)", line \d+,? in \S+\s*$')
"""A frame line of a traceback (``  File "P", line N, in F``), whatever prefix is before it, or one a paste cut
before its path's end (``layer/layer.py", line 76, in __init__``)."""
_ASSERT = re.compile(r"(?:^|\s\s)\s*assert (?P<expr>\S.*?)\s*$")
"""The ``assert`` statement Python prints under its frame (indented), whatever prefix is before it."""
_RAISE = re.compile(
    r"(?:^|\s\s)\s*raise (?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*)"
    r"(?:\((?:[fr]?(?P<q>[\"\x27])(?P<said>[^\"\x27]*)(?P=q)|(?P<args>.*))\))?(?: from \w+)?\s*$"
)
"""The ``raise`` of a named exception Python prints under its frame, its message when a literal gives it (not a bare
re-raise, nor an exception held in a variable)."""
_STACK_LINE = re.compile(r'(?:^|\s)File "[^"]*", line \d+|\s{2,}\S')
"""A line of a stack printed without its head: a frame, or the indented code or carets under one."""
_PASTE_END = re.compile(r"\s*(?:```\w*|~~~)?\s*$")
"""What a paste puts after a log: its closing fence, blank lines."""
_DIGITS = re.compile(r"\d")
_ASSERT_TAIL = 1 << 14
"""Characters before the end of the log read for a stack that ends in its ``assert``."""
CAPTURE = "Capturing CUDA graph"
"""The look-back literal of the CUDA-graph capture's progress bar (V1: ``Capturing CUDA graphs (mixed
prefill-decode, PIECEWISE):``, ``Capturing CUDA graph shapes:``)."""
_CAPTURE_BAR = re.compile(re.escape(CAPTURE) + r"[^:\n]{0,80}: +\d+%\|[^|\n]*\| *(?P<done>\d+)/(?P<total>\d+)")
_BARS = (
    (SHARDS, _SHARDS_BAR, "weights", "the loader's progress through the checkpoint shards"),
    (CAPTURE, _CAPTURE_BAR, "engine", "the CUDA-graph capture"),
)
"""Start-up progress bars: (look-back literal, bar, the stage of its work, the work in words)."""


def _in_code_span(m: re.Match[str] | None, body: str) -> bool:
    """Is a root rule's match ``m`` in ``body`` inside a markdown code span or a quotation of prose (``GLM fails
    to initialize with `CUDA out of memory` during …``, ``the job reports an “address already in use” error``):
    words before the opening mark, so a reporter's sentence quotes the failure, the line no failure of its own?"""
    if m is None:
        return False
    for opening, closing in _QUOTE_MARKS:
        opened = body.rfind(opening, 0, m.start())
        inside = (
            body.count(opening, 0, m.start()) % 2 == 1
            if opening == closing
            else body.count(opening, 0, m.start()) > body.count(closing, 0, m.start())
        )
        if (
            opened > 0
            and inside
            and closing in body[m.end() :]
            and any(c.isalpha() for c in body[:opened])
            and not body.lstrip().startswith(opening)
        ):
            return True
    return False


def _told(body: str, m: re.Match[str] | None) -> bool:
    """Is ``body`` a reporter's sentence that tells of the failure a root rule matched in it (``if I want to serve
    the model without a HF Hub connection … I cannot serve it``, ``…也是在 determine_num_available_blocks 处fails,
    但是报一个NCCL error:``): the reporter's own words before the match (a first person, CJK prose), not the
    failure's line?"""
    if m is None:
        return False
    before = body[: m.start()]
    return _FIRST_PERSON.search(before) is not None or _CJK_WORDS.search(before) is not None


_FIRST_PERSON = re.compile(r"(?<![\w/])(?:I|I'm|I've|my|My|we|We|our|Our)\s+[a-z]")
"""The reporter speaking (``I cannot``, ``my server``, ``we tried``): a sentence of prose, not a program's line."""
_CJK_WORDS = re.compile(r"[\u4e00-\u9fff]{2}")
"""Two Chinese characters in a row: prose around a quoted failure (a program's message is not written so)."""


_QUOTE_MARKS = (("`", "`"), ("\u201c", "\u201d"), ('"', '"'), ("\u300c", "\u300d"))
"""Marks a sentence quotes words between: markdown's backticks, typographic and straight double quotes, CJK corners."""


def _advice(body: str, q: re.Match[str] | None = None) -> bool:
    """The exception ``body`` quotes inline (``q``, else the first one) is named as what could happen."""
    if q is None and (q := _INLINE_EXC.search(body)) is None:
        return False
    return _MAY_CAUSE.search(body, 0, q.start()) is not None


def _quoted_type(q: re.Match[str]) -> str:
    g = q.groupdict()
    return g["type"] or g.get("qtype") or g.get("ptype") or ""


def _quoted_msg(q: re.Match[str]) -> str:
    g = q.groupdict()
    return g["msg"] or g["rmsg"] or g.get("qmsg") or g.get("pmsg") or ""


def _callers(trace: Trace, root: _Root) -> bool:
    """Do a traceback's frames, chained to the root's, hold the root's callers? Not when it is one
    Python's logging printed for a record it could not format while the root was handled (``During
    handling …``, its first frame logging's own): those are the logger's frames. (Another handler's
    exception was raised in the root's callers, and its frames hold them.)"""
    return trace not in root.handling or not (len(trace.lines) > 1 and _LOGGING_FRAME.search(trace.lines[1]))


def _cjk_quote(body: str) -> re.Match[str] | None:
    return None if body.isascii() else _CJK_EXC.search(body)


def _frame_names(trace: Trace) -> list[str]:
    """``PATH FUNC`` of each frame of a traceback that names its file (what the request rules match)."""
    return [f"{path} {func}" for _i, (path, func) in frames(trace.lines) if path]


def _as_read(text: str) -> str:
    """Lines of the log's history as the classifier read them: a structured record (docker's ``{"log": …}``,
    one per line) is its text. (Rebuilding a traceback from the history reads its frames from the text.)"""
    if '{"' not in text and "{ " not in text:
        return text
    out = []
    for raw in text.split("\n"):
        lines = unjson(raw) if raw[:2] in ('{"', "{ ") else None
        out.append(lines[-1] if lines else raw)  # (one line per record: the numbering stays the file's)
    return "\n".join(out)


def _flattened(raw: str) -> list[str] | None:
    """The lines a long line joined (a paste that lost its line breaks), or None."""
    if raw[:1] == "{" and (lines := unjson(raw)) is not None:
        return lines  # a structured log's record: its text, and a traceback in its own field
    if (quoted := escaped_lines(raw)) is not None:
        return quoted  # an error's lines in one quoted string, their breaks escaped
    parts = unflatten(raw) if len(raw) >= FLAT_MIN else None
    if "%|" not in raw:
        return parts
    out: list[str] = []
    for part in parts or [raw]:  # a progress bar and the line printed after it, in any of the parts
        while (two := unglue(part)) is not None:
            out.append(two[0])
            part = two[1]
        out.append(part)
    return out if len(out) > 1 else None


def _parts(lines: list[str]):
    """(index, part index, line) of each line; a flattened paste's parts each under its line's index."""
    for i, raw in enumerate(lines):
        for j, part in enumerate(_flattened(raw[:MAX_LINE]) or (raw,)):
            yield i, j, part


def _field_error(body: str) -> bool:
    """Pydantic's line for one field (``Value error, … [type=value_error, …]``), wherever it starts."""
    return body.startswith("Value error, ") or "[type=" in body


def _message_line(root: _Root) -> str | None:
    """The line that says what the root's own line does not: for a bare AssertionError, the assert
    statement Python printed under the innermost frame (an outer frame's ``assert f(x)`` only called what
    failed); for an exception whose message starts on the next line (``RuntimeError: `` then
    multiprocessing's indented "An attempt has been made …"), that line. None for a root unwrapped from a
    wrapper (its wrapper is what is reported beside it)."""
    if root.context is not None or root.raw not in root.stack:
        return None
    at = len(root.stack) - 1 - root.stack[::-1].index(root.raw)
    if not root.message.strip() and root.type.endswith("AssertionError"):
        for x in reversed(root.stack[:at]):
            if _ASSERT.search(x):
                return x
            if _FRAME_LINE.search(x):
                break
    if EMPTY_MESSAGE.match(root.body):
        return next((x for x in root.stack[at + 1 :] if x.strip() and not _PASTE_END.fullmatch(x)), None)
    return None


def _context(root: _Root) -> str | None:
    """The line reported beside the root: the wrapper it was unwrapped from, or else the line a logger
    printed its message on right before its traceback (V0's ``ERROR … [engine.py:458] <message>``, then
    ``Traceback …``, then ``TypeError: <message>``): the same failure's first line."""
    if root.context is not None or root.header is None:
        return root.context
    said, at = root.header[0].strip(), root.header[1]
    if len(said) < 12 or said not in root.body:
        return None
    return next((x for x, k in zip(root.stack, root.numbers, strict=False) if k == at), None)


def _stack(root: _Root) -> list[str]:
    """The root's stack as printed, holding the root line itself (a one-line root that
    borrowed the traceback printed after it keeps its own line first)."""
    stack = list(root.stack)
    if root.raw in stack:
        return stack
    if root.context is not None and root.context in stack:
        return [*stack, root.raw]
    return [root.raw, *stack]

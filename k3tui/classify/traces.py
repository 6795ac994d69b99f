"""One process's traceback being assembled, line by line, while other processes interleave.

vLLM V1 with TP=8 prints eight tracebacks at once, each line prefixed by its process;
the classifier keeps one :class:`Trace` per process key and feeds each line to its own
process's trace. Python's layout decides where a traceback ends: frames and code are
indented, the first unindented line is the exception, a few continuation lines may
follow (pydantic, NumPy), then a blank line, a chained ``The above exception …`` or
the next log record closes it.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from .lines import Line, parse, unescape, unglue

MAX_TRACE_LINES = 1000
"""Lines kept per traceback (a recursion error prints thousands); the rest is counted."""
MAX_STORED = 4096
"""Characters kept of one stack line."""
MAX_CONTINUATION = 30
STALE_AFTER = 200
"""Lines of other processes after which a silent, unfinished traceback is closed."""

TB_HEAD = "Traceback (most recent call last):"
_FRAME = re.compile(
    r'File "(?P<path>[^"]*)", line \d+,? in(?: (?P<func>[^\s(]+)|\s*$)|(?P<cut>\S*\.py)", line \d+, in (?P<cfunc>\S+)'
    r"|File (?P<ipath>[^\s\"][^,\n]*?):\d+, in (?:[\w<>]+\.)*(?P<ifunc>[\w<>]+)"
    r"|(?P<cell>Cell In ?\[[^\]\n]*\]), line \d+"
    r"|(?P<opath><ipython-input-[^>\s]*>|[/~]\S*?\.py)(?:\]\([^)\s]*\))? in (?P<ofunc>[\w<>]+)"
)
"""A frame: Python's ``File "P", line N, in F``, faulthandler's ``… line N in F``, one cut before its
path, one cut after ``in`` (a paste that ends there: its file still says where it ran; no function); IPython's (a notebook's traceback): ``File P:N, in Class.F(args)``, a cell's ``Cell In[3], line 1``
(its top-level code, as Python names a script's), and before IPython 8 ``P in F(args)``."""
_CUT_FRAME = re.compile(r'^\s*\S*\.py", line \d+, in \S+$')
"""A frame line whose start was cut off (an excerpt that begins mid-stack)."""
_ENDS_IN_FUNC = re.compile(r", in \S+\s*$")
_EXC_SHAPE = re.compile(r"^(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*(?::|\(|$)|^[A-Z_]\w*(?::|\(|$)")
"""An exception line: ``Type[: msg]``, ``Type(…)``; an undotted type is capitalised, so another
program's own stderr (``srun: error: …``, ``bash: …``) is not taken for one."""
EXC_TYPE = r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault|Timeout)"
"""An exception's type for sure, by its suffix (as ``patterns.toml [exception]`` spells it)."""
_EXC_LINE = re.compile(EXC_TYPE + r"(?::|$)")
"""An exception line for sure (its type's suffix says so), where a code line could stand."""
_CARETS = re.compile(r"^[\^~]+\s*$")
"""Python 3.11's markers under a frame's code (``~~~~^^^^``), left unindented when an excerpt lost its indentation."""
MAX_FOREIGN = 5
"""Unindented lines of no traceback shape that may sit inside one (another program's stderr
interleaved, a workload manager's report) before it counts as ended."""


def opens_trace(body: str) -> bool:
    """Does this message body start a traceback (or is it a frame of a headless one)?"""
    return (
        body.endswith(TB_HEAD)
        or body.startswith('  File "')
        or _CUT_FRAME.match(body) is not None
        or (body.startswith('File "') and _ENDS_IN_FUNC.search(body) is not None)  # indentation lost to markdown
    )


@dataclass(slots=True)
class Trace:
    key: tuple[str, str]
    process: str | None
    start: int
    quiet: bool
    """Printed at INFO/WARNING level: logged and survived, never a root."""
    level: str | None = None
    """The level its lines carry; a line of the same process at another level is not ours."""
    header: tuple[Line, int] | None = None
    """The ERROR line logged just before it (``logger.exception``'s message)."""
    said: tuple[Line, int] | None = None
    """The same process's ERROR line logged before that header (the reason a start-up failure reports)."""
    lines: list[str] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    """The log line number of each kept line."""
    mode: str = "tb"
    """``tb`` collecting frames, ``exc`` after the exception line, ``closed``."""
    last: int = 0
    continuation: int = 0
    record: str = ""
    """For an exception line whose message starts with a line end, the logger's prefix of that line
    (process, level, time, location): a line with the same prefix is the same record going on, its
    message (vLLM prefixes each line of a message of several lines)."""
    dropped: int = 0
    frames: int = 0
    foreign: int = 0
    """Lines of another writer skipped inside this traceback (at most MAX_FOREIGN)."""
    survived: bool = False
    """Its header says the code that logged it went on without what failed (a plugin that did not load)."""
    thread: bool = False
    """Its header says it ended one thread of a process that went on (``Exception in thread …:``)."""
    request: bool = False
    """Its header says one request's handling failed and was answered with an error (the server went on)."""
    tagged: bool = False
    """Its lines spell their ERROR level out (``ERROR``, ``[error]``): each one carries the prefilter's
    ``rror``, so once its exception line came, the lines it may still take are found without a busy scan."""
    code_next: bool = False
    """The last line was an UNINDENTED frame (an excerpt lost its indentation): the next is its code."""
    indent: int = 0
    """Spaces a paste put before each of its lines (a markdown list item, a quoted block), learnt from
    its first frame (Python's own indentation is 2) when its ``Traceback`` head is indented (-1 until
    then); its lines are read without them, so its exception line is unindented again."""

    def add(self, raw: str, n: int) -> None:
        self.last = n
        if len(self.lines) < MAX_TRACE_LINES:
            self.lines.append(raw[:MAX_STORED])
            self.numbers.append(n)
        else:
            self.dropped += 1

    def step(self, ln: Line, n: int) -> str:
        """Feed one line of this process.

        Returns ``frame`` (consumed), ``exception`` (consumed: it is the exception line),
        ``end`` (consumed, the trace is over), ``skip`` (another record of the same
        process, printed in the middle; the trace stays open) or ``other`` (not part of
        this trace; the trace is over and the caller handles the line).
        """
        body = ln.body
        if ln.level != self.level:
            return "skip" if self.mode == "tb" else "other"
        if self.mode == "tb":
            if body.startswith(TB_HEAD) and len(self.lines) > 1:
                return "other"
            code, self.code_next = self.code_next, body.startswith('File "') and _ENDS_IN_FUNC.search(body) is not None
            if code and _EXC_LINE.match(body):
                code = False  # a frame without source (Cython, <unknown>) right before the exception
            if (
                not body
                or body[0].isspace()
                or code
                or body.startswith(("[Previous line", TB_HEAD, 'File "'))
                or (body[0] in "^~" and _CARETS.match(body))
            ):
                self.add(ln.raw, n)
                self.frames += body.startswith(('  File "', 'File "'))
                return "frame"
            if not self.frames:
                return "other"  # Python prints a frame before the exception
            if not _EXC_SHAPE.match(body):
                if self.foreign < MAX_FOREIGN and ln.level is None:
                    self.foreign += 1  # another writer's line between two frames: the traceback goes on
                    return "skip"
                return "other"  # the exception comes as Type[: msg]
            self.add(ln.raw, n)
            self.mode = "exc"
            self.record = _record(ln) if EMPTY_MESSAGE.match(body) else ""
            return "exception"
        return self._after_exception(ln, n)

    def _after_exception(self, ln: Line, n: int) -> str:
        body = ln.body
        if ends_trace(body):
            return "end"
        if body.startswith(TB_HEAD) or self.continuation >= MAX_CONTINUATION:
            return "other"
        if ln.level is not None and not body[0].isspace() and (not self.record or _record(ln) != self.record):
            return "other"  # (a logger's next record; its same record goes on: a message of several lines)
        self.continuation += 1
        self.add(ln.raw, n)
        return "frame"


def ends_trace(body: str) -> bool:
    """A blank line or Python's chain sentence (``The above exception …``, ``During handling …``): the traceback
    before it is over, whatever came between."""
    return not body.strip() or body.startswith(("The above exception", "During handling"))


def _frame(m: re.Match[str]) -> tuple[str, str]:
    """(file path, function) of a ``_FRAME`` match, whichever layout printed it."""
    if m["cell"] is not None:
        return f"<{m['cell']}>", "<module>"
    path = next(p for p in (m["path"], m["cut"], m["ipath"], m["opath"]) if p is not None)
    return path.replace("\\", "/"), m["func"] or m["cfunc"] or m["ifunc"] or m["ofunc"] or ""


EMPTY_MESSAGE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*:\s*$")
"""An exception line whose message starts with a line end (``MLIRCompilationError: ``): its message follows."""


def _record(ln: Line) -> str:
    """The prefix a logger put before a line (empty when it has none or the body is not the line's end)."""
    raw = ln.raw.rstrip()
    body = ln.body.rstrip()
    return raw[: len(raw) - len(body)] if body and raw.endswith(body) and ln.level is not None else ""


def _every_frame(stack: list[str]) -> Iterator[tuple[int, str, str]]:
    """``(index in stack, path, function)`` of each frame line, module-level ones included."""
    for i, line in enumerate(stack):
        if ("line " in line or " in " in line) and (m := _FRAME.search(unescape(line))):
            yield i, *_frame(m)


def import_frame(stack: list[str]) -> int | None:
    """Index of the innermost frame when it is module-level code or the import machinery
    (the failure happened while importing), else None."""
    for i, path, func in deque(_every_frame(stack), maxlen=1):  # the innermost frame only
        if func == "<module>" or path.startswith("<frozen importlib"):
            return i
    return None


def import_inside(stack: list[str], own: re.Pattern[str]) -> int | None:
    """Index of the innermost frame of the files ``own`` matches when it is module-level code and other
    code's frames follow it (work a module does while it is imported: a decorator, a check), else None."""
    every = list(_every_frame(stack))
    mine = [(k, i, func) for k, (i, path, func) in enumerate(every) if own.search(path)]
    if not mine or mine[-1][2] != "<module>" or mine[-1][0] == len(every) - 1:
        return None
    k = mine[-1][0]
    if k == 0 or _RUNPY.search(every[k - 1][1]):
        return None  # the main program's own module (a script, ``python -m``): run, not imported
    return mine[-1][1]


def from_program_start(stack: list[str]) -> bool:
    """Does the stack's outermost frame run module-level code (a script's or ``python -m``'s first
    frame)? Then it is the main program's own stack, printed whole from where the process began."""
    first = next(_every_frame(stack), None)
    return first is not None and (first[2] == "<module>" or _RUNPY.search(first[1]) is not None)


_RUNPY = re.compile(r"(?:^|/)runpy\.py$|^<frozen runpy>$")
"""``python -m``'s entry (``runpy.py``, ``<frozen runpy>``): its first frame is runpy's, not ``<module>``."""


_CALL = re.compile(r"([A-Za-z_]\w*)\(")


def frames(stack: list[str]) -> list[tuple[int, tuple[str, str]]]:
    """``(index in stack, (file path, function))`` of each frame of a stack, outermost first.

    The source line Python prints under a frame names the function that frame was
    calling: it is returned as a frame with an empty path, right after its caller, so a
    stack cut before its innermost frames (an excerpt) still says where it was going.
    Module-level frames (``<module>``: an import chain) say nothing about the stage.
    """
    out: list[tuple[int, tuple[str, str]]] = []
    after_frame = False
    for i, line in enumerate(stack):
        if ("line " in line or " in " in line) and (m := _FRAME.search(unescape(line))):
            path, func = _frame(m)
            if func != "<module>":
                out.append((i, (path, func)))
            after_frame = func != "<module>"
            continue
        if after_frame and (c := _CALL.search(line)):
            out.append((i, ("", c.group(1))))
        after_frame = False
    return out


def rebuild(text: str, ln: Line, n: int, max_line: int, reparse: Callable[[str], Line] = parse) -> Trace | None:
    """The traceback of ``ln``'s process that ends just before line ``n``, from the log text
    before it (``text`` starts at a ``Traceback`` head), or None when it is not one. ``reparse`` reads a
    line as the classifier reads it (without a source's name it learnt); the indentation a paste put
    before the head is taken off every line."""
    lines = text.split("\n")[:-1]
    first = n - len(lines)
    head = reparse(lines[0][:max_line])
    if not head.body.lstrip(" \t").startswith(TB_HEAD) and (two := unglue(head.body.rstrip("\r"))) is not None:
        # a progress bar's carriage return, and the head printed after it: the line as it would have been printed
        # without the bar; its first frame's line says what goes before a line of this traceback (a collector's
        # prefix, a paste's indentation, and Python's two spaces more)
        frame = lines[1] if len(lines) > 1 else ""
        body = reparse(frame[:max_line]).body
        if frame.endswith(body) and body.lstrip(" \t").startswith('File "'):
            indent = len(body) - len(body.lstrip(" \t"))
            lines[0] = frame[: len(frame) - len(body)] + body[: max(0, indent - 2)] + two[1]
        else:
            raw = lines[0].rstrip("\r")
            lines[0] = (raw[: len(raw) - len(head.body)] if raw.endswith(head.body) else "") + two[1]
        head = reparse(lines[0][:max_line])
    if head.body[:1] in (" ", "\t") and head.body.lstrip(" \t").startswith(TB_HEAD):
        cut = len(head.body) - len(head.body.lstrip(" \t"))  # the paste's indentation, off every line
        lines = [raw[cut:] if raw[:cut].isspace() else raw for raw in lines]
        head = reparse(lines[0][:max_line])
    if head.key != ln.key or head.level != ln.level or not head.body.startswith(TB_HEAD):
        return None
    trace = Trace(ln.key, ln.process, first, quiet=False, level=ln.level)
    trace.add(lines[0], first)
    for i, raw in enumerate(lines[1:], 1):
        other = reparse(raw[:max_line])
        if other.key == ln.key and trace.step(other, first + i) not in ("frame", "skip"):
            return None
    return trace if trace.frames else None

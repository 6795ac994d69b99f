"""Take one raw log line apart: wrappers, process, level, the log's own time, message body.

A vLLM line reaches us wrapped in layers that say nothing about the failure but break
naive matching: a terminal's CR or a literal ``^M``, colour escapes, ``docker logs -t``
timestamps, docker compose's ``vllm-1  | ``, journald's ``Nov 30 03:29:01 host vllm[42]: ``,
vLLM V1's ``(Worker_TP3 pid=42)`` or ``(VllmWorker rank=3 pid=42)``, the logging prefix (``ERROR 08-23 08:25:25 file.py:226]``
in V0, ``ERROR 11-30 03:33:00 [file.py:953]`` in V1, uvicorn's ``ERROR:    ``, glog's
``W1130 03:25:31.46 870 run.py:851]``) and NCCL's ``host:pid:tid [rank] NCCL INFO``. Excerpts
add their own: a prefix the reporter cut (``[multiproc_executor.py:492] ValueError: …``,
no level), custom logging formats (``[date] [ERROR] [thread] [logger] >>> …``,
``date - logger - ERROR - …``, loguru's ``date | ERROR | mod:fn:12 - …``) and journald's
``#033[`` for the ESC of colour codes; a page that stripped the pid (``(EngineCore_DP0) ERROR …``);
a paste whose line breaks became spaces, split again before each prefix (:func:`unflatten`).

Only lines the prefilter picked pay for this; the body keeps its indentation because
traceback frames are recognised by it.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[()][A-Za-z0-9]")
_BARE_SGR = re.compile(r"\[\d{1,3}(?:;\d{1,3})*m")
"""A colour code that lost its ESC; only taken off a line that starts with one."""
_DOCKER_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?) ")
_CRI = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)) (?:stdout|stderr) [FP] ")
"""containerd / Kubernetes CRI log files: ``2026-11-30T03:29:01.123456789Z stdout F …``."""
_CI_TS = re.compile(r"^\[(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?Z?)\] ")
"""A CI runner's stamp (Buildkite: ``[2024-09-05T00:38:34Z] ``), or a reporter's ``[2025-07-21 19:05:29] ``."""
_BK = re.compile(r"^(?:\x1b?_)?bk;t=(\d{10,13})\x07? ?")
"""Buildkite's raw log time stamp (``ESC _bk;t=1782846210974 BEL``, milliseconds since the epoch) in
front of each line of a job's log downloaded raw; a copy often loses the ESC and the BEL."""
_CLOCK = re.compile(r"^(\d\d:\d\d:\d\d(?:[.,]\d{1,6})?) (?! )(?=\S)")
"""A bare time of day in front of a line (a reporter's abridged paste, a tool's ``[HH:MM:SS]``-less
stamp): ``09:14:37 TimeoutError: …``; one space, then the line (more spaces are a column's padding)."""
_VLEVEL = r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)"
"""vLLM's log levels, as its logger prints them before a line."""
_STAMP = re.compile(
    r"^(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?):? "
    r"(?=\(\w[\w.\-]*(?: [\w.\-=]+)* pid=\d+|" + _VLEVEL + r" )"
)
"""Someone's own stamp in front of a vLLM line (a reporter's ``2025-06-27 17:14:23: ``, a shipper's
``2025-06-27 17:14:23 ``), recognised only where a process prefix or a vLLM level follows."""
_COMPOSE = re.compile(r"^([A-Za-z0-9][\w.\-]*) +\| ?")
_JOURNALD = re.compile(
    r"^([A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{1,9})?|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?) "
    r"(?!(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL) )[\w.\-]+ (?!(?:ERROR|FATAL|WARNING):)[^\s:\[]+(?:\[\d+\])?: "
)
"""journald (``journalctl``'s default ``Dec 06 10:00:00 host vllm[42]: ``, ``-o short-precise``'s microseconds,
``-o short-iso``'s ``2026-12-06T10:00:00+0000 host vllm[42]: ``) and syslog files: a time, the host, the program
(not a time, a level and a logger's target: see ``_TARGET``; not a library's own ``LLVM ERROR: …`` after a
shipper's time: no program is named ERROR)."""
_MPI_TAG = re.compile(r"^\[(\d+,\d+)\]<(?:stdout|stderr|stddiag)>:")
"""Open MPI's ``mpirun --tag-output``: ``[JOB,RANK]<stdout>:`` before each line; the rank is the source."""
_LOCAL_RANK = re.compile(r"^\[((?!rank\d)[a-z_]+\d+)\]:(?=\S| )")
"""torchrun's ``--tee`` / ``--local-ranks-filter`` prefix, its role and local rank (``[default0]:``): the source."""
_PROC = re.compile(
    r"^(?:[\w.\-]+ )?\((?P<proc>[\w.\-]+(?:\([\w.\-]*(?:\([\w.\-]*\))?\))?(?: [\w.\-]+(?:=[\w.\-]+)?)*) pid=(?P<pid>\d+)"
    r"(?:, ip=[0-9a-fA-F.:]+)?\) ?"
)
_TAG = re.compile(r"^\[[A-Za-z][\w.\-]{0,31}\] (?=" + _VLEVEL + r" )")
"""A tag between the process prefix and the level (vllm-omni's ``(Worker pid=1) [Stage-0] ERROR …``)."""
_PROC_BARE = re.compile(r"^\((?P<proc>[A-Za-z][\w.\-]*(?: [\w.\-]+=[\w.\-]+)*)\) (?=" + _VLEVEL + r" )")
"""A process prefix whose pid a page stripped (``(EngineCore_DP0) ERROR …``): only before a level."""
_RANK = re.compile(r"^\[rank(?P<rank>\d+)\]: ?")
"""torch.distributed's per-rank prefix (``[rank0]: Traceback …``)."""
_INDENTED_PREFIX = re.compile(
    r"\((?:[\w.\-]+(?:=[\w.\-]+)? )*\S*pid=\d|\[rank\d+\]:|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) +(?:\d{4}-)?\d\d-\d\d \d\d:\d\d:\d\d"
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL): +\S|\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d|\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
    r"|(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault|Timeout)(?:: |\(|\s*$)"
    r"|usage: |[\w.\-/]+(?: [\w.\-]+)?: error: |Fatal Python error: |terminate called |\*\*\* |!{3,} |Failed to import from |libnuma: Warning: "
    r"|The above exception was the direct cause|During handling of the above exception"
    r"|[\w./\-]+: (?:symbol lookup error|error while loading shared libraries): |[\w./\-]+: line \d+: "
    r"|Error response from daemon: |(?:docker|podman|nerdctl): |Error: (?:[A-Z]|\[)"
    r"|(?:nohup|timeout|nice|stdbuf|setsid|taskset|numactl): (?:failed to (?:run command|execute) |execution of )"
    r"|(?:[\w.\-]*/)*python[\d.]*: (?:Error while finding|No module named|can't open file)"
    r"|\[?[IWEF]\d{4} \d\d:\d\d:\d\d|\[[IWEF](?:\d{3,4} [\d:.]+)? ?[\w.\-]+\.(?:cpp|cc|h|cu):\d+\]|[\w.\-]+:\d+:\d+ \[\d+\] NCCL "
    r"|\[[A-Za-z][\w.\-]{0,31}\] (?:\([A-Za-z][\w.\-]*[ )]|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) )"
)
"""What starts a log line whatever indentation a paste put before it (a markdown code block, a list
item): a process prefix, torch's rank, vLLM's and uvicorn's levels, a timestamp, glog's and c10's
prefixes, NCCL's, an exception's line and Python's chaining of two, argparse's usage and error, the
dynamic loader's errors, a shell's error on a script's line (``slurm_script: line 21: vllm: command not
found``), the container CLI's refusal (``docker: Error response from daemon: …``), a launcher's (``nohup: failed to run
command 'vllm': …``), a program's bare ``Error: …`` and the
interpreter's own (``/usr/bin/python3: Error while finding module specification …``), a tag before a process prefix or a level (``VLLM_LOGGING_PREFIX=[node-7]``), a native crash's first words (an indented traceback's head is
Trace.indent's). Never what starts a traceback's own indented frame or code line (``File "…"``,
``raise …``), so a real log reads the same."""
_BAR = r"\s{0,8}[|│](?= |$) ?"
"""One ``| `` of Python's exception-group layout."""
_MARKUP = re.compile(rf"^(?:\s*>(?= |$) ?|\s*`+|{_BAR})+")
"""What an excerpt quoted in an issue thread adds: ``> `` quotes, inline-code backticks,
the ``| `` of Python's exception-group layout."""
_BARS = re.compile(rf"^(?:{_BAR})+")
"""The ``| `` of Python's exception-group layout after a wrapper (``vllm-1  |     |   File …``)."""
_NATIVE_PROSE = re.compile(
    r"^[^\x00-\x7f](?:[^\n]{0,40}?[^\x00-\x7f])?:?[ \t]*(?=(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt)(?::|\(|\s*$))"
)
"""Words that start and end with a character that is not ASCII (Chinese, Japanese, fullwidth brackets and
colons) right before an exception's type, with no space or one: ``报错ValueError: …``, ``【BUG】：RuntimeError: …``, ``报错： ModuleNotFoundError: …``."""
_ENTITY = re.compile(r"&(?:quot|lt|gt|amp|apos|#39|#34|#x27);")
"""HTML's escapes of quotes and brackets, left in a log a web page or an export copied (``File &quot;…&quot;``)."""
_BOLD = re.compile(r"^\s*\*\*(?P<body>[^\s*](?:(?!\*\*).)*)\*\*\s*$")
"""A whole line in markdown bold, as excerpts quote an error in prose."""
_BOLD_HEAD = re.compile(
    r"^\s*\*\*(?P<head>\([^()*\n]{1,80}\)|\[[^\]*\n]{1,80}\]|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL))\*\*(?= \S)"
)
"""A log line's prefix in markdown bold, the rest not (a process's name or a bracketed tag or a level: a
reporter's emphasis, ``**(VllmWorker TP0 pid=1)** ERROR …``)."""
_COMMENT = re.compile(r"^\s*#{1,6} +(?=\S)")
"""A shell comment or a markdown heading before a log's line (a repro script's ``# OSError: …``, ``## ValueError: …``)."""
_NCCL = re.compile(r"^[\w.\-]+:(?P<pid>\d+):\d+ \[\d+\] (?:\S+:\d+ )?NCCL (?P<lvl>[A-Z]+) ?")
"""NCCL's own lines, ``host:pid:tid [dev] NCCL INFO …``; newer NCCL (and RCCL) put ``file.cc:N`` before the level."""
_ISO = re.compile(r"^(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?) +")
_LEVEL = re.compile(
    r"^(?P<lvl>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) +"
    r"(?:(?P<ts>(?:\d{4}-)?\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d+)? +)?(?:(?P<pid>\d+) +)?"
    r"\[?[\w.\-/<>]+:\d+\] ?"
)
_UVICORN = re.compile(r"^(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL): +")
_RAY_CPP = re.compile(
    r"^\[(?P<date>\d{4}-\d\d-\d\d) (?P<t>\d\d:\d\d:\d\d),\d+ (?P<g>[IWEF]) \d+ \d+\] (?:\([\w.\-]+\) )?[\w.\-/]+:\d+: ?"
)
"""Ray's own C++ log lines: ``[2025-06-13 01:49:41,730 E 1 1] gcs_rpc_client.h:179: …``."""
_GLOG = re.compile(
    r"^\[?(?P<g>[IWEF])(?P<d>\d{4}) (?P<t>\d\d:\d\d:\d\d)\.\d+ +\d+ [\w.\-/]+:\d+\] ?(?:\[\d+/\d+(?:_\d+)?\] )?"
)
"""glog's prefix as torch's Python logging prints it (``E0106 03:23:01.677000 37645 torch/x.py:2721] ``), with the
compile id torch.compile's logs carry after it (``[0/0] ``, ``[1/2_1] ``: the frame and its compile attempt)."""
_CUT = re.compile(r"^(?:[\d:.\-]+ )?\[?[\w.\-/<>]+\.py:\d+\] ?")
"""A vLLM prefix cut before its level: ``[file.py:N] `` or ``08:25:25 file.py:226] ``."""
_LEVELS = "DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL"
_BRACKETED = re.compile(
    rf"^(?:\[[^\]\n]{{1,64}}\] ?)*?\[(?P<lvl>{_LEVELS})\] ?(?:\[[^\]\n]{{0,128}}\] ?)*(?:>>>|-|:|\|)? ?"
)
"""``[2025-01-02 10:00:00] [ERROR] [MainThread] [vllm.engine] >>> message``."""
_DASHED = re.compile(
    rf"^(?:[-|] )?(?:(?!(?:{_LEVELS})\b)[\w.\-]+ [-|] )?(?P<lvl>{_LEVELS}) *[-|:] (?:[\w.\-<>]+:[\w.\-<>]+:\d+ - )?"
)
"""After a timestamp: ``- vllm.engine - ERROR - message`` or ``| ERROR    | mod:fn:12 - message``."""
_TARGET = re.compile(rf"^ ?(?P<lvl>{_LEVELS}) +[a-z_][\w\-]*(?:(?:\.|::)[\w\-]+)*: ")
"""After a timestamp, a level and the logger's name or target: ``2025-05-16T04:56:18.119Z ERROR
engine.run_mp_engine: NIXL_ERR_BACKEND`` (Rust's tracing, as NVIDIA Dynamo logs), Python's ``%(asctime)s
%(levelname)s %(name)s: %(message)s`` (``… ERROR vllm.engine: …``). The name starts lowercase: an exception's type
after a level (``ERROR ValueError: …``) is the message's own."""
_C10 = re.compile(r"^\[(?P<g>[IWEF])(?:\d{3,4} [\d:.]+)? ?[\w.\-]+\.(?:cpp|cc|h|cu):\d+\] ?")
"""c10 / glog inside torch: ``[E ProcessGroupNCCL.cpp:475] …``, ``[E616 02:08:15.93 socket.cpp:1023] …``
(torch prints the month without its leading zero)."""
_GLOG_LEVEL = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}
_NCCL_CUT = re.compile(r"^NCCL (?P<lvl>INFO|WARN|TRACE|ERROR|ABORT) ")
"""An NCCL line pasted without its ``host:pid:tid [dev]`` (``NCCL WARN Duplicate GPU detected …``)."""
_NCCL_LEVEL = {"INFO": "INFO", "TRACE": "INFO", "WARN": "WARN", "ERROR": "ERROR", "ABORT": "ERROR"}

MAX_RELAYS = 8
"""Process prefixes read in front of one line: each process that relays a child's output adds its own
(``(MyLLM pid=1) (EngineCore pid=2) (RayWorkerProc pid=3) (Worker pid=3) ERROR …``)."""

QUIET_LEVELS = frozenset({"DEBUG", "INFO", "WARNING"})
"""Levels whose lines are never a failure (decoy error text lives in WARNINGs)."""


@dataclass(slots=True)
class Line:
    """One parsed line."""

    raw: str
    """The line as printed (line ending removed, a literal ``^M`` kept): what labels quote."""
    body: str
    """The message after every prefix, indentation kept."""
    level: str | None
    process: str | None
    """``Worker_TP3 pid=42`` style, or None for a line no process claimed."""
    key: tuple[str, str]
    """Demultiplexing key: (compose service, process)."""
    time: str | None


def opens_log_line(text: str) -> bool:
    """Does ``text`` start the way a log's line starts (a process prefix, a level, a timestamp, an
    exception's line, argparse's words, a native crash's), not the way a traceback's frame or code does?"""
    return _INDENTED_PREFIX.match(text) is not None


def unescape(text: str) -> str:
    """``text`` with HTML's escapes of quotes and brackets undone (``File &quot;…&quot;``), if it has any."""
    return html.unescape(text) if "&" in text and _ENTITY.search(text) else text


def clean(raw: str) -> str:
    """The text to parse: no CR, no literal ^M, no echoed ^C, no terminal escapes."""
    text = raw.replace("\r", "")
    if "\xa0" in text:  # a web page's copy: runs of spaces come as no-break spaces (a frame's indentation too)
        text = text.replace("\xa0", " ")
    if text.endswith("^M"):
        text = text[:-2]
    if text[:2] == "^C":  # the terminal's echo of the operator's Ctrl-C, in front of the next line printed
        text = text[2:].lstrip(" ")
    if text[:4] == "... " and text[4:5].strip():
        text = text[4:]  # a reporter's elision ("... AssertionError: …"), or a REPL's continuation prompt
    if "#033[" in text:  # journald / syslog write ESC as #033
        text = text.replace("#033[", "\x1b[")
    if "^[[" in text:  # a terminal's ESC copied as the two characters ^[ (like ^M)
        text = text.replace("^[[", "\x1b[")
    text = unescape(text)
    if "\ufffd[" in text:  # an ESC lost to a wrong decoding (U+FFFD, the replacement character)
        text = text.replace("\ufffd[", "\x1b[")
    if text[:1] in " #" and (m := _COMMENT.match(text)) and _INDENTED_PREFIX.match(text, m.end()):
        text = text[m.end() :]  # what a script's comment or a heading quotes: # OSError: …
    if text[:1] in " >`|│" and (m := _MARKUP.match(text)):
        text = text[m.end() :]
        if raw.lstrip()[:1] == "`":
            text = text.rstrip("`")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if text[:1] == "[" and _BARE_SGR.match(text):  # colour codes whose ESC a copy dropped: [1;36m(… pid=1)[0;0m
        text = _BARE_SGR.sub("", text)
    if text[:1] > "\x7f" and (m := _NATIVE_PROSE.match(text)):
        text = text[m.end() :]  # a reporter's words in their language glued to the exception: 【BUG】：RuntimeError: …
    if "**" in text:
        if m := _BOLD.match(text):
            text = m["body"]  # a line an issue thread set in bold: **ValueError: …**
        elif m := _BOLD_HEAD.match(text):
            text = m["head"] + text[m.end() :]  # its prefix in bold: **(Worker pid=1)** ERROR …
    return text


_VLLM_NEXT = r"(?=\(\w[\w.\-]*(?: [\w.\-]+=?[\w.\-]*)* pid=\d+|" + _VLEVEL + r" )"
"""What a wrapper recognised only before a vLLM line looks ahead for: a process prefix or a vLLM level."""
SOURCE_PREFIX = re.compile(
    r"^( {0,4}\d{1,5}: +| {0,4}(?:[\w.\-/]+ )?[\w.\-/]+: +|[\w.\-]+ [\w.\-]+ +)(?=\S)(?![\w.]+\()"
)
"""The shape of a source's name a multiplexing tool puts in front of every line: ``srun --label``'s
task (``0: ``, `` 3: ``), ``pdsh`` / ``clush``'s host (``gpu-node-01: ``), ``stern``'s pod and
container (``vllm-0-5d9f8 vllm ``); never indented code (``    raise ValueError(``). The classifier learns one where a log's line or a traceback's head
follows it (:func:`opens_log_line`), and takes the same shape off the lines that follow."""
_INNER = re.compile(
    r"(?<=[\s|,;:\]>\"'])(?:\x1b\[[0-9;]*m)*(?:\(\w[\w.\-]*(?: [\w.\-]+=?[\w.\-]*)* pid=\d+(?:, ip=[0-9a-fA-F.:]+)?\)(?:\x1b\[[0-9;]*m)? |"
    + _VLEVEL
    + r" +\d\d-\d\d \d\d:\d\d:\d\d|Traceback \(most recent call last\):|\[rank\d+\]: | {2,8}File \"[^\"]+\", line \d+"
    r"|(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt): |usage: \w[\w.\-/]*|(?<!:)(?!(?:srun|slurmstepd|sbatch|salloc)\b)\w[\w.\-/]*(?: (?!(?:srun|slurmstepd|sbatch|salloc)\b)[\w.\-]+)?: error: )"
)
"""A vLLM line inside another program's record: its process prefix, its level and time, a traceback's
head or frame, an exception's line, argparse's words or torch's rank, right after a separator (a colour
code may come first: vLLM colours its process prefix) (what an envelope ends with, see :func:`envelope`).
Argparse's ``prog: error:`` is not Slurm's ``slurmstepd-n1: error:`` nor ``srun: error:``, and never begins inside a
time (``…T03:29:01.123Z slurmstepd-n1: error:`` is a stamp and Slurm's line, no envelope)."""
_LEVEL_WORDS = "DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE"
"""Level words any logger prints (in any case), as an envelope's words."""
_ANY_LEVEL = rf"(?i:{_LEVEL_WORDS})"
_BARE_LEVEL = re.compile(rf"\b{_ANY_LEVEL}\b")
_ENVELOPE_WORDS = re.compile(rf"\d+|\b{_ANY_LEVEL}\b|\bstd(?:out|err)\b| +")
_LOGGER_AT = re.compile(r"\.(?:py|c|cc|cpp|h|hpp|cu):\d+[\]:]")
"""A logger's source location (vLLM's ``[file.py:42]``, V0's ``file.py:42]``, glog's, c10's, Ray's
``gcs_rpc_client.h:179:``): a program's own prefix, no envelope."""
ENVELOPE_MAX = 160
"""The longest envelope looked for before a vLLM line (a syslog header with a host and an app's name)."""


def envelope(raw: str) -> str | None:
    """The shape (a regex) of what another program put before a vLLM line it carries, or None.

    A harness that re-logs a server's output (``2026-12-05 06:00:00,123 - INFO - (APIServer pid=1) …``),
    a syslog relay's RFC 5424 header (``<14>1 2026-12-05T06:00:00Z host vllm 42 - - …``), a process
    manager's ``name stderr | ``, a spreadsheet's ``1764900000000,"…``: whatever it is, a vLLM line
    (:data:`_INNER`) starts after it, and the parser does not read through it on its own (its body is
    not the vLLM line's). Numbers, level words, ``stdout``/``stderr`` and runs of spaces may change from
    line to line; the rest of the envelope is kept as printed."""
    m = _INNER.search(raw, 1, ENVELOPE_MAX)
    if m is None or not raw[: m.start()].strip():
        return None
    head = raw[: m.start()]
    if _LOGGER_AT.search(head) or not _BARE_LEVEL.sub("", head).strip(" :-|[]"):
        return None  # a program's own prefix (a source location: vLLM's, glog's, c10's, Ray's) or a level alone (uvicorn's)
    whole, inner = parse(raw), parse(raw[m.start() :])
    if whole.body.strip() == inner.body.strip() and whole.level == inner.level and parse(head + "x").level is None:
        return None  # a wrapper the parser knows (compose, journald, docker -t): it keeps its source's name
    # (else another program's logger, whose level the parser would put on the bare lines it carries)
    out, at = [], 0
    for w in _ENVELOPE_WORDS.finditer(head):
        out.append(re.escape(head[at : w.start()]))
        t = w.group(0)
        out.append(
            r"\d+"
            if t[0].isdigit()
            else " +"
            if t[0] == " "
            else r"(?i:std(?:out|err))"
            if t.lower().startswith("std")
            else _ANY_LEVEL
        )
        at = w.end()
    out.append(re.escape(head[at:]))
    return "^" + "".join(out)


_CONSOLE = re.compile(r"^\[(?!rank\d)([A-Za-z][\w.\-]{0,63})\]: " + _VLLM_NEXT)
"""A console's name for the container in front of each line (a deployment UI's ``[vllm]: ``),
recognised only where a process prefix or a vLLM level follows."""
_KUBECTL = re.compile(r"^\[(pod/[\w.\-]+/[\w.\-]+)\] ")
"""``kubectl logs --prefix`` (with ``-l``, ``--all-containers``, a deployment's pods): ``[pod/NAME/CONTAINER] ``
in front of each line; the pod and container are the source, like a compose service."""
_SRUN = re.compile(r"^[ \t]{0,6}(\d{1,6}): (?=(?:  )*\S)")
"""``srun --label`` (a Slurm job step's tasks): each line's task number, padded to the widest, a colon and a space.
``grep -n``'s number and colon come with no space after them but a line's own indentation, which is even in a
traceback (two for ``File``, four for its code): an odd number of spaces after the colon is srun's one and the line's
own (a traceback's indentation keeps its depth either way). No source: a line's task and a grep's line number are
told apart by that space alone, so neither may split a traceback's lines (their process prefixes still do)."""
_GREP_N = re.compile(r"^\d{1,7}:(?!\d)")
"""``grep -n`` over one file: the line's number and a colon (not a time of day's ``12:34``)."""
_TS = re.compile(r"^([A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?) ")
"""moreutils' ``ts`` (``Dec 05 19:00:01 ``) piped after a server: a syslog-style time and nothing else."""
_TAB_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\t")
"""A log viewer's export (Grafana / Loki, a spreadsheet): the time, a tab, the line."""
_NUMBERED = re.compile(r"^ {0,6}\d{1,7}\t")
"""``cat -n`` or ``nl`` over a log file: each line's number, right-aligned, and a tab."""
_BUILDKIT = re.compile(r"^(?:#\d{1,4} )?\d{1,5}\.\d{3} (?=\S| +\S)")
"""``docker build`` (BuildKit) output: a step's number and the seconds since the step started (``#8 0.330 ``, or
``9.622 `` alone in the failure summary) in front of each line the step's command printed: an image's build,
whose own lines (a package installer's ``× No solution found …``) follow with their indentation."""
_APP = re.compile(
    r"^(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?) \[[A-Za-z]+\] (?:\([\w.\-]+\) )?"
    r"(?=\([A-Za-z][\w.\-]*(?: [\w.\-]+=?[\w.\-]*)* pid=\d+)"
)
"""An application that runs vLLM and logs its output with its own stamp, level and source in front
(``2026-05-08 11:50:14.752 [Error] (Process) (EngineCore pid=3043) …``): only before a vLLM process
prefix; the application's level is not vLLM's (it logs a traceback's lines as Info)."""
_RICH = re.compile(r"^(?:\[([\d/:\- ]+)\])? +" + _VLEVEL + r" {2,}(?=\S)(?=.*\S {2,}[\w.\-]+\.py:\d+ *$)")
"""Python's ``rich`` log handler in a tool that runs vLLM and re-logs its output (a level column, the
message, the logger's ``file.py:N`` right-aligned): the tool's level is not vLLM's."""
_RICH_TAIL = re.compile(r" {2,}[\w.\-]+\.py:\d+ *$")
_GREP = re.compile(r"^([\w.\-/~+]*\.(?:out|err|log|txt|stdout|stderr)):(?:\d+[:\-])?" + _VLLM_NEXT)
"""``grep`` over log files (``grep ERROR job_42_node0.out``, ``grep -rn``): the file's name, and with
``-n`` the line number, in front of each line; recognised only where a process prefix or a vLLM level
follows. The file is the source, like a compose service: lines of two nodes' files are not one process's."""
_WRAPPERS = (
    _NUMBERED, _BUILDKIT, _SRUN, _GREP_N, _BK, _KUBECTL, _MPI_TAG, _LOCAL_RANK, _CRI, _TAB_STAMP, _JOURNALD, _DOCKER_TS, _CI_TS, _STAMP, _CLOCK, _COMPOSE, _TS,
    _CONSOLE, _APP, _RICH, _GREP,
)  # fmt: skip
"""The wrappers a line can carry, tried in this order: each at most once, stacked in any order (a
CI runner's stamp around ``docker compose logs -t`` around a reporter's stamp); what looks like a
second one of a kind is the message's."""


_DIGITS, _UPPER = "0123456789", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_STARTS = {
    _CRI: _DIGITS, _DOCKER_TS: _DIGITS, _CLOCK: _DIGITS, _CI_TS: "[", _STAMP: _DIGITS, _JOURNALD: _UPPER + _DIGITS, _CONSOLE: "[",
    _APP: _DIGITS, _RICH: "[ ", _COMPOSE: _DIGITS + _UPPER + _UPPER.lower(),
    _GREP: _DIGITS + _UPPER + _UPPER.lower() + "_./~+-",
    _BUILDKIT: "#" + _DIGITS, _BK: "b_\x1b", _KUBECTL: "[", _MPI_TAG: "[", _LOCAL_RANK: "[", _NUMBERED: " " + _DIGITS, _SRUN: " \t" + _DIGITS, _GREP_N: _DIGITS, _TS: _UPPER, _TAB_STAMP: _DIGITS,
}  # fmt: skip
_BY_FIRST = {chr(c): tuple(p for p in _WRAPPERS if chr(c) in _STARTS[p]) for c in range(128)}
"""The wrappers a line can start with, by its first character: a vLLM line starting ``(`` tries none."""


_SOURCES = (_COMPOSE, _CONSOLE, _GREP, _KUBECTL, _MPI_TAG, _LOCAL_RANK)
"""Wrappers that name the line's source (a service, a pod, a task, a rank): lines of two sources are two processes'."""


def _wrappers(text: str) -> tuple[str, str, str | None]:
    """Strip docker/compose/journald wrappers: (rest, service, time)."""
    service, time = "", None
    used: list[re.Pattern[str]] = []
    while m := next((m for p in _BY_FIRST.get(text[:1], ()) if p not in used and (m := p.match(text))), None):
        used.append(m.re)
        if m.re in _SOURCES:
            service = m.group(1)
        elif m.re is _NUMBERED or m.re is _GREP_N or m.re is _BUILDKIT:
            pass
        else:
            time = m.group(1) or time
        text = text[m.end() :]
        if m.re is _RICH:
            text = _RICH_TAIL.sub("", text)
    return text, service, time


def _level(text: str, stamped: bool = False) -> tuple[str, str | None, str | None, str | None]:
    """Strip the logging prefix: (rest, level, time, pid). ``stamped``: a wrapper's time stamp led the line."""
    time = None
    if m := _ISO.match(text):
        time, text = m.group(1), text[m.end() :]
    if m := _LEVEL.match(text):
        return text[m.end() :], _lvl(m["lvl"]), m["ts"] or time, m["pid"]
    if m := _UVICORN.match(text):
        return text[m.end() :], m["lvl"], time, None
    if text[:1] == "[" and (m := _RAY_CPP.match(text)):
        return text[m.end() :], _GLOG_LEVEL[m["g"]], f"{m['date'][5:]} {m['t']}", None
    if m := _GLOG.match(text):
        return text[m.end() :], _GLOG_LEVEL[m["g"]], f"{m['d'][:2]}-{m['d'][2:]} {m['t']}", None
    if text[:2] == "[" + text[1:2] and (m := _C10.match(text)):
        return text[m.end() :], _GLOG_LEVEL[m["g"]], time, None
    if text[:1] == "[" and (m := _BRACKETED.match(text)):
        return text[m.end() :], _lvl(m["lvl"]), time, None
    if time is not None and (m := _DASHED.match(text)):
        return text[m.end() :], _lvl(m["lvl"]), time, None
    if (stamped or time is not None) and (m := _TARGET.match(text)):
        return text[m.end() :], _lvl(m["lvl"]), time, None
    if m := _CUT.match(text):
        return text[m.end() :], None, time, None
    return text, None, time, None


_IPY_TYPE = re.compile(
    r"(?<![\w.])(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*) {2,}Traceback \(most recent call last\)\s*$"
)
"""IPython's traceback head, naming the exception's type (matched at a line's start, searched in a raw line)."""
_IPY_FRAME = re.compile(r"^File (?P<path>[^\s\"][^,\n]*?):(?P<line>\d+), in (?:[\w<>]+\.)*(?P<func>[\w<>]+)")
_IPY_CELL = re.compile(r"^Cell In ?\[(?P<cell>[^\]\n]*)\], line (?P<line>\d+)")
_IPY_OLD = re.compile(
    r"^(?P<path><ipython-input-[^>\s]*>|\[?[/~]\S*?\.py)(?:\]\([^)\s]*\))? in (?P<func>[\w<>]+)(?:\(|\s*$)"
)
_IPY_ARROW = re.compile(r"^-{1,4}> ?(?=\d+ )")


def ipython_type(raw: str) -> str | None:
    """The exception's type an IPython traceback's head names (``OutOfMemoryError     Traceback (…)``)."""
    m = _IPY_TYPE.search(raw.rstrip("\r"), max(0, len(raw) - 300))
    return None if m is None else m["type"]


def ipython(body: str) -> str:
    """A line of IPython's traceback (a notebook's: ``OSError      Traceback (most recent call last)``,
    ``File P:N, in F(args)``, ``Cell In[3], line 1``, ``---> 1 llm = LLM(…)``, before IPython 8
    ``P in F(args)``) in Python's own layout, so it is read as Python's is; any other line unchanged.
    The exception line that ends it is Python's already."""
    if body[:1] not in "FC<[/~-" and not body.endswith("call last)"):
        return body
    if _IPY_TYPE.match(body):
        return "Traceback (most recent call last):"
    if m := _IPY_FRAME.match(body):
        return f'  File "{m["path"]}", line {m["line"]}, in {m["func"]}'
    if m := _IPY_CELL.match(body):
        return f'  File "<Cell In[{m["cell"]}]>", line {m["line"]}, in <module>'
    if m := _IPY_OLD.match(body):
        return f'  File "{m["path"].lstrip("[")}", line 0, in {m["func"]}'
    if m := _IPY_ARROW.match(body):
        return "    " + body[m.end() :]
    return body


def _lvl(level: str) -> str:
    return {"WARN": "WARNING", "FATAL": "CRITICAL"}.get(level, level)


FLAT_MIN = 120
"""Characters a line needs before it is looked at as several log lines joined into one."""
_FLAT_PROC = r"\([A-Za-z][\w.\-]*(?: [\w.\-]+=[\w.\-]+)*(?: pid=\d+)?\) " + _VLEVEL + r" "
_FLAT_LEVEL = _VLEVEL + r" (?:\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? )?\[?[\w.\-/]+\.py:\d+\] "
_FLAT = tuple((re.compile(rf"(?<=\S)[ \t]+(?={p})"), re.compile(p)) for p in (_FLAT_PROC, _FLAT_LEVEL))
"""Where a pasted log whose line breaks a web page turned into spaces breaks again: before each
process prefix (``(Worker_TP0 pid=126) ERROR …``), else before each vLLM level prefix."""


_JSON_TEXT = ("log", "message", "msg", "MESSAGE", "textPayload", "text")
"""Where a structured log line keeps the program's text: docker's json-file ``log``, Python and Go
JSON formatters' ``message`` / ``msg``, journald's ``MESSAGE``, Cloud Logging's ``textPayload``."""
_JSON_MORE = ("exc_info", "exception", "stack_trace", "stack", "traceback")
"""Fields a JSON formatter puts a traceback in, after the message."""
_JSON_LEVEL = ("level", "levelname", "severity", "log.level", "lvl", "PRIORITY")
_LEVEL_NAMES = {
    "debug": "DEBUG", "trace": "DEBUG", "info": "INFO", "notice": "INFO", "warn": "WARNING", "warning": "WARNING",
    "error": "ERROR", "err": "ERROR", "critical": "CRITICAL", "fatal": "CRITICAL", "alert": "CRITICAL", "emergency": "CRITICAL",
    "7": "DEBUG", "6": "INFO", "5": "INFO", "4": "WARNING", "3": "ERROR", "2": "CRITICAL", "1": "CRITICAL", "0": "CRITICAL",
}  # fmt: skip
"""A JSON log's level by name, or by syslog number (journald's ``PRIORITY``)."""


def unjson(raw: str) -> list[str] | None:
    """The lines a structured (JSON-per-line) log record holds, or None when ``raw`` is not one.

    ``docker``'s json-file driver, a JSON logging formatter, ``journalctl -o json`` or a cloud log
    export write each record as one JSON object: its text (and a traceback in its own field, with
    the newlines escaped) is the log. A line of that text with no level of its own gets the record's
    level, written as vLLM writes it (``ERROR [json:0] …``), so an INFO record's decoy error words
    stay quiet and a traceback's lines share one level; but not journald's level for what a service
    printed (its ``stdout`` transport, stderr too): that one is the same for every line."""
    text = raw.strip()
    if not (text[:2] in ('{"', "{ ") and text[-1:] == "}"):
        return None
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than a log record ever is
        return None
    if not isinstance(obj, dict):
        return None
    said = next((v for k in _JSON_TEXT if isinstance(v := obj.get(k), str)), None)
    if said is None:
        return None
    lines = said.rstrip("\n").split("\n") if said.strip() else []
    for k in _JSON_MORE:
        if isinstance(more := obj.get(k), str) and more.strip():
            lines += more.rstrip("\n").split("\n")
    level = next((_LEVEL_NAMES.get(str(v).lower()) for k in _JSON_LEVEL if (v := obj.get(k)) is not None), None)
    if level is not None and obj.get("_TRANSPORT") != "stdout":  # (journald gives a service's output one level)
        lines = [x if parse(x).level is not None else f"{level} [json:0] {x}" for x in lines]
    return [x.rstrip("\r") for x in lines] or None


_EXC_NAME = r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Fault|Failure)"
"""An exception's type by its suffix, where one line is split into the log lines it holds (a flattened paste, an
escaped quote). ``traces.EXC_TYPE`` also takes ``…Timeout``; these splits never did."""
_ESCAPED_NL = "\\n"
_ESCAPED_START = re.compile(r"\s*(?:Traceback \(most recent call last\):|" + _EXC_NAME + r": )")
_ESCAPED_COLOUR = re.compile(r"\\(?:u001[bB]|x1[bB]|033|e)\[[\d;]*m")
"""A colour code written as an escape (``\\u001B[36m``) in a quoted string."""


def escaped_lines(raw: str) -> list[str] | None:
    """The lines an ERROR line quotes with their line breaks escaped, or None.

    A server that logs another program's error as a quoted string (glog's and Go's ``%q``: Triton's
    vLLM back-end writing ``E1027 … model.py:502] "[vllm] Error generating stream: …\\n…\\nray.exceptions.X:
    …"``) keeps the error's lines in one line, each break written ``\\n``: split there (and the colour
    codes written as escapes taken out), they are lines again and the exception among them is read as
    one. Only for an error's message (``ERROR``, glog's ``E``; not a traceback's code under its frame), and
    only when a line after the first starts an exception or a traceback: an INFO line quoting a request's
    prompt (which may hold any text) is left whole."""
    if _ESCAPED_NL not in raw:
        return None
    parts = raw.split(_ESCAPED_NL)
    if 'File "' in parts[0] or not any(_ESCAPED_START.match(p) for p in parts[1:]):
        return None  # (a traceback flattened into one line: its code's escapes are the source's)
    ln = parse(raw)
    if ln.level not in ("ERROR", "CRITICAL") or ln.body[:1] in (" ", "\t") or ln.body.startswith("raise "):
        return None  # (indented: a traceback's code, ``raise RuntimeError("…\\n…")``, not a message)
    parts = [_ESCAPED_COLOUR.sub("", p) for p in parts]
    last = parts[-1].rstrip()
    parts[-1] = last[:-1] if last.endswith(('"', "'")) else last  # (the quote's end)
    return parts


_BAR_GLUE = re.compile(
    r"\d%\|[^|\n]{0,120}\| *\d+/\d+(?![\d/])(?: \[[^\]\n]{0,80}\] {0,200}(?=\S)| {0,200}(?=[^\s\[]))"
)
"""The end of a tqdm bar (``97%|█████████▋| 143/147 [00:12<00:00, 11.5it/s]``) with text right after it:
a bar ends in a carriage return, not a newline, so the next line printed is glued to it (after the
spaces a bar that shrank pads itself with; after the bar's times, whatever the line starts with: torch's
``[rank0]:`` too)."""


def unglue(raw: str) -> list[str] | None:
    """A progress bar and the line printed after it, joined into ``raw``: the two lines, or None."""
    if "%|" not in raw or (m := _BAR_GLUE.search(raw)) is None:
        return None
    return [raw[: m.end()].rstrip(), raw[m.end() :]]


def unflatten(raw: str) -> list[str] | None:
    """The log lines a flattened paste joined into ``raw`` (three or more; two when the line itself
    starts with the prefix it is split at, after the spaces a wrap or an indented paste put first), or None.

    A vLLM traceback pasted without a code fence, or mirrored by a page that drops line breaks,
    arrives as ONE line in which every original line still starts with its prefix; split there,
    each part is a line again (its frames and its exception line are read as such)."""
    if raw.count(".py:") < 2 and raw.count(" pid=") < 2:
        return _unflatten_traceback(raw) if raw.count('File "') >= 2 else None
    for split, prefix in _FLAT:
        parts = split.split(raw)
        if len(parts) >= 3 or (len(parts) == 2 and prefix.match(raw.lstrip(" \t"))):
            # three lines, or two that both start with the prefix; a traceback printed without the
            # prefix inside one of them (the log's last words after a logger's line) is split too
            out: list[str] = []
            for part in parts:
                out.extend((_unflatten_traceback(part) if part.count('File "') >= 2 else None) or [part])
            return out
    return _unflatten_traceback(raw) if raw.count('File "') >= 2 else None


_FLAT_TB = re.compile(
    r'(?<=\S)\s+(?=File "[^"]+", line \d+, in |Traceback \(most recent call last\):|'
    r"The above exception was the direct cause|During handling of the above exception)"
)
_FLAT_FRAME = re.compile(r'^(File "[^"]+", line \d+, in \S+)\s*(.*)$')
_FLAT_EXC = re.compile(r"(?:^|\s)(" + _EXC_NAME + r"(?::\s|$))")
"""An exception line inside a flattened frame's code: a type name then ``: `` or the end (``raise X(`` is code)."""


def _unflatten_traceback(raw: str) -> list[str] | None:
    """A Python traceback whose line breaks a page turned into spaces and which has no log prefix to
    split at: split before each ``File "…", line N, in F`` (the frame, then its code indented again),
    before each chained traceback's head, and before the exception line after the last frame."""
    parts = _FLAT_TB.split(raw)
    frames = [m for p in parts if (m := _FLAT_FRAME.match(p))]
    if len(frames) < 2:
        return None
    out: list[str] = []
    for p in parts:
        if (m := _FLAT_FRAME.match(p)) is None:
            out.append(p)
            continue
        out.append("  " + m.group(1))
        code = m.group(2)
        if (e := _FLAT_EXC.search(code)) is not None:
            code, exc = code[: e.start(1)].rstrip(), code[e.start(1) :]
            if code:
                out.append("    " + code)
            out.append(exc)
        elif code:
            out.append("    " + code)
    return out


def parse(raw: str) -> Line:
    """Parse one raw line (without its newline)."""
    display = raw.rstrip("\r")
    text, service, time = _wrappers(clean(raw))
    if service and text[:1] in " |│" and (m := _BARS.match(text)):
        text = text[m.end() :]  # an exception group's bars inside a compose wrapper
    process = None
    if text[:1] in " \t" and _INDENTED_PREFIX.match(s := text.lstrip(" \t")):
        text = s  # a paste indented the whole log (a markdown code block or list item): a prefix starts it
    if m := _PROC.match(text):
        process, text = f"{m['proc']} pid={m['pid']}", text[m.end() :]
        for _ in range(MAX_RELAYS):  # the API server relaying its engine's line, Ray actors relaying theirs
            if text[:1] != "(" or not (m := _PROC.match(text)):
                break
            process, text = f"{m['proc']} pid={m['pid']}", text[m.end() :]  # (the innermost printed it)
        if text[:5] == "[rank" and (m := _RANK.match(text)):
            text = text[m.end() :]  # a Ray worker's torch rank: the process is the worker
    elif text[:1] == "(" and (m := _PROC_BARE.match(text)):
        process, text = m["proc"], text[m.end() :]
    elif text[:5] == "[rank" and (m := _RANK.match(text)):
        process, text = f"rank{m['rank']}", text[m.end() :]
    if text[:5] == "NCCL " and (m := _NCCL_CUT.match(text)):
        who = process or "NCCL"
        return Line(display, text[m.end() :], _NCCL_LEVEL[m["lvl"]], who, (service, who), time)
    if m := _NCCL.match(text):
        return Line(
            display,
            text[m.end() :],
            _NCCL_LEVEL.get(m["lvl"], "INFO"),
            process or f"NCCL pid={m['pid']}",
            (service, process or f"NCCL pid={m['pid']}"),
            time,
        )
    if text[:1] == "[" and (m := _TAG.match(text)):
        text = text[m.end() :]  # a launcher's tag for the part of the pipeline (vllm-omni's [Stage-0])
    body, level, ltime, pid = _level(text, time is not None)
    if level is not None and body[:1] in "(DIWEC" and (_PROC.match(body) or _LEVEL.match(body) or _UVICORN.match(body)):
        # another program's logger re-logged a vLLM line (``… - INFO - ERROR 07-11 … [core.py:390] …``):
        # the line's own level and process are vLLM's, not the outer record's
        inner = parse(body)
        process = inner.process or process
        return Line(display, inner.body, inner.level, process, (service, process or ""), inner.time or ltime or time)
    if process is None and pid:
        process = f"pid={pid}"
    if body[:2] == "**" and (m := _BOLD.match(body)):
        body = m["body"]  # the message set in bold behind its prefix: [rank0]: **KeyError: …**
    return Line(display, ipython(body), level, process, (service, process or ""), ltime or time)

"""The first root of a log of any size: scan it on the host, read only windows, classify those.

Why: a server log that has grown for hours is gigabytes; reading it over SSH costs minutes
and reading only its tail misses a root printed early. :func:`find_root` runs
:mod:`k3tui.remote.prefilter_remote` on the host (``python3 -S``, stdlib only; ``grep -b -n
-F`` where the host has no python3; the plain tail read, loudly, where neither), which scans
the WHOLE file once for the classifier's needles and returns line offsets, the size and the
SHA-256. k3tui then fetches the windows that start at those lines and feeds them, in order,
to the same :class:`~k3tui.classify.Classifier`.

Why the answer equals classifying the whole file (``tests/test_prefilter_equiv.py``):

- a line outside every window holds no needle, so the classifier would only count it —
  unless it was busy (a traceback open, a root waiting for its stack) or in its first lines:
  a window therefore ends only where the classifier has settled (:func:`_settled`), never
  inside its first ``HEAD_LINES``;
- the lines between windows are fed as empty lines (same count, so line numbers stay true),
  and a window ends only once the last look-back literal (a traceback head, a normal stop)
  is further back than the classifier's look-back (``LOOKBACK`` characters): a look-back
  never reaches across a gap, in the file or here; and every window starts
  ``Needles.before_chars`` bytes ahead of its first needle (the native-crash look-back);
- a needle that reached its cap on the host (a stage marker repeated all day) is scanned
  for again from where it was dropped if it can still matter at that line.

The root is certain once announced, settled, and its OOM verdict known; the walk stops there
(else it reads every window to the end of the file).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ..classify import Classifier, ClassifyResult, needles
from ..classify.classifier import HEAD_LINES, WRAP_PROBE
from ..classify.history import LOOKBACK
from ..classify.rules import STAGES
from ..errors import HostError
from .base import Host, RunResult

FORMATS = ("raw", "docker-json", "cri")
WINDOW = 32 * 1024
"""Bytes first fetched from a hit's line (then more, doubling, while the classifier is busy)."""
BATCH = 64
"""Windows asked for in one fetch."""
MARKER_CAP = 8
"""Hits kept per stage marker in one scan (later ones are looked for again only if still needed)."""
NEEDLE_CAP = 20000
"""Hits kept per error word / look-back literal and per host worker in one scan."""
TAIL_BYTES = 4 * 1024 * 1024
"""What the last resort reads when the host has neither python3 nor grep."""


class PrefilterError(HostError):
    """The log could not be scanned or read on the host."""


def _variants(word: str, upper: bool = True) -> list[str]:
    """The spellings a case-insensitive literal takes in logs: as written, lower, UPPER (+ ``vLLM``).

    Each spelling is one more pass over the file on the host, so only these: a mixed-case
    ``ErRoR`` is not looked for (the classifier itself would see it)."""
    forms = [word, word.lower(), *([word.upper()] if upper else [])]
    if word.lower() == "vllm":
        forms += ["vLLM", "Vllm"]
    return list(dict.fromkeys(forms))


def _encode(literal: str, fmt: str) -> bytes:
    """The literal as it appears in the file on disk (docker's json-file escapes text)."""
    if fmt != "docker-json":
        return literal.encode()
    esc = json.dumps(literal, ensure_ascii=False)[1:-1]
    return esc.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


SEP = {"raw": b"\n", "cri": b"\n", "docker-json": b'\\n","stream"'}
"""What ends one line of TEXT in the file (a docker entry ends its ``log`` with ``\\n``)."""


@dataclass
class _Spec:
    """Needle ids sent to the host and what each stands for."""

    needles: list[list[Any]] = field(default_factory=list)
    gated: list[list[Any]] = field(default_factory=list)
    kind: dict[int, tuple[str, int]] = field(default_factory=dict)
    """id -> (``word``/``lookback``/``marker``, stage index a marker reaches)."""


def build_spec(fmt: str, only: set[int] | None = None, once: bool = False) -> _Spec:
    """Needles for the host, by id; ``only`` keeps those ids (a rescan); ``once`` adds the
    is-this-vLLM-at-all word (only needed when nothing else was found: :func:`find_root`)."""
    nd, spec, nid = needles(), _Spec(), 0

    def add(kind: str, lit: str, cap: int, stage: int = -1, gated: bool = False) -> None:
        nonlocal nid
        if only is None or nid in only:
            (spec.gated if gated else spec.needles).append([nid, _encode(lit, fmt).hex(), cap])
        spec.kind[nid] = (kind, stage)
        nid += 1

    for w in nd.words:
        for v in _variants(w):
            add("word", v, NEEDLE_CAP)
    for w in nd.once if once else ():
        for v in _variants(w):
            add("once", v, 1)
    for lit in nd.lookback:
        add("lookback", lit, NEEDLE_CAP)
    for stage, m in nd.plain:
        for v in _variants(m, upper=False):
            add("marker", v, MARKER_CAP, stage)
    for stage, m in nd.gated:
        add("marker", m, MARKER_CAP, stage, gated=True)
    return spec


# --- talking to the host ---------------------------------------------------------------


@cache
def remote_source() -> str:
    """The program run on the host (sent on stdin)."""
    return Path(__file__).with_name("prefilter_remote.py").read_text(encoding="utf-8")


def _py(op: str, arg: dict[str, Any]) -> str:
    blob = shlex.quote(json.dumps(arg, separators=(",", ":")))
    return f"command -v python3 >/dev/null 2>&1 || exit 127; exec python3 -S - {op} {blob}"


@dataclass
class _Scanned:
    """What the host's scan has said so far; :meth:`more` waits for its next chunk of hits."""

    size: int
    method: str
    start_line: int = 0
    hits: list[tuple[int, int, int]] = field(default_factory=list)
    lines: int = 0
    """Text lines of the scanned bytes (final once ``done``)."""
    last_nl: bool = True
    sha256: Any = None
    """The hex digest, or a task that gives it (the host hashes while windows are read)."""
    dropped: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    """id -> (line offset, line number, end of the chunk) where a needle reached its cap."""
    done: bool = False
    docs: Any = None

    def apply(self, doc: dict[str, Any]) -> list[tuple[int, int, int]]:
        """Take one answer line of the host; returns the hits it brought."""
        base = self.start_line
        if "sha256" in doc:
            self.sha256 = doc["sha256"]
        if "done" in doc:
            self.done, self.lines, self.last_nl = True, doc["lines"] + base, doc["last_nl"]
        new = [(o, n + base, i) for o, n, i in doc.get("hits", ())]
        for k, (o, n) in doc.get("dropped", {}).items():
            self.dropped.setdefault(int(k), (o, n + base, doc["upto"]))
        self.hits += new
        return new

    async def more(self) -> list[tuple[int, int, int]]:
        """The hits of the next chunk the host finished (empty once the scan is done)."""
        while not self.done and self.docs is not None:
            doc = await anext(self.docs, None)
            if doc is None:
                raise PrefilterError("the host's prefilter stopped before the end of its scan")
            new = self.apply(doc)
            if new or self.done:
                if self.done:
                    self.sha256 = self.sha256 or asyncio.ensure_future(_rest_sha(self.docs))
                return new
        return []


async def _rest_sha(docs: Any) -> str | None:
    sha = None
    async for doc in docs:
        sha = doc.get("sha256", sha)
    return sha


async def _scan(
    host: Host, path: str, fmt: str, spec: _Spec, start: int, start_line: int, hash_it: bool, end: int = 0
) -> _Scanned:
    """Start the host's scan; returns once it has said the file's size (hits follow in :meth:`_Scanned.more`)."""
    nd = needles()
    arg = {
        "path": path,
        "start": start,
        "end": end,
        "needles": spec.needles,
        "gate": [_encode(nd.gate, fmt).hex(), spec.gated] if spec.gated else None,
        "sep": SEP[fmt].hex(),
        "hash": hash_it,
    }
    docs = await _docs(host, _py("scan", arg), path, streamed=hash_it)
    if docs is None:
        return await _grep_scan(host, path, fmt, spec, start, start_line)
    head = await anext(docs, None)
    if head is None or "size" not in head:
        raise PrefilterError(f"the host's prefilter gave no answer for {path}")
    return _Scanned(head["size"], "python", start_line, docs=docs)


async def _docs(host: Host, cmd: str, path: str, *, streamed: bool) -> Any:
    """The scan's answer lines as an async iterator of dicts (None: the host has no python3).

    Streamed (``host.stream``), the first windows are read while the host still scans and
    hashes; a host without streaming (or a rescan) answers all at once."""
    stream = getattr(host, "stream", None)
    if not streamed or stream is None:
        r = await host.run(cmd, timeout=600.0, purpose="log prefilter scan", stdin=remote_source())
        if r.status == 127 and not r.stdout:
            return None
        return _aiter(_json_lines(r, path))
    lines = stream(cmd, purpose="log prefilter scan", stdin=remote_source())
    first: list[str] = []
    async for batch in lines:
        if batch:
            first = batch
            break
    if not first:
        return None

    async def gen() -> Any:
        for line in first:
            yield _json_doc(line, path)
        async for batch in lines:
            for line in batch:
                yield _json_doc(line, path)

    return gen()


async def _aiter(items: list[dict[str, Any]]) -> Any:
    for x in items:
        yield x


def _json_doc(line: str, path: str) -> dict[str, Any]:
    try:
        return json.loads(line)
    except ValueError as exc:
        raise PrefilterError(f"the host's prefilter answered garbage for {path}: {exc}") from exc


def _json_lines(r: RunResult, path: str) -> list[dict[str, Any]]:
    if not r.ok:
        why = (r.stderr.strip().splitlines() or [r.error or f"exit status {r.status}"])[-1]
        raise PrefilterError(f"cannot scan {path} on the host: {why}")
    return [_json_doc(line, path) for line in r.stdout.splitlines() if line.strip()]


async def _grep_scan(host: Host, path: str, fmt: str, spec: _Spec, start: int, start_line: int) -> _Scanned:
    """No python3 on the host: ``grep -b -n -F`` over the same bytes (no caps, no parallel hash)."""
    q = shlex.quote(path)
    lits = [bytes.fromhex(h).decode("utf-8", "replace") for _, h, _ in spec.needles + spec.gated]
    pats = " ".join(f"-e {shlex.quote(p)}" for p in dict.fromkeys(lits))
    body = f"tail -c +{start + 1} {q} | head -c $s"
    cmd = (
        f"export LC_ALL=C; s=$(wc -c < {q}) || exit 2; s=$((s - {start})); echo size $((s + {start})); "
        f"{body} | grep -b -n -F {pats} | cut -d: -f1,2; echo lines $({body} | wc -l); "
        f"echo last $({body} | tail -c 1 | od -An -tx1); "
        + ("echo sha $(head -c $((s)) " + q + " | sha256sum)" if start == 0 else "true")
    )
    r = await host.run(cmd, timeout=600.0, purpose="log prefilter scan (grep)")
    if not r.ok and "size" not in r.stdout:
        raise PrefilterError(f"cannot scan {path} on the host: {(r.stderr.strip() or r.error).splitlines()[-1:]}")
    return _parse_grep(r.stdout, start, start_line)


def _parse_grep(out: str, start: int, start_line: int) -> _Scanned:
    size, lines, last_nl, sha = 0, 0, True, None
    hits: list[tuple[int, int, int]] = []
    for line in out.splitlines():
        word, _, rest = line.partition(" ")
        if word == "size":
            size = int(rest)
        elif word == "lines":
            lines = int(rest)
        elif word == "last":
            last_nl = rest.strip() in ("0a", "")
        elif word == "sha":
            sha = rest.split()[0] if rest.split() else None
        elif ":" in line:
            n, _, off = line.partition(":")
            if n.isdigit() and off.isdigit():
                hits.append((int(off) + start, int(n) - 1 + start_line, -1))
    return _Scanned(size, "grep", start_line, hits, lines + start_line, last_nl, sha, done=True)


@dataclass
class _Win:
    """A window to read: from ``before`` bytes ahead of the hit at ``anchor`` (never before ``lo``)."""

    lo: int
    anchor: int
    line: int
    before: int
    min_end: int


@dataclass
class _Got:
    start: int
    end: int
    first_line: int
    text: str


async def _fetch(host: Host, path: str, size: int, fmt: str, wins: list[_Win]) -> list[_Got]:
    """The bytes of each window (whole lines), decoded, with the line number of its first line."""
    nonce = secrets.token_hex(16)
    ranges = [[w.lo, w.anchor, w.before, w.min_end] for w in wins]
    arg = {"path": path, "size": size, "nonce": nonce, "sep": SEP[fmt].hex(), "ranges": ranges}
    r = await host.run(_py("fetch", arg), timeout=300.0, purpose="log window fetch", stdin=remote_source())
    if r.status == 127 and not r.stdout:
        return await _fetch_dd(host, path, size, wins)
    if not r.ok:
        raise PrefilterError(f"cannot read {path} on the host: {(r.stderr.strip() or r.error).splitlines()[-1:]}")
    got = _split_fetched(r.stdout, nonce)
    if len(got) != len(wins):
        raise PrefilterError(f"the host's window reader answered {len(got)} windows of {len(wins)} for {path}")
    return [_Got(a, b, w.line - k, text) for (a, b, k, text), w in zip(got, wins, strict=True)]


def _split_fetched(out: str, nonce: str) -> list[tuple[int, int, int, str]]:
    got: list[tuple[int, int, int, str]] = []
    mark = nonce + " "
    pos = 0
    while pos < len(out):
        if not out.startswith(mark, pos):
            raise PrefilterError("the host's window reader answered out of step (a header was expected)")
        nl = out.index("\n", pos)
        a, b, k = (int(x) for x in out[len(mark) + pos : nl].split())
        nxt = out.find("\n" + mark, nl)
        got.append((a, b, k, out[nl + 1 : (nxt + 1 if nxt >= 0 else len(out))]))
        pos = nxt + 1 if nxt >= 0 else len(out)
    return got


async def _fetch_dd(host: Host, path: str, size: int, wins: list[_Win]) -> list[_Got]:
    """No python3: each window with ``tail -c`` / ``head -c``, cut here to whole lines (exact for UTF-8 text)."""
    got = []
    for w in wins:
        x = max(w.lo, w.anchor - w.before)
        back = min(x - w.lo, 65536)
        want = min(size - (x - back), (w.min_end - x) + back + 65536)
        r = await host.run(f"tail -c +{x - back + 1} {shlex.quote(path)} | head -c {want}", purpose="log window fetch")
        raw = r.stdout.encode("utf-8", "surrogateescape")
        cut = 0 if x - back == w.lo or x - back == 0 else raw.rfind(b"\n", 0, back) + 1
        start = x - back + cut
        i = raw.find(b"\n", max(cut, w.min_end - (x - back) - 1))
        end = len(raw) if i < 0 else i + 1
        k = raw[cut : max(cut, w.anchor - (x - back))].count(b"\n")
        got.append(_Got(start, x - back + end, w.line - k, raw[cut:end].decode("utf-8", "replace")))
    return got


# --- decoding the formats ----------------------------------------------------------------


def decode(text: str, fmt: str) -> str:
    """The log text inside a window of the file (docker's JSON entries, CRI's tagged lines)."""
    if fmt == "raw":
        return text
    parts: list[str] = []
    for line in text.split("\n"):
        if not line:
            continue
        if fmt == "docker-json":
            try:
                parts.append(str(json.loads(line).get("log", "")))
            except (ValueError, AttributeError):
                continue
        else:
            ts, _, rest = line.partition(" ")
            stream, _, rest = rest.partition(" ")
            tag, _, msg = rest.partition(" ")
            parts.append(msg + ("" if tag == "P" else "\n"))
    return "".join(parts)


# --- the walk ----------------------------------------------------------------------------


@dataclass
class LogScan:
    """What :func:`find_root` found and what it read."""

    path: str
    fmt: str
    result: ClassifyResult
    size: int = 0
    sha256: str | None = None
    ranges: list[tuple[int, int]] = field(default_factory=list)
    """Byte ranges of the file read over SSH, in order."""
    method: str = "python"
    """``python`` / ``grep`` (the host's prefilter), ``full`` (everything read), ``tail`` (last resort)."""
    hits: int = 0
    excerpt: str = ""
    """The window that holds the root (text as classified, capped)."""
    seconds: float = 0.0
    root_seconds: float | None = None
    """When the root was named (before the host finished hashing, for a long log)."""
    notes: list[str] = field(default_factory=list)

    @property
    def bytes_read(self) -> int:
        return sum(b - a for a, b in self.ranges)


def _settled(c: Classifier) -> bool:
    """No traceback open and no root waiting for its stack: lines without a needle are only counted.

    TODO(lead): ask issue 13 for a public ``Classifier.settled``; until then the private
    ``_busy`` is read here only. Without it every window runs on to the end of the file.
    """
    busy = getattr(c, "_busy", None)
    return busy is not None and c.result().lines >= HEAD_LINES and not busy()


def filler(lines: int) -> str:
    """``lines`` empty lines: the classifier, settled, only counts them (no needle, no look-back literal)."""
    return "\n" * max(0, lines)


class _Walk:
    """Feeds windows and fillers to one classifier in file order."""

    def __init__(self, fmt: str, emit: Callable[[Any], None] | None, run: str) -> None:
        self.fmt = fmt
        self.announced = False
        self.announced_at = 0.0
        self._emit = emit

        def on(ev: Any) -> None:
            if type(ev).__name__ == "ExceptionFound":
                self.announced, self.announced_at = True, time.monotonic()
            if emit is not None:
                emit(ev)

        self.c = Classifier(run=run, emit=on)
        self.line = 0
        self.off = 0
        self.since_lookback: int | None = None
        self.root_window: tuple[int, str] | None = None
        self._lookback = tuple(x.lower() for x in needles().lookback)

    def gap(self, lines: int) -> None:
        if lines > 0:
            self.c.feed(filler(lines))
            self.line += lines
            self.since_lookback = None

    def window(self, a: int, b: int, raw: str) -> None:
        text = decode(raw, self.fmt)
        before = self.announced
        self.c.feed(text)
        self.line += raw.count("\n") if self.fmt != "docker-json" else text.count("\n")
        self.off = b
        low = text.lower()
        i = max(low.rfind(n) for n in self._lookback) if len(low) == len(text) else len(text) - 1
        if i >= 0:
            self.since_lookback = len(text) - (text.rfind("\n", 0, i) + 1)
        elif self.since_lookback is not None:
            self.since_lookback += len(text)
        if self.announced and not before:
            self.root_window = (a, text)

    def may_leave(self) -> bool:
        """A gap may start here: settled, out of every look-back's reach."""
        shadow = self.since_lookback is not None and self.since_lookback <= LOOKBACK
        return _settled(self.c) and not shadow

    def certain(self, full: bool = False) -> bool:
        """The answer can no longer change: a root announced on more than weak evidence (a root that
        only its type or its process places may still be placed by a later line: the loader's bar
        stuck after it, an EngineDeadError), settled, its OOM verdict known."""
        if full or not self.announced or not _settled(self.c):
            return False
        res = self.c.result()
        return res.oom_root_cause is not None and res.confidence != "low"

    def stage_reached(self) -> int:
        marks = self.c.result().stages
        return max((STAGES.index(m.stage) for m in marks), default=-1)


async def find_root(
    host: Host,
    path: str,
    *,
    fmt: str = "raw",
    full: bool = False,
    emit: Callable[[Any], None] | None = None,
    run: str = "",
) -> LogScan:
    """Classify the log file ``path`` on ``host`` as a whole, reading only what matters.

    Args:
        fmt: ``raw`` (the server's own output), ``docker-json`` (docker's json-file:
            scanned raw, classified decoded), ``cri`` (containerd/Kubernetes ``TS STREAM F text``).
        full: read the whole file over SSH (``--full-log``), still with its size and SHA-256.
        emit: receives the classifier's ``StageReached``/``ExceptionFound``/``RunClassified``.
        run: the run id put on those events.

    Raises:
        PrefilterError: the file cannot be read on the host (missing, unreadable, shrank).
    """
    if fmt not in FORMATS:
        raise PrefilterError(f"unknown log format {fmt!r}: use one of {', '.join(FORMATS)}")
    t0 = time.monotonic()
    out = await _find(host, path, fmt, full, emit, run, t0, once=False)
    if out.result.failed_stage == "unknown" and not out.result.stages[1:]:
        # nothing found: is it a vLLM log at all? the one question that needs the word "vllm" too
        out = await _find(host, path, fmt, full, emit, run, t0, once=True)
    out.seconds = round(time.monotonic() - t0, 3)
    return out


async def _find(
    host: Host, path: str, fmt: str, full: bool, emit: Callable[[Any], None] | None, run: str, t0: float, *, once: bool
) -> LogScan:
    spec = build_spec(fmt, once=once)
    sc = await _scan(host, path, fmt, spec, 0, 0, True)
    walk = _Walk(fmt, emit, run)
    out = LogScan(path, fmt, walk.c.result(), size=sc.size, method="full" if full else sc.method)
    await _walk(host, path, fmt, spec, sc, walk, out, full)
    while not sc.done:  # the root is named; the host still owes the rest of its scan and the hash
        await sc.more()
    out.sha256 = (await sc.sha256) if isinstance(sc.sha256, asyncio.Future) else sc.sha256
    out.hits = len(sc.hits)
    out.result = walk.c.finish()
    out.root_seconds = round(walk.announced_at - t0, 3) if walk.announced_at else None
    if walk.root_window:
        out.excerpt = walk.root_window[1][:65536]
    return out


async def _walk(
    host: Host, path: str, fmt: str, spec: _Spec, sc: _Scanned, walk: _Walk, out: LogScan, full: bool
) -> None:
    pending = sorted({(o, n) for o, n, _ in sc.hits} | ({(0, 0)} if sc.size else set()))
    queue: list[_Got] = []
    i = 0
    while not walk.certain(full):
        if i >= len(pending):
            if sc.done:
                break
            pending, i = sorted(set(pending[i:]) | {(o, n) for o, n, _ in await sc.more()}), 0
            continue
        off, line = pending[i]
        if off < walk.off:
            i += 1
            continue
        if sc.dropped and min(o for o, _, _ in sc.dropped.values()) < off:
            extra = await _rescan(host, path, fmt, spec, sc, walk)
            pending, i, queue = sorted(set(pending[i:]) | {h for h in extra if h[0] >= walk.off}), 0, []
            continue
        if not queue or queue[0].start < walk.off or queue[0].start > off:
            queue = await _fetch(host, path, sc.size, fmt, _plan(pending[i:], walk, sc.size, full))
        got = queue.pop(0)
        i = _after(pending, i, got.end)
        walk.gap(got.first_line - walk.line)
        if await _read_window(host, path, sc.size, fmt, got, walk, out, full) >= sc.size:
            return
    if walk.certain(full) or walk.off >= sc.size:
        return
    if sc.dropped and (extra := await _rescan(host, path, fmt, spec, sc, walk)):
        sc.hits = [(o, n, -1) for o, n in extra]  # a dropped needle still mattered: go on from there
        return await _walk(host, path, fmt, spec, sc, walk, out, full)
    await _last_window(host, path, fmt, sc, walk, out)


async def _last_window(host: Host, path: str, fmt: str, sc: _Scanned, walk: _Walk, out: LogScan) -> None:
    """The end of the file: the classifier looks back from it when no root was found."""
    before = needles().before_chars
    if before:
        got = (await _fetch(host, path, sc.size, fmt, [_Win(walk.off, sc.size, sc.lines, 4 * before, sc.size)]))[0]
        walk.gap(got.first_line - walk.line)
        await _read_window(host, path, sc.size, fmt, got, walk, out, False)
        return
    walk.gap(sc.lines - walk.line)
    if not sc.last_nl:
        walk.c.feed("~")


def _after(pending: list[tuple[int, int]], i: int, end: int) -> int:
    while i < len(pending) and pending[i][0] < end:
        i += 1
    return i


def _plan(hits: list[tuple[int, int]], walk: _Walk, size: int, full: bool) -> list[_Win]:
    """The next windows, merged where their look-back reaches the previous one, BATCH at most."""
    step = WINDOW if not full else 8 << 20
    before = 4 * needles().before_chars
    wins: list[_Win] = []
    for off, line in hits:
        if len(wins) >= BATCH:
            break
        lo = wins[-1].min_end if wins else walk.off
        if wins and off - before <= wins[-1].min_end:
            wins[-1].min_end = max(wins[-1].min_end, min(size, off + step))
            continue
        wins.append(_Win(lo, off, line, before, min(size, off + step)))
    return wins


async def _read_window(
    host: Host, path: str, size: int, fmt: str, got: _Got, walk: _Walk, out: LogScan, full: bool
) -> int:
    """Feed from the window on until the classifier may leave; returns the end offset."""
    step = WINDOW if not full else 8 << 20
    if got.start == 0 and got.end < size:
        got = await _whole_head(host, path, size, fmt, got)
    while True:
        if got.end <= got.start:
            return size
        out.ranges.append((got.start, got.end))
        walk.window(got.start, got.end, got.text)
        if got.end >= size or (not full and walk.may_leave()) or walk.certain(full):
            return got.end
        step = min(step * 2, 8 << 20)
        nxt = _Win(got.end, got.end, walk.line, 0, min(size, got.end + step))
        got = (await _fetch(host, path, size, fmt, [nxt]))[0]


HEAD_CAP = 16 << 20
"""The most bytes of a log's first lines held to be fed in one piece (lines that long are no layout to learn)."""


async def _whole_head(host: Host, path: str, size: int, fmt: str, got: _Got) -> _Got:
    """The first window grown to the log's first ``WRAP_PROBE`` lines, fed to the classifier in one
    piece: it learns the log's layout from those lines (a hard wrap's width, another program's
    envelope, an indentation, double spacing, the words of an excerpt) before it reads any of them,
    as it does when handed the whole file. Fed in pieces, the lines before the piece that taught it
    would have been read without it (an envelope learnt from a traceback's second line, its head
    already passed over)."""
    step = WINDOW
    while got.text.count("\n") < WRAP_PROBE and got.end < size and got.end - got.start < HEAD_CAP:
        step = min(step * 2, 8 << 20)
        line = got.first_line + got.text.count("\n")
        nxt = (await _fetch(host, path, size, fmt, [_Win(got.end, got.end, line, 0, min(size, got.end + step))]))[0]
        if nxt.end <= nxt.start:
            break
        got = _Got(got.start, nxt.end, got.first_line, got.text + nxt.text)
    return got


async def _rescan(host: Host, path: str, fmt: str, spec: _Spec, sc: _Scanned, walk: _Walk) -> list[tuple[int, int]]:
    """Needles dropped at their cap before here: scan their chunks again from here, for those still needed."""
    reached = walk.stage_reached()
    need = {k: v for k, v in sc.dropped.items() if spec.kind[k][0] in ("word", "lookback") or spec.kind[k][1] > reached}
    sc.dropped.clear()
    if not need:
        return []
    end = max(upto for _, _, upto in need.values())
    again = await _scan(host, path, fmt, build_spec(fmt, set(need)), walk.off, walk.line, False, end)
    while not again.done:
        await again.more()
    sc.dropped.update(again.dropped)
    return [(o, n) for o, n, _ in again.hits]


def run_async(coro: Any) -> Any:
    """Run a coroutine from synchronous code (the CLI)."""
    return asyncio.run(coro)

"""The prefilter's answer equals classifying the whole file (issue 15: equivalence is the product).

Every labelled log of ``../shared/corpus`` and of the tuned part of ``tests/data/corpus`` is
embedded at random places in floods of real routine lines (NCCL INFO/TRACE lines of a real
H200 rank, vLLM INFO lines of the corpus' healthy runs); :func:`find_root` must give the same
stage, root line and number, stack, process, signature and OOM verdict as
:func:`classify_text` of the whole file. Also: two roots, a root near the end, CRLF, no final
newline, invalid UTF-8, very long lines, docker's json-file and the CRI format.

Most examples run the host program (``k3tui/remote/prefilter_remote.py``) in this process
through :class:`InProcessHost` — the same functions the host runs, without a python start-up
per window — so that hundreds of examples fit in CI; ``test_local_host_*`` run it for real as
``python3 -S`` subprocesses (a growing file, the no-python fallback).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import random
import shlex
import shutil
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3tui.classify import ClassifyResult, classify_text
from k3tui.remote import prefilter_remote
from k3tui.remote.base import RunResult
from k3tui.remote.local import LocalHost
from k3tui.remote.prefilter import WINDOW, decode, find_root
from tests.support.corpus import SHARED_CORPUS, cases, tuned_cases

NCCL = Path("/work/shared/fixtures/hosts/h200-r580-health/nccl_trace_1rank.txt")
CASES = cases(SHARED_CORPUS) + tuned_cases()


def _nccl_lines() -> list[str]:
    return NCCL.read_text(encoding="utf-8").splitlines(keepends=True)


def _routine(line: str) -> bool:
    """An INFO line of a healthy run that is not part of its stop (a stop silences later errors)."""
    low = line.lower()
    return "INFO" in line[:40] and "rror" not in low and "shutdown" not in low and "shutting down" not in low


def _vllm_info_lines() -> list[str]:
    out: list[str] = []
    for c in CASES:
        if c.label.get("stage") == "none":
            out += [ln for ln in c.text().splitlines(keepends=True) if _routine(ln)]
    return out or _nccl_lines()


FLOODS = {"nccl": _nccl_lines(), "vllm": _vllm_info_lines()}


class InProcessHost:
    """Runs the host program's ``scan``/``fetch`` in this process (a stand-in for the shell
    only: the program's own functions run, forks included); anything else is refused."""

    alias = "inprocess"
    simulated = False

    def __init__(self) -> None:
        self.commands: list[str] = []

    async def run(
        self, command: str, *, timeout: float = 30.0, purpose: str = "", stdin: str | None = None
    ) -> RunResult:
        self.commands.append(command)
        argv = shlex.split(command.split("exec ", 1)[1])
        buf = io.BytesIO()
        out = io.TextIOWrapper(buf, encoding="utf-8", write_through=True)
        real = sys.stdout
        sys.stdout = out
        try:
            status = prefilter_remote.main(["prefilter", argv[3], argv[4]])
        finally:
            sys.stdout = real
        return RunResult(command, stdout=buf.getvalue().decode("utf-8", "replace"), status=status)


def key(r: ClassifyResult) -> tuple:
    fe = r.first_exception
    return (
        r.failed_stage,
        None if fe is None else (fe.line, fe.line_number, tuple(fe.stack), fe.process),
        r.signature,
        r.exception_type,
        r.oom_root_cause,
    )


def scan(path: Path, fmt: str = "raw", host: object | None = None):
    return asyncio.run(find_root(host or InProcessHost(), str(path), fmt=fmt))


def check(path: Path, fmt: str = "raw", reference: str | None = None) -> None:
    text = reference if reference is not None else decode(path.read_bytes().decode("utf-8", "replace"), fmt)
    got = scan(path, fmt)
    assert key(got.result) == key(classify_text(text))
    assert got.size == path.stat().st_size


def embed(rnd: random.Random, log: list[str], floods: int, flood_lines: int) -> str:
    """The log cut at random places, a flood of real routine lines before, between and after the pieces."""
    cuts = sorted(rnd.randrange(0, len(log) + 1) for _ in range(floods))
    pieces, prev = [], 0
    for c in [*cuts, len(log)]:
        pieces.append(log[prev:c])
        prev = c
    out: list[str] = []
    for i, piece in enumerate(pieces):
        flood = FLOODS[rnd.choice(sorted(FLOODS))]
        start = rnd.randrange(len(flood))
        n = rnd.randrange(flood_lines) if i else rnd.randrange(flood_lines // 2)
        out += [flood[(start + k) % len(flood)] for k in range(n)]
        out += piece
    return "".join(out)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_corpus_log_in_a_flood_same_as_whole_file(tmp_path: Path, case) -> None:
    """Each corpus log cut at random places with floods between the pieces. The draws come from a
    generator seeded by the log's name, not from hypothesis: with @given under this parametrization,
    hypothesis's settings chain hit Python's recursion limit past ~950 cases (RecursionError in
    settings.database), failing every case after it. One embedding per log (two until session 10: the
    corpus grew to ~1,900 logs and this test to a tenth of CI's 30 minutes); the tests below vary
    the floods and cuts on chosen logs many times more."""
    rnd = random.Random(zlib.crc32(case.id.encode()))
    for k in range(1):
        seed, floods, flood_lines = rnd.randrange(2**32), rnd.randint(1, 3), rnd.choice([200, 3000, 12000])
        text = embed(random.Random(seed), case.text().splitlines(keepends=True), floods, flood_lines)
        p = tmp_path / f"server{k}.log"
        p.write_text(text, encoding="utf-8")
        check(p)


def _failing_cases() -> list:
    return [c for c in CASES if c.label.get("stage") not in (None, "none") and c.label.get("first_exception")]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), near_end=st.booleans())
def test_two_roots_first_wins_and_root_near_end(tmp_path: Path, seed: int, near_end: bool) -> None:
    rnd = random.Random(seed)
    a, b = rnd.sample(_failing_cases(), 2)
    flood = FLOODS["nccl"] * 40
    head = flood[: rnd.randrange(len(flood))] if near_end else flood[: rnd.randrange(50)]
    between = "".join(flood[: rnd.randrange(2000)])
    text = "".join(head) + a.text() + between + b.text() + "".join(flood[: rnd.randrange(30)])
    p = tmp_path / "server.log"
    p.write_text(text, encoding="utf-8")
    got = scan(p)
    assert key(got.result) == key(classify_text(text))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32),
    crlf=st.booleans(),
    final_newline=st.booleans(),
    garbage=st.sampled_from([b"", b"\xff\xfe", b"\xe2\x82", b"\xc3", b"caf\xc3\xa9 \xf0\x9f\x94\xa5"]),
    long_line=st.sampled_from([0, 70_000, 300_000, 1_300_000]),
)
def test_line_endings_bad_utf8_long_lines(
    tmp_path: Path, seed: int, crlf: bool, final_newline: bool, garbage: bytes, long_line: int
) -> None:
    rnd = random.Random(seed)
    case = rnd.choice(CASES)
    text = embed(rnd, case.text().splitlines(keepends=True), 2, 3000)
    lines = text.encode().split(b"\n")
    for _ in range(5):
        i = rnd.randrange(len(lines))
        lines[i] = lines[i][: rnd.randrange(len(lines[i]) + 1)] + garbage + lines[i][rnd.randrange(len(lines[i]) + 1) :]
    if long_line:
        i = rnd.randrange(len(lines))
        word = rnd.choice([b"x", b" rror ", b"Traceback (most recent call last):", b".py: KV cache "])
        lines[i] = (b"y" * rnd.randrange(long_line)) + word + b"z" * long_line
    data = (b"\r\n" if crlf else b"\n").join(lines)
    data = data.rstrip(b"\r\n") + (b"\n" if final_newline else b"")
    p = tmp_path / "server.log"
    p.write_bytes(data)
    check(p)


def _docker_json(text: str) -> str:
    rnd = random.Random(len(text))
    out = []
    for ln in text.splitlines(keepends=True):
        entry = {"log": ln, "stream": rnd.choice(["stdout", "stderr"]), "time": "2026-12-01T21:59:00.123456789Z"}
        out.append(json.dumps(entry, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e") + "\n")
    return "".join(out)


def _cri(text: str) -> str:
    return "".join(f"2026-12-01T21:59:00.123456789Z stderr F {ln}" for ln in text.splitlines(keepends=True))


@pytest.mark.parametrize("fmt", ["docker-json", "cri"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32))
def test_container_log_formats(tmp_path: Path, fmt: str, seed: int) -> None:
    rnd = random.Random(seed)
    text = embed(rnd, rnd.choice(CASES).text().splitlines(keepends=True), 2, 3000)
    if not text.endswith("\n"):
        text += "\n"
    p = tmp_path / "container.log"
    p.write_text(_docker_json(text) if fmt == "docker-json" else _cri(text), encoding="utf-8")
    check(p, fmt, reference=text)


def test_reads_a_small_part_of_a_big_flood(tmp_path: Path) -> None:
    case = _failing_cases()[0]
    flood = "".join(FLOODS["nccl"]) * 900  # ~31 MB
    text = "".join(FLOODS["nccl"][:100]) + case.text() + flood
    p = tmp_path / "server.log"
    p.write_text(text, encoding="utf-8")
    got = scan(p)
    assert key(got.result) == key(classify_text(text))
    assert got.bytes_read < 0.1 * len(text), got.ranges  # the look-back MiB after each traceback head, the windows
    import hashlib

    assert got.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()


def test_local_host_growing_file_is_the_prefix_it_had(tmp_path: Path) -> None:
    """A real ``python3 -S`` on this machine while a writer appends: size, hash and answer are of one prefix."""
    case = _failing_cases()[0]
    p = tmp_path / "server.log"
    p.write_text(case.text() + "".join(FLOODS["nccl"]) * 200, encoding="utf-8")
    stop = threading.Event()

    def writer() -> None:
        with p.open("a", encoding="utf-8") as fh:
            while not stop.is_set():
                fh.write("".join(FLOODS["vllm"][:50]) + "ERROR 12-01 22:00:00 [x.py:1] RuntimeError: later\n")
                fh.flush()
                time.sleep(0.001)

    t = threading.Thread(target=writer)
    t.start()
    try:
        got = asyncio.run(_with_local(lambda h: find_root(h, str(p))))
    finally:
        stop.set()
        t.join()
    prefix = p.read_bytes()[: got.size]
    import hashlib

    assert got.sha256 == hashlib.sha256(prefix).hexdigest()
    assert key(got.result) == key(classify_text(prefix.decode("utf-8", "replace")))


async def _with_local(fn):
    async with LocalHost() as h:
        return await fn(h)


def test_local_host_without_python_uses_grep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PATH without python3: the grep fallback finds the same root, size and SHA-256."""
    binp = tmp_path / "bin"
    binp.mkdir()
    for tool in ("sh", "grep", "cut", "wc", "head", "tail", "od", "sha256sum"):
        found = shutil.which(tool)
        assert found, tool
        os.symlink(found, binp / tool)
    case = _failing_cases()[1]
    text = "".join(FLOODS["nccl"]) * 20 + case.text() + "".join(FLOODS["nccl"]) * 20
    p = tmp_path / "server.log"
    p.write_text(text, encoding="utf-8")
    monkeypatch.setenv("PATH", str(binp))
    got = asyncio.run(_with_local(lambda h: find_root(h, str(p))))
    assert got.method == "grep"
    assert key(got.result) == key(classify_text(text))
    import hashlib

    assert got.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()
    assert got.bytes_read < len(text)


def test_missing_file_is_one_clear_error(tmp_path: Path) -> None:
    from k3tui.remote.prefilter import PrefilterError

    with pytest.raises(PrefilterError, match="no-such.log"):
        scan(tmp_path / "no-such.log")


# --- each safety of the walk on the input that needs it -----------------------------------


def _long_flood(n: int, width: int) -> str:
    """n NCCL INFO lines of another process, each padded by ``width`` characters."""
    lines = [ln for ln in FLOODS["nccl"] if "] NCCL INFO " in ln]
    return "".join(ln.rstrip("\n") + " " + "x" * width + "\n" for ln in (lines * (n // len(lines) + 1))[:n])


def _traced_cases() -> list:
    """Failing corpus logs with a traceback head that has lines after it (a flood goes between them)."""
    out = []
    for c in _failing_cases():
        lines = c.text().splitlines()
        head = next((i for i, ln in enumerate(lines) if "Traceback (most recent call last):" in ln), None)
        if head is not None and head + 2 < len(lines):
            out.append(c)
    return out


UNPREFIXED_TB = [
    "Traceback (most recent call last):\n",
    '  File "/usr/lib/python3/dist-packages/vllm/entrypoints/openai/api_server.py", line 1021, in run_server\n',
    "    sock = create_server_socket(sock_addr)\n",
    None,  # the flood goes here
    '  File "/usr/lib/python3/dist-packages/vllm/entrypoints/openai/api_server.py", line 988, in create_server_socket\n',
    "    sock.bind(addr)\n",
    "OSError: [Errno 98] Address already in use\n",
]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32),
    n=st.integers(20, 190),
    width=st.sampled_from([500, 4000, 8000]),
    unprefixed=st.booleans(),
)
def test_a_traceback_held_open_across_a_flood_of_long_lines(
    tmp_path: Path, seed: int, n: int, width: int, unprefixed: bool
) -> None:
    """Another process's long lines inside the root's traceback (fewer than the 200 that close it
    as stale, up to ~1.5 MB, past the look-back): the window must run on while the traceback is open."""
    rnd = random.Random(seed)
    if unprefixed:
        lines = [ln or _long_flood(n, width) for ln in UNPREFIXED_TB]
        text = "".join(FLOODS["vllm"][:300]) + "".join(lines) + "".join(FLOODS["nccl"][:100])
    else:
        lines = rnd.choice(_traced_cases()).text().splitlines(keepends=True)
        head = next(i for i, ln in enumerate(lines) if "Traceback (most recent call last):" in ln)
        a = rnd.randrange(head + 1, min(len(lines), head + 4))
        b = rnd.randrange(a, min(len(lines), a + 4))  # two floods: the frames between them need the window
        flood = _long_flood(n, width)
        text = "".join(FLOODS["nccl"][:300]) + "".join(lines[:a]) + flood + "".join(lines[a:b]) + flood
        text += "".join(lines[b:])
    p = tmp_path / "server.log"
    p.write_text(text, encoding="utf-8")
    check(p)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flood_kib=st.integers(50, 2500), literal=st.sampled_from(["stop", "traceback"]))
def test_a_look_back_literal_a_flood_before_the_line_that_looks_back(
    tmp_path: Path, flood_kib: int, literal: str
) -> None:
    """A normal stop (or an unprefixed traceback head) up to ~2.5 MiB before an error line: the
    classifier looks back 1 MiB for it; the window after the literal must cover that MiB."""
    flood = "".join(FLOODS["nccl"]) * (flood_kib * 1024 // len("".join(FLOODS["nccl"])) + 1)
    flood = flood[: flood.rfind("\n", 0, flood_kib * 1024) + 1]
    if literal == "stop":
        before = "INFO 12-01 22:00:00 [launcher.py:80] Shutting down: shutdown triggered by SIGTERM\n"
        after = "ERROR 12-01 22:00:05 [core.py:90] RuntimeError: Engine loop has died\n"
    else:
        before = 'Traceback (most recent call last):\n  File "/x/vllm/entrypoints/api_server.py", line 3, in run\n'
        after = "    bind()\nOSError: [Errno 98] Address already in use\n"
    text = "".join(FLOODS["vllm"][:200]) + before + flood + after + "".join(FLOODS["nccl"][:50])
    p = tmp_path / "server.log"
    p.write_text(text, encoding="utf-8")
    check(p)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), k=st.integers(1, 90))
def test_a_native_crash_line_read_back_from_the_line_it_causes(tmp_path: Path, seed: int, k: int) -> None:
    """``free(): invalid pointer`` carries no needle; the ``Fatal Python error`` k lines later looks
    back for it: the window must start that far before its hit."""
    rnd = random.Random(seed)
    flood = FLOODS["nccl"] * 20
    start = rnd.randrange(len(flood))
    gap = [flood[(start + i) % len(flood)] for i in range(k)]
    text = (
        "".join(FLOODS["vllm"][:100])
        + "".join(flood[:4000])
        + "free(): invalid pointer\n"
        + "".join(gap)
        + "Fatal Python error: Aborted\n\nThread 0x00007f (most recent call first):\n"
        + "".join(flood[:3000])
    )
    p = tmp_path / "server.log"
    p.write_text(text, encoding="utf-8")
    check(p)


@pytest.mark.parametrize("case", _failing_cases()[::4], ids=lambda c: c.id)
def test_needles_dropped_at_their_cap_are_scanned_again(tmp_path: Path, case, monkeypatch: pytest.MonkeyPatch) -> None:
    """Caps of 2 hits per needle and 1 per marker force rescans everywhere: same answer."""
    from k3tui.remote import prefilter

    monkeypatch.setattr(prefilter, "NEEDLE_CAP", 2)
    monkeypatch.setattr(prefilter, "MARKER_CAP", 1)
    warn = "WARNING 12-01 22:00:00 [x.py:1] retrying after a transient error (not an Error)\n"
    text = "".join(FLOODS["vllm"][:300]) + warn * 5 + "".join(FLOODS["nccl"][:2000]) + case.text()
    p = tmp_path / "server.log"
    p.write_text(text, encoding="utf-8")
    check(p)


HEAD = "INFO 06-05 01:12:10 [api_server.py:1043] vLLM API server version 0.20.2\n"
WARNING_CASES = {
    # torch unable to initialise CUDA, far from any other hit: the warning root of a log that never got ready
    "cuda-init-warning": [
        "/usr/lib/python3.12/site-packages/torch/cuda/__init__.py:180: UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 12080).\n",
        "  return torch._C._cuda_getDeviceCount() > 0\n",
    ],
    # a platform plugin noted far before vllm._C's failed import (its noise there) and a real failure
    "plugin-platform": [
        "INFO 06-05 01:12:17 [__init__.py:234] Platform plugin hpu is activated\n",
        None,  # a flood between
        "WARNING 06-05 01:12:18 [_custom_ops.py:21] Failed to import from vllm._C with ModuleNotFoundError(\"No module named 'vllm._C'\")\n",
        "ERROR 06-05 01:12:40 [engine.py:9] RuntimeError: HPU graph capture failed\n",
    ],
}


@pytest.mark.parametrize("case", sorted(WARNING_CASES))
@pytest.mark.parametrize("flood", [300, 12000])
def test_warning_roots_and_platform_notes_far_from_any_hit(tmp_path: Path, case: str, flood: int) -> None:
    """Lines the classifier acts on in its warning-root step (not in its error step) must reach it from a
    big log too: the flood test above found a corpus log whose remote scan lacked a needle for one."""
    nccl = FLOODS["nccl"]
    block = "".join(nccl[i % len(nccl)] for i in range(flood))
    text = HEAD + block + "".join(block if x is None else x for x in WARNING_CASES[case]) + block
    p = tmp_path / "server.log"
    p.write_text(text, encoding="utf-8")
    check(p)


@pytest.mark.parametrize("seed", [144, 7, 2024])
def test_the_loaders_bar_beyond_the_look_back_at_the_end(tmp_path: Path, seed: int) -> None:
    """352.log (an OOM while loading, then the loader's bar stuck at 0/46) cut in three with 12,000-line
    floods between the pieces: at the end of the log the classifier looks back a MiB for the loader's last
    bar. The windows fed the lines between them as empty lines, so a bar a real MiB back was still within
    their look-back ("weights" against the whole file's "engine", seed 144): the bar's literal is now a
    look-back literal, read past like a traceback head."""
    case = next(c for c in CASES if c.id == "vllm-issues/352.log")
    p = tmp_path / "server.log"
    p.write_text(embed(random.Random(seed), case.text().splitlines(keepends=True), 3, 12000), encoding="utf-8")
    check(p)


PLAIN = [f"Dec  5 13:{i % 60:02d}:00 node7 kernel: eth0: link is up at 100 Gbps, slot {i}\n" for i in range(97)]


@pytest.mark.parametrize(
    "line",
    ["Sequence group 221 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space.\n",
     "Processed prompts: 100%|##########| 2/2 [00:00<00:00,  8.93it/s]\n",
     "============ Serving Benchmark Result ============\n", None],
)  # fmt: skip
@pytest.mark.parametrize("flood", [40, 9000])
def test_a_word_only_vllm_prints_far_in_a_log_makes_it_a_vllm_log(tmp_path: Path, line: str | None, flood: int) -> None:
    """A short excerpt without vLLM's name or logger is still a vLLM log when it holds a word only vLLM
    prints; the remote scan must find that word wherever it is, as the classifier does (and without
    any, both say: not a vLLM log)."""
    block = "".join(PLAIN[i % len(PLAIN)] for i in range(flood))
    p = tmp_path / "excerpt.log"
    p.write_text(block + (line or "") + block, encoding="utf-8")
    check(p)
    assert scan(p).result.failed_stage == ("unknown" if line is None else "none")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    into=st.integers(1, 40),
    at=st.integers(1, 5),
    stamp=st.sampled_from(["2025-03-24 22:04:27", "2026-01-05 09:00:01"]),
)
def test_a_layout_learnt_from_lines_past_the_first_fetch_is_read_the_same(
    tmp_path: Path, into: int, at: int, stamp: str
) -> None:
    """The classifier learns a log's layout (here another program's envelope around each line) from its
    first 400 lines before reading them; the scan's first fetch is 32 KiB (``WINDOW``): here the fetch
    ends ``into`` bytes into the traceback's line ``at``, after the line that teaches the envelope. The
    first window is grown to the log's first 400 lines and fed in one piece (else the lines before the
    fetch's end were read without the envelope: the traceback's head lost)."""
    env = f"{stamp} | ERROR | stderr | "
    tb = [
        env + "Traceback (most recent call last):",
        env + '  File "/srv/app/worker.py", line 291, in <module>',
        env + "    worker = Worker(",
        env + '  File "/srv/app/worker.py", line 57, in __init__',
        env + "    self.tokenizer = llm_engine.engine.tokenizer",
        env + "AttributeError: 'AsyncLLM' object has no attribute 'engine'",
    ]
    head = sum(len(ln) + 1 for ln in tb[:at]) + into  # bytes from the traceback's start to the fetch's end
    nccl, size = [], 0
    for ln in (x.rstrip("\n") + " " * 80 + "\n" for x in FLOODS["nccl"]):  # ~150 bytes: 200-odd lines
        if size + len(ln) > WINDOW - head - 200:
            break
        nccl.append(ln)
        size += len(ln)
    nccl.append("x" * (WINDOW - head - size - 1) + "\n")  # the flood ends exactly ``head`` bytes before WINDOW
    text = "".join(nccl) + "".join(ln + "\n" for ln in tb)
    assert text.encode().find(tb[0].encode()) + head == WINDOW and text.count("\n") < 400
    p = tmp_path / "server.log"
    p.write_text(text, encoding="utf-8")
    check(p)
    assert len(scan(p).result.first_exception.stack) == len(tb)  # the head was read through the envelope


_BYTES = st.binary(max_size=300).map(lambda b: bytes(c % 8 + 44 for c in b))  # a few bytes, many repeats


@settings(max_examples=300, deadline=None)
@given(
    data=_BYTES,
    needle=st.one_of(st.sampled_from([b"rror", b".py:", b"./", b"(0)"]), _BYTES.filter(bool)),
    lo=st.integers(0, 320),
    hi=st.integers(0, 320),
)
def test_the_host_programs_search_finds_what_find_finds(
    tmp_path_factory, data: bytes, needle: bytes, lo: int, hi: int
) -> None:  # noqa: ANN001
    """The host program searches for a short needle with a compiled literal pattern (faster than
    ``mmap.find`` on log text), a long one with find: either way, on the mapped file, the first place in
    a range is find's (a regex metacharacter in a needle is a literal)."""
    import mmap

    path = tmp_path_factory.mktemp("find") / "f"
    path.write_bytes(data + b"\n")
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        assert prefilter_remote._find(mm, needle, lo, hi) == mm.find(needle, lo, hi)

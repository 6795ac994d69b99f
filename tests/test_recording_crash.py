"""Crash safety: a child process records continuously and is killed with SIGKILL at a random moment.

After each kill: every event the recorder had handed to the OS reads back intact, the events
form an exact prefix of what was emitted (nothing reordered, duplicated or garbled), at most
the last line is truncated, and ``verify`` reports no tampering.

The suite runs a few dozen trials (about two seconds); ``bench/bench_crash.py`` runs the same
trial hundreds of times and prints the figures.
"""

from __future__ import annotations

import mmap
import os
import random
import signal
import struct
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from k3tui import events as ev
from k3tui.reader import open_recording, verify
from k3tui.recording import Recorder
from k3tui.redact import Redactor

SUITE_TRIALS = 25


def corpus_lines(shared: Path) -> list[str]:
    """Real vLLM log lines: realistic sizes and characters for the recorded output."""
    lines: list[str] = []
    for p in sorted((shared / "corpus" / "vllm-cpu").glob("*.log")):
        lines += [ln for ln in p.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    return lines


def event_number(i: int, lines: list[str]) -> ev.Event:
    """The i-th event a child emits: deterministic, so the parent knows what must be in the file."""
    if i % 50 == 49:
        return ev.Note(text=f"operator note {i}")  # significant: flushed at once
    if i % 200 == 199:
        return ev.StageReached(run="r1", stage="engine", line=i)
    return ev.Output(id="c1", text=f"{lines[i % len(lines)]} #{i}\n")


def _same(a: ev.AnyEvent, b: ev.AnyEvent) -> bool:
    return type(a) is type(b) and {f: getattr(a, f) for f in a.__struct_fields__ if f != "t"} == {
        f: getattr(b, f) for f in b.__struct_fields__ if f != "t"
    }


def _child(path: str, progress: mmap.mmap, seed: int, lines: list[str]) -> None:
    rng = random.Random(seed)
    rec = Recorder(path, ev.Header(host="gb300-01", profile="kimi-k3"), redactor=Redactor())
    i = 0
    while True:
        for _ in range(rng.randint(1, 60)):
            rec.emit(event_number(i, lines))
            i += 1
            struct.pack_into("qq", progress, 0, i, rec.events_written)
        time.sleep(rng.choice((0, 0.0005, 0.002)))


@dataclass
class Trial:
    """What one kill left behind."""

    written_before_kill: int
    """Lines (header included) the recorder had handed to the OS when the parent sampled."""
    events_read: int
    truncated: bool
    verify_ok: bool
    problems: int


def run_trial(
    tmp: Path, n: int, lines: list[str], rng: random.Random, max_ms: float = 120.0, min_ms: float = 10.0
) -> Trial:
    """Fork a recording child, SIGKILL it after a random time, and check what the file holds."""
    path = tmp / f"crash{n}.k3rec"
    progress = mmap.mmap(-1, 16)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        try:
            _child(str(path), progress, n, lines)
        finally:
            os._exit(1)
    time.sleep(rng.uniform(min_ms, max_ms) / 1000)
    _, written = struct.unpack_from("qq", progress, 0)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return check_file(path, written, lines)


def check_file(path: Path, written_before_kill: int, lines: list[str]) -> Trial:
    if written_before_kill == 0 and (not path.exists() or path.stat().st_size == 0):
        return Trial(0, 0, False, True, 0)  # killed before the header reached the disk
    rec = open_recording(path)
    got = list(rec.events())
    assert len(got) + 1 >= written_before_kill, "an event the recorder had written is missing"
    for i, e in enumerate(got):
        assert _same(e, event_number(i, lines)), f"event {i} is not what was emitted: {e!r}"
    assert len(rec.problems) <= 1, rec.problems
    if rec.problems:
        p = rec.problems[0]
        assert p.truncated and p.line_number == len(got) + 2, p
    result = verify(path)
    assert result.ok and result.bad_line is None, result.message
    return Trial(written_before_kill, len(got), bool(rec.problems), result.ok, len(rec.problems))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_sigkill_at_random_moments_loses_nothing_written(tmp_path, shared):
    lines = corpus_lines(shared)
    rng = random.Random(20261130)
    trials = [run_trial(tmp_path, n, lines, rng) for n in range(SUITE_TRIALS)]
    assert sum(t.events_read for t in trials) > 1000, "the children recorded too little for the test to mean anything"
    assert sum(1 for t in trials if t.events_read > 0) >= SUITE_TRIALS // 2, (
        "most children were killed before recording"
    )

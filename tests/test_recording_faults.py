"""Faults a recording meets, seen by the operator (issue 16).

- A full disk in a headless command (``connect --record`` on a real 2 MiB tmpfs; ``demo
  --headless --record`` and ``bisect --record`` on one nearly full): exit 0 and a rescue copy
  written elsewhere without a word, before. Now one line on stderr naming the rescue file,
  and a non-zero exit.
- A producer emitting as fast as ``emit()`` returns, killed with SIGKILL: the unbounded queue
  lost seconds of events. Now what is unwritten is bounded (count, so ~200 ms at the
  writer's speed) by back-pressure on ``emit()``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from k3tui import recording
from k3tui.reader import read_all, verify

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def tiny_disk(tmp_path):
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def _said_and_rescued(r: subprocess.CompletedProcess, rescue: Path) -> None:
    """Exit non-zero, one stderr line naming the rescue copy, and that copy complete and sealed."""
    assert r.returncode != 0, (r.returncode, r.stdout[-500:], r.stderr[-500:])
    lines = [ln for ln in r.stderr.splitlines() if "recording" in ln]
    assert len(lines) == 1 and "saved to" in lines[0], r.stderr[-800:]
    saved = Path(lines[0].rsplit("saved to ", 1)[1].strip())
    assert saved.parent == rescue and saved.exists()
    result = verify(saved)
    assert result.ok and result.sealed, result.message  # the rescue copy is complete and closed


def _rescue_env(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    rescue = tmp_path / "rescue"
    rescue.mkdir()
    return rescue, {**os.environ, "TMPDIR": str(rescue)}  # the rescue copy goes to the temporary directory


@pytest.fixture
def nearly_full_disk(tiny_disk):
    """The 2 MiB tmpfs with ~48 KiB left: a short session (demo, bisect) cannot be written whole."""
    (tiny_disk / "filler").write_bytes(b"\0" * (2048 - 48) * 1024)
    return tiny_disk


def test_a_full_disk_in_connect_record_is_said_and_fails(tiny_disk, tmp_path):
    rescue, env = _rescue_env(tmp_path)
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "connect", "local", "--record", str(tiny_disk / "s.k3rec"),
         "--run", "head -c 3000000 /dev/zero | base64 -w 100"],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    _said_and_rescued(r, rescue)


def test_a_full_disk_in_demo_headless_record_is_said_and_fails(nearly_full_disk, tmp_path):
    """demo --headless used to exit 0 and print "recorded: FILE" for a file cut short."""
    rescue, env = _rescue_env(tmp_path)
    path = nearly_full_disk / "d.k3rec"
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "demo", "--headless", "--rung", "baseline", "--speed", "20",
         "--record", str(path)],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    _said_and_rescued(r, rescue)
    assert f"recorded: {path}" not in r.stdout and "result: stage=" in r.stdout  # the answer, but no false claim


def test_a_full_disk_in_bisect_record_is_said_and_fails(nearly_full_disk, tmp_path):
    rescue, env = _rescue_env(tmp_path)
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "bisect", "demo:fastsafetensors-missing", "--good", "profile",
         "--good-set", "flag:load-format=auto", "--bad-set", "flag:load-format=fastsafetensors",
         "--speed", "20", "--yes", "--record", str(nearly_full_disk / "b.k3rec")],
        capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    _said_and_rescued(r, rescue)
    assert r.stdout.strip().splitlines()[-1].startswith("culprit: flag:load-format=fastsafetensors")


def _killed_producer(path: Path, text: str, every: int, seconds: float) -> tuple[int, list]:
    """A child emits the output the expression ``text`` makes as fast as emit() returns (nothing to redact: it outruns the writer),
    printing every ``every`` emits how many returned; SIGKILL after ``seconds``: (last count, events on disk)."""
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from k3tui import events as ev
        from k3tui.recording import Recorder
        from k3tui.redact import Redactor

        class NothingToRedact(Redactor):
            def event(self, e):
                return e

        rec = Recorder({str(path)!r}, redactor=NothingToRedact())
        text = {text}
        i = 0
        while True:
            rec.emit(ev.Output(id="r1", text=text))
            i += 1
            if i % {every} == 0:
                print(i, flush=True)
        """
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    last = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        line = p.stdout.readline()
        if line:
            last = int(line)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    return last, read_all(path)[1]


def test_a_fast_producer_killed_loses_only_a_bounded_tail(tmp_path):
    """The producer prints how many emit() calls returned; SIGKILL; the file must hold all but a bounded few."""
    text = repr("INFO 11-30 06:12:00 [engine.py:12] step done, 8192 tokens in 12 ms\n" * 20)
    last, events = _killed_producer(tmp_path / "fast.k3rec", text, 200, 4)
    bound = recording.MAX_QUEUED + recording.MAX_BATCH_EVENTS
    assert last > 2 * bound, "the producer did not get going"
    assert len(events) >= last - bound, (last, len(events), bound)  # unbounded, 426,400 of 482,000 were lost


def test_large_outputs_killed_lose_only_a_bounded_number_of_bytes(tmp_path):
    """2,000 queued events was the only bound: 1 MiB chunks could pile up gigabytes (seconds) unwritten.
    Emitted as fast as emit() returns and SIGKILLed, what is lost stays under MAX_QUEUED_BYTES plus the
    batch the writer had in hand (MAX_BATCH_BYTES) and the chunk being emitted (before: 2,001 of 2,871)."""
    mib = 1024 * 1024
    last, events = _killed_producer(tmp_path / "big.k3rec", '("x" * 1023 + "\\n") * 1024', 1, 3)
    on_disk = sum(1 for e in events if type(e).__name__ == "Output")
    bound = (getattr(recording, "MAX_QUEUED_BYTES", 8 * mib) + recording.MAX_BATCH_BYTES) // mib + 2
    assert last > 3 * bound, f"the producer did not get going ({last} emitted)"
    assert on_disk >= last - bound, (last, on_disk, bound)

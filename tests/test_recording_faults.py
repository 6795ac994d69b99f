"""Faults a recording meets, seen by the operator (issue 16).

- A full disk in a headless command (``connect --record`` on a real 2 MiB tmpfs): exit 0
  and a rescue copy written elsewhere without a word, before. Now one line on stderr naming
  the rescue file, and a non-zero exit.
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


def test_a_full_disk_in_connect_record_is_said_and_fails(tiny_disk, tmp_path):
    rescue = tmp_path / "rescue"
    rescue.mkdir()
    env = {**os.environ, "TMPDIR": str(rescue)}  # the rescue copy goes to the temporary directory
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "connect", "local", "--record", str(tiny_disk / "s.k3rec"),
         "--run", "head -c 3000000 /dev/zero | base64 -w 100"],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode != 0, (r.returncode, r.stderr[-500:])
    lines = [ln for ln in r.stderr.splitlines() if "recording" in ln]
    assert len(lines) == 1 and "saved to" in lines[0], r.stderr[-800:]
    saved = Path(lines[0].rsplit("saved to ", 1)[1].strip())
    assert saved.parent == rescue and saved.exists()
    result = verify(saved)
    assert result.ok and result.sealed, result.message  # the rescue copy is complete and closed


def test_a_fast_producer_killed_loses_only_a_bounded_tail(tmp_path):
    """The producer prints how many emit() calls returned; SIGKILL; the file must hold all but a bounded few."""
    path = tmp_path / "fast.k3rec"
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from k3tui import events as ev
        from k3tui.recording import Recorder
        from k3tui.redact import Redactor

        class NothingToRedact(Redactor):  # a flood with nothing to redact: the producer outruns the writer
            def event(self, e):
                return e

        rec = Recorder({str(path)!r}, redactor=NothingToRedact())
        text = "INFO 11-30 06:12:00 [engine.py:12] step done, 8192 tokens in 12 ms\\n" * 20
        i = 0
        while True:
            rec.emit(ev.Output(id="r1", text=text))
            i += 1
            if i % 200 == 0:
                print(i, flush=True)
        """
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    last = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < 4:
        line = p.stdout.readline()
        if line:
            last = int(line)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    _, events = read_all(path)
    bound = recording.MAX_QUEUED + recording.MAX_BATCH_EVENTS
    assert last > 2 * bound, "the producer did not get going"
    assert len(events) >= last - bound, (last, len(events), bound)  # unbounded, 426,400 of 482,000 were lost

"""`k3tui replay` refuses what it cannot replay with one clear line, before any screen starts."""

from __future__ import annotations

import subprocess
import sys


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "replay", *args], capture_output=True, text=True, timeout=60
    )


def test_missing_file(tmp_path):
    out = _run(str(tmp_path / "nope.k3rec"))
    assert out.returncode == 2
    assert out.stderr.strip() == f"k3tui: {tmp_path / 'nope.k3rec'}: no such file"


def test_not_a_recording_is_one_line_and_inert(tmp_path):
    bad = tmp_path / "bad.k3rec"
    bad.write_bytes(b"\x1b]52;c;cm0gLXJmIH4=\x07 hello\n")
    out = _run(str(bad))
    assert out.returncode != 0
    assert "not a k3rec session file" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert "\x1b" not in out.stderr and "Traceback" not in out.stderr

"""`k3tui bisect demo:SCENARIO` end to end on the causal simulated host (real SSH, real runs, recorded).

For each causal scenario a bad config differs from the good one in at least four variables,
exactly one of them the scenario's declared cause; bisect must name that one (the
``culprit:`` line), confirm it with the two single-variable runs, and record every step:
a config change whose reason says "bisect step i of ~n" and a Decision with its verdict.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from k3tui import events as ev
from k3tui.reader import read_all

NOISE = [
    "--bad-set", "env:VLLM_LOGGING_LEVEL=DEBUG",
    "--bad-set", "max_model_len=131072",
    "--bad-set", "flag:enable-prefix-caching=true",
    "--bad-set", "gpu_memory_utilization=0.9",
]  # fmt: skip
CASES = {
    # scenario: (G's changes, the cause B adds, its variable)
    "fastsafetensors-missing": (
        ["--good-set", "flag:load-format=auto"],
        ["--bad-set", "flag:load-format=fastsafetensors"],
        "flag:load-format=fastsafetensors",
    ),
    "nccl-env-ifname": (
        ["--good-set", "env:NCCL_SOCKET_IFNAME=eth0"],
        ["--bad-set", "env:NCCL_SOCKET_IFNAME=ib9"],
        "env:NCCL_SOCKET_IFNAME=ib9",
    ),
    "kv-cache-max-model-len": (
        ["--good-set", "max_model_len=262144"],
        ["--bad-set", "max_model_len=1048576"],
        "max_model_len=1048576",
    ),
}


@pytest.mark.parametrize("scenario", sorted(CASES))
def test_bisect_names_and_confirms_the_cause(scenario: str, tmp_path: Path) -> None:
    good, cause, culprit = CASES[scenario]
    rec = tmp_path / "b.k3rec"
    argv = [sys.executable, "-m", "k3tui.cli", "bisect", f"demo:{scenario}", "--good", "profile", *good]
    noise = [x if "max_model_len" not in x else "env:NCCL_DEBUG=INFO" for x in NOISE] if "max_model_len" in culprit else NOISE
    argv += [*cause, *noise, "--speed", "4", "--yes", "--record", str(rec)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith(f"culprit: {culprit} ("), last
    assert "5 variable(s) differ" in proc.stdout
    expected = int(re.search(r"expected runs: (\d+)", proc.stdout).group(1))
    assert 0 < len(re.findall(r"^step \d+/~", proc.stdout, flags=re.M)) <= expected  # within its estimate
    _, events = read_all(rec)
    steps = [e for e in events if isinstance(e, ev.Decision) and e.action.startswith("bisect step")]
    assert len(steps) >= 4 and steps[0].action.startswith("bisect step 1 of ~")
    assert any(e.action == "bisect culprit" and e.reason == last for e in events if isinstance(e, ev.Decision))
    assert any(isinstance(e, ev.RunConfigSet) and e.diff for e in events)
    confirms = [s for s in steps if "confirm: B - only" in s.action]
    assert confirms and "verdict good" in confirms[-1].reason
    _walk_in_replay_and_report(rec, tmp_path, len(steps), last)


def _walk_in_replay_and_report(rec: Path, tmp_path: Path, n: int, answer: str) -> None:
    """The walk is a table in ``replay --headless`` and in the package's REPORT.md."""
    import tarfile

    cli = [sys.executable, "-m", "k3tui.cli"]
    shown = subprocess.run([*cli, "replay", "--headless", str(rec)], capture_output=True, text=True, timeout=60).stdout
    assert f"bisect walk ({n} runs):" in shown and f"bisect answer: {answer}" in shown
    assert len([ln for ln in shown.splitlines() if ln.startswith("  step ")]) == n
    pkg = tmp_path / "p.tar.gz"
    subprocess.run([*cli, "export", str(rec), "-o", str(pkg)], check=True, capture_output=True, timeout=120)
    with tarfile.open(pkg) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("REPORT.md"))
        report = tar.extractfile(member).read().decode()
    walk = report.split("Bisect walk", 1)[1].split("\n## ", 1)[0]
    assert walk.count("\n| ") == n + 1 and "**culprit: " in walk


def test_bisect_without_yes_off_a_terminal_is_a_one_line_refusal(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "k3tui.cli", "bisect", "demo:healthy", "--bad-set", "max_model_len=4096"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "confirm with --yes" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1

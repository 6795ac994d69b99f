"""`k3tui bisect demo:SCENARIO` end to end on the causal simulated host (real SSH, real runs, recorded).

For each causal scenario a bad config differs from the good one in at least four variables,
exactly one of them the scenario's declared cause; bisect must name that one (the
``culprit:`` line), confirm it with the two single-variable runs, and record every step:
a config change whose reason says "bisect step i of ~n" and a Decision with its verdict.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
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
    # the node's cu129 build (Error 803 at device init) against the official cu130 image
    "image-cu129-803": (
        ["--good-set", "image=vllm/vllm-openai:kimi-k3-cu130"],
        ["--bad-set", "image=vllm/vllm-openai:kimi-k3-cu129"],
        "image=vllm/vllm-openai:kimi-k3-cu129",
    ),
    # TP 8 on the 4 GPUs CUDA_VISIBLE_DEVICES leaves (vLLM's ParallelConfig refusal)
    "tp-exceeds-visible-gpus": (
        ["--good-set", "visible_devices=0,1,2,3,4,5,6,7"],
        ["--bad-set", "visible_devices=0,1,2,3"],
        "visible_devices=0,1,2,3",
    ),
    # the scenario's long request (~9,700 tokens) on the request rung: 400 beyond --max-model-len
    "request-beyond-context": (
        ["--good-set", "max_model_len=16384", "--rung", "request"],
        ["--bad-set", "max_model_len=8192"],
        "max_model_len=8192",
    ),
}


@pytest.mark.parametrize("scenario", sorted(CASES))
def test_bisect_names_and_confirms_the_cause(scenario: str, tmp_path: Path) -> None:
    good, cause, culprit = CASES[scenario]
    rec = tmp_path / "b.k3rec"
    argv = [sys.executable, "-m", "k3tui.cli", "bisect", f"demo:{scenario}", "--good", "profile", *good]
    noise = (
        [x if "max_model_len" not in x else "env:NCCL_DEBUG=INFO" for x in NOISE]
        if "max_model_len" in culprit
        else NOISE
    )
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


def _steps(rec: Path) -> list:
    try:
        _, events = read_all(rec)
    except Exception:  # noqa: BLE001 - a recording still being written: not readable yet
        return []
    return [e for e in events if isinstance(e, ev.Decision) and e.action.startswith("bisect step")]


def interrupt_after_two_steps(proc: subprocess.Popen, rec: Path) -> tuple[str, str]:
    """Ctrl-C a recording bisect once two steps are judged in ``rec``; it must end with 130: (stdout, stderr)."""
    deadline = time.monotonic() + 120
    while len(_steps(rec)) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc.poll() is None, "the bisect ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out[-1500:] + err[-1500:]
    return out, err


def _judged_configs(events: list) -> list[tuple[str, frozenset]]:
    """(verdict, the config's variables) of every judged step: the config in effect when it ran."""
    import msgspec

    from k3tui.ladder.config import RunConfig, variables

    out, cfg = [], None
    for e in events:
        if isinstance(e, ev.RunConfigSet) and e.config:
            cfg = e.config
        elif isinstance(e, ev.RunStarted) and cfg is not None:
            out.append(("ran", frozenset(variables(msgspec.convert(cfg, RunConfig)).items())))
        elif isinstance(e, ev.Decision) and e.action.startswith("bisect step") and cfg is not None:
            out.append(("judged", frozenset(variables(msgspec.convert(cfg, RunConfig)).items())))
    return out


def test_an_interrupted_bisect_keeps_what_it_learnt_and_resumes_without_rerunning(tmp_path: Path) -> None:
    """Ctrl-C after two judged steps: a closing Decision with the candidates left, a non-zero exit
    and one line saying how to resume; ``--resume`` ends with the same culprit and runs no judged
    configuration again (fewer runs than the whole search)."""

    scenario = "fastsafetensors-missing"
    good, cause, culprit = CASES[scenario]
    first = tmp_path / "first.k3rec"
    argv = [sys.executable, "-m", "k3tui.cli", "bisect", f"demo:{scenario}", "--good", "profile", *good]
    argv += [*cause, *NOISE, "--speed", "4", "--yes"]
    proc = subprocess.Popen([*argv, "--record", str(first)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = interrupt_after_two_steps(proc, first)
    assert len(err.strip().splitlines()) == 1 and "--resume" in err and str(first) in err, err
    _, events = read_all(first)
    decisions = [e for e in events if isinstance(e, ev.Decision)]
    closing = decisions[-1]
    assert closing.action == "bisect aborted", closing
    judged_before = _steps(first)
    assert len(judged_before) >= 2
    assert f"after {len(judged_before)} judged run(s)" in closing.reason and "candidate(s): {" in closing.reason
    assert "flag:load-format=fastsafetensors" in closing.reason.split("candidate(s):", 1)[1]
    before = {cfg for kind, cfg in _judged_configs(events) if kind == "judged"}

    # the line says how to resume: run exactly that (the recording goes to a new file next to the first)
    import shlex

    resume = shlex.split(err.split("resume with: ", 1)[1])
    assert resume[:2] == ["k3tui", "bisect"] and resume[-2:] == ["--record", str(tmp_path / "first.resumed.k3rec")]
    second = tmp_path / "first.resumed.k3rec"
    proc2 = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", *resume[1:]], capture_output=True, text=True, timeout=240
    )
    assert proc2.returncode == 0, proc2.stdout[-2000:] + proc2.stderr[-2000:]
    assert proc2.stdout.strip().splitlines()[-1].startswith(f"culprit: {culprit} (")
    assert f"resuming {first}: {len(judged_before)} step(s) already judged" in proc2.stdout
    _, events2 = read_all(second)
    resumed = next(i for i, e in enumerate(events2) if isinstance(e, ev.Decision) and e.action == "bisect resumed")
    new = _judged_configs(events2[resumed + 1 :])
    ran = [cfg for kind, cfg in new if kind == "ran"]
    assert ran and not (set(ran) & before), "a configuration judged before the interruption ran again"
    new_steps = len(re.findall(r"^step \d+/~", proc2.stdout, flags=re.M))
    steps2 = _steps(second)
    assert steps2[0].action == judged_before[0].action and len(steps2) == len(judged_before) + new_steps
    assert new_steps < len(steps2)  # fewer runs than the whole search

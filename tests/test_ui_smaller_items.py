"""The smaller items of issue 17's list 9, against a real headless demo run (the simulated host over
a real SSH server on loopback, recorded by the real Recorder) and the shipped recordings.

- the ``.cast`` holds the server's log, not the GPU sampler's JSON;
- the healthy run's errors-only view labels the normal per-rung stop instead of showing
  ``EngineDeadError`` tracebacks as failures;
- ``first-error.txt`` says in words what the OOM flag means (never ``oom root None``);
- the headless demo never prints ``FAIL checklist/…`` for an item simply not done yet;
- the simulated container's env (what the freeze reads and REPORT.md shows) is the
  container's, not the operator's ``PATH``;
- the simulated vLLM's timestamps follow the recording's clock: they neither run minutes
  ahead nor jump back at shutdown.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from k3tui import events as ev
from k3tui.package import export_session
from k3tui.reader import read_all
from k3tui.remote.local import LocalHost
from screens.viewmodel import LogFeed

RECORDINGS = Path(__file__).parent.parent / "recordings"


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):  # noqa: ANN201
    d = tmp_path_factory.mktemp("demo")
    path = d / "healthy.k3rec"
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "demo", "--headless", "--scenario", "healthy", "--record", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and path.exists(), r.stderr[-2000:]
    return path, r.stdout


def _members(pkg: Path) -> dict[str, str]:
    with tarfile.open(pkg, "r:gz") as tar:
        return {m.name.split("/", 1)[1]: tar.extractfile(m).read().decode() for m in tar if m.isfile()}


def test_cast_holds_the_server_log_not_the_gpu_sampler_json(healthy, tmp_path):
    path, _ = healthy
    cast = export_session(path, tmp_path / "s.cast", cast_only=True).read_text().splitlines()
    out = [json.loads(line) for line in cast[1:]]
    texts = [e[2] for e in out if e[1] == "o"]
    assert texts and not any('{"t":' in t or '"g":[[' in t for t in texts)
    assert "shutdown" in "".join(texts[-5:]).lower() or "Application" in "".join(texts[-5:])


async def test_a_stopped_runs_last_lines_are_read_after_its_shell_has_ended(tmp_path, monkeypatch):
    """The race behind the cast test's flake: at a stop the run's own shell (``sh -c "docker run …"``)
    dies of TERM at once and the wrapper writes ``exit``, while a process it started (the server)
    is still printing its shutdown lines; the tail must not stop at ``exit`` while one of them lives."""
    monkeypatch.setenv("HOME", str(tmp_path))
    cmd = "(trap 'sleep 1; echo last words; exit 0' TERM; echo up; while :; do sleep 0.1; done); true"
    async with LocalHost() as host:
        h = await host.start_detached(cmd, run_id="last-words")
        lines: list[str] = []

        async def follow() -> None:
            async for batch in host.tail_batches(h, record=False):
                lines.extend(batch)

        task = asyncio.create_task(follow())
        while "up" not in lines:
            await asyncio.sleep(0.05)
        assert await host.stop(h, grace=5) == 143  # the shell, not the server, was the wrapper's child
        await asyncio.wait_for(task, 20)
    assert lines[-1] == "last words", lines


def test_normal_stop_is_labelled_and_kept_out_of_errors_only(healthy):
    path, _ = healthy
    _, events = read_all(path)
    feed = LogFeed()
    lines = [ln for e in events for ln in feed.lines(e)]
    stops = [e for e in events if isinstance(e, ev.RunEnded) and e.reason == "stopped"]
    labels = [ln for ln in lines if ln.text.startswith("■│normal stop of run")]
    assert stops and len(labels) >= len([s for s in stops if s.run[:1] == "r"]) - 1 > 0
    errors_only = [ln for ln in lines if ln.kind in ("err", "exc", "stage") or ln.sev in ("fault", "error")]
    assert not any("EngineDeadError" in ln.text for ln in errors_only), [
        ln.text for ln in errors_only if "EngineDeadError" in ln.text
    ][:3]
    assert all(label in errors_only for label in labels)


def test_headless_demo_never_says_fail_for_a_checklist_item_not_done(healthy):
    _, stdout = healthy
    assert "checklist done:" in stdout
    assert not re.search(r"FAIL\s+checklist/", stdout)


def test_simulated_container_env_is_the_containers_not_the_operators(healthy):
    import os

    path, _ = healthy
    _, events = read_all(path)
    scene = [e for e in events if isinstance(e, ev.SceneFrozen)][-1].scene
    env = (scene.get("process") or {}).get("env") or {}
    assert env.get("PATH", "").startswith("/usr/local/nvidia/bin"), env.get("PATH")
    operator = os.environ.get("PATH", "")
    assert env["PATH"] != operator and ".venv" not in env["PATH"] and "pyenv" not in env["PATH"]
    assert env.get("HOSTNAME") == "gb300-sim"


def test_simulated_vllm_timestamps_follow_the_recording_clock(healthy):
    path, _ = healthy
    rec, events = read_all(path)
    header = rec.header
    stamp = re.compile(r"\b(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) \[")
    year = time.gmtime(header.started).tm_year
    for run in {e.run for e in events if isinstance(e, ev.RunStarted) and e.rung}:
        seen: list[tuple[float, float]] = []  # (log stamp, recorded time)
        for e in events:
            if isinstance(e, ev.Output) and e.id == run:
                for line in e.text.splitlines():
                    m = stamp.search(line)
                    if m:
                        mo, d, hh, mm, ss = (int(x) for x in m.groups())
                        t = time.mktime((year, mo, d, hh, mm, ss, 0, 0, -1))
                        seen.append((t, header.started + e.t))
        assert seen, run
        logged = [t for t, _ in seen]
        assert all(b >= a for a, b in zip(logged, logged[1:], strict=False)), f"{run}: a stamp jumps back"
        # never ahead of when the line was recorded (1 s for the stamp's resolution, 5 s of slack)
        assert max(t - rec for t, rec in seen) < 6, (run, max(t - rec for t, rec in seen))


def test_first_error_says_what_the_oom_flag_means(tmp_path):
    files = _members(export_session(RECORDINGS / "demo-nccl-init.k3rec", tmp_path / "p.tar.gz"))
    first = files["first-error.txt"]
    assert "None" not in first.split("\n\n", 1)[0]
    assert re.search(r"^oom\s+(not an out-of-memory failure|out of memory)", first, flags=re.M), first[:600]

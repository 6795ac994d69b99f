"""The readiness guard of a ladder run (k3tui/ladder/server.py), with REAL processes on this machine.

Readiness needs /health AND the run's own log reaching the ``api`` stage: under load a
leftover server of the previous run can still answer /health on the port, and must not
make a run that is still starting — or failing — look ready. Here the leftover is a real
``python -m http.server`` answering ``GET /health`` with 200; the run is a real detached
process (:class:`~k3tui.remote.local.LocalHost`) that prints real vLLM log lines from
``../shared/corpus`` and then sleeps, fails, or serves /health itself.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from k3tui import events as ev
from k3tui.ladder.config import RunConfig
from k3tui.ladder.server import Server
from k3tui.remote.local import LocalHost

CORPUS = "corpus/vllm-cpu"
# Lines 1..43 of the baseline start-up: config, device and weights stages, no API server yet.
BEFORE_API = 43


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(port: int, path: str = "/health", timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=1) as r:
                assert r.status == 200
                return
        except OSError:
            assert time.monotonic() < deadline, f"nothing answers {path} on port {port}"
            time.sleep(0.05)


@pytest.fixture
def work():
    d = Path(tempfile.mkdtemp(prefix="k3ready-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def leftover(work: Path):
    """A leftover server on a free port: ``python -m http.server`` whose /health is a file (200)."""
    root = work / "leftover"
    root.mkdir()
    (root / "health").write_text("")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_http(port)
        yield Leftover(port, proc)
    finally:
        proc.kill()
        proc.wait()


@dataclass
class Leftover:
    port: int
    proc: subprocess.Popen[bytes]

    def gone(self) -> None:
        """The leftover finally exits (else stopping a ready run waits for the port to go quiet)."""
        self.proc.kill()
        self.proc.wait()


def _program(work: Path, body: str) -> list[str]:
    """A fake ``vllm`` (the config's entry): a python script that gets ``serve MODEL …`` like vLLM."""
    path = work / "vllm"
    path.write_text(f"#!{sys.executable}\nimport sys, time\n{body}\n")
    path.chmod(0o755)
    return [str(path), "serve"]


def _print_lines(log: Path, first: int = 0, last: int | None = None) -> str:
    """Python that prints lines [first, last) of a corpus log, flushed."""
    return f"sys.stdout.writelines(open({str(log)!r}).readlines()[{first}:{last}]); sys.stdout.flush()"


@asynccontextmanager
async def _run(work: Path, port: int, body: str, events: list, then: Any = None) -> AsyncIterator[Server]:
    """A started run of the fake ``vllm`` (``body``) on ``port``; stopped at the end (after ``then()``)."""
    cfg = RunConfig(entry=_program(work, body), model_path="/models/k3", flags={"port": str(port)})
    run_id = f"ready-{uuid.uuid4().hex[:8]}"
    server = Server(LocalHost(emit=events.append), run_id, cfg, port, events.append, log_confirm_s=1.0)
    await server.start("minimal")
    try:
        yield server
    finally:
        if then is not None:
            then()
        await server.stop(grace=1.0)


async def _wait_ready(server: Server, timeout: float) -> tuple[bool, float]:
    """(ready, seconds waited)."""
    t = time.monotonic()
    ready = await server.wait_ready(timeout)
    return ready, time.monotonic() - t


def _notices(server: Server, events: list) -> list[str]:
    return [e.message for e in events if isinstance(e, ev.Notice) and server.run_id in e.message]


async def test_a_leftover_answering_health_does_not_make_a_run_still_starting_ready(work, leftover, shared):
    events: list = []
    body = _print_lines(shared / CORPUS / "01-baseline-startup-only.log", 0, BEFORE_API) + "\ntime.sleep(60)"
    async with _run(work, leftover.port, body, events) as server:
        ready, waited = await _wait_ready(server, 3.0)
        assert not ready and not server.ready and server.ready_s is None
        assert server.alive, "the run itself is still starting"
        assert 2.5 < waited < 6.0, "waited for its log up to the deadline, not past it"
        stage = server.classifier.result().stages[-1].stage
        assert stage == "weights"
        (notice,) = _notices(server, events)
        assert f"log is still at stage {stage}" in notice and "a leftover of an earlier run?" in notice
        assert any(isinstance(e, ev.HttpResponse) and e.status == 200 for e in events), "the leftover did answer"


async def test_a_leftover_answering_health_does_not_make_a_failing_run_ready(work, leftover, shared):
    events: list = []
    body = _print_lines(shared / CORPUS / "10c-fail-model-path-missing.log") + "\nsys.exit(1)"
    async with _run(work, leftover.port, body, events) as server:
        ready, waited = await _wait_ready(server, 30.0)
        assert not ready and not server.ready
        assert waited < 10.0, "a failed run is not waited on until the deadline"
        outcome = server.outcome()
        assert not outcome.ok and outcome.stage == "weights", outcome.summary


async def test_a_run_whose_log_reaches_the_api_stage_is_ready_even_with_a_leftover(work, leftover, shared):
    """The control: the guard does not refuse every run while something else answers."""
    events: list = []
    body = _print_lines(shared / CORPUS / "01-baseline-startup-only.log") + "\ntime.sleep(60)"
    async with _run(work, leftover.port, body, events, then=leftover.gone) as server:
        assert (await _wait_ready(server, 15.0))[0] and server.ready
        assert not _notices(server, events)


_SERVES_HEALTH = """
import http.server, threading
port = int(sys.argv[sys.argv.index("--port") + 1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", port), H)
print("my-inference-server 9.9: listening on port", port, flush=True)
srv.serve_forever()
"""


async def test_a_log_without_any_start_up_marker_is_ready_from_health_alone_with_a_notice(work):
    """A server whose log the stage markers do not know (it serves /health itself): usable, and said so."""
    events: list = []
    async with _run(work, _free_port(), _SERVES_HEALTH, events) as server:
        ready, waited = await _wait_ready(server, 15.0)
        assert ready and server.ready
        assert waited >= 1.0, "the log was given log_confirm_s to show a marker"
        assert [s.stage for s in server.classifier.result().stages] == ["container"]
        (notice,) = _notices(server, events)
        assert "shows no vLLM start-up marker after 1 s: readiness from /health alone" in notice

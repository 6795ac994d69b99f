"""The traps of issue 4, each built from REAL lines of ../shared (corpus and fixtures).

Wrappers (docker compose, journald, docker timestamps, docker build's step and seconds, CRLF, literal ^M, colour codes)
must not change the verdict; TP=8 interleaved tracebacks are demultiplexed per process;
consequences, decoy WARNINGs and a normal stop are never the root; a GPU-side NCCL
failure followed by an OOM is an engine failure whose OOM is a consequence.
"""

from __future__ import annotations

import functools
import re
import zlib
from pathlib import Path

import pytest

from k3tui.classify import Classifier, classify_text
from k3tui.classify.lines import clean
from k3tui.events import ExceptionFound

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
CPU = SHARED / "corpus" / "vllm-cpu"
HOSTS = SHARED / "fixtures" / "hosts"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _lines(path: Path) -> list[str]:
    return _read(path).splitlines()


def _same_verdict(a, b) -> None:
    assert (a.failed_stage, a.signature, a.oom_root_cause) == (b.failed_stage, b.signature, b.oom_root_cause)
    assert [s.stage for s in a.stages] == [s.stage for s in b.stages]
    assert (a.first_exception is None) == (b.first_exception is None)
    if a.first_exception:
        assert a.first_exception.line_number == b.first_exception.line_number


def test_wrappers_do_not_change_the_verdict() -> None:
    for name in (
        "10d-fail-load-format-fastsafetensors.log",
        "10g2-kill9-worker-inflight.log",
        "01-baseline-full-session.log",
        "10a-fail-tensor-parallel-8.log",
    ):
        lines = _lines(CPU / name)
        plain = classify_text("\n".join(lines) + "\n")
        wrapped = {
            "compose": "\n".join(f"vllm-1  | {x}" for x in lines),
            "journald": "\n".join(f"Nov 30 03:29:01 gb300-01 vllm[4242]: {x}" for x in lines),
            "docker -t": "\n".join(f"2026-11-30T03:29:01.123456789Z {x}" for x in lines),
            "docker build (a RUN step's output)": "\n".join(
                f"#8 {12.345 + i / 7:.3f} {x}" for i, x in enumerate(lines)
            ),
            "docker build's failure summary": "\n".join(f"{0.33 + i:.3f} {x}" for i, x in enumerate(lines)),
            "crlf": "\r\n".join(lines),
            "literal ^M": "\n".join(f"{x}^M" for x in lines),
            "colour": "\n".join(re.sub(r"\b(INFO|ERROR|WARNING)\b", "\x1b[32m\\1\x1b[0m", x) for x in lines),
        }
        for how, text in wrapped.items():
            got = classify_text(text)
            _same_verdict(got, plain)
            if plain.first_exception:
                assert plain.first_exception.line in clean(got.first_exception.line), how


def test_compose_wrapped_root_line_keeps_its_prefix_for_the_operator() -> None:
    text = "\n".join(f"vllm-1  | {x}" for x in _lines(CPU / "10e-fail-truncated-safetensors.log"))
    fe = classify_text(text).first_exception
    assert fe.line.startswith("vllm-1  | (Worker pid=31563) ERROR")
    assert fe.process == "Worker pid=31563"


def _tp8_interleaved(root_rank: int, sibling_tail: str) -> str:
    """The real worker traceback of 10d printed by 8 TP ranks, line-interleaved.

    Rank ``root_rank`` ends with the real root; every other rank's copy ends with
    ``sibling_tail`` (what a rank killed by its siblings prints).
    """
    block = [
        x for x in _lines(CPU / "10d-fail-load-format-fastsafetensors.log") if x.startswith("(Worker pid=31264) ERROR")
    ]
    assert block[-1].endswith("ModuleNotFoundError: No module named 'fastsafetensors'")
    per_rank = []
    for rank in range(8):
        lines = [x.replace("(Worker pid=31264)", f"(Worker_TP{rank} pid={5100 + rank})") for x in block]
        if rank != root_rank:
            lines[-1] = lines[-1].rsplit("] ", 1)[0] + "] " + sibling_tail
        per_rank.append(lines)
    # siblings run one line ahead of the root rank, so their (consequence) tracebacks end first
    out = []
    for i in range(len(block) + 1):
        for rank in range(8):
            j = i if rank != root_rank else i - 1
            if 0 <= j < len(block):
                out.append(per_rank[rank][j])
    return "\n".join(out) + "\n"


def test_tp8_interleaved_tracebacks_are_demultiplexed() -> None:
    r = classify_text(_tp8_interleaved(3, "SystemExit: received SIGTERM from the executor"))
    assert r.failed_stage == "weights"
    fe = r.first_exception
    assert fe.process == "Worker_TP3 pid=5103"
    assert fe.line.endswith("ModuleNotFoundError: No module named 'fastsafetensors'")
    real = [
        x for x in _lines(CPU / "10d-fail-load-format-fastsafetensors.log") if x.startswith("(Worker pid=31264) ERROR")
    ]
    assert fe.stack == [x.replace("(Worker pid=31264)", "(Worker_TP3 pid=5103)") for x in real], "stack mixes processes"


def test_all_ranks_failing_alike_reports_the_first_complete_stack() -> None:
    r = classify_text(_tp8_interleaved(7, "ModuleNotFoundError: No module named 'fastsafetensors'"))
    assert r.first_exception.process == "Worker_TP0 pid=5100"
    assert {line.split(")")[0] for line in r.first_exception.stack} == {"(Worker_TP0 pid=5100"}


def test_decoy_warning_is_not_a_failure() -> None:
    lines = _lines(CPU / "01-baseline-startup-only.log")
    decoy = next(x for x in lines if "Too many open files" in x)
    assert " WARNING " in decoy
    r = classify_text("\n".join(lines))
    assert r.failed_stage == "none" and r.first_exception is None


def test_normal_sigterm_stop_is_not_a_failure_but_a_real_root_before_it_is() -> None:
    lines = _lines(CPU / "01-baseline-full-session.log")
    assert classify_text("\n".join(lines)).failed_stage == "none"
    stop = next(i for i, x in enumerate(lines) if "shutdown triggered" in x)
    worker = [
        x
        for x in _lines(CPU / "11-fail-headdim16-first-request-kills-engine.log")
        if x.startswith("(Worker pid=16127) ERROR")
    ]
    root = worker[: next(i for i, x in enumerate(worker) if "RuntimeError: Unsupported" in x) + 1]
    r = classify_text("\n".join(lines[:stop] + root + lines[stop:]))
    assert r.failed_stage == "runtime"
    assert "Unsupported CPU attention configuration" in r.first_exception.line


def test_engine_dead_error_alone_is_never_the_root() -> None:
    lines = _lines(CPU / "10g2-kill9-worker-inflight.log")
    without_root = [x for x in lines if "died unexpectedly" not in x and "RuntimeError: cancelled" not in x]
    r = classify_text("\n".join(without_root))
    assert r.first_exception is None or "EngineDeadError" not in r.first_exception.line


def test_died_unexpectedly_after_an_earlier_root_is_a_consequence() -> None:
    r = classify_text(_read(CPU / "10f1-fail-kvcache-space-0.log"))
    assert "died unexpectedly" not in r.first_exception.line
    assert "No available memory for the cache blocks" in r.first_exception.line


def _nccl_failure() -> list[str]:
    """NCCL INFO flood from a real H200 run, then the real V0 worker NCCL error header."""
    flood = _lines(HOSTS / "h200x2-r580" / "nccl2_ok.txt")
    header = _lines(SHARED / "corpus" / "vllm-issues" / "022.log")
    return flood + header


def test_nccl_failure_then_oom_is_engine_with_oom_as_consequence() -> None:
    oom = _lines(HOSTS / "h200-r580" / "fail_oom.txt")
    r = classify_text("\n".join(_nccl_failure() + oom))
    assert r.failed_stage == "engine"
    assert "NCCL error: unhandled cuda error" in r.first_exception.line
    assert r.oom_root_cause is False


def test_oom_first_is_the_root_cause() -> None:
    oom = _lines(HOSTS / "h200-r580" / "fail_oom.txt")
    r = classify_text("\n".join(oom + _nccl_failure()))
    assert r.oom_root_cause is True
    assert "CUDA out of memory" in r.first_exception.line


def test_gpu_side_fixtures_classify_to_their_layer() -> None:
    expect = {
        "h200-r580/fail_cudart12.txt": "container",
        "h200-r580/fail_nogpu.txt": "device",
        "h200-r580/nccl_fail_worldsize.txt": "engine",
        "h200-r580/nccl_ok.txt": "none",
        "h200x2-r580/nccl2_ok.txt": "none",
    }
    for name, stage in expect.items():
        assert classify_text(_read(HOSTS / name)).failed_stage == stage, name


def test_nccl_info_failed_net_plugin_is_not_a_failure() -> None:
    text = _read(HOSTS / "h200-r580" / "nccl_ok.txt")
    assert "NCCL INFO Failed to initialize NET plugin IB" in text
    assert classify_text(text).first_exception is None


def test_bind_failure_after_startup_complete_is_api() -> None:
    startup = _lines(CPU / "01-baseline-startup-only.log")
    bind = "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 8000): address already in use"
    r = classify_text("\n".join(startup + [bind, "INFO:     Waiting for application shutdown."]))
    assert "runtime" in [s.stage for s in r.stages]
    assert r.failed_stage == "api"


def test_exception_found_is_emitted_live_at_the_root() -> None:
    lines = _lines(CPU / "10e-fail-truncated-safetensors.log")
    root_at = next(i for i, x in enumerate(lines) if "SafetensorError" in x)
    seen: list = []
    c = Classifier(run="r", emit=seen.append)
    for line in lines[: root_at + 1]:
        c.feed_line(line)
    found = [e for e in seen if isinstance(e, ExceptionFound)]
    assert len(found) == 1 and found[0].line_number == root_at + 1
    assert found[0].stage == "weights" and found[0].process == "Worker pid=31563"
    assert c.result().failed_stage == "weights"
    for line in lines[root_at + 1 :]:
        c.feed_line(line)
    c.finish()
    assert len([e for e in seen if isinstance(e, ExceptionFound)]) == 1


def test_one_line_root_is_announced_before_the_log_ends() -> None:
    seen: list = []
    c = Classifier(emit=seen.append)
    c.feed(_read(SHARED / "corpus" / "vllm-issues" / "019.log"))
    c.feed("vllm-openai_1  | (RayWorkerWrapper pid=3487) INFO 06-05 16:30:09 worker_base.py:150] exiting\n")
    assert any(isinstance(e, ExceptionFound) for e in seen)


def test_garbage_and_escape_sequences_do_not_crash() -> None:
    junk = [
        "\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\x1b[H",
        "\x00\x01\x02\xff\ufffd" * 50,
        "Traceback (most recent call last):",
        "\x1b[31mERROR\x1b[0m",
        '  File "\x1b[1m/x.py", line 1, in <module>',
        "(Worker pid=) ERROR [x.py:] ",
        "x" * 200_000,
        "ERROR:",
        "",
        "^M^M^M",
    ]
    text = "\n".join(
        _lines(CPU / "10e-fail-truncated-safetensors.log")[:50]
        + junk
        + _lines(CPU / "10e-fail-truncated-safetensors.log")[50:]
    )
    r = classify_text(text)
    assert r.failed_stage == "weights"
    assert "SafetensorError" in r.first_exception.line


def test_a_line_without_end_does_not_grow_memory() -> None:
    c = Classifier()
    for _ in range(200):
        c.feed("A" * 100_000)
    assert len(c._tail) <= 70_000
    c.feed(
        '\nTraceback (most recent call last):\n  File "x.py", line 1, in <module>\nRuntimeError: No CUDA GPUs are available\n'
    )
    assert c.finish().failed_stage == "device"


def test_unprefixed_traceback_deep_in_the_log_keeps_its_full_stack() -> None:
    """The main process's traceback carries no sentinel until its exception line: rebuilt by looking back."""
    flood = _lines(HOSTS / "h200x2-r580" / "nccl2_ok.txt")
    lines = _lines(CPU / "10c-fail-model-path-missing.log")
    r = classify_text("\n".join(flood + lines))
    fe = r.first_exception
    assert fe.line_number == len(flood) + 52
    assert fe.stack[0] == "Traceback (most recent call last):" and len(fe.stack) == 43
    assert any("get_model_path" in s for s in fe.stack)
    assert r.failed_stage == "weights"


def test_error_after_a_normal_stop_is_noise() -> None:
    lines = _lines(CPU / "01-baseline-full-session.log")
    stop = next(i for i, x in enumerate(lines) if "shutdown triggered" in x)
    noise = "(APIServer pid=19865) ERROR 11-30 03:30:08 [launcher.py:300] RuntimeError: Event loop stopped before Future completed."
    assert classify_text("\n".join(lines[: stop + 3] + [noise] + lines[stop + 3 :])).failed_stage == "none"
    assert classify_text("\n".join(lines[:stop] + [noise] + lines[stop:])).failed_stage == "runtime"


def test_chained_exceptions_report_the_first_cause() -> None:
    flood = _lines(HOSTS / "h200x2-r580" / "nccl2_ok.txt")
    cause = _lines(HOSTS / "h200-r580" / "nccl_fail_worldsize.txt")
    effect = _lines(HOSTS / "h200-r580" / "fail_oom.txt")
    chain = cause + ["", "The above exception was the direct cause of the following exception:", ""] + effect
    r = classify_text("\n".join(flood + chain))
    assert "DistStoreError" in r.first_exception.line
    assert r.first_exception.stack == cause
    assert r.failed_stage == "engine" and r.oom_root_cause is False


def test_v1_data_parallel_and_tp_process_names() -> None:
    text = _read(CPU / "10f1-fail-kvcache-space-0.log").replace("(EngineCore pid=", "(EngineCore_DP0 pid=")
    text = text.replace("(Worker pid=", "(Worker_TP0 pid=")
    r = classify_text(text)
    assert r.first_exception.process == "EngineCore_DP0 pid=2811"
    assert r.failed_stage == "engine"


def test_other_v1_process_prefixes_and_dated_levels() -> None:
    text = _read(CPU / "10e-fail-truncated-safetensors.log").replace(
        "(Worker pid=31563)", "(VllmWorker rank=0 pid=31563)"
    )
    text = text.replace(" 11-30 03:33:", " 2026-11-30 03:33:")
    r = classify_text(text)
    assert r.first_exception.process == "VllmWorker rank=0 pid=31563"
    assert all(line.startswith("(VllmWorker rank=0 pid=31563)") for line in r.first_exception.stack)
    assert r.failed_stage == "weights" and r.stages[1].time == "2026-11-30 03:33:30"


def test_fatal_python_error_is_a_root() -> None:
    startup = _lines(CPU / "01-baseline-startup-only.log")
    crash = ["Fatal Python error: Segmentation fault", "", "Current thread 0x00007f9e (most recent call first):"]
    r = classify_text("\n".join(startup + crash))
    assert r.failed_stage == "runtime" and r.exception_type == "FatalError"


# How log shippers and launchers wrap each line of a real server log. None of them may change the
# stage, whether there is a root, or which line it is (kubectl/CRI, docker compose, journald with its
# #033 for ESC, docker --timestamps, Ray's coloured actor prefix, raw and caret-notation colour).
_RAY = re.compile(r"^\((\w[\w\-]* pid=\d+)\) ")
SHIPPERS = {
    "compose": lambda x: f"vllm-1  | {x}",
    "journald": lambda x: f"Nov 30 03:29:01 gb300-01 vllm[4242]: {x}",
    "journald-033": lambda x: "Nov 30 03:29:01 gb300-01 bash[4242]: " + x.replace("\x1b", "#033"),
    "docker -t": lambda x: f"2026-11-30T03:29:01.123456789Z {x}",
    "cri": lambda x: f"2026-11-30T03:29:01.123456789Z stderr F {x}",
    "kubectl --timestamps": lambda x: f"2026-11-30T03:29:01.123456789+00:00 {x}",
    "colour": lambda x: re.sub(r"\b(INFO|ERROR|WARNING)\b", "\x1b[32m\\1\x1b[0m", x),
    "ray": lambda x: _RAY.sub(lambda m: f"\x1b[36m({m[1]}, ip=10.0.0.2)\x1b[0m ", x),
    "ray-caret": lambda x: _RAY.sub(lambda m: f"^[[36m({m[1]}, ip=10.0.0.2)^[[0m ", x),
    # session 17: Slurm's `srun -l` task label, stern's pod and container, moreutils' `ts` (its syslog-style
    # time reads like journald's host and program before argparse's `vllm serve: error:`), a bracketed time,
    # a pod's bracketed name
    "srun -l": lambda x: f"12: {x}",
    "stern": lambda x: f"vllm-7c9f6d-x2x4 vllm {x}",
    "ts": lambda x: f"Dec 06 11:20:41 {x}",
    "ts-iso": lambda x: f"[2026-12-06 11:20:41] {x}",
    "pod bracket": lambda x: f"[pod/vllm-0/vllm] {x}",
}


@functools.cache
def _complete_logs() -> tuple[tuple[str, list[str], tuple[str, int | None]], ...]:
    """Every complete real log (the vllm-cpu runs of the shared corpus and of ours, and the logs committed to public
    repositories, tuned part): its id, its lines and its verdict as written (stage, root's line number)."""
    from tests.support.corpus import SHARED_CORPUS, cases, tuned_cases

    complete = ("vllm-cpu", "vllm-cpu-faults", "vllm-repo-logs")
    out = []
    for case in cases(SHARED_CORPUS) + tuned_cases():
        if case.folder in complete:
            lines = case.text().splitlines()
            ref = classify_text("\n".join(lines) + "\n")
            out.append((case.id, lines, (ref.failed_stage, ref.first_exception and ref.first_exception.line_number)))
    return tuple(out)


@pytest.mark.parametrize("how", sorted(SHIPPERS))
def test_every_complete_real_log_keeps_its_verdict_under_every_shippers_wrapping(how: str) -> None:
    """The complete real logs x one wrapping (a test per shipper: the logs are many and long). Each shipper takes a
    fixed half of them, chosen by a checksum of the shipper and the log's name (every log is still wrapped by about
    half the shippers, every shipper still wraps hundreds of logs: the suite stays within CI's half hour)."""
    logs = [log for log in _complete_logs() if zlib.crc32(f"{how}:{log[0]}".encode()) % 2 == 0]
    assert len(logs) >= 300
    wrap, wrong = SHIPPERS[how], []
    for ident, lines, ref in logs:
        got = classify_text("\n".join(wrap(x) for x in lines) + "\n")
        if (got.failed_stage, got.first_exception and got.first_exception.line_number) != ref:
            wrong.append((ident, ref, got.failed_stage))
    assert not wrong, wrong[:10]

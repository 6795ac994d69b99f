"""Issue 13, thirteenth session: rules made from the tuned part's misses, each in a general form.

- Sleep mode: an engine that was built and served is put to sleep and woken up between uses (an RL
  trainer's rollouts sharing the GPUs with its training steps). A failure in its ``wake_up`` or
  ``sleep`` (the memory coming back, or going) is a runtime failure, however it reads: an out-of-memory
  error there is not the start-up's memory profiling (2011, 3879).

- Envelopes: another program's record around each vLLM line (a harness re-logging the server's output
  under its own ``DATE - INFO - ``, a syslog relay's RFC 5424 header, a process manager's ``name stderr | ``,
  a spreadsheet's first column, ``journalctl -o json``) is learnt from the log's first lines and taken
  off every line, so the vLLM line inside is read as if printed alone: its own level, not the envelope's
  (2749). vLLM's own prefixes (its logger's, a process's, torch's rank, compose's, journald's) are
  never learnt as one.

Each on generated logs and on the real logs of the tuned part; each fails without its change.
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from k3tui.classify.lines import envelope
from tests.support.corpus import issue_text
from tests.test_classify_requests_9 import _tb

SITE = st.sampled_from(
    ["/usr/local/lib/python3.12/dist-packages/vllm", "/opt/venv/lib/python3.10/site-packages/vllm", "/src/vllm/vllm"]
)
SLEEP_MODE = st.sampled_from(
    [
        [
            ("engine/llm_engine.py", "wake_up"),
            ("executor/executor_base.py", "wake_up"),
            ("worker/worker.py", "wake_up"),
        ],
        [
            ("entrypoints/llm.py", "wake_up"),
            ("v1/engine/llm_engine.py", "wake_up"),
            ("v1/worker/gpu_worker.py", "wake_up"),
        ],
        [("entrypoints/llm.py", "sleep"), ("v1/engine/core.py", "sleep"), ("v1/worker/gpu_worker.py", "sleep")],
    ]
)
ALLOCATOR = st.sampled_from(
    [
        [("device_allocator/cumem.py", "wake_up"), ("device_allocator/cumem.py", "create_and_map")],
        [("device_allocator/cumem.py", "sleep"), ("device_allocator/cumem.py", "unmap_and_release")],
        [],
    ]
)
ERROR = st.sampled_from(
    [
        "RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB",
        "RuntimeError: CUDA error: invalid argument",
    ]
)


@given(site=SITE, calls=SLEEP_MODE, alloc=ALLOCATOR, error=ERROR, trainer=st.booleans())
def test_a_failure_waking_or_sleeping_an_engine_is_runtime(
    site: str, calls: list, alloc: list, error: str, trainer: bool
) -> None:
    outer = [("/app/trainer/rollout.py", "generate_sequences")] if trainer else []
    frames = outer + [(f"{site}/{p}", f) for p, f in calls + alloc]
    r = classify_text(_tb(frames, error))
    assert r.first_exception is not None and r.first_exception.line == error
    assert r.failed_stage == "runtime", (r.failed_stage, r.evidence)
    # the same error in the start-up's memory profiling is the engine's
    profiling = outer + [(f"{site}/v1/worker/gpu_worker.py", "determine_available_memory")]
    assert classify_text(_tb(profiling, error)).failed_stage == "engine"


def test_real_logs_of_sleep_mode_failures_are_runtime() -> None:
    for name in ("2011.log", "3879.log"):
        r = classify_text(issue_text(name))
        assert r.failed_stage == "runtime", (name, r.failed_stage, r.evidence)
        assert r.evidence is not None and r.evidence.rule == "frames"


# --- envelopes --------------------------------------------------------------------------------

# real logs of the corpus, read right today, of several stages and shapes (V1 process prefixes, V0's
# logger, argparse, a bare traceback, a native crash after start-up lines)
ENVELOPED = [
    "vllm-cpu-faults/args-bad-choice-dtype.log",
    "vllm-cpu-faults/cfg-invalid-json.log",
    "vllm-cpu-faults/kv-gpu-util-0.001.log",
    "vllm-cpu-faults/st-tensor-missing.log",
    "vllm-issues/1822.log",
    "vllm-issues/2011.log",
    "vllm-issues/1261.log",
    "vllm-issues/910.log",
]


def _wrap(kind: int, host: str, n: int, line: str) -> str:
    level = ("INFO", "ERROR", "WARNING")[n % 3]
    return [
        f"2026-12-05 06:{n % 60:02d}:00,{n % 1000:03d} - {level} - {line}",  # a harness re-logging it
        f"<{11 + n % 5}>1 2026-12-05T06:00:{n % 60:02d}.000Z {host} vllm {4000 + n} - - {line}",  # RFC 5424
        f"{host} stderr | {line}",  # a process manager's name and stream
        f'{1764900000000 + n},"{line}"'[:-1],  # a spreadsheet's time column (the closing quote cut: one line)
        json.dumps({"MESSAGE": line, "PRIORITY": "6", "_TRANSPORT": "stdout", "_HOSTNAME": host}),  # journald JSON
    ][kind]


@given(
    kind=st.integers(0, 4),
    host=st.sampled_from(["gpu-node-3", "h200x8b", "vllm-7f9c"]),
    name=st.sampled_from(ENVELOPED),
)
def test_a_log_in_another_programs_envelope_reads_as_the_log(kind: int, host: str, name: str) -> None:
    from tests.support.corpus import REPO_CORPUS

    text = (REPO_CORPUS / name).read_text(encoding="utf-8", errors="replace")
    bare = classify_text(text)
    assert bare.first_exception is not None  # (the pin: each is read right on its own)
    wrapped = "\n".join(_wrap(kind, host, i, line) for i, line in enumerate(text.split("\n"))) + "\n"
    r = classify_text(wrapped)
    assert r.failed_stage == bare.failed_stage, (name, kind, r.failed_stage, bare.failed_stage, r.evidence)
    assert r.first_exception is not None
    assert bare.first_exception.line.strip().endswith(r.first_exception.line.strip()[-60:]) or (
        r.first_exception.line.strip()[-60:] in bare.first_exception.line
    ), (r.first_exception.line, bare.first_exception.line)


def test_vllms_own_prefixes_are_never_an_envelope() -> None:
    for line in (
        'ERROR 06-13 02:36:52 async_llm_engine.py:52]   File "/x/vllm/engine/async_llm_engine.py", line 42, in f',
        "(EngineCore_DP0 pid=42) ERROR 12-05 06:00:00 [core.py:700] Traceback (most recent call last):",
        '[rank0]:   File "/x/vllm/worker/worker.py", line 236, in _warm_up_model',
        "[rank0]: RuntimeError: NCCL error: unhandled system error",
        "vllm-1     | (APIServer pid=1) ERROR 12-05 06:00:00 [serving.py:1] ValueError: x",
        "Dec 05 06:00:00 gpu-node-3 vllm[4242]: (APIServer pid=1) INFO 12-05 06:00:00 [api_server.py:1] hi",
        "2026-12-05T06:00:00.123456789Z stderr F (APIServer pid=1) INFO 12-05 06:00:00 [api_server.py:1] hi",
    ):
        assert envelope(line) is None, line
    assert envelope("2026-12-05 06:00:00,123 - INFO - vllm serve: error: argument --dtype: invalid choice") is not None
    assert envelope("myjob stdout | (APIServer pid=1) ERROR 12-05 06:00:00 [serving.py:1] ValueError: x") is not None


def test_one_line_in_an_envelope_is_not_learnt_from_prose() -> None:
    # a sentence that quotes a vLLM line once is no envelope: two lines must share one
    log = "I ran it and got (APIServer pid=1) ERROR 12-05 06:00:00 [serving.py:1] ValueError: x\nthanks\n"
    r = classify_text(log)
    assert r.first_exception is None or "I ran it" in r.first_exception.line


def test_a_real_harness_relogging_vllm_is_read_through() -> None:
    r = classify_text(issue_text("2749.log"))
    assert r.failed_stage == "runtime" and r.first_exception is not None, (r.failed_stage, r.evidence)
    assert "Engine iteration timed out" in r.first_exception.line or "TimeoutError" in r.first_exception.line

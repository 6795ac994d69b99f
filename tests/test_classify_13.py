"""Issue 13, thirteenth session: rules made from the tuned part's misses, each in a general form.

- Sleep mode: an engine that was built and served is put to sleep and woken up between uses (an RL
  trainer's rollouts sharing the GPUs with its training steps). A failure in its ``wake_up`` or
  ``sleep`` (the memory coming back, or going) is a runtime failure, however it reads: an out-of-memory
  error there is not the start-up's memory profiling (2011, 3879).

Each on generated logs and on the real logs of the tuned part; each fails without its change.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import issue_text
from tests.test_classify_requests_9 import _tb

SITE = st.sampled_from(
    ["/usr/local/lib/python3.12/dist-packages/vllm", "/opt/venv/lib/python3.10/site-packages/vllm", "/src/vllm/vllm"]
)
SLEEP_MODE = st.sampled_from(
    [
        [("engine/llm_engine.py", "wake_up"), ("executor/executor_base.py", "wake_up"), ("worker/worker.py", "wake_up")],
        [("entrypoints/llm.py", "wake_up"), ("v1/engine/llm_engine.py", "wake_up"), ("v1/worker/gpu_worker.py", "wake_up")],
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

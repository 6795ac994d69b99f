"""Issue 13, twenty-ninth session.

- The LoRA adapters a batch asked for, made active in the layers' slots (``activate_adapter``,
  ``set_active_adapters``, a layer's ``set_lora`` in ``vllm/lora/``): a request's work, the runtime's. At start-up
  the same calls run only inside a dummy run or a graph capture, whose engine frame outside still names the stage
  (guard). Loading an adapter's files is not listed: the adapter's files are the weights'.

Each on generated logs and on a real log of the tuned part; each fails without its change (the guards,
which say what a rule must leave alone, pass either way).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.real import assert_real

_W = "(Worker_TP0 pid=1256) ERROR 04-22 02:12:02 [multiproc_executor.py:932] "
_V = "/usr/local/lib/python3.12/dist-packages/vllm"


def _lora_trace(outer: list[tuple[str, str]], inner: str, err: str, cut: int = 0) -> str:
    """A worker's traceback through the LoRA slots; ``cut`` frames left off its top (an excerpt's paste)."""
    frames = [
        (f"{_V}/v1/executor/multiproc_executor.py", "worker_busy_loop"),
        *outer,
        (f"{_V}/v1/worker/lora_model_runner_mixin.py", "set_active_loras"),
        (f"{_V}/lora/worker_manager.py", "set_active_adapters"),
        (f"{_V}/lora/worker_manager.py", "_apply_adapters"),
        (f"{_V}/lora/model_manager.py", "activate_adapter"),
        (f"{_V}/lora/layers/column_parallel_linear.py", inner),
    ][cut:]
    lines = [] if cut else [f"{_W}WorkerProc hit an exception.", f"{_W}Traceback (most recent call last):"]
    for i, (path, func) in enumerate(frames):
        lines += [f'{_W}  File "{path}", line {100 + i}, in {func}', f"{_W}    x = y()"]
    return "\n".join([*lines, f"{_W}{err}"]) + "\n"


@given(
    inner=st.sampled_from(["set_lora", "slice_lora_b", "slice_lora_a"]),
    err=st.sampled_from(
        ["IndexError: list index out of range", "RuntimeError: shape '[14, -1]' is invalid for input of size 768"]
    ),
    cut=st.integers(2, 4),
)
def test_a_lora_made_active_for_a_batch_is_the_runtimes(inner: str, err: str, cut: int) -> None:
    res = classify_text(_lora_trace([], inner, err, cut))
    assert res.first_exception is not None and err in res.first_exception.line
    assert res.failed_stage == "runtime", res.evidence


@given(outer=st.sampled_from(["_dummy_run", "profile_run", "capture_model"]))
def test_guard_a_lora_made_active_in_a_dummy_run_is_still_the_engines(outer: str) -> None:
    frames = [
        (f"{_V}/v1/worker/gpu_worker.py", "determine_available_memory"),
        (f"{_V}/v1/worker/gpu_model_runner.py", outer),
    ]
    res = classify_text(_lora_trace(frames, "set_lora", "IndexError: list index out of range"))
    assert res.failed_stage == "engine", res.evidence


def test_real_lora_activation_while_serving() -> None:
    assert_real("2461.log", "runtime", "IndexError: list in")

"""Issue 13, nineteenth session: forms found in the tuned misses.

- The start-up markers alone place a root after the engine was built (``init engine (profile, …) took``) and
  before the API was ready; then the engine core says ``EngineCore encountered a fatal error``: its busy loop
  failed, so the engine was running requests (an offline ``LLM(...)`` generating, which has no API at all):
  runtime. The client's ``EngineDeadError`` alone does not say so there (a server whose API failed to start
  stops its engine, and its client reports that death too).

Each on generated logs and on a real log of the tuned part; each fails without its change (the guards,
which say what a rule must leave alone, pass either way).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import REPO_CORPUS, held_out

_PROC = st.sampled_from(["EngineCore", "EngineCore_DP0"])
_HEAD = [
    "INFO 12-06 15:31:11 [utils.py:253] non-default args: {'model': '/m'}",
    "INFO 12-06 15:31:23 [core.py:95] Initializing a V1 LLM engine (v0.32.0) with config: model='/m'",
    "INFO 12-06 15:31:35 [gpu_model_runner.py:2602] Starting to load model /m...",
    "INFO 12-06 15:31:36 [default_loader.py:314] Loading weights took 0.01 seconds",
    "INFO 12-06 15:31:37 [kv_cache_utils.py:1240] GPU KV cache size: 9,184 tokens",
    "INFO 12-06 15:31:41 [core.py:402] init engine (profile, create kv cache, warmup model) took 4.38 s",
]


def _log(proc: str, died: str, after: list[str]) -> str:
    lines = [f"({proc} pid=7) {x}" for x in _HEAD]
    lines.append(f"({proc} pid=7) ERROR 12-06 15:32:08 [multiproc_executor.py:315] {died}")
    return "\n".join(lines + after) + "\n"


_DIED = st.sampled_from(
    [
        "Worker proc VllmWorker-0 died unexpectedly (exit code: None), shutting down executor.",
        "Worker proc VllmWorker-1 died unexpectedly (exit code: -9), shutting down executor.",
    ]
)


@given(proc=_PROC, died=_DIED, gap=st.integers(0, 4))
def test_the_engines_fatal_error_after_a_built_engine_says_it_was_running(proc: str, died: str, gap: int) -> None:
    after = [f"({proc} pid=7) INFO 12-06 15:32:08 [multiproc_executor.py:479] [shutdown] Executor: waiting"] * gap
    after += [
        f"({proc} pid=7) ERROR 12-06 15:32:08 [core.py:1512] {proc} encountered a fatal error.",
        f"({proc} pid=7) ERROR 12-06 15:32:08 [core.py:1512] Traceback (most recent call last):",
        f'({proc} pid=7) ERROR 12-06 15:32:08 [core.py:1512]   File "/v/vllm/v1/engine/core.py", line 1, in run_engine_core',
        f"({proc} pid=7) ERROR 12-06 15:32:08 [core.py:1512] RuntimeError: cancelled",
    ]
    res = classify_text(_log(proc, died, after))
    assert res.first_exception is not None and died in res.first_exception.line
    assert res.failed_stage == "runtime", res.evidence


@given(proc=_PROC, died=_DIED)
def test_the_clients_engine_dead_error_alone_leaves_the_markers_stage(proc: str, died: str) -> None:
    """Guard: only the engine core's own word moves it; the client's report of the death does not."""
    after = [
        "ERROR 12-06 15:32:09 [async_llm.py:906] AsyncLLM output_handler failed.",
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
    ]
    res = classify_text(_log(proc, died, after))
    assert res.failed_stage == "api", res.evidence


def test_a_real_offline_run_whose_worker_the_memory_cgroup_killed_while_generating() -> None:
    name = "offline-memcg-oom-prompt-logprobs.log"
    assert not held_out("vllm-cpu-faults", name)
    res = classify_text((REPO_CORPUS / "vllm-cpu-faults" / name).read_text())
    assert "died unexpectedly" in res.first_exception.line
    assert res.failed_stage == "runtime", res.evidence


def test_a_real_server_whose_api_failed_to_start_is_still_the_api() -> None:
    """Guard: the chat template broke the API's start; the client's EngineDeadError followed."""
    name = "tok-chat-template-broken-jinja.log"
    assert not held_out("vllm-cpu-faults", name)
    res = classify_text((REPO_CORPUS / "vllm-cpu-faults" / name).read_text())
    assert res.failed_stage == "api", res.evidence



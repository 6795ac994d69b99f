"""Issue 13, twenty-first session: what a root's message says of the model's own files; launchers' and shippers' prefixes.

- A LoRA adapter that does not fit the model or the engine's LoRA limits (``LoRA rank 64 is greater than
  max_lora_rank 16``, ``While loading /adapters/a, expected target modules in […]``, a weight an adapter may
  not carry, an adapter not found) is the adapter's files: the weights, when nothing else places it. One a
  request named, with the engine's death after it, failed while serving.
- A model's configuration class (transformers' ``LlavaConfig``, a quantization scheme's config) without an
  attribute the model's code reads: the model's ``config.json`` does not carry what the code expects: the
  weights, when nothing else places it. vLLM's own engine config classes (``ModelConfig``, ``CacheConfig``) are
  not the model's files.
- transformers' tokenizers back-end without an attribute the processor reads (``TokenizersBackend has no
  attribute …``) and a tokenizer's vocabulary file that cannot be fetched or read (openai_harmony's ``error downloading
  or loading vocab file``) are the model's files too.
- Sleep mode's allocator out of memory as it maps memory back (``CUDA Error: out of memory at
  …/cumem_allocator.cpp:62``), nothing else placing it: an engine woken after it had served (RL frameworks put
  it to sleep between rollouts); under the weights' load at start-up the markers say so first.
- ``srun --label``'s task number before each line of a Slurm job step's output (`` 0: ``, padded to the widest):
  a wrapper (told from ``grep -n``'s number by the odd space after its colon); no verdict changes under it.
- journald's other time forms (``journalctl -o short-iso``'s ``2026-12-06T10:00:00+0000 host vllm[42]: ``,
  ``-o short-precise``'s microseconds), Open MPI's ``mpirun --tag-output`` (``[1,0]<stdout>:``) and torchrun's
  ``--tee`` (``[default0]:``) before each line are wrappers too (the rank the source); a time, a level and a
  logger's target (``… ERROR engine.run_mp_engine: …``) is still no journald host and program.
- A server stopped by its operator, then launched again in the same log (a requeued Slurm job's next attempt
  appended to its output file, a container restarted under ``docker logs``): its launch line (``non-default args``)
  ends the stop; a failure after it is the new run's root, placed by the new run's own start-up, read back from the
  relaunch (not by the stopped run's stages: its API had been ready).
- A workload manager's line (``srun: Job step aborted …``) printed between ``The above exception was the direct cause …``
  and the traceback it announces does not cut that traceback off the root's callers.

Each on generated logs and on a real log of the tuned part; each fails without its change (the guards,
which say what a rule must leave alone, pass either way).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import tuned_text

_PREFIX = st.sampled_from(
    [
        "",
        "(Worker_TP1 pid=4182) ERROR 06-08 16:56:54 [multiproc_executor.py:962] ",
        "(EngineCore_DP0 pid=27368) ERROR 11-21 09:27:00 [core.py:842] ",
        "[rank0]: ",
    ]
)
_ADAPTER = st.from_regex(r"/[a-z]{2,8}(?:/[a-z0-9_\-]{1,12}){1,3}", fullmatch=True)
_RANK = st.integers(min_value=17, max_value=512)


def _lora_error(kind: int, adapter: str, rank: int) -> str:
    return [
        f"ValueError: LoRA rank {rank} is greater than max_lora_rank 16.",
        f"ValueError: While loading {adapter}, expected target modules in ['o_proj', 'qkv_proj'] but received ['fc1'].",
        "ValueError: base_model.model.lm_head.weight is unsupported LoRA weight",
        f"vllm.exceptions.LoRAAdapterNotFoundError: Loading lora k3 failed: No adapter found for {adapter}",
    ][kind]


@given(prefix=_PREFIX, kind=st.integers(0, 3), adapter=_ADAPTER, rank=_RANK)
def test_a_lora_adapter_that_does_not_fit_is_the_weights(prefix: str, kind: int, adapter: str, rank: int) -> None:
    error = _lora_error(kind, adapter, rank)
    res = classify_text(f"{prefix}{error}\n")
    assert res.first_exception is not None and error in res.first_exception.line
    assert res.failed_stage == "weights", res.evidence


@given(kind=st.integers(0, 3), adapter=_ADAPTER, rank=_RANK)
def test_guard_a_lora_adapter_a_request_named_failed_serving(kind: int, adapter: str, rank: int) -> None:
    """The engine died of it, V1 says, while serving (its EngineDeadError after the root)."""
    error = _lora_error(kind, adapter, rank)
    dead = "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause."
    res = classify_text(f"client called the server\n{error}\n...\n{dead}\n")
    assert res.failed_stage == "runtime", res.evidence


_MODEL_CONFIG = st.sampled_from(
    ["LlavaConfig", "Llama4VisionConfig", "Qwen2_5OmniConfig", "DeepseekV3Config", "AscendCompressedTensorsConfig"]
)
_ATTRIBUTE = st.from_regex(r"[a-z]{3,10}(?:_[a-z]{2,8}){0,2}", fullmatch=True)


@given(prefix=_PREFIX, cls=_MODEL_CONFIG, attr=_ATTRIBUTE)
def test_a_models_config_without_an_attribute_its_code_reads_is_the_weights(prefix: str, cls: str, attr: str) -> None:
    error = f"AttributeError: '{cls}' object has no attribute '{attr}'"
    res = classify_text(f"{prefix}{error}\n")
    assert res.first_exception is not None and error in res.first_exception.line
    assert res.failed_stage == "weights", res.evidence


@given(
    prefix=_PREFIX, cls=st.sampled_from(["ModelConfig", "VllmConfig", "CacheConfig", "ParallelConfig"]), attr=_ATTRIBUTE
)
def test_guard_vllms_own_config_classes_are_not_the_models_files(prefix: str, cls: str, attr: str) -> None:
    res = classify_text(f"{prefix}AttributeError: '{cls}' object has no attribute '{attr}'\n")
    assert res.failed_stage != "weights", res.evidence


_CUMEM_LINE = st.sampled_from([62, 139])


@given(prefix=_PREFIX, line=_CUMEM_LINE, wrapped=st.booleans())
def test_sleep_modes_allocator_running_out_as_it_wakes_is_serving(prefix: str, line: int, wrapped: bool) -> None:
    """Sleep mode's allocator out of memory as it maps memory back, nothing else placing it: the engine was woken
    after it had served (RL frameworks put it to sleep between rollouts)."""
    error = (
        f"{'RuntimeError: ' if wrapped else ''}CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:{line}"
    )
    res = classify_text(f"{prefix}{error}\n")
    assert res.first_exception is not None and "cumem_allocator.cpp" in res.first_exception.line
    assert res.failed_stage == "runtime", res.evidence


def test_guard_sleep_modes_allocator_out_of_memory_while_loading_is_the_weights() -> None:
    """The same allocator under the weights' load at start-up: the markers say where it was."""
    log = "\n".join(
        [
            "INFO 12-06 15:31:11 [utils.py:253] non-default args: {'model': '/m', 'enable_sleep_mode': True}",
            "(EngineCore pid=7) INFO 12-06 15:31:23 [core.py:95] Initializing a V1 LLM engine (v0.32.0) with config: model='/m'",
            "(EngineCore pid=7) INFO 12-06 15:31:35 [gpu_model_runner.py:2602] Starting to load model /m...",
            "(EngineCore pid=7) CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62",
        ]
    )
    res = classify_text(log + "\n")
    assert res.failed_stage == "weights", res.evidence


# srun --label's task numbers before each line (a Slurm job step's output file).
_LABELLED = [
    "vllm-issues/151.log",
    "vllm-issues/682.log",
    "vllm-issues/976.log",
    "vllm-issues/1318.log",
    "vllm-issues/1433.log",
]


def _srun_label(text: str, task: int, width: int) -> str:
    return "\n".join(f"{task:>{width}}: {line}" if line else line for line in text.split("\n"))


@given(task=st.integers(0, 15), width=st.integers(1, 3), which=st.sampled_from(_LABELLED))
def test_srun_task_labels_before_each_line_change_no_verdict(task: int, width: int, which: str) -> None:
    folder, name = which.split("/")
    text = tuned_text(folder, name)
    plain, labelled = classify_text(text), classify_text(_srun_label(text, task, width))
    assert labelled.failed_stage == plain.failed_stage, labelled.evidence
    assert (labelled.first_exception is None) == (plain.first_exception is None)
    if plain.first_exception is not None:
        assert plain.first_exception.line.strip() in labelled.first_exception.line


def test_srun_labels_and_grep_n_numbers_keep_a_tracebacks_frames() -> None:
    """srun's ``0: `` before a frame's two spaces, grep -n's ``12:`` before them: the same frames either way."""
    from tests.support.tracebacks import traceback_text

    tb = traceback_text(
        [("/opt/venv/lib/python3.11/site-packages/vllm/transformers_utils/config.py", "get_config")],
        "json.decoder.JSONDecodeError: Expecting value: line 3 column 1 (char 23)",
    )
    lines = ["INFO 12-06 15:31:11 [utils.py:253] non-default args: {'model': '/m'}", *tb.rstrip("\n").split("\n")]
    plain = classify_text("\n".join(lines) + "\n")
    srun = classify_text("\n".join(f"0: {x}" for x in lines) + "\n")
    grep = classify_text("\n".join(f"{k}:{x}" for k, x in enumerate(lines, 1)) + "\n")
    assert plain.first_exception is not None and len(plain.first_exception.stack) > 2
    for got in (srun, grep):
        assert got.failed_stage == plain.failed_stage, got.evidence
        assert got.first_exception is not None and len(got.first_exception.stack) == len(plain.first_exception.stack)


# Other shippers and launchers that put their own words before every line of a server's output.
_RUNS = [
    "ld-preload-throw.log",
    "args-bad-choice-load-format.log",
    "args-pp-4-layers-2.log",
    "kill-segv-worker-inflight.log",
    "kv-gpu-util-0.001.log",
    "ld-path-libcrypto-no-symbols.log",
    "plugin-general-missing-dependency.log",
]
_SHIPPED = {
    "journalctl -o short-iso": lambda n: f"2026-12-06T10:{n // 60 % 60:02d}:{n % 60:02d}+0000 gpu-node-3 vllm[4242]: ",
    "journalctl -o short-precise": lambda n: (
        f"Dec 06 10:{n // 60 % 60:02d}:{n % 60:02d}.{n:06d} gpu-node-3 vllm[4242]: "
    ),
    "mpirun --tag-output": lambda n: "[1,0]<stdout>:",
    "torchrun --tee": lambda n: "[default0]:",
}


@given(run=st.sampled_from(_RUNS), shipper=st.sampled_from(sorted(_SHIPPED)))
def test_real_runs_keep_their_verdict_under_journald_mpirun_and_torchrun_prefixes(run: str, shipper: str) -> None:
    text = tuned_text("vllm-cpu-faults", run)
    wrap = _SHIPPED[shipper]
    shipped = "\n".join(wrap(n) + line if line else line for n, line in enumerate(text.split("\n")))
    plain, got = classify_text(text), classify_text(shipped)
    assert got.failed_stage == plain.failed_stage, got.evidence
    assert (got.first_exception is None) == (plain.first_exception is None)
    if plain.first_exception is not None:
        assert plain.first_exception.line.strip() in got.first_exception.line
    assert [s.stage for s in got.stages] == [s.stage for s in plain.stages]


def test_guard_a_time_level_and_target_is_not_journalds_host_and_program() -> None:
    """``2025-05-16T04:56:18.119Z ERROR engine.run_mp_engine: …`` (a Rust tracing line) keeps its level."""
    from k3tui.classify.lines import parse

    line = parse("2025-05-16T04:56:18.119Z ERROR engine.run_mp_engine: NIXL_ERR_BACKEND")
    assert line.level == "ERROR" and line.body == "NIXL_ERR_BACKEND"


@given(
    prefix=_PREFIX,
    error=st.sampled_from(
        [
            "AttributeError: TokenizersBackend has no attribute all_special_tokens_extended.",
            "openai_harmony.HarmonyError: error downloading or loading vocab file: failed to download or load vocab file",
        ]
    ),
)
def test_a_tokenizers_backend_or_vocabulary_file_that_fails_is_the_weights(prefix: str, error: str) -> None:
    res = classify_text(f"{prefix}{error}\n")
    assert res.first_exception is not None and error in res.first_exception.line
    assert res.failed_stage == "weights", res.evidence


# A server stopped by its operator, then launched again in the same log (a requeued Slurm job's next attempt
# appended to its output file, a container restarted under `docker logs`).
_RUN = [
    "(APIServer pid={pid}) INFO 12-06 23:16:53 [api_utils.py:286] non-default args: {{'model_tag': '/m', 'port': 8000}}",
    "(EngineCore pid={core}) INFO 12-06 23:16:58 [core.py:95] Initializing a V1 LLM engine (v0.32.0) with config: model='/m'",
    "(EngineCore pid={core}) INFO 12-06 23:17:00 [gpu_model_runner.py:2602] Starting to load model /m...",
    "(EngineCore pid={core}) INFO 12-06 23:17:03 [kv_cache_utils.py:1240] CPU KV cache size: 9,184 tokens",
    "(APIServer pid={pid}) INFO 12-06 23:17:05 [api_server.py:1000] Starting vLLM server on http://127.0.0.1:8000",
    "INFO:     Application startup complete.",
]
_STOP = [
    "(APIServer pid={pid}) INFO 12-06 23:17:13 [launcher.py:254] [shutdown] API server: shutdown triggered",
    "(EngineCore pid={core}) INFO 12-06 23:17:13 [core.py:1454] [shutdown] EngineCore: trigger received signal=SIGTERM",
    "INFO:     Shutting down",
]
_SECOND = [
    "(APIServer pid=9131) INFO 12-06 23:17:24 [api_utils.py:286] non-default args: {'model_tag': '/m', 'port': 8000}",
    "Traceback (most recent call last):",
    '  File "/opt/venv/lib/python3.11/site-packages/vllm/transformers_utils/config.py", line 640, in get_config',
    "    config_dict = json.load(f)",
    "json.decoder.JSONDecodeError: Expecting value: line 3 column 1 (char 23)",
]
_SLURM_END = [
    "srun: Job step aborted: Waiting up to 5 seconds for job step to finish.",
    "slurmstepd-n1: error: *** STEP 30.0 ON n1 CANCELLED AT 2026-12-06T23:17:13 DUE TO JOB REQUEUE ***",
]


def _first_run(pid: int, core: int, slurm: bool) -> list[str]:
    lines = [x.format(pid=pid, core=core) for x in _RUN]
    return lines + (_SLURM_END if slurm else []) + [x.format(pid=pid, core=core) for x in _STOP]


@given(pid=st.integers(100, 99999), core=st.integers(100, 99999), slurm=st.booleans(), gap=st.integers(0, 40))
def test_a_failure_after_the_server_was_launched_again_is_the_new_runs(
    pid: int, core: int, slurm: bool, gap: int
) -> None:
    filler = [f"(APIServer pid={pid}) INFO 12-06 23:17:14 [launcher.py:304] [shutdown] step {i}" for i in range(gap)]
    res = classify_text("\n".join([*_first_run(pid, core, slurm), *filler, *_SECOND]) + "\n")
    assert res.first_exception is not None and "JSONDecodeError" in res.first_exception.line
    assert res.failed_stage == "weights", res.evidence  # the new run's config.json: not the stopped run's serving


@given(pid=st.integers(100, 99999), core=st.integers(100, 99999), slurm=st.booleans())
def test_guard_a_failure_printed_after_the_stop_with_no_new_launch_is_the_stops_noise(
    pid: int, core: int, slurm: bool
) -> None:
    res = classify_text("\n".join([*_first_run(pid, core, slurm), *_SECOND[1:]]) + "\n")
    assert res.first_exception is None, res.first_exception


@given(
    pid=st.integers(100, 99999),
    slurm=st.booleans(),
    failure=st.sampled_from(
        [
            "(EngineCore pid=9200) ERROR 12-06 23:17:31 [core.py:1101] RuntimeError: boom",
            "Segmentation fault (core dumped)",
        ]
    ),
)
def test_the_new_runs_own_start_up_places_a_failure_nothing_else_places(pid: int, slurm: bool, failure: str) -> None:
    """Its markers, read back from the relaunch: it was loading the weights, not serving as the stopped run was."""
    second = [
        "(APIServer pid=9131) INFO 12-06 23:17:24 [api_utils.py:286] non-default args: {'model_tag': '/m'}",
        "(EngineCore pid=9200) INFO 12-06 23:17:30 [gpu_model_runner.py:2602] Starting to load model /m...",
        failure,
    ]
    res = classify_text("\n".join([*_first_run(pid, pid + 1, slurm), *second]) + "\n")
    assert res.first_exception is not None and failure.split("] ")[-1] in res.first_exception.line
    assert res.failed_stage == "weights", res.evidence


@given(
    extra=st.sampled_from(
        [
            "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
            "slurmstepd-n1: error: *** STEP 12.0 ON n1 CANCELLED AT 2026-12-06T23:17:13 ***",
        ]
    ),
    after=st.integers(0, 1),
)
def test_a_workload_managers_line_between_chained_tracebacks_keeps_the_callers(extra: str, after: int) -> None:
    """srun reports a step's end wherever the output stands: between ``The above exception was the direct cause …``
    and the traceback it announces, that traceback still holds the root's callers (here: the program's start)."""
    lines = tuned_text("vllm-cpu-faults", "cli-chat-no-server.log").splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("The above exception was the direct cause")) + 1 + after
    ref = classify_text("\n".join(lines) + "\n")
    got = classify_text("\n".join([*lines[:at], extra, *lines[at:]]) + "\n")
    assert got.first_exception is not None and ref.first_exception is not None
    assert got.first_exception.line == ref.first_exception.line
    assert got.failed_stage == ref.failed_stage == "container", got.evidence


# Each rule above on a real log of the tuned part: (folder, log, words of its root line, stage).
_REAL = [
    ("vllm-issues", "2144.log", "LoRA rank 64", "weights"),  # an adapter's rank over the engine's limit
    ("vllm-issues", "6481.log", "'LlavaConfig' object has no attribute", "weights"),  # a model config's attribute
    ("vllm-issues", "1912.log", "cumem_allocator.cpp", "runtime"),  # an RL rollout actor woken out of memory
    ("vllm-issues", "6154.log", "vocab file", "weights"),  # openai_harmony's vocabulary not fetched
    ("vllm-cpu-faults", "slm-append-healthy-then-config-broken.log", "JSONDecodeError", "weights"),  # a requeue
]


@pytest.mark.parametrize(("folder", "name", "words", "stage"), _REAL, ids=[r[1] for r in _REAL])
def test_real_logs_of_this_sessions_rules(folder: str, name: str, words: str, stage: str) -> None:
    res = classify_text(tuned_text(folder, name))
    assert res.first_exception is not None and words in res.first_exception.line
    assert res.failed_stage == stage, res.evidence

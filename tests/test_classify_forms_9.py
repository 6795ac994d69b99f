"""Issue 13, ninth session: forms and words of the session's fresh excerpts, each a general form.

Each reading is tested on generated lines (classes of input) and on the real excerpt of the
tuned part that showed it (``tests/data/corpus/vllm-issues``), and fails without its change:

- forms: a bare time of day in front of a line (an abridged paste); an exception quoted inline in
  a reporter's sentence (markdown backticks, single or triple);
- roots: huggingface_hub's download consistency check logged by its message alone; torch finding no
  device of its back-end (``XPU device count is zero!``) before what fails next;
- not roots: a chat request to a model without a chat template, refused and answered;
- stages: the method an RPC timed out on (``RPC call to sample_tokens``) as a frame; the KV
  connectors' helpers per request (runtime); the accelerator's initialisation, a busy device node,
  a dtype the GPU lacks, ptxas refusing the target architecture (device); a failure during CUDA
  graph capture, the front end giving up on the engines' handshake (engine); the model's files
  not fitting the loader or not there (weights); a stack the root borrowed is not its own.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import issue_text

CLOCK = st.from_regex(r"(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{3})?", fullmatch=True)


def _stage(name: str) -> tuple[str, str | None]:
    res = classify_text(issue_text(name))
    return res.failed_stage, res.first_exception.line if res.first_exception else None


# --- forms -------------------------------------------------------------------------------------------


@given(CLOCK, st.sampled_from(["TimeoutError: RPC call to sample_tokens timed out.", "KeyError: 'x'",
                               "RuntimeError: CUDA error: an illegal memory access was encountered"]))  # fmt: skip
def test_a_bare_time_of_day_in_front_of_a_line_is_taken_off(clock: str, error: str) -> None:
    res = classify_text(f"{clock} (Worker_TP0) a note of the reporter\n{clock} {error}\n")
    assert res.first_exception is not None and res.first_exception.line == f"{clock} {error}"
    # a clock followed by a column's padding is not a stamp: the line is an indented continuation
    assert classify_text(f"{clock}         kv_cache_usage=0.5\n").first_exception is None


def test_an_abridged_paste_with_times_of_day_and_an_rpc_timeout() -> None:
    """2277: '09:14:37 TimeoutError: RPC call to sample_tokens timed out.' (was: not a vLLM log)."""
    assert _stage("2277.log") == ("runtime", "09:14:37 TimeoutError: RPC call to sample_tokens timed out.")


SENTENCES = st.sampled_from(
    ["You're seeing: {q}", "it times out with the following error {q}  Any help would be appreciated.",
     "2. Attempting to run inference leads to errors like {q}, since the TPUs only have 16 Gi",
     "Error msg: {q}"]
)  # fmt: skip
INLINE = st.sampled_from(
    [("OSError: [Errno 98] Address already in use", "api"),
     ("torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 1/4 clients joined.", "engine"),
     ("RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory", "engine")]
)  # fmt: skip


@given(SENTENCES, INLINE, st.sampled_from(["`", "```"]), st.integers(0, 20))
def test_an_exception_quoted_inline_in_a_sentence_is_the_root(sentence: str, inline, ticks: str, before: int) -> None:  # noqa: ANN001
    exc, stage = inline
    line = sentence.format(q=f"{ticks}{exc}{ticks}")
    res = classify_text("Some words about the set-up.\n" * before + line + "\n")
    assert res.first_exception is not None and res.first_exception.line == line
    assert res.failed_stage == stage


@given(st.sampled_from(["a `ValueError` when", "the `RuntimeError:` part", "see `logger.error: x`",
                        "the `--max-model-len` flag", "`UserWarning: something` is printed"]))  # fmt: skip
def test_prose_naming_an_exception_without_quoting_one_is_no_root(words: str) -> None:
    assert classify_text(f"I get {words} and the server works.\n").first_exception is None


def test_real_inline_quotes() -> None:
    """2337 (triple backticks, dotted type), 2340 (numbered list item), 2438 (a 'You're seeing:' answer)."""
    assert _stage("2337.log")[0] == "engine" and "DistStoreError: Timed out after 601" in _stage("2337.log")[1]
    assert _stage("2340.log")[0] == "engine" and "RESOURCE_EXHAUSTED: XLA:TPU" in _stage("2340.log")[1]
    assert _stage("2438.log")[0] == "api" and "[Errno 98] Address already in use" in _stage("2438.log")[1]


# --- roots and not roots ------------------------------------------------------------------------------


@given(st.integers(1000, 9_999_999_999), st.integers(1000, 9_999_999_999))
def test_a_download_of_the_wrong_size_is_the_root(want: int, got: int) -> None:
    line = f"ERROR 01-23 21:59:31 engine.py:366] Consistency check failed: file should be of size {want} but has size {got} (model-00014-of-00030.safetensors)."
    res = classify_text(line + "\nERROR 01-23 21:59:31 engine.py:366] We are sorry for the inconvenience.\n")
    assert res.first_exception is not None and res.first_exception.line == line and res.failed_stage == "weights"


def test_real_download_consistency_check() -> None:
    assert _stage("2319.log")[0] == "weights" and "Consistency check failed" in _stage("2319.log")[1]


@given(st.sampled_from(["XPU", "CUDA", "NPU"]))
def test_no_device_of_the_back_end_is_the_root_of_what_fails_next(backend: str) -> None:
    warn = f"/opt/venv/lib/python3.12/site-packages/torch/{backend.lower()}/__init__.py:74: UserWarning: {backend} device count is zero! (Triggered internally)"
    log = (
        warn
        + '\nTraceback (most recent call last):\n  File "/x/arg_utils.py", line 1, in add_cli_args\nRuntimeError: no device\n'
    )
    res = classify_text(log)
    assert res.first_exception is not None and res.first_exception.line == warn and res.failed_stage == "device"


def test_real_xpu_device_count_zero() -> None:
    assert _stage("2402.log")[0] == "device" and "XPU device count is zero!" in _stage("2402.log")[1]


def test_a_chat_request_without_a_chat_template_is_refused_not_a_root() -> None:
    """2444: the deployment was up; each chat request was answered with this error (label none)."""
    assert _stage("2444.log") == ("none", None)
    line = "(APIServer pid=1) ERROR 11-30 03:44:40 [serving_chat.py:1] ValueError: As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat template if the tokenizer does not define one."
    assert classify_text(line + "\n").first_exception is None


# --- stages ----------------------------------------------------------------------------------------------

DEVICE_WORDS = st.sampled_from(
    ["RuntimeError: Unable to initialize backend 'tpu': FAILED_PRECONDITION: TPU initialization failed: open(/dev/vfio/0): Device or resource busy",
     "RuntimeError: Bad StatusOr access: UNKNOWN: TPU initialization failed: open(/dev/vfio/0): Device or resource busy",
     "RuntimeError: Worker failed with error 'BF16 is not supported', please check the stack trace above for the root cause",
     "RuntimeError: NPU initialization failed",
     "ptxas /tmp/tmpx.ptx, line 818; error   : Feature '.tile::gather4' not supported on .target 'sm_120a'"]
)  # fmt: skip


@given(
    DEVICE_WORDS,
    st.sampled_from(
        ["", "(EngineCore_DP0 pid=31) ", "(Worker pid=6625) ERROR 04-15 07:27:42 [multiproc_executor.py:871] "]
    ),
)
def test_the_accelerator_failing_to_start_is_the_device(words: str, prefix: str) -> None:
    assert classify_text(prefix + words + "\n").failed_stage == "device"


@given(st.sampled_from(["RuntimeError: CUDA error: operation failed due to a previous error during capture",
                        "RuntimeError: Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor is pinned.",
                        "TimeoutError: Timed out waiting for engines to send initial message on input socket."]),
       st.sampled_from(["", "(VllmWorkerProcess pid=25756) ERROR 03-25 12:23:00 [multiproc_worker_utils.py:238] ", "(ApiServer_2 pid=39384) "]))  # fmt: skip
def test_graph_capture_and_the_engines_handshake_are_the_engine(words: str, prefix: str) -> None:
    assert classify_text(prefix + words + "\n").failed_stage == "engine"


@given(st.sampled_from(
    ["RuntimeError: Failed to map GGUF parameters (356):", "OSError: Found 0 files matching the pattern: `^tekken\\.json$`.",
     "AttributeError: Model Qwen2ForCausalLM does not support BitsAndBytes quantization yet.",
     "ValueError: Weight input_size_per_partition = 7392 is not divisible by min_thread_k = 128.",
     "ValueError: Unrecognized model in deepseek-ai/deepseek-vl2-tiny. Should have a `model_type` key in its config.json"]))  # fmt: skip
def test_model_files_that_do_not_fit_the_loader_are_the_weights(words: str) -> None:
    assert classify_text("(EngineCore pid=7) " + words + "\n").failed_stage == "weights"


def test_a_kv_connectors_helper_runs_per_request() -> None:
    path = "/opt/venv/lib/python3.12/site-packages/vllm/distributed/kv_transfer/kv_connector/utils.py"
    tb = f"Traceback (most recent call last):\n  File \"{path}\", line 442, in block_size_ratio_from_engine_id\n    x = y[z]\nKeyError: 'b6b7'\n"
    assert classify_text(tb).failed_stage == "runtime"
    init = tb.replace("block_size_ratio_from_engine_id", "__init__")
    assert classify_text(init).failed_stage == "engine"  # its construction is start-up


def test_real_stages() -> None:
    expected = {"2273.log": "runtime", "2396.log": "device", "2397.log": "device", "2399.log": "device",
                "2394.log": "device", "2335.log": "engine", "2345.log": "engine",
                "2306.log": "weights", "2309.log": "weights", "2318.log": "weights", "2320.log": "weights",
                "2323.log": "weights", "2325.log": "weights"}  # fmt: skip
    got = {name: _stage(name)[0] for name in expected}
    assert got == expected


def test_a_borrowed_traceback_after_the_root_is_not_its_entry() -> None:
    """2346: an engine's OOM line, then the CLI's traceback cut in asyncio: the OOM is not the process start."""
    assert _stage("2346.log")[0] == "engine"
    oom = (
        "ERROR 04-12 08:22:13 [engine.py:448] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB."
    )
    cli = '  File "/usr/lib/python3/dist-packages/vllm/entrypoints/cli/main.py", line 51, in main\n    args.dispatch_function(args)\n'
    assert classify_text(f"{oom}\nTraceback (most recent call last):\n{cli}").failed_stage != "container"

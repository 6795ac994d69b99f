"""Issue 13, twenty-third session: root forms and stage evidence met in fresh logs.

- A helper of vLLM's config objects (``vllm/config/``) or of its loader's modules (``model_executor/model_loader/``),
  placed by its file's folder alone, called from a later layer's own start-up work (the model runner laying out the
  KV cache's attention groups, the engine's warm-up checking its memory) failed in that later layer: the folder's
  frames name their stage only when nothing of a later layer called them. (Not the device's modules.)
- A launcher the command runs under that cannot execute it (``nohup: failed to run command 'vllm': No such file or
  directory``, coreutils' ``timeout``, ``env``, ``setsid``, ``taskset``, ``numactl``, ``sudo``, Slurm's ``execve()``)
  is the container's root: the server never started. So is the shell's ``bash: python3: command not found``: the
  interpreter's name starts a log line (under a paste's indentation) only with the interpreter's own messages
  (``/usr/bin/python3: Error while finding module specification …``), so ``bash: `` is no source's name there.
- A CUDA kernel's device-side assertion whose expression the source wrote over several lines is printed over
  several lines: its first line (``…/X.cu:N: kernel: block: […], thread: […] Assertion `…``) is the root though
  ``failed.`` comes on a later line.
- A server that logs another program's error as a quoted string with its line breaks escaped (glog's ``%q``:
  Triton's vLLM back-end, ``E1027 … model.py:502] "[vllm] Error generating stream: …\\n…\\nX: …"``) keeps the
  error's lines in one line: split at the escaped breaks, the exception among them is the root. Not an INFO
  line's quoted prompt, which may hold any text.
- A validation error that names a parallelism option (``data_parallel_rank``, ``expert_parallel_size``,
  ``data_parallel_address``) is the launch's configuration, as one naming ``tensor_parallel_size`` is.
- A tokenizer's vocabulary file that cannot be fetched or read (openai_harmony's tiktoken file: ``invalid tiktoken
  vocab file: hash mismatch``, ``error downloading or loading vocab file``) is the model's files wherever it was
  loaded (the front end loads it as it starts: its frames are the API's).
- TorchScript's ``RuntimeError: The following operation failed in the TorchScript interpreter.`` wraps the exception
  raised in the scripted module, printed after its own tracebacks: that one is the root, and the Python frames
  above the wrapper (which called the module) are its stage's evidence.
- torch's NCCL watchdog line (``[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(…)``) is the root
  when it comes before the ``terminate called … what(): … Watchdog caught …`` abort it causes, even where no
  sentinel brought it to be read (a crash's look-back finds it); a tqdm bar glued to the next line is split after
  its times whatever that line starts with (torch's ``[rank0]:``).
- A workload manager's cancel line before a server that then got ready (an interleaving of the job's output)
  did not kill its start-up: it is no root when the server failed later.

Each on generated logs and on a real log of the tuned part; each fails without its change (the guards,
which say what a rule must leave alone, pass either way).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import tuned_text
from tests.support.tracebacks import traceback_text

_V = "/usr/local/lib/python3.12/dist-packages/vllm"
_WORDS = st.lists(st.from_regex(r"[a-z]{2,10}", fullmatch=True), min_size=1, max_size=6).map(" ".join)
_PREFIX = st.sampled_from(["", "(EngineCore_DP0 pid=749) ERROR 01-07 00:15:34 [core.py:879] ", "[rank0]: "])


_HELPERS = {
    # a helper of the config's modules laying out the KV cache's attention groups: the engine's start-up
    "config-helper-under-the-engine": (
        [
            ("v1/engine/core.py", "_initialize_kv_caches"),
            ("v1/worker/gpu_model_runner.py", "initialize_kv_cache"),
            ("v1/worker/gpu_model_runner.py", "get_attn_backends_for_group"),
            ("config/vllm.py", "get_layers_from_vllm_config"),
        ],
        "KeyError: 'model.layers.30.{}'",
        "engine",
    ),
    # a helper of the loader's modules checking memory in the engine's warm-up: the engine's start-up
    "loader-helper-under-the-warm-up": (
        [
            ("v1/executor/multiproc_executor.py", "worker_busy_loop"),
            ("v1/worker/gpu_worker.py", "compile_or_warm_up_model"),
            ("model_executor/model_loader/tiered.py", "validate_reserve"),
        ],
        "RuntimeError: {}",
        "engine",
    ),
    # guards: the config's own validation under the launch, the loader's own work, a device module under the engine
    "config-under-the-launch": (
        [
            ("entrypoints/cli/serve.py", "cmd"),
            ("engine/arg_utils.py", "create_engine_config"),
            ("config/model.py", "__post_init__"),
        ],
        "ValueError: {}",
        "config",
    ),
    "loader-under-load-model": (
        [
            ("v1/worker/gpu_model_runner.py", "load_model"),
            ("model_executor/model_loader/default_loader.py", "load_weights"),
            ("model_executor/model_loader/weight_utils.py", "safetensors_weights_iterator"),
        ],
        "RuntimeError: {}",
        "weights",
    ),
    "device-module-under-the-warm-up": (
        [("v1/worker/gpu_worker.py", "compile_or_warm_up_model"), ("platforms/cuda.py", "check")],
        "RuntimeError: {}",
        "device",
    ),
}


@pytest.mark.parametrize("case", sorted(_HELPERS))
@given(prefix=_PREFIX, words=_WORDS)
def test_a_helper_placed_by_its_folder_yields_to_a_later_layers_work(case: str, prefix: str, words: str) -> None:
    frames, last, stage = _HELPERS[case]
    res = classify_text(
        traceback_text([(f"{_V}/{path}", func) for path, func in frames], last.format(words), prefix=prefix)
    )
    assert res.failed_stage == stage, res.evidence


def test_a_config_helper_called_by_the_engines_start_up_on_a_real_log() -> None:
    """DeepSeek-V3.2's indexer cache missing from the forward context while the KV cache's groups were laid out."""
    res = classify_text(tuned_text("vllm-issues", "6600.log"))
    assert res.failed_stage == "engine", res.evidence
    assert res.first_exception is not None and "KeyError: 'model.layers.30" in res.first_exception.line


@given(
    kernel=st.from_regex(r"[a-z][a-z_]{3,24}_kernel", fullmatch=True),
    block=st.tuples(*[st.integers(0, 999)] * 3),
    thread=st.tuples(*[st.integers(0, 999)] * 3),
    expr=_WORDS,
)
def test_a_device_assertion_written_over_two_lines_is_the_root(kernel: str, block, thread, expr: str) -> None:  # noqa: ANN001
    head = (
        f"/pytorch/aten/src/ATen/native/cuda/IndexKernelUtils.cu:16: {kernel}: block: [{','.join(map(str, block))}], "
        f"thread: [{','.join(map(str, thread))}] Assertion `{expr} >=0"
    )
    res = classify_text(f'{head}\n && {expr} < dim && "index out of bounds"` failed.\n')
    assert res.first_exception is not None and res.first_exception.line == head, res.first_exception


def test_a_device_assertion_written_over_two_lines_on_a_real_log() -> None:
    """vectorized_gather_kernel's assertion under ``vllm bench serve`` on a B200: the server was serving."""
    res = classify_text(tuned_text("vllm-issues", "6664.log"))
    assert res.first_exception is not None and "vectorized_gather_kernel: block:" in res.first_exception.line
    assert res.failed_stage == "runtime", res.evidence


_GLOG = st.sampled_from(
    [
        'E1027 15:54:53.431777 1342 model.py:502] "[vllm] Error generating stream: ',
        "ERROR 12-07 01:02:03 [serving.py:88] Error in request: '",
        '2026-12-07T01:02:03.1Z stderr F ERROR 12-07 01:02:03 [core.py:1] task failed: "',
        'F1027 15:54:53.431777 1342 model.py:502] "[vllm] fatal: ',
    ]
)
_TYPE = st.sampled_from(["ray.exceptions.RaySystemError", "RuntimeError", "ValueError", "torch.OutOfMemoryError"])


@given(head=_GLOG, typ=_TYPE, words=_WORDS, colour=st.sampled_from(["", "\\u001B[36m", "\\x1b[31m"]))
def test_an_error_lines_escaped_lines_are_read_as_lines(head: str, typ: str, words: str, colour: str) -> None:
    line = (
        f"{head}{colour}ray::RayWorkerWrapper.execute_method(){colour} (pid=1)\\n  At least one input could not be"
        f" computed:\\n{typ}: System error: {words}{head[-1]}"
    )
    res = classify_text(line + "\n")
    assert res.first_exception is not None and res.first_exception.line == f"{typ}: System error: {words}"


@given(typ=_TYPE, words=_WORDS)
def test_guard_an_info_lines_quoted_prompt_is_no_root(typ: str, words: str) -> None:
    """A request's prompt logged at INFO holds any text, a traceback pasted by the user too: no failure."""
    prompt = f'Why does this fail?\\nTraceback (most recent call last):\\n  File \\"x.py\\", line 1\\n{typ}: {words}'
    text = (
        "INFO 12-07 01:02:03 [api_server.py:1] Application startup complete.\n"
        f"INFO 12-07 01:02:04 [logger.py:43] Received request chatcmpl-1: prompt: '{prompt}', params: None\n"
    )
    res = classify_text(text)
    assert res.first_exception is None, res.first_exception


def test_an_error_lines_escaped_lines_on_a_real_log() -> None:
    """Triton's vLLM back-end (glog) quoting a Ray worker's error with its breaks and colour codes escaped."""
    res = classify_text(tuned_text("vllm-issues", "6631.log"))
    assert res.first_exception is not None
    assert res.first_exception.line == "ray.exceptions.RaySystemError: System error: No module named 'utils'"


@given(
    option=st.sampled_from(
        ["data_parallel_rank", "data_parallel_size_local", "expert_parallel_size", "data_parallel_address"]
    ),
    words=_WORDS,
)
def test_a_validation_error_naming_a_parallelism_option_is_the_config(option: str, words: str) -> None:
    res = classify_text(f"ValueError: {option} is not applicable {words}\n")
    assert res.failed_stage == "config", res.evidence


def test_a_validation_error_naming_a_parallelism_option_on_a_real_log() -> None:
    res = classify_text(tuned_text("vllm-issues", "6606.log"))
    assert res.failed_stage == "config", res.evidence


@given(at=st.floats(0, 0.5))
def test_a_cancel_line_before_a_server_that_got_ready_is_no_root(at: float) -> None:
    """The job's cancel line interleaved early in the output of a server that then got ready and died serving."""
    lines = tuned_text("vllm-cpu-faults", "log-configure-off-kill9-engine-inflight.log").splitlines()
    ref = classify_text("\n".join(lines) + "\n")
    pos = max(1, round(at * len(lines)))
    cancel = "slurmstepd: error: *** STEP 1 ON n1 CANCELLED AT 2026-12-01T03:12:44 ***"
    res = classify_text("\n".join([*lines[:pos], cancel, *lines[pos:]]) + "\n")
    assert ref.first_exception is not None and res.first_exception is not None
    assert res.first_exception.line == ref.first_exception.line
    assert res.failed_stage == ref.failed_stage == "runtime"


def test_guard_a_cancel_line_in_a_start_up_that_never_got_ready_is_the_root() -> None:
    text = (
        "INFO 12-07 01:02:03 [api_server.py:1] vLLM API server version 0.32.0\n"
        "INFO 12-07 01:02:09 [gpu_model_runner.py:1] Starting to load model moonshotai/Kimi-K3...\n"
        "slurmstepd: error: *** JOB 7 ON n1 CANCELLED AT 2026-12-07T01:03:00 DUE TO TIME LIMIT ***\n"
    )
    res = classify_text(text)
    assert res.first_exception is not None and "CANCELLED" in res.first_exception.line
    assert res.failed_stage == "weights", res.evidence


@given(n=st.integers(-5, 2**63), prefix=_PREFIX)
def test_a_prompts_token_id_out_of_vocabulary_is_a_refused_request(n: int, prefix: str) -> None:
    """vLLM's input processor refusing one request whose prompt ids the vocabulary does not have (a 400)."""
    frames = [
        (f"{_V}/v1/engine/async_llm.py", "add_request"),
        (f"{_V}/v1/engine/processor.py", "_validate_model_inputs"),
    ]
    res = classify_text(
        "INFO 12-07 01:02:03 [api_server.py:1] Application startup complete.\n"
        + traceback_text(frames, f"ValueError: Token id {n} is out of vocabulary", prefix=prefix)
    )
    assert res.first_exception is None and res.failed_stage == "none", res.first_exception


def test_a_prompts_token_id_out_of_vocabulary_on_a_real_log() -> None:
    res = classify_text(tuned_text("vllm-issues", "6669.log"))
    assert res.first_exception is None and res.failed_stage == "none", res.first_exception


@given(
    prefix=st.sampled_from(
        ["(Worker pid=5077) ERROR 12-06 20:25:00 [multiproc_executor.py:1063] ", "ERROR 12-06 20:25:00 [core.py:1] "]
    ),
    indent=st.sampled_from(["    ", ""]),
    typ=_TYPE,
    words=_WORDS,
)
def test_guard_a_tracebacks_code_with_escaped_breaks_is_no_line_of_its_own(
    prefix: str, indent: str, typ: str, words: str
) -> None:
    """The code Python prints under a frame (``raise RuntimeError("…\\nX: …")``) is the source, not the message."""
    text = "\n".join(
        [
            f"{prefix}Traceback (most recent call last):",
            f'{prefix}  File "/x/vllm/v1/worker/gpu_worker.py", line 3, in compile_or_warm_up_model',
            f'{prefix}{indent}raise RuntimeError("backend raised:\\n{typ}: {words}\\n\\nOutput:\\nfatal error")',
            f"{prefix}RuntimeError: backend raised:",
            f"{prefix}{typ}: {words}",
        ]
    )
    res = classify_text(text + "\n")
    assert res.first_exception is not None and res.first_exception.line_number == 4, res.first_exception


def test_a_loader_helper_called_by_the_engines_warm_up_on_a_real_log() -> None:
    """A fork's memory-reserve check after graph capture, written in its loader's module (GLM on JUPITER's GH200s)."""
    res = classify_text(tuned_text("vllm-repo-logs", "7037.log"))
    assert res.failed_stage == "engine", res.evidence


_LAUNCHER = st.sampled_from(
    [
        "nohup: failed to run command '{c}'",
        "timeout: failed to run command ‘{c}’",
        "env: '{c}'",
        "setsid: failed to execute {c}",
        "taskset: failed to execute {c}",
        "numactl: execution of `{c}'",
        "sudo: {c}",
        "slurmstepd: error: execve(): {c}",
    ]
)


@given(launcher=_LAUNCHER, cmd=st.sampled_from(["vllm", "/opt/venv/bin/vllm", "python3", "./serve.sh"]))
def test_a_launcher_that_cannot_execute_the_command_is_the_containers_root(launcher: str, cmd: str) -> None:
    reason = "command not found" if launcher.startswith("sudo") else "No such file or directory"
    line = f"{launcher.format(c=cmd)}: {reason}"
    res = classify_text(line + "\n")
    assert res.first_exception is not None and res.first_exception.line == line
    assert res.failed_stage == "container", res.evidence


def test_a_launcher_that_cannot_execute_the_command_on_a_real_log() -> None:
    res = classify_text(tuned_text("vllm-repo-logs", "7024.log"))
    assert res.failed_stage == "container" and res.first_exception is not None


@given(
    prefix=_PREFIX,
    said=st.sampled_from(
        [
            "invalid tiktoken vocab file: hash mismatch: computed=e3b0c442",
            "error downloading or loading vocab file: failed to download",
        ]
    ),
)
def test_a_vocab_file_that_cannot_be_read_is_the_weights_wherever_it_was_loaded(prefix: str, said: str) -> None:
    frames = [
        (f"{_V}/entrypoints/openai/api_server.py", "init_app_state"),
        (f"{_V}/entrypoints/openai/parser/harmony_utils.py", "get_encoding"),
        ("/usr/local/lib/python3.12/dist-packages/openai_harmony/__init__.py", "load_harmony_encoding"),
    ]
    res = classify_text(traceback_text(frames, f"openai_harmony.HarmonyError: {said}", prefix=prefix))
    assert res.failed_stage == "weights", res.evidence


def test_a_vocab_file_that_cannot_be_read_on_a_real_log() -> None:
    res = classify_text(tuned_text("vllm-repo-logs", "7091.log"))
    assert res.failed_stage == "weights", res.evidence


_TS_TAIL = [
    "Traceback of TorchScript, serialized code (most recent call last):",
    '  File "code/__torch__/neuronx_distributed/trace/spmd.py", line 17, in forward',
    "    return (nxd_model).forward(_0, )",
    "            ~~~~~~~~~~~~~~~~~~ <--- HERE",
    "",
    "Traceback of TorchScript, original code (most recent call last):",
    '  File "/opt/conda/lib/python3.12/site-packages/neuronx_distributed/trace/spmd.py", line 32, in forward',
    "            output = self.models[bucket_idx].forward(inputs)",
    "                     ~~~~~~~~~~~~~~~~~~~~~~~ <--- HERE",
]


@given(prefix=_PREFIX, words=_WORDS)
def test_torchscripts_wrapper_gives_way_to_what_was_raised_in_the_module(prefix: str, words: str) -> None:
    frames = [
        (f"{_V}/v1/engine/core.py", "run_busy_loop"),
        (f"{_V}/v1/worker/model_runner.py", "execute_model"),
        ("/opt/conda/lib/python3.12/site-packages/torch/nn/modules/module.py", "_call_impl"),
    ]
    head = traceback_text(
        frames, "RuntimeError: The following operation failed in the TorchScript interpreter.", prefix=prefix
    )
    inner = f"RuntimeError: Failed to execute the model {words}"
    res = classify_text(head + "\n".join(f"{prefix}{x}" for x in [*_TS_TAIL, inner]) + "\n")
    assert res.first_exception is not None and res.first_exception.line.endswith(inner), res.first_exception
    assert res.failed_stage == "runtime", res.evidence


def test_torchscripts_wrapper_on_real_logs() -> None:
    """A Neuron (Inferentia) model's out-of-bounds access raised inside its traced module, while serving."""
    for folder, name in (("vllm-issues", "4569.log"), ("vllm-repo-logs", "7095.log")):
        res = classify_text(tuned_text(folder, name))
        assert res.first_exception is not None and "Execution Out-Of-Bounds" in res.first_exception.line, name
        assert res.failed_stage == "runtime", (name, res.evidence)


_WATCHDOG = (
    "[rank{r}]:[E405 03:51:41.285624929 ProcessGroupNCCL.cpp:688] [Rank {r}] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=404, OpType=_ALLGATHER_BASE, Timeout(ms)=600000) ran for 600053 milliseconds"
)


@given(rank=st.integers(0, 7), bar=st.booleans(), noise=st.integers(0, 400))
def test_the_nccl_watchdogs_line_before_its_abort_is_the_root(rank: int, bar: bool, noise: int) -> None:
    head = ["INFO 04-05 03:41:00 [gpu_model_runner.py:1] Graph capturing finished in 3 secs"]
    flood = [f"step {k}: loss 0.{k:04d}" for k in range(noise)]
    line = _WATCHDOG.format(r=rank)
    said = f"  0%|          | 1/200 [00:03<12:08,  3.66s/it]{line}" if bar else line
    tail = [
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  [PG ID 3 PG GUID 4 Rank {rank}] Process group watchdog thread terminated with exception: {line}",
    ]
    res = classify_text("\n".join([*head, *flood, said, *tail]) + "\n")
    assert res.first_exception is not None and res.first_exception.line == line, res.first_exception


def test_the_nccl_watchdogs_line_on_a_real_log() -> None:
    """A TRL GRPO run with vLLM inside on two H100s: a collective hung for 600 s after the first training step."""
    res = classify_text(tuned_text("vllm-repo-logs", "7150.log"))
    assert (
        res.first_exception is not None and "Watchdog caught collective operation timeout" in res.first_exception.line
    )
    assert res.failed_stage == "runtime", res.evidence

"""Issue 13, seventh session: forms and words of 77 fresh excerpts, each a general form.

Each reading is tested on generated lines (classes of input) and on the real excerpt of the
tuned part that showed it (``tests/data/corpus/vllm-issues``):

- prefixes: the API server relaying its engine's line (two process prefixes), a deployment
  console's ``[vllm]: ``, colour codes whose ESC a copy dropped, Ray's own C++ log lines, a Ray
  worker's torch rank after its process, a flattened paste whose prefixes carry a folder;
- roots: pydantic's ``Value error, …`` pasted without its header; a native crash on line 1 of an
  excerpt that goes on (not "died before printing anything");
- stage words and frames: the weights' per-parameter loaders, transformers refusing the model's
  configuration (config), kernels missing for the GPU's architecture (device), a rendezvous
  nobody joined (engine).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from k3tui.classify.layers import Evidence, decide
from k3tui.classify.lines import parse, unflatten
from k3tui.classify.rules import load_rules
from tests.support.corpus import issue_text

RULES = load_rules()
PROCS = st.sampled_from(["EngineCore_DP0", "Worker_TP3", "VllmWorkerProcess", "EngineCore"])
LEVELS = st.sampled_from(["ERROR", "WARNING", "INFO"])


def _root(name: str) -> str:
    res = classify_text(issue_text(name))
    assert res.first_exception is not None, name
    return res.first_exception.line


# --- prefixes ---------------------------------------------------------------------------------


@given(PROCS, LEVELS, st.integers(1, 99999))
def test_the_api_servers_relay_of_an_engine_line_is_the_engines(proc: str, level: str, pid: int) -> None:
    ln = parse(f"(APIServer pid=716) ({proc} pid={pid}) {level} 01-29 10:27:47 [core.py:710] TimeoutError")
    assert (ln.process, ln.level, ln.body) == (f"{proc} pid={pid}", level, "TimeoutError")


def test_the_real_relayed_traceback_has_its_root() -> None:
    assert _root("1225.log").endswith("[core.py:710] TimeoutError")
    assert classify_text(issue_text("1225.log")).failed_stage == "runtime"


@given(st.sampled_from(["vllm", "inference-server", "app.1"]), PROCS, LEVELS)
def test_a_consoles_container_name_is_a_wrapper(name: str, proc: str, level: str) -> None:
    ln = parse(f"[{name}]: ({proc} pid=91) {level} 07-28 23:29:37 multiproc_worker_utils.py:226] boom")
    assert (ln.process, ln.level, ln.body, ln.key[0]) == (f"{proc} pid=91", level, "boom", name)


def test_a_bracketed_word_in_a_message_is_not_a_console() -> None:
    assert parse("[note]: the engine failed").body == "[note]: the engine failed"
    assert parse("[rank0]: Traceback (most recent call last):").process == "rank0"


def test_the_real_console_paste_has_its_root() -> None:
    assert "RuntimeError: NCCL error: unhandled system error" in _root("1133.log")


@given(st.lists(st.sampled_from(["1;36", "0;0", "33", "0", "1;31"]), min_size=1, max_size=3), PROCS)
def test_colour_codes_that_lost_their_esc_are_taken_off(codes: list[str], proc: str) -> None:
    lead = "".join(f"[{c}m" for c in codes)
    ln = parse(f"{lead}({proc} pid=149)[0;0m ERROR 12-08 22:23:04 [core.py:842] ValueError: x")
    assert (ln.process, ln.level, ln.body) == (f"{proc} pid=149", "ERROR", "ValueError: x")


def test_the_real_paste_without_escs_has_its_root_and_stage() -> None:
    assert "HIP error: invalid device function" in _root("1269.log")
    assert classify_text(issue_text("1269.log")).failed_stage == "device"


@given(st.sampled_from("IWEF"), st.integers(0, 99999))
def test_rays_own_cpp_log_lines_have_a_level(g: str, pid: int) -> None:
    ln = parse(f"[2025-06-13 01:49:41,730 {g} {pid} {pid}] gcs_rpc_client.h:179: Failed to connect to GCS")
    assert ln.level == {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}[g]
    assert ln.body == "Failed to connect to GCS" and ln.time == "06-13 01:49:41"


def test_a_ray_workers_torch_rank_is_under_its_process() -> None:
    ln = parse(
        "(RayWorkerWrapper pid=933, ip=50.147.43.24) [rank1]:[E528 08:52:46.164295950 ProcessGroupGloo.cpp:145]"
        " Gloo connectFullMesh failed"
    )
    assert (ln.process, ln.level, ln.body) == ("RayWorkerWrapper pid=933", "ERROR", "Gloo connectFullMesh failed")


def test_a_flattened_paste_whose_prefixes_name_a_folder_is_split() -> None:
    """1128: ``ERROR 11-04 18:02:56 [v1/executor/multiproc_executor.py:597]`` on every joined line."""
    assert classify_text(issue_text("1128.log")).failed_stage == "engine"


# --- roots ------------------------------------------------------------------------------------


@given(st.sampled_from(["torch.bfloat16 is not supported for quantization method awq.", "max_model_len must be > 0"]))
def test_a_pydantic_field_error_pasted_alone_is_a_config_root(msg: str) -> None:
    line = f"Value error, {msg} [type=value_error, input_value=ArgsKwargs((), {{}}), input_type=ArgsKwargs]"
    res = classify_text("vllm serve m --dtype bfloat16\n" + line + "\n")
    assert res.first_exception is not None and res.first_exception.line == line
    assert res.failed_stage == "config"


def test_the_real_pasted_field_errors_are_config() -> None:
    assert _root("1175.log").startswith("Value error, torch.bfloat16 is not supported")
    assert classify_text(issue_text("1175.log")).failed_stage == "config"


@given(st.integers(2, 25))
def test_a_crash_on_line_1_of_a_log_that_goes_on_is_not_the_process_start(after: int) -> None:
    crash = "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:455 'invalid argument'\n"
    rest = "(EngineCore pid=9) ERROR 07-19 14:32:42 [multiproc_executor.py:284] Worker proc VllmWorker-1 died unexpectedly\n"
    res = classify_text(crash + "\n" * (after - 2) + rest)
    assert res.failed_stage != "container"


def test_the_process_start_is_kept_for_a_crash_with_nothing_after_it() -> None:
    for log in (
        "free(): double free detected in tcache 2\n",
        "terminate called after throwing an instance of 'x'\n  what():  bad\n",
    ):
        assert classify_text(log).failed_stage == "container"
    assert decide(RULES, Evidence("Segmentation fault", 1, native=True, followed=True)).rule != "markers"


def test_the_real_excerpt_starting_with_a_crash_is_the_engine() -> None:
    assert classify_text(issue_text("1129.log")).failed_stage == "engine"


# --- stage words and frames -------------------------------------------------------------------


@given(st.sampled_from(["weight_loader", "create_weights", "process_weights_after_loading", "qkv_weight_loader"]))
def test_a_parameters_loader_frame_is_the_weights(func: str) -> None:
    stack = [f'  File "/x/vllm/model_executor/layers/linear.py", line 1, in {func}', "AssertionError"]
    assert decide(RULES, Evidence("AssertionError", 9, stack=stack)).stage == "weights"


@given(
    st.sampled_from(
        [("models/auto/configuration_auto.py", "__getitem__"), ("dynamic_module_utils.py", "resolve_trust_remote_code")]
    )
)
def test_transformers_refusing_the_models_configuration_is_the_config(frame: tuple[str, str]) -> None:
    path, func = frame
    stack = [
        '  File "/x/vllm/transformers_utils/config.py", line 1, in get_config',
        f'  File "/x/transformers/{path}", line 1, in {func}',
    ]
    assert decide(RULES, Evidence("KeyError: 'qwen2_5_omni'", 9, stack=stack)).stage == "config"


def test_the_real_refused_configurations_and_loaders() -> None:
    want = {"1166.log": "weights", "1172.log": "weights", "1169.log": "config", "1173.log": "config",
            "1167.log": "weights", "445.log": "config"}  # fmt: skip
    for name, stage in want.items():
        assert classify_text(issue_text(name)).failed_stage == stage, name


@given(
    st.sampled_from(
        [("HIP error: invalid device function", "device"), ("CUDA error: invalid device function", "device"),
         ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.", "device"),
         ("Tried to load weights of size torch.Size([3, 1])to a parameter of size torch.Size([5, 1])", "weights"),
         ("Loading m/ requires you to execute the configuration file in that repo on your local machine.", "config"),
         ("Timed out after 601 seconds waiting for clients. 1/8 clients joined.", "engine"),
         ("Failed to connect to GCS at address 10.0.0.1:6379 within 5 seconds.", "engine")]
    )
)  # fmt: skip
def test_words_that_name_one_layer(case: tuple[str, str]) -> None:
    text, stage = case
    assert decide(RULES, Evidence(f"RuntimeError: {text}", 3)).stage == stage


def test_the_real_kernel_and_rendezvous_failures() -> None:
    want = {"1270.log": "device", "1271.log": "device", "1132.log": "engine"}
    for name, stage in want.items():
        assert classify_text(issue_text(name)).failed_stage == stage, name


# --- a warning that reports a failure logged next ---------------------------------------------


@given(
    st.sampled_from(["cannot pickle 'flashinfer._prefill.Wrapper' object", "CUDA error: unspecified launch failure"])
)
def test_the_failed_executions_dump_warning_gives_way_to_the_failure_logged_next(why: str) -> None:
    """1218: V0 dumps the inputs of a failed execution at WARNING, then the engine logs the failure
    itself at ERROR with its traceback: that one is the root. (Alone, the warning still is: 155.)"""
    log = (
        f"WARNING 12-25 15:08:47 model_runner_base.py:143] Failed to pickle inputs of failed execution: {why}\n"
        "ERROR 12-25 15:08:47 engine.py:135] IndexError('Error in model execution: tuple index out of range')\n"
        "ERROR 12-25 15:08:47 engine.py:135] Traceback (most recent call last):\n"
        'ERROR 12-25 15:08:47 engine.py:135]   File "/x/vllm/worker/model_runner.py", line 1729, in execute_model\n'
        "ERROR 12-25 15:08:47 engine.py:135]     logits = self.model.compute_logits(h)\n"
        "ERROR 12-25 15:08:47 engine.py:135] IndexError: tuple index out of range\n"
    )
    fe = classify_text(log).first_exception
    assert fe is not None and "Failed to pickle" not in fe.line
    assert "Error in model execution" in fe.line + (fe.context or "")  # the repr, or its context (1165)
    alone = classify_text(log.split("\n", 1)[0] + "\n")
    assert alone.first_exception is not None and "Failed to pickle inputs" in alone.first_exception.line


def test_the_real_dump_warning_before_the_engines_own_error() -> None:
    assert "IndexError('Error in model execution: tuple index out of range')" in _root("1218.log")
    assert "Failed to pickle inputs of failed execution: CUDA error" in _root("155.log")


@given(
    st.sampled_from(["RuntimeError", "torch.OutOfMemoryError", "IndexError"]),
    st.sampled_from(["ValueError", "KeyError"]),
)
def test_the_model_runners_rewrap_gives_way_to_the_exception_it_wraps(outer: str, inner: str) -> None:
    """1165: V0's MQ engine logs ``X('Error in model execution: …')`` and then the traceback, whose
    first exception is what failed; that one is the root, the repr its context."""
    p = "ERROR 10-11 16:03:09 engine.py:157] "
    log = (
        f"{p}{outer}('Error in model execution: Loading lora /m failed')\n"
        f"{p}Traceback (most recent call last):\n"
        f'{p}  File "/x/vllm/lora/utils.py", line 113, in parse_fine_tuned_lora_name\n'
        f'{p}    raise {inner}(f"{{name}} is unsupported LoRA weight")\n'
        f"{p}{inner}: lm_head.weight is unsupported LoRA weight\n"
    )
    res = classify_text(log)
    fe = res.first_exception
    assert fe is not None and fe.line.endswith(f"{inner}: lm_head.weight is unsupported LoRA weight")
    assert fe.context is not None and "Error in model execution" in fe.context


def test_the_real_rewrapped_lora_failure() -> None:
    assert _root("1165.log").endswith("ValueError: base_model.model.lm_head.weight is unsupported LoRA weight")


@given(
    st.sampled_from(
        ["/bin/sh: 1: vllm: Permission denied", "sh: 1: vllm: not found", "bash: line 1: vllm: command not found",
         "/bin/bash: /usr/local/bin/vllm: No such file or directory", "exec /usr/bin/python3: exec format error"]
    ),
    st.integers(0, 20),
)  # fmt: skip
def test_an_entrypoint_the_image_cannot_run_is_a_container_root(line: str, before: int) -> None:
    """1365: ``oc logs`` of a pod in CrashLoopBackOff; the shell cannot run vllm at all."""
    log = "".join(f"% oc get pod vllm-{i}\n" for i in range(before)) + line + "\n"
    res = classify_text(log)
    assert res.first_exception is not None and res.first_exception.line == line
    assert res.failed_stage == "container"


@given(
    st.sampled_from(
        ["ColumnParallelLinear", "MergedColumnParallelLinear", "VocabParallelEmbedding", "RowParallelLinear"]
    )
)
def test_a_layer_without_the_parameter_a_checkpoint_loads_is_the_weights(layer: str) -> None:
    """1360, 882: a quantized checkpoint's scheme looks for a parameter the layer never made."""
    assert (
        decide(RULES, Evidence(f"AttributeError: '{layer}' object has no attribute 'input_scale'", 4)).stage
        == "weights"
    )


def test_the_real_entrypoint_and_layer_failures() -> None:
    want = {"1365.log": "container", "1360.log": "weights", "882.log": "weights"}
    for name, stage in want.items():
        assert classify_text(issue_text(name)).failed_stage == stage, name


@given(st.sampled_from(["DeepGEMM backend is not available", "DeepGEMM backend is not available or outdated. Please install",
                        "FlashInfer is not installed", "xformers is not installed"]))  # fmt: skip
def test_a_kernel_package_the_image_lacks_is_the_container(msg: str) -> None:
    """564, 1461: raised in the engine's warm-up, but what is wrong is the image (a package missing)."""
    stack = [
        '  File "/x/vllm/model_executor/warmup/kernel_warmup.py", line 1, in kernel_warmup',
        f"RuntimeError: {msg}",
    ]
    assert decide(RULES, Evidence(f"RuntimeError: {msg}", 9, stack=stack)).stage == "container"


def test_the_real_missing_kernel_packages() -> None:
    for name in ("564.log", "1461.log"):
        assert classify_text(issue_text(name)).failed_stage == "container", name


# --- a cancellation that a timeout was chained to ---------------------------------------------

_ENGINE_STEP = (
    "Traceback (most recent call last):\n"
    '  File "/x/vllm/engine/async_llm_engine.py", line 506, in engine_step\n'
    "    request_outputs = await self.engine.step_async()\n"
    '  File "/x/vllm/executor/multiproc_gpu_executor.py", line 149, in _driver_execute_model_async\n'
    "    return await self.driver_exec_model(execute_model_req)\n"
    "asyncio.exceptions.CancelledError\n"
)
_WAIT_FOR = (
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.10/asyncio/tasks.py", line 456, in wait_for\n'
    "    return fut.result()\n"
    "asyncio.exceptions.CancelledError\n"
)
_TIMEOUT = (
    "Traceback (most recent call last):\n"
    '  File "/x/vllm/engine/async_llm_engine.py", line 532, in run_engine_loop\n'
    "    has_requests_in_progress = await asyncio.wait_for(\n"
    "asyncio.exceptions.TimeoutError\n"
)


@given(st.booleans())
def test_a_cancellation_chained_into_a_timeout_is_the_root(handled_first: bool) -> None:
    """1310, 1312: V0's engine step never returned; asyncio cancelled it and Python chained the
    timeout to the cancellation ('direct cause'). The (first) cancellation is the root, its frames
    (the engine step) the stage; the timeout it caused is not a stop's noise."""
    head = (
        _ENGINE_STEP + "\nDuring handling of the above exception, another exception occurred:\n\n"
        if handled_first
        else ""
    )
    log = head + _WAIT_FOR + "\nThe above exception was the direct cause of the following exception:\n\n" + _TIMEOUT
    res = classify_text(log)
    fe = res.first_exception
    assert fe is not None and "CancelledError" in fe.line + (fe.context or "")
    assert res.failed_stage == "runtime" if handled_first else res.failed_stage in ("runtime", "container")


def test_a_cancellation_alone_or_handled_is_still_a_consequence() -> None:
    """A stop cancels tasks too: without a timeout chained to it, a cancellation is never the root."""
    assert classify_text(_ENGINE_STEP).first_exception is None
    handled = _ENGINE_STEP + "\nDuring handling of the above exception, another exception occurred:\n\n" + _WAIT_FOR
    assert classify_text(handled).first_exception is None


def test_the_real_cancellations_chained_into_timeouts() -> None:
    for name in ("1310.log", "1312.log"):
        res = classify_text(issue_text(name))
        fe = res.first_exception
        assert fe is not None and "asyncio.exceptions.CancelledError" in fe.line + (fe.context or ""), name
        assert res.failed_stage == "runtime", name


# --- accelerators other than NVIDIA's ---------------------------------------------------------


@given(
    st.sampled_from(
        ["AssertionError: mla_gluon requires gfx950 (CDNA4), got gfx942", "ValueError: this kernel requires gfx942",
         "AmdSmiLibraryException: Error code: 14 | AMDSMI_STATUS_FILE_ERROR",
         "RuntimeError: Required aspect fp64 is not supported on the device"]
    )
)  # fmt: skip
def test_a_gpu_the_kernels_or_the_smi_cannot_use_is_the_device(line: str) -> None:
    """1412, 1425 (and 1431's words, whose line the stored copy cut before 'device')."""
    assert decide(RULES, Evidence(line, 5)).stage == "device"


@given(st.sampled_from(["1.04G", "6.14G", "512.00M"]), st.booleans())
def test_xlas_resource_exhausted_is_an_out_of_memory(size: str, wrapped: bool) -> None:
    """1418, 1419: a TPU program that does not fit in HBM; XLA says RESOURCE_EXHAUSTED, with or
    without the RuntimeError torch_xla wraps it in."""
    core = f"RESOURCE_EXHAUSTED: Error loading program 'jit_f': Attempting to reserve {size} at the bottom of memory."
    line = f"RuntimeError: Bad StatusOr access: {core}" if wrapped else core
    res = classify_text(line + "\n")
    assert res.first_exception is not None and res.first_exception.line == line
    assert (res.failed_stage, res.oom_root_cause) == ("engine", True)


def test_an_applications_own_stamp_and_level_before_vllms_line_is_a_wrapper() -> None:
    """1411: Lemonade logs vLLM's output under its own stamp, level and source; it logs a
    traceback's lines as [Info], which is not vLLM's level."""
    ln = parse("2026-05-08 11:50:14.752 [Info] (Process) (EngineCore pid=3043) Traceback (most recent call last):")
    assert (ln.process, ln.body, ln.time) == (
        "EngineCore pid=3043",
        "Traceback (most recent call last):",
        "2026-05-08 11:50:14.752",
    )
    res = classify_text(issue_text("1411.log"))
    assert res.first_exception is not None and "HIP out of memory" in res.first_exception.line
    assert (res.failed_stage, res.oom_root_cause) == ("engine", True)


def test_the_real_amd_and_tpu_failures() -> None:
    want = {"1412.log": "device", "1425.log": "device", "1418.log": "engine", "1419.log": "engine"}
    for name, stage in want.items():
        assert classify_text(issue_text(name)).failed_stage == stage, name


# --- a tool re-logging vLLM's output; a vLLM line quoted inline --------------------------------


@given(LEVELS, st.integers(2, 60), st.booleans())
def test_a_rich_log_handlers_columns_are_a_wrapper(level: str, pad: int, stamped: bool) -> None:
    """1511: a tool logs vLLM's stderr through Python's rich handler: its level column is the tool's."""
    stamp = "[05/05/25 16:31:14]" if stamped else " " * 19
    line = f"{stamp} {level:<8} OSError: [Errno 48] Address already in use{' ' * pad}local_server.py:108"
    ln = parse(line)
    assert (ln.level, ln.body) == (None, "OSError: [Errno 48] Address already in use")


def test_the_real_rich_paste_is_the_api_bind() -> None:
    res = classify_text(issue_text("1511.log"))
    assert res.first_exception is not None and "OSError: [Errno 48] Address already in use" in res.first_exception.line
    assert res.failed_stage == "api"


def test_a_vllm_line_quoted_inline_in_prose_makes_a_vllm_log() -> None:
    """1519: the only vLLM line sits inside a sentence: a healthy 'none', not 'not a vLLM log'."""
    res = classify_text(issue_text("1519.log"))
    assert (res.failed_stage, res.first_exception) == ("none", None)
    assert classify_text("root:x:0:0:root:/root:/bin/bash\nINFO maybe\n").failed_stage == "unknown"


WORDS_IN_REAL_EXCERPTS = [
    # 1769: P2P between the two GPUs; 1773: Ray's GPUs per bundle (as 227/228 read Ray's GPU checks)
    ("device", ["RuntimeError: CUDA error: peer access is not supported between these two devices",
                "ValueError: Placement group bundle cannot have more than 1 GPU."], ["1769.log", "1773.log"]),
    # 1961: a kernel the installed build has not for this GPU generation
    ("device", ["NotImplementedError: Currently, block scaled fp8 gemm is not implemented for Blackwell"], ["1961.log"]),
    # 1660: the HF cache directory missing; 1663: a custom tokenizer class transformers does not have
    ("weights", ["Cache directory not found: /data/.cache/huggingface. Please use `cache_dir` argument or set `HF_HUB_CACHE` environment variable.",
                 "ValueError: Tokenizer class QWenTokenizer does not exist or is not currently imported.",
                 "RuntimeError: Failed to load the tokenizer. If the tokenizer is a custom tokenizer not yet available"], ["1660.log", "1663.log", "1867.log"]),
    # 1870: torch.compile's own exceptions (Dynamo could not trace the model's forward)
    ("engine", ["torch._dynamo.exc.Unsupported: TypeError <built-in function linear>: linear(): argument 'input' must be Tensor",
                "torch._dynamo.exc.TorchRuntimeError: Dynamo failed to run FX node"], ["1870.log", "1090.log"]),
    # 1868: transformers has no class for the architecture (an unsupported model)
    ("config", ["ValueError: Cannot find model module. 'MiniMaxM1ForCausalLM' is not a registered model in the Transformers library"], ["1868.log"]),
]  # fmt: skip


@pytest.mark.parametrize("stage,lines,logs", WORDS_IN_REAL_EXCERPTS, ids=[w[0] for w in WORDS_IN_REAL_EXCERPTS])
def test_words_that_name_a_layer_and_the_real_excerpts_they_came_from(
    stage: str, lines: list[str], logs: list[str]
) -> None:
    for line in lines:
        assert decide(RULES, Evidence(line, 5)).stage == stage, line
    for name in logs:
        assert classify_text(issue_text(name)).failed_stage == stage, name


# --- the image cannot run what it was asked to --------------------------------------------------


@given(
    st.sampled_from(
        ['docker: Error response from daemon: failed to create task: exec: "vllm-openai": executable file not found in $PATH: unknown.',
         "/usr/bin/python3: Error while finding module specification for 'vllm.entrypoints.openai.api_server' (ModuleNotFoundError: No module named 'vllm')",
         "A module that was compiled using NumPy 1.x cannot be run in",
         "bash: /opt/venv/bin/vllm: /opt/venv/bin/python3: bad interpreter: No such file or directory"]
    )
)  # fmt: skip
def test_an_image_that_cannot_start_vllm_is_a_container_root(line: str) -> None:
    """1614/1617 (the OCI runtime), 1611 (python -m without vllm), 1610 (NumPy 2), 1615 (a venv's
    interpreter missing): no Python exception of vLLM's, the process never ran."""
    res = classify_text(line + "\n")
    assert res.first_exception is not None and res.first_exception.line == line
    assert res.failed_stage == "container"


def test_the_real_images_that_cannot_start_vllm() -> None:
    for name in ("1610.log", "1611.log", "1614.log", "1617.log"):
        res = classify_text(issue_text(name))
        assert res.failed_stage == "container" and res.first_exception is not None, name


def test_two_prefixed_lines_glued_into_one_are_split() -> None:
    """1623: a caret line and the exception line after it, both with their prefix, on one line."""
    p = "ERROR 08-04 07:35:11 [core.py:515] "
    line = (
        f"{p}                   ^^^^^^^^^^ {p}OSError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.32' not found"
    )
    assert unflatten(line) == [
        f"{p}                   ^^^^^^^^^^",
        f"{p}OSError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.32' not found",
    ]
    assert (
        unflatten("ERROR 08-04 07:35:11 [core.py:515] an error that names ERROR 08-04 07:35:11 [core.py:515] twice")
        is not None
    )
    assert (
        unflatten(
            "a sentence that quotes ERROR 08-04 07:35:11 [core.py:515] once, and nothing more, over 120 characters long!"
        )
        is None
    )
    res = classify_text(issue_text("1623.log"))
    assert res.first_exception is not None and "GLIBC_2.32" in res.first_exception.line
    assert res.failed_stage == "container"


# --- the launch command refused -----------------------------------------------------------------


@given(
    st.sampled_from(
        ["ValueError: torch.bfloat16 is not supported for quantization method awq. Supported dtypes: [torch.float16]",
         "ValueError: Model GemmaForCausalLM does not support LoRA, but LoRA is enabled.",
         "ValueError: invalid literal for int() with base 10: 'tcp://10.43.1.39:8000'",
         "ValueError: VLLM_PORT 'tcp://169.169.193.120:6785' appears to be a URI."]
    )
)  # fmt: skip
def test_a_refused_launch_setting_is_the_config(line: str) -> None:
    """1565, 1581, 1578/1579/1580 (Kubernetes injects VLLM_PORT=tcp://… for a Service named vllm), 1571.
    A quantization the dtype does not fit is refused as a setting even when the loader's frames raise it."""
    stack = ['  File "/x/vllm/model_executor/model_loader/loader.py", line 1, in get_model', line]
    assert decide(RULES, Evidence(line, 9, stack=stack)).stage == "config"


@given(st.sampled_from(["`--model`", "--max-model-len option"]))
def test_a_validation_error_naming_a_command_line_option_is_the_config(option: str) -> None:
    """1571: no stack names a layer, the start-up markers say how far it got; the option says config."""
    line = f"ValueError: With `vllm serve`, you should provide the model as a positional argument instead of via the {option}"
    marks = [("container", 1), ("config", 2), ("device", 3)]
    assert decide(RULES, Evidence(line, 9, stage_idx=2, marks=marks)).stage == "config"


def test_the_real_refused_launch_settings() -> None:
    for name in ("1565.log", "1568.log", "1571.log", "1578.log", "1579.log", "1580.log", "1581.log"):
        assert classify_text(issue_text(name)).failed_stage == "config", name


def test_argparse_relaying_a_pydantic_error_reports_the_field_line() -> None:
    """1575: ``vllm serve: error: argument --compilation-config/-O: 1 validation error for
    CompilationConfig`` then the field's ``Input should be … [type=…]`` line: that one is the root."""
    res = classify_text(issue_text("1575.log"))
    fe = res.first_exception
    assert fe is not None and "Input should be an object [type=dataclass_type" in fe.line
    assert fe.context is not None and "validation error for CompilationConfig" in fe.context


def test_colour_codes_without_esc_inside_a_quote_are_taken_off() -> None:
    """1568: Ray's bare ``[36m`` after an inline-code backtick."""
    ln = parse(
        "`[36m(main_task pid=3523385) ValueError: max_num_batched_tokens (8192) is smaller than max_model_len (9216).`"
    )
    assert ln.process == "main_task pid=3523385" and ln.body.startswith("ValueError: max_num_batched_tokens")


# --- NCCL's own failure line when nothing else fails; a request's id ----------------------------


@given(st.sampled_from(["transport/nvls.cc:254 ", "misc/shmutils.cc:113 ", ""]), st.booleans())
def test_ncclS_lines_with_a_source_location_are_read(where: str, stamped: bool) -> None:
    """1131, 1426: newer NCCL and RCCL print ``file.cc:N`` before the level; a reporter's own
    ``[date time] `` may come first."""
    stamp = "[2025-07-21 19:05:29] " if stamped else ""
    ln = parse(f"{stamp}node004:27907:27907 [1] {where}NCCL WARN Cuda failure 401 'the operation cannot be performed'")
    assert (ln.level, ln.process, ln.body) == (
        "WARN",
        "NCCL pid=27907",
        "Cuda failure 401 'the operation cannot be performed'",
    )


def test_an_ncclS_failure_is_the_root_only_when_nothing_else_fails() -> None:
    warn = (
        "node004:27907:27907 [1] transport/nvls.cc:254 NCCL WARN Cuda failure 401 'the operation cannot be performed'\n"
    )
    res = classify_text(warn + "node004:27907:27907 [1] NCCL INFO transport/nvls.cc:409 -> 1\n")
    assert res.first_exception is not None and res.first_exception.line == warn.rstrip("\n")
    assert res.failed_stage == "engine"
    after = warn + "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n"
    assert classify_text(after).first_exception.line.startswith("RuntimeError: NCCL error")
    notice = "node004:27907:27907 [1] NCCL WARN NCCL_P2P_LEVEL set to NVL\n"
    assert classify_text(notice).first_exception is None
    for name in ("1131.log", "1426.log"):
        assert classify_text(issue_text(name)).failed_stage == "engine", name


@given(st.sampled_from(["chatcmpl-8a6f39cb01952274", "cmpl-7347d49f836c40a6b8d00fff45f5998d"]))
def test_a_root_naming_a_request_is_runtime(rid: str) -> None:
    """1722, 1723: the scheduler lost a request: requests exist only while serving."""
    assert decide(RULES, Evidence(f"KeyError: '{rid}'", 4)).stage == "runtime"


@given(st.sampled_from(["NCCL watchdog thread terminated with exception: CUDA error: unknown error",
                        "Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered"]))  # fmt: skip
def test_torchs_watchdog_dying_is_a_root_in_either_wording(msg: str) -> None:
    """1714: torch before 2.2 says 'NCCL watchdog thread', later 'Process group watchdog thread'."""
    line = f"(RayWorkerVllm pid=5304) [E ProcessGroupNCCL.cpp:916] [Rank 7] {msg}"
    res = classify_text(line + "\n")
    assert res.first_exception is not None and res.first_exception.line == line
    assert classify_text(issue_text("1714.log")).failed_stage == "runtime"


def test_a_tool_call_parsers_error_is_one_requests() -> None:
    """1873: the tool parser logs the exception and answers the request with the text as content:
    the server survives, a 'none' log with no root."""
    head = "(APIServer pid=85343) ERROR 10-09 09:39:54 [hermes_tool_parser.py:157] "
    log = (
        f"{head}Error in extracting tool call from response.\n{head}Traceback (most recent call last):\n"
        f'{head}  File "/x/vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py", line 120, in extract_tool_calls\n'
        f"{head}    raw = json.loads(m)\n{head}json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n"
        '(APIServer pid=85343) INFO:     10.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    )
    res = classify_text(log)
    assert (res.failed_stage, res.first_exception) == ("none", None)
    assert classify_text(issue_text("1873.log")).first_exception is None

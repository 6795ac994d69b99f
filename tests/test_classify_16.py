"""Issue 13, sixteenth session: forms and rules found in the tuned misses.

- An exception named bare in a reporter's sentence (``This causes a RuntimeError: dtype mismatch …``,
  ``per-state tuple -> AttributeError: …``): the root when the text names no other, as a quoted one is.
- Markdown's bold on a log line's prefix only (``**(VllmWorker TP0 pid=1)** ERROR …``).
- A shell comment or a markdown heading in front of a log's line (``# OSError: …`` in a repro script).
- transformers' ``Can't load <the model's file kind> for '…'`` and a message that says it failed while
  the weights were loaded: the weights'.
- zsh's and bash's report of a job a signal ended (``zsh: segmentation fault (core dumped)  python …``,
  ``[1]+  Killed    vllm serve …``): a native crash.

Each on generated excerpts and on real logs of the tuned part; each fails without its change (the
guards, which say what a rule must leave alone, pass either way).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import REPO_CORPUS, issue_text
from tests.support.tracebacks import traceback_text

EXCEPTIONS = st.sampled_from(
    [
        ("RuntimeError", "dtype mismatch during weight loading"),
        ("AttributeError", "'tuple' object has no attribute 'squeeze'"),
        ("ValueError", "Unknown multi-modal data type: attention_mask"),
        ("NotImplementedError", "Pipeline parallelism is only supported through AsyncLLMEngine"),
        ("KeyError", "'layers.0.mlp.experts.w13_weight'"),
    ]
)
LEADS = st.sampled_from(
    [
        "This causes a",
        "the engine died at startup with",
        "per-state tuple ->",
        "Loading the checkpoint fails with the following error:",
        "When sending the second request, I get",
    ]
)
PROSE = st.lists(st.sampled_from(["Steps to reproduce are below.", "It works on 0.8.5.", "", "Thanks!"]), max_size=3)


@given(before=PROSE, lead=LEADS, exc=EXCEPTIONS, end=st.sampled_from(["", ".", ". Reverting fixes it."]))
def test_an_exception_named_bare_in_a_sentence_is_the_root(before, lead, exc, end) -> None:  # noqa: ANN001
    text = "\n".join([*before, f"{lead} {exc[0]}: {exc[1]}{end}"]) + "\n"
    res = classify_text(text)
    fe = res.first_exception
    assert fe is not None and res.exception_type == exc[0], (text, res.evidence)
    assert exc[1] in fe.line and fe.line_number == len(before) + 1


@given(lead=LEADS, exc=EXCEPTIONS)
def test_the_logs_own_root_beats_an_exception_named_in_the_sentence_above_it(lead, exc) -> None:  # noqa: ANN001
    text = (
        f"{lead} {exc[0]}: {exc[1]}\n"
        "```\n"
        "(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700] EngineCore failed to start.\n"
        "(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700] Traceback (most recent call last):\n"
        '(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700]   File "/vllm/v1/engine/core.py", line 9, in run\n'
        "(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700] ZeroDivisionError: division by zero\n"
        "```\n"
    )
    res = classify_text(text)
    assert res.exception_type == "ZeroDivisionError", res.first_exception


@given(lead=LEADS, word=st.sampled_from(["Error", "TypeError", "error"]))
def test_a_sentence_that_names_no_exception_is_not_one(lead, word) -> None:  # noqa: ANN001
    """An error word without an exception's type, or a type at the start of a sentence's word ("Error:")."""
    res = classify_text(f"{lead} an {word.lower()}: the output is garbled\n")
    assert res.first_exception is None, res.first_exception


def test_real_exceptions_named_bare_in_prose() -> None:
    roots = {
        "3979.log": "RuntimeError: dtype mismatch during weight loading",  # a commit message's sentence
        "4012.log": "AttributeError: 'tuple' object has no attribute 'squeeze'",  # after an arrow
        "4023.log": "AttributeError: 'TransferTopology' object has no",  # "died at startup with …"
    }
    for name, root in roots.items():
        res = classify_text(issue_text(name))
        fe = res.first_exception
        assert fe is not None and root in fe.line, (name, fe)
    assert classify_text(issue_text("3979.log")).failed_stage == "weights"


PREFIXES = st.sampled_from(
    [
        "(VllmWorker TP0 pid=174579) ERROR 08-05 07:31:10 [multiproc_executor.py:559]",
        "(EngineCore_DP0 pid=86000) ERROR 12-05 22:43:45 [core.py:845]",
    ]
)


@given(prefix=PREFIXES, exc=EXCEPTIONS, indent=st.sampled_from(["", "  "]))
def test_a_prefix_set_in_bold_is_read_as_the_prefix(prefix, exc, indent) -> None:  # noqa: ANN001
    proc, rest = prefix.split(") ", 1)
    line = f"{indent}**{proc})** {rest} {exc[0]}: {exc[1]}"
    res = classify_text(f"```\n{line}\n```\n")
    fe = res.first_exception
    assert fe is not None and res.exception_type == exc[0] and fe.process == proc[1:], (line, fe)


@given(exc=EXCEPTIONS, mark=st.sampled_from(["# ", "#  ", "## ", "### "]))
def test_a_log_line_behind_a_comment_or_a_heading_is_read(exc, mark) -> None:  # noqa: ANN001
    text = f"```\nCUDA_VISIBLE_DEVICES=0 python repro.py\n{mark}{exc[0]}: {exc[1]}\n```\n"
    res = classify_text(text)
    assert res.exception_type == exc[0] and res.first_exception.line_number == 3, res.first_exception


@given(comment=st.sampled_from(["# the error is below", "# TODO: retry on error", "#0  0x00007f in abort ()"]))
def test_a_comment_that_is_no_log_line_stays_a_comment(comment) -> None:  # noqa: ANN001
    res = classify_text(f"{comment}\n")
    assert res.first_exception is None, res.first_exception


def test_real_bold_prefix_and_commented_root() -> None:
    res = classify_text(issue_text("1812.log"))  # **(VllmWorker TP0 pid=174579)** ERROR …
    assert res.first_exception is not None and "Sinks must be of type float32" in res.first_exception.line
    res = classify_text(issue_text("5788.log"))  # a repro script's comment quotes the OSError
    assert res.first_exception is not None and "Can't load feature extractor" in res.first_exception.line
    assert res.failed_stage == "weights", res.evidence


FILE_KINDS = st.sampled_from(
    ["tokenizer", "feature extractor", "image processor", "processor", "the configuration of", "config"]
)


@given(kind=FILE_KINDS, model=st.sampled_from(["Qwen/Qwen2-VL-7B", "/models/gemma-4-31b-8bit", "./ckpt"]))
def test_transformers_cannot_load_a_models_file_is_the_weights(kind, model) -> None:  # noqa: ANN001
    res = classify_text(f"OSError: Can't load {kind} {'' if kind.endswith('of') else 'for '}'{model}'.\n")
    assert res.failed_stage == "weights", res.evidence


WEIGHTS_MESSAGES = st.sampled_from(
    [
        *(f"RuntimeError: shape mismatch {p}" for p in ("during weight loading", "while loading the weights")),
        *(
            f"RuntimeError: shape mismatch {p}"
            for p in ("when loading the model's weights", "during checkpoint loading")
        ),
        *(f"AttributeError: 'Parameter' object has no attribute '{a}'" for a in ("weight_loader", "output_dim")),
    ]
)


@given(msg=WEIGHTS_MESSAGES)
def test_a_message_that_failed_loading_weights_or_a_parameter_without_its_loaders_attribute_is_the_weights(msg) -> None:  # noqa: ANN001
    res = classify_text(msg + "\n")
    assert res.failed_stage == "weights", res.evidence


JOB_REPORTS = st.sampled_from(
    [
        "zsh: segmentation fault (core dumped)  {cmd}",
        "zsh: killed     {cmd}",
        "zsh: abort      {cmd}",
        "zsh: illegal hardware instruction  {cmd}",
        "zsh: bus error  {cmd}",
        "[1]    3100846 segmentation fault (core dumped)  {cmd}",
        "[1]+  Killed                  {cmd}",
        "[2]-  Aborted                 (core dumped) {cmd}",
    ]
)
COMMANDS = st.sampled_from(["vllm serve Qwen/Qwen3-8B --tp 2", "python benchmarks/benchmark_throughput.py"])


@given(report=JOB_REPORTS, cmd=COMMANDS)
def test_a_shells_report_of_a_job_a_signal_ended_is_a_native_crash(report, cmd) -> None:  # noqa: ANN001
    text = (
        "INFO 01-02 03:04:05 [api_server.py:1] vLLM API server version 0.9.1\n"
        "INFO 01-02 03:04:06 [model_runner.py:1] Starting to load model Qwen/Qwen3-8B...\n"
        + report.format(cmd=cmd)
        + "\n"
    )
    res = classify_text(text)
    assert res.exception_type == "NativeCrash" and res.first_exception.line_number == 3, res.first_exception


@given(cmd=COMMANDS, word=st.sampled_from(["Done", "Running", "Stopped", "Exit 1"]))
def test_a_job_table_line_without_a_signal_is_no_crash(cmd, word) -> None:  # noqa: ANN001
    res = classify_text(f"INFO 01-02 03:04:05 [api_server.py:1] vLLM API server version 0.9.1\n[1]+  {word}   {cmd}\n")
    assert res.first_exception is None, res.first_exception


REQUEST_FRAMES = st.sampled_from(
    [
        ("vllm/v1/core/block_pool.py", "cache_full_blocks"),
        ("vllm/v1/core/kv_cache_manager.py", "allocate_slots"),
        ("vllm/v1/core/single_type_kv_cache_manager.py", "get_num_blocks_to_allocate"),
        ("vllm/core/block_manager_v1.py", "free"),
        ("vllm/core/block/prefix_caching_block.py", "allocate_immutable_block"),
        ("vllm/core/scheduler.py", "_schedule_running"),
        ("vllm/v1/request.py", "guided_decoding_key"),
        ("vllm/v1/structured_output/backend_xgrammar.py", "compile_grammar"),
        ("vllm/model_executor/guided_decoding/outlines_decoding.py", "get_outlines_guided_decoding_logits_processor"),
        ("vllm/v1/engine/output_processor.py", "process_outputs"),
    ]
)
SITE = st.sampled_from(
    ["/usr/local/lib/python3.12/dist-packages/", "/opt/conda/lib/python3.10/site-packages/", "/code/vllm/"]
)


@given(
    frame=REQUEST_FRAMES, site=SITE, exc=st.sampled_from(["AssertionError", "ValueError: Double free!", "KeyError: 7"])
)
def test_a_stack_in_what_exists_only_for_requests_is_runtime(frame, site, exc) -> None:  # noqa: ANN001
    res = classify_text(traceback_text([(site + frame[0], frame[1])], exc))
    assert res.failed_stage == "runtime" and res.evidence.rule == "frames", res.evidence


@given(frame=REQUEST_FRAMES, site=SITE)
def test_those_files_built_at_start_up_or_called_from_it_are_not_runtime(frame, site) -> None:  # noqa: ANN001
    built = classify_text(traceback_text([(site + frame[0], "__init__")], "AssertionError"))
    assert (built.failed_stage, built.evidence.rule) != ("runtime", "frames"), built.evidence
    profiled = classify_text(
        traceback_text(
            [(site + "vllm/v1/engine/core.py", "_initialize_kv_caches"), (site + frame[0], frame[1])], "AssertionError"
        )
    )
    assert profiled.failed_stage == "engine", profiled.evidence


def test_real_stacks_in_request_only_code() -> None:
    for name in ("2139.log", "3957.log"):  # V0's block manager freeing a block twice; V1's block pool
        res = classify_text(issue_text(name))
        assert res.failed_stage == "runtime", (name, res.evidence)


@given(
    layer=st.integers(0, 95),
    module=st.sampled_from(["self_attn.k_proj", "mlp.experts.3.down_proj", "mtp_block.self_attn.fa_k", "mixer"]),
    leaf=st.sampled_from(["offset", "input_offset", "zero_point", "zeros", "A_log", "dt_bias", "weight_scale"]),
    prefix=st.sampled_from(["", "(Worker_TP1 pid=9) ERROR 01-02 03:04:05 [multiproc_executor.py:870] "]),
)
def test_a_parameters_name_in_a_key_error_is_the_weights(layer, module, leaf, prefix) -> None:  # noqa: ANN001
    res = classify_text(f"{prefix}KeyError: 'model.layers.{layer}.{module}.{leaf}'\n")
    assert res.failed_stage == "weights", res.evidence


@given(layer=st.integers(0, 95), module=st.sampled_from(["self_attn", "self_attn.attn", "mlp"]))
def test_a_modules_name_in_a_key_error_is_not_a_parameter(layer, module) -> None:  # noqa: ANN001
    """A layer's module (the attention layers' registry looked up by name at the KV cache's set-up)."""
    res = classify_text(f"KeyError: 'language_model.model.layers.{layer}.{module}'\n")
    assert res.failed_stage != "weights", res.evidence


DEVICE_MESSAGES = st.sampled_from(
    [
        "RuntimeError: HPU does not have device capability.",
        "RuntimeError: NPU does not support bfloat16 in this op",
        "ValueError: current platform cpu does not support ray.",
        "ValueError: Platform rocm doesn't support sleep mode",
        "RuntimeError: Invalid HABANA_VISIBLE_MODULES=5. Module IDs should be between 0 and 3",
        "ValueError: Invalid CUDA_VISIBLE_DEVICES=GPU-abc",
        "ValueError: placement group bundle index 6 is invalid. Valid placement group indexes: 0-4",
        "RuntimeError: Worker failed with error 'device_id 2 is out of range for assigned_physical_gpu_ids [2]'",
    ]
)


@given(msg=DEVICE_MESSAGES, quote=st.sampled_from([("", ""), ("This PR fixes the `", "`")]))
def test_an_accelerator_named_as_lacking_or_set_wrong_is_the_device(msg, quote) -> None:  # noqa: ANN001
    res = classify_text(f"{quote[0]}{msg}{quote[1]}\n")
    assert res.failed_stage == "device", res.evidence


def test_real_device_and_parameter_messages() -> None:
    for name in ("3909.log", "4027.log", "5602.log", "5787.log"):
        assert classify_text(issue_text(name)).failed_stage == "device", name
    for name in ("3963.log", "3991.log"):  # a quantization's offset; a Parameter without its loader's attribute
        assert classify_text(issue_text(name)).failed_stage == "weights", name


# frames named by what the function does in vLLM (not by a log): a stack cut to them still places the root
PLACED_FRAMES = st.sampled_from(
    [
        ("vllm/v1/worker/gpu_model_runner.py", "_prepare_inputs", "runtime"),
        ("vllm/v1/worker/gpu_model_runner.py", "_update_states", "runtime"),
        ("vllm/v1/worker/gpu_model_runner.py", "_execute_mm_encoder", "runtime"),
        ("vllm/v1/worker/gpu_model_runner.py", "_build_attention_metadata", "runtime"),
        ("vllm/worker/hpu_model_runner.py", "_prepare_prompt", "runtime"),
        ("vllm/v1/worker/gpu/model_runner.py", "add_requests", "runtime"),
        ("vllm/v1/worker/gpu/model_runner.py", "prepare_inputs", "runtime"),
        ("vllm/worker/model_runner.py", "prepare_model_input", "runtime"),
        ("vllm/v1/worker/gpu_input_batch.py", "add_request", "runtime"),
        ("vllm/v1/worker/block_table.py", "commit", "runtime"),
        ("vllm/transformers_utils/tokenizer.py", "detokenize_incrementally", "runtime"),
        ("vllm/v1/engine/detokenizer.py", "update", "runtime"),
        ("vllm/entrypoints/llm.py", "_run_engine", "runtime"),
        ("vllm/engine/llm_engine.py", "_process_model_outputs", "runtime"),
        ("vllm/engine/async_llm_engine.py", "_log_task_completion", "runtime"),
        ("vllm/engine/multiprocessing/engine.py", "start", "runtime"),
        ("vllm/v1/worker/gpu_model_runner.py", "_sample", "runtime"),
        ("vllm/v1/worker/gpu_model_runner.py", "apply_grammar_bitmask", "runtime"),
        ("vllm/worker/worker.py", "execute_worker", "runtime"),
        ("vllm/worker/cache_engine.py", "swap_in", "runtime"),
        ("vllm/attention/backends/flashinfer.py", "copy_blocks", "runtime"),
        ("vllm/v1/worker/utils.py", "request_memory", "engine"),
        ("vllm/v1/attention/backends/flash_attn.py", "__init__", "engine"),
        ("vllm/attention/backends/registry.py", "get_class", "engine"),
        ("vllm/v1/worker/gpu_model_runner.py", "may_reinitialize_input_batch", "engine"),
        ("vllm/v1/worker/gpu_model_runner.py", "_init_minimal_kv_cache_for_profiling", "engine"),
        ("vllm/v1/worker/gpu_model_runner.py", "initialize_metadata_builders", "engine"),
        ("vllm/worker/model_runner.py", "capture", "engine"),
        ("vllm/v1/spec_decode/eagle.py", "dummy_run", "engine"),
        ("vllm/model_executor/models/utils.py", "_load_module", "weights"),
        ("vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py", "get_scheme", "weights"),
        ("vllm_ascend/quantization/quant_config.py", "is_layer_skipped_ascend", "weights"),
        ("vllm/renderers/registry.py", "renderer_from_config", "weights"),
        ("vllm/utils/ompmultiprocessing.py", "_parse_omp_threads_bind_env", "device"),
    ]
)


@given(frame=PLACED_FRAMES, site=SITE, exc=st.sampled_from(["AssertionError", "KeyError: 7", "TypeError: bad operand"]))
def test_a_stack_cut_to_a_function_of_known_work_is_placed_by_it(frame, site, exc) -> None:  # noqa: ANN001
    path, func, stage = frame
    res = classify_text(traceback_text([(site + path, func), (site + "vllm/utils.py", "helper")], exc))
    assert res.failed_stage == stage and res.evidence.rule == "frames", res.evidence


@given(frame=PLACED_FRAMES.filter(lambda f: f[2] == "runtime"), site=SITE)
def test_per_step_work_called_from_a_start_up_frame_is_that_start_up(frame, site) -> None:  # noqa: ANN001
    """The start-up's dummy runs and profiling call the same per-step code: the start-up frame outside wins."""
    path, func, _stage = frame
    stack = [(site + "vllm/v1/worker/gpu_model_runner.py", "profile_run"), (site + path, func)]
    res = classify_text(traceback_text(stack, "AssertionError"))
    assert res.failed_stage == "engine", res.evidence


def test_real_stacks_cut_to_a_model_runners_per_step_work() -> None:
    for name in ("1468.log", "3865.log"):  # V1 attention metadata for a batch; Gaudi's prompt preparation
        res = classify_text(issue_text(name))
        assert (res.failed_stage, res.evidence.rule) == ("runtime", "frames"), (name, res.evidence)


HIP_KERNELS = st.sampled_from(
    [
        "/app/vllm/build/temp.linux-x86_64-cpython-312/csrc/rocm/skinny_gemms.hip:497: void wvSplitK_hf_sml_"
        "(const int, const int, const scalar_t *) [scalar_t = __hip_bfloat16, THRDS = 64]",
        "/pytorch/aten/src/ATen/native/hip/IndexKernel.hip:94: auto index_kernel(...)",
    ]
)


@given(
    kernel=HIP_KERNELS, expr=st.sampled_from(["false", "index >= -sizes[i] && index < sizes[i]"]), n=st.integers(1, 4)
)
def test_hips_device_side_assertion_is_a_native_crash_in_gpu_work(kernel, expr, n) -> None:  # noqa: ANN001
    text = "```text\n" + f"{kernel}: Device-side assertion `{expr}' failed.\n" * n + "```\n"
    res = classify_text(text)
    assert res.exception_type == "NativeCrash" and res.first_exception.line_number == 2, res.first_exception
    assert res.failed_stage != "container", res.evidence  # GPU code ran: never "died before printing anything"


@given(api=st.sampled_from(["CUDA", "HIP", "XPU"]), lead=st.sampled_from(["", "    torch._C._cuda_init()\n"]))
def test_no_gpus_available_of_any_runtime_is_the_device(api, lead) -> None:  # noqa: ANN001
    res = classify_text(f"{lead}RuntimeError: No {api} GPUs are available\n")
    assert res.failed_stage == "device", res.evidence


MARKERS = st.sampled_from(
    [
        "INFO 01-02 03:04:05 [__init__.py:235] Automatically detected platform cuda.\n",
        "INFO 01-02 03:04:05 [gpu_model_runner.py:1770] Starting to load model Qwen/Qwen3-8B...\n",
        "INFO 01-02 03:04:05 [gpu_model_runner.py:1802] Model loading took 15.2 GiB and 8.1 seconds\n"
        "INFO 01-02 03:04:06 [gpu_worker.py:232] Available KV cache memory: 40.1 GiB\n",
    ]
)
IMPORTS = st.sampled_from(
    [
        "ModuleNotFoundError: No module named 'lmcache.experimental'",
        "ImportError: cannot import name 'LMCacheEngine' from 'lmcache'",
        "No module named 'kvcached'",
    ]
)


@given(markers=MARKERS, imp=IMPORTS, prefix=st.sampled_from(["", "ERROR 01-02 03:04:07 [engine.py:458] "]))
def test_a_package_not_imported_before_serving_is_the_image_however_far_the_start_up_got(markers, imp, prefix) -> None:  # noqa: ANN001
    res = classify_text(markers + prefix + imp + "\n")
    assert res.failed_stage == "container", res.evidence


@given(imp=IMPORTS)
def test_a_package_not_imported_once_serving_is_not_placed_as_the_image_by_that_rule(imp) -> None:  # noqa: ANN001
    ready = "INFO:     Application startup complete.\n"
    res = classify_text(f"INFO 01-02 03:04:05 [gpu_model_runner.py:1770] Starting to load model m...\n{ready}{imp}\n")
    assert res.failed_stage != "container" or res.evidence.rule != "message", res.evidence


@given(
    err=st.sampled_from(
        [
            "symbol not found in flat namespace '__Z14int8_scaled_mmRN2at6TensorE'",
            "Library not loaded: @rpath/libtorch_cpu.dylib",
        ]
    )
)
def test_macos_dynamic_loader_errors_are_the_image(err) -> None:  # noqa: ANN001
    line = (
        'WARNING 08-13 09:55:12 [_custom_ops.py:20] Failed to import from vllm._C with ImportError("dlopen('
        f'/opt/envs/vllm/lib/python3.11/site-packages/vllm/_C.abi3.so, 0x0002): {err}")'
    )
    res = classify_text("INFO 01-02 03:04:05 [__init__.py:235] Automatically detected platform cpu.\n" + line + "\n")
    assert res.failed_stage == "container", res.evidence


@given(
    outer=st.sampled_from(
        [
            ("vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py", "__init__"),
            ("vllm/v1/worker/cpu_worker.py", "init_device"),
            ("vllm/v1/executor/multiproc_executor.py", "worker_main"),
        ]
    ),
    call=st.sampled_from(["os.sched_setaffinity(0, cpus)", "psutil.Process().cpu_affinity(cores)"]),
)
def test_binding_to_cpu_cores_is_the_device(outer, call) -> None:  # noqa: ANN001
    site = "/usr/local/lib/python3.12/dist-packages/"
    text = (
        "Traceback (most recent call last):\n"
        f'  File "{site}{outer[0]}", line 88, in {outer[1]}\n'
        f"    {call}\n"
        "OSError: [Errno 22] Invalid argument\n"
    )
    res = classify_text(text)
    if "sched_setaffinity" in call:
        assert res.failed_stage == "device", res.evidence
    else:  # (no frame names the binding: whatever the outer frame says)
        assert res.evidence.rule != "frames" or "sched_setaffinity" not in res.evidence.why


@given(
    frame=st.sampled_from(
        [
            ("transformers/processing_utils.py", "check_argument_for_proper_class"),
            ("transformers/processing_utils.py", "from_pretrained"),
            ("transformers/models/auto/processing_auto.py", "from_pretrained"),
            ("transformers/models/whisper/processing_whisper.py", "__init__"),
            ("transformers/image_processing_base.py", "get_image_processor_dict"),
        ]
    ),
    outer=st.sampled_from(
        [
            ("vllm/v1/worker/gpu_model_runner.py", "profile_run"),
            ("vllm/entrypoints/openai/api_server.py", "init_app_state"),
        ]
    ),
)
def test_a_processor_made_from_the_models_files_is_the_weights(frame, outer) -> None:  # noqa: ANN001
    site = "/usr/local/lib/python3.12/dist-packages/"
    res = classify_text(
        traceback_text(
            [(site + outer[0], outer[1]), (site + frame[0], frame[1])], "TypeError: Received a X for argument tokenizer"
        )
    )
    assert res.failed_stage == "weights", res.evidence


@given(func=st.sampled_from(["_validate_rope_scaling", "check_config", "__post_init__"]))
def test_transformers_own_config_validators_are_still_the_config(func) -> None:  # noqa: ANN001
    site = "/usr/local/lib/python3.12/dist-packages/"
    res = classify_text(traceback_text([(site + "transformers/configuration_utils.py", func)], "ValueError: bad rope"))
    assert res.failed_stage == "config", res.evidence


def _plugin_failed(name: str, exc: str) -> str:
    p = "ERROR 10-13 03:39:35 [__init__.py:46] "
    return (
        f"{p}Failed to load plugin {name}\n"
        f"{p}Traceback (most recent call last):\n"
        f'{p}  File "/usr/local/lib/python3.10/site-packages/vllm/plugins/__init__.py", line 42, in load_plugins_by_group\n'
        f"{p}    func = plugin.load()\n"
        f"{p}{exc}\n"
    )


PLUGINS = st.sampled_from(["tpu_quantization_configs", "ascend", "lora_filesystem_resolver", "my_stat_logger"])
PLUGIN_ERRORS = st.sampled_from(
    [
        "AttributeError: module 'vllm_ascend' has no attribute 'register'",
        "ModuleNotFoundError: No module named 'my_stat_logger'",
        "ImportError: cannot import name 'Foo' from 'tpu_inference.layers'",
    ]
)
LATER = (
    "(EngineCore pid=8) ERROR 04-09 17:22:14 [core.py:1110] EngineCore encountered a fatal error.\n"
    "(EngineCore pid=8) ERROR 04-09 17:22:14 [core.py:1110] Traceback (most recent call last):\n"
    '(EngineCore pid=8) ERROR 04-09 17:22:14 [core.py:1110]   File "/vllm/v1/engine/core.py", line 9, in run_busy_loop\n'
    "(EngineCore pid=8) ERROR 04-09 17:22:14 [core.py:1110] FloatingPointError: Invalid value (nan) encountered\n"
)
READY = (
    "INFO 10-13 03:40:35 [gpu_model_runner.py:1770] Starting to load model m...\n"
    "INFO 10-13 03:41:35 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
    "INFO:     Application startup complete.\n"
)


@given(name=PLUGINS, exc=PLUGIN_ERRORS)
def test_a_plugin_that_did_not_load_is_no_failure_of_a_run_that_went_on(name, exc) -> None:  # noqa: ANN001
    res = classify_text(_plugin_failed(name, exc) + READY)
    assert (res.failed_stage, res.first_exception) == ("none", None), res.evidence


@given(name=PLUGINS, exc=PLUGIN_ERRORS)
def test_a_failure_after_a_plugin_that_did_not_load_is_its_own_root(name, exc) -> None:  # noqa: ANN001
    res = classify_text(_plugin_failed(name, exc) + READY + LATER)
    assert res.exception_type == "FloatingPointError", res.first_exception


@given(
    name=PLUGINS,
    exc=PLUGIN_ERRORS,
    after=st.sampled_from(
        ["", "INFO 10-13 03:39:35 [__init__.py:243] No platform detected, vLLM is running on UnspecifiedPlatform\n"]
    ),
)
def test_a_plugin_that_did_not_load_in_a_run_that_never_got_ready_is_the_root(name, exc, after) -> None:  # noqa: ANN001
    res = classify_text(_plugin_failed(name, exc) + after)
    assert res.first_exception is not None and exc in res.first_exception.line, res.first_exception


def test_real_plugin_load_failures() -> None:
    res = classify_text(issue_text("5962.log"))  # a quantization plugin on TPU; later a NaN while serving
    assert res.exception_type == "FloatingPointError" and res.failed_stage == "runtime", res.first_exception
    res = classify_text(issue_text("2118.log"))  # the Ascend platform plugin: no platform after it
    assert "has no attribute 'register'" in res.first_exception.line, res.first_exception


@given(
    typ=st.sampled_from(["RuntimeError", "jax.errors.MLIRCompilationError", "ValueError"]),
    msg=st.sampled_from(
        [
            [
                "An attempt has been made to start a new process before the",
                "current process has finished its bootstrapping phase.",
            ],
            ["Mosaic kernels cannot be compiled for this layout", "(shape (8, 128), tiling (16, 128))"],
        ]
    ),
    indent=st.sampled_from(["", "    ", "        "]),
)
def test_a_message_that_starts_on_the_next_line_is_reported_with_the_root(typ, msg, indent) -> None:  # noqa: ANN001
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/multiprocessing/spawn.py", line 140, in _check_not_importing_main\n'
        "    raise RuntimeError('''\n"
        f"{typ}: \n" + "".join(f"{indent}{m}\n" for m in msg)
    )
    res = classify_text(text)
    fe = res.first_exception
    # the exception's line and its message's first line, one as the root and the other beside it
    assert fe is not None and {fe.line.strip(), (fe.context or "").strip()} == {f"{typ}:", msg[0].strip()}, fe
    assert msg[0].split()[0] in res.signature, res.signature


def test_the_human_report_shows_the_message_that_started_on_the_next_line(capsys) -> None:  # noqa: ANN001
    from k3tui.cli import main

    path = REPO_CORPUS / "vllm-issues" / "5963.log"
    assert main(["classify", str(path)]) == 0
    out = capsys.readouterr().out
    assert "  with: An attempt has been made to start a new process before the" in out


@given(
    cls=st.sampled_from(
        ["Glm4vProcessor", "Qwen2VLImageProcessorFast", "LlamaTokenizerFast", "WhisperFeatureExtractor"]
    ),
    method=st.sampled_from(["__init__", "from_pretrained"]),
    what=st.sampled_from(
        ["got multiple values for argument 'tokenizer'", "missing 1 required positional argument: 'chat_template'"]
    ),
)
def test_a_processor_or_tokenizer_that_could_not_be_made_is_the_weights(cls, method, what) -> None:  # noqa: ANN001
    res = classify_text(f'but i get "TypeError: {cls}.{method}() {what}"\n')
    assert res.failed_stage == "weights", res.evidence


@given(
    root=st.sampled_from(
        [
            "ValueError: image_grid_thw has rank 3 but expected 2.",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB.",
            "AssertionError",
        ]
    ),
    gap=st.integers(0, 3),
)
def test_the_front_ends_output_handler_failing_after_a_root_says_it_was_serving(root, gap) -> None:  # noqa: ANN001
    e = "(EngineCore_DP0 pid=7) ERROR 11-27 13:26:55 [core.py:844] "
    text = (
        f"{e}EngineCore encountered an issue.\n"
        f"{e}{root}\n"
        + "(EngineCore_DP0 pid=7) Process EngineCore_DP0:\n" * gap
        + "(APIServer pid=1) ERROR 11-27 13:26:55 [async_llm.py:546] AsyncLLM output_handler failed.\n"
    )
    res = classify_text(text)
    assert root.split(":")[0] in res.first_exception.line and res.failed_stage == "runtime", res.evidence


TRACKER = (
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.11/multiprocessing/resource_tracker.py", line 209, in main\n'
    "    cache[rtype].remove(name)\n"
    "KeyError: '/psm_{seg}'\n"
)


@given(seg=st.from_regex(r"[0-9a-f]{8}", fullmatch=True), after=st.booleans())
def test_the_resource_trackers_traceback_is_noise(seg, after) -> None:  # noqa: ANN001
    e = "(EngineCore pid=5) ERROR 12-06 08:19:34 [core.py:1510] "
    later = (
        f"{e}EngineCore failed to start.\n{e}Traceback (most recent call last):\n"
        f'{e}  File "/opt/venv/lib/python3.11/site-packages/vllm/distributed/device_communicators/shm_broadcast.py", line 9, in __init__\n'
        f"{e}OSError: [Errno 27] File too large\n"
    )
    res = classify_text(TRACKER.format(seg=seg) + (later if after else ""))
    if after:
        assert "File too large" in res.first_exception.line, res.first_exception
    else:
        assert res.first_exception is None, res.first_exception


@given(
    msg=st.sampled_from(["Resource temporarily unavailable", "Too many open files", "Bad address", "Invalid argument"]),
    where=st.sampled_from(["src/thread.cpp:241", "src/epoll.cpp:100", "src/ip.cpp:120"]),
)
def test_libzmqs_assertion_before_it_aborts_is_a_native_crash(msg, where) -> None:  # noqa: ANN001
    head = "(APIServer pid=2) INFO 12-06 08:11:13 [compilation.py:317] Enabled custom fusions: norm_quant\n"
    res = classify_text(head + f"{msg} ({where})\n")
    assert res.exception_type == "NativeCrash" and res.first_exception.line_number == 2, res.first_exception


@given(
    msg=st.sampled_from(
        [
            "Failed to compute parent layout for slice layout.",
            "Cannot select: intrinsic %llvm.nvvm.wgmma",
            "out of memory",
        ]
    ),
    after=st.booleans(),
)
def test_llvms_fatal_error_is_a_native_crash_of_gpu_work(msg, after) -> None:  # noqa: ANN001
    head = "INFO 05-31 09:09:40 [api_server.py:1] vLLM API server version 0.9.1\n"
    tail = "ERROR 05-31 09:09:48 [client.py:305] RuntimeError('Engine process (pid 65) died.')\n" if after else ""
    res = classify_text(head + f"LLVM ERROR: {msg}\n" + tail)
    assert res.exception_type == "NativeCrash" and "LLVM ERROR" in res.first_exception.line, res.first_exception
    assert res.failed_stage != "container", res.evidence  # the compiler ran: never "died before printing anything"


@given(
    relays=st.lists(
        st.sampled_from(["MyLLM", "EngineCore", "RayWorkerProc", "EngineCore_DP0", "APIServer"]), min_size=1, max_size=5
    ),
    pid=st.integers(2, 99999),
)
def test_any_number_of_relayed_process_prefixes_is_read(relays, pid) -> None:  # noqa: ANN001
    pre = "".join(f"({r} pid={pid + i}) " for i, r in enumerate(relays)) + f"(Worker pid={pid}) "
    pre += "ERROR 06-14 09:18:43 [multiproc_executor.py:990] "
    stack = [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 12, in execute_model',
        "    assert new_req_data.prefill_token_ids is not None",
        "AssertionError",
    ]
    res = classify_text("".join(pre + x + "\n" for x in stack))
    fe = res.first_exception
    assert fe is not None and fe.line.endswith("AssertionError") and fe.process == f"Worker pid={pid}", fe
    assert res.failed_stage == "runtime", res.evidence
    # a bare AssertionError says nothing: the assert statement is reported beside it, and in its signature
    assert fe.context is not None and "assert new_req_data.prefill_token_ids is not None" in fe.context
    assert "prefill_token_ids" in res.signature


def test_a_serving_classs_constructor_is_the_front_ends_start_up_not_a_request() -> None:
    p = "(APIServer pid=16) "
    text = (
        f"{p}Traceback (most recent call last):\n"
        f'{p}  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_responses.py", line 130, in __init__\n'
        f"{p}    get_stop_tokens_for_assistant_actions())\n"
        f'{p}  File "/usr/local/lib/python3.12/dist-packages/openai_harmony/__init__.py", line 674, in load_harmony_encoding\n'
        f"{p}    inner = _load_harmony_encoding(name)\n"
        f"{p}openai_harmony.HarmonyError: error downloading or loading vocab file\n"
    )
    res = classify_text(text)
    assert res.first_exception is not None and "HarmonyError" in res.first_exception.line, res.evidence


@given(
    exc=st.sampled_from(
        ["ConnectionResetError: [Errno 104] Connection reset by peer", "BrokenPipeError: [Errno 32] Broken pipe"]
    ),
    loop=st.booleans(),
)
def test_a_broken_connection_is_the_engines_failure_only_through_its_own_loop(exc, loop) -> None:  # noqa: ANN001
    e = "ERROR 11-14 22:12:30 [core.py:588] "
    outer = (
        [f'{e}  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 606, in run_busy_loop']
        if loop
        else [f'{e}  File "/opt/venv/lib/python3.12/site-packages/starlette/responses.py", line 259, in __call__']
    )
    text = "\n".join(
        [
            f"{e}Traceback (most recent call last):",
            *outer,
            f'{e}  File "/root/lmcache/lmcache/v1/distributed_server/naive_server.py", line 169, in issue_get',
            f"{e}    data = client_socket.recv(16)",
            f"{e}{exc}",
        ]
    )
    res = classify_text(text + "\n")
    if loop:
        assert res.first_exception is not None and exc in res.first_exception.line, res.evidence
    else:
        assert res.first_exception is None, res.first_exception


@given(
    msg=st.sampled_from(
        ["CUDA out of memory. Tried to allocate 2.00 GiB.", "HIP out of memory. Tried to allocate 1 GiB"]
    )
)
def test_torchs_report_of_a_caught_cpp_out_of_memory_is_a_root_late_in_a_log(msg) -> None:  # noqa: ANN001
    head = "".join(
        f"INFO 07-16 19:40:{i:02d} [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s\n" for i in range(40)
    )
    report = (
        f"[rank3]:[E716 19:47:26.324588983 shim_common.cpp:523] Exception in aoti_torch: {msg}\n"
        "Exception raised from malloc at /pytorch/c10/cuda/CUDACachingAllocator.cpp:1574 (most recent call first):\n"
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0xc8 (0x4000 in libc10.so)\n"
        "frame #1: <unknown function> + 0x44280c (0x4000c58b280c in libc10_cuda.so)\n"
    )
    res = classify_text(head + report)
    assert res.first_exception is not None and "Exception in aoti_torch" in res.first_exception.line, res.evidence


@given(
    what=st.sampled_from(["STEP 954640.8", "JOB 6753"]),
    why=st.sampled_from(["", " DUE TO TIME LIMIT"]),
    ready=st.booleans(),
)
def test_the_workload_managers_cancel_kills_a_start_up_but_stops_a_server(what, why, ready) -> None:  # noqa: ANN001
    text = "(Worker_TP0 pid=7) Loading safetensors checkpoint shards:  12% Completed | 1/8 [02:50<19:56, 170.97s/it]\n"
    if ready:
        text += "(APIServer pid=1) INFO:     Application startup complete.\n"
    text += f"slurmstepd: error: *** {what} ON jpbo-021-29 CANCELLED AT 2026-07-16T17:59:04{why} ***\n"
    res = classify_text(text)
    if ready:
        assert (res.failed_stage, res.first_exception) == ("none", None), res.evidence
    else:
        assert res.first_exception is not None and "CANCELLED" in res.first_exception.line, res.evidence
        assert res.failed_stage == "weights", res.evidence  # how far the start-up had got; never argparse's config


def test_only_the_innermost_frames_assert_statement_is_reported_beside_a_bare_assertion_error() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 9, in step\n'
        "    assert self.check(outputs)\n"
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 99, in check\n'
        "    raise AssertionError\n"
        "AssertionError\n"
    )
    res = classify_text(text)
    assert res.first_exception is not None and res.first_exception.context is None, res.first_exception

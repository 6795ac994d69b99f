"""Issue 13, tenth session: rules made from the tuned part's misses, each in a general form.

- A request's refusal (a grammar that cannot compile, a prompt too long) is one request's only while
  something caught it for that request: raised through the engine's own loop (V1's busy loop in the
  engine core, V0's background loop) it ended the engine and is the root (2838). V0's ``engine_step``
  hands a request's own error to that request's stream: still refused (1924).
- A one-line root whose message a paste wrapped (the line stops mid-sentence, the next goes on with a
  lowercase word or a number, no logger's line): its next lines are its stage evidence (3007, 3151, 1826).
- An exception glued to a sentence in a language written without spaces (``…报错ValueError: …``) is
  quoted as one in backticks is: the root when the log names no other (3057, 1977).
- Words of a layer: the container runtime refusing to start the image, a build tool the image lacks,
  a model config name the installed transformers already has (container); a GGUF architecture the loader cannot map, the model repository's own code, a tensor of
  another shape than its parameter, a quantization's config file missing, a gated repository (weights);
  what the accelerator cannot do (device); more sequences than the cache has blocks (engine); an
  attention back-end that does not exist (config); a kernel for some GPU generations only, a device of
  a type not known, an accelerator already in use or not selectable (device); an attention back-end that
  cannot run the model's attention, a ZMQ socket's address in use (the engine's IPC, not the API) (engine).
- A process gone with a signal's exit status (``worker exited with exit code 136``: 128 + the signal)
  is a kill, the root when nothing else is; a vLLM line behind a prefix not known after it means the
  log went on (not "it crashed before printing anything").
- A request handler's refusal logged in V0's format, without the bracket before the logger's location
  (``ERROR 11-11 21:14:55 serving_chat.py:158] jinja2.exceptions.…``), is one request's as in V1's.
- A log is a vLLM log when it holds a word only vLLM prints (its engine arguments' names, its engine core,
  its KV cache's preemption, an offline generate()'s progress bar, its benchmark's report), not only its
  name or its logger's prefix: such short excerpts are `none`, not `unknown` (2607, 2610, 2851).
- A paste that indented a whole traceback (a YAML status block, a list item): its first frame says by how
  much (Python indents a frame by 2), and its lines are read without it, so its exception line is one
  again and a wrapper's inner traceback is unwrapped (2766); a head indented alone changes nothing (1844).
- asyncio's report of a task's exception nobody retrieved (``future: <Task finished … exception=X("…")>``)
  wraps the traceback printed after it: that traceback's exception line of the same type is the root (2543).
- Triton's Python back-end that cannot set up vLLM (``Failed to initialize Python stub: AttributeError: …``)
  is a root, and the image's (its vLLM back-end's code against the installed vLLM) (3505).
- A request's own sampling parameters out of range (``max_tokens must be at least 1, got -3173``) are
  that request's refusal, never a root (3403).
- A C or C++ ``assert()`` that failed (glibc's and libstdc++'s ``Assertion `…' failed``, a device-side one
  quoted without its kernel's location) is a native crash, a root (3158, 3052, 2701); Triton's
  ``computeCapability not supported`` names the device (2701).
- V1's engine core saying it ``encountered a fatal error`` right after a worker's root (not ``failed to
  start``): the engine had been built, the worker failed while serving (3601).
- vllm._C's sibling extensions (``vllm._core_C``, ``_moe_C``, …) failing to import are the same warning
  root as vllm._C's, and torch refusing to instantiate a class of such an extension is what it causes (3713).
- An exception logged by its repr first (V0's engine: ``ERROR … [engine.py:160] ValueError('…')``), then its
  traceback: the traceback's ``Type: message`` line of that type is the root; alone, the repr line is
  (3256, 3811, 2759).
- An exception quoted in a sentence between double quotes (straight or curly; the closing one may be lost
  to the line's wrap) is quoted inline as one in backticks is: the root when the log names no other
  (3909, 3910, 3917, 3908).
- An exception CPython raises while the interpreter exits (``sys.meta_path is None, Python is likely shutting
  down``, ``cannot schedule new futures after interpreter shutdown``) is noise at exit, never a root (3857).
- An exception quoted between backticks whose closing backtick a wrap moved to the next line is quoted as
  one whose closing mark is there (3991, 3995).
- torch's warning that CUDA could not be initialised says why vLLM found no platform: it is the root
  rather than the "No platform detected" line, in either order (3009).

Each on generated logs and on the real logs of the tuned part; each fails without its change.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import issue_text
from tests.test_classify_requests_9 import _tb

SITE = "/usr/local/lib/python3.12/dist-packages"
REFUSALS = st.sampled_from(
    ["RuntimeError: [15:36:55] /project/cpp/regex_converter.cc:73: Regex parsing error at position 106: Invalid repetition count.",
     "ValueError: Invalid JSON schema provided: unsupported keyword 'patternProperties'",
     "ValueError: The decoder prompt (length 17772) is longer than the maximum model length of 16384."]
)  # fmt: skip
V1_LOOP = [
    (f"{SITE}/vllm/v1/engine/core.py", "run_engine_core"),
    (f"{SITE}/vllm/v1/engine/core.py", "run_busy_loop"),
    (f"{SITE}/vllm/v1/engine/core.py", "_process_engine_step"),
    (f"{SITE}/vllm/v1/engine/core.py", "step"),
    (f"{SITE}/vllm/v1/core/sched/scheduler.py", "schedule"),
    (f"{SITE}/vllm/v1/structured_output/backend_xgrammar.py", "compile_grammar"),
]
V0_LOOP = [
    (f"{SITE}/vllm/engine/async_llm_engine.py", "run_engine_loop"),
    (f"{SITE}/vllm/engine/async_llm_engine.py", "engine_step"),
    (f"{SITE}/vllm/engine/async_llm_engine.py", "step_async"),
    (f"{SITE}/vllm/model_executor/guided_decoding/xgrammar_decoding.py", "__call__"),
]
V0_REQUEST = [
    (f"{SITE}/vllm/engine/async_llm_engine.py", "generate"),
    (f"{SITE}/vllm/engine/async_llm_engine.py", "generator"),
    (f"{SITE}/vllm/engine/async_llm_engine.py", "engine_step"),
    (f"{SITE}/vllm/engine/async_llm_engine.py", "add_request_async"),
    (f"{SITE}/vllm/engine/llm_engine.py", "_validate_model_input"),
]
PREFIX = st.sampled_from(["", "(EngineCore_DP0 pid=143) ", "ERROR 04-28 15:36:55 [core.py:387] "])


def _rooted(log: str, part: str):
    """Classify a log; its root line must hold ``part``."""
    r = classify_text(log)
    assert r.first_exception is not None and part in r.first_exception.line, r
    return r


def _traceback(prefix: str, frames: list[tuple[str, str]], exception: str, header: str) -> str:
    """The header line a logger prints, then the traceback (``_tb`` of the session-9 request tests)."""
    return f"{prefix}{header}\n" + _tb(frames, exception, prefix)


@given(PREFIX, st.sampled_from([V1_LOOP, V0_LOOP]), REFUSALS)
def test_a_refusal_raised_through_the_engines_loop_ended_the_engine(prefix, frames, exception):
    log = _traceback(prefix, frames, exception, "EngineCore hit an exception: ")
    r = _rooted(log, exception)
    assert r.failed_stage == "runtime"


@given(PREFIX, REFUSALS)
def test_a_refusal_v0_handed_to_the_requests_stream_is_still_refused(prefix, exception):
    log = _traceback(prefix, V0_REQUEST, exception, "Error in request stream:")
    r = classify_text(log)
    assert r.first_exception is None and r.failed_stage == "none", r


def test_real_logs_a_refusal_through_the_loop_and_one_handed_to_its_request():
    r = classify_text(issue_text("2838.log"))  # xgrammar's regex error in the V1 engine core's busy loop
    assert (r.failed_stage, r.first_exception and r.first_exception.line_number) == ("runtime", 39)
    assert classify_text(issue_text("1924.log")).first_exception is None  # V0: the prompt too long


WRAPPED = st.sampled_from(
    [("ValueError: To serve at least one request with the model's max seq len (1048576),",
      "22.5 GiB KV cache is needed, which is larger than the available KV cache memory (17.39 GiB).", "engine"),
     ("ValueError: Free memory on device xpu:0 (0.0/22.71 GiB) is less than",
      "desired GPU memory utilization (0.9, 20.44 GiB).", "engine"),
     ("RuntimeError: Cannot re-initialize CUDA in",
      "forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method", "device")]
)  # fmt: skip
INDENT = st.sampled_from(["", "    ", "(EngineCore_DP0 pid=7) "])


@given(WRAPPED, INDENT)
def test_a_wrapped_one_line_message_is_read_whole_for_its_stage(case, indent):
    first, rest, stage = case
    r = classify_text(f"```\n{indent}{first}\n{indent}{rest}\n```\n")
    assert r.first_exception is not None and first in r.first_exception.line
    assert r.failed_stage == stage, r.evidence


@given(WRAPPED, INDENT, st.sampled_from(["Even with an empty card it fails.", "INFO 01-01 00:00:00 [x.py:1] go on"]))
def test_a_new_sentence_or_a_loggers_line_after_it_is_not_its_message(case, indent, after):
    first, rest, _stage = case
    r = classify_text(f"{indent}{first}\n{indent}{after}\n{indent}{rest}\n")
    assert r.evidence is not None and r.evidence.rule == "default", r.evidence  # nothing else names a layer


def test_real_logs_wrapped_messages():
    for name, stage in (("3007.log", "engine"), ("3151.log", "engine"), ("1826.log", "engine")):
        assert classify_text(issue_text(name)).failed_stage == stage, name


CJK = st.sampled_from(["发送图片预估报错", "运行一段时间会报错：", "実行するとエラー", "사용 중 오류"])
QUOTED = st.sampled_from(
    ["ValueError: Attempted to assign 462 = 462 multimodal tokens to 463 placeholders",
     "FileNotFoundError: [Errno 2] No such file or directory: 'nvcc'",
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"]
)  # fmt: skip


@given(CJK, QUOTED, st.sampled_from(["", "vllm 0.9.1 ", "> "]))
def test_an_exception_glued_to_a_sentence_without_spaces_is_quoted(words, exception, lead):
    _rooted(f"{lead}{words}{exception}\n\nvllm serve /models/x --port 8080\n", exception)


@given(CJK, QUOTED.filter(lambda e: "memory" not in e))  # (an OOM said in prose is read as a root already)
def test_a_glued_quote_gives_way_to_the_logs_own_root(words, exception):
    log = f"vllm 部署后，{words}{exception}\nERROR 01-01 00:00:00 [core.py:1] RuntimeError: NCCL error: unhandled system error\n"
    _rooted(log, "NCCL error")


LAYER_WORDS = st.sampled_from(
    [("docker: Error response from daemon: failed to create task for container: failed to create shim task: "
      "OCI runtime create failed: runc create failed: unable to start container process: exit status 1", "container"),
     ("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.9, please update your driver", "container"),
     ("FileNotFoundError: [Errno 2] No such file or directory: 'ninja'", "container"),
     ("ValueError: GGUF model with architecture olmo2 is not supported yet", "weights"),
     ("ModuleNotFoundError: No module named 'transformers_modules.baidu.ERNIE-4'", "weights"),
     ("RuntimeError: The device doesn't support querying the available free memory.", "device"),
     ("cutlass.cute.nvgpu.common.OpError: OpError: expects arch to be one of ['sm_100a'], but got Arch.sm_121a", "device"),
     ("ValueError: max_num_seqs (1024) exceeds available Mamba cache blocks (614).", "engine"),
     ("AssertionError: Attempted to load weight (torch.Size([3840, 1280])) into parameter (torch.Size([1280, 3840]))", "weights"),
     ("ValueError: Cannot find the config file for squeezellm", "weights"),
     ("OSError: You are trying to access a gated repo.", "weights"),
     ("RuntimeError: Required aspect fp64 is not supported on the device", "device"),
     ("ValueError: Unknown attention backend: 'ASCEND'. Valid options are: FLASH_ATTN, TRITON_ATTN", "config"),
     ("AssertionError: Only SM 10.x and 11.x are supported", "device"),
     ("ValueError: Unsupported device: the device type is 7.", "device"),
     ("jax.errors.JaxRuntimeError: ABORTED: The TPU is already in use by process with pid 4242.", "device"),
     ("RuntimeError: npu_sys_ctrl.cpp:286 NPU function error: c10_npu::SetDevice(device), error code is 107001", "device"),
     ("zmq.error.ZMQError: Address already in use (addr='tcp://10.0.0.7:30012')", "engine"),
     ("ValueError: 'aimv2' is already used by a Transformers config, pick another name.", "container"),
     ("RuntimeError: Worker failed with error 'FlashInfer backend currently does not support attention sinks, "
      "please use trtllm on blackwell or flash attention on earlier GPUs.', please check the stack trace above", "engine")]
)  # fmt: skip


@given(LAYER_WORDS, st.sampled_from(["", "(EngineCore_DP0 pid=9) ", "ERROR 01-02 03:04:05 [core.py:700] "]))
def test_words_of_a_layer_in_the_roots_message(case, prefix):
    line, stage = case
    r = _rooted(f"{prefix}{line}\n", line)
    assert r.failed_stage == stage, r.evidence


def test_real_logs_quotes_glued_to_prose_and_words_of_a_layer():
    for name, stage, root in (
        ("3057.log", "runtime", "Attempted to assign 462"),
        ("1977.log", "container", "No such file or directory: 'nvcc'"),
        ("3010.log", "container", "nvidia-container-cli"),
        ("3111.log", "weights", "GGUF model with architecture olmo2"),
        ("3107.log", "weights", "transformers_modules"),
        ("3150.log", "device", "doesn't support querying"),
        ("2946.log", "device", "expects arch to be one of"),
        ("3110.log", "engine", "Mamba cache blocks"),
        ("2754.log", "weights", ""),
        ("2846.log", "weights", "Attempted to load weight"),
        ("2134.log", "weights", "config file for squeezellm"),
        ("1171.log", "weights", "gated repo"),
        ("1576.log", "config", "Unknown attention backend"),
        ("3201.log", "device", "Only SM 10.x and 11.x"),
        ("3355.log", "device", "Unsupported device"),
        ("3351.log", "engine", "does not support attention sinks"),
        ("3827.log", "device", "already in use"),
        ("3784.log", "device", "SetDevice"),
        ("3781.log", "engine", "ZMQError: Address already in use"),
        ("2250.log", "container", "is already used by a Transformers config"),
        ("1818.log", "engine", "does not support attention sinks"),
    ):
        r = classify_text(issue_text(name))
        assert r.failed_stage == stage and r.first_exception is not None and root in r.first_exception.line, name


PLATFORM = "INFO 07-30 15:32:48 [__init__.py:239] No platform detected, vLLM is running on UnspecifiedPlatform"
TORCH_WARNING = st.sampled_from(
    ["/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:991: UserWarning: CUDA initialization: "
     "Unexpected error from cudaGetDeviceCount(). Error 803: system has unsupported display driver / cuda driver combination",
     "/opt/venv/lib/python3.10/site-packages/torch/cuda/__init__.py:129: UserWarning: CUDA initialization: "
     "The NVIDIA driver on your system is too old (found version 11040)."]
)  # fmt: skip
THEN = st.sampled_from(["", "NotImplementedError: UnspecifiedPlatform does not support this\n",
                        "RuntimeError: Failed to infer device type\n"])  # fmt: skip


@given(TORCH_WARNING, st.booleans(), THEN)
def test_torchs_cuda_warning_says_why_no_platform_was_found(warning, platform_first, then):
    head = [PLATFORM, warning] if platform_first else [warning, PLATFORM]
    r = _rooted("\n".join(head) + "\n" + then, "CUDA initialization")
    assert r.failed_stage == "device"


def test_real_log_the_driver_warning_after_no_platform():
    r = classify_text(issue_text("3009.log"))
    assert r.first_exception is not None and "Error 803" in r.first_exception.line


@given(
    st.sampled_from(["serving_chat.py:158] ", "[serving_chat.py:158] ", "entrypoints/openai/serving_chat.py:158] "]),
    st.sampled_from(["jinja2.exceptions.TemplateSyntaxError: expected token 'end of print statement', got 'name'",
                     "jinja2.exceptions.UndefinedError: 'dict object' has no attribute 'content'"]),
)  # fmt: skip
def test_a_handlers_refusal_in_v0s_logger_format_is_one_requests(location, exception):
    log = f"ERROR 11-11 21:14:55 {location}{exception}\nINFO 11-11 21:14:56 metrics.py:1] Avg prompt throughput: 1 tokens/s\n"
    r = classify_text(log)
    assert r.first_exception is None and r.failed_stage == "none", r


@given(
    st.sampled_from(["worker exited with exit code 136", "Worker exited with exit status 137",
                     "engine process exited with code 139"]),
    st.sampled_from(["", "0s0n9esxgd0u45[error]", "(APIServer pid=1) ERROR 01-01 00:00:00 [launcher.py:1] "]),
)  # fmt: skip
def test_a_signals_exit_status_is_a_kill(line, prefix):
    _rooted(f"{prefix}{line}\n", line)


@given(st.sampled_from(["worker exited with exit code 1", "exited with code 0", "exited with exit code 2"]))
def test_an_ordinary_exit_status_is_no_kill(line):
    assert classify_text(f"{line}\n").first_exception is None


def test_real_log_a_kill_and_a_vllm_line_behind_a_platforms_prefix():
    r = classify_text(issue_text("3259.log"))
    assert r.first_exception is not None and "exit code 136" in r.first_exception.line
    assert r.evidence is not None and r.evidence.rule != "markers"  # the log went on after it


VLLM_WORDS = st.sampled_from(
    ["Sequence group 5 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space.",
     "Processed prompts: 100%|██████████| 2/2 [00:00<00:00,  8.93it/s, est. speed input: 17.86 toks/s]",
     "============ Serving Benchmark Result ============", "Increase gpu_memory_utilization or tensor_parallel_size",
     "the enginecore process is gone"]
)  # fmt: skip
PLAIN_TEXT = st.lists(
    st.sampled_from(["Successful requests: 1", "Duration: 0.25", "the run finished", "RPS: 7.7"]), max_size=5
)


@given(VLLM_WORDS, PLAIN_TEXT, PLAIN_TEXT)
def test_a_word_only_vllm_prints_makes_an_excerpt_a_vllm_log(words, before, after):
    r = classify_text("\n".join([*before, words, *after]) + "\n")
    assert r.failed_stage == "none", r.evidence


@given(PLAIN_TEXT.filter(bool))
def test_without_one_it_is_not_a_vllm_log(lines):
    assert classify_text("\n".join(lines) + "\n").failed_stage == "unknown"


def test_real_logs_short_excerpts_of_vllm_words():
    for name in ("2607.log", "2610.log", "2851.log"):
        assert classify_text(issue_text(name)).failed_stage == "none", name


LOADER = [
    (f"{SITE}/vllm/entrypoints/llm.py", "__init__"),
    (f"{SITE}/vllm/model_executor/model_loader/loader.py", "load_model"),
    (f"{SITE}/safetensors/torch.py", "load_file"),
]


@given(st.integers(1, 14), st.booleans())
def test_a_traceback_a_paste_indented_whole(indent, wrapped):
    pad = " " * indent
    lines = [f"{pad}Traceback (most recent call last):"]
    lines += [f'{pad}  File "{p}", line 7, in {f}\n{pad}    call()' for p, f in LOADER]
    inner = "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge"
    if wrapped:  # Ray's RuntimeError carrying the remote traceback as its message
        lines = [f"{pad}RuntimeError: Traceback (most recent call last):", *lines[1:]]
    log = "deployment status:\n" + "\n".join([*lines, f"{pad}{inner}"]) + "\n"
    r = classify_text(log)
    assert r.first_exception is not None and r.first_exception.line.strip() == inner, r
    assert r.failed_stage == "weights"


def test_real_logs_an_indented_paste_and_a_head_indented_alone():
    r = classify_text(issue_text("2766.log"))  # Ray Serve's status block: the wrapper's inner traceback
    assert (
        r.first_exception is not None and r.first_exception.line.strip() == "RuntimeError: No CUDA GPUs are available"
    )
    r = classify_text(issue_text("1844.log"))  # ' Traceback …' one space in, frames as Python prints them
    assert r.failed_stage == "config" and r.evidence is not None and r.evidence.rule == "frames"


@given(
    st.sampled_from(["future: <Future finished exception={r}>", "future: <Task finished name='Task-2' coro=<run() done, defined at /x.py:1> exception={r}>"]),
    st.sampled_from([("AttributeError", "'_OpNamespace' '_C' object has no attribute 'ggml_dequantize'"),
                     ("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB")]),
    st.sampled_from(["", "llm-vllm-dev  | "]),
)  # fmt: skip
def test_a_tasks_exception_nobody_retrieved_wraps_the_traceback_after_it(form, exc, prefix):
    typ, msg = exc
    repr_ = f'{typ.rsplit(".", 1)[-1]}("{msg}")'
    lines = ["Task exception was never retrieved", form.format(r=repr_), "Traceback (most recent call last):",
             f'  File "{SITE}/vllm/engine/async_llm_engine.py", line 9, in run_engine_loop', "    step()",
             f"{typ}: {msg}"]  # fmt: skip
    r = classify_text("".join(f"{prefix}{x}\n" for x in lines))
    assert r.first_exception is not None and r.first_exception.line == f"{prefix}{typ}: {msg}", r


def test_real_log_a_futures_repr_then_its_traceback():
    r = classify_text(issue_text("2543.log"))
    assert r.first_exception is not None and r.first_exception.line.endswith(
        "AttributeError: '_OpNamespace' '_C' object has no attribute 'ggml_dequantize'"
    )


@given(
    st.sampled_from(["AttributeError: 'AsyncLLM' object has no attribute 'engine'",
                     "TypeError: build_async_engine_client_from_engine_args() got an unexpected keyword argument 'stat_loggers'"]),
    st.sampled_from(["", "vllm-openai-1  | E0911 08:21:51.554457 1 pb_stub.cc:389] \"", "[tritonserver] "]),
)  # fmt: skip
def test_tritons_python_stub_that_cannot_set_up_vllm(error, prefix):
    assert _rooted(f"{prefix}Failed to initialize Python stub: {error}\n", error).failed_stage == "container"


def test_real_log_tritons_stub():
    r = classify_text(issue_text("3505.log"))
    assert r.failed_stage == "container" and r.first_exception is not None


@given(
    st.sampled_from(["ValueError: max_tokens must be at least 1, got -3173.", "ValueError: top_p must be in (0, 1], got 0.0.",
                     "ValueError: temperature must be non-negative, got -1.0."]),
    st.sampled_from(["", "(APIServer pid=9) ERROR 09-01 10:00:00 [serving_chat.py:222] "]),
)  # fmt: skip
def test_a_requests_sampling_parameters_out_of_range_are_refused(error, prefix):
    log = f'{prefix}{error}\nINFO:     127.0.0.1:50000 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n'
    r = classify_text(log)
    assert r.first_exception is None and r.failed_stage == "none", r


def test_real_log_a_refused_sampling_parameter():
    assert classify_text(issue_text("3403.log")).first_exception is None


@given(
    st.sampled_from(["python3: /project/lib/Dialect/TritonGPU/Transforms/AccelerateMatmul.cpp:42: int f(int): Assertion `false && \"computeCapability not supported\"' failed.",
                     "/usr/include/c++/12/bits/stl_vector.h:1123: reference std::vector<long>::operator[](size_type) [with _Tp = long; size_type = long unsigned int]: Assertion '__n < this->size()' failed.",
                     "Assertion `ind >=0 && ind < ind_dim_size && \"vectorized gather kernel index out of bounds\"` failed."]),
    st.sampled_from(["", "(EngineCore_DP0 pid=7) "]),
)  # fmt: skip
def test_a_failed_assert_is_a_native_crash(line, prefix):
    _rooted(f"INFO 01-01 00:00:00 [core.py:1] warming up\n{prefix}{line}\n{prefix}Aborted (core dumped)\n", line)


def test_real_logs_failed_asserts():
    for name, stage in (("3158.log", "engine"), ("2701.log", "device")):
        r = classify_text(issue_text(name))
        assert r.failed_stage == stage and r.first_exception is not None and "Assertion" in r.first_exception.line, name


@given(
    st.sampled_from(["AttributeError: 'CutlassMLAImpl' object has no attribute '_workspace_buffer'",
                     "IndexError: list index out of range"]),
    st.sampled_from([("EngineCore encountered a fatal error.", "runtime"), ("EngineCore failed to start.", "engine")]),
)  # fmt: skip
def test_the_engine_cores_words_after_a_workers_root_say_when(error, after):
    said, stage = after
    w, e = (
        "(Worker_TP1_EP1 pid=88) ERROR 12-22 10:52:18 [multiproc_executor.py:824] ",
        "(EngineCore_DP0 pid=77) ERROR 12-22 10:52:18 [core.py:870] ",
    )
    lines = [f"{w}Traceback (most recent call last):", f'{w}  File "{SITE}/mylib/impl.py", line 3, in run', f"{w}    x()",
             f"{w}{error}", f"{e}{said}", f"{e}Traceback (most recent call last):"]  # fmt: skip
    r = _rooted("\n".join(lines) + "\n", error)
    assert r.failed_stage == stage, r.evidence


def test_real_log_a_fatal_error_after_a_workers_root():
    assert classify_text(issue_text("3601.log")).failed_stage == "runtime"


@given(st.sampled_from(["_C", "_core_C", "_moe_C", "_rocm_C"]))
def test_a_sibling_extensions_failed_import_is_the_root_of_what_it_causes(ext):
    warning = f"WARNING 05-01 10:00:00 [_custom_ops.py:21] Failed to import from vllm.{ext} with ImportError('libtorch_hip.so: cannot open shared object file: No such file or directory')"
    caused = f"RuntimeError: Tried to instantiate class '{ext}.ScalarType', but it does not exist! Ensure that it is registered via torch::class_"
    r = _rooted(
        f"{warning}\nINFO 05-01 10:00:01 [api_server.py:1] vLLM API server version 0.9.0\n{caused}\n", f"vllm.{ext}"
    )
    assert r.failed_stage == "container", r.evidence


def test_real_log_a_core_c_extension_that_did_not_load():
    r = _rooted(issue_text("3713.log"), "Failed to import from vllm._core_C")
    assert r.failed_stage == "container"


REPRS = st.sampled_from([("ValueError", "Sampling parameters are missing for a CompletionRequest."),
                         ("RuntimeError", "shape '[14, -1]' is invalid for input of size 768")])  # fmt: skip
V0 = "ERROR 04-23 02:30:31 [engine.py:160] "


@given(REPRS, st.sampled_from(["'", '"']))
def test_an_exception_logged_by_its_repr_then_its_traceback(exc, quote):
    typ, msg = exc
    lines = [f"{V0}{typ}({quote}{msg}{quote})", f"{V0}Traceback (most recent call last):",
             f'{V0}  File "{SITE}/vllm/engine/multiprocessing/engine.py", line 158, in start', f"{V0}    self.run()",
             f"{V0}{typ}: {msg}"]  # fmt: skip
    r = _rooted("\n".join(lines) + "\n", f"{typ}: {msg}")
    assert r.first_exception.line.endswith(f"{typ}: {msg}")


@given(REPRS)
def test_a_repr_alone_is_the_root(exc):
    typ, msg = exc
    later = "".join(f"INFO 04-23 02:30:{i:02d} [metrics.py:1] Avg prompt throughput: 0.0 tokens/s\n" for i in range(60))
    _rooted(f"{V0}{typ}('{msg}')\n{later}", f"{typ}('{msg}')")


def test_real_logs_a_repr_then_its_traceback():
    for name, line in (
        ("3811.log", "ValueError: Sampling parameters are missing"),
        ("3256.log", "ValueError: Attempted to assign"),
    ):
        _rooted(issue_text(name), line)


@given(
    st.sampled_from(['This PR fixes the "{e}" error introduced after the rebase.', "multi HPUs will encounter “{e}” at start-up",
                     'it crashed with "{e}'.rstrip()]),
    st.sampled_from(["RuntimeError: HPU does not have device capability.", "ValueError: zero-dimensional arrays cannot be concatenated"]),
)  # fmt: skip
def test_an_exception_quoted_between_double_quotes(sentence, exception):
    line = sentence.format(e=exception)
    _rooted(f"{line}\nThe fix keeps the device string as it is.\n", exception.rstrip("."))


def test_a_quoted_word_that_is_no_exception_is_no_root():
    assert classify_text('We renamed the "ValueErrorHandler" and the "Error" tab.\n').first_exception is None


def test_real_logs_exceptions_between_double_quotes():
    for name, part in (
        ("3909.log", "HPU does not have device capability"),
        ("3910.log", "is already used by a Transformers config"),
    ):
        _rooted(issue_text(name), part)


def test_the_why_names_a_frame_known_only_from_a_source_line_as_a_call():
    """2838's stack is logged with ``engine_core.run_busy_loop()`` as the source line under a frame: the
    one-line why says "a call to run_busy_loop", not "run_busy_loop ()" (an empty file name)."""
    why = classify_text(issue_text("2838.log")).evidence.why
    assert "a call to run_busy_loop" in why and "()" not in why, why


@given(
    st.sampled_from(["ImportError: sys.meta_path is None, Python is likely shutting down",
                     "RuntimeError: cannot schedule new futures after interpreter shutdown",
                     "RuntimeError: can't create new thread at interpreter shutdown"]),
    st.booleans(),
)  # fmt: skip
def test_an_exception_raised_while_the_interpreter_exits_is_noise(exception, traced):
    head = "INFO 01-01 00:00:00 [llm.py:1] Processed prompts: 100% 2/2\n"
    body = (f'Traceback (most recent call last):\n  File "{SITE}/vllm/worker/hpu_model_runner.py", line 3505, in __del__\n'
            f"    self.shutdown_inc()\n{exception}\n") if traced else f"{exception}\n"  # fmt: skip
    r = classify_text(head + body)
    assert r.first_exception is None and r.failed_stage == "none", r


def test_real_log_an_import_at_exit():
    assert classify_text(issue_text("3857.log")).first_exception is None


@given(
    st.sampled_from(["AttributeError: 'Parameter' object has no attribute", "AttributeError: '_OpNamespace' '_C_ascend' object has no"]),
    st.sampled_from(["This PR fixes an `{e}", "the error `{e}  "]),
)  # fmt: skip
def test_a_backtick_quote_a_wrap_cut_before_its_closing_mark(exception, sentence):
    log = sentence.format(e=exception) + "\n'data'` that occurs when MLAPO is enabled.\n"
    _rooted(log, exception)


def test_real_logs_backtick_quotes_cut_by_a_wrap():
    for name, part in (("3991.log", "'Parameter' object has no attribute"), ("3995.log", "'_C_ascend' object has no")):
        _rooted(issue_text(name), part)

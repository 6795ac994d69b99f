"""Issue 13, fifteenth session: forms and rules found in the tuned misses.

- A text in which nothing fails but a Python exception is reported all the same (one request refused
  and answered, an exception a destructor raised at the interpreter's exit, a client's 400) is a
  program's log: ``none``, not "not a vLLM log". Every other exception line already makes a text a
  log (it is the root). Plain text with no exception in it (``/etc/passwd``) is still ``unknown``.
- pytest's report of a failed test: the exception behind its ``E`` column, unless pytest says it was
  raised in the test's own file (the test's verdict); its short summary when no ``E`` line came before.
- A message a wrap cut (after a quoted name, inside a reporter's quote) is read whole.
- Frames of vLLM's platform plugins and forks are placed as vLLM's own.
- The line a logger printed an exception's message on, before its traceback, is the root's context.
- A package a layer could not import is the image's, whatever layer imported it (not once the API
  served, not a model's remote code, not a load format's library).
- A refusal's traceback cut by the paste's end; a hub with no such revision; an OSError's text after a
  program's words and a full disk; an ERROR line naming a layer before ``EngineCore failed to start.``;
  ``Model type X not supported``.

Each on generated excerpts and on real logs of the tuned part; each fails without its change (the
guards, which say what a rule must leave alone, pass either way).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import issue_text

PLAIN = st.lists(
    st.sampled_from(
        [
            "Here is what I see:",
            "Prompt: 'Hello, my name is', Generated text: ' Dustin and I like'",
            "the run finished",
            "Duration: 0.25",
            "root:x:0:0:root:/root:/bin/bash",
        ]
    ),
    max_size=4,
)
NO_FAILURE = st.sampled_from(
    [
        # one request refused and answered: the server goes on
        "ValueError: As of transformers v4.44, default chat template is no longer allowed, so you must "
        "provide a chat template if the tokenizer does not define one.",
        "openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': 'pooled_data should be "
        "a 1-D embedding vector', 'type': 'BadRequestError', 'param': None, 'code': 400}",
        "ValueError: This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
        "(4000 in the messages, 1000 in the completion).",
        # raised while the interpreter exits: noise, reported and ignored
        "Exception ignored in: <function TCPStore.__del__ at 0x7f930d38e8c0>\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/dist-packages/cupyx/distributed/_store.py", line 59, in __del__\n'
        "TypeError: 'NoneType' object is not callable",
        "RuntimeError: cannot schedule new futures after interpreter shutdown",
    ]
)
FENCE = st.sampled_from([("", ""), ("```\n", "\n```"), ("`", "`")])


@given(before=PLAIN, report=NO_FAILURE, after=PLAIN, fence=FENCE)
def test_an_exception_reported_without_a_failure_makes_a_log_with_none(before, report, after, fence) -> None:  # noqa: ANN001
    if fence[0] == "`" and "\n" in report:
        fence = ("", "")  # (inline code holds one line)
    text = "\n".join([*before, fence[0] + report + fence[1], *after]) + "\n"
    res = classify_text(text)
    assert (res.failed_stage, res.first_exception) == ("none", None), res.evidence
    assert res.evidence is not None and res.evidence.rule == "no-root"


@given(lines=PLAIN.filter(bool))
def test_text_without_any_exception_is_still_not_a_vllm_log(lines) -> None:  # noqa: ANN001
    res = classify_text("\n".join(lines) + "\n")
    assert res.failed_stage == "unknown" and res.evidence is not None and res.evidence.rule == "not-a-vllm-log"


def test_real_excerpts_that_report_an_exception_and_fail_nowhere_are_none() -> None:
    # 2776: an offline run's output, then a destructor's exception ignored at exit; 2889: a chat request
    # refused for its template, in inline code; 4133: a client's 400 for a reward model's request
    for name in ("2776.log", "2889.log", "4133.log"):
        res = classify_text(issue_text(name))
        assert (res.failed_stage, res.first_exception) == ("none", None), (name, res.evidence)


# pytest's report of a failed test: the source of the frame, ``>`` at the failing line, the exception
# behind ``E`` and the source's indentation, then where it was raised; the short summary at the end
EXC = st.sampled_from(
    [
        ("IndexError", "list index out of range"),
        ("RuntimeError", "torch.cat(): expected a non-empty list of Tensors"),
        ("AssertionError", "Scalars are not close!"),
        ("AttributeError", "'PoolerConfig' object has no attribute 'pooling_norm'"),
        ("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 20.00 MiB"),
    ]
)
LIBRARY = st.sampled_from(
    ["../vllm/model_executor/models/utils.py", "/usr/lib/python3/dist-packages/vllm/v1/core/sched/scheduler.py"]
)
TEST_FILE = st.sampled_from(
    ["tests/samplers/test_logprobs.py", "tests/model_executor/test_model_load_with_params.py", "conftest.py"]
)


def _pytest_report(exc: tuple[str, str], where: str, indent: int, more: list[str], summary: bool) -> str:
    pad = " " * indent
    lines = [
        "    def run(self, inputs):",
        f">{pad[1:]}    return self.model(inputs)",
        f"E{pad}{exc[0]}: {exc[1]}",
        *[f"E{pad}{m}" if m else f"E{pad}" for m in more],
        "",
        f"{where}:{indent * 7 + 12}: {exc[0].rsplit('.', 1)[-1]}",
    ]
    if summary:
        lines += ["=== short test summary info ===", f"FAILED tests/test_x.py::test_y[1] - {exc[0]}: {exc[1]}"]
    return "\n".join(lines) + "\n"


MORE = st.lists(st.sampled_from(["", "Expected -1.39 but got -1.43.", "Absolute difference: 0.03"]), max_size=3)


@given(exc=EXC, where=LIBRARY, indent=st.integers(3, 20), more=MORE, summary=st.booleans())
def test_pytests_exception_raised_in_the_code_under_test_is_the_root(exc, where, indent, more, summary) -> None:  # noqa: ANN001
    res = classify_text(_pytest_report(exc, where, indent, more, summary))
    fe = res.first_exception
    assert fe is not None and f"{exc[0]}: {exc[1]}" in fe.line and fe.line.startswith("E"), res.evidence
    assert fe.line_number == 3


@given(exc=EXC, where=TEST_FILE, indent=st.integers(3, 20), more=MORE, summary=st.booleans())
def test_an_exception_raised_in_the_tests_own_file_is_its_verdict_not_a_failure(
    exc, where, indent, more, summary
) -> None:  # noqa: ANN001
    res = classify_text(_pytest_report(exc, where, indent, more, summary))
    assert (res.failed_stage, res.first_exception) == ("none", None), res.evidence


@given(exc=EXC, n=st.integers(1, 4))
def test_pytests_short_summary_alone_names_the_exception(exc, n) -> None:  # noqa: ANN001
    lines = [f"FAILED tests/models/test_models.py::test_models[{i}-half] - {exc[0]}: {exc[1]}" for i in range(n)]
    res = classify_text("```\n" + "\n".join(lines) + "\n```\n")
    fe = res.first_exception
    assert fe is not None and f"{exc[0]}: {exc[1]}" in fe.line and fe.line_number == 2


def test_real_pytest_reports() -> None:
    roots = {
        "1721.log": "E       AssertionError: scheduled_new_reqs: 0",  # raised in vllm's scheduler
        "2852.log": "E       RuntimeError: torch.cat(): expected a non-empty list of Tensors",
        "2935.log": "E       IndexError: list index out of range",  # the E line and its source only
        "3994.log": "E   AttributeError: 'dict' object has no attribute 'model_type'",
        "2902.log": "AssertionError: tensor model parallel group is already initialized",  # the summary only
    }
    for name, root in roots.items():
        fe = classify_text(issue_text(name)).first_exception
        assert fe is not None and root in fe.line, (name, fe)
    for name in ("2708.log", "2885.log"):  # assert_close in the test; an attribute the test itself reads
        res = classify_text(issue_text(name))
        assert (res.failed_stage, res.first_exception) == ("none", None), (name, res.evidence)


# a message a wrap cut in two (a terminal, a commit message's 72 columns): the words that place it may
# straddle the cut, after a quoted name (``module 'x'`` / ``has no attribute``) or inside a reporter's quote
CONTAINER_MESSAGES = st.sampled_from(
    [
        "AttributeError: module 'vllm.model_executor.layers.fused_moe.layer' has no attribute 'FusedMoEFactory'",
        "AttributeError: '_OpNamespace' '_C_ascend' object has no attribute 'weak_ref_tensor'",
        "AttributeError: '_OpNamespace' '_C' object has no attribute 'gelu_quick'",
    ]
)


def _cut(message: str, at: int) -> tuple[str, str]:
    words = message.split(" ")
    at = max(2, min(at, len(words) - 1))
    return " ".join(words[:at]), " ".join(words[at:])


WRAPPED = st.sampled_from(
    [
        "crashing all the daily tests with:\n\n{head}\n{rest}\n",  # the message's own lines
        "crashing all the daily tests with:\n\n    {head}\n    {rest}\n",
        "When running the code, the error `{head}\n{rest}` is raised. Let's pin the version.\n",  # a quote in prose
        "When running the code, the error `{head}\n{rest}` Let's pin the version.\n",
    ]
)


@given(msg=CONTAINER_MESSAGES, at=st.integers(2, 12), form=WRAPPED)
def test_a_message_a_wrap_cut_is_read_whole(msg, at, form) -> None:  # noqa: ANN001
    """After a quoted name or a word (a message's own lines), or inside a reporter's quote (to its closing mark)."""
    head, rest = _cut(msg, at)
    res = classify_text(form.format(head=head, rest=rest))
    assert res.failed_stage == "container", (head, rest, res.evidence)
    assert res.first_exception is not None and head.split("`")[-1].strip()[:20] in res.first_exception.line


def test_real_messages_cut_by_a_wrap() -> None:
    # 3966: `module '…layer'` / `has no attribute` on two indented lines of a commit message; 3855: the same
    # after a cut vLLM prefix; 3995: a quote of the Ascend ops' namespace cut by the commit message's wrap
    for name in ("3966.log", "3855.log", "3995.log"):
        res = classify_text(issue_text(name))
        assert res.failed_stage == "container", (name, res.evidence)


# vLLM's platform plugins and forks keep its package's layout (vllm_ascend/worker/…,
# aphrodite/modeling/…): their frames are placed as vLLM's own are
FRAMES = st.sampled_from(
    [
        ("model_executor/model_loader/default_loader.py", "load_weights", "weights"),
        ("distributed/parallel_state.py", "init_distributed_environment", "engine"),
        ("v1/core/sched/scheduler.py", "schedule", "runtime"),
        ("platforms/cuda.py", "get_device_capability", "device"),
        ("compilation/backends.py", "compile", "engine"),
        ("config/model.py", "_verify_quantization", "config"),
    ]
)
PACKAGE = st.sampled_from(["vllm_ascend", "vllm_gaudi", "vllm_hpu_extension", "aphrodite"])
EXCEPTIONS = st.sampled_from(["RuntimeError: something failed", "ValueError: bad value 7", "AssertionError"])


def _traceback(package: str, frame: tuple[str, str, str], exc: str) -> str:
    path, func, _stage = frame
    return (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner\n'
        "    self.run()\n"
        f'  File "/usr/local/lib/python3.11/site-packages/{package}/{path}", line 120, in {func}\n'
        "    do_it()\n"
        f"{exc}\n"
    )


@given(package=PACKAGE, frame=FRAMES, exc=EXCEPTIONS)
def test_a_plugins_or_forks_frame_is_placed_as_vllms_own(package, frame, exc) -> None:  # noqa: ANN001
    own = classify_text(_traceback("vllm", frame, exc))
    theirs = classify_text(_traceback(package, frame, exc))
    assert own.failed_stage == frame[2], own.evidence
    assert (theirs.failed_stage, theirs.evidence.rule) == (own.failed_stage, "frames"), theirs.evidence


def test_real_plugin_frames() -> None:
    # 3751: vllm_ascend's model runner synchronising the NPU after a step (the sampler's work): serving
    res = classify_text(issue_text("3751.log"))
    assert (res.failed_stage, res.evidence.rule) == ("runtime", "frames"), res.evidence


# V0's engine logs an exception's message, then its traceback (``logger.exception``): the message's line is
# the same failure's first line, reported beside the root as its context
MESSAGES = st.sampled_from(
    [
        (
            "TypeError",
            "Received a CachedWhisperTokenizerFast for argument tokenizer, but a WhisperTokenizer was expected.",
        ),
        ("AttributeError", "'MiniCPMOProcessor' object has no attribute 'get_audio_placeholder'"),
        ("ValueError", "The model's max seq len (32768) is larger than the maximum number of tokens"),
    ]
)
PREFIXES = st.sampled_from(["ERROR 07-09 02:09:12 [engine.py:458] ", "ERROR 02-06 18:02:00 engine.py:387] "])


@given(message=MESSAGES, prefix=PREFIXES, frames=st.integers(1, 4))
def test_the_message_a_logger_printed_before_its_traceback_is_the_roots_context(message, prefix, frames) -> None:  # noqa: ANN001
    typ, msg = message
    lines = [f"{prefix}{msg}", f"{prefix}Traceback (most recent call last):"]
    for i in range(frames):
        lines += [
            f'{prefix}  File "/usr/lib/python3/dist-packages/vllm/engine/m{i}.py", line {10 + i}, in run_{i}',
            f"{prefix}    step()",
        ]
    lines.append(f"{prefix}{typ}: {msg}")
    res = classify_text("\n".join(lines) + "\n")
    fe = res.first_exception
    assert fe is not None and fe.line == lines[-1] and fe.context == lines[0]


@given(message=MESSAGES, prefix=PREFIXES)
def test_a_header_that_says_something_else_is_no_context(message, prefix) -> None:  # noqa: ANN001
    typ, msg = message
    lines = [
        f"{prefix}Error executing method 'start_worker_execution_loop'. This might cause deadlock in distributed execution.",
        f"{prefix}Traceback (most recent call last):",
        f'{prefix}  File "/usr/lib/python3/dist-packages/vllm/worker/worker_base.py", line 10, in execute_method',
        f"{prefix}    step()",
        f"{prefix}{typ}: {msg}",
    ]
    fe = classify_text("\n".join(lines) + "\n").first_exception
    assert fe is not None and fe.line == lines[-1] and fe.context is None


def test_real_headers_logged_before_their_tracebacks() -> None:
    for name, said in (
        ("2556.log", "[engine.py:458] Received a CachedWhisperTokenizerFast"),
        ("2793.log", "engine.py:387] 'MiniCPMOProcessor' object has no attribute"),
    ):
        fe = classify_text(issue_text(name)).first_exception
        assert fe is not None and fe.context is not None and said in fe.context, (name, fe)


# a package a layer imports where it first needs it (a kernel library, a quantisation back-end): missing
# or broken, it is the image's fault, whatever layer's frames imported it; not once the API was serving,
# nor a model's own remote code (transformers_modules: the weights)
IMPORTS = st.sampled_from(
    [
        "ModuleNotFoundError: No module named 'bitsandbytes'",
        "ModuleNotFoundError: No module named 'triton.language.target_info'",
        "ImportError: cannot import name 'get_cache_key' from 'triton.runtime.cache'",
        "ModuleNotFoundError: No module named 'intel_extension_for_pytorch'",
    ]
)
LAYER_FRAMES = st.sampled_from(
    [
        ("model_executor/layers/quantization/bitsandbytes.py", "__init__", "weights"),
        ("v1/worker/gpu_model_runner.py", "profile_run", "engine"),
        ("v1/worker/gpu_model_runner.py", "execute_model", "runtime"),
    ]
)


@given(exc=IMPORTS, frame=LAYER_FRAMES)
def test_a_package_a_layer_could_not_import_is_the_image(exc, frame) -> None:  # noqa: ANN001
    res = classify_text(_traceback("vllm", frame, exc))
    assert (res.failed_stage, res.evidence.rule) == ("container", "frames"), res.evidence
    assert frame[1] in res.evidence.why


@given(frame=LAYER_FRAMES)
def test_a_models_remote_code_that_could_not_be_imported_stays_its_layers(frame) -> None:  # noqa: ANN001
    exc = "ModuleNotFoundError: No module named 'transformers_modules.deepseek-ai.DeepSeek-V2'"
    assert classify_text(_traceback("vllm", frame, exc)).failed_stage != "container"


@given(exc=IMPORTS, func=st.sampled_from(["fastsafetensors_weights_iterator", "load_weights", "_prepare_weights"]))
def test_a_load_formats_library_the_model_loader_could_not_import_is_the_weights(exc, func) -> None:  # noqa: ANN001
    res = classify_text(_traceback("vllm", ("model_executor/model_loader/weight_utils.py", func, "weights"), exc))
    assert res.failed_stage == "weights", res.evidence


@given(exc=IMPORTS, frame=LAYER_FRAMES)
def test_an_import_that_failed_once_the_api_served_is_not_the_image(exc, frame) -> None:  # noqa: ANN001
    ready = 'INFO:     Application startup complete.\nINFO:     127.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    res = classify_text(ready + _traceback("vllm", frame, exc))
    assert res.failed_stage != "container", res.evidence


def test_real_packages_a_layer_could_not_import() -> None:
    # 2683: IPEX imported by the model runner of an offline generate(); 4748: triton's cache key by the
    # model registry's subprocess; 4750: triton's target_info by mxfp4's weight processing; 5015:
    # bitsandbytes by its quantisation config
    for name in ("2683.log", "4748.log", "4750.log", "5015.log"):
        res = classify_text(issue_text(name))
        assert (res.failed_stage, res.evidence.rule) == ("container", "frames"), (name, res.evidence)


# a request handler's refusal logged as a header, then its traceback cut by the end of the paste:
# the cut traceback is that request's, not a root
REFUSALS = st.sampled_from(
    [
        "ERROR 11-11 21:14:55 serving_chat.py:158] jinja2.exceptions.TemplateSyntaxError: expected token 'end of print statement', got 'name'",
        "(APIServer pid=7) ERROR 05-02 10:00:01 [serving_chat.py:222] Error in preprocessing prompt inputs: chat template is not set",
    ]
)


@given(header=REFUSALS, frames=st.integers(1, 3), literal_newline=st.booleans())
def test_a_refusals_traceback_cut_by_the_pastes_end_is_no_root(header, frames, literal_newline) -> None:  # noqa: ANN001
    prefix = header[: header.index("] ") + 2]
    lines = [header + ("\\n" if literal_newline else "")]
    lines += [f'{prefix}File "<unknown>", line {27 + i}, in template' for i in range(frames)]
    res = classify_text("```\n" + "\n".join(lines) + "\n")
    assert (res.failed_stage, res.first_exception) == ("none", None), res.evidence


def test_a_refusals_cut_traceback_through_the_engines_loop_is_still_a_root() -> None:
    """As ``_refused`` says of a whole traceback: nothing caught it for that one request when it runs
    through the engine's busy loop."""
    header = "ERROR 11-11 21:14:55 serving_chat.py:158] jinja2.exceptions.TemplateSyntaxError: expected token 'end'"
    prefix = header[: header.index("] ") + 2]
    lines = [
        header,
        f'{prefix}File "/usr/lib/python3/dist-packages/vllm/v1/engine/core.py", line 700, in run_busy_loop',
    ]
    res = classify_text("\n".join(lines) + "\n")
    assert res.first_exception is not None and res.first_exception.line == header, res.evidence


def test_real_refusal_with_its_traceback_cut() -> None:
    # 1515: RunPod's log viewer; the chat template fails to render on each request, the server goes on
    res = classify_text(issue_text("1515.log"))
    assert (res.failed_stage, res.first_exception) == ("none", None), res.evidence


@given(
    model=st.sampled_from(["Qwen/Qwen2.5-VL-7B-Instruct", "moonshotai/Kimi-K3", "deepseek-ai/DeepSeek-V3"]),
    rev=st.sampled_from(["main", "v1.0", "refs/pr/12"]),
    frame=LAYER_FRAMES,
)
def test_a_hub_with_no_such_revision_is_the_weights_wherever_it_was_asked(model, rev, frame) -> None:  # noqa: ANN001
    exc = f"ValueError: The model: {model} has no revision: {rev} !"
    res = classify_text(_traceback("vllm", frame, exc))
    assert res.failed_stage == "weights", res.evidence


# an OSError's text after a program's own words is a root; a disk or quota full before serving is the
# weights' (the model's files are what a server writes then), not NCCL's shared memory
ERRNO = st.sampled_from(["[Errno 122] Disk quota exceeded", "[Errno 28] No space left on device"])
WORDS = st.sampled_from(["LLM init error: ", "Model download error: ", "ERROR: failed to start. Error: "])


@given(words=WORDS, errno=ERRNO, before=st.integers(0, 5))
def test_an_oserrors_text_after_a_programs_words_is_the_root(words, errno, before) -> None:  # noqa: ANN001
    lines = ["INFO 01-02 10:00:00 [api_server.py:1] vLLM API server version 0.11.0"] * before + [words + errno]
    res = classify_text("\n".join(lines) + "\n")
    assert res.first_exception is not None and errno in res.first_exception.line
    assert res.failed_stage == "weights", res.evidence


@given(errno=ERRNO)
def test_an_error_a_program_says_it_ignores_is_no_root(errno) -> None:  # noqa: ANN001
    line = f"(APIServer pid=2) Could not cache non-existence of file. Will ignore error and continue. Error: {errno}: '/hub/x'"
    res = classify_text(
        line + "\nINFO 01-02 10:00:09 [api_server.py:9] Starting vLLM API server on http://0.0.0.0:8000\n"
    )
    assert (res.failed_stage, res.first_exception) == ("none", None), res.evidence


@given(errno=ERRNO, path=st.sampled_from(["/dev/shm/psm_1a2b", "/dev/shm/nccl-ab12"]))
def test_shared_memory_full_is_not_the_weights(errno, path) -> None:  # noqa: ANN001
    res = classify_text(f"OSError: {errno}: '{path}'\n")
    assert res.first_exception is not None and res.failed_stage != "weights", res.evidence


# an ERROR line naming a layer's failure in words, then the start-up's failure report (``EngineCore failed
# to start.`` and its traceback, or a consequence): that line is the reason, and the root
REASONS = st.sampled_from(
    [
        ("[nixl_connector.py:343] NIXL is not available", "container"),
        ("[utils.py:88] DeepGEMM backend is not available or outdated. Please install or update it", "container"),
        ("[cuda.py:120] Error 804: forward compatibility was attempted on non supported HW", "device"),
    ]
)
STAMP = st.sampled_from(["", "2025-08-03T11:35:28.409790786Z stdout F "])
PROCESS = st.sampled_from(["", "(EngineCore_DP0 pid=42) "])


@given(reason=REASONS, stamp=STAMP, process=PROCESS, cut=st.booleans())
def test_an_error_line_naming_a_layer_before_a_start_up_failures_report_is_the_root(
    reason, stamp, process, cut
) -> None:  # noqa: ANN001
    said, stage = reason
    pre = f"{stamp}{process}ERROR 08-03 11:35:28 "
    lines = [
        f"{pre}{said}",
        f"{pre}[core.py:519] EngineCore failed to start.",
        f"{pre}[core.py:519] Traceback (most recent call last):",
    ]
    lines += [
        f'{pre}[core.py:519]   File "/usr/lib/python3/dist-packages/vllm/v1/engine/core.py", line 510, in run_engine_core'
    ]
    if not cut:
        lines += [f"{pre}[core.py:519] RuntimeError: Engine core initialization failed. See root cause above."]
    res = classify_text("\n".join(lines) + "\n")
    assert res.first_exception is not None and said in res.first_exception.line, res.first_exception
    assert res.failed_stage == stage, res.evidence


@given(stamp=STAMP, process=PROCESS)
def test_an_error_line_that_names_no_layer_is_not_the_reason(stamp, process) -> None:  # noqa: ANN001
    pre = f"{stamp}{process}ERROR 08-03 11:35:28 "
    lines = [f"{pre}[core.py:100] Something happened in the engine", f"{pre}[core.py:519] EngineCore failed to start."]
    lines += [f"{pre}[core.py:519] Traceback (most recent call last):"]
    fe = classify_text("\n".join(lines) + "\n").first_exception
    assert fe is not None and "Something happened" not in fe.line


@given(
    model=st.sampled_from(["laguna", "qwen3_5_moe", "kimi_k3"]),
    form=st.sampled_from(["ValueError: Model type {m} not supported.", "ValueError: model type {m} is not supported"]),
    frame=LAYER_FRAMES,
)
def test_a_model_type_not_supported_is_the_config_as_an_architecture_is(model, form, frame) -> None:  # noqa: ANN001
    res = classify_text(_traceback("vllm", frame, form.format(m=model)))
    assert res.failed_stage == "config", res.evidence

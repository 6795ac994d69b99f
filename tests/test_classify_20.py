"""Issue 13, twentieth session: calls refused, and the tracebacks Python chains.

- An offline script's call of an ``LLM`` method (``llm.embed`` on a generative model, a list of
  parameters that does not fit the prompts) that vLLM's own code refuses with a ValueError or TypeError,
  nothing of the engine on the stack: that call's input was refused in the script's own process; the engine
  was healthy and was never asked. No root, as for a request a server refuses.
- vLLM's client errors (``VLLMValidationError``, ``VLLMNotFoundError``, ``VLLMUnprocessableEntityError``:
  the request's fault, answered with a 4xx) raised in a call (a request's task, an offline call) are a
  refusal, never a root. Raised by the server's start-up checking its own arguments (a ``--chat-template``
  that is no file), from the program's first frame, they are the root still.
- A traceback whose last exception is such a refusal ends the chain Python printed: the exceptions chained
  before it (the grammar back-end's ``JSONDecodeError``) were that refusal's causes, not a root.
- The head of a traceback Python chained to the root's, printed without a logger's prefix, is followed
  wherever it comes in the log (it carries no word the fast scan looks for).
- A traceback's head printed right after a progress bar's carriage return (``Rendering prompts: 0%| | 0/1
  [00:00<?, ?it/s]Traceback (most recent call last):``) opens that traceback.
- A traceback Python's logging printed for a record it could not format while the root was being handled
  (``During handling of the above exception …``, its first frame logging's ``emit``) is the logger's own
  failure: its frames (a config's ``__repr__``) are not the root's callers and say nothing of its stage.

- ``AsyncLLM output_handler failed.`` printed bare (``VLLM_CONFIGURE_LOGGING=0``: no logger's prefix) before the
  EngineDeadError traceback it heads says, as the same ERROR line would, that the engine died under the
  requests that task serves: the root, runtime.

- The host's resources running out under a request's handling (``RuntimeError: can't start new thread`` as a
  container's ``pids.max`` bites, ``Too many open files``, ``No space left on device``) fail the server, not
  that one request: the root, as an out-of-memory there is.

- V1's executor's ``Worker failed with error: …`` (a colon, the worker's error after it or on the next line)
  quotes the failure it reports, as its ``Worker failed with error '…'`` form does: when nothing above explains
  it, it is the root (an excerpt of that line alone is a failure, not "not a vLLM log").

- A reporter's sentence quoting a failure's words between typographic or straight double quotes or CJK corner
  brackets (``the job that starts later reports an “address already in use” error``), as between backticks, is
  no failure line of its own: the exception the excerpt quotes below it is the root.

- A log with no failure line that ENDS with the server waiting, twice or more, on a part that never answers
  (``No available shared memory broadcast block found in 60 seconds``, ``Waiting for 1 local, 0 remote core
  engine proc(s) to start.``) hung there: in the engine's start-up before the API was ready, while serving
  after. Once, or with the log going on after them (a long compile prints the first too), it was only slow.

- A reporter's sentence that tells of a failure in their own words (a first person, Chinese prose before the
  words a root rule matched: ``When I start the second server I get an address already in use error:``) is,
  like a quoted one, the root only when the excerpt holds nothing else.

- A KV connector registering the KV caches with its transfer agent (``register_kv_caches``) runs once, when the
  caches are allocated: the engine's start-up, not a step's transfer while serving.

- A time stamp, a level and a logger's name or target (``2025-05-16T04:56:18.119Z ERROR engine.run_mp_engine:
  NIXL_ERR_BACKEND`` as NVIDIA Dynamo's Rust tracing logs; Python's ``%(asctime)s %(levelname)s %(name)s:``) is one
  prefix: the line is an ERROR line, the header of the traceback cut under it.


- A traceback rebuilt from the log's history reads the TEXT of docker's json-file records (``{"log": …}``), not
  their JSON: its frames and the line before it are read as the classifier read them.

Each on generated logs and on a real log of the tuned part; each fails without its change (the guards,
which say what a rule must leave alone, pass either way).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from k3tui.classify.lines import parse
from tests.support.corpus import tuned_text
from tests.support.shippers import docker_json
from tests.support.tracebacks import traceback_text

_SITE = "/opt/venv/lib/python3.11/site-packages"
_STARTED = [
    "INFO 12-06 15:31:11 [utils.py:253] non-default args: {'model': '/m'}",
    "(EngineCore pid=7) INFO 12-06 15:31:23 [core.py:95] Initializing a V1 LLM engine (v0.32.0) with config: model='/m'",
    "(EngineCore pid=7) INFO 12-06 15:31:35 [gpu_model_runner.py:2602] Starting to load model /m...",
    "(EngineCore pid=7) INFO 12-06 15:31:37 [kv_cache_utils.py:1240] GPU KV cache size: 9,184 tokens",
    "(EngineCore pid=7) INFO 12-06 15:31:41 [core.py:402] init engine (profile, create kv cache, warmup model) took 4.38 s",
]
_STOPPED = [
    "(MainProcess pid=5) INFO 12-06 15:33:01 [utils.py:628] [shutdown] Process manager: send sigterm to process EngineCore",
    "(EngineCore pid=7) INFO 12-06 15:33:01 [core.py:1454] [shutdown] EngineCore: trigger received signal=SIGTERM",
]
_SCRIPT = "/work/run/script.py"
_METHOD = st.sampled_from(
    [
        ("vllm/entrypoints/llm.py", "generate"),
        ("vllm/entrypoints/llm.py", "chat"),
        ("vllm/entrypoints/pooling/offline.py", "embed"),
        ("vllm/entrypoints/llm.py", "score"),
    ]
)
_CHECK = st.sampled_from(
    [
        ("vllm/entrypoints/pooling/offline.py", "_verify_pooling_task"),
        ("vllm/entrypoints/common/offline.py", "_validate_and_add_requests"),
        ("vllm/entrypoints/llm.py", "_check_inputs"),
    ]
)
_ARG_ERROR = st.sampled_from(
    [
        "ValueError: LLM.encode() is only supported for pooling models. Try passing `--runner pooling`.",
        "ValueError: The lengths of prompts and sampling_params must be the same.",
        "TypeError: score() missing 1 required positional argument: 'data_2'",
    ]
)


def _offline(stack: str, started: bool = True) -> str:
    head = _STARTED if started else _STARTED[:1]
    return "\n".join([*head, "k3: generating", stack.rstrip("\n"), *_STOPPED]) + "\n"


def _script_frames(method: tuple[str, str], inner: list[tuple[str, str]]) -> str:
    path, func = method
    return traceback_text(
        [(_SCRIPT, "main"), (f"{_SITE}/{path}", func), *[(f"{_SITE}/{p}", f) for p, f in inner]],
        "{error}",
        module=_SCRIPT,
    )


@given(method=_METHOD, check=_CHECK, error=_ARG_ERROR)
def test_an_offline_call_refused_by_vllms_checks_is_no_root(
    method: tuple[str, str], check: tuple[str, str], error: str
) -> None:
    res = classify_text(_offline(_script_frames(method, [check]).replace("{error}", error)))
    assert res.first_exception is None, res.first_exception
    assert res.failed_stage == "none", res.evidence


@given(method=_METHOD, error=_ARG_ERROR)
def test_guard_an_offline_call_that_the_engine_failed_is_a_root(method: tuple[str, str], error: str) -> None:
    """The same call failing inside the engine (its core's busy loop, a worker): the engine's failure."""
    inner = [("vllm/v1/engine/core_client.py", "get_output"), ("vllm/v1/engine/core.py", "run_busy_loop")]
    res = classify_text(_offline(_script_frames(method, inner).replace("{error}", error)))
    assert res.first_exception is not None and error in res.first_exception.line


@given(method=_METHOD)
def test_guard_an_offline_call_failing_in_a_library_is_a_root(method: tuple[str, str]) -> None:
    """Raised by a library vLLM called (jinja compiling a chat template), not by vLLM's own checks."""
    inner = [("vllm/renderers/hf.py", "apply_hf_chat_template"), ("jinja2/environment.py", "from_string")]
    error = "jinja2.exceptions.TemplateSyntaxError: unexpected '}'"
    res = classify_text(_offline(_script_frames(method, inner).replace("{error}", error)))
    assert res.first_exception is not None and error in res.first_exception.line


def test_a_real_offline_pooling_call_on_a_generative_model_is_no_root() -> None:
    res = classify_text(tuned_text("vllm-cpu-faults", "offline-embed-generative-model.log"))
    assert res.first_exception is None, res.first_exception
    assert res.failed_stage == "none"


_CLIENT_ERROR = st.sampled_from(
    [
        "vllm.exceptions.VLLMValidationError: Grammar spec is not valid for the backend",
        "vllm.exceptions.VLLMNotFoundError: The model `k3` does not exist.",
        "VLLMUnprocessableEntityError: The prompt could not be processed",
    ]
)


@given(error=_CLIENT_ERROR, method=_METHOD)
def test_vllms_client_errors_raised_in_an_offline_call_are_no_root(error: str, method: tuple[str, str]) -> None:
    inner = [("vllm/v1/engine/input_processor.py", "process_inputs"), ("vllm/sampling_params.py", "verify")]
    res = classify_text(_offline(_script_frames(method, inner).replace("{error}", error)))
    assert res.first_exception is None, res.first_exception


@given(error=_CLIENT_ERROR)
def test_vllms_client_errors_in_a_requests_task_are_no_root(error: str) -> None:
    stack = traceback_text(
        [
            (f"{_SITE}/vllm/entrypoints/openai/completion/api_router.py", "create_completion"),
            (f"{_SITE}/vllm/v1/engine/async_llm.py", "add_request"),
            (f"{_SITE}/vllm/v1/engine/input_processor.py", "process_inputs"),
        ],
        error,
    )
    ready = "(APIServer pid=5) INFO 12-06 15:31:50 [launcher.py:44] Application startup complete."
    text = "\n".join([*_STARTED, ready, stack.rstrip("\n")]) + "\n"
    res = classify_text(text)
    assert res.first_exception is None, res.first_exception


@given(error=_CLIENT_ERROR)
def test_guard_a_client_error_from_the_servers_own_start_up_is_the_root(error: str) -> None:
    """The server checking its own arguments at launch (``validate_chat_template``): from the first frame."""
    stack = traceback_text(
        [
            (f"{_SITE}/vllm/entrypoints/cli/main.py", "main"),
            (f"{_SITE}/vllm/entrypoints/cli/serve.py", "validate"),
            (f"{_SITE}/vllm/renderers/chat_utils.py", "validate_chat_template"),
        ],
        error,
        module="/opt/venv/bin/vllm",
    )
    res = classify_text(stack)
    assert res.first_exception is not None and error in res.first_exception.line


def test_a_real_chat_template_path_that_is_no_file_is_still_the_launchs_root() -> None:
    res = classify_text(tuned_text("vllm-cpu-faults", "args-chat-template-missing.log"))
    assert res.first_exception is not None and "VLLMValidationError" in res.first_exception.line


_CAUSE = st.sampled_from(
    [
        "json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        "RuntimeError: [15:34:42] /project/cpp/json_schema_converter.cc:4950: Cannot find field $defs",
    ]
)


@given(cause=_CAUSE, method=_METHOD, filler=st.integers(0, 40), how=st.sampled_from(["cause", "handling"]))
def test_exceptions_chained_before_a_refusal_are_its_causes(
    cause: str, method: tuple[str, str], filler: int, how: str
) -> None:
    first = traceback_text(
        [(f"{_SITE}/vllm/v1/structured_output/backend_xgrammar.py", "validate_xgrammar_grammar")], cause
    )
    chain = (
        "The above exception was the direct cause of the following exception:"
        if how == "cause"
        else "During handling of the above exception, another exception occurred:"
    )
    last = _script_frames(method, [("vllm/sampling_params.py", "_validate_structured_outputs")]).replace(
        "{error}", "vllm.exceptions.VLLMValidationError: Invalid JSON grammar specification."
    )
    busy = [f"(EngineCore pid=7) INFO 12-06 15:31:4{i % 10} [core.py:1] warming up" for i in range(filler)]
    stack = f"{first}\n{chain}\n\n{last}"
    text = "\n".join([*_STARTED, *busy, "k3: generating", stack.rstrip("\n"), *_STOPPED]) + "\n"
    res = classify_text(text)
    assert res.first_exception is None, res.first_exception


@given(cause=_CAUSE, filler=st.integers(0, 40))
def test_guard_exceptions_chained_before_a_failure_stay_the_root(cause: str, filler: int) -> None:
    first = traceback_text([(f"{_SITE}/vllm/v1/structured_output/backend_xgrammar.py", "compile_grammar")], cause)
    last = traceback_text(
        [
            (f"{_SITE}/vllm/v1/engine/core.py", "run_busy_loop"),
            (f"{_SITE}/vllm/v1/structured_output/__init__.py", "grammar_init"),
        ],
        "RuntimeError: grammar compilation failed",
    )
    busy = [f"(EngineCore pid=7) INFO 12-06 15:31:4{i % 10} [core.py:1] warming up" for i in range(filler)]
    stack = f"{first}\nThe above exception was the direct cause of the following exception:\n\n{last}"
    res = classify_text("\n".join([*_STARTED, *busy, stack.rstrip("\n")]) + "\n")
    assert res.first_exception is not None and cause in res.first_exception.line


def test_a_real_offline_structured_output_refusal_chain_is_no_root() -> None:
    for name in ("offline-structured-json-not-json.log", "offline-structured-schema-bad-ref.log"):
        res = classify_text(tuned_text("vllm-cpu-faults", name))
        assert res.first_exception is None, (name, res.first_exception)
        assert res.failed_stage == "none", name


@given(
    bar=st.sampled_from(["Rendering prompts", "Adding requests", "Processed prompts"]),
    done=st.integers(0, 9),
    prefix=st.sampled_from(["", "[pod/vllm-0/vllm] 2026-11-30T03:29:01.123456789Z ", "2026-11-30T03:29:01.1234567Z "]),
)
def test_a_traceback_head_glued_to_a_progress_bar_opens_it(bar: str, done: int, prefix: str) -> None:
    """Also behind a collector's prefix on every line (``kubectl logs --prefix --timestamps``)."""
    frames_ = [
        (_SCRIPT, "main"),
        (f"{_SITE}/vllm/entrypoints/llm.py", "generate"),
        (f"{_SITE}/vllm/v1/engine/core_client.py", "get_output"),
        (f"{_SITE}/vllm/v1/worker/gpu_model_runner.py", "execute_model"),
    ]
    stack = traceback_text(frames_, "IndexError: index out of range in self", module=_SCRIPT)
    glued = f"\r{bar}:   {done}0%|          | {done}/10 [00:00<?, ?it/s]" + stack
    lines = [*_STARTED, *(["(EngineCore pid=7) INFO x [core.py:1] idle"] * 40), *glued.rstrip("\n").split("\n")]
    res = classify_text("\n".join(prefix + x for x in lines) + "\n")
    assert res.first_exception is not None and "IndexError" in res.first_exception.line
    assert len(res.first_exception.stack) > 1, res.first_exception.stack  # its frames were read
    assert res.failed_stage == "runtime", res.evidence


_LOGGING_FAILURE = [
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/logging/__init__.py", line 1160, in emit',
    "    msg = self.format(record)",
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/config.py", line 4484, in __str__',
    '    f"compilation_config={self.compilation_config!r}")',
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/config.py", line 3868, in __repr__',
    "    for k, v in asdict(self).items():",
    "TypeError: cannot pickle 'torch._C.Generator' object",
]


@given(filler=st.integers(0, 40))
def test_a_loggers_own_failure_while_handling_says_nothing_of_the_stage(filler: int) -> None:
    stack = traceback_text(
        [
            ("/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", "execute_model"),
            ("/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", "execute_model"),
        ],
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    )
    busy = ["INFO 05-20 03:26:30 [loggers.py:111] Engine 000: Avg prompt throughput: 1.0 tokens/s"] * filler
    text = "\n".join([*busy, stack.rstrip("\n"), "", *_LOGGING_FAILURE]) + "\n"
    res = classify_text(text)
    assert res.first_exception is not None and "illegal memory access" in res.first_exception.line
    assert res.failed_stage == "runtime", res.evidence


def test_guard_a_handlers_exception_raised_in_the_callers_keeps_their_frames() -> None:
    """Another handler's exception (a device's init re-raised as RuntimeError) was raised in the root's
    callers: its frames (the engine core's device set-up) are evidence, as before."""
    res = classify_text(tuned_text("vllm-issues", "5961.log"))
    assert res.failed_stage == "device", res.evidence


def test_a_real_illegal_access_whose_log_record_failed_to_format_is_runtime() -> None:
    res = classify_text(tuned_text("vllm-issues", "2730.log"))
    assert res.first_exception is not None and "illegal memory access" in res.first_exception.line
    assert res.failed_stage == "runtime", res.evidence


_UVICORN_READY = [
    "INFO:     Started server process [27456]",
    "INFO:     Waiting for application startup.",
    "INFO:     Application startup complete.",
]


@given(served=st.integers(0, 40), bare=st.booleans())
def test_a_bare_output_handler_header_says_the_engine_died_serving(served: int, bare: bool) -> None:
    header = (
        "AsyncLLM output_handler failed."
        if bare
        else "ERROR 12-06 14:44:01 [async_llm.py:853] AsyncLLM output_handler failed."
    )
    dead = traceback_text(
        [
            (f"{_SITE}/vllm/v1/engine/async_llm.py", "output_handler"),
            (f"{_SITE}/vllm/v1/engine/core_client.py", "get_output_async"),
        ],
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
    )
    requests = ['INFO:     127.0.0.1:57944 - "POST /v1/chat/completions HTTP/1.1" 200 OK'] * served
    after = [
        'INFO:     127.0.0.1:57956 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
        "INFO:     Shutting down",
    ]
    text = "\n".join(["Triton is not installed.", *_UVICORN_READY, *requests, header, dead.rstrip("\n"), *after]) + "\n"
    res = classify_text(text)
    assert res.first_exception is not None and "EngineDeadError" in res.first_exception.line
    assert res.failed_stage == "runtime", res.evidence


def test_a_real_engine_killed_serving_with_vllms_logging_off_is_runtime() -> None:
    res = classify_text(tuned_text("vllm-cpu-faults", "log-configure-off-kill9-engine-inflight.log"))
    assert res.failed_stage == "runtime", res.evidence


@given(bare=st.booleans())
def test_guard_an_output_handler_failing_after_the_server_stopped_is_the_stops(bare: bool) -> None:
    """The operator's stop, logged without vLLM's handler (no ``shutdown triggered``): uvicorn shuts down
    first, and the output handler fails as the engine goes: the stop's noise, as before."""
    header = (
        "AsyncLLM output_handler failed."
        if bare
        else "ERROR 12-06 14:44:01 [async_llm.py:853] AsyncLLM output_handler failed."
    )
    dead = traceback_text(
        [(f"{_SITE}/vllm/v1/engine/async_llm.py", "output_handler")],
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
    )
    stop = [
        "INFO:     Shutting down",
        "INFO:     Waiting for application shutdown.",
        "INFO:     Application shutdown complete.",
    ]
    res = classify_text("\n".join([*_UVICORN_READY, *stop, header, dead.rstrip("\n")]) + "\n")
    assert res.failed_stage == "none", res.evidence


_HANDLER = [
    (f"{_SITE}/starlette/routing.py", "app"),
    (f"{_SITE}/vllm/entrypoints/openai/chat_completion/api_router.py", "create_chat_completion"),
    (f"{_SITE}/vllm/entrypoints/openai/chat_completion/serving.py", "create_chat_completion"),
]


@given(
    error=st.sampled_from(
        [
            "RuntimeError: can't start new thread",
            "OSError: [Errno 24] Too many open files",
            "OSError: [Errno 28] No space left on device",
            "BlockingIOError: [Errno 11] Resource temporarily unavailable",
        ]
    ),
    served=st.integers(0, 40),
)
def test_the_hosts_resources_running_out_under_a_request_fail_the_server(error: str, served: int) -> None:
    stack = traceback_text([*_HANDLER, ("/usr/lib/python3.11/threading.py", "start")], error)
    requests = ['INFO:     127.0.0.1:57944 - "POST /v1/chat/completions HTTP/1.1" 200 OK'] * served
    res = classify_text(
        "\n".join([*_UVICORN_READY, *requests, "ERROR:    Exception in ASGI application", stack.rstrip("\n")]) + "\n"
    )
    assert res.first_exception is not None and error in res.first_exception.line
    assert res.failed_stage == "runtime", res.evidence


@given(error=st.sampled_from(["KeyError: 'messages'", "ValueError: image URL could not be fetched"]))
def test_guard_one_requests_own_error_in_its_handler_is_no_root(error: str) -> None:
    stack = traceback_text(_HANDLER, error)
    res = classify_text(
        "\n".join([*_UVICORN_READY, "ERROR:    Exception in ASGI application", stack.rstrip("\n")]) + "\n"
    )
    assert res.first_exception is None, res.first_exception


def test_a_real_frozen_thread_limit_while_serving_is_runtime() -> None:
    res = classify_text(tuned_text("vllm-cpu-faults", "ctr-tp2-pids-max-frozen-serving.log"))
    assert res.first_exception is not None and "can't start new thread" in res.first_exception.line
    assert res.failed_stage == "runtime", res.evidence


_WORKER_ERROR = st.sampled_from(
    [
        "'GPUModelRunner' object has no attribute 'drafter'",
        "CUDA error: an illegal memory access was encountered",
        "shape '[-1, 16, 56]' is invalid for input of size 36864",
    ]
)


@given(error=_WORKER_ERROR, next_line=st.booleans(), fence=st.booleans())
def test_a_workers_error_quoted_after_a_colon_is_the_root_when_nothing_explains_it(
    error: str, next_line: bool, fence: bool
) -> None:
    said = (
        ["RuntimeError: Worker failed with error:", error]
        if next_line
        else [f"RuntimeError: Worker failed with error: {error}"]
    )
    lines = ["```text", *said, "```"] if fence else said
    res = classify_text("\n".join(lines) + "\n")
    assert res.failed_stage != "unknown", res.evidence
    assert res.first_exception is not None and "Worker failed with error" in res.first_exception.line


@given(error=_WORKER_ERROR)
def test_guard_the_workers_own_traceback_above_it_is_the_root(error: str) -> None:
    worker = [
        "(Worker_TP0 pid=9) ERROR 12-06 10:00:00 [multiproc_executor.py:671] Traceback (most recent call last):",
        '(Worker_TP0 pid=9) ERROR 12-06 10:00:00 [multiproc_executor.py:671]   File "/v/vllm/v1/worker/gpu_worker.py", line 1, in execute_model',
        "(Worker_TP0 pid=9) ERROR 12-06 10:00:00 [multiproc_executor.py:671] ValueError: the worker's own failure",
    ]
    line = f"(EngineCore_DP0 pid=8) ERROR 12-06 10:00:01 [core.py:710] RuntimeError: Worker failed with error: {error}"
    res = classify_text("\n".join([*worker, line]) + "\n")
    assert res.first_exception is not None and "the worker's own failure" in res.first_exception.line


def test_a_real_excerpt_of_the_executors_line_alone_is_a_failure() -> None:
    res = classify_text(tuned_text("vllm-issues", "1469.log"))
    assert res.failed_stage == "engine", res.evidence


@given(
    marks=st.sampled_from([("\u201c", "\u201d"), ('"', '"'), ("\u300c", "\u300d"), ("`", "`")]),
    phrase=st.sampled_from(["address already in use", "CUDA out of memory"]),
)
def test_a_sentence_quoting_a_failure_is_not_the_root_of_the_log_below_it(marks: tuple[str, str], phrase: str) -> None:
    opening, closing = marks
    prose = f"The job that starts later reports an {opening}{phrase}{closing} error, the first one works."
    stack = traceback_text(
        [(f"{_SITE}/vllm/v1/worker/gpu_worker.py", "determine_available_memory")],
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`.",
    )
    res = classify_text("\n".join([prose, "", "error log:", stack.rstrip("\n")]) + "\n")
    assert res.first_exception is not None and "No available memory" in res.first_exception.line


_SHM_WAIT = (
    "(EngineCore_DP0 pid=214) INFO 02-02 13:2{i}:32 [shm_broadcast.py:542] No available shared memory broadcast block "
    "found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming work."
)
_CORE_WAIT = "(APIServer pid=1) DEBUG 04-12 21:3{i}:28 [v1/engine/utils.py:1143] Waiting for 1 local, 0 remote core engine proc(s) to start."


@given(
    wait=st.sampled_from([_SHM_WAIT, _CORE_WAIT]),
    times=st.integers(2, 6),
    head=st.integers(0, len(_STARTED)),
    tail=st.sampled_from([[], [""], ["", "```"]]),
)
def test_a_log_that_ends_waiting_on_a_part_that_never_answers_hung(
    wait: str, times: int, head: int, tail: list[str]
) -> None:
    """(Printed bare, with vLLM's logging off, such lines carry no ``.py:`` and the prefilter does not read them:
    two more words cost the startup flood its 0.5, measured.)"""
    waits = [wait.format(i=i) for i in range(times)]
    lines = [*_STARTED[:head], *(["(APIServer pid=1) INFO x [core.py:1] idle"] * 35), *waits, *tail]
    res = classify_text("\n".join(lines) + "\n")
    assert res.first_exception is None
    assert res.evidence is not None and res.evidence.rule == "hang", res.evidence
    # where its start-up had got to (the weights, the engine), the engine's start-up when no marker says
    assert res.failed_stage == "engine" if head < 3 else res.failed_stage in ("weights", "engine", "api"), res.evidence


@given(times=st.integers(2, 6))
def test_a_server_that_ends_waiting_after_it_was_ready_hung_serving(times: int) -> None:
    ready = "(APIServer pid=1) INFO 02-02 13:19:00 [launcher.py:44] Application startup complete."
    res = classify_text("\n".join([*_STARTED, ready, *(_SHM_WAIT.format(i=i) for i in range(times))]) + "\n")
    assert res.failed_stage == "runtime", res.evidence


@given(wait=st.sampled_from([_SHM_WAIT, _CORE_WAIT]), times=st.integers(1, 6), after=st.integers(0, 3))
def test_guard_waiting_once_or_going_on_after_it_is_no_hang(wait: str, times: int, after: int) -> None:
    """A slow start-up (a long compile) waits and then goes on: healthy, as a single such line is."""
    went_on = [
        "(Worker_TP0 pid=271) INFO 02-02 13:25:03 [backends.py:278] Compiling a graph for compile range (1, 2048) takes 325.75 s",
        "(EngineCore_DP0 pid=214) INFO 02-02 13:25:05 [kv_cache_utils.py:1291] GPU KV cache size: 183,744 tokens",
        "(Worker_TP0 pid=271) INFO 02-02 13:25:04 [gpu_worker.py:375] Available KV cache memory: 4.02 GiB",
        "(EngineCore_DP0 pid=214) INFO 02-02 13:25:05 [kv_cache_utils.py:1296] Maximum concurrency for 131,072 tokens per request: 6.17x",
    ] * (after + 1)
    waits = [wait.format(i=i) for i in range(times)]
    lines = [*_STARTED, *waits] if times == 1 else [*_STARTED, *waits, *went_on]
    res = classify_text("\n".join(lines) + "\n")
    assert res.failed_stage == "none", res.evidence


def test_real_excerpts_that_end_waiting_for_the_engine_core_hung_in_its_start_up() -> None:
    for name in ("3458.log", "5111.log"):
        res = classify_text(tuned_text("vllm-issues", name))
        assert res.failed_stage == "engine", (name, res.evidence)


@given(
    told=st.sampled_from(
        [
            "When I start the second server I get an address already in use error:",
            "We also see it fail, but it reports an NCCL error:",
            "DeepSeek-Coder-V2-Lite-Instruct也是在determine_num_available_blocks处fails, 但是报一个NCCL error:",
            "My server cannot start, no space left on device it says:",
        ]
    )
)
def test_a_reporters_sentence_telling_of_a_failure_is_not_the_root_of_the_log_below_it(told: str) -> None:
    stack = traceback_text(
        [(f"{_SITE}/vllm/v1/worker/gpu_worker.py", "determine_available_memory")],
        "RuntimeError: NCCL Error 3: internal error - please report this issue to the NCCL developers",
    )
    res = classify_text("\n".join([told, "", "```", stack.rstrip("\n"), "```"]) + "\n")
    assert res.first_exception is not None and "NCCL Error 3" in res.first_exception.line


@given(
    told=st.sampled_from(
        [
            "When I start the second server I get an address already in use error.",
            "我启动第二个服务时报错 address already in use",
        ]
    )
)
def test_guard_a_reporters_sentence_is_the_root_when_the_excerpt_has_nothing_else(told: str) -> None:
    res = classify_text(told + "\n")
    assert res.first_exception is not None and "address already in use" in res.first_exception.line


def test_a_real_chinese_sentence_before_the_workers_nccl_error_is_not_its_root() -> None:
    res = classify_text(tuned_text("vllm-issues", "2258.log"))
    assert res.first_exception is not None and "NCCL Error 3" in res.first_exception.line


_CONNECTOR = st.sampled_from(
    ["nixl_connector.py", "lmcache_connector.py", "p2p/p2p_nccl_connector.py", "offloading_connector.py"]
)


@given(connector=_CONNECTOR)
def test_a_kv_connector_registering_the_caches_is_the_engines_start_up(connector: str) -> None:
    stack = traceback_text(
        [  # (an excerpt cut above the model runner's frames, as threads quote it)
            (f"{_SITE}/vllm/distributed/kv_transfer/kv_connector/v1/{connector}", "register_kv_caches"),
            (f"{_SITE}/nixl/_api.py", "prep_xfer_dlist"),
        ],
        "nixl._bindings.nixlNotFoundError: NIXL_ERR_NOT_FOUND",
    )
    res = classify_text(stack)
    assert res.failed_stage == "engine", res.evidence


@given(connector=_CONNECTOR, func=st.sampled_from(["start_load_kv", "get_finished", "save_kv_layer", "wait_for_save"]))
def test_guard_a_kv_connectors_per_step_work_is_serving(connector: str, func: str) -> None:
    stack = traceback_text(
        [
            (f"{_SITE}/vllm/distributed/kv_transfer/kv_connector/v1/{connector}", func),
            (f"{_SITE}/nixl/_api.py", "transfer"),
        ],
        "nixl._bindings.nixlBackendError: NIXL_ERR_BACKEND",
    )
    res = classify_text(stack)
    assert res.failed_stage == "runtime", res.evidence


def test_a_real_nixl_error_registering_the_kv_caches_is_the_engines() -> None:
    res = classify_text(tuned_text("vllm-issues", "6478.log"))
    assert res.failed_stage == "engine", res.evidence


_STAMPS = st.sampled_from(["2025-05-16T04:56:18.119Z", "2025-05-16T04:56:18.119874Z", "2024-01-01 10:00:00,123"])
_TARGETS = st.sampled_from(
    ["engine.run_mp_engine", "dynamo_runtime::component", "vllm.engine.llm_engine", "__main__", "root"]
)


@given(
    stamp=_STAMPS,
    target=_TARGETS,
    level=st.sampled_from(["ERROR", "WARN", "INFO", "DEBUG"]),
    pad=st.sampled_from([" ", "  "]),
)
def test_a_time_level_and_logger_prefix_is_read_as_one(stamp: str, target: str, level: str, pad: str) -> None:
    ln = parse(f"{stamp}{pad}{level} {target}: NIXL_ERR_BACKEND")
    assert ln.body == "NIXL_ERR_BACKEND" and ln.level is not None and ln.level.startswith(level[:4])


@given(stamp=_STAMPS)
def test_guard_an_exception_type_after_a_level_stays_in_the_message(stamp: str) -> None:
    assert parse(f"{stamp} ERROR ValueError: x").body.endswith("ValueError: x")


@given(stamp=_STAMPS, target=_TARGETS)
def test_a_logged_error_over_a_cut_traceback_is_its_root(stamp: str, target: str) -> None:
    lines = [
        f"{stamp} INFO {target}: Initialized NIXL agent",
        f"{stamp} ERROR {target}: NIXL_ERR_BACKEND",
        "Traceback (most recent call last):",
        f'  File "{_SITE}/vllm/engine/multiprocessing/engine.py", line 586, in run_mp_engine',
        "    engine = MQLLMEngine.from_vllm_config(",
    ]
    res = classify_text("\n".join(lines) + "\n")
    assert res.first_exception is not None and "NIXL_ERR_BACKEND" in res.first_exception.line


def test_a_real_dynamo_log_of_nixl_failing_at_start_up_names_its_error_line() -> None:
    res = classify_text(tuned_text("vllm-issues", "6479.log"))
    assert (
        res.first_exception is not None and "ERROR engine.run_mp_engine: NIXL_ERR_BACKEND" in res.first_exception.line
    )


@given(before=st.integers(30, 60), method=_METHOD, check=_CHECK, error=_ARG_ERROR)
def test_an_unprefixed_traceback_in_dockers_json_records_is_read_with_its_frames(
    before: int, method: tuple[str, str], check: tuple[str, str], error: str
) -> None:
    """Its frames are rebuilt from the records' text, not their JSON (an offline call refused stays no root)."""
    stack = _script_frames(method, [check]).replace("{error}", error)
    idle = [f"(EngineCore pid=7) INFO 12-06 15:31:4{i % 10} [core.py:1] idle" for i in range(before)]
    text = "\n".join([*_STARTED, *idle, stack.rstrip("\n"), *_STOPPED]) + "\n"
    plain, wrapped = classify_text(text), classify_text(docker_json(text))
    assert plain.first_exception is None and wrapped.first_exception is None, wrapped.first_exception
    assert wrapped.failed_stage == plain.failed_stage == "none"


def test_real_runs_keep_their_verdict_in_dockers_json_records() -> None:
    for name in (
        "offline-embed-generative-model.log",
        "offline-structured-json-not-json.log",
        "log-configure-off-kill9-engine-inflight.log",
        "hook-api-init-app-state-connreset.log",
        "rct-bpe-duplicate-rank.log",
    ):
        text = tuned_text("vllm-cpu-faults", name)
        plain, wrapped = classify_text(text), classify_text(docker_json(text))
        assert wrapped.failed_stage == plain.failed_stage, (name, plain.evidence, wrapped.evidence)
        assert (wrapped.first_exception is None) == (plain.first_exception is None), name

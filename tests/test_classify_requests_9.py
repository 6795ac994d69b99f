"""Issue 13, ninth session: one request's failure against the engine's, and forms of the second batches.

- A traceback confined to ONE request's handling (uvicorn's ``run_asgi`` under "Exception in ASGI
  application", FastAPI / Starlette routing and responses, vLLM's request handlers, tool-call and
  reasoning parsers) and through nothing of the engine was answered with an error and the server went
  on: never a root, even cut before its exception line, unless its exception says the engine failed.
- A report that the engine died (``EngineDeadError``, V0's ``AsyncEngineDeadError: Task finished
  unexpectedly``) raised to a request in flight is the root when nothing else is; the output handler's
  alone is not (it fails so when the operator stops the server, 136).
- Forms: a paste that indented the whole log; a launcher's tag between the process and the level
  (vllm-omni's ``[Stage-0]``); a frame without source right before the exception line; torch's advice
  under a CUDA/HIP error is that error's text, not the traceback's header; the RuntimeWarning of a
  source build without its commit hash is no root; a tool-call parser's per-response error and an
  xgrammar regex a request sent are one request's.
- Stage: free memory below ``gpu_memory_utilization`` at start-up is the engine's memory budget.

Each on generated logs and on the real logs of the tuned part; each fails without its change.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import issue_text

SITE = "/usr/local/lib/python3.12/dist-packages"
DISPATCH = [
    (f"{SITE}/uvicorn/protocols/http/httptools_impl.py", "run_asgi"),
    (f"{SITE}/uvicorn/middleware/proxy_headers.py", "__call__"),
    (f"{SITE}/fastapi/applications.py", "__call__"),
    (f"{SITE}/starlette/middleware/errors.py", "__call__"),
    (f"{SITE}/fastapi/routing.py", "app"),
    (f"{SITE}/starlette/responses.py", "stream_response"),
]
HANDLERS = [
    (f"{SITE}/vllm/entrypoints/openai/serving_chat.py", "chat_completion_stream_generator"),
    (f"{SITE}/vllm/entrypoints/openai/chat_completion/api_router.py", "create_chat_completion"),
    (f"{SITE}/vllm/entrypoints/openai/tool_parsers/mistral_tool_parser.py", "extract_tool_calls_streaming"),
    (f"{SITE}/vllm/multimodal/utils.py", "fetch_image"),
    (f"{SITE}/aiohttp/client.py", "_request"),
]
ENGINE = [
    (f"{SITE}/vllm/engine/async_llm_engine.py", "step_async"),
    (f"{SITE}/vllm/model_executor/layers/sampler.py", "forward"),
    (f"{SITE}/torch/nn/modules/module.py", "_call_impl"),
]
REQUEST_ERRORS = st.sampled_from(
    ["TypeError: Ernie45ReasoningParser.__init__() got an unexpected keyword argument 'x'",
     "aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host example.com:443",
     "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
     "KeyError: 'enable_server_load_tracking'", "ValueError: image could not be decoded"]
)  # fmt: skip
ENGINE_ERRORS = st.sampled_from(
    ["vllm.engine.async_llm_engine.AsyncEngineDeadError: Task finished unexpectedly.",
     "RuntimeError: CUDA error: an illegal memory access was encountered",
     "asyncio.exceptions.TimeoutError", "torch.OutOfMemoryError: CUDA out of memory."]
)  # fmt: skip
PREFIX = st.sampled_from(["", "(APIServer pid=27) ", "ERROR 07-03 11:30:24 [serving_chat.py:1] "])


def _tb(frames: list[tuple[str, str]], error: str | None, prefix: str = "") -> str:
    lines = [f"{prefix}Traceback (most recent call last):"]
    for path, func in frames:
        lines += [f'{prefix}  File "{path}", line 42, in {func}', f"{prefix}    x = y()"]
    return "\n".join(lines + ([prefix + error] if error else [])) + "\n"


def _request(draw: st.DrawFn) -> list[tuple[str, str]]:
    return draw(st.lists(st.sampled_from(DISPATCH), min_size=1, max_size=4)) + draw(
        st.lists(st.sampled_from(HANDLERS), max_size=3)
    )


@st.composite
def request_frames(draw: st.DrawFn) -> list[tuple[str, str]]:
    return _request(draw)


HEAD = 'INFO:     127.0.0.1:39126 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\nERROR:    Exception in ASGI application\n'


@given(request_frames(), REQUEST_ERRORS, st.booleans(), st.booleans())
def test_one_requests_traceback_is_never_a_root(frames: list, error: str, cut: bool, head: bool) -> None:
    log = (HEAD if head else "") + _tb(frames, None if cut else error)
    res = classify_text(log)
    assert res.first_exception is None and res.failed_stage in ("none", "unknown"), res.first_exception


@given(request_frames(), st.lists(st.sampled_from(ENGINE), min_size=1, max_size=2), REQUEST_ERRORS)
def test_a_request_that_ran_into_the_engine_is_a_root(frames: list, engine: list, error: str) -> None:
    res = classify_text(HEAD + _tb(frames + engine, error))
    assert res.first_exception is not None and res.first_exception.line == error


@given(request_frames(), ENGINE_ERRORS)
def test_a_request_whose_exception_says_the_engine_failed_is_a_root(frames: list, error: str) -> None:
    res = classify_text(HEAD + _tb(frames, error))
    assert res.first_exception is not None and res.first_exception.line == error
    assert res.failed_stage in ("runtime", "engine")


def test_real_one_request_failures_are_none() -> None:
    """2604 (ASGI, cut), 2606 (FastAPI routing, cut, prefixed), 2460 (a reasoning parser), 2483 (V0 handler),
    2617 (a tool-call parser's header and traceback), 2631 (xgrammar refusing a request's regex)."""
    got = {
        n: classify_text(issue_text(n)).failed_stage
        for n in ("2604.log", "2606.log", "2460.log", "2483.log", "2617.log", "2631.log")
    }
    assert set(got.values()) == {"none"}, got


# --- the engine died under a request ----------------------------------------------------------------------

DEAD = "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause."


@given(
    st.sampled_from(HANDLERS[:2]), st.sampled_from(["(APIServer pid=1) ERROR 05-12 01:48:42 [api_router.py:72] ", ""])
)
def test_an_engine_dead_under_a_request_is_the_root_when_nothing_else_is(handler: tuple[str, str], prefix: str) -> None:
    res = classify_text(_tb([handler], DEAD, prefix))
    assert res.first_exception is not None and res.first_exception.line == prefix + DEAD
    assert res.failed_stage == "runtime"


def test_the_output_handlers_report_alone_is_not_a_root() -> None:
    """136: the operator's SIGTERM ends the output handler the same way (label none)."""
    assert classify_text(issue_text("136.log")).first_exception is None
    log = "ERROR [async_llm.py:704] AsyncLLM output_handler failed.\n...\n" + DEAD + "\n"
    assert classify_text(log).first_exception is None


def test_real_engine_dead_under_requests() -> None:
    for name in ("2612.log", "2614.log", "2630.log", "2615.log"):
        res = classify_text(issue_text(name))
        assert res.failed_stage == "runtime" and "EngineDeadError" in res.first_exception.line, name


# --- forms -------------------------------------------------------------------------------------------------

ROOT_LINE = (
    "(EngineCore_DP0 pid=32) ERROR 09-17 01:05:51 [core.py:720] torch._dynamo.exc.Unsupported: Observed exception"
)


@given(st.sampled_from([" ", "    ", "\t", "  "]))
def test_a_paste_that_indented_the_whole_log_keeps_its_process_prefixes(indent: str) -> None:
    log = f"{indent}(EngineCore_DP0 pid=32) ERROR 09-17 01:05:51 [core.py:720] Traceback (most recent call last):\n"
    log += f'{indent}(EngineCore_DP0 pid=32) ERROR 09-17 01:05:51 [core.py:720]   File "{SITE}/torch/_dynamo/exc.py", line 1, in f\n'
    log += indent + ROOT_LINE + "\n"
    res = classify_text(log)
    assert res.first_exception is not None and res.first_exception.line == indent + ROOT_LINE
    assert res.first_exception.process == "EngineCore_DP0 pid=32" and res.failed_stage == "engine"


@given(st.sampled_from(["[Stage-0] ", "[Stage-1] ", "[decode] "]), st.sampled_from(["(Worker pid=7) ", ""]))
def test_a_launchers_tag_before_the_level_is_taken_off(tag: str, proc: str) -> None:
    line = f"{proc}{tag}ERROR 03-12 08:22:28 [multiproc_executor.py:800] ValueError: Free memory on device cuda:0 (111.99/139.8 GiB) on startup is less than desired GPU memory utilization (0.95, 132.81 GiB)."
    res = classify_text(line + "\n")
    assert res.first_exception is not None and res.first_exception.line == line and res.failed_stage == "engine"


def test_real_forms() -> None:
    """2572 (indented by a space), 1815 (a markdown list), 2574 ([Stage-0]), 760/2339/2575 (free memory)."""
    assert {
        n: classify_text(issue_text(n)).failed_stage
        for n in ("2572.log", "1815.log", "2574.log", "760.log", "2339.log", "2575.log")
    } == dict.fromkeys(("2572.log", "1815.log", "2574.log", "760.log", "2339.log", "2575.log"), "engine")


def test_a_frame_without_source_before_the_exception_line() -> None:
    """2452: frames lost their indentation; a Cython frame has no source line: the next is the exception."""
    res = classify_text(issue_text("2452.log"))
    assert "RayChannelTimeoutError: System error: Timed out" in res.first_exception.line
    log = 'File "python/ray/includes/common.pxi", line 123, in ray._raylet.check_status\nray.exceptions.RayChannelTimeoutError: timed out\n'
    assert classify_text(log).first_exception.line == "ray.exceptions.RayChannelTimeoutError: timed out"


@given(
    st.sampled_from(["CUDA", "HIP"]),
    st.sampled_from(["invalid device function", "no kernel image is available for execution on the device"]),
)
def test_torchs_advice_under_a_gpu_error_is_not_the_header(api: str, error: str) -> None:
    flag = "CUDA_LAUNCH_BLOCKING=1" if api == "CUDA" else "AMD_SERIALIZE_KERNEL=3"
    pre = "ERROR 02-17 13:41:38 engine.py:381] "
    log = (
        f"{pre}{api} error: {error}\n{pre}{api} kernel errors might be asynchronously reported at some other API call.\n"
        f"{pre}For debugging consider passing {flag}\n{pre}Compile with `TORCH_USE_{api}_DSA` to enable device-side assertions.\n"
        f'{pre}Traceback (most recent call last):\n{pre}  File "/x/loader.py", line 1, in _initialize_model\n'
    )
    res = classify_text(log)
    assert res.first_exception is not None and res.first_exception.line == f"{pre}{api} error: {error}"
    assert res.failed_stage == "device"


def test_real_hip_error_and_source_build_warning() -> None:
    """2517: HIP's invalid device function (was: torch's advice line, weights); 2563: a source build's
    'No module named vllm._version' warning is not the root of what fails later."""
    res = classify_text(issue_text("2517.log"))
    assert res.failed_stage == "device" and res.first_exception.line.endswith("HIP error: invalid device function")
    assert "no kernel image is available" in classify_text(issue_text("2563.log")).first_exception.line
    warning = "/x/vllm/connections.py:8: RuntimeWarning: Failed to read commit hash:\nNo module named 'vllm._version'\n  from vllm.version import __version__\n"
    assert classify_text(warning).first_exception is None

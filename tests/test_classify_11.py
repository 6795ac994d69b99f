"""Issue 13, eleventh session: rules made from the tuned part's misses, each in a general form.

- The model being BUILT: a frame of a constructor (``__init__``, a list comprehension of layers,
  ``make_layers``) in vLLM's model or layer code runs while the loader's ``load_model`` builds the
  model, where the checkpoint's shapes and quantization meet vLLM's layers: weights, even when the
  excerpt starts below ``load_model`` (2782). A layer's ``forward`` stays what it was (serving or
  profiling), and a start-up frame inside the constructor (the attention back-end's selection) names
  its own layer.
- V0's ``AsyncLLMEngine`` logs an error only from its background loop, which the first request
  starts (``_log_task_completion``): a root it logged failed while serving (2016, 2195).
- An ImportError that names the package to install or its version (``Please install …``, ``version
  is wrong``) is the image's wherever in the stack the code asked for it, unless the server had been
  serving (849).

- A start-up progress bar stuck short of its total after the root: the CUDA-graph capture's
  (``Capturing CUDA graphs (…): 53%|…| 27/51``) as the loader's already was: the root stopped that
  work, the engine's set-up (4050).
- NCCL's errors in each spelling (cupy's ``NcclError: NCCL_ERROR_SYSTEM_ERROR``) are the engine's
  communicators, as torch's ``NCCL error`` (4055).
- A stack that ends in the ``assert`` statement its innermost frame ran, the bare ``AssertionError``
  under it left out of the paste: that statement is the root, in a traceback (2844) or an excerpt
  that starts mid-stack, behind a prefix the parser does not know (1672, 3806).
- Creating an attention back-end (``create_chunked_local_attention_backend``) is selecting one (3806).
- The expert-parallel all-to-all libraries and symmetric memory (DeepEP, pplx, NVSHMEM, multicast) are
  the engine's communicators, as NCCL is, unless the server had served (2228, 4101, 4102).
- A compiler's diagnostic (``file.py:36:0: error: …``, ``file.c:31:10: error: …``) is not argparse's
  ``PROG: error: …``; Triton failing to lower a kernel to this GPU (``Failures have been detected while
  processing an MLIR pass pipeline``, ``PassManager::run failed``) is the device, as ptxas failing for
  its arch is (2919, 3716).
- An OpenAI client's report that the server answered a request with a 4xx (``BadRequestError: Error
  code: 400 - {…}``) is that request's refusal, never a root; another HTTP client's 4xx is not (vLLM
  fetching from the hub: ``401 Client Error`` fails the weights) (4133, 1367).
- A client's traceback pasted with the server's log (through the openai library, LlamaIndex, LangChain,
  LiteLLM, and nothing of the engine) is one request's failure seen from the client: never a root,
  unless its exception says the server failed (a timeout, a dead engine) (2658).
- A paste that indented a whole block (a markdown code block after a blank line or a fence, a list
  item, a whole log; spaces or a tab): the block's indentation is learnt from its first line when a
  log's line starts it (a prefix, a level, a timestamp, an exception's line, argparse's, the loader's,
  a native crash's first words) and taken off every line of the block; the line as printed is what
  is quoted. A terminal's copy that padded the lines with spaces, Windows' CRLF (a progress bar's
  line too): nothing changes (2802, 3817, 4035, 4046; every complete real log in five such forms).
  A traceback indented with a tab is read as one indented with spaces.

Each on generated logs and on the real logs of the tuned part; each fails without its change.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import issue_text
from tests.test_classify_requests_9 import _tb

SITE = st.sampled_from(
    ["/usr/local/lib/python3.12/dist-packages/vllm", "/opt/venv/lib/python3.10/site-packages/vllm", "vllm"]
)
MODEL = st.sampled_from(["qwen2_moe", "llama", "deepseek_v2", "mixtral_quant", "gemma3"])
BUILD = st.sampled_from(["__init__", "<listcomp>", "<genexpr>", "make_layers"])
LAYER = st.sampled_from(["fused_moe/layer", "linear", "vocab_parallel_embedding", "quantization/awq"])
ERROR = st.sampled_from(
    ["AssertionError", "AssertionError: 250682 is not divisible by 8", "ValueError: Unsupported activation: gelu_new",
     "KeyError: 'quant_method'", "TypeError: __init__() got an unexpected keyword argument 'prefix'"]
)  # fmt: skip
PREFIX = st.sampled_from(
    ["", "[rank0]: ", "(VllmWorker rank=1 pid=4411) ERROR 06-01 10:00:00 [multiproc_executor.py:1] "]
)


@given(site=SITE, model=MODEL, build=BUILD, layer=LAYER, error=ERROR, prefix=PREFIX)
def test_a_stack_that_builds_the_model_is_weights(
    site: str, model: str, build: str, layer: str, error: str, prefix: str
) -> None:
    frames = [
        (f"{site}/model_executor/models/{model}.py", build),
        (f"{site}/model_executor/models/{model}.py", "__init__"),
        (f"{site}/model_executor/layers/{layer}.py", "__init__"),
    ]
    r = classify_text(_tb(frames, error, prefix))
    assert r.failed_stage == "weights", (r.failed_stage, r.evidence)
    assert r.first_exception is not None and error in r.first_exception.line


@given(site=SITE, model=MODEL, layer=LAYER, error=ERROR)
def test_a_layers_forward_and_a_start_up_frame_inside_a_constructor_keep_their_layer(
    site: str, model: str, layer: str, error: str
) -> None:
    serving = [
        (f"{site}/v1/engine/core.py", "run_busy_loop"),
        (f"{site}/v1/worker/gpu_model_runner.py", "execute_model"),
        (f"{site}/model_executor/models/{model}.py", "forward"),
        (f"{site}/model_executor/layers/{layer}.py", "forward"),
    ]
    assert classify_text(_tb(serving, error)).failed_stage == "runtime"
    backend = [
        (f"{site}/model_executor/models/{model}.py", "__init__"),
        (f"{site}/attention/layer.py", "__init__"),
        (f"{site}/attention/selector.py", "get_attn_backend"),
    ]
    assert classify_text(_tb(backend, error)).failed_stage == "engine"


LOGGED = st.sampled_from(
    ["ERROR 02-12 12:20:21 async_llm_engine.py:68] ", "ERROR 03-31 15:19:44 [async_llm_engine.py:68] "]
)
ROOT = st.sampled_from(
    ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 232.00 MiB.",
     "RuntimeError: CUDA error: an illegal memory access was encountered", "AssertionError"]
)  # fmt: skip


@given(logged=LOGGED, root=ROOT)
def test_a_root_v0s_async_engine_logged_failed_while_serving(logged: str, root: str) -> None:
    r = classify_text(f"{logged}{root}\n")
    assert r.failed_stage == "runtime", (r.failed_stage, r.evidence)
    assert r.first_exception is not None and root in r.first_exception.line


IMPORT = st.sampled_from(
    ["ImportError: bitsandbytes version is wrong. Please install bitsandbytes>=0.45.3.",
     "ImportError: Please install vllm-flash-attn to use this backend.",
     "ModuleNotFoundError: No module named 'deep_gemm'. Please install it with pip install deep_gemm",
     "ImportError: mistral_common version is too old"]
)  # fmt: skip


@given(site=SITE, model=MODEL, layer=LAYER, error=IMPORT)
def test_an_import_that_names_what_to_install_is_the_image_wherever_it_was_raised(
    site: str, model: str, layer: str, error: str
) -> None:
    frames = [
        (f"{site}/model_executor/models/{model}.py", "__init__"),
        (f"{site}/model_executor/layers/{layer}.py", "__init__"),
    ]
    r = classify_text(_tb(frames, error))
    assert r.failed_stage == "container", (r.failed_stage, r.evidence)
    served = "INFO:     Application startup complete.\n" + _tb([(f"{site}/v1/engine/core.py", "run_busy_loop")], error)
    assert classify_text(served).failed_stage == "runtime"


def test_real_logs() -> None:
    for name, stage, root in [
        ("2782.log", "weights", "[rank0]: AssertionError"),
        ("2016.log", "runtime", "torch.OutOfMemoryError: CUDA out of memory."),
        ("2195.log", "runtime", "torch.OutOfMemoryError: CUDA out of memory."),
        ("849.log", "container", "ImportError: bitsandbytes version is wrong."),
        ("4050.log", "engine", "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:455"),
        ("4055.log", "engine", "NcclError: NCCL_ERROR_SYSTEM_ERROR"),
        ("2844.log", "engine", "assert actual_len >= last_group_len"),
        ("1672.log", "weights", "assert self.weight_block_size is not None"),
        ("3806.log", "engine", "assert issubclass(underlying_builder, AttentionMetadataBuilder)"),
        ("2228.log", "engine", "deep_ep.cpp:226 'invalid resource handle'"),
        ("4101.log", "engine", "deep_ep.cpp:226 'invalid resource handle'"),
        ("1367.log", "weights", "401 Client Error: Unauthorized for url"),
        ("2919.log", "device", "Failures have been detected while processing an MLIR pass pipeline"),
        ("3716.log", "device", "error: Failures have been detected while processing an MLIR pass pipeline"),
    ]:
        r = classify_text(issue_text(name))
        assert (r.failed_stage, r.first_exception is not None and root in r.first_exception.line) == (stage, True), (
            name,
            r.failed_stage,
            r.first_exception,
        )


CUDA_FAIL = st.sampled_from(
    ["Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:455 'an illegal memory access was encountered'",
     "RuntimeError: CUDA error: an illegal memory access was encountered"]
)  # fmt: skip
CAPTURE = st.sampled_from(
    [
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)",
        "Capturing CUDA graph shapes",
        "Capturing CUDA graphs (decode, FULL)",
    ]
)


@given(fail=CUDA_FAIL, bar=CAPTURE, done=st.integers(0, 50), total=st.integers(51, 67), after=st.integers(0, 3))
def test_a_capture_bar_stuck_after_the_root_says_the_engine_was_capturing(
    fail: str, bar: str, done: int, total: int, after: int
) -> None:
    pct = 100 * done // total
    line = f"{bar}: {pct:3d}%|█████▎     | {done}/{total} [00:06<00:05,  4.14it/s]"
    tail = ["(EngineCore pid=5) ERROR 07-31 09:09:51 [multiproc_executor.py:284] Worker proc VllmWorker-2 died"]
    r = classify_text("\n".join([fail, *[fail] * after, line, *tail]) + "\n")
    assert r.failed_stage == "engine", (r.failed_stage, r.evidence)
    finished = f"{bar}: 100%|███████████| {total}/{total} [00:12<00:00,  4.14it/s]"
    assert classify_text("\n".join([fail, finished, *tail]) + "\n").failed_stage != "engine"


@given(
    st.sampled_from(
        ["cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_SYSTEM_ERROR: unhandled system error",
         "NcclError: NCCL_ERROR_UNHANDLED_CUDA_ERROR: unhandled cuda error",
         "RuntimeError: NCCL_ERROR_INTERNAL_ERROR: internal error"]
    ),
    PREFIX,
)  # fmt: skip
def test_nccls_errors_in_every_spelling_are_the_engines(line: str, prefix: str) -> None:
    r = classify_text(f"{prefix}{line}\n")
    assert r.failed_stage == "engine", (r.failed_stage, r.evidence)


ASSERTS = st.sampled_from(["assert self.weight_block_size is not None", "assert actual_len >= last_group_len",
                           "assert isinstance(layer, DecoderLayer), type(layer)"])  # fmt: skip
ODD = st.sampled_from(["", " ERROR 11-19 09:59:12 [multiproc_executor.py:743] ", "ESC[1;36m(EngineCore_DP0 pid=5)ESC[0;0m ",
                       "[rank0]: ", "worker-3 | "])  # fmt: skip
END = st.sampled_from(["", "```\n", "\n\n", "```\n\n"])


@given(site=SITE, model=MODEL, code=ASSERTS, prefix=ODD, end=END, head=st.booleans())
def test_a_stack_that_ends_in_its_assert_has_that_assert_as_its_root(
    site: str, model: str, code: str, prefix: str, end: str, head: bool
) -> None:
    frames = [
        (f"{site}/v1/worker/gpu_model_runner.py", "load_model"),
        (f"{site}/model_executor/models/{model}.py", "__init__"),
        (f"{site}/model_executor/layers/quantization/fp8.py", "create_weights"),
    ]
    lines = [f"{prefix}Traceback (most recent call last):"] if head else []
    for path, func in frames:
        lines += [f'{prefix}  File "{path}", line 42, in {func}', f"{prefix}    x = y()"]
    lines[-1] = f"{prefix}    {code}"
    r = classify_text("\n".join(lines) + "\n" + end)
    assert r.first_exception is not None and code in r.first_exception.line, (r.first_exception, r.evidence)
    assert r.failed_stage == "weights", (r.failed_stage, r.evidence)
    # the same statement with no frame above it, or prose that says "assert": no root of it
    assert classify_text(f"{prefix}    {code}\n" + end).first_exception is None
    assert classify_text(f"Please assert {code[7:]} before you start\n").first_exception is None


EP = st.sampled_from(
    ["RuntimeError: Failed: CUDA error /tmp/ep_kernels_workspace/DeepEP/csrc/deep_ep.cpp:226 'invalid resource handle'",
     "RuntimeError: DeepEP error: CPU recv timeout", "RuntimeError: pplx all_to_all init failed",
     "RuntimeError: NVSHMEM initialization failed", "RuntimeError: [SymmDeviceMemory] Device does not support multicasting"]
)  # fmt: skip


@given(line=EP, prefix=PREFIX)
def test_expert_parallel_communication_libraries_are_the_engines_unless_it_served(line: str, prefix: str) -> None:
    r = classify_text(f"{prefix}{line}\n")
    assert r.failed_stage == "engine", (r.failed_stage, r.evidence)
    served = "INFO:     Application startup complete.\n" + f"{prefix}{line}\n"
    assert classify_text(served).failed_stage == "runtime"


CLIENT_4XX = st.sampled_from(
    ["openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': 'bad', 'code': 400}",
     "openai.NotFoundError: Error code: 404 - {'object': 'error', 'message': 'The model `x` does not exist.'}",
     "openai.UnprocessableEntityError: Error code: 422 - {'detail': [{'type': 'missing'}]}"]
)  # fmt: skip


@given(line=CLIENT_4XX, tb=st.booleans())
def test_an_openai_clients_4xx_is_one_requests_refusal(line: str, tb: bool) -> None:
    started = "INFO 06-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
    body = (
        _tb([("/app/client.py", "main"), ("/usr/lib/python3/site-packages/openai/_base_client.py", "request")], line)
        if tb
        else line + "\n"
    )
    r = classify_text(started + body)
    assert r.first_exception is None and r.failed_stage == "none", (r.first_exception, r.evidence)
    hub = "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/m/resolve/main/config.json"
    assert classify_text(started + hub + "\n").first_exception is not None


PROG = st.sampled_from(["vllm serve", "vllm", "api_server.py", "python -m vllm.entrypoints.openai.api_server"])
COMPILED = st.sampled_from(
    ["/opt/venv/lib/python3.12/site-packages/vllm/attention/ops/prefix_prefill.py", "/tmp/tmpx/main.c", "kernel.cu"]
)


@given(prog=PROG, path=COMPILED, line=st.integers(1, 9999), col=st.integers(0, 99))
def test_a_compilers_diagnostic_is_not_argparses_and_a_failed_lowering_is_the_device(
    prog: str, path: str, line: int, col: int
) -> None:
    r = classify_text(f"{prog}: error: argument --dtype: invalid choice: 'fp7'\n")
    assert r.failed_stage == "config", (r.failed_stage, r.evidence)
    mlir = f"{path}:{line}:{col}: error: Failures have been detected while processing an MLIR pass pipeline\n"
    assert classify_text(mlir).failed_stage == "device"
    other = f"{path}:{line}:{col}: error: use of undeclared identifier 'x'\n"
    assert classify_text(other).failed_stage != "config"


def _complete_real_logs() -> list:
    from tests.support.corpus import SHARED_CORPUS, cases, tuned_cases

    logs = [c for c in cases(SHARED_CORPUS) + tuned_cases() if c.folder in ("vllm-cpu", "vllm-cpu-faults")]
    assert len(logs) >= 100
    return logs


def _verdict(text: str, shift: int = 0) -> tuple:
    r = classify_text(text)
    return r.failed_stage, None if r.first_exception is None else r.first_exception.line_number - shift


_PLAIN: dict[str, tuple] = {}


def plain_verdict(case: Any) -> tuple:
    """A complete log's verdict as written, its lines joined by ``\n`` (computed once per process: the tests
    that re-lay every complete log out all compare against it)."""
    if case.id not in _PLAIN:
        _PLAIN[case.id] = _verdict("\n".join(case.text().splitlines()) + "\n")
    return _PLAIN[case.id]


def test_every_complete_real_log_keeps_its_verdict_pasted_indented_padded_or_with_crlf() -> None:
    """A paste indents a whole log (a markdown code block, a list item; spaces or a tab), a terminal's
    copy pads its lines with spaces, Windows ends them with CRLF: the stage, whether there is a root and
    which line it is stay as they were. Behind a fence and a line of prose too, unless the root is the
    log's first line (a crash before anything was printed: with prose before it, it no longer is)."""
    wrong = []
    for case in _complete_real_logs():
        lines = case.text().splitlines()
        ref = plain_verdict(case)
        forms = {f"indent {p!r}": "\n".join(p + x if x else x for x in lines) + "\n" for p in ("  ", "    ", "\t")}
        forms["padded"] = "\n".join(x + "   " for x in lines) + "\n"
        forms["crlf"] = "\r\n".join(lines) + "\r\n"
        for how, text in forms.items():
            if _verdict(text) != ref:
                wrong.append((case.id, how, ref, _verdict(text)))
        if ref[1] != 1:
            fenced = "Here is the log:\n\n```\n" + forms["indent '    '"] + "```\n"
            if _verdict(fenced, 3) != ref:
                wrong.append((case.id, "fenced", ref, _verdict(fenced, 3)))
    assert not wrong, wrong[:10]


def test_real_excerpts_pasted_indented_or_padded() -> None:
    """Excerpts of the tuned part whose paste indented them or padded their lines (2802: ``> AssertionError ``
    with a space after it; 3817, 4035, 4046: a list item's indentation before the exception line)."""
    for name, stage, root in [
        ("2802.log", "weights", "AssertionError"),
        ("3817.log", "engine", "AssertionError"),
        ("4035.log", "engine", "AttributeError: 'Tensor' object has no attribute '_elem'"),
        ("4046.log", "engine", "AssertionError: Expect a Tensor or a View"),
    ]:
        r = classify_text(issue_text(name))
        assert r.first_exception is not None and root in r.first_exception.line, (name, r.first_exception)
        if name == "2802.log":  # (the other three are tuned misses of their stage: nothing names the layer)
            assert r.failed_stage == stage, (name, r.failed_stage)


@given(site=SITE, model=MODEL, error=ERROR, tabs=st.sampled_from(["\t", "\t\t"]))
def test_a_traceback_a_paste_indented_with_a_tab_is_read_as_one(site: str, model: str, error: str, tabs: str) -> None:
    frames = [
        (f"{site}/model_executor/model_loader/loader.py", "load_weights"),
        (f"{site}/model_executor/models/{model}.py", "load_weights"),
    ]
    tb = _tb(frames, error).splitlines()
    r = classify_text("I get this error when I start the server:\n" + "\n".join(tabs + x for x in tb) + "\n")
    assert r.first_exception is not None and error in r.first_exception.line, r.first_exception
    assert r.failed_stage == "weights", (r.failed_stage, r.evidence)


CLIENT = st.sampled_from(
    [
        "openai/_base_client.py",
        "llama_index/llms/openai/base.py",
        "langchain_openai/chat_models/base.py",
        "litellm/main.py",
    ]
)
CLIENT_ERROR = st.sampled_from(
    ["ValueError: Expected at least one tool call, but got 0 tool calls.", "KeyError: 'choices'", "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"]
)  # fmt: skip


@given(lib=CLIENT, error=CLIENT_ERROR, site=st.sampled_from(["site-packages", "dist-packages"]))
def test_a_clients_traceback_pasted_with_the_servers_log_is_no_root(lib: str, error: str, site: str) -> None:
    server = (
        "INFO 04-07 11:40:00 [api_server.py:1] vLLM API server version 0.8.3\nINFO:     Application startup complete.\n"
    )
    frames = [
        ("/home/me/test.py", "<module>"),
        ("/home/me/test.py", "main"),
        (f"/usr/lib/python3.12/{site}/{lib}", "create"),
    ]
    r = classify_text(server + _tb(frames, error))
    assert r.first_exception is None and r.failed_stage == "none", (r.first_exception, r.evidence)
    timeout = "openai.APITimeoutError: Request timed out."
    assert classify_text(server + _tb(frames, timeout)).first_exception is not None  # the server may have hung
    own = [*frames[:2], ("/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", "run_busy_loop")]
    assert classify_text(server + _tb(own, error)).first_exception is not None


def test_the_real_client_traceback_pasted_under_the_servers_tool_parser_error() -> None:
    r = classify_text(issue_text("2658.log"))  # llama_index's ValueError under the server's own refused parse
    assert r.first_exception is None and r.failed_stage == "none", r.first_exception

"""Issue 13, ninth session: the last default, and the process start told by the stack.

The pattern the issue names first: an excerpt with no start-up line and nothing naming a layer
"defaults to container". Of the tuned part's roots that reached that default, 7 in 53 were the
process start and 17 were runtime: what fails at the process start says so (an import, a
library, a failed import's leftovers, the program's own entry), so a Python exception with
nothing else to go on comes from a server's life, and most of it is serving.

- the last default is ``runtime`` (``default``, low confidence), unless the stack is the main
  program's own, printed whole from its first (module-level) frame: then it never got past its start
  (session 14: ``runtime`` only when the log's words are a server's, else the engine's set-up, see
  ``tests/test_classify_14.py``);
- a stack whose vLLM frames are all the program's entry (its command line, its logging set-up) is
  the process start (``frames``), whatever the exception;
- weak words of a failed import: library code naming a module it never got (``NameError: name
  'vllm_ops' is not defined``), an installed module without the attribute its caller expects,
  "failed to import" in any case.

Each reading on generated logs (classes of input) and on the real logs of the tuned part that
showed it; each fails without its change.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import REPO_CORPUS, issue_text
from tests.support.tracebacks import traceback_text

PLAIN = st.sampled_from(
    ["AssertionError: Encoder cache miss for abc", "KeyError: None", "IndexError: list index out of range",
     "ValueError: too many values to unpack (expected 2)",
     "AttributeError: 'NoneType' object has no attribute 'shape'", "RuntimeError: Unsupported block size: 256",
     "TypeError: argument 'tokens': 'NoneType' object cannot be converted to 'PyString'"]
)  # fmt: skip
# frames of no layer: model code, a kernel library, vLLM's utilities
LOOSE = st.lists(
    st.sampled_from(
        [('/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/llama.py', 'forward'),
         ('/usr/local/lib/python3.12/dist-packages/flashinfer/fused_moe/core.py', 'trtllm_fp8_block_scale_moe_op'),
         ('vllm/v1/utils.py', 'copy_slice'),
         ('/opt/venv/lib/python3.11/site-packages/vllm/utils/__init__.py', 'cdiv'),
         ('/usr/lib/python3.12/functools.py', 'wrapper')]
    ),
    max_size=4,
)  # fmt: skip
PREFIX = st.sampled_from(["", "ERROR 10-13 06:03:56 [worker.py:12] ", "```\n"])


@given(PLAIN, LOOSE, PREFIX, st.booleans())
def test_nothing_naming_a_layer_is_the_default(
    error: str, stack: list[tuple[str, str]], prefix: str, talk: bool
) -> None:
    """Serving when the excerpt talks of it (session 14), else the engine's set-up; low confidence."""
    log = (
        prefix
        + ("It fails on the first chat request:\n" if talk else "")
        + (traceback_text(stack, error) if stack else error + "\n")
    )
    res = classify_text(log)
    assert res.first_exception is not None and error in res.first_exception.line
    want = "runtime" if talk else "engine"
    assert (res.failed_stage, res.evidence.rule, res.confidence) == (want, "default", "low"), res.evidence


@given(
    PLAIN, LOOSE.filter(bool), st.sampled_from(["/usr/local/bin/vllm", "/opt/venv/bin/python-app", "<frozen runpy>"])
)
def test_the_main_programs_whole_stack_is_the_process_start(error: str, stack: list, module: str) -> None:
    """(A stack of module-level frames only is an import chain: ``frames``, tested elsewhere.)"""
    res = classify_text(traceback_text(stack, error, module=module))
    assert (res.failed_stage, res.evidence.rule) == ("container", "default"), res.evidence


ENTRY = st.lists(
    st.sampled_from(
        [('/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/cli/main.py', 'main'),
         ('/opt/k3tui-vllm/lib/python3.11/site-packages/vllm/entrypoints/cli/serve.py', 'cmd'),
         ('vllm/logger.py', 'configure_logging'),
         ('/app/vllm/vllm/logger.py', '_configure_vllm_root_logger'),
         ('/usr/lib/python3/dist-packages/uvloop/__init__.py', 'run')]
    ),
    min_size=1, max_size=4,
).filter(lambda fs: any("/vllm/" in "/" + p for p, _ in fs))  # fmt: skip


@given(ENTRY, PLAIN, st.booleans())
def test_a_stack_that_never_left_the_programs_entry_is_the_process_start(entry: list, error: str, module: bool) -> None:
    res = classify_text(traceback_text(entry, error, module="/usr/local/bin/vllm" if module else None))
    assert (res.failed_stage, res.evidence.rule, res.confidence) == ("container", "frames", "high"), res.evidence


@given(ENTRY, PLAIN)
def test_a_layer_past_the_entry_is_not_the_process_start(entry: list, error: str) -> None:
    """The entry called into the API server's start-up (its socket bind): that layer, not the start."""
    stack = [*entry, ("/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py", "serve_http")]
    assert classify_text(traceback_text(stack, error)).failed_stage == "api"
    # an unmapped vLLM frame past the entry: not the entry's own failure (falls to the default)
    stack = [*entry, ("/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/async_llm.py", "from_vllm_config")]
    assert classify_text(traceback_text(stack, error)).evidence.rule != "frames"


@given(
    st.sampled_from(
        ["NameError: name 'vllm_ops' is not defined", "NameError: name 'flash_attn_varlen_func' is not defined",
         "AttributeError: module 'vllm_ascend' has no attribute 'register'",
         "AttributeError: partially initialized module 'torch' has no attribute 'ops'",
         "RuntimeError: The actor with name RayWorkerVllm failed to import on the worker.",
         "ImportError: cannot import name 'x' from 'y'"]
    ),
    PREFIX,
)  # fmt: skip
def test_a_failed_imports_leftovers_are_the_image(error: str, prefix: str) -> None:
    res = classify_text(prefix + error + "\n")
    # (a guarded import's *_ops name is a start-up rule since the third round: it beats the frames)
    assert res.failed_stage == "container" and res.evidence.rule in ("exception-type", "message"), res.evidence


def test_real_logs() -> None:
    """Tuned part: an excerpt with nothing but the error (308: runtime), a failed import's
    leftovers (944: NameError, 1626: Ray's 'failed to import', 2118: a module's missing attribute),
    a complete log whose stack never left the command line's entry (a shadowed uvloop)."""
    res = classify_text(issue_text("308.log"))
    assert (res.failed_stage, res.evidence.rule) == ("runtime", "default")
    for name in ("944.log", "945.log", "1626.log"):
        res = classify_text(issue_text(name))
        assert res.failed_stage == "container" and res.evidence.rule in ("exception-type", "message"), name
    # (since session 18 its stack says it first: vLLM's plugin loader running the installed plugin)
    res = classify_text(issue_text("2118.log"))
    assert (res.failed_stage, res.evidence.rule) == ("container", "frames"), res.evidence
    for name in ("py-shadow-uvloop-empty.log", "py-logging-config-missing.log"):
        res = classify_text((REPO_CORPUS / "vllm-cpu-faults" / name).read_text())
        assert (res.failed_stage, res.evidence.rule) == ("container", "frames"), name

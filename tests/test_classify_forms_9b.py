"""Issue 13, ninth session, third round: forms and words of the excerpts read from vLLM issue bodies.

Each reading is tested on generated lines (classes of input) and on the real excerpt of the tuned
part that showed it (``tests/data/corpus/vllm-issues``), and fails without its change:

- roots: Python's bare ``Exception: msg``; V0's worker naming the failed method on a line of its own
  (the traceback after it ends in the failure); Ray's ``RuntimeError: Traceback …`` carrying a remote
  traceback (its last exception line); an exception's repr quoted inline (``ValueError("…")``);
- not roots: a broken ``vllm._C`` warning before a failure it does not cause (a tokenizer's bytes, a
  kernel's signature, another package's import); Python's ``Exception ignored in:`` tracebacks at exit;
- forms: a reporter's ``... `` elision before a line;
- stages: vLLM's own module missing and a guarded import's ``*_ops`` name (the image, whatever the
  frames); no TPU available, the TPU topology, a type the architecture lacks (device); the hub's HTTP
  errors, the Run:ai streamer, the network failing with nothing else said (weights); an architecture
  with no vLLM implementation (config).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import issue_text

PREFIX = st.sampled_from(
    [
        "",
        "ERROR 03-10 11:30:29 engine.py:381] ",
        "(VllmWorkerProcess pid=7) ERROR 03-10 11:30:29 multiproc_worker_utils.py:242] ",
    ]
)


def _real(name: str) -> tuple[str, str | None]:
    res = classify_text(issue_text(name))
    return res.failed_stage, res.first_exception.line if res.first_exception else None


@given(
    st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=60).filter(
        lambda t: t.strip() == t and not t.endswith("^M")  # (a trailing ^M is a terminal's CR: no message)
    ),
    PREFIX,
)
def test_pythons_bare_exception_is_a_root(msg: str, prefix: str) -> None:
    line = f"{prefix}Exception: {msg}"
    res = classify_text(line + "\n")
    assert res.first_exception is not None and res.first_exception.line == line


def test_real_bare_exception() -> None:
    """2761: the Run:ai streamer's bare Exception (was: no root), the model's files: weights."""
    assert _real("2761.log") == (
        "weights",
        "Exception: Could not send runai_request to libstreamer due to: b'File access error'",
    )


@given(
    st.sampled_from(["init_device", "load_model", "determine_num_available_blocks"]),
    st.sampled_from(["RuntimeError: Cannot re-initialize CUDA in forked subprocess.", "ValueError: bad shape"]),
)
def test_a_worker_naming_the_failed_method_wraps_the_traceback_after_it(method: str, error: str) -> None:
    pre = "(VllmWorkerProcess pid=4821) ERROR 03-10 11:30:29 multiproc_worker_utils.py:242] "
    log = (f"{pre}Exception in worker VllmWorkerProcess while processing method {method}.\n{pre}Traceback (most recent call last):\n"
           f'{pre}  File "/x/vllm/worker/worker.py", line 155, in {method}\n{pre}    f()\n{pre}{error}\n')  # fmt: skip
    res = classify_text(log)
    assert res.first_exception is not None and res.first_exception.line == pre + error


def test_ray_carrying_a_remote_traceback_in_a_runtime_error() -> None:
    inner = "RuntimeError: No CUDA GPUs are available"
    log = ("    raise RuntimeError(traceback.format_exc()) from None\nRuntimeError: Traceback (most recent call last):\n"
           '  File "/x/ray/worker.py", line 1, in f\n    g()\n' + inner + "\n")  # fmt: skip
    res = classify_text(log)
    assert res.first_exception is not None and res.first_exception.line == inner and res.failed_stage == "device"
    assert _real("2548.log") == ("device", inner)


def test_an_exception_repr_quoted_inline() -> None:
    """2699: ValueError("type fp8e4nv not supported in this architecture …") in a sentence: device."""
    stage, line = _real("2699.log")
    assert stage == "device" and 'ValueError("type fp8e4nv not supported in this architecture' in line
    res = classify_text('it crashes with error `KeyError("model.layers.0")` on start\n')
    assert res.first_exception is not None and 'KeyError("model.layers.0")' in res.first_exception.line


# --- a broken vllm._C warning, and what it causes ---------------------------------------------------------

WARN = 'WARNING 07-16 22:59:22 _custom_ops.py:14] Failed to import from vllm._C with ImportError("libcuda.so.1: cannot open shared object file")'
CAUSED = st.sampled_from(
    ["AttributeError: '_OpNamespace' '_C' object has no attribute 'rms_norm'", "ImportError: cannot import name '__version_tuple__' from 'vllm'",
     "NameError: name 'vllm_ops' is not defined", "ImportError: /x/vllm/_moe_C.abi3.so: undefined symbol: _ZN3c10"]
)  # fmt: skip
NOT_CAUSED = st.sampled_from(
    ["UnicodeDecodeError: 'utf-8' codec can't decode byte 0xac in position 446: invalid start byte",
     "TypeError: varlen_fwd() takes 14 positional arguments but 15 were given",
     "ModuleNotFoundError: No module named 'jsonschema.protocols'",
     "ValueError: `use_cache` was set to `True` but the loaded model only supports `use_cache=False`"]
)  # fmt: skip


@given(CAUSED)
def test_the_warning_is_the_root_of_what_a_broken_import_causes(error: str) -> None:
    res = classify_text(
        WARN + '\nTraceback (most recent call last):\n  File "/x/y.py", line 1, in f\n    g()\n' + error + "\n"
    )
    assert res.first_exception is not None and res.first_exception.line == WARN


@given(NOT_CAUSED)
def test_a_failure_the_broken_import_does_not_cause_is_its_own_root(error: str) -> None:
    res = classify_text(
        WARN + '\nTraceback (most recent call last):\n  File "/x/y.py", line 1, in f\n    g()\n' + error + "\n"
    )
    assert res.first_exception is not None and res.first_exception.line == error


def test_real_warnings_and_later_failures() -> None:
    assert "jsonschema.protocols" in _real("2641.log")[1]
    assert "UnicodeDecodeError" in _real("2642.log")[1]
    assert (
        _real("2813.log")[0] == "weights" and "use_cache" in _real("2813.log")[1]
    )  # 'vllm.commit_id': a source build's
    for name in ("1260.log", "2516.log"):  # still the warning's: vllm's own import, a missing op
        assert "Failed to import from vllm._C" in _real(name)[1], name


@given(
    st.sampled_from(["TCPStore.__del__", "Pool.__del__", "_after_fork"]),
    st.sampled_from(["TypeError: 'NoneType' object is not callable", "ImportError: sys.meta_path is None"]),
)
def test_an_exception_python_ignored_at_exit_is_no_root(where: str, error: str) -> None:
    log = f"Prompt: 'x', Generated text: 'y'\nException ignored in: <function {where} at 0x7f9>\nTraceback (most recent call last):\n  File \"/x/store.py\", line 59, in __del__\n{error}\n"
    assert classify_text(log).first_exception is None
    assert classify_text(log).first_exception is None
    flood = "".join(f"host:1:1 [0] NCCL INFO ring {i}\n" for i in range(60))  # past the head: found by looking back
    assert classify_text(flood + log).first_exception is None
    assert classify_text(log.replace("Exception ignored in", "Something else in")).first_exception is not None


def test_real_ignored_at_exit() -> None:
    assert _real("2776.log")[1] is None


def test_a_reporters_elision_before_a_line() -> None:
    assert _real("2742.log")[1] == "... AssertionError: 19114 is not divisible by 8 [repeated 2x across cluster]"


# --- stages ----------------------------------------------------------------------------------------------


@given(st.sampled_from(["ModuleNotFoundError: No module named 'vllm._C'", "ModuleNotFoundError: No module named 'vllm.vllm_flash_attn'",
                        "NameError: name 'vllm_cache_ops' is not defined"]),
       st.sampled_from(["/x/vllm/platforms/cuda.py", "/x/vllm/worker/cache_engine.py"]))  # fmt: skip
def test_vllms_own_module_missing_is_the_image_whatever_the_frames(error: str, path: str) -> None:
    log = f'Traceback (most recent call last):\n  File "{path}", line 1, in _init_cache\n    f()\n{error}\n'
    assert classify_text(log).failed_stage == "container"


@given(st.sampled_from(["ValueError: Current node has no TPU available.", "RuntimeError: Bad StatusOr access: INTERNAL: Failed to get global TPU topology.",
                        "ValueError: type fp8e4nv not supported in this architecture.",
                        "RuntimeError: Triton Error [CUDA]: device kernel image is invalid"]), PREFIX)  # fmt: skip
def test_device_words(error: str, prefix: str) -> None:
    assert classify_text(prefix + error + "\n").failed_stage == "device"


@given(st.sampled_from(["huggingface_hub.utils._errors.HfHubHTTPError: 416 Client Error: Requested Range Not Satisfiable",
                        "ssl.SSLEOFError: [SSL: UNEXPECTED_EOF_WHILE_READING] EOF occurred in violation of protocol",
                        "requests.exceptions.ProxyError: HTTPSConnectionPool(host='x', port=443): Max retries exceeded",
                        "Exception: Could not send runai_request to libstreamer due to: b'File access error'"]), PREFIX)  # fmt: skip
def test_weights_words(error: str, prefix: str) -> None:
    assert classify_text(prefix + error + "\n").failed_stage == "weights"


def test_real_stages() -> None:
    got = {
        n: _real(n)[0]
        for n in (
            "2760.log",
            "2692.log",
            "2815.log",
            "2633.log",
            "2725.log",
            "353.log",
            "2704.log",
            "2654.log",
            "2723.log",
        )
    }
    assert got == {"2760.log": "device", "2692.log": "device", "2815.log": "weights", "2633.log": "weights", "2725.log": "container",
                   "353.log": "container", "2704.log": "container", "2654.log": "config", "2723.log": "device"}  # fmt: skip
    res = classify_text(issue_text("2723.log"))
    assert "Cannot re-initialize CUDA in forked subprocess" in res.first_exception.line
    assert (
        classify_text(
            "ValueError: Qwen2ForX has no vLLM implementation and the Transformers implementation is not compatible with vLLM.\n"
        ).failed_stage
        == "config"
    )

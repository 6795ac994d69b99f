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

Each on generated logs and on the real logs of the tuned part; each fails without its change.
"""

from __future__ import annotations

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
    assert r.failed_stage == "weights", (r.failed_stage, r.why)
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
    assert r.failed_stage == "runtime", (r.failed_stage, r.why)
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
    assert r.failed_stage == "container", (r.failed_stage, r.why)
    served = "INFO:     Application startup complete.\n" + _tb([(f"{site}/v1/engine/core.py", "run_busy_loop")], error)
    assert classify_text(served).failed_stage == "runtime"


def test_real_logs() -> None:
    for name, stage, root in [
        ("2782.log", "weights", "[rank0]: AssertionError"),
        ("2016.log", "runtime", "torch.OutOfMemoryError: CUDA out of memory."),
        ("2195.log", "runtime", "torch.OutOfMemoryError: CUDA out of memory."),
        ("849.log", "container", "ImportError: bitsandbytes version is wrong."),
    ]:
        r = classify_text(issue_text(name))
        assert (r.failed_stage, r.first_exception is not None and root in r.first_exception.line) == (stage, True), (
            name,
            r.failed_stage,
            r.first_exception,
        )

"""Issue 13, nineteenth session: forms found in the tuned misses.

- The start-up markers alone place a root after the engine was built (``init engine (profile, …) took``) and
  before the API was ready; then the engine core says ``EngineCore encountered a fatal error``: its busy loop
  failed, so the engine was running requests (an offline ``LLM(...)`` generating, which has no API at all):
  runtime. The client's ``EngineDeadError`` alone does not say so there (a server whose API failed to start
  stops its engine, and its client reports that death too).

- A reporter's sentence that quotes a failure's words in a markdown code span (``GLM fails to initialize with
  `CUDA out of memory` during sampler warm-up``) is no failure line of its own: the exception the excerpt
  quotes below it is the root; the sentence only when the excerpt quotes none.
- The interpreter that cannot start what it was asked to run (``/usr/bin/python3: No module named vllm``
  from ``python -m vllm…`` where vllm is not installed, ``python3: can't open file '/app/serve.py': [Errno
  2] …``) and a launcher that finds no vllm executable (``[Errno 2] No such file or directory:
  '/usr/local/bin/vllm'``, or ``'vllm'`` looked up on the PATH): the container's root.
- A model registry that has no entry for the model's class (``Model class X not found in diffusion model
  registry``, as vLLM-Omni says it): an architecture this build does not support, the config's.
- A broken connection (``ConnectionResetError``, ``BrokenPipeError``) that ended the program: its traceback
  runs from the program's first frame, nothing caught it (a server catches a client that went away and goes
  on): a root, not a client gone.
- torch's CPU allocator running out (``DefaultCPUAllocator: not enough memory: you tried to allocate N
  bytes``) is an out-of-memory root.
- A collective communicator that cannot be created (``HCCL function error: hcclCommInitRootInfoConfig(…)``,
  ``ncclCommInitRank failed``, torch_npu's ``createHCCLComm``) is the engine's distributed set-up, wherever
  the first collective created it (a model's layers under ``load_model`` build theirs lazily).
- torch.compile's compile id after glog's prefix (``E0106 03:23:01.677000 37645 torch/x.py:2721] [0/0] …``)
  is part of the prefix: the traceback torch logs behind it is read as one, its exception line the root.
- The model registry failing to write its model-info cache (``Error saving model info cache.`` and the
  traceback of the folder it could not make) goes on without it: never a root.

Each on generated logs and on a real log of the tuned part; each fails without its change (the guards,
which say what a rule must leave alone, pass either way).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import tuned_text
from tests.support.tracebacks import traceback_text

_PROC = st.sampled_from(["EngineCore", "EngineCore_DP0"])
_HEAD = [
    "INFO 12-06 15:31:11 [utils.py:253] non-default args: {'model': '/m'}",
    "INFO 12-06 15:31:23 [core.py:95] Initializing a V1 LLM engine (v0.32.0) with config: model='/m'",
    "INFO 12-06 15:31:35 [gpu_model_runner.py:2602] Starting to load model /m...",
    "INFO 12-06 15:31:36 [default_loader.py:314] Loading weights took 0.01 seconds",
    "INFO 12-06 15:31:37 [kv_cache_utils.py:1240] GPU KV cache size: 9,184 tokens",
    "INFO 12-06 15:31:41 [core.py:402] init engine (profile, create kv cache, warmup model) took 4.38 s",
]


def _log(proc: str, died: str, after: list[str]) -> str:
    lines = [f"({proc} pid=7) {x}" for x in _HEAD]
    lines.append(f"({proc} pid=7) ERROR 12-06 15:32:08 [multiproc_executor.py:315] {died}")
    return "\n".join(lines + after) + "\n"


_DIED = st.sampled_from(
    [
        "Worker proc VllmWorker-0 died unexpectedly (exit code: None), shutting down executor.",
        "Worker proc VllmWorker-1 died unexpectedly (exit code: -9), shutting down executor.",
    ]
)


@given(proc=_PROC, died=_DIED, gap=st.integers(0, 4))
def test_the_engines_fatal_error_after_a_built_engine_says_it_was_running(proc: str, died: str, gap: int) -> None:
    after = [f"({proc} pid=7) INFO 12-06 15:32:08 [multiproc_executor.py:479] [shutdown] Executor: waiting"] * gap
    after += [
        f"({proc} pid=7) ERROR 12-06 15:32:08 [core.py:1512] {proc} encountered a fatal error.",
        f"({proc} pid=7) ERROR 12-06 15:32:08 [core.py:1512] Traceback (most recent call last):",
        f'({proc} pid=7) ERROR 12-06 15:32:08 [core.py:1512]   File "/v/vllm/v1/engine/core.py", line 1, in run_engine_core',
        f"({proc} pid=7) ERROR 12-06 15:32:08 [core.py:1512] RuntimeError: cancelled",
    ]
    res = classify_text(_log(proc, died, after))
    assert res.first_exception is not None and died in res.first_exception.line
    assert res.failed_stage == "runtime", res.evidence


@given(proc=_PROC, died=_DIED)
def test_the_clients_engine_dead_error_alone_leaves_the_markers_stage(proc: str, died: str) -> None:
    """Guard: only the engine core's own word moves it; the client's report of the death does not."""
    after = [
        "ERROR 12-06 15:32:09 [async_llm.py:906] AsyncLLM output_handler failed.",
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
    ]
    res = classify_text(_log(proc, died, after))
    assert res.failed_stage == "api", res.evidence


def test_a_real_offline_run_whose_worker_the_memory_cgroup_killed_while_generating() -> None:
    name = "offline-memcg-oom-prompt-logprobs.log"
    res = classify_text(tuned_text("vllm-cpu-faults", name))
    assert "died unexpectedly" in res.first_exception.line
    assert res.failed_stage == "runtime", res.evidence


def test_a_real_server_whose_api_failed_to_start_is_still_the_api() -> None:
    """Guard: the chat template broke the API's start; the client's EngineDeadError followed."""
    name = "tok-chat-template-broken-jinja.log"
    res = classify_text(tuned_text("vllm-cpu-faults", name))
    assert res.failed_stage == "api", res.evidence


_PHRASES = st.sampled_from(
    ["CUDA out of memory", "NCCL error", "Error while deserializing header", "no kernel image is available"]
)
_WORDS = st.lists(
    st.sampled_from(["the", "model", "fails", "to", "start", "with", "when", "using", "TP=2"]), min_size=1, max_size=6
)


@given(phrase=_PHRASES, before=_WORDS, after=_WORDS, fence=st.booleans())
def test_a_sentence_quoting_the_failures_words_yields_to_the_exception_quoted_below(
    phrase: str, before: list[str], after: list[str], fence: bool
) -> None:
    sentence = f"{' '.join(before).capitalize()} `{phrase}` {' '.join(after)}."
    exc = f"RuntimeError: {phrase} occurred when warming up sampler with 256 dummy requests."
    lines = ["### Bug", "", sentence, "", "**Error:**", *(["```", exc, "```"] if fence else [exc])]
    res = classify_text("\n".join(lines) + "\n")
    assert res.first_exception is not None and res.first_exception.line == exc, res.first_exception


@given(phrase=_PHRASES, before=_WORDS, after=_WORDS)
def test_the_sentence_alone_is_still_the_root(phrase: str, before: list[str], after: list[str]) -> None:
    """Guard: with no exception quoted below, the sentence's words are all the excerpt says."""
    sentence = f"{' '.join(before).capitalize()} `{phrase}` {' '.join(after)}."
    res = classify_text("\n".join(["### Bug", "", sentence, "", "Any idea?"]) + "\n")
    assert res.first_exception is not None and res.first_exception.line == sentence


def test_a_real_report_quoting_cuda_out_of_memory_in_prose_then_the_error() -> None:
    name = "6343.log"
    res = classify_text(tuned_text("vllm-issues", name))
    assert res.first_exception.line.startswith("RuntimeError: CUDA out of memory occurred when warming up sampler")


_PY = st.sampled_from(["python", "python3", "python3.12", "/usr/bin/python3", "/opt/venv/bin/python"])
_LAUNCH_PREFIX = st.sampled_from(["", "2026-12-01T03:12:44.123Z ", "vllm-0  | "])


@given(py=_PY, prefix=_LAUNCH_PREFIX, script=st.from_regex(r"/[a-z]{1,8}/[a-z_]{1,10}\.py", fullmatch=True))
def test_the_interpreter_that_cannot_start_its_program_is_the_containers_root(
    py: str, prefix: str, script: str
) -> None:
    for line in (
        f"{py}: No module named vllm",
        f"{py}: can't open file '{script}': [Errno 2] No such file or directory",
    ):
        res = classify_text(f"{prefix}{line}\n")
        assert res.first_exception is not None and line in res.first_exception.line, line
        assert res.failed_stage == "container", (line, res.evidence)


@given(
    where=st.sampled_from(["/usr/local/bin/vllm", "/opt/venv/bin/vllm", "vllm"]),
    head=st.sampled_from(["FileNotFoundError: ", "Failed to run the vllm server: ", "ERROR: launch failed: "]),
)
def test_a_launcher_that_finds_no_vllm_executable_is_the_containers_root(where: str, head: str) -> None:
    line = f"{head}[Errno 2] No such file or directory: '{where}'"
    res = classify_text(line + "\n")
    assert res.first_exception is not None and res.first_exception.line == line
    assert res.failed_stage == "container", res.evidence


def test_a_model_folder_named_vllm_or_another_module_missing_is_not_the_executable() -> None:
    """Guards: a model path that happens to end in vllm is not the executable; python -m of another
    module (pip) is not vLLM's start."""
    res = classify_text("FileNotFoundError: [Errno 2] No such file or directory: '/models/vllm'\n")
    assert res.failed_stage != "container"
    res = classify_text("/usr/bin/python3: No module named pip\n")
    assert res.first_exception is None


@given(
    cls=st.from_regex(r"[A-Z][A-Za-z0-9]{2,20}For(?:CausalLM|ConditionalGeneration)", fullmatch=True),
    registry=st.sampled_from(["diffusion model registry", "model registry", "the audio model registry"]),
    prefix=st.sampled_from(["", "(APIServer pid=1) ERROR 05-01 10:00:00 [omni.py:12] "]),
)
def test_a_model_class_missing_from_a_registry_is_the_config(cls: str, registry: str, prefix: str) -> None:
    line = f"{prefix}ValueError: Model class {cls} not found in {registry}."
    res = classify_text(line + "\n")
    assert res.first_exception is not None and res.first_exception.line == line
    assert res.failed_stage == "config", res.evidence


_PEER = st.sampled_from(
    [
        "ConnectionResetError: [Errno 104] Connection reset by peer",
        "BrokenPipeError: [Errno 32] Broken pipe",
        "ConnectionAbortedError: [Errno 103] Software caused connection abort",
    ]
)
_SITE = "/opt/venv/lib/python3.11/site-packages"


@given(exc=_PEER, depth=st.integers(0, 3))
def test_a_broken_connection_that_ended_the_program_is_a_root(exc: str, depth: int) -> None:
    frames = [("/opt/venv/bin/vllm", "<module>"), (f"{_SITE}/vllm/entrypoints/cli/main.py", "main")]
    frames += [(f"{_SITE}/vllm/entrypoints/openai/api_server.py", f"build_step_{i}") for i in range(depth)]
    frames.append((f"{_SITE}/vllm/entrypoints/openai/api_server.py", "init_app_state"))
    res = classify_text(
        "INFO 12-06 17:14:40 [api_server.py:1] vLLM API server version 0.32.0\n" + traceback_text(frames, exc)
    )
    assert res.first_exception is not None and res.first_exception.line == exc, res.evidence


@given(exc=_PEER)
def test_a_client_that_went_away_in_a_request_handler_is_no_root(exc: str) -> None:
    """Guard: the server's request handling caught it (its traceback starts in the web server's loop)."""
    frames = [
        (f"{_SITE}/uvicorn/protocols/http/httptools_impl.py", "run_asgi"),
        (f"{_SITE}/starlette/responses.py", "stream_response"),
        (f"{_SITE}/vllm/entrypoints/openai/serving_chat.py", "chat_completion_stream_generator"),
    ]
    lines = [
        "INFO:     Application startup complete.",
        "ERROR:    Exception in ASGI application",
        *traceback_text(frames, exc).splitlines(),
        'INFO:     127.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    ]
    assert classify_text("\n".join(lines) + "\n").first_exception is None


def test_a_real_api_whose_set_up_lost_its_connection() -> None:
    name = "hook-api-init-app-state-connreset.log"
    res = classify_text(tuned_text("vllm-cpu-faults", name))
    assert res.first_exception is not None and "Connection reset by peer" in res.first_exception.line
    assert res.failed_stage == "api", res.evidence


@given(n=st.integers(1, 2**40), where=st.sampled_from(["alloc_cpu.cpp:117", "alloc_cpu.cpp:91"]))
def test_the_cpu_allocator_running_out_is_an_oom_root(n: int, where: str) -> None:
    exc = f"RuntimeError: [enforce fail at {where}] data. DefaultCPUAllocator: not enough memory: you tried to allocate {n} bytes."
    res = classify_text(traceback_text([(f"{_SITE}/vllm/v1/worker/cpu_model_runner.py", "execute_model")], exc))
    assert res.first_exception is not None and res.first_exception.line == exc
    assert res.oom_root_cause is True


@given(
    call=st.sampled_from(
        [
            "create_config:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:148 HCCL function error: "
            "hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error code is 7",
            "createHCCLComm:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:1479 HCCL function error: "
            "HcclGetRootInfo(&hcclID), error code is 6",
            "NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, ncclCommInitRank failed: unhandled system error",
        ]
    ),
    loader=st.sampled_from(["load_model", "load_weights", "__init__"]),
)
def test_a_communicator_that_cannot_be_created_is_the_engines_set_up(call: str, loader: str) -> None:
    frames = [
        (f"{_SITE}/vllm/v1/worker/gpu_model_runner.py", "load_model"),
        (f"{_SITE}/vllm/model_executor/model_loader/base_loader.py", loader),
        (f"{_SITE}/vllm/model_executor/models/deepseek_v2.py", "__init__"),
    ]
    exc = f"RuntimeError: {call}"
    res = classify_text(traceback_text(frames, exc))
    assert res.first_exception is not None and res.first_exception.line == exc
    assert res.failed_stage == "engine", res.evidence


def test_a_real_dp_ep_start_whose_hccl_communicator_failed_in_model_construction() -> None:
    name = "6375.log"
    res = classify_text(tuned_text("vllm-issues", name))
    assert "hcclCommInitRootInfoConfig" in res.first_exception.line
    assert res.failed_stage == "engine", res.evidence


@given(
    cid=st.from_regex(r"\[\d{1,2}/\d{1,2}(?:_\d)?\]", fullmatch=True),
    rank=st.sampled_from(["", "[rank7]:", "(Worker_DP1_TP3_EP7 pid=37645) [rank7]:"]),
)
def test_a_traceback_torch_logs_behind_a_compile_id_is_read(cid: str, rank: str) -> None:
    pre = f"{rank}E0106 03:23:01.677000 37645 site-packages/torch/_subclasses/fake_tensor.py:2721] {cid} "
    body = traceback_text(
        [(f"{_SITE}/torch/_subclasses/fake_tensor.py", "_dispatch_impl")], "RuntimeError: scale's dtype must be float32"
    ).splitlines()
    lines = [f"{pre}failed while attempting to run meta for npu.npu_quant_matmul.default", *(pre + x for x in body)]
    res = classify_text("\n".join(lines) + "\n")
    assert res.first_exception is not None and res.first_exception.line.endswith(
        "RuntimeError: scale's dtype must be float32"
    )


_CACHE_ERRORS = st.sampled_from(
    [
        "FileNotFoundError: [Errno 2] No such file or directory: '/home/u/.cache/vllm/modelinfos'",
        "PermissionError: [Errno 13] Permission denied: '/root/.cache/vllm'",
        "OSError: [Errno 30] Read-only file system: '/root/.cache/vllm/modelinfos'",
    ]
)


@given(err=_CACHE_ERRORS, proc=st.sampled_from(["APIServer pid=6986", "EngineCore_DP0 pid=7"]))
def test_the_registry_failing_to_save_its_model_info_cache_is_no_root(err: str, proc: str) -> None:
    pre = f"({proc}) ERROR 12-06 18:32:31 [registry.py:1041] "
    lines = [
        f"({proc}) INFO 12-06 18:32:30 [model.py:733] Resolved architecture: LlamaForCausalLM",
        pre + "Error saving model info cache.",
        *(pre + x for x in traceback_text([("/usr/lib/python3.11/pathlib.py", "mkdir")], err).splitlines()),
        f"({proc}) INFO 12-06 18:32:40 [core.py:402] init engine (profile, create kv cache, warmup model) took 4.38 s",
        "(APIServer pid=6986) INFO:     Application startup complete.",
    ]
    res = classify_text("\n".join(lines) + "\n")
    assert res.first_exception is None, res.first_exception


@given(err=_CACHE_ERRORS)
def test_a_failure_after_the_cache_error_is_still_the_root(err: str) -> None:
    """The start-up's own failure after it is the root (before the rule, the cache's error was taken for it)."""
    pre = "(APIServer pid=1) ERROR 12-06 18:32:31 [registry.py:1041] "
    real = "(Worker_TP1 pid=8222) ERROR 12-06 18:34:10 [multiproc_executor.py:1063] OSError: [Errno 30] Read-only file system: '/c/torch_compile_cache'"
    lines = [
        pre + "Error saving model info cache.",
        *(pre + x for x in traceback_text([("/usr/lib/python3.11/pathlib.py", "mkdir")], err).splitlines()),
        real,
    ]
    res = classify_text("\n".join(lines) + "\n")
    assert res.first_exception is not None and res.first_exception.line == real


def test_a_real_tp2_server_with_a_read_only_home_is_healthy() -> None:
    name = "ctr-tp2-home-read-only.log"
    assert classify_text(tuned_text("vllm-cpu-faults", name)).first_exception is None

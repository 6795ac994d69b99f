"""Issue 13, sixth session: what decides the stage when the root itself names no layer.

Three readings, each on the real corpus log that showed it (tuned part of
``tests/data/corpus/vllm-issues``) and on classes of generated logs:

- the engine core or a worker printed the root: past the config, so ``engine`` rather than the
  last default (``default``, low confidence);
- the loader's progress bar is stuck short of its total after the root: ``weights``;
- a traceback the end of the log cut before its exception line, with no ERROR header: still a
  failure (its first line is the root), unless the operator had stopped the server.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import Classifier, classify_text
from tests.support.corpus import issue_text

# --- the process that printed the root ---------------------------------------------------------

ENGINE_PROCS = st.sampled_from(
    ["EngineCore_DP0", "EngineCore", "Worker_TP3", "Worker_TP1_EP1", "VllmWorker rank=2", "VllmWorkerProcess",
     "RayWorkerWrapper", "RayWorkerVllm"]
)  # fmt: skip
OTHER_PROCS = st.sampled_from(["APIServer", "bundle_reservation_check_func", "MainProcess", "uvicorn"])
PLAIN_ERRORS = st.sampled_from(
    ["KeyError: 'language_model.model.layers.0.self_attn'", "IndexError: list index out of range",
     "AttributeError: 'NoneType' object has no attribute 'shape'", "RuntimeError: something unexpected"]
)  # fmt: skip


def _one_line(proc: str, error: str) -> str:
    return f"({proc} pid=4242) ERROR 08-24 13:18:52 [multiproc_executor.py:1050] {error}\n"


@given(ENGINE_PROCS, PLAIN_ERRORS)
def test_a_root_printed_by_the_engine_or_a_worker_is_past_the_config(proc: str, error: str) -> None:
    res = classify_text(_one_line(proc, error))
    assert res.first_exception is not None and error in res.first_exception.line
    assert (res.failed_stage, res.evidence.rule, res.confidence) == ("engine", "default", "low")
    assert proc.split()[0] in res.evidence.why


@given(OTHER_PROCS, PLAIN_ERRORS)
def test_a_root_of_another_process_is_not_placed_past_the_config_by_its_process(proc: str, error: str) -> None:
    """Only the engine's processes say "past the config"; another one's root falls to the last default
    (session 14: with no word of serving in the log, the engine's set-up: tests/test_classify_14.py)."""
    res = classify_text(_one_line(proc, error))
    assert (res.failed_stage, res.evidence.rule, res.confidence) == ("engine", "default", "low")
    assert "nor talks of serving" in res.evidence.why
    assert proc.split()[0] not in res.evidence.why


def test_the_process_is_weaker_than_any_rule_about_the_message() -> None:
    """An ImportError names the container even from a worker; an OOM names the engine anyway."""
    res = classify_text(_one_line("Worker_TP0", "ModuleNotFoundError: No module named 'flash_attn'"))
    assert (res.failed_stage, res.evidence.rule) == ("container", "exception-type")


def test_real_v1_worker_roots_with_nothing_else_are_engine() -> None:
    """684: eight workers' KeyError lines and no frame; 687: the EngineCore's one-line report."""
    for name in ("684.log", "687.log"):
        res = classify_text(issue_text(name))
        assert (res.failed_stage, res.evidence.rule) == ("engine", "default"), name


# --- the loader's progress bar -------------------------------------------------------------------

OOM = "(EngineCore_DP0 pid=7) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 80.00 MiB.\n"


def _bar(done: int, total: int) -> str:
    pct = 100 * done // total
    return f"Loading safetensors checkpoint shards: {pct:3d}% Completed | {done}/{total} [00:02<01:39,  2.77s/it]\n"


@given(st.integers(1, 64).flatmap(lambda t: st.tuples(st.integers(0, t - 1), st.just(t))), st.integers(0, 5))
def test_a_bar_stuck_short_of_its_total_after_the_root_is_weights(bar: tuple[int, int], gap: int) -> None:
    done, total = bar
    log = OOM + "\n" * gap + _bar(done, total) + "[rank0]: destroy_process_group() was not called\n"
    res = classify_text(log)
    assert (res.failed_stage, res.evidence.rule) == ("weights", "markers")
    assert f"{done}/{total}" in res.evidence.why


@given(st.integers(1, 64), st.integers(0, 5))
def test_a_finished_bar_is_not_evidence(total: int, gap: int) -> None:
    res = classify_text(OOM + "\n" * gap + _bar(total, total))
    assert (res.failed_stage, res.evidence.rule) == ("engine", "exception-type")


def test_only_the_last_update_of_a_bar_counts() -> None:
    """tqdm rewrites its line with CR: 1/4, 2/4 … 4/4 on one line is a finished load."""
    line = "".join(_bar(k, 4).rstrip("\n") + "\r" for k in range(5)).rstrip("\r") + "\n"
    assert (classify_text(OOM + line).failed_stage) == "engine"
    stuck = "".join(_bar(k, 4).rstrip("\n") + "\r" for k in range(3)).rstrip("\r") + "\n"
    assert classify_text(OOM + stuck).failed_stage == "weights"


def test_a_bar_still_moving_in_a_live_view_is_not_stuck() -> None:
    """Before the end of the log a bar short of its total may still move: the live answer keeps the OOM's stage."""
    c = Classifier()
    c.feed(OOM + _bar(1, 37))
    assert c.result().failed_stage == "engine"
    assert c.finish().failed_stage == "weights"


def test_a_stuck_bar_does_not_override_the_roots_own_evidence() -> None:
    """A message that names a layer (the KV cache) beats the bar."""
    kv = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`.\n"
    assert classify_text(kv + _bar(1, 37)).failed_stage == "engine"


def test_real_ooms_quoted_before_the_loaders_bar_are_weights() -> None:
    """206: an OOM at 1/37 shards, the bar flushed after it; 352: one rank's OOM while the others
    print 'Loading pt checkpoint shards: 0% Completed | 0/46'."""
    for name in ("206.log", "352.log"):
        res = classify_text(issue_text(name))
        assert (res.failed_stage, res.evidence.rule, res.oom_root_cause) == ("weights", "markers", True), name


# --- a traceback cut by the end of the log -------------------------------------------------------

MARKERS = (
    "INFO 05-08 00:41:42 [loader.py:458] Loading weights took 6.71 seconds\n"
    "DEBUG 05-08 00:41:43 [decorators.py:203] Start compiling function <code object forward>\n"
)
CUT = (
    "Traceback (most recent call last):\n"
    '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py", line 1130, in <module>\n'
    "    uvloop.run(run_server(args))\n"
)


@given(st.integers(1, 4))
def test_a_log_that_ends_inside_a_traceback_is_a_failure(frames: int) -> None:
    lines = CUT.splitlines(keepends=True)[: frames + 1]
    res = classify_text(MARKERS + "".join(lines))
    assert res.first_exception is not None
    assert res.first_exception.line == "Traceback (most recent call last):"
    assert res.first_exception.line_number == 3
    assert res.failed_stage == "engine"  # the weights were loaded: the engine's set-up
    assert res.evidence.rule == "markers"  # a cut stack's last frame (here <module>) is not where it failed


def test_a_cut_traceback_after_the_operators_stop_is_still_none() -> None:
    stop = "(APIServer pid=28554) INFO 12-01 22:12:58 [launcher.py:254] [shutdown] API server: shutdown triggered\n"
    res = classify_text(MARKERS + stop + CUT)
    assert res.failed_stage == "none" and res.first_exception is None


def test_a_traceback_closed_by_its_exception_line_is_not_replaced() -> None:
    res = classify_text(MARKERS + CUT + "RuntimeError: Engine core initialization failed. See root cause above.\n")
    assert res.first_exception is not None and "Traceback" not in res.first_exception.line


def test_the_real_log_stopped_by_sigterm_during_compile_is_engine() -> None:
    """238: weights loaded, torch.compile started, the EngineCore exits and the API server's
    traceback is cut by the end of the paste (its label's root is the DEBUG exit line)."""
    res = classify_text(issue_text("238.log"))
    assert res.failed_stage == "engine" and res.first_exception is not None


# --- forms of the sixth session's fresh excerpts (760-884) ---------------------------------------


def test_carets_and_unindented_frames_keep_a_traceback_open() -> None:
    """846: an EngineCore traceback whose indentation was lost (``File "…"`` at the start of the
    body, Python 3.11's ``^^^^`` under each code line): its frames reach the root, and
    ``execute_model`` says the engine was serving."""
    res = classify_text(issue_text("846.log"))
    assert res.first_exception is not None and "ACL stream synchronize failed" in res.first_exception.line
    assert (res.failed_stage, res.evidence.rule) == ("runtime", "frames")
    assert len(res.first_exception.stack) > 5


@given(st.integers(1, 6), st.sampled_from(["^^^^^^^^", "~~~~^^^^~~~~", "^"]))
def test_a_frame_that_lost_its_indentation_is_a_frame_not_a_header(frames: int, carets: str) -> None:
    pre = "(EngineCore_0 pid=702) ERROR 09-04 09:50:12 [core.py:702] "
    frame = (
        f'{pre}File "/vllm/vllm/v1/executor/multiproc_executor.py", line 173, in execute_model\n'
        f"{pre}(output, ) = self.collective_rpc(\n{pre}{carets}\n"
    )
    log = frame * frames + f"{pre}RuntimeError: Worker failed with error 'boom', please check the stack trace above\n"
    res = classify_text(log)
    assert res.first_exception is not None and res.first_exception.line_number == 3 * frames + 1
    assert (res.failed_stage, res.evidence.rule) == ("runtime", "frames")
    assert len(res.first_exception.stack) == 3 * frames + 1


@given(st.sampled_from(["model_server-1", "vllm", "llm_api.1"]), st.integers(0, 3))
def test_exception_group_bars_inside_a_compose_wrapper(service: str, depth: int) -> None:
    """801: ``model_server-1  |     |   File …``: the bars of an exception group after compose's prefix."""
    pre = f"{service}  |     " + "| " * (depth + 1)  # nested groups: one bar per level
    log = (
        f'{pre}  File "/usr/local/lib/python3.10/dist-packages/vllm/model_executor/layers/sampler.py", line 324, in _random_sample\n'
        f"{pre}    random_samples = random_samples.cpu()\n"
        f"{pre}RuntimeError: CUDA error: device-side assert triggered\n"
    )
    res = classify_text(log)
    assert res.first_exception is not None and res.first_exception.line_number == 3
    assert len(res.first_exception.stack) == 3


def test_the_real_compose_exception_group_excerpt() -> None:
    res = classify_text(issue_text("801.log"))
    assert res.first_exception is not None
    assert "device-side assert triggered" in res.first_exception.line


@given(PLAIN_ERRORS, st.integers(1, 30))
def test_an_engine_dead_error_after_a_weak_root_means_it_was_serving(error: str, gap: int) -> None:
    dead = "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n"
    res = classify_text(error + "\n" + "...\n" * gap + dead)
    assert (res.failed_stage, res.evidence.rule) == ("runtime", "wording")
    assert res.first_exception is not None and error in res.first_exception.line


def test_an_engine_dead_error_does_not_override_a_roots_own_evidence() -> None:
    dead = "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.\n"
    kv = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`.\n"
    assert classify_text(kv + dead).failed_stage == "engine"


def test_the_real_lora_failure_after_a_client_call_is_runtime() -> None:
    """841: a LoRA adapter's ValueError quoted in prose, '...', then the client's EngineDeadError."""
    res = classify_text(issue_text("841.log"))
    assert (res.failed_stage, res.evidence.rule) == ("runtime", "wording")


@given(
    st.sampled_from(["ImportError", "ModuleNotFoundError"]),
    st.sampled_from(
        ["bitsandbytes version is wrong. Please install bitsandbytes>=0.46.1.", "Please install flashinfer to use it",
         "No module named 'deep_gemm'; run pip install deep_gemm", "xformers requires torch >= 2.4"]
    ),
)  # fmt: skip
def test_an_import_error_asking_for_a_package_is_the_image_even_past_the_weights(typ: str, msg: str) -> None:
    markers = "INFO 10-01 10:00:00 [loader.py:1] Starting to load model /models/x...\n"
    res = classify_text(markers + f"{typ}: {msg}\n")
    assert (res.failed_stage, res.evidence.rule) == ("container", "message")


def test_the_real_bitsandbytes_version_error_is_the_container() -> None:
    """849: the model had started loading when bitsandbytes' version check failed."""
    assert classify_text(issue_text("849.log")).failed_stage == "container"


# --- forms of the second fresh batch (910-980) -------------------------------------------------


@given(st.integers(1, 12), st.integers(1, 28), st.sampled_from(["E", "W", "I"]))
def test_torch_glog_lines_with_a_month_of_one_digit(month: int, day: int, g: str) -> None:
    """torch's c10 logging prints ``[E616 02:08:15.931416442 socket.cpp:1023]`` (June 16, no zero)."""
    from k3tui.classify.lines import parse

    ln = parse(f"[{g}{month}{day:02d} 02:08:15.931416442 socket.cpp:1023] [c10d] something")
    assert ln.body == "[c10d] something"
    assert ln.level == {"E": "ERROR", "W": "WARNING", "I": "INFO"}[g]


def test_a_c10d_store_timeout_alone_is_the_root_and_the_engine() -> None:
    """913: only torch's own lines (the store timing out, its C++ frames), no vLLM prefix at all."""
    res = classify_text(issue_text("913.log"))
    assert res.first_exception is not None and "The client socket has timed out" in res.first_exception.line
    assert res.failed_stage == "engine"


def test_a_c10d_timeout_at_info_is_not_a_root() -> None:
    res = classify_text("[I616 02:08:15.931 socket.cpp:1023] [c10d] The client socket has timed out after 1ms\n")
    assert res.first_exception is None


@given(st.integers(1, 200_000), st.integers(1, 200_000))
def test_a_triton_kernel_that_needs_more_shared_memory_than_the_gpu_has_is_the_device(need: int, have: int) -> None:
    line = f"triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: {need}, Hardware limit: {have}.\n"
    res = classify_text(line)
    assert (res.failed_stage, res.evidence.rule) == ("device", "message")


def test_the_real_triton_shared_memory_reports_are_the_device() -> None:
    for name in ("942.log", "948.log"):
        assert classify_text(issue_text(name)).failed_stage == "device", name


def test_an_architecture_that_failed_to_be_inspected_is_the_config() -> None:
    """914: the model registry's inspection subprocess failed (vLLM 0.6): unsupported as configured."""
    res = classify_text(issue_text("914.log"))
    assert (res.failed_stage, res.evidence.rule) == ("config", "message")
    one = "ValueError: Model architectures ['Qwen2ForCausalLM'] failed to be inspected. Please check the logs for more details.\n"
    assert classify_text(one).failed_stage == "config"


@given(
    st.sampled_from(
        ["Error in preprocessing prompt inputs", "Error in applying chat template from request",
         "Error in chat completion stream generator.", "Error in completion stream generator.",
         "Error in token generation stream.", "Error in embedding stream generator.", "Error in parser creation.",
         "Error preparing request components", "Error building prompts", "Error in message stream converter."]
    ),
    st.sampled_from(["ValueError: This model's maximum context length is 4096 tokens.", "KeyError: 'text'"]),
)  # fmt: skip
def test_one_requests_failure_logged_by_the_front_end_is_not_the_servers(header: str, error: str) -> None:
    """The OpenAI front end's ``logger.exception`` headers (from vLLM's entrypoints/openai): it logs one
    request's failure with its traceback and answers that request; the server goes on."""
    pre = "(APIServer pid=7) ERROR 12-01 10:00:00 [serving_chat.py:300] "
    log = (
        "(APIServer pid=7) INFO 12-01 09:59:00 [launcher.py:46] Route: /v1/chat/completions, Methods: POST\n"
        "INFO:     Application startup complete.\n"
        f"{pre}{header}\n{pre}Traceback (most recent call last):\n"
        f'{pre}  File "/vllm/entrypoints/openai/serving_chat.py", line 290, in create_chat_completion\n'
        f"{pre}    raise x\n{pre}{error}\n"
        'INFO:     127.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n'
    )
    res = classify_text(log)
    assert res.failed_stage == "none" and res.first_exception is None


# --- forms of the third fresh batch (1000-1090) ------------------------------------------------


def test_a_v0_engine_step_timeout_is_runtime() -> None:
    """1010, 1012: AsyncLLMEngine's 'Engine iteration timed out' runs only with requests in flight."""
    for name in ("1010.log", "1012.log"):
        res = classify_text(issue_text(name))
        assert res.first_exception is not None and "Engine iteration timed out" in res.first_exception.line
        # its wording says so; since session 11 the logger (async_llm_engine.py, which logs only from
        # the background loop) says it first, as a frame of the serving loop
        assert (res.failed_stage, res.evidence.rule) in {("runtime", "wording"), ("runtime", "frames")}, name


@given(
    st.sampled_from(
        ["RuntimeError: numa_migrate_pages failed. errno: 1", "RuntimeError: numa_set_membind failed",
         "RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
         "RuntimeError: FlashAttention-3 only supports Hopper GPUs", "ValueError: this kernel only supports Blackwell"]
    )
)  # fmt: skip
def test_cpu_binding_and_gpu_generation_checks_are_the_device(line: str) -> None:
    res = classify_text(f"ERROR 11-21 23:44:54 engine.py:366] {line}\n")
    assert (res.failed_stage, res.evidence.rule) == ("device", "message")


def test_the_real_numa_and_ampere_failures_are_the_device() -> None:
    for name in ("1041.log", "1044.log"):
        assert classify_text(issue_text(name)).failed_stage == "device", name


@given(st.integers(1, 2000), st.sampled_from(["invalid argument", "an illegal memory access was encountered"]))
def test_the_custom_all_reduce_cuda_check_is_a_native_root(line_no: int, what: str) -> None:
    """1084: vLLM's CUDACHECK prints ``Failed: Cuda error FILE:N 'msg'`` and exits: no Python traceback,
    the workers' death follows. Read by look-back from the death, also past the first lines."""
    noise = "(Worker_TP0 pid=9) INFO 09-10 09:37:40 [gpu_model_runner.py:1] Capturing CUDA graphs\n" * 40
    crash = f"Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:{line_no} '{what}'\n"
    dead = "(EngineCore pid=7) ERROR 09-10 09:37:41 [multiproc_executor.py:314] Worker proc VllmWorker-0 died unexpectedly, shutting down executor.\n"
    res = classify_text(noise + crash + dead)
    assert res.first_exception is not None and res.first_exception.line == crash.rstrip("\n")
    assert res.failed_stage == "engine"  # graph capture had begun


def test_the_real_custom_all_reduce_crash_is_the_root() -> None:
    res = classify_text(issue_text("1084.log"))
    assert res.first_exception is not None and "custom_all_reduce.cuh:164" in res.first_exception.line


# --- a native crash with nothing else --------------------------------------------------------

NATIVE_CRASHES = st.sampled_from(
    ["[node-3:56683:0:56683] Caught signal 8 (Floating point exception: integer divide by zero)",
     "Memory access fault by GPU node-3 (Agent handle: 0x13e852f0) on address 0x77d445e00000. Reason: Unknown.",
     "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:455 'invalid argument'"]
)  # fmt: skip


@given(NATIVE_CRASHES, st.integers(1, 30))
def test_a_native_crash_that_nothing_places_is_the_engine(crash: str, before: int) -> None:
    """268, 566, 1085: a native crash in an excerpt with no start-up line, no process prefix and no
    frame: GPU code runs first in the engine's set-up, so ``engine`` (low), not the process start.
    (A crash whose own words name a layer, such as a SIGSEGV during serving, is a message rule's.)"""
    prose = "".join(f"some output line {i} of the job\n" for i in range(before))
    res = classify_text(prose + crash + "\n")
    assert res.first_exception is not None and res.first_exception.line == crash
    assert (res.failed_stage, res.evidence.rule, res.confidence) == ("engine", "default", "low")


def test_a_native_crash_on_the_first_line_is_still_the_process_start() -> None:
    res = classify_text("*** SIGSEGV received at time=1739339449 on cpu 57 ***\n")
    assert res.failed_stage == "container"


def test_the_real_native_crashes_that_nothing_places_are_the_engine() -> None:
    for name in ("268.log", "566.log", "1085.log"):
        res = classify_text(issue_text(name))
        assert (res.failed_stage, res.evidence.rule) == ("engine", "default"), name

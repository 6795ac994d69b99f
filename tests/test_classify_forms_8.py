"""Issue 13, eighth session: forms and words of the session's fresh excerpts, each a general form.

Each reading is tested on generated lines (classes of input) and on the real excerpt of the
tuned part that showed it (``tests/data/corpus/vllm-issues``), and fails without its change:

- wrappers and containers of lines: grep's ``file.out:N:``, Buildkite's raw ``bk;t=`` stamps,
  structured (JSON-per-line) records, HTML escapes, a traceback flattened with no prefix, a line
  glued to a tqdm bar, a Ray Data actor's nested name, an NCCL line without ``host:pid:tid``, the
  terminal's ``^C`` echo, words in another language glued to an exception, an indented exception;
- roots: a native library's error or failure line (with a source location, ptxas, glog, HIP),
  also before the crash it leads to; the shell's crash report in other locales; a Triton kernel's
  assertion; torch's CUDA-initialization warning; the NCCL WARN line torch's NCCL error points at;
  pydantic's indented field line; an import's message without its type; a tuple-formatted worker
  failure before the kill that ends the run; a reporter's sentence gives way to the log's own root;
- not roots: a request refused for its length, by a front-end handler (its chat template,
  processor, grammar) or by grammar validation, and a traceback chained to it; a Python warning's
  crash words; vllm._C missing on a platform that has none;
- stages: words for the device (capability, fabric not ready, too few devices, SIGILL), the image
  (a library not installed), the engine (a back-end's selection), and the lines a message goes on with.
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from k3tui.classify.lines import parse, unflatten, unglue, unjson
from tests.support.corpus import issue_text
from tests.support.shippers import docker_json_record

PROCS = st.sampled_from(["EngineCore_DP0", "Worker_TP3", "VllmWorkerProcess", "Worker"])
LEVELS = st.sampled_from(["ERROR", "WARNING", "INFO"])
FILES = st.from_regex(r"[a-z][a-z0-9_.\-]{0,20}(?:/[a-z0-9_\-]{1,8}){0,2}\.(?:out|err|log|txt)", fullmatch=True)


def _root(name: str) -> str:
    res = classify_text(issue_text(name))
    assert res.first_exception is not None, name
    return res.first_exception.line


# --- grep over log files ----------------------------------------------------------------------


@given(FILES, st.one_of(st.none(), st.integers(1, 999999)), PROCS, LEVELS, st.integers(1, 99999))
def test_greps_file_name_and_line_number_are_a_wrapper(f: str, n: int | None, proc: str, level: str, pid: int) -> None:
    at = f"{f}:" + (f"{n}:" if n is not None else "")
    ln = parse(f"{at}({proc} pid={pid}) {level} 08-31 06:22:53 [multiproc_executor.py:944] boom")
    assert (ln.process, ln.level, ln.body, ln.key[0]) == (f"{proc} pid={pid}", level, "boom", f)


@given(FILES, st.sampled_from(["hello", "line 3: oops", "12: x", "Traceback (most recent call last):"]))
def test_a_file_name_before_anything_else_is_left_alone(f: str, rest: str) -> None:
    assert parse(f"{f}:{rest}").body == f"{f}:{rest}"


def test_the_real_grep_over_a_slurm_out_file_has_its_root() -> None:
    res = classify_text(issue_text("1845.log"))
    assert _root("1845.log").endswith(
        "torch.distributed.DistStoreError: wait timeout after 1800000ms, keys: /default_pg/0//2//cpu//0/2"
    )
    assert res.failed_stage == "engine"


# --- a reporter's sentence above the log ------------------------------------------------------

MODELS = st.sampled_from(["llava-hf/llava-1.5-7b-hf", "Qwen/Qwen2-VL-7B", "meta-llama/Llama-3.1-8B"])


@given(MODELS, PROCS, st.sampled_from(["ValueError", "RuntimeError", "KeyError"]))
def test_a_sentence_naming_a_layer_gives_way_to_the_logs_own_root(model: str, proc: str, typ: str) -> None:
    text = (
        f"I receive an error with [{model}](https://huggingface.co/{model}) which should be supported.\n\n"
        "```\n"
        f"({proc} pid=7) ERROR 03-04 17:31:43 [core.py:136] Traceback (most recent call last):\n"
        f'({proc} pid=7) ERROR 03-04 17:31:43 [core.py:136]   File "/v/vllm/v1/engine/core.py", line 9, in run\n'
        f"({proc} pid=7) ERROR 03-04 17:31:43 [core.py:136]     step()\n"
        f"({proc} pid=7) ERROR 03-04 17:31:43 [core.py:136] {typ}: boom\n"
        "```\n"
    )
    res = classify_text(text)
    assert res.first_exception is not None and res.first_exception.line.endswith(f"{typ}: boom")


@given(MODELS)
def test_the_sentence_is_the_root_when_the_log_names_none(model: str) -> None:
    text = f"I receive an error with [{model}](https://huggingface.co/{model}) which should be supported.\n\nthanks\n"
    res = classify_text(text)
    assert res.first_exception is not None and res.first_exception.line.startswith("I receive an error")


def test_the_real_sentence_above_a_v0_log_and_a_quoted_message_before_a_bare_one() -> None:
    assert _root("1921.log").endswith(
        "ValueError('Attempted to assign 1 x 576 = 576 multimodal tokens to 0 placeholders')"
    )
    assert _root("128.log").startswith("Bfloat16 is only supported on GPUs with compute capability")


# --- V0's API server reporting its engine dead before the engine's own traceback --------------


@given(st.sampled_from(["ValueError", "RuntimeError", "AssertionError"]), st.integers(0, 3))
def test_the_api_servers_already_dead_line_gives_way_to_the_engines_traceback(typ: str, between: int) -> None:
    text = (
        "INFO 03-04 17:31:42 engine.py:270] Added request chatcmpl-1.\n"
        "CRITICAL 03-04 17:31:43 launcher.py:99] MQLLMEngine is already dead, terminating server process\n"
        + 'INFO:     127.0.0.1:51112 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
        * between
        + f"ERROR 03-04 17:31:43 engine.py:136] {typ}('boom')\n"
        "ERROR 03-04 17:31:43 engine.py:136] Traceback (most recent call last):\n"
        'ERROR 03-04 17:31:43 engine.py:136]   File "/v/vllm/engine/multiprocessing/engine.py", line 134, in start\n'
        "ERROR 03-04 17:31:43 engine.py:136]     self.run_engine_loop()\n"
        f"ERROR 03-04 17:31:43 engine.py:136] {typ}: boom\n"
    )
    res = classify_text(text)
    assert res.first_exception is not None and "already dead" not in res.first_exception.line
    assert "boom" in res.first_exception.line


def test_the_real_already_dead_lines_printed_above_the_engines_root() -> None:
    assert "Error in model execution" in _root("1933.log") or "RuntimeError" in _root("1933.log")
    assert classify_text(issue_text("1933.log")).failed_stage == "runtime"


# --- words that name one layer ----------------------------------------------------------------

OPS = st.sampled_from(["cutlass_scaled_mm", "get_cutlass_moe_mm_data", "marlin_gemm", "fp8_gemm"])


@given(
    st.one_of(
        st.builds(
            lambda op, cc: (
                "device",
                f"NotImplementedError: No compiled {op} for a compute capability less than CUDA device capability: {cc}",
            ),
            OPS,
            st.sampled_from([75, 80, 86, 120]),
        ),
        st.builds(
            lambda op, cc: (
                "device",
                f"NotImplementedError: no {op} kernel for CUDA device capability: {cc}. Required capability: 90",
            ),
            OPS,
            st.sampled_from([75, 89, 120, 121]),
        ),
        st.builds(
            lambda lib, sm: ("device", f"RuntimeError: {lib} requires GPUs with sm{sm} or higher"),
            st.sampled_from(["FlashInfer", "FlashMLA", "DeepGEMM"]),
            st.sampled_from([75, 80, 90, 100]),
        ),
        st.builds(
            lambda ip: (
                "device",
                f"ValueError: Current node has no GPU available. current_node_resource={{'node:{ip}': 1.0}}",
            ),
            st.ip_addresses(v=4).map(str),
        ),
        st.builds(
            lambda what, lib: ("container", f"RuntimeError: {what} requires {lib} to be installed."),
            st.sampled_from(["Sparse Attention Indexer CUDA op", "The fp8 MoE kernel", "This model"]),
            st.sampled_from(["DeepGEMM", "flashinfer", "triton_kernels"]),
        ),
        st.builds(
            lambda kind, v: (
                "engine",
                f"ValueError: {kind}_backend='{v}' is not supported for FP8 MoE. Expected one of ['triton'].",
            ),
            st.sampled_from(["moe", "attention", "all2all"]),
            st.sampled_from(["emulation", "naive", "foo"]),
        ),
    )
)
def test_words_that_name_one_layer(case: tuple[str, str]) -> None:
    stage, line = case
    assert classify_text(f"(EngineCore_DP0 pid=7) ERROR 09-15 21:45:00 [core.py:719] {line}\n").failed_stage == stage


def test_the_real_capability_install_and_backend_failures() -> None:
    for name, stage in (("1882.log", "device"), ("1900.log", "device"), ("1978.log", "device"), ("1838.log", "device"),
                        ("1891.log", "container"), ("1899.log", "engine")):  # fmt: skip
        assert classify_text(issue_text(name)).failed_stage == stage, name


# --- a native library's own error line ----------------------------------------------------------

SRC = st.from_regex(r"(?:/[a-z_]{1,10}){0,3}/?[a-z_]{1,16}\.(?:c|cc|cpp|cu|cuh|hpp)", fullmatch=True)
NATIVE = st.one_of(
    st.builds(lambda f, n: f"CUDA Error: out of memory at {f}:{n}", SRC, st.integers(1, 9999)),
    st.builds(lambda f, n: f"oneCCL: {f}:{n} do_call: EXCEPTION: ze error at zeMemOpenIpcHandle,", SRC, st.integers(1, 9999)),
    st.builds(lambda f, n: f"2024:01:01-10:00:00:(123) |CCL_ERROR| {f}:{n} fill_device_fds: condition fds[dev_idx] > 0 failed", SRC, st.integers(1, 9999)),
    st.builds(lambda f, n: f"[1700000000.123456] [host:1:0] {f}:{n} UCX  ERROR Local protection error on mlx5_0:1/RoCE", SRC, st.integers(1, 9999)),
    st.builds(lambda f, n: f"E0118 22:42:45.737331   20084 {f}:{n}] TpuClient::AllocateBuffer returning error after 1 attempt(s): RESOURCE_EXHAUSTED", SRC, st.integers(1, 9999)),
    st.builds(lambda f, n: f"{f}:{n} Timed out waiting 1800000ms for recv operation to complete", SRC, st.integers(1, 9999)),
    st.builds(lambda n: f"ptxas /tmp/tmpbc993top.ptx, line {n}; fatal   : Parsing error near '.': syntax error", st.integers(1, 9999)),
)  # fmt: skip
NOISE = ["INFO 01-01 00:00:00 [core.py:1] starting", "some context line", ""]


@given(NATIVE, st.integers(0, 3), st.integers(0, 3))
def test_a_native_libraries_error_line_is_the_root_when_nothing_else_is(line: str, before: int, after: int) -> None:
    text = "\n".join([*NOISE[:before], line, *NOISE[:after]]) + "\n"
    res = classify_text(text)
    assert res.first_exception is not None and res.first_exception.line == line
    assert res.failed_stage == "engine"  # past the container: the library loaded and ran GPU work


@given(NATIVE)
def test_a_native_error_line_before_the_crash_it_leads_to_is_the_root(line: str) -> None:
    text = f"{line}\n!!!!!!! Segfault encountered !!!!!!!\nSegmentation fault (core dumped)\n"
    res = classify_text(text)
    assert res.first_exception is not None and res.first_exception.line == line


@given(SRC, st.integers(1, 999), st.sampled_from(["W", "I"]))
def test_a_warnings_cpp_stack_is_not_a_native_error(f: str, n: int, g: str) -> None:
    text = (
        f"[{g}1205 10:00:00.000000000 socket.cpp:{n}] [c10d] The server socket has timed out, will retry.\n"
        f"Exception raised from tryConnect at {f}:{n} (most recent call first):\n"
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x1 in libc10.so)\n"
    )
    assert classify_text(text).first_exception is None


@given(NATIVE)
def test_a_native_error_logged_at_warning_level_is_not_a_root(line: str) -> None:
    assert classify_text(f"WARNING 01-01 00:00:00 [utils.py:1] {line}\n").first_exception is None


def test_the_real_native_error_lines() -> None:
    for name, start in (("1912.log", "(LLMRayActor pid=347862) CUDA Error: out of memory at"), ("693.log", "oneCCL: ze_call.cpp:28"),
                        ("1841.log", None), ("1846.log", "gloo/transport/tcp/unbound_buffer.cc:78"),
                        ("1984.log", "E0118 22:42:45.737331"), ("1837.log", "[HAMI-core ERROR")):  # fmt: skip
        line = _root(name)
        assert line.startswith(start) if start else "UCX  ERROR Local protection error" in line, (name, line)


# --- native crashes: the shell's report in other locales, a Triton kernel's assertion ----------

SEGV = st.sampled_from(["段错误", "セグメンテーション違反です", "세그멘테이션 오류", "Speicherzugriffsfehler", "Erreur de segmentation",
                        "Violación de segmento", "Errore di segmentazione", "Falha de segmentação", "Ошибка сегментирования"])  # fmt: skip
KILLED = st.sampled_from(["已放弃", "已杀死", "強制終了", "Abgebrochen", "Getötet", "Abandon", "Abortado", "Убито"])
CORE = st.sampled_from(["", " (核心已转储)", " (コアダンプ)", " (Speicherabzug geschrieben)", " (core dumped)"])
JOB = st.sampled_from(["", "./run.sh: line 3: 118001 ", "bash: 行 1: 4242 ", "run.sh: Zeile 9:  77 "])


@given(JOB, SEGV, CORE)
def test_the_shells_segfault_report_in_another_locale_is_a_crash_root(job: str, word: str, core: str) -> None:
    line = f"{job}{word}{core} python3 -m vllm.entrypoints.openai.api_server" if job else f"{word}{core}"
    text = f"INFO 08-20 16:12:38 [api_server.py:1043] vLLM API server version 0.8.5\nStarted engine process with PID 1\n{line}\n"
    res = classify_text(text)
    assert res.first_exception is not None and res.first_exception.line == line


@given(st.sampled_from(["", "./run.sh: line 3: 118001 "]), KILLED, CORE)
def test_the_shells_abort_or_kill_report_in_another_locale_is_a_crash_root(job: str, word: str, core: str) -> None:
    line = f"{job}{word}{core}"
    res = classify_text(f"INFO 08-20 16:12:38 [api_server.py:1043] vLLM API server version 0.8.5\n{line}\n")
    assert res.first_exception is not None and res.first_exception.line == line


@given(st.sampled_from(["Der Vorgang wurde abgebrochen, weil", "中止条件を満たしました", "Abandon du téléchargement"]))
def test_those_words_inside_a_sentence_are_not_a_crash(line: str) -> None:
    assert (
        classify_text(
            f"INFO 08-20 16:12:38 [api_server.py:1043] vLLM API server version 0.8.5\n{line}\n"
        ).first_exception
        is None
    )


@given(st.from_regex(r"/root/\.cache/vllm/torch_compile_cache/[0-9a-f]{10}/rank_0_0/inductor_cache/[a-z]{2}/c[a-z0-9]{20}\.py", fullmatch=True),
       st.integers(1, 500), st.integers(0, 1023))  # fmt: skip
def test_a_triton_kernels_device_side_assertion_is_a_crash_root_past_the_start(path: str, n: int, t: int) -> None:
    line = f"{path}:{n}: unknown: block: [9,0,0], thread: [{t},0,0] Assertion `index out of bounds: 0 <= tmp10 < 2048` failed."
    res = classify_text(f"{line}\n{line}\n")
    assert res.first_exception is not None and res.first_exception.line == line
    assert res.failed_stage != "container"  # GPU work ran: not "it crashed before printing anything"


def test_the_real_localised_segfault_and_triton_assertion() -> None:
    assert _root("1876.log") == "段错误"
    assert classify_text(issue_text("1876.log")).failed_stage == "engine"
    assert "Assertion `index out of bounds" in _root("1920.log")


# --- torch saying it could not initialise CUDA ---------------------------------------------------

CUDA_INIT = st.sampled_from([
    "The NVIDIA driver on your system is too old (found version 12080). Please update your GPU driver",
    "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver",
    "Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices()",
])  # fmt: skip
TORCH_WARN = "/usr/lib/python3.12/site-packages/torch/cuda/__init__.py:{n}: UserWarning: CUDA initialization: {msg}"


@given(CUDA_INIT, st.integers(100, 999))
def test_torchs_cuda_initialization_warning_is_the_root_of_a_log_that_never_got_ready(msg: str, n: int) -> None:
    line = TORCH_WARN.format(n=n, msg=msg)
    text = f"{line}\n  return torch._C._cuda_getDeviceCount() > 0\nWARNING 06-03 08:39:32 [nixl_utils.py:34] NIXL is not available\n"
    res = classify_text(text)
    assert res.first_exception is not None and res.first_exception.line == line
    assert res.failed_stage == "device"


@given(CUDA_INIT, st.integers(100, 999))
def test_it_is_not_the_root_of_a_server_that_got_ready(msg: str, n: int) -> None:
    text = (
        TORCH_WARN.format(n=n, msg=msg) + "\n"
        "INFO 06-03 08:39:40 [api_server.py:1043] vLLM API server version 0.20.2\n"
        "INFO:     Started server process [1]\nINFO:     Waiting for application startup.\nINFO:     Application startup complete.\n"
    )
    assert classify_text(text).failed_stage == "none"


@given(st.sampled_from(["Failed to load image Python extension: libc10_cuda.so", "TypedStorage is deprecated"]))
def test_other_python_warnings_stay_decoys(msg: str) -> None:
    text = f"/usr/lib/python3.12/site-packages/torchvision/io/image.py:13: UserWarning: {msg}\n  warn(\nINFO 06-03 08:39:32 [core.py:1] x\n"
    assert classify_text(text).first_exception is None


def test_the_real_cuda_initialization_warning() -> None:
    assert "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old" in _root("1973.log")
    assert classify_text(issue_text("1973.log")).failed_stage == "device"


# --- a page's HTML escapes; a request refused for its length --------------------------------------

FRAME_STAGES = st.sampled_from([("vllm/model_executor/model_loader/weight_utils.py", "safetensors_weights_iterator", "weights"),
                                ("vllm/v1/worker/gpu_worker.py", "determine_available_memory", "engine")])  # fmt: skip


@given(FRAME_STAGES, st.sampled_from(["&quot;", "&#34;"]))
def test_frames_whose_quotes_a_page_escaped_still_name_their_stage(frame: tuple[str, str, str], q: str) -> None:
    path, func, stage = frame
    text = (
        "Traceback (most recent call last):\n"
        f"  File {q}/usr/lib/python3.12/site-packages/{path}{q}, line 42, in {func}\n"
        "    do()\n"
        "RuntimeError: boom\n"
    )
    res = classify_text(text)
    assert res.failed_stage == stage and res.first_exception is not None


@given(
    st.sampled_from([
        "ValueError: The decoder prompt (length {n}) is longer than the maximum model length of {m}.",
        "ValueError: [address=0.0.0.0:37591, pid=1] The decoder prompt (length {n}) is longer than the maximum model length of {m}.",
        "openai.BadRequestError: This model's maximum context length is {m} tokens. However, you requested {n} tokens.",
        "ValueError: This model's maximum context length is {m} tokens. Please reduce the length of the messages.",
    ]),
    st.integers(4097, 200000), st.sampled_from([4096, 16384, 32768]),
)  # fmt: skip
def test_a_request_refused_for_its_length_is_not_a_root(form: str, n: int, m: int) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/site-packages/vllm/engine/llm_engine.py", line 2010, in _validate_model_input\n'
        "    raise ValueError(\n" + form.format(n=n, m=m) + "\n"
    )
    assert classify_text(text).failed_stage == "none"


def test_the_real_refused_request_in_an_escaped_page() -> None:
    assert classify_text(issue_text("1924.log")).failed_stage == "none"


# --- the message's own next lines -----------------------------------------------------------------


@given(
    st.sampled_from([
        ("device", ["`ptxas` stderr:", "ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'"]),
        ("container", ["stderr:", "/usr/lib/libfoo.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"]),
        ("weights", ["caused by:", "Error while deserializing header: HeaderTooLarge"]),
    ]),
    PROCS,
)  # fmt: skip
def test_the_lines_a_message_goes_on_with_name_its_stage(case: tuple[str, list[str]], proc: str) -> None:
    stage, more = case
    p = f"({proc} pid=73) "
    text = (
        f"{p}Traceback (most recent call last):\n"
        f'{p}  File "/usr/lib/python3.12/site-packages/torch/_inductor/codegen/wrapper.py", line 1695, in run_block\n'
        f'{p}    raise RuntimeError(f"Failed to run code block: {{e}}") from e\n'
        f"{p}RuntimeError: Failed to run code block: the tool failed\n" + "".join(f"{p}{x}\n" for x in more)
    )
    assert classify_text(text).failed_stage == stage


def test_the_real_ptxas_stderr_under_an_inductor_error() -> None:
    assert classify_text(issue_text("1908.log")).failed_stage == "device"


# --- torch's NCCL error points at NCCL's WARN line --------------------------------------------------

WARNS = st.sampled_from(["Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 40",
                         "Cuda failure 'out of memory'", "Error : ring 0 does not contain rank 1"])  # fmt: skip
CUTS = st.sampled_from(["", "node-1:4242:4250 [0] ", "node-1:4242:4250 [0] init.cc:891 "])


@given(WARNS, CUTS, st.sampled_from(["invalid usage", "unhandled system error", "internal error"]))
def test_the_nccl_warn_line_torchs_nccl_error_points_at_is_the_root(warn: str, cut: str, what: str) -> None:
    text = f"{cut}NCCL WARN {warn}\nRuntimeError: NCCL error: {what} (run with NCCL_DEBUG=WARN for details)\n"
    res = classify_text(text)
    assert res.first_exception is not None and res.first_exception.line == f"{cut}NCCL WARN {warn}"
    assert res.first_exception.context is not None and "NCCL_DEBUG=WARN" in res.first_exception.context


@given(st.sampled_from(["invalid usage", "unhandled system error"]))
def test_without_a_warn_line_torchs_nccl_error_is_the_root(what: str) -> None:
    line = f"RuntimeError: NCCL error: {what} (run with NCCL_DEBUG=WARN for details)"
    res = classify_text(f"INFO 01-01 00:00:00 [core.py:1] init\n{line}\n")
    assert res.first_exception is not None and res.first_exception.line == line


def test_the_real_duplicate_gpu_warn() -> None:
    assert _root("2019.log") == "NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 40"


# --- structured (JSON-per-line) logs ------------------------------------------------------------------

TB_LINES = [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/site-packages/vllm/model_executor/model_loader/weight_utils.py", line 42, in safetensors_weights_iterator',
    "    with safe_open(st_file) as f:",
    "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge",
]  # fmt: skip


@given(PROCS, st.sampled_from(["stdout", "stderr"]))
def test_dockers_json_file_records_are_the_log_they_hold(proc: str, stream: str) -> None:
    p = f"({proc} pid=7) ERROR 12-05 06:00:00 [weight_utils.py:42] "
    text = "\n".join(docker_json_record(p + x, stream) for x in TB_LINES) + "\n"
    res = classify_text(text)
    assert res.failed_stage == "weights"
    assert res.first_exception is not None and res.first_exception.line.endswith("HeaderTooLarge")


@given(st.sampled_from([("levelname", "ERROR"), ("severity", "ERROR"), ("level", "error"), ("PRIORITY", "3")]),
       st.sampled_from(["message", "msg", "textPayload", "MESSAGE"]))  # fmt: skip
def test_a_json_formatters_record_with_its_traceback_in_a_field(level: tuple[str, str], field: str) -> None:
    record = {level[0]: level[1], field: "Error loading the model", "exc_info": "\n".join(TB_LINES)}
    res = classify_text(json.dumps(record) + "\n")
    assert res.failed_stage == "weights"
    assert res.first_exception is not None and res.first_exception.line.endswith("HeaderTooLarge")


@given(st.sampled_from([("level", "info"), ("severity", "INFO"), ("levelname", "DEBUG"), ("PRIORITY", "6")]))
def test_an_info_records_error_words_stay_quiet(level: tuple[str, str]) -> None:
    record = {level[0]: level[1], "message": "RuntimeError: the retry budget is an error-free path"}
    assert classify_text(json.dumps(record) + "\n").first_exception is None


@given(st.text(max_size=200))
def test_any_text_is_a_record_or_none_never_an_exception(text: str) -> None:
    out = unjson("{" + text + "}")
    assert out is None or (isinstance(out, list) and all(isinstance(x, str) and "\n" not in x for x in out))


@given(st.sampled_from(["linux/arm64", "linux/amd64"]))
def test_the_container_runtimes_exec_format_error_is_a_container_root(platform: str) -> None:
    line = json.dumps(
        {
            "msg": "exec container process `/opt/venv/bin/vllm`: Exec format error",
            "level": "error",
            "time": "2025-12-04T15:15:35Z",
        }
    )
    res = classify_text(f"WARNING: image platform does not match the expected platform ({platform})\n{line}\n")
    assert res.failed_stage == "container" and res.first_exception is not None


def test_the_real_podman_json_record() -> None:
    res = classify_text(issue_text("2040.log"))
    assert res.failed_stage == "container" and "Exec format error" in _root("2040.log")


# --- a Python traceback a page flattened into one line, with no log prefix ----------------------------

FRAMES = [
    ('/usr/lib/python3.11/site-packages/vllm/entrypoints/openai/api_server.py', "run_server", "await run_server_worker(sock, args)"),
    ('/usr/lib/python3.11/site-packages/vllm/engine/async_llm_engine.py', "run_engine_loop", "done = await asyncio.wait_for(x, 5)"),
    ('/usr/lib/python3.11/site-packages/vllm/model_executor/model_loader/weight_utils.py', "safetensors_weights_iterator", "with safe_open(st_file) as f:"),
]  # fmt: skip


@given(st.integers(2, 3), st.sampled_from([" ", "  ", "   "]), st.booleans())
def test_a_flattened_traceback_without_prefixes_is_split_into_its_lines(k: int, sep: str, head: bool) -> None:
    lines = (["Traceback (most recent call last):"] if head else []) + [
        x for path, func, code in FRAMES[-k:] for x in (f'File "{path}", line 42, in {func}', code)
    ]
    exc = "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge"
    res = classify_text(sep.join([*lines, exc]) + "\n")
    assert res.first_exception is not None and res.first_exception.line == exc
    assert res.failed_stage == "weights"


@given(st.text(alphabet="abc ,.;", max_size=80))
def test_prose_that_mentions_one_frame_and_another_file_is_not_split(words: str) -> None:
    line = f'The failing frame was File "a.py", line 3, in f {words}; compare File "b.py" and its README, also File "c.py".'
    assert unflatten(line) is None


def test_the_real_flattened_tracebacks() -> None:
    assert _root("2074.log").startswith("ValueError: Call to add_lora method failed")
    assert classify_text(issue_text("803.log")).failed_stage == "runtime"


# --- vllm._C's failed import on a platform that has none ------------------------------------------------

C_WARN = "WARNING 06-05 01:12:18 [_custom_ops.py:21] Failed to import from vllm._C with ModuleNotFoundError(\"No module named 'vllm._C'\")"


@given(st.sampled_from(["INFO 06-05 01:12:17 [__init__.py:234] Platform plugin hpu is activated",
                        "INFO 06-05 01:12:17 [__init__.py:234] Platform plugin ascend is activated",
                        "INFO 06-05 01:12:17 [__init__.py:243] Automatically detected platform tpu."]))  # fmt: skip
def test_vllm_c_missing_on_a_plugins_platform_is_noise(platform: str) -> None:
    text = f"{platform}\n{C_WARN}\nINFO 06-05 01:12:19 [__init__.py:36] All plugins in this group will be loaded.\n"
    assert classify_text(text).first_exception is None


@given(st.sampled_from(["INFO 06-05 01:12:17 [__init__.py:243] Automatically detected platform cuda.",
                        "INFO 06-05 01:12:17 [__init__.py:234] Platform plugin cuda is activated", ""]))  # fmt: skip
def test_vllm_c_missing_on_cuda_is_still_the_root(platform: str) -> None:
    text = f"{platform}\n{C_WARN}\nINFO 06-05 01:12:19 [__init__.py:36] All plugins in this group will be loaded.\n".lstrip()
    res = classify_text(text)
    assert res.first_exception is not None and "vllm._C" in res.first_exception.line


def test_the_real_gaudi_plugin_start() -> None:
    assert classify_text(issue_text("1821.log")).failed_stage == "none"


# --- the device: a fabric not ready, too few devices, a CPU without the instructions ---------------------


@given(
    st.sampled_from([
        "RuntimeError: CUDA driver error: system not yet initialized",
        "RuntimeError: CUDA error: system not yet initialized (cudaErrorSystemNotReady)",
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 802: system not yet initialized",
        "ValueError: Insufficient devices for 2D mesh: found 1, expected 8 for mesh shape (1, 8).",
        "RuntimeError: Insufficient GPUs: 4 requested, 2 visible",
    ]),
    PROCS,
)  # fmt: skip
def test_a_device_that_is_not_ready_or_not_enough_is_the_device(line: str, proc: str) -> None:
    assert classify_text(f"({proc} pid=7) ERROR 09-15 21:45:00 [core.py:719] {line}\n").failed_stage == "device"


@given(st.sampled_from(["", "./start.sh: line 12: 4242 "]), st.sampled_from(["", " (core dumped)"]))
def test_an_illegal_instruction_is_the_device(job: str, core: str) -> None:
    text = f"INFO 10-25 15:32:13 [api_server.py:1043] vLLM API server version 0.6.2\n{job}Illegal instruction{core} python -m vllm.entrypoints.openai.api_server\n"
    assert classify_text(text).failed_stage == "device"


def test_the_real_fabric_mesh_and_instruction_failures() -> None:
    for name in ("2102.log", "2103.log", "2112.log"):
        assert classify_text(issue_text(name)).failed_stage == "device", name


# --- pydantic's field line, indented as printed, under a process prefix -------------------------------


@given(st.sampled_from(["APIServer", "EngineCore_DP0"]), st.sampled_from(["  ", "    "]),
       st.sampled_from(["max_num_batched_tokens (1024) is smaller than max_model_len (8192).",
                        "Invalid repository ID or local directory specified: '/models/x'."]))  # fmt: skip
def test_an_indented_pydantic_field_line_alone_is_the_root(proc: str, indent: str, msg: str) -> None:
    line = f"({proc} pid=1) {indent}Value error, {msg} [type=value_error, input_value=ArgsKwargs(()), input_type=ArgsKwargs]"
    res = classify_text(line + "\n")
    assert res.first_exception is not None and res.first_exception.line == line
    assert res.failed_stage in ("config", "weights")


def test_the_real_indented_field_line() -> None:
    assert classify_text(issue_text("2045.log")).failed_stage == "config"
    assert "Value error, max_num_batched_tokens (1024)" in _root("2045.log")


@given(st.integers(1000, 30000), st.sampled_from(['{"a":', '{"log":[']))
def test_a_record_nested_too_deep_is_not_one_and_never_an_exception(depth: int, open_: str) -> None:
    close = "}" if open_.startswith('{"a"') else "]}"
    line = open_ + ("[" * depth) + ("]" * depth) + close
    assert unjson(line) is None
    classify_text(line + "\n")  # no exception escapes


# --- more native failure forms; the terminal's ^C echo --------------------------------------------------


@given(st.sampled_from([
    "[2024-06-13 16:11:51,588 E 13261 13261] core_worker.cc:228: Failed to register worker 0100 to Raylet. IOError: [RayletClient] Unable to register worker with raylet.",
    ":1:rocdevice.cpp            :1824: 3852921762 us: [pid:9     tid:0x7fcd5fa0c4c0] HSA_AMD_AGENT_INFO_MEMORY_AVAIL query failed.",
    "[2025-06-13 01:49:41,730 E 1 1] gcs_rpc_client.h:179: Failed to connect to GCS at address 10.0.0.1:6379 within 5 seconds.",
]))  # fmt: skip
def test_a_native_failure_line_is_the_root_when_nothing_else_is(line: str) -> None:
    res = classify_text(f"{line}\n")
    assert res.first_exception is not None and res.first_exception.line == line


@given(st.sampled_from(["socket.cpp:942", "TCPStore.cpp:347"]), st.sampled_from(["", " "]))
def test_a_warning_after_the_terminals_ctrl_c_echo_is_still_a_warning(at: str, pad: str) -> None:
    line = f"^C{pad}[W106 01:34:16.357373000 {at}] [c10d] TCP client failed to connect/validate to host 10.0.0.1:55872 - retrying"
    assert parse(line).level == "WARNING"
    assert classify_text(line + "\n").first_exception is None


def test_the_real_ray_and_hip_native_lines() -> None:
    assert "core_worker.cc:228: Failed to register worker" in _root("2131.log")
    assert "HSA_AMD_AGENT_INFO_MEMORY_AVAIL query failed" in _root("2135.log")
    assert "Failed to connect to GCS" in _root("1121.log")


# --- one request's input refused by the front end: the server goes on ----------------------------------

REFUSALS = st.sampled_from([
    "vllm.entrypoints.chat_utils.ChatTemplateResolutionError: As of transformers v4.44, default chat template is no longer allowed",
    "jinja2.exceptions.TemplateSyntaxError: expected token 'end of print statement', got 'name'",
    "RuntimeError: Failed to apply Qwen2_5_VLProcessor on data={'text': '<|image_pad|>'} with kwargs={}",
    "ValueError: Grammar error: Unknown format: uri",
])  # fmt: skip


def _tb(prefix: str, exc: str, frame: str = "vllm/entrypoints/openai/serving_chat.py") -> str:
    return (
        f"{prefix}Traceback (most recent call last):\n"
        f'{prefix}  File "/usr/lib/python3.12/site-packages/{frame}", line 885, in create_chat_completion\n'
        f"{prefix}    conversation = await self._preprocess_chat(request)\n"
        f"{prefix}{exc}\n"
    )


@given(REFUSALS, st.sampled_from(["serving_chat.py:885", "serving.py:1262", "chat_utils.py:467"]))
def test_a_request_handlers_refusal_of_one_requests_input_is_not_a_root(exc: str, at: str) -> None:
    p = f"(APIServer pid=1) ERROR 04-09 05:47:15 [{at}] "
    text = (
        _tb(p, exc)
        + '(APIServer pid=1) INFO:     172.18.0.1:49518 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n'
    )
    assert classify_text(text).failed_stage == "none"


@given(
    st.sampled_from(
        [
            "jinja2.exceptions.TemplateSyntaxError: unexpected '}'",
            "RuntimeError: Failed to apply LlavaProcessor on data={}",
        ]
    )
)
def test_the_same_words_outside_a_request_handler_are_a_root(exc: str) -> None:
    p = "(APIServer pid=1) ERROR 04-09 05:47:15 [api_server.py:1043] "
    res = classify_text(_tb(p, exc, "vllm/entrypoints/openai/api_server.py"))
    assert res.first_exception is not None and res.first_exception.line.endswith(exc)


@given(st.integers(0, 1), st.booleans())
def test_a_traceback_chained_to_a_refused_one_is_part_of_it_and_a_later_one_is_not(cut: int, later: bool) -> None:
    p = "(APIServer pid=1) "
    text = _tb(p, "ValueError: The provided JSON schema contains features not supported by xgrammar.")
    text += f"{p}\n{p}During handling of the above exception, another exception occurred:\n{p}\n"
    text += (
        f"{p}Traceback (most recent call last):\n"
        + f'{p}  File "/usr/lib/python3.12/site-packages/starlette/routing.py", line 7'
    )
    text += "\n" if cut else "4, in app\n" + f"{p}    await f()\n{p}fastapi.exceptions.HTTPException: 400\n"
    if later:
        text += "".join(f"{p}INFO:     request {i} ok\n" for i in range(10))
        text += _tb(p, "RuntimeError: the tokenizer process died", "vllm/entrypoints/openai/api_server.py")
    res = classify_text(text)
    if later:
        assert res.first_exception is not None and res.first_exception.line.endswith("the tokenizer process died")
    else:
        assert res.failed_stage == "none"


def test_the_real_refused_requests() -> None:
    for name in ("302.log", "2170.log", "2172.log", "2182.log"):
        assert classify_text(issue_text(name)).failed_stage == "none", name


@given(st.sampled_from([
    ("container", "RuntimeError: NIXL is not available"),
    ("container", "ImportError: LMCache is not installed"),
    ("device", "RuntimeError: No supported device detected."),
    ("device", "RuntimeError: no supported accelerators found"),
]), PROCS)  # fmt: skip
def test_a_library_or_device_that_is_not_there(case: tuple[str, str], proc: str) -> None:
    stage, line = case
    assert classify_text(f"({proc} pid=7) ERROR 01-12 17:11:19 [core.py:936] {line}\n").failed_stage == stage


@given(st.sampled_from(["LLMatcher.validate_grammar() got some positional-only arguments passed as keyword arguments: 'tokenizer'",
                        "validate_xgrammar_grammar() failed: unsupported keyword 'format'"]))  # fmt: skip
def test_a_requests_grammar_validation_failing_is_not_a_root(msg: str) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/site-packages/vllm/sampling_params.py", line 840, in _validate_structured_outputs\n'
        "    validate_grammar(self)\n"
        f"TypeError: {msg}\n"
    )
    assert classify_text(text).failed_stage == "none"


def test_the_real_nixl_device_and_grammar_cases() -> None:
    assert classify_text(issue_text("2175.log")).failed_stage == "container"
    assert classify_text(issue_text("2142.log")).failed_stage == "device"
    assert classify_text(issue_text("2166.log")).failed_stage == "none"


# --- Buildkite's raw stamps; a paste that kept only the logger's location -----------------------------


@given(st.integers(10**12, 2 * 10**12), st.sampled_from(["", "\x1b_"]), st.sampled_from(["", "\x07"]), PROCS, LEVELS)
def test_buildkites_raw_time_stamp_is_a_wrapper(ms: int, esc: str, bel: str, proc: str, level: str) -> None:
    ln = parse(f"{esc}bk;t={ms}{bel} ({proc} pid=368) {level} 12-16 17:57:49 [core.py:1] boom")
    assert (ln.process, ln.level, ln.body) == (f"{proc} pid=368", level, "boom")


@given(st.sampled_from(["backend_xgrammar.py:158", "scheduler.py:1500", "v1/engine/core.py:710"]))
def test_lines_that_kept_only_the_loggers_location_are_a_vllm_log(at: str) -> None:
    text = f"[{at}] Failed to advance FSM for request 1 for tokens 2\n[serving.py:195] Request 1 failed with an internal error during generation\n"
    assert classify_text(text).failed_stage == "none"


def test_the_real_buildkite_and_location_only_pastes() -> None:
    assert classify_text(issue_text("2211.log")).failed_stage == "none"
    assert classify_text(issue_text("2174.log")).failed_stage == "none"


# --- a progress bar and the line printed right after it ---------------------------------------------

BARS = st.builds(
    lambda desc, done, total, rate: f"{desc}: {100 * done // total}%|{'█' * (10 * done // total)}{' ' * (10 - 10 * done // total)}| {done}/{total}{rate}",
    st.sampled_from(["Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", "Loading safetensors checkpoint shards"]),
    st.integers(1, 146), st.just(147), st.sampled_from(["", " [00:12<00:00, 11.5it/s]"]),
)  # fmt: skip


@given(BARS, st.sampled_from(["", " "]))
def test_a_line_glued_to_a_progress_bar_is_read_as_its_own(bar: str, gap: str) -> None:
    crash = "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:455 'an illegal memory access was encountered'"
    text = f"INFO 01-01 00:00:00 [gpu_model_runner.py:1] Capturing\n{bar}{gap}{crash}\n"
    res = classify_text(text)
    assert res.first_exception is not None and res.first_exception.line == crash


@given(BARS)
def test_a_progress_bar_alone_is_left_whole(bar: str) -> None:
    assert unglue(bar) is None and unglue(bar + " ") is None


def test_the_real_bar_glued_to_a_cuda_error() -> None:
    assert _root("2229.log").startswith("Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:455")


# --- a reporter's words in another language glued to the exception; an exception line a paste indented ---

PROSE = st.sampled_from(["报错", "报错：", "报错： ", "【BUG】：", "エラー：", "오류: ", "错误信息 "])
EXCS = st.sampled_from(["ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`",
                        "RuntimeError: NPU out of memory. Tried to allocate 3.47 GiB",
                        "ModuleNotFoundError: No module named 'transformers_modules'"])  # fmt: skip


@given(PROSE, EXCS)
def test_an_exception_glued_to_words_in_another_language_is_read(prose: str, exc: str) -> None:
    res = classify_text(f"{prose}{exc}\n")
    assert res.first_exception is not None and res.first_exception.line == f"{prose}{exc}"
    assert parse(f"{prose}{exc}").body == exc


@given(st.sampled_from(["Error occurred ", "got ", "see "]), EXCS)
def test_english_words_before_an_exception_are_left_alone(prose: str, exc: str) -> None:
    assert parse(f"{prose}{exc}").body == f"{prose}{exc}"


@given(st.sampled_from(["  ", "   ", "    "]), EXCS)
def test_an_exception_line_a_paste_indented_is_a_root(indent: str, exc: str) -> None:
    text = f'got an error:\n```\n{indent}...\n{indent}raise RuntimeError("x")\n{indent}{exc}\n```\n'
    res = classify_text(text)
    assert res.first_exception is not None and res.first_exception.line == f"{indent}{exc}"


@given(st.sampled_from(['    raise RuntimeError("Failed to infer device type")', "    return self._call_impl(*args)"]))
def test_an_indented_code_line_is_not_a_root(code: str) -> None:
    assert classify_text(f"{code}\n").first_exception is None


def test_the_real_glued_and_indented_exceptions() -> None:
    for name, stage in (("2254.log", "engine"), ("2255.log", "engine"), ("2259.log", "device")):
        assert classify_text(issue_text(name)).failed_stage == stage, name
    assert "NIXL compatibility hash mismatch" in _root("2226.log")


# --- a Python warning's words; V1's tuple-formatted worker failure before a kill -------------------------


@given(PROCS, st.sampled_from(["process died unexpectedly, relaunching.  Some resources might leak.",
                               "worker died unexpectedly; Killed by the OOM handler? (ignored)"]))  # fmt: skip
def test_a_python_warning_with_crash_words_is_not_a_crash(proc: str, msg: str) -> None:
    text = (
        f"({proc} pid=1150) /usr/lib/python3.10/multiprocessing/resource_tracker.py:104: UserWarning: resource_tracker: {msg}\n"
        f"({proc} pid=1150)   warnings.warn('resource_tracker: {msg[:20]}'\n"
    )
    assert classify_text(text).first_exception is None


@given(
    st.sampled_from(["'tuple' object has no attribute 'ndim'", "CUDA error: invalid argument"]),
    st.sampled_from(["Killed", "Segmentation fault (core dumped)"]),
)
def test_a_tuple_formatted_worker_failure_is_the_root_before_the_kill_that_ends_it(err: str, end: str) -> None:
    line = f"ERROR 05-19 22:17:53 [core.py:386] RuntimeError: ('Worker failed with error %s, please check the stack trace above for the root cause', \"{err}\")"
    text = (
        f"{line}\n"
        "CRITICAL 05-19 22:17:53 [core_client.py:359] Got fatal signal from worker processes, shutting down. See stack trace above for root cause issue.\n"
        f"{end}\n"
    )
    res = classify_text(text)
    assert res.first_exception is not None and res.first_exception.line == line


def test_the_real_tuple_formatted_worker_failure() -> None:
    assert "Worker failed with error %s" in _root("2251.log")


# --- Ray Data's nested actor names; ptxas with its place first; an import's message without its type ---


@given(st.sampled_from(["MapWorker(MapBatches(vLLMEngineStageUDF))", "MapWorker(vLLMEngineStageUDF)", "ActorPool(x)"]),
       st.integers(1, 99999))  # fmt: skip
def test_a_ray_data_actor_with_a_nested_name_is_one_process(name: str, pid: int) -> None:
    ln = parse(f"({name} pid={pid}, ip=10.0.118.90) ptxas fatal   : Ptx assembly aborted due to errors")
    assert (ln.process, ln.body) == (f"{name} pid={pid}", "ptxas fatal   : Ptx assembly aborted due to errors")


@given(st.sampled_from(["ptxas /tmp/tmpbc993top.ptx, line 113; fatal   : Parsing error near '.': syntax error",
                        "ptxas line 3727; error : Feature '.tile::scatter4' not supported on .target 'sm_121a'",
                        "ptxas fatal   : Unresolved extern function 'foo'"]))  # fmt: skip
def test_ptxas_refusing_a_kernel_is_a_compile_root_past_the_start(line: str) -> None:
    res = classify_text(f"{line}\n" + "(Worker pid=1) INFO 01-01 00:00:00 [core.py:1] x\n")
    assert res.first_exception is not None and res.first_exception.line == line
    assert res.failed_stage in ("engine", "device")  # a compiler ran: not "it crashed before printing anything"


@given(PROCS, st.sampled_from(["'vllm'", "'lmcache.experimental'", '"flash_attn"']))
def test_an_imports_message_without_its_type_is_a_root(proc: str, mod: str) -> None:
    line = f"(TemporaryActor pid=1495807) No module named {mod}"
    res = classify_text(f"{line}\n")
    assert res.first_exception is not None and res.first_exception.line == line
    assert res.failed_stage == "container"


def test_the_real_ray_data_ptxas_and_ray_import_failures() -> None:
    assert _root("648.log").endswith("fatal   : Parsing error near '.': syntax error [repeated 8x across cluster]")
    assert classify_text(issue_text("648.log")).failed_stage == "engine"
    assert _root("1624.log") == "(TemporaryActor pid=1495807) No module named 'vllm'"

"""Issue 13, twenty-ninth session.

- The LoRA adapters a batch asked for, made active in the layers' slots (``activate_adapter``,
  ``set_active_adapters``, a layer's ``set_lora`` in ``vllm/lora/``): a request's work, the runtime's. At start-up
  the same calls run only inside a dummy run or a graph capture, whose engine frame outside still names the stage
  (guard). Loading an adapter's files is not listed: the adapter's files are the weights'.
- vLLM's INFO ``No platform detected, vLLM is running on UnspecifiedPlatform`` is the device's root when what
  fails next is its consequence; but a plugin's platform activated after it (``Platform plugin ascend is
  activated``) means one was found: no root. And a shared library the platform's probe imports failing to load
  after it (``ImportError: libatb.so: cannot open shared object file``) is why none was found: that is the root, the
  container's. Not the driver's own library (``libcuda.so.1``): its absence is the device's (guard). Newer vLLMs log
  their platform probe at DEBUG (``DEBUG [platforms/__init__.py:230] No platform detected, …``): the same root.
- Triton's ``PTXASError: PTXAS error: Internal Triton PTX codegen error`` (ptxas refused the PTX made for this GPU:
  an architecture it does not know, a feature the target lacks) is the device's, as ``ptxas fatal`` already was,
  whatever compile's frames or Inductor's wrapper say around it. Inductor failing without ptxas stays the engine's
  (guard).
- torch's NCCL heartbeat monitor finding the store's server gone at a multi-rank shutdown (``Failed to check the
  "should dump" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: Broken pipe``) and
  the socket's failure that torch reports right after it, with its C++ backtrace: a shutdown's noise, no root. The
  same socket failure without that notice is still a root (guard).
- A traceback under a request handler's ERROR header (``Error in chat completion stream generator.``) is one
  request's error, answered, the server going on; unless its exception says the engine was dead under it
  (``MQEngineDeadError: Engine loop is not running … original error: RuntimeError('Aborted due to the lack of CPU
  swap space…')``, an ``EngineDeadError`` wrapped by a router's generator): the engine died while serving, and
  with nothing before it that line is the root, the runtime's. A request's own error stays no root (guard).
- When nothing names a layer, the excerpt's words decide (a server's: runtime); a word inside a command-line flag
  (``--disable-log-requests``, ``--enable-chunked-prefill``, ``--num-scheduler-steps``) is what the command
  configures, not what was going on: not a server's word. The same word in prose still is (guard).
- ``docker build`` (BuildKit) puts the step's number and the seconds since it started in front of each line the
  step's command printed (``#8 0.330 ``, or ``9.622 `` alone in its failure summary): a wrapper, like a compose
  service's name; the package installer's failure under it (``  × No solution found when resolving dependencies:``)
  is the container's root, as it is bare. uv and pip refusing to install at all (``error: No virtual environment
  found; run `uv venv` …``, PEP 668's ``error: externally-managed-environment``) are such failures too. A build's
  healthy lines are no root (guard).
- A table of GPU architectures without this one (``KeyError: 'gfx1201'``, ``KeyError: 'sm_120'``) and a feature of
  FlashAttention 3, which runs on Hopper and later only (``Sinks are only supported in FlashAttention 3``): the
  device's. A KeyError of another name is not (guard).

Each on generated logs and on a real log of the tuned part; each fails without its change (the guards,
which say what a rule must leave alone, pass either way).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.real import assert_real

_W = "(Worker_TP0 pid=1256) ERROR 04-22 02:12:02 [multiproc_executor.py:932] "
_V = "/usr/local/lib/python3.12/dist-packages/vllm"


def _lora_trace(outer: list[tuple[str, str]], inner: str, err: str, cut: int = 0) -> str:
    """A worker's traceback through the LoRA slots; ``cut`` frames left off its top (an excerpt's paste)."""
    frames = [
        (f"{_V}/v1/executor/multiproc_executor.py", "worker_busy_loop"),
        *outer,
        (f"{_V}/v1/worker/lora_model_runner_mixin.py", "set_active_loras"),
        (f"{_V}/lora/worker_manager.py", "set_active_adapters"),
        (f"{_V}/lora/worker_manager.py", "_apply_adapters"),
        (f"{_V}/lora/model_manager.py", "activate_adapter"),
        (f"{_V}/lora/layers/column_parallel_linear.py", inner),
    ][cut:]
    lines = [] if cut else [f"{_W}WorkerProc hit an exception.", f"{_W}Traceback (most recent call last):"]
    for i, (path, func) in enumerate(frames):
        lines += [f'{_W}  File "{path}", line {100 + i}, in {func}', f"{_W}    x = y()"]
    return "\n".join([*lines, f"{_W}{err}"]) + "\n"


@given(
    inner=st.sampled_from(["set_lora", "slice_lora_b", "slice_lora_a"]),
    err=st.sampled_from(
        ["IndexError: list index out of range", "RuntimeError: shape '[14, -1]' is invalid for input of size 768"]
    ),
    cut=st.integers(2, 4),
)
def test_a_lora_made_active_for_a_batch_is_the_runtimes(inner: str, err: str, cut: int) -> None:
    res = classify_text(_lora_trace([], inner, err, cut))
    assert res.first_exception is not None and err in res.first_exception.line
    assert res.failed_stage == "runtime", res.evidence


@given(outer=st.sampled_from(["_dummy_run", "profile_run", "capture_model"]))
def test_guard_a_lora_made_active_in_a_dummy_run_is_still_the_engines(outer: str) -> None:
    frames = [
        (f"{_V}/v1/worker/gpu_worker.py", "determine_available_memory"),
        (f"{_V}/v1/worker/gpu_model_runner.py", outer),
    ]
    res = classify_text(_lora_trace(frames, "set_lora", "IndexError: list index out of range"))
    assert res.failed_stage == "engine", res.evidence


def test_real_lora_activation_while_serving() -> None:
    assert_real("2461.log", "runtime", "IndexError: list in")


# --- "No platform detected", and what comes after it -------------------------------------------------------

_PLUGINS = [
    "INFO 03-05 17:41:32 __init__.py:28] Available plugins for group vllm.platform_plugins:",
    "INFO 03-05 17:41:32 __init__.py:30] name={p}, value=vllm_{p}:register",
    "INFO 03-05 17:41:32 __init__.py:42] plugin {p} loaded.",
    "INFO 03-05 17:41:34 __init__.py:187] No platform detected, vLLM is running on UnspecifiedPlatform",
]


@given(plugin=st.sampled_from(["ascend", "gaudi", "spyre", "rbln"]), noise=st.booleans())
def test_no_platform_then_a_plugins_platform_activated_is_no_failure(plugin: str, noise: bool) -> None:
    lines = [x.format(p=plugin) for x in _PLUGINS]
    if noise:
        lines.append(
            "WARNING 03-05 17:41:34 _custom_ops.py:19] Failed to import from vllm._C with ModuleNotFoundError(\"No module named 'vllm._C'\")"
        )
    lines += [
        f"INFO 03-05 17:41:34 __init__.py:174] Platform plugin {plugin} is activated",
        "INFO 03-05 17:41:38 api_server.py:838] vLLM API server version 0.7.1",
        "INFO 03-05 17:41:38 api_server.py:839] args: Namespace(model='/models/qwen')",
    ]
    res = classify_text("\n".join(lines) + "\n")
    assert res.first_exception is None and res.failed_stage == "none", res.evidence


def test_guard_no_platform_alone_is_the_devices_root() -> None:
    res = classify_text("\n".join(x.format(p="ascend") for x in _PLUGINS) + "\n")
    assert res.first_exception is not None and "No platform detected" in res.first_exception.line
    assert res.failed_stage == "device", res.evidence


def _after_no_platform(lib: str) -> str:
    return (
        "\n".join(
            [
                *(x.format(p="ascend") for x in _PLUGINS),
                "Traceback (most recent call last):",
                '  File "/opt/conda/lib/python3.10/site-packages/torch_npu/utils/__init__.py", line 1, in <module>',
                "    from torch_npu import _C",
                f"ImportError: {lib}: cannot open shared object file: No such file or directory",
            ]
        )
        + "\n"
    )


@given(lib=st.sampled_from(["libatb.so", "libhccl.so", "libascendcl.so", "libcudnn.so.9", "libtorch_cuda.so"]))
def test_a_library_the_platform_needed_failing_after_no_platform_is_the_root(lib: str) -> None:
    res = classify_text(_after_no_platform(lib))
    assert res.first_exception is not None and f"ImportError: {lib}" in res.first_exception.line, res.first_exception
    assert res.failed_stage == "container", res.evidence


@given(lib=st.sampled_from(["libcuda.so.1", "libcuda.so", "libnvidia-ml.so.1"]))
def test_guard_the_drivers_own_library_missing_after_no_platform_stays_the_devices(lib: str) -> None:
    res = classify_text(_after_no_platform(lib))
    assert res.first_exception is not None and "No platform detected" in res.first_exception.line
    assert res.failed_stage == "device", res.evidence


def test_real_no_platform_then_a_plugin_or_a_library() -> None:
    assert_real("7760.log", "none")
    assert_real("7783.log", "container", "ImportError: libatb.so: cannot open shared object file")
    assert_real("4869.log", "device", "No platform detected")  # libcuda.so.1 missing after it: the driver's


@given(
    probe=st.sampled_from(
        [
            "DEBUG [platforms/__init__.py:78] CUDA platform is not available because no GPU is found.",
            "DEBUG 05-02 10:00:01 [platforms/__init__.py:104] ROCm platform is not available because: No module named 'amdsmi'",
        ]
    ),
    found=st.booleans(),
)
def test_the_platform_probe_at_debug_level_names_the_same_root(probe: str, found: bool) -> None:
    last = (
        "DEBUG [platforms/__init__.py:230] Automatically detected platform cuda."
        if found
        else "DEBUG [platforms/__init__.py:230] No platform detected, vLLM is running on UnspecifiedPlatform"
    )
    lines = ["DEBUG [platforms/__init__.py:61] Checking if CUDA platform is available.", probe, last]
    res = classify_text("\n".join(lines) + "\n")
    if found:  # the guard: a platform found at DEBUG level is no failure
        assert res.first_exception is None, res.first_exception
    else:
        assert res.first_exception is not None and "No platform detected" in res.first_exception.line
        assert res.failed_stage == "device", res.evidence


def test_real_the_platform_probe_at_debug_level() -> None:
    assert_real("7792.log", "device", "No platform detected")


# --- ptxas refusing the PTX made for this GPU --------------------------------------------------------------

_T = "/usr/local/lib/python3.12/dist-packages/triton"


@given(
    wrapped=st.booleans(),
    stderr=st.sampled_from(
        [
            [],
            ["`ptxas` stderr:", "ptxas fatal   : Value 'sm_103a' is not defined for option 'gpu-name'"],
            ["`ptxas` stderr:"],
        ]
    ),
    prefix=st.sampled_from(["", "(EngineCore_DP0 pid=60) ERROR 01-12 01:09:14 [core.py:708] "]),
)
def test_ptxas_refusing_the_ptx_is_the_devices(wrapped: bool, stderr: list[str], prefix: str) -> None:
    err = "triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error"
    if wrapped:
        err = "torch._inductor.exc.InductorError: RuntimeError: Failed to run autotuning code block: No valid triton configs. PTXASError: PTXAS error: Internal Triton PTX codegen error"
    lines = [
        "Traceback (most recent call last):",
        f'  File "{_T}/compiler/compiler.py", line 320, in compile',
        "    next_module = compile_ir(module, metadata)",
        f'  File "{_T}/backends/nvidia/compiler.py", line 480, in make_cubin',
        '    raise PTXASError(f"{error}\\n"',
        err,
        *stderr,
    ]
    res = classify_text("\n".join(prefix + x for x in lines) + "\n")
    assert res.first_exception is not None and "PTXAS error" in res.first_exception.line, res.first_exception
    assert res.failed_stage == "device", res.evidence


def test_guard_inductor_failing_without_ptxas_stays_the_engines() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/torch/_inductor/select_algorithm.py", line 2000, in autotune',
        '    raise RuntimeError(f"Failed to run autotuning code block: {e}")',
        "torch._inductor.exc.InductorError: RuntimeError: Failed to run autotuning code block: No valid triton configs. OutOfResources: out of resource: triton_mm Required: 262144",
    ]
    res = classify_text("\n".join(lines) + "\n")
    assert res.failed_stage == "engine", res.evidence


def test_real_ptxas_refusing_the_ptx() -> None:
    assert_real("2579.log", "device", "PTXASError")
    assert_real("7691.log", "device", "PTXASError")


# --- a multi-rank shutdown's store notices -----------------------------------------------------------------


def _store_report(rank: int, op: str, err: str, notice: bool) -> list[str]:
    head = f"[rank{rank}]:[W1229 22:06:38.{480071392 + rank} "
    return [
        *(
            [
                head
                + f'ProcessGroupNCCL.cpp:1662] [PG ID 0 PG GUID 0 Rank {rank}] Failed to check the "should dump" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: {err}'
            ]
            if notice
            else []
        ),
        head
        + f"TCPStore.cpp:106] [c10d] {op} failed on SocketImpl(fd=67, addr=[bogon]:36214, remote=[bogon]:43145): {err}",
        f"Exception raised from {op} at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:653 (most recent call first):",
        "frame #0: c10::Error::Error(c10::SourceLocation, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >) + 0x98 (0x758a06b785e8 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)",
        "frame #1: <unknown function> + 0x5ba8bfe (0x7589f02d5bfe in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cpu.so)",
    ]


@given(
    ranks=st.lists(st.integers(1, 7), min_size=1, max_size=4, unique=True),
    op=st.sampled_from(["sendBytes", "recvValue"]),
    err=st.sampled_from(["Broken pipe", "Connection reset by peer"]),
)
def test_the_store_gone_at_a_multi_rank_shutdown_is_no_failure(ranks: list[int], op: str, err: str) -> None:
    lines = [line for r in ranks for line in _store_report(r, op, err, notice=True)]
    res = classify_text("\n".join(lines) + "\n")
    assert res.first_exception is None and res.failed_stage == "none", res.first_exception


def test_guard_the_stores_socket_failing_without_the_notice_is_a_root() -> None:
    res = classify_text("\n".join(_store_report(1, "recvValue", "Connection reset by peer", notice=False)) + "\n")
    assert res.first_exception is not None and "recvValue failed" in res.first_exception.line
    assert res.failed_stage == "engine", res.evidence


def test_real_the_store_gone_at_shutdown() -> None:
    assert_real("7756.log", "none")


# --- a request's handler reporting the engine dead under it -------------------------------------------------


def _handler_trace(err: str, stamp: bool) -> str:
    at = (
        "2025-06-10T02:48:30.948Z ERROR serving_chat.chat_completion_stream_generator: "
        if stamp
        else "ERROR 06-10 02:48:30 [serving_chat.py:940] "
    )
    lines = [
        at + "Error in chat completion stream generator.",
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/entrypoints/openai/serving_chat.py", line 503, in chat_completion_stream_generator',
        "    async for res in result_generator:",
        '  File "/workspace/components/processor.py", line 188, in _generate_responses',
        "    async for resp in engine_generator:",
        err,
    ]
    return "\n".join(lines) + "\n"


@given(
    err=st.sampled_from(
        [
            "ValueError: a python exception was caught while processing the async generator: MQEngineDeadError: Engine loop is not running. Inspect the stacktrace to find the original error: RuntimeError('Aborted due to the lack of CPU swap space. Please increase the swap space to avoid this error.')",
            "RuntimeError: generator raised: EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
        ]
    ),
    stamp=st.booleans(),
)
def test_a_request_handler_reporting_the_engine_dead_is_the_runtimes_root(err: str, stamp: bool) -> None:
    res = classify_text(_handler_trace(err, stamp))
    assert res.first_exception is not None and err[:40] in res.first_exception.line, res.first_exception
    assert res.failed_stage == "runtime", res.evidence


@given(stamp=st.booleans())
def test_guard_a_requests_own_error_under_the_handlers_header_is_no_root(stamp: bool) -> None:
    res = classify_text(_handler_trace("ValueError: 'messages' must contain at least one message", stamp))
    assert res.first_exception is None, res.first_exception


def test_real_a_request_handler_reporting_the_engine_dead() -> None:
    assert_real("7762.log", "runtime", "Aborted due to the lack of CPU swap space")


# --- a server's words inside a command line's flags ---------------------------------------------------------


@given(
    flag=st.sampled_from(
        [
            "--disable-log-requests",
            "--enable-chunked-prefill",
            "--num-scheduler-steps 8",
            "--max-num-batched-tokens=8192 --enable-prompt-adapter",
            "-O.sample_mode=x",
        ]
    ),
    quote=st.sampled_from(["", "`"]),
)
def test_a_servers_word_inside_a_flag_is_no_servers_talk(flag: str, quote: str) -> None:
    text = "\n".join(
        [
            f"{quote}vllm serve Qwen/Qwen3-30B-A3B-FP8 --port 8000 {flag} --tensor-parallel-size 2{quote}",
            "",
            "RuntimeError: Failed: Assertion error csrc/jit_kernels/impls/smxx_layout.hpp:136 'mn % 4 == 0'",
        ]
    )
    res = classify_text(text + "\n")
    assert res.first_exception is not None and "smxx_layout" in res.first_exception.line
    assert res.failed_stage == "engine", res.evidence


def test_guard_a_servers_word_in_prose_is_still_one() -> None:
    text = "When I send requests to the server it fails:\nRuntimeError: Failed: Assertion error csrc/jit_kernels/impls/smxx_layout.hpp:136\n"
    assert classify_text(text).failed_stage == "runtime"


def test_real_a_command_lines_flags_are_no_servers_talk() -> None:
    assert_real("7697.log", "engine")


# --- an image's build (BuildKit) and its package installer ---------------------------------------------------

_INSTALL_FAILS = [
    [
        "  × No solution found when resolving dependencies:",
        "  ╰─▶ Because there is no version of torch==2.7.0+cu128 and you require torch==2.7.0+cu128, we can conclude that your requirements are unsatisfiable.",
    ],
    [
        "error: No virtual environment found; run `uv venv` to create an environment, or pass `--system` to install into a non-virtual environment"
    ],
    ["error: externally-managed-environment"],
    [
        "ERROR: Could not find a version that satisfies the requirement vllm==9.9.9 (from versions: 0.9.1, 0.9.2)",
        "ERROR: No matching distribution found for vllm==9.9.9",
    ],
]


@given(
    fails=st.sampled_from(_INSTALL_FAILS),
    step=st.sampled_from(["", "#8 ", "#12 "]),
    secs=st.sampled_from(["0.330", "9.622", "123.456"]),
)
def test_an_install_failing_in_an_image_build_is_the_containers_root(fails: list[str], step: str, secs: str) -> None:
    lines = [f"{step}0.193 Using Python 3.12.11 environment at: /opt/venv", *(f"{step}{secs} {x}" for x in fails)]
    lines += [
        "------",
        'ERROR: failed to solve: process "/bin/sh -c uv pip install vllm" did not complete successfully: exit code: 1',
    ]
    res = classify_text("\n".join(lines) + "\n")
    assert res.first_exception is not None and fails[0].strip()[:20] in res.first_exception.line, res.first_exception
    assert res.failed_stage == "container", res.evidence


@given(step=st.sampled_from(["", "#8 "]))
def test_guard_a_builds_healthy_lines_are_no_root(step: str) -> None:
    lines = [
        f"{step}0.193 Using Python 3.12.11 environment at: /opt/venv",
        f"{step}2.410 Resolved 143 packages in 2.20s",
        f"{step}9.622 Installed 143 packages in 7.21s",
        f"{step}9.623  + vllm==0.9.1",
    ]
    assert classify_text("\n".join(lines) + "\n").first_exception is None


def test_real_an_install_failing_in_an_image_build() -> None:
    assert_real("7896.log", "container", "No solution found when resolving dependencies")
    assert_real("7910.log", "container", "No virtual environment found")


# --- a GPU architecture a table lacks; FlashAttention 3's features ------------------------------------------


@given(
    line=st.sampled_from(
        [
            "(APIServer pid=437) KeyError: 'gfx1201'",
            "KeyError: 'sm_120'",
            "(VllmWorker TP2 pid=4268) ERROR 08-06 02:11:23 [multiproc_executor.py:559] AssertionError: Sinks are only supported in FlashAttention 3",
        ]
    ),
    worker=st.booleans(),
)
def test_an_architecture_a_table_lacks_or_fa3_only_is_the_devices(line: str, worker: bool) -> None:
    head = (
        ["(VllmWorker TP0 pid=4266) INFO 08-06 02:11:20 [gpu_model_runner.py:1800] Starting to load model x..."]
        if worker
        else []
    )
    res = classify_text("\n".join([*head, line]) + "\n")
    assert res.first_exception is not None and line[-20:] in res.first_exception.line
    assert res.failed_stage == "device", res.evidence


def test_guard_a_keyerror_of_another_name_is_not_the_devices() -> None:
    assert classify_text("(APIServer pid=437) KeyError: 'gfx_version'\n").failed_stage != "device"


def test_real_an_architecture_a_table_lacks_or_fa3_only() -> None:
    assert_real("7807.log", "device", "KeyError: 'gfx1201'")
    assert_real("7866.log", "device", "Sinks are only supported in FlashAttention 3")
    assert_real("1963.log", "device", "Sinks are only supported in FlashAttention 3")


@given(n=st.integers(2, 5))
def test_several_requests_reporting_the_engine_dead_the_first_is_the_root(n: int) -> None:
    err = "RuntimeError: generator raised: EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause."
    text = "".join(_handler_trace(err, stamp=False) for _ in range(n))
    res = classify_text(text)
    assert res.first_exception is not None and res.first_exception.line_number == 7, res.first_exception
    assert res.failed_stage == "runtime", res.evidence

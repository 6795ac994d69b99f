"""Issue 13, twenty-fourth session: root forms and stage evidence met in fresh logs.

- libnuma refusing the CPU list a worker binds its threads to (``libnuma: Warning: unparseable cpu description
  `abc'``, ``libnuma: Warning: cpu argument 60-63 is out of range``: vLLM's CPU back-end binding OpenMP threads)
  is the root of the engine's failure to start that follows, though it is only a warning with no traceback of
  its own: the engine core exits and the API server reports the consequence. The device's set-up. Its notice
  ``/sys not mounted or invalid`` is no failure, and a failure of another kind after it is its own root.
- An exception that ended one thread of a process (Python's ``Exception in thread Thread-1 (_report_usage_worker):``
  before its traceback: vLLM's usage-stats thread failing to read the CPU's details) did not end the process. A
  server that got ready after it is healthy; with no readiness after it, it is the root (it ended a start-up, or a
  thread that served); after another failure it is that failure's end, as before.
- A line that keeps vLLM's logger level and location but not its time (``WARNING marlin_utils_fp4.py:137 Your GPU
  does not have native support for FP4 …``, an excerpt's one quoted warning) is a vLLM log's line: the log is
  recognised (healthy when nothing fails), not "not a vLLM log".
- The compile wrapper vLLM makes for a model once it is built (``vllm/compilation/wrapper.py``'s ``__init__``
  calling ``torch.compile`` with the compilation config's back-end and options) is the compile's set-up, the
  engine's, though the model's ``__init__`` (the loader's work) is its caller: an unknown Inductor option fails
  there. A failure in the model's own construction under ``@support_torch_compile`` stays the weights'.
- A kernel library's JIT build that finds no CUDA compiler (FlashInfer's ``RuntimeError: Could not find nvcc and
  default cuda_home='/usr/local/cuda' doesn't exist``, raised under the engine's warm-up of the sampler) is the
  image's: it lacks the toolkit, as a missing ``nvcc`` binary is. After the server was ready, runtime. So is
  Triton finding no ``libcuda.so`` to link its kernels against (``AssertionError: libcuda.so cannot found!``): the
  driver's library is not in the container, as ``libcuda.so.1: cannot open shared object file`` says elsewhere.
- Slurm's ``slurmstepd-NODE: error: *** STEP 5.0 ON NODE FAILED (non-zero exit code or other failure mode) ***``
  reports the end of a step whose task exited badly: a consequence, as its CANCELLED line is, never a root (nor
  argparse's ``prog: error:``, which a node's name after ``slurmstepd-`` made it look like). A job cancelled by
  ``scancel --batch`` while serving then stops as a cancelled job does: healthy.
- ``srun: error: Unable to create step for job N: More processors requested than permitted`` (or resources,
  a partition, an account, a QoS it does not have): the workload manager never started the server's process, the
  container's layer as ``srun: error: execve(): vllm: No such file or directory`` is.
- A lock, semaphore or shared-memory segment refused while the processes' IPC is set up (``multiprocessing``'s
  ``synchronize.py`` / ``shared_memory.py`` frames: ``OSError: [Errno 28] No space left on device`` from an
  inode-starved ``/dev/shm``) is the engine's start-up, not a full disk of the model's files.
- The workload manager's own end-of-step lines (``srun: error: n1: task 0: Exited with exit code 1``), wherever
  a job's output interleaved them, say nothing of a warning or error logged and survived before them (a model-info
  cache that could not be saved): a root that fails later stays the root (a latent property failure hypothesis
  found in ``test_classify_interleaved.py`` this session).

Each on generated logs and on a real log of the tuned part; each fails without its change (the guards,
which say what a rule must leave alone, pass either way).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import tuned_text
from tests.support.tracebacks import traceback_text

_V = "/usr/local/lib/python3.12/dist-packages/vllm"
_ENGINE = "(EngineCore_0 pid=19740) INFO 12-07 02:30:15 [core.py:74] Initializing a V1 LLM engine (v0.10.1.1)\n"
_API = "(APIServer pid=19711) "


def _frames(prefix: str, frames: list[tuple[str, str]], last: str) -> str:
    """A traceback through ``frames`` (vLLM's when the path is relative) ending in ``last``, each line under ``prefix``."""
    where = [(path if path.startswith("/") else f"{_V}/{path}", func) for path, func in frames]
    return traceback_text(where, last, prefix=prefix)


def _consequence(last: str) -> str:
    """The API server's traceback after its engine failed to start (``last`` its exception line)."""
    return _frames(_API, [("entrypoints/cli/serve.py", "cmd"), ("v1/engine/utils.py", "wait_for_engine_startup")], last)


_CPUS = st.one_of(
    st.from_regex(r"[a-z]{1,6}", fullmatch=True).map(lambda s: f"unparseable cpu description `{s}'"),
    st.tuples(st.integers(16, 512), st.integers(1, 64)).map(
        lambda t: f"cpu argument {t[0]}-{t[0] + t[1]} is out of range"
    ),
    st.integers(2, 64).map(lambda n: f"node argument {n} is out of range"),
)
_FAILED = st.sampled_from(
    [
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
        "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
    ]
)


@given(what=_CPUS, last=_FAILED)
def test_a_libnuma_cpu_list_refused_before_the_engine_failed_to_start(what: str, last: str) -> None:
    res = classify_text(f"{_ENGINE}libnuma: Warning: {what}\n\n{_consequence(last)}")
    assert res.first_exception is not None and res.first_exception.line == f"libnuma: Warning: {what}"
    assert res.failed_stage == "device", res.evidence


@given(last=_FAILED)
def test_libnumas_sys_notice_is_no_root(last: str) -> None:
    """Guard: a container without /sys topology gets this notice on every start; it fails nothing."""
    notice = "libnuma: Warning: /sys not mounted or invalid. Assuming one node: No such file or directory"
    res = classify_text(f"{_ENGINE}{notice}\n{_consequence(last)}")
    assert res.first_exception is not None and "libnuma" not in res.first_exception.line


@given(what=_CPUS)
def test_a_failure_of_another_kind_after_libnumas_warning_is_its_own_root(what: str) -> None:
    """Guard: a model's config rejected after the warning is not the warning's doing."""
    last = "ValueError: Model architectures ['K3ForCausalLM'] are not supported for now."
    res = classify_text(f"{_ENGINE}libnuma: Warning: {what}\n{_consequence(last)}")
    assert res.first_exception is not None and res.first_exception.line.endswith(last)


def test_a_libnuma_cpu_list_refused_on_a_real_log() -> None:
    """vLLM 0.10.1.1's CPU back-end with ``VLLM_CPU_OMP_THREADS_BIND=60-63`` on a 2-core machine."""
    res = classify_text(tuned_text("vllm-cpu-faults", "v010-env-omp-bind-missing-cores.log"))
    assert res.first_exception is not None
    assert res.first_exception.line == "libnuma: Warning: cpu argument 60-63 is out of range"
    assert res.failed_stage == "device", res.evidence


_THREAD_FAILED = st.sampled_from(
    [
        ("json/decoder.py", "raw_decode", "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"),
        ("usage/usage_lib.py", "_write_to_file", "PermissionError: [Errno 13] Permission denied: '/.config'"),
        ("v1/engine/core.py", "process_input_sockets", "ValueError: You can only use one kind of guided decoding"),
    ]
)
_PROC = st.sampled_from(["(Worker_TP0 pid=675) ", "(EngineCore_DP0 pid=84) ", ""])
_READY = "(APIServer pid=1) INFO:     Application startup complete.\n"
_LOADING = "(Worker_TP0 pid=675) INFO 09-22 07:22:28 [default_loader.py:267] Loading weights took 12.31 seconds\n"


def _thread_death(proc: str, name: str, failed: tuple[str, str, str]) -> str:
    path, func, last = failed
    frames = [("/usr/lib/python3.12/threading.py", "_bootstrap_inner"), (path, func)]
    return f"{proc}Exception in thread {name}:\n" + _frames(proc, frames, last)


_NAME = st.one_of(
    st.integers(1, 40).map(lambda k: f"Thread-{k} (_report_usage_worker)"),
    st.from_regex(r"[A-Za-z][A-Za-z_]{2,20}", fullmatch=True),
)


@given(proc=_PROC, name=_NAME, failed=_THREAD_FAILED)
def test_a_threads_death_before_the_server_got_ready_is_no_failure(proc: str, name: str, failed) -> None:
    res = classify_text(f"{_ENGINE}{_thread_death(proc, name, failed)}{_LOADING}{_READY}")
    assert res.first_exception is None and res.failed_stage == "none", res.first_exception


@given(proc=_PROC, name=_NAME, failed=_THREAD_FAILED, ready=st.booleans())
def test_a_threads_death_the_server_did_not_get_ready_after_is_the_root(proc: str, name: str, failed, ready) -> None:
    """Guard: a start-up that never got ready after it, or a server that was ready before it (it died serving)."""
    text = f"{_ENGINE}{_READY if ready else _LOADING}{_thread_death(proc, name, failed)}"
    res = classify_text(text)
    assert res.first_exception is not None and res.first_exception.line.endswith(failed[2])


@given(proc=_PROC, name=_NAME, failed=_THREAD_FAILED)
def test_a_later_failure_of_another_kind_after_a_threads_death_is_its_own_root(proc: str, name: str, failed) -> None:
    """The engine's start-up failing later on its own: the thread's death did not cause a bad config."""
    last = "ValueError: Model architectures ['K3ForCausalLM'] are not supported for now."
    text = f"{_ENGINE}{_thread_death(proc, name, failed)}{_consequence(last)}"
    res = classify_text(text)
    assert res.first_exception is not None and res.first_exception.line.endswith(last)


def test_a_threads_death_before_the_server_got_ready_on_a_real_log() -> None:
    """vLLM's usage-stats thread on a DGX Spark (``cpuinfo`` reading no JSON) while the weights loaded: healthy."""
    res = classify_text(tuned_text("vllm-repo-logs", "7162.log"))
    assert res.first_exception is None and res.failed_stage == "none", res.first_exception


_LEVEL = st.sampled_from(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"])
_MODULE = st.from_regex(r"[a-z][a-z_]{2,20}", fullmatch=True)


@given(
    level=_LEVEL,
    module=_MODULE,
    at=st.integers(1, 3000),
    words=st.from_regex(r"[A-Z][a-z]{2,9}( [a-z]{2,9}){1,8}\.", fullmatch=True),
    bracket=st.booleans(),
)
def test_a_line_with_vllms_level_and_location_but_no_time_is_a_vllm_logs(level, module, at, words, bracket) -> None:
    where = f"[{module}.py:{at}]" if bracket else f"{module}.py:{at}"
    res = classify_text(f"{level} {where} {words}\n")
    assert res.failed_stage != "unknown", res.evidence


def test_a_warning_with_vllms_level_and_location_but_no_time_on_a_real_log() -> None:
    """The Marlin FP4 fallback's warning quoted alone in a thread: a healthy server's noise."""
    res = classify_text(tuned_text("vllm-issues", "2436.log"))
    assert res.failed_stage == "none" and res.first_exception is None, res.evidence


_UNDER_MODEL = [
    ("v1/worker/gpu_worker.py", "load_model"),
    ("model_executor/model_loader/base_loader.py", "load_model"),
    ("model_executor/model_loader/utils.py", "initialize_model"),
    ("model_executor/models/llama.py", "__init__"),
    ("model_executor/models/llama.py", "_init_model"),
    ("compilation/decorators.py", "__init__"),
]


_WORKER = st.sampled_from(["(Worker pid=1098) ERROR 12-06 20:15:33 [multiproc_executor.py:953] ", "[rank0]: ", ""])


@given(prefix=_WORKER, option=st.from_regex(r"[a-z][a-z_]{3,20}", fullmatch=True))
def test_the_compile_wrappers_set_up_under_the_models_construction_is_the_engines(prefix: str, option: str) -> None:
    frames = [
        *_UNDER_MODEL,
        ("compilation/wrapper.py", "__init__"),
        ("/usr/lib/python3/site-packages/torch/__init__.py", "compile"),
        ("/usr/lib/python3/site-packages/torch/__init__.py", "apply_options"),
    ]
    res = classify_text(_frames(prefix, frames, f"RuntimeError: Unexpected optimization option {option}"))
    assert res.failed_stage == "engine", res.evidence


@given(prefix=_WORKER)
def test_the_models_own_construction_under_the_compile_decorator_stays_the_weights(prefix: str) -> None:
    """Guard: ``@support_torch_compile``'s ``__init__`` calls the model's own, which failed on its config."""
    frames = [*_UNDER_MODEL, ("model_executor/models/llama.py", "__init__")]
    res = classify_text(_frames(prefix, frames, "AttributeError: 'K3Config' object has no attribute 'hidden_size'"))
    assert res.failed_stage == "weights", res.evidence


def test_the_compile_wrappers_set_up_on_a_real_log() -> None:
    """``--compilation-config`` with an Inductor option torch does not know, on a compiled start-up."""
    res = classify_text(tuned_text("vllm-cpu-faults", "cc-cfg-inductor-option-unknown-compiled.log"))
    assert res.failed_stage == "engine", res.evidence


_JIT = st.sampled_from(
    [
        ("/usr/lib/python3/site-packages/flashinfer/jit/core.py", "build_and_load"),
        ("/usr/lib/python3/site-packages/flashinfer/jit/cpp_ext.py", "get_cuda_path"),
        ("/usr/lib/python3/site-packages/deep_gemm/jit/compiler.py", "build"),
    ]
)


@given(prefix=_WORKER, jit=_JIT, home=st.sampled_from(["/usr/local/cuda", "/opt/cuda-12.8", "None"]))
def test_a_jit_build_that_finds_no_cuda_compiler_is_the_images(prefix: str, jit, home: str) -> None:
    frames = [
        ("v1/engine/core.py", "_initialize_kv_caches"),
        ("v1/worker/gpu_worker.py", "compile_or_warm_up_model"),
        ("v1/worker/gpu_model_runner.py", "_dummy_sampler_run"),
        jit,
    ]
    last = f"RuntimeError: Could not find nvcc and default cuda_home='{home}' doesn't exist"
    res = classify_text(_frames(prefix, frames, last))
    assert res.failed_stage == "container", res.evidence


def test_a_jit_build_that_finds_no_cuda_compiler_on_a_real_log() -> None:
    """FlashInfer's top-k sampling kernel built on first use in a uv venv with no CUDA toolkit (Python 3.14)."""
    res = classify_text(tuned_text("vllm-issues", "5022.log"))
    assert res.failed_stage == "container", res.evidence


@given(jit=_JIT)
def test_a_jit_build_that_finds_no_cuda_compiler_while_serving_is_runtime(jit) -> None:
    """Guard: a kernel first built for a request's sampling parameters, after the server was ready."""
    frames = [("v1/engine/core.py", "step"), ("v1/worker/gpu_model_runner.py", "sample_tokens"), jit]
    last = "RuntimeError: Could not find nvcc and default cuda_home='/usr/local/cuda' doesn't exist"
    res = classify_text(_READY + _frames("", frames, last))
    assert res.failed_stage == "runtime", res.evidence


@given(prefix=_WORKER, tail=st.sampled_from(["", "\nPossible files are located at ['/usr/lib64/libcuda.so.1']."]))
def test_triton_finding_no_libcuda_to_link_against_is_the_images(prefix: str, tail: str) -> None:
    frames = [
        ("worker/worker_base.py", "init_worker"),
        ("model_executor/layers/fused_moe/fused_moe.py", "invoke_fused_moe_kernel"),
        ("/usr/lib/python3/site-packages/triton/runtime/jit.py", "run"),
        ("/usr/lib/python3/site-packages/triton/common/build.py", "libcuda_dirs"),
    ]
    res = classify_text(_frames(prefix, frames, "AssertionError: libcuda.so cannot found!") + tail)
    assert res.failed_stage == "container", res.evidence


def test_triton_finding_no_libcuda_on_a_real_log() -> None:
    res = classify_text(tuned_text("vllm-issues", "346.log"))
    assert res.failed_stage == "container", res.evidence


_SLURM_NODE = st.sampled_from(["slurmstepd-n1", "slurmstepd-gpu-node-017", "slurmstepd"])


@given(node=_SLURM_NODE, job=st.integers(1, 99999))
def test_a_failed_steps_line_after_the_operators_cancel_of_a_serving_job_is_no_root(node: str, job: int) -> None:
    host = node.partition("-")[2] or "n1"
    text = (
        f"{_ENGINE}{_READY}"
        f"{node}: error: *** JOB {job} ON {host} CANCELLED AT 2026-12-07T08:27:00 ***\n"
        f"{node}: error: *** STEP {job}.0 ON {host} FAILED (non-zero exit code or other failure mode) ***\n"
        "srun: Job step aborted: Waiting up to 5 seconds for job step to finish.\n"
        "(APIServer pid=1) INFO 12-07 08:27:00 [launcher.py:254] [shutdown] API server: shutdown triggered\n"
    )
    res = classify_text(text)
    assert res.first_exception is None and res.failed_stage == "none", res.first_exception


@given(node=st.sampled_from(["slurmstepd-n1", "slurmstepd-gpu-node-017"]))
def test_a_slurm_daemons_error_line_is_not_argparses(node: str) -> None:
    """A node's daemon saying it could not chdir is no command line refused (argparse's words, the config's)."""
    res = classify_text(f"{node}: error: couldn't chdir to `/scratch/k3/model': No such file or directory\n")
    assert res.failed_stage != "config", res.evidence


def test_a_failed_steps_line_after_scancel_batch_on_a_real_log() -> None:
    res = classify_text(tuned_text("vllm-cpu-faults", "s24b-slm-scancel-batch-term-serving.log"))
    assert res.first_exception is None and res.failed_stage == "none", res.first_exception


@given(
    why=st.sampled_from(
        [
            "Unable to create step for job 7: More processors requested than permitted",
            "Unable to allocate resources: Requested node configuration is not available",
            "Invalid generic resource (gres) specification",
            "Invalid partition name specified",
        ]
    )
)
def test_srun_refusing_to_start_the_step_is_the_containers(why: str) -> None:
    res = classify_text(f"srun: error: {why}\n")
    assert res.first_exception is not None and res.failed_stage == "container", res.evidence


def test_srun_refusing_to_start_the_step_on_a_real_log() -> None:
    res = classify_text(tuned_text("vllm-cpu-faults", "s24b-slm-srun-cpus-per-task-4.log"))
    assert res.failed_stage == "container", res.evidence


@given(
    prefix=_WORKER,
    where=st.sampled_from([("synchronize.py", "__init__"), ("shared_memory.py", "__init__")]),
    last=st.sampled_from(
        ["OSError: [Errno 28] No space left on device", "PermissionError: [Errno 13] Permission denied"]
    ),
)
def test_the_ipcs_lock_or_segment_refused_at_start_up_is_the_engines(prefix: str, where, last: str) -> None:
    frames = [
        ("v1/engine/core.py", "__init__"),
        ("v1/executor/multiproc_executor.py", "_init_executor"),
        ("/usr/lib/python3.11/multiprocessing/context.py", "Lock"),
        (f"/usr/lib/python3.11/multiprocessing/{where[0]}", where[1]),
    ]
    res = classify_text(_frames(prefix, frames, last))
    assert res.failed_stage == "engine", res.evidence


def test_the_ipcs_lock_refused_on_a_real_log() -> None:
    """TP 2 with a /dev/shm of two inodes: the executor's lock cannot be made."""
    res = classify_text(tuned_text("vllm-cpu-faults", "s24b-rank-tp2-shm-nr-inodes-2.log"))
    assert res.failed_stage == "engine", res.evidence


_SAVED = [
    "(APIServer pid=1) ERROR 12-07 01:22:36 [registry.py:1041] Error saving model info cache.",
    "(APIServer pid=1) ERROR 12-07 01:22:36 [registry.py:1041] Traceback (most recent call last):",
    '(APIServer pid=1) ERROR 12-07 01:22:36 [registry.py:1041]   File "/usr/lib/python3.11/pathlib.py", line 1117, in mkdir',
    "(APIServer pid=1) ERROR 12-07 01:22:36 [registry.py:1041]     os.mkdir(self, mode)",
    "(APIServer pid=1) ERROR 12-07 01:22:36 [registry.py:1041] PermissionError: [Errno 13] Permission denied: '/nonexistent'",
]


@given(
    end=st.sampled_from(
        [
            "srun: error: n1: task 0: Exited with exit code 1",
            "srun: error: gpu-07: tasks 0-1: Killed",
            "slurmstepd: error: *** STEP 3.0 ON n1 FAILED (non-zero exit code or other failure mode) ***",
        ]
    ),
    at=st.integers(0, 3),
)
def test_a_workload_managers_end_line_says_nothing_of_a_survived_error_before_it(end: str, at: int) -> None:
    loading = [_LOADING.rstrip("\n")] * 4
    later = "ValueError: Model architectures ['K3ForCausalLM'] are not supported for now."
    lines = [*_SAVED, *loading[:at], end, *loading[at:]]
    res = classify_text("\n".join(lines) + "\n" + _consequence(later))
    assert res.first_exception is not None and res.first_exception.line.endswith(later), res.first_exception


def test_a_workload_managers_end_line_interleaved_on_a_real_log() -> None:
    """--user 65534 on a compiled start in Docker: the model-info cache's survived error, then the worker's root."""
    lines = tuned_text("vllm-cpu-faults", "dkr-user-nobody-compile.log").splitlines()
    want = classify_text("\n".join(lines) + "\n").first_exception
    res = classify_text("\n".join([*lines[:77], "srun: error: a: task 0: Exited with exit code 1", *lines[77:]]) + "\n")
    assert want is not None and res.first_exception is not None and res.first_exception.line == want.line

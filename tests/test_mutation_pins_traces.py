"""Traceback assembly (``k3tui/classify/traces.py``) behaviours a mutation run found unpinned (issue 22).

Each test is a class of real log shapes: an exception message that runs on for many lines
(pydantic, NumPy), a traceback cut before its exception and followed by a new one of the same
process, an excerpt whose indentation was lost, an unprefixed traceback (the API server's own
stderr) with other writers' lines between its frames, a failure inside an import, and the line
a frame verdict points the operator at.
"""

from __future__ import annotations

import pytest

from k3tui.classify import classify_text
from k3tui.classify.traces import MAX_TRACE_LINES

_P = "(EngineCore_0 pid=4242) ERROR 11-30 06:12:00 [core.py:700] "
_START = "INFO 11-30 06:11:00 [api_server.py:1] vLLM API server version 0.11.0"


def _tb(prefix: str, funcs: list[str]) -> list[str]:
    out = [prefix + "Traceback (most recent call last):"]
    for i, f in enumerate(funcs):
        out += [prefix + f'  File "/x/vllm/v1/m{i}.py", line {10 + i}, in {f}', prefix + f"    {f}_inner()"]
    return out


@pytest.mark.parametrize("extra", [1, 29, 30, 37])
def test_a_long_exception_message_is_kept_up_to_its_cap(extra):
    """The lines under the exception line (a validation error's details) join the root's stack,
    at most 30 of them (``MAX_CONTINUATION``): a runaway message cannot grow the stack without bound."""
    tb = [*_tb(_P, ["run_engine", "build"]), _P + "ValueError: 2 validation errors for ModelConfig"]
    details = [_P + f"  detail {i}: value is not valid" for i in range(extra)]
    r = classify_text("\n".join([_START, *tb, *details, _P, _P + "EngineCore exiting."]) + "\n")
    assert r.exception_type == "ValueError"
    assert list(r.first_exception.stack) == tb + details[:30]


def test_a_cut_traceback_then_a_new_one_of_the_same_process_starts_a_new_stack():
    """A process whose first traceback was cut before its exception (killed, or the log lost
    lines) and that then prints a whole new traceback: the root's stack is the new one only."""
    first = _tb(_P, ["old_step", "old_inner"])
    second = [*_tb(_P, ["run_engine", "build"]), _P + "RuntimeError: the real failure"]
    r = classify_text("\n".join([_START, *first, *second]) + "\n")
    assert r.exception_type == "RuntimeError"
    assert list(r.first_exception.stack) == second


def test_an_excerpt_that_lost_its_indentation_keeps_frames_and_code_apart_from_the_exception():
    """Frames and their code printed flush left (an excerpt pasted without indentation): a code line
    such as ``Executor(config).start()`` is not the exception line, the stack keeps every line."""
    lines = [
        "Traceback (most recent call last):",
        'File "/x/vllm/v1/engine/core.py", line 10, in run_engine_core',
        "Executor(vllm_config).start()",
        'File "/x/vllm/v1/executor/abstract.py", line 20, in start',
        "Worker(rank).load()",
        "RuntimeError: the worker could not start",
    ]
    r = classify_text("\n".join(lines) + "\n")
    assert r.exception_type == "RuntimeError"
    assert list(r.first_exception.stack) == lines


@pytest.mark.parametrize("foreign", [0, 1, 5, 6])
def test_an_unprefixed_traceback_deep_in_the_log_keeps_its_frames_across_other_writers(foreign):
    """The API server's own stderr traceback carries no word the prefilter looks for until its
    exception line; it is rebuilt from the text before it. A vLLM logger line and up to
    5 lines of another program (a workload manager; ``MAX_FOREIGN``) printed between its frames do
    not cut it: the root's stack holds the same frames as without them. A sixth ends it."""
    flood = [f"(APIServer pid=7) INFO 11-30 06:11:{i % 60:02d} [loader.py:1] step {i}" for i in range(60)]
    tb = [
        "Traceback (most recent call last):",
        '  File "/x/vllm/entrypoints/openai/api_server.py", line 5, in run_server',
        "    await serve()",
        '  File "/x/vllm/entrypoints/openai/api_server.py", line 9, in serve',
        "    start()",
    ]
    exc = "RuntimeError: the server could not bind"
    noise = ["INFO 11-30 06:12:00 [core.py:70] waiting for the engine"] + [
        f"slurmstepd: task {i} still running" for i in range(foreign)
    ]
    r = classify_text("\n".join([_START, *flood, *tb[:3], *noise, *tb[3:], exc]) + "\n")
    assert r.exception_type == "RuntimeError"
    if foreign <= 5:
        assert list(r.first_exception.stack) == [*tb[:3], *tb[3:], exc]
    else:
        assert tb[1] not in list(r.first_exception.stack)


@pytest.mark.parametrize(
    "innermost",
    [
        '  File "<frozen importlib._bootstrap>", line 1387, in _gcd_import',
        'ackages/some_plugin/ops.py", line 3, in <module>',
    ],
    ids=["frozen-importlib", "cut-module-frame"],
)
def test_a_failure_inside_an_import_is_the_container_layer(innermost):
    """The innermost frame is the import machinery or module-level code (also when the excerpt
    cut the frame's path): the image's Python failed while importing — the container layer, from
    the frames, pointing at that frame's line."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/importlib/__init__.py", line 90, in import_module',
        "    return _bootstrap._gcd_import(name[level:], package, level)",
        innermost,
        "KeyError: 'x'",
    ]
    r = classify_text("\n".join(lines) + "\n")
    assert r.failed_stage == "container"
    assert r.evidence.rule == "frames"
    assert r.evidence.lines == (4,)


def test_a_frame_verdict_points_at_the_frames_own_line():
    """The stage told by a frame names that frame's line number (where the TUI jumps), not the
    exception line's."""
    tb = [
        _P + "Traceback (most recent call last):",
        _P + '  File "/x/vllm/v1/engine/core.py", line 80, in __init__',
        _P + "    self._initialize_kv_caches(vllm_config)",
        _P + '  File "/x/vllm/v1/core/kv_cache_utils.py", line 5, in check_enough_kv_cache_memory',
        _P + "    raise ValueError(msg)",
        _P + "ValueError: boom",
    ]
    r = classify_text("\n".join([_START, *tb]) + "\n")
    assert r.failed_stage == "engine"
    assert r.evidence.rule == "frames"
    assert r.evidence.lines == (5,)  # the log's line 5 (the kv-cache frame), not 7 (the exception line)


@pytest.mark.parametrize(
    "chain",
    [
        "The above exception was the direct cause of the following exception:",
        "During handling of the above exception, another exception occurred:",
    ],
    ids=["direct-cause", "during-handling"],
)
def test_a_chained_exception_without_blank_lines_starts_no_continuation(chain):
    """An excerpt whose blank lines were dropped: "The above exception was the direct cause …" or
    "During handling of the above exception …" right under the exception line ends that
    traceback; it is not part of its message."""
    inner = [
        "Traceback (most recent call last):",
        '  File "/x/vllm/v1/worker/gpu_worker.py", line 5, in load_model',
        "    self.model_runner.load_model()",
        "ValueError: the inner failure",
    ]
    outer = [
        chain,
        "Traceback (most recent call last):",
        '  File "/x/vllm/v1/engine/core.py", line 9, in run',
        "    start()",
        "RuntimeError: the outer failure",
    ]
    r = classify_text("\n".join([*inner, *outer]) + "\n")
    assert r.exception_type == "ValueError"
    assert list(r.first_exception.stack) == inner


def test_a_new_log_record_after_the_exception_ends_the_traceback():
    """After the exception line, the same process's next log record (and the indented lines it
    prints, a config dump) are not the exception's message: the root's stack ends at it."""
    tb = [*_tb(_P, ["run_engine", "build"]), _P + "RuntimeError: the real failure"]
    after = [_P + "Dumping the engine config:", _P + "  model=/models/x", _P + "  tensor_parallel_size=8"]
    r = classify_text("\n".join([_START, *tb, *after]) + "\n")
    assert r.exception_type == "RuntimeError"
    assert list(r.first_exception.stack) == tb


def test_only_the_code_line_under_a_frame_names_the_function_it_was_calling():
    """The source line printed under a frame says where the stack was going; a call quoted in the
    exception's message is not a frame, so it cannot move the stage."""
    r = classify_text(_one_frame("/x/plugin/loader.py", "load_weights", "self.fetch(w)", "boom after init_device(0)"))
    assert (r.failed_stage, r.evidence.rule) == ("weights", "frames")


def _one_frame(path: str, func: str, code: str, message: str) -> str:
    """An unprefixed traceback with one frame and a RuntimeError."""
    tb = ["Traceback (most recent call last):", f'  File "{path}", line 5, in {func}', f"    {code}"]
    return "\n".join([*tb, f"RuntimeError: {message}"]) + "\n"


def test_a_rebuilt_traceback_points_at_its_frames_own_line():
    """An unprefixed traceback deep in the log is rebuilt from the text before its exception line;
    the frame that tells the stage is still named by its own line number."""
    flood = [f"(APIServer pid=7) INFO 11-30 06:11:{i % 60:02d} [loader.py:1] step {i}" for i in range(60)]
    tb = [
        "Traceback (most recent call last):",
        '  File "/x/plugin/runner.py", line 3, in start',
        "    go()",
        '  File "/x/plugin/loader.py", line 5, in load_weights',
        "    self.fetch(w)",
        "RuntimeError: boom",
    ]
    r = classify_text("\n".join([_START, *flood, *tb]) + "\n")
    assert (r.failed_stage, r.evidence.rule) == ("weights", "frames")
    assert r.evidence.lines == (1 + len(flood) + 4,)  # the load_weights frame's line


def test_a_recursion_error_longer_than_the_kept_stack_is_still_the_root():
    """A RecursionError prints thousands of frames: the stack kept is capped, the rest only
    counted, and the root is still the exception line."""
    tb = [_P + "Traceback (most recent call last):"]
    for i in range(MAX_TRACE_LINES // 2 + 50):
        tb += [_P + f'  File "/x/vllm/v1/m.py", line {i}, in walk', _P + "    walk(node.child)"]
    exc = _P + "RecursionError: maximum recursion depth exceeded"
    r = classify_text("\n".join([_START, *tb, exc]) + "\n")
    assert r.exception_type == "RecursionError"
    assert r.first_exception.line == exc
    assert len(r.first_exception.stack) <= MAX_TRACE_LINES + 1


def test_a_new_record_of_the_same_process_cuts_a_traceback_before_its_exception():
    """A logger record of the same process and level printed where the exception line should be
    means the traceback was cut (the process was killed mid-print): an exception that process
    prints later is not given the cut traceback's frames."""
    cut = _tb(_P, ["old_step", "old_inner"])
    later = _P + "RuntimeError: a later failure"
    r = classify_text("\n".join([_START, *cut, _P + "Stopping the remaining workers now", later]) + "\n")
    assert cut[1] not in list(r.first_exception.stack)


def test_a_record_at_another_level_after_the_exception_ends_the_traceback():
    """After the exception line, the same process's INFO record ends the traceback: an indented
    ERROR line printed after it is not the exception's message."""
    tb = [*_tb(_P, ["run_engine", "build"]), _P + "RuntimeError: the real failure"]
    info = "(EngineCore_0 pid=4242) INFO 11-30 06:12:01 [core.py:70] shutting down"
    r = classify_text("\n".join([_START, *tb, info, _P + "  leftover detail"]) + "\n")
    assert list(r.first_exception.stack) == tb


@pytest.mark.parametrize("cut", [False, True], ids=["whole", "cut-before-its-exception"])
def test_a_native_crash_borrows_the_first_of_two_tracebacks_printed_back_to_back(cut):
    """After a native crash, the next traceback tells the stage. A process that prints two
    tracebacks back to back (the blank line between them lost, or the first cut before its
    exception line): the second ``Traceback`` head ends the first, so the crash borrows the first
    one's frames (``load_model``: weights), not the second's (``capture_model``: engine)."""
    crash = "(Worker_TP0 pid=50) ERROR 11-30 06:12:00 [core.py:1] terminate called after throwing an instance of 'x'"
    y = "(Worker_TP1 pid=51) ERROR 11-30 06:12:01 [multiproc_executor.py:600] "
    first = [
        y + "Traceback (most recent call last):",
        y + '  File "/x/vllm/v1/worker/gpu_model_runner.py", line 5, in load_model',
        y + "    self.model = get_model()",
        y + "RuntimeError: first failure",
    ][: 3 if cut else 4]
    second = [
        y + "Traceback (most recent call last):",
        y + '  File "/x/vllm/v1/worker/gpu_model_runner.py", line 9, in capture_model',
        y + "    graph.capture()",
        y + "ValueError: second failure",
        y,
    ]
    r = classify_text("\n".join([_START, crash, *first, *second]) + "\n")
    assert r.exception_type == "NativeCrash"
    assert (r.failed_stage, r.evidence.rule, r.evidence.lines) == ("weights", "frames", (5,))  # get_model()


def test_a_call_quoted_in_the_error_line_before_a_traceback_is_not_a_frame():
    """The ERROR record logged just before a traceback opens the root's stack; a call it quotes
    (``execute_model(…)``, a runtime function) is not a frame: the traceback's own frames
    (``capture_model``: engine) tell the stage."""
    tb = [
        _P + "EngineCore failed while warming up execute_model(dummy_batch)",
        _P + "Traceback (most recent call last):",
        _P + '  File "/x/vllm/v1/worker/gpu_model_runner.py", line 9, in capture_model',
        _P + "    graph.capture()",
        _P + "RuntimeError: boom",
    ]
    r = classify_text("\n".join([_START, *tb]) + "\n")
    assert list(r.first_exception.stack) == tb
    assert (r.failed_stage, r.evidence.rule, r.evidence.lines) == ("engine", "frames", (4,))


@pytest.mark.parametrize("prefix", ["", _P], ids=["unprefixed-rebuilt", "prefixed"])
def test_a_traceback_head_with_no_frame_under_it_is_not_a_stack(prefix):
    """Python prints a frame before the exception: a ``Traceback`` head directly followed by an
    exception line (an excerpt that cut the frames) is no traceback, deep in the log, whether the
    lines carry a process prefix (followed as printed) or not (rebuilt from the text before the
    exception line): the root's stack is the exception line alone."""
    flood = [f"(APIServer pid=7) INFO 11-30 06:11:{i % 60:02d} [loader.py:1] step {i}" for i in range(60)]
    exc = prefix + "RuntimeError: the server could not bind"
    r = classify_text("\n".join([_START, *flood, prefix + "Traceback (most recent call last):", exc]) + "\n")
    assert r.exception_type == "RuntimeError"
    assert list(r.first_exception.stack) == [exc]


def test_a_traceback_keeps_its_first_thousand_lines():
    """A RecursionError's stack: the first 1,000 lines printed are kept (``MAX_TRACE_LINES``), the
    rest only counted; the root's own line leads the stack it reports."""
    tb = [_P + "Traceback (most recent call last):"]
    for i in range(550):
        tb += [_P + f'  File "/x/vllm/v1/m.py", line {i}, in walk', _P + "    walk(node.child)"]
    exc = _P + "RecursionError: maximum recursion depth exceeded"
    r = classify_text("\n".join([_START, *tb, exc]) + "\n")
    assert list(r.first_exception.stack) == [exc, *tb[:1000]]


def test_a_stack_line_is_kept_up_to_4_kib():
    """One stack line is kept up to 4,096 characters (``MAX_STORED``): a runaway line (a huge
    argument printed in a frame) cannot make the stack unbounded."""
    long = _P + '  File "/x/vllm/v1/worker/gpu_model_runner.py", line 5, in load_model ' + "x" * 5000
    tb = [_P + "Traceback (most recent call last):", long, _P + "    go()", _P + "RuntimeError: boom"]
    r = classify_text("\n".join([_START, *tb]) + "\n")
    assert list(r.first_exception.stack) == [tb[0], long[:4096], *tb[2:]]


@pytest.mark.parametrize(("others", "joined"), [(199, True), (200, False)])
def test_a_silent_unfinished_traceback_is_closed_after_200_lines_of_others(others, joined):
    """A process that stops printing in the middle of its traceback: its exception line still
    joins the frames after 199 lines of other processes; after 200 (``STALE_AFTER``) the
    traceback was closed and the exception stands alone."""
    y = "(Worker_TP1 pid=51) ERROR 11-30 06:12:01 [multiproc_executor.py:600] "
    tb = [
        y + "Traceback (most recent call last):",
        y + '  File "/x/vllm/v1/worker/gpu_model_runner.py", line 5, in load_model',
        y + "    self.model = get_model()",
    ]
    flood = [f"(APIServer pid=7) INFO 11-30 06:11:{i % 60:02d} [loader.py:1] step {i}" for i in range(others)]
    exc = y + "RuntimeError: late"
    r = classify_text("\n".join([_START, *tb, *flood, exc]) + "\n")
    assert r.exception_type == "RuntimeError"
    assert list(r.first_exception.stack) == ([*tb, exc] if joined else [exc])


def test_a_tab_indented_exception_message_stays_with_its_exception():
    """torch's ``load_state_dict`` error lists each mismatch on a tab-indented line under the
    exception line: those lines are the exception's message (its stack), not a new record."""
    tb = [*_tb(_P, ["load_model", "load_weights"]), _P + "RuntimeError: Error(s) in loading state_dict for Llama:"]
    details = [
        _P
        + "\tsize mismatch for lm_head.weight: copying a param with shape [32000, 4096], the current is [32001, 4096].",
        _P
        + "\tsize mismatch for embed.weight: copying a param with shape [32000, 4096], the current is [32001, 4096].",
    ]
    r = classify_text("\n".join([_START, *tb, *details, _P + "EngineCore exiting."]) + "\n")
    assert r.exception_type == "RuntimeError"
    assert list(r.first_exception.stack) == tb + details


def test_a_windows_path_in_a_frame_is_read_by_its_folders():
    """A frame printed on Windows (``C:\\venv\\…\\vllm\\model_executor\\model_loader\\…``): its
    folders name the stage as a ``/`` path's would (the model loader: weights)."""
    path = "C:\\venv\\Lib\\site-packages\\vllm\\model_executor\\model_loader\\loader.py"
    r = classify_text(_one_frame(path, "fetch_all", "go()", "boom"))
    assert (r.failed_stage, r.evidence.rule, r.evidence.lines) == ("weights", "frames", (2,))


def test_an_exception_line_under_a_frameless_head_borrows_the_traceback_printed_next():
    """A ``Traceback`` head with no frame under it is no traceback: the exception line after it is
    a one-line root, and the same process's traceback printed right after lends it its frames
    (``load_model``: weights) instead of the head swallowing that traceback."""
    lines = [
        _P + "Traceback (most recent call last):",
        _P + "RuntimeError: the engine could not start",
        *_tb(_P, ["load_model"]),
        _P + "ValueError: bad weights",
        _P,
        _P + "EngineCore exiting.",
    ]
    r = classify_text("\n".join([_START, *lines]) + "\n")
    assert (r.exception_type, r.first_exception.line_number) == ("RuntimeError", 3)
    assert (r.failed_stage, r.evidence.rule) == ("weights", "frames")


def test_a_traceback_is_rebuilt_only_from_its_own_processs_head():
    """An unprefixed exception deep in the log whose own ``Traceback`` head is missing: the last
    head before it belongs to another process (a request's WARNING traceback that was logged and
    survived), so nothing is rebuilt: the root stands alone, it does not take that head and the
    stray frames after it for its stack."""
    w = "(APIServer pid=7) WARNING 11-30 06:11:30 [serving_chat.py:5] "
    quiet = [
        w + "Traceback (most recent call last):",
        w + '  File "/x/vllm/entrypoints/openai/serving_chat.py", line 5, in create_chat_completion',
        w + "    check(request)",
        w + "ValueError: bad request",
    ]
    flood = [f"(APIServer pid=7) INFO 11-30 06:11:{i % 60:02d} [loader.py:1] step {i}" for i in range(60)]
    tail = ['  File "/x/vllm/v1/worker/gpu_model_runner.py", line 5, in load_model', "    go()", "RuntimeError: boom"]
    r = classify_text("\n".join([_START, *quiet, *flood, *tail]) + "\n")
    assert r.exception_type == "RuntimeError"
    assert list(r.first_exception.stack) == ["RuntimeError: boom"]

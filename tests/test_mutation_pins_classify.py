"""Classifier behaviours a mutation run found unpinned (issue 22), as classes of input.

vLLM V1 prefixes every line with its process; a traceback is assembled per process. These
tests pin: a log cut in the middle of a traceback (the open trace is closed at ``finish()``
and kept), an INFO line of the same process printed inside an ERROR traceback (skipped, the
trace stays open), the end of a traceback at a blank line or a chained "The above
exception …" / "During handling …" (what follows is not part of it), and a cut traceback
after a normal "shutdown triggered" (an operator's stop, not a failure).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k3tui.classify import classify_text
from k3tui.classify.classifier import Classifier

_pid = st.integers(2, 99999)
_exc = st.sampled_from(["ValueError", "RuntimeError", "torch.OutOfMemoryError", "KeyError", "AssertionError"])
_msg = st.from_regex(r"[a-z][a-z0-9 ]{3,30}", fullmatch=True)
_funcs = st.lists(st.from_regex(r"[a-z_]{3,12}", fullmatch=True), min_size=1, max_size=6)


def _err(pid: int) -> str:
    return f"(EngineCore_0 pid={pid}) ERROR 11-30 06:12:00 [core.py:700] "


def _info(pid: int) -> str:
    return f"(EngineCore_0 pid={pid}) INFO 11-30 06:12:00 [core.py:70] "


def _traceback(pid: int, funcs: list[str]) -> list[str]:
    p = _err(pid)
    out = [p + "EngineCore failed to start.", p + "Traceback (most recent call last):"]
    for i, f in enumerate(funcs):
        out += [p + f'  File "/x/vllm/v1/m{i}.py", line {10 + i}, in {f}', p + f"    {f}_inner()"]
    return out


def _classify(lines: list[str]):
    c = Classifier()
    c.feed("\n".join(["INFO 11-30 06:11:00 [api_server.py:1] vLLM API server version 0.11.0", *lines]) + "\n")
    return c.finish()


@settings(max_examples=40, deadline=None)
@given(pid=_pid, funcs=_funcs, data=st.data())
def test_a_log_cut_mid_traceback_keeps_the_open_trace_at_finish(pid, funcs, data):
    tb = _traceback(pid, funcs)
    cut = data.draw(st.integers(3, len(tb)), label="cut")
    r = _classify(tb[:cut])
    fe = r.first_exception
    assert r.failed_stage != "none"
    assert fe is not None
    assert list(fe.stack)[-1] == tb[cut - 1], "the last line before the cut is the end of the kept stack"
    assert len(fe.stack) == cut


@settings(max_examples=40, deadline=None)
@given(pid=_pid, funcs=_funcs, exc=_exc, msg=_msg, data=st.data(), note=_msg)
def test_an_info_line_of_the_same_process_inside_an_error_traceback_is_skipped(pid, funcs, exc, msg, data, note):
    tb = [*_traceback(pid, funcs), _err(pid) + f"{exc}: {msg}"]
    at = data.draw(st.integers(2, len(tb) - 1), label="at")
    plain = _classify(tb)
    mixed = _classify([*tb[:at], _info(pid) + f"Waiting {note}", *tb[at:]])
    assert mixed.exception_type == plain.exception_type == exc
    assert mixed.first_exception.line == plain.first_exception.line == tb[-1]
    assert list(mixed.first_exception.stack) == list(plain.first_exception.stack)
    assert mixed.signature == plain.signature


@settings(max_examples=40, deadline=None)
@given(
    pid=_pid,
    funcs=_funcs,
    exc=_exc,
    msg=_msg,
    end=st.sampled_from(
        ["", "The above exception was the direct cause of the following exception:",
         "During handling of the above exception, another exception occurred:"]
    ),
    tail=_msg,
)  # fmt: skip
def test_a_traceback_ends_at_a_blank_line_or_a_chained_exception(pid, funcs, exc, msg, end, tail):
    tb = [*_traceback(pid, funcs), _err(pid) + f"{exc}: {msg}"]
    r = _classify([*tb, _err(pid) + end, _err(pid) + f"  {tail} continued"])
    stack = list(r.first_exception.stack)
    assert stack == tb
    assert r.exception_type == exc


@settings(max_examples=30, deadline=None)
@given(pid=_pid, api=_pid, funcs=_funcs, data=st.data())
def test_a_cut_traceback_after_a_normal_shutdown_is_not_a_failure(pid, api, funcs, data):
    a = f"(APIServer pid={api}) INFO 11-30 06:13:00 [launcher.py:254] "
    tb = _traceback(pid, funcs)
    cut = data.draw(st.integers(3, len(tb)), label="cut")
    ready = f"(APIServer pid={api}) INFO 11-30 06:12:30 [api_server.py:1] Application startup complete."
    stopped = _classify([ready, a + "[shutdown] API server: shutdown triggered", *tb[:cut]])
    assert stopped.failed_stage == "none", stopped.evidence
    assert stopped.signature == ""
    failed = _classify([ready, *tb[:cut]])  # the same cut traceback without the stop is a failure
    assert failed.failed_stage != "none"


def test_feeding_after_finish_is_refused_by_name():
    """A finished classifier's answer is final: more text is refused, saying why."""
    c = Classifier()
    c.feed("INFO 11-30 06:11:00 [api_server.py:1] vLLM API server version 0.11.0\n")
    c.finish()
    with pytest.raises(RuntimeError, match=r"feed\(\) after finish"):
        c.feed("ERROR late line\n")


def test_an_oom_logged_after_another_root_is_a_consequence_not_absent():
    """An out-of-memory ERROR printed after the root (a different failure) is reported as seen but
    not the cause (False), which differs from a log with no OOM at all (None)."""
    tb = [*_traceback(77, ["load_model"]), _err(77) + "RuntimeError: the real failure"]
    oom = _err(78) + "CUDA out of memory while freeing the cache"
    assert _classify([*tb, _err(77) + "", oom]).oom_root_cause is False
    assert _classify([*tb, _err(77) + ""]).oom_root_cause is None


def _workers(n: int) -> tuple[list[str], list[str], list[str]]:
    """n workers' traceback heads, one frame each, and their exception lines (printed in that order)."""
    pids = list(range(100, 100 + n))
    heads = [_err(p) + "Traceback (most recent call last):" for p in pids]
    frames = [_err(p) + f'  File "/x/vllm/v1/worker/w.py", line {p}, in step_{p}' for p in pids]
    return heads, frames, [_err(p) + f"RuntimeError: worker {p} failed" for p in pids]


def test_thirty_two_tracebacks_open_at_once_keep_the_first_ones_stack():
    """TP=8 x DP=4 workers print their tracebacks at the same time: the first worker's exception,
    printed after all 32 opened, is the root with its whole stack."""
    heads, frames, excs = _workers(32)
    r = _classify([*heads, *frames, *excs])
    assert r.first_exception.line == excs[0]
    assert list(r.first_exception.stack) == [heads[0], frames[0], excs[0]]


def test_an_indented_line_outside_any_traceback_is_never_a_root():
    """Code or a continuation printed outside a traceback we follow (a config dump, a help text
    that quotes an error) is not a failure."""
    start = "INFO 11-30 06:11:00 [api_server.py:1] vLLM API server version 0.11.0"
    dump = ["INFO 11-30 06:11:01 [arg_utils.py:1] Engine arguments:", "    on_error: ValueError: raised when invalid"]
    r = _classify_plain([start, *dump])
    assert r.failed_stage == "none" and r.first_exception is None


def test_a_bare_marker_line_fed_on_its_own_is_seen_like_in_one_piece():
    """Lines fed one at a time (a follower's reads) give the same stages as the whole log, also for
    a marker printed without a logger prefix at the very start of its chunk."""
    lines = [f"(APIServer pid=7) INFO 11-30 06:11:{i % 60:02d} [loader.py:1] step {i}" for i in range(40)]
    lines = ["INFO 11-30 06:11:00 [api_server.py:1] vLLM API server version 0.11.0", *lines]
    lines.append("Application startup complete.")
    c = Classifier()
    for line in lines:
        c.feed(line + "\n")
    whole = _classify_plain(lines)
    assert [m.stage for m in c.finish().stages] == [m.stage for m in whole.stages]
    assert whole.stages[-1].stage == "runtime"


def _classify_plain(lines: list[str]):
    c = Classifier()
    c.feed("\n".join(lines) + "\n")
    return c.finish()


def test_an_empty_log_and_a_foreign_file_each_say_what_they_are():
    """A server that printed nothing died before its first line (the container layer, with that
    layer's advice); a file that is no vLLM log at all is called unknown, with the reason."""
    from k3tui.classify import advice_for, classify_text

    empty = classify_text("")
    assert (empty.failed_stage, empty.evidence.rule) == ("container", "empty-log")
    assert empty.advice == advice_for("container") != ""
    passwd = classify_text("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n")
    assert (passwd.failed_stage, passwd.evidence.rule) == ("unknown", "not-a-vllm-log")
    assert passwd.advice == advice_for("unknown") != ""


def test_the_answer_after_finish_is_the_final_one():
    """``result()`` after ``finish()`` gives the finished answer (what the TUI shows after the run)."""
    c = Classifier()
    c.feed("\n".join(_traceback(5, ["load_model"]) + [_err(5) + "RuntimeError: boom"]) + "\n")
    done = c.finish()
    assert c.result() is done
    assert done.exception_type == "RuntimeError"


# --- the open survivors of the second session's classifier runs (issue 22) --------------------------

_START = "INFO 11-30 06:11:00 [api_server.py:1] vLLM API server version 0.11.0"
_FILLER = [f"INFO 11-30 06:11:{i % 60:02d} [loader.py:1] loading step {i}" for i in range(40)]
"""Forty plain INFO lines: what follows them is past the first 30 lines, parsed only for a sentinel."""


@pytest.mark.parametrize("indent", [" ", "\t", "  ", "    "])
@pytest.mark.parametrize("late", [False, True], ids=["early", "late"])
def test_an_indented_line_quoting_a_root_outside_a_traceback_is_not_one(indent, late):
    """A help text or config dump quoting a failure ("NCCL error …"), indented by any whitespace,
    outside any traceback, is not a failure: early in the log (parsed in full) or later (parsed
    for its sentinel)."""
    dump = ["INFO 11-30 06:11:01 [arg_utils.py:1] Engine arguments:", indent + "NCCL error in: the help text of a flag"]
    r = _classify_plain([_START, *(_FILLER if late else []), *dump])
    assert (r.failed_stage, r.first_exception) == ("none", None)


@pytest.mark.parametrize(
    ("typ", "msg"), [("StopIteration", "the iterator ran dry"), ("StopAsyncIteration", "no more items to stream")]
)
def test_an_exception_type_the_exception_pattern_does_not_know_keeps_type_and_message_apart(typ, msg):
    """A traceback ends in an exception whose type the exception pattern does not name (no
    ``Error``/``Exception`` suffix): the type and the message are still split at ``: ``."""
    tb = [*_traceback(5, ["run_engine"]), _err(5) + f"{typ}: {msg}"]
    r = _classify(tb)
    assert r.exception_type == typ
    assert r.signature.endswith(f"|{typ}|{msg}"), r.signature
    assert r.first_exception.line == tb[-1]


_DEAD = (
    "(APIServer pid=9) ERROR 11-30 06:12:00 [async_llm.py:1] vllm.v1.engine.exceptions.EngineDeadError: "
    "EngineCore encountered an issue. See stack trace (above) for the root cause."
)


def test_a_native_crash_announced_by_its_fatal_error_is_found_even_right_after_a_consequence():
    """The API server's EngineDeadError is printed first (it looks back: no crash yet), then the
    engine's segfault and its ``Fatal Python error``: that error's look-back is not skipped for
    having looked back a few lines earlier, so the segfault line is the root."""
    dump = [
        "",
        "Current thread 0x00007f0000000001 (most recent call first):",
        '  File "/x/vllm/worker.py", line 5 in step',
    ]
    crash = "Segmentation fault (core dumped)"
    r = _classify_plain([_START, *_FILLER, _DEAD, crash, "Fatal Python error: Segmentation fault", *dump])
    assert r.exception_type == "NativeCrash"
    assert r.first_exception.line == crash


def test_a_crash_found_from_its_consequence_stays_the_root_when_the_log_goes_on():
    """A kill line with no sentinel word, then its consequence, then 150 more lines: the look-back
    from the consequence finds the kill (the one at the end of the log would be too far away)."""
    kill = "Killed"
    tail = [f"(APIServer pid=9) INFO 11-30 06:12:{i % 60:02d} [launcher.py:1] shutting down {i}" for i in range(150)]
    r = _classify_plain([_START, *_FILLER, kill, _DEAD, *tail])
    assert r.first_exception is not None and r.first_exception.line == kill
    assert r.exception_type == "NativeCrash"


def test_a_faulthandler_dump_at_the_start_of_an_excerpt_is_the_stack_once():
    """An excerpt that starts with ``Fatal Python error`` and its dump: every dump line joins the
    stack once, in order (none of them opens a traceback of its own)."""
    dump = [
        "Fatal Python error: Segmentation fault",
        "",
        "Current thread 0x00007f0000000001 (most recent call first):",
        '  File "/x/vllm/v1/worker/gpu_model_runner.py", line 5 in execute_model',
        '  File "/x/vllm/v1/engine/core.py", line 9 in step',
    ]
    r = _classify_plain([_START, *dump])
    assert r.first_exception.line == dump[0]
    assert list(r.first_exception.stack) == dump


@pytest.mark.parametrize(("at", "stage"), [(30, "none"), (31, "unknown")])
def test_only_a_logger_line_among_the_first_30_lines_makes_a_server_log(at, stage):
    """A logger's line (a level and a ``[file.py:N]``) says "a server log" when it is one of the
    first 30 lines (always parsed in full, the documented head); later, in a file with nothing
    else of vLLM, it does not."""
    foreign = [f"user{i}:x:{i}:{i}::/home/u{i}:/bin/sh" for i in range(40)]
    lines = [*foreign[: at - 1], "INFO 11-30 06:11:00 [loader.py:1] hello", *foreign[at - 1 :]]
    assert _classify_plain(lines).failed_stage == stage


_KILL9 = (
    "(APIServer pid=9) ERROR 11-30 06:12:00 [core_client.py:1] Engine core initialization failed. "
    "See root cause above. Failed core proc(s): {'EngineCore_0': -9}"
)


def test_a_consequence_that_reports_a_kill_is_the_root_when_nothing_came_before():
    """``Failed core proc(s): {…: -9}``: the engine was SIGKILLed and printed nothing; the client's
    consequence line is the only word of it, so it is the root, of type ``Killed``."""
    r = _classify_plain([_START, _KILL9])
    assert r.failed_stage != "none"
    assert r.first_exception.line == _KILL9
    assert r.exception_type == "Killed"
    assert "|Killed|" in r.signature


@pytest.mark.parametrize(
    ("frames", "stage"),
    [
        ([("model_runner.py", "load_model"), ("model_loader/loader.py", "load_weights")], "weights"),
        ([("engine/llm_engine.py", "step"), ("worker/model_runner.py", "execute_model")], "runtime"),
    ],
)
def test_a_one_line_root_takes_the_stage_of_the_traceback_printed_right_after_it(frames, stage):
    """V0's ``Engine iteration timed out`` names no stage; the same process's traceback printed
    right after it (unprefixed, on stderr) tells where the step hung: its frames decide."""
    # (logged by a file that names no layer: async_llm_engine.py itself would say the serving loop ran)
    root = "ERROR 11-30 06:12:00 [engine.py:68] Engine iteration timed out. This should never happen!"
    tb = ["Traceback (most recent call last):"]
    for path, func in frames:
        tb += [f'  File "/x/vllm/{path}", line 10, in {func}', "    wait()"]
    tb += ["RuntimeError: the step never returned", ""]
    r = _classify_plain([_START, *_FILLER, root, *tb, *_FILLER])
    assert r.first_exception.line == root
    assert (r.failed_stage, r.evidence.rule) == (stage, "frames"), r.evidence


@pytest.mark.parametrize(
    ("line", "typ"),
    [
        ("Segmentation fault (core dumped)", "NativeCrash"),
        ("Killed", "NativeCrash"),
        ("Fatal Python error: Aborted", "FatalError"),
        (_KILL9, "Killed"),
    ],
)
def test_a_crash_on_the_first_line_is_the_process_start(line, typ):
    """A native crash, a kill or a fatal interpreter error as the log's very first line: the
    process died before printing anything, which is the process start (not the runtime that a
    crash's type alone would suggest, nor a guess)."""
    r = _classify_text([line])
    assert r.exception_type == typ
    assert r.failed_stage == "container"
    assert (r.evidence.rule, r.evidence.confidence) == ("markers", "medium"), r.evidence
    assert "before printing anything" in r.evidence.why


def _classify_text(lines: list[str]):
    from k3tui.classify import classify_text

    return classify_text("\n".join(lines) + "\n")


def test_a_healthy_log_says_why_it_is_none():
    """No root: the evidence is the "no root" verdict, saying so in words."""
    r = _classify_plain([_START, *_FILLER])
    assert r.failed_stage == "none"
    assert (r.evidence.stage, r.evidence.rule, r.evidence.confidence) == ("none", "no-root", "medium")
    assert r.evidence.why == "no root failure in the log"


@pytest.mark.parametrize("indent", ["  ", " ", "\t", "    "])
def test_a_quoted_pydantic_block_is_unwrapped_whatever_its_indentation(indent):
    """An excerpt quoting only pydantic's header and its ``Value error, …`` line (no traceback),
    indented by any whitespace: the Value error line is the root, the header its context."""
    header = "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig"
    value = (
        indent + "Value error, Cannot find the config file for awq [type=value_error, input_value=1, input_type=int]"
    )
    r = _classify_plain([_START, header, value])
    assert r.first_exception.line == value
    assert r.first_exception.context == header
    assert r.failed_stage == "config"


# --- the limits, each at its edge (the documented constants of classifier.py) ----------------------


def _worker(p: int) -> str:
    return f"(Worker_TP{p} pid={100 + p}) ERROR 11-30 06:12:00 [multiproc_executor.py:1] "


def _other_info(i: int) -> str:
    return f"(APIServer pid=9) INFO 11-30 06:11:{i % 60:02d} [loader.py:1] step {i}"


def _loading_tb(p: int) -> list[str]:
    """A worker's traceback through the weights loader, closed by a blank record (5 lines)."""
    w = _worker(p)
    return [
        w + "Traceback (most recent call last):",
        w + '  File "/x/vllm/model_executor/model_loader/loader.py", line 3, in load_weights',
        w + "    read()",
        w + "RuntimeError: short read",
        w,
    ]


@pytest.mark.parametrize(("length", "kept"), [(65536, 65536), (65537, 65536)])
def test_a_line_is_kept_up_to_64_kib(length, kept):
    """The root line as printed, up to 65,536 characters; the rest of a longer line is dropped."""
    line = ("ValueError: " + "a long message " * 5000)[:length]
    r = _classify_plain([_START, line])
    assert r.first_exception.line == line[:kept]


@pytest.mark.parametrize(("close_at", "borrowed"), [(50, True), (51, False)])
def test_a_native_crash_waits_50_lines_for_the_traceback_that_tells_its_stage(close_at, borrowed):
    """A native crash has no stack: a traceback of the same incident that is over within 50 lines
    after it lends its frames (here: the weights loader); one that ends later does not."""
    crash = "*** SIGSEGV received at time=1764484320 on cpu 3 ***"
    gap = [_other_info(i) for i in range(close_at - 5)]
    r = _classify_plain([_START, crash, *gap, *_loading_tb(1)])
    assert (r.exception_type, r.first_exception.line) == ("NativeCrash", crash)
    assert (r.failed_stage == "weights") is borrowed, r.evidence
    assert (r.evidence.rule == "frames") is borrowed


@pytest.mark.parametrize(("distance", "header"), [(50, True), (51, False)])
def test_a_traceback_takes_the_error_line_at_most_50_lines_before_it_as_its_header(distance, header):
    """``logger.exception``'s message is logged right before its traceback; other processes' lines
    may come in between, up to 50 lines."""
    head = _worker(2) + "Error executing method 'load_model'. This might cause deadlock in distributed execution."
    tb = _loading_tb(2)
    r = _classify_plain([_START, head, *[_other_info(i) for i in range(distance - 1)], *tb])
    assert r.first_exception.line == tb[3]
    assert list(r.first_exception.stack) == ([head] if header else []) + tb[:4]


def test_a_thirty_third_open_traceback_drops_the_oldest():
    """At most 32 tracebacks are assembled at once: when a 33rd opens, the oldest is given up, so
    its exception line, when it comes, is a root without its frames."""
    heads, frames, excs = _workers(33)
    r = _classify([*heads, *frames, *excs])
    assert r.first_exception.line == excs[0]
    assert list(r.first_exception.stack) == [excs[0]]


@pytest.mark.parametrize(("distance", "unwrapped"), [(200, True), (201, False)])
def test_a_wrapper_waits_200_lines_for_the_line_it_wraps(distance, unwrapped):
    """``RayTaskError(ValueError)`` is reported as the ``ValueError`` line it wraps when that line
    comes within 200 lines (other processes' lines in between); later, the wrapper stays the root."""
    p = "(APIServer pid=9) ERROR 11-30 06:12:00 [ray_utils.py:1] "
    wrapper = p + "ray.exceptions.RayTaskError(ValueError): ray::RayWorkerWrapper.execute_method() (pid=77)"
    inner = p + "ValueError: the inner failure"
    others = [f"(Other pid=3) INFO 11-30 06:11:00 [loader.py:1] step {i}" for i in range(distance - 1)]
    r = _classify_plain([_START, wrapper, *others, inner])
    if unwrapped:
        assert (r.first_exception.line, r.first_exception.context) == (inner, wrapper)
    else:
        assert (r.first_exception.line, r.first_exception.context) == (wrapper, None)


@pytest.mark.parametrize(("distance", "found"), [(100, True), (101, False)])
def test_a_consequence_looks_back_100_lines_for_the_kill(distance, found):
    """``Killed`` carries no sentinel word: EngineDeadError looks back 100 lines for it."""
    others = [_other_info(i) for i in range(distance - 1)]
    r = _classify_plain([_START, *_FILLER, "Killed", *others, _DEAD])
    assert (r.first_exception is not None and r.first_exception.line == "Killed") is found


@pytest.mark.parametrize(("filler", "found"), [(65528, True), (65529, False)])
def test_a_consequence_looks_back_64_kib_for_the_kill(filler, found):
    """The look-back also stops 65,536 characters back: ``Killed\\n`` and one long line of
    ``filler`` characters with its newline fill exactly that window when filler is 65,528."""
    r = _classify_plain([_START, *_FILLER, "Killed", "x" * filler, _DEAD])
    assert (r.first_exception is not None and r.first_exception.line == "Killed") is found


# --- the live view, the end of the log, and text that is not plain ASCII ---------------------------


def test_the_live_view_shows_the_root_before_finish_and_finish_twice_gives_one_answer():
    """``result()`` while the log is still being fed already holds the announced root; calling
    ``finish()`` again returns the same answer (the TUI and the recorder both ask)."""
    tb = [*_traceback(5, ["load_model"]), _err(5) + "RuntimeError: boom", _err(5)]
    c = Classifier()
    c.feed("\n".join([_START, *tb]) + "\n")
    live = c.result()
    assert live is not None and live.exception_type == "RuntimeError"
    assert live.first_exception.line == tb[-2]
    done = c.finish()
    assert c.finish() is done


def test_a_kill_found_only_at_the_end_keeps_its_own_line_number():
    """The log ends with ``Killed`` (no sentinel word, no consequence after it): the look-back at
    the end finds it, and reports the line it is on."""
    lines = [_START, *_FILLER, "Killed"]
    r = _classify_plain(lines)
    assert r.first_exception.line == "Killed"
    assert r.first_exception.line_number == len(lines)


def test_a_kill_printed_right_after_a_consequence_is_found_at_the_end():
    """The API server reports the engine dead (its look-back finds nothing yet), then the shell
    prints ``Killed`` as the log's last line: the look-back at the end is not skipped for having
    looked back one line earlier, so the kill is the root."""
    r = _classify_plain([_START, *_FILLER, _DEAD, "Killed"])
    assert r.first_exception is not None and r.first_exception.line == "Killed"
    assert r.exception_type == "NativeCrash"


def test_a_broken_vllm_c_warning_is_the_root_when_the_api_started_but_never_served():
    """A vllm._C import warning and nothing failing after it: while the server never became ready
    (here it got as far as starting the API server) the warning is the root."""
    warn = (
        "WARNING 11-30 06:11:02 [_custom_ops.py:11] Failed to import from vllm._C with "
        "ImportError('libcudart.so.12: cannot open shared object file: No such file or directory')"
    )
    api = "INFO 11-30 06:11:30 [api_server.py:1] Starting vLLM API server on http://0.0.0.0:8000"
    r = _classify_plain([_START, warn, *_FILLER, api])
    assert [m.stage for m in r.stages][-1] == "api"
    assert r.first_exception is not None and r.first_exception.line == warn
    assert r.failed_stage == "container"


@pytest.mark.parametrize("count", [1, 200, 2000])
def test_a_character_whose_lower_case_is_longer_does_not_shift_the_prefilter(count):
    """``İ`` lowers to two characters: a chunk holding it is not searched through its lowered
    copy (the offsets would be off), so an ERROR line after lines with no sentinel is still found."""
    plain = [f"progress {i} of 40" for i in range(40)]
    error = "(APIServer pid=9) ERROR 11-30 06:12:00 [x.py:1] RuntimeError: boom"
    name = "INFO 11-30 06:11:01 [x.py:1] served model name " + "İ" * count
    r = _classify_plain([_START, name, *plain, error, *plain])
    assert r.first_exception is not None and r.first_exception.line == error
    assert r.first_exception.line_number == 3 + len(plain)


def test_a_partial_line_without_an_end_is_kept_to_64_kib_only():
    """Bounded memory: 2 MiB of text with no newline, fed in 16 KiB pieces (binary garbage, a
    stuck progress bar), holds at most one capped line, not the whole of it."""
    import tracemalloc

    c = Classifier()
    c.feed(_START + "\n")
    piece = "garbage " * 2048
    tracemalloc.start()
    try:
        for _ in range(128):
            c.feed(piece)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    assert c.finish().failed_stage == "none"


@pytest.mark.parametrize("where", [0, 35, 39])
def test_the_word_vllm_anywhere_makes_a_server_log(where):
    """No logger line, no marker, no root: a file that says ``vllm`` anywhere (a path in a plain
    stderr capture, past the first 30 lines too) is a vLLM log with no failure, not an unknown one."""
    lines = [f"progress {i} of 40" for i in range(40)]
    lines[where] = "loading the model from /opt/VLLM/models/tiny"
    c = Classifier()
    c.feed("\n".join(lines[:20]) + "\n")
    c.feed("\n".join(lines[20:]) + "\n")
    assert c.finish().failed_stage == "none"
    lines[where] = "loading the model from /opt/models/tiny"
    assert _classify_plain(lines).failed_stage == "unknown"


@pytest.mark.parametrize(("processes", "header"), [(256, True), (257, False)])
def test_the_error_lines_kept_as_headers_are_bounded_to_256_processes(processes, header):
    """Each process's last ERROR line is kept as the header of a traceback that may follow; the
    map is bounded: at the 257th process it starts over (the newest header is lost with the rest)."""

    def w(p: int) -> str:
        return f"(Worker pid={p}) ERROR 11-30 06:12:00 [w.py:1] "

    pids = range(1000, 1000 + processes)
    heads = [w(p) + f"Error executing method 'load_model' on worker {p}" for p in pids]
    last = pids[-1]
    tb = [
        w(last) + "Traceback (most recent call last):",
        w(last) + '  File "/x/vllm/worker.py", line 3, in load_model',
        w(last) + "    go()",
        w(last) + "RuntimeError: boom",
    ]
    r = _classify_plain([_START, *heads, *tb])
    assert r.first_exception.line == tb[-1]
    assert list(r.first_exception.stack) == ([heads[-1]] if header else []) + tb


def test_a_traceback_ending_in_a_consequence_is_not_a_native_crash_s_evidence():
    """After a segfault, a traceback whose exception (with two continuation lines under it) is a
    consequence (EngineDeadError) is the crash's echo, not the step that crashed: its frames do not
    decide the stage."""
    crash = "*** SIGSEGV received at time=1764484320 on cpu 3 ***"
    w = "(Worker_TP1 pid=101) ERROR 11-30 06:12:00 [multiproc_executor.py:1] "
    tb = [
        w + "Traceback (most recent call last):",
        w + '  File "/x/vllm/model_executor/model_loader/loader.py", line 3, in load_weights',
        w + "    read()",
        w + "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
        w + "  detail one",
        w + "  detail two",
        w,
    ]
    r = _classify_plain([_START, crash, *tb])
    assert (r.exception_type, r.first_exception.line) == ("NativeCrash", crash)
    assert r.evidence.rule != "frames" and r.failed_stage != "weights", r.evidence
    echo = [*tb[:3], w + "RuntimeError: short read", *tb[4:]]  # the same traceback ending in a failure
    assert _classify_plain([_START, crash, *echo]).failed_stage == "weights"


def test_a_quoted_pydantic_block_waits_past_another_process_s_line():
    """Another process's record printed between pydantic's header and its ``Value error, …``
    line does not end the wait: the Value error line is still the root, the header its context."""
    header = "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig"
    other = "(APIServer pid=9) INFO 11-30 06:11:02 [launcher.py:1] waiting for the engine"
    value = "  Value error, Cannot find the config file for awq [type=value_error, input_value=1, input_type=int]"
    r = _classify_plain([_START, header, other, value])
    assert (r.first_exception.line, r.first_exception.context) == (value, header)


@pytest.mark.parametrize("lines", [1, 2, 31])
def test_a_foreign_file_of_any_length_is_unknown(lines):
    """One line, two, past the head: a file with nothing of vLLM in it is no server log."""
    passwd = [f"user{i}:x:{i}:{i}::/home/u{i}:/bin/sh" for i in range(lines)]
    r = _classify_plain(passwd)
    assert (r.failed_stage, r.evidence.rule) == ("unknown", "not-a-vllm-log")


def test_a_start_up_marker_alone_past_the_head_makes_a_server_log():
    """No vllm word and no logger line in the first 30 lines, but a config-stage marker later: a
    server log that reached its configuration, with no failure."""
    plain = [f"progress {i} of 40" for i in range(40)]
    marker = "INFO 11-30 06:11:00 [arg_utils.py:1] Resolved architecture: LlamaForCausalLM"
    r = _classify_plain([*plain, marker, *plain])
    assert [m.stage for m in r.stages] == ["container", "config"]
    assert r.failed_stage == "none"


# --- a root's chained tracebacks (``The above exception was the direct cause …``) -------------------

_EC = "(EngineCore_DP0 pid=395) ERROR 10-24 11:24:57 [core.py:710] "
_OTHER = "(Worker_TP1 pid=396) INFO 10-24 11:24:57 [worker.py:1] still waiting"


def _chain_tb(frames: list[tuple[str, str]], exc: str) -> list[str]:
    out = [_EC + "Traceback (most recent call last):"]
    for path, func in frames:
        out += [_EC + f'  File "/x/vllm/{path}", line 10, in {func}', _EC + f"    {func}_inner()"]
    return [*out, _EC + exc]


_CAUSE = [_EC, _EC + "The above exception was the direct cause of the following exception:", _EC]
_SHM = _chain_tb(
    [("distributed/device_communicators/shm_broadcast.py", "acquire_read")], "TimeoutError: no reply in 60 s"
)
_BUSY = _chain_tb(
    [("v1/engine/core.py", "run_engine_core"), ("v1/engine/core.py", "run_busy_loop")],
    "RuntimeError: the engine step failed",
)


def _middle(i: int) -> list[str]:
    return _chain_tb([("utils/helpers.py", f"helper_{i}")], f"RuntimeError: wrapped {i}")


@pytest.mark.parametrize(("depth", "stage"), [(0, "engine"), (1, "runtime"), (4, "runtime"), (5, "engine")])
def test_the_chained_tracebacks_give_the_roots_callers_up_to_four(depth, stage):
    """A timeout in the shared-memory broadcast (distributed code: engine by its own frames) that
    Python chained, through ``depth - 1`` other tracebacks, to the engine's busy loop: up to four
    chained tracebacks are followed, and the busy loop says it happened while serving."""
    lines = [_START, *_SHM]
    for i in range(depth - 1):
        lines += [*_CAUSE, *_middle(i)]
    if depth:
        lines += [*_CAUSE, *_BUSY]
    r = _classify_plain([*lines, _EC])
    assert r.first_exception.line == _SHM[-1]
    assert r.failed_stage == stage, r.evidence
    assert r.evidence.rule == "frames"
    assert ("run_busy_loop" in r.evidence.why) is (stage == "runtime")


_OWN = "(EngineCore_DP0 pid=395) INFO 10-24 11:24:57 [core.py:1] still waiting"


@pytest.mark.parametrize(
    ("others", "own", "followed"),
    [
        (0, 0, True),
        (0, 1, True),
        (0, 2, False),
        (2, 0, True),
        (8, 0, True),
        (8, 1, True),
        (8, 2, False),
        (9, 0, True),
        (10, 0, False),
    ],
)
def test_a_chain_sentence_counts_within_three_lines_of_the_traceback(others, own, followed):
    """Lines between the root's traceback and Python's "The above exception …": the sentence is the root's chain up
    to three of its own process's lines after its last line (blank line included). Another process's lines (a
    worker logging meanwhile) are not counted, up to eight of them (MAX_BETWEEN); past eight they count as the
    process's own, so a flood of them ends the chain."""
    lines = [_START, *_SHM, _EC, *[_OWN] * own, *[_OTHER] * others, *_CAUSE[1:], *_BUSY, _EC]
    r = _classify_plain(lines)
    assert r.first_exception.line == _SHM[-1]
    assert (r.failed_stage == "runtime") is followed, r.evidence


def test_a_chained_traceback_interleaved_with_other_processes_is_followed_to_the_next():
    """Four lines of another process in the middle of the first chained traceback do not end the
    following: the traceback chained after it (the busy loop) still gives the callers."""
    middle = _middle(0)
    lines = [_START, *_SHM, *_CAUSE, *middle[:2], *[_OTHER] * 4, *middle[2:], *_CAUSE, *_BUSY, _EC]
    r = _classify_plain(lines)
    assert r.first_exception.line == _SHM[-1]
    assert r.failed_stage == "runtime", r.evidence


@pytest.mark.parametrize("where", ["", "enqueue.cc:267 "])
def test_an_nccl_warn_failure_is_not_the_root_of_the_error_it_causes(where):
    """NCCL's own ``NCCL WARN Cuda failure …`` line (with or without its source location) comes
    before the Python error it causes: the project reads that error as the root (as its demo
    scenarios do), NCCL's line as evidence."""
    nccl = f"node1:395:400 [0] {where}NCCL WARN Cuda failure 'dependency created on uncaptured work in another stream'"
    error = (
        "(Worker_TP0 pid=395) ERROR 11-30 06:12:00 [multiproc_executor.py:1] "
        "RuntimeError: CUDA error: operation failed due to a previous error during capture"
    )
    r = _classify_plain([_START, nccl, *_FILLER, error])
    assert r.first_exception.line == error  # NCCL's line is evidence; the exception it causes is the root


def test_the_first_engine_death_the_client_reports_is_the_root():
    """Two clients report their engine dead, then a call into it fails: the first report is the root."""
    p = "ERROR 11-30 06:12:00 [core_client.py:1] Engine core proc EngineCore_{} died unexpectedly, shutting down client."
    first, second = "(APIServer pid=9) " + p.format(0), "(APIServer pid=10) " + p.format(1)
    r = _classify_plain([_START, *_FILLER, first, second, _DEAD])
    assert (r.first_exception.line, r.exception_type) == (first, "WorkerDied")


def test_an_oom_ending_another_process_s_traceback_is_seen_but_not_the_root():
    """A second process's traceback ends in an out-of-memory error after the root (a different
    failure): it is reported as seen, not the cause (False); at INFO level it is not seen (None)."""
    tb = [*_traceback(77, ["load_model"]), _err(77) + "RuntimeError: the real failure", _err(77)]
    oom = [*_traceback(78, ["free_cache"]), _err(78) + "torch.OutOfMemoryError: CUDA out of memory.", _err(78)]
    r = _classify([*tb, *oom])
    assert r.first_exception.line == tb[-2]
    assert r.oom_root_cause is False
    quiet = [x.replace(") ERROR ", ") INFO ") for x in oom]
    assert _classify([*tb, *quiet]).oom_root_cause is None


def test_a_kill_after_the_operator_s_stop_and_a_cut_traceback_is_no_failure():
    """``shutdown triggered``, a traceback cut by the stop, then ``Killed`` (the grace period
    ran out): the operator stopped the server; nothing failed."""
    ready = "(APIServer pid=9) INFO 11-30 06:12:30 [api_server.py:1] Application startup complete."
    stop = "(APIServer pid=9) INFO 11-30 06:13:00 [launcher.py:254] [shutdown] API server: shutdown triggered"
    cut = _traceback(5, ["run_busy_loop"])
    for before in ([], _FILLER):  # in the first 30 lines (every line parsed) and past them
        r = _classify([ready, *before, stop, *cut, "Killed"])
        assert (r.failed_stage, r.first_exception) == ("none", None)


def test_the_header_logged_before_a_traceback_says_when_it_happened():
    """``EngineCore encountered a fatal error.`` logged right before a traceback whose frames name
    no layer: the header's wording (the engine was serving) decides, pointing at the header's line."""
    p = "(EngineCore_0 pid=5) ERROR 11-30 06:12:00 [core.py:700] "
    tb = [
        p + "Traceback (most recent call last):",
        p + '  File "/x/lib/helpers.py", line 10, in helper',
        p + "    go()",
    ]
    r = _classify_plain([_START, p + "EngineCore encountered a fatal error.", *tb, p + "KeyError: 'slot'", p])
    assert (r.failed_stage, r.evidence.rule, r.evidence.lines) == ("runtime", "wording", (2,)), r.evidence


def test_a_pydantic_error_in_a_traceback_is_announced_when_the_traceback_ends():
    """pydantic's header ends a traceback with no ``Value error`` line under it (a field error):
    once the traceback is over the root is announced live, not 200 lines later."""
    from k3tui.events import ExceptionFound

    p = "(EngineCore_0 pid=5) ERROR 11-30 06:12:00 [core.py:700] "
    tb = [
        p + "Traceback (most recent call last):",
        p + '  File "/x/vllm/config.py", line 10, in __init__',
        p + "    validate()",
        p + "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
        p + "max_logprobs",
        p + "  Input should be a number",
        p,
        "(APIServer pid=9) INFO 11-30 06:12:01 [api_server.py:1] waiting",
    ]
    seen: list = []
    c = Classifier(emit=seen.append)
    c.feed("\n".join([_START, *tb]) + "\n")
    assert [e for e in seen if isinstance(e, ExceptionFound)], "announced once the traceback ended"


def test_a_healthy_log_gets_the_advice_for_no_failure():
    """No root failure: the advice is the one for ``none`` (move up one rung), not an empty line."""
    from k3tui.classify import advice_for

    r = _classify_plain([_START, *_FILLER])
    assert r.failed_stage == "none"
    assert r.advice == advice_for("none") != ""


def test_a_healthy_log_that_served_is_no_failure_with_high_confidence():
    """No root and the API was ready: high confidence; no root before it was ever ready: medium."""
    ready = "INFO 11-30 06:12:30 [api_server.py:1] Application startup complete."
    assert _classify_plain([_START, *_FILLER, ready]).confidence == "high"
    assert _classify_plain([_START, *_FILLER]).confidence == "medium"


def test_a_window_that_mentions_every_crash_word_still_finds_the_kill():
    """INFO lines that happen to mention every crash word (a help text, a config dump) sit before
    a real ``Killed``: the look-back from the consequence still finds the kill."""
    from k3tui.classify.rules import load_rules

    words = [f"INFO 11-30 06:11:00 [help.py:1] glossary: {w}" for w in load_rules().crash_needles]
    r = _classify_plain([_START, *_FILLER, *words, "Killed", _DEAD])
    assert r.first_exception is not None and r.first_exception.line == "Killed"


# --- the run with seed 1003481173 (classifier.py at 2e15ff2: 25/30) ------------------------------


def test_a_pydantic_field_line_that_lost_its_indentation_is_still_the_root() -> None:
    """305:15: an excerpt quoting pydantic's header, then its ``Value error, …`` line unindented (markdown
    ate the indentation): the field line carries the message (the corpus' reading), the header is its
    context. The mutant that found it gave the better answer; the code now does too."""
    head = "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
    field = (
        "Value error, Invalid repository ID [type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]\n"
    )
    for pad in (0, 40):  # in the first lines, and past them
        res = classify_text("INFO 10-01 10:00:00 [api_server.py:1] vLLM API server version 0.11\n" * pad + head + field)
        assert res.first_exception is not None and res.first_exception.line.startswith(
            "Value error, Invalid repository"
        )
        assert res.first_exception.context is not None and "ValidationError" in res.first_exception.context
        assert res.failed_stage == "config"


def test_a_cut_traceback_after_the_server_was_ready_is_a_runtime_failure() -> None:
    """489:8: the cut traceback's root keeps the stages reached before it (the API was ready)."""
    log = (
        "INFO 10-01 10:00:00 [loader.py:1] Starting to load model /m\n"
        "INFO:     Application startup complete.\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/asyncio/runners.py", line 118, in run\n'
        "    return self._loop.run_until_complete(task)\n"
    )
    res = classify_text(log)
    assert res.first_exception is not None and res.first_exception.line_number == 3
    assert (res.failed_stage, res.evidence.rule) == ("runtime", "api-ready")


def test_a_quoted_worker_failure_without_a_type_is_named_startup_failed() -> None:
    """529:65: the one-line report of a failed start-up, quoted without ``RuntimeError:``, names a layer
    by what it quotes; its type in the signature (what groups incidents) is ``StartupFailed``."""
    line = "Worker failed with error 'Cannot access gated repo for url https://huggingface.co/x', please check the stack trace above for the root cause\n"
    res = classify_text(line)
    assert (res.failed_stage, res.exception_type) == ("weights", "StartupFailed")
    assert res.signature.startswith("weights|StartupFailed|")


def test_a_native_crash_looks_back_for_an_earlier_crash_line() -> None:
    """544:34: a native crash read by its sentinel (``CUDA error (file:N)``) looks back: the double free
    printed just before it (no sentinel, so never read on its own) is where the incident began."""
    noise = "INFO 10-01 10:00:00 [core.py:1] Added request r\n" * 40
    log = (
        noise
        + "free(): double free detected in tcache 2\n"
        + "CUDA error (flash_fwd_launch_template.h:60): invalid argument\n"
    )
    res = classify_text(log)
    assert res.first_exception is not None and res.first_exception.line.startswith("free(): double free")
    assert res.first_exception.line_number == 41


def test_an_nccl_warn_line_that_names_an_nccl_error_is_not_the_root() -> None:
    """Seed 1550040668, 377:23: NCCL's own WARN line is evidence; Python raises the root after it."""
    warn = "gb300-01:1234:1250 [0] NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory: ncclSystemError\n"
    exc = "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error\n"
    res = classify_text(warn + exc)
    assert res.first_exception is not None and res.first_exception.line.startswith("RuntimeError: NCCL error")
    assert res.first_exception.line_number == 2

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


def test_thirty_two_tracebacks_open_at_once_keep_the_first_ones_stack():
    """TP=8 x DP=4 workers print their tracebacks at the same time: the first worker's exception,
    printed after all 32 opened, is the root with its whole stack."""
    pids = list(range(100, 132))
    heads = [_err(p) + "Traceback (most recent call last):" for p in pids]
    frames = [_err(p) + f'  File "/x/vllm/v1/worker/w.py", line {p}, in step_{p}' for p in pids]
    excs = [_err(p) + f"RuntimeError: worker {p} failed" for p in pids]
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

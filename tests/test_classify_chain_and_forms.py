"""Issue 13, fifth session: forms found in fresh excerpts (298-382), each on the real log that showed it.

Every log here is a labelled corpus log (``tests/data/corpus/vllm-issues``), in its tuned part.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import Classifier, classify_text
from k3tui.classify.layers import Evidence, decide
from k3tui.classify.lines import clean
from k3tui.classify.rules import load_rules
from k3tui.events import ExceptionFound
from tests.support.corpus import issue_text


def test_a_chained_traceback_gives_the_roots_callers() -> None:
    """A bare TimeoutError in shm_broadcast (distributed code: engine by its own frames) that Python
    chained to the engine's busy loop: the callers say it happened while serving."""
    res = classify_text(issue_text("301.log"))
    assert res.first_exception is not None and res.first_exception.line.endswith("TimeoutError")
    assert res.failed_stage == "runtime" and res.evidence.rule == "frames"
    assert "run_busy_loop" in res.evidence.why or "_process_engine_step" in res.evidence.why


def test_the_root_is_announced_live_before_its_chain_and_the_result_uses_the_chain() -> None:
    lines = issue_text("306.log").splitlines()
    root_at = next(i for i, x in enumerate(lines) if x.endswith("] TimeoutError"))
    seen: list = []
    c = Classifier(emit=seen.append)
    for line in lines[: root_at + 1]:
        c.feed_line(line)
    c.feed_line(lines[root_at + 1])  # one more line: a bare exception waits for what it causes
    for line in lines[root_at + 2 :]:
        c.feed_line(line)
    res = c.finish()
    found = [e for e in seen if isinstance(e, ExceptionFound)]
    assert len(found) == 1 and found[0].line_number == root_at + 1
    assert res.failed_stage == "runtime"


def test_a_chain_sentence_with_no_traceback_after_it_changes_nothing() -> None:
    text = issue_text("301.log")
    cut = text[: text.index("Traceback (most recent call last)")]
    assert classify_text(cut).failed_stage == "engine"  # shm_broadcast alone: distributed code


def test_a_method_named_without_quotes_keeps_its_first_letter() -> None:
    """'Error executing method warm_up_model' (V0's Ray workers, 350.log): the method is the warm-up,
    and it is the OUTERMOST frame: the stack under it decides (init_device -> NCCL init is engine)."""
    rules = load_rules()
    ev = Evidence("Error executing method warm_up_model. This might cause deadlock in distributed execution.", 4)
    v = decide(rules, ev)
    assert (v.stage, v.rule) == ("engine", "frames") and "method warm_up_model" in v.why
    stack = [
        '  File "/usr/lib/python3/site-packages/vllm/worker/worker.py", line 99, in init_device',
        '  File "/usr/lib/python3/site-packages/vllm/worker/worker.py", line 320, in init_worker_distributed_environment',
    ]
    ev = Evidence("Exception in worker W while processing method init_device: NCCL error", 1, stack, [2, 3])
    assert decide(rules, ev).stage == "engine"  # not the device: the method is outside the NCCL init


def test_an_nccl_warn_line_is_evidence_and_the_exception_it_causes_is_the_root() -> None:
    """The project's reading (and its demo scenarios'): NCCL's WARN line is not the root when Python's
    own exception line says what failed; the stage comes from that failure. (Since session 17, when
    Python's traceback was cut before its exception line, as in 350 and 521, NCCL's line is the root and
    the traceback its context: tests/test_classify_17.py.)"""
    warn = (
        "node004:27907:27907 [1] misc/shmutils.cc:113 NCCL WARN Error while creating shared memory segment /dev/shm/x\n"
    )
    tb = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/site-packages/vllm/worker/worker.py", line 99, in init_device\n'
        '  File "/usr/lib/python3/site-packages/vllm/worker/worker.py", line 320, in init_worker_distributed_environment\n'
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
    )
    res = classify_text(warn + tb)
    assert res.failed_stage == "engine" and res.first_exception.line.startswith("RuntimeError: NCCL error"), res
    for name in ("350.log", "521.log"):
        res = classify_text(issue_text(name))
        assert res.failed_stage == "engine" and res.first_exception.context is not None, name


def test_no_platform_detected_at_info_is_the_root() -> None:
    res = classify_text(issue_text("379.log"))
    assert res.failed_stage == "device"
    assert res.first_exception is not None and "No platform detected" in res.first_exception.line


def test_an_added_request_means_the_engine_was_serving() -> None:
    for name in ("298.log", "299.log"):
        res = classify_text(issue_text(name))
        assert res.failed_stage == "runtime", name


def test_an_error_set_in_bold_and_colour_escapes_lost_to_decoding() -> None:
    res = classify_text(issue_text("367.log"))
    assert res.failed_stage == "device" and res.first_exception.line.strip().startswith("**ValueError")
    res = classify_text(issue_text("341.log"))
    assert res.failed_stage == "weights" and "not initialized from checkpoint" in res.first_exception.line


_BODY = st.text(alphabet=st.characters(blacklist_characters="*\n\r\x1b^#\ufffd"), min_size=1)


@given(_BODY.filter(lambda s: not s[0].isspace()))
def test_bold_is_taken_off_a_whole_line_only(body: str) -> None:
    spaced = body.replace("\xa0", " ")  # (no-break spaces read as spaces: a web page's copy)
    assert clean(f"**{body}**") == spaced
    assert clean(f"x **{body}**") == f"x **{spaced}**"
    if _BOLD_HEAD_SHAPE.fullmatch(body):  # a log line's prefix in bold, the rest not: only the prefix's bold goes
        assert clean(f"**{body}** and **{body}**") == f"{spaced} and **{spaced}**"
    else:
        assert clean(f"**{body}** and **{body}**") == f"**{spaced}** and **{spaced}**"


_BOLD_HEAD_SHAPE = re.compile(r"\([^()*\n]{1,80}\)|\[[^\]*\n]{1,80}\]|DEBUG|INFO|WARNING|ERROR|CRITICAL")
"""What a reporter sets in bold as a log line's prefix (a process's name, a bracketed tag, a level)."""


def test_a_bold_prefix_loses_its_bold_and_the_rest_keeps_it() -> None:
    assert clean("**(0)** and **(0)**") == "(0) and **(0)**"
    assert clean("**(Worker pid=1)** ERROR boom") == "(Worker pid=1) ERROR boom"
    assert clean("**ERROR** and **x**") == "ERROR and **x**"


def test_a_quoted_pydantic_error_without_a_traceback_reports_the_field_error() -> None:
    """The field's name sits on its own unindented line between the header and 'Input should …'
    (found by issue 22's mutation run: the header was reported)."""
    text = (
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
        "max_logprobs\n"
        "  Input should be greater than or equal to -1 [type=greater_than_equal, input_value=-2, input_type=int]\n"
    )
    res = classify_text(text)
    assert res.first_exception.line.strip().startswith("Input should be greater than or equal to -1")
    assert "validation error for ModelConfig" in res.first_exception.context
    assert res.failed_stage == "config"


def test_a_one_line_root_follows_the_chain_of_the_traceback_printed_under_it() -> None:
    text = "\n".join(
        [
            "ERROR 01-01 00:00:00 [core.py:1] Exception in worker W while processing method step_x: boom",
            "Traceback (most recent call last):",
            '  File "/x/vllm/distributed/device_communicators/shm_broadcast.py", line 1, in acquire_read',
            "    raise TimeoutError",
            "TimeoutError: timed out",
            "",
            "The above exception was the direct cause of the following exception:",
            "",
            "Traceback (most recent call last):",
            '  File "/x/vllm/v1/engine/core.py", line 1, in run_busy_loop',
            "    self._process_engine_step()",
            "RuntimeError: step failed",
            "",
        ]
    )
    res = classify_text(text)
    assert "while processing method step_x" in res.first_exception.line
    assert (res.failed_stage, res.evidence.rule) == ("runtime", "frames")

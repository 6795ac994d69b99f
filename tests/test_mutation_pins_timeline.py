"""The stage timeline (``k3tui/classify/timeline.py``) behaviours a mutation run found unpinned (issue 22)."""

from __future__ import annotations

from k3tui.classify import STAGES, classify_text

_START = "INFO 11-30 06:11:00 [api_server.py:1] vLLM API server version 0.11.0"
_READY = "INFO 11-30 06:11:09 [launcher.py:1] Application startup complete."
_BROKEN_C = "WARNING 11-30 06:11:01 [_custom_ops.py:20] Failed to import from vllm._C with ImportError('x')"


def test_the_first_line_marks_the_container_stage_at_line_one():
    """A log that has a first line at all says the container started: line 1, the log's own time."""
    r = classify_text(_START + "\n")
    assert (r.stages[0].stage, r.stages[0].line, r.stages[0].time) == (STAGES[0], 1, "11-30 06:11:00")


def test_a_warning_that_would_explain_a_failed_start_is_no_root_once_the_server_was_ready():
    """A broken ``vllm._C`` WARNING is the root when start-up never finished, and nothing at all
    when the server went on to be ready and served."""
    assert classify_text("\n".join([_START, _BROKEN_C]) + "\n").failed_stage != "none"
    ready = classify_text("\n".join([_START, _BROKEN_C, _READY]) + "\n")
    assert ready.failed_stage == "none"
    assert ready.stages[-1].stage == STAGES[-1]

"""Log-line wrappers and logging prefixes (``k3tui/classify/lines.py``) a mutation run found unpinned (issue 22).

Each row is one real way a vLLM line reaches the classifier: what is left of it must be the
message body, with the level that decides whether it can be a root and the log's own time.
"""

from __future__ import annotations

import pytest

from k3tui.classify.lines import parse

CASES = [
    # (raw line, body, level, process, time)
    pytest.param(
        "[2024-09-05T00:38:34Z] ERROR 09-05 00:38:34 [core.py:1] boom",
        "boom", "ERROR", None, "09-05 00:38:34", id="ci-runner-stamp",
    ),
    pytest.param(
        "[2024-09-05T00:38:34Z] vllm-1  | 2024-09-05T00:38:35.123456Z (EngineCore_0 pid=7) ERROR [core.py:1] boom",
        "boom", "ERROR", "EngineCore_0 pid=7", "2024-09-05T00:38:35.123456Z", id="three-wrappers",
    ),
    pytest.param(
        "[2024-09-05T00:38:34Z] 2024-09-05T00:38:34.123Z vllm-1  | 2025-06-27 17:14:23 (APIServer pid=1) "
        "ERROR 11-30 03:33:00 [api_server.py:9] boom",
        "boom", "ERROR", "APIServer pid=1", "11-30 03:33:00", id="four-wrappers",
    ),
    pytest.param(
        "2025-06-27 17:14:23: (EngineCore_0 pid=7) ERROR [core.py:1] boom",
        "boom", "ERROR", "EngineCore_0 pid=7", "2025-06-27 17:14:23", id="reporters-stamp-time",
    ),
    pytest.param("I1130 03:25:31.460 870 run.py:851] started", "started", "INFO", None, "11-30 03:25:31", id="glog-I"),
    pytest.param("W1130 03:25:31.460 870 run.py:851] slow", "slow", "WARNING", None, "11-30 03:25:31", id="glog-W"),
    pytest.param("E1130 03:25:31.460 870 run.py:851] boom", "boom", "ERROR", None, "11-30 03:25:31", id="glog-E"),
    pytest.param("F1130 03:25:31.460 870 run.py:851] dead", "dead", "CRITICAL", None, "11-30 03:25:31", id="glog-F"),
    pytest.param("[E ProcessGroupNCCL.cpp:475] watchdog caught", "watchdog caught", "ERROR", None, None, id="c10-E"),
    pytest.param("[W socket.cpp:663] cannot bind", "cannot bind", "WARNING", None, None, id="c10-W"),
    pytest.param("WARN 11-30 06:12:00 [core.py:70] slow", "slow", "WARNING", None, "11-30 06:12:00", id="WARN-is-WARNING"),
    pytest.param("[2025-01-02 10:00:00] [WARN] [MainThread] >>> slow", "slow", "WARNING", None, "2025-01-02 10:00:00", id="bracketed-WARN"),
    pytest.param(
        "Nov 30 03:29:01 h200-01 vllm[42]: ERROR 11-30 03:29:01 [core.py:1] boom",
        "boom", "ERROR", None, "11-30 03:29:01", id="journald-then-vllm",
    ),
    pytest.param("Nov 30 03:29:01 h200-01 vllm[42]: plain stderr", "plain stderr", None, None, "Nov 30 03:29:01", id="journald-time"),
    pytest.param("[2025-01-02 10:00:00] [FATAL] [MainThread] >>> dead", "dead", "CRITICAL", None, "2025-01-02 10:00:00", id="bracketed-FATAL"),
    pytest.param("ERROR 08-23 08:25:25 1234 worker.py:226] boom", "boom", "ERROR", "pid=1234", "08-23 08:25:25", id="v0-pid"),
    pytest.param("h200-01:123:456 [0] NCCL ERROR unhandled", "unhandled", "ERROR", "NCCL pid=123", None, id="nccl-ERROR"),
    pytest.param("h200-01:123:456 [0] NCCL ABORT comm aborted", "comm aborted", "ERROR", "NCCL pid=123", None, id="nccl-ABORT"),
    pytest.param("h200-01:123:456 [0] NCCL VERSION 2.21.5", "2.21.5", "INFO", "NCCL pid=123", None, id="nccl-other-word-is-INFO"),
    pytest.param("h200-01:123:456 [0] NCCL TRACE ring 0 set up", "ring 0 set up", "INFO", "NCCL pid=123", None, id="nccl-TRACE-is-INFO"),
    pytest.param(
        "2025-01-02 10:00:00,123 - vllm.engine - ERROR - boom",
        "boom", "ERROR", None, "2025-01-02 10:00:00,123", id="dashed-own-time",
    ),
    pytest.param("ERROR:    boom", "boom", "ERROR", None, None, id="uvicorn"),
    pytest.param(
        "(EngineCore_0 pid=7) \ufffd[1;31mERROR\ufffd[0m 11-30 06:12:00 [core.py:1] boom",
        "boom", "ERROR", "EngineCore_0 pid=7", "11-30 06:12:00", id="ESC-decoded-as-U+FFFD",
    ),
    pytest.param(
        "`(APIServer pid=1) ERROR 11-30 03:33:00 [api_server.py:9] boom`",
        "boom", "ERROR", "APIServer pid=1", "11-30 03:33:00", id="inline-code-quoted",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "body", "level", "process", "time"), CASES)
def test_each_wrapper_and_prefix_leaves_the_message_its_level_and_time(raw, body, level, process, time):
    ln = parse(raw)
    assert (ln.body, ln.level, ln.process, ln.time) == (body, level, process, time)


def test_nccl_lines_of_two_processes_are_kept_apart():
    """NCCL's ``host:pid:tid [rank] NCCL WARN`` lines carry no vLLM process prefix: the pid is the
    demultiplexing key, so two processes' NCCL lines never join one traceback or root."""
    a, b = parse("h200-01:123:456 [0] NCCL WARN boom"), parse("h200-01:124:457 [1] NCCL INFO ok")
    assert (a.body, a.level, a.process, a.key) == ("boom", "WARN", "NCCL pid=123", ("", "NCCL pid=123"))
    assert (b.level, b.key) == ("INFO", ("", "NCCL pid=124"))


def test_a_message_that_looks_like_a_second_compose_prefix_keeps_the_service():
    """``docker compose logs`` prefixes each line once: a message that itself starts like
    ``name | `` (a table a tool printed) is the message; the service, the demultiplexing key, stays
    the one compose named."""
    ln = parse("vllm-1  | GPU0 | 80GB | in use")
    assert (ln.body, ln.key) == ("GPU0 | 80GB | in use", ("vllm-1", ""))


@pytest.mark.parametrize(("end", "raw_end"), [("\r", ""), ("^M", "^M")], ids=["CR", "literal-^M"])
def test_a_line_ending_is_not_part_of_the_message(end, raw_end):
    """A CRLF log's ``\\r`` and a copied literal ``^M``: neither is in the body; the line as printed
    (what labels quote) loses the CR and keeps the literal ``^M`` it showed."""
    line = "(APIServer pid=1) ERROR 11-30 03:33:00 [api_server.py:9] boom"
    ln = parse(line + end)
    assert (ln.raw, ln.body, ln.level) == (line + raw_end, "boom", "ERROR")


def test_a_debug_line_with_error_text_is_never_a_failure() -> None:
    """Seed 644136566, 73:26: DEBUG is a quiet level like INFO and WARNING (vLLM's debug logging
    prints exceptions it handled)."""
    from k3tui.classify import classify_text

    log = (
        "INFO 10-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
        "DEBUG 10-01 10:00:01 [utils.py:1] RuntimeError: handled while probing the platform, retrying\n"
    )
    res = classify_text(log)
    assert res.failed_stage == "none" and res.first_exception is None

"""Issue 13, fifteenth session.

A text in which nothing fails but a Python exception is reported all the same (one request refused
and answered, an exception a destructor raised at the interpreter's exit, a client's 400) is a
program's log: ``none``, not "not a vLLM log". Every other exception line already makes a text a log
(it is the root), so the rule only stops a log with no failure from being called no log at all.
Plain text with no exception in it (``/etc/passwd``) is still ``unknown`` (exit 3).

Each on generated excerpts and on real logs of the tuned part; each fails without its change.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import issue_text

PLAIN = st.lists(
    st.sampled_from(
        [
            "Here is what I see:",
            "Prompt: 'Hello, my name is', Generated text: ' Dustin and I like'",
            "the run finished",
            "Duration: 0.25",
            "root:x:0:0:root:/root:/bin/bash",
        ]
    ),
    max_size=4,
)
NO_FAILURE = st.sampled_from(
    [
        # one request refused and answered: the server goes on
        "ValueError: As of transformers v4.44, default chat template is no longer allowed, so you must "
        "provide a chat template if the tokenizer does not define one.",
        "openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': 'pooled_data should be "
        "a 1-D embedding vector', 'type': 'BadRequestError', 'param': None, 'code': 400}",
        "ValueError: This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
        "(4000 in the messages, 1000 in the completion).",
        # raised while the interpreter exits: noise, reported and ignored
        "Exception ignored in: <function TCPStore.__del__ at 0x7f930d38e8c0>\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/dist-packages/cupyx/distributed/_store.py", line 59, in __del__\n'
        "TypeError: 'NoneType' object is not callable",
        "RuntimeError: cannot schedule new futures after interpreter shutdown",
    ]
)
FENCE = st.sampled_from([("", ""), ("```\n", "\n```"), ("`", "`")])


@given(before=PLAIN, report=NO_FAILURE, after=PLAIN, fence=FENCE)
def test_an_exception_reported_without_a_failure_makes_a_log_with_none(before, report, after, fence) -> None:  # noqa: ANN001
    if fence[0] == "`" and "\n" in report:
        fence = ("", "")  # (inline code holds one line)
    text = "\n".join([*before, fence[0] + report + fence[1], *after]) + "\n"
    res = classify_text(text)
    assert (res.failed_stage, res.first_exception) == ("none", None), res.evidence
    assert res.evidence is not None and res.evidence.rule == "no-root"


@given(lines=PLAIN.filter(bool))
def test_text_without_any_exception_is_still_not_a_vllm_log(lines) -> None:  # noqa: ANN001
    res = classify_text("\n".join(lines) + "\n")
    assert res.failed_stage == "unknown" and res.evidence is not None and res.evidence.rule == "not-a-vllm-log"


def test_real_excerpts_that_report_an_exception_and_fail_nowhere_are_none() -> None:
    # 2776: an offline run's output, then a destructor's exception ignored at exit; 2889: a chat request
    # refused for its template, in inline code; 4133: a client's 400 for a reward model's request
    for name in ("2776.log", "2889.log", "4133.log"):
        res = classify_text(issue_text(name))
        assert (res.failed_stage, res.first_exception) == ("none", None), (name, res.evidence)

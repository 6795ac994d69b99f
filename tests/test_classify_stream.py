"""Streaming invariants: any chunking, and the prefilter, change nothing in the answer.

The prefilter skips lines without a sentinel; ``Classifier(prefilter=False)`` parses
every line, so equality on every real log proves no sentinel is missing. Hypothesis
cuts real logs at random places (inside lines, inside CRLF pairs, inside multi-byte
characters' neighbours) and checks the result and the live events are identical.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3tui.classify import Classifier, classify_text
from tests.support.corpus import tuned_cases

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
LOGS = sorted((SHARED / "corpus").glob("*/*.log")) + sorted((SHARED / "fixtures" / "hosts").glob("*/*.txt"))
LOGS += [c.path for c in tuned_cases()]  # the tuned part of tests/data/corpus (never the held-out part)
LOGS += sorted((Path(__file__).resolve().parent / "data" / "classify-real-vllm").glob("*.log"))


def _run(text: str, cuts: list[int] | None = None, prefilter: bool = True):
    events: list = []
    c = Classifier(run="r", emit=events.append, prefilter=prefilter)
    if cuts is None:
        c.feed(text)
    else:
        prev = 0
        for cut in sorted(set(cuts)) + [len(text)]:
            c.feed(text[prev:cut])
            prev = cut
    return c.finish(), events


@pytest.mark.parametrize("path", LOGS, ids=[f"{p.parent.name}/{p.name}" for p in LOGS])
def test_prefilter_changes_nothing(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    fast, fast_events = _run(text)
    slow, slow_events = _run(text, prefilter=False)
    assert fast.to_json() == slow.to_json()
    assert fast_events == slow_events


@pytest.mark.parametrize(
    "names",
    [
        ["corpus/vllm-cpu/10g2-kill9-worker-inflight.log"],
        ["fixtures/hosts/h200x2-r580/nccl2_ok.txt", "corpus/vllm-cpu/10c-fail-model-path-missing.log"],
        ["corpus/vllm-cpu/01-baseline-full-session.log"],
    ],
)
def test_line_by_line_equals_whole(names: list[str]) -> None:
    """The ladder feeds a tailed log one line at a time: same answer, lookback included."""
    text = "".join((SHARED / n).read_text() for n in names)
    c = Classifier()
    for line in text.splitlines():
        c.feed_line(line)
    got, whole = c.finish(), classify_text(text)
    assert got.to_json() == whole.to_json()
    if "10c" in names[-1]:
        assert len(got.first_exception.stack) == 43


MIXED = "".join(
    p.read_text(encoding="utf-8", errors="replace").replace("\n", "\r\n" if i % 2 else "\n")
    for i, p in enumerate(
        [
            SHARED / "fixtures" / "hosts" / "h200-r580" / "nccl_ok.txt",
            SHARED / "corpus" / "vllm-cpu" / "10f1-fail-kvcache-space-0.log",
            SHARED / "corpus" / "vllm-issues" / "007.log",
            SHARED / "fixtures" / "hosts" / "h200-r580" / "fail_oom.txt",
        ]
    )
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(MIXED)), max_size=40))
def test_any_chunking_gives_the_same_answer(cuts: list[int]) -> None:
    whole, whole_events = _run(MIXED)
    got, events = _run(MIXED, cuts)
    assert got.to_json() == whole.to_json()
    assert events == whole_events


@settings(max_examples=25, deadline=None)
@given(size=st.integers(min_value=1, max_value=300))
def test_fixed_small_chunks_give_the_same_answer(size: int) -> None:
    text = (SHARED / "corpus" / "vllm-cpu" / "11-fail-headdim16-first-request-kills-engine.log").read_text()
    whole, _ = _run(text)
    got, _ = _run(text, list(range(size, len(text), size)))
    assert got.to_json() == whole.to_json()


def test_result_is_live_and_finish_is_final() -> None:
    text = (SHARED / "corpus" / "vllm-cpu" / "10d-fail-load-format-fastsafetensors.log").read_text()
    c = Classifier()
    c.feed(text[: len(text) // 3])
    early = c.result()
    assert early.failed_stage == "none" and early.stages
    c.feed(text[len(text) // 3 :])
    final = c.finish()
    assert final.failed_stage == "weights"
    assert c.finish() is final
    with pytest.raises(RuntimeError):
        c.feed("more")


FILLER = "".join(f"vm:528:528 [0] NCCL INFO Channel {i:02d}/64 : 0\n" for i in range(40))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=80),
            st.sampled_from(
                [
                    "Traceback (most recent call last):",
                    '  File "x.py", line 1, in load_weights',
                    "    raise RuntimeError(x)",
                    "RuntimeError: boom",
                    "(Worker_TP1 pid=7) ERROR 11-30 03:33:00 [x.py:1] Traceback (most recent call last):",
                    "(Worker_TP1 pid=7) ERROR 11-30 03:33:00 [x.py:1] ValueError: bad",
                    "ERROR:    [Errno 98] error while attempting to bind on address",
                    "INFO:     Application startup complete.",
                    "vllm-1  | ",
                    "\x1b[31m",
                    "^M",
                    "",
                ]
            ),
        ),
        max_size=60,
    )
)
def test_arbitrary_lines_never_crash_and_prefilter_agrees(lines: list[str]) -> None:
    text = FILLER + "\n".join(lines)  # past the first 30 lines, where only sentinel lines are parsed
    fast, _ = _run(text)
    slow, _ = _run(text, prefilter=False)
    assert fast.to_json() == slow.to_json()
    stages = ("none", "unknown", "container", "config", "device", "weights", "engine", "api", "runtime")
    assert fast.failed_stage in stages


# --- a logged traceback that printed its exception line does not keep the scan busy ---------------

_LOGGED_TB = [
    "(APIServer pid=11) ERROR 11-30 03:44:40 [serving.py:929] Error in chat completion stream generator.",
    "(APIServer pid=11) ERROR 11-30 03:44:40 [serving.py:929] Traceback (most recent call last):",
    '(APIServer pid=11) ERROR 11-30 03:44:40 [serving.py:929]   File "/v/async_llm.py", line 767, in generate',
    "(APIServer pid=11) ERROR 11-30 03:44:40 [serving.py:929]     out = q.get_nowait() or await q.get()",
    "(APIServer pid=11) ERROR 11-30 03:44:40 [serving.py:929] vllm.v1.engine.exceptions.EngineDeadError: gone",
]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "host:528:528 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
                "(APIServer pid=11) ERROR 11-30 03:44:41 [serving.py:929]   (continued detail)",
                "(APIServer pid=11) INFO 11-30 03:44:41 [loggers.py:1] Engine 000: Avg prompt throughput",
                "(APIServer pid=11) ERROR 11-30 03:44:41 [serving.py:929] ",
                "(APIServer pid=11) ERROR 11-30 03:44:41 [serving.py:929] The above exception was the direct cause",
                "E1130 03:44:41.000 11 x.cc:1]   an indented glog line",
                "    an indented line of nobody",
                "",
                'INFO:     127.0.0.1:4242 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
                *_LOGGED_TB,
                "(EngineCore_DP0 pid=12) ERROR 11-30 03:44:42 [core.py:1] RuntimeError: CUDA error: an illegal memory access",
            ]
        ),
        max_size=400,
    ),
    st.integers(0, 3),
)
def test_after_a_logged_exception_line_the_prefilter_still_agrees(lines: list[str], repeat: int) -> None:
    text = FILLER + "\n".join(_LOGGED_TB * repeat + lines) + "\n"
    fast, fast_events = _run(text)
    slow, slow_events = _run(text, prefilter=False)
    assert fast.to_json() == slow.to_json()
    assert fast_events == slow_events


def test_a_flood_after_a_logged_traceback_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bench's shape: a logged consequence (EngineDeadError), then 2,000 NCCL INFO lines. Before this,
    each line of the flood was parsed until the traceback went stale (200 lines); now none is."""
    import k3tui.classify.classifier as cls

    parsed: list[str] = []
    real = cls.parse

    def spy(raw: str):  # noqa: ANN202
        parsed.append(raw)
        return real(raw)

    monkeypatch.setattr(cls, "parse", spy)
    flood = [
        f"host:528:{i} [0] NCCL INFO Channel {i % 64:02d}/0 : 0[0] -> 1[1] via P2P/CUMEM/read" for i in range(2000)
    ]
    c = Classifier()
    c.feed(FILLER + "\n".join(_LOGGED_TB + flood) + "\n")
    c.finish()
    assert not [x for x in parsed if "NCCL INFO" in x and x not in FILLER], len(parsed)


_TEXT = st.text(alphabet=st.sampled_from("rRoOeE.py:\n 0123abc\u00e9\u4e2d"), max_size=400)


@settings(max_examples=300, deadline=None)
@given(
    text=_TEXT,
    needle=st.one_of(st.sampled_from(["rror", ".py:", "a.b", "application startup complete"]), _TEXT.filter(bool)),
    lo=st.integers(0, 400),
    hi=st.integers(0, 400),
)
def test_the_prefilters_search_finds_what_str_find_finds(text: str, needle: str, lo: int, hi: int) -> None:
    """Short sentinels are searched for with a compiled literal pattern (faster than ``str.find`` on log
    text), long ones with ``str.find``: either way the first place found in a range is find's, so the
    lines the prefilter reads are the same (a regex metacharacter in a needle is a literal)."""
    from k3tui.classify.classifier import _finder

    search = _finder(needle)
    got = text.find(needle, lo, hi) if search is None else ((m := search(text, lo, hi)) and m.start())
    assert (got if got is not None else -1) == text.find(needle, lo, hi)

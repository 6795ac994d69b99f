"""Every real log of ../shared/corpus against its label: one test case per log.

The label's ``first_exception`` must be contained in the reported root line, the failed
stage and ``oom_root_cause`` must match. Per-folder accuracy is what the issue asks to
report; ``test_every_labelled_log_is_a_case`` makes sure no log silently drops out.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from k3tui.classify import Classifier, classify_text
from k3tui.events import ExceptionFound, RunClassified, StageReached

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
FOLDERS = ("vllm-cpu", "vllm-issues")


def _labels() -> list[tuple[str, dict]]:
    out = []
    for folder in FOLDERS:
        path = CORPUS / folder / "labels.jsonl"
        if path.is_file():
            out += [(folder, json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
    return out


LABELS = _labels()


def _text(folder: str, name: str) -> str:
    return (CORPUS / folder / name).read_text(encoding="utf-8", errors="replace")


def test_every_labelled_log_is_a_case(shared: Path) -> None:
    for folder in FOLDERS:
        logs = {p.name for p in (shared / "corpus" / folder).glob("*.log")}
        labelled = {lab["file"] for f, lab in LABELS if f == folder}
        assert logs and logs == labelled, f"{folder}: logs without labels or labels without logs"


@pytest.mark.parametrize(("folder", "label"), LABELS, ids=[f"{f}/{lab['file']}" for f, lab in LABELS])
def test_corpus_log_matches_label(folder: str, label: dict) -> None:
    result = classify_text(_text(folder, label["file"]))
    assert result.failed_stage == label["stage"], label["notes"]
    if label["first_exception"] is None:
        assert result.first_exception is None
        assert result.signature == ""
    else:
        assert result.first_exception is not None
        assert label["first_exception"] in result.first_exception.line
        assert result.first_exception.line in result.first_exception.stack
        assert result.signature.startswith(label["stage"] + "|")
    assert result.oom_root_cause == label["oom_root_cause"]


@pytest.mark.parametrize(("folder", "label"), LABELS, ids=[f"{f}/{lab['file']}" for f, lab in LABELS])
def test_corpus_events_agree_with_result(folder: str, label: dict) -> None:
    events: list = []
    c = Classifier(run="r1", emit=events.append)
    c.feed(_text(folder, label["file"]))
    result = c.finish()
    found = [e for e in events if isinstance(e, ExceptionFound)]
    assert len(found) == (0 if result.first_exception is None else 1), "ExceptionFound is emitted once, for the root"
    if found:
        assert found[0].line == result.first_exception.line
        assert found[0].stage == result.failed_stage
        assert found[0].signature == result.signature
    stages = [(e.stage, e.line, e.log_time) for e in events if isinstance(e, StageReached)]
    assert stages == [tuple(s) for s in result.stages]
    assert isinstance(events[-1], RunClassified) and events[-1].failed_stage == result.failed_stage
    assert all(e.run == "r1" for e in events)


def test_vllm_cpu_timeline_is_in_startup_order() -> None:
    result = classify_text(_text("vllm-cpu", "01-baseline-full-session.log"))
    assert [s.stage for s in result.stages] == ["container", "config", "device", "weights", "engine", "api", "runtime"]
    lines = [s.line for s in result.stages]
    assert lines == sorted(lines)
    assert result.stages[1].time == "11-30 03:29:01"
    assert result.failed_stage == "none"

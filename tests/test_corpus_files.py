"""The repository's labelled corpus is well formed: one label per log, labels that can be checked.

Why: the classifier is scored on ``tests/data/corpus/*/``; a label pointing at a missing file, a stage
outside the README's table, or a ``first_exception`` that is not in its log would score nonsense
without anyone noticing. This tests the corpus files, never the classifier (labels are written
before any classifier runs on the logs). Every folder must pass, whoever labelled it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.corpus import REPO_CORPUS, STAGES

FIELDS = ("file", "source", "vllm_version", "stage", "first_exception", "oom_root_cause", "gpus", "notes")
NOT_LOGS = ("labels.jsonl",)
FAULTS = "vllm-cpu-faults"


def _is_log(path: Path) -> bool:
    """Files of a folder that are logs: everything but the labels, JSON sidecars and notes."""
    return path.is_file() and path.name not in NOT_LOGS and path.suffix not in (".json", ".md", ".py")


def _label_problems(folder: Path, label: dict) -> list[str]:
    name = label.get("file", "?")
    out = [f"{name}: missing field {f!r}" for f in FIELDS if f not in label]
    log = folder / str(name)
    if not log.is_file():
        return [*out, f"{name}: labelled file does not exist"]
    if label.get("stage") not in STAGES:
        out.append(f"{name}: stage {label.get('stage')!r} is not one of {STAGES}")
    if not str(label.get("source") or "").strip():
        out.append(f"{name}: empty source")
    if label.get("oom_root_cause") not in (True, False, None):
        out.append(f"{name}: oom_root_cause must be true, false or null")
    exc = label.get("first_exception")
    if exc is None:
        if label.get("stage") != "none" and not str(label.get("notes") or "").strip():
            out.append(f"{name}: first_exception null on a failure without a reason in notes")
    elif not isinstance(exc, str) or not exc.strip():
        out.append(f"{name}: first_exception must be a non-empty string or null")
    elif exc not in log.read_text(encoding="utf-8", errors="replace"):
        out.append(f"{name}: first_exception is not a substring of the log: {exc[:80]!r}")
    elif label.get("stage") == "none":
        out.append(f"{name}: a healthy run (stage none) carries an exception")
    return out


def problems(folder: Path) -> list[str]:
    """Everything wrong with one corpus folder's logs and ``labels.jsonl``."""
    labels_path = folder / "labels.jsonl"
    if not labels_path.is_file():
        return [f"{folder.name}: no labels.jsonl"]
    out, seen = [], {}
    for n, line in enumerate(labels_path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            label = json.loads(line)
        except json.JSONDecodeError as e:
            out.append(f"labels.jsonl:{n}: not JSON ({e})")
            continue
        seen[label.get("file")] = seen.get(label.get("file"), 0) + 1
        out += _label_problems(folder, label)
    out += [f"{f}: labelled {k} times" for f, k in seen.items() if k > 1]
    out += [f"{p.name}: log without a label" for p in sorted(folder.iterdir()) if _is_log(p) and p.name not in seen]
    return out


def _folders() -> list[Path]:
    return (
        sorted(p for p in REPO_CORPUS.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))
        if REPO_CORPUS.is_dir()
        else []
    )


@pytest.mark.parametrize("folder", _folders(), ids=lambda p: p.name)
def test_every_log_has_exactly_one_checkable_label(folder):
    assert problems(folder) == []


def test_the_fault_corpus_holds_at_least_120_labelled_real_runs():
    folder = REPO_CORPUS / FAULTS
    labels = [json.loads(x) for x in (folder / "labels.jsonl").read_text().splitlines() if x.strip()]
    assert len(labels) >= 120
    for label in labels:
        assert "made by make_vllm_cpu_faults.py" in label["source"], label["file"]
        assert (folder / label["file"]).with_suffix(".fault.json").is_file(), f"{label['file']}: no sidecar"
    assert {x["stage"] for x in labels} == set(STAGES)


# ---- the checker itself catches each kind of broken label (so the tests above can fail)

LOG = "(EngineCore pid=7) ERROR 12-01 10:00:00 [core.py:1] ValueError: No available memory for the cache blocks\n"
GOOD = {
    "file": "a.log",
    "source": "test",
    "vllm_version": "0.32.0",
    "stage": "engine",
    "first_exception": "ValueError: No available memory",
    "oom_root_cause": None,
    "gpus": None,
    "notes": "n",
}


def _folder(tmp: Path, labels: list[dict], logs: dict[str, str] | None = None) -> Path:
    for name, text in (logs or {"a.log": LOG}).items():
        (tmp / name).write_text(text)
    (tmp / "labels.jsonl").write_text("".join(json.dumps(x) + "\n" for x in labels))
    return tmp


def test_a_well_formed_folder_has_no_problems(tmp_path):
    assert problems(_folder(tmp_path, [GOOD])) == []


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"stage": "gpu"}, "not one of"),
        ({"file": "b.log"}, "does not exist"),
        ({"source": ""}, "empty source"),
        ({"oom_root_cause": "yes"}, "oom_root_cause"),
        ({"first_exception": None, "notes": ""}, "without a reason"),
        ({"stage": "none"}, "carries an exception"),
    ],
)
def test_each_broken_label_is_reported(tmp_path, change, why):
    found = problems(_folder(tmp_path, [{**GOOD, **change}]))
    assert any(why in p for p in found), found


def test_unlabelled_and_twice_labelled_logs_are_reported(tmp_path):
    found = problems(_folder(tmp_path, [GOOD, GOOD], {"a.log": LOG, "c.log": LOG}))
    assert "a.log: labelled 2 times" in found and "c.log: log without a label" in found


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1).filter(lambda s: s.strip() and s not in LOG))
def test_any_exception_text_not_in_the_log_is_reported(tmp_path_factory, text):
    folder = _folder(tmp_path_factory.mktemp("c"), [{**GOOD, "first_exception": text}])
    assert any("not a substring" in p for p in problems(folder))


def test_every_second_label_is_of_a_tuned_log_and_checkable():
    """``second-labels.jsonl`` (bench/label_agreement.py): a second person's label of tuned logs only (the
    held-out part stays unread), in the stage vocabulary, its root verbatim on one line of the log."""
    from tests.support.corpus import held_out

    rows = [json.loads(x) for x in (REPO_CORPUS / "second-labels.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 80
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        folder, name = r["id"].split("/", 1)
        assert not held_out(folder, name), r["id"]
        assert set(r) == {"id", "stage", "first_exception", "sure", "reason"}, r["id"]
        assert r["stage"] in STAGES and isinstance(r["sure"], bool) and r["reason"].strip(), r["id"]
        text = (REPO_CORPUS / folder / name).read_text(encoding="utf-8", errors="replace")
        fe = r["first_exception"]
        assert fe is None or ("\n" not in fe and fe in text), r["id"]
        assert r["stage"] != "none" or fe is None, r["id"]

"""Logs exported newest first (a log viewer's order: Grafana / Loki, Kibana, a cloud console, a serverless
platform's log tab) are read in the order they were printed, and every line number reported is the file's.

Each case turns real logs of the corpus into such an export: every line an entry stamped by the viewer
(Loki), or a viewer that keeps a multi-line entry (a traceback) together in its own order. A log that runs
forwards, with the small steps back of processes interleaving, is never turned. ``k3tui classify`` does the
same for a file (up to 16 MiB held whole). Each fails without ``k3tui/classify/order.py``.
"""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from k3tui.classify import classify_text
from k3tui.classify.order import backwards_kind, stamp
from k3tui.cli import main
from tests.support.corpus import REPO_CORPUS, SHARED_CORPUS

LOGS = [
    REPO_CORPUS / "vllm-cpu-faults" / "args-chat-template-dir.log",
    REPO_CORPUS / "vllm-cpu-faults" / "kv-gpu-util-0.001.log",
    REPO_CORPUS / "vllm-cpu-faults" / "st-tensor-missing.log",
    SHARED_CORPUS / "vllm-cpu" / "10f1-fail-kvcache-space-0.log",
    SHARED_CORPUS / "vllm-cpu" / "11-fail-headdim16-first-request-kills-engine.log",
    REPO_CORPUS / "vllm-issues" / "1822.log",
]


def _viewer_time(i: int, base: int) -> str:
    t = base + i
    return f"2026-12-05 {6 + t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}.{(i * 7) % 1000:03d}"


def _loki(rows: list[str], base: int, sep: str) -> list[str]:
    """Every line an entry stamped by the viewer, newest first."""
    return list(reversed([f"{_viewer_time(i, base)}{sep}{row}" for i, row in enumerate(rows)]))


def _entries(rows: list[str], base: int) -> list[str]:
    """The viewer keeps a line and the unstamped lines after it (a traceback) as one entry, newest first."""
    entries: list[list[str]] = []
    for i, row in enumerate(rows):
        s = stamp(row)
        if not entries or (s is not None and s.kind == "vllm" and s.at <= 48):
            entries.append([f"{_viewer_time(i, base)} {row}"])
        else:
            entries[-1].append(row)
    return [row for entry in reversed(entries) for row in entry]


def _rows(path) -> list[str]:
    rows = path.read_text(encoding="utf-8", errors="replace").split("\n")
    return rows[:-1] if rows and rows[-1] == "" else rows


@settings(max_examples=30, deadline=None)
@given(
    path=st.sampled_from(LOGS), base=st.integers(0, 40000), kind=st.sampled_from(["loki-tab", "loki-space", "entries"])
)
def test_a_newest_first_export_reads_as_the_log(path, base: int, kind: str) -> None:
    rows = _rows(path)
    bare = classify_text("\n".join(rows) + "\n")
    assert bare.first_exception is not None
    out = _entries(rows, base) if kind == "entries" else _loki(rows, base, "\t" if kind == "loki-tab" else " ")
    r = classify_text("\n".join(out) + "\n")
    assert r.failed_stage == bare.failed_stage, (path.name, kind, r.failed_stage, bare.failed_stage, r.evidence)
    assert r.first_exception is not None
    root = bare.first_exception.line.strip()
    assert r.first_exception.line.strip().endswith(root[-60:]), (r.first_exception.line, root)
    # every line number is the file's: the root's, the stages', the evidence's
    assert out[r.first_exception.line_number - 1].endswith(r.first_exception.line.strip()[-60:])
    assert all(1 <= s.line <= len(out) for s in r.stages)
    assert r.evidence is not None and all(1 <= n <= len(out) for n in r.evidence.lines)


@given(
    n=st.integers(20, 200),
    jitter=st.lists(st.integers(0, 2), min_size=20, max_size=200),
    procs=st.integers(1, 8),
)
def test_a_log_running_forwards_is_never_turned(n: int, jitter: list[int], procs: int) -> None:
    # processes interleaving: each line's time may be a second or two behind the line before it
    rows = []
    for i in range(n):
        t = 100 + i // 3 - jitter[i % len(jitter)]
        rows.append(
            f"(Worker_TP{i % procs} pid={40 + i % procs}) INFO 12-05 06:{t // 60 % 60:02d}:{t % 60:02d} [x.py:1] step {i}"
        )
    assert backwards_kind(rows) is None


def test_a_log_with_too_few_times_is_not_turned() -> None:
    rows = ["2026-12-05 06:00:05 b", "2026-12-05 06:00:04 a", "Traceback (most recent call last):", "ValueError: x"]
    assert backwards_kind(rows) is None
    r = classify_text("\n".join(rows) + "\n")
    assert r.first_exception is not None and r.first_exception.line_number == 4


def test_the_cli_reads_a_newest_first_export_in_order(tmp_path, capsys) -> None:
    path = REPO_CORPUS / "vllm-cpu-faults" / "args-chat-template-dir.log"
    rows = _rows(path)
    bare = classify_text("\n".join(rows) + "\n")
    export = tmp_path / "grafana-export.log"
    out = _loki(rows, 0, "\t")
    export.write_text("\n".join(out) + "\n", encoding="utf-8")
    assert main(["classify", str(export), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["failed_stage"] == bare.failed_stage
    fe = got["first_exception"]
    assert fe["line"].strip().endswith(bare.first_exception.line.strip()[-60:])
    assert out[fe["line_number"] - 1].endswith(fe["line"].strip()[-60:])
    keys = {
        "failed_stage",
        "stages",
        "first_exception",
        "oom_root_cause",
        "signature",
        "advice",
        "evidence",
        "confidence",
    }
    assert set(got) == keys
    assert main(["classify", str(export)]) == 0
    human = capsys.readouterr().out
    assert "newest first" in human
    # the reason's own line numbers are the file's too
    why = next(line for line in human.splitlines() if line.startswith("why: "))
    named = [int(n) for n in re.findall(r"\(line (\d+)\)", why)]
    assert all(n in got["evidence"]["lines"] or n in [s["line"] for s in got["stages"]] for n in named), why

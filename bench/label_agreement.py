"""How far two people agree on a log's stage, and where the classifier stands between them.

    .venv/bin/python bench/label_agreement.py

``tests/data/corpus/second-labels.jsonl`` holds a second, independent label for a fixed random sample
of the TUNED corpus (session 25: 50 issue excerpts, 10 committed logs, 20 fault runs, seed 2512). Each
was written by a labeller who saw only the log (and a fault run's sidecar), never the first label, the
issue thread or the classifier. The first labeller had the thread too. Agreement between the two is the
ceiling a classifier can be measured against on such logs: where two careful people differ, the log
does not decide its stage.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from k3tui.classify import classify_text  # noqa: E402
from tests.support.corpus import REPO_CORPUS, cases  # noqa: E402

SECOND = REPO_CORPUS / "second-labels.jsonl"


def main() -> int:
    first = {c.id: c for c in cases()}
    rows = [json.loads(x) for x in SECOND.read_text(encoding="utf-8").splitlines() if x.strip()]
    agg: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    differ = []
    for row in rows:
        case = first[row["id"]]
        label, second = case.label["stage"], row["stage"]
        got = classify_text(case.text()).failed_stage
        for key in ("all", case.folder, "second sure" if row["sure"] else "second unsure"):
            a = agg[key]
            a[0] += 1
            a[1] += label == second
            a[2] += got == label
            a[3] += got == second
        if label != second:
            differ.append(f"  {row['id']}: first {label}, second {second}, classifier {got}")
    print(f"{'logs':>20} {'n':>4}  first=second  classifier=first  classifier=second")
    for key, (n, ab, cf, cs) in sorted(agg.items(), key=lambda kv: (kv[0] != "all", kv[0])):
        print(f"{key:>20} {n:4}  {ab:4} {ab / n:5.0%}    {cf:4} {cf / n:5.0%}      {cs:4} {cs / n:5.0%}")
    print("where the two labels differ:")
    print("\n".join(differ) or "  nowhere")
    return 0


if __name__ == "__main__":
    sys.exit(main())

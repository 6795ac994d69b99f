"""Score the classifier on the labelled corpus: shared, tuned part, held-out part.

    .venv/bin/python bench/score_corpus.py                 # per-part percentages, tuned/shared misses
    .venv/bin/python bench/score_corpus.py --json          # the same as one JSON object
    .venv/bin/python bench/score_corpus.py --only 'vllm-issues/3[0-9][0-9].log'   # a fresh batch alone

Three scores per log, against its label (``../shared/corpus/README.md``):

- **stage**: ``failed_stage`` equals the label's ``stage``;
- **root**: for a failing log, the label's ``first_exception`` is a substring of the
  reported root line (or of the wrapper line reported as its context: pydantic's header,
  ``RayTaskError(…)``); for a ``none`` log, no exception is reported at all;
- **oom**: ``oom_root_cause`` equals the label's.

The held-out fifth (``tests/support/corpus.py``) is the score that counts; rules are never
tuned on it, so for it this script prints ONLY the counts. ``--show-held-out-misses``
lists its misses too: it is for the lead's final note, never for changing rules.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from k3tui.classify import classify_text  # noqa: E402
from tests.support.corpus import SHARED_CORPUS, Case, cases  # noqa: E402


@dataclass
class Part:
    name: str
    n: int = 0
    stage: int = 0
    root: int = 0
    oom: int = 0
    none_with_exception: int = 0
    misses: list[str] = field(default_factory=list)

    def pct(self, k: int) -> str:
        return f"{100 * k / self.n:.1f}% ({k}/{self.n})" if self.n else "n/a (0 logs)"


def root_matches(label: dict, result) -> bool:
    """The label's root is in the reported root line (or its wrapper context); none: no root."""
    fe = result.first_exception
    want = label.get("first_exception")
    if label["stage"] == "none" or want is None:
        return fe is None if label["stage"] == "none" else True
    if fe is None:
        return False
    return want in fe.line or (fe.context is not None and want in fe.context)


def score(case: Case, part: Part) -> None:
    label = case.label
    result = classify_text(case.text())
    ok_stage = result.failed_stage == label["stage"]
    ok_root = root_matches(label, result)
    ok_oom = result.oom_root_cause == label.get("oom_root_cause")
    part.n += 1
    part.stage += ok_stage
    part.root += ok_root
    part.oom += ok_oom
    if label["stage"] == "none" and result.first_exception is not None:
        part.none_with_exception += 1
    if not (ok_stage and ok_root and ok_oom):
        got = result.first_exception.line[:160] if result.first_exception else None
        ev = result.evidence.rule if result.evidence else "-"
        part.misses.append(
            f"{case.id}: stage {label['stage']} -> {result.failed_stage} [{ev}]"
            + ("" if ok_root else f"; root {str(label.get('first_exception'))[:100]!r} -> {got!r}")
            + ("" if ok_oom else f"; oom {label.get('oom_root_cause')} -> {result.oom_root_cause}")
        )


def parts(only: list[str] | None = None) -> list[tuple[Part, list[Case]]]:
    """The three parts; with ``only`` (ids such as ``vllm-issues/3*.log``, globs), the repository's
    logs among them (a fresh batch scored before any rule changes for it: shared left out)."""
    repo = cases()
    if only:
        repo = [c for c in repo if any(fnmatch.fnmatchcase(c.id, pat) for pat in only)]
    return ([] if only else [(Part("shared"), cases(SHARED_CORPUS))]) + [
        (Part("tuned"), [c for c in repo if not c.held_out]),
        (Part("held-out"), [c for c in repo if c.held_out]),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--show-held-out-misses", action="store_true", help="also list held-out misses (final note only)")
    ap.add_argument("--only", action="append", metavar="GLOB", help="only these repository logs (folder/file globs)")
    args = ap.parse_args(argv)
    out = []
    for part, todo in parts(args.only):
        for case in todo:
            score(case, part)
        out.append(part)
    if args.json:
        print(json.dumps([_as_json(p, args.show_held_out_misses) for p in out], indent=1))
        return 0
    for p in out:
        print(f"{p.name:<9} logs {p.n:>4}  stage {p.pct(p.stage):<18} root {p.pct(p.root):<18} oom {p.pct(p.oom)}")
        print(f"{'':<9} none logs given an exception: {p.none_with_exception}")
        if p.name != "held-out" or args.show_held_out_misses:
            for miss in p.misses:
                print(f"  miss {miss}")
        else:
            print(f"  {len(p.misses)} held-out logs with a miss (not listed: --show-held-out-misses)")
    return 0


def _as_json(p: Part, show: bool) -> dict:
    d = {
        "part": p.name,
        "logs": p.n,
        "stage": p.stage,
        "root": p.root,
        "oom": p.oom,
        "none_with_exception": p.none_with_exception,
    }
    if p.name != "held-out" or show:
        d["misses"] = p.misses
    else:
        d["logs_with_a_miss"] = len(p.misses)
    return d


if __name__ == "__main__":
    raise SystemExit(main())

"""Secrets planted and leaked: every class of tests/test_redact_gaps.py, through today's redactor and an older one.

    .venv/bin/python bench/bench_leaks.py                      # today's k3tui/redact.py only
    .venv/bin/python bench/bench_leaks.py --against 146c3a5    # and the redactor of that revision, same texts
    .venv/bin/python bench/bench_leaks.py --per-class 40 --seed 3

Why a script: the README's redaction figures ("N planted, M leaked before, 0 now") must be
reproducible. The texts are drawn from the test suite's own generators (one draw per class per
example, derandomised by ``--seed``), so a class added to the tests is counted here too. A planted
value counts as leaked when any 6 consecutive characters of it (all of it, if shorter) survive
redaction on any of the redactor's paths: the reference path, the short-text path and the RE2 gate
(``gate_from=0``) — what reaches a recording, an export or the screen. An older revision's
``k3tui/redact.py`` (a single module with no imports of the package) is loaded from git for
``--against``; where it lacks a path (no gate), its default ``text`` is used for that path.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

WINDOW = 6


def planted(per_class: int, seed: int) -> list[tuple[str, str, str]]:
    """``(class, value, text)`` drawn from the test suite's generators, the same for a given seed."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from tests.test_redact_gaps import _CASES

    out: list[tuple[str, str, str]] = []

    import hypothesis

    @hypothesis.seed(seed)
    @settings(max_examples=per_class, database=None, deadline=None)
    @given(st.data())
    def draw(data) -> None:  # noqa: ANN001
        for name, (strategy, form) in _CASES.items():
            value = data.draw(strategy, label=name)
            out.append((name, value, form.format(v=value)))

    draw()
    return out


def _load(revision: str | None):  # noqa: ANN202
    if revision is None:
        from k3tui import redact

        return redact
    src = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{revision}:k3tui/redact.py"], capture_output=True, text=True, check=True
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="k3-redact-")) / "redact_old.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("redact_old", path)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def _outputs(mod, text: str) -> list[str]:  # noqa: ANN001
    r = mod.Redactor
    outs = [r().text(text)]
    if hasattr(r(), "text_reference"):
        outs.append(r().text_reference(text))
    try:
        outs.append(r(gate_from=0).text(text))
    except TypeError:  # a redactor from before the gate
        pass
    return outs


def leaked(value: str, text: str, outputs: list[str]) -> bool:
    """Any 6 characters of the value in an output, not counting those its text holds elsewhere
    (``github`` of ``github_pat_…`` is also in ``github.com``)."""
    n = min(WINDOW, len(value))
    around = text.replace(value, "\0")
    windows = {value[i : i + n] for i in range(len(value) - n + 1)} - {w for w in _windows(around, n)}
    return any(w in out for out in outputs for w in windows)


def _windows(text: str, n: int) -> set[str]:
    return {text[i : i + n] for i in range(len(text) - n + 1)}


def score(mod, cases: list[tuple[str, str, str]]) -> Counter:  # noqa: ANN001
    bad: Counter = Counter()
    for name, value, text in cases:
        if leaked(value, text, _outputs(mod, text)):
            bad[name] += 1
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-class", type=int, default=20, help="texts drawn per class (default 20)")
    ap.add_argument("--seed", type=int, default=16, help="the draw's seed (default 16)")
    ap.add_argument("--against", metavar="REV", help="also score k3tui/redact.py as it was at this git revision")
    args = ap.parse_args()
    cases = planted(args.per_class, args.seed)
    classes = sorted({c for c, _, _ in cases})
    print(f"{len(cases)} secrets planted: {len(classes)} classes x {args.per_class} (seed {args.seed})")
    now = score(_load(None), cases)
    print(f"today's redactor: {sum(now.values())} leaked" + (f" ({dict(now)})" if now else ""))
    if args.against:
        old = score(_load(args.against), cases)
        worst = ", ".join(f"{k} {v}" for k, v in old.most_common(8))
        print(
            f"redactor of {args.against}: {sum(old.values())} leaked, in {len(old)} of {len(classes)} classes ({worst} …)"
        )
    return 1 if now else 0


if __name__ == "__main__":
    sys.exit(main())

"""Runs the bisect needs against a linear walk, for 4, 8 and 16 differing variables.

Why an oracle: this measures the search, not vLLM. Every run of a real deployment costs
minutes, so the figure that matters is the number of runs. The oracle fails exactly when
the configuration holds the culprit; every culprit position is tried. The linear walk is
what an engineer does by hand: from G, add B's variables one per run until it fails, then
run G plus only that variable and B minus it (G, B and the confirmation are counted for both).

    .venv/bin/python bench/bench_bisect.py
"""

from __future__ import annotations

import asyncio
import statistics

from k3tui.ladder.bisect import Attempt, Bisector


def _oracle(culprit: str):
    async def probe(changes, repeats):
        return [Attempt(culprit not in changes, "" if culprit not in changes else "sig") for _ in range(repeats)]

    return probe


def bisect_runs(keys: list[str], culprit: str) -> int:
    out = asyncio.run(Bisector({k: "1" for k in keys}, _oracle(culprit)).run())
    assert out.culprits == [culprit] and out.confirmed, out.line
    return out.runs


def linear_runs(keys: list[str], culprit: str) -> int:
    i = keys.index(culprit)  # G, B, the cumulative walk up to the culprit, G + only it (unless first), B minus it
    return 2 + i + 1 + (1 if i else 0) + 1


def main() -> None:
    print(f"{'vars':>4}  {'bisect mean/max':>16}  {'linear mean/max':>16}  ratio(mean)")
    for n in (4, 8, 16):
        keys = [f"env:V{i}" for i in range(n)]
        b = [bisect_runs(keys, c) for c in keys]
        lin = [linear_runs(keys, c) for c in keys]
        print(
            f"{n:>4}  {statistics.mean(b):>9.2f}/{max(b):<6}  {statistics.mean(lin):>9.2f}/{max(lin):<6}"
            f"  {statistics.mean(b) / statistics.mean(lin):.2f}"
        )


if __name__ == "__main__":
    main()

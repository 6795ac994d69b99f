"""Crash-safety trials in bulk: a recording child killed with SIGKILL at random moments.

Each trial forks a child that records realistic output (real vLLM log lines from the corpus)
as fast as a busy session would, kills it with SIGKILL after a random 2–300 ms, and checks
the file: everything the recorder had written is there, the events are an exact prefix of
what was emitted, at most the last line is truncated, and ``verify`` finds no tampering.
Any failed check stops the run with the trial's number and why.

    .venv/bin/python bench/bench_crash.py [--trials 200] [--max-ms 300]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.test_recording_crash import corpus_lines, run_trial  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--max-ms", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shared", default=str(REPO.parent / "shared"))
    args = ap.parse_args()
    lines = corpus_lines(Path(args.shared))
    rng = random.Random(args.seed)
    t0 = time.perf_counter()
    trials = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(args.trials):
            try:
                trials.append(run_trial(Path(tmp), n, lines, rng, args.max_ms, min_ms=2.0))
            except AssertionError as exc:
                print(f"trial {n} FAILED: {exc}")
                return 1
    took = time.perf_counter() - t0
    events = [t.events_read for t in trials]
    print(f"trials:                    {len(trials)} in {took:.1f} s (all passed)")
    print(f"events read back / trial:  min {min(events)}  median {sorted(events)[len(events) // 2]}  max {max(events)}")
    print(f"events read back in total: {sum(events)}")
    print(
        f"last line truncated:       {sum(t.truncated for t in trials)} trials (reported as truncated, verify exit 0)"
    )
    print(f"killed before the header:  {sum(1 for t in trials if t.events_read == 0 and t.written_before_kill == 0)}")
    print(f"verify: tampering found:   {sum(not t.verify_ok for t in trials)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Seeking into a large recording (default 1 GB) against a full scan, measured in the same run.

Builds the recording with the real :class:`~k3tui.recording.Recorder` (realistic output chunks
from ``../shared/corpus``; redaction is switched off here only because it is measured by
``bench_record.py``), so the ``.idx`` sidecar is the one a live session leaves. Then:

- full scan: read every event from the start up to the target (what seeking costs without
  an index), for a target near the end;
- seek by time and by event number to random targets: open the file, load the index,
  and get the first event at or after the target — median and worst of ``--seeks``;
- the same after deleting the sidecar once (the reader rebuilds it by one t-only scan);
- every seek is checked: its first event is the one a full scan finds.

    .venv/bin/python bench/bench_seek.py [--size-mb 1024] [--seeks 50] [--keep PATH]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_record import corpus_chunks  # noqa: E402
from k3tui import events as ev  # noqa: E402
from k3tui.reader import open_recording  # noqa: E402
from k3tui.recording import Recorder  # noqa: E402
from k3tui.redact import Redactor  # noqa: E402


class _Off(Redactor):
    def event(self, event):  # noqa: ANN001, ANN201
        return event


def build(path: Path, size_mb: int, shared: Path) -> tuple[int, float, float]:
    """Record until the file reaches size_mb; returns (events, last time, seconds taken)."""
    chunks = corpus_chunks(shared, 5000)
    t0 = time.perf_counter()
    rec = Recorder(path, ev.Header(host="gb300-01"), redactor=_Off())
    target = size_mb * 1_000_000
    n, t, emitted_bytes = 0, 0.0, 0
    while emitted_bytes < target:
        c = chunks[n % len(chunks)]
        t += 0.001  # a synthetic clock: 1000 chunks per second of session
        rec.emit(ev.Output(t=t, id="c1", text=c) if n % 500 else ev.StageReached(t=t, run="r1", stage="engine", line=n))
        emitted_bytes += len(c) + 60
        n += 1
        if n % 20000 == 0:
            while rec._q.qsize() > 50000:  # noqa: SLF001 - keep the build's memory bounded
                time.sleep(0.01)
    rec.close(timeout=3600)
    return n, t, time.perf_counter() - t0


def full_scan_to(path: Path, t: float) -> tuple[float, ev.AnyEvent | None]:
    t0 = time.perf_counter()
    rec = open_recording(path)
    for e in rec.events():
        if e.t >= t:
            return time.perf_counter() - t0, e
    return time.perf_counter() - t0, None


def seek_time(path: Path, t: float) -> tuple[float, ev.AnyEvent | None]:
    t0 = time.perf_counter()
    rec = open_recording(path)
    e = next(rec.events_from_time(t), None)
    return time.perf_counter() - t0, e


def seek_number(path: Path, k: int) -> tuple[float, ev.AnyEvent | None]:
    t0 = time.perf_counter()
    rec = open_recording(path)
    e = next(rec.events_from_number(k), None)
    return time.perf_counter() - t0, e


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--seeks", type=int, default=50)
    ap.add_argument("--keep", help="build (or reuse) the recording at this path instead of a temporary one")
    ap.add_argument("--shared", default=str(REPO.parent / "shared"))
    args = ap.parse_args()
    tmp = None
    if args.keep:
        path = Path(args.keep)
    else:
        tmp = tempfile.TemporaryDirectory()
        path = Path(tmp.name) / "big.k3rec"
    if not path.exists():
        n, last_t, took = build(path, args.size_mb, Path(args.shared))
        print(f"built {path.stat().st_size / 1e6:.0f} MB, {n} events in {took:.1f} s with the recorder")
    else:
        n = sum(1 for _ in open(path, "rb")) - 1
        last_t = n * 0.001
    size = path.stat().st_size / 1e6
    rng = random.Random(5)

    target_t = last_t * 0.99
    scan_s, scan_e = full_scan_to(path, target_t)
    print(f"full scan to t={target_t:.1f}s (99% in):     {scan_s:8.3f} s   ({size / scan_s:.0f} MB/s)")

    times, numbers = [], []
    for _ in range(args.seeks):
        t = rng.uniform(0, last_t)
        s, e = seek_time(path, t)
        assert e is not None and e.t >= t and e.t - t < 0.0011, (t, e)
        times.append(s)
        k = rng.randrange(n)
        s, e = seek_number(path, k)
        assert e is not None
        numbers.append(s)
    s, e = seek_time(path, target_t)
    assert e == scan_e, "seek and full scan disagree"
    med_t, med_n = statistics.median(times), statistics.median(numbers)
    print(
        f"seek by time   ({args.seeks} random targets): median {med_t * 1000:7.2f} ms  worst {max(times) * 1000:7.2f} ms"
    )
    print(
        f"seek by number ({args.seeks} random targets): median {med_n * 1000:7.2f} ms  worst {max(numbers) * 1000:7.2f} ms"
    )
    print(f"ratio full scan / median seek by time:      {scan_s / med_t:8.0f}x")

    os.unlink(str(path) + ".idx")
    t0 = time.perf_counter()
    open_recording(path).index()
    rebuild = time.perf_counter() - t0
    s, _ = seek_time(path, target_t)
    print(f"sidecar deleted: index rebuilt by one scan in {rebuild:.2f} s, then a seek takes {s * 1000:.2f} ms")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())

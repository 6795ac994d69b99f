"""Recording throughput against plain buffered writes of the same bytes, measured in the same run.

The stream is realistic: chunks of 1–20 consecutive lines of the real vLLM logs in
``../shared/corpus`` (what a ``tail -f`` of a server log delivers), repeated to ``--events``.

Printed, each the best of ``--repeat`` runs:

- baseline: the recorder's own output file, line by line, written to a new file with
  ``open(…, "wb")`` (buffered) — the cost of just putting those bytes on disk;
- recorder: ``emit()`` every event, then ``close()`` (redaction, time stamps, encoding, chain
  digests, index, writes) — wall time until everything is on disk;
- the caller's side alone: how long the ``emit()`` calls took (what the UI thread pays);
- where the time goes: redaction, encoding and chaining measured alone.

    .venv/bin/python bench/bench_record.py [--events 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from k3tui import events as ev  # noqa: E402
from k3tui.recording import Recorder, encode_event, seal  # noqa: E402
from k3tui.redact import Redactor  # noqa: E402


def corpus_chunks(shared: Path, n: int, seed: int = 7) -> list[str]:
    lines: list[str] = []
    for p in sorted((shared / "corpus").rglob("*.log")):
        lines += p.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    rng = random.Random(seed)
    chunks = []
    for _ in range(n):
        i = rng.randrange(len(lines))
        chunks.append("".join(lines[i : i + rng.randint(1, 20)]))
    return chunks


def run_recorder(path: Path, chunks: list[str]) -> tuple[float, float]:
    """(seconds for the emit calls, seconds until close returned)."""
    t0 = time.perf_counter()
    rec = Recorder(path, ev.Header(host="gb300-01"), redactor=Redactor())
    for i, c in enumerate(chunks):
        rec.emit(ev.Output(id=f"c{i % 4}", text=c))
    t_emit = time.perf_counter() - t0
    rec.close(timeout=600)
    return t_emit, time.perf_counter() - t0


def run_baseline(src: Path, dst: Path) -> float:
    lines = src.read_bytes().splitlines(keepends=True)
    t0 = time.perf_counter()
    with open(dst, "wb") as fh:
        for line in lines:
            fh.write(line)
    return time.perf_counter() - t0


def parts(chunks: list[str]) -> dict[str, float]:
    events = [ev.Output(t=1.0, id="c1", text=c) for c in chunks]
    r = Redactor()
    t0 = time.perf_counter()
    for e in events:
        r.event(e)
    red = time.perf_counter() - t0
    t0 = time.perf_counter()
    bodies = [encode_event(e) for e in events]
    enc = time.perf_counter() - t0
    t0 = time.perf_counter()
    prev = b""
    for b in bodies:
        _, prev = seal(prev, b)
    chained = time.perf_counter() - t0
    t0 = time.perf_counter()
    for b in bodies:
        hashlib.blake2b(b, digest_size=12)
    return {"redact": red, "encode": enc, "seal (chain digest)": chained, "blake2b alone": time.perf_counter() - t0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shared", default=str(REPO.parent / "shared"))
    args = ap.parse_args()
    chunks = corpus_chunks(Path(args.shared), args.events)
    text_mb = sum(len(c.encode()) for c in chunks) / 1e6
    best_emit = best_total = best_base = float("inf")
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.repeat):
            path = Path(tmp) / f"r{k}.k3rec"
            t_emit, t_total = run_recorder(path, chunks)
            t_base = run_baseline(path, Path(tmp) / f"b{k}.bin")
            best_emit, best_total, best_base = min(best_emit, t_emit), min(best_total, t_total), min(best_base, t_base)
            file_mb = path.stat().st_size / 1e6
    n = len(chunks)
    print(
        f"stream: {n} output chunks from the corpus, {text_mb:.1f} MB of text, {file_mb:.1f} MB on disk (best of {args.repeat})"
    )
    print(
        f"baseline  buffered writes of the same lines: {best_base:7.3f} s  {file_mb / best_base:8.1f} MB/s  {n / best_base:10.0f} lines/s"
    )
    print(
        f"recorder  emit … close (all on disk):        {best_total:7.3f} s  {file_mb / best_total:8.1f} MB/s  {n / best_total:10.0f} events/s"
    )
    print(
        f"caller    the emit() calls alone:            {best_emit:7.3f} s  {n / best_emit:10.0f} events/s  {best_emit / n * 1e6:.1f} µs per emit"
    )
    print(f"ratio     recorder / baseline time:          {best_total / best_base:7.2f}x")
    print("where the time goes (single thread, same events):")
    for name, secs in parts(chunks).items():
        print(f"  {name:22} {secs:7.3f} s  {secs / n * 1e6:6.2f} µs/event")
    return 0


if __name__ == "__main__":
    sys.exit(main())

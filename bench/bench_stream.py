"""Stream throughput of k3tui over SSH, as a ratio against OpenSSH's own client in the same run.

What is measured, on one file of realistic vLLM log lines (the real logs of
``../shared/corpus`` cycled to ``--size-mb``) served by a REAL OpenSSH sshd on loopback:

Both sides include connection setup (the baseline starts an ``ssh`` process and connects).

- **baseline**: ``ssh host cat FILE > /dev/null`` (OpenSSH's client, its default cipher,
  and again with ``-c aes128-gcm@openssh.com``; the faster of the two is the baseline);
- **k3tui read+split**: ``SshHost.stream("cat FILE")`` — 64 KiB chunks split into lines;
- **k3tui read+split+record**: the same with every batch recorded as ``Output`` events into
  a ``.k3rec`` through the real :class:`~k3tui.recording.Recorder` (redaction, chained
  digests, index), timed until the recorder has flushed and closed the file;
- for attribution only (``--attribute``): the same with a pass-through redactor, to show how
  much of the recorded path is redaction. That row is NOT a product path: k3tui always
  redacts before writing.

Runs are interleaved (baseline, k3tui, baseline, …) because the machine is shared; each
figure is the best of ``--repeat``. Goal: read+split+record / baseline ≥ 0.7.

Each row also prints the CPU it spent per byte (the ``ssh`` client's for the baseline, all
of k3tui's threads for k3tui), not counting sshd and ``cat``, which both sides share: on a
machine with few cores the ratio is bounded by this CPU cost, not by the network.

Run (as root, sshd installed by ``.ci/install --test``)::

    .venv/bin/python bench/bench_stream.py --size-mb 1024
    .venv/bin/python bench/bench_stream.py --size-mb 64 --repeat 2     # quick
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from k3tui.events import Header  # noqa: E402
from k3tui.recording import Recorder  # noqa: E402
from k3tui.redact import Redactor  # noqa: E402
from k3tui.remote.ssh import connect  # noqa: E402
from tests.support.sshd import _Factory  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus"


def make_log(path: Path, size: int) -> int:
    """Write ``size`` bytes of real vLLM log lines (cycled); returns the line count."""
    lines = [ln for f in sorted(CORPUS.rglob("*.log")) for ln in f.read_bytes().splitlines(keepends=True)]
    if not lines:
        raise SystemExit(f"no logs under {CORPUS}")
    block = b"".join(lines)
    per_block = len(lines)
    count = 0
    with path.open("wb") as fh:
        written = 0
        for _ in itertools.count():
            if written + len(block) > size:
                break
            fh.write(block)
            written += len(block)
            count += per_block
        for ln in lines:
            if written + len(ln) > size:
                break
            fh.write(ln)
            written += len(ln)
            count += 1
    return count


def interleaved(fns: dict, repeat: int) -> dict[str, tuple[float, float]]:  # noqa: ANN001
    """Best (wall, CPU) of each function (each returns both), running them in turn ``repeat`` times."""
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            times[name].append(fn())
    return {k: min(v) for k, v in times.items()}


CPU: dict[str, list[float]] = {}
"""Seconds of CPU per run, by row name (filled as the rows run)."""


def openssh_cat(server, path: Path, cipher: str | None) -> tuple[float, float]:  # noqa: ANN001
    """(wall seconds, CPU seconds of the ssh client)."""
    argv = server.ssh_argv("cat", str(path))
    if cipher:
        argv[1:1] = ["-c", cipher]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


class _PassThrough(Redactor):
    """Attribution only: a redactor that masks nothing (never used by k3tui itself)."""

    def text(self, s: str) -> str:
        return s

    def event(self, event):  # noqa: ANN001, ANN201
        return event


async def k3tui_stream(
    server, path: Path, record_to: Path | None, redactor: Redactor | None = None
) -> tuple[float, int]:  # noqa: ANN001
    rec = Recorder(record_to, Header(host="bench"), redactor=redactor) if record_to else None
    lines = 0
    t0 = time.perf_counter()
    async with connect(server.target, emit=rec.emit if rec else None, **server.connect_kwargs()) as host:
        async for batch in host.stream(f"cat {path}"):
            lines += len(batch)
    if rec:
        rec.close()
    return time.perf_counter() - t0, lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-record", action="store_true", help="skip the recorded path (read+split only)")
    ap.add_argument("--attribute", action="store_true", help="also time recording with a pass-through redactor")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="k3bench-"))
    base.chmod(0o755)
    factory = _Factory(base)
    try:
        server = factory.start("bench")
        log = base / "server.log"
        n = make_log(log, args.size_mb * 1024 * 1024)
        log.chmod(0o644)
        size = log.stat().st_size
        mb = size / 1e6
        print(f"file: {size / 2**20:.0f} MiB, {n:,} lines of real vLLM log (avg {size / n:.0f} B/line)")

        def run_k3(record: bool, redactor: Redactor | None = None) -> tuple[float, float]:
            rec = base / "bench.k3rec"
            for p in (rec, Path(str(rec) + ".idx")):
                p.unlink(missing_ok=True)
            c0 = time.process_time()
            seconds, lines = asyncio.run(k3tui_stream(server, log, rec if record else None, redactor))
            assert lines == n, (lines, n)
            return seconds, time.process_time() - c0

        fns = {
            "openssh  cat, default cipher": lambda: openssh_cat(server, log, None),
            "openssh  cat, aes128-gcm": lambda: openssh_cat(server, log, "aes128-gcm@openssh.com"),
            "k3tui    read+split": lambda: run_k3(False),
        }
        if not args.no_record:
            fns["k3tui    read+split+record"] = lambda: run_k3(True)
        if args.attribute:
            fns["(attribution) record, no redaction"] = lambda: run_k3(True, _PassThrough())
        t = interleaved(fns, args.repeat)
        baseline = min(t["openssh  cat, default cipher"][0], t["openssh  cat, aes128-gcm"][0])
        print(f"({os.cpu_count()} CPUs; CPU = the client's own, ns per byte)")
        for name, (sec, cpu) in t.items():
            ratio = "" if name.startswith("openssh") else f"  ratio {baseline / sec:.2f}"
            print(f"{name:36} {sec:7.2f} s  {mb / sec:7.0f} MB/s  CPU {cpu * 1e9 / size:5.2f} ns/B{ratio}", flush=True)
        key = "k3tui    read+split+record" if not args.no_record else "k3tui    read+split"
        print(f"RESULT ratio({key.split()[-1]} / openssh) = {baseline / t[key][0]:.2f}  (goal >= 0.70)")
        return 0
    finally:
        factory.stop_all()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())

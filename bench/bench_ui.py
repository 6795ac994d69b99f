"""UI responsiveness under a log flood: worst gap between timer callbacks, and memory.

A headless k3tui session screen (the real SessionView: batching, bounded window, panels)
receives N lines of real vLLM log (../shared/corpus, cycled) as ``Output`` events of
``--chunk`` lines each — the shape the SSH transport emits (whole lines of one read) —
from a producer on the app's own event loop, as a live session does. A 10 ms timer
records the gap between its callbacks; RSS is sampled as lines arrive.

The baseline, measured in the same run: a naive view that writes every event's lines
straight into a Textual ``Log`` as they arrive (no batching, no window coalescing).

    .venv/bin/python bench/bench_ui.py                 # 1,000,000 lines, both views
    .venv/bin/python bench/bench_ui.py --lines 200000 --mode batched
    .venv/bin/python bench/bench_ui.py --record        # events also go through a real Recorder to disk

Prints one block per view and a last line with the ratio of worst stalls.

    .venv/bin/python bench/bench_ui.py --replay 1000000   # replay seeks on a 1M-event recording

``--replay N`` writes an N-event recording with the real Recorder, opens it with
:class:`k3tui.replay.Replay` (one scan, checkpoints) and times random seeks, against the
baseline of folding from the start to the same positions (what a replay without
checkpoints would do on every key).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from textual.app import App, ComposeResult  # noqa: E402
from textual.widgets import Log  # noqa: E402

from k3tui import events as ev  # noqa: E402
from k3tui.state import SessionState, reduce  # noqa: E402
from screens.session.session_view import SessionView  # noqa: E402

TICK = 0.01

# The longest single event-loop callback, in CPU time of the UI thread: what a stall costs on
# an idle machine, independent of other processes competing for the CPU (wall-clock gaps
# are reported too, with the load average, since on a shared box they mostly measure the box).
_CALLBACK_CPU: list[float] = []
_orig_run = asyncio.events.Handle._run


def _timed_run(self):  # noqa: ANN001, ANN202
    t0 = time.thread_time()
    try:
        return _orig_run(self)
    finally:
        _CALLBACK_CPU.append(time.thread_time() - t0)


asyncio.events.Handle._run = _timed_run  # type: ignore[method-assign]


def rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def corpus_lines() -> list[str]:
    lines: list[str] = []
    for p in sorted((REPO.parent / "shared" / "corpus").glob("*/*.log")):
        lines.extend(p.read_text(errors="replace").splitlines())
    return lines or [f"(Worker pid=1) INFO line {i}" for i in range(1000)]


class FloodApp(App):
    """A session view (or the naive baseline), a 10 ms timer, and a producer."""

    def __init__(self, mode: str, total: int, chunk: int, record: Path | None) -> None:
        super().__init__()
        self.mode, self.total, self.chunk, self.record = mode, total, chunk, record
        self.gaps: list[float] = []
        self.rss: list[tuple[int, float]] = []
        self.sent = 0
        self.produced_at = 0.0
        self.drained_at = 0.0
        self.state = SessionState()
        self.inbox: list[int] = []

    def compose(self) -> ComposeResult:
        yield SessionView(id="view") if self.mode == "batched" else Log(max_lines=20_000, id="view")

    def on_mount(self) -> None:
        self._last = time.perf_counter()
        self.set_interval(TICK, self._tick)
        self.producer = self.run_worker(
            self._produce(), exclusive=True, group="flood", description="log flood", exit_on_error=False
        )

    def _tick(self) -> None:
        now = time.perf_counter()
        self.gaps.append(now - self._last)
        self._last = now

    async def _produce(self) -> None:
        src = corpus_lines()
        view = self.query_one("#view")
        recorder = None
        if self.record is not None:
            from k3tui.recording import Recorder

            recorder = Recorder(self.record, ev.Header(host="bench", simulated=True))
        if self.mode == "batched":
            sink = view.receive
        else:

            def sink(e: ev.AnyEvent) -> None:
                if isinstance(e, ev.Output):
                    view.write_lines(e.text.splitlines())

        if recorder is not None:
            recorder.subscribe(lambda e: (reduce(self.state, e), sink(e)))
            emit = recorder.emit
        else:

            def emit(e: ev.AnyEvent) -> None:
                reduce(self.state, e)
                sink(e)

        if self.mode == "batched":
            view.state, view.fold = self.state, False  # as live: the driver folds, the view reads
        emit(ev.RunStarted(t=0.0, host="bench", run="r1", command="vllm serve moonshotai/Kimi-K3"))
        await asyncio.sleep(0.5)  # let the screen mount and render once: the flood is what is measured
        i = 0
        _CALLBACK_CPU.clear()  # only callbacks that run while the flood arrives count
        t0 = time.perf_counter()
        next_sample = 0
        n_src = len(src)
        while self.sent < self.total:
            k = min(self.chunk, self.total - self.sent)
            text = "\n".join(src[(i + j) % n_src] for j in range(k)) + "\n"
            i += k
            emit(ev.Output(t=time.perf_counter() - t0, host="bench", id="r1", stream="log", text=text))
            self.sent += k
            if self.sent >= next_sample:
                self.rss.append((self.sent, rss_mib()))
                self.inbox.append(getattr(view, "backlog", 0))
                next_sample += self.total // 10
            await asyncio.sleep(0)
        self.produced_at = time.perf_counter() - t0
        if self.mode == "batched":
            while view.backlog:
                await asyncio.sleep(0.01)
        self.drained_at = time.perf_counter() - t0
        self.flood_cpu = sorted(_CALLBACK_CPU)
        self.rss.append((self.sent, rss_mib()))
        if recorder is not None:
            await asyncio.to_thread(recorder.close)


async def run_one(mode: str, total: int, chunk: int, record: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        app = FloodApp(mode, total, chunk, Path(tmp) / "flood.k3rec" if record else None)
        rss0 = rss_mib()
        async with app.run_test(headless=True, size=(160, 48)) as pilot:
            while not app.drained_at:
                if not app.is_running or app._exception is not None or app.producer.error is not None:
                    raise SystemExit(f"the flood stopped: {app._exception or app.producer.error!r}")
                await pilot.pause(0.05)
            await pilot.pause(0.2)
            view = app.query_one("#view")
            shown = (view.log_view if hasattr(view, "log_view") else view).line_count
        gaps = sorted(g - TICK for g in app.gaps)
        cpu = app.flood_cpu
        return {
            "mode": mode,
            "lines": app.sent,
            "produce_s": app.produced_at,
            "drain_s": app.drained_at,
            "lines_per_s": app.sent / app.drained_at,
            "worst_stall_ms": gaps[-1] * 1000,
            "p99_stall_ms": gaps[int(len(gaps) * 0.99)] * 1000,
            "median_gap_ms": statistics.median(app.gaps) * 1000,
            "ticks": len(gaps),
            "worst_cpu_ms": cpu[-1] * 1000,
            "p999_cpu_ms": cpu[int(len(cpu) * 0.999)] * 1000,
            "process_cpu_s": time.process_time(),
            "backlog": app.inbox,
            "load": os.getloadavg()[0],
            "rss_start": rss0,
            "rss": app.rss,
            "shown": shown,
            "skipped": getattr(view, "skipped_lines", 0),
        }


def report(r: dict) -> None:
    print(
        f"--- {r['mode']}: {r['lines']:,} lines in chunks, produced in {r['produce_s']:.2f}s, shown by {r['drain_s']:.2f}s"
    )
    print(f"    throughput      {r['lines_per_s']:,.0f} lines/s end to end")
    print(
        f"    loop callbacks  longest {r['worst_cpu_ms']:.1f} ms CPU, p99.9 {r['p999_cpu_ms']:.1f} ms CPU; process CPU {r['process_cpu_s']:.1f} s"
    )
    print(
        f"    timer (10 ms)   worst stall {r['worst_stall_ms']:.1f} ms, p99 {r['p99_stall_ms']:.1f} ms, median gap {r['median_gap_ms']:.1f} ms over {r['ticks']} ticks"
    )
    series = " ".join(f"{n // 1000}k:{m:.0f}" for n, m in r["rss"])
    print(f"    RSS MiB         start {r['rss_start']:.0f} | {series}")
    print(
        f"    backlog         {' '.join(str(b) for b in r['backlog'])} (events+lines waiting, sampled with RSS); load average {r['load']:.1f}"
    )
    print(
        f"    view            {r['shown']:,} lines shown (window), {r['skipped']:,} never formatted (already out of the window)"
    )


def bench_replay(n_events: int, seeks: int = 200) -> None:
    import random

    from k3tui.reader import open_recording
    from k3tui.recording import Recorder
    from k3tui.replay import Replay
    from k3tui.state import fold

    src = corpus_lines()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "long.k3rec"
        t0 = time.perf_counter()
        rec = Recorder(path, ev.Header(host="bench", simulated=True))
        for i in range(n_events):
            t = i * 0.01
            if i % 5000 == 0:
                rec.emit(ev.StageReached(t=t, run="r1", stage="weights", line=i))
            elif i % 500 == 0:
                rec.emit(
                    ev.GpuSample(
                        t=t, gpus=[ev.GpuMem(index=g, used_mib=float(i % 9000), total_mib=284208) for g in range(8)]
                    )
                )
            else:
                rec.emit(ev.Output(t=t, id="r1", stream="log", text=src[i % len(src)]))
        rec.close()
        write_s = time.perf_counter() - t0
        size = path.stat().st_size / 2**20
        rss0 = rss_mib()
        t0 = time.perf_counter()
        rp = Replay(path)
        open_s = time.perf_counter() - t0
        rng = random.Random(1)
        targets = [rng.randrange(rp.count + 1) for _ in range(seeks)]
        times = []
        for target in targets:
            t0 = time.perf_counter()
            rp.seek(target)
            rp.recent(4000)  # what the screen reads to rebuild its log window
            times.append(time.perf_counter() - t0)
        times.sort()
        base = []
        for target in targets[:5]:  # the baseline: fold from the start, as without checkpoints
            t0 = time.perf_counter()
            fold(e for _, e in zip(range(target), open_recording(path).events(), strict=False))
            base.append(time.perf_counter() - t0)
        print(f"--- replay: {rp.count:,} events, {size:.0f} MiB written in {write_s:.1f}s by the Recorder")
        print(
            f"    open (one scan, {len(rp._checkpoints)} checkpoints, {len(rp.markers)} markers) {open_s:.2f}s, RSS +{rss_mib() - rss0:.0f} MiB"
        )
        print(
            f"    seek + log window: median {statistics.median(times) * 1000:.1f} ms, p95 {times[int(len(times) * 0.95)] * 1000:.1f} ms, worst {times[-1] * 1000:.1f} ms over {seeks} random seeks"
        )
        print(
            f"    baseline fold-from-start to the same positions: median {statistics.median(base) * 1000:.0f} ms "
            f"→ {statistics.median(base) / statistics.median(times):.0f}x slower"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--chunk", type=int, default=200, help="lines per Output event (one SSH read)")
    ap.add_argument("--mode", choices=["batched", "naive", "both"], default="both")
    ap.add_argument("--record", action="store_true", help="also write every event through a real Recorder")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument(
        "--replay", type=int, metavar="EVENTS", help="benchmark replay seeks on a recording of this many events instead"
    )
    args = ap.parse_args()
    if args.replay:
        bench_replay(args.replay)
        return 0
    if args.mode != "both":
        r = asyncio.run(run_one(args.mode, args.lines, args.chunk, args.record))
        print(json.dumps(r) if args.json else "", end="\n" if args.json else "")
        if not args.json:
            report(r)
        return 0
    results = {}
    for m in ("batched", "naive"):  # each in a fresh interpreter: same starting memory, no warm caches
        cmd = [sys.executable, __file__, "--mode", m, "--lines", str(args.lines), "--chunk", str(args.chunk), "--json"]
        if args.record:
            cmd.append("--record")
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        results[m] = json.loads(out.strip().splitlines()[-1])
        report(results[m])
    b, n = results["batched"], results["naive"]
    grow = {k: max(m for _, m in r["rss"]) - r["rss_start"] for k, r in results.items()}
    print(
        f"ratio naive/batched: longest callback (CPU) {n['worst_cpu_ms'] / max(b['worst_cpu_ms'], 0.1):.1f}x, "
        f"worst wall stall {n['worst_stall_ms'] / max(b['worst_stall_ms'], 0.1):.1f}x, "
        f"p99 stall {n['p99_stall_ms'] / max(b['p99_stall_ms'], 0.1):.1f}x; "
        f"RSS growth batched {grow['batched']:+.0f} MiB, naive {grow['naive']:+.0f} MiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How long a freeze takes, and what part of it is k3tui's own work.

    .venv/bin/python bench/bench_freeze.py               # 1 and 4 simulated nodes, 64 captured nodes
    .venv/bin/python bench/bench_freeze.py --sim-nodes 8 --captured-nodes 256

Three figures, each the best of ``--rounds`` (the machine is shared):

1. **one simulated GB300 host** over real SSH (``k3tui.sim.server.SimHost``: an asyncssh
   server whose probe answers come from real processes) — the issue's "< 3 s" figure;
2. **N simulated hosts at once** (one SimHost each, one connection each, all frozen
   concurrently) — what a small multi-node deployment costs on this machine;
3. **N captured hosts** (:class:`~k3tui.scene.capture.CapturedHost` answering from the real
   H200 capture in ``tests/data``): no transport, no subprocess, so this is k3tui's own
   cost per node (probe fan-out, parsing, assembly, redaction) — the part that must stay
   small for a fleet freeze of 64 hosts; printed with the peak RSS.

The baseline in the same run: the time of the slowest single probe of figure 1 (a freeze
cannot be faster than its slowest probe); the ratio freeze/slowest-probe says how much the
fan-out and the phases add on top.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from k3tui.remote.ssh import connect  # noqa: E402
from k3tui.scene.capture import CapturedHost  # noqa: E402
from k3tui.scene.freeze import freeze  # noqa: E402
from k3tui.sim.server import SimHost  # noqa: E402

CAPTURE = REPO / "tests" / "data" / "h200-r580-local" / "probes.json"


async def freeze_sims(n: int) -> tuple[float, list]:
    sims = [SimHost(scenario="healthy") for _ in range(n)]
    await asyncio.gather(*(s.start() for s in sims))
    try:
        hosts = []
        for i, sim in enumerate(sims):
            kw = sim.connect_kwargs()
            kw["alias"] = f"gb300-sim-{i}"
            hosts.append(await connect(kw.pop("target"), **kw))
        t = time.monotonic()
        scenes = await asyncio.gather(*(freeze(h) for h in hosts))
        took = time.monotonic() - t
        await asyncio.gather(*(h.close() for h in hosts))
        return took, scenes
    finally:
        await asyncio.gather(*(s.stop() for s in sims))


async def freeze_captured(n: int) -> float:
    data = json.loads(CAPTURE.read_text())
    hosts = [CapturedHost(data, alias=f"node{i}") for i in range(n)]
    t = time.monotonic()
    await asyncio.gather(*(freeze(h, pid=416) for h in hosts))
    return time.monotonic() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim-nodes", type=int, default=4)
    ap.add_argument("--captured-nodes", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()

    one = [asyncio.run(freeze_sims(1)) for _ in range(a.rounds)]
    best, scenes = min(one, key=lambda x: x[0])
    slowest = max(p.seconds for p in scenes[0].probes)
    name = max(scenes[0].probes, key=lambda p: p.seconds).name
    print(
        f"1 simulated GB300 host over SSH: freeze {best:.3f} s (best of {a.rounds}; all: {', '.join(f'{x[0]:.3f}' for x in one)})"
    )
    print(
        f"  {len(scenes[0].probes)} probes, {sum(not p.ok for p in scenes[0].probes)} failed; slowest probe {name} {slowest:.3f} s; freeze/slowest-probe = {best / slowest:.2f}"
    )

    many = min(asyncio.run(freeze_sims(a.sim_nodes))[0] for _ in range(a.rounds))
    print(f"{a.sim_nodes} simulated hosts at once: freeze {many:.3f} s ({many / a.sim_nodes:.3f} s per node)")

    cap = min(asyncio.run(freeze_captured(a.captured_nodes)) for _ in range(a.rounds))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    one_cap = min(asyncio.run(freeze_captured(1)) for _ in range(a.rounds))
    print(
        f"{a.captured_nodes} captured H200 hosts (k3tui's own work, no transport): {cap:.3f} s ({cap / a.captured_nodes * 1000:.1f} ms per node; 1 node alone {one_cap * 1000:.1f} ms)"
    )
    print(f"peak RSS of this process: {rss:.0f} MiB")


if __name__ == "__main__":
    main()

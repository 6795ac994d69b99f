"""Fleet freeze of N simulated GB300 nodes: wall time and peak memory of the client.

    .venv/bin/python bench/bench_fleet.py                  # 64 nodes, concurrency 16
    .venv/bin/python bench/bench_fleet.py --nodes 16 --concurrency 8 16

Setup: a separate process starts N :class:`~k3tui.sim.server.SimHost` nodes (each its
own SSH port, host key, client key and known_hosts; trays of ``nvl72-2x4-healthy``, the
last one node 1 of ``multinode-odd-node``: driver r575, another image digest, an extra
LD_LIBRARY_PATH) and writes an inventory naming them. This process then runs the real
fleet freeze over that inventory (``k3tui.fleet.freeze.freeze_fleet``: connect, ~20
probes, container log, close — per node), so the client's time and memory are measured
apart from the servers' (which share the machine's CPU: on 2 cores the simulated hosts'
fake tools are most of the work).

Printed, each the best of ``--rounds``:

- wall time of the fleet freeze, per concurrency; the **baseline in the same run** is one
  node frozen alone, and ``N × one node`` is what a one-by-one freeze would cost;
- peak RSS of this (client) process before and after, and the Python-allocation peak of
  the fleet freeze alone (tracemalloc, a separate round so it does not slow the timing);
- the client's own CPU time (what k3tui costs; the simulated hosts' tools run on the same
  cores and are most of the wall time on a small machine);
- that the comparison named the planted odd node (a fleet freeze that is fast but wrong
  is not a result).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from k3tui.fleet.compare import differences  # noqa: E402
from k3tui.fleet.freeze import freeze_fleet  # noqa: E402
from k3tui.fleet.inventory import load_inventory  # noqa: E402


async def serve(n: int, inventory: str) -> None:
    """Server side: start N simulated nodes, write the inventory, wait for stdin to close."""
    from k3tui.sim.server import SimHost

    sims = [SimHost(scenario="nvl72-2x4-healthy", node=i % 2) for i in range(n - 1)]
    sims.append(SimHost(scenario="multinode-odd-node", node=1))
    for i in range(0, n, 8):
        await asyncio.gather(*(s.start() for s in sims[i : i + 8]))
    lines = ["[groups.bench]", 'description = "simulated GB300 trays"']
    for i, s in enumerate(sims):
        lines += [
            "[[groups.bench.hosts]]", f'name = "tray{i:02d}"', 'address = "127.0.0.1"', f"port = {s.port}",
            f'user = "{s.username}"', f'identity = "{s.client_key_path}"', f'known_hosts = "{s.known_hosts_path}"',
            f'role = "{"head" if i == 0 else "worker"}"',
        ]  # fmt: skip
    Path(inventory).write_text("\n".join(lines) + "\n")
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await asyncio.gather(*(s.stop() for s in sims), return_exceptions=True)


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def fleet(nodes, concurrency: int):  # noqa: ANN001, ANN201
    t, c = time.monotonic(), cpu()
    out = await freeze_fleet(nodes, concurrency=concurrency)
    out.client_cpu = cpu() - c
    return time.monotonic() - t, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[16])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--serve", metavar="INVENTORY", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        asyncio.run(serve(a.nodes, a.serve))
        return

    inv_path = f"/tmp/k3tui-bench-fleet-{time.time_ns()}.toml"
    t = time.monotonic()
    server = subprocess.Popen(
        [sys.executable, __file__, "--nodes", str(a.nodes), "--serve", inv_path],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready", "simulated nodes did not start"
        print(f"{a.nodes} simulated nodes started in {time.monotonic() - t:.1f} s (separate process)")
        nodes = load_inventory(inv_path).select("bench")
        rss0 = rss_mib()
        one = min(asyncio.run(fleet(nodes[:1], 1))[0] for _ in range(a.rounds))
        rss1 = rss_mib()
        print(f"baseline: 1 node alone {one:.2f} s  → one by one, {a.nodes} nodes would take ~{one * a.nodes:.0f} s")
        for c in a.concurrency:
            runs = [asyncio.run(fleet(nodes, c)) for _ in range(a.rounds)]
            best, out = min(runs, key=lambda r: r[0])
            slow = max(n.seconds for n in out.nodes)
            print(
                f"fleet freeze of {a.nodes} nodes, concurrency {c}: {best:.2f} s (best of {a.rounds}: "
                f"{', '.join(f'{r[0]:.2f}' for r in runs)}); {len(out.scenes)} frozen, {len(out.unreachable)} unreachable; "
                f"slowest node {slow:.2f} s; {one * a.nodes / best:.1f}x faster than one by one"
            )
            print(
                f"  client (k3tui) CPU {out.client_cpu:.1f} s of that {best:.1f} s wall; the rest is the {a.nodes} simulated "
                f"hosts' fake tools (a python process per probe) sharing this machine's {os.cpu_count()} cores"
            )
            odd = {d.fact: d.odd for d in differences(out.scenes, head=out.head)}
            last = nodes[-1].alias
            named = [f for f in ("driver.driver_version", "image.repo_digests", "container.env.LD_LIBRARY_PATH") if odd.get(f) == [last]]
            print(f"  odd node out: {last} named for {', '.join(named) or 'NOTHING (wrong!)'} ({len(odd)} differing facts)")
        rss2 = rss_mib()
        tracemalloc.start()
        asyncio.run(fleet(nodes, a.concurrency[0]))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(
            f"peak RSS of the client: {rss0:.0f} MiB after imports, {rss1:.0f} MiB after 1 node, {rss2:.0f} MiB after the fleet "
            f"(+{rss2 - rss1:.0f} MiB for {a.nodes} nodes); Python allocation peak of one fleet freeze {peak / 2**20:.1f} MiB"
        )
    finally:
        if server.stdin:
            server.stdin.close()
        server.wait(timeout=60)
        Path(inv_path).unlink(missing_ok=True)


if __name__ == "__main__":
    main()

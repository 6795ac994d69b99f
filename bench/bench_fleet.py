"""Fleet freeze of N simulated GB300 nodes: wall time and peak memory of the client.

    .venv/bin/python bench/bench_fleet.py                  # 64 nodes, concurrency 16
    .venv/bin/python bench/bench_fleet.py --nodes 16 --concurrency 8 16
    .venv/bin/python bench/bench_fleet.py --only sim --sim-fast-path off on   # the simulator before/after
    .venv/bin/python bench/bench_fleet.py --per-probe --sim-fast-path off on  # each probe on one node

Setup: a separate process starts N :class:`~k3tui.sim.server.SimHost` nodes (each its
own SSH port, host key, client key and known_hosts; trays of ``nvl72-2x4-healthy``, the
last one node 1 of ``multinode-odd-node``: driver r575, another image digest, an extra
LD_LIBRARY_PATH) and writes an inventory naming them. This process then runs the real
fleet freeze over that inventory (``k3tui.fleet.freeze.freeze_fleet``: connect, ~20
probes, container log, close — per node), so the client's time and memory are measured
apart from the servers' (which share the machine's CPU). The simulated hosts answer the
freeze's probes without starting processes (:mod:`k3tui.sim.fastpath`); ``--sim-fast-path
off`` starts ``bash`` and the fake tools for every command, as before it existed: the
baseline of the simulator's own cost, measured in the same run.

Printed, each the best of ``--rounds``:

- wall time of the fleet freeze, per concurrency; the **baseline in the same run** is one
  node frozen alone, and ``N × one node`` is what a one-by-one freeze would cost;
- peak RSS of this (client) process before and after, and the Python-allocation peak of
  the fleet freeze alone (tracemalloc, a separate round so it does not slow the timing);
- the client's own CPU time (what k3tui costs; the simulated hosts run on the same cores —
  with ``--sim-fast-path off`` their fake tools are most of the wall time on a small machine);
- that the comparison named the planted odd node (a fleet freeze that is fast but wrong
  is not a result);
- how the simulated hosts answered the exec requests of all rounds: in bash (processes
  started), computed in process, remembered (printed by the server process as it stops).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from k3tui.fleet.compare import differences, unknown_facts  # noqa: E402
from k3tui.fleet.freeze import freeze_fleet  # noqa: E402
from k3tui.fleet.inventory import load_inventory  # noqa: E402


async def serve(n: int, inventory: str, fast_path: bool = True) -> None:
    """Server side: start N simulated nodes, write the inventory, wait for stdin to close."""
    from k3tui.sim.server import SimHost

    sims = [SimHost(scenario="nvl72-2x4-healthy", node=i % 2, fast_path=fast_path) for i in range(n - 1)]
    sims.append(SimHost(scenario="multinode-odd-node", node=1, fast_path=fast_path))
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
    counts: dict[str, float] = {k: sum(s.counts[k] for s in sims) for k in sims[0].counts}
    counts["rss_mib"] = rss_mib()
    print("counts " + json.dumps(counts), flush=True)
    await asyncio.gather(*(s.stop() for s in sims), return_exceptions=True)


CAPTURE = REPO / "tests" / "data" / "h200-r580-local" / "probes.json"


async def serve_captured(n: int, inventory: str) -> None:
    """Server side, light: N asyncssh servers (own host key each) answering every probe from a real
    H200 capture (no subprocess), the last one with driver 575 planted. Measures k3tui + SSH, not a simulator."""
    import asyncssh

    data = json.loads(CAPTURE.read_text())
    odd = json.loads(CAPTURE.read_text().replace("580.159.04", "575.57.08"))
    tmp = Path(inventory).with_suffix(".d")
    tmp.mkdir()
    client = asyncssh.generate_private_key("ssh-ed25519")
    client.write_private_key(str(tmp / "id"))
    auth = asyncssh.import_authorized_keys(client.export_public_key().decode())

    def handler(answers: dict[str, dict]):  # noqa: ANN202
        by_cmd = {v["command"]: v for v in answers.values()}

        async def process(proc: asyncssh.SSHServerProcess) -> None:
            cmd = proc.command or ""
            if cmd.startswith("date +%s"):
                proc.stdout.write(f"{time.time():.6f}\n")
                proc.exit(0)
                return
            v = by_cmd.get(cmd)
            if v is None:
                proc.stderr.write("sh: not captured\n")
                proc.exit(127)
                return
            proc.stdout.write(v["stdout"])
            proc.stderr.write(v.get("stderr", ""))
            proc.exit(v.get("status") or 0)

        return process

    lines = ["[groups.bench]"]
    listeners = []
    for i in range(n):
        key = asyncssh.generate_private_key("ssh-ed25519")
        lst = await asyncssh.listen(
            "127.0.0.1", 0, server_host_keys=[key], authorized_client_keys=auth, encoding="utf-8",
            process_factory=handler(odd if i == n - 1 else data),
        )  # fmt: skip
        port = lst.sockets[0].getsockname()[1]
        (tmp / f"kh{i}").write_text(f"[127.0.0.1]:{port} {key.export_public_key().decode().strip()}\n")
        listeners.append(lst)
        lines += [
            "[[groups.bench.hosts]]", f'name = "cap{i:02d}"', 'address = "127.0.0.1"', f"port = {port}",
            f'identity = "{tmp / "id"}"', f'known_hosts = "{tmp / f"kh{i}"}"',
        ]  # fmt: skip
    Path(inventory).write_text("\n".join(lines) + "\n")
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for lst in listeners:
        lst.close()


def rss_mib() -> float:
    """Peak RSS of this process (VmHWM: since exec or :func:`reset_peak_rss`; ru_maxrss would
    also count the RSS of the process that forked it)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak_rss() -> None:
    """Start the peak RSS again from the current RSS (each kind of run measured on its own)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def fleet(nodes, concurrency: int):  # noqa: ANN001, ANN201
    t, c = time.monotonic(), cpu()
    out = await freeze_fleet(nodes, concurrency=concurrency)
    out.client_cpu = cpu() - c
    return time.monotonic() - t, out


async def per_probe(modes: list[str], asks: int = 5) -> None:
    """Each command of one node's freeze, asked ``asks`` times over SSH: best wall ms and CPU ms per ask
    (this process: client, server and the server's children), simulator fast path off and on."""
    import asyncssh

    from k3tui.scene.probes import BY_NAME, probe_commands, stdin_for
    from k3tui.sim.server import SimHost

    def all_cpu() -> float:
        return sum(
            r.ru_utime + r.ru_stime for r in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
        )

    table: dict[str, list[str]] = {}
    totals: list[float] = []
    for mode in modes:
        async with SimHost("nvl72-2x4-healthy", fast_path=mode == "on") as sim:
            pid = int(next((sim.root / "ctr").glob("*/pid")).read_text())
            cmds = probe_commands(container=sim.state["container"]["name"], pid=pid)
            for api in ("docker_inspect", "docker_image_inspect", "docker_logs", "proc_versions"):
                cmds.pop(api)  # served by the Docker API / not sent when there is a container
            cmds["fleet log"] = f"date +%z; docker logs --timestamps --tail 5000 {sim.state['container']['name']} 2>&1"
            cmds["connect clock"] = "date +%s.%N"
            totals.append(0.0)
            async with asyncssh.connect(**sim.asyncssh_kwargs()) as conn:
                for name, cmd in cmds.items():
                    best, c0 = 1e9, all_cpu()
                    for _ in range(asks):
                        t = time.monotonic()
                        await conn.run(cmd, input=(stdin_for(BY_NAME[name]) or "") if name in BY_NAME else "")
                        best = min(best, time.monotonic() - t)
                    totals[-1] += (all_cpu() - c0) / asks
                    table.setdefault(name, []).append(f"{best * 1000:7.1f} {(all_cpu() - c0) / asks * 1000:7.1f}")
    print(
        f"per probe on one simulated node, {asks} asks each: best wall ms, CPU ms per ask; fast path "
        + " | ".join(modes)
    )
    for name, cells in table.items():
        print(f"  {name:22s} " + " | ".join(cells))
    print(f"  {'CPU of one node freeze':22s} " + " | ".join(f"{'':7s} {t * 1000:7.0f}" for t in totals))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[16])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--serve", metavar="INVENTORY", help=argparse.SUPPRESS)
    ap.add_argument("--kind", choices=["sim", "sim-slow", "captured"], help=argparse.SUPPRESS)
    ap.add_argument("--only", choices=["sim", "captured"], help="run one of the two figures")
    ap.add_argument("--per-probe", action="store_true", help="instead: time each probe command on one simulated node")
    ap.add_argument(
        "--sim-fast-path", choices=["on", "off"], nargs="+", default=["on"],
        help="simulated hosts answer the freeze's probes without processes (on), or bash + fake tools (off)",
    )  # fmt: skip
    a = ap.parse_args()
    if a.serve:
        if a.kind == "captured":
            asyncio.run(serve_captured(a.nodes, a.serve))
        else:
            asyncio.run(serve(a.nodes, a.serve, fast_path=a.kind == "sim"))
        return
    if a.per_probe:
        asyncio.run(per_probe(a.sim_fast_path))
        return
    if a.only in (None, "captured"):
        bench(a, "captured")
    if a.only in (None, "sim"):
        for mode in a.sim_fast_path:
            bench(a, "sim" if mode == "on" else "sim-slow")


def bench(a: argparse.Namespace, kind: str) -> None:
    what = {
        "sim": "simulated GB300 nodes (SimHost, fast path on: the freeze's probes answered without processes)",
        "sim-slow": "simulated GB300 nodes (SimHost, fast path off: bash + a fake tool process per probe)",
        "captured": "nodes over real SSH answering from a real H200 capture (no subprocess: k3tui + SSH only)",
    }[kind]
    print(f"=== {a.nodes} {what}")
    reset_peak_rss()

    inv_path = f"/tmp/k3tui-bench-fleet-{time.time_ns()}.toml"
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    children0 = r0.ru_utime + r0.ru_stime
    t = time.monotonic()
    server = subprocess.Popen(
        [sys.executable, __file__, "--nodes", str(a.nodes), "--serve", inv_path, "--kind", kind],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready", (
            "simulated nodes did not start"
        )
        print(f"{a.nodes} nodes started in {time.monotonic() - t:.1f} s (separate process)")
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
            rest = {
                "sim": "the simulated hosts' SSH server (their probes answered in process, see the exec counts)",
                "sim-slow": "the simulated hosts' fake tools (a python process per probe)",
                "captured": "the one-process Python SSH server answering all 64 nodes",
            }[kind]
            print(
                f"  client (k3tui) CPU {out.client_cpu:.1f} s of that {best:.1f} s wall; the rest is {rest}, "
                f"sharing this machine's {os.cpu_count()} cores with the client"
            )
            odd = {d.fact: d.odd for d in differences(out.scenes, head=out.head)}
            last = nodes[-1].alias
            planted = ("driver.driver_version",) + (
                ("image.repo_digests", "container.env.LD_LIBRARY_PATH") if kind != "captured" else ()
            )
            named = [f for f in planted if odd.get(f) == [last]]
            unknown = unknown_facts(out.scenes)
            print(
                f"  odd node out: {last} named for {', '.join(named) or 'NOTHING (wrong!)'} of {len(planted)} planted; "
                f"{len(odd)} differing facts; {len(unknown)} facts unknown on some node (probe failed or timed out)"
            )
        rss2 = rss_mib()
        tracemalloc.start()
        asyncio.run(fleet(nodes, a.concurrency[0]))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(
            f"peak RSS of the client: {rss0:.0f} MiB at start, {rss1:.0f} MiB after 1 node, {rss2:.0f} MiB after the fleet "
            f"(+{rss2 - rss1:.0f} MiB for {a.nodes} nodes); Python allocation peak of one fleet freeze {peak / 2**20:.1f} MiB"
        )
    finally:
        if server.stdin:
            server.stdin.close()
        tail = server.stdout.read() if server.stdout else ""
        server.wait(timeout=60)
        for line in tail.splitlines():
            if line.startswith("counts "):
                c = json.loads(line[7:])
                freezes = a.nodes * (a.rounds * len(a.concurrency) + 1) + a.rounds
                print(
                    f"  exec requests of the simulated hosts, all {freezes} node freezes: {c['bash']} run in bash "
                    f"({c['bash'] / freezes:.1f} per node freeze), {c['computed']} computed in process, "
                    f"{c['remembered']} remembered; peak RSS of the server process {c['rss_mib']:.0f} MiB"
                )
        Path(inv_path).unlink(missing_ok=True)
        shutil.rmtree(Path(inv_path).with_suffix(".d"), ignore_errors=True)
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(f"  (server process CPU, all rounds, start-up included: {r.ru_utime + r.ru_stime - children0:.1f} s)")


if __name__ == "__main__":
    main()

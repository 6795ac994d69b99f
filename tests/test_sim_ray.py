"""The simulated host's ``ray`` (a FAKE, k3tui/sim/ray.py) answers like Ray 2.4x, over real SSH."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path

from k3tui.fleet.launch import parse_ray_status
from k3tui.remote.ssh import connect
from k3tui.sim import SimHost
from k3tui.sim.pathmap import alive, started


async def test_start_status_and_stop_across_two_simulated_trays() -> None:
    async with AsyncExitStack() as stack:
        hosts = []
        for node in (0, 1):
            sim = await stack.enter_async_context(SimHost("nvl72-2x4-healthy", node=node))
            host = await connect(**(sim.connect_kwargs() | {"alias": f"tray0{node + 1}"}))
            stack.push_async_callback(host.close)
            hosts.append(host)
        head, worker = hosts
        none = await head.run("ray status")
        assert none.status == 1 and none.stderr.startswith("ConnectionError: Could not find any running Ray instance")
        # without --block, as real Ray, the command returns and the node stays up
        up = await head.run("ray start --head --port 6390")
        assert up.status == 0 and "Ray runtime started." in up.stdout
        assert "ray start --address='10.42.0.11:6390'" in up.stdout
        again = await head.run("ray start --head --port 6390")
        assert again.status == 1 and "but is already running at 10.42.0.11:6390" in again.stderr
        joined = await worker.run("ray start --address=10.42.0.11:6390")
        assert joined.status == 0 and "Local node IP: 10.42.0.12" in joined.stdout
        status = await head.run("ray status")
        lines = status.stdout.splitlines()
        assert lines[0].startswith("======== Autoscaler status: ") and lines[1:4] == [
            "Node status",
            "-" * 63,
            "Active:",
        ]
        assert [x.split()[0] for x in lines[4:6]] == ["1", "1"] and lines[6] == "Pending:"
        assert " 0.0/8.0 GPU" in lines and " (no resource demands)" in lines
        assert parse_ray_status(status.stdout) == (2, 8.0)
        # the worker sees the same cluster by address
        assert parse_ray_status((await worker.run("ray status --address 10.42.0.11:6390")).stdout) == (2, 8.0)
        stopped = await worker.run("ray stop")
        assert stopped.status == 0 and "Stopped all" in stopped.stdout
        assert parse_ray_status((await head.run("ray status")).stdout) == (1, 4.0)
        assert "Stopped all" in (await head.run("ray stop")).stdout
        assert "Did not find any active Ray processes." in (await head.run("ray stop")).stdout
        assert (await head.run("ray status --address 10.42.0.11:6390")).status == 1
        assert (await head.run("ray --version")).stdout.startswith("ray, version 2.")


def test_parse_ray_status_reads_rays_layouts() -> None:
    old = "Node status\n---\nHealthy:\n 1 ray.head.default\n 2 ray.worker.gpu\nPending:\n (no pending nodes)\n"
    assert parse_ray_status(old + "Usage:\n 0.0/10.0 CPU\n 2.0/12.0 GPU\n") == (3, 12.0)
    assert parse_ray_status("ConnectionError: Could not find any running Ray instance.") is None


def test_a_process_is_its_pid_and_start_time_so_a_reused_pid_is_not_the_old_process() -> None:
    me = os.getpid()
    since = started(me)
    assert since is not None and alive(me) and alive(me, since)
    assert not alive(me, since + 1) and not alive(me, since - 1)
    gone = subprocess.Popen(["true"])  # noqa: S607
    gone.wait()
    assert not alive(gone.pid) and not alive(gone.pid, since) and started(gone.pid) is None


async def test_a_stale_record_whose_pid_another_process_now_has_is_no_node_and_is_never_signalled() -> None:
    """A node record outlives its process when the process was KILLed; on a host with pid_max 32768
    a later process (here a ``sleep``) may get the same pid. That process is no Ray head: a new
    head starts on the port, ``ray status`` counts one node, ``ray stop`` leaves the process be."""
    async with AsyncExitStack() as stack:
        sim = await stack.enter_async_context(SimHost("nvl72-2x4-healthy", node=0))
        host = await connect(**(sim.connect_kwargs() | {"alias": "tray01"}))
        stack.push_async_callback(host.close)
        other = subprocess.Popen(["sleep", "60"])  # noqa: S607
        stack.callback(other.kill)
        since = started(other.pid)
        assert since is not None
        d = Path(tempfile.gettempdir()) / f"k3sim-ray-{os.getpid()}" / "6391"
        d.mkdir(parents=True, exist_ok=True)
        for n, root in enumerate(("/elsewhere", str(sim.root))):  # another host's head, and one of this host
            stale = {"node_id": f"{n:056x}", "pid": other.pid, "since": since - 1 - n, "root": root,
                     "hostname": "gone", "ip": "10.42.0.99", "head": True, "gpus": 4.0, "cpus": 1.0,
                     "memory_gib": 1.0, "object_store_gib": 1.0, "started": 0.0}  # fmt: skip
            (d / f"node-{stale['node_id']}.json").write_text(json.dumps(stale))
        assert (await host.run("ray stop")).stdout.strip().endswith("Did not find any active Ray processes.")
        up = await host.run("ray start --head --port 6391")
        assert up.status == 0 and "Ray runtime started." in up.stdout, up.stderr
        assert parse_ray_status((await host.run("ray status --address 127.0.0.1:6391")).stdout) == (1, 4.0)
        assert "Stopped all 5 Ray processes." in (await host.run("ray stop")).stdout
        assert other.poll() is None, "the process that got a dead node's pid was signalled"
        assert not list(d.glob("node-*.json")), "the stale records are gone"

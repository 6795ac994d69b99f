"""The simulated host's ``ray`` (a FAKE, k3tui/sim/ray.py) answers like Ray 2.4x, over real SSH."""

from __future__ import annotations

from contextlib import AsyncExitStack

from k3tui.fleet.launch import parse_ray_status
from k3tui.remote.ssh import connect
from k3tui.sim import SimHost


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

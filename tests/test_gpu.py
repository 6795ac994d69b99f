"""GPU sample parsers on REAL captures, and the NVML sampler script run for real on this (GPU-less) machine."""

from __future__ import annotations

import json
import subprocess
import sys

from k3tui import events as ev
from k3tui.gpu import parse_sampler_line, parse_smi_rows, total_used
from k3tui.gpu.parse import SmiTicks, parse_compute_apps
from k3tui.gpu.sampler import SAMPLER, GpuSampler, _payload, smi_command


def test_real_two_gpu_lms_loop_groups_rows_into_ticks(shared):
    lines = (shared / "fixtures" / "hosts" / "h200x2-r580" / "smi_loop.txt").read_text().splitlines()
    samples = parse_smi_rows(lines)
    assert len(samples) == len(lines) // 2 == 35
    assert all([g.index for g in s.gpus] == [0, 1] for s in samples)
    used0 = [s.gpus[0].used_mib for s in samples]
    assert max(used0) == 33295 and used0[0] == 0 and used0[-1] == 0
    assert samples[0].gpus[0].total_mib == 143771 and samples[0].source == "nvidia-smi"
    # The real capture shows memory growing during load: the sum is monotone up to the peak.
    peak = used0.index(33295)
    assert used0[:peak] == sorted(used0[:peak])


def test_incremental_ticks_equal_the_batch_parse_whatever_the_chunking(shared):
    lines = (shared / "fixtures" / "hosts" / "h200x2-r580" / "smi_loop.txt").read_text().splitlines()
    t = SmiTicks()
    got = []
    for i in range(0, len(lines), 3):
        got += t.feed(lines[i : i + 3])
    got += t.flush()
    assert [total_used(s) for s in got] == [total_used(s) for s in parse_smi_rows(lines)]


def test_header_and_garbage_rows_are_skipped():
    rows = [
        "timestamp, index, memory.used [MiB], memory.total [MiB], utilization.gpu [%]",
        "oops",
        "2026/11/30 03:25:12.319, 0, 10, 100, 1",
    ]
    (s,) = parse_smi_rows(rows)
    assert s.gpus[0].used_mib == 10 and s.gpus[0].util == 1


def test_compute_apps_of_a_real_idle_host_and_a_busy_one(shared):
    idle = (shared / "fixtures" / "hosts" / "h200-r580" / "nvidia_smi_apps.txt").read_text()
    assert parse_compute_apps(idle) == []
    busy = parse_compute_apps("1234, /usr/bin/python3, 33290\n")
    assert busy == [ev.GpuProc(pid=1234, name="/usr/bin/python3", used_mib=33290.0)]


def test_sampler_lines_parse_to_events():
    s = parse_sampler_line('{"t":1.0,"g":[[0,644.9,143771.0,0],[1,1.0,143771.0,null]],"p":[[0,77,"vllm serve",600.0]]}')
    assert isinstance(s, ev.GpuSample) and s.source == "nvml" and s.gpus[1].util is None
    assert s.processes == [ev.GpuProc(gpu=0, pid=77, name="vllm serve", used_mib=600.0)]
    x = parse_sampler_line('{"xid":[3,79]}')
    assert isinstance(x, ev.XidEvent) and (x.gpu, x.xid) == (3, 79)
    assert parse_sampler_line('{"hello":{"driver":"580.159.04"}}') == {"hello": {"driver": "580.159.04"}}
    assert parse_sampler_line("not json") is None and parse_sampler_line("[1]") is None


def test_the_sampler_runs_under_python_S_and_fails_cleanly_without_nvml(tmp_path):
    """The real script + the real pynvml.py in a bare folder, exactly as shipped to a host."""
    sampler, nvml, _ = _payload()
    (tmp_path / "nvml_sampler.py").write_text(sampler)
    (tmp_path / "pynvml.py").write_text(nvml)
    proc = subprocess.run(
        [sys.executable, "-S", str(tmp_path / "nvml_sampler.py"), "0", "1"], capture_output=True, text=True, timeout=30
    )
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert json.loads(lines[0])["error"].startswith("NVML:")


def test_fallback_command_matches_the_parser_columns():
    assert smi_command(250).endswith("--format=csv,noheader,nounits -lms 250")
    assert "timestamp,index,memory.used,memory.total,utilization.gpu" in smi_command()
    assert SAMPLER.exists()


async def test_sampler_on_a_host_without_nvidia_smi_says_why_and_samples_nothing():
    from k3tui.remote.local import LocalHost

    events: list = []
    async with LocalHost(emit=events.append) as host:
        host_path = await host.run("command -v nvidia-smi")
        sampler = GpuSampler(host, events.append)
        if host_path.stdout.strip():  # a GPU machine: the real thing must sample
            assert await sampler.sample_once() is not None
            return
        assert await sampler.sample_once() is None
        assert sampler.source == "" and "nvidia-smi" in sampler.why_not
        assert not await sampler.start()


async def _sample_sim(prefer: str):
    """sample_once, then a short stream, on the simulated GB300 host (real SSH, real pynvml.py)."""
    import asyncio

    from k3tui.remote.ssh import connect
    from k3tui.sim import SimHost

    events: list = []
    async with SimHost(scenario="healthy") as sim:
        host = await connect(emit=events.append, **sim.connect_kwargs())
        try:
            sampler = GpuSampler(host, events.append, interval_ms=100, prefer=prefer)
            one = await sampler.sample_once()
            shipped = await host.run('ls "$HOME"/.k3tui/gpu-*/ 2>/dev/null')
            assert await sampler.start()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while len([e for e in events if isinstance(e, ev.GpuSample)]) < 4 and loop.time() < deadline:
                await asyncio.sleep(0.1)
            await sampler.stop()
        finally:
            await host.close()
    return sampler, one, shipped.stdout, [e for e in events if isinstance(e, ev.GpuSample)]


async def test_nvml_sampler_travels_over_ssh_and_reads_all_eight_simulated_gpus():
    """pynvml.py + the sampler go over SSH stdin and run under the host's python3 -S."""
    sampler, one, shipped, samples = await _sample_sim("auto")
    assert "nvml_sampler.py" in shipped and "pynvml.py" in shipped
    assert sampler.source == "nvml", sampler.why_not
    assert sampler.hello.get("driver") == "580.95.05" and len(sampler.hello.get("gpus", [])) == 8
    assert one is not None and [g.index for g in one.gpus] == list(range(8)) and one.gpus[0].total_mib == 284208.0
    assert len(samples) >= 4 and all(s.source == "nvml" and len(s.gpus) == 8 and s.host == "gb300-sim" for s in samples)


async def test_nvidia_smi_fallback_samples_the_same_gpus_without_shipping_code():
    sampler, one, shipped, samples = await _sample_sim("nvidia-smi")
    assert sampler.source == "nvidia-smi" and "nvml_sampler.py" not in shipped
    assert one is not None and [g.index for g in one.gpus] == list(range(8)) and one.gpus[0].total_mib == 284208.0
    assert len(samples) >= 4 and all(s.source == "nvidia-smi" and len(s.gpus) == 8 for s in samples)

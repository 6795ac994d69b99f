"""The ``live-inference`` stop condition on SIMULATED hosts and on this machine.

Several simulated hosts share this machine: one host's ``vllm serve`` must not be "live
inference" on another (the recordings of ``k3tui demo`` once showed a FAIL on the healthy
scenario: another SimHost's ``vllm serve`` seen through this machine's ``ps``), while a
``vllm serve`` running on the host itself still trips the condition — on a simulated host
and on a real one (here, this machine), by the same rule.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
import uuid

from k3tui import events as ev
from k3tui.ladder import LadderEngine, stops
from k3tui.profile import load_profile
from k3tui.remote.local import LocalHost
from k3tui.remote.ssh import connect
from k3tui.sim import SimHost


async def _probe(host) -> tuple[ev.CheckVerdict, stops.StopCheck]:
    """The ladder's own live-inference probe on ``host``, and the stop condition it gives."""
    events: list = []
    engine = LadderEngine(host, load_profile("kimi-k3"), events.append, events=events)
    try:
        await engine.probe_live_inference()
    finally:
        await engine.close()
    (verdict,) = [e for e in events if isinstance(e, ev.CheckVerdict) and e.check == "live-inference"]
    return verdict, next(s for s in stops.evaluate(events) if s.name == "live-inference")


async def _gpu_apps(host) -> list[str]:
    r = await host.run("nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader")
    assert r.ok, r.stderr
    return [line for line in r.stdout.splitlines() if line.strip()]


async def test_one_hosts_vllm_serve_is_live_inference_there_and_not_on_its_neighbour():
    async with SimHost(scenario="healthy") as sa, SimHost(scenario="healthy") as sb:
        async with connect(**sa.connect_kwargs()) as a, connect(**sb.connect_kwargs()) as b:
            # b is idle: only its container's placeholder main process runs (docker ps still
            # names the container's `vllm serve` command: that is configuration, not a process)
            verdict, stop = await _probe(b)
            assert (verdict.verdict, stop.verdict) == ("PASS", "PASS"), verdict.evidence
            run = await a.start_detached(
                "vllm serve moonshotai/Kimi-K3 --port 18123", run_id=f"live-{uuid.uuid4().hex[:8]}"
            )
            try:
                deadline = time.monotonic() + 20
                while not await _gpu_apps(a):  # until the replayed start-up holds GPU memory
                    assert time.monotonic() < deadline, "a's vllm serve never took GPU memory"
                    await asyncio.sleep(0.3)
                assert "vllm" in (await _gpu_apps(a))[0].lower()  # "VLLM::Worker", as on a real host
                assert await _gpu_apps(b) == [], "a's GPU users are not b's"
                verdict, stop = await _probe(b)
                assert (verdict.verdict, stop.verdict) == ("PASS", "PASS"), verdict.evidence
                verdict, stop = await _probe(a)
                assert (verdict.verdict, stop.verdict) == ("FAIL", "FAIL")
                assert "vllm serve moonshotai/Kimi-K3 --port 18123" in verdict.evidence
                assert stop.tripped and stop.evidence.startswith(f"{a.alias}: ")
            finally:
                await a.stop(run, grace=2.0)


async def test_a_vllm_serve_on_a_real_host_trips_the_same_rule():
    """This machine as the host: a process whose command line is a ``vllm serve`` is live inference."""
    # A short path: under pytest COLUMNS=80 reaches ps, which then cuts ``args`` at 80 columns.
    d = tempfile.mkdtemp(prefix="k3v-", dir="/tmp")
    fake = os.path.join(d, "vllm")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\nsleep 60\n")
    os.chmod(fake, 0o755)
    try:
        async with LocalHost() as host:
            run = await host.start_detached(
                f"{fake} serve /models/k3 --port 18124", run_id=f"live-{uuid.uuid4().hex[:8]}"
            )
            try:
                deadline = time.monotonic() + 10
                while "serve /models/k3" not in (await host.run("ps -eo args=")).stdout:
                    assert time.monotonic() < deadline, "the fake server never showed in ps"
                    await asyncio.sleep(0.1)
                verdict, stop = await _probe(host)
            finally:
                await host.stop(run, grace=1.0)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    assert (verdict.verdict, stop.verdict) == ("FAIL", "FAIL")
    assert f"{fake} serve /models/k3 --port 18124" in verdict.evidence

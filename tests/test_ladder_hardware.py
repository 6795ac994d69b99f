"""Hardware faults end to end: the SIMULATED GB300 host over real SSH, the real ladder engine.

Each hardware scenario plants a fault in real output formats (the kernel's Xid lines in the
journal, ``nvidia-smi -q -x`` ECC / row-remap / fabric sections, ``nvidia-smi nvlink -e``,
``nvidia-imex-ctl -N``). The baseline must FAIL on it, the ``hardware`` stop must trip with
what to do ("drain … and reset GPU 3 before any further step"), the next rung must be refused
until a reason is recorded, and — once climbing on — the fault must become the root of the
vLLM exception it caused. ``k3tui check`` over SSH must exit 1 naming the Xid and the GPU.
"""

from __future__ import annotations

import asyncio
import sys

import pytest

from k3tui import events as ev
from k3tui.errors import HardwareStop
from k3tui.ladder import stops
from tests.test_ladder_sim import _ladder, _of


def _stop(events) -> ev.CheckVerdict:  # noqa: ANN001
    return [e for e in _of(events, ev.CheckVerdict, rung="stop", check="hardware")][-1]


def _baseline(events) -> dict[str, ev.CheckVerdict]:  # noqa: ANN001
    return {e.check: e for e in _of(events, ev.CheckVerdict, rung="baseline")}


@pytest.mark.parametrize(
    ("scenario", "check", "stop_says", "root_says"),
    [
        ("runtime-xid79", "kernel-faults", "drain gb300-sim and reset GPU 3", "GPU 3: Xid 79 at"),
        ("gpu-ecc-row-remap", "gpu-memory", "drain gb300-sim and reset GPU 3", "GPU 3: Xid 95 at"),
        ("runtime-nvlink-errors", "kernel-faults", "drain gb300-sim and reset GPU 3", "GPU 3: Xid 74 at"),
    ],
)
async def test_a_hardware_fault_stops_the_ladder_and_becomes_the_root_of_the_runtime_failure(
    scenario, check, stop_says, root_says
) -> None:
    async def body(engine, events):  # noqa: ANN001, ANN202
        base = await engine.run_rung("baseline")
        with pytest.raises(HardwareStop, match="before any further step"):
            await engine.run_rung("minimal")
        refused = not _of(events, ev.RunStarted)
        engine.climb_past_hardware("test: see the software symptom the fault causes")
        minimal = await engine.run_rung("minimal")
        request = await engine.run_rung("request")
        return base, refused, minimal, request

    (base, refused, minimal, request), events = await _ladder(scenario, body)
    assert base.verdict == "FAIL" and _baseline(events)[check].verdict == "FAIL"
    stop = next(e for e in _of(events, ev.CheckVerdict, rung="stop", check="hardware"))
    assert stop.verdict == "FAIL" and stop_says + " before any further step" in stop.evidence, stop.evidence
    assert refused, "no run may start while the hardware stop stands"
    assert [d.reason for d in _of(events, ev.Decision, action=stops.OVERRIDE)] == [
        "test: see the software symptom the fault causes"
    ]
    assert (minimal.verdict, request.verdict) == ("PASS", "FAIL")
    (root,) = _of(events, ev.CheckVerdict, rung="diagnosis", check="host-fault")
    assert root_says in root.evidence and "the vLLM exception is its consequence" in root.evidence, root.evidence
    assert root.host == "gb300-sim" and "drain the node" in root.evidence
    found = _of(events, ev.ExceptionFound)[0]
    assert found.line.strip()[-60:] in root.evidence  # the exception is shown, as the consequence


async def test_nvlink_counters_growing_between_two_freezes_trip_the_stop() -> None:
    async def body(engine, events):  # noqa: ANN001, ANN202
        await engine.freeze_all(reason="operator")
        await asyncio.sleep(0.3)
        await engine.freeze_all(reason="operator")
        return stops.hardware(events)

    found, events = await _ladder("runtime-nvlink-errors", body)
    assert found.tripped and "GPU 3 NVLink crc_errors grew" in found.evidence, found.evidence


@pytest.mark.parametrize(
    ("scenario", "check", "needle", "stop_says"),
    [
        ("nvl72-clique-mismatch", "nodes-nvlink-domain", "gb300-sim-1 GPU 0", "drain gb300-sim-1"),
        ("nvl72-imex-down", "imex", "nvidia-imex: failed", "drain gb300-sim-1 and fix its imex fault"),
    ],
)
async def test_an_nvlink_domain_fault_of_one_tray_stops_the_two_tray_ladder(scenario, check, needle, stop_says) -> None:
    async def body(engine, events):  # noqa: ANN001, ANN202
        base = await engine.run_rung("baseline")
        with pytest.raises(HardwareStop):
            await engine.run_rung("minimal")
        return base

    base, events = await _ladder(scenario, body, nodes=2)
    v = _baseline(events)
    assert base.verdict == "FAIL" and v[check].verdict == "FAIL"
    frozen = {e.host: e.scene for e in _of(events, ev.SceneFrozen)}
    text = v[check].evidence + " ".join(str(f) for s in frozen.values() for f in s["host_faults"])
    assert needle in text, text
    assert stop_says in _stop(events).evidence, _stop(events).evidence
    assert not _of(events, ev.RunStarted)


async def test_healthy_trays_pass_every_hardware_check() -> None:
    async def body(engine, events):  # noqa: ANN001, ANN202
        return await engine.run_rung("baseline")

    _, events = await _ladder("nvl72-2x4-healthy", body, nodes=2)
    v = _baseline(events)
    for check in ("kernel-faults", "gpu-memory", "nvlink", "imex", "imex-channel", "nodes-nvlink-domain"):
        assert v[check].verdict == "PASS", (check, v[check].evidence)
    assert _stop(events).verdict == "PASS"


async def test_k3tui_check_over_ssh_exits_1_naming_the_xid_and_the_gpu() -> None:
    from k3tui.sim import SimHost

    async with SimHost(scenario="runtime-xid79") as sim:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "k3tui.cli", "check", sim.host_alias, "--ssh-config", sim.ssh_config_path,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 120)
    lines = [ln for ln in out.decode().splitlines() if "kernel-faults" in ln]
    assert proc.returncode == 1, (out.decode(), err.decode())
    (line,) = lines
    assert "FAIL" in line and "gb300-sim GPU 3: Xid 79 at " in line
    assert "GPU has fallen off the bus: drain the node, reset or replace the GPU" in line


async def test_ladder_cli_with_a_reason_then_replay_and_report_name_the_root_and_the_consequence(tmp_path) -> None:
    """`k3tui ladder --override-hardware REASON` over SSH, then `replay --headless` and REPORT.md (issue 14)."""
    from k3tui.commands.replay import headless_lines
    from k3tui.package import export_session
    from k3tui.replay import Replay
    from k3tui.sim import SimHost
    from tests.test_export import members

    rec = tmp_path / "s.k3rec"
    async with SimHost(scenario="runtime-xid79") as sim:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "k3tui.cli", "ladder", sim.host_alias, "--ssh-config", sim.ssh_config_path,
            "--override-hardware", "see the software symptom", "--record", str(rec),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(proc.communicate(), 240)
    text = out.decode()
    assert proc.returncode == 1 and "stage=runtime" in text.splitlines()[-1], text[-2000:]
    assert "decision: climb past a hardware stop — see the software symptom" in text
    rp = Replay(rec)
    rp.seek(rp.count)
    lines = headless_lines(rp)
    (root,) = [ln for ln in lines if ln.startswith("root: host fault ")]
    assert "gb300-sim GPU 3: Xid 79 at " in root and "the first root exception is its consequence" in root
    assert "next: drain gb300-sim and reset GPU 3 before any further step" in lines
    report = members(export_session(rec))["REPORT.md"].decode()
    assert "root: host fault gb300-sim GPU 3: Xid 79" in report
    assert "only once the hardware is fixed, at this layer" in report and "torch.AcceleratorError" in report


async def test_fleet_freeze_odd_node_table_names_the_tray_in_another_clique_and_the_root(tmp_path) -> None:
    """The two-tray fleet freeze: the odd-node-out table has the fabric fields, the report names the root."""
    from contextlib import AsyncExitStack

    from k3tui.fleet.cli import report
    from k3tui.fleet.compare import differences
    from k3tui.fleet.freeze import freeze_fleet
    from k3tui.fleet.inventory import load_inventory
    from tests.test_multinode_sim import _start, write_inventory

    async with AsyncExitStack() as stack:
        sims = await _start(stack, "nvl72-clique-mismatch", 2)
        inv = write_inventory(tmp_path / "inv.toml", "k3", sims, ["tray-a", "tray-b"], ["head", "worker"])
        out = await freeze_fleet(load_inventory(inv).select("k3"))
    found = {d.fact: d for d in differences(out.scenes, head=out.head)}
    for fact in ("fabric.cluster_uuid", "fabric.clique_id"):
        assert found[fact].values["tray-b"] != found[fact].values["tray-a"], found[fact]
    assert "imex.service" not in found  # IMEX is up on both: no difference to show
    text = "\n".join(report(out))
    assert "fabric ClusterUUID" in text or "fabric.cluster_uuid" in text, text
    assert "ROOT is a host fault: tray-b: fabric — its GPUs are in another NVLink domain" in text, text


def test_the_hardware_stop_as_a_pure_function_of_the_stream() -> None:
    """NVML's live critical-Xid events (the GPU sampler) trip it too; a recorded reason overrides it."""
    scene = {"gpus": [{"index": 3, "uuid": "GPU-x", "fabric": None}], "host_faults": []}
    healthy = [ev.SceneFrozen(host="gb300-02", scene=scene)]
    assert stops.hardware([]).verdict == "UNKNOWN"
    assert stops.hardware(healthy).verdict == "PASS"
    nvml = [*healthy, ev.XidEvent(host="gb300-02", gpu=3, xid=79, text="NVML critical error event: Xid 79")]
    found = stops.hardware(nvml)
    assert found.tripped and found.evidence.startswith("drain gb300-02 and reset GPU 3 before any further step")
    assert "GPU has fallen off the bus" in found.evidence
    app_fault = [*healthy, ev.XidEvent(host="gb300-02", gpu=3, xid=13, text="NVML critical error event: Xid 13")]
    assert stops.hardware(app_fault).verdict == "PASS"  # an application Xid is the workload's, not the node's
    assert not stops.overridden(nvml)
    assert not stops.overridden([*nvml, ev.Decision(action=stops.OVERRIDE, reason="  ")])  # a reason, not blanks
    assert stops.overridden([*nvml, ev.Decision(action=stops.OVERRIDE, reason="the GPU was reset at 03:20")])

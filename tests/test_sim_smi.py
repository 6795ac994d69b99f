"""The simulated nvidia-smi keeps the real tool's formats: rendered with the facts of the real
H200 capture it reproduces that capture byte for byte; rendered for GB300 it parses the same."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from k3tui.sim import smi
from k3tui.sim.scenario import host_list, load_raw

H200_UUID = "GPU-3495a0bd-4dbd-86a9-74cc-5906489ee0e9"


def _h200(power_avg: str, power_inst: str, temp: int) -> dict:
    """The real H200 host's facts (fixtures/hosts/h200-r580), in the simulator's host shape."""
    gpu = {
        "index": 0,
        "name": "NVIDIA H200",
        "arch": "Hopper",
        "uuid": H200_UUID,
        "serial": "1653724033839",
        "pdi": "0x63a8414597c38cfd",
        "bus_id": "00000000:00:06.0",
        "pci_domain": "0000",
        "pci_bus": "00",
        "pci_device": "06",
        "minor": 0,
        "module_id": 3,
        "board_id": "0x6",
        "temp": temp,
        "mem_temp": 37,
        "power_avg": power_avg,
        "power_inst": power_inst,
    }
    return {
        "driver": "580.159.04",
        "cuda": "13.0",
        "gpus": [gpu],
        "memory_total_mib": 143771,
        "memory_reserved_mib": 616,
        "persistence": "On",
        "mig": "Disabled",
        "ecc_uncorr": 0,
        "power_limit_w": 700.0,
        "power_min_w": 200.0,
        "pci_device_id": "233510DE",
        "c2c": "Disabled",
        "compute_cap": "9.0",
    }


def _capture(shared: Path, name: str) -> str:
    text = (shared / "fixtures" / "hosts" / "h200-r580" / name).read_text()
    lines = text.splitlines(keepends=True)
    if lines and lines[0].startswith("$ "):
        lines = lines[1:]
    if lines and lines[-1].startswith("[exit"):
        lines = lines[:-1]
    return "".join(lines)


def _stamp(text: str) -> str:
    return re.sub(r"[A-Z][a-z]{2} [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d \d{4}", "<TS>", text)


def test_plain_table_matches_the_real_capture(shared: Path) -> None:
    real = _capture(shared, "nvidia_smi.txt")
    # the plain capture was taken at another moment than -q: 37 C, 124 W
    ours = smi.plain(_h200("124.00", "80.00", 37), [])
    assert _stamp(ours) == _stamp(real)


def test_q_text_matches_the_real_capture(shared: Path) -> None:
    real = (shared / "fixtures/hosts/h200-r580/nvidia_smi_q.txt").read_text()
    assert _stamp(smi.query(_h200("111.52", "79.56", 36), [])) == _stamp(real)


def test_q_xml_matches_the_real_capture(shared: Path) -> None:
    real = (shared / "fixtures/hosts/h200-r580/nvidia_smi_q.xml").read_text()
    assert _stamp(smi.query_xml(_h200("116.94", "78.91", 36), [])) == _stamp(real)


def test_listing_and_csv_match_the_real_capture(shared: Path) -> None:
    host = _h200("124.00", "80.00", 37)
    assert smi.listing(host) == _capture(shared, "nvidia_smi_L.txt")
    apps = _capture(shared, "nvidia_smi_apps.txt")
    assert smi.csv_apps(host, [], ["pid", "process_name", "used_memory"], {"csv"}) == apps
    real = _capture(shared, "nvidia_smi_query.txt").splitlines()
    fields = real[0].replace(" [MiB]", "").replace(" [W]", "").replace(" [%]", "").split(", ")
    ours = smi.csv_gpus(host, [], fields, {"csv"}).splitlines()
    assert ours[0] == real[0]
    # same columns and units; values that move between captures (free memory, power, temp) aside
    for a, b in zip(ours[1].split(", "), real[1].split(", "), strict=True):
        assert a.split(" ")[1:] == b.split(" ")[1:]


def _gb300() -> dict:
    return host_list(load_raw("healthy"))[0]


PROCS = [{"pid": 4242, "name": f"VLLM::Worker_TP{i}", "gpus": [i], "used_mib": 265200} for i in range(8)]


def test_gb300_xml_has_the_real_structure_for_eight_gpus(shared: Path) -> None:
    real = ET.fromstring((shared / "fixtures/hosts/h200-r580/nvidia_smi_q.xml").read_text().split("\n", 2)[2])
    ours = ET.fromstring(smi.query_xml(_gb300(), PROCS).split("\n", 2)[2])
    assert ours.findtext("attached_gpus") == "8" and len(ours.findall("gpu")) == 8
    real_tags = [e.tag for e in real.find("gpu").iter() if e.tag not in ("processes", "process_info")]
    g0 = ours.find("gpu")
    ours_tags = [e.tag for e in g0.iter() if e.tag not in ("processes", "process_info")]
    assert [
        t
        for t in ours_tags
        if t not in ("gpu_instance_id", "compute_instance_id", "pid", "type", "process_name", "used_memory")
    ] == real_tags
    assert g0.findtext("product_name") == "NVIDIA GB300" and g0.findtext("product_architecture") == "Blackwell"
    assert g0.findtext("fb_memory_usage/total") == "284208 MiB" and g0.findtext("fb_memory_usage/used") == "265200 MiB"
    assert g0.findtext("processes/process_info/process_name") == "VLLM::Worker_TP0"
    uuids = [g.findtext("uuid") for g in ours.findall("gpu")]
    assert len(set(uuids)) == 8 and all(
        re.fullmatch(r"GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", u) for u in uuids
    )
    assert len({g.get("id") for g in ours.findall("gpu")}) == 8


def test_gb300_csv_noheader_nounits() -> None:
    out = smi.csv_gpus(
        _gb300(), PROCS, ["index", "name", "memory.total", "memory.used", "compute_cap"], {"csv", "noheader", "nounits"}
    )
    rows = [r.split(", ") for r in out.splitlines()]
    assert rows[0] == ["0", "NVIDIA GB300", "284208", "265200", "10.3"] and len(rows) == 8
    with_units = smi.csv_gpus(_gb300(), [], ["memory.total", "power.limit"], {"csv"})
    assert with_units.splitlines()[:2] == ["memory.total [MiB], power.limit [W]", "284208 MiB, 1400.00 W"]


def test_unknown_field_is_refused_like_the_real_tool() -> None:
    with pytest.raises(smi.BadField, match='Field "bogus" is not a valid field to query.'):
        smi.csv_gpus(_gb300(), [], ["index", "bogus"], {"csv"})


def test_plain_table_keeps_its_width_with_processes() -> None:
    out = smi.plain(_gb300(), PROCS)
    table = [line for line in out.splitlines()[1:] if line]
    assert {len(line) for line in table} == {91}
    assert "VLLM::Worker_TP7" in out and "265200MiB / 284208MiB" in out and "1400W" in out

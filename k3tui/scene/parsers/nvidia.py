"""Parsers for what the NVIDIA stack prints: every form of nvidia-smi, the kernel module's
version file, pynvml output, NCCL INFO lines, nvcc, and Xid lines from the kernel log.

Pure functions from text to plain dicts/lists, tested on real captures from H200 hosts
with driver 580 (``../shared/fixtures/hosts``). They accept the capture wrappers those
files carry (a leading ``$ command`` line, a trailing ``[exit N]``) and tolerate missing
fields: a value nvidia-smi reports as ``N/A`` or ``[N/A]`` becomes ``None``. Bad input
raises :class:`ParseError` with one line saying what was expected.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from ._common import ParseError, as_float, as_int, na, smi_xml_root, strip_transcript

# --- nvidia-smi -q -x ----------------------------------------------------------------


def parse_smi_xml(text: str) -> dict[str, Any]:
    """``nvidia-smi -q -x`` → driver, CUDA driver version and one dict per GPU (with processes)."""
    root = smi_xml_root(text)
    gpus = [_xml_gpu(i, g) for i, g in enumerate(root.findall("gpu"))]
    return {
        "driver_version": na(root.findtext("driver_version")),
        "cuda_driver_version": na(root.findtext("cuda_version")),
        "attached_gpus": as_int(root.findtext("attached_gpus")),
        "gpus": gpus,
        "processes": [p for g in gpus for p in g.pop("_processes")],
    }


def _xml_gpu(i: int, g: ET.Element) -> dict[str, Any]:
    def t(path: str) -> str | None:
        return na(g.findtext(path))

    procs = [
        {
            "gpu_index": i,
            "gpu_uuid": t("uuid"),
            "pid": as_int(p.findtext("pid")),
            "type": na(p.findtext("type")),
            "name": na(p.findtext("process_name")),
            "used_memory_mib": as_float(p.findtext("used_memory")),
        }
        for p in g.findall("processes/process_info")
    ]
    return {
        "index": as_int(t("minor_number")) if t("minor_number") is not None else i,
        "name": t("product_name"),
        "uuid": t("uuid"),
        "pci_bus_id": t("pci/pci_bus_id") or g.get("id"),
        "architecture": t("product_architecture"),
        "memory_total_mib": as_float(t("fb_memory_usage/total")),
        "memory_used_mib": as_float(t("fb_memory_usage/used")),
        "persistence_mode": t("persistence_mode"),
        "mig_mode": t("mig_mode/current_mig"),
        "ecc_mode": t("ecc_mode/current_ecc"),
        "ecc_errors": _xml_ecc(g),
        "vbios_version": t("vbios_version"),
        "_processes": procs,
    }


def _xml_ecc(g: ET.Element) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for scope in ("volatile", "aggregate"):
        node = g.find(f"ecc_errors/{scope}")
        if node is None:
            continue
        for child in node:
            val = na(child.text)
            if val is not None and re.fullmatch(r"\d+", val.strip()):
                out[f"{scope}.{child.tag}"] = int(val)
    return out


# --- nvidia-smi -q (text) --------------------------------------------------------------


def parse_smi_q(text: str) -> dict[str, Any]:
    """``nvidia-smi -q`` (full, or ``-d`` sections) → the same shape as :func:`parse_smi_xml`."""
    lines = strip_transcript(text).splitlines()
    if not any("NVSMI LOG" in ln for ln in lines[:5]):
        raise ParseError("not nvidia-smi -q output: no '==NVSMI LOG==' banner")
    top: dict[str, str] = {}
    gpus: list[dict[str, str]] = []
    stack: list[tuple[int, str]] = []
    for ln in lines:
        if m_gpu := re.match(r"^GPU ([0-9A-Fa-f]+:[0-9A-Fa-f:.]+)\s*$", ln):
            gpus.append({"__bus": m_gpu.group(1)})
            stack = []
            continue
        if not ln.strip() or "NVSMI LOG" in ln:
            continue
        indent = len(ln) - len(ln.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        key, colon, val = ln.partition(":")
        key, val = key.strip(), val.strip()
        if colon:
            (gpus[-1] if gpus else top)["/".join([k for _, k in stack] + [key])] = val
        if not colon or not val:
            stack.append((indent, key))
    return {
        "driver_version": na(top.get("Driver Version")),
        "cuda_driver_version": na(top.get("CUDA Version")),
        "attached_gpus": as_int(top.get("Attached GPUs")),
        "gpus": [_q_gpu(i, g) for i, g in enumerate(gpus)],
        "processes": [],
    }


def _q_gpu(i: int, g: dict[str, str]) -> dict[str, Any]:
    ecc = {
        k.replace("ECC Errors/", "").lower().replace(" ", "_").replace("/", "."): int(v)
        for k, v in g.items()
        if k.startswith("ECC Errors/") and v.isdigit()
    }
    return {
        "index": as_int(g.get("Minor Number")) if g.get("Minor Number") else i,
        "name": na(g.get("Product Name")),
        "uuid": na(g.get("GPU UUID")),
        "pci_bus_id": na(g.get("PCI/Bus Id")) or g["__bus"],
        "architecture": na(g.get("Product Architecture")),
        "memory_total_mib": as_float(g.get("FB Memory Usage/Total")),
        "memory_used_mib": as_float(g.get("FB Memory Usage/Used")),
        "persistence_mode": na(g.get("Persistence Mode")),
        "mig_mode": na(g.get("MIG Mode/Current")),
        "ecc_mode": na(g.get("ECC Mode/Current")),
        "ecc_errors": ecc,
        "vbios_version": na(g.get("VBIOS Version")),
    }


# --- nvidia-smi (the table) ------------------------------------------------------------

_BANNER = re.compile(r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)\s+CUDA Version:\s*(\S+)")
_ROW1 = re.compile(r"^\|\s+(\d+)\s+(.+?)\s+(On|Off)\s+\|\s+(\S+)\s+(\S+)\s+\|\s+(\S+)\s+\|$")
_ROW2 = re.compile(r"^\|.*?\|\s+(\d+)MiB\s*/\s*(\d+)MiB\s+\|")
_PROC = re.compile(r"^\|\s+(\d+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\S+)\s+(.+?)\s+(\d+)MiB\s+\|$")


def parse_smi_table(text: str) -> dict[str, Any]:
    """Plain ``nvidia-smi`` → driver, CUDA version, GPUs (index, name, bus id, memory) and processes."""
    lines = strip_transcript(text).splitlines()
    banner = next((m for m in map(_BANNER.search, lines) if m), None)
    if banner is None:
        raise ParseError("not nvidia-smi output: no 'NVIDIA-SMI … Driver Version … CUDA Version' banner")
    gpus: list[dict[str, Any]] = []
    procs: list[dict[str, Any]] = []
    for ln in lines:
        ln = ln.rstrip()
        if m := _ROW1.match(ln):
            gpus.append(
                {
                    "index": int(m[1]),
                    "name": m[2],
                    "persistence_mode": "Enabled" if m[3] == "On" else "Disabled",
                    "pci_bus_id": m[4],
                }
            )
        elif (m := _ROW2.match(ln)) and gpus and "memory_used_mib" not in gpus[-1]:
            gpus[-1].update(memory_used_mib=float(m[1]), memory_total_mib=float(m[2]))
        elif m := _PROC.match(ln):
            procs.append(
                {"gpu_index": int(m[1]), "pid": int(m[4]), "type": m[5], "name": m[6], "used_memory_mib": float(m[7])}
            )
    return {
        "smi_version": banner[1],
        "driver_version": banner[2],
        "cuda_driver_version": banner[3],
        "gpus": gpus,
        "processes": procs,
    }


# --- nvidia-smi -L, --query-*, topo ------------------------------------------------------

_LIST = re.compile(r"^GPU (\d+): (.+?) \(UUID: (GPU-[0-9a-fA-F-]+)\)")
_MIG = re.compile(r"^\s+MIG .*\(UUID: (MIG-[0-9a-fA-F-]+)\)")


def parse_smi_list(text: str) -> list[dict[str, Any]]:
    """``nvidia-smi -L`` → [{index, name, uuid}] (MIG devices listed under their GPU)."""
    out: list[dict[str, Any]] = []
    for ln in strip_transcript(text).splitlines():
        if m := _LIST.match(ln):
            out.append({"index": int(m[1]), "name": m[2], "uuid": m[3], "mig": []})
        elif (m := _MIG.match(ln)) and out:
            out[-1]["mig"].append(m[1])
    if not out and strip_transcript(text).strip():
        raise ParseError("not nvidia-smi -L output: no 'GPU N: NAME (UUID: GPU-…)' line")
    return out


def parse_csv_query(text: str, fields: tuple[str, ...] | list[str] | None = None) -> list[dict[str, Any]]:
    """``nvidia-smi --query-…  --format=csv[,noheader][,nounits]`` → one dict per row.

    With a header line the columns are named by it (units like ``[MiB]`` dropped);
    without one, ``fields`` names them. Values keep nvidia-smi's text, minus units;
    ``[N/A]`` / ``N/A`` become None.
    """
    rows = [ln for ln in strip_transcript(text).splitlines() if ln.strip()]
    if rows and _looks_like_header(rows[0]):
        names = [re.sub(r"\s*\[.*?\]\s*$", "", c.strip()) for c in rows[0].split(",")]
        rows = rows[1:]
    elif fields:
        names = list(fields)
    else:
        raise ParseError("CSV query output without a header, and no field list given")
    out = []
    for ln in rows:
        cells = [c.strip() for c in ln.split(", ")]
        if len(cells) != len(names):
            raise ParseError(f"CSV query row has {len(cells)} columns, expected {len(names)}: {ln[:80]!r}")
        out.append({n: na(re.sub(r"\s*(MiB|W|%|MHz|C)$", "", c)) for n, c in zip(names, cells, strict=True)})
    return out


def _looks_like_header(line: str) -> bool:
    first = line.split(",")[0].strip()
    return bool(re.fullmatch(r"[a-z_.]+(\s*\[.*\])?", first)) and not first.isdigit()


def gpus_from_query(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of ``--query-gpu`` → GPU dicts in the scene's key names."""
    return [
        {
            "index": as_int(r.get("index")),
            "name": r.get("name"),
            "uuid": r.get("uuid"),
            "pci_bus_id": r.get("pci.bus_id"),
            "driver_version": r.get("driver_version"),
            "memory_total_mib": as_float(r.get("memory.total")),
            "memory_used_mib": as_float(r.get("memory.used")),
            "compute_cap": r.get("compute_cap"),
            "persistence_mode": r.get("persistence_mode"),
            "mig_mode": r.get("mig.mode.current"),
            "ecc_uncorrected_volatile": as_int(r.get("ecc.errors.uncorrected.volatile.total")),
        }
        for r in rows
    ]


def apps_from_query(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of ``--query-compute-apps`` → process dicts."""
    return [
        {
            "gpu_uuid": r.get("gpu_uuid"),
            "pid": as_int(r.get("pid")),
            "name": r.get("process_name"),
            "used_memory_mib": as_float(r.get("used_memory") or r.get("used_gpu_memory")),
        }
        for r in rows
    ]


def parse_topo(text: str) -> dict[str, Any]:
    """``nvidia-smi topo -m`` → {gpus, links: {GPU0: {GPU1: "NV18"}}, cpu_affinity, nvlink}."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", ln) for ln in strip_transcript(text).splitlines()]
    head = next((ln for ln in lines if "GPU0" in ln and ln.startswith(("\t", " "))), None)
    if head is None:
        raise ParseError("not nvidia-smi topo -m output: no header row with GPU0")
    cols = head.split("\t")[1:]
    links: dict[str, dict[str, str]] = {}
    affinity: dict[str, str] = {}
    for ln in lines:
        if not re.match(r"^(GPU|NIC)\d+\t", ln):
            continue
        cells = [c.strip() for c in ln.split("\t")]
        row = dict(zip(cols, cells[1:], strict=False))
        links[cells[0]] = {k: v for k, v in row.items() if re.match(r"^(GPU|NIC)\d+$", k)}
        affinity[cells[0]] = row.get("CPU Affinity", "")
    nv = sorted({v for r in links.values() for v in r.values() if v.startswith("NV")})
    return {"gpus": [k for k in links if k.startswith("GPU")], "links": links, "cpu_affinity": affinity, "nvlink": nv}


# --- the kernel module, pynvml, NCCL, nvcc, Xid ---------------------------------------------

_NVRM = re.compile(r"NVRM version:\s+(.*?)\s{2,}(\d+\.\d+(?:\.\d+)?)\s")


def parse_proc_driver(text: str) -> dict[str, Any]:
    """``/proc/driver/nvidia/version`` → {driver_version, module, gcc}."""
    body = strip_transcript(text)
    m = _NVRM.search(body + " ")
    if m is None:
        raise ParseError("not /proc/driver/nvidia/version: no 'NVRM version: … NNN.NN' line")
    gcc = re.search(r"GCC version:\s+(.*)", body)
    return {
        "driver_version": m[2],
        "module": m[1].strip(),
        "open_kernel_module": "Open Kernel Module" in m[1],
        "gcc": gcc[1].strip() if gcc else None,
    }


def parse_pynvml(text: str) -> dict[str, Any]:
    """The NVML probe's lines (``driver … nvml … cuda_driver N`` / one line per GPU / ``procs [...]``)."""
    lines = strip_transcript(text).splitlines()
    head = next(
        (re.match(r"driver (\S+) nvml (\S+) cuda_driver (\d+)", ln) for ln in lines if ln.startswith("driver ")), None
    )
    if head is None:
        raise ParseError("not NVML probe output: no 'driver … nvml … cuda_driver …' line")
    gpus = []
    for ln in lines:
        m = re.match(r"^(\d+) (.+?) (GPU-[0-9a-f-]+) (\d+) (\d+) (\d+) \((\d+), (\d+)\) (\S+)$", ln)
        if m:
            mib = 1024 * 1024
            gpus.append(
                {
                    "index": int(m[1]),
                    "name": m[2],
                    "uuid": m[3],
                    "memory_total_mib": int(m[4]) / mib,
                    "memory_used_mib": int(m[5]) / mib,
                    "compute_cap": f"{m[7]}.{m[8]}",
                    "pci_bus_id": m[9],
                }
            )
    cuda = int(head[3])
    return {
        "driver_version": head[1],
        "nvml_version": head[2],
        "cuda_driver_version": f"{cuda // 1000}.{cuda % 1000 // 10}",
        "gpus": gpus,
    }


def parse_nccl_log(text: str) -> dict[str, Any]:
    """NCCL INFO lines → NCCL version, CUDA driver version, ranks, MNNVL, network plugin."""
    body = strip_transcript(text)
    ver = re.search(r"NCCL version (\S+)", body)
    if ver is None and "NCCL INFO" not in body:
        raise ParseError("no NCCL INFO lines")
    drv = re.search(r"cudaDriverVersion (\d+)", body)
    mnnvl = {int(x) for x in re.findall(r"MNNVL (\d)", body)}
    nranks = re.search(r"nranks (\d+)", body)
    net = re.search(r"Using network (\S+)", body)
    return {
        "nccl_version": ver[1] if ver else None,
        "cuda_driver_version": int(drv[1]) if drv else None,
        "nranks": int(nranks[1]) if nranks else None,
        "mnnvl": max(mnnvl) if mnnvl else None,
        "network": net[1] if net else None,
        "init_complete": "Init COMPLETE" in body,
    }


def parse_nvcc(text: str) -> dict[str, Any]:
    """``nvcc --version`` → {cuda_release, build}."""
    m = re.search(r"release (\d+\.\d+), V(\S+)", strip_transcript(text))
    if m is None:
        raise ParseError("not nvcc --version output")
    return {"cuda_release": m[1], "build": m[2]}


_XID = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+),\s*(.*)")


def parse_xid(text: str) -> dict[str, Any]:
    """The ``xid`` probe (kernel log lines with ``NVRM: Xid``) → {source, events}."""
    body = strip_transcript(text)
    src = re.search(r"^# source: (\S+)", body, re.M)
    events = []
    for ln in body.splitlines():
        if m := _XID.search(ln):
            pid = re.search(r"pid=(\d+)", m[3])
            events.append(
                {"pci": m[1], "xid": int(m[2]), "pid": int(pid[1]) if pid else None, "text": ln.strip()[:300]}
            )
    return {"source": src[1] if src else None, "events": events}


def parse_smi_loop(text: str) -> list[dict[str, Any]]:
    """``nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total,utilization.gpu -lms N`` rows."""
    out = []
    for ln in strip_transcript(text).splitlines():
        cells = [c.strip() for c in ln.split(",")]
        if len(cells) == 5 and re.match(r"\d{4}/\d\d/\d\d ", cells[0]):
            out.append(
                {
                    "time": cells[0],
                    "index": int(cells[1]),
                    "used_mib": as_float(cells[2]),
                    "total_mib": as_float(cells[3]),
                    "util": as_float(cells[4]),
                }
            )
    if not out and strip_transcript(text).strip():
        raise ParseError("no 'timestamp, index, used, total, util' rows")
    return out

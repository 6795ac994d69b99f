"""``nvidia-smi`` of the simulated host, rendered from real captures.

The layouts are the real tool's: the plain table's column widths, the ``-q`` text and
``-q -x`` XML (templates cut from a real H200 capture with driver 580, only the facts
that differ per GPU replaced by ``@{…}`` slots), and the CSV of ``--query-gpu`` with
its header names and units. A GB300 host changes the facts (name, memory, compute
capability, count, driver), never the format; the tests render the H200 facts back and
compare with the real capture byte for byte.

Stdlib only: this runs inside the fake ``nvidia-smi`` under ``python -S``.
"""

from __future__ import annotations

import re
import time
from typing import Any

from ..assets import asset

_SLOT = re.compile(r"@\{(\w+)\}")


def fill(template: str, values: dict[str, Any]) -> str:
    """Replace ``@{name}`` slots; an unknown slot is an error (a template typo must not pass silently)."""
    return _SLOT.sub(lambda m: str(values[m.group(1)]), template)


def _tpl(name: str) -> str:
    return asset("scenarios", "host", name).read_text(encoding="utf-8")


def smi_timestamp(now: float | None = None) -> str:
    """The timestamp nvidia-smi prints atop its table: ``Mon Nov 30 03:22:37 2026``."""
    return time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(now))


def gpu_view(host: dict[str, Any], procs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-GPU facts with memory use from the processes now on them."""
    out = []
    for g in host["gpus"]:
        on = [p for p in procs if g["index"] in p.get("gpus", [])]
        used = sum(int(p.get("used_mib", 0)) for p in on)
        total = int(host["memory_total_mib"])
        reserved = int(host["memory_reserved_mib"])
        v = dict(g)
        v.update(
            mem_total=total,
            mem_reserved=reserved,
            mem_used=used,
            # each figure is rounded from bytes on its own: the real capture shows total - reserved - used + 1
            mem_free=total - reserved - used + 1,
            util=int(host.get("util_busy", 0)) if on else 0,
            procs=on,
        )
        out.append(v)
    return out


# --- plain table --------------------------------------------------------------------

_SEP = "+-----------------------------------------+------------------------+----------------------+"
_WIDE = "+" + "-" * 89 + "+"


def plain(host: dict[str, Any], procs: list[dict[str, Any]], now: float | None = None) -> str:
    """``nvidia-smi`` with no arguments."""
    drv, cuda = host["driver"], host["cuda"]
    lines = [
        f"{smi_timestamp(now)}       ",
        _WIDE,
        f"| NVIDIA-SMI {drv:<23}Driver Version: {drv:<15}CUDA Version: {cuda:<9}|",
        _SEP,
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|=========================================+========================+======================|",
    ]
    for g in gpu_view(host, procs):
        pwr = int(float(g["power_avg"]))
        lines += [
            f"|{g['index']:>4}  {g['name']:<27}{host['persistence']:>6}  |{g['bus_id']:>19} {'Off':<3} |{host['ecc_uncorr']:>21} |",
            f"|{'N/A':>4}{g['temp']:>5}C{'P0':>6}{pwr:>15}W / {int(host['power_limit_w']):>4}W |"
            f"{g['mem_used']:>8}MiB / {g['mem_total']}MiB |{g['util']:>7}%{'Default':>13} |",
            f"|{'':41}|{'':24}|{host['mig']:>21} |",
            _SEP,
        ]
    lines += [
        "",
        _WIDE,
        "| Processes:                                                                              |",
        "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |",
        "|        ID   ID                                                               Usage      |",
        "|=========================================================================================|",
    ]
    rows = [(g["index"], p) for g in gpu_view(host, procs) for p in g["procs"]]
    if not rows:
        lines.append("|  No running processes found                                                             |")
    for idx, p in rows:
        name = p["name"] if len(p["name"]) <= 37 else "..." + p["name"][-34:]
        lines.append(f"|{idx:>5}{'N/A':>5}{'N/A':>5}{p['pid']:>17}{'C':>7}   {name:<37}{p['used_mib']:>6}MiB |")
    lines.append(_WIDE)
    return "\n".join(lines) + "\n"


def listing(host: dict[str, Any]) -> str:
    """``nvidia-smi -L``."""
    return "".join(f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})\n" for g in host["gpus"])


# --- -q and -q -x ---------------------------------------------------------------------

_KEY = 55


def _kv(indent: int, key: str, value: Any) -> str:
    return (" " * indent + key).ljust(_KEY) + f": {value}\n"


def _q_procs(procs: list[dict[str, Any]]) -> str:
    if not procs:
        return _kv(4, "Processes", "None")
    out = "    Processes\n"
    for p in procs:
        out += _kv(8, "GPU instance ID", "N/A") + _kv(8, "Compute instance ID", "N/A")
        out += _kv(8, "Process ID", p["pid"]) + _kv(12, "Type", "C") + _kv(12, "Name", p["name"])
        out += _kv(12, "Used GPU Memory", f"{p['used_mib']} MiB")
    return out


def _x_procs(procs: list[dict[str, Any]]) -> str:
    out = "\t\t<processes>\n"
    for p in procs:
        out += (
            "\t\t\t<process_info>\n"
            "\t\t\t\t<gpu_instance_id>N/A</gpu_instance_id>\n"
            "\t\t\t\t<compute_instance_id>N/A</compute_instance_id>\n"
            f"\t\t\t\t<pid>{p['pid']}</pid>\n"
            "\t\t\t\t<type>C</type>\n"
            f"\t\t\t\t<process_name>{p['name']}</process_name>\n"
            f"\t\t\t\t<used_memory>{p['used_mib']} MiB</used_memory>\n"
            "\t\t\t</process_info>\n"
        )
    return out + "\t\t</processes>\n"


def _slots(host: dict[str, Any], g: dict[str, Any], procs_text: str) -> dict[str, Any]:
    d = dict(g)
    d.update(
        driver=host["driver"],
        c2c=host.get("c2c", "Disabled"),
        device_id=host["pci_device_id"],
        power_limit=f"{host['power_limit_w']:.2f}",
        power_min=f"{host['power_min_w']:.2f}",
        processes=procs_text,
    )
    d.update(_health_slots(host, g))
    return d


# Per-GPU health of the scenario (``[host]`` fabric_* keys, ``[host.gpu_faults.N]`` overrides):
# the defaults print what the real H200 capture prints (no ECC error, no remap, fabric N/A).
_HEALTH = {
    "ecc_vol_dram_unc": 0,
    "ecc_agg_dram_unc": 0,
    "remap_unc": 0,
    "remap_pending": "No",
    "remap_failure": "No",
    "fabric_state": "N/A",
    "fabric_status": "N/A",
    "fabric_clique": "N/A",
    "fabric_cluster": "N/A",
    "fabric_health": "N/A",
    "recovery_action": "None",  # what the driver says a fault still needs (Reset, Reboot …); a reset clears it
}


def _health_slots(host: dict[str, Any], g: dict[str, Any]) -> dict[str, Any]:
    out = {k: host.get(k, v) for k, v in _HEALTH.items()}
    out.update((host.get("gpu_faults") or {}).get(str(g["index"]), {}))
    return out


def _full_query(
    host: dict[str, Any], procs: list[dict[str, Any]], now: float | None, ext: str, render_procs: Any
) -> str:
    """``-q`` (``ext`` ``txt``) or ``-q -x`` (``xml``): the head, then one GPU block each, then the foot."""
    head = fill(
        _tpl(f"nvidia-smi-q.head.{ext}"),
        {
            "timestamp": smi_timestamp(now),
            "driver": host["driver"],
            "cuda": host["cuda"],
            "attached": len(host["gpus"]),
        },
    )
    gpu_tpl = _tpl(f"nvidia-smi-q.gpu.{ext}")
    blocks = [fill(gpu_tpl, _slots(host, g, render_procs(g["procs"]))) for g in gpu_view(host, procs)]
    if ext == "xml":
        return head + "".join(blocks) + _tpl("nvidia-smi-q.foot.xml")
    # the text form: GPU blocks one blank line apart, and a blank line at the end
    return head + "\n".join(b.rstrip("\n") + "\n" for b in blocks) + "\n"


def query(host: dict[str, Any], procs: list[dict[str, Any]], now: float | None = None) -> str:
    """``nvidia-smi -q``."""
    return _full_query(host, procs, now, "txt", _q_procs)


def query_xml(host: dict[str, Any], procs: list[dict[str, Any]], now: float | None = None) -> str:
    """``nvidia-smi -q -x``."""
    return _full_query(host, procs, now, "xml", _x_procs)


# --- --query-gpu / --query-compute-apps ------------------------------------------------

# field -> (unit or "", value getter). Units as the real tool prints them.
_GPU_FIELDS: dict[str, tuple[str, Any]] = {
    "index": ("", lambda h, g, t: g["index"]),
    "count": ("", lambda h, g, t: len(h["gpus"])),
    "name": ("", lambda h, g, t: g["name"]),
    "gpu_name": ("", lambda h, g, t: g["name"]),
    "uuid": ("", lambda h, g, t: g["uuid"]),
    "gpu_uuid": ("", lambda h, g, t: g["uuid"]),
    "serial": ("", lambda h, g, t: g["serial"]),
    "pci.bus_id": ("", lambda h, g, t: g["bus_id"]),
    "gpu_bus_id": ("", lambda h, g, t: g["bus_id"]),
    "pci.domain": ("", lambda h, g, t: "0x" + g["pci_domain"]),
    "pci.bus": ("", lambda h, g, t: "0x" + g["pci_bus"]),
    "pci.device": ("", lambda h, g, t: "0x" + g["pci_device"]),
    "pci.device_id": ("", lambda h, g, t: "0x" + h["pci_device_id"]),
    "driver_version": ("", lambda h, g, t: h["driver"]),
    "vbios_version": ("", lambda h, g, t: h.get("vbios", "N/A")),
    "memory.total": ("MiB", lambda h, g, t: g["mem_total"]),
    "memory.reserved": ("MiB", lambda h, g, t: g["mem_reserved"]),
    "memory.used": ("MiB", lambda h, g, t: g["mem_used"]),
    "memory.free": ("MiB", lambda h, g, t: g["mem_free"]),
    "utilization.gpu": ("%", lambda h, g, t: g["util"]),
    "utilization.memory": ("%", lambda h, g, t: 0),
    "temperature.gpu": ("", lambda h, g, t: g["temp"]),
    "temperature.memory": ("", lambda h, g, t: g["mem_temp"]),
    "power.draw": ("W", lambda h, g, t: g["power_avg"]),
    "power.limit": ("W", lambda h, g, t: f"{h['power_limit_w']:.2f}"),
    "pstate": ("", lambda h, g, t: "P0"),
    "compute_cap": ("", lambda h, g, t: h["compute_cap"]),
    "persistence_mode": ("", lambda h, g, t: "Enabled" if h["persistence"] == "On" else "Disabled"),
    "mig.mode.current": ("", lambda h, g, t: h["mig"]),
    "mig.mode.pending": ("", lambda h, g, t: h["mig"]),
    "ecc.mode.current": ("", lambda h, g, t: "Enabled"),
    "ecc.errors.corrected.volatile.total": ("", lambda h, g, t: 0),
    "ecc.errors.uncorrected.volatile.total": ("", lambda h, g, t: h["ecc_uncorr"]),
    "ecc.errors.corrected.aggregate.total": ("", lambda h, g, t: 0),
    "ecc.errors.uncorrected.aggregate.total": ("", lambda h, g, t: h["ecc_uncorr"]),
    "timestamp": (
        "",
        lambda h, g, t: time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}",
    ),
}

_APP_FIELDS: dict[str, tuple[str, str, Any]] = {
    "pid": ("pid", "", lambda g, p: p["pid"]),
    "process_name": ("process_name", "", lambda g, p: p["name"]),
    "name": ("process_name", "", lambda g, p: p["name"]),
    "used_memory": ("used_gpu_memory", "MiB", lambda g, p: p["used_mib"]),
    "used_gpu_memory": ("used_gpu_memory", "MiB", lambda g, p: p["used_mib"]),
    "gpu_uuid": ("gpu_uuid", "", lambda g, p: g["uuid"]),
    "gpu_bus_id": ("gpu_bus_id", "", lambda g, p: g["bus_id"]),
    "gpu_name": ("gpu_name", "", lambda g, p: g["name"]),
    "gpu_serial": ("gpu_serial", "", lambda g, p: g["serial"]),
}


class BadField(ValueError):
    """A field nvidia-smi does not know; the message is the real tool's."""

    def __init__(self, field: str) -> None:
        super().__init__(f'Field "{field}" is not a valid field to query.')


def _fmt(fmt: set[str], unit: str, value: Any) -> str:
    return f"{value} {unit}" if unit and "nounits" not in fmt else str(value)


def csv_gpus(
    host: dict[str, Any],
    procs: list[dict[str, Any]],
    fields: list[str],
    fmt: set[str],
    select: list[int] | None = None,
    now: float | None = None,
    header: bool = True,
) -> str:
    """``--query-gpu=FIELDS --format=csv[,noheader][,nounits]``."""
    for f in fields:
        if f not in _GPU_FIELDS:
            raise BadField(f)
    t = time.time() if now is None else now
    lines = []
    if header and "noheader" not in fmt:
        lines.append(
            ", ".join(f"{f} [{_GPU_FIELDS[f][0]}]" if _GPU_FIELDS[f][0] and "nounits" not in fmt else f for f in fields)
        )
    for g in gpu_view(host, procs):
        if select is not None and g["index"] not in select:
            continue
        lines.append(", ".join(_fmt(fmt, _GPU_FIELDS[f][0], _GPU_FIELDS[f][1](host, g, t)) for f in fields))
    return "".join(line + "\n" for line in lines)


def csv_apps(host: dict[str, Any], procs: list[dict[str, Any]], fields: list[str], fmt: set[str]) -> str:
    """``--query-compute-apps=FIELDS --format=csv…``."""
    for f in fields:
        if f not in _APP_FIELDS:
            raise BadField(f)
    lines = []
    if "noheader" not in fmt:
        lines.append(
            ", ".join(
                f"{_APP_FIELDS[f][0]} [{_APP_FIELDS[f][1]}]"
                if _APP_FIELDS[f][1] and "nounits" not in fmt
                else _APP_FIELDS[f][0]
                for f in fields
            )
        )
    for g in gpu_view(host, procs):
        for p in g["procs"]:
            lines.append(", ".join(_fmt(fmt, _APP_FIELDS[f][1], _APP_FIELDS[f][2](g, p)) for f in fields))
    return "".join(line + "\n" for line in lines)

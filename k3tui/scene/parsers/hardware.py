"""Parsers for the host under the server: kernel GPU events, GPU health, NVLink, IMEX, fabric.

A GPU that fell off the bus, an uncorrectable ECC error or a broken NVLink domain makes
vLLM print software errors; these parsers turn what the host says about its hardware
into plain data the scene, the checks and the diagnosis share. Formats are those of the
real H200 captures (``../shared/fixtures/hosts/h200-r580-health``, ``tests/data/``) and of
NVIDIA's documentation where no capture holds one (IMEX on a GB300 tray):

- kernel log lines, as ``dmesg`` (``[  74213.500731] NVRM: Xid (PCI:0000:5d:00): 79, …``)
  or ``journalctl -k -o short-iso-precise`` (``2026-12-01T03:12:44.123456+0000 host
  kernel: NVRM: Xid …``) prints them; SXid lines of NVSwitches
  (``nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, …``);
- the health sections of ``nvidia-smi -q -x`` (ECC, retired pages, remapped rows, the
  fabric, clocks-event reasons, PCIe link) — the freeze already runs that probe, so
  these facts cost no extra command;
- ``nvidia-smi nvlink -s`` / ``-e``; ``nvidia-imex-ctl -N``; the IMEX nodes file; the IMEX
  channel devices; ``systemctl is-active`` of the IMEX and fabric-manager services.

Every parser is total over text: lines it does not recognise are skipped, a probe's
``unknown`` reasons are kept, never guessed.
"""

from __future__ import annotations

import calendar
import re
import time
import xml.etree.ElementTree as ET
from typing import Any

from ._common import ParseError, as_int, na, smi_xml_root, strip_transcript

# --- kernel log: Xid and SXid ---------------------------------------------------------------

# NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\): (\d+),?\s*(.*)"
)
# nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 44 egress ...
_SXID = re.compile(
    r"(nvidia-nvswitch\d*): SXid \((?:PCI:)?([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\): (\d+),?\s*(.*)"
)
# NVRM: GPU at PCI:0000:5d:00: GPU-5e0c2d3b-…   (printed once per GPU before its first Xid)
_GPU_AT = re.compile(r"NVRM: GPU at PCI:([0-9a-fA-F:.]+): (GPU-[0-9a-fA-F-]{36})")
_DMESG_TS = re.compile(r"^\[\s*(\d+\.\d+)\]\s?")
_ISO_TS = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:[.,](\d+))?(Z|[+-]\d\d:?\d\d)?\s")
_HEADER = re.compile(r"^# (source|boot|now): (.*)$")
_DMESG_T = re.compile(r"^\[(?:\w{3} )?(\w{3}) +(\d+) (\d\d):(\d\d):(\d\d) (\d{4})\]\s?")  # dmesg -T (local time)
_SHORT = re.compile(r"^(\w{3}) +(\d+) (\d\d):(\d\d):(\d\d)(?:\.(\d+))? \S+ kernel: ")  # journalctl short
_MONTHS = {m: i for i, m in enumerate(calendar.month_abbr) if m}


def pci_key(pci: str | None) -> str:
    """``00000000:5D:00.0`` / ``0000:5d:00`` / ``5d:00.0`` → ``5d:00`` (bus:device, what every form shares)."""
    if not pci:
        return ""
    parts = pci.strip().lower().split(".")[0].split(":")
    return ":".join(parts[-2:]) if len(parts) >= 2 else ""


def _iso_time(m: re.Match[str]) -> float:
    y, mo, d, hh, mm, ss = (int(x) for x in m.groups()[:6])
    t = calendar.timegm((y, mo, d, hh, mm, ss)) + (float("0." + m.group(7)) if m.group(7) else 0.0)
    z = m.group(8)
    if z and z != "Z":
        sign = 1 if z[0] == "+" else -1
        digits = z[1:].replace(":", "")
        t -= sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60)
    return t


def kernel_line_time(line: str, boot: float | None) -> tuple[float | None, float | None]:
    """(wall time in unix seconds, seconds since boot) of one kernel log line; None where unknown."""
    if m := _DMESG_TS.match(line):
        up = float(m.group(1))
        return (boot + up if boot is not None else None), up
    if m := _ISO_TS.match(line):
        return _iso_time(m), None
    if (m := _DMESG_T.match(line)) and m.group(1) in _MONTHS:
        y, d = int(m.group(6)), int(m.group(2))
        return float(calendar.timegm((y, _MONTHS[m.group(1)], d, *(int(x) for x in m.groups()[2:5])))), None
    if (m := _SHORT.match(line)) and m.group(1) in _MONTHS:  # no year: this year's (UTC taken for local)
        y = time.gmtime().tm_year
        frac = float("0." + m.group(6)) if m.group(6) else 0.0
        return calendar.timegm(
            (y, _MONTHS[m.group(1)], int(m.group(2)), *(int(x) for x in m.groups()[2:5]))
        ) + frac, None
    return None, None


def parse_kernel_event(line: str, boot: float | None = None) -> dict[str, Any] | None:
    """One Xid / SXid line → ``{kind, pci, code, pid, detail, fatal_words, uptime, unix, line}``; None otherwise."""
    if m := _XID.search(line):
        kind, pci, code, rest, device = "xid", m.group(1), int(m.group(2)), m.group(3), None
    elif m := _SXID.search(line):
        kind, pci, code, rest, device = "sxid", m.group(2), int(m.group(3)), m.group(4), m.group(1)
    else:
        return None
    unix, up = kernel_line_time(line, boot)
    pid = re.search(r"pid=['\"]?(\d+)", rest)
    severity = re.match(r"\s*(Non-fatal|Fatal)\b", rest, re.I)
    return {
        "kind": kind,
        "pci": pci,
        "code": code,
        "pid": int(pid.group(1)) if pid else None,
        "device": device,
        "severity": severity.group(1).lower() if severity else None,
        "detail": rest.strip()[:300],
        "uptime": up,
        "unix": unix,
        "line": line.strip()[:400],
    }


def parse_kernel_events(text: str) -> dict[str, Any]:
    """The kernel-events probe → ``{source, boot, now, events, uuids}``.

    The probe prints ``# source: journalctl|dmesg``, ``# boot: UNIX`` (``/proc/stat``
    btime, to turn dmesg's seconds-since-boot into wall time), ``# now: UNIX``, then the
    matching kernel lines. ``uuids`` maps a PCI key to the UUID the driver printed for it.
    """
    body = strip_transcript(text)
    head: dict[str, str] = {}
    events: list[dict[str, Any]] = []
    uuids: dict[str, str] = {}
    lines = body.splitlines()
    for ln in lines:
        if m := _HEADER.match(ln):
            head[m.group(1)] = m.group(2).strip()
    boot = _num(head.get("boot"))
    for ln in lines:
        if ln.startswith("# "):
            continue
        if m := _GPU_AT.search(ln):
            uuids[pci_key(m.group(1))] = m.group(2)
        ev = parse_kernel_event(ln, boot)
        if ev is not None:
            events.append(ev)
    return {"source": head.get("source"), "boot": boot, "now": _num(head.get("now")), "events": events, "uuids": uuids}


def _num(v: str | None) -> float | None:
    try:
        return float(v) if v not in (None, "") else None
    except ValueError:
        return None


# --- nvidia-smi -q -x: the health of each GPU -----------------------------------------------


def health_from_smi_xml(text: str) -> list[dict[str, Any]]:
    """Per GPU (in XML order): ECC, retired pages, row remapping, fabric, clocks events, PCIe link."""
    return [_gpu_health(g) for g in smi_xml_root(text).findall("gpu")]


def _action(text: str | None) -> str | None:
    """``GPU Recovery Action`` as the driver says it ("None" is an answer: nothing owed); N/A or absent: None."""
    text = (text or "").strip()
    return None if text in ("", "N/A", "[N/A]", "[Not Supported]") else text


def _gpu_health(g: ET.Element) -> dict[str, Any]:
    def t(path: str) -> str | None:
        return na(g.findtext(path))

    return {
        "uuid": t("uuid"),
        "pci_bus_id": t("pci/pci_bus_id") or g.get("id"),
        # the driver's own word on what this GPU needs after a fault (r550+: None, Reset, Node Reboot,
        # Drain P2P, Drain and Reset); a reset clears it, so it tells a fault since the last reset
        "recovery_action": _action(g.findtext("gpu_recovery_action")),
        "ecc": _ecc_totals(g),
        "retired_pages": {
            "sbe": as_int(t("retired_pages/multiple_single_bit_retirement/retired_count")),
            "dbe": as_int(t("retired_pages/double_bit_retirement/retired_count")),
            "pending": _yes(t("retired_pages/pending_retirement")),
        },
        "remapped_rows": {
            "correctable": as_int(t("remapped_rows/remapped_row_corr")),
            "uncorrectable": as_int(t("remapped_rows/remapped_row_unc")),
            "pending": _yes(t("remapped_rows/remapped_row_pending")),
            "failure": _yes(t("remapped_rows/remapped_row_failure")),
        },
        "fabric": {
            "state": t("fabric/state"),
            "status": t("fabric/status"),
            "clique_id": t("fabric/cliqueId"),
            "cluster_uuid": t("fabric/clusterUuid"),
            "health": t("fabric/health/summary"),
        },
        "clocks_event_reasons": sorted(
            c.tag.removeprefix("clocks_event_reason_")
            for c in g.findall("clocks_event_reasons/*")
            if (c.text or "").strip() == "Active"
        ),
        "pcie": {
            "gen": as_int(t("pci/pci_gpu_link_info/pcie_gen/current_link_gen")),
            "gen_max": as_int(t("pci/pci_gpu_link_info/pcie_gen/max_link_gen")),
            "width": as_int((t("pci/pci_gpu_link_info/link_widths/current_link_width") or "").rstrip("x") or None),
            "width_max": as_int((t("pci/pci_gpu_link_info/link_widths/max_link_width") or "").rstrip("x") or None),
        },
        "persistence_mode": t("persistence_mode"),
        "mig_mode": t("mig_mode/current_mig"),
    }


def _ecc_totals(g: ET.Element) -> dict[str, int | None]:
    """Uncorrectable ECC per scope, summed over SRAM and DRAM (``None`` when ECC is not reported)."""
    out: dict[str, int | None] = {}
    for scope in ("volatile", "aggregate"):
        node = g.find(f"ecc_errors/{scope}")
        vals = [] if node is None else [as_int(c.text) for c in node if "uncorrectable" in c.tag]
        known = [v for v in vals if v is not None]
        out[f"{scope}_uncorrectable"] = sum(known) if known else None
    return out


def _yes(v: str | None) -> bool | None:
    if v is None:
        return None
    return v.strip().lower() in ("yes", "true", "1")


# --- nvidia-smi nvlink -s / -e ---------------------------------------------------------------

_NVL_GPU = re.compile(r"^GPU (\d+): (.*?)(?: \(UUID: (GPU-[0-9a-fA-F-]+)\))?\s*$")
_NVL_LINK = re.compile(r"^\s*Link (\d+): (.*)$")


def parse_nvlink(text: str) -> dict[str, Any]:
    """``nvidia-smi nvlink -s; echo '# errors'; nvidia-smi nvlink -e`` → per GPU links and error counters.

    Returns ``{"gpus": {"INDEX": {"uuid", "links": {"N": "up"|"down"}, "errors": {name: total}}}}``
    (string keys: the scene is JSON);
    an empty ``gpus`` is a host without NVLink (the H200 VM in the captures prints nothing).
    """
    gpus: dict[str, dict[str, Any]] = {}
    section = "status"
    cur: dict[str, Any] | None = None
    for ln in strip_transcript(text).splitlines():
        if ln.startswith("# errors"):
            section, cur = "errors", None
            continue
        if m := _NVL_GPU.match(ln):
            cur = gpus.setdefault(m.group(1), {"uuid": m.group(3), "links": {}, "errors": {}})
            continue
        if cur is None or not (m := _NVL_LINK.match(ln)):
            continue
        link, rest = m.group(1), m.group(2).strip()
        if section == "status":
            low = rest.lower()
            cur["links"][link] = "down" if "inactive" in low or "down" in low or "disabled" in low else "up"
        else:
            name, _, value = rest.rpartition(":")
            n = as_int(value)
            if name and n is not None:
                key = name.strip().lower().replace(" ", "_")
                cur["errors"][key] = cur["errors"].get(key, 0) + n
    return {"gpus": gpus}


# --- IMEX, channels, fabric manager ----------------------------------------------------------

_SECTION = re.compile(r"^==> (\S+) <==\s*$")
_IMEX_NODE = re.compile(r"^Node #(\d+)\s+-\s+(\S+)\s+-\s+(\S+)(?:\s+-\s+Version:\s*(\S+))?")
_DOMAIN = re.compile(r"Domain State:\s*(\S+)", re.I)


def _sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    cur: list[str] | None = None
    for ln in strip_transcript(text).splitlines():
        if m := _SECTION.match(ln):
            cur = out.setdefault(m.group(1), [])
        elif cur is not None:
            cur.append(ln)
    return out


def parse_fabric_services(text: str) -> dict[str, Any]:
    """The NVLink-domain services probe → ``{imex, fabricmanager, channels}``.

    Sections ``==> NAME <==``: ``imex-service`` / ``fm-service`` (``systemctl is-active``
    or ``pgrep``), ``imex-ctl`` (``nvidia-imex-ctl -N``), ``imex-nodes`` (the nodes file),
    ``channels`` (``ls /dev/nvidia-caps-imex-channels``). A missing tool or file is ``None``
    with the reason the shell gave.
    """
    sec = _sections(text)
    if not sec:
        raise ParseError("no '==> section <==' markers: not the fabric-services probe")
    return {
        "imex": _imex(sec),
        "fabricmanager": {"service": _service(sec.get("fm-service"))},
        "channels": parse_channels("\n".join(sec.get("channels", []))),
    }


def _service(lines: list[str] | None) -> str | None:
    """``active`` / ``inactive`` / ``failed`` / ``absent`` (unit not installed, no process); None when not asked.

    From ``systemctl show -p LoadState -p ActiveState`` (or the probe's pgrep fallback).
    """
    if lines is None:
        return None
    props = dict(ln.strip().partition("=")[::2] for ln in lines if "=" in ln)
    if props.get("LoadState") == "not-found":
        return "absent"
    state = props.get("ActiveState")
    if state:
        return state
    words = [ln.strip() for ln in lines if ln.strip()]
    return words[0][:80] if words else None


def _imex(sec: dict[str, list[str]]) -> dict[str, Any]:
    ctl = sec.get("imex-ctl", [])
    nodes = []
    for ln in ctl:
        if m := _IMEX_NODE.match(ln.strip()):
            nodes.append({"index": int(m.group(1)), "address": m.group(2), "state": m.group(3), "version": m.group(4)})
    domain = next((m.group(1) for ln in ctl if (m := _DOMAIN.search(ln))), None)
    ctl_error = None
    if not nodes and domain is None:
        ctl_error = next((ln.strip()[:200] for ln in ctl if ln.strip()), "no output") if ctl else None
    config = [ln.strip() for ln in sec.get("imex-nodes", []) if ln.strip() and not ln.lstrip().startswith("#")]
    missing_cfg = any("No such file" in c or "cannot open" in c for c in config)
    return {
        "service": _service(sec.get("imex-service")),
        "domain_state": domain,
        "nodes": nodes,
        "ctl_error": ctl_error,
        "config_nodes": None if missing_cfg or "imex-nodes" not in sec else config,
    }


def parse_channels(text: str) -> dict[str, Any]:
    """``ls /dev/nvidia-caps-imex-channels`` → ``{present: bool, channels: [names], error}``."""
    lines = [ln.strip() for ln in strip_transcript(text).splitlines() if ln.strip()]
    err = next((ln for ln in lines if "No such file" in ln or "cannot access" in ln or "denied" in ln), None)
    chans = sorted(ln for ln in lines if re.fullmatch(r"channel\d+", ln))
    return {"present": bool(chans), "channels": chans, "error": err[:200] if err else None}


# --- captures of several commands (the health fixtures, bench/capture_hw_probes.py) -----------

_CAPTURE = re.compile(r"^===== (.+?)\s*$")
_EXIT = re.compile(r"^\[exit (-?\d+|None)\]\s*$")
_NVML_CALL = re.compile(r"^(\w+): rc=(-?\d+|None)\s?(.*)$")


def parse_capture_sections(text: str) -> dict[str, dict[str, Any]]:
    """``===== COMMAND`` blocks, each ending ``[exit N]`` → {command: {"output", "exit"}} (exit None: not printed)."""
    out: dict[str, dict[str, Any]] = {}
    cur: list[str] | None = None
    for ln in text.replace("\r\n", "\n").split("\n"):
        if m := _CAPTURE.match(ln):
            cur = []
            out[m.group(1)] = {"output": "", "exit": None, "_lines": cur}
        elif cur is not None and (m := _EXIT.match(ln)):
            last = list(out)[-1]
            out[last]["exit"] = None if m.group(1) == "None" else int(m.group(1))
        elif cur is not None:
            cur.append(ln)
    if not out:
        raise ParseError("no '===== command' sections: not a capture of several commands")
    for v in out.values():
        v["output"] = "\n".join(v.pop("_lines")).strip("\n")
    return out


def parse_nvml_calls(text: str) -> dict[str, dict[str, Any]]:
    """``NAME: rc=N VALUE`` lines (one NVML call per child process) → {name: {"rc", "value"}}."""
    out = {
        m.group(1): {"rc": None if m.group(2) == "None" else int(m.group(2)), "value": m.group(3).strip()}
        for ln in strip_transcript(text).splitlines()
        if (m := _NVML_CALL.match(ln.strip()))
    }
    if not out:
        raise ParseError("no 'name: rc=N value' lines: not an NVML calls capture")
    return out

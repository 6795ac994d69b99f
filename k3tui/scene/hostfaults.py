"""Host faults of a frozen scene: the hardware facts that make vLLM print software errors.

One list, ``scene.host_faults``, of the shape issue 14 fixes (``kind``, ``gpu``, ``uuid``,
``code``, ``fatal``, ``time``, ``line``), built from facts the freeze already holds: the
kernel's Xid/SXid lines, each GPU's ECC / retired pages / row remapping / fabric state,
NVLink, and the IMEX daemon. *Fatal* means "no software change can help until the GPU is
reset or the node drained"; which Xid codes are fatal is profile data (``[hardware.xids]``
in ``assets/profiles/kimi-k3.toml``, after NVIDIA's Xid catalogue), so a scene frozen
without a profile is judged by the default profile's catalogue and ``k3tui check`` judges
it again by the profile it is given.

Pure functions over a :class:`~k3tui.scene.model.Scene` (no I/O beyond loading a profile),
so the checks, the stop condition and the diagnosis share one reading of the hardware.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Iterable
from typing import Any

from .model import Scene
from .parsers.hardware import pci_key

DEFAULT_PROFILE = "kimi-k3"
_RECOVERY_NONE = re.compile(r"to 0x0 \(None\)", re.I)
_FABRIC_OK = ("completed", "success")


@functools.cache
def _default_xids() -> dict[str, Any]:
    from ..profile import load_profile

    try:
        return dict(load_profile(DEFAULT_PROFILE).hardware.xids)
    except Exception:  # noqa: BLE001 - a scene must assemble even without its profile
        return {}


def xid_class(code: int, line: str = "", catalogue: dict[str, Any] | None = None) -> tuple[str, str, bool]:
    """(meaning, action, fatal) of an Xid code by the catalogue (default: the default profile's)."""
    cls = (catalogue if catalogue is not None else _default_xids()).get(str(code))
    if cls is None:
        return f"Xid {code} (not in the profile's catalogue)", "look it up in NVIDIA's Xid catalogue", False
    fatal = bool(cls.fatal) and not (code == 154 and _RECOVERY_NONE.search(line))
    return cls.meaning, cls.action, fatal


def clock_of(unix: float | None) -> str | None:
    """``2026-12-01T03:12:44Z`` (UTC) of a kernel event's wall time."""
    if unix is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(unix))


def _gpu_by_pci(scene: Scene) -> dict[str, tuple[int | None, str | None]]:
    return {pci_key(g.pci_bus_id): (g.index, g.uuid) for g in scene.gpus if g.pci_bus_id}


def kernel_faults(scene: Scene, events: Iterable[dict[str, Any]], uuids: dict[str, str]) -> list[dict[str, Any]]:
    """Xid / SXid kernel events as host faults, mapped from PCI address to GPU index and UUID."""
    by_pci = _gpu_by_pci(scene)
    out = []
    for e in events:
        key = pci_key(e.get("pci"))
        index, uuid = by_pci.get(key, (None, None)) if e["kind"] == "xid" else (None, None)
        uuid = uuid or (uuids.get(key) if e["kind"] == "xid" else None)
        if e["kind"] == "xid":
            meaning, action, fatal = xid_class(e["code"], e.get("line", ""))
        else:
            fatal = e.get("severity") == "fatal"
            meaning = (
                f"NVSwitch {e.get('device') or ''} SXid {e['code']} ({e.get('severity') or 'severity not printed'})"
            )
            action = "drain the node; reset the NVSwitch fabric (nvidia-fabricmanager)" if fatal else "watch it"
        out.append(
            {
                "kind": e["kind"],
                "gpu": index,
                "uuid": uuid,
                "code": e["code"],
                "fatal": fatal,
                "time": clock_of(e.get("unix")),
                "unix": e.get("unix"),
                "pci": e.get("pci"),
                "meaning": meaning,
                "action": action,
                "line": e.get("line", ""),
            }
        )
    return out


def _fault(kind: str, gpu: Any, fatal: bool, meaning: str, action: str, line: str, code: int | None = None) -> dict:
    return {
        "kind": kind,
        "gpu": getattr(gpu, "index", None),
        "uuid": getattr(gpu, "uuid", None),
        "code": code,
        "fatal": fatal,
        "time": None,
        "unix": None,
        "pci": getattr(gpu, "pci_bus_id", None),
        "meaning": meaning,
        "action": action,
        "line": line,
    }


def gpu_faults(scene: Scene) -> list[dict[str, Any]]:
    """ECC, retired pages, row remapping and fabric state of every GPU, as host faults."""
    out: list[dict[str, Any]] = []
    for g in scene.gpus:
        h = g.health or {}
        ecc = h.get("ecc") or {}
        vol, agg = ecc.get("volatile_uncorrectable"), ecc.get("aggregate_uncorrectable")
        if vol:
            out.append(
                _fault("ecc", g, True, f"{vol} uncorrectable ECC error(s) since the last reset",
                       "drain the node, reset the GPU; replace it if it repeats",
                       f"ECC volatile uncorrectable {vol} (aggregate {agg})")
            )  # fmt: skip
        elif agg:
            out.append(
                _fault("ecc", g, False, f"{agg} uncorrectable ECC error(s) in the GPU's lifetime, none since the reset",
                       "watch it: check the row remapper", f"ECC aggregate uncorrectable {agg}")
            )  # fmt: skip
        rows = h.get("remapped_rows") or {}
        if rows.get("failure"):
            out.append(_fault("row-remap", g, True, "row remapping failed: the GPU has no spare rows left",
                              "drain the node, replace the GPU", "Remapped Rows: Remapping Failure Occurred: Yes"))  # fmt: skip
        elif rows.get("pending"):
            out.append(_fault("row-remap", g, True, "a row remap is pending: it takes effect only after a GPU reset",
                              "drain the node, reset the GPU", "Remapped Rows: Pending: Yes"))  # fmt: skip
        if (h.get("retired_pages") or {}).get("pending"):
            out.append(_fault("ecc", g, True, "a page retirement is pending (after a reset)",
                              "drain the node, reset the GPU", "Retired Pages: Pending Page Blacklist: Yes"))  # fmt: skip
        out += _fabric_fault(g)
    return out


def _fabric_fault(g: Any) -> list[dict[str, Any]]:
    f = g.fabric or {}
    state, status = f.get("state"), f.get("status")
    if state is None or str(state).lower() == "not supported":
        return []
    if str(state).lower() == _FABRIC_OK[0] and (status is None or str(status).lower() == _FABRIC_OK[1]):
        return []
    return [
        _fault(
            "fabric", g, True,
            f"GPU fabric registration {state}/{status}: the GPU is not (yet) in the NVLink domain",
            "drain the node; check nvidia-imex and the NVLink switch trays, then reset the GPU",
            f"Fabric State: {state}, Status: {status}, CliqueId: {f.get('clique_id')}, ClusterUUID: {f.get('cluster_uuid')}",
        )
    ]  # fmt: skip


def nvlink_faults(scene: Scene) -> list[dict[str, Any]]:
    """Links down on a GPU whose other links are up; error counters above zero (not fatal alone)."""
    out = []
    by_index = {g.index: g for g in scene.gpus}
    for idx, info in ((scene.nvlink or {}).get("gpus") or {}).items():
        g = by_index.get(int(idx))
        links = info.get("links") or {}
        down = sorted(int(n) for n, s in links.items() if s == "down")
        if down and len(down) < len(links):
            out.append(
                _fault("nvlink", g, True, f"NVLink link(s) {', '.join(map(str, down))} down of {len(links)}",
                       "drain the node, reset the GPU; check the NVLink tray if it repeats",
                       f"GPU {idx}: links down {down}")
            )  # fmt: skip
        errors = {k: v for k, v in (info.get("errors") or {}).items() if v}
        if errors:
            out.append(
                _fault("nvlink", g, False, "NVLink error counters above zero",
                       "watch them: growth between two freezes stops the ladder",
                       f"GPU {idx}: " + ", ".join(f"{k}={v}" for k, v in sorted(errors.items())))
            )  # fmt: skip
    return out


def imex_faults(scene: Scene) -> list[dict[str, Any]]:
    """An IMEX daemon that is installed but down, or a domain with a node not READY."""
    imex = scene.imex or {}
    service = imex.get("service")
    if not imex or service in (None, "absent"):
        return []
    if service != "active":
        return [_fault("imex", None, True, f"the IMEX daemon is {service}",
                       "start nvidia-imex on this tray (systemctl start nvidia-imex) and check its log",
                       f"nvidia-imex: {service}")]  # fmt: skip
    bad = [n for n in imex.get("nodes") or [] if str(n.get("state")).upper() != "READY"]
    domain = imex.get("domain_state")
    if bad or (domain and domain.upper() != "UP"):
        who = ", ".join(f"node #{n['index']} {n['address']} {n['state']}" for n in bad) or "no node listed"
        return [_fault("imex", None, True, f"IMEX domain {domain or '?'}: {who}",
                       "bring every tray's nvidia-imex up with the same nodes_config.cfg",
                       f"Domain State: {domain}; {who}")]  # fmt: skip
    return []


def domain_faults(
    scenes: dict[str, dict[str, Any]], order: list[str] | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """(host, fault) for each host whose GPUs registered in another fabric cluster/clique than most GPUs.

    Two trays of four GPUs each have no majority: then the first host of ``order`` (the
    deployment's head, as connected) is the reference, never whichever froze first.
    """
    where: dict[tuple[str, str], list[str]] = {}
    for host, sc in scenes.items():
        for g in sc.get("gpus") or []:
            f = g.get("fabric") or {}
            if f.get("cluster_uuid") or f.get("clique_id"):
                where.setdefault((str(f.get("cluster_uuid")), str(f.get("clique_id"))), []).append(host)
    if len(where) < 2:
        return []
    rank: dict[str, int] = {}
    for h in [*(order or []), *scenes]:
        rank.setdefault(h, len(rank))
    main = max(where, key=lambda k: (len(where[k]), -min(rank[h] for h in where[k])))
    out = []
    for key, hosts in where.items():
        if key == main:
            continue
        for host in sorted(set(hosts)):
            fault = _fault(
                "fabric", None, True,
                f"its GPUs are in another NVLink domain (ClusterUUID {key[0]}, CliqueId {key[1]}; the deployment's: "
                f"{main[0]}, {main[1]})",
                "move the tray into the deployment's clique (NVLink partition) or pick trays of one domain",
                f"Fabric ClusterUUID {key[0]} CliqueId {key[1]}",
            )  # fmt: skip
            out.append((host, fault))
    return out


def build(scene: Scene, events: Iterable[dict[str, Any]] = (), uuids: dict[str, str] | None = None) -> list[dict]:
    """Every host fault of a scene, in order: kernel events, GPU health, NVLink, IMEX."""
    return [*kernel_faults(scene, events, uuids or {}), *gpu_faults(scene), *nvlink_faults(scene), *imex_faults(scene)]


def describe(f: dict[str, Any], host: str = "") -> str:
    """``gb300-02 GPU 3: Xid 79 at 03:12:44 — GPU has fallen off the bus: drain the node, reset or replace the GPU``."""
    gpu = (
        f"GPU {f['gpu']}"
        if f.get("gpu") is not None
        else (f"GPU at PCI {f['pci']}" if f.get("pci") and f["kind"] == "xid" else "")
    )
    where = " ".join(x for x in (host, gpu) if x) or "host"
    what = {"xid": f"Xid {f.get('code')}", "sxid": f"SXid {f.get('code')}"}.get(f["kind"], f["kind"])
    at = f" at {f['time'][11:19]}" if f.get("time") else ""
    return f"{where}: {what}{at} — {f.get('meaning')}: {f.get('action')}"


def fatal(faults: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in faults if f.get("fatal")]

"""Scenarios of the simulated GB300 host, as data.

A scenario is a TOML file in ``assets/scenarios/`` that states what the fake host is
(driver, GPUs, container, kernel log) and how its ``vllm serve`` behaves (which log it
replays, what exit status, whether the first request kills a worker). Scenarios inherit
with ``extends = "healthy"`` so each file says only how it differs; tables merge key by
key, lists and scalars replace.

Every scenario states ``title``, ``expected_stage`` and ``expected_exception``: the
tests and the lead check the classifier's verdict on the replayed log against them.

Host facts live under ``[host]`` (one host) or ``[[hosts]]`` (a multi-node deployment,
e.g. two aarch64 GB300 NVL72 trays of four GPUs): everything per host is separable so a
group of hosts is only a list of them. This module is stdlib only: the fake tools on the
simulated host import it under ``python -S``.
"""

from __future__ import annotations

import copy
import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..assets import asset


@dataclass(frozen=True)
class ScenarioInfo:
    """What a scenario promises: its name, title, and the first failure it produces."""

    name: str
    title: str
    expected_stage: str
    """``none`` for a healthy run, else the stage of the first root failure."""
    expected_exception: str
    """A substring of the root exception line ("" when healthy)."""


def scenarios_dir() -> Path:
    """Where scenario files live (a checkout's ``assets/`` or the wheel's copy)."""
    return asset("scenarios")


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_raw(name: str, _seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """The scenario's TOML with its ``extends`` chain merged in."""
    path = scenarios_dir() / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(i.name for i in scenarios())
        raise KeyError(f"no simulated-host scenario named {name!r} (known: {known})")
    if name in _seen:
        raise ValueError(f"scenario {name!r} extends itself through {' -> '.join(_seen)}")
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    parent = data.pop("extends", None)
    if parent:
        data = _merge(load_raw(parent, _seen + (name,)), data)
    data["name"] = name
    return data


def scenarios() -> list[ScenarioInfo]:
    """Every scenario shipped in ``assets/scenarios/``, by name."""
    out = []
    for path in sorted(scenarios_dir().glob("*.toml")):
        if path.stem.startswith("_"):
            continue
        data = load_raw(path.stem)
        out.append(info_of(data))
    return out


def info_of(data: dict[str, Any]) -> ScenarioInfo:
    """The promise part of a loaded scenario."""
    return ScenarioInfo(
        name=data["name"],
        title=data["title"],
        expected_stage=data["expected_stage"],
        expected_exception=data.get("expected_exception", ""),
    )


def host_list(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The scenario's hosts, each a complete host table (``[[hosts]]`` entries inherit ``[host]``)."""
    base = data.get("host", {})
    extra = data.get("hosts")
    if not extra:
        return [expand_host(base, data["name"], 0)]
    return [expand_host(_merge(base, h), data["name"], i) for i, h in enumerate(extra)]


def _hex(seed: str, n: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:n]


def _uuid(seed: str) -> str:
    h = _hex(seed, 32)
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def expand_host(host: dict[str, Any], scenario: str, node: int) -> dict[str, Any]:
    """Fill in the per-GPU facts (UUIDs, PCI ids, serials) a host table leaves implicit."""
    h = copy.deepcopy(host)
    h.setdefault("node", node)
    bus_ids = h["gpu_bus_ids"]
    count = int(h.get("gpu_count", len(bus_ids)))
    gpus = []
    for i in range(count):
        seed = f"{h['hostname']}/{i}"
        bus = bus_ids[i]
        domain, b, rest = bus.split(":")
        dev = rest.split(".")[0]
        gpus.append(
            {
                "index": i,
                "name": h["gpu_name"],
                "arch": h["gpu_arch"],
                "uuid": _uuid("k3sim-gpu/" + seed),
                "serial": str(1650000000000 + int(_hex(seed, 8), 16) % 9999999999),
                "pdi": "0x" + _hex("pdi/" + seed, 16),
                "bus_id": bus,
                "pci_domain": domain[-4:],
                "pci_bus": b,
                "pci_device": dev,
                "minor": i,
                "module_id": h.get("module_ids", list(range(1, count + 1)))[i],
                "board_id": hex(int(b, 16) << 8 if int(b, 16) else i + 1),
                "temp": 31 + (i * 3) % 7,
                "mem_temp": 33 + (i * 5) % 6,
                "power_avg": f"{h['power_idle_w'] + i * 3.17:.2f}",
                "power_inst": f"{h['power_idle_w'] - 11 + i * 2.41:.2f}",
            }
        )
    h["gpus"] = gpus
    return h

"""Parsers for GPU samples: the NVML sampler's JSON lines and ``nvidia-smi --query-gpu … -lms``.

Both sources become the same :class:`~k3tui.events.GpuSample`, so the ladder's checks
("is GPU memory still rising after each request?") do not care which one the host had.
``nvidia-smi -lms`` prints one CSV row per GPU per tick with no tick separator: a tick
ends when a GPU index repeats.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from ..events import GpuMem, GpuProc, GpuSample, XidEvent

SMI_FIELDS = ("timestamp", "index", "memory.used", "memory.total", "utilization.gpu")
"""What the fallback asks ``nvidia-smi --query-gpu`` for (the real fixture's column order)."""


def parse_sampler_line(line: str) -> GpuSample | XidEvent | dict | None:
    """One line of ``nvml_sampler.py``: a sample, an Xid, the hello/error dict, or None if not ours."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    if "g" in obj:
        gpus = [
            GpuMem(
                index=int(g[0]), used_mib=float(g[1]), total_mib=float(g[2]), util=None if g[3] is None else float(g[3])
            )
            for g in obj["g"]
        ]
        procs = [GpuProc(gpu=int(p[0]), pid=int(p[1]), name=str(p[2]), used_mib=float(p[3])) for p in obj.get("p", [])]
        return GpuSample(gpus=gpus, processes=procs, source="nvml")
    if "xid" in obj:
        gpu, xid = obj["xid"]
        return XidEvent(gpu=int(gpu), xid=int(xid), text=f"NVML critical error event: Xid {xid}")
    if "hello" in obj or "error" in obj:
        return obj
    return None


def _num(text: str) -> float | None:
    text = text.strip().split(" ")[0]
    try:
        return float(text)
    except ValueError:
        return None


class SmiTicks:
    """Incremental ``nvidia-smi -lms`` parser: rows in, complete ticks (samples) out."""

    def __init__(self, fields: tuple[str, ...] = SMI_FIELDS) -> None:
        self.col = {name: i for i, name in enumerate(fields)}
        self.width = len(fields)
        self.tick: list[GpuMem] = []

    def feed(self, lines: Iterable[str]) -> list[GpuSample]:
        """Samples completed by these rows (a tick ends when a GPU index repeats)."""
        done: list[GpuSample] = []
        for line in lines:
            cells = [c.strip() for c in line.split(",")]
            gpu = _row(cells, self.col) if len(cells) >= self.width else None
            if gpu is None:
                continue
            if any(g.index == gpu.index for g in self.tick):
                done.append(GpuSample(gpus=self.tick, source="nvidia-smi"))
                self.tick = []
            self.tick.append(gpu)
        return done

    def flush(self) -> list[GpuSample]:
        done = [GpuSample(gpus=self.tick, source="nvidia-smi")] if self.tick else []
        self.tick = []
        return done


def parse_smi_rows(lines: Iterable[str], fields: tuple[str, ...] = SMI_FIELDS) -> list[GpuSample]:
    """``nvidia-smi --query-gpu=FIELDS --format=csv,noheader,nounits [-lms N]`` output → samples.

    Header lines (``index, memory.used [MiB]``) and rows that do not parse are skipped.
    """
    ticks = SmiTicks(fields)
    return ticks.feed(lines) + ticks.flush()


def _row(cells: list[str], col: dict[str, int]) -> GpuMem | None:
    index = _num(cells[col["index"]])
    used = _num(cells[col["memory.used"]])
    if index is None or used is None:
        return None
    total = _num(cells[col["memory.total"]]) if "memory.total" in col else None
    util = _num(cells[col["utilization.gpu"]]) if "utilization.gpu" in col else None
    return GpuMem(index=int(index), used_mib=used, total_mib=total or 0.0, util=util)


def parse_compute_apps(text: str) -> list[GpuProc]:
    """``nvidia-smi --query-compute-apps=gpu_uuid…`` is per UUID; this reads ``pid,process_name,used_memory`` (csv, noheader, nounits)."""
    procs: list[GpuProc] = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 3 or not cells[0].isdigit():
            continue
        procs.append(GpuProc(pid=int(cells[0]), name=cells[1], used_mib=_num(cells[2]) or 0.0))
    return procs


def total_used(sample: GpuSample) -> float:
    """Memory used over all GPUs of a sample, MiB."""
    return sum(g.used_mib for g in sample.gpus)

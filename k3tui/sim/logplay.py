"""Log templates of the simulated ``vllm serve``: real vLLM lines, scenario-specific facts.

A template is a text file in ``assets/scenarios/logs/``: every line is printed as is,
after ``@{name}`` slots are filled (timestamps, pids, model, TP size …). Lines starting
with ``#@`` steer the replay:

``#@ +N``               advance the log's clock by N seconds (the replay sleeps a scaled share of it)
``#@ include FILE``     splice another template
``#@ ranks all|3,5 [interleave]`` … ``#@ end``
                        repeat the block once per TP rank (interleaved line by line, as eight
                        tracebacks of a TP=8 start-up really interleave)
``#@ mem MIB``          GPU memory now held per GPU (nvidia-smi shows it)
``#@ serve`` / ``#@ ready`` / ``#@ unserve``
                        bind the HTTP port / answer /health 200 / close the port
``#@ wait-stop``        block until SIGTERM (a healthy server serves until stopped)
``#@ wait-request``     block until the first completion request (runtime failures)
``#@ respond-failed``   answer the pending requests 500, /health 503 from now on
``#@ kernel TEXT``       a line the kernel logs now (``dmesg``: Xid, OOM killer)
``#@ exit N``           the process's exit status
``#@ # text``           a comment

A line starting ``@rank `` is printed once per TP rank. The expansion is pure (no I/O
beyond reading templates), so tests and the classifier check render the same text the
fake process prints.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..assets import asset

_SLOT = re.compile(r"@\{(\w+)\}")


@dataclass
class Op:
    """One step of a replay: a line to print or a control directive."""

    kind: str
    """``line``, ``advance``, ``mem``, ``serve``, ``ready``, ``unserve``, ``wait-stop``,
    ``wait-request``, ``respond-failed``, ``exit``."""
    text: str = ""
    value: float = 0.0


@dataclass
class LogVars:
    """The facts a template's slots are filled from."""

    model: str = "moonshotai/Kimi-K3"
    served: str = ""
    tp: int = 8
    api_pid: int = 1
    host: str = "0.0.0.0"
    port: int = 8000
    version: str = "0.27.1"
    max_model_len: int = 1048576
    load_format: str = "auto"
    prefix_caching: bool = True
    cuda_driver_int: int = 13000
    args: str = "{}"
    visible: int = 0
    """GPUs the server sees (``CUDA_VISIBLE_DEVICES``); 0: as many as the TP size."""
    start: float = field(default_factory=time.time)
    pace: float = 1.0
    """Wall seconds per log second of ``#@ +N`` (the simulator plays faster than the real log ran):
    the ``ts`` stamps advance by it, so they follow the clock the session is recorded on."""

    def pids(self) -> dict[str, int]:
        base = self.api_pid
        out = {"api": base, "core": base + 37}
        for r in range(max(self.tp, 8)):
            out[f"wpid{r}"] = base + 61 + 4 * r
        return out


def template_text(name: str) -> str:
    return asset("scenarios", "logs", name).read_text(encoding="utf-8")


def _expand_includes(name: str, depth: int = 0) -> list[str]:
    if depth > 8:
        raise ValueError(f"log template include chain too deep at {name}")
    out: list[str] = []
    for line in template_text(name).splitlines():
        if line.startswith("#@ include "):
            out += _expand_includes(line.split(None, 2)[2].strip(), depth + 1)
        else:
            out.append(line)
    return out


def _rank_list(spec: str, tp: int) -> list[int]:
    if spec == "all":
        return list(range(tp))
    return [int(r) for r in spec.split(",") if int(r) < tp] or [tp - 1]


class _Filler:
    def __init__(self, v: LogVars) -> None:
        self.v = v
        self.clock = v.start
        pids = v.pids()
        self.base: dict[str, Any] = {
            "model": v.model,
            "served": repr([v.served or v.model]),
            "tp": v.tp,
            "host": v.host,
            "port": v.port,
            "version": v.version,
            "max_model_len": v.max_model_len,
            "max_model_len_commas": f"{v.max_model_len:,}",
            "load_format": v.load_format,
            "prefix_caching": v.prefix_caching,
            "cuda_driver_int": v.cuda_driver_int,
            "args": v.args,
            "visible": v.visible or v.tp,
            "wname0": "Worker_TP0" if v.tp > 1 else "Worker",
            **pids,
        }

    def fill(self, text: str, rank: int | None = None) -> str:
        values = dict(self.base)
        values["ts"] = time.strftime("%m-%d %H:%M:%S", time.localtime(self.clock))
        if rank is not None:
            values["rank"] = rank
            values["wpid"] = self.base[f"wpid{rank}"]
            values["wname"] = f"Worker_TP{rank}" if self.v.tp > 1 else "Worker"
        return _SLOT.sub(lambda m: str(values[m.group(1)]), text)


def ops(name: str, v: LogVars) -> Iterator[Op]:
    """The replay of template ``name``: lines filled in, directives as control ops."""
    f = _Filler(v)
    lines = _expand_includes(name)
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("#@ ranks "):
            parts = line.split()
            block = []
            while i < len(lines) and lines[i] != "#@ end":
                block.append(lines[i])
                i += 1
            i += 1
            ranks = _rank_list(parts[2], v.tp)
            if "interleave" in parts:
                for b in block:
                    for r in ranks:
                        yield Op("line", f.fill(b, r))
            else:
                for r in ranks:
                    for b in block:
                        yield Op("line", f.fill(b, r))
        elif line.startswith("#@ "):
            yield from _directive(line[3:].strip(), f)
        elif line.startswith("@rank "):
            for r in range(v.tp):
                yield Op("line", f.fill(line[6:], r))
        else:
            yield Op("line", f.fill(line))


def _directive(d: str, f: _Filler) -> Iterator[Op]:
    if d.startswith("#"):
        return
    if d.startswith("+"):
        secs = float(d[1:])
        f.clock += secs * f.v.pace
        yield Op("advance", value=secs)
    elif d.startswith("mem "):
        yield Op("mem", value=float(d.split()[1]))
    elif d.startswith("kernel "):
        yield Op("kernel", text=f.fill(d[7:]), value=f.clock)  # the log's clock: dmesg stamps agree with it
    elif d.startswith("exit "):
        yield Op("exit", value=float(d.split()[1]))
    elif d in ("serve", "ready", "unserve", "wait-stop", "wait-request", "respond-failed"):
        yield Op(d)
    else:
        raise ValueError(f"unknown log template directive '#@ {d}'")


def render(name: str, v: LogVars | None = None) -> tuple[str, int]:
    """The whole log a replay of ``name`` prints (waits skipped) and its exit status."""
    out, status = [], 0
    for op in ops(name, v or LogVars()):
        if op.kind == "line":
            out.append(op.text)
        elif op.kind == "exit":
            status = int(op.value)
    return "".join(line + "\n" for line in out), status

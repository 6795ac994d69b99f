"""GPU memory sampling ON the host: NVML through the host's own python, ``nvidia-smi -lms`` otherwise.

Why ship code instead of parsing ``nvidia-smi`` only: nvidia-ml-py's ``pynvml.py`` is one
pure-Python file; copied with ``nvml_sampler.py`` into a folder on the host and run with
``python3 -S`` (no site-packages, nothing installed), it reads per-GPU and per-process
memory and Xid critical-error events directly (measured on a real H200 host: 1,000
memory reads in 10 ms). Both files travel over the command's stdin, so any transport
(SSH, the simulated host, this machine) can do it. Where the host has no python or NVML
fails, ``nvidia-smi --query-gpu=… --format=csv,noheader,nounits`` is the fallback.

Two ways to use it: :meth:`GpuSampler.sample_once` (the single-request rung: one sample
after each request) and :meth:`GpuSampler.start` (a stream in the background while a
server starts). Every sample is a :class:`~k3tui.events.GpuSample` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pynvml

from ..events import GpuSample, Notice, XidEvent
from .parse import SMI_FIELDS, SmiTicks, parse_sampler_line, parse_smi_rows

Emit = Callable[[Any], Any]
SAMPLER = Path(__file__).with_name("nvml_sampler.py")


def _payload() -> tuple[str, str, str]:
    sampler = SAMPLER.read_text(encoding="utf-8")
    nvml = Path(pynvml.__file__).read_text(encoding="utf-8")
    tag = hashlib.blake2b((sampler + nvml).encode(), digest_size=6).hexdigest()
    return sampler, nvml, tag


def smi_command(interval_ms: int | None = None) -> str:
    """The nvidia-smi fallback command (one shot, or a loop every ``interval_ms``)."""
    loop = f" -lms {int(interval_ms)}" if interval_ms else ""
    return f"nvidia-smi --query-gpu={','.join(SMI_FIELDS)} --format=csv,noheader,nounits{loop}"


class GpuSampler:
    """Samples GPU memory on one host; ``source`` says how (``nvml``, ``nvidia-smi`` or ``""`` = no GPUs)."""

    def __init__(self, host: Any, emit: Emit, interval_ms: int = 500, prefer: str = "auto") -> None:
        """``prefer``: ``auto`` (NVML, else nvidia-smi) or ``nvidia-smi`` (never ship code to the host)."""
        self.host = host
        self.prefer = prefer
        self.emit = emit
        self.interval_ms = interval_ms
        self.source: str | None = None
        self.why_not = ""
        self.latest: GpuSample | None = None
        self.hello: dict[str, Any] = {}
        self._dir = ""
        self._task: asyncio.Task[None] | None = None

    async def _quiet(self, command: str, stdin: str | None = None, timeout: float = 30.0) -> Any:
        run_quiet = getattr(self.host, "run_quiet", None)
        if run_quiet is not None:
            return await run_quiet(command, stdin=stdin, timeout=timeout)
        return await self.host.run(command, stdin=stdin, timeout=timeout, purpose="gpu-sampler")

    async def detect(self) -> str:
        """Find the best source once: NVML via python3, else nvidia-smi, else "" (no NVIDIA GPU)."""
        if self.source is not None:
            return self.source
        res = await self.host.run("command -v nvidia-smi; command -v python3", timeout=15.0, purpose="gpu-sampler")
        found = res.stdout
        if "nvidia-smi" not in found:
            self.source, self.why_not = "", "no nvidia-smi on the host (no NVIDIA GPU, or not on PATH)"
            return ""
        if self.prefer != "nvidia-smi" and "python3" in found and await self._install() and await self._nvml_works():
            self.source = "nvml"
        else:
            self.source = "nvidia-smi"
        return self.source

    async def _install(self) -> bool:
        sampler, nvml, tag = _payload()
        self._dir = f'"$HOME"/.k3tui/gpu-{tag}'
        d = self._dir
        have = await self._quiet(f"test -f {d}/nvml_sampler.py && test -f {d}/pynvml.py && echo yes")
        if "yes" in have.stdout:
            return True
        for name, text in (("pynvml.py", nvml), ("nvml_sampler.py", sampler)):
            res = await self._quiet(f"mkdir -p {d} && cat > {d}/{name}.tmp && mv {d}/{name}.tmp {d}/{name}", stdin=text)
            if not res.ok:
                self.why_not = f"could not copy the NVML sampler to the host: {res.stderr.strip() or res.error}"
                return False
        return True

    async def _nvml_works(self) -> bool:
        res = await self._quiet(f"python3 -S {self._dir}/nvml_sampler.py 0 1", timeout=30.0)
        for line in res.stdout.splitlines():
            got = parse_sampler_line(line)
            if isinstance(got, dict) and "hello" in got:
                self.hello = got["hello"]
            if isinstance(got, dict) and "error" in got:
                self.why_not = str(got["error"])
        return bool(self.hello) and res.ok

    async def sample_once(self) -> GpuSample | None:
        """One sample now (recorded), or None on a host without NVIDIA GPUs."""
        source = await self.detect()
        if not source:
            return None
        if source == "nvml":
            res = await self._quiet(f"python3 -S {self._dir}/nvml_sampler.py 0 1")
            samples = [s for s in map(parse_sampler_line, res.stdout.splitlines()) if isinstance(s, GpuSample)]
        else:
            res = await self._quiet(smi_command())
            samples = parse_smi_rows(res.stdout.splitlines())
        return self._record(samples[-1]) if samples else None

    def _record(self, sample: GpuSample) -> GpuSample:
        sample.host = sample.host or self.host.alias
        self.latest = sample
        self.emit(sample)
        return sample

    async def start(self) -> bool:
        """Stream samples in the background (needs a host with ``stream``); False if it cannot."""
        source = await self.detect()
        stream = getattr(self.host, "stream", None)
        if not source or stream is None or self._task is not None:
            return False
        cmd = (
            f"exec python3 -S {self._dir}/nvml_sampler.py {self.interval_ms}"
            if source == "nvml"
            else smi_command(self.interval_ms)
        )
        self._task = asyncio.create_task(self._pump(stream(cmd, purpose="gpu-sampler")))
        return True

    async def _pump(self, batches: Any) -> None:
        ticks = SmiTicks()
        try:
            async for lines in batches:
                if self.source == "nvml":
                    for line in lines:
                        got = parse_sampler_line(line)
                        if isinstance(got, GpuSample):
                            self._record(got)
                        elif isinstance(got, XidEvent):
                            got.host = self.host.alias
                            self.emit(got)
                else:
                    for sample in ticks.feed(lines):
                        self._record(sample)
        except Exception as exc:  # noqa: BLE001 - a sampler failure must not stop the ladder
            self.emit(
                Notice(
                    host=self.host.alias, level="warning", message=f"GPU sampler on {self.host.alias} stopped: {exc}"
                )
            )

    async def stop(self) -> None:
        """Stop the background stream (the remote sampler dies with its channel)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

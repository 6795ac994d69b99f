"""NVML on the simulated host: a FAKE ``libnvidia-ml.so.1`` behind the host's ``python3``.

k3tui reads GPUs through NVML by sending nvidia-ml-py's own ``pynvml.py`` plus a short
script to the host's ``python3`` (freeze cross-check, GPU sampling during the ladder).
``pynvml`` loads the driver library with ``ctypes.CDLL("libnvidia-ml.so.1")``; on the
simulated host ``python3`` is the real interpreter with that one call answered by
:class:`FakeNvml`, a Python object with the C functions' calling convention (output
arguments filled through ``byref``), answering from the same state as the fake
``nvidia-smi``: the scenario's GPUs and the fake ``vllm`` processes holding memory. So the
real, unmodified pynvml code runs; only the shared library is simulated. Functions it does
not know raise ``AttributeError``, which pynvml reports as ``NVML_ERROR_FUNCTION_NOT_FOUND``
exactly as with an older real driver.
"""

from __future__ import annotations

import ctypes
import sys
import time
from typing import Any

from . import smi

SUCCESS, ERR_INVALID_ARGUMENT, ERR_INSUFFICIENT_SIZE, ERR_TIMEOUT = 0, 2, 7, 10
_HANDLE_BASE = 0x5100
MIB = 1 << 20


def _obj(arg: Any) -> Any:
    """The ctypes object behind ``byref(x)`` (or ``x`` itself)."""
    return getattr(arg, "_obj", arg)


def _put_str(buf: Any, text: str) -> None:
    buf.value = text.encode()


class _Fn:
    """One exported function: callable, with a settable ``restype`` like a ctypes function."""

    def __init__(self, impl: Any) -> None:
        self.impl = impl
        self.restype: Any = ctypes.c_int
        self.argtypes: Any = None

    def __call__(self, *args: Any) -> Any:
        out = self.impl(*args)
        return out


class FakeNvml:
    """The simulated host's NVML library."""

    def __init__(self, state: dict[str, Any], procs: list[dict[str, Any]]) -> None:
        self.state = state
        self.host = state["host"]
        self.view = smi.gpu_view(self.host, procs)

    def __getattr__(self, name: str) -> _Fn:
        impl = getattr(type(self), "_" + name, None)
        if impl is None or name.startswith("_"):
            raise AttributeError(name)
        return _Fn(lambda *a: impl(self, *a))

    # --- helpers -------------------------------------------------------------------

    def _gpu(self, handle: Any) -> dict[str, Any]:
        addr = ctypes.cast(handle, ctypes.c_void_p).value or 0
        return self.view[addr - _HANDLE_BASE]

    # --- system --------------------------------------------------------------------

    def _nvmlInitWithFlags(self, flags: Any) -> int:  # noqa: N802
        return SUCCESS

    def _nvmlInit_v2(self) -> int:  # noqa: N802
        return SUCCESS

    def _nvmlShutdown(self) -> int:  # noqa: N802
        return SUCCESS

    def _nvmlErrorString(self, result: Any) -> bytes:  # noqa: N802
        return b"k3tui simulated NVML error %d" % int(getattr(result, "value", result))

    def _nvmlSystemGetDriverVersion(self, buf: Any, size: Any) -> int:  # noqa: N802
        _put_str(buf, self.host["driver"])
        return SUCCESS

    def _nvmlSystemGetNVMLVersion(self, buf: Any, size: Any) -> int:  # noqa: N802
        _put_str(buf, f"{self.host['cuda'].split('.')[0]}.{self.host['driver']}")
        return SUCCESS

    def _nvmlSystemGetCudaDriverVersion(self, out: Any) -> int:  # noqa: N802
        _obj(out).value = int(self.host.get("cuda_driver_int", 13000))
        return SUCCESS

    _nvmlSystemGetCudaDriverVersion_v2 = _nvmlSystemGetCudaDriverVersion

    # --- devices -------------------------------------------------------------------

    def _nvmlDeviceGetCount_v2(self, out: Any) -> int:  # noqa: N802
        _obj(out).value = len(self.view)
        return SUCCESS

    def _nvmlDeviceGetHandleByIndex_v2(self, index: Any, out: Any) -> int:  # noqa: N802
        i = int(getattr(index, "value", index))
        if not 0 <= i < len(self.view):
            return ERR_INVALID_ARGUMENT
        target = _obj(out)
        ctypes.memmove(ctypes.addressof(target), ctypes.byref(ctypes.c_void_p(_HANDLE_BASE + i)), ctypes.sizeof(target))
        return SUCCESS

    def _nvmlDeviceGetIndex(self, handle: Any, out: Any) -> int:  # noqa: N802
        _obj(out).value = self._gpu(handle)["index"]
        return SUCCESS

    def _nvmlDeviceGetMinorNumber(self, handle: Any, out: Any) -> int:  # noqa: N802
        _obj(out).value = self._gpu(handle)["minor"]
        return SUCCESS

    def _nvmlDeviceGetName(self, handle: Any, buf: Any, size: Any) -> int:  # noqa: N802
        _put_str(buf, self._gpu(handle)["name"])
        return SUCCESS

    def _nvmlDeviceGetUUID(self, handle: Any, buf: Any, size: Any) -> int:  # noqa: N802
        _put_str(buf, self._gpu(handle)["uuid"])
        return SUCCESS

    def _nvmlDeviceGetSerial(self, handle: Any, buf: Any, size: Any) -> int:  # noqa: N802
        _put_str(buf, self._gpu(handle)["serial"])
        return SUCCESS

    def _nvmlDeviceGetMemoryInfo(self, handle: Any, out: Any) -> int:  # noqa: N802
        g, m = self._gpu(handle), _obj(out)
        total, used = g["mem_total"] * MIB, (g["mem_reserved"] + g["mem_used"]) * MIB
        m.total, m.used, m.free = total, used, total - used
        if hasattr(m, "reserved"):
            m.reserved, m.used = g["mem_reserved"] * MIB, g["mem_used"] * MIB
        return SUCCESS

    _nvmlDeviceGetMemoryInfo_v2 = _nvmlDeviceGetMemoryInfo

    def _nvmlDeviceGetCudaComputeCapability(self, handle: Any, major: Any, minor: Any) -> int:  # noqa: N802
        a, b = self.host["compute_cap"].split(".")
        _obj(major).value, _obj(minor).value = int(a), int(b)
        return SUCCESS

    def _nvmlDeviceGetPciInfo_v3(self, handle: Any, out: Any) -> int:  # noqa: N802
        g, p = self._gpu(handle), _obj(out)
        p.busId = g["bus_id"].encode()
        p.busIdLegacy = g["bus_id"][-12:].encode()
        p.domain, p.bus, p.device = int(g["pci_domain"], 16), int(g["pci_bus"], 16), int(g["pci_device"], 16)
        p.pciDeviceId = int(self.host["pci_device_id"], 16)
        return SUCCESS

    def _nvmlDeviceGetUtilizationRates(self, handle: Any, out: Any) -> int:  # noqa: N802
        u = _obj(out)
        u.gpu, u.memory = self._gpu(handle)["util"], 0
        return SUCCESS

    def _nvmlDeviceGetTemperature(self, handle: Any, sensor: Any, out: Any) -> int:  # noqa: N802
        _obj(out).value = self._gpu(handle)["temp"]
        return SUCCESS

    def _nvmlDeviceGetPowerUsage(self, handle: Any, out: Any) -> int:  # noqa: N802
        _obj(out).value = int(float(self._gpu(handle)["power_avg"]) * 1000)
        return SUCCESS

    def _nvmlDeviceGetComputeRunningProcesses_v3(self, handle: Any, count: Any, procs: Any) -> int:  # noqa: N802
        on = self._gpu(handle)["procs"]
        c = _obj(count)
        if procs is None:
            c.value = len(on)
            return ERR_INSUFFICIENT_SIZE if on else SUCCESS
        for i, p in enumerate(on[: c.value]):
            procs[i].pid, procs[i].usedGpuMemory = int(p["pid"]), int(p["used_mib"]) * MIB
            procs[i].gpuInstanceId = procs[i].computeInstanceId = 0xFFFFFFFF
        c.value = len(on)
        return SUCCESS

    _nvmlDeviceGetComputeRunningProcesses_v2 = _nvmlDeviceGetComputeRunningProcesses_v3

    def _nvmlDeviceGetGraphicsRunningProcesses_v3(self, handle: Any, count: Any, procs: Any) -> int:  # noqa: N802
        _obj(count).value = 0
        return SUCCESS

    # --- events (Xid): none arrive on a simulated host unless a scenario says so -----

    def _nvmlEventSetCreate(self, out: Any) -> int:  # noqa: N802
        return SUCCESS

    def _nvmlDeviceRegisterEvents(self, handle: Any, types: Any, event_set: Any) -> int:  # noqa: N802
        return SUCCESS

    def _nvmlDeviceGetSupportedEventTypes(self, handle: Any, out: Any) -> int:  # noqa: N802
        _obj(out).value = 0x8 | 0x4 | 0x2  # Xid critical error, double/single bit ECC
        return SUCCESS

    def _nvmlEventSetWait_v2(self, event_set: Any, data: Any, timeout_ms: Any) -> int:  # noqa: N802
        time.sleep(int(getattr(timeout_ms, "value", timeout_ms)) / 1000)
        return ERR_TIMEOUT

    def _nvmlEventSetFree(self, event_set: Any) -> int:  # noqa: N802
        return SUCCESS


def install(state: dict[str, Any], procs: list[dict[str, Any]]) -> None:
    """Make ``ctypes.CDLL("libnvidia-ml.so.1")`` return the simulated library in this interpreter."""
    real = ctypes.CDLL

    class CDLL(real):  # type: ignore[misc, valid-type]
        def __new__(cls, name: Any, *a: Any, **k: Any) -> Any:
            if name and "nvidia-ml" in str(name):
                return FakeNvml(state, procs)
            return real.__new__(cls)

    ctypes.CDLL = CDLL  # type: ignore[misc]


def run_python(state: dict[str, Any], procs: list[dict[str, Any]], args: list[str]) -> int:
    """``python3 [options] (-c CODE | -m MOD | - | SCRIPT) [args]`` with the simulated NVML."""
    import runpy

    install(state, procs)
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        a = args[i]
        if a == "-c":
            sys.argv = ["-c", *args[i + 2 :]]
            exec(compile(args[i + 1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
            return 0
        if a == "-m":
            sys.argv = [args[i + 1], *args[i + 2 :]]
            runpy.run_module(args[i + 1], run_name="__main__", alter_sys=True)
            return 0
        if a in ("-V", "--version"):
            print(f"Python {sys.version.split()[0]}")
            return 0
        if a in ("-X", "-W"):
            i += 1
        i += 1
    rest = args[i:]
    if not rest or rest[0] == "-":
        sys.argv = ["-", *rest[1:]] if rest else [""]
        exec(compile(sys.stdin.read(), "<stdin>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        return 0
    sys.argv = rest
    runpy.run_path(rest[0], run_name="__main__")
    return 0

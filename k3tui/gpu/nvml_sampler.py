"""k3tui GPU sampler, shipped to the GPU host and run there as `python3 -S nvml_sampler.py INTERVAL_MS [COUNT]`.

Runs with the host's own python and NO site-packages (-S): the only import beyond the
standard library is nvidia-ml-py's pure-Python `pynvml.py`, copied next to this file.
Prints one JSON object per line, flushed:
  {"hello": {"driver": "...", "nvml": "...", "gpus": [[index, name, uuid], ...]}}
  {"t": UNIX_SECONDS, "g": [[index, used_mib, total_mib, util_pct_or_null], ...],
   "p": [[gpu, pid, name, used_mib], ...]}
  {"xid": [gpu, xid]}            (NVML critical-error events, when the driver offers them)
  {"error": "..."}               (then exit 1)
The wait between samples is the NVML event wait itself, so an Xid is reported at once.
This file must stay importable and runnable by python3 >= 3.6 (f-strings) with nothing installed.
"""

import ctypes
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pynvml  # noqa: E402

MIB = 1024.0 * 1024.0


def out(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def proc_name(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()[:120]
    except OSError:
        try:
            return text(pynvml.nvmlSystemGetProcessName(pid))[:120]
        except pynvml.NVMLError:
            return ""


def util(h):
    try:
        return pynvml.nvmlDeviceGetUtilizationRates(h).gpu
    except pynvml.NVMLError:
        return None


def procs(i, h):
    try:
        found = pynvml.nvmlDeviceGetComputeRunningProcesses(h)
    except pynvml.NVMLError:
        return []
    return [[i, p.pid, proc_name(p.pid), round((p.usedGpuMemory or 0) / MIB, 1)] for p in found]


def memory(h):
    """Memory as nvidia-smi reports it: v2 excludes the driver's reserved memory (v1 counts it as used)."""
    try:
        return pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
    except (pynvml.NVMLError, AttributeError):
        return pynvml.nvmlDeviceGetMemoryInfo(h)


def sample(handles):
    gpus, ps = [], []
    for i, h in enumerate(handles):
        m = memory(h)
        gpus.append([i, round(m.used / MIB, 1), round(m.total / MIB, 1), util(h)])
        ps.extend(procs(i, h))
    return {"t": round(time.time(), 3), "g": gpus, "p": ps}


def event_set(handles):
    try:
        es = pynvml.nvmlEventSetCreate()
        for h in handles:
            pynvml.nvmlDeviceRegisterEvents(h, pynvml.nvmlEventTypeXidCriticalError, es)
        return es
    except pynvml.NVMLError:
        return None


def addr(handle):
    try:
        return ctypes.cast(handle, ctypes.c_void_p).value
    except (TypeError, ctypes.ArgumentError):
        return None


def wait(es, handles, ms):
    if es is None or ms <= 0:
        time.sleep(max(ms, 0) / 1000.0)
        return
    deadline = time.time() + ms / 1000.0
    while True:
        left = int((deadline - time.time()) * 1000)
        if left <= 0:
            return
        try:
            data = pynvml.nvmlEventSetWait_v2(es, left)
        except pynvml.NVMLError:
            return
        gpu = next((i for i, h in enumerate(handles) if addr(h) == addr(data.device)), -1)
        out({"xid": [gpu, int(data.eventData)]})


def main(argv):
    interval = int(argv[1]) if len(argv) > 1 else 500
    count = int(argv[2]) if len(argv) > 2 else 0
    try:
        pynvml.nvmlInit()
        n = pynvml.nvmlDeviceGetCount()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(n)]
        names = [
            [i, text(pynvml.nvmlDeviceGetName(h)), text(pynvml.nvmlDeviceGetUUID(h))] for i, h in enumerate(handles)
        ]
        out(
            {
                "hello": {
                    "driver": text(pynvml.nvmlSystemGetDriverVersion()),
                    "nvml": text(pynvml.nvmlSystemGetNVMLVersion()),
                    "gpus": names,
                }
            }
        )
    except pynvml.NVMLError as exc:
        out({"error": f"NVML: {exc}"})
        return 1
    es = event_set(handles) if count != 1 else None
    done = 0
    while count <= 0 or done < count:
        try:
            out(sample(handles))
        except pynvml.NVMLError as exc:
            out({"error": f"NVML: {exc}"})
            return 1
        done += 1
        if count <= 0 or done < count:
            wait(es, handles, interval)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (KeyboardInterrupt, BrokenPipeError):
        sys.exit(0)

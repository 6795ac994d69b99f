"""Capture every host probe of a freeze, exactly as k3tui sends it, plus the NVML health calls.

Run on a real GPU host (the lead's H200 machine, driver 580) to refresh
``tests/data/h200-r580-health-probes/``::

    PYTHONPATH=. python3 bench/capture_hw_probes.py OUTDIR [--pynvml-dir DIR]

Writes ``OUTDIR/probes.json`` (name → command, stdout, stderr, status, seconds: the form
``tests/data/h200-r580-local/probes.json`` has), ``OUTDIR/nvml_calls.txt`` (one NVML call
per child process, since a wrong struct version SEGFAULTS the caller: fabric info v1,
ECC, remapped rows, NVLink state and error counters, clocks-event reasons, PCIe, the
critical-Xid event registration) and ``OUTDIR/extras.txt`` (``nvidia-smi -q`` sections and
the kernel-log sources, each with its exit status). Stdlib only: the probe table is
imported from ``k3tui/scene/probes.py``, which needs nothing else.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

NVML_CALLS = {
    # the v1 struct: nvmlDeviceGetGpuFabricInfoV with the v2 struct SEGFAULTED on this driver
    "fabric_v1": "from ctypes import byref\nh=nvmlDeviceGetHandleByIndex(0); f=c_nvmlGpuFabricInfo_t(); "
    "nvmlDeviceGetGpuFabricInfo(h, byref(f)); "
    "print({'state': f.state, 'status': f.status, 'cliqueId': f.cliqueId, 'clusterUuid': bytes(f.clusterUuid).hex()})",
    "ecc_mode": "print(nvmlDeviceGetEccMode(nvmlDeviceGetHandleByIndex(0)))",
    "ecc_uncorrected_volatile": "print(nvmlDeviceGetTotalEccErrors(nvmlDeviceGetHandleByIndex(0), 1, 0))",
    "ecc_uncorrected_aggregate": "print(nvmlDeviceGetTotalEccErrors(nvmlDeviceGetHandleByIndex(0), 1, 1))",
    "remapped_rows": "print(nvmlDeviceGetRemappedRows(nvmlDeviceGetHandleByIndex(0)))",
    "retired_pages_pending": "print(nvmlDeviceGetRetiredPagesPendingStatus(nvmlDeviceGetHandleByIndex(0)))",
    "clocks_event_reasons": "print(hex(nvmlDeviceGetCurrentClocksEventReasons(nvmlDeviceGetHandleByIndex(0))))",
    "pcie": "h=nvmlDeviceGetHandleByIndex(0); print(nvmlDeviceGetCurrPcieLinkGeneration(h), "
    "nvmlDeviceGetMaxPcieLinkGeneration(h), nvmlDeviceGetCurrPcieLinkWidth(h), nvmlDeviceGetMaxPcieLinkWidth(h))",
    "persistence_mig": "h=nvmlDeviceGetHandleByIndex(0); print(nvmlDeviceGetPersistenceMode(h), nvmlDeviceGetMigMode(h))",
    "nvlink_state": "h=nvmlDeviceGetHandleByIndex(0); print([nvmlDeviceGetNvLinkState(h, i) for i in range(18)])",
    "nvlink_replay_errors": "print(nvmlDeviceGetNvLinkErrorCounter(nvmlDeviceGetHandleByIndex(0), 0, 0))",
    "supported_events": "print(hex(nvmlDeviceGetSupportedEventTypes(nvmlDeviceGetHandleByIndex(0))))",
    "xid_register_wait": "h=nvmlDeviceGetHandleByIndex(0); s=nvmlEventSetCreate(); "
    "nvmlDeviceRegisterEvents(h, nvmlEventTypeXidCriticalError, s)\n"
    "try:\n    d=nvmlEventSetWait(s, 500); print('event', d.eventType, d.eventData)\n"
    "except NVMLError as e:\n    print('registered; no event in 500 ms:', e)",
}

EXTRAS = [
    "nvidia-smi -q",
    "nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER",
    "nvidia-smi -q -d PERFORMANCE",
    "nvidia-smi nvlink -s",
    "nvidia-smi nvlink -e",
    "nvidia-smi nvlink -c",
    "nvidia-smi --query-gpu=index,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,"
    "pcie.link.width.max,persistence_mode,mig.mode.current,clocks_event_reasons.active,"
    "ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.total,"
    "remapped_rows.pending,remapped_rows.failure,fabric.state,fabric.status --format=csv",
    "grep btime /proc/stat; cat /proc/uptime; date +%s",
    "dmesg | tail -n 40",
    "journalctl -k -b -o short-iso-precise --no-pager -q | tail -n 5",
    "ls -la /dev/nvidia-caps-imex-channels /dev/nvidia-caps",
    "command -v nvidia-imex nvidia-imex-ctl nv-fabricmanager systemctl",
    "cat /proc/driver/nvidia/gpus/*/information",
]


def run(command: str, timeout: float, stdin: str | None = None) -> dict:
    t = time.monotonic()
    try:
        p = subprocess.run(
            ["/bin/sh", "-c", command], input=stdin, capture_output=True, text=True, timeout=timeout, errors="replace"
        )
        out = {"stdout": p.stdout, "stderr": p.stderr, "status": p.returncode}
    except subprocess.TimeoutExpired as exc:
        out = {"stdout": str(exc.stdout or ""), "stderr": f"timed out after {timeout:g}s", "status": None}
    out["seconds"] = round(time.monotonic() - t, 4)
    return {"command": command, **out}


def capture_probes(outdir: Path) -> None:
    from k3tui.scene.probes import command_for, probes_for, stdin_for

    probes = {p.name: run(command_for(p), p.timeout, stdin_for(p)) for p in probes_for("host")}
    (outdir / "probes.json").write_text(json.dumps(probes, indent=1))
    for name, r in probes.items():
        print(f"{name:18} status={r['status']} {r['seconds']:.3f}s {len(r['stdout'])} B  {r['stderr'][:100]!r}")


def capture_nvml(outdir: Path, pynvml_dir: str) -> None:
    lines = []
    for name, code in NVML_CALLS.items():
        script = f"import sys\nsys.path.insert(0, {pynvml_dir!r})\nfrom pynvml import *\nnvmlInit()\n{code}\n"
        r = run(f"{sys.executable} -S -", 20, script)
        body = (r["stdout"] + r["stderr"]).strip().splitlines()
        lines.append(f"{name}: rc={r['status']} {' | '.join(body[-3:])}")
    (outdir / "nvml_calls.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def capture_extras(outdir: Path) -> None:
    parts = []
    for cmd in EXTRAS:
        r = run(cmd, 20)
        parts.append(f"===== {cmd}\n{r['stdout']}{r['stderr']}[exit {r['status']}]\n")
    (outdir / "extras.txt").write_text("".join(parts))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--pynvml-dir", default=".whl", help="folder holding nvidia-ml-py's pynvml.py")
    args = ap.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(Path(args.pynvml_dir).resolve()))
    capture_probes(args.outdir)
    capture_nvml(args.outdir, str(Path(args.pynvml_dir).resolve()))
    capture_extras(args.outdir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Short CUDA / PyTorch / NCCL failure texts → what failed, in one of a few named kinds.

The server log's first exception is the classifier's job (:mod:`k3tui.classify`); this
parser reads the *short* failures a probe or a one-line repro prints (``python -c
'import torch; …'``), so a freeze or a baseline check can say "CUDA runtime 12 missing"
or "Error 803: the container's libcuda shadows the host driver" without a full log.
"""

from __future__ import annotations

import re
from typing import Any

from ._common import ParseError, strip_transcript

# (kind, pattern, hint) — first match wins; order from most to least specific.
KINDS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        "cuda-compat-803",
        re.compile(r"Error 803|system has unsupported display driver / cuda driver combination", re.I),
        "a forward-compatibility libcuda (cuda-compat) shadows the host driver: check /etc/ld.so.conf.d and the loaded libcuda",
    ),
    (
        "cuda-compat-804",
        re.compile(r"Error 804|forward compatibility was attempted on non supported HW", re.I),
        "cuda-compat libcuda on hardware without forward-compatibility support",
    ),
    (
        "cuda-library-missing",
        re.compile(r"(libcu\w+\.so(?:\.\d+)*): cannot open shared object file"),
        "a CUDA library of another major version is expected: image and wheels built for different CUDA",
    ),
    (
        "no-gpu",
        re.compile(r"No CUDA GPUs are available|no CUDA-capable device is detected"),
        "the process sees no GPU: NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES / --gpus",
    ),
    (
        "oom",
        re.compile(r"OutOfMemoryError|CUDA out of memory"),
        "GPU memory: other processes, utilisation, context length",
    ),
    (
        "device-assert",
        re.compile(r"device-side assert triggered"),
        "a kernel assertion: rerun with CUDA_LAUNCH_BLOCKING=1 for the real call site",
    ),
    (
        "distributed-timeout",
        re.compile(r"DistStoreError|Timed out after \d+ seconds waiting for clients"),
        "ranks did not all join: world size, MASTER_ADDR/PORT, other nodes",
    ),
    (
        "nccl",
        re.compile(r"NCCL error|ncclInternalError|ncclSystemError|ncclUnhandledCudaError"),
        "NCCL: rerun with NCCL_DEBUG=TRACE",
    ),
    (
        "no-kernel-image",
        re.compile(r"no kernel image is available for execution on the device"),
        "the build does not include this GPU's architecture (compute capability)",
    ),
)

_EXC = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)):\s*(.*)$")


def parse_failure(text: str) -> dict[str, Any]:
    """A short failure text → {exception, message, kind, hint, detail, traceback}."""
    body = strip_transcript(text)
    exc_lines = [m for m in map(_EXC.match, body.splitlines()) if m]
    kind, hint, detail = "unknown", "", None
    for name, rx, h in KINDS:
        if m := rx.search(body):
            kind, hint = name, h
            detail = m.group(1) if m.groups() else None
            break
    if not exc_lines and kind == "unknown":
        raise ParseError("no exception line (Type: message) and no known CUDA failure text")
    last = exc_lines[-1] if exc_lines else None
    return {
        "exception": last[1] if last else None,
        "message": last[2] if last else None,
        "kind": kind,
        "hint": hint,
        "detail": detail,
        "traceback": "Traceback (most recent call last)" in body,
    }

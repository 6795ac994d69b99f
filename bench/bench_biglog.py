"""The first root of a multi-GB server log, found on the host (issue 15): time, bytes read, memory.

    .venv/bin/python bench/bench_biglog.py                      # 2 GB, the three scenarios, RSS at 0.5/1/2 GB
    .venv/bin/python bench/bench_biglog.py --size-gb 0.5 --rounds 1 --scenarios start

Setup (root needed): a real OpenSSH sshd (``tests/support/sshd.py``) and a real dockerd
(``tests/support/dockerd.py``) on this machine. Per scenario a log of real lines is
written once into ``/tmp`` — NCCL INFO/TRACE lines of a real H200 rank
(``../shared/fixtures/hosts/h200-r580-health/nccl_trace_1rank.txt``) up to the size, a real
failing vLLM start-up (``../shared/corpus``) as the root, and consequences (its
EngineDeadError tail) every ~400 MB later — and a busybox container ``cat``s it, so that
docker writes its own json-file log (``--via file`` skips docker and scans the raw file
with ``--log``). The sshd user gets read access to that file (on a GPU host the on-call
engineer is root).

Scenarios: ``start`` (the root near the start, consequences later), ``end`` (the root near
the end), ``two`` (two different roots; the first must win).

Printed per scenario, each the median of ``--rounds``:

- the **baseline in the same run**: ``ssh HOST grep -c ERROR LOG`` with the OpenSSH client
  (page cache warm for both);
- k3tui's :func:`~k3tui.remote.prefilter.find_root` over asyncssh to the same sshd: when the
  root was named, when everything was done (the host's SHA-256 of the whole file included),
  the ratios of both to the baseline, the bytes read over SSH and their share of the file;
- that the root named is the one classifying the whole file names (checked once per
  scenario with :func:`~k3tui.classify.classify_text`, streamed, on this machine);
- for ``start`` with docker, one whole ``freeze`` of the container too.

Then the peak RSS of a fresh k3tui process running ``find_root`` on logs of 0.5, 1 and 2 GB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from k3tui.classify import Classifier  # noqa: E402
from k3tui.remote.prefilter import decode, find_root  # noqa: E402

SHARED = REPO.parent / "shared"
NCCL = SHARED / "fixtures" / "hosts" / "h200-r580-health" / "nccl_trace_1rank.txt"
ROOT_A = SHARED / "corpus" / "vllm-cpu" / "10c-fail-model-path-missing.log"
ROOT_B = SHARED / "corpus" / "vllm-cpu" / "10a-fail-tensor-parallel-8.log"
CONSEQUENCE_EVERY = 400 << 20


def consequences(text: str) -> str:
    """The lines from the first EngineDeadError on: what a dead server keeps printing."""
    i = text.find("EngineDeadError")
    return text[text.rfind("\n", 0, i) + 1 :] if i >= 0 else ""


def write_log(path: Path, size: int, scenario: str) -> None:
    """A log of real lines of about ``size`` bytes."""
    flood = NCCL.read_text(encoding="utf-8")
    block = flood * max(1, (16 << 20) // len(flood))
    a, b = ROOT_A.read_text(encoding="utf-8"), ROOT_B.read_text(encoding="utf-8")
    tail = consequences(a) or "ERROR 12-01 22:00:00 [core.py:1] EngineDeadError: EngineCore encountered an issue.\n"
    with path.open("w", encoding="utf-8") as fh:
        fh.write(flood[:200_000])
        if scenario in ("start", "two"):
            fh.write(a)
        written, next_cons, placed_b = fh.tell(), CONSEQUENCE_EVERY, False
        while written < size - (len(a) if scenario == "end" else 0):
            fh.write(block)
            written = fh.tell()
            if written > next_cons:
                fh.write(tail)
                next_cons += CONSEQUENCE_EVERY
            if scenario == "two" and not placed_b and written > size // 2:
                fh.write(b)
                placed_b = True
        if scenario == "end":
            fh.write(a)
        fh.write(flood[:100_000])


def reference(path: Path, fmt: str) -> tuple[str | None, int | None]:
    """The root line and number classifying the whole file (streamed; the slow way)."""
    c = Classifier()
    with path.open("r", encoding="utf-8", errors="replace", newline="") as fh:
        while chunk := fh.read(8 << 20):
            c.feed(decode(chunk + fh.readline(), fmt))  # whole lines: a docker entry is decoded whole
    r = c.finish()
    return (r.first_exception.line, r.first_exception.line_number) if r.first_exception else (None, None)


def readable(path: str) -> None:
    p = Path(path)
    os.chmod(p, 0o644)
    for parent in p.parents:
        if parent == Path("/"):
            break
        os.chmod(parent, os.stat(parent).st_mode | 0o005)


def baseline(sshd, log: str) -> float:  # noqa: ANN001
    t = time.perf_counter()
    subprocess.run(sshd.ssh_argv("grep", "-c", "ERROR", log), capture_output=True, check=False)
    return time.perf_counter() - t


async def k3tui_scan(sshd, log: str, fmt: str):  # noqa: ANN001, ANN201
    from k3tui.remote.ssh import connect

    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        t = time.perf_counter()
        scan = await find_root(host, log, fmt=fmt)
        return time.perf_counter() - t, scan


async def k3tui_freeze(sshd, dockerd, name: str):  # noqa: ANN001, ANN201
    from k3tui.remote.ssh import connect
    from k3tui.scene.freeze import freeze

    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        t = time.perf_counter()
        s = await freeze(host, container=name, docker_socket=dockerd.socket)
        return time.perf_counter() - t, s


def container_log(dockerd, raw: Path) -> tuple[object, str]:  # noqa: ANN001
    """A container that prints the log; docker writes its json-file. Returns (container, LogPath)."""
    with raw.open("rb") as fh:
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(16 << 20), b""))
    c = dockerd.run_container(
        command=("sh", "-c", "cat /srv/server.log; exec sleep 36000", "vllm", "serve"),
        volumes={str(raw.parent): {"bind": "/srv", "mode": "ro"}},
    )
    c.reload()
    path = c.attrs["LogPath"]
    t0 = time.monotonic()
    while True:
        time.sleep(1.0)
        r = subprocess.run(["wc", "-l", path], capture_output=True, text=True, check=False)
        got = int(r.stdout.split()[0]) if r.stdout else 0
        if got >= lines:
            break
        if time.monotonic() - t0 > 1800:
            raise SystemExit(f"docker logged {got} of {lines} lines in 30 min")
    print(
        f"  docker logged {lines:,} lines, {os.path.getsize(path) / 1e9:.2f} GB json-file in {time.monotonic() - t0:.0f}s"
    )
    return c, path


def run_scenario(args, sshd, dockerd, scenario: str, work: Path) -> None:  # noqa: ANN001
    raw = work / "server.log"
    t = time.monotonic()
    write_log(raw, int(args.size_gb * 1e9), scenario)
    readable(str(raw))
    print(f"\n== {scenario}: wrote {raw.stat().st_size / 1e9:.2f} GB in {time.monotonic() - t:.0f}s")
    container = None
    if args.via == "docker":
        container, log, fmt = (*container_log(dockerd, raw), "docker-json")
        readable(log)
        raw.unlink()  # only the container's own log stays on disk
    else:
        log, fmt = str(raw), "raw"
    size = os.path.getsize(log)
    subprocess.run(["cat", log], stdout=subprocess.DEVNULL, check=False)  # warm the page cache for both
    base, ours = [], []
    for _ in range(args.rounds):
        base.append(baseline(sshd, log))
        ours.append(asyncio.run(k3tui_scan(sshd, log, fmt)))
    b = statistics.median(base)
    total = statistics.median(x for x, _ in ours)
    scan = ours[-1][1]
    named = statistics.median(s.root_seconds or x for x, s in ours)
    fe = scan.result.first_exception
    print(f"  baseline ssh grep -c ERROR: {b:.2f}s  (rounds {', '.join(f'{x:.2f}' for x in base)})")
    print(f"  k3tui root named:           {named:.2f}s  ratio {named / b:.2f}")
    print(f"  k3tui done (+ host SHA-256): {total:.2f}s  ratio {total / b:.2f}")
    print(
        f"  read over SSH: {scan.bytes_read:,} B of {size:,} ({100 * scan.bytes_read / size:.3f}%) in {len(scan.ranges)} ranges"
    )
    print(f"  root: line {fe.line_number if fe else None}: {(fe.line if fe else '')[:100]}")
    ref = reference(Path(log), fmt)
    same = ref == ((fe.line, fe.line_number) if fe else (None, None))
    print(f"  same root as classifying the whole file: {'yes' if same else 'NO: ' + repr(ref)}")
    if container is not None and scenario == "start":
        secs, s = asyncio.run(k3tui_freeze(sshd, dockerd, container.name))
        print(
            f"  whole freeze of the container: {secs:.2f}s (ratio {secs / b:.2f}); root: {(s.first_exception or {}).get('line', '')[:80]}"
        )
    if container is not None:
        container.remove(force=True)


RSS_CHILD = """
import asyncio, json, sys
sys.path.insert(0, {repo!r})
from k3tui.remote.prefilter import find_root
from k3tui.remote.ssh import connect
async def main():
    async with connect({target!r}, identity=[{key!r}], known_hosts={kh!r}) as h:
        s = await find_root(h, {log!r})
    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]
    print(json.dumps({{"hwm_kib": int(hwm), "read": s.bytes_read, "root": bool(s.result.first_exception)}}))
asyncio.run(main())
"""


def rss(sshd, work: Path, sizes: list[float]) -> None:  # noqa: ANN001
    print("\n== peak RSS of a k3tui process running find_root (root near the start, raw file)")
    raw = work / "rss.log"
    for gb in sizes:
        write_log(raw, int(gb * 1e9), "start")
        readable(str(raw))
        code = RSS_CHILD.format(
            repo=str(REPO), target=sshd.target, key=str(sshd.key_path), kh=str(sshd.known_hosts), log=str(raw)
        )
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
        if r.returncode:
            print(f"  {gb} GB: failed: {r.stderr[-500:]}")
            continue
        got = json.loads(r.stdout.strip().splitlines()[-1])
        print(
            f"  {raw.stat().st_size / 1e9:.2f} GB: peak RSS {got['hwm_kib'] / 1024:.1f} MiB, read {got['read']:,} B, root found: {got['root']}"
        )
    raw.unlink(missing_ok=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-gb", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scenarios", default="start,end,two")
    ap.add_argument("--via", choices=["docker", "file"], default="docker")
    ap.add_argument("--rss-sizes", default="0.5,1,2", help="GB sizes for the peak-RSS runs ('' = none)")
    args = ap.parse_args()
    from tests.support.dockerd import DockerServer
    from tests.support.sshd import _Factory

    work = Path(tempfile.mkdtemp(prefix="k3-biglog-", dir="/tmp"))
    os.chmod(work, 0o755)
    sbase = Path(tempfile.mkdtemp(prefix="k3-biglog-sshd-"))
    factory = _Factory(sbase)
    sshd = factory.start("bench")
    dockerd = None
    try:
        if args.via == "docker":
            dockerd = DockerServer(Path(tempfile.mkdtemp(prefix="k3d-", dir="/tmp")))
            dockerd.start()
            dockerd.build_image()
        print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.1f}; sshd on {sshd.target}")
        for sc in [s for s in args.scenarios.split(",") if s]:
            run_scenario(args, sshd, dockerd, sc, work)
        if args.rss_sizes:
            rss(sshd, work, [float(x) for x in args.rss_sizes.split(",")])
    finally:
        if dockerd is not None:
            dockerd.stop()
        factory.stop_all()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(sbase, ignore_errors=True)


if __name__ == "__main__":
    main()

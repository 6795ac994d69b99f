"""Latency from ``emit()`` to a follower (issue 21), local and over loopback SSH, median/p99.

One recording is written by a real :class:`~k3tui.recording.Recorder` (one event every
``--interval`` seconds, each carrying the ``perf_counter`` of its ``emit``), and read at the same
time, in the same run, by:

- baseline: a 1 ms busy poller of the raw file — when the line is on disk (the recorder's own
  write delay: no follower can be faster);
- local: :func:`k3tui.follow.follow` of the file (:class:`~k3tui.follow.LocalSource`, polling);
- ssh: :func:`k3tui.follow.follow` over a real OpenSSH sshd on 127.0.0.1
  (:class:`~k3tui.follow.SshSource`; ``tests/support/sshd.py``; needs root, skipped otherwise).

Printed: median and p99 of each in ms, and each follower's ratio to the baseline.

    .venv/bin/python bench/bench_follow.py [--events 200] [--interval 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from k3tui.events import Header, Output  # noqa: E402
from k3tui.follow import Arrived, LocalSource, SshSource, follow  # noqa: E402
from k3tui.recording import Recorder  # noqa: E402


def _write(path: Path, n: int, interval: float, started: threading.Event) -> None:
    rec = Recorder(path, Header(host="bench", title="bench_follow"))
    started.set()
    time.sleep(0.5)  # let the followers open the file
    for _ in range(n):
        rec.emit(Output(id="c", text=str(time.perf_counter_ns())))
        time.sleep(interval)
    rec.close()


def _baseline(path: Path, n: int, out: list[float]) -> None:
    """Busy-poll the file every 1 ms; the latency of each line reaching the disk."""
    while not path.exists():
        time.sleep(0.001)
    buf = b""
    with open(path, "rb") as fh:
        while len(out) < n:
            data = fh.read()
            if not data:
                time.sleep(0.001)
                continue
            now = time.perf_counter_ns()
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                i = line.find(b'"text":"')
                if i >= 0:
                    out.append((now - int(line[i + 8 : line.index(b'"', i + 8)])) / 1e6)


async def _follow(source: object, out: list[float]) -> None:
    async for item in follow(source):
        if isinstance(item, Arrived) and isinstance(item.event, Output):
            out.append((time.perf_counter_ns() - int(item.event.text)) / 1e6)


def _ssh_server(base: Path):  # noqa: ANN202 - a tests/support SshServer, or a reason string
    try:
        from tests.support.sshd import _Factory

        factory = _Factory(base)
        return factory, factory.start("bench")
    except BaseException as exc:  # noqa: BLE001 - pytest's skip is a BaseException
        return None, f"{type(exc).__name__}: {exc}"


async def _followers(path: Path, server: object, local: list[float], ssh: list[float]) -> None:
    tasks = [_follow(LocalSource(path), local)]
    host = None
    if server is not None and not isinstance(server, str):
        from k3tui.remote.ssh import connect

        host = await connect(server.target, **server.connect_kwargs())
        tasks.append(_follow(SshSource(host, str(path)), ssh))
    try:
        await asyncio.gather(*tasks)
    finally:
        if host is not None:
            await host.close()


def _line(name: str, xs: list[float], base: list[float]) -> str:
    if not xs:
        return f"{name:9s} (not measured)"
    xs = sorted(xs)
    med, p99 = statistics.median(xs), xs[min(len(xs) - 1, int(len(xs) * 0.99))]
    ratio = f"  {med / statistics.median(base):5.1f}x baseline median" if base and name != "baseline" else ""
    return f"{name:9s} n={len(xs):4d}  median {med:7.1f} ms  p99 {p99:7.1f} ms{ratio}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200)
    ap.add_argument("--interval", type=float, default=0.05)
    args = ap.parse_args()
    base_dir = Path(tempfile.mkdtemp(prefix="k3bench-follow-", dir="/tmp"))
    base_dir.chmod(0o755)
    path = base_dir / "live.k3rec"
    factory, server = _ssh_server(base_dir)
    started = threading.Event()
    base: list[float] = []
    local: list[float] = []
    ssh: list[float] = []
    writer = threading.Thread(target=_write, args=(path, args.events, args.interval, started))
    writer.start()
    started.wait()
    poller = threading.Thread(target=_baseline, args=(path, args.events, base), daemon=True)
    poller.start()
    try:
        asyncio.run(_followers(path, server, local, ssh))
    finally:
        writer.join()
        if factory is not None:
            factory.stop_all()
    print(f"bench_follow: {args.events} events, one every {args.interval * 1000:.0f} ms")
    print(_line("baseline", base, base))
    print(_line("local", local, base))
    print(_line("ssh", ssh, base) if not isinstance(server, str) else f"ssh       skipped: {server}")


if __name__ == "__main__":
    main()

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

``--screen`` (on by default; ``--no-screen`` skips it) then measures emit → the replay screen's
LIVE mode in a headless Textual app (``run_test``), once over the local file and once over SSH,
each in its own pass (a new recording, its own baseline poller): when the screen got the event
(``_live_batch``, i.e. the follow() item inside the app) and when the compositor rendered the
event's log line (the log view's ``render_line``: the strip that a terminal would be sent; a
headless app renders it the same, only the final write to a terminal is skipped). Printed with
each pass's ratio to its baseline and the screen's ratio to the follow() item of the same pass.

    .venv/bin/python bench/bench_follow.py [--events 200] [--interval 0.05] [--no-screen]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from k3tui.events import Header, Output, RunStarted  # noqa: E402
from k3tui.follow import Arrived, LocalSource, SshSource, follow  # noqa: E402
from k3tui.recording import Recorder  # noqa: E402


def _write(path: Path, n: int, interval: float, started: threading.Event, ready: threading.Event | None = None) -> None:
    rec = Recorder(path, Header(host="bench", title="bench_follow"))
    rec.emit(RunStarted(run="r1", command="vllm serve bench"))  # a server log: lines the screen shows
    started.set()
    time.sleep(0.5)  # let the followers open the file
    if ready is not None:
        ready.wait(60)  # the screen is up and measuring
    for _ in range(n):
        rec.emit(Output(id="r1", text=str(time.perf_counter_ns())))
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


_TOKEN = re.compile(r"\d{6,}")  # an emit's perf_counter_ns, as the log line shows it


async def _screen(
    path: Path, server: object, n: int, ready: threading.Event, got: list[float], shown: list[float]
) -> None:
    """Follow ``path`` in the replay screen's LIVE mode of a headless app; record emit → the screen
    receiving each event (``got``) and emit → its log line rendered by the compositor (``shown``)."""
    from k3tui.follow import LiveFollow
    from screens.app import K3App
    from screens.replay.replay_screen import ReplayScreen

    async def opener():  # noqa: ANN202
        if server is None:
            return LocalSource(path), None
        from k3tui.remote.ssh import connect

        host = await connect(server.target, **server.connect_kwargs())
        return SshSource(host, str(path)), host

    seen: set[int] = set()
    app = K3App(live=LiveFollow(opener, path.parent / f"spool-{id(got)}"), home_dirs=[])
    async with app.run_test(size=(200, 60)) as pilot:
        while not (isinstance(app.screen, ReplayScreen) and app.screen.sub_title):  # composed and mounted
            await pilot.pause(0.01)
        screen = app.screen
        batch, render_line = screen._live_batch, screen.view.log_view.render_line

        def live_batch(items: list[object]) -> None:
            now = time.perf_counter_ns()
            for item in items:
                if isinstance(item, Arrived) and isinstance(item.event, Output) and item.event.text.isdigit():
                    got.append((now - int(item.event.text)) / 1e6)
            batch(items)

        def rendered(y: int):  # noqa: ANN202 - a Strip
            strip = render_line(y)
            now = time.perf_counter_ns()
            for m in _TOKEN.finditer(strip.text):
                t = int(m.group())
                if t not in seen:
                    seen.add(t)
                    shown.append((now - t) / 1e6)
            return strip

        screen._live_batch = live_batch
        screen.view.log_view.render_line = rendered
        ready.set()
        while len(shown) < n and "ENDED" not in str(screen.query_one("#livebar").content):
            await pilot.pause(0.05)
        await pilot.pause(0.2)


def _screen_pass(base_dir: Path, server: object, args: argparse.Namespace, name: str) -> list[str]:
    path = base_dir / f"screen-{name}.k3rec"
    started = threading.Event()
    base: list[float] = []
    got: list[float] = []
    shown: list[float] = []
    ready = threading.Event()
    writer = threading.Thread(target=_write, args=(path, args.events, args.interval, started, ready))
    writer.start()
    started.wait()
    threading.Thread(target=_baseline, args=(path, args.events, base), daemon=True).start()
    try:
        asyncio.run(_screen(path, server, args.events, ready, got, shown))
    finally:
        ready.set()
        writer.join()
    ratio = ""
    if got and shown:
        med_got, med_shown = statistics.median(got), statistics.median(shown)
        ratio = f"  {med_shown / med_got:5.2f}x its follow() item (+{med_shown - med_got:.1f} ms)"
    return [
        f"screen pass, {name} (same run, own recording):",
        "  " + _line("baseline", base, base),
        "  " + _line("item", got, base),
        "  " + _line("screen", shown, base) + ratio,
    ]


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
    ap.add_argument(
        "--screen", action=argparse.BooleanOptionalAction, default=True, help="also emit → the replay screen"
    )
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
    screen: list[str] = []
    try:
        asyncio.run(_followers(path, server, local, ssh))
        writer.join()
        if args.screen:
            screen += _screen_pass(base_dir, None, args, "local")
            if not isinstance(server, str):
                screen += _screen_pass(base_dir, server, args, "ssh")
            else:
                screen.append(f"screen pass, ssh: skipped: {server}")
    finally:
        writer.join()
        if factory is not None:
            factory.stop_all()
    print(f"bench_follow: {args.events} events, one every {args.interval * 1000:.0f} ms")
    print(_line("baseline", base, base))
    print(_line("local", local, base))
    print(_line("ssh", ssh, base) if not isinstance(server, str) else f"ssh       skipped: {server}")
    for line in screen:
        print(line)


if __name__ == "__main__":
    main()

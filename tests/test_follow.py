"""Issue 21: following a recording while it is written — locally and over a real OpenSSH sshd.

What is proven here:

- the sans-IO :class:`~k3tui.follow.Tail` gives the events of ``read_all`` whatever the byte
  chunks it is fed (partial lines held), and names the altered line of a tampered file (property);
- a demo recorded in one process and followed by two processes over SSH (the CLI's parser,
  source and printer): each prints every event once and the same ``result:`` as ``replay``, and
  the state folded from the events it saw equals the finished file's as ``replay`` folds it;
- following over SSH keeps ``connect``'s host-key rules: an unknown key and a changed key each
  stop ``k3tui replay --follow user@host:PATH --headless`` with one line naming the fingerprint;
- a follower stalled while the writer records a burst (megabytes over SSH, tiny reads too)
  catches up with every event exactly once, in order;
- a follower whose SSH connection is killed (``SshServer.kill_sessions``) resumes without loss
  or duplicates; a tamper mid-stream is reported before the rest of the file is even written;
- a recorder killed with SIGKILL is shown as such (no seal, nobody holds the file).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

import asyncssh
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3tui import follow as follow_mod
from k3tui.commands.replay_follow import _event_line
from k3tui.events import Header, Output
from k3tui.follow import Arrived, Broken, Ended, LocalSource, SshSource, Tail, follow, split_remote
from k3tui.reader import decode_event, read_all
from k3tui.recording import Recorder
from k3tui.remote.ssh import connect, fingerprint
from k3tui.replay import Replay
from k3tui.state import SessionState, fold

K3TUI = [sys.executable, "-m", "k3tui.cli"]


def _shared_dir() -> Path:
    """A directory the sshd's user (k3test) can read (pytest's tmp_path is root's, mode 700)."""
    d = Path(tempfile.mkdtemp(prefix="k3follow-", dir="/tmp"))
    d.chmod(0o755)
    return d


def _record(path: Path, texts: list[str]) -> None:
    rec = Recorder(path, Header(host="h", title="t"))
    for i, text in enumerate(texts):
        rec.emit(Output(id=f"c{i}", text=text))
    rec.close()


def _feed_all(data: bytes, cuts: list[int]) -> tuple[Tail, list[object]]:
    tail, items = Tail("x.k3rec"), []
    prev = 0
    for c in sorted(set(cuts)) + [len(data)]:
        items += tail.feed(data[prev:c])
        prev = c
    return tail, items


texts = st.lists(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40), min_size=1, max_size=25
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=texts, cuts=st.lists(st.integers(0, 10_000), max_size=30))
def test_tail_sees_every_event_once_whatever_the_chunks(texts, cuts):
    d = Path(tempfile.mkdtemp())
    path = d / "s.k3rec"
    _record(path, texts)
    data = path.read_bytes()
    tail, items = _feed_all(data, [c % (len(data) + 1) for c in cuts])
    got = [i.event for i in items if isinstance(i, Arrived)]
    assert got == read_all(path)[1]
    assert tail.sealed and tail.broken is None and tail.pending == 0 and tail.offset == len(data)
    assert tail.end(None) is not None and tail.end(None).sealed


@settings(max_examples=60, deadline=None)
@given(texts=texts, pick=st.integers(0, 10**6), col=st.integers(0, 10**6), byte=st.sampled_from(b"aZ09{}:,"))
def test_tail_names_the_altered_line(texts, pick, col, byte):
    d = Path(tempfile.mkdtemp())
    path = d / "s.k3rec"
    _record(path, texts)
    lines = path.read_bytes().split(b"\n")[:-1]
    n = 1 + pick % (len(lines) - 1)  # 0-based index of an event (or the seal) line
    line = bytearray(lines[n])
    c = col % len(line)
    if line[c] == byte:
        byte = ord("q") if byte != ord("q") else ord("r")
    line[c] = byte
    lines[n] = bytes(line)
    tail, items = _feed_all(b"\n".join(lines) + b"\n", [len(lines[0]) + 7])
    broken = [i for i in items if isinstance(i, Broken)]
    assert len(broken) == 1 and broken[0].line == n + 1, broken
    assert "TAMPERED" in broken[0].message


def test_split_remote_forms(tmp_path):
    assert split_remote("k3test@127.0.0.1:2222:/tmp/a.k3rec") == ("k3test@127.0.0.1:2222", "/tmp/a.k3rec")
    assert split_remote("gb300-01:runs/a.k3rec") == ("gb300-01", "runs/a.k3rec")
    assert split_remote("a.k3rec") is None
    local = tmp_path / "x:y.k3rec"
    local.write_text("")
    assert split_remote(str(local)) is None  # an existing local file always wins


# --- local, real processes --------------------------------------------------------------------

_WRITER = """
import sys, time
from k3tui.events import Header, Output
from k3tui.recording import Recorder
rec = Recorder(sys.argv[1], Header(host="h", title="killed"))
for i in range(int(sys.argv[2])):
    rec.emit(Output(id="c", text=f"line {i}"))
    time.sleep(0.01)
print("written", flush=True)
time.sleep(600)
"""


async def _collect(items) -> list[object]:
    return [i async for i in items]


async def _killed(path: Path, source_of) -> list[object]:  # noqa: ANN001
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path), "40"], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"written\n"
        source = await source_of()
        task = asyncio.ensure_future(_collect(follow(source)))
        await asyncio.sleep(2.5)
        assert not task.done(), "the follow ended while the recorder was alive"
        os.kill(proc.pid, signal.SIGKILL)
        items = await asyncio.wait_for(task, 10)
        await source.close()
    finally:
        proc.kill()
        proc.wait()
    end = items[-1]
    assert isinstance(end, Ended) and not end.sealed and "killed" in end.message
    assert [i.event.text for i in items if isinstance(i, Arrived)] == [f"line {i}" for i in range(40)]
    return items


async def test_a_killed_recorder_over_ssh_ends_the_follow_as_killed(sshd):
    path = _shared_dir() / "k.k3rec"
    hosts = []

    async def source_of():  # noqa: ANN202
        hosts.append(await connect(sshd.target, **sshd.connect_kwargs()))
        return SshSource(hosts[0], str(path))

    try:
        await _killed(path, source_of)
    finally:
        for h in hosts:
            await h.close()


async def test_a_killed_recorder_ends_the_follow_as_killed(tmp_path):
    path = tmp_path / "k.k3rec"

    async def source_of():  # noqa: ANN202
        return LocalSource(path)

    await _killed(path, source_of)


# --- over a real sshd -------------------------------------------------------------------------


def _follower(sshd, path: Path) -> subprocess.Popen[bytes]:
    spec = f"{sshd.target}:{path}"
    argv = [*K3TUI, "replay", "--follow", spec, "--headless", "-i", str(sshd.key_path), "--known-hosts"]
    return subprocess.Popen([*argv, str(sshd.known_hosts)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not (path.exists() and path.stat().st_size > 0):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


# A follower process: the CLI's own parser, source and printer (``k3tui replay --follow … --headless``
# prints exactly this), with every event it was given also written, msgspec-encoded, to argv[1],
# so the test can fold what this follower saw.
_TEE_FOLLOWER = """
import asyncio, sys
import msgspec
from k3tui.cli import build_parser
from k3tui.commands.replay_follow import _print, open_source
from k3tui.follow import Arrived, follow

args = build_parser().parse_args(sys.argv[2:])

async def main():
    source, host = await open_source(args)
    async def tee():
        with open(sys.argv[1], "wb") as seen:
            async for item in follow(source):
                if isinstance(item, Arrived):
                    seen.write(msgspec.json.encode(item.event) + b"\\n")
                yield item
    try:
        return await _print(tee(), source.where, sys.stdout)
    finally:
        await source.close()
        await host.close()

sys.exit(asyncio.run(main()))
"""


def _state_bytes(state: SessionState) -> bytes:
    return msgspec.msgpack.encode(state, enc_hook=lambda o: list(o) if isinstance(o, deque) else repr(o))


def test_a_demo_followed_over_ssh_by_two_followers(sshd):
    d = _shared_dir()
    path = d / "demo.k3rec"
    demo = subprocess.Popen(
        [*K3TUI, "demo", "--headless", "--rung", "baseline", "--speed", "20", "--record", str(path)],
        stdout=subprocess.PIPE,
    )
    _wait_for(path)
    argv = ["replay", "--follow", f"{sshd.target}:{path}", "--headless", "-i", str(sshd.key_path)]
    argv += ["--known-hosts", str(sshd.known_hosts)]
    seen_files = [d / f"seen{i}.jsonl" for i in range(2)]
    followers = [
        subprocess.Popen(
            [sys.executable, "-c", _TEE_FOLLOWER, str(s), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for s in seen_files
    ]
    assert demo.wait(120) == 0
    outs = [f.communicate(timeout=60) for f in followers]
    finished = subprocess.run([*K3TUI, "replay", str(path), "--headless"], capture_output=True, text=True)
    events = read_all(path)[1]
    assert len(events) > 50
    expected = [_event_line(e) for e in events]
    replayed = Replay(path)  # the finished file, as `replay` reads it
    replayed.seek(replayed.count)
    assert replayed.count == len(events)
    for f, (out, err), seen_file in zip(followers, outs, seen_files, strict=True):
        assert f.returncode == 0, err.decode()
        lines = out.decode().splitlines()
        assert lines[0].startswith("following ") and "sends nothing to any host" in lines[0]
        shown = [ln for ln in lines[1:] if not ln.startswith(("caught up:", "end:", "result:"))]
        assert shown == expected  # every event, once, in order
        assert f"end: session closed: sealed after {len(events)} events, chain verified" in lines
        assert lines[-1] == finished.stdout.splitlines()[-1]  # the same result: line as replay
        seen = [decode_event(ln) for ln in seen_file.read_bytes().splitlines()]
        state = fold(seen)  # the state this follower ends in …
        assert state == replayed.state  # … is the finished file's, as `replay` folds it
        assert _state_bytes(state) == _state_bytes(replayed.state) == _state_bytes(fold(events))
        assert state.runs and state.output_lines and state.events == len(events)  # a real session's state


def _follow_with(sshd, path: Path, known_hosts: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    spec = f"{sshd.target}:{path}"
    argv = [
        *K3TUI,
        "replay",
        "--follow",
        spec,
        "--headless",
        "-i",
        str(sshd.key_path),
        "--known-hosts",
        str(known_hosts),
    ]
    return subprocess.run([*argv, *extra], capture_output=True, text=True, timeout=60)


def _server_fingerprint(sshd) -> str:  # noqa: ANN001
    return fingerprint(asyncssh.import_public_key(sshd.host_key_pub))


def test_follow_over_ssh_stops_at_an_unknown_host_key_showing_its_fingerprint(sshd):
    d = _shared_dir()
    path = d / "s.k3rec"
    _record(path, ["one", "two"])
    kh = d / "known_hosts"  # no key on record for the server
    res = _follow_with(sshd, path, kh)
    assert res.returncode != 0 and res.stdout == ""  # nothing followed, not even the banner
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert "is not known" in err and _server_fingerprint(sshd) in err and "--accept-new-host-key" in err
    assert not kh.exists()  # never a silent accept
    # the operator checked the fingerprint and says so: the key is recorded, the follow runs
    ok = _follow_with(sshd, path, kh, "--accept-new-host-key")
    assert ok.returncode == 0, ok.stderr
    assert "end: session closed: sealed after 2 events, chain verified" in ok.stdout
    assert f"[127.0.0.1]:{sshd.port} ssh-ed25519 " in kh.read_text()


def test_follow_over_ssh_stops_at_a_changed_host_key_even_when_told_to_accept_new_ones(sshd):
    d = _shared_dir()
    path = d / "s.k3rec"
    _record(path, ["one"])
    other = asyncssh.generate_private_key("ssh-ed25519")
    kh = d / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{sshd.port} {other.export_public_key('openssh').decode()}")
    before = kh.read_text()
    for extra in ((), ("--accept-new-host-key",)):
        res = _follow_with(sshd, path, kh, *extra)
        assert res.returncode != 0 and res.stdout == "", extra
        err = res.stderr.strip()
        assert len(err.splitlines()) == 1, err
        assert "CHANGED" in err and f"expected {fingerprint(other)}, got {_server_fingerprint(sshd)}" in err
    assert kh.read_text() == before  # nothing appended or replaced


def test_a_follower_resumes_after_its_ssh_connection_is_killed(sshd):
    d = _shared_dir()
    path = d / "slow.k3rec"
    rec = Recorder(path, Header(host="h", title="slow"))
    seen: list[Arrived] = []
    half = threading.Event()

    def write() -> None:
        for i in range(120):
            if i == 60:
                assert half.wait(30)
            rec.emit(Output(id="c", text=f"line {i}" + "x" * (i * 37 % 500)))
            time.sleep(0.01)
        rec.close()

    async def main() -> tuple[list[object], int]:
        host = await connect(sshd.target, **sshd.connect_kwargs())
        src = SshSource(host, str(path))
        items = []
        try:
            async for item in follow(src):
                items.append(item)
                if isinstance(item, Arrived):
                    seen.append(item)
                    if len(seen) == 40:
                        assert sshd.kill_sessions(), "no sshd session to kill"
                        half.set()
        finally:
            await src.close()
            await host.close()
        return items, src.resumes

    writer = threading.Thread(target=write)
    writer.start()
    try:
        items, resumes = asyncio.run(main())
    finally:
        half.set()
        writer.join(60)
    assert resumes >= 1
    assert [a.event for a in seen] == read_all(path)[1]  # nothing lost, nothing twice
    assert isinstance(items[-1], Ended) and items[-1].sealed


_BURST_WRITER = """
import sys
from k3tui.events import Header, Output
from k3tui.recording import Recorder
rec = Recorder(sys.argv[1], Header(host="h", title="burst"))
rec.emit(Output(id="c", text="event 0"))
print("started", flush=True)
sys.stdin.readline()
for i in range(1, int(sys.argv[2])):
    rec.emit(Output(id="c", text=f"event {i} " + "y" * (i * 53 % int(sys.argv[3]))))
rec.close()
print("done", flush=True)
"""


@pytest.mark.parametrize(
    ("via", "read", "n", "width"),
    [("local", None, 3000, 1500), ("local", 61, 600, 300), ("ssh", None, 3000, 1500), ("ssh", 61, 300, 300)],
    ids=["local", "local-61-byte-reads", "ssh", "ssh-61-byte-reads"],
)
def test_a_follower_that_falls_behind_sees_every_event_once_in_order(request, monkeypatch, via, read, n, width):
    """The writer records a burst (megabytes over SSH: more than a channel's window) while the follower
    is stalled after its first event; it then reads on, slowly, and must see each event exactly once."""
    if read is not None:
        monkeypatch.setattr(follow_mod, "READ", read)  # tiny reads: lines cut everywhere
    sshd = request.getfixturevalue("sshd") if via == "ssh" else None
    path = _shared_dir() / "burst.k3rec"
    writer = subprocess.Popen(
        [sys.executable, "-c", _BURST_WRITER, str(path), str(n), str(width)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert writer.stdin is not None and writer.stdout is not None

    async def main() -> tuple[list[object], int]:
        host = await connect(sshd.target, **sshd.connect_kwargs()) if sshd is not None else None
        src = SshSource(host, str(path)) if host is not None else LocalSource(path)
        items: list[object] = []
        behind = 0
        try:
            async for item in follow(src):
                items.append(item)
                arrived = [i for i in items if isinstance(i, Arrived)]
                if len(arrived) == 1 and isinstance(item, Arrived):
                    writer.stdin.write(b"go\n")  # the burst starts while this follower is stalled …
                    writer.stdin.flush()
                    assert await asyncio.to_thread(writer.stdout.readline) == b"done\n"
                    behind = path.stat().st_size - item.end  # … and is all on disk before it reads on
                elif isinstance(item, Arrived) and len(arrived) % 50 == 0:
                    await asyncio.sleep(0.01)  # a slow reader all along
        finally:
            await src.close()
            if host is not None:
                await host.close()
        return items, behind

    try:
        assert writer.stdout.readline() == b"started\n"
        items, behind = asyncio.run(main())
    finally:
        writer.kill()
        writer.wait()
    events = read_all(path)[1]
    assert len(events) == n and behind > path.stat().st_size * 0.9  # it was really behind
    arrived = [i for i in items if isinstance(i, Arrived)]
    assert [a.event for a in arrived] == events  # every event, once, in order
    assert [a.line for a in arrived] == list(range(2, n + 2))
    assert isinstance(items[-1], Ended) and items[-1].sealed and items[-1].events == n


def test_a_tamper_mid_stream_is_reported_at_once_over_ssh(sshd):
    d = _shared_dir()
    good = d / "good.k3rec"
    _record(good, [f"output {i}" for i in range(60)])
    lines = good.read_bytes().split(b"\n")
    lines[20] = lines[20].replace(b"output 19", b"output 91")
    data = b"\n".join(lines)
    cut = len(b"\n".join(lines[:30])) + 1  # the first 30 lines (the altered one among them) first
    live = d / "live.k3rec"
    reported = threading.Event()

    def write() -> None:  # a recorder's file: locked while written, then the rest once reported
        with open(live, "wb", buffering=0) as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            fh.write(data[:cut])
            reported.wait(30)
            fh.write(data[cut:])

    async def main() -> list[object]:
        host = await connect(sshd.target, **sshd.connect_kwargs())
        src = SshSource(host, str(live))
        items = []
        try:
            async for item in follow(src):
                items.append(item)
                if isinstance(item, Broken):
                    assert live.stat().st_size == cut  # reported before the rest was written
                    reported.set()
        finally:
            await src.close()
            await host.close()
        return items

    writer = threading.Thread(target=write)
    live.touch()
    live.chmod(0o644)
    writer.start()
    try:
        items = asyncio.run(main())
    finally:
        reported.set()
        writer.join(30)
    broken = [i for i in items if isinstance(i, Broken)]
    assert len(broken) == 1 and broken[0].line == 21 and "TAMPERED at line 21" in broken[0].message
    assert isinstance(items[-1], Ended)


def test_follow_cli_refuses_a_missing_file_in_one_line(tmp_path):
    res = subprocess.run(
        [*K3TUI, "replay", "--follow", str(tmp_path / "none.k3rec"), "--headless"], capture_output=True, text=True
    )
    assert res.returncode != 0
    assert "no such file" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_from_end_shows_only_what_is_written_after_it_started(tmp_path):
    path = tmp_path / "e.k3rec"
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER_TWO, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"first\n"
        f = subprocess.Popen(
            [*K3TUI, "replay", "--follow", str(path), "--from", "END", "--headless"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert f.stdout is not None
        lines = [f.stdout.readline().decode() for _ in range(2)]
        assert lines[1].startswith("caught up: 30 events")
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        proc.stdin.close()
        out, err = f.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    shown = [ln for ln in out.decode().splitlines() if "output:" in ln]
    assert [ln.rsplit(": ", 1)[1] for ln in shown] == [f"after {i}" for i in range(10)], err
    assert "end: session closed: sealed after 40 events, chain verified" in out.decode()
    assert f.returncode == 0


_WRITER_TWO = """
import sys
from k3tui.events import Header, Output
from k3tui.recording import Recorder
rec = Recorder(sys.argv[1], Header(host="h", title="two"))
for i in range(30):
    rec.emit(Output(id="c", text=f"before {i}"))
import time; time.sleep(0.5)
print("first", flush=True)
sys.stdin.readline()
for i in range(10):
    rec.emit(Output(id="c", text=f"after {i}"))
rec.close()
"""


def test_follow_cli_reports_a_tamper_loudly_and_exits_1(tmp_path):
    path = tmp_path / "t.k3rec"
    _record(path, [f"output {i}" for i in range(30)])
    data = path.read_bytes().replace(b"output 12", b"output 21", 1)
    path.write_bytes(data)
    res = subprocess.run([*K3TUI, "replay", "--follow", str(path), "--headless"], capture_output=True, text=True)
    assert res.returncode == 1
    assert "WARNING:" in res.stderr and "TAMPERED at line 14" in res.stderr
    assert "chain broke at line 14" in res.stdout and res.stdout.splitlines()[-1].startswith("result: ")

"""SshHost against a REAL OpenSSH sshd on loopback: run, stream, exit codes, stderr, events."""

from __future__ import annotations

import pytest

from k3tui.events import CommandExited, CommandSent, HostConnected, Output
from k3tui.remote.ssh import connect


async def test_run_stdout_stderr_status(sshd):
    events = []
    async with connect(sshd.target, emit=events.append, **sshd.connect_kwargs()) as host:
        res = await host.run("echo hello; echo oops >&2; exit 3", purpose="probe")
    assert res.stdout == "hello\n"
    assert res.stderr == "oops\n"
    assert res.status == 3 and not res.ok and not res.timed_out and res.error == ""
    kinds = [type(e) for e in events]
    assert kinds[0] is HostConnected
    connected = events[0]
    assert connected.user == sshd.user and connected.address == f"127.0.0.1:{sshd.port}"
    assert connected.fingerprint.startswith("SHA256:")
    assert connected.clock_skew is not None and abs(connected.clock_skew) < 1.0
    sent = [e for e in events if isinstance(e, CommandSent)]
    assert sent[-1].command.startswith("echo hello") and sent[-1].purpose == "probe"
    outs = {(e.stream, e.text) for e in events if isinstance(e, Output) and e.id == sent[-1].id}
    assert outs == {("stdout", "hello\n"), ("stderr", "oops\n")}
    exited = [e for e in events if isinstance(e, CommandExited) and e.id == sent[-1].id]
    assert exited[0].status == 3
    assert all(e.host == f"127.0.0.1:{sshd.port}" for e in events)


async def test_run_timeout_does_not_raise(sshd):
    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        res = await host.run("echo start; sleep 5", timeout=0.5)
        assert res.timed_out and res.status is None and "timed out" in res.error
        assert res.stdout == "start\n"
        again = await host.run("echo still usable")
        assert again.ok and again.stdout == "still usable\n"


async def test_many_concurrent_channels_one_connection(sshd):
    import asyncio

    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        results = await asyncio.gather(*(host.run(f"echo {i}; sleep 0.1") for i in range(25)))
        assert [r.stdout for r in results] == [f"{i}\n" for i in range(25)]
        assert len(sshd.session_pids()) == 1


@pytest.mark.parametrize("lines", [1, 10_000])
async def test_stream_whole_lines(sshd, lines):
    events = []
    async with connect(sshd.target, emit=events.append, **sshd.connect_kwargs()) as host:
        got = []
        async for batch in host.stream(f"seq 1 {lines}"):
            got.extend(batch)
    assert got == [str(i) for i in range(1, lines + 1)]
    outs = [e.text for e in events if isinstance(e, Output)]
    assert all(t.endswith("\n") for t in outs)
    assert "".join(outs) == "".join(f"{i}\n" for i in range(1, lines + 1))


async def test_binary_and_partial_last_line(sshd):
    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        res = await host.run("printf 'a\\xc3\\xa9b\\nno newline'")
    assert res.stdout == "aéb\nno newline"

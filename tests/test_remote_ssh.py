"""SshHost against a REAL OpenSSH sshd on loopback: run, stream, exit codes, stderr, events."""

from __future__ import annotations

import asyncio

import pytest

from k3tui.events import CommandExited, CommandSent, HostConnected, HostDisconnected, Output
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
    """More commands at once than sshd's MaxSessions: all run, on one connection, none is lost."""
    events = []
    async with connect(sshd.target, emit=events.append, **sshd.connect_kwargs()) as host:
        for _round in range(3):
            results = await asyncio.gather(*(host.run(f"echo {i} $SSH_CONNECTION; sleep 0.1") for i in range(25)))
            assert [r for r in results if not r.ok] == []
            assert [r.stdout.split()[0] for r in results] == [str(i) for i in range(25)]
            # Every command came over the same TCP connection (same client port).
            assert len({r.stdout.split()[2] for r in results}) == 1
    assert not [e for e in events if isinstance(e, HostDisconnected)][:-1]  # only the final close


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


async def test_stream_dropped_mid_way_raises_connection_lost(sshd):
    from k3tui.errors import ConnectionLost

    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        batches = 0
        with pytest.raises(ConnectionLost, match="connection lost while running"):
            async with asyncio.timeout(20):
                async for _batch in host.stream("while true; do echo tick; sleep 0.01; done"):
                    batches += 1
                    if batches == 1:
                        assert sshd.kill_sessions()
        # The host itself recovers on the next command.
        assert (await host.run("echo back")).stdout == "back\n"

"""Every way connecting can fail gives one clear line — against a REAL sshd on loopback."""

from __future__ import annotations

import shutil
import subprocess
import sys

import asyncssh
import pytest

from k3tui.errors import AuthFailed, HostKeyChanged, HostKeyUnknown, HostUnreachable
from k3tui.events import Decision, HostConnected
from k3tui.remote.ssh import connect, fingerprint
from tests.support.sshd import free_port


def _server_fp(sshd) -> str:
    return fingerprint(asyncssh.import_public_key(sshd.host_key_pub))


async def test_unknown_host_key_stops_with_fingerprint(sshd, tmp_path):
    kh = tmp_path / "known_hosts"  # does not exist yet
    with pytest.raises(HostKeyUnknown) as err:
        await connect(sshd.target, identity=[str(sshd.key_path)], known_hosts=str(kh))
    msg = str(err.value)
    assert _server_fp(sshd) in msg and "--accept-new-host-key" in msg and "\n" not in msg
    assert not kh.exists()


async def test_accept_new_host_key_appends_and_records_decision(sshd, tmp_path):
    kh = tmp_path / "known_hosts"
    kh.write_text("# empty\n")
    events = []
    host = await connect(
        sshd.target, identity=[str(sshd.key_path)], known_hosts=str(kh), accept_new_host_key=True, emit=events.append
    )
    await host.close()
    assert f"[127.0.0.1]:{sshd.port} ssh-ed25519 " in kh.read_text()
    decision = next(e for e in events if isinstance(e, Decision))
    assert decision.action == "accept-new-host-key" and _server_fp(sshd) in decision.reason
    assert next(e for e in events if isinstance(e, HostConnected)).fingerprint == _server_fp(sshd)
    # From now on the key is known: a plain strict connect works.
    host = await connect(sshd.target, identity=[str(sshd.key_path)], known_hosts=str(kh))
    await host.close()


async def test_accepting_one_fingerprint_refuses_any_other_key_before_writing(sshd, tmp_path):
    """The operator was shown fingerprint X and said yes: a host offering another key is refused, and
    known_hosts stays untouched (a key swapped between the prompt and the connect is never trusted)."""
    kh = tmp_path / "known_hosts"
    seen_by_operator = fingerprint(asyncssh.generate_private_key("ssh-ed25519"))
    with pytest.raises(HostKeyChanged) as err:
        await connect(
            sshd.target, identity=[str(sshd.key_path)], known_hosts=str(kh), accept_fingerprint=seen_by_operator
        )
    assert f"expected {seen_by_operator}, got {_server_fp(sshd)}" in str(err.value)
    assert not kh.exists()
    host = await connect(
        sshd.target, identity=[str(sshd.key_path)], known_hosts=str(kh), accept_fingerprint=_server_fp(sshd)
    )
    await host.close()
    assert f"[127.0.0.1]:{sshd.port} ssh-ed25519 " in kh.read_text()


async def test_changed_host_key_always_stops(sshd, tmp_path):
    other = asyncssh.generate_private_key("ssh-ed25519")
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{sshd.port} {other.export_public_key('openssh').decode()}")
    for accept in (False, True):
        with pytest.raises(HostKeyChanged) as err:
            await connect(sshd.target, identity=[str(sshd.key_path)], known_hosts=str(kh), accept_new_host_key=accept)
        msg = str(err.value)
        assert f"expected {fingerprint(other)}, got {_server_fp(sshd)}" in msg and "CHANGED" in msg
    assert kh.read_text().count("\n") == 1  # nothing appended


async def test_auth_failure(sshd, tmp_path):
    wrong = tmp_path / "wrong_key"
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(wrong))
    with pytest.raises(AuthFailed) as err:
        await connect(sshd.target, identity=[str(wrong)], known_hosts=str(sshd.known_hosts))
    assert f"{sshd.user}@" in str(err.value) and "-i KEY" in str(err.value)


async def test_refused_port(tmp_path):
    port = free_port()
    with pytest.raises(HostUnreachable) as err:
        await connect(f"nobody@127.0.0.1:{port}", known_hosts=str(tmp_path / "kh"), connect_timeout=3)
    assert "connection refused" in str(err.value) and str(port) in str(err.value)


async def test_timeout_is_one_line(tmp_path):
    import socket

    # A listener that never answers the SSH banner: the connect times out.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        with pytest.raises(HostUnreachable) as err:
            await connect(f"nobody@127.0.0.1:{port}", known_hosts=str(tmp_path / "kh"), connect_timeout=0.5)
    assert "no answer within 0.5s" in str(err.value)


@pytest.mark.skipif(not shutil.which("unshare"), reason="unshare (util-linux) missing")
def test_dns_failure_cli_one_line(tmp_path):
    """Name resolution fails for real, inside an empty network namespace (no query leaves the machine)."""
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot create a network namespace here: {probe.stderr.decode().strip()}")
    out = subprocess.run(
        [
            "unshare",
            "-n",
            sys.executable,
            "-m",
            "k3tui.cli",
            "connect",
            "no-such-host.invalid",
            "--known-hosts",
            str(tmp_path / "kh"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot resolve host name 'no-such-host.invalid'" in lines[0], out.stderr


async def test_missing_identity_file_is_a_usage_error(sshd, tmp_path):
    from k3tui.errors import UsageError

    with pytest.raises(UsageError, match="identity file not found"):
        await connect(sshd.target, identity=[str(tmp_path / "nope")], known_hosts=str(sshd.known_hosts))


async def test_reconnect_keeps_checking_the_host_key(sshd, tmp_path):
    """After a drop, the new connection is verified again: a key that changed meanwhile stops it."""
    from k3tui.events import HostDisconnected

    kh = tmp_path / "kh"
    kh.write_text(sshd.known_hosts.read_text())
    events = []
    async with connect(sshd.target, identity=[str(sshd.key_path)], known_hosts=str(kh), emit=events.append) as host:
        other = asyncssh.generate_private_key("ssh-ed25519")
        kh.write_text(f"[127.0.0.1]:{sshd.port} {other.export_public_key('openssh').decode()}")
        sshd.kill_sessions()
        res = await host.run("echo should-not-run")
        assert res.status is None and "CHANGED" in res.error
    assert any(isinstance(e, HostDisconnected) for e in events)


async def test_host_that_stays_down_gives_up_with_one_line(sshd_factory):
    from k3tui.events import HostDisconnected

    server = sshd_factory("goes-away")
    events = []
    host = await connect(server.target, reconnect_for=1.0, emit=events.append, **server.connect_kwargs())
    try:
        server.stop()
        res = await host.run("echo hi", timeout=20)
        assert res.status is None and "not back after 1s" in res.error and "\n" not in res.error
        assert any(isinstance(e, HostDisconnected) for e in events)
    finally:
        await host.close()
        server.start()  # leave it as the factory expects


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
        b"220 mail.example.com ESMTP ready\r\n",
        b"\x15\x03\x01\x00\x02\x02\x32",  # a TLS alert
        b"+OK POP3 ready\r\n",
    ],
)
async def test_a_peer_that_is_not_ssh_is_named_at_once(tmp_path, answer):
    """Issue 16: a web server on the SSH port read as "no answer" after the whole timeout."""
    import asyncio
    import time

    async def serve(reader, writer):  # a real TCP server: answers whatever it is sent, keeps the connection
        try:
            await reader.read(100)
            writer.write(answer)
            await writer.drain()
            await asyncio.sleep(30)
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    t0 = time.monotonic()
    try:
        with pytest.raises(HostUnreachable) as err:
            await connect(f"nobody@127.0.0.1:{port}", known_hosts=str(tmp_path / "kh"), connect_timeout=20)
    finally:
        server.close()
    assert "not an SSH server (got " in str(err.value) and time.monotonic() - t0 < 5, str(err.value)
    assert answer[:4].decode("ascii", "replace").strip()[:3] in str(err.value) or answer[0] < 32


async def test_an_ssh_server_with_text_before_its_version_is_not_refused():
    """RFC 4253 lets a server print lines before ``SSH-``: the probe reads on to the version."""
    import asyncio

    from k3tui.remote.ssh import not_ssh

    async def serve(reader, writer):
        writer.write(b"Welcome to gb300-01\r\nAuthorised use only\r\nSSH-2.0-OpenSSH_9.6\r\n")
        await writer.drain()
        await asyncio.sleep(5)
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        assert await not_ssh("127.0.0.1", server.sockets[0].getsockname()[1], 3) is None
    finally:
        server.close()

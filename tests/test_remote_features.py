"""SFTP, TCP and unix-socket forwarding, ssh config aliases, ProxyJump, groups, the CLI — real sshd."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import uuid

from k3tui.remote.ssh import connect, connect_group
from k3tui.remote.target import parse_group, parse_target, resolve


async def test_sftp_put_and_get(sshd, tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(200_000))
    remote = f"/tmp/k3tui-sftp-{uuid.uuid4().hex}"
    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        await host.put(src, remote)
        res = await host.run(f"wc -c < {remote}")
        assert res.stdout.strip() == "200000"
        await host.get(remote, tmp_path / "back.bin")
        await host.run(f"rm -f {remote}")
    assert (tmp_path / "back.bin").read_bytes() == src.read_bytes()


async def _echo_server(sock_path: str | None = None):
    async def handle(reader, writer):
        data = await reader.read(100)
        writer.write(b"echo:" + data)
        await writer.drain()
        writer.close()

    if sock_path:
        return await asyncio.start_unix_server(handle, sock_path)
    return await asyncio.start_server(handle, "127.0.0.1", 0)


async def _ask(reader_writer, payload: bytes) -> bytes:
    reader, writer = reader_writer
    writer.write(payload)
    await writer.drain()
    data = await reader.read(100)
    writer.close()
    return data


async def test_forward_tcp_port(sshd):
    server = await _echo_server()
    port = server.sockets[0].getsockname()[1]
    async with server, connect(sshd.target, **sshd.connect_kwargs()) as host:
        local = await host.forward_port(port)
        assert local != port
        assert await _ask(await asyncio.open_connection("127.0.0.1", local), b"hi") == b"echo:hi"


async def test_forward_unix_socket(sshd):
    d = tempfile.mkdtemp(prefix="k3sock-")
    os.chmod(d, 0o755)
    path = os.path.join(d, "app.sock")
    server = await _echo_server(path)
    os.chmod(path, 0o666)  # the sshd user must be able to connect
    try:
        async with server, connect(sshd.target, **sshd.connect_kwargs()) as host:
            local = await host.forward_unix(path)
            assert local != path and os.path.exists(local)
            assert await _ask(await asyncio.open_unix_connection(local), b"x") == b"echo:x"
        assert not os.path.exists(local)
    finally:
        os.unlink(path)
        os.rmdir(d)


def test_parse_targets():
    t = parse_target("bob@gb300-01:2222")
    assert (t.user, t.host, t.port, t.alias) == ("bob", "gb300-01", 2222, "gb300-01:2222")
    assert parse_target("[::1]:22").host == "::1"
    assert [t.alias for t in parse_group("a, b,c:23")] == ["a", "b", "c:23"]
    for bad in ("", "a,,", "a b", "host:999999", "a,a"):
        try:
            parse_group(bad)
        except Exception as exc:  # noqa: BLE001
            assert type(exc).__name__ == "UsageError"
        else:
            raise AssertionError(f"{bad!r} parsed")


def _config(tmp_path, sshd, extra: str = "") -> str:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        f"Host gb300-a\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n  IdentityFile {sshd.key_path}\n"
        f"  UserKnownHostsFile {sshd.known_hosts}\n{extra}"
    )
    return str(cfg)


async def test_ssh_config_alias(sshd, tmp_path):
    cfg = _config(tmp_path, sshd)
    r = resolve(parse_target("gb300-a"), cfg)
    assert (r.hostname, r.port, r.user, r.identity_files) == ("127.0.0.1", sshd.port, sshd.user, (str(sshd.key_path),))
    events = []
    async with connect("gb300-a", ssh_config=cfg, emit=events.append) as host:
        assert host.alias == "gb300-a" and host.address == f"127.0.0.1:{sshd.port}"
        assert (await host.run("whoami")).stdout.strip() == sshd.user
    assert events[0].host == "gb300-a"


async def test_proxy_jump(sshd, tmp_path):
    """Through a jump host (the same sshd, reached as alias 'jump') to the target."""
    extra = (
        f"Host gb300-b\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n  IdentityFile {sshd.key_path}\n"
        f"  ProxyJump jump\n"
        f"Host jump\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n  IdentityFile {sshd.key_path}\n"
        f"  UserKnownHostsFile {sshd.known_hosts}\n"
    )
    cfg = _config(tmp_path, sshd, extra)
    async with connect("gb300-b", ssh_config=cfg, known_hosts=str(sshd.known_hosts)) as host:
        res = await host.run("echo $SSH_CONNECTION")
        client_port = res.stdout.split()[1]
        # The target saw a connection from the jump host's sshd, not from a socket of ours.
        ours = subprocess.run(["ss", "-tnpH"], capture_output=True, text=True).stdout
        mine = [ln for ln in ours.splitlines() if f"pid={os.getpid()}," in ln]
        assert mine and not any(f"127.0.0.1:{client_port} " in ln.split()[2] + " " for ln in mine)
        assert any(f"127.0.0.1:{client_port} " in ln and "sshd" in ln for ln in ours.splitlines())


async def test_group_of_two_servers(sshd, sshd_factory, tmp_path):
    other = sshd_factory("node-b")
    kh = tmp_path / "kh"
    kh.write_text(sshd.known_hosts.read_text() + other.known_hosts.read_text())
    events = []
    hosts = await connect_group(
        f"{sshd.target},{other.target}", identity=[str(sshd.key_path)], known_hosts=str(kh), emit=events.append
    )
    try:
        assert [h.alias for h in hosts] == [f"127.0.0.1:{sshd.port}", f"127.0.0.1:{other.port}"]
        assert hosts[0].fingerprint != hosts[1].fingerprint
        outs = await asyncio.gather(*(h.run("echo $SSH_CONNECTION") for h in hosts))
        assert [o.stdout.split()[-1] for o in outs] == [str(sshd.port), str(other.port)]
    finally:
        await asyncio.gather(*(h.close() for h in hosts))
    assert {e.host for e in events} == {h.alias for h in hosts}


async def test_group_failure_names_the_host(sshd, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    results = await connect_group(f"{sshd.target},127.0.0.1:{dead}", return_exceptions=True, **sshd.connect_kwargs())
    assert results[0].alias == f"127.0.0.1:{sshd.port}"
    assert f"127.0.0.1:{dead}" in str(results[1])
    await results[0].close()


def test_cli_connect_run_and_record(sshd, tmp_path):
    rec = tmp_path / "s.k3rec"
    argv = [
        sys.executable,
        "-m",
        "k3tui.cli",
        "connect",
        sshd.target,
        "-i",
        str(sshd.key_path),
        "--known-hosts",
        str(sshd.known_hosts),
    ]
    out = subprocess.run(
        [*argv, "--run", "echo API_TOKEN=abcdefgh12345; exit 5", "--record", str(rec)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"connected: 127.0.0.1:{sshd.port} 127.0.0.1:{sshd.port} user={sshd.user} key=SHA256:")
    assert "clock-skew=" in lines[0]
    assert lines[-1].startswith(f"exit: 127.0.0.1:{sshd.port} 5 ")
    text = rec.read_text()
    assert "abcdefgh12345" not in text  # redacted at write time
    assert '"kind":"host_connected"' in text and '"kind":"command_exited"' in text
    verify = subprocess.run([sys.executable, "-m", "k3tui.cli", "verify", str(rec)], capture_output=True, text=True)
    assert verify.returncode == 0, verify.stdout + verify.stderr


async def test_forward_comes_back_on_the_same_port_after_a_drop(sshd):
    from k3tui.events import HostReconnected

    server = await _echo_server()
    port = server.sockets[0].getsockname()[1]
    events = []
    async with server, connect(sshd.target, emit=events.append, **sshd.connect_kwargs()) as host:
        local = await host.forward_port(port)
        assert await _ask(await asyncio.open_connection("127.0.0.1", local), b"1") == b"echo:1"
        sshd.kill_sessions()
        # No command runs: the host notices the drop and reconnects by itself.
        for _ in range(100):
            if any(isinstance(e, HostReconnected) for e in events):
                break
            await asyncio.sleep(0.05)
        assert await _ask(await asyncio.open_connection("127.0.0.1", local), b"2") == b"echo:2"

"""A sealed session signed with the operator's SSH key, checked by k3tui and by the real ssh-keygen.

``k3tui sign`` writes ``SESSION.sig`` in OpenSSH's SSHSIG format (namespace ``k3tui-session``)
from a key file or from a real ``ssh-agent``; ``k3tui verify --signer ALLOWED_SIGNERS`` and
``ssh-keygen -Y verify`` both accept it, and both refuse it once any byte of the session
changes — including a chain rewritten from scratch, which the unkeyed chain alone cannot show.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3tui import events as ev
from k3tui.recording import Recorder, seal
from k3tui.redact import Redactor

pytestmark = pytest.mark.skipif(not shutil.which("ssh-keygen"), reason="OpenSSH ssh-keygen not installed")
KEY_TYPES = ["ed25519", "ecdsa", "rsa"]


def _k3(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "k3tui.cli", *argv], capture_output=True, text=True, env=env, timeout=60
    )


def _key(tmp: Path, kind: str) -> tuple[Path, Path]:
    key = tmp / f"id_{kind}"
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "oncall", "-f", str(key)], check=True)
    signers = tmp / f"allowed_{kind}"
    signers.write_text(f"oncall@example.com {key.with_suffix('.pub').read_text().split(' ', 2)[0]} "
                       f"{key.with_suffix('.pub').read_text().split(' ', 2)[1]}\n")  # fmt: skip
    return key, signers


def _session(path: Path) -> Path:
    with Recorder(path, ev.Header(host="gb300-01"), redactor=Redactor()) as rec:
        for i in range(20):
            rec.emit(ev.Output(id="r1", text=f"INFO line {i}\n"))
        rec.emit(ev.ExceptionFound(run="r1", stage="engine", line="RuntimeError: CUDA error"))
    return path


def _ssh_keygen_verify(session: Path, signers: Path, principal: str = "oncall@example.com") -> bool:
    with open(session, "rb") as fh:
        r = subprocess.run(
            ["ssh-keygen", "-Y", "verify", "-f", str(signers), "-I", principal, "-n", "k3tui-session",
             "-s", str(session) + ".sig"],
            stdin=fh, capture_output=True, text=True,
        )  # fmt: skip
    return r.returncode == 0


@pytest.mark.parametrize("kind", KEY_TYPES)
def test_a_key_file_signature_verifies_in_k3tui_and_in_ssh_keygen(tmp_path, kind):
    key, signers = _key(tmp_path, kind)
    s = _session(tmp_path / "s.k3rec")
    r = _k3("sign", str(s), "--key", str(key))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "s.k3rec.sig").read_text().startswith("-----BEGIN SSH SIGNATURE-----")
    assert _ssh_keygen_verify(s, signers)
    v = _k3("verify", str(s), "--signer", str(signers))
    assert v.returncode == 0 and "signature GOOD: signed by oncall@example.com" in v.stdout, v.stdout + v.stderr


def test_an_agent_key_signs_too(tmp_path):
    if not shutil.which("ssh-agent") or not shutil.which("ssh-add"):
        pytest.skip("ssh-agent not installed")
    key, signers = _key(tmp_path, "ed25519")
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if sock.exists():
                break
            import time

            time.sleep(0.05)
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
        subprocess.run(["ssh-add", str(key)], env=env, check=True, capture_output=True)
        s = _session(tmp_path / "a.k3rec")
        r = _k3("sign", str(s), env=env)
        assert r.returncode == 0, r.stderr
        assert _ssh_keygen_verify(s, signers)
        assert _k3("verify", str(s), "--signer", str(signers), "-I", "oncall@example.com").returncode == 0
    finally:
        agent.terminate()
        agent.wait(10)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.integers(0, 10_000), byte=st.integers(0, 255))
def test_any_changed_byte_fails_both_verifiers(tmp_path_factory, where, byte):
    tmp = tmp_path_factory.mktemp("sig")
    key, signers = _key(tmp, "ed25519")
    s = _session(tmp / "s.k3rec")
    assert _k3("sign", str(s), "--key", str(key)).returncode == 0
    data = bytearray(s.read_bytes())
    i = where % len(data)
    if data[i] == byte:
        return
    data[i] = byte
    s.write_bytes(bytes(data))
    assert not _ssh_keygen_verify(s, signers)
    v = _k3("verify", str(s), "--signer", str(signers))
    assert v.returncode != 0 and any(w in v.stdout + v.stderr for w in ("signature BAD", "TAMPERED", "not a k3rec")), v


def test_a_rewritten_chain_passes_the_chain_but_not_the_signature(tmp_path):
    """The chain is unkeyed: an attacker can edit a line and recompute every digest after it."""
    key, signers = _key(tmp_path, "ed25519")
    s = _session(tmp_path / "s.k3rec")
    assert _k3("sign", str(s), "--key", str(key)).returncode == 0
    lines = s.read_bytes().split(b"\n")[:-1]
    prev, out = b"", []
    for line in lines:
        body = line[: line.rindex(b',"h":"')] + b"}"
        body = body.replace(b"CUDA error", b"all fine!!")
        if b'"kind":"seal"' in body:
            body = body[: body.index(b'"last":"') + 8] + prev + body[body.index(b'"last":"') + 8 + 24 :]
        sealed, prev = seal(prev, body)
        out.append(sealed)
    s.write_bytes(b"".join(out))
    v = _k3("verify", str(s), "--signer", str(signers))
    assert "chain verified, sealed" in v.stdout and "signature BAD" in v.stdout and v.returncode == 1, v.stdout
    assert not _ssh_keygen_verify(s, signers)


def test_refusals_are_one_line(tmp_path):
    key, signers = _key(tmp_path, "ed25519")
    s = _session(tmp_path / "s.k3rec")
    open_ = tmp_path / "open.k3rec"
    open_.write_bytes(b"\n".join(s.read_bytes().split(b"\n")[:-2]) + b"\n")  # no seal: the end is unproven
    r = _k3("sign", str(open_), "--key", str(key))
    assert r.returncode != 0 and "not closed" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = _k3("sign", str(s), env={**os.environ, "SSH_AUTH_SOCK": ""})
    assert r.returncode != 0 and "no signing key" in r.stderr
    v = _k3("verify", str(s), "--signer", str(signers))
    assert v.returncode == 1 and "NOT SIGNED" in v.stdout
    other_ns = tmp_path / "s.k3rec.sig"
    subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", "file", str(s)], check=True)
    assert other_ns.exists()
    v = _k3("verify", str(s), "--signer", str(signers))
    assert v.returncode == 1 and "namespace 'file'" in v.stdout

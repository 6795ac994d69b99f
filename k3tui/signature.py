"""Signing a sealed session with the operator's SSH key, in OpenSSH's ``SSHSIG`` format.

Why: the digest chain and the seal show an edit, a cut or an insertion, but anyone can
recompute an unkeyed chain over a rewritten file. A signature by the operator's key cannot
be recomputed: ``FILE.k3rec.sig`` beside the session proves that the holder of that key
signed exactly these bytes, seal included, under the namespace ``k3tui-session``. It is the
format ``ssh-keygen -Y sign`` writes (PROTOCOL.sshsig), so a platform team checks it with
no k3tui at all::

    ssh-keygen -Y verify -f allowed_signers -I oncall@example.com -n k3tui-session \\
        -s session.k3rec.sig < session.k3rec

What it does not prove: that what the host printed was true, or when the session was
signed (a signature has no trusted time).

The key comes from the agent (its first key, or the one matching ``--key FILE.pub``) or a
private key file. The message is hashed here in chunks (SHA-512), so a 1 GB session is never
held in memory; asyncssh builds nothing for us on the agent path, so the blob is built here
for both paths and checked with asyncssh's ``validate_sshsig`` and, in the tests, with the
real ``ssh-keygen``.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
from pathlib import Path
from typing import Any

from .errors import K3Error
from .reader import verify

NAMESPACE = "k3tui-session"
_MAGIC = b"SSHSIG"
_HASH = b"sha512"
_ARMOR = ("-----BEGIN SSH SIGNATURE-----", "-----END SSH SIGNATURE-----")


class SignatureError(K3Error):
    """A session cannot be signed, or its signature does not verify."""


def sig_path(session: str | os.PathLike[str]) -> Path:
    """Where a session's signature lives (``session.k3rec.sig``, as ``ssh-keygen -Y sign`` names it)."""
    return Path(str(session) + ".sig")


def _string(b: bytes) -> bytes:
    return struct.pack(">I", len(b)) + b


def _digest(path: Path) -> bytes:
    h = hashlib.sha512()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.digest()


def signed_data(digest: bytes, namespace: str = NAMESPACE) -> bytes:
    """What the key signs (PROTOCOL.sshsig): the preamble, namespace, reserved, hash name, H(message)."""
    return _MAGIC + _string(namespace.encode()) + _string(b"") + _string(_HASH) + _string(digest)


def armor(public_blob: bytes, signature: bytes, namespace: str = NAMESPACE) -> bytes:
    """The armored SSHSIG file: version 1, public key, namespace, reserved, hash name, signature."""
    blob = (
        _MAGIC
        + struct.pack(">I", 1)
        + _string(public_blob)
        + _string(namespace.encode())
        + _string(b"")
        + _string(_HASH)
        + _string(signature)
    )
    b64 = base64.b64encode(blob).decode()
    body = "\n".join(b64[i : i + 70] for i in range(0, len(b64), 70))
    return f"{_ARMOR[0]}\n{body}\n{_ARMOR[1]}\n".encode()


async def _agent_keys() -> list[Any]:
    import asyncssh

    if not os.environ.get("SSH_AUTH_SOCK"):
        return []
    try:
        async with asyncssh.connect_agent() as agent:
            return list(await agent.get_keys())
    except (OSError, asyncssh.Error):
        return []


async def _sign(key: str | None, data: bytes) -> tuple[bytes, bytes]:
    """(public key blob, signature) from a private key file, or from the agent's first key."""
    import asyncssh

    if key is not None and not key.endswith(".pub"):
        try:
            pair = asyncssh.load_keypairs(key)[0]
        except (OSError, asyncssh.KeyImportError, ValueError) as exc:
            raise SignatureError(
                f"cannot use {key} to sign: {exc} (an encrypted key: load it into ssh-agent)"
            ) from None
        _rsa_sha512(pair)
        return pair.public_data, pair.sign(data)
    pairs = await _agent_keys()
    if key is not None:  # a .pub file: the agent key that matches it
        want = asyncssh.read_public_key(key).public_data
        pairs = [p for p in pairs if p.public_data == want]
    if not pairs:
        raise SignatureError(
            "no signing key: pass --key ~/.ssh/id_ed25519 (a private key file) or load a key into ssh-agent"
        )
    _rsa_sha512(pairs[0])
    return pairs[0].public_data, await pairs[0].sign_async(data)


def _rsa_sha512(pair: Any) -> None:
    if pair.sig_algorithm == b"ssh-rsa":  # SHA-1 signatures are refused by ssh-keygen -Y verify
        pair.set_sig_algorithm(b"rsa-sha2-512")


async def sign_session(session: str | os.PathLike[str], key: str | None = None, *, force: bool = False) -> Path:
    """Sign a sealed session; returns the ``.sig`` path.

    Raises:
        SignatureError: not sealed (its end unproven: nothing to vouch for), tampered, no key,
            or a signature exists already (``force`` replaces it).
    """
    path = Path(session)
    result = verify(path)
    if not result.ok:
        raise SignatureError(f"refusing to sign: {result.message}")
    if not result.sealed:
        raise SignatureError(f"refusing to sign {path}: it is not closed (no seal), so its end cannot be proven")
    out = sig_path(path)
    if out.exists() and not force:
        raise SignatureError(f"{out} already exists: pass --force to replace it")
    public, signature = await _sign(key, signed_data(_digest(path)))
    tmp = out.with_name(f".{out.name}.{os.getpid()}")
    tmp.write_bytes(armor(public, signature))
    os.replace(tmp, out)
    return out


def verify_signature(
    session: str | os.PathLike[str], allowed_signers: str | os.PathLike[str], principal: str | None = None
) -> tuple[bool, str]:
    """Check ``session.sig`` against an OpenSSH allowed-signers file (one principal, or each one it names).

    Returns:
        (ok, message): who signed, or why the signature does not hold.
    """
    import asyncssh

    path, sig = Path(session), sig_path(session)
    if not sig.is_file():
        return False, f"{path}: NOT SIGNED: {sig.name} is missing"
    try:
        signers = Path(allowed_signers).read_text(encoding="utf-8")
        allowed = asyncssh.import_allowed_signers(signers)
        blob = sig.read_bytes()
    except (OSError, UnicodeDecodeError, ValueError, asyncssh.Error) as exc:
        return False, f"{path}: cannot check the signature: {exc}"
    namespace = _namespace(blob)
    if namespace != NAMESPACE:  # a signature of these bytes made for another purpose is not this one
        return False, f"{path}: signature BAD: made for namespace {namespace!r}, not {NAMESPACE!r}"
    names = [principal] if principal else _principals(signers)
    digest = _digest(path)
    for name in names:
        try:
            if asyncssh.validate_sshsig(digest, blob, name, allowed, is_hashed=True):
                return True, f"{path}: signature GOOD: signed by {name} (namespace {NAMESPACE})"
        except (ValueError, asyncssh.Error):
            continue
    return (
        False,
        f"{path}: signature BAD: {sig.name} does not verify for {', '.join(names) or 'any signer'} in {allowed_signers}",
    )


def _namespace(armored: bytes) -> str | None:
    """The namespace an armored SSHSIG was made for (None: not an SSHSIG)."""
    try:
        text = armored.decode("ascii").strip().splitlines()
        if text[0] != _ARMOR[0] or text[-1] != _ARMOR[1]:
            return None
        blob = base64.b64decode("".join(text[1:-1]), validate=True)
        if blob[:6] != _MAGIC:
            return None
        pos = 10
        (n,) = struct.unpack(">I", blob[pos : pos + 4])  # the public key
        pos += 4 + n
        (n,) = struct.unpack(">I", blob[pos : pos + 4])
        return blob[pos + 4 : pos + 4 + n].decode()
    except (UnicodeDecodeError, IndexError, ValueError, struct.error):
        return None


def _principals(signers: str) -> list[str]:
    """The principals an allowed-signers file names (wildcards cannot be tried, so they are skipped)."""
    out: list[str] = []
    for line in signers.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out += [p for p in line.split()[0].split(",") if not any(c in p for c in "*?!")]
    return list(dict.fromkeys(out))

"""`k3tui verify FILE` — check a session file's digest chain (or a repro package).

Exit 0: intact (a truncated last line from an interrupted recorder is reported but is
not tampering; a session without its closing seal is reported "not closed"). Exit 1:
tampered, naming the first bad line — or, with ``--signer``, a signature that is missing
or does not verify. Exit 2: not readable.
"""

from __future__ import annotations

import argparse
import os
import stat

from ..reader import verify
from ..textsafe import neutralise

HELP = "verify a session file's digest chain (or a package's manifest)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a .k3rec session file or a repro package (.tar.gz)")
    p.add_argument(
        "--signer",
        metavar="ALLOWED_SIGNERS",
        help="also check FILE.sig (k3tui sign) against an OpenSSH allowed-signers file",
    )
    p.add_argument("-I", "--principal", help="the signer expected (default: any principal the file names)")


def run(args: argparse.Namespace) -> int:
    path = args.file
    if _is_package(path):
        from ..package import verify_package

        ok, message = verify_package(path)
        print(neutralise(message))
        return 0 if ok else 1
    result = verify(path)
    print(neutralise(result.message.replace("\n", " ")))
    if not getattr(args, "signer", None):
        return 0 if result.ok else 1
    from ..signature import verify_signature

    signed, message = verify_signature(path, args.signer, args.principal)
    print(neutralise(message.replace("\n", " ")))
    return 0 if result.ok and signed else 1


def _is_package(path: str) -> bool:
    """Whether the file is gzip (a repro package); anything unreadable is left to the reader."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False  # a FIFO would block; directories and devices get the reader's error
        with open(path, "rb") as fh:
            return fh.read(2) == b"\x1f\x8b"
    except (OSError, ValueError):
        return False

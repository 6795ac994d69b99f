"""`k3tui sign SESSION [--key FILE]` — sign a closed session with the operator's SSH key (SSHSIG).

Writes ``SESSION.sig`` in the format ``ssh-keygen -Y sign`` writes (namespace
``k3tui-session``); ``k3tui verify SESSION --signer ALLOWED_SIGNERS`` or ``ssh-keygen -Y
verify`` checks it. Only a sealed session is signed: an unsealed one's end cannot be proven.
The work is in :mod:`k3tui.signature`.
"""

from __future__ import annotations

import argparse

from .. import aio

HELP = "sign a closed session with your SSH key (agent or key file), in OpenSSH's SSHSIG format"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("session", help="a sealed .k3rec session file")
    p.add_argument(
        "-k",
        "--key",
        metavar="FILE",
        help="private key file, or a .pub file naming an agent key (default: the agent's first key)",
    )
    p.add_argument("--force", action="store_true", help="replace an existing signature")


def run(args: argparse.Namespace) -> int:
    from ..signature import sign_session

    out = aio.run(sign_session(args.session, args.key, force=args.force))
    print(f"signed: {out} (check: k3tui verify {args.session} --signer ALLOWED_SIGNERS)")
    return 0

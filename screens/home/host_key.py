"""What connecting from Home shows when a host key is not the one on record.

- **Unknown** (first contact): the fingerprint the host offers, and a question. Only an
  explicit yes trusts it, and then only that fingerprint (the driver refuses another key
  on the reconnect); the connection appends it to known_hosts and records the operator's
  decision in the session.
- **Changed**: never an offer to accept. The error, and the commands that show the key on
  record and the key offered now, so the operator can check with the host's owner.
"""

from __future__ import annotations

from rich.text import Text

from k3tui.errors import HostKeyChanged, HostKeyUnknown
from k3tui.textsafe import neutralise

from ..common.confirm_dialog import ConfirmDialog
from ..common.text_dialog import TextDialog


def unknown_key_dialog(exc: HostKeyUnknown) -> ConfirmDialog:
    """Ask whether to trust the unknown key ``exc`` reports (its SHA256 fingerprint shown)."""
    t = Text()
    t.append(f"{neutralise(exc.host)} offers a host key that is not in known_hosts:\n\n")
    t.append(f"  {neutralise(exc.fingerprint)}\n\n", style="bold cyan")
    t.append("Trust it only if the host's owner confirms this fingerprint ", style="bold")
    t.append("(on the host: ssh-keygen -lf with each /etc/ssh/ssh_host_*_key.pub).\n")
    t.append("Yes adds it to known_hosts and records your decision in the session.", style="bright_black")
    return ConfirmDialog("Unknown host key — trust it?", t, yes="Trust this key", no="Cancel")


def inspect_commands(alias: str) -> list[str]:
    """OpenSSH commands that show the recorded key and the offered key of ``alias`` (``host`` or ``host:port``)."""
    host, port = alias, ""
    if alias.count(":") == 1:  # host:port (an IPv6 address without brackets has more colons)
        host, port = alias.split(":")
    elif alias.startswith("[") and "]:" in alias:
        host, _, port = alias[1:].partition("]:")
    name = f"[{host}]:{port}" if port and port != "22" else host
    scan = f"ssh-keyscan -p {port} {host}" if port else f"ssh-keyscan {host}"
    return [
        f"ssh-keygen -lF '{name}'      # the key on record (add -f FILE for another known_hosts)",
        f"{scan} | ssh-keygen -lf -      # the key the host offers now",
        f"ssh-keygen -R '{name}'      # only after the host's owner confirms the new key",
    ]


def changed_key_dialog(exc: HostKeyChanged) -> TextDialog:
    """The error and how to inspect it; there is deliberately no way to accept from here."""
    t = Text()
    t.append(neutralise(str(exc)) + "\n\n", style="bold red")
    t.append("k3tui will not connect. Inspect both keys:\n\n")
    for cmd in inspect_commands(exc.host):
        t.append(f"  {neutralise(cmd)}\n", style="cyan")
    return TextDialog("Host key CHANGED — not connecting", t)

"""The simulated host's NVLink and NVLink domain: ``nvidia-smi nvlink``, IMEX, the channel devices.

A FAKE on purpose (k3tui demo, tests). A GB300 NVL72 tray (``../shared/recipes/gb300-hosts.md``)
has 18 NVLink 5 links per GPU to the rack's switch trays; its GPUs register in one fabric
cluster and clique, ``nvidia-imex`` runs on every tray with the same nodes file, and the
serving container sees ``/dev/nvidia-caps-imex-channels/channel0``. The formats follow
NVIDIA's documentation (IMEX guide: ``nvidia-imex-ctl -N``) and ``nvidia-smi nvlink -s/-e``
as the driver prints them; the real H200 capture (``tests/data/h200-r580-health-probes``)
prints nothing for NVLink and has no IMEX.

Scenario keys, per host (``[host]`` or a ``[[hosts]]`` entry):

- ``nvlink_links`` (default 18; 0: no NVLink), ``[host.gpu_faults.N]`` ``nvlink_down = [links]``;
- ``nvlink_error_rate = {gpu, link, per_second}``: that link's CRC and replay counters grow
  with time (the "NVLink errors climbing during runtime" scenario);
- ``imex = "active" | "failed" | "absent"`` (default absent), ``imex_address``.

``systemctl`` and ``nvidia-imex-ctl`` are POSIX-sh scripts rendered at build time (no
interpreter start per probe); the NVLink counters are computed by the fake ``nvidia-smi``.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

LINK_SPEED = "53.125 GB/s"
"""Per-link rate NVLink 5 reports (twice the 26.562 GB/s an H100's NVLink 4 link shows)."""


def links(host: dict[str, Any]) -> int:
    return int(host.get("nvlink_links", 18))


def _down(host: dict[str, Any], index: int) -> set[int]:
    return set((host.get("gpu_faults") or {}).get(str(index), {}).get("nvlink_down", []))


def nvlink_status(host: dict[str, Any]) -> str:
    """``nvidia-smi nvlink -s``."""
    out = []
    for g in host["gpus"] if links(host) else []:
        out.append(f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})\n")
        down = _down(host, g["index"])
        out += [f"\t Link {n}: {'<inactive>' if n in down else LINK_SPEED}\n" for n in range(links(host))]
    return "".join(out)


def _errors(host: dict[str, Any], index: int, link: int, now: float) -> tuple[int, int, int]:
    rate = host.get("nvlink_error_rate") or {}
    if rate.get("gpu") != index or rate.get("link") != link:
        return 0, 0, 0
    n = int((now - float(host.get("boot_time", now))) * float(rate.get("per_second", 1)))
    return n // 3, 0, n


def nvlink_errors(host: dict[str, Any], now: float | None = None) -> str:
    """``nvidia-smi nvlink -e``: replay, recovery and CRC errors per link."""
    t = time.time() if now is None else now
    out = []
    for g in host["gpus"] if links(host) else []:
        out.append(f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})\n")
        for n in range(links(host)):
            replay, recovery, crc = _errors(host, g["index"], n, t)
            out.append(f"\t Link {n}: Replay Errors: {replay}\n\t Link {n}: Recovery Errors: {recovery}\n")
            out.append(f"\t Link {n}: CRC Errors: {crc}\n")
    return "".join(out)


def imex_state(host: dict[str, Any]) -> str:
    return str(host.get("imex", "absent"))


def address(host: dict[str, Any]) -> str:
    return str(host.get("imex_address") or f"10.0.0.{11 + int(host.get('node', 0))}")


def imex_table(state: dict[str, Any]) -> tuple[str, int]:
    """``nvidia-imex-ctl -N`` on this host: (output, exit status)."""
    if imex_state(state["host"]) != "active":
        return "Connection to IMEX daemon failed: connect: Connection refused\n", 1
    hosts = state["hosts"]
    ready = [imex_state(h) == "active" for h in hosts]
    stamp = time.strftime("%m/%d/%Y %H:%M:%S.000", time.gmtime())
    rows = "".join(
        f"Node #{i}   - {address(h):<15} - {'READY' if ok else 'UNAVAILABLE':<20} - Version: {h['driver']}\n"
        for i, (h, ok) in enumerate(zip(hosts, ready, strict=True))
    )
    head = "      ".join(str(i) for i in range(len(hosts)))
    grid = "".join(
        f"       {i}        " + "   ".join("C" if ready[i] and ready[j] else "N" for j in range(len(hosts))) + "\n"
        for i in range(len(hosts))
    )
    legend = (
        "Connectivity Table Legend:\n"
        "I - Invalid - Node wasn't reachable, no connection status available\n"
        "N - Never Connected\n"
        "R - Recovering - Connection was lost, but clean up has not yet been triggered.\n"
        "D - Disconnected - Connection was lost, and clean up has been triggreed.\n"
        "A - Authenticating - If GSSAPI enabled, client has initiated mutual authentication.\n"
        "!V! - Version mismatch, communication disabled.\n"
        "!M! - Node map mismatch, communication disabled.\n"
        "C - Connected - Ready for operation\n\n"
    )
    domain = "UP" if all(ready) else "DEGRADED"
    return f"{legend}{stamp}\nNodes:\n{rows}\n Nodes From\\To  {head}\n{grid}Domain State: {domain}\n", 0


def write_host_files(root: Path, fs: Path, state: dict[str, Any], write: Any) -> None:
    """The IMEX files of an NVL72 tray (nodes file, channel device) and the sh tools answering for it."""
    host = state["host"]
    bindir = root / "bin"
    if imex_state(host) != "absent":
        write(fs / "etc" / "nvidia-imex" / "nodes_config.cfg", "".join(address(h) + "\n" for h in state["hosts"]))
        write(fs / "dev" / "nvidia-caps-imex-channels" / "channel0", "")
        text, status = imex_table(state)
        answer = root / "state" / "imex-ctl.txt"
        write(answer, text)
        write(
            bindir / "nvidia-imex-ctl",
            "#!/bin/sh\n# k3tui simulated host: a FAKE nvidia-imex-ctl (IMEX guide format)\n"
            f"cat {shlex.quote(str(answer))}; exit {status}\n",
            0o755,
        )
    units = {"nvidia-imex": imex_state(host)}
    cases = "".join(
        f"  *' {u}') echo LoadState=loaded; echo ActiveState={s};;\n" for u, s in units.items() if s != "absent"
    )
    write(
        bindir / "systemctl",
        "#!/bin/sh\n# k3tui simulated host: a FAKE systemctl (show -p LoadState -p ActiveState UNIT)\n"
        f'case " $*" in\n{cases}  *) echo LoadState=not-found; echo ActiveState=inactive;;\nesac\nexit 0\n',
        0o755,
    )


def write_container_files(fs: Path, ctr: dict[str, Any], host: dict[str, Any], write: Any) -> None:
    """The channel device inside the serving container (unless the scenario says it was not passed in)."""
    if imex_state(host) != "absent" and ctr.get("imex_channel", True):
        write(fs / "dev" / "nvidia-caps-imex-channels" / "channel0", "")

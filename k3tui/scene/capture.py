"""Capture every probe's raw answer from a host, as JSON: test data and simulated-host material.

``python -m k3tui.scene.capture local OUT.json [--container NAME] [--pid PID]`` runs the
exact probe commands of :mod:`k3tui.scene.probes` on this machine and writes
``{probe: {command, stdout, stderr, status, seconds}}``. That file is what the parser and
assembly tests replay (``tests/data/``) and what a simulated host can answer from. Env
outputs are redacted before they are written.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from ..redact import Redactor
from ..remote.base import Host, RunResult
from .freeze import _run_probe
from .probes import command_for, probes_for

_ENV_PROBES = {"host_env", "container_env", "proc_environ"}


async def capture(host: Host, *, container: str | None = None, pid: int | None = None) -> dict[str, dict]:
    """Run every applicable probe once; the raw results by probe name (env probes redacted)."""
    probes = (
        probes_for("host") + (probes_for("container") if container else []) + (probes_for("process") if pid else [])
    )
    red = Redactor.from_environment()
    results = await asyncio.gather(*(_run_probe(host, p, command_for(p, container=container, pid=pid)) for p in probes))
    out = {}
    for p, r in zip(probes, results, strict=True):
        stdout = r.stdout
        if p.name in _ENV_PROBES:
            stdout = "\n".join(red.env_list(stdout.splitlines())) + "\n"
        out[p.name] = {
            "command": r.command,
            "stdout": red.text(stdout),
            "stderr": r.stderr,
            "status": r.status,
            "seconds": round(r.duration, 4),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m k3tui.scene.capture")
    ap.add_argument("target", choices=["local"])
    ap.add_argument("out")
    ap.add_argument("--container")
    ap.add_argument("--pid", type=int)
    a = ap.parse_args(argv)
    from ..remote.local import LocalHost

    async def go() -> dict:
        async with LocalHost() as h:
            return await capture(h, container=a.container, pid=a.pid)

    data = asyncio.run(go())
    with open(a.out, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
    print(f"{len(data)} probes captured into {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())


class CapturedHost:
    """A ``Host`` that answers probe commands from a capture file (nothing runs anywhere).

    Lets a freeze, its assembly and its checks be tested end to end on what a real GPU
    host printed. A command not in the capture fails like a missing tool (status 127).
    """

    simulated = False

    def __init__(self, data: dict[str, dict], alias: str = "captured") -> None:
        self.alias = alias
        self._by_command = {v["command"]: v for v in data.values()}
        self.commands: list[str] = []

    async def run(
        self, command: str, *, timeout: float = 30.0, purpose: str = "", stdin: str | None = None
    ) -> RunResult:
        self.commands.append(command)
        v = self._by_command.get(command)
        if v is None:
            return RunResult(command, stderr="sh: not captured\n", status=127)
        return RunResult(
            command,
            stdout=v["stdout"],
            stderr=v.get("stderr", ""),
            status=v.get("status"),
            duration=v.get("seconds", 0.0),
        )

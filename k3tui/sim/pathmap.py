"""Virtual paths of the simulated host: a command's ``/etc/…``, ``/proc/…`` paths mapped to overlay files.

Its own module because both the host's installer (:mod:`k3tui.sim.rootfs`) and its fake tools
(:mod:`k3tui.sim.tools`) use it, and the installer imports the tools: a shared leaf keeps
the two out of an import circle (tests/test_import_hygiene.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path


class PathMap:
    """Rewrites virtual absolute paths in a command to their overlay files, and back in output."""

    _CANDIDATE = re.compile(r"(?<![\w.~-])(/(?:etc|proc|usr/local/cuda|var/log|run/containerd)/[\w.+-]+(?:/[\w.+-]*)*)")

    def __init__(self, overlays: list[Path]) -> None:
        self.overlays = [str(o) for o in overlays]

    def command(self, cmd: str) -> str:
        def sub(m: re.Match[str]) -> str:
            path = m.group(1)
            parts = path.split("/")
            # try the longest existing prefix (/proc/123/maps -> overlay has proc/123)
            for cut in range(len(parts), 2, -1):
                prefix = "/".join(parts[:cut])
                for o in self.overlays:
                    if os.path.lexists(o + prefix):
                        return o + path
            return path

        return self._CANDIDATE.sub(sub, cmd)

    def output(self, data: bytes) -> bytes:
        for o in self.overlays:
            data = data.replace(o.encode(), b"")
        return data


_STARTTIME = 19
"""Index of the start time (``/proc/PID/stat`` field 22) among the fields after the command's ``)``."""


def _stat(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after the command's closing ``)`` (the state first); None when unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()
    except OSError:
        return None


def started(pid: int) -> int | None:
    """When process ``pid`` started (``/proc/PID/stat`` field 22, clock ticks since boot); None when unknown.

    A pid alone does not name a process: pids are reused (``pid_max`` is 32768 on many hosts, and
    a test run or a demo starts thousands of processes), so a record that outlives its process
    would come back to life in whichever process gets its number next. The pair (pid, start time)
    does not repeat.
    """
    fields = _stat(pid)
    try:
        return int(fields[_STARTTIME]) if fields is not None else None
    except (IndexError, ValueError):
        return None


def alive(pid: int, since: int | None = None) -> bool:
    """Is process ``pid`` there (one owned by another user counts; a zombie, dead but not yet
    reaped by its parent, does not: it holds no port and serves nothing)? With ``since`` (its
    :func:`started` when it was recorded), a process that got the same pid later does not count."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    fields = _stat(pid)
    if fields is None:
        return True
    if fields[:1] == [b"Z"]:
        return False
    return since is None or len(fields) <= _STARTTIME or fields[_STARTTIME] == str(since).encode()


def this_process() -> dict[str, int | None]:
    """What a record written by this process says of it: its pid and start time (see :func:`started`)."""
    pid = os.getpid()
    return {"pid": pid, "since": started(pid)}


def recorded_alive(rec: dict) -> bool:
    """Is the process a record names (``pid``, and ``since`` when the record has it) still that process?"""
    return alive(int(rec["pid"]), rec.get("since"))

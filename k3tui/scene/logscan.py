"""The scene's first exception from the WHOLE server log, read on the host (issue 15).

``freeze`` used to classify the last 5000 lines (``docker logs --tail``) or the last 4 MiB of
a run's log, so a root printed hours before the end was never seen. This module picks the
log file of the thing being frozen — ``--log PATH``, the detached run's ``log``, the
container's json-file (its ``LogPath``, which also holds the output of its earlier runs
when it was restarted) — and hands it to :func:`k3tui.remote.prefilter.find_root`, which
scans it on the host and reads only the windows that matter. The scene records what was
read (``log_scan``: path, format, byte ranges, size and SHA-256 computed on the host, the
excerpt around the root). When the file cannot be read there (no permission), the caller
falls back to the tail it always had, and the scene says so loudly.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..classify import ClassifyResult
from ..events import ExceptionFound
from ..remote.base import Host, RunHandle, RunResult
from ..remote.prefilter import LogScan, PrefilterError, find_root

MAX_RANGES = 200
"""Byte ranges kept in the scene (the count and total are kept whatever their number)."""

REQUEST: ContextVar[tuple[str | None, bool]] = ContextVar("k3tui_log_request", default=(None, False))
"""``(--log PATH, --full-log)`` of the command being run: set by ``k3tui freeze`` around the
whole freeze so that every launcher's freeze sees it without each passing it on."""


ROOT_NAMED: ContextVar[Callable[[str, str, float], None] | None] = ContextVar("k3tui_root_named", default=None)
"""Told ``(host alias, root line, seconds)`` the moment a whole-log scan names the root, while the
host still reads the rest of the file for its size and SHA-256: ``k3tui freeze`` says it at once
instead of after the last byte of a multi-GB log (issue 15's "names the root in time")."""


def requested(log_path: str | None, full: bool) -> tuple[str | None, bool]:
    """The log file and full-read wish: the caller's own, else the command's (:data:`REQUEST`)."""
    path, whole = REQUEST.get()
    return log_path or path, full or whole


@dataclass
class LogTarget:
    """Which file holds the server's log, and in which format."""

    path: str
    fmt: str
    source: str


def log_target(results: dict[str, RunResult], log_path: str | None, run: Any) -> LogTarget | None:
    """The log file to scan: ``--log``, else the run's log, else the inspected container's json-file."""
    if log_path:
        return LogTarget(log_path, "raw", f"log file {log_path}")
    if isinstance(run, RunHandle) and run.run_dir:
        return LogTarget(f"{run.run_dir}/log", "raw", f"run {run.run_id} log")
    r = results.get("docker_inspect")
    if r is None or not r.ok:
        return None
    try:
        data = json.loads(r.stdout)
        c = data[0] if isinstance(data, list) else data
        path, driver = c.get("LogPath") or "", (c.get("HostConfig") or {}).get("LogConfig", {}).get("Type", "")
    except (ValueError, AttributeError, IndexError, TypeError):
        return None
    if not path or driver not in ("json-file", ""):
        return None
    return LogTarget(path, "docker-json", "container log")


def scan_record(scan: LogScan) -> dict[str, Any]:
    """What the scene keeps of a scan (``Scene.log_scan``)."""
    return {
        "path": scan.path,
        "format": scan.fmt,
        "method": scan.method,
        "size": scan.size,
        "sha256": scan.sha256,
        "ranges": [list(r) for r in scan.ranges[:MAX_RANGES]],
        "ranges_total": len(scan.ranges),
        "bytes_read": scan.bytes_read,
        "hits": scan.hits,
        "seconds": scan.seconds,
        "excerpt": scan.excerpt,
        "notes": list(scan.notes),
    }


async def scan_server_log(
    host: Host, target: LogTarget, *, full: bool = False
) -> tuple[ClassifyResult, dict[str, Any]] | str:
    """Classify the whole log on the host; the result and the scene's record, or why it could not."""
    told = ROOT_NAMED.get()
    t0 = time.monotonic()

    def on_event(event: Any) -> None:
        if told is not None and isinstance(event, ExceptionFound):
            told(getattr(host, "alias", ""), event.line, time.monotonic() - t0)

    try:
        scan = await find_root(host, target.path, fmt=target.fmt, full=full, emit=on_event if told else None)
    except PrefilterError as exc:
        return str(exc)
    return scan.result, scan_record(scan)

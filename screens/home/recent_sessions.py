"""The list of recent sessions: the user's recordings and the samples shipped with k3tui."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from k3tui.errors import K3Error
from k3tui.reader import open_recording
from k3tui.textsafe import neutralise

PACKAGE_SUFFIXES = (".tar.gz", ".tgz")


def user_recordings_dir() -> Path:
    """Where live sessions are recorded (``$XDG_DATA_HOME/k3tui/recordings``)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return Path(base) / "k3tui" / "recordings"


@dataclass(frozen=True)
class SessionEntry:
    path: Path
    started: float
    title: str
    host: str
    simulated: bool
    problem: str = ""


def scan(dirs: list[Path], limit: int = 200) -> list[SessionEntry]:
    """Session files and packages in ``dirs``, newest first (by the time recorded in the header)."""
    out: list[SessionEntry] = []
    for d in dirs:
        try:
            files = [p for p in d.iterdir() if p.name.endswith(".k3rec") or p.name.endswith(PACKAGE_SUFFIXES)]
        except OSError:
            continue
        for p in files:
            out.append(_entry(p))
    out.sort(key=lambda e: (-e.started, e.path.name))
    return out[:limit]


def _entry(p: Path) -> SessionEntry:
    if not p.name.endswith(".k3rec"):
        try:
            mtime = p.stat().st_mtime
        except OSError:
            mtime = 0.0
        return SessionEntry(p, mtime, "repro package", "", False)
    try:
        h = open_recording(p).header
        return SessionEntry(p, h.started, h.title, h.host, h.simulated)
    except K3Error as exc:
        return SessionEntry(p, 0.0, "", "", False, problem=str(exc))


class RecentSessions(DataTable):
    """Recent sessions, one row each; Enter opens the selected one."""

    class Open(Message):
        """Open this session file or package in replay."""

        def __init__(self, path: Path) -> None:
            super().__init__()
            self.path = path

    def __init__(self, **kwargs) -> None:  # noqa: ANN003
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.entries: list[SessionEntry] = []

    def on_mount(self) -> None:
        self.add_columns("recorded (UTC)", "session", "host", "title")

    def show(self, entries: list[SessionEntry]) -> None:
        self.entries = entries
        self.clear()
        for e in entries:
            when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(e.started)) if e.started else "?"
            host = Text(neutralise(e.host))
            if e.simulated:
                host.append(" SIM", style="bold black on yellow")
            title = Text(neutralise(e.problem), style="red") if e.problem else Text(neutralise(e.title))
            self.add_row(when, Text(e.path.name), host, title, key=str(e.path))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.post_message(self.Open(Path(str(event.row_key.value))))

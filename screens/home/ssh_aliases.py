"""Host aliases from ~/.ssh/config, offered when connecting (wildcard patterns are skipped)."""

from __future__ import annotations

import os
from pathlib import Path


def ssh_aliases(config: str | os.PathLike[str] | None = None) -> list[str]:
    """Concrete ``Host`` names of an ssh config file (and the files it ``Include``s)."""
    path = Path(config) if config else Path.home() / ".ssh" / "config"
    seen: list[str] = []
    _read(path, seen, depth=0)
    return seen


def _read(path: Path, seen: list[str], depth: int) -> None:
    if depth > 4:
        return
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return
    for raw in text.splitlines():
        parts = raw.strip().split()
        if len(parts) < 2 or parts[0].startswith("#"):
            continue
        key = parts[0].lower()
        if key == "host":
            for name in parts[1:]:
                if not any(c in name for c in "*?!") and name not in seen:
                    seen.append(name)
        elif key == "include":
            for pattern in parts[1:]:
                base = Path(os.path.expanduser(pattern))
                if not base.is_absolute():
                    base = path.parent / base
                for p in sorted(base.parent.glob(base.name)):
                    _read(p, seen, depth + 1)

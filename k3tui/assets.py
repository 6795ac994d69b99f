"""Where the data files live: ``assets/`` in a checkout, ``k3tui/_assets`` in a wheel.

Profiles, scenarios, request templates, stylesheets and decision tables are data, not
code; this is the one place that knows how to find them.
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def assets_dir() -> Path:
    """The assets folder of this installation."""
    packaged = _HERE / "_assets"
    if packaged.is_dir():
        return packaged
    return _HERE.parent / "assets"


def recordings_dir() -> Path:
    """The sample recordings shipped with k3tui."""
    packaged = _HERE / "_recordings"
    if packaged.is_dir():
        return packaged
    return _HERE.parent / "recordings"


def asset(*parts: str) -> Path:
    """Path of one asset, e.g. ``asset("profiles", "kimi-k3.toml")``."""
    return assets_dir().joinpath(*parts)

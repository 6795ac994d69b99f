"""Loads every fixture module in tests/support/ as a pytest plugin, and locates ../shared."""

from __future__ import annotations

import pkgutil
from pathlib import Path

import pytest

_SUPPORT = Path(__file__).parent / "support"
pytest_plugins = [
    f"tests.support.{m.name}" for m in pkgutil.iter_modules([str(_SUPPORT)]) if not m.name.startswith("_")
]

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared() -> Path:
    """The read-only ../shared folder (corpus, fixtures, recipes)."""
    if not SHARED.is_dir():
        pytest.fail(f"../shared not found at {SHARED}: the tests need the real corpus and fixtures")
    return SHARED

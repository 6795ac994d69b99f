"""Loads every fixture module in tests/support/ as a pytest plugin, locates ../shared, and groups the
tests for two workers (``pytest -n 2 --dist loadgroup``, the README's test command)."""

from __future__ import annotations

import pkgutil
from pathlib import Path

import pytest
from hypothesis import settings

# No per-example deadline (hypothesis' default is 200 ms): speed is measured in bench/, and a deadline is a
# timed test that fails on a loaded machine (a two-worker CI run beside other work: 334 ms for one example)
settings.register_profile("k3tui", deadline=None)
settings.load_profile("k3tui")

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


REAL_PARTS = frozenset(
    {"sshd", "sshd_factory", "dockerd", "containerd", "slurm", "tiny_model", "vllm_path_env", "slow_link"}
)
"""The fixtures that start a real part (an sshd, a dockerd, containerd, Slurm's daemons, the vLLM CPU
build's model) or measure time on a throttled link."""
REAL_MARKS = ("sshd", "docker", "vllm")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the test ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With pytest-xdist's ``--dist loadgroup``: every test that uses a real part runs on ONE worker, one
    after another, as without xdist (each daemon started once, no two vLLM servers or Slurm clusters
    at once, no race on the tiny model's cache or the test user); a module's tests that share a
    module-scoped fixture stay together (it is built once); every other test goes to whichever
    worker is free. Without xdist the groups are only marks."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & REAL_PARTS or any(item.get_closest_marker(m) for m in REAL_MARKS):
            item.add_marker(pytest.mark.xdist_group("real-parts"))
            continue
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.values() if info is not None else ()
        if any(d and d[-1].scope in ("module", "package", "class") for d in defs):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__ if item.module else item.nodeid))

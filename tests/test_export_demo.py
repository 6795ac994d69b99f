"""Export of demo sessions, one per simulated scenario: the report names the scenario's stage and exception.

Each scenario file (``assets/scenarios/NAME.toml``) states ``expected_stage`` and
``expected_exception``. The demo records a whole headless session against the simulated
host; the package exported from it must verify and must name that stage and exception.
Every scenario file must be listed by ``k3tui demo --list`` (a scenario it cannot run fails).
"""

from __future__ import annotations

import functools
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from k3tui.assets import asset
from k3tui.package import export_session, verify_package

from .test_export import members

SCENARIOS = sorted(p.stem for p in asset("scenarios").glob("*.toml"))


def _cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "k3tui.cli", *args], capture_output=True, text=True, timeout=timeout)


@functools.cache
def _listed() -> tuple[set[str], str]:
    r = _cli("demo", "--list", timeout=60)
    if r.returncode != 0:
        lines = (r.stderr or r.stdout).strip().splitlines()
        return set(), lines[-1] if lines else f"exit {r.returncode}"
    words = {line.split()[0].strip(":") for line in r.stdout.splitlines() if line.split()}
    return words, ""


def test_every_listed_scenario_has_its_file() -> None:
    listed, why = _listed()
    assert not why, f"`k3tui demo --list` failed: {why}"
    assert listed == set(SCENARIOS), f"listed {sorted(listed)}, files {SCENARIOS}"


@pytest.mark.slow
@pytest.mark.parametrize("name", SCENARIOS)
def test_demo_session_exports_with_its_stage_and_exception(name: str, tmp_path: Path) -> None:
    listed, why = _listed()
    assert not why and name in listed, f"scenario {name} is not listed by `k3tui demo --list` ({why or 'missing'})"
    spec = tomllib.loads(asset("scenarios", f"{name}.toml").read_text(encoding="utf-8"))
    record = tmp_path / f"{name}.k3rec"
    # the simulated logs replay 8x faster than their stamps (the same lines, in the same order): the
    # whole ladder of a scenario takes ~8 s instead of ~25 s, which keeps these 26 runs within CI's time
    r = _cli("demo", "--headless", "--scenario", name, "--record", str(record), "--speed", "8")
    if not record.exists():
        pytest.fail(
            f"demo --headless --scenario {name} wrote no recording (exit {r.returncode}): {r.stderr.strip()[-300:]}"
        )
    pkg = export_session(record)
    ok, msg = verify_package(pkg)
    assert ok, msg
    files = members(pkg)
    report = files["REPORT.md"].decode()
    first = files["first-error.txt"].decode()
    assert "SIMULATED host" in report
    stage, exception = spec["expected_stage"], spec.get("expected_exception", "")
    if stage == "none":
        assert "no root exception recorded" in report and "No root exception was found" in first
        return
    assert f"first failing stage: **{stage}**" in report
    assert f"stage       {stage}" in first
    assert exception and exception in first, f"{exception!r} not in first-error.txt"
    assert exception.replace("`", "'") in report
    cast = files["session.cast"]
    if b'"kind":"exception_found"' in files["session.k3rec"]:  # a ladder run hit it: marked in the cast
        assert cast.count(b'"m", "FIRST EXCEPTION at ' + stage.encode()) >= 1
    else:  # the freeze found it in the deployment's own log
        assert "found in " in first and b'"m", "scene frozen' in cast

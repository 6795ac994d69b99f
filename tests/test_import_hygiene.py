"""Core never imports the UI: every ``k3tui`` module imports in a fresh interpreter without pulling
in Textual or Rich, and import-linter's contracts (pyproject.toml) hold for the whole tree."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

_PROBE = r"""
import importlib, json, pkgutil, sys
import k3tui
UI = ("textual", "rich", "screens")
report = {"modules": [], "culprits": {}, "errors": {}}
names = sorted(m.name for m in pkgutil.walk_packages(k3tui.__path__, "k3tui."))
for name in names:
    before = {m for m in sys.modules if m.split(".")[0] in UI}
    try:
        importlib.import_module(name)
    except Exception as exc:
        report["errors"][name] = f"{type(exc).__name__}: {exc}"
        continue
    report["modules"].append(name)
    new = sorted(m for m in sys.modules if m.split(".")[0] in UI and m not in before)
    if new:
        report["culprits"][name] = new[:5]
print(json.dumps(report))
"""


def test_every_core_module_imports_without_textual_or_rich():
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.splitlines()[-1])
    assert len(report["modules"]) >= 20, "the walk found too few modules to mean anything"
    assert {"k3tui.recording", "k3tui.reader", "k3tui.redact", "k3tui.cli", "k3tui.state"} <= set(report["modules"])
    assert report["errors"] == {}, "modules that do not even import"
    assert report["culprits"] == {}, "these core modules pull in the UI"


def test_the_probe_would_catch_a_ui_import(tmp_path):
    """The check above can fail: a core-like package that imports rich is caught."""
    pkg = tmp_path / "fakecore"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "bad.py").write_text("import rich.text\n")
    probe = _PROBE.replace("import k3tui", "import fakecore as k3tui").replace('"k3tui."', '"fakecore."')
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    report = json.loads(out.stdout.splitlines()[-1])
    assert "fakecore.bad" in report["culprits"]


def test_import_linter_contracts_hold():
    exe = Path(sys.executable).parent / "lint-imports"
    if not exe.exists():
        exe = Path(shutil.which("lint-imports") or "")
    if not exe.is_file():
        pytest.fail("lint-imports is not installed: `.ci/install --test` installs import-linter")
    out = subprocess.run([str(exe), "--no-cache"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert re.search(r"Contracts: [2-9]\d* kept, 0 broken", out.stdout), out.stdout[-2000:]

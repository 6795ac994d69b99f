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


# --- no import circles inside k3tui ---------------------------------------------------------
# Every import counts: at module level, inside a function (a lazy import only hides a circle
# until the day someone hoists it) and under TYPE_CHECKING (mypy then loads both ends).


def import_cycles(package: str, search_path: Path | None = None) -> list[list[str]]:
    """Every strongly connected set of two or more modules of ``package`` (grimp's graph, Tarjan)."""
    import grimp

    if search_path is not None:
        sys.path.insert(0, str(search_path))
    try:
        graph = grimp.build_graph(package, cache_dir=None)
    finally:
        if search_path is not None:
            sys.path.remove(str(search_path))
    mods = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & set(mods)) for m in mods}
    return _strongly_connected(mods, edges)


def _strongly_connected(nodes: list[str], edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm without recursion: the components with more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(edges[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_no_import_cycle_inside_k3tui():
    cycles = import_cycles("k3tui")
    assert cycles == [], "import circles (break each with a shared leaf module or a Protocol): " + "; ".join(
        " <-> ".join(c) for c in cycles
    )


@pytest.mark.parametrize(
    "files",
    [
        # the three shapes removed from k3tui: a lazy import back, a TYPE_CHECKING import back, a longer ring
        {"a.py": "from . import b\n", "b.py": "def f():\n    from . import a\n"},
        {
            "a.py": "from . import b\n",
            "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import X\n",
        },
        {"a.py": "from .b import x\n", "b.py": "from .c import x\n", "c.py": "from .a import y\nx = 1\n"},
    ],
)
def test_the_cycle_check_catches_a_circle(tmp_path, files):
    pkg = tmp_path / "ringpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "leaf.py").write_text("from . import a\n")
    for name, text in files.items():
        (pkg / name).write_text(text)
    cycles = import_cycles("ringpkg", tmp_path)
    assert len(cycles) == 1 and "ringpkg.a" in cycles[0] and "ringpkg.leaf" not in cycles[0]

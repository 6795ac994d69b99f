"""The wheel is the product: built from this tree, installed in a NEW virtual environment (deps
from PyPI, pip's cache reused), it runs `k3tui --help`, `--version` and headless commands, and
carries its assets inside site-packages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow

_WRITE = """
import sys
from k3tui import events as ev
from k3tui.recording import Recorder
from k3tui.redact import Redactor
with Recorder(sys.argv[1], ev.Header(host="gb300-01", profile="kimi-k3"), redactor=Redactor()) as rec:
    rec.emit(ev.CommandSent(id="c1", command="vllm serve moonshotai/Kimi-K3", env={"HF_TOKEN": "hf_" + "a" * 30}))
    rec.emit(ev.Output(id="c1", text="INFO engine started\\n"))
    rec.emit(ev.StageReached(run="r1", stage="engine", line=3))
"""

_WHERE = """
import json, k3tui, k3tui.assets as a
print(json.dumps({"pkg": str(k3tui.__file__), "assets": str(a.assets_dir()), "files": sorted(
    str(p.relative_to(a.assets_dir())) for p in a.assets_dir().rglob("*") if p.is_file())}))
"""


def _run(cmd: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env)
    assert out.returncode == 0, f"{' '.join(cmd)} failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with the wheel built from this checkout installed; returns its bin/."""
    tmp = tmp_path_factory.mktemp("wheel")
    dist = tmp / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(REPO)], tmp)
    wheels = list(dist.glob("k3tui-*.whl"))
    assert len(wheels) == 1, wheels
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    _run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheels[0])], tmp)
    return env_dir / "bin"


def test_help_and_version(installed, tmp_path):
    out = _run([str(installed / "k3tui"), "--help"], tmp_path)
    assert "verify" in out.stdout and "cat" in out.stdout
    out = _run([str(installed / "k3tui"), "--version"], tmp_path)
    assert out.stdout.strip().startswith("k3tui ")


def test_headless_commands_from_the_installed_wheel(installed, tmp_path):
    rec = tmp_path / "s.k3rec"
    _run([str(installed / "python"), "-c", _WRITE, str(rec)], tmp_path)
    assert b"hf_aaaa" not in rec.read_bytes()
    out = _run([str(installed / "k3tui"), "verify", str(rec)], tmp_path)
    assert "intact" in out.stdout
    out = _run([str(installed / "k3tui"), "cat", str(rec)], tmp_path)
    assert "stage engine" in out.stdout and "INFO engine started" in out.stdout


def test_classify_from_the_installed_wheel(installed, tmp_path, shared):
    log = shared / "corpus" / "vllm-cpu" / "10a-fail-tensor-parallel-8.log"
    out = subprocess.run(
        [str(installed / "k3tui"), "classify", "--json", str(log)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout)["failed_stage"] == "config"


def test_assets_are_inside_site_packages(installed, tmp_path):
    out = _run([str(installed / "python"), "-c", _WHERE], tmp_path)
    where = json.loads(out.stdout)
    assert "site-packages" in where["pkg"] and "site-packages" in where["assets"], where
    assert str(REPO) not in where["assets"], "the installed k3tui must not read assets from the checkout"
    shipped = {
        str(p.relative_to(REPO / "assets"))
        for p in (REPO / "assets").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert shipped and shipped <= set(where["files"]), sorted(shipped - set(where["files"]))[:10]

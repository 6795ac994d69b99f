import subprocess
import sys


def test_version():
    out = subprocess.run([sys.executable, "-m", "k3tui.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout.startswith("k3tui ")

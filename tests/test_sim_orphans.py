"""The embedded simulated host ends with the process that runs it (issue 16).

After ``kill -9`` of ``k3tui demo`` the simulated serving process kept running and held its
port (seen in several trials): nothing called ``SimHost.stop``. The test kills a real
``k3tui demo --headless`` while its simulated ``vllm serve`` runs, then looks for any process
still inside that host's root.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _root_of(owner: int) -> Path | None:
    for owner_file in Path(tempfile.gettempdir()).glob("k3sim-*/owner"):
        try:
            if int(owner_file.read_text()) == owner:
                return owner_file.parent
        except (OSError, ValueError):
            continue
    return None


def _inside(root: Path) -> list[int]:
    """Processes whose command line or working directory lies in the simulated host's root."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if str(root).encode() in cmd or cwd.startswith(str(root)):
            found.append(int(proc.name))
    return found


def test_kill_9_of_the_demo_leaves_no_simulated_process(tmp_path):
    demo = subprocess.Popen(
        [sys.executable, "-m", "k3tui.cli", "demo", "--headless", "--record", str(tmp_path / "d.k3rec")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
    )  # fmt: skip
    root, running = None, []
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline and not running:
            root = root or _root_of(demo.pid)
            if root is not None:
                running = [p for p in _inside(root) if p != demo.pid]
            time.sleep(0.2)
        assert root is not None and running, "the demo never started its simulated host's processes"
        time.sleep(0.5)
    finally:
        os.kill(demo.pid, signal.SIGKILL)
        demo.wait()
    end = time.monotonic() + 10
    left = _inside(root)
    while left and time.monotonic() < end:
        time.sleep(0.2)
        left = _inside(root)
    assert left == [], [Path(f"/proc/{p}/cmdline").read_bytes()[:200] for p in left if Path(f"/proc/{p}").exists()]
    while root.exists() and time.monotonic() < end:
        time.sleep(0.2)
    assert not root.exists(), "the simulated host's root was left behind"


_OWNER = """
import asyncio, subprocess, sys
from k3tui.sim import SimHost

async def main():
    sim = SimHost(scenario="healthy")
    await sim.start()
    # a process of the host that no record names yet: it writes its first file late (mkdir -p)
    subprocess.Popen(["sh", "-c", 'sleep "$0"; mkdir -p "$K3SIM_ROOT/fs/late"', sys.argv[1]],
                     env=sim.session_env(), start_new_session=True)
    print(sim.root, flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


def test_a_process_still_starting_when_the_owner_dies_does_not_bring_the_root_back(tmp_path):
    """The watchdog ends every process carrying the host's root, recorded or not (CI stop 29).

    The demo was killed while a simulated process was starting: the watchdog removed the root,
    then the process created its first folder and the root was back. The stand-in writer waits
    far longer than any kill takes, so without the sweep the root returns every time.
    """
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, "2"], stdout=subprocess.PIPE, text=True)
    try:
        root = Path(owner.stdout.readline().strip())
        assert root.name.startswith("k3sim-"), root
    finally:
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
    time.sleep(4)  # past the writer's wake-up: a root it brought back would be here
    assert not root.exists(), sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    assert _inside(root) == [] and not [p for p in Path("/proc").glob("[0-9]*") if _carries(p, root)]


def _carries(proc: Path, root: Path) -> bool:
    try:
        return f"K3SIM_ROOT={root}".encode() in (proc / "environ").read_bytes()
    except OSError:
        return False

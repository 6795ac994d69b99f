"""The simulated processes stop on TERM even when a second TERM comes while a lock is held.

A stop sends the simulated ``vllm serve`` two TERMs (its group's, and the one its ``docker run``
client forwards). A Python handler that calls ``Event.set()`` runs between two bytecodes of the
main thread, and so can run while that thread holds the Event's lock: it then waits forever on
it (the demo cast test's flake: the server hung, printed no shutdown lines, was KILLed). These
tests hold that lock in the main thread on purpose while TERMs arrive, in a real child process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from k3tui.sim import rootfs
from k3tui.sim.scenario import load_raw

REPO = Path(__file__).resolve().parent.parent

CHILD = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from k3tui.sim.signals import stop_on_signals
    stop = threading.Event()
    stop_on_signals(stop)
    with stop._cond:  # the main thread holds the Event's lock, as inside Event.wait() or a set()
        for _ in range({n}):
            os.kill(os.getpid(), signal.{sig})
        for _ in range(20):
            time.sleep(0.01)  # handlers run here, between bytecodes, while the lock is held
    ok = stop.wait(10)
    print("stopped" if ok else "not stopped", flush=True)
    sys.exit(0 if ok else 1)
    """
)


@pytest.mark.parametrize(("n", "sig"), [(1, "SIGTERM"), (2, "SIGTERM"), (3, "SIGINT"), (2, "SIGINT")])
def test_a_stop_signal_while_the_events_lock_is_held_still_stops(n: int, sig: str) -> None:
    r = subprocess.run(
        [sys.executable, "-c", CHILD.format(n=n, sig=sig)], cwd=REPO, capture_output=True, text=True, timeout=30
    )
    assert r.returncode == 0 and r.stdout.strip() == "stopped", (r.stdout, r.stderr[-2000:])


def test_the_simulated_vllm_prints_its_shutdown_lines_after_two_quick_terms(tmp_path: Path) -> None:
    """A real simulated host's ``vllm serve`` (the ``healthy`` scenario), stopped by two TERMs at once."""
    root = tmp_path / "root"
    root.mkdir()
    rootfs.build(root, load_raw("healthy"))
    env = {**os.environ, "K3SIM_ROOT": str(root), "K3SIM_OWNER": str(os.getpid())}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from k3tui.sim.vllm import main; sys.exit(main(sys.argv[1:]))",
            "serve",
            "m",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "Application startup complete" in line:
                break
        assert any("Application startup complete" in x for x in lines), "".join(lines[-20:])
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0 and "Application shutdown complete." in out, out[-2000:]

"""Two simulated hosts in one process: stopping one never waits for the other (their watchdogs).

Each SimHost forks a watchdog that blocks on a pipe whose write end only the host's process
holds. A watchdog forked later inherits the earlier host's write end unless it closes it, so
stopping the earlier host then blocks until the later one stops (a full test run hung this
way). The check runs in a child process with a deadline, so a regression fails instead of hanging.
"""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import asyncio, time
from k3tui.sim.server import SimHost

async def main():
    first, second = SimHost(scenario="healthy"), SimHost(scenario="healthy")
    await first.start()
    await second.start()
    t0 = time.monotonic()
    await first.stop()
    print(f"first stopped in {time.monotonic() - t0:.2f}s", flush=True)
    await second.stop()

asyncio.run(main())
"""


def test_stopping_the_first_of_two_hosts_does_not_wait_for_the_second() -> None:
    try:
        out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"stopping the first simulated host hung: {e.stdout!r}") from None
    assert out.returncode == 0, out.stderr[-2000:]
    assert "first stopped in" in out.stdout

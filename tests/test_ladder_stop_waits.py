"""Before a restart the ladder waits until every process of each previous run has ended (issue 9).

The head's port going quiet is not enough: on a real host a worker that is slow to die
still holds its GPUs when the next run starts. Here a run leaves a process behind in its
group (``sleep N &``) on a simulated host reached over real SSH: the stop waits for it,
bounded, and says so when it outlives the bound.
"""

from __future__ import annotations

import time

from k3tui import events as ev
from k3tui.ladder import LadderEngine
from k3tui.ladder.config import RunConfig
from k3tui.ladder.server import Server
from k3tui.profile import load_profile
from k3tui.remote import detached
from k3tui.remote.ssh import connect
from k3tui.sim import SimHost


async def _run_leaving(host, events: list, seconds: int, run_id: str) -> Server:  # noqa: ANN001
    """A run whose main process exits at once, leaving ``sleep`` in its process group."""
    cfg = RunConfig(entry=["sh", "-c", f"sleep {seconds} & echo left a child behind"])
    s = Server(host, run_id, cfg, 8000, events.append)
    await s.start("minimal")
    await s.ended.wait()
    left = await host.run(detached.survivors_command(s.handle.run_dir))
    assert left.stdout.strip() == "1", left.stdout
    return s


async def test_stopping_waits_for_every_process_of_the_run_and_says_when_one_outlives_the_bound() -> None:
    events: list = []
    async with SimHost("healthy") as sim:
        host = await connect(emit=events.append, **sim.connect_kwargs())
        try:
            engine = LadderEngine(host, load_profile("tiny-cpu"), events.append, events=events)
            engine.server = await _run_leaving(host, events, 3, "gone-1")
            t0 = time.monotonic()
            await engine.stop_server(reason="restart")
            waited = time.monotonic() - t0
            left = await host.run(detached.survivors_command(engine_run_dir(events, "gone-1")))
            assert left.stdout.strip() == "0" and waited > 1.5, waited
            assert not [e for e in events if isinstance(e, ev.Notice) and "still alive" in e.message]

            stuck = await _run_leaving(host, events, 30, "stuck-1")
            t0 = time.monotonic()
            await engine._wait_runs_gone([stuck], timeout=1.0)
            assert time.monotonic() - t0 < 10
            said = [e for e in events if isinstance(e, ev.Notice) and "still alive" in e.message]
            assert said and "run stuck-1: 1 process(es) still alive 1 s after the stop" in said[0].message
            await host.run(detached.sweep_command(stuck.handle.run_dir))
        finally:
            await host.close()


def engine_run_dir(events: list, run: str) -> str:
    return next(e.run_dir for e in events if isinstance(e, ev.RunStarted) and e.run == run)

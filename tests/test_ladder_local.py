"""The engine on this machine (LocalHost, real detached processes) where no vLLM is needed:
a launcher that dies before /health answers is a start-up failure with its reason."""

from __future__ import annotations

from k3tui import events as ev
from k3tui.ladder import LadderEngine
from k3tui.profile import load_profile
from k3tui.remote.local import LocalHost


async def test_a_server_that_exits_before_health_is_a_failed_start_with_its_last_log_line(tmp_path):
    fake = tmp_path / "vllm"
    fake.write_text('#!/bin/sh\necho "starting $*"\necho "no more work here, bye" >&2\nexit 3\n')
    fake.chmod(0o755)
    events: list = []
    async with LocalHost(emit=events.append) as host:
        engine = LadderEngine(
            host,
            load_profile("tiny-cpu"),
            events.append,
            model_path="/m",
            port=1,
            program=str(fake),
            events=events,
            ready_timeout=30,
        )
        try:
            result = await engine.run_rung("minimal")
        finally:
            await engine.close()
    assert result.verdict == "FAIL"
    # no root exception in its log (a line that names one is the root instead: the classifier's part)
    assert "exited with status 3 before /health answered" in result.summary and "no more work here" in result.summary
    started = [e for e in events if isinstance(e, ev.RunStarted)]
    assert (
        len(started) == 1 and started[0].command.startswith(str(fake)) and started[0].env["VLLM_HOST_IP"] == "127.0.0.1"
    )
    assert [e.status for e in events if isinstance(e, ev.RunEnded)] == [3]
    assert any(isinstance(e, ev.RunClassified) for e in events)

"""LocalHost: the same Host protocol on this machine (real subprocesses, real wrapper scripts)."""

from __future__ import annotations

import uuid

from k3tui.events import CommandExited, CommandSent, Output
from k3tui.remote.base import Host
from k3tui.remote.local import LocalHost


async def test_local_run_records_and_returns():
    events = []
    async with LocalHost(emit=events.append) as host:
        assert isinstance(host, Host)
        res = await host.run("echo out; echo err >&2; exit 7", purpose="probe")
    assert (res.stdout, res.stderr, res.status) == ("out\n", "err\n", 7)
    sent = next(e for e in events if isinstance(e, CommandSent))
    assert sent.host == "local" and sent.purpose == "probe"
    assert {e.text for e in events if isinstance(e, Output)} == {"out\n", "err\n"}
    assert next(e for e in events if isinstance(e, CommandExited)).status == 7


async def test_local_timeout_kills_the_tree():
    async with LocalHost() as host:
        res = await host.run("sleep 30 & sleep 30; echo never", timeout=0.3)
        assert res.timed_out and res.status is None and res.stdout == ""


async def test_local_stdin_is_passed():
    async with LocalHost() as host:
        res = await host.run("tr a-z A-Z", stdin="hello\n")
    assert res.stdout == "HELLO\n"


async def test_local_detached_run_lifecycle(tmp_path):
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    async with LocalHost() as host:
        handle = await host.start_detached(
            "for i in 1 2 3; do echo line $i; done; echo $GREETING; exit 4", run_id=run_id, env={"GREETING": "hi"}
        )
        lines = [line async for line in host.tail(handle)]
        assert lines == ["line 1", "line 2", "line 3", "hi"]
        assert await host.run_status(handle) == 4

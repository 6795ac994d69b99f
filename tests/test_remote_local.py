"""LocalHost: the same Host protocol on this machine (real subprocesses, real wrapper scripts)."""

from __future__ import annotations

import uuid

import pytest

from k3tui.errors import HostError
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


async def test_local_detached_run_lifecycle(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # run dirs land in $HOME/.k3tui/runs
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    async with LocalHost() as host:
        handle = await host.start_detached(
            "for i in 1 2 3; do echo line $i; done; echo $GREETING; exit 4", run_id=run_id, env={"GREETING": "hi"}
        )
        lines = [line async for line in host.tail(handle)]
        assert lines == ["line 1", "line 2", "line 3", "hi"]
        assert await host.run_status(handle) == 4


async def test_local_detached_run_survives_its_starter_and_stops(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    events = []
    async with LocalHost(emit=events.append) as host:
        h = await host.start_detached("echo $$; exec sleep 60", run_id="survivor", cwd=str(tmp_path))
        assert h.run_dir == f"{tmp_path}/.k3tui/runs/survivor"
    # The host object is closed; the run lives on in its own session.
    async with LocalHost() as host:
        assert (await host.run(f"kill -0 {h.pid} && echo alive")).stdout == "alive\n"
        assert await host.run_status(h) is None
        assert await host.stop(h, grace=5) == 143
    with pytest.raises(HostError, match="already used"):
        async with LocalHost() as host:
            await host.start_detached("true", run_id="survivor")


async def test_bad_run_id_and_env_name_are_refused():
    async with LocalHost() as host:
        with pytest.raises(ValueError, match="run id"):
            await host.start_detached("true", run_id="../escape")
        with pytest.raises(ValueError, match="environment variable name"):
            await host.start_detached("true", run_id="ok-id", env={"BAD NAME": "x"})


async def test_tail_resumes_from_offset_and_keeps_partial_last_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    async with LocalHost() as host:
        h = await host.start_detached("printf 'alpha\\nbeta\\ngamma'", run_id="partial")
        assert [line async for line in host.tail(h)] == ["alpha", "beta", "gamma"]
        assert h.offset == len("alpha\nbeta\ngamma")
        assert [line async for line in host.tail(h, offset=6)] == ["beta", "gamma"]

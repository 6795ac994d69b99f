"""Detached runs over a REAL sshd: own session, per-run dir, tail by offset, stop, and surviving a dropped link."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from k3tui.events import Decision, Header, HostDisconnected, HostReconnected, Output, RunEnded, RunStarted
from k3tui.reader import read_all
from k3tui.recording import Recorder
from k3tui.remote.base import RunHandle
from k3tui.remote.ssh import connect


def _rid() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


async def test_detached_run_files_session_and_tail(sshd):
    events = []
    async with connect(sshd.target, emit=events.append, **sshd.connect_kwargs()) as host:
        h = await host.start_detached(
            "echo started; echo token is $HF_TOKEN; echo $MODE; exit 3",
            run_id=_rid(),
            env={"HF_TOKEN": "hf_SECRETsecretSECRETsecret1234", "MODE": "minimal"},
        )
        assert h.run_dir == f"{sshd.home}/.k3tui/runs/{h.run_id}" and h.pid
        lines = [line async for line in host.tail(h)]
        assert lines == ["started", "token is hf_SECRETsecretSECRETsecret1234", "minimal"]
        assert await host.run_status(h) == 3
        files = await host.run(f"cd {h.run_dir} && ls && cat cmd env exit")
        assert files.stdout.split()[:6] == ["cmd", "env", "exit", "log", "pgid", "pid"]
        assert "SECRET" not in files.stdout.replace("token is", "")  # env file holds the redacted copy
        assert "HF_TOKEN=<redacted>" in files.stdout and "MODE=minimal" in files.stdout
    started = next(e for e in events if isinstance(e, RunStarted))
    assert started.env["HF_TOKEN"] == "<redacted>" and started.pid == h.pid
    assert [e.status for e in events if isinstance(e, RunEnded)] == [3]
    logged = "".join(e.text for e in events if isinstance(e, Output) and e.id == h.run_id)
    assert logged == "started\ntoken is hf_SECRETsecretSECRETsecret1234\nminimal\n"  # the Recorder redacts on write


async def test_detached_run_has_its_own_session(sshd):
    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        h = await host.start_detached("sleep 30", run_id=_rid())
        res = await host.run(f"ps -o sid=,pgid= -p {h.pid}; cat {h.run_dir}/pgid")
        sid, pgid, wrapper = res.stdout.split()
        assert sid == pgid == wrapper != str(h.pid)
        assert await host.stop(h, grace=5) == 143


async def test_stop_escalates_to_kill_and_kills_children(sshd):
    events = []
    async with connect(sshd.target, emit=events.append, **sshd.connect_kwargs()) as host:
        h = await host.start_detached("trap '' TERM; sleep 60 & echo child $!; wait", run_id=_rid())
        await asyncio.sleep(0.3)
        log = (await host.run(f"cat {h.run_dir}/log")).stdout
        child = log.split()[-1]
        status = await host.stop(h, grace=0.5, reason="operator asked")
        assert status == 137
        # Gone, or a zombie waiting for a PID 1 that does not reap: either way not running.
        alive = await host.run(f"ps -o stat= -p {h.pid},{child}")
        assert all(s.startswith("Z") for s in alive.stdout.split()), alive.stdout
    assert any(isinstance(e, Decision) and e.action == "stop-run" and e.reason == "operator asked" for e in events)
    assert [e.reason for e in events if isinstance(e, RunEnded)] == ["stopped"]


async def test_reattach_from_offset_with_a_new_connection(sshd):
    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        h = await host.start_detached("seq 1 5; sleep 0.5; seq 6 9", run_id=_rid())
        first = []
        async for line in host.tail(h):
            first.append(line)
            if line == "5":
                break
        offset = h.offset
    assert first == ["1", "2", "3", "4", "5"] and offset == 10
    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        again = RunHandle(run_id=h.run_id, run_dir=h.run_dir)
        assert [line async for line in host.tail(again, offset)] == ["6", "7", "8", "9"]


LINES = 600


@pytest.mark.parametrize("how", ["kill-session", "restart-sshd"])
async def test_disconnect_every_line_exactly_once(sshd, tmp_path, how):
    """Kill the sshd child serving us (or restart sshd) mid-run: reconnect, resume, lose and repeat nothing."""
    rec_path = tmp_path / "s.k3rec"
    rec = Recorder(rec_path, Header(host="node"))
    script = f'i=0; while [ $i -lt {LINES} ]; do i=$((i+1)); echo "INFO line $i of the server log"; sleep 0.004; done'
    seen: list[str] = []
    async with connect(sshd.target, emit=rec.emit, **sshd.connect_kwargs()) as host:
        h = await host.start_detached(script, run_id=_rid())
        killed = False
        async for line in host.tail(h):
            seen.append(line)
            if len(seen) == 100 and not killed:
                killed = True
                if how == "kill-session":
                    assert sshd.kill_sessions()
                else:
                    await asyncio.to_thread(sshd.restart)
            if len(seen) == 200:
                # The remote process survived the drop.
                res = await host.run(f"kill -0 {h.pid} && echo alive; cat {h.run_dir}/exit")
                assert res.stdout == "alive\n", res
        assert await host.run_status(h) == 0
    rec.close()
    expected = [f"INFO line {i} of the server log" for i in range(1, LINES + 1)]
    assert seen == expected
    _, events = read_all(rec_path, strict=True)
    logged = "".join(e.text for e in events if isinstance(e, Output) and e.id == h.run_id)
    assert logged.splitlines() == expected
    assert any(isinstance(e, HostDisconnected) for e in events)
    assert any(isinstance(e, HostReconnected) for e in events)

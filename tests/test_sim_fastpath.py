"""The simulated host's answers without a process (k3tui.sim.fastpath) are the tools' own.

Every command the fast path knows is asked twice over real SSH: once answered by the fast
path, once by ``bash -c`` and the fake tools (``SimHost.fast_path = False``); the two must
be byte-identical (stdout, stderr, exit status), on scenarios that differ in what those
commands read (container with cuda-compat, aarch64 tray, an Xid in the kernel log). A
remembered answer is checked once it is served from memory, also on a second host that
got it from the first. A ``vllm serve`` that starts and holds GPU memory must show in the
fast path's answers exactly as in the tools'.
"""

from __future__ import annotations

import asyncio
import re
import time

import asyncssh
import pytest

from k3tui.remote.ssh import connect
from k3tui.scene.probes import BY_NAME, command_for, probe_commands, stdin_for
from k3tui.sim import SimHost, fastpath

MINIMAL = "vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 8 --trust-remote-code --load-format fastsafetensors"
_STAMP = re.compile(rb"<timestamp>[^<]*</timestamp>")
_CLOCK = re.compile(rb"(\d{10})\.\d{9}\n")


def _stdin(command: str, container: str | None = "vllm-k3") -> bytes:
    names = {cmd: name for name, cmd in probe_commands(container=container).items()}
    payload = stdin_for(BY_NAME[names[command]]) if command in names else None
    return (payload or "").encode()


async def _ask(conn: asyncssh.SSHClientConnection, sim: SimHost, command: str, fast: bool) -> tuple:
    sim.fast_path = fast
    try:
        r = await conn.run(command, input=_stdin(command), encoding=None)
    finally:
        sim.fast_path = True
    out = r.stdout
    if command == fastpath.CLOCK:  # the clock itself: same form, same second give or take one
        m = _CLOCK.fullmatch(out)
        assert m and abs(int(m.group(1)) - time.time()) < 2, out
        out = b"<clock>"
    # nvidia-smi -q -x prints the time of the call: the only part two calls may not share
    return _STAMP.sub(b"<timestamp/>", out), r.stderr, r.exit_status


async def _same_as_the_tools(sim: SimHost) -> list[str]:
    """Ask every form both ways; returns the forms checked."""
    assert sim.fast is not None
    forms = sim.fast.forms()
    async with asyncssh.connect(**sim.asyncssh_kwargs()) as conn:
        for command in forms:
            real = await _ask(conn, sim, command, fast=False)
            if sim.fast.reads_stdin(command) is None:
                assert sim.fast.computed(command) is not None, f"the fast path cannot answer {command!r}"
            else:  # remembered: the first ask may run for real; the second is served from memory
                await _ask(conn, sim, command, fast=True)
                assert sim.fast.key(command, _stdin(command)) in fastpath._remembered, command
            fast = await _ask(conn, sim, command, fast=True)
            assert real[2] == 0, (command, real)
            assert fast == real, command
    return forms


@pytest.mark.parametrize(
    "scenario,node", [("healthy", 0), ("cuda-compat-803", 0), ("runtime-xid79", 0), ("nvl72-2x4-healthy", 1)]
)
async def test_every_fast_answer_is_the_tools_answer(simhost_factory, scenario: str, node: int) -> None:  # noqa: ANN001
    sim = await simhost_factory(scenario, node=node)
    forms = await _same_as_the_tools(sim)
    # what a freeze sends and would otherwise start an interpreter for is all here
    cmds = probe_commands(container="vllm-k3")
    python = ("smi_xml", "smi_query", "smi_apps", "smi_list", "smi_topo", "docker_ps", "host_versions", "nvml")
    python += ("container_smi_list", "container_env", "container_ldconfig", "container_versions")
    assert [n for n in python if cmds[n] not in forms] == []
    pid = int((sim.root / "ctr" / "vllm-k3" / "pid").read_text())
    assert {command_for(BY_NAME[n], pid=pid) for n in ("proc_cmdline", "proc_environ", "proc_maps")} <= set(forms)


async def test_a_remembered_answer_serves_another_host_with_its_own_root(simhost_factory) -> None:  # noqa: ANN001
    a = await simhost_factory("nvl72-2x4-healthy", node=0)
    b = await simhost_factory("nvl72-2x4-healthy", node=0, like=a)  # the same host: a minute may pass
    command = probe_commands(container="vllm-k3")["container_versions"]
    async with asyncssh.connect(**a.asyncssh_kwargs()) as conn:
        await _ask(conn, a, command, fast=True)
    assert b.fast is not None and b.fast.key(command, b"") in fastpath._remembered  # b has never run it
    async with asyncssh.connect(**b.asyncssh_kwargs()) as conn:
        served = await _ask(conn, b, command, fast=True)
        real = await _ask(conn, b, command, fast=False)
    assert served == real and str(b.root).encode() in served[0] and str(a.root).encode() not in served[0]


async def test_a_run_several_hosts_ask_for_at_once_runs_once(simhost_factory) -> None:  # noqa: ANN001
    a = await simhost_factory("nvl72-2x4-healthy", node=0)
    b = await simhost_factory("nvl72-2x4-healthy", node=0, like=a)  # the same host: a minute may pass
    command = probe_commands()["nvml"]
    # the NVML script with a comment no earlier test sent: a key nobody remembers yet
    script = stdin_for(BY_NAME["nvml"]) + f"\n# {time.time_ns()}\n"
    async with asyncssh.connect(**a.asyncssh_kwargs()) as ca, asyncssh.connect(**b.asyncssh_kwargs()) as cb:
        runs = [c.run(command, input=script) for c in (ca, cb, ca, cb)]
        answers = await asyncio.gather(*runs)
        counts = {k: a.counts[k] + b.counts[k] for k in ("bash", "remembered")}
        b.fast_path = False
        real = await cb.run(command, input=script)
    assert {(r.stdout, r.exit_status) for r in answers} == {(real.stdout, 0)}
    assert counts == {"bash": 1, "remembered": 3}


async def test_the_fleet_log_read_is_a_known_form(simhost) -> None:  # noqa: ANN001
    from k3tui.fleet.freeze import read_log

    sent: list[str] = []

    class Host:
        async def run(self, command: str, **kw: object) -> object:
            sent.append(command)
            raise RuntimeError("not run")

    with pytest.raises(RuntimeError):
        await read_log(Host(), "vllm-k3")
    assert sent and sent[0] in simhost.fast.forms()


async def test_a_vllm_holding_gpu_memory_shows_in_the_fast_answers() -> None:
    cmds = probe_commands(container="vllm-k3")
    names = ("smi_apps", "smi_query", "smi_xml", "nvml", "pgrep")
    async with SimHost("healthy", speed=4) as sim:
        async with asyncssh.connect(**sim.asyncssh_kwargs()) as conn:
            before = {n: await _ask(conn, sim, cmds[n], fast=True) for n in names}
            async with connect(**sim.connect_kwargs()) as host:
                handle = await host.start_detached(MINIMAL, run_id="holds-memory")

                async def ready() -> None:
                    async for line in host.tail(handle):
                        if "Application startup complete" in line:
                            return

                await asyncio.wait_for(ready(), 20)
                for n in names:  # a remembered answer of the new state is made, then served
                    await _ask(conn, sim, cmds[n], fast=True)
                during = {n: await _ask(conn, sim, cmds[n], fast=True) for n in names}
                real = {n: await _ask(conn, sim, cmds[n], fast=False) for n in names}
                await host.stop(handle, grace=5)
            after = await _ask(conn, sim, cmds["smi_apps"], fast=True)
            after_real = await _ask(conn, sim, cmds["smi_apps"], fast=False)
    assert before["smi_apps"][0] == b"" and during == real
    rows = during["smi_apps"][0].decode().splitlines()
    pids = {r.split(", ")[1] for r in rows}
    assert len(rows) == 8 and len(pids) == 1 and all(int(r.split(", ")[3]) > 0 for r in rows)
    pid = pids.pop()
    assert during["nvml"] != before["nvml"] and f", {pid}, " in during["nvml"][0].decode()
    assert before["pgrep"][0] == b"" and [r.split(" ", 1)[0] for r in during["pgrep"][0].decode().splitlines()] == [pid]
    assert after == after_real and after[0] == b""


async def test_a_planted_tool_is_run_not_answered_for(simhost) -> None:  # noqa: ANN001
    async with asyncssh.connect(**simhost.asyncssh_kwargs()) as conn:
        before = [(await conn.run(c)).stdout for c in ("uname -a", fastpath.CLOCK)]
        (simhost.root / "bin" / "uname").write_text("#!/bin/sh\necho planted uname\n")  # replaced
        (simhost.root / "bin" / "date").write_text("#!/bin/sh\necho planted date\n")  # put in front of /bin/date
        (simhost.root / "bin" / "date").chmod(0o755)
        after = [(await conn.run(c)).stdout for c in ("uname -a", fastpath.CLOCK)]
    assert before[0].startswith("Linux gb300-sim ") and re.fullmatch(r"\d+\.\d{9}\n", before[1])
    assert after == ["planted uname\n", "planted date\n"] and simhost.counts["computed"] == 2
    assert simhost.fast.tools_changed("uname -a") and simhost.fast.tools_changed(fastpath.CLOCK)


async def test_loaded_libraries_are_listed_by_the_tools(simhost) -> None:  # noqa: ANN001
    """The fast path answers the loaded-libraries probe only when nothing is loaded; a libcuda in
    the process's maps (as a simulated vllm publishes it) is listed by bash and the tools."""
    pid = int((simhost.root / "ctr" / "vllm-k3" / "pid").read_text())
    command = command_for(BY_NAME["proc_maps"], pid=pid)
    async with asyncssh.connect(**simhost.asyncssh_kwargs()) as conn:
        empty = await _ask(conn, simhost, command, fast=True)
        maps = simhost.root / "fs" / "proc" / str(pid) / "maps"
        maps.parent.mkdir(parents=True)
        lib = "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05"
        maps.write_text(f"7f3a10000000-7f3a10200000 r--p 00000000 103:02 2883584 {' ' * 26}{lib}\n")
        listed = await _ask(conn, simhost, command, fast=True)
        real = await _ask(conn, simhost, command, fast=False)
    assert empty == (b"", b"", 0) and simhost.fast.computed(command) is None
    assert listed == real and listed[0].decode().startswith(f"{pid} {lib} -> ")


async def test_a_host_booted_another_minute_is_another_host(simhost_factory, monkeypatch) -> None:  # noqa: ANN001
    """A boot time is the start's minute less four days: a remembered answer does not cross it
    (the kernel log and uptime differ); ``like=`` restarts the same host, answers and all."""
    a = await simhost_factory("nvl72-2x4-healthy", node=0)
    later = time.time() + 61
    monkeypatch.setattr(time, "time", lambda: later)
    other = await simhost_factory("nvl72-2x4-healthy", node=0)
    same = await simhost_factory("nvl72-2x4-healthy", node=0, like=a)
    monkeypatch.undo()
    command = probe_commands(container="vllm-k3")["container_versions"]
    keys = {sim: sim.fast.key(command, b"") for sim in (a, other, same) if sim.fast is not None}
    assert keys[a] == keys[same] != keys[other]

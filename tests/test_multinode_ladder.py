"""Multi-node launch in the ladder against two simulated trays (issue 9).

The head and the worker each get a detached run with vLLM's multi-node options; the
scenario's root failure (NCCL) happens on the WORKER while the head only reports the
consequence: the rung names the worker, and every node's scene is frozen.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from k3tui import events as ev
from k3tui.classify.rules import load_rules
from k3tui.fleet.launch import MultiNodeLadder, node_config
from k3tui.ladder.config import from_profile, launch_argv
from k3tui.profile import load_profile
from k3tui.remote.ssh import connect
from k3tui.sim import SimHost


def _of(events, kind, **match):  # noqa: ANN001, ANN202
    return [e for e in events if isinstance(e, kind) and all(getattr(e, k) == v for k, v in match.items())]


def test_node_flags_head_and_headless_workers() -> None:
    cfg = from_profile(load_profile("kimi-k3"))
    head = " ".join(launch_argv(node_config(cfg, 2, 0, "10.0.0.11"), "r1"))
    worker = " ".join(launch_argv(node_config(cfg, 2, 1, "10.0.0.11"), "r1-n1"))
    assert "--nnodes 2 --node-rank 0 --master-addr 10.0.0.11 --master-port 29501" in head and "--headless" not in head
    assert "--nnodes 2 --node-rank 1 --master-addr 10.0.0.11 --master-port 29501 --headless" in worker


async def test_a_worker_failure_fails_the_rung_names_the_worker_and_freezes_every_node() -> None:
    events: list = []
    async with AsyncExitStack() as stack:
        worker_sim = await stack.enter_async_context(SimHost("multinode-worker-nccl", node=0, speed=8))
        head_sim = await stack.enter_async_context(SimHost("multinode-worker-nccl", node=1, speed=8))
        hosts = []
        for sim, alias in ((head_sim, "head-01"), (worker_sim, "worker-02")):
            kw = sim.connect_kwargs() | {"alias": alias}
            host = await connect(emit=events.append, **kw)
            stack.push_async_callback(host.close)
            hosts.append(host)
        engine = MultiNodeLadder(hosts, load_profile("kimi-k3"), events.append, events=events)
        try:
            result = await engine.run_rung("minimal")
        finally:
            await engine.close()
    started = {e.host: e for e in _of(events, ev.RunStarted)}
    assert set(started) == {"head-01", "worker-02"}, "one detached run per node"
    assert "--node-rank 1" in started["worker-02"].command and "--headless" in started["worker-02"].command
    assert "--node-rank 0" in started["head-01"].command and "--headless" not in started["head-01"].command
    assert result.verdict == "FAIL", result.summary
    assert "failed on node worker-02 at stage engine" in result.summary and "NCCL error" in result.summary
    found = _of(events, ev.ExceptionFound)
    assert found and found[0].host == "worker-02" and "NCCL error" in found[0].line
    # the head's log holds only consequences: if its classifier names one at the end, it is one
    consequence = load_rules().consequence
    assert all(consequence.search(e.line) for e in _of(events, ev.ExceptionFound, host="head-01")), (
        "the head only reports consequences"
    )
    frozen = _of(events, ev.SceneFrozen, reason="first-exception")
    assert sorted(e.host for e in frozen) == ["head-01", "worker-02"], "a failure on any node freezes every node"
    assert next(e for e in frozen if e.host == "worker-02").run == found[0].run
    configs = _of(events, ev.RunConfigSet)
    assert len(configs) == 1 and "nnodes" not in str(configs[0].config), (
        "node flags are topology, not a changed variable"
    )
    said = [e.message for e in _of(events, ev.Notice, host="worker-02")]
    assert any("first root exception of the deployment to arrive: worker worker-02" in m for m in said), said
    # the deployment's first by log time, with the worker's clock correction shown
    named = [m for m in said if m.startswith("the deployment's first root exception is on worker worker-02 (printed ")]
    assert named and "UTC on our clock, host clock " in named[0] and "NCCL error" in named[0], said


async def test_ladder_cli_with_an_inventory_launches_the_deployment_multinode(tmp_path) -> None:  # noqa: ANN001
    import asyncio
    import sys

    from k3tui.reader import read_all

    from .test_multinode_sim import write_inventory

    async with AsyncExitStack() as stack:
        worker_sim = await stack.enter_async_context(SimHost("multinode-worker-nccl", node=0, speed=8))
        head_sim = await stack.enter_async_context(SimHost("multinode-worker-nccl", node=1, speed=8))
        # the inventory lists the worker first: the head is whoever has role = "head"
        inv = write_inventory(
            tmp_path / "inv.toml", "k3", [worker_sim, head_sim], ["tray02", "tray01"], ["worker", "head"]
        )
        # the head's address on the cluster network comes from the inventory group
        inv.write_text(
            inv.read_text().replace(
                'profile = "kimi-k3"', 'profile = "kimi-k3"\nmaster_addr = "10.9.8.7"\nmaster_port = 29777'
            )
        )
        rec = tmp_path / "ladder.k3rec"
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "k3tui.cli", "ladder", "--inventory", str(inv), "--group", "k3", "--multinode",
            "--rung", "minimal", "--record", str(rec),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 240)
    out = stdout.decode() + stderr.decode()
    assert "failed on node tray02 at stage engine" in out, out[-3000:]
    _, events = read_all(rec)
    started = {e.host: e.command for e in _of(events, ev.RunStarted)}
    assert "--node-rank 0" in started["tray01"] and "--headless" in started["tray02"]
    assert all("--master-addr 10.9.8.7 --master-port 29777" in c for c in started.values()), started
    assert sorted(e.host for e in _of(events, ev.SceneFrozen, reason="first-exception")) == ["tray01", "tray02"]


# --- which node failed first: log time (skew-corrected), not arrival ---------------------------------


def _node_run(alias: str, skew: float | None, line: str, arrived: float):  # noqa: ANN202
    import time
    from types import SimpleNamespace

    from k3tui.ladder.server import Server

    s = Server(
        SimpleNamespace(alias=alias, clock_skew=skew), f"r1-{alias}", from_profile(load_profile("kimi-k3")), 8000, print
    )
    # ``arrived``: seconds ago, on the monotonic clock the ladder stamps arrivals with
    s.exception, s.exception_t = ev.ExceptionFound(line=line, stage="engine"), time.monotonic() - arrived
    return s


def _deployment(head, worker):  # noqa: ANN001, ANN202
    from k3tui.fleet.launch import DeploymentServer

    dep = DeploymentServer(head.host, "r1", head.config, 8000, print, workers=[worker])
    dep.exception, dep.exception_t = head.exception, head.exception_t
    dep.utc_offsets = {"head-01": 0.0, "worker-02": 0.0}
    return dep


def _vllm_line(proc: str, t: float, text: str) -> str:
    import time

    return f"({proc} pid=61) ERROR {time.strftime('%m-%d %H:%M:%S', time.gmtime(t))} [multiproc_executor.py:953] {text}"


def test_the_first_failure_is_the_earliest_log_line_not_the_first_to_arrive() -> None:
    import time

    t = time.time() - 600
    # the worker's line ARRIVES first (its tail was quicker), but the head printed its root 7 s earlier
    head = _node_run("head-01", 0.0, _vllm_line("EngineCore", t, "RuntimeError: CUDA error: out of memory"), 5.0)
    worker = _node_run("worker-02", 0.0, _vllm_line("Worker_TP3", t + 7, "RuntimeError: NCCL error"), 10.0)
    o = _deployment(head, worker).outcome()
    assert o.summary.startswith("start-up failed on node head-01"), o.summary
    # the worker's clock runs 40 s ahead: by the raw stamps the head printed first (t+5 < t+30),
    # corrected (t+30-40 = t-10) the worker did, though its line arrived second
    head = _node_run(
        "head-01", 0.0, _vllm_line("EngineCore", t + 5, "Exception: WorkerProc initialization failed"), 10.0
    )
    worker = _node_run("worker-02", 40.0, _vllm_line("Worker_TP3", t + 30, "RuntimeError: NCCL error"), 9.0)
    o = _deployment(head, worker).outcome()
    assert o.summary.startswith("start-up failed on node worker-02") and "NCCL error" in o.summary, o.summary
    # the same second on both clocks (vLLM stamps to the second): arrival decides
    head = _node_run("head-01", 0.0, _vllm_line("EngineCore", t, "RuntimeError: A"), 9.0)
    worker = _node_run("worker-02", 0.0, _vllm_line("Worker_TP3", t, "RuntimeError: B"), 10.0)
    assert _deployment(head, worker).outcome().summary.startswith("start-up failed on node worker-02")
    # a line without a stamp (a bare traceback) falls back to its arrival
    head = _node_run("head-01", 0.0, "RuntimeError: no stamp here", 10.0)  # arrived 10 s ago
    worker = _node_run(
        "worker-02", 0.0, _vllm_line("Worker_TP3", t, "RuntimeError: NCCL error"), 9.0
    )  # printed 600 s ago
    assert _deployment(head, worker).outcome().summary.startswith("start-up failed on node worker-02")
    head = _node_run("head-01", 0.0, "RuntimeError: no stamp here", 700.0)  # arrived before the worker printed
    assert _deployment(head, worker).outcome().summary.startswith("start-up failed on node head-01")


def test_a_worker_run_that_ended_without_an_exception_fails_the_deployment_by_name() -> None:
    head = _node_run("head-01", 0.0, "", 1.0)
    worker = _node_run("worker-02", 0.0, "", 1.0)
    head.exception = worker.exception = None
    dep = _deployment(head, worker)
    dep.exception = None
    assert dep.outcome().ok, "nothing failed yet"
    worker.last_lines.append("Killed")
    worker.ended.set()
    o = dep.outcome()
    assert not o.ok and o.summary == "start-up failed on node worker-02: its run r1-worker-02 ended: Killed"
    worker.stopped_by_us = True  # stopped by the ladder: not a failure
    assert dep.outcome().ok

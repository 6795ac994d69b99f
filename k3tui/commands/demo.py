"""`k3tui demo` — the whole procedure against the embedded SIMULATED GB300 host.

The simulated host is a real SSH server (asyncssh, in-process, loopback, ephemeral host
key) whose commands replay real outputs of real GPU hosts and real vLLM logs. The demo
connects to it through the same SSH transport, recorder, classifier, freeze and ladder
a real incident uses; only the host is fake, and every line of output and the
recording's header say so.

``--headless`` runs the procedure without a UI, prints progress lines, and ends with one
line scripts rely on: ``result: stage=<failed stage or none> exception=<root line or ->``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from .. import aio
from .. import events as ev
from ..driver import LiveDriver, new_recording_path
from ..errors import RecordingError, UsageError
from ..events import Header
from ..recording import Recorder
from ..textsafe import neutralise

PROGRESS_KINDS = (
    ev.HostConnected,
    ev.RungEntered,
    ev.RungLeft,
    ev.CheckVerdict,
    ev.RunStarted,
    ev.RunEnded,
    ev.StageReached,
    ev.ExceptionFound,
    ev.SceneFrozen,
    ev.RunClassified,
    ev.HttpResponse,
    ev.Decision,
    ev.Notice,
    ev.RunConfigSet,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenario", default="healthy", help="simulated scenario (see --list); default healthy")
    p.add_argument("--list", action="store_true", help="list the simulated scenarios and exit")
    p.add_argument("--headless", action="store_true", help="no UI: print progress lines and a final result line")
    p.add_argument("--record", metavar="FILE", help="session file to write (default: a new file in the recordings dir)")
    p.add_argument(
        "--rung", action="append", default=[], help="run only this rung (repeatable); default: the whole ladder"
    )
    p.add_argument(
        "--speed", type=float, default=None, help="replay speed of the simulated server logs (default: the sim's)"
    )


def run(args: argparse.Namespace) -> int:
    from ..sim import scenarios

    known = {s.name: s for s in scenarios()}
    if args.list:
        width = max(len(name) for name in known)
        for s in known.values():
            print(f"{s.name:{width}}  {s.title}  (expected: {s.expected_stage})")
        return 0
    if args.scenario not in known:
        raise UsageError(f"unknown scenario {args.scenario!r}; known: {', '.join(known)}")
    path = Path(args.record) if args.record else new_recording_path(f"demo-{args.scenario}")
    if args.headless:
        return aio.run(_headless(args, path))  # (Ctrl-C ends in bounded time)
    return _interactive(args, path)


def make_driver(args: argparse.Namespace, path: Path, sims: list[Any]) -> LiveDriver:
    """A live driver over every simulated node (one SSH connection each)."""
    from ..remote.ssh import connect

    aliases = ",".join(s.host_alias for s in sims)
    title = f"demo: scenario {args.scenario} (SIMULATED host{'s' if len(sims) > 1 else ''})"
    recorder = Recorder(path, Header(host=aliases, profile="kimi-k3", simulated=True, title=title))

    roles = sim_roles(sims)

    async def _connect(emit: Any) -> list[Any]:
        return list(
            await asyncio.gather(
                *(connect(emit=emit, role=role, **s.connect_kwargs()) for s, role in zip(sims, roles, strict=True))
            )
        )

    factory = None
    if len(sims) > 1:
        from ..fleet.launch import scenario_ladder

        factory = scenario_ladder(sims[0].data)  # ray mode where the scenario's [multinode] says so
    elif sims[0].data.get("slurm"):  # a Slurm node (issue 19): the operator's freezes show the job
        import functools

        from ..ladder import LadderEngine
        from ..launch.slurm import job_freeze

        factory = functools.partial(LadderEngine, freeze=job_freeze(str(sims[0].data["slurm"]["job_id"])))
    return LiveDriver(recorder, _connect, profile="kimi-k3", simulated=True, engine_factory=factory)


def sim_roles(sims: list[Any]) -> list[str]:
    """Each simulated node's role (``head``/``worker``), as its scenario's ``[[hosts]]`` entry says.

    A scenario that names no head makes the first node the head (as an inventory does);
    a single host has no role ("").
    """
    if len(sims) < 2:
        return [""] * len(sims)
    from ..sim.scenario import host_list

    declared = [str(host_list(s.data)[s.node].get("role") or "") for s in sims]
    named_head = "head" in declared
    return [r or ("head" if i == 0 and not named_head else "worker") for i, r in enumerate(declared)]


class SimNodes:
    """Every node of a scenario as its own simulated host (a deployment of one or more)."""

    def __init__(self, scenario: str, **kw: Any) -> None:
        from ..sim import SimHost
        from ..sim.scenario import host_list, load_raw

        hosts = host_list(load_raw(scenario))
        # the head node (role = "head") goes first: the multi-node ladder launches it as rank 0
        order = sorted(range(len(hosts)), key=lambda i: hosts[i].get("role") != "head")
        self.sims = [SimHost(scenario=scenario, node=i, **kw) for i in order]

    async def __aenter__(self) -> list[Any]:
        for s in self.sims:
            await s.__aenter__()
        return self.sims

    async def __aexit__(self, *exc: Any) -> None:
        for s in reversed(self.sims):
            await s.__aexit__(None, None, None)


async def _headless(args: argparse.Namespace, path: Path) -> int:
    out = sys.stdout
    out.write(f"k3tui demo: SIMULATED GB300 host, scenario {args.scenario}; recording {path}\n")
    async with SimNodes(args.scenario, **_sim_kwargs(args)) as sims:
        driver = make_driver(args, path, sims)
        driver.subscribe(lambda e: _progress(out, e))
        try:
            await driver.start()
            if args.rung:
                for rung in args.rung:
                    await driver.run_rung(rung)
            else:
                await driver.run_all()
        finally:
            await driver.close()
    stage, exc = result_of(driver)
    failure = driver.recorder.failure  # a full disk is never silent (issue 16), as in connect --record
    if failure is None:
        out.write(f"recorded: {path}\n")
    out.write(f"result: stage={stage} exception={exc}\n")
    out.flush()
    if failure is not None:  # one line on stderr naming where the recording went, exit non-zero
        raise RecordingError(failure)
    return 0


def _sim_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    return {"speed": args.speed} if args.speed else {}


def result_of(driver: LiveDriver) -> tuple[str, str]:
    """(failed stage, root exception line) of the session: the first failing run."""
    return result_of_state(driver.state)


def result_of_state(st: Any) -> tuple[str, str]:
    """:func:`result_of` for a folded :class:`~k3tui.state.SessionState` (live or replayed)."""
    if st.first_exception is not None:
        return st.first_exception.stage or "unknown", neutralise(st.first_exception.line).strip()
    for run in st.runs.values():
        c = run.classified
        if c is not None and c.failed_stage != "none":
            return c.failed_stage, neutralise(c.exception).strip() or "-"
    return "none", "-"


def _progress(out: Any, e: Any) -> None:
    if isinstance(e, PROGRESS_KINDS):
        host = f"[{e.host}] " if e.host else ""
        text = ev.summary(e, 150)
        if isinstance(e, ev.CheckVerdict) and e.rung == "checklist":  # an item not done yet is no FAIL
            from ..ladder.checklist import line_of

            text = line_of(e)[:150]
        out.write(f"{e.t:8.2f}s {host}{neutralise(text)}\n")
        out.flush()


def _interactive(args: argparse.Namespace, path: Path) -> int:
    from ._common import app_class

    K3App = app_class()

    nodes = SimNodes(args.scenario, **_sim_kwargs(args))

    async def _start_sim() -> Any:
        return make_driver(args, path, await nodes.__aenter__())

    async def _stop_sim() -> None:
        await nodes.__aexit__(None, None, None)

    K3App(driver_factory=_start_sim, on_exit=_stop_sim).run()
    print(f"recorded: {path}")
    return 0

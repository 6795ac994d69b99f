"""`k3tui` with no subcommand: start the TUI on the home screen.

Home can replay any recording; to connect to a host or start the demo it needs a
*session factory* — an async ``(target) -> Driver`` — which this module builds from the
same pieces ``k3tui demo`` and ``k3tui connect`` use (the UI never imports SSH itself).
``demo:SCENARIO`` starts the simulated host; anything else is an ssh target or group.
"""

from __future__ import annotations

import argparse
from typing import Any


def add_arguments(p: argparse.ArgumentParser) -> None:  # pragma: no cover - `k3tui` alone has no options
    pass


def run(args: argparse.Namespace) -> int:
    from ._common import app_class

    K3App = app_class()

    sims: list[Any] = []

    async def session(target: str) -> Any:
        from ..driver import LiveDriver, new_recording_path
        from ..events import Header
        from ..recording import Recorder

        if target.startswith("demo"):
            from .demo import SimNodes, make_driver

            scenario = target.partition(":")[2] or "healthy"
            nodes = SimNodes(scenario)
            hosts = await nodes.__aenter__()
            sims.append(nodes)
            ns = argparse.Namespace(scenario=scenario, speed=None)
            return make_driver(ns, new_recording_path(f"demo-{scenario}"), hosts)
        from ..driver import group_connector

        recorder = Recorder(new_recording_path(target), Header(host=target, profile="kimi-k3"))
        return LiveDriver(recorder, group_connector(target), profile="kimi-k3")  # a,b: head, then workers

    async def on_exit() -> None:
        for sim in sims:
            await sim.__aexit__(None, None, None)

    K3App(session_factory=session, on_exit=on_exit).run()
    return 0

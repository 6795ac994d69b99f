"""`k3tui` with no subcommand: start the TUI on the home screen.

Home can replay any recording; to connect to a host or start the demo it needs a
*session factory* — an async ``(target) -> Driver`` — which this module builds from the
same pieces ``k3tui demo`` and ``k3tui connect`` use (the UI never imports SSH itself).
``demo:SCENARIO`` starts the simulated host; anything else is an ssh target or group.
A host whose key is unknown can be accepted from the UI: the driver's connector takes the
operator's confirmed fingerprint (see :func:`k3tui.driver.group_connector`).
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any


def add_arguments(p: argparse.ArgumentParser) -> None:  # pragma: no cover - `k3tui` alone has no options
    pass


def session_factory(
    sims: list[Any], directory: Path | None = None, **connect_kwargs: Any
) -> Callable[[str], Awaitable[Any]]:
    """The ``(target) -> Driver`` Home connects with.

    Args:
        sims: where started simulated hosts are kept (the caller stops them on exit).
        directory: where recordings go (default: the user's recordings directory).
        connect_kwargs: for :func:`k3tui.remote.ssh.connect` (tests pass ``identity`` and ``known_hosts``).
    """

    async def session(target: str) -> Any:
        from ..driver import LiveDriver, group_connector, new_recording_path
        from ..events import Header
        from ..recording import Recorder

        if target.startswith("demo"):
            from .demo import SimNodes, make_driver

            scenario = target.partition(":")[2] or "healthy"
            nodes = SimNodes(scenario)
            hosts = await nodes.__aenter__()
            sims.append(nodes)
            ns = argparse.Namespace(scenario=scenario, speed=None)
            return make_driver(ns, new_recording_path(f"demo-{scenario}", directory), hosts)
        recorder = Recorder(new_recording_path(target, directory), Header(host=target, profile="kimi-k3"))
        # a,b: head, then workers
        return LiveDriver(recorder, group_connector(target, **connect_kwargs), profile="kimi-k3")

    return session


def run(args: argparse.Namespace) -> int:
    from ._common import app_class

    K3App = app_class()
    sims: list[Any] = []

    async def on_exit() -> None:
        for sim in sims:
            await sim.__aexit__(None, None, None)

    K3App(session_factory=session_factory(sims), on_exit=on_exit).run()
    return 0

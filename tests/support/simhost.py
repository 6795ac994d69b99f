"""The simulated GB300 host for any test (a FAKE host on purpose: see ``k3tui.sim``).

Fixtures:

- ``simhost`` → a started :class:`~k3tui.sim.SimHost` (function scope). Scenario
  ``healthy`` unless parametrised indirectly::

      @pytest.mark.parametrize("simhost", ["nccl-init"], indirect=True)
      async def test_x(simhost):
          async with connect(**simhost.connect_kwargs()) as host: ...

- ``simhost_factory`` → ``await start(scenario="healthy", node=0, speed=None, like=None)``: more
  hosts (e.g. both trays of ``nvl72-2x4-healthy``); all are stopped at teardown. A host's boot
  time is its start's minute less four days, so two starts a minute apart make two different
  hosts: ``like=`` an earlier start of the same host gives the new one its boot time.

``K3SIM_SPEED`` (env) scales the ``vllm serve`` replay; a start-up takes ~3.5 s at 1.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from k3tui.sim.server import SimHost


@pytest.fixture
async def simhost(request: pytest.FixtureRequest) -> AsyncIterator[SimHost]:
    scenario = getattr(request, "param", "healthy")
    async with SimHost(scenario=scenario) as sim:
        yield sim


@pytest.fixture
async def simhost_factory() -> AsyncIterator[Callable[..., Awaitable[SimHost]]]:
    started: list[SimHost] = []

    async def start(scenario: str = "healthy", like: SimHost | None = None, **kw: Any) -> SimHost:
        sim = SimHost(scenario=scenario, **kw)
        if like is not None:
            assert (like.scenario, like.node) == (sim.scenario, sim.node), "like= is the same host"
            hosts = sim.data["hosts"] if sim.data.get("hosts") else [sim.data.setdefault("host", {})]
            hosts[min(sim.node, len(hosts) - 1)]["boot_time"] = like.state["host"]["boot_time"]
        await sim.start()
        started.append(sim)
        return sim

    try:
        yield start
    finally:
        for sim in started:
            await sim.stop()

"""The simulated GB300 host: a FAKE host on purpose, for ``k3tui demo`` and the tests.

An in-process asyncssh server on 127.0.0.1 whose commands behave like an 8x GB300 host
(nvidia-smi, docker, ``vllm serve`` replaying real vLLM logs), driven by scenarios in
``assets/scenarios/``::

    from k3tui.sim import SimHost, scenarios
    for s in scenarios(): print(s.name, s.expected_stage, s.expected_exception)
    async with SimHost(scenario="nccl-init") as sim:
        host = await k3tui.remote.ssh.connect(**sim.connect_kwargs())

``SimHost`` is imported lazily: the fake tools import modules of this package under
``python -S`` (no asyncssh there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .scenario import ScenarioInfo, scenarios

if TYPE_CHECKING:
    from .server import SimHost

__all__ = ["SimHost", "ScenarioInfo", "scenarios"]


def __getattr__(name: str) -> Any:
    if name == "SimHost":
        from .server import SimHost

        return SimHost
    raise AttributeError(name)

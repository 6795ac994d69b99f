"""The simulated GB300 host: a FAKE host on purpose, for ``k3tui demo`` and the tests.

An in-process asyncssh server on 127.0.0.1 whose commands behave like an 8x GB300 host
(nvidia-smi, docker, ``vllm serve`` replaying real vLLM logs), driven by scenarios in
``assets/scenarios/``::

    from k3tui.sim import SimHost, scenarios
    for s in scenarios(): print(s.name, s.expected_stage, s.expected_exception)
    async with SimHost(scenario="nccl-init") as sim:
        host = await k3tui.remote.ssh.connect(**sim.connect_kwargs())

Modules: ``scenario`` (TOML scenarios, ``extends`` inheritance, per-host facts),
``rootfs`` (the host's private root: fake tools, virtual files, venv), ``server``
(asyncssh server, sessions, forwarding), ``tools`` (nvidia-smi, docker, uname …),
``smi`` (nvidia-smi formats from real captures), ``nvml`` (simulated libnvidia-ml behind
the real pynvml), ``vllm`` + ``logplay`` (``vllm serve`` replaying log templates),
``containers`` + ``dockerapi`` (docker CLI and Engine API), ``fastpath`` (the exact
commands of a freeze answered in the server's process: the tools' own answers, no process
started per probe).

A new scenario is a TOML file in ``assets/scenarios/`` (``extends = "healthy"``, its
``title``, ``expected_stage``, ``expected_exception``, what differs) and, when its log
differs, a template in ``assets/scenarios/logs/`` built from real vLLM lines (see
:mod:`k3tui.sim.logplay` for the ``#@`` directives). ``tests/test_sim_scenarios.py``
checks every scenario against the real classifier.

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

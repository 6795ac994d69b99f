"""The ladder: reproduce a failure layer by layer, one variable at a time.

Public surface (the CLI, the TUI and ``k3tui demo`` use exactly this)::

    LadderEngine(hosts, profile, emit, …)     engine.py: run_rung / run_all / preview_change / apply_change / revert
    RunConfig, diff, parse_command, …         config.py: what can change a run, and the diff that counts variables
    ConfigLedger                              ledger.py: the one-variable rule and revert
    stops.evaluate(events)                    stops.py: the five stop conditions
    checklist.evaluate(events)                checklist.py: the eleven deliverables, ticked from evidence
"""

from . import checklist, stops
from .config import RunConfig, command_line, diff, from_profile, launch_argv, parse_command
from .engine import LadderEngine, RungResult
from .ledger import ConfigLedger
from .server import Outcome, Server

__all__ = [
    "ConfigLedger",
    "LadderEngine",
    "Outcome",
    "RunConfig",
    "RungResult",
    "Server",
    "checklist",
    "command_line",
    "diff",
    "from_profile",
    "launch_argv",
    "parse_command",
    "stops",
]

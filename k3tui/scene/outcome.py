"""What freezing a target gave: the scenes, and the hosts that could not be reached.

Its own module, below both :mod:`k3tui.scene.session` and :mod:`k3tui.fleet`: the session
hands a group to the fleet, and the fleet returns this type, so neither imports the other
back (no import circle; tests/test_import_hygiene.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .model import Scene


@dataclass
class FreezeOutcome:
    scenes: list[Scene] = field(default_factory=list)
    unreachable: dict[str, str] = field(default_factory=dict)
    """alias → one-line reason."""

"""How loud one log line is: ``fault`` > ``error`` > ``warn`` > ``info`` > ``debug``.

The live log and the replay colour lines by this, never by the stage they were printed in:
a GPU that fell off the bus (``NVRM: Xid (PCI:0000:5d:00): 79, …``), an SXid, an
uncorrectable ECC error, a down NVLink, fabric or IMEX trouble are ``fault`` — the host's
hardware, shown loudest because vLLM's own errors that follow are consequences. The rules
are data (``assets/severity/lines.toml``), tried in order; each has a substring prefilter so
that a routine line costs a few C-speed ``in`` tests and no regex.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache

from .assets import asset
from .errors import K3Error

LEVELS = ("fault", "error", "warn", "info", "debug")
"""Every level, loudest first."""


@dataclass(frozen=True, slots=True)
class Rule:
    level: str
    what: str
    any: tuple[str, ...]
    rx: re.Pattern[str]


def load_rules(path: str | None = None) -> tuple[Rule, ...]:
    """The rules of ``assets/severity/lines.toml`` (or ``path``), in order.

    Raises:
        K3Error: the file is missing, not TOML, or a rule has an unknown level or a bad regex.
    """
    p = asset("severity", "lines.toml") if path is None else path
    try:
        with open(p, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise K3Error(f"severity rules {p}: {exc}") from None
    return tuple(_rule(p, i, r) for i, r in enumerate(data.get("rule", []), start=1))


def _rule(path: object, i: int, r: dict) -> Rule:
    level = r.get("level", "")
    if level not in LEVELS:
        raise K3Error(f"severity rules {path}: rule {i} has level {level!r}; use one of {', '.join(LEVELS)}")
    try:
        rx = re.compile(r["pattern"])
    except (KeyError, re.error) as exc:
        raise K3Error(f"severity rules {path}: rule {i} has no valid pattern ({exc})") from None
    return Rule(level, str(r.get("what", "")), tuple(r.get("any") or ()), rx)


@cache
def _rules() -> tuple[Rule, ...]:
    return load_rules()


def severity(line: str, rules: tuple[Rule, ...] | None = None) -> str:
    """The level of one line (``info`` when no rule matches)."""
    for r in rules if rules is not None else _rules():
        for w in r.any:  # a rule's few substrings: C-speed tests, measured faster than one regex gate
            if w in line:
                break
        else:
            if r.any:
                continue
        if r.rx.search(line):
            return r.level
    return "info"


def words(rules: tuple[Rule, ...] | None = None) -> tuple[str, ...]:
    """Substrings one of which every line louder or quieter than ``info`` holds (a prefilter for :func:`severity`).

    Raises:
        K3Error: a rule without ``any`` (then every line would need the regexes).
    """
    out: dict[str, None] = {}
    for r in rules if rules is not None else _rules():
        if not r.any:
            raise K3Error(f"severity rule {r.what or r.level!r} has no 'any' substrings: every rule needs them")
        out.update(dict.fromkeys(r.any))
    return tuple(out)


def louder(a: str, b: str) -> str:
    """The louder of two levels."""
    return a if LEVELS.index(a) <= LEVELS.index(b) else b

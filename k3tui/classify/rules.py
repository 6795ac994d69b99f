"""The classifier's knowledge, loaded from ``assets/classify/*.toml`` and compiled once.

Stage markers, root and consequence patterns, the stage decision rules and the advice
change with vLLM versions and with what on-call engineers learn; they are data so that a
new vLLM release is a TOML edit tested against the corpus, not a code change. This
module turns that data into compiled objects and fails with one clear line when the
data is broken.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..assets import asset
from ..errors import ProfileError

STAGES: tuple[str, ...] = ("container", "config", "device", "weights", "engine", "api", "runtime")
"""The layers in start-up order; ``none`` is not a stage but the verdict for a healthy run."""


@dataclass(frozen=True)
class StageDef:
    name: str
    index: int
    markers: tuple[str, ...]
    """Found only on vLLM logger lines (those carrying the gate, ``.py:``)."""
    done: tuple[str, ...]
    at_first_line: bool
    plain: tuple[str, ...] = ()
    """Found on any line (uvicorn, tqdm progress bars)."""


@dataclass(frozen=True)
class RootRule:
    match: re.Pattern[str]
    type: str


@dataclass(frozen=True)
class StageRule:
    stage: str
    strong: bool
    match: re.Pattern[str]


@dataclass(frozen=True)
class Rules:
    stages: tuple[StageDef, ...]
    gate: str
    always: tuple[str, ...]
    normal_stop: tuple[str, ...]
    oom: re.Pattern[str]
    exception: re.Pattern[str]
    roots: tuple[RootRule, ...]
    consequence: re.Pattern[str]
    stage_rules: tuple[StageRule, ...]
    frame_rules: tuple[tuple[str, re.Pattern[str]], ...]
    advice: dict[str, tuple[str, str]]


def _read(name: str) -> dict:
    path = asset("classify", name)
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ProfileError(f"{path}: classifier data missing; reinstall k3tui") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: invalid TOML: {exc}") from exc


def _rx(text: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise ProfileError(f"assets/classify/{where}: bad regex {text!r}: {exc}") from exc


def _stages(data: dict) -> tuple[StageDef, ...]:
    out = []
    for i, s in enumerate(data.get("stage", [])):
        if i >= len(STAGES) or s.get("name") != STAGES[i]:
            raise ProfileError(f"assets/classify/stages.toml: the stages must be, in order: {', '.join(STAGES)}")
        out.append(
            StageDef(
                s["name"],
                i,
                tuple(s.get("markers", ())),
                tuple(s.get("done", ())),
                bool(s.get("at_first_line")),
                tuple(s.get("plain_markers", ())),
            )
        )
    if len(out) != len(STAGES):
        raise ProfileError(f"assets/classify/stages.toml: expected the stages {', '.join(STAGES)}")
    return tuple(out)


def _stage_rules(data: dict) -> tuple[StageRule, ...]:
    rules = []
    for r in data.get("stage_rule", []):
        if r["stage"] not in STAGES:
            raise ProfileError(f"assets/classify/patterns.toml: unknown stage {r['stage']!r} in a stage_rule")
        rules.append(StageRule(r["stage"], r.get("strength", "strong") == "strong", _rx(r["match"], "patterns.toml")))
    return tuple(rules)


def _advice(data: dict) -> dict[str, tuple[str, str]]:
    missing = [s for s in (*STAGES, "none") if s not in data]
    if missing:
        raise ProfileError(f"assets/classify/advice.toml: no advice for {', '.join(missing)}")
    return {k: (v.get("meaning", ""), v.get("next", "")) for k, v in data.items()}


@lru_cache(maxsize=1)
def load_rules() -> Rules:
    """The compiled rules of this installation (loaded once per process)."""
    st, pat, adv = _read("stages.toml"), _read("patterns.toml"), _read("advice.toml")
    return Rules(
        stages=_stages(st),
        gate=st.get("gate", ".py:"),
        always=tuple(pat["prefilter"]["always"]),
        normal_stop=tuple(pat["stop"]["normal"]),
        oom=_rx(pat["oom"]["pattern"], "patterns.toml [oom]"),
        exception=_rx(pat["exception"]["pattern"], "patterns.toml [exception]"),
        roots=tuple(RootRule(_rx(r["match"], "patterns.toml [[root]]"), r["type"]) for r in pat.get("root", [])),
        consequence=_rx("|".join(f"(?:{p})" for p in pat["consequence"]["patterns"]), "patterns.toml [consequence]"),
        stage_rules=_stage_rules(pat),
        frame_rules=tuple(
            (r["stage"], _rx(r["match"], "patterns.toml [[frame_rule]]")) for r in pat.get("frame_rule", [])
        ),
        advice=_advice(adv),
    )

"""Bisect between a good and a bad run config: which variable (or smallest set) flips good into bad.

Why delta debugging and not a linear walk: a good launch and a bad one differ in several
variables, and every run of a GB300 deployment costs minutes. Walking from G to B one
variable at a time needs up to ``n`` runs; splitting the differing set (Zeller's ddmin)
needs about ``2·log2(n)`` when one variable is the cause, and still finds the smallest
interacting set (a 1-minimal subset) when no single variable flips it.

A configuration is judged by K repetitions and by *signature*, never by exit status alone:

- ``good``: every repetition passed;
- ``bad``: B's failure signature reproduced (k/K);
- a failure with a different signature is **drift**: the search stops, with both runs' ids,
  because "a different error" is not evidence for either side;
- a mix of passes and reproductions (1 ≤ k ≤ K−1) is flaky: K more repetitions before the
  verdict (then any reproduction is ``bad``: a config that is good never fails this way).

The search itself is pure: it calls an async ``probe(changes, repeats)`` that runs G plus
the given changes and returns one :class:`Attempt` per repetition. The CLI's probe drives the
ladder engine (real runs, recorded); tests and ``bench/bench_bisect.py`` pass an oracle.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..bisect_walk import BAD, DRIFT, ERROR, GOOD, STEP, VERDICT, WalkRow, walk, walk_lines  # noqa: F401 - re-exported
from ..errors import UsageError
from .config import OBSERVED, RunConfig, diff


@dataclass
class Attempt:
    """One repetition of one configuration."""

    ok: bool
    signature: str = ""
    run_id: str = ""
    error: bool = False
    """k3tui could not run it (not a finding about the server)."""


@dataclass
class Trial:
    """One configuration (G plus the variables ``taken`` from B) and its verdict."""

    step: int
    purpose: str
    taken: tuple[str, ...]
    verdict: str
    passed: int
    reproduced: int
    repeats: int
    signatures: list[str] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)


@dataclass
class Plan:
    """What the bisect will do, shown before it asks to start."""

    differing: list[dict[str, Any]]
    changeable: list[str]
    fixed: list[str]
    """Differences a run cannot change (observed: the driver, the GPU count)."""
    expected_runs: int
    worst_runs: int


@dataclass
class Outcome:
    """The answer: a culprit (one variable), an interacting set, or why there is none."""

    kind: str
    """``culprit``, ``interaction``, ``drift``, ``not-reproduced``, ``good-fails``, ``budget``, ``nothing``, ``error``."""
    culprits: list[str] = field(default_factory=list)
    line: str = ""
    trials: list[Trial] = field(default_factory=list)
    confirmed: bool = False

    @property
    def runs(self) -> int:
        """Configurations run (each judged by its repetitions)."""
        return len(self.trials)


Probe = Callable[[dict[str, Any], int], Awaitable[list[Attempt]]]
Step = Callable[[Trial, int], Any]


class Stop(Exception):
    """Ends the search early with an outcome (drift, budget, error)."""

    def __init__(self, outcome_kind: str, line: str) -> None:
        super().__init__(line)
        self.kind, self.line = outcome_kind, line


def plan(good: RunConfig, bad: RunConfig) -> Plan:
    """The differing variables of two configs and the runs the search expects to need."""
    d = diff(good, bad)
    fixed = [x["key"] for x in d if x["key"] in OBSERVED or x["key"] == "entry"]
    changeable = [x["key"] for x in d if x["key"] not in fixed]
    return Plan(d, changeable, fixed, expected_runs(len(changeable)), worst_runs(len(changeable)))


def expected_runs(n: int) -> int:
    """Runs for one culprit among ``n``: G, B, ~1.5 per halving, the B-minus-culprit confirmation."""
    if n <= 0:
        return 2
    return 3 + math.ceil(1.5 * math.ceil(math.log2(n))) if n > 1 else 2


def worst_runs(n: int) -> int:
    """Worst case for one culprit: two runs per halving."""
    return 3 + 2 * math.ceil(math.log2(n)) if n > 1 else 4


class Bisector:
    """The search over the changeable differences (see the module docstring)."""

    def __init__(
        self,
        changes: dict[str, Any],
        probe: Probe,
        *,
        repeat: int = 1,
        budget: int | None = None,
        on_step: Step | None = None,
        estimate: int | None = None,
        good_values: dict[str, Any] | None = None,
        known: list[Trial] | None = None,
        target: str = "",
    ) -> None:
        if repeat < 1:
            raise UsageError("--repeat must be at least 1")
        self.changes = changes
        """B's values of the changeable variables, in diff order."""
        self.keys = list(changes)
        self.probe = probe
        self.repeat = repeat
        self.budget = budget
        self.on_step = on_step
        self.estimate = estimate or expected_runs(len(self.keys))
        self.good_values = good_values or {}
        """G's values of the same variables (for the answer line)."""
        self.trials: list[Trial] = []
        self.cache: dict[frozenset[str], str] = {}
        self.target = target
        """B's failure signature (set by the first run of B, or by the recording resumed)."""
        self.candidates: list[str] = list(self.keys)
        """The variables the culprit is still among (what an abort reports)."""
        for t in known or []:  # steps a recorded bisect already judged (--resume): never run again
            self.trials.append(t)
            self.cache[frozenset(t.taken)] = t.verdict

    # --- public -------------------------------------------------------------------------

    async def run(self) -> Outcome:
        """Run the whole bisect; never raises for a finding (drift, budget): it is the outcome."""
        try:
            return await self._run()
        except Stop as stop:
            return Outcome(stop.kind, line=stop.line, trials=self.trials)

    async def _run(self) -> Outcome:
        if not self.keys:
            return Outcome("nothing", line="no changeable variable differs between good and bad", trials=self.trials)
        bad = await self._judge(self.keys, "bad as given (B)")
        if bad == GOOD:
            return Outcome("not-reproduced", line="B passed: its failure did not reproduce", trials=self.trials)
        good = await self._judge([], "good as given (G)")
        if good == BAD:
            return Outcome("good-fails", line="G fails with B's signature: nothing to bisect", trials=self.trials)
        found = await self._ddmin(list(self.keys))
        return await self._confirm(found)

    # --- judging one configuration ------------------------------------------------------

    async def _judge(self, taken: list[str], purpose: str) -> str:
        key = frozenset(taken)
        if key in self.cache:
            return self.cache[key]
        if self.budget is not None and len(self.trials) >= self.budget:
            raise Stop("budget", f"budget of {self.budget} runs spent before a verdict")
        changes = {k: self.changes[k] for k in self.keys if k in key}
        attempts = list(await self.probe(changes, self.repeat))
        trial = self._verdict(taken, purpose, attempts)
        if 0 < trial.reproduced < trial.repeats and trial.verdict == BAD:  # flaky: more repetitions first
            attempts += list(await self.probe(changes, self.repeat))
            trial = self._verdict(taken, purpose + " (flaky: repeated)", attempts)
        self.trials.append(trial)
        if self.on_step is not None:
            self.on_step(trial, self.estimate)
        self.cache[key] = trial.verdict
        if trial.verdict == DRIFT:
            b_runs = next((t.run_ids for t in self.trials if t.purpose.startswith("bad as given")), [])
            raise Stop(
                "drift",
                f"drift at step {trial.step}: a different failure ({_other(trial.signatures, self.target)}) than B's "
                f"({self.target}); compare the logs of runs {', '.join(trial.run_ids)} and {', '.join(b_runs)}",
            )
        if trial.verdict == ERROR:
            raise Stop("error", f"step {trial.step}: k3tui could not run the configuration")
        return trial.verdict

    def _verdict(self, taken: list[str], purpose: str, attempts: list[Attempt]) -> Trial:
        fails = [a.signature for a in attempts if not a.ok and not a.error]
        if not self.target and fails:
            self.target = Counter(fails).most_common(1)[0][0]
        passed = sum(1 for a in attempts if a.ok)
        reproduced = sum(1 for s in fails if s == self.target)
        if any(a.error for a in attempts):
            verdict = ERROR
        elif len(fails) > reproduced:
            verdict = DRIFT
        else:
            verdict = BAD if reproduced else GOOD
        return Trial(
            step=len(self.trials) + 1,
            purpose=purpose,
            taken=tuple(taken),
            verdict=verdict,
            passed=passed,
            reproduced=reproduced,
            repeats=len(attempts),
            signatures=fails,
            run_ids=[a.run_id for a in attempts if a.run_id],
        )

    # --- the search ---------------------------------------------------------------------

    async def _ddmin(self, c: list[str]) -> list[str]:
        """Zeller's ddmin: a 1-minimal subset of ``c`` that still reproduces B's failure."""
        n = 2
        while len(c) >= 2:
            self.candidates = list(c)
            chunks = _split(c, n)
            nxt = await self._first_bad(chunks, "subset")
            if nxt is not None:
                c, n = nxt, 2
                continue
            if n > 2:
                comps = [[k for k in c if k not in chunk] for chunk in chunks]
                nxt = await self._first_bad(comps, "complement")
                if nxt is not None:
                    c, n = nxt, max(n - 1, 2)
                    continue
            if n >= len(c):
                break
            n = min(len(c), 2 * n)
        self.candidates = list(c)
        return c

    async def _first_bad(self, sets: list[list[str]], what: str) -> list[str] | None:
        for s in sets:
            if await self._judge(s, f"{what}: G + {', '.join(s)}") == BAD:
                return s
        return None

    async def _confirm(self, found: list[str]) -> Outcome:
        """G plus only the culprit(s) fails; B minus only the culprit(s) passes."""
        g_plus = self._ran(found) or await self._judge_fresh(found, f"confirm: G + only {', '.join(found)}")
        rest = [k for k in self.keys if k not in found]
        b_minus = self._ran(rest) or await self._judge_fresh(rest, f"confirm: B - only {', '.join(found)}")
        confirmed = g_plus.verdict == BAD and b_minus.verdict == GOOD
        good_t = next(t for t in self.trials if t.purpose.startswith("good as given"))
        if len(found) == 1:
            k = found[0]
            line = (
                f"culprit: {k}={_show(self.changes[k])} "
                f"(good with {_show(self.good_values.get(k))}: {b_minus.passed}/{b_minus.repeats} passed; "
                f"bad with {_show(self.changes[k])}: {g_plus.reproduced}/{g_plus.repeats} reproduced)"
            )
            kind = "culprit"
        else:
            names = ", ".join(f"{k}={_show(self.changes[k])}" for k in found)
            line = (
                f"interaction: no single variable flips it; the smallest set is {{{names}}} "
                f"(each alone passes; together {g_plus.reproduced}/{g_plus.repeats} reproduced; "
                f"B without them {b_minus.passed}/{b_minus.repeats} passed; G {good_t.passed}/{good_t.repeats} passed)"
            )
            kind = "interaction"
        if not confirmed:
            line += (
                " — NOT confirmed by the single-variable runs (flaky or order-dependent: repeat with a larger --repeat)"
            )
        return Outcome(kind, culprits=found, line=line, trials=self.trials, confirmed=confirmed)

    def _ran(self, taken: list[str]) -> Trial | None:
        """The search's own run of exactly G + ``taken`` (K repetitions already judged it)."""
        key = frozenset(taken)
        return next((t for t in reversed(self.trials) if frozenset(t.taken) == key), None)

    async def _judge_fresh(self, taken: list[str], purpose: str) -> Trial:
        """A confirmation is a run of its own even when the search already ran that configuration."""
        self.cache.pop(frozenset(taken), None)
        await self._judge(taken, purpose)
        return self.trials[-1]


def _split(c: list[str], n: int) -> list[list[str]]:
    size, extra = divmod(len(c), n)
    out, i = [], 0
    for j in range(n):
        step = size + (1 if j < extra else 0)
        if step:
            out.append(c[i : i + step])
        i += step
    return out


def _show(v: Any) -> str:
    if v is None:
        return "(unset)"
    if v is True:
        return "on"
    if v is False:
        return "off"
    return str(v)


def _other(signatures: list[str], target: str) -> str:
    return next((s for s in signatures if s != target), "?")


def table(trials: list[Trial]) -> list[str]:
    """The walk as text rows: step, what was run, verdict, k/K."""
    rows = [f"{'step':>4}  {'verdict':7}  {'k/K':>5}  configuration"]
    for t in trials:
        rows.append(f"{t.step:>4}  {t.verdict:7}  {t.reproduced:>2}/{t.repeats:<2}  {t.purpose}")
    return rows


# --- the walk read back from a recording (replay, report) ----------------------------------------

# the parser (STEP, VERDICT, WalkRow, walk, walk_lines) is k3tui.bisect_walk: state.py folds the walk too


def step_decision(t: Trial, estimate: int, target: str = "") -> tuple[str, str]:
    """The Decision (action, reason) that records one step; :func:`walk` and :func:`judged_steps` read it back.

    A step that reproduced B's failure names its signature (``target``): a resumed bisect judges
    its new runs against it.
    """
    action = f"bisect step {t.step} of ~{estimate}: {t.purpose}"
    reason = f"verdict {t.verdict}: reproduced {t.reproduced}/{t.repeats}, passed {t.passed}/{t.repeats}"
    if t.verdict == BAD and target:
        reason += f"; signature: {target}"
    return action, reason


def judged_steps(
    events: list[Any], good_values: dict[str, Any], changes: dict[str, Any]
) -> tuple[list[Trial], str, list[Any]]:
    """What a recorded bisect learnt: its judged steps, B's signature, and the events that record them.

    Each step Decision (``bisect step i of ~n: …`` with its ``verdict …`` reason) is paired with
    the run config in effect when it ran (the last ``RunConfigSet`` before it); the config tells
    which of B's variables the step took. Only ``good``/``bad`` verdicts are kept (a drift or an
    error stopped that search: the step is run again). Raises UsageError when a recorded config is
    not G plus some of B's variables (the recording is of another bisect).
    """
    import msgspec

    from .. import events as ev
    from .config import RunConfig, variables

    trials: list[Trial] = []
    target, cfg, cfg_event = "", None, None
    kept: list[Any] = []
    for e in events:
        if isinstance(e, ev.RunConfigSet) and e.config:
            cfg, cfg_event = e.config, e
            continue
        if not isinstance(e, ev.Decision):
            continue
        m, v = STEP.match(e.action), VERDICT.match(e.reason)
        if not m or not v or cfg is None or v[1] not in (GOOD, BAD):
            continue
        try:
            vals = variables(msgspec.convert(cfg, RunConfig))
        except msgspec.ValidationError as exc:
            raise UsageError(f"the recording's run config is not readable: {exc}") from None
        taken = []
        for k, want in changes.items():
            if vals.get(k) == want:
                taken.append(k)
            elif vals.get(k) != good_values.get(k):
                raise UsageError(
                    f"the recording is of another bisect: its step {m[1]} ran {k}={_show(vals.get(k))}, "
                    f"neither good's {_show(good_values.get(k))} nor bad's {_show(want)}"
                )
        sig = e.reason.partition("; signature: ")[2]
        if v[1] == BAD and sig and not target:
            target = sig
        trials.append(
            Trial(
                step=int(m[1]),
                purpose=m[3],
                taken=tuple(taken),
                verdict=v[1],
                passed=int(v[4]),
                reproduced=int(v[2]),
                repeats=int(v[3]),
                signatures=[sig] * int(v[2]) if sig else [],
            )
        )
        kept += [x for x in (cfg_event, e) if x is not None and not any(x is y for y in kept)]
    return trials, target, kept


def abort_line(b: Bisector) -> str:
    """What an interrupted bisect knows: its runs, the candidates left, the verdicts so far."""
    cands = ", ".join(f"{k}={_show(b.changes[k])}" for k in b.candidates)
    judged = "; ".join(f"{t.purpose}: {t.verdict}" for t in b.trials) or "none"
    return (
        f"interrupted after {len(b.trials)} judged run(s); the culprit is among {len(b.candidates)} "
        f"candidate(s): {{{cands}}}; judged: {judged}"
    )

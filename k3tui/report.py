"""The human and tabular parts of a repro package, built from the event stream alone.

A platform team acts on a repro package without k3tui, so everything in it is plain
text: ``REPORT.md`` (the story), ``checklist.md``, ``changes.csv``, ``first-error.txt``,
``launch.sh``, ``request.json``, ``fingerprint.json``. Every one of them is derived from the
recorded events (the same stream replay folds), never from a live host, so a package
exported today from last night's recording says exactly what happened last night.
This module holds the facts and the small files; :mod:`k3tui.report_md` renders
``REPORT.md`` from the same facts.

Why it is shaped this way:

- :class:`Collector` is fed one (already redacted) event at a time by the export's single
  pass: it folds :class:`~k3tui.state.SessionState` and keeps every event *except* output
  chunks (those go to the per-run logs and the cast as they stream), so memory is bounded
  by the number of facts, not by the size of the logs.
- Text from the host is **untrusted**: in Markdown it goes into fenced blocks (the fence
  is longer than any backtick run inside) or is backslash-escaped, so a hostile log line
  cannot inject links, images or HTML into a rendered report; every text goes through
  :func:`~k3tui.textsafe.neutralise`, so ``cat REPORT.md`` cannot retitle a terminal;
  CSV cells that a spreadsheet would run as formulas get a leading ``'``.
- ``launch.sh`` is written for *reading*: it says so, is archived without an execute
  bit, and k3tui never runs it. It holds the minimal launch command exactly as the run
  recorded it, with its environment, secrets already masked.
- The ladder's vocabulary is taken from the events as recorded: baseline checks are
  ``CheckVerdict`` with ``rung="baseline"``, the deliverable checklist ``rung="checklist"``,
  the stop conditions ``rung="stop"``; verdicts are shown as the ladder gave them.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from . import events as ev
from .redact import MASK, shown
from .state import SessionState, reduce
from .textsafe import neutralise

TIMELINE_MAX = 400
TIMELINE_KINDS = ev.MARKER_KINDS | {
    "run_started",
    "run_ended",
    "run_classified",
    "run_config",
    "decision",
    "notice",
    "host_connected",
    "host_disconnected",
    "host_reconnected",
    "xid",
}
REQUEST_PATHS = ("/v1/chat/completions", "/v1/completions")


# --- collecting -----------------------------------------------------------------------


@dataclass
class LogFile:
    """One run's server log as archived in the package."""

    name: str
    bytes: int = 0
    lines: int = 0


@dataclass
class Collector:
    """Everything the report needs, gathered in one pass over redacted events."""

    header: ev.Header
    session_name: str = "session.k3rec"
    state: SessionState = field(default_factory=SessionState)
    facts: list[ev.AnyEvent] = field(default_factory=list)
    logs: dict[tuple[str, str], LogFile] = field(default_factory=dict)
    """(host, run id) → its archived server log."""
    chain: str = ""
    """The result of verifying the session's digest chain at export."""
    problems: list[str] = field(default_factory=list)
    re_redacted: int = 0
    """Events the export's redactor changed (0 for any recording made by a sound recorder)."""

    first_log_lines: dict[str, ev.Output] = field(default_factory=dict)
    """The first server-log output of each run (what the checklist needs to see a log was kept)."""

    def add(self, e: ev.AnyEvent) -> None:
        reduce(self.state, e)
        if not isinstance(e, ev.Output):
            self.facts.append(e)
        elif e.stream == "log" and e.id not in self.first_log_lines:
            self.first_log_lines[e.id] = e

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.facts if isinstance(e, kind)]

    def run_started(self) -> dict[str, ev.RunStarted]:
        """The server runs, by id, in start order (GPU sampler runs, ``gpu…``, are not servers)."""
        out: dict[str, ev.RunStarted] = {}
        for e in self.of(ev.RunStarted):
            if not e.run.startswith("gpu"):
                out.setdefault(e.run, e)
        return out

    def configs(self) -> list[tuple[ev.RunConfigSet, str]]:
        """Each run config with the server run it applied to ("" when no run followed it).

        A config applies to the next run started after it (the ladder records it under the
        id it *expects*, e.g. ``r3`` for ``r3-minimal``), or to an already started run of
        exactly its ``run`` id.
        """
        started: set[str] = set()
        pairs: list[list[Any]] = []
        pending: list[int] = []
        for e in self.facts:
            if isinstance(e, ev.RunConfigSet):
                pairs.append([e, e.run if e.run in started else ""])
                if e.run not in started:
                    pending.append(len(pairs) - 1)
            elif isinstance(e, ev.RunStarted) and not e.run.startswith("gpu"):
                started.add(e.run)
                for i in pending:
                    pairs[i][1] = e.run
                pending = []
        return [(e, run) for e, run in pairs]

    def config_of(self) -> dict[str, ev.RunConfigSet]:
        """The config each server run ran with: its own, else the latest one before it."""
        own = {run: e for e, run in self.configs() if run}
        out: dict[str, ev.RunConfigSet] = {}
        latest: ev.RunConfigSet | None = None
        for e in self.facts:
            if isinstance(e, ev.RunConfigSet):
                latest = e
            elif isinstance(e, ev.RunStarted) and not e.run.startswith("gpu"):
                cfg = own.get(e.run, latest)
                if cfg is not None:
                    out[e.run] = cfg
        return out


# --- text safety --------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|!#~&])")


def md(text: Any) -> str:
    """Untrusted text as inline Markdown: one line, neutralised, every active character escaped."""
    s = neutralise(str(text)).replace("\r", "").replace("\n", " ⏎ ")
    return _MD_SPECIAL.sub(r"\\\1", s)


def fenced(text: str, lang: str = "") -> str:
    """Untrusted text as a fenced code block whose fence no backtick run inside can close."""
    body = neutralise(text).replace("\r", "")
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{body.rstrip()}\n{fence}"


def csv_cell(value: Any) -> str:
    """A CSV cell a spreadsheet will not evaluate (OWASP: leading = + - @ tab CR)."""
    s = neutralise("" if value is None else str(value)).replace("\r", "")
    if s and s[0] in "=+-@\t" and not _is_number(s):
        return "'" + s
    return s


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


# --- the pieces ---------------------------------------------------------------------------


def minimal_run(c: Collector) -> ev.RunStarted | None:
    """The minimal launch: the first run of the ``minimal`` rung, else the first server run."""
    runs = list(c.run_started().values())
    for r in runs:
        view = c.state.runs.get(r.run)
        if "minimal" in (r.rung or (view.rung if view else "")) or r.run.endswith("-minimal"):
            return r
    return runs[0] if runs else None


def run_env(c: Collector, run: ev.RunStarted) -> dict[str, str]:
    """A run's environment: as started, else from its run config."""
    if run.env:
        return dict(run.env)
    config = c.config_of().get(run.run)
    env = (config.config if config else {}).get("env") or {}
    return {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}


def launch_sh(c: Collector) -> str | None:
    """``launch.sh``: the minimal command exactly as run, env included, for reading."""
    run = minimal_run(c)
    if run is None:
        return None
    lines = [
        "#!/bin/sh",
        "# k3tui repro package: the minimal launch command EXACTLY as it was run.",
        "# Written for reading and for a platform engineer to run by hand on an isolated node;",
        "# k3tui never executes it. Secrets were masked as <redacted> (deliberately not valid sh):",
        "# fill them in yourself before running it.",
        f"# run {_comment(run.run)} rung {_comment(run.rung or '-')} host {_comment(run.host or c.header.host or '-')}"
        f" at t={run.t:.3f}s of session {_comment(c.header.session_id)}",
    ]
    if run.run_dir:
        lines.append(f"# run directory on the host: {_comment(run.run_dir)}")
    for k, v in sorted(run_env(c, run).items()):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
            lines.append(f"# (env name not valid in sh) {_comment(k)}={_comment(v)}")
        elif v == MASK:  # left bare on purpose: not valid sh, so it cannot run with a placeholder secret
            lines.append(f"export {k}={MASK}")
        else:
            lines.append(f"export {k}={shlex.quote(neutralise(v))}")
    lines.append(neutralise(run.command))
    return "\n".join(lines) + "\n"


def _comment(s: str) -> str:
    return neutralise(str(s)).replace("\n", " ").replace("\r", " ")


def fixed_request(c: Collector) -> ev.HttpRequest | None:
    """The fixed request: the first completion request sent (single-request rung first)."""
    reqs = [r for r in c.of(ev.HttpRequest) if r.url.split("?")[0].endswith(REQUEST_PATHS)]
    return reqs[0] if reqs else None


def request_json(c: Collector) -> str | None:
    req = fixed_request(c)
    if req is None:
        return None
    try:
        return json.dumps(json.loads(req.body), indent=2, ensure_ascii=False) + "\n"
    except ValueError:
        return req.body if req.body.endswith("\n") else req.body + "\n"


@dataclass
class Failure:
    """The session's root failure, from a ladder run or from the log found at freeze time."""

    source: str
    run: str
    host: str
    stage: str
    line: str
    line_number: int
    stack: list[str]
    process: str
    signature: str
    advice: str = ""
    oom_root_cause: bool | None = None


def root_failure(c: Collector) -> Failure | None:
    """The first root exception of a run, else the one a frozen scene found in the server log."""
    x = c.state.first_exception
    if x is not None:
        cls = _classified(c, x.run)
        return Failure(
            f"run {x.run}",
            x.run,
            x.host or c.header.host,
            x.stage,
            x.line,
            x.line_number,
            list(x.stack),
            x.process or "",
            x.signature or (cls.signature if cls else ""),
            cls.advice if cls else "",
            x.oom_root_cause,
        )
    for s in c.state.scenes:
        fe = s.scene.get("first_exception") if isinstance(s.scene, dict) else None
        if isinstance(fe, dict) and fe.get("line"):
            where = s.scene.get("log_source") or "the server log"
            return Failure(
                f"{where} at freeze (t={s.t:.1f}s)",
                s.run,
                s.host or c.header.host,
                str(fe.get("stage") or "unknown"),
                str(fe["line"]),
                int(fe.get("line_number") or 0),
                [str(x) for x in fe.get("stack") or []],
                str(fe.get("process") or ""),
                str(fe.get("signature") or ""),
                str(fe.get("advice") or ""),
                fe.get("oom_root_cause") if isinstance(fe.get("oom_root_cause"), bool) else None,
            )
    return None


def first_error_txt(c: Collector) -> str:
    """``first-error.txt``: the first root exception with its full stack."""
    f = root_failure(c)
    if f is None:
        return "No root exception was found in this session.\n" + classified_lines(c)
    # "name value" columns, no colon: "signature: X" reads as a secret assignment to the redactor.
    head = [
        f"found in    {f.source}",
        f"host        {f.host or '-'}",
        f"stage       {f.stage}",
        f"process     {f.process or '-'}",
        f"log line    {f.line_number}",
        f"signature   {f.signature or '-'}",
        f"oom         {_oom_words(f.oom_root_cause)}",
        f"error       {f.line}",
    ]
    if f.advice:
        head.append(f"next        {f.advice}")
    stack = "\n".join(f.stack) if f.stack else f.line
    return neutralise("\n".join(head) + "\n\n" + stack.rstrip("\n") + "\n")


def _oom_words(root: bool | None) -> str:
    """What the classifier said about an out-of-memory error, in words (never ``None``)."""
    if root is None:
        return "not an out-of-memory failure"
    return "out of memory is the root cause" if root else "out of memory, a consequence of an earlier error"


def _classified(c: Collector, run: str) -> ev.RunClassified | None:
    r = c.state.runs.get(run)
    return r.classified if r else None


def classified_lines(c: Collector) -> str:
    out = [f"run {r.run}: failed stage {r.classified.failed_stage}" for r in c.state.runs.values() if r.classified]
    return neutralise("\n".join(out) + "\n") if out else ""


# --- single-variable changes --------------------------------------------------------------


@dataclass
class Change:
    """One row of the change table."""

    run: str
    t: float
    rung: str
    diff: list[dict[str, Any]]
    result: str
    signature: str
    reproduced: int
    repeats: int
    drift: bool
    decision: str
    config: dict[str, Any] = field(default_factory=dict)
    start: bool = False
    """The first config of the session: where the ladder starts, not a change."""

    @property
    def changed(self) -> list[dict[str, Any]]:
        """The variables this row changed (none for the starting config)."""
        return [] if self.start else self.diff

    @property
    def what(self) -> str:
        return "(starting config)" if self.start else diff_text(self.diff)


def _config_key(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True, default=str)


def run_result(c: Collector, run: str) -> tuple[str, str]:
    """(result, signature) of a run, from the classifier's word and the first exception."""
    r = c.state.runs.get(run) if run in c.run_started() else None
    if r is None:
        return "not run", ""
    if r.classified is not None:
        k = r.classified
        if k.failed_stage in ("none", ""):
            return "ok (no failure)", k.signature or "none"
        what = k.exception or (r.exception.line if r.exception else "")
        return f"FAILED at {k.failed_stage}: {what}".strip(), k.signature or (
            r.exception.signature if r.exception else ""
        )
    if r.exception is not None:
        return f"FAILED at {r.exception.stage}: {r.exception.line}", r.exception.signature
    if r.ended is not None:
        return f"ended ({r.end_reason or 'exited'} status {r.status}), no exception seen", "none"
    return f"no verdict (last stage {r.stage or '-'})", ""


def _context(c: Collector) -> list[tuple[list[ev.Decision], str]]:
    """For each run config in order: the decisions that led to it, and the rung it was set in.

    A decision belongs to the next config when no server run started in between (the
    ladder records an override or a revert right before the config it causes; a
    "restart" decision before a run start belongs to that run, not to the next change).
    """
    out: list[tuple[list[ev.Decision], str]] = []
    recent: list[ev.Decision] = []
    rung = ""
    for e in c.facts:
        if isinstance(e, ev.Decision):
            recent.append(e)
        elif isinstance(e, ev.RunStarted):
            recent = []
        elif isinstance(e, ev.RungEntered):
            rung = e.rung
        elif isinstance(e, ev.RungLeft) and e.rung == rung:
            rung = ""
        elif isinstance(e, ev.RunConfigSet):
            out.append((recent, rung))
            recent = []
    return out


def changes(c: Collector) -> list[Change]:
    """The single-variable change table, one row per run config, with k/K per config."""
    config_of = {run: _config_key(e.config) for run, e in c.config_of().items()}
    started = c.run_started()
    rows: list[Change] = []
    for i, ((e, run), (why, rung)) in enumerate(zip(c.configs(), _context(c), strict=True)):
        result, sig = run_result(c, run)
        if not run and rung in c.state.rungs:  # e.g. concurrency: a client-side change, no restart
            view = c.state.rungs[rung]
            result = f"no new server run; rung {rung}: {view.verdict or view.state}"
        key = _config_key(e.config)
        sigs = [run_result(c, r)[1] for r, k in config_of.items() if k == key and _finished(c, r)]
        rows.append(
            Change(
                run=run,
                t=e.t,
                rung=started[run].rung if run in started else rung,
                diff=list(e.diff),
                result=result,
                signature=sig,
                reproduced=sum(1 for x in sigs if x == sig) if run else 0,
                repeats=len(sigs) if run else 0,
                drift=len(set(sigs)) > 1 if run else False,
                decision="; ".join(f"{d.action}: {d.reason}" for d in why),
                config=dict(e.config),
                start=i == 0,
            )
        )
    return rows


def _finished(c: Collector, run: str) -> bool:
    r = c.state.runs[run]
    return r.classified is not None or r.exception is not None or r.ended is not None


def diff_text(diff: list[dict[str, Any]]) -> str:
    if not diff:
        return "(no change)"
    return "; ".join(
        f"{d.get('key')}: {shown(str(d.get('key')), d.get('old'))} → {shown(str(d.get('key')), d.get('new'))}"
        for d in diff
    )


def changes_csv(rows: list[Change]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        [
            "run",
            "t",
            "rung",
            "variables_changed",
            "diff",
            "result",
            "reproduced",
            "repeats",
            "drift",
            "signature",
            "decision",
            "config",
        ]
    )
    for r in rows:
        w.writerow(
            [
                csv_cell(x)
                for x in (
                    r.run,
                    f"{r.t:.3f}",
                    r.rung,
                    len(r.changed),
                    r.what,
                    r.result,
                    r.reproduced,
                    r.repeats,
                    "DRIFT" if r.drift else "",
                    r.signature,
                    r.decision,
                    json.dumps(r.config, sort_keys=True, default=str),
                )
            ]
        )
    return buf.getvalue()


# --- checks, checklist, stop conditions -------------------------------------------------


def checks_of(c: Collector, rung: str) -> list[ev.CheckVerdict]:
    return [v for (r, _), v in c.state.checks.items() if r == rung]


def checklist_md(c: Collector) -> str:
    """The deliverable checklist as the session's screen showed it (recorded, else evaluated from its events)."""
    from .ladder.checklist import session_checklist

    recorded = checks_of(c, "checklist")
    items = session_checklist(recorded, [*c.facts, *c.first_log_lines.values()])
    out = [f"# Deliverable checklist — session {md(c.header.session_id)}", ""]
    if not recorded:
        out.append("Evaluated at export from the session's events (this session recorded no checklist).")
        out.append("")
    done = sum(v.verdict == "PASS" for v in items)
    out.append(f"{done} of {len(items)} done.")
    out.append("")
    for v in items:
        box = "x" if v.verdict == "PASS" else " "
        out.append(
            f"- [{box}] **{md(v.title or v.check)}** ({md(_checklist_verdict(v.verdict))}) — "
            f"{md(v.evidence) or 'no evidence recorded'}"
        )
    return "\n".join(out) + "\n"


def _checklist_verdict(verdict: str) -> str:
    """PASS and UNKNOWN as recorded; FAIL is an item not done yet, and says so."""
    return "not done yet" if verdict.upper() == "FAIL" else verdict


# --- fingerprint ---------------------------------------------------------------------------


def fingerprint_json(c: Collector) -> str:
    scene = c.state.scene or {}
    return json.dumps(scene, indent=2, ensure_ascii=False, default=str, sort_keys=False) + "\n"

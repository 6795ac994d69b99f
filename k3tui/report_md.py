"""``REPORT.md``: the whole story of a session for a human on the platform team.

Built only from :class:`k3tui.report.Collector` (the facts of one pass over the redacted
event stream); the pieces that are also files of their own (first error, checklist,
changes, launch command, request) come from :mod:`k3tui.report`, so the report and those
files can never disagree. Sections appear in the order an engineer reads a repro: where,
what is compatible, how it was launched, what failed first, what was changed one
variable at a time, what is still open, and the timeline. Untrusted text is escaped or
fenced by :func:`k3tui.report.md` / :func:`k3tui.report.fenced`; a section with nothing
recorded says so instead of vanishing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from . import events as ev
from .report import (
    TIMELINE_KINDS,
    TIMELINE_MAX,
    Collector,
    changes,
    checklist_md,
    checks_of,
    classified_lines,
    fenced,
    fixed_request,
    md,
    minimal_run,
    request_json,
    root_failure,
    run_env,
    run_result,
)
from .textsafe import neutralise


def _utc(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts)) if ts else "unknown"


def _table(head: list[str], rows: Iterable[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _verdict_table(items: list[ev.CheckVerdict]) -> str:
    rows = [[md(v.title or v.check), f"**{md(v.verdict)}**", md(v.evidence)] for v in items]
    return _table(["check", "verdict", "evidence"], rows)


# --- fingerprint -------------------------------------------------------------------------

_FACTS = [
    ("hostname", "host.hostname"),
    ("OS", "host.os"),
    ("kernel", "host.kernel"),
    ("NVIDIA driver", "host.driver_version"),
    ("CUDA driver", "host.cuda_driver_version"),
    ("container", "container.name"),
    ("image", "container.image"),
    ("image id", "container.image_id"),
    ("repo digests", "container.repo_digests"),
    ("Python", "versions.python"),
    ("PyTorch", "versions.torch"),
    ("PyTorch CUDA", "versions.torch_cuda"),
    ("vLLM", "versions.vllm"),
    ("NCCL", "versions.nccl"),
    ("loaded libcuda", "libcuda.path"),
    ("libcuda version", "libcuda.version"),
]


def _get(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _show(v: Any) -> str:
    if v is None or v == "" or v == []:
        return "unknown"
    if isinstance(v, (list, dict)):
        return json.dumps(v, ensure_ascii=False, default=str)
    return str(v)


def fingerprint_md(scene: dict[str, Any]) -> str:
    rows = [[k, md(_show(_get(scene, path)))] for k, path in _FACTS]
    raw = scene.get("gpus")
    gpus: list[Any] = raw if isinstance(raw, list) else []
    rows.insert(5, ["GPUs", md(_gpu_summary(gpus))])
    out = [_table(["fact", "value"], rows)]
    if gpus:
        head = ["index", "name", "UUID", "memory used/total MiB"]
        grows = [
            [
                md(_show(g.get("index"))),
                md(_show(g.get("name"))),
                md(_show(g.get("uuid"))),
                md(f"{_show(g.get('memory_used_mib'))}/{_show(g.get('memory_total_mib'))}"),
            ]
            for g in gpus
            if isinstance(g, dict)
        ]
        out += ["", _table(head, grows)]
    env = scene.get("env")
    if isinstance(env, dict) and env:
        out += [
            "",
            "Environment (secrets masked):",
            "",
            _table(["variable", "value"], [[md(k), md(v)] for k, v in sorted(env.items())]),
        ]
    probes = [p for p in scene.get("probes") or [] if isinstance(p, dict) and not p.get("ok", True)]
    if probes:
        out += [
            "",
            "Probes that failed (their facts are unknown): "
            + ", ".join(md(f"{p.get('name')}: {p.get('error')}") for p in probes),
        ]
    return "\n".join(out)


def _gpu_summary(gpus: list[Any]) -> str:
    names = sorted({str(g.get("name")) for g in gpus if isinstance(g, dict)})
    return f"{len(gpus)} × {', '.join(names)}" if gpus else "unknown"


def report_md(c: Collector, files: list[str]) -> str:
    """``REPORT.md``: the whole story for a human, section by section."""
    sections: list[tuple[str, str]] = [
        ("Environment fingerprint", _fingerprint_section(c)),
        ("Compatibility verdicts (baseline)", _checks_section(c, "baseline")),
        ("Minimal launch command", _launch_section(c)),
        ("Fixed request", _request_section(c)),
        ("First failure", _failure_section(c)),
        ("Runs", _runs_section(c)),
        ("Ladder rungs", _rungs_section(c)),
        ("Single-variable changes", _changes_section(c)),
        ("Bisect walk", _bisect_section(c)),
        ("Other checks", _other_checks_section(c)),
        ("Deliverable checklist", checklist_md(c).split("\n", 2)[2].strip()),
        ("Stop conditions", _checks_section(c, "stop")),
        ("Operator notes and decisions", _notes_section(c)),
        ("GPU memory", _gpu_section(c)),
        ("Timeline", _timeline_section(c)),
        ("Files in this package", _files_section(files)),
    ]
    out = [_intro(c)]
    for i, (title, body) in enumerate(sections, start=1):
        out.append(f"## {i}. {title}\n\n{body.strip() or '_Nothing recorded._'}")
    return "\n\n".join(out) + "\n"


def _intro(c: Collector) -> str:
    h = c.header
    sim = (
        "\n\n> **SIMULATED host**: this session ran against k3tui's embedded simulator, not a real GPU host.\n"
        if (h.simulated or c.state.simulated)
        else ""
    )
    x = root_failure(c)
    verdict = f"first failure at stage **{md(x.stage)}**: `{_code(x.line)}`" if x else "no root exception recorded"
    lines = [
        f"# Repro package — session {md(h.session_id)}",
        "",
        f"- host: {md(h.host or '-')} · profile: {md(h.profile or '-')} · started {_utc(h.started)} · duration {c.state.t:.1f}s",
        f"- recorded by k3tui {md(h.k3tui_version or '?')}; {c.state.events} events; {_count(len(c.run_started()), 'server run')}; {verdict}",
        f"- session chain at export: {md(c.chain or 'not checked')}",
    ]
    if c.problems:
        lines.append(f"- **damaged lines skipped**: {md('; '.join(c.problems[:5]))}")
    if c.re_redacted:
        lines.append(
            f"- **{c.re_redacted} events held secrets the recorder missed**: they were masked at export and "
            f"`{c.session_name}` was re-sealed (its chain starts afresh; the original file was not copied)."
        )
    return "\n".join(lines) + sim


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _code(s: str) -> str:
    return neutralise(s).replace("`", "'").replace("\n", " ")[:300]


def _span(s: str) -> str:
    """A code span that is safe in a table cell too (GFM splits cells on ``|`` even inside code)."""
    return "`" + _code(s).replace("|", "\\|") + "`"


def _fingerprint_section(c: Collector) -> str:
    if not c.state.scenes:
        return "No scene was frozen in this session."
    latest: dict[str, ev.SceneFrozen] = {}
    for s in c.state.scenes:
        latest[s.host] = s
    parts = []
    for host, s in latest.items():
        title = f"Scene of {md(host or c.header.host or 'the host')} frozen at t={s.t:.1f}s ({md(s.reason or '-')})"
        parts.append(f"{title}; `fingerprint.json` holds the last scene in full.\n\n{fingerprint_md(s.scene)}")
    return "\n\n".join(parts)


def _checks_section(c: Collector, rung: str) -> str:
    items = checks_of(c, rung)
    return _verdict_table(items) if items else ""


def _launch_section(c: Collector) -> str:
    run = minimal_run(c)
    if run is None:
        return "No server was started in this session."
    env = run_env(c, run)
    env_txt = "\n".join(f"{k}={v}" for k, v in sorted(env.items()))
    body = f"Run `{_code(run.run)}` (rung {md(run.rung or '-')}), as run — also in `launch.sh`:\n\n"
    return body + fenced((env_txt + "\n" if env_txt else "") + run.command, "sh")


def _request_section(c: Collector) -> str:
    req = fixed_request(c)
    if req is None:
        return "No completion request was sent in this session (so there is no `request.json`)."
    resp = c.state.responses.get(req.id)
    got = (
        f"answered {resp.status} in {resp.duration * 1000:.0f} ms {md(resp.error)}" if resp else "no response recorded"
    )
    n = sum(1 for r in c.of(ev.HttpRequest) if r.url == req.url and r.body == req.body)
    return f"`{req.method} {_code(req.url)}` sent {n}× (first {got}); in `request.json`:\n\n" + fenced(
        request_json(c) or "", "json"
    )


def _failure_section(c: Collector) -> str:
    from .classify.hostfault import headline

    hw = headline(c.state)  # issue 14: a host fault is the root / stops the ladder: say so first
    body = _exception_section(c)
    if not hw:
        return body
    body = body.replace("- what to try next at this layer:", "- only once the hardware is fixed, at this layer:")
    return "\n".join(f"- **{md(x)}**" for x in hw) + "\n\n" + body


def _exception_section(c: Collector) -> str:
    f = root_failure(c)
    if f is None:
        return "No root exception was found." + ("\n\n" + fenced(classified_lines(c)) if classified_lines(c) else "")
    lines = [
        f"- first failing stage: **{md(f.stage)}** (found in {md(f.source)}, host {md(f.host or '-')}, "
        f"process {md(f.process or '-')}, log line {f.line_number})",
        f"- root exception `{_code(f.line)}`",
        f"- signature {_span(f.signature or '-')}",
    ]
    if f.advice:
        lines.append(f"- what to try next at this layer: {md(f.advice)}")
    if c.state.first_exception is None:
        lines.append("- no ladder run reproduced it in this session (see the rungs and stop conditions below)")
    return (
        "\n".join(lines) + "\n\nStack (also in `first-error.txt`):\n\n" + fenced("\n".join(f.stack) or f.line, "text")
    )


def _runs_section(c: Collector) -> str:
    rows = []
    for rid in c.run_started():
        r = c.state.runs[rid]
        result, sig = run_result(c, r.run)
        logs = [f"{i.name} ({i.lines} lines)" for (_, rid), i in c.logs.items() if rid == r.run]
        rows.append(
            [
                md(r.run),
                md(r.rung or "-"),
                md(r.host or "-"),
                md(r.stage or "-"),
                md(result),
                _span(sig or "-"),
                md(", ".join(logs)) if logs else "no output recorded",
            ]
        )
    return _table(["run", "rung", "host", "last stage", "result", "signature", "log"], rows) if rows else ""


def _rungs_section(c: Collector) -> str:
    rows = []
    for r in c.state.rungs.values():
        rep = f"{r.reproduced}/{r.repeats}" if r.repeats else "-"
        rows.append([md(r.name), md(r.verdict or r.state), str(r.attempts), rep, md(r.summary)])
    return _table(["rung", "verdict", "attempts", "reproduced k/K", "summary"], rows) if rows else ""


def _changes_section(c: Collector) -> str:
    rows = []
    for ch in changes(c):
        warn = " **MORE THAN ONE VARIABLE**" if len(ch.changed) > 1 else ""
        rep = (f"{ch.reproduced}/{ch.repeats}" if ch.repeats else "-") + (" **DRIFT**" if ch.drift else "")
        rows.append(
            [md(ch.run or "-"), md(ch.what) + warn, md(ch.result), rep, _span(ch.signature or "-"), md(ch.decision)]
        )
    if not rows:
        return ""
    note = "k/K: runs with this exact config whose failure signature matches this run's (also in `changes.csv`)."
    return _table(["run", "change", "result", "reproduced k/K", "signature", "decision"], rows) + "\n\n" + note


def _bisect_section(c: Collector) -> str:
    """Issue 20: every bisect step (what ran, its verdict, k/K) and the answer."""
    from .ladder.bisect import walk

    rows, answer = walk(list(c.state.decisions))
    if not rows:
        return ""
    body = [[str(r.step), md(r.purpose), md(r.verdict), r.reproduced, r.passed] for r in rows]
    table = _table(["step", "configuration (G plus variables of B)", "verdict", "reproduced k/K", "passed"], body)
    return table + (f"\n\n**{md(answer)}**" if answer else "")


def _other_checks_section(c: Collector) -> str:
    rungs = sorted({r for r, _ in c.state.checks} - {"baseline", "checklist", "stop"})
    parts = [f"**{md(r)}**\n\n{_verdict_table(checks_of(c, r))}" for r in rungs]
    return "\n\n".join(parts)


def _notes_section(c: Collector) -> str:
    items: list[ev.AnyEvent] = [*c.state.notes, *c.state.decisions, *c.state.markers]
    items.sort(key=lambda e: e.t)
    lines = [f"- t={e.t:.1f}s {md(ev.summary(e, 400))}" for e in items]
    return "\n".join(lines)


def _gpu_section(c: Collector) -> str:
    seen: dict[tuple[str, int], list[float]] = {}
    for s in c.of(ev.GpuSample):
        for g in s.gpus:
            seen.setdefault((s.host, g.index), []).append(g.used_mib)
    rows = [
        [md(h or "-"), str(i), f"{v[0]:.0f}", f"{max(v):.0f}", f"{v[-1]:.0f}", str(len(v))]
        for (h, i), v in sorted(seen.items())
    ]
    return _table(["host", "GPU", "first MiB", "max MiB", "last MiB", "samples"], rows) if rows else ""


def _timeline_section(c: Collector) -> str:
    items = [e for e in c.facts if ev.kind_of(e) in TIMELINE_KINDS]
    rows = [[f"{e.t:.3f}", md(e.host or "-"), md(ev.kind_of(e)), md(ev.summary(e, 200))] for e in items[:TIMELINE_MAX]]
    more = (
        f"\n\n… and {len(items) - TIMELINE_MAX} more: see `k3tui cat session.k3rec`."
        if len(items) > TIMELINE_MAX
        else ""
    )
    return (_table(["t (s)", "host", "kind", "what"], rows) + more) if rows else ""


def _files_section(files: list[str]) -> str:
    lines = [f"- `{f}`" for f in files]
    lines += [
        "",
        "Check the package with `k3tui verify PACKAGE` (manifest and the session's digest chain) or, without k3tui, "
        "`sha256sum -c MANIFEST.sha256` inside the extracted folder. The manifest detects damage and edits made "
        "without updating it; it is not a signature. Replay with `k3tui replay session.k3rec`; play the log with "
        "`asciinema play session.cast`.",
    ]
    return "\n".join(lines)

"""The rungs' bodies: what each attempt does, which checks it records, and how attempts become a verdict.

Each attempt returns an :class:`~k3tui.ladder.server.Outcome` whose ``signature`` is the
failure signature ("" when clean). The verdict over K attempts comes from the
classifier's :func:`~k3tui.classify.reproduction`: "reproduced k/K", and DRIFT when the
signature changed. Checks are recorded as ``CheckVerdict(rung=…)`` with their evidence as
the operator would read it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Protocol

from .. import events as ev
from ..assets import asset
from ..classify import reproduction
from ..errors import UsageError
from ..gpu import total_used
from ..http import Chat, metric_delta
from .config import changes_from_args
from .ledger import ConfigLedger
from .server import Outcome, RungResult, Server


class LadderEngine(Protocol):
    """What the rungs use of :class:`~k3tui.ladder.engine.LadderEngine`.

    A Protocol, not an import: the engine imports this module to dispatch its rungs, so the
    rungs naming the engine's class would close an import circle (tests/test_import_hygiene.py).
    """

    profile: Any
    head: Any
    hosts: list[Any]
    ledger: ConfigLedger
    server: Server | None
    samplers: dict[str, Any]
    events: list[Any]
    ready_timeout: float

    @property
    def request_repeat(self) -> int: ...

    @property
    def config(self) -> Any: ...
    def emit(self, event: Any) -> Any: ...
    def preview_change(self, changes: dict[str, Any]) -> list[dict[str, Any]]: ...
    def apply_change(self, changes: dict[str, Any], reason: str | None = None) -> list[dict[str, Any]]: ...
    def revert(self, reason: str = "") -> list[dict[str, Any]]: ...
    async def launch(self, rung: str) -> Server: ...
    async def ensure_server(self, rung: str) -> Server: ...
    async def stop_server(self, reason: str = "") -> None: ...
    async def freeze_all(self, reason: str, run: Server | None = None) -> dict[str, Any]: ...
    async def probe_live_inference(self) -> None: ...


GROWTH_MIB = 64.0
"""GPU memory that rises by more than this after every request counts as still rising."""


def verdict(name: str, outcomes: list[Outcome]) -> RungResult:
    """PASS / FAIL / DRIFT / ERROR over the attempts of one rung."""
    K = len(outcomes)
    errors = [o for o in outcomes if o.error]
    if errors:
        return RungResult(name, "ERROR", errors[-1].summary, 0, K, outcomes)
    k, K, drift, distinct = reproduction([o.signature if not o.ok else "" for o in outcomes])
    if drift:
        return RungResult(
            name,
            "DRIFT",
            f"DRIFT: the failure changed between attempts ({' ≠ '.join(distinct)}); reproduced {k}/{K}",
            k,
            K,
            outcomes,
        )
    if k == 0:
        clean = f" ({K}/{K} attempts clean)" if K > 1 else ""
        return RungResult(name, "PASS", outcomes[-1].summary + clean, 0, K, outcomes)
    first = next(o for o in outcomes if not o.ok)
    summary = f"reproduced {k}/{K}: {first.summary}" if K > 1 else first.summary
    return RungResult(name, "FAIL", summary, k, K, outcomes)


async def run(engine: LadderEngine, name: str, attempt: int, repeat: int) -> Outcome:
    """Dispatch one attempt of a rung."""
    if name == "baseline":
        return await baseline(engine)
    if name == "minimal":
        return await minimal(engine, last=attempt == repeat)
    if name == "request":
        return await single_request(engine)
    feature = engine.profile.feature(name)
    if feature.check == "prefix-cache-hits":
        return await prefix_caching(engine, feature)
    if feature.client_concurrency:
        return await concurrency(engine, feature)
    return await stepped_feature(engine, feature)


def _check(engine: LadderEngine, rung: str, check: str, verdict: str, evidence: str, title: str = "") -> None:
    engine.emit(
        ev.CheckVerdict(host=engine.head.alias, rung=rung, check=check, verdict=verdict, evidence=evidence, title=title)
    )


# --- 1 baseline -----------------------------------------------------------------------------


async def baseline(engine: LadderEngine) -> Outcome:
    """Freeze every host and check the scenes against the profile (the freeze issue's checks)."""
    from ..scene.checks import check_baseline

    await engine.probe_live_inference()
    scenes = await engine.freeze_all(reason="baseline")
    if not scenes:
        return Outcome(False, "no scene could be frozen", error=True)
    verdicts = check_baseline([scenes[h.alias] for h in engine.hosts if h.alias in scenes], engine.profile)
    for v in verdicts:
        engine.emit(v)
    head = scenes.get(engine.head.alias)
    if head is not None:
        engine.config  # noqa: B018 - the starting config exists before facts are folded in
        engine.ledger.observe(driver=head.host.driver_version or "", gpu_count=len(head.gpus) or None)
    failed = sorted(v.check for v in verdicts if v.verdict == "FAIL")
    unknown = [v.check for v in verdicts if v.verdict == "UNKNOWN"]
    if failed:
        return Outcome(
            False, f"baseline checks failed: {', '.join(failed)}", f"baseline|checks|{','.join(failed)}", "baseline"
        )
    tail = f" ({len(unknown)} unknown: {', '.join(unknown)})" if unknown else ""
    return Outcome(True, f"{len(verdicts) - len(unknown)} baseline checks passed{tail}")


# --- 2 minimal launch ------------------------------------------------------------------------


async def minimal(engine: LadderEngine, last: bool = True) -> Outcome:
    """Start the current config fresh; ready when /health answers, failed when the classifier says so."""
    server = await engine.launch("minimal")
    out = await _startup(engine, server, "minimal")
    if out.ok:
        engine.ledger.mark_good()
        if not last:
            await engine.stop_server(reason="next attempt of the minimal launch")
    return out


async def _startup(engine: LadderEngine, server: Server, rung: str) -> Outcome:
    """Record the start-up verdict of a launched server."""
    if server.ready:
        stage = _stage(server)
        _check(
            engine,
            rung,
            "api-ready",
            "PASS",
            f"/health 200 after {server.ready_s:.1f} s through the forwarded port (log stage: {stage})",
            "API ready",
        )
        models = await server.client.models() if server.client else None
        data = ((models.json() or {}).get("data") or []) if models and models.ok else []
        served = [m.get("id") for m in data]
        wrong = _wrong_server(server, data)
        if wrong:
            _check(engine, rung, "same-server", "FAIL", wrong, "The API is the server just started")
            return Outcome(False, f"start-up ambiguous: {wrong}", "api|wrong-server|max_model_len", "api")
        want = engine.profile.launch.model
        if want:
            ok = want in served
            _check(
                engine,
                rung,
                "served-model",
                "PASS" if ok else "FAIL",
                f"/v1/models lists {served or 'nothing'}; expected {want}",
                "Served model name",
            )
        return Outcome(True, f"API ready in {server.ready_s:.1f} s")
    out = server.outcome("start-up")
    if out.ok:  # no root exception: a hang, or a clean exit before ready
        status = await engine.head.run_status(server.handle) if server.handle else None
        why = (
            f"exited with status {status} before /health answered"
            if status is not None
            else f"no /health 200 within {engine.ready_timeout:g} s"
        )
        if server.last_lines:
            why += f"; last log line: {server.last_lines[-1][-200:]}"
        out = Outcome(
            False,
            f"start-up failed: {why}",
            f"{_stage(server)}|no-ready|{'exit' if status is not None else 'timeout'}",
            _stage(server),
        )
    _check(engine, rung, "api-ready", "FAIL", out.summary, "API ready")
    return out


def _wrong_server(server: Server, models: list[Any]) -> str:
    """Why the API answering is not the run just started ("" when it is, or cannot be told)."""
    want = server.config.max_model_len
    have = {int(m["max_model_len"]) for m in models if isinstance(m, dict) and m.get("max_model_len")}
    if want is None or not have or want in have:
        return ""
    return f"/v1/models says max_model_len {sorted(have)} but run {server.run_id} was started with {want}: another process answers on port {server.port}"


def _stage(server: Server) -> str:
    res = server.classifier.result() if server.classifier is not None else None
    stages = getattr(res, "stages", None) or []
    return stages[-1].stage if stages else "none"


# --- 3 single request -------------------------------------------------------------------------


def load_request(name: str) -> dict[str, Any]:
    """A request body from ``assets/requests/`` (or a path)."""
    from pathlib import Path

    path = Path(name) if ("/" in name or Path(name).is_file()) else asset("requests", name)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"request file {name!r} not found ({path})") from None
    except ValueError as exc:
        raise UsageError(f"request file {path}: not valid JSON: {exc}") from None


def _body(engine: LadderEngine, body: dict[str, Any]) -> dict[str, Any]:
    model = engine.profile.launch.model
    return {**body, "model": model} if model else body


async def _sample(engine: LadderEngine) -> float | None:
    """Total GPU memory used on every host right now (MiB), recorded; None without GPUs."""
    totals = [s for s in await asyncio.gather(*(x.sample_once() for x in engine.samplers.values())) if s is not None]
    return sum(total_used(s) for s in totals) if totals else None


async def single_request(engine: LadderEngine) -> Outcome:
    """The fixed request N times: each completes? same output? GPU memory still rising? start-up or runtime?"""
    rung = "request"
    server = await engine.ensure_server(rung)
    if not server.ready:
        out = await _startup(engine, server, rung)
        _check(
            engine,
            rung,
            "startup-vs-runtime",
            "FAIL",
            f"the failure is at START-UP (stage {out.stage}), before any request: {out.exception or out.summary}",
            "Start-up vs runtime",
        )
        return out
    body = _body(engine, load_request(engine.profile.request.file))
    memory = [await _sample(engine)]
    chats: list[Chat] = []
    for i in range(1, engine.request_repeat + 1):
        chat = await server.api.chat(body, timeout=engine.profile.request.timeout_s)
        chats.append(chat)
        memory.append(await _sample(engine))
        _check(engine, rung, f"request-{i}", "PASS" if chat.ok else "FAIL", _chat_evidence(chat), f"Fixed request #{i}")
        if not chat.ok:
            await asyncio.sleep(1.0)  # let the log say why before the next one
    return await _request_verdicts(engine, server, chats, memory)


def _chat_evidence(chat: Chat) -> str:
    r = chat.reply
    if chat.ok:
        return f"{r.status} in {r.duration:.2f} s, finish={chat.finish_reason}: {chat.text!r}"
    return f"{r.status or 'no answer'} after {r.duration:.2f} s: {r.error or r.body[:200]}"


async def _request_verdicts(
    engine: LadderEngine, server: Server, chats: list[Chat], memory: list[float | None]
) -> Outcome:
    rung = "request"
    n, ok = len(chats), sum(c.ok for c in chats)
    texts = {c.text for c in chats if c.ok}
    _check(
        engine,
        rung,
        "completes",
        "PASS" if ok == n else "FAIL",
        f"{ok}/{n} requests completed",
        "Each request completes",
    )
    if ok:
        _check(
            engine,
            rung,
            "same-output",
            "PASS" if len(texts) == 1 else "FAIL",
            f"{len(texts)} distinct output(s) over {ok} completed requests at temperature 0",
            "Same output every time",
        )
    _memory_check(engine, memory)
    if ok == n and len(texts) == 1:
        _check(
            engine,
            rung,
            "startup-vs-runtime",
            "PASS",
            f"start-up clean (API ready in {server.ready_s:.1f} s) and {n}/{n} requests served: no runtime failure",
            "Start-up vs runtime",
        )
        engine.ledger.mark_good()
        return Outcome(True, f"{n}/{n} requests completed with identical output")
    if server.exception is not None or not server.alive:
        await server.settle(timeout=30.0)
    out = server.outcome("runtime")
    stages = [_failure_stage(server, c) for c in chats if not c.ok]
    if len(stages) >= 2:
        same = stages[0] == stages[1]
        _check(
            engine,
            rung,
            "same-stage",
            "PASS" if same else "FAIL",
            f"1st failure at {stages[0]}, 2nd at {stages[1]}",
            "1st and 2nd fail at the same stage",
        )
    moved = _moved_from_startup(engine, server)
    where = out.stage if not out.ok else "runtime (HTTP)"
    _check(
        engine,
        rung,
        "startup-vs-runtime",
        "FAIL",
        f"start-up clean (API ready in {server.ready_s:.1f} s); the failure is at RUNTIME ({where}){moved}: {out.exception or _first_error(chats)}",
        "Start-up vs runtime",
    )
    if out.ok:  # the server lived; the requests failed or disagreed
        kind = "nondeterministic" if ok == n else f"http-{next((c.reply.status for c in chats if not c.ok), 'none')}"
        return Outcome(
            False, f"requests: {ok}/{n} completed, {len(texts)} distinct outputs", f"runtime|{kind}", "runtime"
        )
    return out


def _failure_stage(server: Server, chat: Chat) -> str:
    if server.exception is not None:
        return f"stage {server.exception.stage}"
    return f"HTTP {chat.reply.status}" if chat.reply.status else "no answer"


def _first_error(chats: list[Chat]) -> str:
    bad = next((c for c in chats if not c.ok), None)
    return _chat_evidence(bad) if bad else "outputs differ"


def _moved_from_startup(engine: LadderEngine, server: Server) -> str:
    """Earlier runs in this session that failed at start-up: the failure has moved to runtime."""
    for e in reversed(engine.events):
        if (
            isinstance(e, ev.RunClassified)
            and e.run != server.run_id
            and e.failed_stage not in ("none", "runtime", "api")
        ):
            return f" — MOVED from start-up (run {e.run} failed at {e.failed_stage})"
    return ""


def _memory_check(engine: LadderEngine, memory: list[float | None]) -> None:
    after = [m for m in memory[1:] if m is not None]
    if memory[0] is None or len(after) < 2:
        why = "; ".join(s.why_not for s in engine.samplers.values() if s.why_not) or "no GPU samples"
        _check(engine, "request", "gpu-memory", "UNKNOWN", f"not measured: {why}", "GPU memory after each request")
        return
    steps = [b - a for a, b in zip([memory[0], *after[:-1]], after, strict=False)]
    rising = all(s > GROWTH_MIB for s in steps[1:])
    shown = " → ".join(f"{m:.0f}" for m in [memory[0], *after])
    verdict = "FAIL" if rising else "PASS"
    if rising:
        what = "still RISING after every request"
    elif after[-1] < after[0] - GROWTH_MIB:
        what = "fell: the server released its memory (did it die?)"
    else:
        what = "flat after the first request"
    _check(
        engine,
        "request",
        "gpu-memory",
        verdict,
        f"GPU memory used (MiB, all GPUs): {shown} — {what}",
        "GPU memory after each request",
    )


# --- 4 single features ----------------------------------------------------------------------------


def _feature_changes(feature: Any, value: str | None = None) -> dict[str, Any]:
    args = [a.replace("{value}", value) if value is not None else a for a in feature.args]
    changes = changes_from_args(args, feature.remove_args)
    changes.update({f"env:{k}": v.replace("{value}", value or "") for k, v in feature.env.items()})
    return changes


def _apply_feature(engine: LadderEngine, feature: Any, value: str | None = None) -> list[dict[str, Any]]:
    """Apply a feature as one change; an already-applied feature changes nothing."""
    d = engine.preview_change(_feature_changes(feature, value))
    if d:
        engine.apply_change(
            _feature_changes(feature, value), reason=f"feature {feature.name} is one flag set" if len(d) > 1 else None
        )
    return d


async def _pair(server: Server, engine: LadderEngine) -> tuple[list[Chat], list[float | None], list[float | None], str]:
    """Send the same-prefix request pair; hits and queries deltas after each request."""
    reqs = load_request("prefix-cache.json")["requests"]
    _, before = await server.api.metrics()
    chats, hits, queries = [], [], []
    for body in reqs:
        chats.append(await server.api.chat(_body(engine, body), timeout=engine.profile.request.timeout_s))
        _, after = await server.api.metrics()
        hits.append(metric_delta(before, after, "vllm:prefix_cache_hits"))
        queries.append(metric_delta(before, after, "vllm:prefix_cache_queries"))
        before = after
    shown = "; ".join(
        f"request {'AB'[i]}: queries +{_n(q)}, hits +{_n(h)}"
        for i, (q, h) in enumerate(zip(queries, hits, strict=False))
    )
    return chats, hits, queries, shown


def _n(x: float | None) -> str:
    return "?" if x is None else f"{x:.0f}"


async def prefix_caching(engine: LadderEngine, feature: Any) -> Outcome:
    """Control on the current server (caching off), then caching on: the 2nd request must hit."""
    rung = feature.name
    s = engine.server
    if s is not None and s.ready and s.config.flags.get("enable-prefix-caching") is False:
        chats, hits, _, shown = await _pair(s, engine)
        off_ok = all(c.ok for c in chats) and (hits[1] or 0) == 0
        _check(
            engine,
            rung,
            "control-caching-off",
            "PASS" if off_ok else "FAIL",
            f"with --no-enable-prefix-caching: {shown}",
            "No hits with caching off",
        )
    _apply_feature(engine, feature)
    server = await engine.ensure_server(rung)
    if not server.ready:
        return await _startup(engine, server, rung)
    chats, hits, queries, shown = await _pair(server, engine)
    if not all(c.ok for c in chats):
        _check(
            engine,
            rung,
            "prefix-cache-hits",
            "FAIL",
            f"the request pair did not complete: {_first_error(chats)}",
            "Cache hit as expected",
        )
        return Outcome(False, "prefix-cache requests failed", "runtime|prefix-pair|failed", "runtime")
    if hits[1] is None:
        _check(
            engine,
            rung,
            "prefix-cache-hits",
            "UNKNOWN",
            "the server exposes no vllm:prefix_cache_hits metric",
            "Cache hit as expected",
        )
        return Outcome(False, "no prefix-cache metrics", error=True)
    if hits[1] > 0:
        _check(engine, rung, "prefix-cache-hits", "PASS", f"cache hit as expected: {shown}", "Cache hit as expected")
        engine.ledger.mark_good()
        return Outcome(True, f"cache hit as expected: 2nd request hit {hits[1]:.0f} of {_n(queries[1])} prompt tokens")
    _check(
        engine, rung, "prefix-cache-hits", "FAIL", f"NO cache hit on the 2nd request: {shown}", "Cache hit as expected"
    )
    return Outcome(False, f"no prefix-cache hit on the 2nd request ({shown})", "feature|prefix-cache|no-hit", "runtime")


async def stepped_feature(engine: LadderEngine, feature: Any) -> Outcome:
    """One value at a time (context lengths): each a single change, a fresh start and the fixed request."""
    rung = feature.name
    body = _body(engine, load_request(engine.profile.request.file))
    values = feature.values or [None]
    for value in values:
        label = f"{feature.name}={value}" if value is not None else feature.name
        _apply_feature(engine, feature, value)
        server = await engine.ensure_server(rung)
        if server.ready:
            chat = await server.api.chat(body, timeout=engine.profile.request.timeout_s)
            if chat.ok:
                _check(
                    engine,
                    rung,
                    label,
                    "PASS",
                    f"ready in {server.ready_s:.1f} s; request {_chat_evidence(chat)}",
                    label,
                )
                engine.ledger.mark_good()
                continue
            if not server.alive or server.exception is not None:
                await server.settle(timeout=15.0)
            out = server.outcome("runtime")
            if out.ok:
                out = Outcome(
                    False, f"request failed: {_chat_evidence(chat)}", f"runtime|http-{chat.reply.status}", "runtime"
                )
        else:
            out = await _startup(engine, server, rung)
        _check(engine, rung, label, "FAIL", out.summary, label)
        engine.revert(reason=f"{label} failed: back to the last known good config")
        return Outcome(False, f"{label}: {out.summary}", out.signature, out.stage, out.exception)
    return Outcome(True, f"{feature.name}: {', '.join(str(v) for v in values)} all served the fixed request")


async def concurrency(engine: LadderEngine, feature: Any) -> Outcome:
    """N copies of the fixed request at once (client side: the server is not restarted)."""
    rung = feature.name
    body = _body(engine, load_request(engine.profile.request.file))
    for n in feature.client_concurrency:
        if engine.config.concurrency != n:
            engine.apply_change({"concurrency": n})
        server = await engine.ensure_server(rung)
        if not server.ready:
            return await _startup(engine, server, rung)
        chats = await asyncio.gather(
            *(server.api.chat(body, timeout=engine.profile.request.timeout_s) for _ in range(n))
        )
        ok, texts = sum(c.ok for c in chats), {c.text for c in chats if c.ok}
        good = ok == n and len(texts) == 1
        slowest = max(c.reply.duration for c in chats)
        _check(
            engine,
            rung,
            f"concurrency={n}",
            "PASS" if good else "FAIL",
            f"{ok}/{n} completed at once, {len(texts)} distinct output(s), slowest {slowest:.2f} s",
            f"{n} copies at once",
        )
        if not good:
            if not server.alive or server.exception is not None:
                await server.settle(timeout=30.0)
            out = server.outcome("runtime")
            sig = out.signature if not out.ok else f"runtime|concurrency|{'nondeterministic' if ok == n else 'failed'}"
            engine.revert(reason=f"concurrency={n} failed: back to the last known good config")
            return Outcome(
                False,
                f"concurrency={n}: {ok}/{n} completed, {len(texts)} distinct outputs",
                sig,
                "runtime",
                out.exception,
            )
        engine.ledger.mark_good()
    return Outcome(
        True, f"concurrency {', '.join(map(str, feature.client_concurrency))}: every copy completed identically"
    )

"""HTTP checks against a vLLM server through a forwarded port: /health, /v1/models, chat, /metrics.

Why this shape: readiness is a fact of the API (``/health`` answering 200), not of log
text, and the prefix-cache verdict is a fact of the server's own counters. Every request
and response is recorded (``HttpRequest`` → ``HttpResponse``), so a replay shows what
was asked and what came back. ``/metrics`` is parsed with prometheus_client's text
parser (no regexes); its recorded body keeps only the ``vllm:`` samples, not the help
text, so a session file does not grow by tens of KB per scrape.

No method raises for an HTTP or network failure: a :class:`Reply` carries the status
and the error, because a failing server is exactly what the ladder is there to observe.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from . import events as ev

Emit = Callable[[Any], Any]
_ids = itertools.count(1)


@dataclass
class Reply:
    """One HTTP exchange as the ladder needs it."""

    status: int | None
    body: str = ""
    duration: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status == 200 and not self.error

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None


@dataclass
class Chat:
    """A chat completion reduced to what the single-request rung compares."""

    reply: Reply
    text: str | None = None
    finish_reason: str = ""
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.reply.ok and self.text is not None


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text → ``{sample name: value}`` summed over label sets (counters and gauges alike)."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name] = out.get(s.name, 0.0) + float(s.value)
    return out


def metric_delta(before: dict[str, float], after: dict[str, float], name: str) -> float | None:
    """``after - before`` for a metric (``vllm:prefix_cache_hits`` finds ``…_total`` too); None if absent."""
    for key in (name, f"{name}_total"):
        if key in after:
            return after[key] - before.get(key, 0.0)
    return None


def chat_text(body: Any) -> tuple[str | None, str]:
    """(assistant text, finish reason) of an OpenAI chat completion body, (None, "") if malformed."""
    try:
        choice = body["choices"][0]
        return str(choice["message"]["content"] or ""), str(choice.get("finish_reason") or "")
    except (KeyError, IndexError, TypeError):
        return None, ""


def _slim_metrics(text: str) -> str:
    return "\n".join(
        ln for ln in text.splitlines() if ln.startswith("vllm:") and "_created{" not in ln and "_bucket{" not in ln
    )


class VllmClient:
    """An OpenAI-compatible vLLM server at ``base_url`` (usually ``http://127.0.0.1:<forwarded port>``)."""

    def __init__(self, base_url: str, emit: Emit, host: str = "", timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.emit = emit
        self.host = host
        self._client = httpx.AsyncClient(base_url=self.base_url, timeout=timeout, trust_env=False)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> VllmClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def health(self, timeout: float = 5.0, record: bool = True) -> Reply:
        """GET /health (200 = the API and engine are up)."""
        return await self._call("GET", "/health", timeout=timeout, record=record)

    async def models(self) -> Reply:
        return await self._call("GET", "/v1/models")

    async def chat(self, body: dict[str, Any], timeout: float | None = None) -> Chat:
        """POST /v1/chat/completions with a fixed request body."""
        reply = await self._call("POST", "/v1/chat/completions", body=body, timeout=timeout)
        data = reply.json() if reply.ok else None
        text, finish = chat_text(data) if data is not None else (None, "")
        usage = data.get("usage") if isinstance(data, dict) else None
        return Chat(reply, text, finish, usage if isinstance(usage, dict) else {})

    async def metrics(self) -> tuple[Reply, dict[str, float]]:
        """GET /metrics, parsed; ({} if the scrape failed or did not parse)."""
        reply = await self._call("GET", "/metrics", slim=_slim_metrics)
        if not reply.ok:
            return reply, {}
        try:
            return reply, parse_metrics(reply.body)
        except ValueError as exc:
            reply.error = f"unparseable /metrics: {exc}"
            return reply, {}

    async def wait_ready(
        self, deadline: float, interval: float = 1.0, still_running: Callable[[], bool] | None = None
    ) -> Reply | None:
        """Poll /health until 200, ``deadline`` (monotonic) passes, or ``still_running()`` turns False.

        Only the first probe and the answer that ends the wait are recorded, so a long
        start-up does not flood the session with identical 'connection refused' lines.
        """
        first = True
        while time.monotonic() < deadline:
            reply = await self.health(timeout=min(5.0, max(0.5, deadline - time.monotonic())), record=first)
            first = False
            if reply.ok:
                self._record_reply("GET", "/health", reply)
                return reply
            if still_running is not None and not still_running():
                return None
            await asyncio.sleep(interval)
        return None

    async def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        timeout: float | None = None,
        record: bool = True,
        slim: Callable[[str], str] | None = None,
    ) -> Reply:
        rid = f"h{next(_ids)}"
        payload = json.dumps(body) if body is not None else ""
        if record:
            self.emit(ev.HttpRequest(host=self.host, id=rid, method=method, url=self.base_url + path, body=payload))
        t0 = time.monotonic()
        try:
            kw: dict[str, Any] = {"timeout": timeout} if timeout is not None else {}
            r = await self._client.request(
                method,
                path,
                content=payload or None,
                headers={"content-type": "application/json"} if payload else None,
                **kw,
            )
            reply = Reply(r.status_code, r.text, time.monotonic() - t0)
        except httpx.HTTPError as exc:
            reply = Reply(
                None, "", time.monotonic() - t0, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            )
        if record:
            shown = slim(reply.body) if slim and reply.ok else reply.body
            self.emit(
                ev.HttpResponse(
                    host=self.host, id=rid, status=reply.status, body=shown, duration=reply.duration, error=reply.error
                )
            )
        return reply

    def _record_reply(self, method: str, path: str, reply: Reply) -> None:
        rid = f"h{next(_ids)}"
        self.emit(ev.HttpRequest(host=self.host, id=rid, method=method, url=self.base_url + path))
        self.emit(
            ev.HttpResponse(host=self.host, id=rid, status=reply.status, body=reply.body, duration=reply.duration)
        )

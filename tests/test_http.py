"""The /metrics parser and deltas on REAL vLLM snapshots, and the client against an unreachable port."""

from __future__ import annotations

import json
import socket

from k3tui import events as ev
from k3tui.http import VllmClient, chat_text, metric_delta, parse_metrics


def _snap(shared, name):
    return parse_metrics((shared / "fixtures" / "vllm-cpu-metrics" / name).read_text())


def test_prefix_cache_deltas_from_real_snapshots_with_caching_on(shared):
    before, a, b = (
        _snap(shared, f"03-prefix-cache-explicit-metrics-{n}.txt") for n in ("0-before", "1-after-reqA", "2-after-reqB")
    )
    assert metric_delta(before, a, "vllm:prefix_cache_queries") == 320.0
    assert metric_delta(before, a, "vllm:prefix_cache_hits") == 0.0
    assert metric_delta(a, b, "vllm:prefix_cache_queries") == 326.0
    assert metric_delta(a, b, "vllm:prefix_cache_hits") == 256.0


def test_prefix_cache_deltas_from_real_snapshots_with_caching_off(shared):
    a, b = (_snap(shared, f"04-prefix-cache-disabled-metrics-{n}.txt") for n in ("1-after-reqA", "2-after-reqB"))
    assert metric_delta(a, b, "vllm:prefix_cache_hits") == 0.0
    assert metric_delta(a, b, "vllm:prompt_tokens") == 326.0


def test_missing_metric_is_none_not_zero(shared):
    snap = _snap(shared, "03-prefix-cache-explicit-metrics-0-before.txt")
    assert metric_delta(snap, snap, "vllm:no_such_metric") is None


def test_chat_text_of_a_real_response_and_of_garbage(shared):
    body = json.loads((shared / "fixtures" / "vllm-cpu-metrics" / "baseline-responses" / "chat-1.json").read_text())
    text, finish = chat_text(body)
    assert finish == "length" and text and text.startswith("CE")
    assert chat_text({"choices": []}) == (None, "")
    assert chat_text("nope") == (None, "")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_refused_connection_is_a_reply_with_an_error_and_is_recorded():
    events: list = []
    async with VllmClient(f"http://127.0.0.1:{_free_port()}", events.append, host="h") as c:
        r = await c.health()
        assert r.status is None and r.error and not r.ok
        chat = await c.chat({"model": "m", "messages": []})
        assert not chat.ok and chat.text is None
    kinds = [type(e) for e in events]
    assert kinds == [ev.HttpRequest, ev.HttpResponse, ev.HttpRequest, ev.HttpResponse]
    assert events[1].error and events[1].host == "h"

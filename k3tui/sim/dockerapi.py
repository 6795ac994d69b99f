"""A minimal Docker Engine HTTP API for the simulated host, on a unix socket.

The freeze reads container facts with the docker SDK through a forwarded
``/var/run/docker.sock``; the simulated SSH server maps that socket to this one, so the
SDK runs unmodified over the real forwarding path. Served: ``/_ping``, ``/version``,
``/info``, ``/containers/json``, ``/containers/{id}/json``, ``/containers/{id}/logs``
(multiplexed stream frames, as with ``Tty: false``) and ``/images/{name}/json``, with or
without an API-version prefix (``/v1.47/…``). Answers come from
:mod:`k3tui.sim.containers`, the same model the fake ``docker`` CLI prints. Read-only: any
other endpoint answers 501 with a message that names the simulation.
"""

from __future__ import annotations

import asyncio
import json
import re
import struct
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from . import containers

_VERSION_PREFIX = re.compile(r"^/v\d+(?:\.\d+)?(?=/)")
_REASONS = {200: "OK", 404: "Not Found", 400: "Bad Request", 501: "Not Implemented"}


async def serve(path: str, root: Path) -> asyncio.AbstractServer:
    """Listen on unix socket ``path``; answers from ``root/state/host.json``."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await _one_request(reader, writer, root):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    return await asyncio.start_unix_server(handle, path=path)


async def _one_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, root: Path) -> bool:
    line = await reader.readline()
    if not line:
        return False
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while True:
        h = await reader.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        k, _, v = h.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    if int(headers.get("content-length", "0") or 0):
        await reader.readexactly(int(headers["content-length"]))
    state = json.loads((root / "state" / "host.json").read_text())
    if (state.get("container") or {}).get("runtime") == "containerd":
        return False  # a Kubernetes node (k3tui.sim.ctr): no dockerd behind the socket, nothing answers
    code, ctype, body = route(method, target, state)
    head = (
        f"HTTP/1.1 {code} {_REASONS.get(code, 'OK')}\r\nApi-Version: {containers.API_VERSION}\r\n"
        f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\nServer: Docker/{containers.ENGINE_VERSION} (linux; k3tui simulated)\r\n\r\n"
    )
    writer.write(head.encode() + body)
    await writer.drain()
    return headers.get("connection", "").lower() != "close"


def _json(code: int, obj: Any) -> tuple[int, str, bytes]:
    return code, "application/json", json.dumps(obj).encode()


def route(method: str, target: str, state: dict[str, Any]) -> tuple[int, str, bytes]:
    """Answer one API call: (status, content type, body)."""
    url = urlsplit(target)
    path = _VERSION_PREFIX.sub("", unquote(url.path))
    query = parse_qs(url.query)
    if method not in ("GET", "HEAD"):
        return _json(501, {"message": "k3tui simulated Docker Engine: read-only, only inspection endpoints"})
    if path == "/_ping":
        return 200, "text/plain", b"OK"
    if path == "/version":
        return _json(200, _version(state))
    if path == "/info":
        return _json(
            200,
            {
                "Name": state["host"]["hostname"],
                "ServerVersion": containers.ENGINE_VERSION,
                "Runtimes": {"nvidia": {"path": "nvidia-container-runtime"}, "runc": {"path": "runc"}},
                "Labels": ["k3tui.simulated=true"],
            },
        )
    if path == "/containers/json":
        all_ = query.get("all", ["0"])[0] in ("1", "true", "True")
        running = state.get("container", {}).get("state", "running") == "running"
        rows = [containers.list_json(state)] if containers.exists(state) and (running or all_) else []
        return _json(200, rows)
    m = re.fullmatch(r"/containers/([^/]+)/(json|logs)", path)
    if m:
        if not containers.matches(state, m.group(1)):
            return _json(404, {"message": f"No such container: {m.group(1)}"})
        if m.group(2) == "json":
            return _json(200, containers.inspect(state))
        return 200, "application/vnd.docker.multiplexed-stream", _logs(state, query)
    m = re.fullmatch(r"/images/(.+)/json", path)
    if m:
        if not containers.image_matches(state, m.group(1)):
            return _json(404, {"message": f"No such image: {m.group(1)}"})
        return _json(200, containers.image_inspect(state))
    return _json(404, {"message": f"page not found (k3tui simulated Docker Engine): {path}"})


def _version(state: dict[str, Any]) -> dict[str, Any]:
    arch = "arm64" if state["host"]["arch"] == "aarch64" else "amd64"
    return {
        "Platform": {"Name": "Docker Engine - Community (k3tui simulated)"},
        "Version": containers.ENGINE_VERSION,
        "ApiVersion": containers.API_VERSION,
        "MinAPIVersion": "1.24",
        "Os": "linux",
        "Arch": arch,
        "KernelVersion": state["host"]["kernel"],
        "Components": [
            {"Name": "Engine", "Version": containers.ENGINE_VERSION, "Details": {"ApiVersion": containers.API_VERSION}}
        ],
    }


def _logs(state: dict[str, Any], query: dict[str, list[str]]) -> bytes:
    data = containers.log_bytes(state)
    lines = data.splitlines(keepends=True)
    tail = query.get("tail", ["all"])[0]
    if tail != "all":
        lines = lines[-int(tail) :] if int(tail) else []
    stamps = query.get("timestamps", ["0"])[0] in ("1", "true")
    out = bytearray()
    for line in lines:
        payload = (containers.now_rfc3339().encode() + b" " + line) if stamps else line
        out += struct.pack(">BxxxL", 1, len(payload)) + payload
    return bytes(out)

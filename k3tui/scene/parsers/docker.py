"""Parsers for the Docker engine's answers: ``docker ps --format '{{json .}}'`` lines and
``docker inspect`` / ``docker image inspect`` JSON (the Engine API returns the same
objects, so one parser serves the CLI over SSH and the API through a forwarded socket).

Env lists come out as they are here; the freeze redacts them before anything is kept.
"""

from __future__ import annotations

import json
from typing import Any

from ._common import ParseError, strip_transcript


def parse_docker_ps(text: str) -> list[dict[str, Any]]:
    """``docker ps --no-trunc --format '{{json .}}'`` → [{id, name, image, command, status}]."""
    out = []
    for ln in strip_transcript(text).splitlines():
        if not ln.strip():
            continue
        try:
            row = json.loads(ln)
        except json.JSONDecodeError:
            raise ParseError(f"docker ps line is not JSON: {ln[:80]!r}") from None
        out.append(
            {
                "id": row.get("ID", ""),
                "name": row.get("Names", ""),
                "image": row.get("Image", ""),
                "command": str(row.get("Command", "")).strip('"'),
                "status": row.get("Status", ""),
            }
        )
    return out


def _one_object(text: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(strip_transcript(text) or "null")
    except json.JSONDecodeError as exc:
        raise ParseError(f"{what} is not JSON: {exc}") from None
    if isinstance(data, list):
        data = data[0] if data else None
    if not isinstance(data, dict):
        raise ParseError(f"{what} returned no object")
    return data


def container_from_inspect(text_or_obj: str | dict[str, Any]) -> dict[str, Any]:
    """``docker inspect CONTAINER`` (text, or the API's dict) → the scene's container facts."""
    c = text_or_obj if isinstance(text_or_obj, dict) else _one_object(text_or_obj, "docker inspect")
    cfg = c.get("Config") or {}
    hc = c.get("HostConfig") or {}
    st = c.get("State") or {}
    path, args = c.get("Path") or "", c.get("Args") or []
    return {
        "name": (c.get("Name") or "").lstrip("/"),
        "id": c.get("Id", ""),
        "image": cfg.get("Image", ""),
        "image_id": c.get("Image", ""),
        "repo_digests": [],
        "created": c.get("Created"),
        "started": st.get("StartedAt"),
        "state": st.get("Status"),
        "exit_code": st.get("ExitCode"),
        "oom_killed": st.get("OOMKilled"),
        "command": [path, *args] if path else list(args),
        "entrypoint": cfg.get("Entrypoint"),
        "cmd": cfg.get("Cmd"),
        "env": list(cfg.get("Env") or []),
        "labels": dict(cfg.get("Labels") or {}),
        "runtime": hc.get("Runtime"),
        "device_requests": hc.get("DeviceRequests") or [],
        "devices": hc.get("Devices") or [],
        "shm_size": hc.get("ShmSize"),
        "ipc_mode": hc.get("IpcMode"),
        "network_mode": hc.get("NetworkMode"),
        "privileged": hc.get("Privileged"),
        "ulimits": hc.get("Ulimits") or [],
        "mounts": [
            {"type": m.get("Type"), "source": m.get("Source"), "destination": m.get("Destination"), "rw": m.get("RW")}
            for m in c.get("Mounts") or []
        ],
    }


def image_from_inspect(text_or_obj: str | dict[str, Any]) -> dict[str, Any]:
    """``docker image inspect`` → {id, repo_tags, repo_digests, env, created, architecture}."""
    i = text_or_obj if isinstance(text_or_obj, dict) else _one_object(text_or_obj, "docker image inspect")
    cfg = i.get("Config") or {}
    return {
        "id": i.get("Id", ""),
        "repo_tags": list(i.get("RepoTags") or []),
        "repo_digests": list(i.get("RepoDigests") or []),
        "env": list(cfg.get("Env") or []),
        "labels": dict(cfg.get("Labels") or {}),
        "created": i.get("Created"),
        "architecture": i.get("Architecture"),
    }

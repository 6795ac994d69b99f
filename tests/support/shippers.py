"""Logs as log shippers store them, written for tests."""

from __future__ import annotations

import json


def docker_json_record(line: str, stream: str = "stderr", time: str = "2026-12-05T06:00:00.000000000Z") -> str:
    """One line as docker's json-file driver stores it: a JSON record, the line in its ``log`` field."""
    return json.dumps({"log": line + "\n", "stream": stream, "time": time})


def docker_json(text: str) -> str:
    """A whole log as docker's json-file driver stores it: one record per line."""
    return "".join(docker_json_record(x) + "\n" for x in text.splitlines())

"""The simulated host's container runtime: what ``docker inspect`` and the Engine API return.

One model feeds both doors a freeze uses: the ``docker`` CLI over SSH (``docker ps``,
``docker inspect``, ``docker image inspect``, ``docker logs``) and the Docker Engine HTTP
API on the simulated ``/var/run/docker.sock`` (the docker SDK). The JSON has the shape of
Docker Engine 27's (``Config.Env``, ``HostConfig.DeviceRequests``, ``RepoDigests`` …); the
facts come from the scenario's ``[container]`` table, including a planted secret in the
env that redaction must hide. The container's "main process" is a placeholder: the
simulated host runs ``vllm serve`` only when asked to (a detached run, ``docker exec``).

Stdlib only (imported by the fake ``docker`` under ``python -S``).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

API_VERSION = "1.47"
ENGINE_VERSION = "27.5.1"


def container_id(state: dict[str, Any]) -> str:
    c = state["container"]
    return hashlib.sha256(f"k3sim/{state['scenario']}/{c['name']}".encode()).hexdigest()


def _root(state: dict[str, Any]) -> Path:
    return Path(state["root"])


def container_dir(state: dict[str, Any]) -> Path:
    return _root(state) / "ctr" / state["container"]["name"]


def env_list(c: dict[str, Any]) -> list[str]:
    """Image env then run env, as ``Config.Env`` lists them."""
    return list(c.get("image_env", [])) + list(c.get("run_env", []))


def main_pid(state: dict[str, Any]) -> int:
    try:
        return int((container_dir(state) / "pid").read_text())
    except (OSError, ValueError):
        return 0


def _gpu_request(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"Driver": "nvidia", "Count": -1, "DeviceIDs": None, "Capabilities": [["gpu"]], "Options": {}}]


def inspect(state: dict[str, Any]) -> dict[str, Any]:
    """``docker inspect NAME`` (one element) / ``GET /containers/{id}/json``."""
    c = state["container"]
    cid = container_id(state)
    running = c.get("state", "running") == "running"
    log = container_dir(state) / "log"
    return {
        "Id": cid,
        "Created": c["created"],
        "Path": c["entrypoint"][0],
        "Args": c["entrypoint"][1:] + c["cmd"],
        "State": {
            "Status": "running" if running else "exited",
            "Running": running,
            "Paused": False,
            "Restarting": False,
            "OOMKilled": False,
            "Dead": False,
            "Pid": main_pid(state) if running else 0,
            "ExitCode": 0 if running else int(c.get("exit_code", 1)),
            "Error": "",
            "StartedAt": c.get("started", c["created"]),
            "FinishedAt": "0001-01-01T00:00:00Z",
        },
        "Image": c["image_id"],
        "ResolvConfPath": f"/var/lib/docker/containers/{cid}/resolv.conf",
        "HostnamePath": f"/var/lib/docker/containers/{cid}/hostname",
        "HostsPath": f"/var/lib/docker/containers/{cid}/hosts",
        "LogPath": str(log),
        "Name": "/" + c["name"],
        "RestartCount": 0,
        "Driver": "overlay2",
        "Platform": "linux",
        "MountLabel": "",
        "ProcessLabel": "",
        "AppArmorProfile": "docker-default",
        "ExecIDs": None,
        "HostConfig": {
            "Binds": [
                f"{m['Source']}:{m['Destination']}{':ro' if not m.get('RW', True) else ''}" for m in c.get("mounts", [])
            ],
            "NetworkMode": c.get("network_mode", "host"),
            "PortBindings": {},
            "RestartPolicy": {"Name": "no", "MaximumRetryCount": 0},
            "AutoRemove": False,
            "Runtime": c.get("runtime", "nvidia"),
            "IpcMode": c.get("ipc_mode", "host"),
            "PidMode": "",
            "Privileged": False,
            "ShmSize": int(c.get("shm_size", 67108864)),
            "DeviceRequests": _gpu_request(state),
            "Ulimits": [
                {"Name": "memlock", "Hard": -1, "Soft": -1},
                {"Name": "stack", "Hard": 67108864, "Soft": 67108864},
            ],
            "Memory": 0,
            "NanoCpus": 0,
        },
        "Mounts": [
            {
                "Type": m["Type"],
                "Source": m["Source"],
                "Destination": m["Destination"],
                "Mode": m.get("Mode", ""),
                "RW": m.get("RW", True),
                "Propagation": m.get("Propagation", "rprivate"),
            }
            for m in c.get("mounts", [])
        ],
        "Config": {
            "Hostname": state["host"]["hostname"],
            "Domainname": "",
            "User": "",
            "AttachStdin": False,
            "AttachStdout": True,
            "AttachStderr": True,
            "ExposedPorts": {"8000/tcp": {}},
            "Tty": False,
            "OpenStdin": False,
            "Env": env_list(c),
            "Cmd": c["cmd"],
            "Image": c["image"],
            "Volumes": None,
            "WorkingDir": "/vllm-workspace",
            "Entrypoint": c["entrypoint"],
            "OnBuild": None,
            "Labels": c.get("labels", {}),
        },
        "NetworkSettings": {
            "Bridge": "",
            "SandboxID": cid[:12],
            "Ports": {},
            "Networks": {"host": {"NetworkID": "k3sim-host"}},
        },
    }


def image_inspect(state: dict[str, Any]) -> dict[str, Any]:
    """``docker image inspect IMAGE`` / ``GET /images/{name}/json``: the image's own env and digests."""
    c = state["container"]
    repo = c["image"].rsplit(":", 1)[0]
    arch = "arm64" if state["host"]["arch"] == "aarch64" else "amd64"
    return {
        "Id": c["image_id"],
        "RepoTags": [c["image"]],
        "RepoDigests": [f"{repo}@{c['digest']}"],
        "Parent": "",
        "Comment": "buildkit.dockerfile.v0",
        "Created": c["image_created"],
        "DockerVersion": "",
        "Author": "",
        "Config": {
            "Env": list(c.get("image_env", [])),
            "Cmd": None,
            "Entrypoint": c["entrypoint"],
            "WorkingDir": "/vllm-workspace",
            "Labels": {k: v for k, v in c.get("labels", {}).items() if k.startswith("org.")},
        },
        "Architecture": arch,
        "Os": "linux",
        "Size": 23714811904,
        "RootFS": {"Type": "layers", "Layers": [_layer(c["image_id"], i) for i in range(6)]},
    }


def _layer(image_id: str, i: int) -> str:
    return "sha256:" + hashlib.sha256(f"{image_id}/{i}".encode()).hexdigest()


def ps_row(state: dict[str, Any]) -> dict[str, str]:
    """One line of ``docker ps --no-trunc --format '{{json .}}'``."""
    c = state["container"]
    cmd = " ".join(c["entrypoint"] + c["cmd"])
    return {
        "Command": json.dumps(cmd),
        "CreatedAt": c.get("created_at", "2026-11-27 09:12:44 +0000 UTC"),
        "ID": container_id(state),
        "Image": c["image"],
        "Labels": ",".join(f"{k}={v}" for k, v in c.get("labels", {}).items()),
        "LocalVolumes": "0",
        "Mounts": ",".join(m["Source"] for m in c.get("mounts", [])),
        "Names": c["name"],
        "Networks": "host",
        "Ports": "",
        "RunningFor": "3 days ago",
        "Size": "0B",
        "State": "running" if c.get("state", "running") == "running" else "exited",
        "Status": "Up 3 days" if c.get("state", "running") == "running" else "Exited (1) 2 hours ago",
    }


def list_json(state: dict[str, Any]) -> dict[str, Any]:
    """One element of ``GET /containers/json``."""
    c = state["container"]
    return {
        "Id": container_id(state),
        "Names": ["/" + c["name"]],
        "Image": c["image"],
        "ImageID": c["image_id"],
        "Command": " ".join(c["entrypoint"] + c["cmd"]),
        "Created": 1795936364,
        "Ports": [],
        "Labels": c.get("labels", {}),
        "State": "running" if c.get("state", "running") == "running" else "exited",
        "Status": ps_row(state)["Status"],
        "HostConfig": {"NetworkMode": c.get("network_mode", "host")},
        "Mounts": inspect(state)["Mounts"],
    }


def matches(state: dict[str, Any], ref: str) -> bool:
    """Does ``ref`` (name, /name, full or short id) name the scenario's container?"""
    if not state.get("container"):
        return False
    cid = container_id(state)
    ref = ref.lstrip("/")
    return ref == state["container"]["name"] or (len(ref) >= 4 and cid.startswith(ref))


def local_images(state: dict[str, Any]) -> list[tuple[str, str]]:
    """``(reference, image id)`` of every image on the host: the deployment's (and its other tags), then
    ``other_images`` (another build ``docker run`` can start: what a bisect's good side may use)."""
    c = state.get("container") or {}
    if not c:
        return []
    out = [(c["image"], c["image_id"])] + [(t, c["image_id"]) for t in c.get("tags", [])]
    for i, ref in enumerate(c.get("other_images", [])):
        digest = hashlib.sha256(f"{ref}{i}".encode()).hexdigest()
        out.append((ref, f"sha256:{digest}"))
    return out


def image_matches(state: dict[str, Any], ref: str) -> bool:
    c = state.get("container") or {}
    if not c:
        return False
    if any(ref == r for r, _ in local_images(state)[1:]):
        return True
    ref = ref.removeprefix("sha256:")
    return ref in (c["image"], c["image_id"], c["image_id"].removeprefix("sha256:")) or (
        len(ref) >= 4 and c["image_id"].removeprefix("sha256:").startswith(ref)
    )


def log_bytes(state: dict[str, Any]) -> bytes:
    try:
        return (container_dir(state) / "log").read_bytes()
    except OSError:
        return b""


def now_rfc3339() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1e9):09d}Z"


def exists(state: dict[str, Any]) -> bool:
    return bool(state.get("container")) and os.path.isdir(container_dir(state))

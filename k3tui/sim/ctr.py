"""A FAKE ``ctr`` (containerd's client) for a simulated Kubernetes node: the scenario's container as containerd holds it.

A scenario whose ``[container]`` says ``runtime = "containerd"`` is a node run by the kubelet:
there is no dockerd (the fake ``docker`` says its daemon is not running), containerd's socket
is there, and the serving container lives in namespace ``k8s.io`` with the labels the kubelet
sets (``[container.pod]``: namespace, name, uid, container). This module answers the ``ctr``
commands of :mod:`k3tui.launch.containerd` from the same scenario data the fake Docker
answers from (:mod:`k3tui.sim.containers`), in ``ctr``'s own output forms, and writes the
pod's CRI log where the kubelet would (``/var/log/pods/NS_NAME_UID/CONTAINER/0.log``).
Everything here is a simulation and says so in its labels (``k3tui.simulated=true``).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

from . import containers as C

SOCKET = "/run/containerd/containerd.sock"
NAMESPACE = "k8s.io"


def is_node(state: dict[str, Any]) -> bool:
    """Does this simulated host run its container through containerd (a Kubernetes node)?"""
    return (state.get("container") or {}).get("runtime") == "containerd"


def pod(state: dict[str, Any]) -> dict[str, str]:
    p = dict(state["container"].get("pod") or {})
    p.setdefault("namespace", "vllm")
    p.setdefault("name", f"{state['container']['name']}-0")
    p.setdefault("uid", hashlib.sha256(p["name"].encode()).hexdigest()[:8] + "-sim0-4000-8000-" + "0" * 12)
    p.setdefault("container", "vllm")
    return p


def _digest(state: dict[str, Any], what: str) -> str:
    c = state["container"]
    if what == "manifest":
        return str(c["digest"])
    return str(c["image_id"])


def info(state: dict[str, Any]) -> dict[str, Any]:
    """``ctr -n k8s.io containers info ID``: the container record with its OCI runtime spec."""
    c, p = state["container"], pod(state)
    labels = {
        "io.kubernetes.pod.namespace": p["namespace"],
        "io.kubernetes.pod.name": p["name"],
        "io.kubernetes.pod.uid": p["uid"],
        "io.kubernetes.container.name": p["container"],
        "io.cri-containerd.kind": "container",
        "k3tui.simulated": "true",
    }
    devices = [{"path": d, "type": "c", "major": 195, "minor": i} for i, d in enumerate(c.get("devices") or [])]
    mounts = [{"destination": m["Destination"], "type": "bind", "source": m["Source"], "options": ["rbind"]}
              for m in c.get("mounts") or []]  # fmt: skip
    return {
        "ID": C.container_id(state),
        "Labels": labels,
        "Image": _ref(c["image"]),
        "Runtime": {"Name": "io.containerd.runc.v2"},
        "CreatedAt": c["created"],
        "Spec": {
            "ociVersion": "1.1.0",
            "process": {"args": list(c["entrypoint"]) + list(c["cmd"]), "env": C.env_list(c), "cwd": "/"},
            "mounts": mounts,
            "annotations": {
                "io.kubernetes.cri.container-type": "container",
                "io.kubernetes.cri.sandbox-name": p["name"],
            },
            "linux": {"devices": devices},
        },
    }


def _ref(image: str) -> str:
    """containerd names images fully: ``docker.io/vllm/vllm-openai:kimi-k3``."""
    first = image.split("/", 1)[0]
    return image if "." in first or ":" in first and "/" in image else f"docker.io/{image}"


def main(state: dict[str, Any], args: list[str]) -> int:
    """Answer ``ctr [-a SOCK] [-n NS] COMMAND …`` (the forms k3tui's containerd launcher sends)."""
    ns, rest = NAMESPACE, list(args)
    while rest[:1] and rest[0].startswith("-"):
        opt = rest.pop(0)
        if opt in ("-a", "--address", "-n", "--namespace") and rest:
            value = rest.pop(0)
            ns = value if opt in ("-n", "--namespace") else ns
    if not is_node(state):
        sys.stderr.write(f'ctr: failed to dial "{SOCKET}": connection error: no such file or directory\n')
        return 1
    if ns != NAMESPACE or not rest:
        return 0
    c = state["container"]
    words = rest[:2]
    if words in (["containers", "ls"], ["c", "ls"]):
        print(C.container_id(state))
    elif words in (["containers", "info"], ["c", "info"]):
        if rest[2:3] != [C.container_id(state)]:
            sys.stderr.write(f'ctr: container "{rest[2] if rest[2:] else ""}" in namespace "{ns}": not found\n')
            return 1
        print(json.dumps(info(state), indent=4))
    elif words in (["tasks", "ls"], ["t", "ls"]):
        print("TASK    PID    STATUS")
        running = c.get("state", "running") == "running"
        print(
            f"{C.container_id(state)}    {C.main_pid(state) if running else 0}    {'RUNNING' if running else 'STOPPED'}"
        )
    elif words in (["images", "ls"], ["i", "ls"]):
        print("REF    TYPE    DIGEST    SIZE    PLATFORMS    LABELS")
        print(
            f"{_ref(c['image'])} application/vnd.oci.image.manifest.v1+json {_digest(state, 'manifest')} 9.1 GiB linux/amd64 -"
        )
    elif words == ["content", "get"]:
        return _content(state, rest[2] if rest[2:] else "")
    else:
        sys.stderr.write(f"ctr: unknown command {' '.join(rest[:2])!r} (k3tui simulated host)\n")
        return 1
    return 0


def _content(state: dict[str, Any], digest: str) -> int:
    c = state["container"]
    if digest == _digest(state, "manifest"):
        print(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                          "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": c["image_id"]}}))  # fmt: skip
        return 0
    if digest == c["image_id"]:
        print(json.dumps({"architecture": c.get("architecture", "amd64"), "os": "linux",
                          "config": {"Env": list(c.get("image_env", [])), "Cmd": list(c["cmd"])}}))  # fmt: skip
        return 0
    sys.stderr.write(f"ctr: {digest}: not found\n")
    return 1


def lay_out(root: Path, state: dict[str, Any], log: bytes) -> None:
    """The node's side: containerd's socket (a socket inode) and the pod's CRI log, in the host's virtual files."""
    sock = root / "fs" / SOCKET.lstrip("/")
    sock.parent.mkdir(parents=True, exist_ok=True)
    if not sock.exists():
        os.mknod(sock, stat.S_IFSOCK | 0o660)
    p = pod(state)
    folder = root / "fs" / "var" / "log" / "pods" / f"{p['namespace']}_{p['name']}_{p['uid']}" / p["container"]
    folder.mkdir(parents=True, exist_ok=True)
    stamp = state["container"].get("started", state["container"]["created"])
    lines = log.decode("utf-8", "replace").splitlines()
    (folder / "0.log").write_text("".join(f"{stamp} stdout F {line}\n" for line in lines))

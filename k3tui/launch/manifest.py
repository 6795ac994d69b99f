"""Pod manifests as data: the pod as applied, a one-off run pod derived from it, and a field-by-field diff.

Why flatten to paths: two manifests are compared the way an operator reads them —
``spec.containers[vllm].env[LD_LIBRARY_PATH]``, not list positions — so a reordered env or
container list is no change, and the one variable a ladder run changes shows as one line.
Lists of named items (containers, env, volumes, ports …) are keyed by ``name``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

MANAGED_BY = "app.kubernetes.io/managed-by"
RUN_LABEL = "k3tui.io/run"
"""Labels of every pod k3tui creates (``managed-by=k3tui``, the run id): found and deleted by them."""
_VOLATILE_META = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink",
                  "ownerReferences", "generateName", "deletionTimestamp", "deletionGracePeriodSeconds")  # fmt: skip


def applied(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as applied: ``metadata`` (without ``managedFields``) and ``spec``; ``status`` left out."""
    meta = {k: v for k, v in (pod.get("metadata") or {}).items() if k != "managedFields"}
    return {"apiVersion": pod.get("apiVersion", "v1"), "kind": "Pod", "metadata": meta, "spec": pod.get("spec") or {}}


def serving_container(pod: dict[str, Any], name: str | None = None) -> dict[str, Any] | None:
    """The container ``name``, or the one that runs vLLM, or the only one."""
    containers = (pod.get("spec") or {}).get("containers") or []
    if name:
        return next((c for c in containers if c.get("name") == name), None)
    words = [
        (c, " ".join([*(c.get("command") or []), *(c.get("args") or [])]) + " " + str(c.get("image")))
        for c in containers
    ]
    return next((c for c, w in words if "vllm" in w.lower()), containers[0] if containers else None)


def container_argv(c: dict[str, Any]) -> list[str]:
    """``command`` + ``args`` (what the runtime starts, when the image's entrypoint is overridden)."""
    return [*(c.get("command") or []), *(c.get("args") or [])]


def env_pairs(c: dict[str, Any]) -> dict[str, str]:
    """The container's literal env (``valueFrom`` entries say where the value comes from, never the value)."""
    out = {}
    for e in c.get("env") or []:
        if "value" in e:
            out[e["name"]] = str(e["value"])
        elif e.get("valueFrom"):
            src = next(iter(e["valueFrom"]), "valueFrom")
            out[e["name"]] = f"<{src}>"
    return out


def run_pod_name(run_id: str) -> str:
    """The name of run ``run_id``'s pod (a DNS label: lower case, at most 63 characters)."""
    return f"k3tui-{run_id}".lower()[:63].rstrip("-")


def run_pod(
    frozen: dict[str, Any], container: str, argv: list[str], env: dict[str, str], image: str, run_id: str
) -> dict[str, Any]:
    """A one-off pod of run ``run_id``: the frozen pod with the serving container's argv/env/image set.

    It keeps the node (``nodeName``, or the selector/affinity that placed the original), the
    volumes, devices, resource claims and everything else; it drops the identity and the
    owner (so no controller adopts or replaces it), never restarts, and carries k3tui's labels.
    """
    pod = copy.deepcopy(applied(frozen))
    meta = pod["metadata"]
    for k in _VOLATILE_META:
        meta.pop(k, None)
    (meta.get("annotations") or {}).pop("kubectl.kubernetes.io/last-applied-configuration", None)
    meta["name"] = run_pod_name(run_id)
    labels = {
        k: v
        for k, v in (meta.get("labels") or {}).items()
        if k not in ("pod-template-hash", "controller-revision-hash")
    }
    labels.update({MANAGED_BY: "k3tui", RUN_LABEL: run_id.lower()[:63]})
    meta["labels"] = labels
    spec = pod["spec"]
    spec["restartPolicy"] = "Never"
    for c in spec.get("containers") or []:
        if c.get("name") != container:
            continue
        cmd = list(c.get("command") or [])
        if cmd and argv[: len(cmd)] == cmd:  # the manifest's own split of command and args is kept
            c["args"] = argv[len(cmd) :]
        else:
            c["command"], c["args"] = argv[:1], argv[1:]
        keep = [e for e in c.get("env") or [] if "value" not in e and e.get("name") not in env]
        c["env"] = keep + [{"name": k, "value": v} for k, v in env.items() if not v.startswith("<")]
        if image:
            c["image"] = image
    return pod


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """``{"spec.containers[vllm].env[LD_LIBRARY_PATH]": "/usr/local/cuda/compat/lib", …}``."""
    out: dict[str, Any] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(obj, list) and obj and all(isinstance(x, dict) and "name" in x for x in obj):
        for x in obj:
            rest = {k: v for k, v in x.items() if k != "name"}
            key = f"{prefix}[{x['name']}]"
            if set(rest) == {"value"}:
                out[key] = rest["value"]
            else:
                out.update(flatten(rest, key) or {key: {}})
    elif isinstance(obj, list) and not obj:
        pass  # an empty list is no field at all, as the API treats it
    elif isinstance(obj, list):
        out[prefix] = json.dumps(obj) if any(isinstance(x, (dict, list)) for x in obj) else " ".join(map(str, obj))
    else:
        out[prefix] = obj
    return out


def diff(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """Field-by-field differences of two manifests: ``[{"key", "old", "new"}]`` (None where absent)."""
    fa, fb = flatten(a), flatten(b)
    keys = [*fa, *(k for k in fb if k not in fa)]
    return [{"key": k, "old": fa.get(k), "new": fb.get(k)} for k in keys if fa.get(k) != fb.get(k)]

"""The compatibility baseline: a frozen scene (or one per node) against a profile.

Each check returns PASS, FAIL or UNKNOWN with the evidence that decided it, as a
``CheckVerdict`` event (``rung="baseline"``) the ladder and the report consume as-is.
UNKNOWN is honest: a fact that could not be read (its probe failed, no container was
found) never passes by default. A check the profile makes meaningless (GPU checks for a
CPU profile, image checks for a profile without an image) is left out, not passed.

A deployment is a group of hosts: the GPU count adds up across nodes, and with more
than one node two more checks ask that all nodes run the same driver and image digest.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..events import CheckVerdict
from ..profile import Profile
from . import hostfaults
from .model import Scene

PASS, FAIL, UNKNOWN = "PASS", "FAIL", "UNKNOWN"
Result = tuple[str, str]
"""(verdict, evidence)."""


def vtuple(version: str | None) -> tuple[int, ...] | None:
    """``"0.32.0+cpu"`` → (0, 32, 0); ``"580.159.04"`` → (580, 159, 4); None when not a version."""
    if not version:
        return None
    m = re.match(r"v?(\d+(?:\.\d+)*)", version.strip())
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


def at_least(have: str | None, need: str) -> bool | None:
    """Whether version ``have`` ≥ ``need`` (None when ``have`` is unknown)."""
    h, n = vtuple(have), vtuple(need)
    if h is None or n is None:
        return None
    return h[: len(n)] >= n


def _scenes(scene: Scene | Sequence[Scene]) -> list[Scene]:
    return [scene] if isinstance(scene, Scene) else list(scene)


def _per_node(scenes: list[Scene], fn: Callable[[Scene], Result]) -> Result:
    """Run a per-host check on every node: FAIL wins, then UNKNOWN; evidence per node."""
    results = [(s.alias, fn(s)) for s in scenes]
    if len(results) == 1:
        return results[0][1]
    verdict = (
        FAIL if any(r[0] == FAIL for _, r in results) else UNKNOWN if any(r[0] == UNKNOWN for _, r in results) else PASS
    )
    # evidence that already names its host ("gb300-02 GPU 3: Xid 79 …") is not prefixed with it again
    return verdict, "; ".join(
        r[1] if r[1].startswith(f"{a} ") or r[1].startswith(f"{a}:") else f"{a}: {r[1]}" for a, r in results
    )


# --- the checks -----------------------------------------------------------------------


def check_driver(s: Scene, p: Profile) -> Result:
    drv = s.host.driver_version
    if drv is None:
        why = next((pr.error for pr in s.probes if pr.name in ("smi_xml", "proc_driver") and not pr.ok), "")
        return UNKNOWN, f"driver version not readable ({why or 'no nvidia-smi output'})"
    ok = at_least(drv, p.driver.min_version)
    extra = f" (kernel module {s.host.driver_version_proc})" if s.host.driver_version_proc not in (None, drv) else ""
    return (PASS if ok else FAIL), f"driver {drv}{extra}; profile needs ≥ {p.driver.min_version}"


def check_gpus(scenes: list[Scene], p: Profile) -> Result:
    if not any(s.gpus for s in scenes):
        return UNKNOWN, "no GPU list (nvidia-smi failed or found none)"
    names = [g.name or "?" for s in scenes for g in s.gpus]
    wrong = sorted({n for n in names if p.gpus.model and p.gpus.model.lower() not in n.lower()})
    count = len(names)
    seen = ", ".join(f"{names.count(n)} × {n}" for n in sorted(set(names)))
    where = f" across {len(scenes)} nodes" if len(scenes) > 1 else ""
    need = f"profile needs ≥ {p.gpus.min_count} × {p.gpus.model or 'any GPU'}"
    caps = sorted({g.compute_cap for s in scenes for g in s.gpus if g.compute_cap})
    low = [c for c in caps if p.gpus.min_compute_cap and at_least(c, p.gpus.min_compute_cap) is False]
    if low:
        need += f" with compute capability ≥ {p.gpus.min_compute_cap} (seen {', '.join(caps)})"
    if wrong or low or count < p.gpus.min_count:
        return FAIL, f"{seen}{where}; {need}"
    return PASS, f"{seen}{where}; {need}"


def check_container_gpus(s: Scene, p: Profile) -> Result:
    if s.container is None:
        return UNKNOWN, "no serving container found (give --container)"
    if s.container_gpus is None:
        return UNKNOWN, "nvidia-smi -L inside the container failed (see probe container_smi_list)"
    host = {g.uuid for g in s.gpus if g.uuid}
    cont = {g["uuid"] for g in s.container_gpus}
    if not host:
        return UNKNOWN, "host GPU UUIDs not readable"
    if cont == host:
        return PASS, f"container sees the host's {len(host)} GPU(s), same UUIDs"
    missing, extra = sorted(host - cont), sorted(cont - host)
    return FAIL, f"container sees {len(cont)} GPU(s), host has {len(host)}" + (
        f"; not visible: {missing}" if missing else ""
    ) + (f"; unknown to host: {extra}" if extra else "")


def check_image(s: Scene, p: Profile) -> Result:
    if s.container is None:
        return UNKNOWN, f"no serving container found; profile expects {p.image.reference}"
    image = s.container.get("image") or ""
    digest = ", ".join(s.container.get("repo_digests") or []) or "no repo digest"
    tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else "latest"
    guessed = [pat for pat in p.image.forbidden_tag_patterns if re.search(pat, tag, re.I)]
    if guessed:
        return (
            FAIL,
            f"image {image} is a guessed variant (tag matches {guessed[0]!r}); the official image is {p.image.reference} ({digest})",
        )
    if _norm_image(image) != _norm_image(p.image.reference):
        return FAIL, f"image {image} is not the official {p.image.reference} ({digest})"
    return PASS, f"image {image} ({digest}, id {str(s.container.get('image_id'))[:19]})"


def _norm_image(ref: str) -> str:
    ref = re.sub(r"^(docker\.io/)?(library/)?", "", ref.split("@")[0])
    return ref if ":" in ref.rsplit("/", 1)[-1] else ref + ":latest"


_ARCH = {
    "x86_64": "amd64",
    "amd64": "amd64",
    "aarch64": "arm64",
    "arm64": "arm64",
    "ppc64le": "ppc64le",
    "s390x": "s390x",
}


def check_image_arch(s: Scene, p: Profile) -> Result:
    """A GB300 NVL72 tray is aarch64 (Grace): an amd64 image there dies with 'exec format error'."""
    host = _ARCH.get(s.host.arch or "")
    image = _ARCH.get(str((s.container or {}).get("architecture") or ""))
    if s.container is None:
        return UNKNOWN, "no serving container found"
    if host is None or image is None:
        return UNKNOWN, f"architecture not known (host {s.host.arch}, image {(s.container or {}).get('architecture')})"
    if host != image:
        return FAIL, f"image is built for {image}, the host is {s.host.arch} ({host}): it cannot run there"
    return PASS, f"image {image} on a {s.host.arch} host"


def image_cuda_major(s: Scene) -> tuple[int | None, str]:
    """The CUDA major version the serving stack was built for, and where that came from."""
    tc = vtuple(s.versions.get("torch_cuda"))
    if tc:
        return tc[0], f"torch.version.cuda {s.versions.get('torch_cuda')}"
    m = re.search(r"\+cu(\d{2,3})", s.versions.get("torch") or "")
    if m:
        return int(m.group(1)[:-1]), f"torch {s.versions['torch']}"
    env = dict(e.partition("=")[::2] for e in (s.container or {}).get("image_env") or [])
    cv = vtuple(env.get("CUDA_VERSION") or s.env.get("CUDA_VERSION"))
    if cv:
        return cv[0], f"CUDA_VERSION={env.get('CUDA_VERSION') or s.env.get('CUDA_VERSION')}"
    return None, ""


def check_image_cuda(s: Scene, p: Profile) -> Result:
    major, source = image_cuda_major(s)
    if major is None:
        return UNKNOWN, "CUDA build of the image not readable (no torch, no CUDA_VERSION)"
    want = p.image.cuda_major
    return (PASS if major == want else FAIL), f"CUDA {major} ({source}); profile needs CUDA {want} (cu{want}0)"


def check_versions(s: Scene, p: Profile) -> Result:
    v = s.versions
    have = f"python {v.get('python')}, torch {v.get('torch')} (CUDA {v.get('torch_cuda')}), vllm {v.get('vllm')}, nccl {v.get('nccl')}"
    problems = []
    for name, need in (
        ("vllm", p.versions.vllm_min),
        ("torch", p.versions.torch_min),
        ("python", p.versions.python_min),
    ):
        if need and at_least(v.get(name), need) is False:
            problems.append(f"{name} {v.get(name)} < {need}")
    built = vtuple(v.get("torch_cuda"))
    if p.versions.cuda_major and built and built[0] != p.versions.cuda_major:
        problems.append(f"torch built for CUDA {v.get('torch_cuda')}, profile needs {p.versions.cuda_major}")
    if problems:
        return FAIL, "; ".join(problems) + f" [{have}]"
    missing = [n for n in ("python", "torch", "vllm") if not v.get(n)]
    if missing:
        return UNKNOWN, f"not recorded: {', '.join(missing)} [{have}]"
    return PASS, have


def check_injected_env(s: Scene, p: Profile) -> Result:
    if not s.env and not any(pr.ok for pr in s.probes if pr.name in ("proc_environ", "container_env", "host_env")):
        return UNKNOWN, "environment not readable"
    bad = []
    for name, value in s.env.items():
        if not any(fnmatch.fnmatchcase(name, w) for w in p.env.watched):
            continue
        origin = s.env_origin.get(name, "?")
        if name in ("LD_LIBRARY_PATH", "LD_PRELOAD"):
            extra = [e for e in value.split(":") if e and e not in p.env.allowed_ld_paths]
            if extra:
                bad.append(f"{name} adds {':'.join(extra)} [{origin}]")
        elif name in p.env.allowed and p.env.allowed[name] in ("", value):
            continue
        elif origin != "image":
            bad.append(f"{name}={value[:80]} [{origin}]")
    if bad:
        return FAIL, "injected: " + "; ".join(bad)
    return PASS, "no injected library paths or NCCL_/CUDA_ variables"


def check_libcuda(s: Scene, p: Profile) -> Result:
    drv = s.host.driver_version
    compat_conf = [
        f for files in s.ld_so_conf.values() for f, e in files.items() if "compat" in f or any("compat" in x for x in e)
    ]
    lc = s.libcuda
    if lc is None:
        predicted = predicted_libcuda(s)
        if predicted and "compat" in predicted:
            seen = (
                " and the server log shows Error 803" if "803" in str((s.first_exception or {}).get("line", "")) else ""
            )
            return FAIL, (
                f"the container's linker resolves libcuda.so.1 to {predicted} ahead of the host driver {drv} "
                f"(predicted from ldconfig -p and LD_LIBRARY_PATH; no serving process to confirm){seen}: Error 803 risk"
            )
        risk = f"; {', '.join(compat_conf)} can shadow the host driver (Error 803 risk)" if compat_conf else ""
        why = (
            f"the serving process (pid {s.process.get('pid')}) has no libcuda mapped"
            if s.process
            else "no serving process found, so the loaded libcuda is unknown"
        )
        return UNKNOWN, why + risk
    if lc.get("compat") or (drv and lc.get("version") and lc["version"] != drv):
        return (
            FAIL,
            f"server loaded {lc['path']} (version {lc.get('version')}), host driver {drv}: a cuda-compat libcuda shadows the driver (Error 803 risk)",
        )
    if not lc.get("version") or not drv:
        return UNKNOWN, f"server loaded {lc['path']}; version {lc.get('version')} vs driver {drv} cannot be compared"
    return PASS, f"server loaded {lc['path']} = host driver {drv}"


def predicted_libcuda(s: Scene) -> str | None:
    """Which ``libcuda.so.1`` a process started in the container would load, from its linker facts.

    LD_LIBRARY_PATH directories come first (a directory the linker cache lists a
    ``libcuda.so.1`` in), then the cache's first ``libcuda.so.1`` entry. None when unknown.
    """
    entries = [e for e in (s.libraries.get("container_ldconfig") or []) if e.get("lib") == "libcuda.so.1"]
    if not entries:
        return None
    by_dir = {e["path"].rsplit("/", 1)[0]: e["path"] for e in entries}
    for d in (s.env.get("LD_LIBRARY_PATH") or "").split(":"):
        if d.rstrip("/") in by_dir:
            return by_dir[d.rstrip("/")]
    return entries[0]["path"]


def check_nodes_agree(scenes: list[Scene], what: str, get: Callable[[Scene], object]) -> Result:
    vals = {s.alias: get(s) for s in scenes}
    if any(v is None for v in vals.values()):
        return UNKNOWN, f"{what} unknown on " + ", ".join(a for a, v in vals.items() if v is None)
    distinct = set(map(str, vals.values()))
    listing = ", ".join(f"{a}={v}" for a, v in vals.items())
    return (
        (PASS, f"all {len(scenes)} nodes: {distinct.pop()}")
        if len(distinct) == 1
        else (FAIL, f"nodes differ: {listing}")
    )


# --- the host under the server (issue 14) ------------------------------------------------


def _faults(s: Scene, p: Profile, kinds: tuple[str, ...]) -> list[dict]:
    """The scene's host faults of ``kinds``, Xid fatality judged by this profile's catalogue."""
    out = []
    for f in s.host_faults:
        if f.get("kind") not in kinds:
            continue
        if f["kind"] == "xid" and p.hardware.xids:
            meaning, action, fatal = hostfaults.xid_class(int(f.get("code") or 0), f.get("line", ""), p.hardware.xids)
            f = {**f, "meaning": meaning, "action": action, "fatal": fatal}
        out.append(f)
    return out


def _fault_result(s: Scene, found: list[dict], ok: str) -> Result:
    bad = hostfaults.fatal(found)
    if bad:
        return FAIL, "; ".join(hostfaults.describe(f, s.alias) for f in bad[:4]) + (
            f" (+{len(bad) - 4} more)" if len(bad) > 4 else ""
        )
    seen = [f for f in found if not f.get("fatal")]
    return PASS, ok + (f"; not fatal: {hostfaults.describe(seen[0], s.alias)}" if seen else "")


def check_kernel_faults(s: Scene, p: Profile) -> Result:
    """No fatal Xid / SXid since the last GPU reset.

    The kernel log keeps a GPU's Xid until the next boot, but a GPU reset (``nvidia-smi -r``) may
    have cleared the fault since. The driver says whether it did: ``GPU Recovery Action`` in
    ``nvidia-smi -q`` (r550+) is ``None`` once nothing is owed, else the reset, reboot or drain the
    fault still needs. A fatal Xid of a GPU that answers ``None`` now is history (said, not failed);
    where the GPU does not answer, or the driver has no such field, the Xid since boot counts.
    """
    found = _faults(s, p, ("xid", "sxid"))
    probe = s.probe("xid")
    if not hostfaults.fatal(found) and probe is not None and not probe.ok:
        return UNKNOWN, f"kernel log not read: {probe.error}"
    src = (s.kernel_log or {}).get("source") or "kernel log"
    actions = {g.index: (g.health or {}).get("recovery_action") for g in s.gpus}
    cleared = [f for f in hostfaults.fatal(found) if f["kind"] == "xid" and actions.get(f.get("gpu")) == "None"]
    owed = [f for f in found if f not in cleared]
    for f in owed:
        act = actions.get(f.get("gpu"))
        if f.get("fatal") and act not in (None, "None"):
            f["action"] = f"{f.get('action')} (the driver asks for: {act})"
    verdict, text = _fault_result(s, owed, f"no fatal Xid or SXid since the last GPU reset ({src})")
    if cleared:
        text += "; history: " + "; ".join(
            f"{hostfaults.describe(f, s.alias)} — the GPU reports no recovery action pending now (reset since)"
            for f in cleared[:3]
        )
    return verdict, text


def check_gpu_memory(s: Scene, p: Profile) -> Result:
    """No uncorrectable ECC error since the reset, no pending or failed row remap / page retirement."""
    if not any(g.health for g in s.gpus):
        return _old_scene_ecc(s)
    return _fault_result(s, _faults(s, p, ("ecc", "row-remap")), "no uncorrectable ECC error, no pending row remap")


def _old_scene_ecc(s: Scene) -> Result:
    """A scene frozen before issue 14 has ECC counters (``ecc_errors``) but no row-remapper facts."""
    unc = {
        g.index: sum(v for k, v in g.ecc_errors.items() if k.startswith("volatile.") and "uncorrectable" in k)
        for g in s.gpus
        if g.ecc_errors
    }
    if not unc:
        return UNKNOWN, "GPU health not read (nvidia-smi -q -x failed)"
    bad = {i: n for i, n in unc.items() if n}
    if bad:
        return FAIL, "; ".join(
            f"{s.alias} GPU {i}: {n} uncorrectable ECC error(s) since the reset" for i, n in bad.items()
        )
    return PASS, "no uncorrectable ECC error (row remapping not recorded in this scene)"


def check_nvlink(s: Scene, p: Profile) -> Result:
    """Every GPU's fabric registration Completed / Success, no NVLink link down."""
    found = _faults(s, p, ("fabric", "nvlink"))
    states = sorted({f"{(g.fabric or {}).get('state')}/{(g.fabric or {}).get('status')}" for g in s.gpus})
    in_fabric = any((g.fabric or {}).get("state") for g in s.gpus)
    ok = f"fabric {', '.join(states)} on every GPU" if in_fabric else "no NVLink fabric registration on this host (N/A)"
    return _fault_result(s, found, ok)


def in_nvlink_domain(scenes: list[Scene]) -> bool:
    """Hosts whose GPUs registered in a multi-node NVLink fabric (GB300 NVL72 trays), or run IMEX."""
    return any((g.fabric or {}).get("state") for s in scenes for g in s.gpus) or any(
        (s.imex or {}).get("service") not in (None, "absent") for s in scenes
    )


def check_imex(s: Scene, p: Profile) -> Result:
    """IMEX up on this tray with every node of its nodes file connected."""
    imex = s.imex
    if imex is None:
        return UNKNOWN, "IMEX state not read (probe fabric_services failed)"
    if imex.get("service") in (None, "absent"):
        return FAIL, (
            f"{s.alias}: nvidia-imex is not installed or not running on a host in a multi-node NVLink domain: "
            "install and start nvidia-imex with the deployment's nodes_config.cfg"
        )
    return _fault_result(
        s, _faults(s, p, ("imex",)), f"IMEX {imex.get('service')}, domain {imex.get('domain_state')}, "
        f"{len(imex.get('nodes') or [])} node(s) READY"
    )  # fmt: skip


def check_imex_channel(s: Scene, p: Profile) -> Result:
    """The serving container sees an IMEX channel (without one, multi-node NVLink memory sharing fails)."""
    if s.container is None:
        return UNKNOWN, "no serving container found"
    c = (s.imex_channels or {}).get("container") or _spec_channels(s.container)
    if c is None:
        return UNKNOWN, "IMEX channels inside the container not read (probe container_imex_channels)"
    if c.get("present"):
        how = " (its OCI runtime spec's devices)" if c.get("source") else ""
        return PASS, f"container sees /dev/nvidia-caps-imex-channels/{', '.join(c['channels'])}{how}"
    host = (s.imex_channels or {}).get("host") or {}
    where = (
        "the host has " + ", ".join(host.get("channels") or []) if host.get("present") else "the host has none either"
    )
    return FAIL, (
        f"{s.alias}: no IMEX channel in the serving container ({where}): pass /dev/nvidia-caps-imex-channels "
        "into it (--device, or NVIDIA_IMEX_CHANNELS=0 with the NVIDIA runtime)"
    )


_CHANNELS = "/dev/nvidia-caps-imex-channels/"


def _spec_channels(container: Any) -> dict[str, Any] | None:
    """A containerd / Kubernetes container's IMEX channels from its OCI runtime spec (devices and mounts):
    what the runtime gave the container, read without exec-ing into it. None for other containers."""
    if not isinstance(container, dict) or "OCI runtime spec" not in str(container.get("source") or ""):
        return None
    paths = [*(container.get("devices") or []), *((m or {}).get("destination") for m in container.get("mounts") or [])]
    chans = sorted({p[len(_CHANNELS) :] for p in paths if isinstance(p, str) and p.startswith(_CHANNELS)})
    return {"present": bool(chans), "channels": chans, "source": container["source"]}


def check_one_domain(scenes: list[Scene]) -> Result:
    """Every GPU of every host in one fabric ClusterUUID and CliqueId (one NVLink domain)."""
    seen: dict[tuple[str | None, str | None], list[str]] = {}
    for s in scenes:
        for g in s.gpus:
            f = g.fabric or {}
            seen.setdefault((f.get("cluster_uuid"), f.get("clique_id")), []).append(f"{s.alias} GPU {g.index}")
    if not seen:
        return UNKNOWN, "no GPU fabric facts"
    if len(seen) == 1:
        ((cluster, clique),) = seen
        return PASS, f"all {sum(map(len, seen.values()))} GPUs in ClusterUUID {cluster}, CliqueId {clique}"
    main = max(seen, key=lambda k: len(seen[k]))
    odd = [f"{', '.join(v[:4])}{'…' if len(v) > 4 else ''} in ClusterUUID {k[0]} CliqueId {k[1]}"
           for k, v in seen.items() if k != main]  # fmt: skip
    return FAIL, (
        f"not one NVLink domain: {'; '.join(odd)} (the others: ClusterUUID {main[0]} CliqueId {main[1]}): "
        "NCCL fails at init; move the odd tray into the deployment's clique (fabric manager / NVLink switch "
        "partition) or pick trays of one domain"
    )


# --- all of them ------------------------------------------------------------------------

TITLES = {
    "driver": "host driver ≥ profile",
    "gpus": "GPU model and count",
    "container-gpus": "container sees the host's GPUs",
    "image": "official image tag",
    "image-cuda": "image CUDA build",
    "image-arch": "image built for the host's architecture",
    "versions": "CUDA / PyTorch / vLLM versions",
    "injected-env": "no injected library paths / NCCL_ / CUDA_",
    "libcuda": "loaded libcuda matches the host driver",
    "nodes-driver": "all nodes on the same driver",
    "nodes-image": "all nodes on the same image digest",
    "kernel-faults": "no fatal Xid / SXid since boot",
    "gpu-memory": "no uncorrectable ECC, no pending row remap",
    "nvlink": "NVLink links up, fabric Completed / Success",
    "imex": "IMEX up with every node connected",
    "imex-channel": "IMEX channel visible in the container",
    "nodes-nvlink-domain": "all nodes in one ClusterUUID and CliqueId",
}


def check_baseline(scene: Scene | Sequence[Scene], profile: Profile) -> list[CheckVerdict]:
    """Every baseline check that applies to ``profile``, as ``CheckVerdict`` events."""
    scenes = _scenes(scene)
    p = profile
    results: dict[str, Result] = {}
    if p.gpus.required:
        if p.driver.min_version:
            results["driver"] = _per_node(scenes, lambda s: check_driver(s, p))
        results["gpus"] = check_gpus(scenes, p)
    if p.image.reference:
        results["container-gpus"] = _per_node(scenes, lambda s: check_container_gpus(s, p))
        results["image"] = _per_node(scenes, lambda s: check_image(s, p))
        results["image-arch"] = _per_node(scenes, lambda s: check_image_arch(s, p))
    if p.image.cuda_major:
        results["image-cuda"] = _per_node(scenes, lambda s: check_image_cuda(s, p))
    results["versions"] = _per_node(scenes, lambda s: check_versions(s, p))
    results["injected-env"] = _per_node(scenes, lambda s: check_injected_env(s, p))
    if p.gpus.required:
        results["libcuda"] = _per_node(scenes, lambda s: check_libcuda(s, p))
    if p.gpus.required:
        _hardware_checks(scenes, p, results)
    if len(scenes) > 1:
        results["nodes-driver"] = check_nodes_agree(scenes, "driver", lambda s: s.host.driver_version)
        if p.image.reference:
            results["nodes-image"] = check_nodes_agree(scenes, "image digest", _image_identity)
    host = scenes[0].alias if len(scenes) == 1 else ""
    return [
        CheckVerdict(host=host, rung="baseline", check=k, verdict=v, evidence=e, title=TITLES[k])
        for k, (v, e) in results.items()
    ]


def _hardware_checks(scenes: list[Scene], p: Profile, results: dict[str, Result]) -> None:
    results["kernel-faults"] = _per_node(scenes, lambda s: check_kernel_faults(s, p))
    results["gpu-memory"] = _per_node(scenes, lambda s: check_gpu_memory(s, p))
    results["nvlink"] = _per_node(scenes, lambda s: check_nvlink(s, p))
    if p.hardware.nvlink_domain and in_nvlink_domain(scenes):
        results["imex"] = _per_node(scenes, lambda s: check_imex(s, p))
        if p.image.reference:
            results["imex-channel"] = _per_node(scenes, lambda s: check_imex_channel(s, p))
        if len(scenes) > 1:
            results["nodes-nvlink-domain"] = check_one_domain(scenes)


def _image_identity(s: Scene) -> object:
    if s.container is None:
        return None
    return ",".join(s.container.get("repo_digests") or []) or s.container.get("image_id")


def exit_status(verdicts: Sequence[CheckVerdict]) -> int:
    """0 all pass; 1 any fail (even if others could not run); 2 none failed but some unknown."""
    if any(v.verdict == FAIL for v in verdicts):
        return 1
    return 2 if any(v.verdict != PASS for v in verdicts) else 0

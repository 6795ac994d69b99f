"""From probe outputs to a Scene: pure, so it is tested on real captures without a host.

Each fact has one preferred source and ordered fallbacks (the XML report, then the CSV
query, then the table …); where two sources that should agree do not, the scene gets a
*note* instead of silently picking one — "nvidia-smi and /proc/driver/nvidia/version
disagree" is exactly the kind of hidden variable a freeze exists to catch.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..remote.base import RunResult
from . import hostfaults
from . import parsers as P
from .model import Gpu, GpuProcess, HostFacts, ProbeRecord, Scene

# Variables that change what a serving process does (the rest of the env is noise).
SERVING_ENV = re.compile(
    r"^(LD_LIBRARY_PATH|LD_PRELOAD|PATH|PYTHONPATH|CUDA_.*|NCCL_.*|VLLM_.*|NVIDIA_.*|TORCH_.*|PYTORCH_.*|"
    r"HF_.*|HUGGING_FACE_.*|TRANSFORMERS_.*|OMP_.*|UCX_.*|GLOO_.*|MASTER_.*|RAY_.*|TP_.*|GPU_.*|.*_VISIBLE_DEVICES)$"
)


class Outputs:
    """Probe results by name, parsed on demand; a parse failure marks the probe failed."""

    def __init__(self, results: dict[str, RunResult]) -> None:
        self.results = results
        self.parse_errors: dict[str, str] = {}
        self._parsed: dict[tuple[str, Any], Any] = {}

    def ok(self, name: str) -> bool:
        r = self.results.get(name)
        return r is not None and r.ok

    def get(self, name: str, parser: Callable[[str], Any]) -> Any:
        """The parsed output of a probe that succeeded, or None."""
        if not self.ok(name):
            return None
        key = (name, parser)
        if key not in self._parsed:
            try:
                self._parsed[key] = parser(self.results[name].stdout)
            except (P.ParseError, ValueError, KeyError, IndexError, TypeError) as exc:
                self.parse_errors[name] = f"output not understood: {exc}"
                self._parsed[key] = None
        return self._parsed[key]


def assemble(outs: Outputs, *, alias: str = "", pid: int | None = None) -> Scene:
    """Build the scene of one host from its probe outputs (secrets NOT yet redacted)."""
    s = Scene(alias=alias)
    _host(outs, s)
    _gpus(outs, s)
    _container(outs, s)
    _process(outs, s, pid)
    _versions(outs, s)
    _libraries(outs, s)
    _env(outs, s)
    xid = outs.get("xid", P.parse_xid)
    s.xids = xid["events"] if xid else []
    s.topology = outs.get("smi_topo", P.parse_topo)
    _hardware(outs, s)
    s.probes = _records(outs)
    return s


def _hardware(outs: Outputs, s: Scene) -> None:
    """GPU health and fabric from the XML, NVLink, the NVLink domain's services; then the host faults."""
    health = outs.get("smi_xml", P.health_from_smi_xml) or []
    by_uuid = {h["uuid"]: h for h in health if h.get("uuid")}
    for i, g in enumerate(s.gpus):
        h = by_uuid.get(g.uuid) or (health[i] if i < len(health) and not by_uuid else None)
        if h:
            g.fabric = {k: h["fabric"][k] for k in ("state", "status", "clique_id", "cluster_uuid")}
            g.health = {
                k: h[k]
                for k in ("ecc", "retired_pages", "remapped_rows", "clocks_event_reasons", "pcie", "recovery_action")
            }
            s.notes += _health_notes(g.index, h)
    s.nvlink = outs.get("nvlink", P.parse_nvlink)
    services = outs.get("fabric_services", P.parse_fabric_services)
    if services:
        s.imex, s.fabricmanager = services["imex"], services["fabricmanager"]
        s.imex_channels["host"] = services["channels"]
    chans = outs.get("container_imex_channels", P.parse_channels)
    if chans is not None:
        s.imex_channels["container"] = chans
    kernel = outs.get("xid", P.parse_kernel_events)
    if kernel:
        s.kernel_log = {"source": kernel["source"], "boot": kernel["boot"]}
    s.host_faults = hostfaults.build(s, (kernel or {}).get("events", []), (kernel or {}).get("uuids", {}))


# Clocks-event reasons that mean the hardware holds the GPU back (idle, app clocks, sync boost do not).
_SLOWDOWNS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")


def _health_notes(index: int | None, h: dict[str, Any]) -> list[str]:
    """A PCIe link narrower than the GPU's maximum, clocks held down by the hardware: worth saying, not roots.

    (A link *generation* below the maximum is normal at idle: the GPU downshifts to save power.)
    """
    out = []
    pcie = h.get("pcie") or {}
    if pcie.get("width") and pcie.get("width_max") and pcie["width"] < pcie["width_max"]:
        out.append(
            f"GPU {index}: PCIe link x{pcie['width']} of x{pcie['width_max']} (degraded width: reseat or check the riser)"
        )
    slow = [r for r in h.get("clocks_event_reasons") or [] if r in _SLOWDOWNS]
    if slow:
        out.append(f"GPU {index}: clocks held down by {', '.join(slow)} (thermal / power: throughput will be lower)")
    return out


def _host(outs: Outputs, s: Scene) -> None:
    os_rel = outs.get("os_release", P.parse_os_release) or {}
    un = outs.get("uname", P.parse_uname) or {}
    xml = outs.get("smi_xml", P.parse_smi_xml) or {}
    proc = outs.get("proc_driver", P.parse_proc_driver) or {}
    rows = outs.get("smi_query", _query_gpus) or []
    smi_driver = xml.get("driver_version") or next((r["driver_version"] for r in rows if r.get("driver_version")), None)
    hn = outs.results.get("hostname")
    s.host = HostFacts(
        hostname=(hn.stdout.strip() if hn and hn.ok else None) or un.get("hostname"),
        os=os_rel.get("pretty_name"),
        os_id=os_rel.get("id"),
        kernel=un.get("kernel"),
        arch=un.get("arch") or None,
        driver_version=smi_driver or proc.get("driver_version"),
        driver_version_proc=proc.get("driver_version"),
        kernel_module=proc.get("module"),
        cuda_driver_version=xml.get("cuda_driver_version"),
    )
    nvml = outs.get("nvml", P.parse_pynvml) or {}
    if s.host.driver_version is None:
        s.host.driver_version = nvml.get("driver_version")
    if s.host.cuda_driver_version is None:
        s.host.cuda_driver_version = nvml.get("cuda_driver_version")
    if smi_driver and nvml.get("driver_version") and smi_driver != nvml["driver_version"]:
        s.notes.append(f"nvidia-smi ({smi_driver}) and NVML ({nvml['driver_version']}) report different drivers")
    if smi_driver and proc.get("driver_version") and smi_driver != proc["driver_version"]:
        s.notes.append(
            f"nvidia-smi ({smi_driver}) and /proc/driver/nvidia/version ({proc['driver_version']}) disagree: "
            "user-space driver and loaded kernel module differ (reboot pending after an upgrade?)"
        )


def _query_gpus(text: str) -> list[dict[str, Any]]:
    from .probes import QUERY_GPU_FIELDS

    return P.gpus_from_query(P.parse_csv_query(text, QUERY_GPU_FIELDS))


def _gpus(outs: Outputs, s: Scene) -> None:
    xml = outs.get("smi_xml", P.parse_smi_xml)
    rows = outs.get("smi_query", _query_gpus) or []
    by_uuid = {r["uuid"]: r for r in rows if r.get("uuid")}
    gpus = xml["gpus"] if xml else rows
    if not gpus:
        gpus = (outs.get("nvml", P.parse_pynvml) or {}).get("gpus") or outs.get("smi_list", P.parse_smi_list) or []
    for g in gpus:
        q = by_uuid.get(g.get("uuid"), {})
        merged = {
            k: v
            for k, v in {**q, **{k: v for k, v in g.items() if v is not None}}.items()
            if k in Gpu.__struct_fields__
        }
        s.gpus.append(Gpu(**merged))
    uuid_index = {g.uuid: g.index for g in s.gpus}
    apps = outs.get("smi_apps", lambda t: P.apps_from_query(P.parse_csv_query(t, _apps_fields())))
    procs = apps if apps is not None else (xml or {}).get("processes", [])
    for p in procs:
        s.gpu_processes.append(
            GpuProcess(
                pid=p.get("pid"),
                name=p.get("name"),
                used_memory_mib=p.get("used_memory_mib"),
                gpu_uuid=p.get("gpu_uuid"),
                gpu_index=p.get("gpu_index", uuid_index.get(p.get("gpu_uuid"))),
            )
        )


def _apps_fields() -> tuple[str, ...]:
    from .probes import QUERY_APPS_FIELDS

    return QUERY_APPS_FIELDS


def _container(outs: Outputs, s: Scene) -> None:
    c = outs.get("docker_inspect", P.container_from_inspect)
    if c is None:
        return
    img = outs.get("docker_image_inspect", P.image_from_inspect)
    if img:
        c["repo_digests"] = img["repo_digests"]
        c["repo_tags"] = img["repo_tags"]
        c["image_env"] = img["env"]
        c["architecture"] = img["architecture"]
    s.container = c
    cg = outs.get("container_smi_list", P.parse_smi_list)
    if cg is not None:
        s.container_gpus = cg
        host_ids, cont_ids = {g.uuid for g in s.gpus if g.uuid}, {g["uuid"] for g in cg}
        if host_ids and cont_ids - host_ids:
            s.notes.append(f"the container sees GPUs the host does not list: {sorted(cont_ids - host_ids)}")
        elif host_ids and cont_ids != host_ids:
            s.notes.append(f"the container sees {len(cont_ids)} of the host's {len(host_ids)} GPUs")


def _process(outs: Outputs, s: Scene, pid: int | None) -> None:
    argv = outs.get("proc_cmdline", P.parse_cmdline)
    env = outs.get("proc_environ", P.parse_env)
    if pid is None and argv is None and env is None:
        return
    s.process = {"pid": pid, "cmdline": argv, "env": env}


def _versions(outs: Outputs, s: Scene) -> None:
    for name, source in (("container_versions", "container"), ("proc_versions", "process"), ("host_versions", "host")):
        v = outs.get(name, P.parse_versions_json)
        if v:
            s.versions.update({k: v.get(k) for k in ("python", "torch", "torch_cuda", "vllm", "nccl")})
            s.versions.update(source=source, executable=v.get("executable"), transformers=v.get("transformers"))
            return


def _libraries(outs: Outputs, s: Scene) -> None:
    loaded = outs.get("proc_maps", P.parse_maps)
    s.libraries = {
        "host_ldconfig": outs.get("host_ldconfig", P.parse_ldconfig),
        "container_ldconfig": outs.get("container_ldconfig", P.parse_ldconfig),
        "loaded": loaded,
    }
    s.ld_so_conf = {
        k: v
        for k, v in (
            ("host", outs.get("host_ld_so_conf", P.parse_ld_so_conf)),
            ("container", outs.get("container_ld_so_conf", P.parse_ld_so_conf)),
        )
        if v is not None
    }
    for where, files in s.ld_so_conf.items():
        for f, entries in files.items():
            if "compat" in f or any("compat" in e for e in entries):
                s.notes.append(
                    f"{where} linker config {f} lists a cuda-compat path: its libcuda can shadow the host driver (Error 803)"
                )
    s.libcuda = P.libcuda_from_maps(loaded) if loaded else None
    drv = s.host.driver_version
    if s.libcuda and drv and s.libcuda.get("version") and s.libcuda["version"] != drv:
        s.notes.append(
            f"the server loaded libcuda {s.libcuda['version']} ({s.libcuda['path']}) but the host driver is {drv}"
        )


def _env(outs: Outputs, s: Scene) -> None:
    proc_env = (s.process or {}).get("env")
    cont_env = outs.get("container_env", P.parse_env)
    host_env = outs.get("host_env", P.parse_env)
    source, env = next(
        ((n, e) for n, e in (("process", proc_env), ("container", cont_env), ("host", host_env)) if e is not None),
        ("", {}),
    )
    s.env = {k: v for k, v in sorted(env.items()) if SERVING_ENV.match(k)}
    image_env = _env_list((s.container or {}).get("image_env") or [])
    config_env = _env_list((s.container or {}).get("env") or [])
    for k, v in s.env.items():
        if s.container is None:
            s.env_origin[k] = source
        elif image_env.get(k) == v:
            s.env_origin[k] = "image"
        elif config_env.get(k) == v:
            s.env_origin[k] = "runtime"
        else:
            s.env_origin[k] = "process"


def _env_list(items: list[str]) -> dict[str, str]:
    return dict(i.partition("=")[::2] for i in items)


def _records(outs: Outputs) -> list[ProbeRecord]:
    out = []
    for name, r in outs.results.items():
        err = outs.parse_errors.get(name, "") or _why(r)
        out.append(
            ProbeRecord(
                name=name,
                ok=r.ok and name not in outs.parse_errors,
                error=err,
                seconds=round(r.duration, 4),
                status=r.status,
            )
        )
    return out


def _why(r: RunResult) -> str:
    if r.ok:
        return ""
    if r.timed_out:
        return r.error or "timed out"
    if r.error:
        return r.error
    last = next((ln for ln in reversed(r.stderr.strip().splitlines()) if ln.strip()), "")
    return f"exit {r.status}" + (f": {last[:300]}" if last else "")

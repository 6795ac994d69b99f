"""The frozen scene of one host: everything that can change what a run does.

A msgspec Struct so the JSON shape is a schema (issue 5 lists its keys) and so a scene
read back from a ``--json`` file or a recording's ``SceneFrozen`` is typed again. Decoding
is tolerant (unknown keys are ignored) because scenes written by a newer k3tui must still
diff and check. Every value that could not be read is ``None``, never a guess; the
``probes`` list says which probe failed and why.

A deployment is a group of hosts: one Scene per host, tagged by ``alias``; comparing
them is :mod:`k3tui.scene.diff`'s job.
"""

from __future__ import annotations

from typing import Any

import msgspec

SCENE_SCHEMA = 1


class HostFacts(msgspec.Struct, kw_only=True):
    hostname: str | None = None
    os: str | None = None
    os_id: str | None = None
    kernel: str | None = None
    arch: str | None = None
    driver_version: str | None = None
    """The driver as nvidia-smi reports it (what user space talks to)."""
    driver_version_proc: str | None = None
    """The loaded kernel module's version (``/proc/driver/nvidia/version``)."""
    kernel_module: str | None = None
    cuda_driver_version: str | None = None
    """The highest CUDA the driver supports (nvidia-smi's ``CUDA Version``)."""


class Gpu(msgspec.Struct, kw_only=True):
    index: int | None = None
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    memory_total_mib: float | None = None
    memory_used_mib: float | None = None
    compute_cap: str | None = None
    architecture: str | None = None
    persistence_mode: str | None = None
    mig_mode: str | None = None
    ecc_mode: str | None = None
    ecc_errors: dict[str, int] = {}
    fabric: dict[str, Any] | None = None
    """The NVLink domain as this GPU registered in it: ``state``, ``status``, ``clique_id``,
    ``cluster_uuid`` (``nvidia-smi -q -x`` Fabric; None where the XML has no such section)."""
    health: dict[str, Any] = {}
    """``ecc`` (volatile/aggregate uncorrectable), ``retired_pages``, ``remapped_rows``,
    ``clocks_event_reasons`` (active), ``pcie`` (gen/width against the maximum)."""


class GpuProcess(msgspec.Struct, kw_only=True):
    pid: int | None = None
    name: str | None = None
    used_memory_mib: float | None = None
    gpu_index: int | None = None
    gpu_uuid: str | None = None


class ProbeRecord(msgspec.Struct, kw_only=True):
    name: str
    ok: bool
    error: str = ""
    seconds: float = 0.0
    status: int | None = None


class Scene(msgspec.Struct, kw_only=True):
    schema: int = SCENE_SCHEMA
    alias: str = ""
    """The host as the operator named it (the event tag)."""
    simulated: bool = False
    frozen_at: float = 0.0
    """Unix seconds."""
    seconds: float = 0.0
    """How long the freeze took."""
    host: HostFacts = msgspec.field(default_factory=HostFacts)
    gpus: list[Gpu] = []
    gpu_processes: list[GpuProcess] = []
    topology: dict[str, Any] | None = None
    xids: list[dict[str, Any]] = []
    host_faults: list[dict[str, Any]] = []
    """Hardware faults (:mod:`k3tui.scene.hostfaults`): ``kind`` (xid, sxid, ecc, row-remap, nvlink,
    fabric, imex), ``gpu``, ``uuid``, ``code``, ``fatal``, ``time``, ``line`` …"""
    kernel_log: dict[str, Any] | None = None
    """Where the kernel events came from: ``source`` (journalctl, dmesg) and ``boot`` (unix)."""
    nvlink: dict[str, Any] | None = None
    """Per GPU NVLink link states and error counters (``nvidia-smi nvlink -s`` / ``-e``)."""
    imex: dict[str, Any] | None = None
    """The IMEX daemon: ``service``, ``domain_state``, ``nodes``, ``config_nodes``."""
    fabricmanager: dict[str, Any] | None = None
    """nvidia-fabricmanager's ``service`` state (8-GPU NVSwitch servers)."""
    imex_channels: dict[str, Any] = {}
    """IMEX channel devices: ``{"host": {present, channels}, "container": {…}}``."""
    container: dict[str, Any] | None = None
    container_gpus: list[dict[str, Any]] | None = None
    """GPUs as ``nvidia-smi -L`` inside the container lists them (None: not read)."""
    versions: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"python": None, "torch": None, "torch_cuda": None, "vllm": None, "nccl": None}
    )
    process: dict[str, Any] | None = None
    """The serving process: ``pid``, ``cmdline`` (argv), ``env`` (redacted)."""
    libcuda: dict[str, Any] | None = None
    """The libcuda the serving process mapped: ``path``, ``version``, ``compat`` …"""
    libraries: dict[str, Any] = {}
    """Other loaded/offered libraries: ``host_ldconfig``, ``container_ldconfig``, ``loaded``."""
    ld_so_conf: dict[str, dict[str, list[str]]] = {}
    """``{"host": {file: entries}, "container": {…}}``."""
    env: dict[str, str] = {}
    """The serving environment that matters (LD_*, CUDA_*, NCCL_*, VLLM_*, NVIDIA_*, …), redacted."""
    env_origin: dict[str, str] = {}
    """Where each ``env`` variable comes from: ``image``, ``runtime``, ``process``, ``host``."""
    first_exception: dict[str, Any] | None = None
    log_source: str = ""
    log_scan: dict[str, Any] | None = None
    """How the server log was read (issue 15): path, format, method, byte ranges read, size and
    SHA-256 computed on the host, the excerpt around the root; None when only a tail was read."""
    launcher: str = ""
    """Which launcher froze it (:mod:`k3tui.launch`): ``docker``, ``containerd``, ``kubernetes`` …"""
    pod: dict[str, Any] | None = None
    """The Kubernetes pod of the serving container: ``namespace``, ``name``, ``uid``, ``container``,
    ``node``, ``owner``, ``restarts``, ``manifest`` (as applied, redacted), ``events`` (None: not a pod)."""
    job: dict[str, Any] | None = None
    """The Slurm job of the server (:mod:`k3tui.launch.slurm`): ``id``, ``name``, ``state``, ``nodes``,
    ``gres`` (requested, bound per node), ``script`` (as submitted), ``env`` (the step's, redacted) and
    ``env_origin``, ``container``, ``output``, ``history`` (earlier attempts), ``findings`` (None: not a job)."""
    notes: list[str] = []
    probes: list[ProbeRecord] = []

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (every key present, ``null`` where unknown)."""
        return msgspec.to_builtins(self)

    def probe(self, name: str) -> ProbeRecord | None:
        return next((p for p in self.probes if p.name == name), None)


def scene_from_dict(data: dict[str, Any]) -> Scene:
    """A Scene from JSON data (a ``--json`` file, a ``SceneFrozen`` event); unknown keys ignored."""
    return msgspec.convert(data, Scene)


_encoder = msgspec.json.Encoder()


def scene_json(scene: Scene, indent: int = 2) -> bytes:
    """The scene as one JSON object, pretty-printed."""
    return msgspec.json.format(_encoder.encode(scene), indent=indent)

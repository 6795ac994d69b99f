"""Profiles: a model's serving boundary as data, so the next model is a new file, not new code.

A profile (``assets/profiles/NAME.toml`` or any path) says what a compatible host and
container look like (the baseline checks read it) and how the ladder launches, queries
and extends the server (minimal command, base args, fixed request, features, debug
toggles). It is decoded *strictly* (``forbid_unknown_fields``): a typo in a profile is a
clear :class:`~k3tui.errors.ProfileError` naming the field, never a silently ignored key.

Commands are argv lists with ``{placeholders}`` the ladder fills (``{model_path}``,
``{port}``, ``{value}``), never shell strings, so a profile cannot smuggle shell syntax.

``[launch.multinode]`` says how a deployment of several hosts starts, as data too: vLLM's
own multi-node options (``mode = "vllm"``: the flags the head and each worker add) or a
Ray cluster (``mode = "ray"``: ``ray start`` on every node, then ``vllm serve`` with the
ray executor on the head once ``ray status`` shows every node). The placeholders there are
``{nnodes}``, ``{rank}``, ``{master_addr}`` (= ``{head_addr}``), ``{master_port}`` and
``{ray_port}``; an unknown one is a ProfileError when the profile loads, not at launch.
"""

from __future__ import annotations

import string
import tomllib
from pathlib import Path
from typing import Any, Literal

import msgspec

from .assets import asset
from .errors import ProfileError


class _Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, omit_defaults=True):
    pass


class ImageSpec(_Strict):
    """The official container image and its CUDA build."""

    reference: str = ""
    """``repo:tag`` of the official image, e.g. ``vllm/vllm-openai:kimi-k3``; "" = no image required."""
    cuda_major: int | None = None
    """The CUDA major version the image (and torch in it) must be built for (13 = cu130)."""
    forbidden_tag_patterns: list[str] = []
    """Regexes of tags that are guesses, not official (``cu129``)."""


class DriverSpec(_Strict):
    min_version: str = ""
    """Lowest host driver version (``580``, ``580.65.06``); "" = no requirement."""


class GpuSpec(_Strict):
    required: bool = True
    """False for CPU profiles: GPU checks are then not applicable."""
    model: str = ""
    """Substring the GPU name must contain (``GB300``)."""
    min_count: int = 0
    """GPUs the deployment needs in total (across all its hosts)."""
    min_compute_cap: str = ""


class VersionSpec(_Strict):
    vllm_min: str = ""
    torch_min: str = ""
    python_min: str = ""
    cuda_major: int | None = None
    """CUDA major version torch must be built for (``torch.version.cuda``)."""


class EnvSpec(_Strict):
    """Which variables count as injected library/runtime paths (baseline check)."""

    watched: list[str] = msgspec.field(default_factory=lambda: ["LD_LIBRARY_PATH", "LD_PRELOAD", "NCCL_*", "CUDA_*"])
    allowed: dict[str, str] = {}
    """Variables whose presence is expected, with the value they must have ("" = any value)."""
    allowed_ld_paths: list[str] = msgspec.field(
        default_factory=lambda: ["/usr/local/nvidia/lib64", "/usr/local/nvidia/lib"]
    )
    """LD_LIBRARY_PATH entries the NVIDIA runtime sets in official images (not an injection)."""


class DebugToggle(_Strict):
    name: str
    env: dict[str, str] = {}
    args: list[str] = []
    warning: str = ""
    """Shown (and recorded) before the toggle is applied; non-empty = needs confirmation."""


NODE_PLACEHOLDERS = ("nnodes", "rank", "master_addr", "head_addr", "master_port", "ray_port")
"""What ``[launch.multinode]`` templates may name (see :func:`fill_node_args`)."""


class VllmNodes(_Strict):
    """vLLM's own multi-node options: what the head and each worker add to the launch."""

    head_args: list[str] = msgspec.field(
        default_factory=lambda: [
            "--nnodes", "{nnodes}", "--node-rank", "0", "--master-addr", "{master_addr}", "--master-port", "{master_port}",
        ]
    )  # fmt: skip
    worker_args: list[str] = msgspec.field(
        default_factory=lambda: [
            "--nnodes", "{nnodes}", "--node-rank", "{rank}", "--master-addr", "{master_addr}",
            "--master-port", "{master_port}", "--headless",
        ]
    )  # fmt: skip
    """Workers run ``--headless`` (no API server)."""


class RayNodes(_Strict):
    """A Ray cluster: ``ray start`` on every node (each a detached run), then ``vllm serve`` on the head."""

    head: list[str] = msgspec.field(
        default_factory=lambda: ["ray", "start", "--head", "--port", "{ray_port}", "--block"]
    )
    worker: list[str] = msgspec.field(
        default_factory=lambda: ["ray", "start", "--address", "{head_addr}:{ray_port}", "--block"]
    )
    status: list[str] = msgspec.field(default_factory=lambda: ["ray", "status", "--address", "{head_addr}:{ray_port}"])
    """Polled on the head until it lists every node (Ray's ``Active:`` section)."""
    joined: str = "Ray runtime started."
    """The line ``ray start`` prints once its node is in the cluster (how a missing node is named)."""
    serve_args: list[str] = msgspec.field(default_factory=lambda: ["--distributed-executor-backend", "ray"])
    """Added to the head's ``vllm serve``."""
    serve_env: dict[str, str] = msgspec.field(default_factory=lambda: {"RAY_ADDRESS": "{head_addr}:{ray_port}"})
    """Env of the head's ``vllm serve`` (``RAY_ADDRESS``: join the cluster, also from another container)."""
    docker_args: list[str] = msgspec.field(default_factory=lambda: ["-v", "/tmp/ray:/tmp/ray"])
    """Container launches: more ``docker run`` arguments for the ray runs and the head's ``vllm serve``. A
    driver reaches its node's raylet through Unix sockets under ``/tmp/ray``: the head's two containers share it."""


class MultiNodeSpec(_Strict):
    """How a deployment of several hosts starts (``k3tui ladder a,b --multinode``)."""

    mode: Literal["vllm", "ray"] = "vllm"
    master_port: int = 29501
    """Default ``{master_port}`` (an inventory group's ``master_port`` overrides it)."""
    ray_port: int = 6379
    """Default ``{ray_port}``: the Ray head's GCS port."""
    cluster_timeout_s: float = 300.0
    """Ray mode: how long the head waits for every node to join before ``vllm serve`` starts anyway."""
    poll_s: float = 2.0
    """Ray mode: seconds between two ``ray status`` polls."""
    vllm: VllmNodes = msgspec.field(default_factory=VllmNodes)
    ray: RayNodes = msgspec.field(default_factory=RayNodes)


class LaunchSpec(_Strict):
    minimal: list[str]
    """The minimal launch argv (placeholders: ``{model_path}``, ``{port}``, ``{host}``)."""
    base_args: list[str] = []
    """Arguments every launch carries (already in ``minimal`` where the recipe puts them there)."""
    env: dict[str, str] = {}
    in_container: bool = False
    """True: the launch runs in ``image`` (``docker run``); False: directly on the host."""
    model: str = ""
    """Served model name (what requests ask for)."""
    model_path: str = ""
    """Default for ``{model_path}`` ("" = the operator gives it)."""
    port: int = 8000
    host: str = "127.0.0.1"
    ready_timeout_s: float = 3600.0
    """How long start-up may take before the rung calls it a hang."""
    docker_args: list[str] = []
    """Extra ``docker run`` arguments when ``in_container`` (``--gpus all``, ``--ipc=host`` …)."""
    multinode: MultiNodeSpec = msgspec.field(default_factory=MultiNodeSpec)
    """How several hosts start as one deployment (``[launch.multinode]``)."""


class RequestSpec(_Strict):
    file: str = "baseline.json"
    """A file under ``assets/requests/`` or a path."""
    repeat: int = 3
    timeout_s: float = 120.0


class Feature(_Strict):
    name: str
    title: str = ""
    args: list[str] = []
    """Added to the launch (``{value}`` is replaced by each of ``values``)."""
    remove_args: list[str] = []
    """Removed from the launch first (``--no-enable-prefix-caching`` when enabling it)."""
    env: dict[str, str] = {}
    values: list[str] = []
    """Values tried one at a time, in order (context lengths …)."""
    client_concurrency: list[int] = []
    """For client-side features: how many copies of the request are sent at once."""
    check: str = ""
    """How the ladder judges the feature: ``prefix-cache-hits``, ``completes`` …"""


class XidClass(_Strict):
    """One Xid code of NVIDIA's catalogue: what it means and what the operator does about it."""

    meaning: str
    action: str = "check the GPU with nvidia-smi -q and the kernel log"
    fatal: bool = False
    """True: the GPU needs a reset or the node a drain before any further step (the ladder stops)."""


class HardwareSpec(_Strict):
    """Which host faults are roots (``[hardware]``): the Xid catalogue and the NVLink-domain rules."""

    xids: dict[str, XidClass] = {}
    """Xid code (as a string key) → its class; a code not listed is reported, not fatal."""
    nvlink_domain: bool = False
    """True: multi-node NVLink hosts (GB300 NVL72 trays) must share one fabric cluster and clique,
    run IMEX with every node connected and show an IMEX channel in the serving container."""
    nvlink_error_growth: int = 1
    """NVLink error counters growing by at least this much between two freezes of a host is a fault."""


class Profile(_Strict, kw_only=True):
    name: str
    description: str = ""
    source: str = ""
    """Where the boundary comes from (a recipe URL or document)."""
    image: ImageSpec = msgspec.field(default_factory=ImageSpec)
    driver: DriverSpec = msgspec.field(default_factory=DriverSpec)
    gpus: GpuSpec = msgspec.field(default_factory=GpuSpec)
    versions: VersionSpec = msgspec.field(default_factory=VersionSpec)
    env: EnvSpec = msgspec.field(default_factory=EnvSpec)
    launch: LaunchSpec
    request: RequestSpec = msgspec.field(default_factory=RequestSpec)
    features: list[Feature] = []
    debug_toggles: list[DebugToggle] = []
    hardware: HardwareSpec = msgspec.field(default_factory=HardwareSpec)
    path: str = ""
    """Filled in by the loader: the file the profile came from."""

    def feature(self, name: str) -> Feature:
        """The feature called ``name`` (ProfileError if the profile has none)."""
        for f in self.features:
            if f.name == name:
                return f
        raise ProfileError(
            f"profile {self.name!r} has no feature {name!r} (it has: {', '.join(f.name for f in self.features) or 'none'})"
        )


def profile_path(name_or_path: str) -> Path:
    """Resolve a profile name (``kimi-k3``) or a path to a file."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or "/" in name_or_path or p.exists():
        return p
    return asset("profiles", f"{name_or_path}.toml")


def available_profiles() -> list[str]:
    """Names of the profiles shipped in ``assets/profiles``."""
    d = asset("profiles")
    return sorted(f.stem for f in d.glob("*.toml")) if d.is_dir() else []


def read_toml(path: Path, what: str, error: type[ProfileError] = ProfileError, missing: str = "") -> dict[str, Any]:
    """A TOML file as a table, or one line naming the file and what is wrong with it.

    Args:
        what: the kind of file, first word of every message (``profile``, ``inventory``).
        error: the exception class raised.
        missing: the whole message when the file does not exist ("" = ``WHAT PATH: no such file``).
    """
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(missing or f"{what} {path}: no such file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{what} {path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise error(f"{what} {path}: cannot read: {exc.strerror or exc}") from None


def load_profile(name_or_path: str) -> Profile:
    """Load and validate a profile.

    Raises:
        ProfileError: the file is missing, not TOML, or does not match the schema.
    """
    path = profile_path(name_or_path)
    known = ", ".join(available_profiles()) or "none"
    missing = f"profile {name_or_path!r} not found ({path}); shipped profiles: {known}"
    return parse_profile(read_toml(path, "profile", missing=missing), str(path))


def parse_profile(raw: dict, where: str = "<profile>") -> Profile:
    """Validate an already-parsed TOML table as a profile."""
    try:
        prof = msgspec.convert(raw, Profile)
    except msgspec.ValidationError as exc:
        raise ProfileError(f"profile {where}: {exc}") from None
    if not prof.launch.minimal:
        raise ProfileError(f"profile {where}: launch.minimal is empty")
    _check_multinode(prof.launch.multinode, where)
    return msgspec.structs.replace(prof, path=where)


def _check_multinode(m: MultiNodeSpec, where: str) -> None:
    at = f"profile {where}: launch.multinode"
    for name, port in (("master_port", m.master_port), ("ray_port", m.ray_port)):
        if not 0 < port < 65536:
            raise ProfileError(f"{at}.{name} {port} out of range")
    if m.cluster_timeout_s <= 0 or m.poll_s <= 0:
        raise ProfileError(f"{at}: cluster_timeout_s and poll_s must be positive")
    templates = {
        "vllm.head_args": m.vllm.head_args, "vllm.worker_args": m.vllm.worker_args, "ray.head": m.ray.head,
        "ray.worker": m.ray.worker, "ray.status": m.ray.status, "ray.serve_args": m.ray.serve_args,
        "ray.serve_env": list(m.ray.serve_env.values()),
    }  # fmt: skip
    for key, args in templates.items():
        for arg in args:
            try:
                names = {f for _, f, _, _ in string.Formatter().parse(arg) if f is not None}
            except ValueError as exc:
                raise ProfileError(f"{at}.{key}: {arg!r}: {exc}") from None
            bad = sorted(names - set(NODE_PLACEHOLDERS))
            if bad:
                raise ProfileError(
                    f"{at}.{key}: unknown placeholder {{{bad[0]}}} in {arg!r} (known: {', '.join(NODE_PLACEHOLDERS)})"
                )
    if m.mode == "ray" and (not m.ray.head or not m.ray.worker or not m.ray.status):
        raise ProfileError(f"{at}.ray: head, worker and status commands are needed in ray mode")


def fill_node_args(args: list[str], **values: Any) -> list[str]:
    """A ``[launch.multinode]`` template with its placeholders filled (``head_addr`` = ``master_addr``)."""
    values.setdefault("head_addr", values.get("master_addr", ""))
    return [a.format(**values) for a in args]

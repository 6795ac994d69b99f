"""Profiles: a model's serving boundary as data, so the next model is a new file, not new code.

A profile (``assets/profiles/NAME.toml`` or any path) says what a compatible host and
container look like (the baseline checks read it) and how the ladder launches, queries
and extends the server (minimal command, base args, fixed request, features, debug
toggles). It is decoded *strictly* (``forbid_unknown_fields``): a typo in a profile is a
clear :class:`~k3tui.errors.ProfileError` naming the field, never a silently ignored key.

Commands are argv lists with ``{placeholders}`` the ladder fills (``{model_path}``,
``{port}``, ``{value}``), never shell strings, so a profile cannot smuggle shell syntax.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

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


def load_profile(name_or_path: str) -> Profile:
    """Load and validate a profile.

    Raises:
        ProfileError: the file is missing, not TOML, or does not match the schema.
    """
    path = profile_path(name_or_path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        known = ", ".join(available_profiles()) or "none"
        raise ProfileError(f"profile {name_or_path!r} not found ({path}); shipped profiles: {known}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ProfileError(f"profile {path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ProfileError(f"profile {path}: cannot read: {exc.strerror or exc}") from None
    return parse_profile(raw, str(path))


def parse_profile(raw: dict, where: str = "<profile>") -> Profile:
    """Validate an already-parsed TOML table as a profile."""
    try:
        prof = msgspec.convert(raw, Profile)
    except msgspec.ValidationError as exc:
        raise ProfileError(f"profile {where}: {exc}") from None
    if not prof.launch.minimal:
        raise ProfileError(f"profile {where}: launch.minimal is empty")
    return msgspec.structs.replace(prof, path=where)

"""A run's configuration as data, diffed variable by variable: the one-variable rule lives here.

Why a struct and not the command line: two command lines can differ in order and
spelling (``--no-enable-prefix-caching`` vs ``--enable-prefix-caching``) and still be one
variable apart. A :class:`RunConfig` names every variable that can change a run (image,
observed driver, GPU count and visibility, TP size, model path, max-model-len,
gpu-memory-utilization, client concurrency, the other flags, env), so :func:`diff` counts
*variables*, not characters. ``--X`` / ``--no-X`` collapse to one flag variable ``X``
(True/False), so turning prefix caching on is one change.

The command line is built from a config (:func:`launch_argv`) and parsed back
(:func:`parse_command`), so a pasted ``vllm serve …`` or ``docker run … vllm serve …`` can
become the starting config.
"""

from __future__ import annotations

import shlex
from typing import Any

import msgspec

from ..errors import UsageError

# Options that are first-class fields of RunConfig (not kept in ``flags``).
_FIELD_OPTS = {
    "--tensor-parallel-size": "tensor_parallel_size",
    "-tp": "tensor_parallel_size",
    "--max-model-len": "max_model_len",
    "--gpu-memory-utilization": "gpu_memory_utilization",
    "--model": "model_path",
}
_INT_FIELDS = {"tensor_parallel_size", "max_model_len", "gpu_count", "concurrency"}
_FLOAT_FIELDS = {"gpu_memory_utilization"}
OBSERVED = ("driver", "gpu_count")
"""Variables k3tui observes on the host but cannot set (or revert) itself."""
SCALARS = (
    "image",
    "driver",
    "gpu_count",
    "visible_devices",
    "tensor_parallel_size",
    "model_path",
    "max_model_len",
    "gpu_memory_utilization",
    "concurrency",
)


class RunConfig(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Everything that can change what one run does.

    ``flags`` maps an option name without dashes to its value: ``True``/``False`` for
    switches (``--x`` / ``--no-x``), a string for options with a value, a list of strings
    for options given more than once.
    """

    entry: list[str] = msgspec.field(default_factory=lambda: ["vllm", "serve"])
    """The program and subcommand (``vllm serve``)."""
    image: str = ""
    """Container image reference ("" = runs directly on the host)."""
    driver: str = ""
    """Host driver version as observed (not set by k3tui)."""
    gpu_count: int | None = None
    """GPUs seen on the host (observed)."""
    visible_devices: str = ""
    """``CUDA_VISIBLE_DEVICES`` ("" = all)."""
    tensor_parallel_size: int | None = None
    model_path: str = ""
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    concurrency: int = 1
    """Copies of the fixed request sent at once (client side)."""
    flags: dict[str, Any] = {}
    env: dict[str, str] = {}
    docker_args: list[str] = []
    """``docker run`` arguments (not a variable of the run: how it is contained)."""


# --- the diff ---------------------------------------------------------------------------------


def variables(cfg: RunConfig) -> dict[str, Any]:
    """Flatten a config to ``{variable: value}`` (``flag:NAME``, ``env:NAME`` for the maps)."""
    out: dict[str, Any] = {k: getattr(cfg, k) for k in SCALARS}
    out.update({f"flag:{k}": v for k, v in cfg.flags.items()})
    out.update({f"env:{k}": v for k, v in cfg.env.items()})
    return out


def diff(last: RunConfig | None, new: RunConfig) -> list[dict[str, Any]]:
    """The variables that differ between two configs: ``[{"key", "old", "new"}]`` in a stable order."""
    a = variables(last) if last is not None else {}
    b = variables(new)
    if last is not None and last.entry != new.entry:
        a["entry"], b["entry"] = " ".join(last.entry), " ".join(new.entry)
    keys = [k for k in b if k in a or b[k] not in (None, "")] + [k for k in a if k not in b]
    changed = [k for k in keys if a.get(k) != b.get(k)]
    return [{"key": k, "old": a.get(k), "new": b.get(k)} for k in changed]


def apply_changes(cfg: RunConfig, changes: dict[str, Any]) -> RunConfig:
    """A new config with ``changes`` applied (``None`` removes a flag or env variable).

    Keys are variable names (``max_model_len``, ``flag:enable-prefix-caching``,
    ``env:VLLM_LOGGING_LEVEL``). Raises UsageError for an unknown variable.
    """
    flags, env = dict(cfg.flags), dict(cfg.env)
    scalars: dict[str, Any] = {}
    for key, value in changes.items():
        if key.startswith("flag:"):
            _set(flags, key[5:], value)
        elif key.startswith("env:"):
            _set(env, key[4:], None if value is None else str(value))
        elif key in SCALARS:
            scalars[key] = _coerce(key, value)
        else:
            known = ", ".join(SCALARS)
            raise UsageError(f"unknown run variable {key!r}: use one of {known}, flag:NAME or env:NAME")
    return msgspec.structs.replace(cfg, flags=flags, env=env, **scalars)


def changes_from_args(args: list[str], remove: list[str] | None = None) -> dict[str, Any]:
    """Turn launch arguments to add/remove (a profile feature) into variable changes."""
    changes: dict[str, Any] = {}
    for opt in remove or []:
        name = opt.lstrip("-")
        changes[f"flag:{name[3:] if name.startswith('no-') else name}"] = None
    probe = RunConfig(flags={})
    _parse_options(args, probe)
    for k in SCALARS:
        v = getattr(probe, k)
        if v != getattr(RunConfig(), k):
            changes[k] = v
    changes.update({f"flag:{k}": v for k, v in probe.flags.items()})
    return changes


def _set(d: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        d.pop(key, None)
    else:
        d[key] = value


def _coerce(key: str, value: Any) -> Any:
    if value is None or value == "":
        return None if key not in ("image", "driver", "visible_devices", "model_path") else ""
    try:
        if key in _INT_FIELDS:
            return int(value)
        if key in _FLOAT_FIELDS:
            return float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{key} must be a number, got {value!r}") from None
    return str(value)


# --- command line ---------------------------------------------------------------------------


def server_argv(cfg: RunConfig) -> list[str]:
    """``vllm serve MODEL --opt …`` for a config (without env or container)."""
    argv = list(cfg.entry)
    if cfg.model_path:
        argv.append(cfg.model_path)
    for opt, field in (
        ("--tensor-parallel-size", "tensor_parallel_size"),
        ("--max-model-len", "max_model_len"),
        ("--gpu-memory-utilization", "gpu_memory_utilization"),
    ):
        v = getattr(cfg, field)
        if v is not None:
            argv += [opt, _fmt(v)]
    for name, v in cfg.flags.items():
        argv += _flag_argv(name, v)
    return argv


def launch_argv(cfg: RunConfig, run_name: str = "k3tui") -> list[str]:
    """The whole launch: ``docker run … IMAGE …`` when the config has an image, else the server argv.

    Env goes to the container with ``-e`` (for a host launch the caller passes ``cfg.env``
    to :meth:`Host.start_detached`).
    """
    argv = server_argv(cfg)
    if not cfg.image:
        return argv
    head = ["docker", "run", "--rm", "--name", run_name, *cfg.docker_args]
    if cfg.visible_devices:
        head += ["-e", f"CUDA_VISIBLE_DEVICES={cfg.visible_devices}"]
    for k, v in cfg.env.items():
        head += ["-e", f"{k}={v}"]
    return [*head, "--entrypoint", argv[0], cfg.image, *argv[1:]]


def launch_env(cfg: RunConfig) -> dict[str, str]:
    """Env for a host launch (a container launch carries it in ``-e`` instead)."""
    if cfg.image:
        return {}
    env = dict(cfg.env)
    if cfg.visible_devices:
        env["CUDA_VISIBLE_DEVICES"] = cfg.visible_devices
    return env


def command_line(cfg: RunConfig, run_name: str = "k3tui") -> str:
    """One shell-quoted line a human can paste (env first for host launches)."""
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in launch_env(cfg).items())
    cmd = shlex.join(launch_argv(cfg, run_name))
    return f"{env} {cmd}" if env else cmd


def _fmt(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _flag_argv(name: str, v: Any) -> list[str]:
    if v is True:
        return [f"--{name}"]
    if v is False:
        return [f"--no-{name}"]
    if isinstance(v, list):
        return [x for item in v for x in (f"--{name}", str(item))]
    return [f"--{name}", str(v)]


# --- parsing a pasted command back --------------------------------------------------------------


def parse_command(line: str | list[str]) -> RunConfig:
    """Parse ``[env K=V …] [docker run … IMAGE] vllm serve MODEL [opts]`` back into a RunConfig.

    Raises:
        UsageError: the line is not a vLLM server launch this parser understands.
    """
    try:
        argv = shlex.split(line) if isinstance(line, str) else list(line)
    except ValueError as exc:
        raise UsageError(f"cannot parse the launch command: {exc}") from None
    cfg = RunConfig(flags={}, env={})
    argv = _take_env(argv, cfg)
    if argv[:2] == ["docker", "run"]:
        argv = _take_docker(argv[2:], cfg)
    return _take_server(argv, cfg)


def _take_env(argv: list[str], cfg: RunConfig) -> list[str]:
    if argv[:1] == ["env"]:
        argv = argv[1:]
    while argv and "=" in argv[0] and not argv[0].startswith("-") and argv[0].split("=", 1)[0].isidentifier():
        k, v = argv.pop(0).split("=", 1)
        _put_env(cfg, k, v)
    return argv


def _put_env(cfg: RunConfig, k: str, v: str) -> None:
    if k == "CUDA_VISIBLE_DEVICES":
        cfg.visible_devices = v
    else:
        cfg.env[k] = v


_DOCKER_WITH_VALUE = {
    "--name",
    "--gpus",
    "--network",
    "--ipc",
    "-v",
    "--volume",
    "--shm-size",
    "-p",
    "--publish",
    "--runtime",
    "--ulimit",
    "--device",
    "-w",
    "--workdir",
    "--user",
    "-u",
    "--mount",
    "--env-file",
    "--platform",
    "--pull",
}


def _take_docker(argv: list[str], cfg: RunConfig) -> list[str]:
    entry: list[str] = []
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        opt, _, inline = argv[i].partition("=")
        val = inline or (argv[i + 1] if i + 1 < len(argv) else "")
        step = 1 if inline or opt not in _DOCKER_WITH_VALUE | {"-e", "--env", "--entrypoint"} else 2
        if opt in ("-e", "--env"):
            k, _, v = val.partition("=")
            _put_env(cfg, k, v)
        elif opt == "--entrypoint":
            entry = [val]
        elif opt not in ("--rm", "--name", "-d", "--detach", "-it", "-t", "-i"):
            cfg.docker_args += argv[i : i + step]
        i += step
    if i >= len(argv):
        raise UsageError("docker run without an image in the launch command")
    cfg.image, rest = argv[i], argv[i + 1 :]
    if entry:
        return entry + rest
    # The official vllm/vllm-openai images run `vllm serve` as their entrypoint.
    return rest if rest[:1] == ["vllm"] else ["vllm", "serve", *rest]


def _take_server(argv: list[str], cfg: RunConfig) -> RunConfig:
    if argv[:2] == ["vllm", "serve"]:
        cfg.entry, rest = ["vllm", "serve"], argv[2:]
        if rest and not rest[0].startswith("-"):
            cfg.model_path, rest = rest[0], rest[1:]
    elif len(argv) >= 3 and argv[1] == "-m" and argv[2].startswith("vllm.entrypoints"):
        cfg.entry, rest = argv[:3], argv[3:]
    else:
        shown = " ".join(argv[:3]) or "(empty)"
        raise UsageError(f"not a vLLM server launch: expected 'vllm serve MODEL …', got {shown!r}")
    _parse_options(rest, cfg)
    return cfg


def _parse_options(rest: list[str], cfg: RunConfig) -> None:
    i = 0
    while i < len(rest):
        tok = rest[i]
        if not tok.startswith("-"):
            raise UsageError(f"unexpected argument {tok!r} in the launch command")
        opt, eq, inline = tok.partition("=")
        has_value = bool(eq) or (i + 1 < len(rest) and not _is_option(rest[i + 1]))
        value = inline if eq else (rest[i + 1] if has_value else None)
        i += 1 if eq or not has_value else 2
        _store(cfg, opt, value)


def _is_option(tok: str) -> bool:
    return tok.startswith("--") or (tok.startswith("-") and len(tok) > 1 and not tok[1].isdigit() and tok[1] != ".")


def _store(cfg: RunConfig, opt: str, value: str | None) -> None:
    field = _FIELD_OPTS.get(opt)
    if field and value is not None:
        setattr(cfg, field, _coerce(field, value))
        return
    name = opt.lstrip("-")
    if value is None:
        if name.startswith("no-"):
            cfg.flags[name[3:]] = False
        else:
            cfg.flags[name] = True
        return
    old = cfg.flags.get(name)
    cfg.flags[name] = value if old is None else ([*old, value] if isinstance(old, list) else [old, value])


def from_profile(profile: Any, *, model_path: str = "", port: int | None = None) -> RunConfig:
    """The minimal launch of a profile as a RunConfig (placeholders filled)."""
    launch = profile.launch
    fill = {
        "model_path": model_path or launch.model_path or launch.model,
        "port": str(port or launch.port),
        "host": launch.host,
    }
    argv = [_fill(a, fill) for a in launch.minimal]
    cfg = parse_command(argv)
    for k, v in launch.env.items():
        _put_env(cfg, k, v)
    if launch.in_container and profile.image.reference:
        cfg.image = profile.image.reference
        cfg.docker_args = list(launch.docker_args)
    return cfg


def _fill(arg: str, fill: dict[str, str]) -> str:
    try:
        return arg.format(**fill)
    except (KeyError, IndexError, ValueError):
        raise UsageError(
            f"profile launch argument {arg!r} has an unknown placeholder (known: model_path, port, host)"
        ) from None

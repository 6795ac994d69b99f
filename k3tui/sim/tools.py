"""The fake tools of the simulated GB300 host (``nvidia-smi``, ``docker``, ``uname`` …).

Each is a tiny wrapper in ``ROOT/bin`` that runs ``python -S tool_main.py ROOT CTX TOOL
ARGS``; this module answers from ``ROOT/state/host.json`` (the expanded scenario) and
``ROOT/state/procs/`` (the fake ``vllm`` processes now holding GPU memory). ``CTX`` is
``host`` or ``ctr:NAME``: inside a container the same GPUs are visible but ``ldconfig``,
the files and the env are the image's. Output formats are the real tools' (see
:mod:`k3tui.sim.smi`); errors print the real tools' messages and exit codes.

Stdlib only, and quick: a freeze runs ~25 of these at once. The simulated SSH server also
runs them in its own process (:func:`capture`) for the exact commands of a freeze, so
those need no process at all (:mod:`k3tui.sim.fastpath`).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from . import containers, smi
from .pathmap import PathMap, recorded_alive
from .pathmap import alive as _alive

# --- state --------------------------------------------------------------------------


def load_state(root: str) -> dict[str, Any]:
    return json.loads((Path(root) / "state" / "host.json").read_text())


def gpu_procs(root: str) -> list[dict[str, Any]]:
    """Processes now holding GPU memory on this simulated host (dead ones are dropped)."""
    out = []
    for f in sorted((Path(root) / "state" / "procs").glob("*.json")):
        try:
            p = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if recorded_alive(p) and p.get("gpus") and int(p.get("used_mib", 0)) > 0:
            for i in p["gpus"]:
                out.append(
                    {
                        "pid": p["pid"],
                        "name": p.get("gpu_names", {}).get(str(i), p["name"]),
                        "gpus": [i],
                        "used_mib": p["used_mib"],
                    }
                )
    return out


def owner_alive() -> bool:
    """Is the process simulating this host still there? (loops end with it: no orphans)"""
    owner = os.environ.get("K3SIM_OWNER")
    return not owner or _alive(int(owner))


_SINK: ContextVar[tuple[list[bytes], list[bytes]] | None] = ContextVar("k3sim_tool_sink", default=None)
"""Where a tool run in the simulating process writes (see :func:`capture`); None: the real stdout/stderr."""


def _out(text: str) -> None:
    sink = _SINK.get()
    if sink is not None:
        sink[0].append(text.encode("utf-8", "surrogateescape"))
        return
    sys.stdout.write(text)
    sys.stdout.flush()


def _out_bytes(data: bytes) -> None:
    sink = _SINK.get()
    if sink is not None:
        sink[0].append(data)
        return
    sys.stdout.buffer.write(data)
    sys.stdout.flush()


def _err(text: str) -> None:
    sink = _SINK.get()
    if sink is not None:
        sink[1].append(text.encode("utf-8", "surrogateescape"))
        return
    sys.stderr.write(text)
    sys.stderr.flush()


# --- nvidia-smi -----------------------------------------------------------------------


def nvidia_smi(state: dict[str, Any], args: list[str]) -> int:
    host = state["host"]
    root = state["root"]
    if args[:1] == ["topo"]:
        _out(_topo(host))
        return 0
    if args[:1] == ["nvlink"]:
        return _nvlink(host, args[1:])
    fields, apps, fmt, select, loop_ms, mode = None, None, {"csv"}, None, None, "plain"
    i = 0
    while i < len(args):
        a = args[i]
        val = ""
        if "=" in a and a.startswith("--"):
            a, val = a.split("=", 1)
        elif a in (
            "--query-gpu",
            "--query-compute-apps",
            "--format",
            "-i",
            "--id",
            "-lms",
            "-l",
            "--loop",
            "--loop-ms",
        ) and i + 1 < len(args):
            val = args[i + 1]
            i += 1
        if a == "--query-gpu":
            fields = val.split(",")
        elif a == "--query-compute-apps":
            apps = val.split(",")
        elif a == "--format":
            fmt = set(val.split(","))
        elif a in ("-i", "--id") and val.replace(",", "").isdigit():
            select = [int(x) for x in val.split(",")]
        elif a in ("-lms", "--loop-ms") and val.isdigit():
            loop_ms = int(val)
        elif a in ("-l", "--loop") and val.isdigit():
            loop_ms = int(val) * 1000
        elif a == "-L" or a == "--list-gpus":
            mode = "list"
        elif a in ("-q", "--query"):
            mode = "xml" if mode == "xml" else "q"
        elif a in ("-x", "--xml-format"):
            mode = "xml"
        else:
            _err("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n")
            return 2
        i += 1
    try:
        if fields is not None or apps is not None:
            return _smi_csv(host, root, fields, apps, fmt, select, loop_ms)
    except smi.BadField as exc:
        _out(f"{exc}\n\n")
        return 2
    render = {"plain": smi.plain, "list": lambda h, p: smi.listing(h), "q": smi.query, "xml": smi.query_xml}[mode]
    while True:
        _out(render(host, gpu_procs(root)))
        if loop_ms is None or not owner_alive():
            return 0
        time.sleep(loop_ms / 1000)


def _smi_csv(
    host: dict[str, Any],
    root: str,
    fields: list[str] | None,
    apps: list[str] | None,
    fmt: set[str],
    select: list[int] | None,
    loop_ms: int | None,
) -> int:
    first = True
    while True:
        procs = gpu_procs(root)
        if fields is not None:
            _out(smi.csv_gpus(host, procs, fields, fmt, select, header=first))
        else:
            _out(smi.csv_apps(host, procs, apps or [], fmt if first else fmt | {"noheader"}))
        if loop_ms is None or not owner_alive():
            return 0
        first = False
        time.sleep(loop_ms / 1000)


def _nvlink(host: dict[str, Any], args: list[str]) -> int:
    from . import fabric

    if args[:1] in (["-s"], ["--status"]):
        _out(fabric.nvlink_status(host))
    elif args[:1] in (["-e"], ["--errorcounters"]):
        _out(fabric.nvlink_errors(host))
    else:
        _err("nvidia-smi nvlink: this simulated host answers only -s and -e\n")
        return 2
    return 0


def _topo(host: dict[str, Any]) -> str:
    n = len(host["gpus"])
    link = host.get("nvlink", "NV18")
    head = "\t\x1b[4m" + "\t".join(f"GPU{i}" for i in range(n)) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
    rows = ""
    for i in range(n):
        cells = "\t".join(" X " if j == i else link for j in range(n))
        half = n // 2 or 1
        cpus = "0-71" if i < half else "72-143"
        rows += f"GPU{i}\t{cells}\t{cpus}\t{0 if i < half else 1}\t\tN/A\n"
    legend = (
        "\nLegend:\n\n  X    = Self\n"
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
        "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
        "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
        "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
        "  PIX  = Connection traversing at most a single PCIe bridge\n"
        "  NV#  = Connection traversing a bonded set of # NVLinks\n"
    )
    return head + rows + legend


# --- uname, hostname, kernel log, ldconfig ------------------------------------------------


def uname(state: dict[str, Any], args: list[str]) -> int:
    h = state["host"]
    parts = {
        "s": "Linux",
        "n": h["hostname"],
        "r": h["kernel"],
        "v": h["kernel_version"],
        "m": h["arch"],
        "p": h["arch"],
        "i": h["arch"],
        "o": "GNU/Linux",
    }
    flags = "".join(a.lstrip("-") for a in args) or "s"
    if "a" in flags or "all" in args or "--all" in args:
        flags = "snrvmpio"
    order = [k for k in "snrvmpio" if k in flags]
    _out(" ".join(parts[k] for k in order) + "\n")
    return 0


def hostname(state: dict[str, Any], args: list[str]) -> int:
    _out(state["host"]["hostname"] + "\n")
    return 0


def _kernel_lines(state: dict[str, Any]) -> list[str]:
    from ..assets import asset

    text = asset("scenarios", "host", state["host"]["dmesg"]).read_text().replace("@DRIVER@", state["host"]["driver"])
    lines = text.splitlines()
    extra = Path(state["root"]) / "state" / "dmesg"
    if extra.is_file():
        lines += extra.read_text().splitlines()
    return lines


def dmesg(state: dict[str, Any], args: list[str]) -> int:
    _out("".join(line + "\n" for line in _kernel_lines(state)))
    return 0


def journalctl(state: dict[str, Any], args: list[str]) -> int:
    if "-k" not in args and "--dmesg" not in args:
        _out("-- No entries --\n")
        return 0
    host = state["host"]["hostname"]
    for line in _kernel_lines(state):
        _out(f"{journal_stamp(line, state, args)} {host} kernel: {line.split('] ', 1)[-1]}\n")
    return 0


def journal_stamp(line: str, state: dict[str, Any], args: list[str]) -> str:
    """The stamp journald gives a kernel line: boot time + its dmesg seconds (``-o short-iso-precise`` or short)."""
    m = re.match(r"\[\s*(\d+\.\d+)\]", line)
    t = float(state["host"].get("boot_time", 0)) + (float(m.group(1)) if m else 0.0)
    if "short-iso-precise" in args or "--output=short-iso-precise" in args:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}+0000"
    return time.strftime("%b %d %H:%M:%S", time.gmtime(t))


def ldconfig(state: dict[str, Any], ctx: str, args: list[str]) -> int:
    from ..assets import asset

    if "-p" not in args and "--print-cache" not in args:
        _err("ldconfig: Can't create temporary cache file /etc/ld.so.cache~: Read-only file system\n")
        return 1
    c = state.get("container") or {}
    name = (
        c.get("ldconfig", "ldconfig-container.txt")
        if ctx.startswith("ctr:")
        else state["host"].get("ldconfig", "ldconfig-host.txt")
    )
    text = asset("scenarios", "host", name).read_text()
    entries = [line for line in text.splitlines() if line.startswith("\t")]
    if ctx.startswith("ctr:") and c.get("compat_conf"):
        compat = asset("scenarios", "host", c.get("compat_ldconfig", "ldconfig-compat.txt")).read_text().splitlines()
        entries = [line for line in compat if line.startswith("\t")] + entries
    _out(f"{len(entries)} libs found in cache `/etc/ld.so.cache'\n" + "".join(e + "\n" for e in entries))
    return 0


# --- docker ---------------------------------------------------------------------------

_RUN_VALUE_OPTS = {
    "--gpus",
    "--name",
    "-e",
    "--env",
    "-v",
    "--volume",
    "--ipc",
    "--shm-size",
    "--network",
    "--net",
    "-p",
    "--publish",
    "--ulimit",
    "--runtime",
    "--entrypoint",
    "--restart",
    "-w",
    "--workdir",
    "--label",
    "-l",
    "--device",
    "--cpus",
    "--memory",
    "-m",
    "--pids-limit",
    "--user",
    "-u",
    "--platform",
    "--hostname",
    "-h",
    "--env-file",
    "--mount",
}


def docker(state: dict[str, Any], args: list[str]) -> int:
    if not args:
        _err("Usage:  docker [OPTIONS] COMMAND\n")
        return 1
    cmd, rest = args[0], args[1:]
    if cmd == "container" and rest:
        cmd, rest = rest[0], rest[1:]
    if cmd == "image" and rest[:1] == ["inspect"]:
        return _docker_image_inspect(state, rest[1:])
    handler = {
        "ps": _docker_ps,
        "inspect": _docker_inspect,
        "logs": _docker_logs,
        "exec": _docker_exec,
        "run": _docker_run,
        "version": _docker_version,
        "images": _docker_images,
        "info": _docker_info,
    }.get(cmd)
    if handler is None:
        _err(f"docker: '{cmd}' is not a docker command.\nSee 'docker --help'\n")
        return 1
    return handler(state, rest)


def _go_template(fmt: str, obj: Any) -> str:
    """The few Go template forms probes use: ``{{.A.B}}``, ``{{json .A.B}}``, ``{{json .}}``."""
    out, s = "", fmt
    while "{{" in s:
        pre, _, s = s.partition("{{")
        expr, _, s = s.partition("}}")
        out += pre
        expr = expr.strip()
        as_json = expr.startswith("json ")
        path = expr[5:].strip() if as_json else expr
        val = obj
        for key in [k for k in path.split(".") if k]:
            val = val.get(key) if isinstance(val, dict) else None
        out += json.dumps(val) if as_json else ("" if val is None else str(val))
    return out + s


def _docker_ps(state: dict[str, Any], args: list[str]) -> int:
    fmt = None
    if "--format" in args:
        fmt = args[args.index("--format") + 1]
    rows = (
        [containers.ps_row(state)]
        if containers.exists(state) and (state["container"].get("state", "running") == "running" or "-a" in args)
        else []
    )
    if "-q" in args or "--quiet" in args:
        _out("".join(r["ID"][:12] + "\n" for r in rows))
        return 0
    if fmt:
        _out("".join(_go_template(fmt, r) + "\n" for r in rows))
        return 0
    _out(
        "CONTAINER ID   IMAGE                      COMMAND                  CREATED      STATUS      PORTS     NAMES\n"
    )
    for r in rows:
        cmd = r["Command"][:22] + '…"' if len(r["Command"]) > 24 else r["Command"]
        _out(
            f"{r['ID'][:12]}   {r['Image']:<26} {cmd:<24} {r['RunningFor']:<12} {r['Status']:<11}           {r['Names']}\n"
        )
    return 0


def _docker_inspect(state: dict[str, Any], args: list[str]) -> int:
    fmt = None
    refs = []
    i = 0
    while i < len(args):
        if args[i] in ("--format", "-f"):
            fmt = args[i + 1]
            i += 2
            continue
        if args[i].startswith("--format="):
            fmt = args[i].split("=", 1)[1]
        elif args[i] == "--type":
            i += 1
        elif not args[i].startswith("-"):
            refs.append(args[i])
        i += 1
    found, status = [], 0
    for ref in refs:
        if containers.matches(state, ref):
            found.append(containers.inspect(state))
        elif containers.image_matches(state, ref):
            found.append(containers.image_inspect(state))
        else:
            _err(f"Error: No such object: {ref}\n")
            status = 1
    if fmt:
        _out("".join(_go_template(fmt, f) + "\n" for f in found))
    else:
        _out(json.dumps(found, indent=4) + "\n")
    return status


def _docker_image_inspect(state: dict[str, Any], args: list[str]) -> int:
    refs = [a for a in args if not a.startswith("-")]
    if not refs:
        _err('"docker image inspect" requires at least 1 argument.\n')
        return 1
    found, status = [], 0
    for ref in refs:
        if containers.image_matches(state, ref):
            found.append(containers.image_inspect(state))
        else:
            _err(f"Error response from daemon: No such image: {ref}\n")
            status = 1
    _out(json.dumps(found, indent=4) + "\n")
    return status


def _docker_logs(state: dict[str, Any], args: list[str]) -> int:
    refs = [
        a
        for i, a in enumerate(args)
        if not a.startswith("-") and (i == 0 or args[i - 1] not in ("--tail", "-n", "--since"))
    ]
    if not refs or not containers.matches(state, refs[0]):
        _err(f"Error response from daemon: No such container: {refs[0] if refs else ''}\n")
        return 1
    data = containers.log_bytes(state)
    for flag in ("--tail", "-n"):
        if flag in args:
            n = args[args.index(flag) + 1]
            if n != "all":
                data = b"".join(data.splitlines(keepends=True)[-int(n) :])
    _out_bytes(data)
    return 0


def _container_env(state: dict[str, Any], extra: list[str], environ: Any = None) -> dict[str, str]:
    """The env of a process ``docker exec`` starts; ``environ``: the docker command's own (default: this process's)."""
    environ = os.environ if environ is None else environ
    root = Path(state["root"])
    c = state["container"]
    env = {
        "HOSTNAME": state["host"]["hostname"],
        "HOME": "/root",
        "K3TUI_SIMULATED": "1",
        "K3SIM_ROOT": str(root),
        "K3SIM_CONTAINER": c["name"],
        "K3SIM_OWNER": environ.get("K3SIM_OWNER", ""),
    }
    for kv in containers.env_list(c) + extra:
        k, _, v = kv.partition("=")
        env[k] = v
    cbin = root / "ctr" / c["name"] / "bin"
    env["PATH"] = f"{cbin}:" + env.get("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    for k in ("K3SIM_SPEED",):
        if k in environ:
            env[k] = environ[k]
    return env


def _run_in_container(state: dict[str, Any], argv: list[str], extra_env: list[str]) -> int:
    root = Path(state["root"])
    c = state["container"]
    pm = PathMap([root / "ctr" / c["name"] / "fs", root / "fs"])
    # the host session already mapped virtual paths to the HOST's files: undo, then map to the container's
    host_fs = str(root / "fs")
    argv = [pm.command(a.replace(host_fs, "")) for a in argv]
    try:
        proc = subprocess.Popen(
            argv,
            stdin=sys.stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_container_env(state, extra_env),
            cwd=str(root / "home"),
        )
    except FileNotFoundError:
        _err(
            f'OCI runtime exec failed: exec failed: unable to start container process: exec: "{argv[0]}": '
            "executable file not found in $PATH: unknown\n"
        )
        return 127
    signal.signal(signal.SIGTERM, lambda *_: proc.send_signal(signal.SIGTERM))
    t = threading.Thread(target=_pump, args=(proc.stderr, sys.stderr.buffer, pm), daemon=True)
    t.start()
    _pump(proc.stdout, sys.stdout.buffer, pm)
    t.join()
    return proc.wait()


def _pump(src: Any, dst: Any, pm: PathMap) -> None:
    while True:
        chunk = src.read1(65536) if hasattr(src, "read1") else src.read(65536)
        if not chunk:
            return
        try:
            dst.write(pm.output(chunk))
            dst.flush()
        except BrokenPipeError:
            return


def _docker_exec(state: dict[str, Any], args: list[str]) -> int:
    env, i = [], 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] in ("-e", "--env"):
            env.append(args[i + 1])
            i += 1
        elif args[i] in ("-u", "--user", "-w", "--workdir"):
            i += 1
        i += 1
    if i >= len(args):
        _err('"docker exec" requires at least 2 arguments.\n')
        return 1
    ref, argv = args[i], args[i + 1 :]
    if not containers.matches(state, ref):
        _err(f"Error response from daemon: No such container: {ref}\n")
        return 1
    if state["container"].get("state", "running") != "running":
        _err(f"Error response from daemon: container {containers.container_id(state)} is not running\n")
        return 1
    return _run_in_container(state, argv, env)


def _docker_run(state: dict[str, Any], args: list[str]) -> int:
    env, i, detach, entry = [], 0, False, None
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        key, _, inline = a.partition("=")
        if key in _RUN_VALUE_OPTS:
            val = inline if inline else args[i + 1]
            if not inline:
                i += 1
            if key in ("-e", "--env"):
                env.append(val)
            elif key == "--entrypoint":
                entry = val
        elif a in ("-d", "--detach"):
            detach = True
        i += 1
    if i >= len(args):
        _err('"docker run" requires at least 1 argument.\n')
        return 125
    image, cmd = args[i], args[i + 1 :]
    if not containers.image_matches(state, image):
        _err(
            f"Unable to find image '{image}' locally\ndocker: Error response from daemon: pull access denied for "
            f"{image.split(':')[0]}, repository does not exist or may require 'docker login'.\n"
        )
        return 125
    if detach:
        _err(
            "k3tui simulated host: `docker run -d` is not simulated; run it in the foreground as a detached k3tui run\n"
        )
        return 125
    argv = ([entry] if entry else list(state["container"]["entrypoint"])) + cmd
    return _run_in_container(state, argv, [f"K3SIM_IMAGE={image}", *env])


def _docker_version(state: dict[str, Any], args: list[str]) -> int:
    _out(
        f"Client:\n Version:           {containers.ENGINE_VERSION}\n API version:       {containers.API_VERSION}\n\n"
        f"Server: Docker Engine - Community (k3tui simulated)\n Engine:\n  Version:          {containers.ENGINE_VERSION}\n"
        f"  API version:      {containers.API_VERSION} (minimum version 1.24)\n"
    )
    return 0


def _docker_info(state: dict[str, Any], args: list[str]) -> int:
    _out(
        f"Server Version: {containers.ENGINE_VERSION}\nRuntimes: io.containerd.runc.v2 nvidia runc\nDefault Runtime: runc\n"
        f"Name: {state['host']['hostname']}\nLabels:\n  k3tui.simulated=true\n"
    )
    return 0


def _docker_images(state: dict[str, Any], args: list[str]) -> int:
    c = state.get("container") or {}
    _out("REPOSITORY               TAG        IMAGE ID       CREATED        SIZE\n")
    if c:
        for ref, image_id in containers.local_images(state):
            repo, tag = ref.rsplit(":", 1)
            _out(f"{repo:<24} {tag:<10} {image_id.removeprefix('sha256:')[:12]}   4 months ago   23.7GB\n")
    return 0


# --- entry ------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    root, ctx, tool, args = argv[0], argv[1], argv[2], argv[3:]
    state = load_state(root)
    try:
        return run_tool(state, ctx, tool, args)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


def run_tool(state: dict[str, Any], ctx: str, tool: str, args: list[str]) -> int:
    """One fake tool's run: what ``python -S tool_main.py ROOT CTX TOOL ARGS`` does once the state is loaded."""
    root = state["root"]
    if tool == "nvidia-smi":
        return nvidia_smi(state, args)
    if tool == "docker":
        if ctx.startswith("ctr:"):
            _err("docker: command not found\n")
            return 127
        if (state.get("container") or {}).get("runtime") == "containerd":  # a Kubernetes node: no dockerd
            _err("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n")
            return 1
        return docker(state, args)
    if tool == "ctr":  # containerd's client on a simulated Kubernetes node (k3tui.sim.ctr)
        from .ctr import main as ctr_main

        return ctr_main(state, args)
    if tool in ("scontrol", "sacct", "squeue", "sbatch", "scancel"):  # a Slurm node (k3tui.sim.slurm)
        from .slurm import main as slurm_main

        return slurm_main(state, tool, args)
    if tool == "ldconfig":
        return ldconfig(state, ctx, args)
    if tool == "ray":  # a FAKE Ray cluster (k3tui.sim.ray)
        from .ray import main as ray_main

        return ray_main(state, args)
    if tool == "python3":
        from .nvml import run_python

        return run_python(state, gpu_procs(root), args)
    return {"uname": uname, "hostname": hostname, "dmesg": dmesg, "journalctl": journalctl}[tool](state, args)


def capture(
    state: dict[str, Any], ctx: str, tool: str, args: list[str], *, merge: bool = False
) -> tuple[int, bytes, bytes]:
    """Run a fake tool in THIS process and return (status, stdout, stderr) instead of writing them.

    For the simulated SSH server's answers without a process (:mod:`k3tui.sim.fastpath`):
    the same code as the tool's own process, its output collected per call (a context
    variable, so other threads and tasks keep their stdout). ``merge``: stderr goes into
    stdout in the order written (``2>&1``). Only for runs that end by themselves (no
    ``-lms`` loops, no ``docker exec``).
    """
    out: list[bytes] = []
    err = out if merge else []
    token = _SINK.set((out, err))
    try:
        status = run_tool(state, ctx, tool, args)
    finally:
        _SINK.reset(token)
    return status, b"".join(out), b"" if merge else b"".join(err)

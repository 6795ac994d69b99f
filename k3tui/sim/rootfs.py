"""The simulated host's private root: fake tools, virtual files, state, a python venv.

Commands on the simulated host are REAL ``bash`` processes; what makes them answer like a
GB300 host is this directory, built fresh for every :class:`~k3tui.sim.SimHost`::

    ROOT/bin/            nvidia-smi, docker, vllm, uname, hostname, dmesg, journalctl,
                         ldconfig (fake, python -S) and cat/head/tail/grep/readlink
                         (POSIX-sh wrappers mapping virtual paths, then the real tool),
                         pgrep/ps (the real tools, limited to this host's processes)
    ROOT/fs/             virtual host files: /etc/os-release, /proc/driver/nvidia/version,
                         /etc/ld.so.conf*, /proc/<pid>/maps of the fake vllm …
    ROOT/ctr/<name>/     a container: bin/ (its tools), fs/ (its files), log (docker logs)
    ROOT/venv/           a real venv (pyvenv.cfg) whose site-packages hold the image's
                         package metadata (torch 2.11+cu130, vllm …): its python is the
                         container's ``python3`` and the fake ``vllm``'s interpreter
    ROOT/state/          host.json (the expanded scenario), procs/ (GPU users), ports/
    ROOT/home/           $HOME of every session (detached runs live under it)

Static virtual paths in a command line are rewritten to ``ROOT/fs/…`` before bash runs it
and the prefix is stripped from the output again (see :class:`PathMap`), so globs,
redirections and ``[ -f … ]`` see the scenario's files; paths built at run time
(``/proc/$p/maps``) go through the wrappers. Everything here is a simulation and says so.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import sys
from pathlib import Path
from typing import Any

from ..assets import asset
from . import fabric
from .pathmap import PathMap  # noqa: F401 - re-exported (rootfs.PathMap, as before)
from .scenario import _merge, host_list

REPO_PARENT = str(Path(__file__).resolve().parents[2])
"""The directory holding the ``k3tui`` package (put on sys.path of the fake tools)."""

PY_TOOLS = ("nvidia-smi", "docker", "uname", "hostname", "dmesg", "journalctl", "ldconfig", "ray", "ctr",
            "scontrol", "sacct", "squeue", "sbatch", "scancel")  # fmt: skip
MAPPED = ("cat", "head", "tail", "grep", "readlink", "ls", "wc", "stat")
BANNER = "k3tui SIMULATED GB300 host: a fake host for demos and tests, not a real machine"


def _write(path: Path, text: str, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mode is not None:
        path.chmod(mode)


def base_python() -> str:
    """The real interpreter behind this venv (fake tools run it with ``-S``)."""
    return os.path.realpath(sys.executable)


def _py_tool(root: Path, ctx: str, name: str) -> str:
    return (
        "#!/bin/sh\n# k3tui simulated host: a FAKE tool answering from the scenario\n"
        f"exec {shlex.quote(base_python())} -S {shlex.quote(str(Path(__file__).with_name('tool_main.py')))} "
        f'{shlex.quote(str(root))} {shlex.quote(ctx)} {name} "$@"\n'
    )


def _mapped_tool(name: str, overlays: list[Path]) -> str:
    real = shutil.which(name, path="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin") or f"/usr/bin/{name}"
    dirs = " ".join(shlex.quote(str(o)) for o in overlays)
    return (
        "#!/bin/sh\n# k3tui simulated host: paths the scenario defines are read from its files, then the real tool runs\n"
        'n=$#\nfor a in "$@"; do\n  case "$a" in\n    /*)\n'
        '      r="$a"\n      case "$r" in /proc/[0-9]*/root/*) r="/${r#/proc/*/root/}";; esac\n'
        f'      for o in {dirs}; do if [ -e "$o$r" ]; then a="$o$r"; break; fi; done;;\n'
        '  esac\n  set -- "$@" "$a"\ndone\nshift $n\n'
        f'exec {shlex.quote(real)} "$@"\n'
    )


def build(root: Path, scenario: dict[str, Any], node: int = 0) -> dict[str, Any]:
    """Lay out ``root`` for host ``node`` of ``scenario``; returns the state written to ``state/host.json``."""
    hosts = host_list(scenario)
    if not 0 <= node < len(hosts):
        raise ValueError(f"scenario {scenario['name']!r} has {len(hosts)} host(s); no node {node}")
    import time

    now = time.time()
    # booted four days ago (each node a few minutes apart): /proc/stat's btime and dmesg stamps agree
    hosts[node].setdefault("boot_time", int(now) // 60 * 60 - 4 * 86400 - 420 * node)
    state = {
        "scenario": scenario["name"],
        "title": scenario["title"],
        "simulated": True,
        "node": node,
        "host": hosts[node],
        "hosts": hosts,
        # a [[hosts]] entry may carry its own [container]/[vllm] keys (multinode-*: one node's
        # image digest, env or log differs); they merge over the scenario's, key by key
        "container": _merge(scenario.get("container", {}), hosts[node].get("container", {})),
        "vllm": _merge(scenario.get("vllm", {}), hosts[node].get("vllm", {})),
        "slurm": scenario.get("slurm"),  # a Slurm node: the job whose step the server is (k3tui.sim.slurm)
        "root": str(root),
    }
    for d in ("home", "state/procs", "state/ports", "bin"):
        (root / d).mkdir(parents=True, exist_ok=True)
    _write(root / "state" / "host.json", json.dumps(state, indent=1, sort_keys=True))  # one form for one state
    _host_fs(root / "fs", hosts[node])
    _venv(root / "venv", state["container"])
    _tools(root, "host", root / "bin", [root / "fs"])
    fabric.write_host_files(root, root / "fs", state, _write)
    ctr = state["container"]
    if ctr:
        ctr["_vllm"] = state["vllm"]
        c = root / "ctr" / ctr["name"]
        _container_fs(c / "fs", ctr, hosts[node])
        fabric.write_container_files(c / "fs", ctr, hosts[node], _write)
        _tools(root, f"ctr:{ctr['name']}", c / "bin", [c / "fs", root / "fs"])
        _write(c / "log", _container_log(ctr, now - 3 * 3600))
        if ctr.get("runtime") == "containerd":  # a Kubernetes node: containerd's socket, the pod's CRI log
            from .ctr import lay_out

            lay_out(root, state, (c / "log").read_bytes())
        if state.get("slurm"):  # a Slurm node: the server is a job's step, its log the job's output file
            from .slurm import lay_out as slurm_lay_out

            slurm_lay_out(root, state, (c / "log").read_bytes())
        _kernel_history(ctr, root / "state", now - 3 * 3600, hosts[node]["boot_time"])
        for name in ("python3", "python"):
            _write(
                c / "bin" / name, f'#!/bin/sh\nexec {shlex.quote(str(root / "venv" / "bin" / "python3"))} "$@"\n', 0o755
            )
    _vllm_entry(root, root / "bin")
    if ctr:
        _vllm_entry(root, root / "ctr" / ctr["name"] / "bin")
    return state


def _ctr_env(ctr: dict[str, Any]) -> dict[str, str]:
    """The deployment container's env (image, then run): what its own server ran with."""
    items = [*ctr.get("image_env", []), *ctr.get("run_env", [])]
    return dict(i.split("=", 1) for i in items if "=" in i)


def _container_log(ctr: dict[str, Any], start: float | None = None) -> str:
    """``docker logs``: the deployment's own last start-up (at ``start``, default 3 h ago), as the scenario had it fail."""
    import time

    from .logplay import LogVars, render
    from .vllm import _non_default, choose_template, parse_args, visible_gpus

    argv = list(ctr["entrypoint"][2:]) + list(ctr["cmd"])
    ns = parse_args(argv)
    v = LogVars(
        model=ns.model,
        tp=ns.tensor_parallel_size,
        api_pid=1,
        host=ns.host,
        port=ns.port,
        version=ctr.get("vllm", "0.27.1"),
        load_format=ns.load_format,
        prefix_caching=ns.prefix,
        args=_non_default(ns),
        max_model_len=ns.max_model_len or int(ctr.get("_vllm", {}).get("max_model_len", 1048576)),
        visible=visible_gpus(ctr.get("_vllm", {}), _ctr_env(ctr)),
        start=time.time() - 3 * 3600 if start is None else start,
    )
    template = choose_template(ctr.get("_vllm", {}), argv, _ctr_env(ctr), image=ctr.get("image", ""))
    text, _ = render(template, v)
    return text


def _kernel_history(ctr: dict[str, Any], state_dir: Path, start: float, boot: float) -> None:
    """What the kernel logged while the deployment failed (Xid, OOM killer): dmesg shows it from the start.

    Stamped in seconds since the simulated boot at the container log's own clock, so a
    kernel event sorts just before the exception it caused (the diagnosis correlates them).
    """
    from .logplay import LogVars, ops
    from .vllm import choose_template, parse_args

    argv = list(ctr["entrypoint"][2:]) + list(ctr["cmd"])
    ns = parse_args(argv)
    kernel = [
        o
        for o in ops(
            choose_template(ctr.get("_vllm", {}), argv, _ctr_env(ctr), image=ctr.get("image", "")),
            LogVars(tp=ns.tensor_parallel_size, start=start),
        )
        if o.kind == "kernel"
    ]
    if kernel:
        _write(
            state_dir / "dmesg",
            "".join(f"[{o.value - boot + i * 0.000731:12.6f}] {o.text}\n" for i, o in enumerate(kernel)),
        )


# Usual forms answered from files rendered once at start (no interpreter start per probe).
_FAST_FORMS = {
    "uname": ["", "-a", "-r", "-m", "-s", "-n", "-v", "-o", "-sr", "-srm", "-rm", "-mr"],
    "hostname": ["", "-s", "-f", "--fqdn", "--short"],
    "ldconfig": ["-p", "--print-cache"],
}


def _fast_tool(root: Path, ctx: str, bindir: Path, name: str, state: dict[str, Any]) -> str:
    import contextlib
    import io

    from . import tools

    answers = bindir / ".answers" / name
    answers.mkdir(parents=True, exist_ok=True)
    lines = [
        "#!/bin/sh",
        "# k3tui simulated host: a FAKE tool; usual forms precomputed, others by the python tool",
        'case "$*" in',
    ]
    for i, form in enumerate(_FAST_FORMS[name]):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            args = form.split() if form else []
            status = tools.ldconfig(state, ctx, args) if name == "ldconfig" else getattr(tools, name)(state, args)
        (answers / str(i)).write_text(buf.getvalue())
        lines.append(f"  {shlex.quote(form)}) cat {shlex.quote(str(answers / str(i)))}; exit {status};;")
    lines += ["esac", _py_tool(root, ctx, name).splitlines()[-1]]
    return "\n".join(lines) + "\n"


def kernel_log_files(root: Path) -> tuple[Path, Path]:
    """What the host's ``dmesg`` prints, in order: the boot lines, then what its runs logged since."""
    return root / "state" / "dmesg-boot", root / "state" / "dmesg"


def _dmesg_tool(root: Path, state: dict[str, Any]) -> str:
    from .tools import _kernel_lines

    base, live = kernel_log_files(root)
    _write(base, "".join(line + "\n" for line in _kernel_lines(dict(state, root=str(root / "nonexistent")))))
    return (
        "#!/bin/sh\n# k3tui simulated host: the kernel log of a FAKE host (boot lines + what its scenario logged since)\n"
        f"cat {shlex.quote(str(base))}; cat {shlex.quote(str(live))} 2>/dev/null; exit 0\n"
    )


def _tools(root: Path, ctx: str, bindir: Path, overlays: list[Path]) -> None:
    state = json.loads((root / "state" / "host.json").read_text())
    for name in PY_TOOLS:
        if name in _FAST_FORMS:
            _write(bindir / name, _fast_tool(root, ctx, bindir, name, state), 0o755)
        elif name == "dmesg":
            _write(bindir / name, _dmesg_tool(root, state), 0o755)
        else:
            _write(bindir / name, _py_tool(root, ctx, name), 0o755)
    for name in MAPPED:
        _write(bindir / name, _mapped_tool(name, overlays), 0o755)
    _write(bindir / "pgrep", _pgrep(root), 0o755)
    _write(bindir / "ps", _ps(root), 0o755)
    if ctx == "host":  # the host's python3 (real interpreter, simulated libnvidia-ml for NVML)
        _write(bindir / "python3", _py_tool(root, ctx, "python3"), 0o755)


def _pgrep(root: Path) -> str:
    # Only this simulated host's processes: other SimHosts on the machine are other "hosts".
    procs = shlex.quote(str(root / "state" / "procs"))
    return (
        "#!/bin/sh\n# k3tui simulated host: real pgrep, limited to this simulated host's processes\n"
        'case " $* " in *" -P "*) exec /usr/bin/pgrep "$@";; esac\n'
        'st=1\n/usr/bin/pgrep "$@" | while IFS= read -r line; do p=${line%% *};'
        f' if [ -e {procs}/"$p".json ]; then printf \'%s\\n\' "$line"; fi; done | grep . && st=0\nexit $st\n'
    )


def _ps(root: Path) -> str:
    """Real ``ps``, limited to this simulated host's processes (a real host lists only its own).

    This machine's ``ps`` also lists other SimHosts' ``vllm serve`` (and whatever else runs
    here): seen from this host they would be "live inference" on it. Ours are the processes
    whose environment carries this root's ``K3SIM_ROOT`` (every session, run and fake tool)
    and the containers' main processes. With a user-defined format (``-o``) a PID column is
    put first to filter on, then cut off again; otherwise rows are kept by the header's PID
    column (no header: unfiltered). Like ``ps -p``, it exits 1 when none of the rows is ours.
    """
    q = shlex.quote(str(root))
    return f"""#!/bin/sh
# k3tui simulated host: real ps, limited to this simulated host's processes
mine=$({{ /usr/bin/grep -lsxzF K3SIM_ROOT={q} /proc/[0-9]*/environ | /usr/bin/cut -d/ -f3; /usr/bin/cat {q}/ctr/*/pid; }} 2>/dev/null)
fmt=
for a in "$@"; do case $a in --format|--format=*) fmt=1;; --*) ;; -*o*) fmt=1;; esac; done
if [ -n "$fmt" ]; then out=$(/bin/ps -o pid= "$@"); st=$?; else out=$(/bin/ps "$@"); st=$?; fi
[ -n "$out" ] && printf '%s\\n' "$out" | /usr/bin/awk -v mine="$mine" -v fmt="$fmt" '
BEGIN {{ n = split(mine, a); for (i = 1; i <= n; i++) m[a[i]] = 1
        getline pm < "/proc/sys/kernel/pid_max"; w = length(pm - 1) + 1 }}
fmt && match($0, /^ *[0-9]+ /) {{ rows++; if ($1 in m) {{ kept++; print substr($0, RLENGTH + 1) }}; next }}
fmt {{ print substr($0, w + 1); next }}
NR == 1 {{ for (i = 1; i <= NF; i++) if ($i == "PID") c = i; print; next }}
{{ rows++ }} !c || ($c in m) {{ kept++; print }}
END {{ exit rows > 0 && kept == 0 }}' || {{ [ "$st" = 0 ] && st=1; }}
exit $st
"""


def _host_fs(fs: Path, host: dict[str, Any]) -> None:
    arch_mod = "aarch64" if host["arch"] == "aarch64" else "x86_64"
    _write(fs / "etc" / "os-release", asset("scenarios", "host", host["os_release"]).read_text())
    _write(fs / "etc" / "hostname", host["hostname"] + "\n")
    _write(fs / "proc" / "stat", f"btime {host['boot_time']}\n")  # what the kernel-events probe reads
    _write(fs / "etc" / "motd", BANNER + "\n")
    _write(
        fs / "proc" / "driver" / "nvidia" / "version",
        f"NVRM version: NVIDIA UNIX Open Kernel Module for {arch_mod}  {host['driver']}  Release Build  {host['proc_driver_build']}\n"
        f"GCC version:  {host['gcc']}\n",
    )
    triplet = "aarch64-linux-gnu" if host["arch"] == "aarch64" else "x86_64-linux-gnu"
    _write(fs / "etc" / "ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n\n")
    _write(fs / "etc" / "ld.so.conf.d" / "libc.conf", "# libc default configuration\n/usr/local/lib\n")
    _write(
        fs / "etc" / "ld.so.conf.d" / f"{triplet}.conf",
        f"# Multiarch support\n/usr/local/lib/{triplet}\n/lib/{triplet}\n/usr/lib/{triplet}\n",
    )


def _container_fs(fs: Path, ctr: dict[str, Any], host: dict[str, Any]) -> None:
    _write(fs / "etc" / "os-release", asset("scenarios", "host", "os-release-ubuntu-24.04").read_text())
    triplet = "aarch64-linux-gnu" if host["arch"] == "aarch64" else "x86_64-linux-gnu"
    _write(fs / "etc" / "ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n\n")
    _write(fs / "etc" / "ld.so.conf.d" / "libc.conf", "# libc default configuration\n/usr/local/lib\n")
    _write(
        fs / "etc" / "ld.so.conf.d" / f"{triplet}.conf",
        f"# Multiarch support\n/usr/local/lib/{triplet}\n/lib/{triplet}\n/usr/lib/{triplet}\n",
    )
    _write(fs / "etc" / "ld.so.conf.d" / "00-nvidia.conf", "/usr/local/nvidia/lib\n/usr/local/nvidia/lib64\n")
    if ctr.get("compat_conf"):
        _write(fs / "etc" / "ld.so.conf.d" / "cuda-compat.conf", ctr.get("compat_dir", "/usr/local/cuda/compat") + "\n")


def _venv(venv: Path, ctr: dict[str, Any]) -> None:
    """A real venv shape around the base interpreter, with the image's packages as metadata."""
    pyver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = venv / "lib" / pyver / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    _write(
        venv / "pyvenv.cfg",
        f"home = {Path(base_python()).parent}\ninclude-system-site-packages = false\nversion = {sys.version.split()[0]}\n",
    )
    (venv / "bin").mkdir(exist_ok=True)
    (venv / "bin" / "python3").symlink_to(base_python())
    # the fake vllm imports k3tui from here
    _write(site / "k3tui_sim_repo.pth", REPO_PARENT + "\n")
    pkgs = {
        "torch": ctr.get("torch", "2.11.0+cu130"),
        "vllm": ctr.get("vllm", "0.27.1"),
        "nvidia-nccl-cu13": ".".join(str(x) for x in ctr.get("nccl", [2, 28, 9])),
        "transformers": ctr.get("transformers", "4.57.1"),
    }
    for name, version in pkgs.items():
        dist = site / f"{name.replace('-', '_')}-{version}.dist-info"
        _write(
            dist / "METADATA",
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: k3tui SIMULATED package metadata (no code)\n",
        )
    _write(
        site / "torch" / "version.py",
        f"# k3tui simulated image: version facts only\n__version__ = {pkgs['torch']!r}\n"
        f"cuda = {ctr.get('torch_cuda', '13.0')!r}\ngit_version = 'k3tui-simulated'\nhip = None\n",
    )
    _write(
        site / "torch" / "__init__.py",
        "raise ImportError('k3tui simulated host: torch is package metadata only here; read torch/version.py')\n",
    )


def _vllm_entry(root: Path, bindir: Path) -> None:
    py = root / "venv" / "bin" / "python3"
    _write(
        bindir / "vllm",
        f"#!{py}\n# k3tui simulated host: a FAKE `vllm serve` replaying a real vLLM log (k3tui.sim.vllm)\n"
        "import sys\nfrom k3tui.sim.vllm import main\nsys.exit(main(sys.argv[1:]))\n",
        0o755,
    )
    mode = (bindir / "vllm").stat().st_mode
    (bindir / "vllm").chmod(mode | stat.S_IXUSR)

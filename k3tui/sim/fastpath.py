"""Answers of the simulated host that need no process: the exact commands a freeze sends.

Why: every exec request on the simulated host runs ``bash -c COMMAND``, and most probes
then start a fake tool (``python -S tool_main.py``) or, for the version and NVML probes, a
whole interpreter. A fleet freeze of 64 simulated nodes on a 2-core machine spent ~75 s
that way, nearly all of it in the simulator, not in k3tui. Only the process starts are
saved here; the answers are the tools' own:

- **computed** — commands whose every program is a fake tool or a file
  (``nvidia-smi -q -x``, ``docker ps …``, ``uname -a``, ``cat /etc/os-release``, the
  ``ldconfig -p | grep`` and ``ld.so.conf`` probes, the kernel-log and NVLink probes, ``docker exec``
  of ``nvidia-smi -L``/``env``/those pipelines, ``docker logs``, ``/proc/PID/cmdline`` and
  ``environ`` of the container's main process, the connection's ``date +%s.%N``, the
  ``pgrep`` probe while no process holds GPU memory — the host's ``pgrep`` shows only
  those — and the loaded-libraries probe while no CUDA library is mapped: both print
  nothing then). They are answered by the same code the tool's process runs
  (:func:`k3tui.sim.tools.capture`) on the state as it is at that moment (GPU users,
  kernel log, container log are read at every call), and the shell around them (``grep``,
  ``tail``, ``tr``, the ``for f in …`` loop) is done in Python exactly as the probe's
  command does it.
- **remembered** — commands whose answer depends only on the simulated host's files and
  its session env: the version probes (``python3 -c …`` on the host and in the
  container), the NVML probe (pynvml on stdin), ``env``. The first run is a real one;
  its answer is kept under a key made of the command, its stdin, ``state/host.json``, the
  image's python files (``ROOT/venv``), the session env and the processes now holding GPU
  memory, so a ``vllm serve`` that starts, grows or ends makes a new key (and a real
  run). Hosts of this process whose keys are equal share the answer, each host's own
  root path put back in; a run that several hosts ask for at once runs once. Failed or
  cut-short runs are never kept.

Anything else — other commands, a terminal, an env sent by the client, a command one of
whose tools was replaced after start or had another put in front of it on PATH
(:meth:`FastPath.tools_changed`) — runs in bash as before, so arbitrary shell still works. ``tests/test_sim_fastpath.py`` checks every
command of :meth:`FastPath.forms` against the answer bash and the tools give.
"""

from __future__ import annotations

import asyncio
import glob
import hashlib
import json
import os
import re
import shlex
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ..scene.probes import BY_NAME, command_for, probe_commands
from . import containers, fabric, rootfs, tools

CLOCK = "date +%s.%N"
"""The clock probe of every connection (``k3tui.remote.ssh``: the host's clock skew)."""
FLEET_LOG_LINES = 5000
_KERNEL_EVENT = re.compile(r"NVRM: Xid|SXid|NVRM: GPU at PCI")  # the probe's grep -E
"""``k3tui.fleet.freeze.read_log`` reads this many lines of the container log (its exact command is answered)."""
_REMEMBER_MAX = 512
_ROOT_TOKEN = b"\x00K3SIM-ROOT\x00"
_PLAIN_RE = re.compile(r"[\w\\.|-]+")
"""A ``grep -E`` pattern that Python's ``re`` reads the same way (literals, escapes, ``|``)."""


@dataclass(frozen=True)
class Answer:
    """What a command printed and how it ended."""

    stdout: bytes
    stderr: bytes = b""
    status: int = 0


_remembered: OrderedDict[str, Answer] = OrderedDict()
"""Answers of remembered runs (root path replaced by a token), by key, shared by all hosts of this process."""
_running: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Future[Answer | None]]] = (
    weakref.WeakKeyDictionary()
)
"""Remembered runs in progress, by event loop (gone with it), then key."""


class FastPath:
    """The answers one simulated host gives without a process (see the module docstring)."""

    def __init__(self, root: Path, session_env: Callable[[], dict[str, str]]) -> None:
        self.root = root
        self.session_env = session_env
        self.host_map = rootfs.PathMap([root / "fs"])
        self._computed: dict[str, Callable[[], Answer | None]] = {}
        self._remember: dict[str, bool] = {}
        """Remembered commands → whether their answer depends on stdin."""
        self._uses: dict[str, tuple[Path, ...]] = {}
        """Each command → the tool files its answer stands for, and the ``bin/`` folders on PATH."""
        self._built: dict[str, tuple[tuple[int, int, int] | None, ...]] = {}
        self._state: tuple[tuple[int, int, int], dict[str, Any]] | None = None
        self._table()
        self._built = {command: _stats(paths) for command, paths in self._uses.items()}

    def tools_changed(self, command: str) -> bool:
        """Has a tool ``command`` runs been replaced, or one added in front of it, since start?

        The answers here are those of the tools the simulated host was built with; a test
        that plants its own tool (a ``date`` whose clock runs ahead) gets bash from then on.
        """
        return _stats(self._uses.get(command, ())) != self._built.get(command)

    # --- which commands -----------------------------------------------------------------

    def forms(self) -> list[str]:
        """Every command answered here (computed, then remembered)."""
        return [*self._computed, *self._remember]

    def knows(self, command: str) -> bool:
        """Is ``command`` one of :meth:`forms`?"""
        return command in self._computed or command in self._remember

    def reads_stdin(self, command: str) -> bool | None:
        """None: not a remembered command; else whether its answer depends on its stdin."""
        return self._remember.get(command)

    def _add(self, command: str, fn: Callable[[], Answer | None] | None, tools: list[str], ctr: str = "") -> None:
        """Answer ``command`` with ``fn`` (None: remembered) while the host's tools ``tools`` are
        as built (``ctr/NAME/bin/…`` names are the container's); nothing may appear in front of them."""
        if not command:
            return
        bins = [self.root / "bin", *([self.root / "ctr" / ctr / "bin"] if ctr else [])]
        self._uses[command] = (*bins, *(self.root / t for t in tools))
        if fn is not None:
            self._computed[command] = fn

    def _table(self) -> None:
        name = (self.state().get("container") or {}).get("name")
        cmds = probe_commands(container=name) if name else probe_commands()
        for probe in ("hostname", "uname", "smi_xml", "smi_query", "smi_apps", "smi_list", "smi_topo", "docker_ps"):
            argv = _argv(cmds.get(probe, ""))
            if _tool_argv(argv):
                self._add(cmds[probe], partial(self._tool, "host", argv), [f"bin/{argv[0]}"])
        for probe in ("os_release", "proc_driver"):
            argv = _argv(cmds.get(probe, ""))
            if argv[:1] == ["cat"] and len(argv) == 2:
                self._add(cmds[probe], partial(self._cat, argv[1]), ["bin/cat"])
        self._add(cmds.get("xid", ""), self._xid, ["bin/journalctl", "bin/grep", "bin/tail"])
        self._add(cmds.get("nvlink", ""), self._nvlink, ["bin/nvidia-smi"])
        for probe in ("host_ldconfig", "host_ld_so_conf"):
            found = self._pipeline(cmds.get(probe, ""), self.host_map, "host")
            if found is not None:
                self._add(cmds[probe], found[0], [f"bin/{t}" for t in found[1]])
        self._add(cmds.get("pgrep", ""), self._no_server, ["bin/pgrep"])
        self._add(CLOCK, self._clock, [])
        for probe, stdin, tools_ in (("host_env", False, []), ("host_versions", False, ["bin/python3"])):
            self._remember_form(cmds.get(probe, ""), stdin, tools_)
        self._remember_form(cmds.get("nvml", ""), True, ["bin/python3"])
        if name:
            self._container_table(name, cmds)

    def _remember_form(self, command: str, reads_stdin: bool, tools_: list[str], ctr: str = "") -> None:
        if command:
            self._remember[command] = reads_stdin
            self._add(command, None, tools_, ctr)

    def _container_table(self, name: str, cmds: dict[str, str]) -> None:
        """``docker exec`` probes of the running container, its log reads, its version probe."""
        cmap = rootfs.PathMap([self.root / "ctr" / name / "fs", self.root / "fs"])
        ctx, cbin = f"ctr:{name}", f"ctr/{name}/bin"
        for probe in ("container_smi_list", "container_env", "container_ldconfig", "container_ld_so_conf"):
            argv = _argv(cmds.get(probe, ""))
            inner = argv[3:]
            found: tuple[Callable[[], Answer | None], list[str]] | None = None
            if argv[:3] != ["docker", "exec", name]:
                continue
            if inner == ["env"]:
                found = self._container_env, []
            elif inner[:1] == ["nvidia-smi"] and _tool_argv(inner):
                found = partial(self._tool, ctx, inner), ["nvidia-smi"]
            elif inner[:2] == ["sh", "-c"] and len(inner) == 3:
                found = self._pipeline(inner[2], cmap, ctx)
            if found is not None:
                fn, uses = found
                self._add(
                    cmds[probe],
                    partial(self._exec, name, cmap, fn),
                    ["bin/docker", *(f"{cbin}/{t}" for t in uses)],
                    name,
                )
        self._remember_form(cmds.get("container_versions", ""), False, ["bin/docker", f"{cbin}/python3"], name)
        pid = containers.main_pid(self.state())  # the container's main process: what a freeze reads in /proc
        for probe, file in (("proc_cmdline", "cmdline"), ("proc_environ", "environ")):
            command = command_for(BY_NAME[probe], pid=pid) if pid and probe in BY_NAME else ""
            if command == f"tr '\\0' '\\n' < /proc/{pid}/{file}":
                self._add(command, partial(self._proc_file, pid, file), [])
        command = command_for(BY_NAME["proc_maps"], pid=pid) if pid and "proc_maps" in BY_NAME else ""
        m = re.search(r"grep -oE '([^']*)' /proc/\$p/maps", command)
        if m and re.fullmatch(r"[\w\\.|/()\[\]^ *-]+", m.group(1)):
            libs = re.compile(m.group(1).encode())
            self._add(command, partial(self._no_library, pid, libs), ["bin/pgrep", "bin/grep", "bin/readlink"])
        log = ["docker", "logs", "--tail", str(FLEET_LOG_LINES), name]
        self._add(shlex.join(log) + " 2>&1", partial(self._docker_log, log, dated=False), ["bin/docker"])
        dated = ["docker", "logs", "--timestamps", "--tail", str(FLEET_LOG_LINES), name]
        self._add(
            "date +%z; " + shlex.join(dated) + " 2>&1", partial(self._docker_log, dated, dated=True), ["bin/docker"]
        )

    def _pipeline(
        self, command: str, pm: rootfs.PathMap, ctx: str
    ) -> tuple[Callable[[], Answer | None], list[str]] | None:
        """The two linker probes (host or container) when ``command`` is exactly one of them: (answer, tools it runs)."""
        cmds = probe_commands()
        if command == cmds["host_ld_so_conf"]:
            return partial(self._ld_so_conf, pm), ["cat"]
        m = re.fullmatch(
            r"\{ ldconfig -p 2>/dev/null \|\| /sbin/ldconfig -p; \} \| grep -E '([^']*)' \|\| true", command
        )
        if command == cmds["host_ldconfig"] and m and _PLAIN_RE.fullmatch(m.group(1)):
            return partial(self._ldconfig_grep, ctx, re.compile(m.group(1).encode())), ["ldconfig", "grep"]
        return None

    # --- state --------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """``state/host.json`` (read again whenever the file changes; the tools only read it)."""
        f = self.root / "state" / "host.json"
        st = f.stat()
        sig = (st.st_mtime_ns, st.st_size, st.st_ino)
        if self._state is None or self._state[0] != sig:
            self._state = (sig, json.loads(f.read_bytes()))
        return self._state[1]

    def _host_json(self) -> bytes:
        return (self.root / "state" / "host.json").read_bytes()

    # --- computed answers ---------------------------------------------------------------

    def computed(self, command: str) -> Answer | None:
        """The answer to ``command`` if it is a computed form (None: run it for real)."""
        fn = self._computed.get(command)
        if fn is None:
            return None
        try:
            ans = fn()
        except Exception:  # noqa: BLE001 - an answer that cannot be computed here is left to the real tools
            return None
        if ans is None:
            return None
        return Answer(self.host_map.output(ans.stdout), self.host_map.output(ans.stderr), ans.status)

    def _tool(self, ctx: str, argv: list[str]) -> Answer:
        return _answer(tools.capture(self.state(), ctx, argv[0], argv[1:]))

    def _cat(self, path: str) -> Answer | None:
        mapped = self.host_map.command(path)
        if mapped == path:  # not a file of the simulated host: this machine's own; let cat read it
            return None
        return Answer(Path(mapped).read_bytes())

    def _clock(self) -> Answer:
        ns = time.time_ns()
        return Answer(f"{ns // 10**9}.{ns % 10**9:09d}\n".encode())

    def _no_server(self) -> Answer | None:
        """The serving-process probe while no process holds a GPU-user record: the host's ``pgrep``
        (limited to those records' pids, see :func:`k3tui.sim.rootfs._pgrep`) finds nothing."""
        if any((self.root / "state" / "procs").glob("*.json")):
            return None
        return Answer(b"")

    def _proc_file(self, pid: int, file: str) -> Answer | None:
        """``tr '\\0' '\\n' < /proc/PID/FILE``: the simulated host's file if it publishes one, else the real one."""
        try:
            data = Path(self.host_map.command(f"/proc/{pid}/{file}")).read_bytes()
        except OSError:
            return None  # bash says why
        return Answer(data.replace(b"\0", b"\n"))

    def _no_library(self, pid: int, libs: re.Pattern[bytes]) -> Answer | None:
        """The loaded-libraries probe when neither ``pid`` nor its children and grandchildren map
        any of ``libs``: it prints nothing (when one does, bash and the tools answer)."""
        if not os.access(self.host_map.command(f"/proc/{pid}/maps"), os.R_OK):
            return None  # bash says it cannot read it
        parents = _parents()
        pids, level = [pid], [pid]
        for _ in range(2):  # children, then their children (pgrep -P, twice)
            level = sorted(c for c, pp in parents.items() if pp in level)
            pids += level
        for p in pids:
            try:
                maps = Path(self.host_map.command(f"/proc/{p}/maps")).read_bytes()
            except OSError:
                continue  # gone, or not readable: grep … 2>/dev/null prints nothing either
            if libs.search(maps):
                return None
        return Answer(b"")

    def _xid(self) -> Answer:
        """The kernel-events probe: boot time, then journalctl -k's Xid/SXid/GPU-at lines (the fake journal answers)."""
        state = self.state()
        args = ["-k", "-b", "-o", "short-iso-precise", "--no-pager", "-q"]
        host = state["host"]["hostname"]
        lines = [
            f"{tools.journal_stamp(ln, state, args)} {host} kernel: {ln.split('] ', 1)[-1]}"
            for ln in tools._kernel_lines(state)
        ]
        hits = [ln + "\n" for ln in lines if _KERNEL_EVENT.search(ln)]
        boot = state["host"].get("boot_time", "")
        return Answer(f"# boot: {boot}\n# source: journalctl\n".encode() + "".join(hits[-200:]).encode())

    def _nvlink(self) -> Answer:
        """The NVLink probe: ``nvidia-smi nvlink -s``, a ``# errors`` line, ``nvidia-smi nvlink -e`` (the fake's own text)."""
        host = self.state()["host"]
        return Answer((fabric.nvlink_status(host) + "# errors\n" + fabric.nvlink_errors(host)).encode())

    def _ldconfig_grep(self, ctx: str, pattern: re.Pattern[bytes]) -> Answer | None:
        status, out, _ = tools.capture(self.state(), ctx, "ldconfig", ["-p"])
        if status != 0:
            return None
        lines = out.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        return Answer(b"".join(line + b"\n" for line in lines if pattern.search(line)))

    def _ld_so_conf(self, pm: rootfs.PathMap) -> Answer | None:
        first, pattern = pm.command("/etc/ld.so.conf"), pm.command("/etc/ld.so.conf.d/*")
        if not all(any(p.startswith(o) for o in pm.overlays) for p in (first, pattern)):
            return None  # this machine's own files would be read: not an answer of the simulated host
        out = b""
        for f in [first, *sorted(glob.glob(pattern))]:
            if os.path.isfile(f):
                out += f"==> {f} <==\n".encode() + Path(f).read_bytes() + b"\n"
        return Answer(pm.output(out))

    def _exec(self, name: str, pm: rootfs.PathMap, fn: Callable[[], Answer | None]) -> Answer | None:
        """``docker exec NAME …`` of a running container: the inner answer, with the container's paths taken out."""
        state = self.state()
        if not containers.matches(state, name) or state["container"].get("state", "running") != "running":
            return None  # the real docker says why
        ans = fn()
        return None if ans is None else Answer(pm.output(ans.stdout), pm.output(ans.stderr), ans.status)

    def _container_env(self) -> Answer:
        env = tools._container_env(self.state(), [], self.session_env())
        return Answer("".join(f"{k}={v}\n" for k, v in env.items()).encode())

    def _docker_log(self, argv: list[str], *, dated: bool) -> Answer:
        status, out, _ = tools.capture(self.state(), "host", "docker", argv[1:], merge=True)
        zone = (time.strftime("%z") + "\n").encode() if dated else b""
        return Answer(zone + out, b"", status)

    # --- remembered answers -------------------------------------------------------------

    def key(self, command: str, stdin: bytes) -> str:
        """Everything a remembered answer depends on: the command, its stdin, host.json, the
        files of the image's python (``ROOT/venv``: package metadata, torch/version.py) and
        the processes now holding GPU memory — with this host's root path taken out."""
        root = str(self.root).encode()
        h = hashlib.sha256()

        def part(data: bytes) -> None:
            data = data.replace(root, _ROOT_TOKEN)
            h.update(len(data).to_bytes(8, "big") + data)

        part(command.encode())
        part(stdin)
        part(self._host_json())
        part(json.dumps(tools.gpu_procs(str(self.root)), sort_keys=True).encode())
        part(json.dumps(self.session_env(), sort_keys=True).encode())
        venv = str(self.root / "venv")
        for d, dirs, files in os.walk(venv):
            dirs.sort()
            for name in sorted(files):
                f = os.path.join(d, name)
                if not os.path.islink(f):
                    part(f[len(venv) :].encode())
                    with open(f, "rb") as fh:
                        part(fh.read())
        return h.hexdigest()

    async def recall(self, key: str) -> Answer | None:
        """The remembered answer for ``key`` (waiting for a run of it in progress), else None."""
        fut = _running.get(asyncio.get_running_loop(), {}).get(key)
        if key not in _remembered and fut is not None:
            await asyncio.shield(fut)
        ans = _remembered.get(key)
        if ans is None:
            return None
        _remembered.move_to_end(key)
        root = str(self.root).encode()
        return Answer(ans.stdout.replace(_ROOT_TOKEN, root), ans.stderr.replace(_ROOT_TOKEN, root), ans.status)

    def begin(self, key: str) -> asyncio.Future[Answer | None]:
        """Mark a real run of ``key`` as in progress (others asking for it wait for it)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Answer | None] = loop.create_future()
        _running.setdefault(loop, {})[key] = fut
        return fut

    def finish(self, key: str, fut: asyncio.Future[Answer | None], ans: Answer | None) -> None:
        """End a real run: keep its answer when it completed with status 0."""
        running = _running.get(asyncio.get_running_loop(), {})
        if running.get(key) is fut:
            del running[key]
        if ans is not None and ans.status == 0:
            root = str(self.root).encode()
            _remembered[key] = Answer(ans.stdout.replace(root, _ROOT_TOKEN), ans.stderr.replace(root, _ROOT_TOKEN), 0)
            while len(_remembered) > _REMEMBER_MAX:
                _remembered.popitem(last=False)
        if not fut.done():
            fut.set_result(ans)


def _stats(paths: tuple[Path, ...]) -> tuple[tuple[int, int, int] | None, ...]:
    """(mtime, size, inode) of each path, None where there is none."""
    out: list[tuple[int, int, int] | None] = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(out)


def _parents() -> dict[int, int]:
    """pid → parent pid of every process of this machine (what ``pgrep -P`` matches on)."""
    out: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            out[int(name)] = int(stat[stat.rindex(b")") + 2 :].split(None, 2)[1])
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return out


def _argv(command: str) -> list[str]:
    """The argv of a command that is one plain program call ([] for anything with shell syntax)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return []
    return argv if argv and shlex.join(argv) == command else []


def _tool_argv(argv: list[str]) -> bool:
    """A fake tool's call that ends by itself: no ``-l``/``-lms``/``--loop…`` (those run until the
    channel closes), no ``docker exec``/``run`` (they start processes)."""
    if not argv or argv[0] not in ("nvidia-smi", "hostname", "uname", "docker"):
        return False
    if argv[0] == "docker" and argv[1:2] not in (["ps"], ["inspect"], ["images"], ["version"], ["info"]):
        return False
    return not any(a in ("-l", "-lms") or a.startswith("--loop") for a in argv)


def _answer(run: tuple[int, bytes, bytes]) -> Answer:
    status, out, err = run
    return Answer(out, err, status)

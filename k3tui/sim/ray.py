"""The simulated host's ``ray``: a FAKE Ray cluster, for multi-node launches in ray mode.

It is a FAKE on purpose: no GCS, no raylet, no object store. It answers the four commands
a multi-node vLLM launch needs, in the formats of real Ray 2.4x:

- ``ray start --head --port P [--block]``: this node heads cluster P; prints what ``ray
  start`` prints ("Ray runtime started." …) and, with ``--block``, stays until SIGTERM;
- ``ray start --address HOST:P [--block]``: joins cluster P. A host whose scenario says
  ``ray = { join = false }`` never joins: it prints Ray's GCS connection warnings over
  and over, as a worker behind a firewall or on the wrong interface does
  (vllm-project/vllm#15385, ModalMinds/MM-EUREKA#54: ``gcs_rpc_client.h:151: Failed to
  connect to GCS at address … within 5 seconds.``);
- ``ray status [--address HOST:P]``: the autoscaler summary (``Active:`` node lines,
  ``Total Usage`` with the cluster's GPUs, ``Total Demands`` with the placement group a
  starving ``vllm serve`` waits for), laid out as ``ClusterStatusFormatter`` does
  (ray-project/ray ``python/ray/autoscaler/v2/utils.py``);
- ``ray stop``: ends this host's ray processes ("Stopped all N Ray processes.").

How simulated nodes know each other: every :class:`~k3tui.sim.SimHost` of a test or demo
runs its commands in processes of one owner (``K3SIM_OWNER``), so the cluster membership
is a directory shared by that owner's nodes — ``$TMPDIR/k3sim-ray-<owner>/<port>/``, one
file per live node (a dead process's file is ignored, so a killed node leaves the
cluster; a record names its process by pid and start time, so a pid reused by another
process later does not bring a dead node back). The address's host part is not checked
(simulated nodes are all on loopback); the port names the cluster. The fake ``vllm serve …
--distributed-executor-backend ray`` asks :func:`serve_template` whether the cluster has the
GPUs it needs, and replays the placement-group failure when it does not.

Stdlib only: it runs as a fake tool under ``python -S``.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from .pathmap import alive as _alive
from .pathmap import recorded_alive, this_process
from .signals import stop_on_signals

VERSION = "2.49.1"
SHORT_LOG = "multinode-ray-placement-group.log"
"""What a ray-backend ``vllm serve`` replays when the cluster lacks GPUs (unless the scenario names another)."""
_CONNECT = (
    "Could not find any running Ray instance. Please specify the one to connect to by setting "
    "`--address` flag or `RAY_ADDRESS` environment variable."
)


# --- the shared membership -------------------------------------------------------------------


def registry() -> Path:
    """The directory every simulated node of this owner shares."""
    return Path(tempfile.gettempdir()) / f"k3sim-ray-{os.environ.get('K3SIM_OWNER') or os.getuid()}"


def _live(port: int, kind: str) -> list[dict[str, Any]]:
    """The records of cluster ``port`` whose process is alive (a dead one's file is removed)."""
    out = []
    for f in sorted((registry() / str(port)).glob(f"{kind}-*.json")):
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if recorded_alive(rec):
            out.append(rec)
        else:
            f.unlink(missing_ok=True)
    return out


def members(port: int) -> list[dict[str, Any]]:
    """The live nodes of cluster ``port`` (head first)."""
    return sorted(_live(port, "node"), key=lambda r: (not r["head"], r["started"]))


def _demands(port: int) -> list[dict[str, Any]]:
    return _live(port, "demand")


def cluster_of(root: str) -> int | None:
    """The port of the cluster a node of this simulated host is in (None: none)."""
    base = registry()
    for d in sorted(base.glob("*")) if base.is_dir() else []:
        if d.name.isdigit() and any(r["root"] == root for r in members(int(d.name))):
            return int(d.name)
    return None


def _port_of(address: str) -> int | None:
    tail = address.rsplit(":", 1)[-1].strip("'\"")
    return int(tail) if tail.isdigit() else None


# --- the commands ---------------------------------------------------------------------------


def _opts(args: list[str]) -> dict[str, str | bool]:
    """``--key value`` / ``--key=value`` / ``--flag`` into a dict (Ray's own option spelling)."""
    out: dict[str, str | bool] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            key, eq, val = a[2:].partition("=")
            if eq:
                out[key] = val
            elif i + 1 < len(args) and not args[i + 1].startswith("--") and key not in ("head", "block", "verbose"):
                out[key] = args[i + 1]
                i += 1
            else:
                out[key] = True
        i += 1
    return out


def _stamp() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) + f",{int(t % 1 * 1000):03d}"


def _say(level: str, where: str, text: str) -> None:
    sys.stdout.write(f"{_stamp()}\t{level} {where} -- {text}\n")
    sys.stdout.flush()


def _ip(state: dict[str, Any], opts: dict[str, str | bool]) -> str:
    given = opts.get("node-ip-address")
    return str(given) if isinstance(given, str) else state["host"].get("ip", f"10.42.0.{11 + int(state['node'])}")


def _record(state: dict[str, Any], opts: dict[str, str | bool], port: int, head: bool) -> Path:
    host = state["host"]
    gpus = opts.get("num-gpus")
    seed = f"{host['hostname']}/{os.getpid()}/{time.time()}"
    rec = {
        "node_id": hashlib.sha256(seed.encode()).hexdigest()[:56],
        **this_process(),
        "root": state["root"],
        "hostname": host["hostname"],
        "ip": _ip(state, opts),
        "head": head,
        "gpus": float(gpus) if isinstance(gpus, str) else float(len(host["gpus"])),
        "cpus": float(host.get("cpus", 144)),
        "memory_gib": float(host.get("ray_memory_gib", 1203.55)),
        "object_store_gib": float(host.get("ray_object_store_gib", 186.26)),
        "started": time.time(),
    }
    d = registry() / str(port)
    d.mkdir(parents=True, exist_ok=True)
    f = d / f"node-{rec['node_id']}.json"
    tmp = f.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec))
    tmp.replace(f)
    return f


def _started_lines(ip: str, port: int, head: bool) -> None:
    _say("INFO", "usage_lib.py:447", "Usage stats collection is disabled.")
    _say("INFO", "scripts.py:914", f"Local node IP: {ip}")
    _say("SUCC", "scripts.py:950", "--------------------")
    _say("SUCC", "scripts.py:951", "Ray runtime started.")
    _say("SUCC", "scripts.py:952", "--------------------")
    if head:
        _say("INFO", "scripts.py:954", "Next steps")
        _say("INFO", "scripts.py:957", "To add another node to this Ray cluster, run")
        _say("INFO", "scripts.py:960", f"  ray start --address='{ip}:{port}'")
        _say("INFO", "scripts.py:969", "To connect to this Ray cluster:")
        _say("INFO", "scripts.py:971", "  import ray")
        _say("INFO", "scripts.py:972", "  ray.init()")
        _say("INFO", "scripts.py:1003", "To view the status of the cluster, use")
        _say("INFO", "scripts.py:1004", "  ray status")
    _say("INFO", "scripts.py:1114", "To terminate the Ray runtime, run")
    _say("INFO", "scripts.py:1115", "  ray stop")


def _block_lines() -> None:
    _say("INFO", "scripts.py:1121", "--block")
    _say("INFO", "scripts.py:1122", "This command will now block forever until terminated by a signal.")
    _say(
        "INFO",
        "scripts.py:1125",
        "Running subprocesses are monitored and a message will be printed if any of them terminate unexpectedly. "
        "Subprocesses exit with SIGTERM will be treated as graceful, thus NOT reported.",
    )


def _gone(root: str) -> bool:
    """The process simulating this host is gone, or its root was removed (then we end: no orphans)."""
    owner = int(os.environ.get("K3SIM_OWNER") or 0)
    return bool(owner and not _alive(owner)) or not (Path(root) / "state").is_dir()


def _stay(stop: threading.Event, root: str) -> None:
    """Block until SIGTERM or :func:`_gone`."""
    while not stop.wait(0.5):
        if _gone(root):
            return


def start(state: dict[str, Any], args: list[str]) -> int:
    opts = _opts(args)
    stop = threading.Event()
    stop_on_signals(stop)
    if opts.get("head"):
        port = int(str(opts.get("port", 6379)))
        if any(r["head"] for r in members(port)):
            other = next(r for r in members(port) if r["head"])
            print(
                f"ConnectionError: Ray is trying to start at {_ip(state, opts)}:{port}, but is already running at "
                f"{other['ip']}:{port}. Please specify a different port using the `--port` flag of `ray start` command.",
                file=sys.stderr,
            )
            return 1
        return _serve_node(state, opts, port, head=True, stop=stop)
    address = opts.get("address")
    joining = _port_of(address) if isinstance(address, str) else None
    if joining is None:
        print("ray start: give --head, or --address HEAD:PORT to join a cluster (k3tui simulated ray)", file=sys.stderr)
        return 2
    _say("INFO", "scripts.py:1047", f"Local node IP: {_ip(state, opts)}")
    joins = (state["host"].get("ray") or {}).get("join", True)
    pid = os.getpid()
    while not stop.is_set():
        if joins and _head_up(joining):
            return _serve_node(state, opts, joining, head=False, stop=stop, announce_ip=False)
        # Ray's own warnings while the GCS cannot be reached (a worker that never joins repeats them)
        ts = _stamp()
        sys.stdout.write(
            f"[{ts} W {pid} {pid}] gcs_rpc_client.h:151: Failed to connect to GCS at address {address} within 5 seconds.\n"
            f"[{ts} W {pid} {pid}] gcs_client.cc:183: Failed to get cluster ID from GCS server: TimedOut: "
            "Timed out while waiting for GCS to become available.\n"
        )
        sys.stdout.flush()
        stop.wait(1.0)
        if _gone(state["root"]):
            return 0
    return 0


def _head_up(port: int) -> bool:
    return any(r["head"] for r in members(port))


def _serve_node(
    state: dict[str, Any], opts: dict[str, str | bool], port: int, *, head: bool, stop: threading.Event,
    announce_ip: bool = True,
) -> int:  # fmt: skip
    f = _record(state, opts, port, head)
    try:
        if announce_ip:
            _started_lines(_ip(state, opts), port, head)
        else:
            _say("SUCC", "scripts.py:1063", "--------------------")
            _say("SUCC", "scripts.py:1064", "Ray runtime started.")
            _say("SUCC", "scripts.py:1065", "--------------------")
            _say("INFO", "scripts.py:1067", "To terminate the Ray runtime, run")
            _say("INFO", "scripts.py:1068", "  ray stop")
        if opts.get("block"):
            _block_lines()
            _stay(stop, state["root"])
            return 0
        # without --block real Ray leaves its daemons running: here a child holds the membership
        import subprocess

        subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-S", "-c", _DAEMON, str(f), state["root"]],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=dict(os.environ),
        )
        time.sleep(0.2)
        return 0
    finally:
        if opts.get("block"):
            f.unlink(missing_ok=True)
            _tidy(port)


def _tidy(port: int) -> None:
    """Drop what dead processes left of cluster ``port``, then the directories once empty (no litter in $TMPDIR)."""
    _live(port, "node"), _live(port, "demand")
    for d in (registry() / str(port), registry()):
        try:
            d.rmdir()
        except OSError:
            return


# A detached holder of one node's membership (``ray start`` without ``--block``): it takes the
# record over (its own pid) and leaves with ``ray stop``, its owner or its host's root.
_DAEMON = r"""
import json, os, signal, sys, time
f, root = sys.argv[1], sys.argv[2]
rec = json.loads(open(f).read()); rec["pid"] = os.getpid()
rec["since"] = int(open("/proc/self/stat", "rb").read().rsplit(b")", 1)[-1].split()[19])
open(f, "w").write(json.dumps(rec))
owner = int(os.environ.get("K3SIM_OWNER") or 0)
signal.signal(signal.SIGTERM, lambda *_: (os.path.exists(f) and os.unlink(f), sys.exit(0)))
while os.path.isdir(os.path.join(root, "state")):
    try:
        owner and os.kill(owner, 0)
    except ProcessLookupError:
        break
    time.sleep(0.5)
os.path.exists(f) and os.unlink(f)
"""


def status(state: dict[str, Any], args: list[str]) -> int:
    opts = _opts(args)
    address = opts.get("address") or os.environ.get("RAY_ADDRESS")
    port = _port_of(address) if isinstance(address, str) else cluster_of(state["root"])
    nodes = members(port) if port is not None else []
    if not any(r["head"] for r in nodes):
        print(f"ConnectionError: {_CONNECT}", file=sys.stderr)
        return 1
    sys.stdout.write(format_status(nodes, _demands(port or 0)))
    sys.stdout.flush()
    return 0


def format_status(nodes: list[dict[str, Any]], demands: list[dict[str, Any]]) -> str:
    """``ray status`` for these live nodes (Ray's layout, to the line)."""
    now = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime()) + f".{int(time.time() % 1 * 1e6):06d}"
    sep = "-" * 63
    used = sum(float(d.get("used", 0)) for d in demands)
    cpus = sum(r["cpus"] for r in nodes)
    gpus = sum(r["gpus"] for r in nodes)
    mem = sum(r["memory_gib"] for r in nodes)
    obj = sum(r["object_store_gib"] for r in nodes)
    lines = [f"======== Autoscaler status: {now} ========", "Node status", sep, "Active:"]
    lines += [f" 1 node_{r['node_id']}" for r in nodes]
    lines += ["Pending:", " (no pending nodes)", "Recent failures:", " (no failures)", "", "Resources", sep]
    lines += ["Total Usage:", f" 0.0/{cpus:.1f} CPU", f" {used:.1f}/{gpus:.1f} GPU"]
    lines += [f" 0B/{_size(mem)} memory", f" 0B/{_size(obj)} object_store_memory", ""]
    lines += ["Total Constraints:", " (no request_resources() constraints)", "Total Demands:"]
    pending = [d for d in demands if not d.get("used")]
    if pending:
        lines += [f" {{'GPU': 1.0}} * {int(d['gpus'])} (PACK): 1+ pending placement groups" for d in pending]
    else:
        lines.append(" (no resource demands)")
    return "\n".join(lines) + "\n"


def _size(gib: float) -> str:
    return f"{gib / 1024:.2f}TiB" if gib >= 1024 else f"{gib:.2f}GiB"


def stop_cmd(state: dict[str, Any], args: list[str]) -> int:
    """``ray stop``: TERM this host's ray processes (then KILL with ``--force``)."""
    base = registry()
    mine = [
        r for d in (sorted(base.glob("*")) if base.is_dir() else []) if d.name.isdigit()
        for r in members(int(d.name)) if r["root"] == state["root"]
    ]  # fmt: skip
    for r in mine:
        try:
            os.kill(int(r["pid"]), signal.SIGKILL if "--force" in args or "-f" in args else signal.SIGTERM)
        except ProcessLookupError:
            pass
    if not mine:
        _say("INFO", "scripts.py:1255", "Did not find any active Ray processes.")
        return 0
    deadline = time.time() + 10
    while time.time() < deadline and any(recorded_alive(r) for r in mine):
        time.sleep(0.1)
    for d in list(base.glob("*")):
        if d.name.isdigit():
            _tidy(int(d.name))
    _say("SUCC", "scripts.py:1291", f"Stopped all {len(mine) * 5} Ray processes.")
    return 0


def main(state: dict[str, Any], args: list[str]) -> int:
    """``ray …`` on the simulated host."""
    if args[:1] in (["--version"], ["version"]):
        print(f"ray, version {VERSION}")
        return 0
    cmd = {"start": start, "status": status, "stop": stop_cmd}.get(args[0] if args else "")
    if cmd is None:
        print("Usage: ray [OPTIONS] COMMAND [ARGS]...  (k3tui simulated ray: start, status, stop)", file=sys.stderr)
        return 2
    return cmd(state, args[1:])


# --- what a ray-backend ``vllm serve`` sees --------------------------------------------------


def serve_template(state: dict[str, Any], argv: list[str], template: str, tp: int) -> str:
    """The log a ``vllm serve`` replays: its scenario's, unless it uses the ray executor and the cluster is short.

    Also puts the placement group it asks for where ``ray status`` shows it (a pending
    demand while it waits, used GPUs once it has them).
    """
    joined = " ".join(argv).replace("=", " ")
    if "--distributed-executor-backend ray" not in joined:
        return template
    address = os.environ.get("RAY_ADDRESS")
    port = _port_of(address) if address else cluster_of(state["root"])
    nodes = members(port) if port is not None else []
    have = sum(r["gpus"] for r in nodes) if nodes else float(len(state["host"]["gpus"]))
    short = have < tp
    if port is not None:
        d = registry() / str(port)
        d.mkdir(parents=True, exist_ok=True)
        (d / f"demand-{os.getpid()}.json").write_text(
            json.dumps({**this_process(), "gpus": tp, "used": 0 if short else tp})
        )
    return state["vllm"].get("ray_short_log", SHORT_LOG) if short else template

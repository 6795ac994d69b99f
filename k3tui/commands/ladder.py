"""`k3tui ladder TARGET` — run the ladder's rungs headless, one variable at a time, with progress lines.

The same :class:`~k3tui.ladder.LadderEngine` the TUI drives; this command only opens the
hosts, applies the operator's single change (``--set``), runs the rungs and prints what
the events say. Exit status: 0 when every rung run passed, 1 when one failed or drifted
(a finding, not a crash), 2 for usage errors or when k3tui could not run a rung.

The last line is for scripts: ``result: rung=<last> verdict=<V> reproduced=<k/K> stage=<first failing stage|none>``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .. import aio
from .. import events as ev
from ..errors import UsageError
from ..textsafe import neutralise
from ._common import add_record_option, add_target_options

HELP = "run the ladder rungs headless, one variable at a time"
_SHOWN = (
    ev.RungEntered,
    ev.RungLeft,
    ev.CheckVerdict,
    ev.StageReached,
    ev.ExceptionFound,
    ev.RunStarted,
    ev.RunEnded,
    ev.RunClassified,
    ev.SceneFrozen,
    ev.Notice,
    ev.Decision,
    ev.RunConfigSet,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_target_options(p, nargs="?")
    p.add_argument(
        "--multinode",
        action="store_true",
        help="launch the hosts as one multi-node deployment (head = first host or the inventory's head), the way "
        "the profile's [launch.multinode] says: vLLM's multi-node options (workers --headless) or a Ray cluster",
    )
    p.add_argument(
        "--multinode-mode",
        choices=("vllm", "ray"),
        help="with --multinode: the launch mode instead of the profile's (implies --multinode)",
    )
    p.add_argument(
        "--profile", default="kimi-k3", help="profile name in assets/profiles or a .toml path (default kimi-k3)"
    )
    p.add_argument(
        "--rung",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this rung (repeatable); default: the whole ladder",
    )
    p.add_argument(
        "--repeat", type=int, default=1, metavar="K", help="attempts per rung, for 'reproduced k/K' (default 1)"
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="VAR=VALUE",
        help="one change for this run (max_model_len=4096, env:NCCL_DEBUG=INFO, flag:enforce-eager=true)",
    )
    p.add_argument("--reason", help="why more than one variable changes (recorded as a decision)")
    p.add_argument(
        "--override-hardware",
        metavar="REASON",
        default="",
        help="climb on although a host has a hardware fault (Xid, ECC, NVLink, IMEX); the reason is recorded",
    )
    p.add_argument(
        "--toggle",
        action="append",
        default=[],
        metavar="NAME",
        help="apply a profile debug toggle (vllm-debug-log, nccl-debug …)",
    )
    p.add_argument("--yes", action="store_true", help="confirm toggles that carry a warning (VLLM_TRACE_FUNCTION=1)")
    p.add_argument(
        "--force", action="store_true", help="run a feature rung although the rungs below it are not stable (recorded)"
    )
    p.add_argument("--model-path", default="", help="fills {model_path} in the profile's launch")
    p.add_argument("--port", type=int, help="server port on the host (default: the profile's)")
    p.add_argument("--vllm", metavar="PATH", help="the vllm executable on the host (default: 'vllm' from PATH)")
    p.add_argument("--isolated-node", action="store_true", help="mark this session as the isolated-node comparison run")
    from ..scene.session import add_launcher_options

    add_launcher_options(p)  # --pod NS/NAME: each run a one-off pod derived from the frozen manifest (issue 18)
    add_record_option(p)


async def _launched(args: argparse.Namespace, hosts: list[Any], emit: Any) -> dict[str, Any]:
    """With ``--pod`` (or ``--runtime kubernetes``): freeze the pod first; every run is a pod derived from it.
    With ``--job`` (or ``--runtime slurm``, issue 19): freeze the job; every run is its batch script resubmitted
    with the one change (a multi-node job is one run: one sbatch, one scancel).
    With ``--pod`` naming a pod of a LeaderWorkerSet group, every run is the whole group (one pod per member,
    the members shown as nodes, head = the leader: :mod:`k3tui.launch.kube_group`); ``--multinode`` asks for that.
    """
    slurm = bool(getattr(args, "job", None)) or getattr(args, "runtime", None) == "slurm"
    if not (slurm or getattr(args, "pod", None) or getattr(args, "runtime", None) == "kubernetes"):
        if getattr(args, "image", None):
            raise UsageError(
                "--image chooses a pod's container through containerd: the ladder needs --pod NAMESPACE/NAME"
            )
        return {}
    if slurm and (args.multinode or args.multinode_mode):
        raise UsageError("--job ladders one Slurm job (its nodes are one run)")
    if args.multinode_mode:
        raise UsageError("--pod: a pod group's nodes start as their manifests say; --multinode-mode does not apply")
    from ..launch import get
    from ..scene.session import pick_from_args

    pick = pick_from_args(args)
    launcher: Any = get("slurm" if slurm else "kubernetes", pick)
    await launcher.freeze(hosts[0], pick, emit=emit, reason="ladder-start")
    group: Any = None
    if len(getattr(launcher, "group_pods", [])) > 1:
        from ..launch.kube_group import PodGroup

        group = PodGroup(launcher)
    elif args.multinode:
        raise UsageError(f"--multinode: pod {args.pod} is not a pod of a LeaderWorkerSet group with more than one pod")
    start = group.start_config() if group is not None else launcher.start_config()
    gone = await launcher.leftovers(hosts[0]) if hasattr(launcher, "leftovers") else []
    if gone:  # k3tui's own run pods of a session that died before it could delete them
        emit(
            ev.Notice(
                host=hosts[0].alias,
                level="warning",
                message=f"deleted run pods an earlier session left: {', '.join(gone)}",
            )
        )
    if slurm and args.port is None and str(start.flags.get("port", "")).isdigit():
        args.port = int(start.flags["port"])  # /health on the port the script serves
    if group is not None:
        from ..launch.kube_group import group_engine

        return {"engine": group_engine(group), "start_config": start}
    return {"launcher": launcher, "start_config": start}


def _value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "on", "yes"):
        return True
    if low in ("false", "off", "no"):
        return False
    if low in ("none", "unset", ""):
        return None
    return text


def parse_sets(items: list[str]) -> dict[str, Any]:
    """``["max_model_len=4096", "env:X=1"]`` → changes (UsageError on a malformed item)."""
    changes: dict[str, Any] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"--set {item!r}: expected VAR=VALUE (e.g. max_model_len=4096)")
        changes[key.strip()] = _value(value.strip())
    return changes


def _printer(emit: Any) -> Any:
    """Print the events an operator follows; stop conditions only when their verdict changes.

    What is printed is redacted (incidents are screen-shared; without ``--record`` nothing
    else would redact it) and neutralised (log lines and host names come from the host).
    """
    from ..redact import Redactor

    stops: dict[tuple[str, str], str] = {}
    red = Redactor.from_environment()

    def quiet(e: Any) -> bool:
        if not isinstance(e, ev.CheckVerdict) or e.rung not in ("stop", "checklist"):
            return False
        if e.rung == "checklist":
            return True
        key = (e.host, e.check)
        same = stops.get(key) == e.verdict
        stops[key] = e.verdict
        return same

    def show(e: Any) -> Any:
        out = emit(e) if emit is not None else e
        if isinstance(e, _SHOWN) and not quiet(e):
            shown = red.event(out if isinstance(out, type(e)) else e)
            host = f"[{shown.host}] " if shown.host else ""
            print(neutralise(red.text(f"{host}{ev.summary(shown, 160)}")), flush=True)
        return out

    return show


def run(args: argparse.Namespace) -> int:
    from ..profile import load_profile
    from ..scene.session import recorder_for, reject_inventory

    reject_inventory(args)
    profile = load_profile(args.profile)
    changes = parse_sets(args.set)
    with recorder_for(args, profile=profile.name) as rec:
        return aio.run(_run(args, profile, changes, rec))  # (Ctrl-C ends in bounded time)


async def _run(args: argparse.Namespace, profile: Any, changes: dict[str, Any], rec: Any) -> int:
    from ..ladder import LadderEngine, checklist
    from ..scene.session import open_hosts

    events: list[Any] = []
    base = rec.emit if rec is not None else None

    def keep(e: Any) -> Any:
        recorded = base(e) if base else e  # redacted and time-stamped, as on disk
        events.append(recorded)
        return recorded

    emit = _printer(keep)
    async with open_hosts(args, emit) as (hosts, errors):
        for alias, why in errors.items():
            print(neutralise(f"k3tui: {alias}: {why}"), file=sys.stderr)
        make: Any = LadderEngine
        if args.multinode or args.multinode_mode:  # issue 9: every node a detached run (k3tui.fleet.launch)
            from ..fleet.cli import multinode_engine_for

            make = multinode_engine_for(args)  # with the inventory's master address/port

            if errors:
                from ..errors import HostError

                raise HostError(f"a multi-node launch needs every node; unreachable: {', '.join(errors)}")
        launched = await _launched(args, hosts, emit)  # issue 18: --pod: runs are pods derived from its manifest
        make = launched.pop("engine", make)  # a pod group: its members are the deployment's nodes
        engine = make(
            hosts,
            profile,
            emit,
            model_path=args.model_path,
            port=args.port,
            program=args.vllm,
            events=events,
            **launched,
        )
        try:
            results = await _climb(engine, args, changes)
        finally:
            await engine.close()
    for item in checklist.evaluate(events):
        print(neutralise(f"checklist {item.status:7} {item.title}: {item.why}"))
    return _summary(results, events)


async def _climb(engine: Any, args: argparse.Namespace, changes: dict[str, Any]) -> list[Any]:
    if args.isolated_node:
        engine.emit(ev.Decision(action="isolated-node comparison", reason="this session runs on an isolated node"))
    if args.override_hardware:
        engine.climb_past_hardware(args.override_hardware)
    for name in args.toggle:
        engine.toggle(name, confirmed=args.yes)
    if changes:
        engine.apply_change(changes, reason=args.reason)
    if not args.rung:
        return await engine.run_all(repeat=args.repeat)
    results = []
    for name in args.rung:
        results.append(await engine.run_rung(name, repeat=args.repeat, force=args.force))
        if results[-1].verdict != "PASS":
            break
    engine.emit_checklist()
    return results


def _summary(results: list[Any], events: list[Any]) -> int:
    last = results[-1] if results else None
    stage = next(
        (e.failed_stage for e in events if isinstance(e, ev.RunClassified) and e.failed_stage != "none"), "none"
    )
    rep = f"{last.reproduced}/{last.repeats}" if last else "-"
    print(
        f"result: rung={last.rung if last else '-'} verdict={last.verdict if last else '-'} reproduced={rep} stage={stage}"
    )
    verdicts = {r.verdict for r in results}
    if "ERROR" in verdicts:
        return 2
    return 1 if verdicts & {"FAIL", "DRIFT"} else 0

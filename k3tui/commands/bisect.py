"""`k3tui bisect TARGET --good G --bad B` — find the variable that flips a good run into a bad one.

The search is :mod:`k3tui.ladder.bisect` (delta debugging, K repetitions, signatures); this
command builds G and B as run configs, prints what differs and what the search expects to
cost, asks (or ``--yes``), then runs every step as a real, recorded ladder run on the target:
each step's config change is a ``RunConfigSet`` with the reason "bisect step i of ~n", each
verdict a ``Decision``. ``demo:SCENARIO`` bisects on the embedded SIMULATED host.

G and B: ``profile`` (the profile's minimal launch), a session file (``.k3rec``: the config of
its last run), or a pasted ``vllm serve …`` / ``docker run …`` line; ``--good-set`` / ``--bad-set VAR=V`` change them (B defaults to G).

Exit status: 0 with a confirmed ``culprit:`` or ``interaction:`` line, 1 for any other
outcome (drift, not reproduced, unconfirmed, budget), 2 for usage errors, 130 when
interrupted (Ctrl-C). The last line is the answer.

Ctrl-C keeps what was learnt: the search stops, the server is stopped, a closing Decision
("bisect aborted") records the runs judged and the candidates left, and one line on stderr
says how to resume. ``--resume FILE`` reads the recorded steps (each step's ``RunConfigSet``
and its verdict Decision: :func:`~k3tui.ladder.bisect.judged_steps`) and continues the same
search without running a judged configuration again; with ``--record`` the new recording
starts with those steps, so it is whole (and can be resumed in turn).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from typing import Any

from .. import aio
from .. import events as ev
from ..errors import K3Error, UsageError
from ..textsafe import neutralise
from ._common import add_record_option, add_target_options

HELP = "find the one variable that flips a good run config into a bad one (delta debugging)"
DEMO_RUN_S = 5.0
"""A simulated run's wall time (start-up replay, stop), for the estimate."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_target_options(p)
    p.add_argument(
        "--good",
        default="profile",
        help="'profile' (the minimal launch), a .k3rec session (its last run's config), a scene JSON (k3tui freeze --json) or a launch command line",
    )
    p.add_argument("--bad", default="", help="like --good (default: G); --bad-set changes it")
    for side in ("good", "bad"):
        p.add_argument(
            f"--{side}-set", action="append", default=[], metavar="VAR=VALUE",
            help=f"change {side[0].upper()} (max_model_len=…, flag:NAME=…, env:NAME=…; repeatable)",
        )  # fmt: skip
    p.add_argument("--repeat", type=int, default=1, metavar="K", help="repetitions per run (default 1)")
    p.add_argument("--rung", default="minimal", help="the rung each run is judged on (default minimal)")
    p.add_argument("--budget", type=int, metavar="N", help="stop after N runs")
    p.add_argument("--run-seconds", type=float, metavar="S", help="one run's expected wall time, for the estimate")
    p.add_argument("--profile", default="kimi-k3", help="profile name or .toml path (default kimi-k3)")
    p.add_argument("--model-path", default="", help="fills {model_path} in the profile's launch")
    p.add_argument("--port", type=int, help="server port on the host (default: the profile's)")
    p.add_argument("--vllm", metavar="PATH", help="the vllm executable on the host")
    p.add_argument("--speed", type=float, help="demo: the simulated log's replay speed")
    p.add_argument(
        "--request", metavar="FILE",
        help="the request the 'request' rung sends (default: the profile's; demo: the scenario's own when it has one)",
    )  # fmt: skip
    p.add_argument(
        "--resume", metavar="FILE",
        help="continue the bisect recorded in FILE (.k3rec): the steps it judged are not run again",
    )  # fmt: skip
    p.add_argument("--yes", action="store_true", help="start without asking")
    add_record_option(p)


def build_configs(args: argparse.Namespace, profile: Any) -> tuple[Any, Any]:
    """G and B as run configs (UsageError on anything malformed)."""
    from ..ladder.config import apply_changes, from_profile, parse_command
    from .ladder import parse_sets

    def one(spec: str) -> Any:
        if spec.strip() == "profile":
            return from_profile(profile, model_path=args.model_path, port=args.port)
        if spec.endswith(".k3rec"):
            return session_config(spec)
        if spec.endswith(".json"):
            return scene_config(spec)
        return parse_command(spec)

    good = apply_changes(one(args.good), parse_sets(args.good_set))
    bad = one(args.bad) if args.bad else good
    bad = apply_changes(bad, parse_sets(args.bad_set))
    return good, bad


def session_config(path: str) -> Any:
    """The config of the last run a recorded session set (its last ``RunConfigSet``)."""
    import msgspec

    from ..ladder.config import RunConfig
    from ..reader import read_all

    try:
        _, events = read_all(path)
    except (OSError, K3Error) as exc:
        raise UsageError(f"cannot read session {path}: {exc}") from None
    last = next((e for e in reversed(events) if isinstance(e, ev.RunConfigSet) and e.config), None)
    if last is None:
        raise UsageError(f"session {path} records no run config: use 'profile' or a launch command line")
    return msgspec.convert(last.config, RunConfig)


def scene_config(path: str) -> Any:
    """The run a frozen scene (``k3tui freeze --json``) describes: its server's launch, image, driver, GPUs, env.

    The launch is the serving process's argv when it is a vLLM server, else the container's
    entrypoint + command (``vllm serve`` + its args, as ``docker inspect`` has them). The driver and
    the GPU count are observed facts (bisect lists them as not bisectable); the serving env is the
    scene's (``LD_LIBRARY_PATH``, ``NCCL_*``, ``CUDA_*`` …), masked values left out.
    """
    import json

    from ..ladder.config import parse_command

    try:
        data = json.loads(open(path, encoding="utf-8").read())
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read scene {path}: {exc}") from None
    if isinstance(data, list):
        data = data[0] if data else {}
    if not isinstance(data, dict):
        raise UsageError(f"{path} is not a scene (k3tui freeze --json writes one)")
    argv = _server_argv(data)
    if argv is None:
        raise UsageError(
            f"scene {path} holds no vLLM server launch (neither its process nor its container runs 'vllm serve'): "
            "freeze it while the server runs, or give the launch command line"
        )
    cfg = parse_command(argv)
    cfg.image = str((data.get("container") or {}).get("image") or "")
    cfg.driver = str((data.get("host") or {}).get("driver_version") or "")
    cfg.gpu_count = len(data.get("gpus") or []) or None
    for k, v in sorted((data.get("env") or {}).items()):
        if isinstance(v, str) and v and "<redacted>" not in v and k != "PATH":
            cfg.env.setdefault(k, v)
    return cfg


def _server_argv(scene: dict[str, Any]) -> list[str] | None:
    """``vllm serve …`` (or ``python -m vllm.entrypoints…``) from the process, else from the container."""
    argv = [str(a) for a in ((scene.get("process") or {}).get("cmdline") or [])]
    for i, a in enumerate(argv):
        if a.rsplit("/", 1)[-1] == "vllm" and argv[i + 1 : i + 2] == ["serve"]:
            return ["vllm", "serve", *argv[i + 2 :]]
        if a == "-m" and argv[i + 1 : i + 2] and argv[i + 1].startswith("vllm.entrypoints"):
            return ["python3", *argv[i:]]
    c = scene.get("container") or {}
    entry = [str(a) for a in (c.get("entrypoint") or [])]
    cmd = [str(a) for a in (c.get("cmd") or [])]
    whole = entry + cmd
    if whole[:2] == ["vllm", "serve"] or (len(whole) > 1 and whole[0].endswith("/vllm") and whole[1] == "serve"):
        return ["vllm", "serve", *whole[2:]]
    return None


def describe(p: Any, repeat: int, run_s: float) -> list[str]:
    """What differs, what can change, the runs and time expected."""
    lines = [f"{len(p.differing)} variable(s) differ between good and bad:"]
    for d in p.differing:
        mark = "  (not bisectable here: compare on an isolated node)" if d["key"] in p.fixed else ""
        lines.append(f"  {d['key']}: {d['old']!r} -> {d['new']!r}{mark}")
    mins = p.expected_runs * repeat * run_s / 60
    lines.append(
        f"bisectable: {len(p.changeable)}; expected runs: {p.expected_runs} (worst {p.worst_runs}) x {repeat} "
        f"repetition(s), about {mins:.1f} min"
    )
    return lines


def _confirm(yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise UsageError("bisect starts real runs on the target: confirm with --yes")
    if input("start the bisect? [y/N] ").strip().lower() not in ("y", "yes"):
        raise UsageError("bisect not started")


def run(args: argparse.Namespace) -> int:
    from ..ladder.bisect import plan
    from ..profile import load_profile
    from ..scene.session import recorder_for

    profile = load_profile(args.profile)
    if args.repeat < 1:
        raise UsageError("--repeat must be at least 1")
    _use_request(args, profile)
    good, bad = build_configs(args, profile)
    p = plan(good, bad)
    prior = _prior(args, good, bad, p)
    demo = args.target.startswith("demo:")
    run_s = args.run_seconds or (DEMO_RUN_S if demo else float(profile.launch.ready_timeout_s) / 2)
    for line in describe(p, args.repeat, run_s):
        print(neutralise(line))
    if not p.changeable:
        print("result: nothing to bisect (no changeable variable differs)")
        return 1
    if prior[0]:
        print(neutralise(f"resuming {args.resume}: {len(prior[0])} step(s) already judged there (not run again)"))
    _confirm(args.yes)
    where = args.record or args.resume
    resume = _resume_command(where) if where else ""
    with recorder_for(args, profile=profile.name) as rec:
        out = aio.run(_run(args, profile, good, bad, p, rec, prior, resume=resume))  # (Ctrl-C ends in bounded time)
    if out.kind == "aborted":
        print(neutralise(f"bisect interrupted: {out.line}"))
        how = (
            f"resume with: {resume}"
            if where
            else "nothing was recorded: run it again with --record FILE to be able to resume"
        )
        print(neutralise(f"bisect interrupted after {out.runs} run(s); {how}"), file=sys.stderr)
        return 130
    return 0 if out.kind in ("culprit", "interaction") and out.confirmed else 1


def _resume_command(path: str) -> str:
    """This command line again with ``--resume PATH`` (and ``--yes``: it was confirmed once).

    A ``--record`` becomes a new file next to it (a recording is never overwritten); the
    resumed recording starts with the steps judged here, so it holds the whole walk.
    """
    import shlex
    from pathlib import Path

    argv, it, record = [], iter(sys.argv[1:]), ""
    for a in it:
        name, eq, value = a.partition("=")
        if name in ("--resume", "--record"):
            value = value if eq else next(it, "")
            record = value if name == "--record" else record
            continue
        if a != "--yes":
            argv.append(a)
    argv += ["--yes", "--resume", path]
    if record:
        p = Path(record)
        stem = p.name.removesuffix(".k3rec")
        n = 1
        while (nxt := p.with_name(f"{stem}.resumed{'' if n == 1 else n}.k3rec")).exists():
            n += 1
        argv += ["--record", str(nxt)]
    return shlex.join(["k3tui", *argv])


def _use_request(args: argparse.Namespace, profile: Any) -> None:
    """``--request FILE`` (or a demo scenario's own request) becomes the profile's fixed request."""
    from ..ladder.rungs import load_request

    path = args.request
    if not path and args.target.startswith("demo:"):
        from ..assets import asset
        from ..sim.scenario import load_raw

        with contextlib.suppress(KeyError, ValueError, OSError):
            own = load_raw(args.target[5:]).get("request")
            if own:
                path = str(asset("scenarios", own))
    if path:
        load_request(path)  # UsageError now, not at the first run
        profile.request.file = path


def _prior(args: argparse.Namespace, good: Any, bad: Any, p: Any) -> tuple[list[Any], str, list[Any]]:
    """The steps ``--resume FILE`` judged already (trials, B's signature, their events)."""
    if not args.resume:
        return [], "", []
    from ..ladder.bisect import judged_steps
    from ..ladder.config import variables
    from ..reader import read_all

    try:
        _, events = read_all(args.resume)
    except (OSError, K3Error) as exc:
        raise UsageError(f"cannot read the bisect to resume {args.resume}: {exc}") from None
    g, b = variables(good), variables(bad)
    trials, target, kept = judged_steps(
        events, {k: g.get(k) for k in p.changeable}, {k: b.get(k) for k in p.changeable}
    )
    if not trials:
        raise UsageError(f"{args.resume} records no judged bisect step: nothing to resume (start it without --resume)")
    return trials, target, kept


@contextlib.asynccontextmanager
async def _hosts(args: argparse.Namespace, emit: Any) -> Any:
    if not args.target.startswith("demo:"):
        from ..scene.session import open_hosts

        async with open_hosts(args, emit) as (hosts, _errors):
            yield hosts
        return
    from ..remote.ssh import connect
    from .demo import SimNodes

    async with SimNodes(args.target[5:], **({"speed": args.speed} if args.speed else {})) as sims:
        hosts = [await connect(emit=emit, **s.connect_kwargs()) for s in sims]
        try:
            yield hosts
        finally:
            await asyncio.gather(*(h.close() for h in hosts), return_exceptions=True)


async def _run(
    args: argparse.Namespace,
    profile: Any,
    good: Any,
    bad: Any,
    p: Any,
    rec: Any,
    prior: tuple[list[Any], str, list[Any]],
    resume: str = "",
) -> Any:
    """Run the search; an interrupt records what it learnt and, with ``resume``, the exact command to go on."""
    import msgspec

    from ..ladder import LadderEngine
    from ..ladder.bisect import Bisector, Outcome, abort_line, step_decision, table
    from ..ladder.config import variables

    known, target, recorded = prior
    events: list[Any] = []
    if rec is not None and recorded:  # the resumed steps open the new recording: it holds the whole walk
        rec.emit(
            ev.Decision(
                host=args.target, action="bisect resumed", reason=f"{len(known)} step(s) judged in {args.resume}"
            )
        )
        for e in recorded:
            rec.emit(msgspec.structs.replace(e, t=0.0))

    def emit(e: Any) -> Any:
        out = rec.emit(e) if rec is not None else e
        events.append(out)
        return out

    target_vals = variables(bad)
    changes = {k: target_vals.get(k) for k in p.changeable}
    good_vals = variables(good)
    async with _hosts(args, emit) as hosts:
        engine = LadderEngine(
            hosts, profile, emit, model_path=args.model_path, port=args.port, program=args.vllm,
            events=events, start_config=good, request_repeat=1,
        )  # fmt: skip  # one fixed request per repetition: the bisect's --repeat K is the repetition count
        step = [len(known)]
        bisector: Any = None

        def on_step(t: Any, n: int) -> None:
            action, reason = step_decision(t, n, bisector.target if bisector is not None else "")
            emit(ev.Decision(host=engine.head.alias, action=action, reason=reason))
            print(neutralise(f"step {t.step}/~{n}: {t.verdict:5} {t.reproduced}/{t.repeats}  {t.purpose}"), flush=True)

        async def probe(taken: dict[str, Any], repeat: int) -> list[Any]:
            step[0] += 1
            return await _probe(engine, good, taken, repeat, args.rung, f"bisect step {step[0]} of ~{p.expected_runs}")

        bisector = Bisector(
            changes,
            probe,
            repeat=args.repeat,
            budget=args.budget,
            on_step=on_step,
            estimate=p.expected_runs,
            good_values={k: good_vals.get(k) for k in changes},
            known=known,
            target=target,
        )
        try:
            out = await bisector.run()
        except asyncio.CancelledError:  # Ctrl-C: asyncio cancels the search; what it learnt stays
            line = abort_line(bisector) + (f"; resume with: {resume}" if resume else "")
            out = Outcome("aborted", line=line, trials=bisector.trials)
        finally:
            await engine.close()
        emit(ev.Decision(host=engine.head.alias, action=f"bisect {out.kind}", reason=out.line))
        if out.kind == "aborted":
            return out
    for row in table(out.trials):
        print(neutralise(row))
    print(neutralise(out.line or f"result: {out.kind}"))
    return out


async def _probe(engine: Any, good: Any, taken: dict[str, Any], repeat: int, rung: str, why: str) -> list[Any]:
    """Run G plus ``taken`` ``repeat`` times on the rung: one Attempt per repetition."""
    from ..ladder.bisect import Attempt
    from ..ladder.config import apply_changes, diff

    want = apply_changes(good, taken)
    step = {d["key"]: d["new"] for d in diff(engine.config, want) if d["key"] != "entry"}
    if step:
        engine.apply_change(step, reason=why)
    before = len(engine.events)
    result = await engine.run_rung(rung, repeat=repeat)
    runs = [e.run for e in engine.events[before:] if isinstance(e, ev.RunStarted)]
    return [
        Attempt(o.ok, o.signature, runs[i] if i < len(runs) else "", o.error) for i, o in enumerate(result.outcomes)
    ]

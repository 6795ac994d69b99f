"""The layer verdict: which stage a root failure belongs to, why, and what to do there.

Logs often arrive as excerpts with no start-up line at all, and the start-up markers
only say how far the start-up got, not what failed; so the stage is decided by the
strongest evidence available, in a fixed order (issue 13):

1. the root's own text when it names one layer unambiguously (``Error 803`` is the
   device, argparse's ``error:`` the config) — ``message``; a broken shared library or
   symbol names the container unless the API was already serving;
   then the root's own STACK, mapped by module path and function name
   (``assets/classify/frames.toml``) — ``frames``;
2. when the root came: after the API was ready it is ``runtime`` (``api-ready``); V1's
   ``EngineCore encountered a fatal error`` says runtime, ``failed to start`` says
   start-up (``wording``); then messages typical of one start-up layer
   (NCCL -> engine, a missing shared object -> container) — ``message``;
3. the furthest start-up marker reached — ``markers``;
4. the exception type alone (an ``ImportError`` with nothing else to go on is the
   container), the weakest — ``exception-type``; nothing at all — ``default``: the process
   start when the stack is the main program's whole one; runtime when the log's first lines use
   a server's words and none of a start-up's (an excerpt's prose: "when I send requests"); else
   the engine's set-up (most roots quoted without a layer are its: graph capture, warm-up, the
   KV cache; GPU code runs first there).

Each verdict carries the rule that decided it, the log lines it rests on and a
confidence (``high`` for 1, ``medium`` for 2 and 3, ``low`` for 4). Rules are data in
``assets/classify/``; the advice is the decision table ``advice.toml``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .rules import STAGES, VLLM_PACKAGE, Rules
from .traces import frames, from_program_start, import_frame, import_inside

_LOGGER = re.compile(r"\[?([\w.\-]+\.py):\d+\] ")
"""The logger location of a vLLM log line (``… [serving_chat.py:661] …``)."""


@dataclass(slots=True)
class Evidence:
    """What is known about a root when its stage is decided."""

    text: str
    """The root's message body (a wrapper's line appended, for Ray / pydantic roots)."""
    line: int
    stack: list[str] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    """The log line number of each stack line (same length as ``stack``, or empty)."""
    header: tuple[str, int] | None = None
    """The ERROR line logged just before the traceback (``EngineCore failed to start.``)."""
    stage_idx: int = 0
    """The furthest stage reached when the root was printed."""
    marks: list[tuple[str, int]] = field(default_factory=list)
    """The stages reached (name, line) when the root was printed."""
    raw: str = ""
    """The root line as printed (its logger location is evidence too)."""
    native: bool = False
    """A native crash, a kill, a fatal interpreter error or a native library's error line (no Python exception)."""
    said: bool = False
    """Of those, a library's own error line or a crash only GPU work prints: the process ran far
    enough to print it (never "it crashed before printing anything")."""
    ready_part: int = 0
    """The part of a flattened line the API's ready marker was read in (with ``part``: which came first)."""
    silent: bool = False
    """The root only reports that a process died, with no word of its own on why (a start-up's
    "initialization failed, see above" with nothing above it: a kill from outside)."""
    cut: bool = False
    """The stack is a traceback cut before its exception line: its last frame is not the failing one."""
    process: str | None = None
    """The process that printed the root (``EngineCore_DP0 pid=42``), when the line names one."""
    part: int = 0
    """Lines a flattened paste joined to the root's line before it (0: the root starts its line)."""
    followed: bool = False
    """A logger's line (a level, a process prefix) came after line 1 in the log's first lines: the
    log goes on after its first line, so it is an excerpt or another process went on printing."""
    talk: tuple[str, str] | None = None
    """("serving", word) when the log's first lines use a server's words and none of a start-up's,
    ("startup", word) when they use a start-up's: what decides a root nothing else places."""


@dataclass(frozen=True, slots=True)
class Verdict:
    stage: str
    rule: str
    """``message``, ``frames``, ``api-ready``, ``wording``, ``markers``, ``exception-type``, ``default``."""
    lines: tuple[int, ...]
    confidence: str
    why: str
    """One line for the operator: why this stage."""


def decide(rules: Rules, ev: Evidence) -> Verdict:
    """The stage of a root, with the evidence that decided it."""
    return (
        _message(rules, ev, "strong")
        or (None if _ready(ev) is not None else _message(rules, ev, "startup"))
        or _vllm_importing(ev)
        or _import_failure(rules, ev, _frames(rules, ev))
        or _import_chain(ev)
        or _entry_only(rules, ev)
        or _message(rules, ev, "firm")
        or _phase(rules, ev)
        or _message(rules, ev, "medium")
        or _import_before_ready(ev)
        or _markers(ev)
        or _before_anything(rules, ev)
        or _message(rules, ev, "weak")
        or _engine_process(rules, ev)
        or _native(ev)
        or _serving(rules, ev)
    )


def _message(rules: Rules, ev: Evidence, strength: str) -> Verdict | None:
    startup = _startup_wording(rules, ev) is not None
    for rule in rules.stage_rules:
        if rule.strength != strength or (startup and rule.stage == "runtime"):
            continue
        if m := rule.match.search(ev.text):
            conf = {"strong": "high", "startup": "high", "firm": "high", "medium": "medium"}.get(strength, "low")
            kind = "message" if strength != "weak" else "exception-type"
            return Verdict(rule.stage, kind, (ev.line,), conf, f"the root's message says {m.group(0)!r}")
    return None


_VLLM_FILE = re.compile(rf"(?:^|/){VLLM_PACKAGE}/")
_LOADER = re.compile(rf"/{VLLM_PACKAGE}/model_executor/model_loader/")
"""vLLM's model loader: what it imports there is a load format's library."""
_IMPORT_FAILED = re.compile(r"^\s*(?:[\w.]+\.)?(?:ImportError|ModuleNotFoundError)\b")


def _import_failure(rules: Rules, ev: Evidence, placed: Verdict | None) -> Verdict | None:
    """``placed`` (the frames' verdict), unless they place in another layer a package that could not be
    imported there: a layer that imports one where it first needs it (a kernel library, a quantisation
    back-end) found it missing or broken, the image's fault whatever layer it was. Not a load format's
    library, which the model loader imports itself (a load format is the weights'); not once the API was
    serving (a request needed it); not when a message names another layer (a model's own remote code,
    ``transformers_modules``: the weights)."""
    if placed is None or placed.stage == "container" or ev.native or not _IMPORT_FAILED.match(ev.text):
        return placed
    if _ready(ev) is not None or any(r.stage != "container" and r.match.search(ev.text) for r in rules.stage_rules):
        return placed
    own = [path for _i, (path, _f) in frames(ev.stack) if _VLLM_FILE.search(path)]
    if own and _LOADER.search(own[-1]):
        return placed  # the model loader imports a load format's library (fastsafetensors, runai): the weights'
    why = f"a package could not be imported ({placed.why}): the image, whatever layer imported it"
    return Verdict("container", "frames", placed.lines, "high", why)


_NO_MODULE = re.compile(_IMPORT_FAILED.pattern + r"|^\s*No module named ")
"""An import failure, or its message printed without its type."""


def _import_before_ready(ev: Evidence) -> Verdict | None:
    """A package that could not be imported before the API was serving, that nothing stronger placed: the
    image's, however far the start-up had got (a layer imports what it needs when it first needs it, an
    optional connector's package at the engine's set-up). After the API was ready a request needed it."""
    if ev.native or not _NO_MODULE.match(ev.text) or _ready(ev) is not None or ev.stage_idx <= 0:
        return None
    why = f"a package could not be imported (the start-up had reached {STAGES[ev.stage_idx]}): the image, whatever layer imported it"
    return Verdict("container", "message", (ev.line,), "medium", why)


_HELPED = ("config", "weights")
"""The stages whose modules' helpers later layers call (see ``_frames``)."""


def _frames(rules: Rules, ev: Evidence) -> Verdict | None:
    """Innermost start-up frame, unless a runtime frame lies outside it."""
    # (stage, line number, name, placed by its file's folder alone), outermost first
    mapped: list[tuple[str, int, str, bool]] = []
    for i, (path, func) in frames(ev.stack):
        rule = rules.frame_rule(path, func)
        if rule is not None:
            n = ev.numbers[i] if i < len(ev.numbers) else ev.line
            name = f"{func} ({path.rsplit('/', 1)[-1]})" if path else f"a call to {func}"
            mapped.append((rule.stage, n, name, rule.folder))
    # the method a wrapper line names called everything in the stack: outside it
    called = [
        (s, ev.line, f"method {m}", False) for m in rules.methods.findall(ev.text) if (s := rules.frame_stage("", m))
    ]
    mapped[:0] = called
    if (logged := _LOGGER.search(ev.raw)) and (stage := rules.frame_stage(logged.group(1), "<logged>")):
        mapped.insert(0, (stage, ev.line, f"the log line of {logged.group(1)}", False))
    if not mapped:
        return None
    startup = [m for m in mapped if m[0] != "runtime"]
    runtime = [m for m in mapped if m[0] == "runtime"]
    if runtime and (not startup or mapped.index(runtime[0]) < mapped.index(startup[0])):
        stage, n, name, _ = runtime[0]
    else:
        stage, n, name, folder = startup[-1]
        if folder and stage in _HELPED:
            # a helper of the configuration's or the loader's modules (placed by its folder alone) called by a
            # later layer's own work (the engine's warm-up checking its memory with the loader's helper, its KV
            # cache laid out with the config's): that work failed. (Not the device's modules: a device that
            # refuses refuses wherever it is touched.)
            later = [m for m in startup[:-1] if not m[3] and STAGES.index(m[0]) > STAGES.index(stage)]
            if later:
                stage, n, name, _ = later[-1]
    return Verdict(stage, "frames", (n,), "high", f"the root's stack runs through {name}")


def _vllm_importing(ev: Evidence) -> Verdict | None:
    """vLLM's innermost frame is module-level code and a library's frames follow it: vLLM was being
    imported (a decorator compiling at import, a check run at import), the process start, whatever that
    library's frames are (torch.compile's would read as the engine's)."""
    if ev.cut or ev.native or (i := import_inside(ev.stack, _VLLM_FILE)) is None:
        return None
    n = ev.numbers[i] if i < len(ev.numbers) else ev.line
    why = (
        "vLLM's innermost frame is a module being imported (the library work after it ran at import): the process start"
    )
    return Verdict("container", "frames", (n,), "high", why)


def _import_chain(ev: Evidence) -> Verdict | None:
    """The innermost frame is module-level code: it failed while importing (the image's Python)."""
    i = None if ev.cut else import_frame(ev.stack)
    if i is None:
        return None
    n = ev.numbers[i] if i < len(ev.numbers) else ev.line
    return Verdict("container", "frames", (n,), "high", "the root's stack ends in an import (module-level frames)")


def _entry_only(rules: Rules, ev: Evidence) -> Verdict | None:
    """Every vLLM frame of the stack is the program's entry (its command line, its logging set-up):
    no layer of vLLM had started, so the process start failed."""
    if ev.native or ev.cut:
        return None
    at = max((i for i, line in enumerate(ev.stack) if line == ev.raw), default=-1)
    paths = [(i, "/" + p.lstrip("/")) for i, (p, _f) in frames(ev.stack) if p and _VLLM_FILE.search(p)]
    if not paths or paths[-1][0] > at or not all(rules.entry_path.search(p) for _i, p in paths):
        return None  # (frames after the root's line: another traceback it borrowed, not its own)
    i = paths[-1][0]
    n = ev.numbers[i] if i < len(ev.numbers) else ev.line
    why = "the root's stack has no vLLM frame past the program's entry (its command line): the process start"
    return Verdict("container", "frames", (n,), "high", why)


def _startup_wording(rules: Rules, ev: Evidence) -> tuple[str, int] | None:
    if ev.header is not None and rules.startup_wording.search(ev.header[0]):
        return ev.header
    return None


def _ready(ev: Evidence) -> int | None:
    """The line where the API was ready, when that was before the root."""
    ready = next((n for s, n in ev.marks if s == "runtime"), None)
    if ready is not None and (ready < ev.line or (ready == ev.line and ev.part > ev.ready_part)):
        return ready  # (or on the root's own line of a flattened paste, in a part before the root's)
    return None


def _phase(rules: Rules, ev: Evidence) -> Verdict | None:
    ready = _ready(ev)
    if ready is not None:
        return Verdict(
            "runtime", "api-ready", (ready, ev.line), "medium", f"the API was ready (line {ready}) before it"
        )
    for text, n in ([ev.header] if ev.header else []) + [(ev.text, ev.line)]:
        if m := rules.runtime_wording.search(text):
            return Verdict("runtime", "wording", (n,), "medium", f"{m.group(0)!r}: the engine was serving")
    return None


def _before_anything(rules: Rules, ev: Evidence) -> Verdict | None:
    """A native crash on the log's first line, and no logger's line after it: the process died
    before it printed anything (an LD_PRELOAD constructor, a broken interpreter). Not the GPU
    driver's fault report: the kernel's line, whatever the process had printed."""
    if (
        ev.native
        and not ev.said
        and ev.line == 1
        and ev.part == 0
        and not ev.followed
        and not rules.driver_fault.search(ev.text)
    ):
        return Verdict(STAGES[0], "markers", (1,), "medium", "it crashed before printing anything: the process start")
    return None


def _engine_process(rules: Rules, ev: Evidence) -> Verdict | None:
    """Nothing names a layer, but the engine core or a worker printed the root: past the config."""
    if ev.process is None or not rules.engine_process.match(ev.process):
        return None
    if (talk := _serving_talk(ev)) is not None:
        return talk
    name = ev.process.split(" pid=", 1)[0]
    return Verdict(
        "engine",
        "default",
        (ev.line,),
        "low",
        f"nothing in the log names a layer; {name} printed it, so the start-up was past the config: assumed the engine's set-up",
    )


def _native(ev: Evidence) -> Verdict | None:
    """A native crash (a signal, a CUDA error from C++, an abort) with nothing naming a layer and no
    start-up line before it: the excerpt starts inside GPU work, which first runs in the engine's set-up."""
    if not ev.native:
        return None
    if (talk := _serving_talk(ev)) is not None:
        return talk
    why = "nothing in the log names a layer; a native crash inside GPU code: assumed the engine's set-up"
    return Verdict("engine", "default", (ev.line,), "low", why)


def _serving_talk(ev: Evidence) -> Verdict | None:
    """Nothing names a layer, but the log's first lines talk of serving and never of a start-up."""
    if ev.talk is None or ev.talk[0] != "serving":
        return None
    why = f"nothing in the log names a layer; its words are a server's ({ev.talk[1]!r}), none a start-up's: assumed it failed while serving"
    return Verdict("runtime", "default", (ev.line,), "low", why)


_ENGINE_WORDS = re.compile(r"\b(?:[Ee]ngine|EngineCore\w*|[Ww]orker\w*)\b")


def _serving(rules: Rules, ev: Evidence) -> Verdict:
    """A Python exception, and nothing in the log names a layer: no start-up line before it, no
    frame of a start-up layer, no message of one. When its stack is the main program's, printed
    whole from its first frame, the process never got further: its start. Otherwise what fails at
    the process start says so (an import, a library, the program's entry: found above), so this is
    an excerpt, and its own words decide: a server's words and none of a start-up's say it failed
    while serving; else it is taken for the engine's set-up, where most failures quoted without a
    layer happen (in the tuned corpus, about four such excerpts in seven are the engine's set-up or
    the weights' loading, two in seven serving)."""
    if rules.startup_wording.search(ev.text) and _ENGINE_WORDS.search(ev.text):
        # the root itself reports the engine's (or its workers') start-up failing, from the main program that waited
        # for it (a kill that printed nothing else: ``… initialization failed … Failed core proc(s): {'EngineCore':
        # -9}``): the process had started
        why = f"nothing in the log names a layer; {ev.text.strip()[:80]!r} says the engine's start-up failed: assumed its set-up"
        return Verdict("engine", "default", (ev.line,), "low", why)
    if from_program_start(ev.stack):
        why = "nothing in the log names a layer; the main program's whole stack and no start-up line: assumed the process start"
        return Verdict(STAGES[0], "default", (ev.line,), "low", why)
    if (said := _startup_wording(rules, ev)) is not None:
        why = f"nothing in the log names a layer; {said[0].strip()!r} says it never served: assumed the engine's set-up"
        return Verdict("engine", "default", (said[1], ev.line), "low", why)
    if (talk := _serving_talk(ev)) is not None:
        return talk
    if ev.talk is not None:
        why = f"nothing in the log names a layer; its words are a start-up's ({ev.talk[1]!r}): assumed the engine's set-up"
    else:
        why = "nothing in the log names a layer, nor talks of serving: assumed the engine's set-up"
    return Verdict("engine", "default", (ev.line,), "low", why)


def _markers(ev: Evidence) -> Verdict | None:
    """The furthest start-up stage reached. A stage's closing line (``Loading weights took``) says the
    next one has begun, which an exception raised after it belongs to; a kill or a crash that said
    nothing of its own is placed where the start-up was last seen, the stage of its last line."""
    if ev.stage_idx <= 0:
        return None
    idx = ev.stage_idx
    if (ev.silent or (ev.native and not ev.said)) and ev.marks:
        idx = furthest(ev.marks)
    if idx <= 0:
        return None
    stage = STAGES[idx]
    n = next((n for s, n in reversed(ev.marks) if s == stage), ev.line)
    return Verdict(stage, "markers", (n,), "medium", f"the start-up had reached {stage} (line {n})")


def furthest(marks: list[tuple[str, int]]) -> int:
    """Index in STAGES of the furthest stage the marks (name, line) reached (0: none but the start)."""
    return max((STAGES.index(s) for s, _n in marks), default=0)


def advice_text(rules: Rules, stage: str) -> str:
    """What a failed layer means, then ``Next:`` the one step to take there ("" for no such layer)."""
    if stage not in rules.advice:
        return ""
    meaning, nxt = rules.advice[stage]
    return f"{meaning} Next: {nxt}".strip()

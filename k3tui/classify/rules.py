"""The classifier's knowledge, loaded from ``assets/classify/*.toml`` and compiled once.

Stage markers, root and consequence patterns, the stage decision rules and the advice
change with vLLM versions and with what on-call engineers learn; they are data so that a
new vLLM release is a TOML edit tested against the corpus, not a code change. This
module turns that data into compiled objects and fails with one clear line when the
data is broken.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..assets import asset
from ..errors import ProfileError

STAGES: tuple[str, ...] = ("container", "config", "device", "weights", "engine", "api", "runtime")
"""The layers in start-up order; ``none`` is not a stage but the verdict for a healthy run."""


@dataclass(frozen=True)
class StageDef:
    name: str
    index: int
    markers: tuple[str, ...]
    """Found only on vLLM logger lines (those carrying the gate, ``.py:``)."""
    done: tuple[str, ...]
    at_first_line: bool
    plain: tuple[str, ...] = ()
    """Found on any line (uvicorn, tqdm progress bars)."""
    read: tuple[str, ...] = ()
    """Found only in the log's first lines (always read), never searched for: the prefilter pays
    nothing for them, and reads the same with or without it."""


@dataclass(frozen=True)
class RootRule:
    match: re.Pattern[str]
    type: str


@dataclass(frozen=True)
class StageRule:
    stage: str
    strength: str
    """``strong`` (beats the stack), ``startup`` (beats it before the API is ready), ``firm`` (right after
    it), ``medium`` (after the phase), ``weak`` (last)."""
    match: re.Pattern[str]


@dataclass(frozen=True)
class FrameRule:
    stage: str
    func: re.Pattern[str]
    """Matched against the whole function name."""
    path: re.Pattern[str] | None
    """Searched in the frame's file path; None: any file."""
    folder: bool = False
    """It names the stage by the file's folder alone (any function there, ``.*``), not by what the function does."""


@dataclass(frozen=True)
class Wrapper:
    """A root line that only wraps the real one, printed right after it."""

    match: re.Pattern[str]
    inner: str
    """``type``: the exception named in the wrapper's group 1; ``value-error``: pydantic's
    ``Value error, …`` line; ``any``: the next exception line that is not a consequence;
    ``chained``: the exception Python chains to this one (a bare exception's); ``next``: the next exception line,
    whatever the wrapper's own report prints before it (TorchScript's tracebacks of the scripted code)."""


@dataclass(frozen=True)
class Rules:
    stages: tuple[StageDef, ...]
    gate: str
    always: tuple[str, ...]
    normal_stop: tuple[str, ...]
    relaunch: re.Pattern[str]
    """A launch line of the server after a normal stop: the stop was of an earlier run."""
    oom: re.Pattern[str]
    exception: re.Pattern[str]
    roots: tuple[RootRule, ...]
    consequence: re.Pattern[str]
    carries: re.Pattern[str]
    """Consequences that quote the failure they report (the root when nothing above explains them)."""
    stage_rules: tuple[StageRule, ...]
    frame_rules: tuple[FrameRule, ...]
    entry_path: re.Pattern[str]
    """The files of the program's entry (its command line, its logging set-up)."""
    advice: dict[str, tuple[str, str]]
    methods: re.Pattern[str]
    """Finds the worker method a wrapper line names (group 1)."""
    startup_wording: re.Pattern[str]
    runtime_wording: re.Pattern[str]
    engine_process: re.Pattern[str]
    """The process names of vLLM's engine core and workers (a root past the config)."""
    serving_talk: re.Pattern[str]
    startup_talk: re.Pattern[str]
    """A server's words and a start-up's, read in a log's first lines when nothing names a layer."""
    runtime_after: re.Pattern[str]
    """Consequences that, printed after a root, say the engine had been serving."""
    loop_failed: re.Pattern[str]
    """Of those, the engine core's own word that its busy loop failed."""
    wrappers: tuple[Wrapper, ...]
    warning_root: re.Pattern[str]
    """WARNING lines that are the root when a failure follows (a broken vllm._C)."""
    warning_failure: re.Pattern[str]
    """Of those, the ones that report a failure by themselves."""
    warning_caused: re.Pattern[str]
    """Later failures a broken import causes (a warning root is the root of those only)."""
    plugin_platform: re.Pattern[str]
    """An INFO line saying a platform without vllm._C (a plugin's, TPU) is in use."""
    noise_on_plugin: re.Pattern[str]
    """Warning roots that are noise on such a platform."""
    platform_library: re.Pattern[str]
    """A failure to load a shared library other than the driver's own: after ``info``'s "no platform", its cause."""
    py_warning_root: re.Pattern[str]
    """Python ``warnings`` lines that are such roots (torch could not initialise CUDA)."""
    info_root: re.Pattern[str]
    """INFO lines that are roots the same way (vLLM logs a failed platform detection at INFO)."""
    request_error: re.Pattern[str]
    """ERROR headers of ONE request that failed and was answered (the server survived)."""
    survived: re.Pattern[str]
    """ERROR headers of code that logs a failure with its traceback and goes on (vLLM's plugin loader)."""
    thread_died: re.Pattern[str]
    """Python's header of an exception that ended one thread (``Exception in thread …:``): its process went on."""
    script_survivable: re.Pattern[str]
    """A launch script's command that failed without stopping the script (``…: line 5: module: command not found``):
    noise once the server got ready after it."""
    noise_frames: re.Pattern[str]
    """Frames of Python's own helper processes (multiprocessing's resource tracker): a traceback of only these is noise."""
    handler_at: re.Pattern[str]
    parser_at: re.Pattern[str]
    """The logger's location of the front end's request handlers on a line."""
    handler_refused: re.Pattern[str]
    """Exceptions such a handler logs while preparing ONE request's input: never a root."""
    request_frames: re.Pattern[str]
    client_frames: re.Pattern[str]
    """Frames (``PATH FUNC``) of the web server's dispatch of one request and vLLM's request handlers."""
    engine_frames: re.Pattern[str]
    """Frames of the engine (or the front end's start-up): a traceback through them is not one request's."""
    engine_loop: re.Pattern[str]
    """Frames of the engine's own loop: a request's error raised through them ended the engine."""
    peer: re.Pattern[str]
    """A broken connection: a client's consequence, unless the engine's own loop raised it."""
    cancelled: re.Pattern[str]
    """The workload manager's cancel of the job or step: a start-up's kill before the API was ready."""
    engine_failed: re.Pattern[str]
    """Exception words that say the engine failed, whatever frames carried them to a request."""
    request_refused: re.Pattern[str]
    """Exception messages that refuse ONE request (too long for the model): never a root."""
    refused_types: re.Pattern[str]
    """Exception types vLLM raises for a fault of the request (its client errors): never a root."""
    offline_call: re.Pattern[str]
    """Frames of an offline script's call of an ``LLM`` method (not its constructor)."""
    teardown: re.Pattern[str]
    """The client's 'engine process gone' note: a root only when a failure follows it."""
    own_stop: re.Pattern[str]
    """The client terminating its own engine core: its note after it that the core exited is no kill."""
    own_stop_acked: re.Pattern[str]
    """The engine core saying it received that signal (it was alive: it stopped as asked)."""
    own_stop_noted: re.Pattern[str]
    """The client's note that its engine core exited."""
    crash: re.Pattern[str]
    """Native crash and kill lines (no Python traceback): a root found by looking back."""
    warning_needles: tuple[str, ...]
    """Literals as printed, one of which every ``plugin_platform`` and ``py_warning_root`` line carries."""
    hang_needles: tuple[str, ...]
    """Literals as printed of the lines a server repeats while it waits on a part that never answers."""
    hang_device: tuple[str, ...]
    """The ``hang_needles`` of a wait for the accelerators themselves (a hang there is the device's)."""
    driver_fault: re.Pattern[str]
    """The GPU driver's fault report in a kernel log (an Xid): a ``crash`` line, but not the process's own."""
    crash_needles: tuple[str, ...]
    """Lowercase literals, one of which every ``crash`` line carries."""
    recognise: tuple[str, ...]
    """Words only vLLM prints, as printed (its name first): any of them, in any case, makes a log a vLLM log."""
    stack: re.Pattern[str]
    """Whole words of the stack vLLM runs on (CUDA, NCCL, PyTorch, Triton, the model's files, KV cache…): a fragment
    that carries one is an excerpt of a vLLM run, not some other file."""
    crash_trigger: re.Pattern[str]
    """Lines after which the classifier looks back for a ``crash`` line."""
    faulthandler: re.Pattern[str]
    """The lines of a faulthandler dump after ``Fatal Python error``."""
    crash_ran: re.Pattern[str]
    """Crash lines only GPU work prints: the process was past its start."""
    assert_before: re.Pattern[str]
    """An error saying a kernel's assertion failed: the assertion's line before it is the root."""
    native_error: re.Pattern[str]
    """A native library's own error line (an error word and a C/C++ source location, or ptxas):
    the root when nothing else is, and before the crash it leads to."""
    _frame_cache: dict[tuple[str, str], FrameRule | None]

    def frame_stage(self, path: str, func: str) -> str | None:
        """The stage a stack frame belongs to, or None (cached: stacks repeat)."""
        rule = self.frame_rule(path, func)
        return rule.stage if rule is not None else None

    def frame_rule(self, path: str, func: str) -> FrameRule | None:
        """The rule that places a stack frame, or None (cached: stacks repeat)."""
        key = (path, func)
        if key not in self._frame_cache:
            if path and path[0] != "/":
                path = "/" + path  # a relative or trimmed path ("vllm/v1/…", ".../vllm/…") still names its folders
            if len(self._frame_cache) > 4096:
                self._frame_cache.clear()
            self._frame_cache[key] = next(
                (
                    r
                    for r in self.frame_rules
                    if r.func.fullmatch(func) and (r.path.search(path) if r.path is not None else True)
                ),
                None,
            )
        return self._frame_cache[key]


def _read(name: str) -> dict:
    path = asset("classify", name)
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ProfileError(f"{path}: classifier data missing; reinstall k3tui") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: invalid TOML: {exc}") from exc


def _rx(text: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise ProfileError(f"assets/classify/{where}: bad regex {text!r}: {exc}") from exc


def _stages(data: dict) -> tuple[StageDef, ...]:
    out = []
    for i, s in enumerate(data.get("stage", [])):
        if i >= len(STAGES) or s.get("name") != STAGES[i]:
            raise ProfileError(f"assets/classify/stages.toml: the stages must be, in order: {', '.join(STAGES)}")
        out.append(
            StageDef(
                s["name"],
                i,
                tuple(s.get("markers", ())),
                tuple(s.get("done", ())),
                bool(s.get("at_first_line")),
                tuple(s.get("plain_markers", ())),
                tuple(s.get("read_markers", ())),
            )
        )
    if len(out) != len(STAGES):
        raise ProfileError(f"assets/classify/stages.toml: expected the stages {', '.join(STAGES)}")
    return tuple(out)


def _stage_rules(data: dict) -> tuple[StageRule, ...]:
    rules = []
    for r in data.get("stage_rule", []):
        if r["stage"] not in STAGES:
            raise ProfileError(f"assets/classify/patterns.toml: unknown stage {r['stage']!r} in a stage_rule")
        strength = r.get("strength", "strong")
        if strength not in ("strong", "startup", "firm", "medium", "weak"):
            raise ProfileError(
                f"assets/classify/patterns.toml: a stage_rule's strength is one of strong, startup, firm, medium, weak, not {strength!r}"
            )
        if "roots" in r:  # the layer of every root of one type: that type's [[root]] patterns, not a copy of them
            forms = [f"(?:{x['match']})" for x in data.get("root", []) if x["type"] == r["roots"]]
            if not forms or "match" in r:
                raise ProfileError(
                    f"assets/classify/patterns.toml: a stage_rule's roots= names a [[root]] type ({r['roots']!r}: "
                    f"{len(forms)} found) and has no match= of its own"
                )
            r = {**r, "match": "|".join(forms)}
        if "crash" in r:  # the layer of one of the [crash] table's named patterns (its `driver`), not a copy of it
            form = data.get("crash", {}).get(r["crash"])
            if not isinstance(form, str) or "match" in r or "roots" in r:
                raise ProfileError(
                    f"assets/classify/patterns.toml: a stage_rule's crash= names a pattern of the [crash] table "
                    f"({r['crash']!r}) and has no match= or roots= of its own"
                )
            r = {**r, "match": form}
        rules.append(StageRule(r["stage"], strength, _rx(r["match"], "patterns.toml")))
    return tuple(rules)


VLLM_PACKAGE = r"(?:vllm|vllm_\w+|aphrodite)"
"""vLLM's package, a platform plugin of its (vllm_ascend, vllm_gaudi, vllm_hpu_extension …) or a fork
(aphrodite): they keep vLLM's layout, so a folder ``/vllm/`` in frames.toml's paths stands for any of them."""


def _path_rx(text: str) -> re.Pattern[str]:
    return _rx(text.replace("/vllm/", f"/{VLLM_PACKAGE}/"), "frames.toml")


def _frame_rules(data: dict) -> tuple[FrameRule, ...]:
    out = []
    for r in data.get("frame", []):
        if r.get("stage") not in STAGES:
            raise ProfileError(f"assets/classify/frames.toml: unknown stage {r.get('stage')!r} in a [[frame]]")
        path = _path_rx(r["path"]) if r.get("path") else None
        out.append(
            FrameRule(r["stage"], _rx(r["func"], "frames.toml"), path, path is not None and r["func"].endswith(".*"))
        )
    return tuple(out)


def _wrappers(data: dict) -> tuple[Wrapper, ...]:
    out = []
    for w in data.get("wrapper", []):
        if w.get("inner") not in ("type", "value-error", "any", "next"):
            raise ProfileError(
                "assets/classify/patterns.toml: a [[wrapper]]'s inner must be type, value-error, any or next"
            )
        out.append(Wrapper(_rx(w["match"], "patterns.toml [[wrapper]]"), w["inner"]))
    return tuple(out)


def _alternation(items: list[str], where: str) -> re.Pattern[str]:
    return _rx("|".join(f"(?:{p})" for p in items), where)


def _advice(data: dict) -> dict[str, tuple[str, str]]:
    missing = [s for s in (*STAGES, "none") if s not in data]
    if missing:
        raise ProfileError(f"assets/classify/advice.toml: no advice for {', '.join(missing)}")
    return {k: (v.get("meaning", ""), v.get("next", "")) for k, v in data.items()}


@lru_cache(maxsize=1)
def load_rules() -> Rules:
    """The compiled rules of this installation (loaded once per process)."""
    st, pat, adv, fr = _read("stages.toml"), _read("patterns.toml"), _read("advice.toml"), _read("frames.toml")
    crash = pat["crash"]
    return Rules(
        stages=_stages(st),
        gate=st.get("gate", ".py:"),
        always=tuple(pat["prefilter"]["always"]),
        normal_stop=tuple(pat["stop"]["normal"]),
        relaunch=_alternation([re.escape(x) for x in pat["stop"]["relaunch"]], "patterns.toml [stop]"),
        oom=_rx(pat["oom"]["pattern"], "patterns.toml [oom]"),
        exception=_rx(pat["exception"]["pattern"], "patterns.toml [exception]"),
        roots=tuple(RootRule(_rx(r["match"], "patterns.toml [[root]]"), r["type"]) for r in pat.get("root", [])),
        consequence=_alternation(pat["consequence"]["patterns"], "patterns.toml [consequence]"),
        carries=_alternation(pat["consequence"]["carries"], "patterns.toml [consequence]"),
        stage_rules=_stage_rules(pat),
        frame_rules=_frame_rules(fr),
        entry_path=_path_rx(fr["entry_path"]),
        advice=_advice(adv),
        methods=_rx(pat["wording"]["method"], "patterns.toml [wording]"),
        startup_wording=_alternation(pat["wording"]["startup"], "patterns.toml [wording]"),
        runtime_wording=_alternation(pat["wording"]["runtime"], "patterns.toml [wording]"),
        engine_process=_rx(pat["wording"]["engine_process"], "patterns.toml [wording]"),
        serving_talk=_alternation(pat["wording"]["serving_talk"], "patterns.toml [wording]"),
        startup_talk=_alternation(pat["wording"]["startup_talk"], "patterns.toml [wording]"),
        runtime_after=_alternation(
            [*pat["wording"]["runtime_after"], pat["wording"]["loop_failed"]], "patterns.toml [wording]"
        ),
        loop_failed=_rx(pat["wording"]["loop_failed"], "patterns.toml [wording]"),
        wrappers=_wrappers(pat),
        warning_root=_alternation(pat["warning_root"]["patterns"], "patterns.toml [warning_root]"),
        warning_failure=_alternation(pat["warning_root"]["failure"], "patterns.toml [warning_root]"),
        warning_caused=_rx(pat["warning_root"]["caused"], "patterns.toml [warning_root]"),
        info_root=_alternation(pat["warning_root"]["info"], "patterns.toml [warning_root]"),
        plugin_platform=_rx(pat["warning_root"]["plugin_platform"], "patterns.toml [warning_root]"),
        noise_on_plugin=_rx(pat["warning_root"]["noise_on_plugin"], "patterns.toml [warning_root]"),
        platform_library=_rx(pat["warning_root"]["platform_library"], "patterns.toml [warning_root]"),
        py_warning_root=_alternation(pat["warning_root"]["python"], "patterns.toml [warning_root]"),
        teardown=_alternation(pat["teardown"]["patterns"], "patterns.toml [teardown]"),
        own_stop=_rx(pat["teardown"]["own_stop"], "patterns.toml [teardown]"),
        own_stop_acked=_rx(pat["teardown"]["own_stop_acked"], "patterns.toml [teardown]"),
        own_stop_noted=_rx(pat["teardown"]["own_stop_noted"], "patterns.toml [teardown]"),
        request_error=_alternation(pat["request_error"]["patterns"], "patterns.toml [request_error]"),
        survived=_alternation(pat["survived"]["headers"], "patterns.toml [survived]"),
        thread_died=_rx(pat["survived"]["thread"], "patterns.toml [survived]"),
        script_survivable=_rx(pat["survived"]["script"], "patterns.toml [survived]"),
        noise_frames=_rx(pat["noise"]["frames"], "patterns.toml [noise]"),
        handler_at=_rx(pat["request_error"]["handler_at"], "patterns.toml [request_error]"),
        parser_at=_rx(pat["request_error"]["parser_at"], "patterns.toml [request_error]"),
        handler_refused=_alternation(pat["request_error"]["handler_refused"], "patterns.toml [request_error]"),
        request_refused=_alternation(pat["request_error"]["refused"], "patterns.toml [request_error]"),
        refused_types=_rx(pat["request_error"]["refused_types"], "patterns.toml [request_error]"),
        offline_call=_rx(pat["request_error"]["offline_call"], "patterns.toml [request_error]"),
        request_frames=_rx(pat["request_error"]["request_frames"], "patterns.toml [request_error]"),
        client_frames=_rx(pat["request_error"]["client_frames"], "patterns.toml [request_error]"),
        engine_frames=_rx(pat["request_error"]["engine_frames"], "patterns.toml [request_error]"),
        engine_loop=_rx(pat["request_error"]["engine_loop"], "patterns.toml [request_error]"),
        peer=_rx(pat["consequence"]["peer"], "patterns.toml [consequence]"),
        cancelled=_rx(pat["consequence"]["cancelled"], "patterns.toml [consequence]"),
        engine_failed=_rx(pat["request_error"]["engine_failed"], "patterns.toml [request_error]"),
        crash=_alternation([*crash["patterns"], crash["driver"]], "patterns.toml [crash]"),
        driver_fault=_rx(crash["driver"], "patterns.toml [crash] driver"),
        crash_needles=tuple(n.lower() for n in crash["needles"]),
        recognise=tuple(dict.fromkeys(pat["recognise"]["words"])),
        stack=re.compile("|".join(f"(?:{p})" for p in pat["recognise"]["stack"]), re.IGNORECASE),
        warning_needles=tuple(pat["warning_root"]["needles"]),
        hang_needles=tuple(pat["hang"]["needles"]) + tuple(pat["hang"].get("device", [])),
        hang_device=tuple(pat["hang"].get("device", [])),
        crash_trigger=_alternation(crash["after"], "patterns.toml [crash]"),
        faulthandler=_rx(crash["faulthandler"], "patterns.toml [crash]"),
        crash_ran=_rx(crash["ran"], "patterns.toml [crash]"),
        assert_before=_rx(crash["assert_before"], "patterns.toml [crash]"),
        native_error=_alternation(pat["native_error"]["patterns"], "patterns.toml [native_error]"),
        _frame_cache={},
    )

"""Issue 13, thirteenth session: rules made from the tuned part's misses, each in a general form.

- Sleep mode: an engine that was built and served is put to sleep and woken up between uses (an RL
  trainer's rollouts sharing the GPUs with its training steps). A failure in its ``wake_up`` or
  ``sleep`` (the memory coming back, or going) is a runtime failure, however it reads: an out-of-memory
  error there is not the start-up's memory profiling (2011, 3879).

- Envelopes: another program's record around each vLLM line (a harness re-logging the server's output
  under its own ``DATE - INFO - ``, a syslog relay's RFC 5424 header, a process manager's ``name stderr | ``,
  a spreadsheet's first column, ``journalctl -o json``) is learnt from the log's first lines and taken
  off every line, so the vLLM line inside is read as if printed alone: its own level, not the envelope's
  (2749). vLLM's own prefixes (its logger's, a process's, torch's rank, compose's, journald's) are
  never learnt as one.

- IPython's traceback (a notebook's, Colab's, Kaggle's): ``OSError      Traceback (most recent call last)``,
  ``Cell In[3], line 1`` and ``---> 1 llm = LLM(…)``, frames as ``File P:N, in Class.F(args)`` (before IPython 8
  ``P in F(args)``, Colab's ``[P](link) in F(args)``), blank lines between them, then Python's exception line:
  read as Python's own, its frames naming the stage (2807, 5051); cut before its exception line, its head
  line is the root. A compiled graph's backend ``__call__`` (``/vllm/compilation/``) names no stage: it runs
  on every forward pass, serving included (2735).

- From the fresh logs' tuned misses: an accelerator runtime's own start (torch's per-device module for
  CUDA, Gaudi's HPU, Ascend's NPU: ``current_device`` -> ``init``) is the device (5053); torch's TCPStore
  that "failed to listen on any local network address" is the distributed rendezvous, the engine's, not
  the HTTP API's port (5071); a job script's shell naming the script and its line
  (``…/slurm_script: line 21: …/bin/vllm: No such file or directory``) is the image's missing program, and
  ``slurmstepd-NODE: error: *** JOB … CANCELLED …`` after it is the job's end, not its root (4952); NCCL's
  ``Duplicate GPU detected`` WARN is a failure it does not go on from (5061).

- A line printed right after a tqdm bar that padded itself with spaces is still read (the segfault after
  ``Adding requests:   0%|…| 0/6 [00:00<?, ?it/s]      !!!!!!! Segfault encountered !!!!!!!``, 4905), and an
  offline engine's progress bars (``Adding requests:``, ``Processed prompts:``) in a log's first lines say
  it was running requests (4905, 2739); they are never searched for, so the prefilter costs nothing more.

- A whole log pasted indented (a markdown code block by indentation, a quoted mail: every line of its
  first lines 4 spaces in or more, blank lines between) reads as the log (105, 110: a faulthandler dump
  after a blank line, a first line that is no log line); a paste double-spaced (a blank line after every
  line) does not end its tracebacks and pydantic's errors at each blank line.

- A bare ``Error:`` line (a wrapper's ``print(f"Error:\\n{e}")``, Unsloth's retry of a failed engine) says
  the next line is the error's message: that line is a root like an exception's (5000, 5014), read even
  when it carries no error word; never a line holding a logger's prefix of its own.

- "No platform detected" at INFO is a root only while no later error says itself that the device is
  missing (``Failed to infer device type``, torch's ``Device string must not be empty`` for the empty
  device type of vLLM's unspecified platform: the device): that error is the root (2836, 3711, 1823). A
  weight parameter's own loader (``model_executor/parameter.py``: ``load_qkv_weight``) is the weights'
  (5108, 2881).

- A log a page flattened into one line (a Space's "Exit code: 1. Reason: …"), split at vLLM's prefixes,
  has the unprefixed traceback inside its last part split too: its exception line is the root (5102).

- From the G/H batch's tuned misses: a Python warning whose message starts on the next line
  (``…/_auth.py:94: UserWarning: `` then Colab's "The secret `HF_TOKEN` does not exist …") keeps that message
  a decoy (5264); an envelope before vLLM's COLOURED process prefix (``vLLM STDOUT: ESC[1;36m(APIServer …``) is
  learnt too (5251); an exception after CJK prose and a cut logger location (``…报错: x.py:242] RuntimeError: …``)
  is quoted inline (5218); "Cannot re-initialize NPU/XPU/… in forked subprocess" is the device as CUDA's is
  (5218, 3958); "No supported config format found" is the model's files (5210).

- A web page's copy turns runs of spaces into no-break spaces (U+00A0), a traceback frame's indentation
  too: read as spaces, so the frames still name the stage (105, 102).

- The API server's launcher logging "Gracefully stopping http server" (its SIGINT / SIGTERM handler
  cancelled the server) is a stop asked for: what the shutdown prints after it is no failure (5306).

- An exception whose message starts with a line end (``MLIRCompilationError: `` then a compiler's banner,
  "[pass] encounters error:", "bishengir-compile: … Cannot find option named 'Ascend310P1'!"): the message's
  line that states the failure is the root's line, the type line its context, whether a logger prefixed
  every line of the record (the same prefix: the same record going on) or not (4321, 5350); an unknown
  ``--target`` is the device.

Each on generated logs and on the real logs of the tuned part; each fails without its change.
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import Classifier, classify_text
from k3tui.classify.lines import envelope
from tests.support.corpus import issue_text
from tests.test_classify_requests_9 import _tb

SITE = st.sampled_from(
    ["/usr/local/lib/python3.12/dist-packages/vllm", "/opt/venv/lib/python3.10/site-packages/vllm", "/src/vllm/vllm"]
)
SLEEP_MODE = st.sampled_from(
    [
        [
            ("engine/llm_engine.py", "wake_up"),
            ("executor/executor_base.py", "wake_up"),
            ("worker/worker.py", "wake_up"),
        ],
        [
            ("entrypoints/llm.py", "wake_up"),
            ("v1/engine/llm_engine.py", "wake_up"),
            ("v1/worker/gpu_worker.py", "wake_up"),
        ],
        [("entrypoints/llm.py", "sleep"), ("v1/engine/core.py", "sleep"), ("v1/worker/gpu_worker.py", "sleep")],
    ]
)
ALLOCATOR = st.sampled_from(
    [
        [("device_allocator/cumem.py", "wake_up"), ("device_allocator/cumem.py", "create_and_map")],
        [("device_allocator/cumem.py", "sleep"), ("device_allocator/cumem.py", "unmap_and_release")],
        [],
    ]
)
ERROR = st.sampled_from(
    [
        "RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB",
        "RuntimeError: CUDA error: invalid argument",
    ]
)


@given(site=SITE, calls=SLEEP_MODE, alloc=ALLOCATOR, error=ERROR, trainer=st.booleans())
def test_a_failure_waking_or_sleeping_an_engine_is_runtime(
    site: str, calls: list, alloc: list, error: str, trainer: bool
) -> None:
    outer = [("/app/trainer/rollout.py", "generate_sequences")] if trainer else []
    frames = outer + [(f"{site}/{p}", f) for p, f in calls + alloc]
    r = classify_text(_tb(frames, error))
    assert r.first_exception is not None and r.first_exception.line == error
    assert r.failed_stage == "runtime", (r.failed_stage, r.evidence)
    # the same error in the start-up's memory profiling is the engine's
    profiling = outer + [(f"{site}/v1/worker/gpu_worker.py", "determine_available_memory")]
    assert classify_text(_tb(profiling, error)).failed_stage == "engine"


def test_real_logs_of_sleep_mode_failures_are_runtime() -> None:
    for name in ("2011.log", "3879.log"):
        r = classify_text(issue_text(name))
        assert r.failed_stage == "runtime", (name, r.failed_stage, r.evidence)
        assert r.evidence is not None and r.evidence.rule == "frames"


# --- envelopes --------------------------------------------------------------------------------

# real logs of the corpus, read right today, of several stages and shapes (V1 process prefixes, V0's
# logger, argparse, a bare traceback, a native crash after start-up lines)
ENVELOPED = [
    "vllm-cpu-faults/args-bad-choice-dtype.log",
    "vllm-cpu-faults/cfg-invalid-json.log",
    "vllm-cpu-faults/kv-gpu-util-0.001.log",
    "vllm-cpu-faults/st-tensor-missing.log",
    "vllm-issues/1822.log",
    "vllm-issues/2011.log",
    "vllm-issues/1261.log",
    "vllm-issues/910.log",
]


def _wrap(kind: int, host: str, n: int, line: str) -> str:
    level = ("INFO", "ERROR", "WARNING")[n % 3]
    return [
        f"2026-12-05 06:{n % 60:02d}:00,{n % 1000:03d} - {level} - {line}",  # a harness re-logging it
        f"<{11 + n % 5}>1 2026-12-05T06:00:{n % 60:02d}.000Z {host} vllm {4000 + n} - - {line}",  # RFC 5424
        f"{host} stderr | {line}",  # a process manager's name and stream
        f'{1764900000000 + n},"{line}"'[:-1],  # a spreadsheet's time column (the closing quote cut: one line)
        json.dumps({"MESSAGE": line, "PRIORITY": "6", "_TRANSPORT": "stdout", "_HOSTNAME": host}),  # journald JSON
    ][kind]


@given(
    kind=st.integers(0, 4),
    host=st.sampled_from(["gpu-node-3", "h200x8b", "vllm-7f9c"]),
    name=st.sampled_from(ENVELOPED),
)
def test_a_log_in_another_programs_envelope_reads_as_the_log(kind: int, host: str, name: str) -> None:
    from tests.support.corpus import REPO_CORPUS

    text = (REPO_CORPUS / name).read_text(encoding="utf-8", errors="replace")
    bare = classify_text(text)
    assert bare.first_exception is not None  # (the pin: each is read right on its own)
    wrapped = "\n".join(_wrap(kind, host, i, line) for i, line in enumerate(text.split("\n"))) + "\n"
    r = classify_text(wrapped)
    assert r.failed_stage == bare.failed_stage, (name, kind, r.failed_stage, bare.failed_stage, r.evidence)
    assert r.first_exception is not None
    assert bare.first_exception.line.strip().endswith(r.first_exception.line.strip()[-60:]) or (
        r.first_exception.line.strip()[-60:] in bare.first_exception.line
    ), (r.first_exception.line, bare.first_exception.line)


def test_vllms_own_prefixes_are_never_an_envelope() -> None:
    for line in (
        'ERROR 06-13 02:36:52 async_llm_engine.py:52]   File "/x/vllm/engine/async_llm_engine.py", line 42, in f',
        "(EngineCore_DP0 pid=42) ERROR 12-05 06:00:00 [core.py:700] Traceback (most recent call last):",
        '[rank0]:   File "/x/vllm/worker/worker.py", line 236, in _warm_up_model',
        "[rank0]: RuntimeError: NCCL error: unhandled system error",
        "vllm-1     | (APIServer pid=1) ERROR 12-05 06:00:00 [serving.py:1] ValueError: x",
        "Dec 05 06:00:00 gpu-node-3 vllm[4242]: (APIServer pid=1) INFO 12-05 06:00:00 [api_server.py:1] hi",
        "2026-12-05T06:00:00.123456789Z stderr F (APIServer pid=1) INFO 12-05 06:00:00 [api_server.py:1] hi",
    ):
        assert envelope(line) is None, line
    for line in (
        "ERROR:    Traceback (most recent call last):",  # uvicorn's own level: no envelope
        "[2025-06-13 01:49:41,730 E 1 1] gcs_rpc_client.h:179: Traceback (most recent call last):",  # Ray's C++ prefix
    ):
        assert envelope(line) is None, line
    assert envelope("2026-12-05 06:00:00,123 - INFO - vllm serve: error: argument --dtype: invalid choice") is not None
    # a harness's logger over vLLM's prefixed lines: its level would be put on the bare lines it carries
    assert (
        envelope("2026-12-05 06:00:00,123 - INFO - (APIServer pid=1) ERROR 12-05 06:00:00 [serving.py:1] x") is not None
    )
    assert envelope("myjob stdout | (APIServer pid=1) ERROR 12-05 06:00:00 [serving.py:1] ValueError: x") is not None


def test_one_line_in_an_envelope_is_not_learnt_from_prose() -> None:
    # a sentence that quotes a vLLM line once is no envelope: two lines must share one
    log = "I ran it and got (APIServer pid=1) ERROR 12-05 06:00:00 [serving.py:1] ValueError: x\nthanks\n"
    r = classify_text(log)
    assert r.first_exception is None or "I ran it" in r.first_exception.line


def test_a_real_harness_relogging_vllm_is_read_through() -> None:
    r = classify_text(issue_text("2749.log"))
    assert r.failed_stage == "runtime" and r.first_exception is not None, (r.failed_stage, r.evidence)
    assert "Engine iteration timed out" in r.first_exception.line or "TimeoutError" in r.first_exception.line


# --- IPython's traceback ----------------------------------------------------------------------------

IPY_STACKS = st.sampled_from(
    [
        (
            "engine",
            [
                ("v1/engine/core.py", "EngineCore._initialize_kv_caches"),
                ("v1/worker/gpu_worker.py", "Worker.determine_available_memory"),
            ],
        ),
        ("weights", [("model_executor/model_loader/default_loader.py", "DefaultModelLoader.load_weights")]),
        ("device", [("v1/worker/gpu_worker.py", "Worker.init_device")]),
        ("engine", [("distributed/parallel_state.py", "initialize_model_parallel")]),
    ]
)
IPY_ERRORS = st.sampled_from(
    [
        "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        "AssertionError: data parallel group is already initialized",
        "ValueError: bogus value 42",
    ]
)


def _ipython_tb(site: str, frames: list, error: str, old: bool, cut: bool) -> str:
    typ = error.split(":", 1)[0]
    out = [
        "-" * 75,
        f"{typ:<42}Traceback (most recent call last)",
        "Cell In[3], line 5",
        "      3 from vllm import LLM",
        "----> 5 llm = LLM(model='m')",
        "",
    ]
    out += [
        f"File {site}/entrypoints/llm.py:243, in LLM.__init__(self, model)"
        if not old
        else f"{site}/entrypoints/llm.py in __init__(self, model)"
    ]
    out += [
        "    241 engine_args = EngineArgs(model=model)",
        "--> 243 self.llm_engine = LLMEngine.from_engine_args(engine_args)",
        "",
    ]
    for path, func in frames:
        out.append(
            f"File {site}/{path}:120, in {func}(self)"
            if not old
            else f"{site}/{path} in {func.rsplit('.', 1)[-1]}(self)"
        )
        out += ["    118 x = 1", "--> 120 y = f(x)", ""]
    if not cut:
        out.append(error)
    return "\n".join(out) + "\n"


@given(site=SITE, case=IPY_STACKS, error=IPY_ERRORS, old=st.booleans(), cut=st.booleans(), quote=st.booleans())
def test_an_ipython_traceback_is_read_as_pythons(
    site: str, case: tuple, error: str, old: bool, cut: bool, quote: bool
) -> None:
    stage, frames = case
    log = _ipython_tb(site, frames, error, old, cut)
    if quote:
        log = "".join(f"> {line}\n" for line in log.splitlines())
    r = classify_text(log)
    assert r.first_exception is not None, log
    if cut:
        assert "Traceback (most recent call last)" in r.first_exception.line
        assert error.split(":", 1)[0] in r.first_exception.line
    else:
        assert r.first_exception.line.endswith(error), r.first_exception.line
    assert r.failed_stage == stage, (r.failed_stage, r.evidence)


def test_real_ipython_tracebacks_are_read() -> None:
    r = classify_text(issue_text("2807.log"))
    assert r.failed_stage == "engine" and r.evidence is not None and r.evidence.rule == "frames", r.evidence
    r = classify_text(issue_text("5051.log"))  # cut before its exception line: the head names it
    assert r.failed_stage == "engine" and r.first_exception is not None
    assert "OutOfMemoryError" in r.first_exception.line


def test_a_compiled_graphs_call_names_no_stage() -> None:
    r = classify_text(issue_text("2735.log"))  # (its stage is the default's: a known miss since session 14)
    assert r.evidence.rule == "default" and "__call__" not in r.evidence.why, r.evidence
    stack = [("/x/vllm/compilation/cuda_piecewise_backend.py", "__call__")]
    assert classify_text(_tb(stack, "IndexError: list index out of range")).evidence.rule == "default"
    stack = [("/x/vllm/compilation/backends.py", "compile")]
    assert classify_text(_tb(stack, "IndexError: list index out of range")).failed_stage == "engine"


# --- from the fresh logs' tuned misses --------------------------------------------------------------

ACCEL = st.sampled_from(
    [
        (
            "habana_frameworks/torch/hpu/__init__.py",
            ["current_device", "init"],
            "RuntimeError: synStatus=8 [Device not found] Device acquire failed.",
        ),
        (
            "torch/cuda/__init__.py",
            ["current_device", "_lazy_init"],
            "RuntimeError: the driver returned 999 while starting",
        ),
        (
            "torch_npu/npu/__init__.py",
            ["current_device", "init"],
            "RuntimeError: Initialize:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:217 NPU error, error code is 507033",
        ),
    ]
)
SITE_PKGS = st.sampled_from(["/usr/local/lib/python3.10/dist-packages", "/opt/conda/lib/python3.12/site-packages"])


@given(accel=ACCEL, pkgs=SITE_PKGS, serving=st.booleans())
def test_an_accelerator_runtimes_own_start_is_the_device(accel: tuple, pkgs: str, serving: bool) -> None:
    path, funcs, error = accel
    outer = [(f"{pkgs}/vllm/v1/worker/gpu_model_runner.py", "execute_model")] if serving else []
    r = classify_text(_tb(outer + [(f"{pkgs}/{path}", f) for f in funcs], error))
    assert r.first_exception is not None and r.first_exception.line == error
    assert r.failed_stage == ("runtime" if serving else "device"), (r.failed_stage, r.evidence)


@given(
    port=st.integers(1024, 65535),
    typo=st.booleans(),
    prefix=st.sampled_from(["", "(Worker_TP0 pid=42) ERROR 12-05 06:00:00 [parallel_state.py:1] "]),
)
def test_torchs_tcpstore_failing_to_listen_is_the_engines_rendezvous(port: int, typo: bool, prefix: str) -> None:
    sock = "sockethas" if typo else "socket has"
    line = (
        f"RuntimeError: The server {sock} failed to listen on any local network address. port: {port}, "
        "useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use"
    )
    r = classify_text(prefix + line + "\n")
    assert r.failed_stage == "engine", (r.failed_stage, r.evidence)
    r = classify_text(prefix + "OSError: [Errno 98] Address already in use\n")  # the HTTP server's own bind
    assert r.failed_stage == "api", (r.failed_stage, r.evidence)


SCRIPT = st.sampled_from(["/var/lib/slurm/slurmd/job01234/slurm_script", "./run_vllm.sh", "/opt/launch/entry.sh"])
MISSING = st.sampled_from(["/home/me/.venv/bin/vllm", "vllm", "/opt/venv/bin/python3"])
WHY = st.sampled_from(["No such file or directory", "command not found", "Permission denied"])


@given(
    script=SCRIPT,
    line=st.integers(1, 400),
    missing=MISSING,
    why=WHY,
    node=st.sampled_from(["node-0", "gpu-a17", "h200x8b"]),
)
def test_a_scripts_shell_failing_to_run_the_server_is_the_container(
    script: str, line: int, missing: str, why: str, node: str
) -> None:
    err = f"{script}: line {line}: {missing}: {why}"
    log = (
        "[ensure_env] Environment ready.\n"
        + err
        + "\n"
        + "".join(f"Waiting for vLLM server... ({i})\n" for i in range(1, 6))
        + f"slurmstepd-{node}: error: *** JOB 7548 ON {node} CANCELLED AT 2025-08-17T17:34:49 ***\n"
    )
    r = classify_text(log)
    assert r.first_exception is not None and r.first_exception.line == err, r.first_exception
    assert r.failed_stage == "container", (r.failed_stage, r.evidence)


@given(
    host=st.sampled_from(["ctmt-74bfc659cd-zpz6r", "gpu-node-3", "h200x8b"]),
    ranks=st.permutations(range(4)),
    newer=st.booleans(),
)
def test_nccls_duplicate_gpu_is_a_failure(host: str, ranks: list, newer: bool) -> None:
    loc = "init.cc:943 " if newer else ""
    log = "".join(
        f"{host}:{2000 + r}:{2000 + r} [0] {loc}NCCL WARN Duplicate GPU detected : rank {r} and rank {ranks[0]} both on CUDA device 8000\n"
        for r in ranks[1:]
    )
    r = classify_text(log)
    assert r.first_exception is not None and "Duplicate GPU detected" in r.first_exception.line
    assert r.failed_stage == "engine", (r.failed_stage, r.evidence)


def test_the_fresh_tuned_misses_are_now_read() -> None:
    for name, stage in (
        ("5053.log", "device"),
        ("5071.log", "engine"),
        ("4952.log", "container"),
        ("5061.log", "engine"),
    ):
        r = classify_text(issue_text(name))
        assert r.failed_stage == stage, (name, r.failed_stage, r.evidence)


# --- tqdm's padding, an offline engine's progress ----------------------------------------------------

CRASH = st.sampled_from(
    [
        "!!!!!!! Segfault encountered !!!!!!!",
        "Fatal Python error: Segmentation fault",
        "*** SIGSEGV (@0x0) received by PID 42",
    ]
)


@given(
    pad=st.integers(0, 120),
    crash=CRASH,
    bar=st.sampled_from(["Adding requests", "Processed prompts"]),
    n=st.integers(1, 64),
)
def test_a_crash_glued_after_a_padded_progress_bar_is_read_and_says_it_ran(
    pad: int, crash: str, bar: str, n: int
) -> None:
    head = [
        "INFO 11-30 03:29:01 [model.py:733] Resolved architecture: LlamaForCausalLM",
        "Loading safetensors checkpoint shards: 100% Completed | 6/6 [00:15<00:00,  2.55s/it]",
        f"{bar}: 100%|██████████| {n}/{n} [00:00<00:00, 187.61it/s]",
    ]
    glued = f"{bar}:   0%|          | 0/{n} [00:00<?, ?it/s]" + " " * pad + crash
    log = "\n".join([*head, glued, '  File "<unknown>", line 0, in _PyEval_EvalFrameDefault']) + "\n"
    r = classify_text(log)
    assert r.first_exception is not None and r.first_exception.line.strip() == crash, r.first_exception
    assert r.failed_stage == "runtime", (r.failed_stage, r.evidence)


def test_an_offline_engines_progress_is_seen_only_in_the_first_lines() -> None:
    bar = "Processed prompts: 100%|██████████| 8/8 [00:01<00:00,  5.11it/s]"
    err = "(EngineCore_DP0 pid=42) ERROR 11-30 03:29:09 [core.py:710] RuntimeError: boom"
    head = ["INFO 11-30 03:29:01 [model.py:733] Loading weights took 2.1 s"]
    early = "\n".join([*head, bar, err]) + "\n"
    assert classify_text(early).failed_stage == "runtime"
    late = "\n".join([*head, *(["INFO 11-30 03:29:02 [metrics.py:1] x"] * 40), bar, err]) + "\n"
    results = []
    for prefilter in (True, False):
        c = Classifier(prefilter=prefilter)
        c.feed(late)
        results.append(c.finish().failed_stage)
    assert results[0] == results[1] != "runtime", results  # (never searched for: the prefilter agrees)


def test_real_logs_with_an_offline_engines_progress() -> None:
    r = classify_text(issue_text("4905.log"))
    assert r.failed_stage == "runtime" and r.first_exception is not None
    assert "Segfault encountered" in r.first_exception.line


# --- a whole log indented, or double-spaced --------------------------------------------------------

LAYOUT_LOGS = [*ENVELOPED, "vllm-cpu-faults/args-gpu-util-above-one.log", "vllm-issues/105.log", "vllm-issues/110.log"]


@given(name=st.sampled_from(LAYOUT_LOGS), width=st.integers(4, 10), blank_pad=st.booleans(), double=st.booleans())
def test_a_log_pasted_indented_or_double_spaced_reads_as_the_log(
    name: str, width: int, blank_pad: bool, double: bool
) -> None:
    from tests.support.corpus import REPO_CORPUS

    text = (REPO_CORPUS / name).read_text(encoding="utf-8", errors="replace")
    bare = classify_text(text)
    assert bare.first_exception is not None
    rows = text.split("\n")
    if double:
        out = "".join(f"{row}\n\n" for row in rows)
    else:
        out = "".join(" " * width + row + "\n" if row.strip() or blank_pad else "\n" for row in rows)
    r = classify_text(out)
    assert r.failed_stage == bare.failed_stage, (name, r.failed_stage, bare.failed_stage, r.evidence)
    assert r.first_exception is not None and bare.first_exception.line.strip()[-50:] in r.first_exception.line


def test_a_log_whose_lines_are_not_all_indented_keeps_its_indentation() -> None:
    # code lines under a frame stay code: only a paste that indented EVERY line loses its indentation
    log = (
        "Traceback (most recent call last):\n"
        '  File "/x/vllm/worker/worker.py", line 1, in load_model\n'
        "    raise ValueError('boom')\n"
        "ValueError: boom\n"
    )
    r = classify_text(log)
    assert r.first_exception is not None and r.first_exception.line == "ValueError: boom"
    assert r.failed_stage == "weights"


# --- a bare "Error:" line --------------------------------------------------------------------------

MESSAGES = st.sampled_from(
    [
        (
            "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.",
            "engine",
        ),
        (
            "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json.",
            "weights",
        ),
        ("Bfloat16 is only supported on GPUs with compute capability of at least 8.0.", "device"),
    ]
)


@given(msg=MESSAGES, label=st.sampled_from(["Error:", "ERROR:", "Error message:"]), before=st.integers(0, 60))
def test_the_line_after_a_bare_error_label_is_the_root(msg: tuple, label: str, before: int) -> None:
    text, stage = msg
    head = "".join(f"INFO 02-20 18:45:{i % 60:02d} metrics.py:1] nothing to see {i}\n" for i in range(before))
    log = (
        head
        + "Unsloth: Retrying vLLM to process 96 sequences.\n"
        + label
        + "\n"
        + text
        + "\nINFO 02-20 18:57:11 config.py:542] again\n"
    )
    r = classify_text(log)
    assert r.first_exception is not None and r.first_exception.line == text, r.first_exception
    assert r.failed_stage == stage, (r.failed_stage, r.evidence)
    # a line with a logger's prefix after it is a log's line, not the label's message
    cut = "APIServer pid=35100) ERROR 01-21 02:44:26 [serving_completion.py:137]            ^^^^^^^^^\n"
    assert classify_text(head + label + "\n" + cut).first_exception is None


def test_real_logs_with_a_bare_error_label() -> None:
    r = classify_text(issue_text("5000.log"))
    assert r.failed_stage == "engine" and r.first_exception is not None
    assert r.first_exception.line.startswith("No available memory for the cache blocks")


# --- the platform's INFO line and the error it led to; a parameter's loader -------------------------

NO_PLATFORM = "INFO 08-07 13:49:11 [__init__.py:239] No platform detected, vLLM is running on UnspecifiedPlatform"


@given(
    err=st.sampled_from(["RuntimeError: Failed to infer device type", "RuntimeError: Device string must not be empty"]),
    gap=st.integers(0, 20),
)
def test_an_error_naming_the_missing_device_is_the_root_over_the_platform_line(err: str, gap: int) -> None:
    filler = "".join(f"INFO 08-07 13:49:{12 + i % 40:02d} [arg_utils.py:1] setting {i}\n" for i in range(gap))
    frames = [("/x/vllm/engine/arg_utils.py", "create_engine_config"), ("/x/vllm/config/device.py", "__post_init__")]
    r = classify_text(NO_PLATFORM + "\n" + filler + _tb(frames, err))
    assert r.first_exception is not None and r.first_exception.line == err, r.first_exception
    assert r.failed_stage == "device", (r.failed_stage, r.evidence)
    # an error that does not say so stays the platform's consequence: the INFO line is the root
    other = "ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (40960)."
    r = classify_text(NO_PLATFORM + "\n" + filler + _tb(frames, other))
    assert r.first_exception is not None and "No platform detected" in r.first_exception.line


@given(
    site=SITE,
    func=st.sampled_from(
        ["load_qkv_weight", "load_column_parallel_weight", "load_row_parallel_weight", "load_merged_column_weight"]
    ),
)
def test_a_weight_parameters_own_loader_is_the_weights(site: str, func: str) -> None:
    r = classify_text(_tb([(f"{site}/model_executor/parameter.py", func)], "AssertionError"))
    assert r.failed_stage == "weights", (r.failed_stage, r.evidence)


# --- a flattened log whose last part holds an unprefixed traceback ---------------------------------


@given(
    site=SITE,
    err=st.sampled_from(
        ["RuntimeError: Device string must not be empty", "ValueError: bogus value 42", "KeyError: 'model.layers.0.w'"]
    ),
    lead=st.sampled_from(["Exit code: 1. Reason: ", "", "Runtime error: "]),
)
def test_a_flattened_logs_unprefixed_traceback_is_split(site: str, err: str, lead: str) -> None:
    lines = [
        f"{lead}INFO 08-03 08:33:38 [__init__.py:239] Automatically detected platform cuda.",
        "WARNING 08-03 08:33:39 [config.py:1] Casting torch.bfloat16 to torch.float16.",
        "Traceback (most recent call last):",
        f'File "{site}/entrypoints/openai/api_server.py", line 1, in run_server',
        "await run_server_worker(args)",
        f'File "{site}/engine/arg_utils.py", line 2, in create_engine_config',
        "device_config = DeviceConfig(device=self.device)",
        err,
    ]
    r = classify_text(" ".join(lines) + "\n")
    assert r.first_exception is not None and r.first_exception.line.strip() == err, r.first_exception


def test_a_harness_relogging_uvicorns_lines_keeps_their_level() -> None:
    from k3tui.classify.lines import parse

    ln = parse("2026-12-05 06:00:00,123 - INFO - INFO:     Application startup complete.")
    assert ln.level == "INFO" and ln.body == "Application startup complete."
    ln = parse("2026-12-05 06:00:00,123 - INFO - ERROR:    Exception in ASGI application")
    assert ln.level == "ERROR" and ln.body == "Exception in ASGI application"


# --- from the G/H batch ------------------------------------------------------------------------------


@given(
    where=st.sampled_from(["huggingface_hub/utils/_auth.py:94", "transformers/utils/hub.py:12"]), rest=st.integers(0, 3)
)
def test_a_python_warnings_message_on_the_next_line_is_a_decoy(where: str, rest: int) -> None:
    log = (
        f"/usr/local/lib/python3.12/dist-packages/{where}: UserWarning: \n"
        "The secret `HF_TOKEN` does not exist in your Colab secrets.\n"
        + "".join(f"Please note that authentication is recommended ({i}).\n" for i in range(rest))
        + "INFO 09-25 00:30:56 [utils.py:1] non-default args: {'model': 'm'}\n"
    )
    r = classify_text(log)
    assert r.first_exception is None and r.failed_stage == "none", r.first_exception
    # the same words as the log's own statement (no warning above them) still name the layer
    assert classify_text("The secret `HF_TOKEN` does not exist in your Colab secrets.\n").first_exception is not None


@given(name=st.sampled_from(["vLLM STDOUT", "server", "job-7"]), n=st.integers(2, 6))
def test_an_envelope_before_a_coloured_process_prefix_is_learnt(name: str, n: int) -> None:
    lines = [
        f"{name}: \x1b[1;36m(APIServer pid=3853)\x1b[0;0m INFO 09-25 00:30:5{i} [api_server.py:1] ok {i}"
        for i in range(n)
    ]
    err = "RuntimeError: boom"
    lines.append(f"{name}: \x1b[1;36m(EngineCore_DP0 pid=3900)\x1b[0;0m ERROR 09-25 00:31:00 [core.py:710] {err}")
    r = classify_text("\n".join(lines) + "\n")
    assert r.first_exception is not None and r.first_exception.process is not None
    assert r.first_exception.process.startswith("EngineCore_DP0"), r.first_exception


@given(
    prose=st.sampled_from(["问题:运行vllm-ascend遇到报错: ", "运行时报错：", "エラー: "]),
    loc=st.sampled_from(["multiproc_worker_utils.py:242] ", "[core.py:710] ", ""]),
    accel=st.sampled_from(["CUDA", "NPU", "XPU"]),
)
def test_an_exception_after_cjk_prose_and_a_cut_location_is_quoted(prose: str, loc: str, accel: str) -> None:
    err = f"RuntimeError: Cannot re-initialize {accel} in forked subprocess. To use {accel} with multiprocessing, you must use the 'spawn' start method."
    r = classify_text(prose + loc + err + "\n")
    assert r.first_exception is not None and r.failed_stage == "device", (r.failed_stage, r.evidence)


def test_no_supported_config_format_is_the_models_files() -> None:
    r = classify_text(
        "ERROR 12-16 09:49:55 engine.py:366] ValueError: No supported config format found in org/Model-GGUF\n"
    )
    assert r.failed_stage == "weights", r.evidence


@given(
    name=st.sampled_from([*LAYOUT_LOGS, "vllm-issues/102.log"]),
    style=st.sampled_from(["\u00a0 ", " \u00a0", "\u00a0\u00a0"]),
)
def test_no_break_spaces_from_a_web_copy_read_as_spaces(name: str, style: str) -> None:
    from tests.support.corpus import REPO_CORPUS

    text = (REPO_CORPUS / name).read_text(encoding="utf-8", errors="replace")
    bare = classify_text(text)
    r = classify_text(text.replace("  ", style))
    assert r.failed_stage == bare.failed_stage, (name, r.failed_stage, bare.failed_stage, r.evidence)
    assert (r.first_exception is None) == (bare.first_exception is None)


@given(
    err=st.sampled_from(
        [
            "zmq.error.ZMQError: Operation not supported",
            "RuntimeError: Event loop is closed",
            "asyncio.exceptions.CancelledError",
        ]
    )
)
def test_errors_after_the_launcher_stopped_gracefully_are_the_stops(err: str) -> None:
    served = (
        'INFO:     Application startup complete.\nINFO:     127.0.0.1:39218 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    )
    tb = (
        "Traceback (most recent call last):\n"
        '  File "/x/vllm/engine/multiprocessing/client.py", line 1, in run_output_handler_loop\n'
        "    x = y()\n" + err + "\n"
    )
    stop = "INFO 08-15 01:50:29 launcher.py:45] Gracefully stopping http server\nINFO:     Waiting for application shutdown.\n"
    r = classify_text(served + stop + tb)
    assert r.first_exception is None and r.failed_stage == "none", r.first_exception
    if not err.endswith("CancelledError"):
        assert classify_text(served + tb).first_exception is not None  # (without the stop: a failure)


@given(typ=st.sampled_from(["KeyboardInterrupt", "SystemExit", "asyncio.exceptions.CancelledError"]), site=SITE)
def test_an_interrupted_cells_cut_ipython_traceback_is_no_failure(typ: str, site: str) -> None:
    log = (
        "INFO 11-30 03:29:01 [model.py:733] Resolved architecture: LlamaForCausalLM\n"
        + "-" * 75
        + f"\n{typ:<42}Traceback (most recent call last)\nCell In[3], line 5\n----> 5 llm = LLM(model='m')\n\n"
        + f"File {site}/entrypoints/llm.py:243, in LLM.__init__(self, model)\n"
        + "--> 243 self.llm_engine = LLMEngine.from_engine_args(engine_args)\n"
    )
    r = classify_text(log)
    assert r.first_exception is None and r.failed_stage == "none", r.first_exception


# --- an exception whose message starts on the next line ----------------------------------------------


@given(
    prefix=st.sampled_from(
        ["", "(EngineCore_DP0 pid=276) ERROR 03-18 08:08:14 [core.py:1100] ", "(EngineCore_DP0 pid=301) "]
    ),
    headed=st.booleans(),
    chip=st.sampled_from(["Ascend310P1", "Ascend310P3", "gfx1201"]),
)
def test_an_exceptions_message_below_its_type_line_is_the_root(prefix: str, headed: bool, chip: str) -> None:
    msg = f"bishengir-compile: for the --target option: Cannot find option named '{chip}'!"
    lines = []
    if headed:
        lines += [
            "Traceback (most recent call last):",
            '  File "/x/triton/compiler/compiler.py", line 1, in compile',
            "    raise MLIRCompilationError(stage_name, error_detail)",
        ]
    else:
        lines += ["    raise MLIRCompilationError(stage_name, error_detail)"]
    lines += [
        "triton.compiler.errors.MLIRCompilationError: ",
        "///------------------[ERROR][Triton][BEG]------------------",
        "[ConvertLinalgRToBinary] encounters error:",
        msg,
        "///------------------[ERROR][Triton][END]------------------",
    ]
    r = classify_text("".join(prefix + line + "\n" for line in lines))
    assert r.first_exception is not None and r.first_exception.line.endswith(msg), r.first_exception
    assert r.first_exception.context is not None and "MLIRCompilationError" in r.first_exception.context
    assert r.failed_stage == "device", (r.failed_stage, r.evidence)


def test_an_exception_with_a_message_keeps_its_line() -> None:
    # "Error raised in subprocess:" has a message: the subprocess's own line under it stays what unwraps it
    r = classify_text(issue_text("5017.log"))
    assert r.first_exception is not None and "Error while finding module specification" in r.first_exception.line

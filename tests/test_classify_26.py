"""Issue 13, twenty-sixth session: a traceback pasted alone names the layer its own frames run through.

A reporter pastes the root's traceback, not the start-up lines before it. Cut from a complete log of the tuned part
(the last ``Traceback (most recent call last):`` before the labelled root line, to that line), the stage must still
come from the stack. Three kinds of frame named no layer:

- the chat template the OpenAI front end loads and compiles as it sets up (``_load_chat_template`` of vLLM's
  ``chat_utils``, in ``vllm/entrypoints/`` or vLLM 0.32's ``vllm/renderers/``; jinja's compile under vLLM's
  ``_try_extract_ast`` or transformers' ``_compile_jinja_template``): the api layer. Compiled again for a request,
  the request handler's frames outside it make it the runtime's (a guard);
- tiktoken's loader of a BPE file (``tiktoken/load.py``: the tokenizer's files): the weights;
- the API server's own check of its arguments (``validate_api_server_args``: an unknown tool-call or reasoning
  parser): the config.

And a root that itself says the engine's start-up failed (``RuntimeError: Engine core initialization failed. See
root cause above. Failed core proc(s): {}``, V0's ``Engine process failed to start``), raised in the main program
that waited for it (an engine core killed at its KV-cache sizing prints nothing else), is the engine's set-up, not
the process start its whole stack from ``<module>`` would otherwise say.

Each fails without its change (the guards pass either way).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import REPO_CORPUS, tuned_text

_PASTED = (
    "args-chat-template-dir.log",
    "tok-chat-template-broken-jinja.log",
    "api-chat-template-cli-file-syntax-error.log",
    "offline-chat-template-broken.log",
    "rct-bpe-truncated.log",
    "args-tool-call-parser-bogus.log",
)


def _label(name: str) -> dict:
    rows = (REPO_CORPUS / "vllm-cpu-faults" / "labels.jsonl").read_text(encoding="utf-8").splitlines()
    return next(d for d in map(json.loads, rows) if d["file"] == name)


def _pasted(name: str) -> str:
    """The root's own traceback, as a reporter pastes it: from the last head before the labelled root line to it."""
    lines = tuned_text("vllm-cpu-faults", name).splitlines()
    root = next(i for i, x in enumerate(lines) if _label(name)["first_exception"] in x)
    head = max(i for i in range(root + 1) if "Traceback (most recent call last):" in lines[i])
    return "\n".join(lines[head : root + 1]) + "\n"


@pytest.mark.parametrize("name", _PASTED)
def test_the_roots_traceback_pasted_alone_names_its_layer(name: str) -> None:
    got = classify_text(_pasted(name))
    assert got.first_exception is not None
    assert got.failed_stage == _label(name)["stage"], (got.failed_stage, got.evidence)
    assert got.evidence is not None and got.evidence.rule == "frames", got.evidence


def test_the_complete_logs_are_still_right() -> None:
    for name in _PASTED:
        assert classify_text(tuned_text("vllm-cpu-faults", name)).failed_stage == _label(name)["stage"], name


_SITE = st.sampled_from(
    [
        "/usr/local/lib/python3.12/dist-packages",
        "/opt/venv/lib/python3.11/site-packages",
        "/home/u/.conda/envs/v/lib/python3.10/site-packages",
    ]
)
_CHAT = st.sampled_from(["vllm/entrypoints/chat_utils.py", "vllm/renderers/chat_utils.py"])
_TEMPLATE_ERRORS = st.sampled_from(
    [
        ("_load_chat_template", "IsADirectoryError: [Errno 21] Is a directory: '/models/k3'"),
        ("load_chat_template", "FileNotFoundError: [Errno 2] No such file or directory: '/t/chat.jinja'"),
        ("resolve_chat_template", "jinja2.exceptions.TemplateSyntaxError: unexpected '}'"),
        ("_try_extract_ast", "jinja2.exceptions.TemplateSyntaxError: expected token 'end of statement block'"),
    ]
)


def _frame(site: str, path: str, func: str, line: int = 100) -> str:
    return f'  File "{site}/{path}", line {line}, in {func}\n    pass'


@given(site=_SITE, chat=_CHAT, err=_TEMPLATE_ERRORS, bare=st.booleans())
def test_a_chat_template_loaded_at_set_up_is_the_apis_and_compiled_for_a_request_the_runtimes(
    site, chat, err, bare
) -> None:  # noqa: ANN001
    func, exc = err
    inner = _frame(site, chat, func)
    # the server's start outside it (run_server names no layer); the template's loading alone is also set-up's (it
    # reads the file --chat-template names, once), its compile alone may be a request's
    loads = func.endswith("load_chat_template")
    outer = [] if loads and bare else [_frame(site, "vllm/entrypoints/openai/api_server.py", "run_server")]
    setup = "\n".join(["Traceback (most recent call last):", *outer, inner, exc])
    got = classify_text(setup + "\n")
    assert (got.failed_stage, got.evidence.rule) == ("api", "frames"), got.evidence
    request = "\n".join(
        [
            "Traceback (most recent call last):",
            _frame(site, "vllm/entrypoints/openai/serving_chat.py", "create_chat_completion"),
            inner,
            exc,
        ]
    )
    got = classify_text(request + "\n")
    assert got.failed_stage != "api", got.evidence  # (a request's: the runtime, or a request refused)


@given(site=_SITE)
def test_tiktokens_loader_and_the_api_servers_argument_check_name_their_layers(site) -> None:  # noqa: ANN001
    bpe = "\n".join(
        [
            "Traceback (most recent call last):",
            _frame(site, "tiktoken/load.py", "load_tiktoken_bpe"),
            "ValueError: not enough values to unpack (expected 2, got 1)",
        ]
    )
    assert classify_text(bpe + "\n").failed_stage == "weights"
    parser = "\n".join(
        [
            "Traceback (most recent call last):",
            _frame(site, "vllm/entrypoints/openai/api_server.py", "run_server"),
            _frame(site, "vllm/entrypoints/openai/api_server.py", "validate_api_server_args"),
            "KeyError: 'invalid tool call parser: kimi (chose from { hermes,mistral })'",
        ]
    )
    assert classify_text(parser + "\n").failed_stage == "config"


_KILLED_IN_START_UP = (
    "kill-abrt-engine-at-kv-cache.log",
    "v010-kill-segv-engine-at-kv-cache.log",
    "v011-kill9-engine-at-kv-cache.log",
    "v085-kill9-engine-at-kv-cache.log",
    "s26b-v085-sigterm-engine-at-cpu-blocks.log",
)


@pytest.mark.parametrize("name", _KILLED_IN_START_UP)
def test_an_engine_start_up_failure_raised_in_the_main_program_is_the_engines_set_up(name: str) -> None:
    got = classify_text(_pasted(name))
    assert got.failed_stage == _label(name)["stage"] == "engine", got.evidence


def test_a_main_programs_stack_that_says_nothing_of_the_engine_stays_the_process_start() -> None:
    text = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/opt/venv/bin/vllm", line 8, in <module>',
            "    sys.exit(main())",
            '  File "/opt/venv/lib/python3.11/site-packages/mytool/run.py", line 10, in main',
            "    start()",
            "RuntimeError: initialization failed: the tool's license file is missing",
        ]
    )
    got = classify_text(text + "\n")
    assert got.failed_stage == "container", got.evidence


# --- a launch script's failed command the start-up got past -------------------------------------------------------

_SCRIPT_ERRORS = st.sampled_from(
    [
        "/var/spool/slurmd/job{j}/slurm_script: line {k}: module: command not found",
        "/var/spool/slurmd/job{j}/slurm_script: line {k}: /opt/venvs/vllm/bin/activate: No such file or directory",
        "/var/spool/slurmd/job{j}/slurm_script: line {k}: cd: /scratch/u/run: No such file or directory",
        "/home/u/serve.sh: line {k}: conda: command not found",
        "sh: {k}: nvidia-smi: not found",
    ]
)


def _tuned_vllm_cpu(stage: str) -> list[str]:
    from tests.support.corpus import tuned_cases

    return [
        c.label["file"]
        for c in tuned_cases()
        if c.folder == "vllm-cpu-faults"
        and c.label["stage"] == stage
        and "Application startup complete" in c.text()
        and not c.label["file"].startswith(("dkr-", "slm-", "s2"))
    ][:40]


_HEALTHY = _tuned_vllm_cpu("none")
_SERVING_FAILED = _tuned_vllm_cpu("runtime")


def _with_script_error(name: str, line: str) -> str:
    lines = tuned_text("vllm-cpu-faults", name).splitlines()
    return "\n".join([line, *lines]) + "\n"


@given(name=st.sampled_from(_HEALTHY), line=_SCRIPT_ERRORS, j=st.integers(1, 99999), k=st.integers(1, 300))
def test_a_launch_scripts_failed_command_before_a_server_that_got_ready_is_no_failure(name, line, j, k) -> None:  # noqa: ANN001
    """A Slurm or wrapper script whose ``module`` / ``conda`` is missing, whose venv or folder is not there, went on
    (no ``set -e``) and the server got ready: the script's line is noise, the run healthy (it was reported as the
    container's failure)."""
    ref = classify_text(tuned_text("vllm-cpu-faults", name))
    got = classify_text(_with_script_error(name, line.format(j=j, k=k)))
    assert (got.failed_stage, got.first_exception) == (ref.failed_stage, ref.first_exception) == ("none", None)


@given(name=st.sampled_from(_SERVING_FAILED), line=_SCRIPT_ERRORS)
def test_a_failure_while_serving_after_such_a_line_is_still_the_root(name, line) -> None:  # noqa: ANN001
    ref = classify_text(tuned_text("vllm-cpu-faults", name))
    got = classify_text(_with_script_error(name, line.format(j=7, k=12)))
    assert got.failed_stage == ref.failed_stage
    assert (got.first_exception is None) == (ref.first_exception is None)
    if ref.first_exception is not None:
        assert got.first_exception.line == ref.first_exception.line


def test_a_launch_script_that_stopped_at_a_failed_cd_is_the_containers_root() -> None:
    """Under ``set -e`` the script stops at the failed ``cd`` and the server never runs: the line is the root."""
    name = "s26d-slm-set-e-cd-missing.log"
    got = classify_text(tuned_text("vllm-cpu-faults", name))
    assert got.failed_stage == _label(name)["stage"] == "container"
    assert got.first_exception is not None and _label(name)["first_exception"] in got.first_exception.line


def test_there_are_logs_to_try() -> None:
    assert len(_HEALTHY) >= 10 and len(_SERVING_FAILED) >= 10

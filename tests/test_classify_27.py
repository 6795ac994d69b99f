"""Issue 13, twenty-seventh session: forms of excerpts that fresh threads showed, each read as what it is.

- A reporter often quotes one line of the stack under vLLM and nothing of vLLM's own: PyTorch's warning that a
  GPU's CUDA capability is newer than its build supports, nanobind's leak report of xgrammar's compiler at exit.
  Read as "not a vLLM log" (``unknown``, exit 3) they were wrong every time: the corpus holds no file that is not
  a vLLM run's. Whole words of that stack (CUDA, NCCL, ROCm/HIP, an NPU's CANN, PyTorch, Triton and the kernel
  libraries, transformers, safetensors, the tokenizer, KV cache, Ray's raylet, precision and architecture names;
  ``[recognise] stack`` of ``assets/classify/patterns.toml``) now make a text a vLLM excerpt; ``/etc/passwd``,
  prose and words that only contain one (``shipping``, ``torchlight``) are still ``unknown``.
- A crash line found by looking back through a hard-wrapped log was numbered as if no line had been joined (off
  by every piece before it; negative in a short paste), and the verdict could change with the width. Ray's memory
  monitor killing workers (``killed due to memory pressure (OOM)``) is such a crash line.
- A paste that ends on a frame's ``in`` (its function cut off) still says which file ran: a request's handling
  (uvicorn, FastAPI, vLLM's serving code) or the engine's.
- The package installer's own failure (uv's ``× No solution found when resolving dependencies:``, indented as uv
  prints it; pip's resolver, Python-version and wheel-build errors) is the root, and the container's.
- A message set in bold behind its prefix (``[rank0]: **KeyError: …**``) reads as the exception line it is.
- A traceback pasted without its exception line whose last line is the innermost frame's ``raise ValueError("…")``
  names that exception (as an ``assert`` statement there names an AssertionError), even under frames cut before
  their paths' end.

Each real case fails without its change; the guards pin the other side.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from k3tui.classify.rules import load_rules
from tests.support.corpus import tuned_text
from tests.test_classify_12 import _ANSI, _hard_wrap

# Real lines of the stack, none of which names vLLM or carries a failure: PyTorch's capability warning (6555), a
# transformers processor's note, NCCL's and Triton's info lines, a safetensors progress line's words.
STACK_LINES = st.sampled_from(
    [
        "Found GPU0 NVIDIA GB10 which is of cuda capability 12.1.",
        "Minimum and Maximum cuda capability supported by this version of PyTorch is (8.0) - (12.0)",
        ' - leaked type "xgrammar.xgrammar_bindings.GrammarCompiler"',
        "node-3:412:412 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.3<0>",
        "Using the Triton cache at /root/.triton/cache",
        "Loading safetensors shards in bfloat16",
        "The tokenizer class you load from this checkpoint is not the same type as the class this function is called from.",
    ]
)
PROSE = st.lists(
    st.sampled_from(
        [
            "root:x:0:0:root:/root:/bin/bash",
            "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin",
            "Here is what I see after the upgrade",
            "the shipping date of the torchlight order",
            "# /etc/fstab: static file system information.",
            "chip sales grew; the hippo sighed",
        ]
    ),
    max_size=6,
)


def test_real_fragments_in_the_stacks_words_are_none_not_unknown() -> None:
    # 6555: PyTorch's GB10 capability warning quoted alone (the maintainer: safely ignored); 2628: nanobind's
    # report of xgrammar's leaked compiler at interpreter exit
    for name in ("6555.log", "2628.log"):
        res = classify_text(tuned_text("vllm-issues", name))
        assert (res.failed_stage, res.first_exception) == ("none", None), (name, res.evidence)
        assert res.evidence is not None and res.evidence.rule == "no-root"


@given(before=PROSE, line=STACK_LINES, after=PROSE)
def test_one_line_of_the_stack_makes_a_fragment_a_vllm_excerpt(before, line, after) -> None:  # noqa: ANN001
    res = classify_text("\n".join([*before, line, *after]) + "\n")
    assert res.failed_stage == "none", res.evidence


@given(lines=PROSE.filter(bool))
def test_prose_and_words_that_only_contain_one_are_still_unknown(lines) -> None:  # noqa: ANN001
    res = classify_text("\n".join(lines) + "\n")
    assert res.failed_stage == "unknown" and res.evidence is not None and res.evidence.rule == "not-a-vllm-log"


@given(st.text(alphabet=st.characters(codec="ascii", exclude_characters="\r\n\x00"), max_size=60))
def test_the_stack_pattern_matches_whole_words_only(word) -> None:  # noqa: ANN001
    stack = load_rules().stack
    glued = f"x{word}cudax"  # the word inside another word: never one of the stack's
    if stack.search(word) is None and re.search(r"\W", word + "x") is None:
        assert stack.search(glued) is None
    assert stack.search(f"{word} CUDA {word}") is not None


# Complete real logs whose root is a native crash or a kill the look-back finds (no Python traceback of its own).
_LOOKED_BACK = ("kill-segv-worker-inflight.log", "hook-eng-kv-cache-init-segv.log", "kill9-worker-inflight.log")


@pytest.mark.parametrize("name", _LOOKED_BACK)
@pytest.mark.parametrize("width", [100, 140, 180])
def test_a_crash_found_by_looking_back_in_a_hard_wrapped_log_keeps_the_files_line_number(name: str, width: int) -> None:
    """The look-back reads the file's own lines, a wrap's pieces each one; the root's line is the log's line that
    holds the piece, numbered as the file numbers its first piece (it was numbered as if no line had been joined:
    off by every piece before it, negative in a short paste)."""
    text = _ANSI.sub("", tuned_text("vllm-cpu-faults", name))
    want = classify_text(text)
    assert want.first_exception is not None and want.evidence is not None
    wrapped = _hard_wrap(text, width)
    got = classify_text(wrapped)
    assert got.first_exception is not None and (got.failed_stage, got.evidence.rule) == (
        want.failed_stage,
        want.evidence.rule,
    )
    physical = wrapped.split("\n")[got.first_exception.line_number - 1]
    assert got.first_exception.line_number >= 1 and got.first_exception.line.startswith(physical), (
        got.first_exception.line_number,
        physical[:80],
        got.first_exception.line[:80],
    )
    assert all(1 <= k <= got.lines for k in got.evidence.lines)


def test_a_real_raylet_oom_kill_in_a_short_wrapped_paste() -> None:
    # 6762: Ray's memory monitor killed two workers (host memory), pasted with rsyslog's '#033[' escapes and
    # wrapped mid-word; nothing of vLLM's own in it
    res = classify_text(tuned_text("vllm-issues", "6762.log"))
    assert res.first_exception is not None and "killed due to memory pressure (OOM)" in res.first_exception.line
    assert res.first_exception.line_number == 2 and res.oom_root_cause is True


_REQUEST_FRAMES = [
    ("/usr/local/lib/python3.12/dist-packages/uvicorn/protocols/http/httptools_impl.py", "run_asgi"),
    ("/usr/local/lib/python3.12/dist-packages/uvicorn/middleware/proxy_headers.py", "__call__"),
    ("/usr/local/lib/python3.12/dist-packages/fastapi/applications.py", "__call__"),
    ("/usr/local/lib/python3.12/dist-packages/starlette/routing.py", "handle"),
    ("/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/serving_chat.py", "create_chat_completion"),
]
_ENGINE_FRAMES = [
    ("/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", "run_busy_loop"),
    ("/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", "collective_rpc"),
]
_SERVING = [
    "(APIServer pid=1) INFO 07-07 15:37:53 [loggers.py:273] Engine 000: Avg prompt throughput: 409.2 tokens/s, "
    "Avg generation throughput: 94.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.3%",
    '(APIServer pid=1) INFO:     172.16.27.254:59562 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request',
]


def _asgi_paste(frames: list[tuple[str, str]], cut: int) -> str:
    lines = [*_SERVING, "(APIServer pid=1) ERROR:    Exception in ASGI application"]
    lines.append("(APIServer pid=1) Traceback (most recent call last):")
    for path, func in frames[:cut]:
        lines += [
            f'(APIServer pid=1)   File "{path}", line 421, in {func}',
            "(APIServer pid=1)     result = await app()",
        ]
    path, _func = frames[cut]
    lines.append(f'(APIServer pid=1)   File "{path}", line 88, in')  # the paste ends on the frame's "in"
    return "\n".join(lines) + "\n"


def test_real_asgi_traceback_cut_after_its_first_frames_in() -> None:
    # 6891: a served 400, then uvicorn's 'Exception in ASGI application' whose paste ends after the first
    # frame's "in" (its function name cut off): one request's handling, the server went on
    res = classify_text(tuned_text("vllm-issues", "6891.log"))
    assert (res.failed_stage, res.first_exception) == ("none", None), res.evidence


@given(cut=st.integers(min_value=0, max_value=len(_REQUEST_FRAMES) - 1))
def test_a_request_traceback_cut_on_a_frames_in_is_still_one_requests(cut: int) -> None:
    res = classify_text(_asgi_paste(_REQUEST_FRAMES, cut))
    assert (res.failed_stage, res.first_exception) == ("none", None), res.evidence


@given(cut=st.integers(min_value=0, max_value=len(_ENGINE_FRAMES) - 1))
def test_an_engine_frame_cut_on_its_in_still_makes_the_traceback_a_root(cut: int) -> None:
    res = classify_text(_asgi_paste([_REQUEST_FRAMES[0], *_ENGINE_FRAMES], cut + 1))
    assert res.first_exception is not None and res.failed_stage == "runtime", res.evidence


def test_real_shm_broadcast_wait_quoted_alone_is_vllms_own() -> None:
    # 6837: the workers' shared-memory queue waiting 60 s (a slow load, the thread says), quoted bare in a fence:
    # words only vLLM prints, once (a hang is said at least twice): healthy, not another program's file
    res = classify_text(tuned_text("vllm-issues", "6837.log"))
    assert (res.failed_stage, res.first_exception) == ("none", None), res.evidence


# The package installer's own failure lines, as pip and uv print them (uv indents its `×` by two spaces)
_INSTALL_FAILED = st.sampled_from(
    [
        "  × No solution found when resolving dependencies:",
        "× Failed to build `flash-attn==2.8.3`",
        "ERROR: No matching distribution found for vllm==0.99.0",
        "ERROR: Could not find a version that satisfies the requirement torch==2.9.0.dev20250804+cu128 (from versions: none)",
        "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/",
        "ERROR: Cannot install vllm==0.11.0 and torch==2.7.1 because these package versions have conflicting dependencies.",
        "ERROR: Package 'vllm' requires a different Python: 3.8.10 not in '<3.14,>=3.10'",
        "ERROR: Failed building wheel for xformers",
    ]
)
_AROUND = st.lists(
    st.sampled_from(
        [
            "$ pip install vllm --extra-index-url https://wheels.vllm.ai/nightly",
            "Collecting vllm",
            "  Downloading vllm-0.11.0-cp38-abi3-manylinux1_x86_64.whl (438.2 MB)",
            "Resolved 163 packages in 3.61s",
            "      and there is no version of torch==2.9.0.dev20250804+cu128, we can",
        ]
    ),
    max_size=4,
    unique=True,  # (one line three times at one width reads as a hard wrap's pieces: not an installer's output)
)


def test_real_installer_failures_are_the_containers_root() -> None:
    # 7004 (uv, indented, fenced under the reporter's command), 7005 (uv, not indented), 7011 (pip's Python check)
    for name, said in (
        ("7004.log", "× No solution found when resolving dependencies:"),
        ("7005.log", "× No solution found when resolving dependencies:"),
        ("7011.log", "requires a different Python: 3.12.9"),
    ):
        res = classify_text(tuned_text("vllm-issues", name))
        assert res.failed_stage == "container" and res.first_exception is not None, (name, res.evidence)
        assert said in res.first_exception.line, (name, res.first_exception.line)


@given(before=_AROUND, line=_INSTALL_FAILED, after=_AROUND)
def test_the_installers_failure_is_the_root_and_the_container_fails(before, line, after) -> None:  # noqa: ANN001
    res = classify_text("\n".join([*before, line, *after]) + "\n")
    assert res.failed_stage == "container" and res.first_exception is not None, res.evidence
    assert res.first_exception.line == line


def test_pips_note_on_packages_it_did_not_check_is_no_failure() -> None:
    log = (
        "Successfully built vllm\n"
        "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed."
        " This behaviour is the source of the following dependency conflicts.\n"
        "INFO 07-07 15:37:53 [api_server.py:1] vLLM API server version 0.11.0\n"
        "INFO:     Application startup complete.\n"
    )
    res = classify_text(log)
    assert res.first_exception is None or "resolver does not currently" not in res.first_exception.line, res.evidence


def test_real_exception_lines_set_in_bold_behind_their_prefix() -> None:
    # 6958: torch's `[rank0]: **KeyError: 'layers.11.mlp.down_proj.weight'**` (the reporter's markdown bold behind
    # the rank prefix); 2877: V0's `ERROR … async_llm_engine.py:63] **RuntimeError: mat1 and mat2 …**`
    for name, said in (("6958.log", "KeyError: 'layers.11.mlp.down_proj.weight'"), ("2877.log", "RuntimeError: mat1")):
        res = classify_text(tuned_text("vllm-issues", name))
        assert res.first_exception is not None and said in res.first_exception.line, (name, res.first_exception)
        assert res.exception_type is not None and res.exception_type.endswith(said.split(":")[0]), res.exception_type


@given(
    prefix=st.sampled_from(
        [
            "[rank0]: ",
            "(EngineCore_DP0 pid=7) ERROR 05-04 22:52:30 [core.py:1138] ",
            "ERROR 09-19 10:53:38 engine.py:63] ",
        ]
    ),
    exc=st.sampled_from(
        ["ValueError: bad rope", "KeyError: 'model.layers.0.weight'", "torch.OutOfMemoryError: CUDA out of memory"]
    ),
)
def test_a_bold_message_behind_a_prefix_reads_as_the_exception_it_is(prefix: str, exc: str) -> None:
    plain = classify_text(f"{prefix}{exc}\n")
    bold = classify_text(f"{prefix}**{exc}**\n")
    assert bold.first_exception is not None and plain.first_exception is not None
    assert (bold.failed_stage, bold.exception_type) == (plain.failed_stage, plain.exception_type)


def test_real_trimmed_traceback_ending_on_its_raise_statement() -> None:
    # 7022: a triager's trim of a traceback (frame lines cut before their paths, no exception line): its last line,
    # the innermost frame's `raise ValueError("Either a revision or a version must be specified.")`, is the root
    res = classify_text(tuned_text("vllm-issues", "7022.log"))
    assert res.first_exception is not None and "Either a revision or a version" in res.first_exception.line
    assert res.exception_type == "ValueError"


_RAISED = st.sampled_from(
    [
        ('raise ValueError("Either a revision or a version must be specified.")', "ValueError"),
        ("raise RuntimeError(f'no kernel for {arch}') from err", "RuntimeError"),
        ("raise torch.cuda.OutOfMemoryError(msg)", "torch.cuda.OutOfMemoryError"),
    ]
)


@given(raised=_RAISED, head=st.booleans(), cut=st.booleans(), fence=st.booleans())
def test_a_traceback_pasted_without_its_exception_line_ends_on_what_it_raised(raised, head, cut, fence) -> None:  # noqa: ANN001
    statement, typ = raised
    frame = '  File "/usr/lib/python3/site-packages/kernels/layer/layer.py", line 76, in __init__'
    if cut:
        frame = 'kernels/layer/layer.py", line 76, in __init__'  # the paste cut the frame before its path's end
    lines = ["INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.11.0"]
    lines += ["Traceback (most recent call last):"] if head else []
    lines += [frame, f"    {statement}"] + (["```"] if fence else [])
    res = classify_text("\n".join(lines) + "\n")
    assert res.first_exception is not None and statement in res.first_exception.line, res.first_exception
    assert res.exception_type == typ


@given(reraise=st.sampled_from(["raise", "raise e", "raise exc from None"]))
def test_a_bare_reraise_names_no_exception(reraise: str) -> None:
    lines = [
        "INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.11.0",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3/site-packages/vllm/engine/llm_engine.py", line 76, in step',
        f"    {reraise}",
    ]
    res = classify_text("\n".join(lines) + "\n")
    assert res.first_exception is None or res.first_exception.line.strip() != reraise, res.first_exception

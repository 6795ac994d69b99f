"""Issue 13, twelfth session: rules made from the tuned part's misses, each in a general form.

- A stack printed whole from the main program's first frame (a script's ``<module>``, or runpy's
  ``_run_module_as_main`` under ``python -m``) is the program failing, never one request's handling,
  even through vLLM's request-side modules (``chat_utils.validate_chat_template`` checking the
  arguments at start-up, an offline script's ``LLM.chat``): the web server runs each request in a
  task of its own, whose stack starts in its dispatch. A client's stack (through the openai library,
  LlamaIndex, LangChain, LiteLLM) stays one request's (3721).

Each on generated logs and on the real logs of the tuned part; each fails without its change.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from k3tui.classify.traces import from_program_start
from tests.support.corpus import issue_text
from tests.test_classify_requests_9 import _tb

SITE = st.sampled_from(
    ["/usr/local/lib/python3.12/dist-packages/vllm", "/opt/venv/lib/python3.10/site-packages/vllm", "/src/vllm/vllm"]
)
ENTRY = st.sampled_from(
    [
        [("<frozen runpy>", "_run_module_as_main"), ("<frozen runpy>", "_run_code")],
        [("/usr/lib/python3.10/runpy.py", "_run_module_as_main"), ("/usr/lib/python3.10/runpy.py", "_run_code")],
        [],  # a script: its own <module> frame is the first
    ]
)
REQUEST_SIDE = st.sampled_from(
    [
        ("entrypoints/chat_utils.py", "validate_chat_template"),
        ("entrypoints/chat_utils.py", "load_chat_template"),
        ("entrypoints/openai/serving_chat.py", "__init__"),
        ("entrypoints/openai/tool_parsers/__init__.py", "import_tool_parser"),
    ]
)
ERROR = st.sampled_from(
    [
        "ValueError: The supplied chat template string (tool_use) appears path-like, but doesn't exist!",
        "KeyError: 'hermes'",
        "FileNotFoundError: [Errno 2] No such file or directory: 'template.jinja'",
    ]
)


@given(site=SITE, entry=ENTRY, side=REQUEST_SIDE, error=ERROR)
def test_the_main_programs_whole_stack_through_request_side_code_is_a_root(
    site: str, entry: list, side: tuple, error: str
) -> None:
    program = [*entry, (f"{site}/entrypoints/openai/api_server.py", "<module>")]
    assert from_program_start(_tb(program, None).splitlines()[1:])
    frames = [*program, (f"{site}/entrypoints/openai/cli_args.py", "validate_parsed_serve_args")]
    frames.append((f"{site}/{side[0]}", side[1]))
    log = "INFO 10-07 16:33:59 [__init__.py:216] Automatically detected platform cuda.\n" + _tb(frames, error)
    r = classify_text(log)
    assert r.first_exception is not None and r.first_exception.line == error, (r.first_exception, r.evidence)
    # the same frames under a client library's call: one request seen from the client
    client = [
        *program[:-1],
        ("/home/me/client.py", "<module>"),
        ("/usr/lib/python3.12/site-packages/openai/_base_client.py", "request"),
    ]
    assert classify_text(_tb(client, error)).first_exception is None
    # and under the web server's dispatch (a task's stack, not the program's): one request
    task = [
        ("/usr/lib/python3.12/site-packages/uvicorn/protocols/http/httptools_impl.py", "run_asgi"),
        (f"{site}/{side[0]}", side[1]),
    ]
    assert classify_text(_tb(task, error)).first_exception is None


def test_python_dash_m_s_first_frame_is_the_program_start() -> None:
    for first in (
        '  File "<frozen runpy>", line 198, in _run_module_as_main',
        '  File "/usr/lib/python3.11/runpy.py", line 196, in _run_module_as_main',
    ):
        assert from_program_start([first, "    return _run_code(code, main_globals, None,"])
    assert not from_program_start(['  File "/x/vllm/v1/engine/core.py", line 1, in run_busy_loop'])
    assert not from_program_start(['  File "/x/myrunpy_helpers.py", line 1, in run'])


def test_real_logs() -> None:
    r = classify_text(issue_text("3721.log"))  # python -m vllm.entrypoints.openai.api_server, a bad --chat-template
    assert r.failed_stage == "config" and r.first_exception is not None
    assert r.first_exception.line.startswith("ValueError: The supplied chat template string (tool_use)")

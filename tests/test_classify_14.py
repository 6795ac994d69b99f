"""Issue 13, fourteenth session: what an excerpt's own words say when nothing in it names a layer.

An excerpt quoted in a thread, a commit message or a chat often holds the root and little else: no
start-up marker, no frame mapped to a layer, no message typical of one. Until now such a root was
taken for a failure while serving ("most of a server's life is serving"). In the tuned corpus that
guess was right for fewer than half of them: most roots quoted without a layer are the engine's
set-up's (graph capture, warm-up, the KV cache's set-up) or the weights' loading. What the excerpt
says around the root does tell: a reporter writes "when I send concurrent requests", "after running
for a while", "during decode", or "during the warm-up", "at start-up", "while loading". So the log's
first lines are read for a server's words and a start-up's (``patterns.toml [wording] serving_talk``,
``startup_talk``, Chinese prose too): a server's words and none of a start-up's say it failed while
serving; otherwise the root is taken for the engine's set-up. Still the weakest evidence (``default``,
confidence low), after every other rule, and the reason names the word it rests on.

Also: a request's images or audio that do not fit its prompt's placeholders (``Attempted to assign
2029 multimodal tokens to 2024 placeholders``) is a request being served (1918, 2854, 3058).

torch's report of a C++ exception it caught and went on from, logged at a warning's level (its
message, ``Exception raised from F at FILE:N (most recent call first):``, ``frame #0: c10::Error::Error(…)``,
as the TCPStore client's ``[W… TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(…): Connection reset
by peer``): the message is a native error's root, taken when nothing else fails (1416, 5011).

Each on generated excerpts and on real logs of the tuned part; each fails without its change.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import issue_text

# roots that no rule places: a bare Python error with no frame of vLLM's mapped to a layer
PLAIN_ROOTS = st.sampled_from(
    [
        "ValueError: too many values to unpack (expected 2)",
        "AssertionError",
        "TypeError: 'NoneType' object is not subscriptable",
        "IndexError: list index out of range",
        "KeyError: 132",
        "RuntimeError: shape '[4, -1, 1]' is invalid for input of size 3",
        "AttributeError: 'MLACommonMetadataBuilder' object has no attribute 'page_size'",
    ]
)
SERVING = st.sampled_from(
    [
        "It crashes as soon as I send {n} concurrent requests to the server:",
        "After running for {n} minutes under load the server dies with:",
        "The error happens during decode, with a batch of {n} prompts:",
        "Every chat completion with an image fails; the scheduler then stops:",
        "When the benchmark sends {n} requests, inference fails with:",
        "服务运行正常，但推理{n}个请求后报错：",
    ]
)
STARTUP = st.sampled_from(
    [
        "The server never comes up: it fails during the CUDA graph capture of batch size {n}:",
        "At start-up, right after the model's weights, it fails with:",
        "It fails in the warm-up of {n} tokens:",
        "With TP={n} the deployment fails while initializing:",
        "启动时报错（TP={n}）：",
    ]
)
NEUTRAL = st.sampled_from(["The error:", "Here is the output ({n} GPUs):", "报错如下（{n}）：", ""])
WRAP = st.sampled_from(["```\n{0}\n```", "{0}", "    {0}"])
PROCESS = st.sampled_from(["", "(EngineCore_DP0 pid=4242) ", "(VllmWorker rank=1 pid=77) "])


def _excerpt(prose: str, root: str, wrap: str, process: str, n: int) -> str:
    quoted = wrap.format(f"{process}{root}")
    return f"{prose.format(n=n)}\n\n{quoted}\n" if prose else f"{quoted}\n"


@given(prose=SERVING, root=PLAIN_ROOTS, wrap=WRAP, process=PROCESS, n=st.integers(2, 512))
def test_an_excerpt_that_talks_of_serving_is_runtime(prose: str, root: str, wrap: str, process: str, n: int) -> None:
    r = classify_text(_excerpt(prose, root, wrap, process, n))
    assert r.first_exception is not None and root.split(":")[0] in r.first_exception.line
    assert r.failed_stage == "runtime", (r.failed_stage, r.evidence.why)
    assert r.evidence.rule == "default" and r.confidence == "low"
    assert "a server's" in r.evidence.why


@given(prose=STARTUP, serving=st.booleans(), root=PLAIN_ROOTS, wrap=WRAP, process=PROCESS, n=st.integers(2, 512))
def test_an_excerpt_that_talks_of_a_start_up_is_the_engines_set_up(
    prose: str, serving: bool, root: str, wrap: str, process: str, n: int
) -> None:
    if serving:  # a start-up's words win over a server's: it never got to serve
        prose = f"{prose} (the first request never came back)"
    r = classify_text(_excerpt(prose, root, wrap, process, n))
    assert r.first_exception is not None and root.split(":")[0] in r.first_exception.line
    assert r.failed_stage == "engine", (r.failed_stage, r.evidence.why)
    assert r.evidence.rule == "default" and r.confidence == "low"


@given(prose=NEUTRAL, root=PLAIN_ROOTS, wrap=WRAP, n=st.integers(2, 512))
def test_an_excerpt_that_says_nothing_is_taken_for_the_engines_set_up(prose: str, root: str, wrap: str, n: int) -> None:
    r = classify_text(_excerpt(prose, root, wrap, "", n))
    assert r.first_exception is not None and root.split(":")[0] in r.first_exception.line
    assert r.failed_stage == "engine", (r.failed_stage, r.evidence.why)
    assert r.evidence.rule == "default" and "nor talks of serving" in r.evidence.why


def test_stronger_evidence_still_wins_over_the_words() -> None:
    """The words decide only what nothing else places: a serving log's start-up line, a frame, a message."""
    frames = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/vllm/model_executor/model_loader/loader.py", line 400, in load_model\n'
        "    model.load_weights(weights)\n"
        "KeyError: 132\n"
    )
    r = classify_text("Every chat request fails after a while:\n" + frames)
    assert r.failed_stage == "weights" and r.evidence.rule == "frames"
    ready = "INFO 05-01 10:00:00 [api_server.py:1000] Starting vLLM API server on http://0.0.0.0:8000\n"
    r = classify_text(ready + "INFO:     Application startup complete.\nAssertionError\n")
    assert r.failed_stage == "runtime" and r.evidence.rule != "default"


def test_real_excerpts_are_placed_by_their_words() -> None:
    # "during Eagle3 full-graph warmup" (an NPU's CI)
    r = classify_text(issue_text("3772.log"))
    assert r.failed_stage == "engine" and "warmup" in r.evidence.why
    # Chinese: "when running inference, vllm errors" (运行推理时)
    r = classify_text(issue_text("2264.log"))
    assert r.failed_stage == "runtime" and "推理" in r.evidence.why
    # Chinese: "after deploying with vllm, every request errors" (请求)
    r = classify_text(issue_text("2253.log"))
    assert r.failed_stage == "runtime"
    # a kv-cache tensor assertion quoted alone, with nothing said around it
    r = classify_text(issue_text("3822.log"))
    assert r.failed_stage == "engine" and r.evidence.rule == "default"


@given(
    got=st.integers(1, 9000),
    extra=st.integers(1, 64),
    eq=st.booleans(),
    prefix=st.sampled_from(["", "[rank0]: ", "ERROR 03-04 17:31:43 engine.py:136] "]),
)
def test_multimodal_tokens_that_do_not_fit_the_placeholders_are_a_request_served(
    got: int, extra: int, eq: bool, prefix: str
) -> None:
    n = f"{got} = {got}" if eq else str(got)
    r = classify_text(f"{prefix}ValueError: Attempted to assign {n} multimodal tokens to {got + extra} placeholders\n")
    assert r.failed_stage == "runtime" and r.evidence.rule == "message"


def test_real_multimodal_placeholder_mismatches_are_runtime() -> None:
    for name in ("1918.log", "2854.log", "3058.log"):
        r = classify_text(issue_text(name))
        assert r.failed_stage == "runtime", name
        assert "multimodal tokens" in r.first_exception.line, name


# --- torch's report of a C++ exception it caught ------------------------------------------------

CPP_MESSAGES = st.sampled_from(
    [
        "[c10d] recvValue failed on SocketImpl(fd=22, addr=[::ffff:10.0.0.5]:58160, remote=[::ffff:10.0.0.1]:58159): Connection reset by peer",
        "[c10d] TCP client failed to connect/validate to host 10.1.2.3:29500 - timed out (try=1, timeout=600000ms)",
        "[c10d] recvValue failed on SocketImpl(fd=83, addr=[::1]:50858, remote=[::1]:50855): failed to recv, got 0 bytes",
    ]
)
GLOG = st.sampled_from(
    ["[W519 18:43:28.514281000 TCPStore.cpp:125] ", "[rank3]:[W111 00:54:10.905768298 TCPStore.cpp:141] "]
)
RAISED = st.sampled_from(
    [
        "Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:682 (most recent call first):",
        "Exception raised from tryConnect at ../torch/csrc/distributed/c10d/socket.cpp:928 (most recent call first):",
    ]
)
FRAMES = (
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f1c in /usr/lib/python3/torch/lib/libc10.so)\n"
    "frame #1: c10d::TCPStore::ping() + 200 (0x116b4e68c in libtorch_cpu.so)\n"
)
INFO = "INFO 05-19 18:43:27 [parallel_state.py:892] world_size=2 rank=0 distributed_init_method=tcp://10.0.0.1:58159\n"


@given(msg=CPP_MESSAGES, glog=GLOG, raised=RAISED, before=st.integers(0, 40))
def test_a_cpp_exception_torch_reported_at_a_warnings_level_is_the_root(
    msg: str, glog: str, raised: str, before: int
) -> None:
    """Nothing else failed (an excerpt, a hang): the message above torch's C++ stack is the root, on its line."""
    log = INFO * before + f"{glog}{msg}\n{raised}\n{FRAMES}"
    r = classify_text(log)
    assert r.first_exception is not None and msg in r.first_exception.line
    assert r.first_exception.line_number == before + 1
    assert r.failed_stage == "engine"  # (the distributed rendezvous's store)


@given(msg=CPP_MESSAGES, glog=GLOG, raised=RAISED)
def test_a_python_root_after_it_still_wins_and_a_message_with_no_failure_is_none(
    msg: str, glog: str, raised: str
) -> None:
    after = "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    r = classify_text(f"{glog}{msg}\n{raised}\n{FRAMES}{after}")
    assert r.first_exception is not None and "illegal memory access" in r.first_exception.line
    r = classify_text(f"{glog}[c10d] the store is being shut down\n{raised}\n{FRAMES}")
    assert r.first_exception is None
    r = classify_text(
        f"{glog}[c10d] TCP client failed to connect to host 10.0.0.1:29500 - retrying (try=0)\n{raised}\n{FRAMES}"
    )
    assert r.first_exception is None  # it tries again: a rendezvous waiting for its peers


def test_real_cpp_exceptions_reported_as_warnings() -> None:
    for name, line in (("1416.log", 5), ("5011.log", 9)):
        r = classify_text(issue_text(name))
        assert r.first_exception is not None and "recvValue failed" in r.first_exception.line, name
        assert r.first_exception.line_number == line and r.failed_stage == "engine", name


# --- a bare "Error:" label over a traceback cut at its start ---------------------------------------


@given(
    label=st.sampled_from(["Error:", "Error message: ", "ERROR:", "Error details:"]),
    path=st.sampled_from(
        ["miniconda3/envs/x/lib/python3.10/site-packages/aphrodite/common/config.py", "vllm/config.py"]
    ),
    func=st.sampled_from(["_verify_load_format", "__init__", "<module>"]),
    quote=st.booleans(),
)
def test_a_cut_frame_after_an_error_label_is_no_message(label: str, path: str, func: str, quote: bool) -> None:
    """The label's next line is a traceback's frame whose start was cut (``…config.py", line 136, in f``):
    not the message; the traceback's exception line is the root (5665)."""
    frame = f'{path}", line 136, in {func}' if not quote else f'  File "/opt/{path}", line 136, in {func}'
    exc = "TypeError: argument of type 'NoneType' is not iterable"
    r = classify_text(f"{label}\n{frame}\n    if 'x' in architectures:\n{exc}\n")
    assert r.first_exception is not None and r.first_exception.line == exc


def test_real_cut_frame_after_an_error_label() -> None:
    r = classify_text(issue_text("5665.log"))
    assert r.first_exception is not None and r.first_exception.line.startswith("TypeError: argument of type")

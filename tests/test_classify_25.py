"""Issue 13, twenty-fifth session: root forms met in fresh logs, and one disagreement of the prefilter.

- An engine core that says a signal reached it (``[shutdown] EngineCore: trigger received signal=SIGTERM``) when
  its client had sent it none (no ``[shutdown] Process manager: send sigterm to process EngineCore`` before it),
  and whose client later notes that it ``exited unexpectedly``, was stopped from outside: the signal's line is the
  root, not the client's note. A signal that reaches the core in its start-up is put off until the start-up ends,
  so the stage is where the core died (where its client noted it), not where the signal came. A signal the client
  sent itself (an offline script's end, an operator's stop) stays no kill.
- The workload manager's cancel of a start-up (``*** JOB 2 ON n1 CANCELLED AT 2026-12-06T23:19:57 DUE TO TIME
  LIMIT ***``: a time limit, a preemption, a user's scancel) is the root of the deaths the server reports after
  it (``Worker proc VllmWorker-0 died unexpectedly``, the engine's start-up failure), when their own time is
  within the kill's reach of the cancel's: Slurm relays a job's last lines late, so a death printed long before
  (or after) the cancel may come after its line and stays its own root. A serving job its time limit ended
  stays healthy (real Slurm outputs are labelled so).
- A launch script its shell stopped before the server ran (``…/slurm_script: line 12: HF_TOKEN: unbound
  variable`` under ``set -u``, ``${X:?}``'s ``parameter null or not set``, a bad substitution, a syntax error;
  bash's and dash's forms) is the root, the container's layer, whatever the variable names (an HF token is no
  weights failure).
- A logged exception's message goes on on the next line or not at all: an indented ERROR line of the same
  process after other lines is not its continuation. The prefilter skips the lines in between and a full read
  does not; they disagreed (a latent property failure hypothesis found this session, on the start code too).

Each on generated logs and on a real log of the tuned part; each fails without its change (the guards,
which say what a rule must leave alone, pass either way).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import tuned_text

_SIGNALLED = "s25-sigterm-engine-at-dp-group-leader.log"
_TRIGGER = "[shutdown] EngineCore: trigger received signal=SIGTERM"


def _lines() -> list[str]:
    return tuned_text("vllm-cpu-faults", _SIGNALLED).splitlines()


def test_a_signal_the_client_never_sent_is_the_root_of_its_engine_cores_exit_real_log() -> None:
    """SIGTERM to VLLM::EngineCore at its 'DP group leader' line: the core finishes its start-up, shuts down,
    and the API server notes it exited unexpectedly. The root is the core's own word of the signal."""
    got = classify_text(tuned_text("vllm-cpu-faults", _SIGNALLED))
    assert got.first_exception is not None
    assert _TRIGGER in got.first_exception.line
    assert got.failed_stage == "engine"


@given(
    core=st.sampled_from(["EngineCore", "EngineCore_DP0", "EngineCore_DP3"]),
    signal=st.sampled_from(["SIGTERM", "SIGINT"]),
    at=st.floats(0, 1),
)
def test_a_signal_the_client_never_sent_is_the_root_wherever_it_came_in_the_start_up(core, signal, at) -> None:  # noqa: ANN001
    """The same log, the core's line of the signal moved anywhere between the core's first line and its client's
    own sigterm once the core was gone (a signal early or late in the start-up), under another core's name and signal: the same root, and the
    stage where the core died."""
    lines = _lines()
    k = next(i for i, x in enumerate(lines) if _TRIGGER in x)
    trigger = lines.pop(k).replace("EngineCore pid=", f"{core} pid=").replace("SIGTERM", signal)
    first = next(i for i, x in enumerate(lines) if x.startswith("(EngineCore pid="))
    sent = next(i for i, x in enumerate(lines) if "send sigterm to process EngineCore" in x)  # (its own, at the end)
    pos = first + 1 + round(at * (sent - first - 1))
    got = classify_text("\n".join([*lines[:pos], trigger, *lines[pos:]]) + "\n")
    assert got.first_exception is not None
    assert got.first_exception.line == trigger
    assert got.failed_stage == "engine"


def test_a_signal_the_client_sent_itself_is_no_kill() -> None:
    """Guard: the client's own ``send sigterm to process EngineCore`` before the core's word of it: the core
    stopped as asked, and its line is never the root."""
    lines = _lines()
    k = next(i for i, x in enumerate(lines) if _TRIGGER in x)
    sent = "(APIServer pid=18141) INFO 12-07 10:14:58 [utils.py:628] [shutdown] Process manager: send sigterm to process EngineCore"
    got = classify_text("\n".join([*lines[:k], sent, *lines[k:]]) + "\n")
    assert got.first_exception is None or _TRIGGER not in got.first_exception.line


_TIME_LIMIT = "slm-time-limit-startup.log"


def test_a_start_up_the_workload_manager_cancelled_has_that_cancel_as_root_real_log() -> None:
    """Slurm's time limit hit while the engine sized its KV cache: ``*** JOB 2 ON n1 CANCELLED AT … DUE TO TIME
    LIMIT ***``, then the worker's death and the engine's start-up failure, which the kill caused."""
    got = classify_text(tuned_text("vllm-cpu-faults", _TIME_LIMIT))
    assert got.first_exception is not None
    assert "CANCELLED AT" in got.first_exception.line and "JOB 2 ON n1" in got.first_exception.line
    assert got.failed_stage == "engine"


_NODE = st.from_regex(r"[a-z][a-z0-9\-]{0,11}", fullmatch=True)


@given(
    what=st.sampled_from(["JOB", "STEP"]),
    job=st.integers(1, 99_999_999),
    node=_NODE,
    why=st.sampled_from(["", " DUE TO TIME LIMIT", " DUE TO PREEMPTION", " DUE TO NODE FAILURE"]),
    prefix=st.sampled_from(["slurmstepd", "slurmstepd-n1", "slurmstepd-gpu-node-07"]),
)
def test_a_start_up_the_workload_manager_cancelled_has_that_cancel_as_root(what, job, node, why, prefix) -> None:  # noqa: ANN001
    """The same log, its cancel lines as any job or step, node, reason (a user's scancel has none) and
    slurmstepd's name: the first of them is the root, the engine's failure after it its consequence."""
    text = tuned_text("vllm-cpu-faults", _TIME_LIMIT).replace("DUE TO TIME LIMIT", why.strip() or "\0")
    text = text.replace(" \0 ***", " ***").replace("slurmstepd-n1: ", f"{prefix}: ")
    ident = f"{job}.0" if what == "STEP" else str(job)
    text = text.replace("*** JOB 2 ON n1", f"*** {what} {ident} ON {node}")
    got = classify_text(text)
    assert got.first_exception is not None
    assert f"*** {what} {ident} ON {node} CANCELLED AT" in got.first_exception.line
    assert got.failed_stage == "engine"


def test_a_serving_job_the_time_limit_ended_stays_healthy() -> None:
    """Guard: a server that served until its job's time limit (a real Slurm job's output, 4745) is a job that
    ran out its time, as its labeller judged: no root."""
    got = classify_text(tuned_text("vllm-issues", "4745.log"))
    assert got.failed_stage == "none" and got.first_exception is None


_SCRIPT = st.one_of(
    st.just("/var/spool/slurmd/job00042/slurm_script"),
    st.from_regex(r"(?:\./|/opt/k3/|/home/[a-z]{2,8}/)[a-z_]{2,12}\.sh", fullmatch=True),
)
_VAR = st.sampled_from(["HF_TOKEN", "MODEL_PATH", "VLLM_PORT", "CUDA_VISIBLE_DEVICES", "TP_SIZE", "SLURM_JOB_NODELIST"])


@given(
    script=_SCRIPT,
    line=st.integers(1, 400),
    var=_VAR,
    how=st.sampled_from(["bash", "dash"]),
    what=st.sampled_from(["unbound variable", "parameter null or not set", "bad substitution", "syntax"]),
    header=st.booleans(),
)
def test_the_launch_scripts_shell_stopping_it_is_the_containers_root(script, line, var, how, what, header) -> None:  # noqa: ANN001
    """A job or launch script its shell stopped before the server ran (``set -u`` and an unset variable,
    ``${X:?}``, a bad substitution, a syntax error), bash's form (``…: line 12: X: …``) or dash's (``…: 12: X:
    …``): the process never started, the container's layer, whatever the variable names (a token, a model path)."""
    where = f"{script}: line {line}: " if how == "bash" else f"{script}: {line}: "
    if what == "syntax":
        said = where + "syntax error near unexpected token `fi'"
    elif what == "parameter null or not set" and how == "dash":
        said = where + f"{var}: parameter not set"
    else:
        said = where + f"{var}: {what}"
    head = "=== 2026-12-07 10:14:34 job 42 (kimi-k3-serve) on gb300-01, nodes gb300-[01-02]\n" if header else ""
    got = classify_text(head + said + "\n")
    assert got.first_exception is not None and got.first_exception.line == said
    assert got.failed_stage == "container"


def test_the_launch_scripts_shell_stopping_it_is_the_containers_root_real_log() -> None:
    got = classify_text(tuned_text("vllm-cpu-faults", "s25b-slm-set-u-hf-token-unset.log"))
    assert got.first_exception is not None and "HF_TOKEN: unbound variable" in got.first_exception.line
    assert got.failed_stage == "container"


@given(hours=st.integers(1, 48), later=st.booleans())
def test_a_cancel_whose_time_is_far_from_the_death_did_not_cause_it(hours, later) -> None:  # noqa: ANN001
    """Guard: Slurm relays a job's last lines late, so its cancel's line may come before a death it did not cause.
    The cancel's own time, hours before (or after) the death's, says so: the death stays the root."""
    text = tuned_text("vllm-cpu-faults", _TIME_LIMIT)
    day, hour = (7, 23 - hours % 24) if later else (6 - hours // 24, 23 - hours % 24)
    text = text.replace("CANCELLED AT 2026-12-06T23:19:57", f"CANCELLED AT 2026-12-{day:02d}T{hour:02d}:19:57")
    got = classify_text(text)
    assert got.first_exception is not None
    assert "CANCELLED" not in got.first_exception.line


_TB = [
    "(APIServer pid=11) ERROR 11-30 03:44:40 [serving.py:929] Traceback (most recent call last):",
    '(APIServer pid=11) ERROR 11-30 03:44:40 [serving.py:929]   File "/v/async_llm.py", line 767, in generate',
    "(APIServer pid=11) ERROR 11-30 03:44:40 [serving.py:929] vllm.v1.engine.exceptions.EngineDeadError: gone",
]
_FILL = "".join(f"vm:528:528 [0] NCCL INFO Channel {i:02d}/64 : 0\n" for i in range(40))


@given(
    between=st.lists(
        st.sampled_from(
            [
                "(APIServer pid=11) INFO 11-30 03:44:41 [loggers.py:1] Engine 000: Avg prompt throughput",
                "(APIServer pid=11) WARNING 11-30 03:44:41 [api_server.py:9] slow request",
                "(EngineCore pid=12) INFO 11-30 03:44:41 [core.py:1] step",
                "vm:528:528 [0] NCCL INFO Channel 01/64 : 0",
            ]
        ),
        min_size=1,
        max_size=3,
    ),
    later=st.sampled_from(["   (continued detail)", "  more of it", "    x = 1"]),
)
def test_a_logged_exceptions_message_goes_on_only_on_the_next_line_with_or_without_the_prefilter(
    between, later
) -> None:  # noqa: ANN001
    """A logged exception line (every line of its record under an ERROR prefix), other lines (the same process at
    another level, another process, a library's), then an indented ERROR line of the same process: the message
    did not go on there. The prefilter skips the lines in between, a full read does not: both agree (hypothesis
    found them apart on the session's start code)."""
    from k3tui.classify import Classifier

    text = (
        _FILL + "\n".join([*_TB, *between, f"(APIServer pid=11) ERROR 11-30 03:44:42 [serving.py:929]{later}"]) + "\n"
    )
    got = []
    for prefilter in (True, False):
        c = Classifier(prefilter=prefilter)
        c.feed(text)
        got.append(c.finish().to_json())
    assert got[0] == got[1]
    assert got[0]["first_exception"] is not None
    assert not any(later.strip() in x for x in got[0]["first_exception"]["stack"])

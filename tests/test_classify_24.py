"""Issue 13, twenty-fourth session: root forms and stage evidence met in fresh logs.

- libnuma refusing the CPU list a worker binds its threads to (``libnuma: Warning: unparseable cpu description
  `abc'``, ``libnuma: Warning: cpu argument 60-63 is out of range``: vLLM's CPU back-end binding OpenMP threads)
  is the root of the engine's failure to start that follows, though it is only a warning with no traceback of
  its own: the engine core exits and the API server reports the consequence. The device's set-up. Its notice
  ``/sys not mounted or invalid`` is no failure, and a failure of another kind after it is its own root.

Each on generated logs and on a real log of the tuned part; each fails without its change (the guards,
which say what a rule must leave alone, pass either way).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from k3tui.classify import classify_text
from tests.support.corpus import tuned_text

_V = "/usr/local/lib/python3.12/dist-packages/vllm"
_ENGINE = "(EngineCore_0 pid=19740) INFO 12-07 02:30:15 [core.py:74] Initializing a V1 LLM engine (v0.10.1.1)\n"
_API = "(APIServer pid=19711) "


def _consequence(last: str) -> str:
    lines = [
        "Traceback (most recent call last):",
        f'  File "{_V}/entrypoints/cli/serve.py", line 50, in cmd',
        "    uvloop.run(run_server(args))",
        f'  File "{_V}/v1/engine/utils.py", line 691, in wait_for_engine_startup',
        "    raise RuntimeError(",
        last,
    ]
    return "".join(f"{_API}{x}\n" for x in lines)


_CPUS = st.one_of(
    st.from_regex(r"[a-z]{1,6}", fullmatch=True).map(lambda s: f"unparseable cpu description `{s}'"),
    st.tuples(st.integers(16, 512), st.integers(1, 64)).map(
        lambda t: f"cpu argument {t[0]}-{t[0] + t[1]} is out of range"
    ),
    st.integers(2, 64).map(lambda n: f"node argument {n} is out of range"),
)
_FAILED = st.sampled_from(
    [
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
        "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
    ]
)


@given(what=_CPUS, last=_FAILED)
def test_a_libnuma_cpu_list_refused_before_the_engine_failed_to_start(what: str, last: str) -> None:
    res = classify_text(f"{_ENGINE}libnuma: Warning: {what}\n\n{_consequence(last)}")
    assert res.first_exception is not None and res.first_exception.line == f"libnuma: Warning: {what}"
    assert res.failed_stage == "device", res.evidence


@given(last=_FAILED)
def test_libnumas_sys_notice_is_no_root(last: str) -> None:
    """Guard: a container without /sys topology gets this notice on every start; it fails nothing."""
    notice = "libnuma: Warning: /sys not mounted or invalid. Assuming one node: No such file or directory"
    res = classify_text(f"{_ENGINE}{notice}\n{_consequence(last)}")
    assert res.first_exception is not None and "libnuma" not in res.first_exception.line


@given(what=_CPUS)
def test_a_failure_of_another_kind_after_libnumas_warning_is_its_own_root(what: str) -> None:
    """Guard: a model's config rejected after the warning is not the warning's doing."""
    last = "ValueError: Model architectures ['K3ForCausalLM'] are not supported for now."
    res = classify_text(f"{_ENGINE}libnuma: Warning: {what}\n{_consequence(last)}")
    assert res.first_exception is not None and res.first_exception.line.endswith(last)


def test_a_libnuma_cpu_list_refused_on_a_real_log() -> None:
    """vLLM 0.10.1.1's CPU back-end with ``VLLM_CPU_OMP_THREADS_BIND=60-63`` on a 2-core machine."""
    res = classify_text(tuned_text("vllm-cpu-faults", "v010-env-omp-bind-missing-cores.log"))
    assert res.first_exception is not None
    assert res.first_exception.line == "libnuma: Warning: cpu argument 60-63 is out of range"
    assert res.failed_stage == "device", res.evidence

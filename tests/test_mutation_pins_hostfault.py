"""Pins for classify/hostfault.py from issue 22's mutation run (seed 209166193): which fault is the
root when the exception has no time, and what the root record carries."""

from __future__ import annotations

from k3tui.classify.hostfault import root_fault


def _fault(unix: float | None, code: int, **extra) -> dict:  # noqa: ANN003
    f = {"kind": "xid", "gpu": 0, "uuid": "GPU-1", "code": code, "fatal": True, "time": f"t{code}", "unix": unix}
    return f | extra


def test_without_an_exception_time_the_latest_fatal_fault_is_the_root() -> None:
    faults = [("a", _fault(1000.0, 79)), ("b", _fault(3000.0, 48)), ("c", _fault(2000.0, 95))]
    root = root_fault(faults, None)
    assert (root["host"], root["code"], root["seconds_before"]) == ("b", 48, None)


def test_the_root_record_keeps_the_faults_own_words() -> None:
    extra = {
        "pci": "0000:1b:00.0",
        "meaning": "GPU has fallen off the bus",
        "action": "drain the node",
        "line": "NVRM: Xid 79",
    }
    root = root_fault([("gb300-02", _fault(1000.0, 79, **extra))], 1010.0)
    assert {k: root[k] for k in extra} == extra
    assert root["host"] == "gb300-02" and root["seconds_before"] == 10.0 and root["summary"]


def test_the_journal_host_is_read_only_from_a_journald_line() -> None:
    from k3tui.classify.hostfault import _journal_host

    assert _journal_host("Dec 04 10:00:01 gb300-02 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=1") == "gb300-02"
    assert _journal_host("[ 1234.567890] NVRM: Xid (PCI:0000:1b:00): 79, pid=1, GPU has fallen off the bus") == ""
    assert _journal_host("kernel: NVRM: Xid 79") == ""  # no stamp, no host before it


def test_diagnose_events_corrects_each_hosts_fault_time_by_its_own_skew() -> None:
    """A fault on tray b (its clock 200 s ahead) 10 s before an exception seen on tray a is the root:
    b's stamp read raw would put it 190 s AFTER the exception (seed 209166193's 125:4 survivor)."""
    import time

    from k3tui.classify.hostfault import diagnose_events
    from k3tui.events import ExceptionFound, HostConnected, SceneFrozen

    t_exc = time.time() - 3600
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t_exc)) + "Z"
    line = f"{stamp} (EngineCore_DP0 pid=1) ERROR [core.py:1] RuntimeError: CUDA error: unspecified launch failure"
    fault = _fault(t_exc + 200.0 - 10.0, 79)
    events = [
        HostConnected(host="a", clock_skew=0.0),
        HostConnected(host="b", clock_skew=200.0),
        SceneFrozen(host="b", scene={"host_faults": [fault]}),
    ]
    verdict = diagnose_events(events, ExceptionFound(host="a", line=line))
    assert verdict is not None and "b" in verdict.evidence and "79" in verdict.evidence

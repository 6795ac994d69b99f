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
    own = {"kind": "xid", "gpu": 0, "uuid": "GPU-1", "code": 79, "fatal": True, "time": "t79"}
    assert {k: root[k] for k in own} == own  # the fault's identity too (seed 1827031761: `uuid`)
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


# --- second run (seed 1190833428): the diagnosis verdict and the freeze banner -----------------


def _events(faults_by_host: dict[str, list[dict]], exc_host: str | None, t_exc: float | None):  # noqa: ANN202
    import time

    from k3tui.events import ExceptionFound, HostConnected, SceneFrozen

    out: list = [HostConnected(host=h, clock_skew=0.0) for h in faults_by_host]
    out += [SceneFrozen(host=h, scene={"host_faults": fs}) for h, fs in faults_by_host.items()]
    if exc_host is not None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t_exc)) + "Z"
        line = f"{stamp} (EngineCore_DP0 pid=1) ERROR [core.py:1] RuntimeError: CUDA error: unspecified launch failure"
        out.append(ExceptionFound(host=exc_host, line=line, stage="runtime"))
    return out


def test_a_host_fault_before_the_exception_is_a_failed_check_on_its_host() -> None:
    import time

    from k3tui.classify.hostfault import CHECK, RUNG, diagnose_events

    t = time.time() - 3600
    events = _events({"a": [], "b": [_fault(t - 10.0, 79)]}, "a", t)
    verdict = diagnose_events(events[:-1], events[-1])
    assert verdict is not None
    assert (verdict.host, verdict.rung, verdict.check, verdict.verdict) == ("b", RUNG, CHECK, "FAIL")


def test_the_banner_names_a_scenes_own_fault_as_the_root_of_the_exception() -> None:
    """A fault in a frozen scene's ``host_faults`` (not a domain fault) 10 s before the exception."""
    import time

    from k3tui.classify.hostfault import hardware_banner, headline
    from k3tui.state import fold

    t = time.time() - 3600
    state = fold(_events({"gb300-02": [_fault(t - 10.0, 79)]}, "gb300-02", t))
    hw = hardware_banner(state)
    assert hw is not None and (hw["kind"], hw["host"], hw["fault"]["code"]) == ("root", "gb300-02", 79)
    assert "gb300-02" in hw["next"] and "before any further step" in hw["next"]
    lines = headline(state)
    assert len(lines) == 2 and lines[0].startswith("root: host fault") and lines[1].startswith("next: ")


def test_without_an_exception_a_fatal_fault_stops_the_ladder_in_order() -> None:
    """Sorted: a fault with a GPU before one without; among them, one that says a daemon is down
    (what the others may follow from) first; a fault that is not fatal never."""
    from k3tui.classify.hostfault import hardware_banner, headline
    from k3tui.state import fold

    nogpu = _fault(2000.0, 0, gpu=None, kind="fabric", meaning="the fabric manager daemon is not running")
    daemon = _fault(2000.0, 1, meaning="the persistence daemon is gone")
    gpu = _fault(1000.0, 79, meaning="GPU has fallen off the bus")
    benign = _fault(3000.0, 13, fatal=False, meaning="the daemon is fine")
    for faults, want in (
        ([nogpu, gpu, benign], 79),
        ([benign, gpu, nogpu], 79),
        ([gpu, daemon], 1),
        ([daemon, gpu], 1),
    ):
        state = fold(_events({"gb300-01": faults}, None, None))
        hw = hardware_banner(state)
        assert hw is not None and (hw["kind"], hw["fault"]["code"]) == ("stop", want), faults
        assert f"Xid {want} " in hw["summary"]  # the summary is the chosen fault's (seed 1827031761, 184:86)
        assert headline(state)[0].startswith("hardware stop: ")


def test_only_fatal_faults_stop_the_ladder() -> None:
    from k3tui.classify.hostfault import hardware_banner, headline
    from k3tui.state import fold

    state = fold(_events({"gb300-01": [_fault(1000.0, 13, fatal=False)]}, None, None))
    assert hardware_banner(state) is None and headline(state) == []


def test_a_host_without_a_stamp_before_it_is_not_read_from_a_kernel_line() -> None:
    """Seed 1827031761, 100:46: ``HOST kernel: …`` with no stamp in front is not journald's form."""
    from k3tui.classify.hostfault import _journal_host

    assert _journal_host("gb300-02 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=1") == ""
    assert _journal_host("Dec 04 10:00:01 gb300-02 kernel: NVRM: Xid (PCI:0000:1b:00): 79") == "gb300-02"


def test_a_recorded_diagnosis_verdict_is_found_by_its_recorded_names() -> None:
    """Seed 1827031761, 110:27: session files written by earlier versions name the check
    ``diagnosis`` / ``host-fault``; a replay must still find it (the names are a file format)."""
    from k3tui.classify.hostfault import root_of
    from k3tui.events import CheckVerdict
    from k3tui.state import fold

    recorded = CheckVerdict(host="gb300-02", rung="diagnosis", check="host-fault", verdict="FAIL", evidence="root: …")
    found = root_of(fold([recorded]).checks)
    assert found is not None and found.verdict == "FAIL" and found.host == "gb300-02"


def test_a_tray_in_another_nvlink_domain_stops_the_ladder_with_its_own_name() -> None:
    """Seed 1827031761, 168:4 and 184:86: the banner also weighs the domain across hosts (no host's
    scene lists it as a fault) and names the tray itself, not the fault record."""
    from k3tui.classify.hostfault import hardware_banner
    from k3tui.events import HostConnected, SceneFrozen
    from k3tui.state import fold

    def gpus(cluster: str) -> list[dict]:
        return [{"index": i, "fabric": {"cluster_uuid": cluster, "clique_id": "1"}} for i in range(4)]

    events = [
        HostConnected(host="gb300-01", clock_skew=0.0),
        HostConnected(host="gb300-02", clock_skew=0.0),
        SceneFrozen(host="gb300-01", scene={"gpus": gpus("A"), "host_faults": []}),
        SceneFrozen(host="gb300-02", scene={"gpus": gpus("B"), "host_faults": []}),
    ]
    hw = hardware_banner(fold(events))
    assert hw is not None and (hw["kind"], hw["host"]) == ("stop", "gb300-02")
    assert hw["fault"]["kind"] == "fabric" and "gb300-02" in hw["next"]
    assert "gb300-02" in hw["summary"] and "another NVLink domain" in hw["summary"]  # the fault's own words


def test_a_fleet_freeze_finds_the_root_among_its_scenes() -> None:
    """Seed 1827031761, 192-193: ``root_for_scenes`` (the fleet freeze, the report) reads each frozen
    Scene's own host faults: the fault 10 s before the exception, on the tray that had it."""
    from k3tui.classify.hostfault import root_for_scenes
    from k3tui.scene.model import Scene

    scenes = [
        Scene(alias="gb300-01", host_faults=[]),
        Scene(alias="gb300-02", host_faults=[_fault(1000.0, 79), _fault(5000.0, 48)]),
    ]
    root = root_for_scenes(scenes, 1010.0, {"gb300-01": 0.0, "gb300-02": 0.0})
    assert root is not None and (root["host"], root["code"], root["seconds_before"]) == ("gb300-02", 79, 10.0)
    assert root_for_scenes([Scene(alias="gb300-01")], 1010.0, {}) is None


def test_seconds_before_is_rounded_to_the_millisecond() -> None:
    """Seed 678863054, 76:43: the gap shown in banners and reports is in ms, not finer."""
    root = root_fault([("gb300-02", _fault(1000.0, 79))], 1010.1234567)
    assert root["seconds_before"] == 10.123


def test_the_stop_banner_names_the_host_of_the_fault_it_chose() -> None:
    """Seed 678863054, 184:99: with fatal faults on two trays, the summary names the chosen one's tray."""
    from k3tui.classify.hostfault import hardware_banner
    from k3tui.state import fold

    nogpu = _fault(2000.0, 0, gpu=None, kind="fabric", meaning="the fabric manager daemon is not running")
    state = fold(_events({"gb300-01": [_fault(1000.0, 79)], "gb300-02": [nogpu]}, None, None))
    hw = hardware_banner(state)
    assert hw is not None and hw["host"] == "gb300-01" and hw["summary"].startswith("gb300-01 GPU 0: Xid 79")
    state = fold(_events({"gb300-02": [nogpu], "gb300-01": [_fault(1000.0, 79)]}, None, None))
    assert hardware_banner(state)["summary"].startswith("gb300-01 GPU 0: Xid 79")

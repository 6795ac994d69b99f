"""SessionState is a fold: live and replay render the same thing, a checkpoint plus the rest
equals the whole fold, no event (known, unknown or odd) can break it, and memory is bounded."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from k3tui import events as ev
from k3tui.state import GPU_HISTORY, LOG_TAIL, SessionState, fold, reduce
from tests.test_events import ALL_EVENTS

_ANY = ALL_EVENTS | st.builds(ev.Opaque, kind=st.text(max_size=8), t=st.floats(allow_nan=True), data=st.just({"x": 1}))


@settings(max_examples=200, deadline=None)
@given(st.lists(_ANY, max_size=30), st.integers(0, 30))
def test_checkpoint_plus_rest_equals_the_whole_fold(events, cut):
    whole = fold(events)
    cp = fold(events[:cut]).snapshot()
    assert fold(events[cut:], cp) == whole
    assert whole.events == len(events)


def test_snapshot_is_independent():
    s = fold([ev.Note(t=1.0, text="a")])
    cp = s.snapshot()
    reduce(s, ev.Note(t=2.0, text="b"))
    assert len(cp.notes) == 1 and len(s.notes) == 2


def test_first_exception_is_the_first_and_stages_follow_runs():
    events = [
        ev.RunStarted(t=1.0, run="r1", command="vllm serve", rung="baseline"),
        ev.StageReached(t=2.0, run="r1", stage="engine", line=10),
        ev.ExceptionFound(t=3.0, run="r1", stage="engine", line="NCCL error"),
        ev.ExceptionFound(t=4.0, run="r1", stage="engine", line="EngineDeadError"),
        ev.RunEnded(t=5.0, run="r1", status=1, reason="exited"),
    ]
    s = fold(events)
    assert s.first_exception.line == "NCCL error" and s.runs["r1"].exception.line == "NCCL error"
    assert s.runs["r1"].stage == "engine" and s.runs["r1"].status == 1 and s.current_run == "r1"


def test_rungs_hosts_and_checks():
    s = fold(
        [
            ev.HostConnected(t=0.1, host="gb300-01", address="10.0.0.1", simulated=True),
            ev.RungEntered(t=1.0, rung="minimal"),
            ev.CheckVerdict(t=1.5, rung="minimal", check="driver", verdict="FAIL", evidence="580 < 590"),
            ev.RungLeft(t=2.0, rung="minimal", verdict="reproduced", reproduced=3, repeats=3),
            ev.HostDisconnected(t=3.0, host="gb300-01", reason="reset"),
            ev.HostReconnected(t=4.0, host="gb300-01", attempt=1),
        ]
    )
    assert s.rungs["minimal"].state == "done" and s.rungs["minimal"].reproduced == 3 and s.current_rung == ""
    assert s.checks[("minimal", "driver")].verdict == "FAIL"
    h = s.hosts["gb300-01"]
    assert h.connected and h.reconnects == 1 and s.simulated


def test_memory_is_bounded_under_a_flood():
    s = SessionState()
    for i in range(LOG_TAIL * 3):
        reduce(s, ev.Output(t=float(i), id="c", text=f"line {i}\nmore\n"))
        reduce(s, ev.GpuSample(t=float(i), gpus=[ev.GpuMem(index=0, used_mib=float(i))]))
    assert len(s.log_tail) == LOG_TAIL and s.log_tail[-1] == ("c", "more")
    assert len(s.gpu[("", 0)]) == GPU_HISTORY and s.output_lines == LOG_TAIL * 6


def test_time_never_goes_backwards_in_the_state():
    s = fold([ev.Note(t=5.0), ev.Note(t=2.0), ev.Note(t=float("nan"))])
    assert s.t == 5.0


def test_each_host_keeps_its_recorded_role_and_an_old_recording_has_none():
    s = fold(
        [
            ev.HostConnected(t=1.0, host="tray01", address="10.0.0.1:22", role="head"),
            ev.HostConnected(t=1.1, host="tray02", address="10.0.0.2:22", role="worker"),
            ev.HostDisconnected(t=2.0, host="tray02"),
            ev.HostReconnected(t=3.0, host="tray02"),
            ev.HostConnected(t=4.0, host="tray02", address="10.0.0.2:22"),  # says nothing of its role
            ev.HostConnected(t=5.0, host="old"),
        ]
    )
    assert {a: h.role for a, h in s.hosts.items()} == {"tray01": "head", "tray02": "worker", "old": ""}
    assert [s.label_of(a) for a in ("tray01", "tray02", "old", "never-seen")] == [
        "tray01 · head",
        "tray02 · worker",
        "old",
        "never-seen",
    ]
    assert s.hosts["tray01"].label == "tray01 · head"
    assert fold([ev.HostConnected(t=1.0, host="h", role="head")]).snapshot().hosts["h"].role == "head"

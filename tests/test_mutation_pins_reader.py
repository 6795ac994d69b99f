"""Reader behaviours a mutation run found unpinned (issue 22): a damaged ``.idx`` sidecar must
never make a seek by time skip events, and a whitespace-only unterminated last line (what a
crash mid-write can leave) is tolerated, strictly too, without losing an event."""

from __future__ import annotations

import random
from itertools import count
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3tui import reader, recording
from k3tui.reader import open_recording, read_all
from tests.test_reader import make

_FIXTURE_OK = [HealthCheck.function_scoped_fixture]
_n = count()


@pytest.fixture
def small_index(monkeypatch):
    """Index points every 7 events, so short recordings have several."""
    monkeypatch.setattr(recording, "INDEX_EVERY", 7)
    monkeypatch.setattr(reader, "INDEX_EVERY", 7)


def _rows(side: Path) -> tuple[list[list[bytes]], list[bytes]]:
    lines = side.read_bytes().splitlines()
    return [ln.split() for ln in lines if not ln.startswith(b"seal ")], [ln for ln in lines if ln.startswith(b"seal ")]


def _write(side: Path, rows: list[list[bytes]], seals: list[bytes]) -> None:
    side.write_bytes(b"".join(b" ".join(r) + b"\n" for r in rows) + b"".join(s + b"\n" for s in seals))


@settings(max_examples=30, deadline=None, suppress_health_check=_FIXTURE_OK)
@given(
    times=st.lists(st.floats(0.001, 100, allow_nan=False), min_size=12, max_size=60),
    seed=st.integers(0, 2**32 - 1),
    damage=st.sampled_from(["max_before_low", "max_before_first", "max_before_falls"]),
)
def test_a_damaged_max_before_column_never_skips_events(tmp_path, small_index, times, seed, damage):
    """Lower the ``max_before`` column of the recorder's own sidecar: the seek still equals the filter."""
    rnd = random.Random(seed)
    p = tmp_path / f"d{next(_n)}.k3rec"
    events = make(p, len(times), times)
    side = Path(str(p) + ".idx")
    rows, seals = _rows(side)
    if len(rows) < 2:
        return
    k = rnd.randrange(1, len(rows))
    if damage == "max_before_low":
        rows[k][3] = b"%r" % (min(times) - 1.0)
    elif damage == "max_before_first":
        rows[0][3] = b"%r" % 1000.0
    else:
        for r in rows[k:]:
            r[3] = b"-inf"
    _write(side, rows, seals)
    rec = open_recording(p)
    for t in [*rnd.sample(times, min(5, len(times))), max(times), min(times)]:
        assert list(rec.events_from_time(t)) == [e for e in events if e.t >= t]


def test_a_sidecar_whose_first_point_lies_about_its_time_is_rebuilt(tmp_path, small_index):
    """The first point names event 0 at the header's end; a wrong time there is damage, not truth."""
    times = [float(i) for i in range(1, 40)]
    p = tmp_path / "first.k3rec"
    events = make(p, len(times), times)
    side = Path(str(p) + ".idx")
    rows, seals = _rows(side)
    rows[0][2] = b"77.0"
    _write(side, rows, seals)
    rec = open_recording(p)
    assert rec.index().times[0] == events[0].t
    for t in (1.0, 20.0, 39.0):
        assert list(rec.events_from_time(t)) == [e for e in events if e.t >= t]


@settings(max_examples=20, deadline=None, suppress_health_check=_FIXTURE_OK)
@given(tail=st.text(alphabet=" \t\r\x0b\x0c", min_size=1, max_size=40), n=st.integers(1, 12))
def test_a_whitespace_only_unterminated_last_line_loses_nothing(tmp_path, tail, n):
    p = tmp_path / f"w{next(_n)}.k3rec"
    events = make(p, n)
    with open(p, "ab") as fh:
        fh.write(tail.encode())
    assert read_all(p, strict=True)[1] == events
    assert list(open_recording(p).events_from_time(0.0)) == events

"""The headless replay engine: seeks agree with a full fold, markers, search, corrupt lines."""

from __future__ import annotations

import random
import time

import pytest

from k3tui.reader import read_all
from k3tui.replay import Replay
from k3tui.state import fold

from .ui_recordings import ROOT, write_large, write_session


def _same(a, b) -> None:
    assert a.events == b.events
    assert a.t == b.t
    assert list(a.log_tail) == list(b.log_tail)
    assert a.first_exception == b.first_exception
    assert {k: (r.state, r.verdict) for k, r in a.rungs.items()} == {
        k: (r.state, r.verdict) for k, r in b.rungs.items()
    }
    assert {k: list(v) for k, v in a.gpu.items()} == {k: list(v) for k, v in b.gpu.items()}
    assert [s.reason for s in a.scenes] == [s.reason for s in b.scenes]


@pytest.fixture
def session(tmp_path, shared):
    return write_session(tmp_path / "s.k3rec", shared)


def test_seek_matches_full_fold_everywhere(session):
    _, events = read_all(session)
    rp = Replay(session, checkpoint_every=37)
    assert rp.count == len(events)
    order = list(range(0, rp.count + 1, 7)) + [rp.count, 0, 5, rp.count - 1]
    random.Random(1).shuffle(order)
    for n in order:
        rp.seek(n)
        assert rp.position == n
        _same(rp.state, fold(events[:n]))


def test_step_and_advance(session):
    _, events = read_all(session)
    rp = Replay(session)
    got = rp.step(3)
    assert got == events[:3]
    assert rp.step(-1) == [] and rp.position == 2
    applied = rp.advance_to(50.0)
    assert all(e.t <= 50.0 for e in applied)
    assert rp.next_time() > 50.0
    _same(rp.state, fold(e for e in events if e.t <= 50.0))


def test_markers_and_navigation(session):
    rp = Replay(session)
    kinds = {m.kind for m in rp.markers}
    assert {"rung_entered", "rung_left", "stage_reached", "exception_found", "scene_frozen", "note"} <= kinds
    exc = next(m for m in rp.markers if m.kind == "exception_found")
    rp.goto_marker(exc)
    assert rp.state.first_exception is not None and ROOT in rp.state.first_exception.line
    nxt = rp.next_marker()
    assert nxt.index > exc.index and nxt.kind == "scene_frozen"
    prev = rp.prev_marker()
    assert prev.index < exc.index
    rp.seek(0)
    assert rp.prev_marker() is None
    assert rp.next_marker() == rp.markers[0]


def test_search_forward_backward(session):
    rp = Replay(session)
    i = rp.search("no available memory")
    assert i is not None
    assert (
        "no available memory"
        in rp.event_at(i).__getattribute__("text" if hasattr(rp.event_at(i), "text") else "line").lower()
    )
    rp.seek(i + 1)
    j = rp.search("NO AVAILABLE memory")
    assert j is not None and j > i
    rp.seek(rp.count)
    last = rp.search("no available memory", forward=False)
    assert last is not None and last >= j
    assert rp.search("definitely-not-in-this-log") is None
    # queries with JSON-escaped characters still match (no raw prefilter for them)
    assert rp.search('"', start=0) is not None


def test_corrupt_line_is_skipped_and_reported(session):
    lines = session.read_bytes().split(b"\n")
    lines[10] = b'{"kind":"output","t":1.0,"te'  # damaged in the middle
    session.write_bytes(b"\n".join(lines))
    rp = Replay(session, checkpoint_every=5)
    assert any("corrupt" in p.message for p in rp.problems)
    _, events = read_all(session)
    for n in (0, 9, 10, 11, 30, rp.count):
        rp.seek(n)
        _same(rp.state, fold(events[:n]))


def test_many_seeks_on_a_large_recording_stay_fast(tmp_path):
    path = write_large(tmp_path / "big.k3rec", 60_000)
    rp = Replay(path)
    _, events = read_all(path)
    rnd = random.Random(7)
    targets = [rnd.randrange(rp.count + 1) for _ in range(200)]
    start = time.perf_counter()
    for n in targets:
        rp.seek(n)
    per_seek = (time.perf_counter() - start) / len(targets)
    # a checkpointed seek folds at most 2,000 events; a full refold would fold 30,000 on average
    assert per_seek < 0.25, per_seek
    for n in targets[:5]:
        rp.seek(n)
        _same(rp.state, fold(events[:n]))
    m = rp.markers[3]
    rp.goto_marker(m)
    assert rp.state.markers[-1].label == m.label.removeprefix("marker: ")
    assert rp.search("needle1233", start=0) == 1233

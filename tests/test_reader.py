"""The reader: clear errors for files that are not recordings, tolerance for what a crash leaves,
hostile files never raise anything but RecordingError, and seeking equals the filtered full read."""

from __future__ import annotations

import os
import random
import stat
from itertools import count
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3tui import events as ev
from k3tui import reader, recording
from k3tui.errors import CorruptLine, NewerSchema, NotARecording, RecordingError
from k3tui.reader import open_recording, read_all, verify
from k3tui.recording import Recorder
from k3tui.redact import Redactor

_n = count()


def make(path: Path, n: int = 50, times: list[float] | None = None) -> list[ev.AnyEvent]:
    with Recorder(path, ev.Header(host="gb300-01"), redactor=Redactor()) as rec:
        for i in range(n):
            t = times[i] if times else None
            e = ev.Output(id="c1", text=f"line {i}\n") if i % 5 else ev.StageReached(run="r", stage="engine", line=i)
            rec.emit(msgspec.structs.replace(e, t=t) if t is not None else e)
    return read_all(path, strict=True)[1]


# --- files that are not recordings ---------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(RecordingError, match="no such file"):
        open_recording(tmp_path / "nope.k3rec")


def test_directory(tmp_path):
    with pytest.raises(RecordingError, match="is a directory"):
        open_recording(tmp_path)


def test_empty_file(tmp_path):
    (tmp_path / "e.k3rec").write_bytes(b"")
    with pytest.raises(NotARecording, match="is empty"):
        open_recording(tmp_path / "e.k3rec")


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (random.Random(4096).randbytes(4096), "not a k3rec"),  # (fixed: every xdist worker collects the same id)
        (b"\x1b[2J\x1b]0;pwned\x07hello\n", "not a k3rec"),
        (b'{"format":"asciicast","version":2}\n', "header format is 'asciicast'"),
        (b"[1,2,3]\n", "header format is list"),
        (b'{"format":"k3rec"}\n', "no schema version"),
        (b'{"format":"k3rec","version":"1"}\n', "no schema version"),
        (b'{"format":"k3rec","version":1,"session_id":42}\n', "invalid header"),
        (b'{"format":"k3rec","version":1,"sess', "header line is incomplete"),
        (b"[" * 100_000 + b"\n", "not a k3rec"),
        (b"x" * (2 * 1024 * 1024), "no header line"),
    ],
)
def test_not_a_recording(tmp_path, content, match):
    p = tmp_path / "bad.k3rec"
    p.write_bytes(content)
    with pytest.raises(NotARecording, match=match):
        open_recording(p)


def test_newer_schema(tmp_path):
    p = tmp_path / "new.k3rec"
    p.write_bytes(b'{"format":"k3rec","version":99}\n')
    with pytest.raises(NewerSchema, match="schema 99.*upgrade k3tui"):
        open_recording(p)


def test_fifo_is_refused_instead_of_blocking(tmp_path):
    p = tmp_path / "fifo"
    os.mkfifo(p)
    with pytest.raises(RecordingError, match="not a regular file"):
        open_recording(p)


def test_device_is_refused():
    with pytest.raises(RecordingError, match="not a regular file"):
        open_recording("/dev/zero")


def test_permission_denied_for_real(tmp_path):
    """Root ignores file modes, so drop to an unprivileged euid for the duration of the check."""
    p = tmp_path / "secret.k3rec"
    make(p, 3)
    p.chmod(0)
    if os.geteuid() != 0:
        with pytest.raises(RecordingError, match="permission denied"):
            open_recording(p)
        return
    os.seteuid(65534)
    try:
        with pytest.raises(RecordingError, match="permission denied"):
            open_recording(p)
    finally:
        os.seteuid(0)


# --- what a crash leaves, and damage --------------------------------------------------------


def test_truncated_last_line_is_skipped_and_reported(tmp_path):
    p = tmp_path / "t.k3rec"
    events = make(p, 20)
    data = p.read_bytes()
    p.write_bytes(data[: len(data) - 30])  # into the closing seal
    rec, back = read_all(p)
    assert back == events
    assert len(rec.problems) == 1 and rec.problems[0].truncated and rec.problems[0].line_number == 22
    assert "truncated" in rec.problems[0].message


def test_last_line_without_newline_but_complete_is_kept(tmp_path):
    p = tmp_path / "t.k3rec"
    events = make(p, 5)
    p.write_bytes(p.read_bytes()[:-1])
    rec, back = read_all(p)
    assert back == events and rec.problems == []


def test_corrupt_middle_line_is_named_by_number(tmp_path):
    p = tmp_path / "c.k3rec"
    events = make(p, 10)
    lines = p.read_bytes().split(b"\n")
    lines[6] = b'{"kind":"output","t":"not a number"}'
    p.write_bytes(b"\n".join(lines))
    with pytest.raises(CorruptLine, match="line 7 is corrupt") as info:
        read_all(p, strict=True)
    assert info.value.line_number == 7
    rec, back = read_all(p)
    assert back == events[:5] + events[6:]
    assert [pr.line_number for pr in rec.problems if not pr.tampered] == [7]
    assert rec.tampered is not None and rec.tampered.line_number == 7  # the reader checked the chain as it read


@pytest.mark.parametrize(
    "bad",
    [
        b"\x00\xff\xfe garbage \x80",
        b'{"kind":"output","text":' + b"[" * 50_000 + b"]" * 50_000 + b"}",
        b'{"kind":"mystery","t":' + b"9" * 400 + b"}",
        b'{"kind":"mystery","t":1e999}',
        b'{"kind":"mystery","t":"soon"}',
        b'{"kind":"mystery","t":1,"host":["a"]}',
        b'{"kind":42}',
        b'{"kind":"output","t":1,"text":{"not":"a string"}}',
        b'"just a string"',
        b"null",
        b'{"kind":"output","t":1,"text":"\\ud800"}',
        b"\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J",
    ],
)
def test_hostile_lines_are_skipped_with_their_number(tmp_path, bad):
    p = tmp_path / "h.k3rec"
    events = make(p, 4)
    lines = p.read_bytes().split(b"\n")
    lines.insert(3, bad)
    p.write_bytes(b"\n".join(lines))
    rec, back = read_all(p)
    assert [pr.line_number for pr in rec.problems if not pr.tampered] == [4]
    assert rec.tampered is not None and rec.tampered.line_number == 4 and not rec.integrity.ok
    assert back == events
    with pytest.raises(CorruptLine):
        read_all(p, strict=True)


def test_escape_sequences_are_kept_as_recorded(tmp_path):
    p = tmp_path / "esc.k3rec"
    text = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b[31mred\x1b[0m\n"
    with Recorder(p, redactor=Redactor()) as rec:
        rec.emit(ev.Output(id="c", text=text))
    assert read_all(p, strict=True)[1][0].text == text  # neutralised at display time, not on disk


def test_a_line_longer_than_the_cap_is_skipped_not_loaded(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_LINE", 10_000)
    monkeypatch.setattr(reader, "CHUNK", 4096)
    p = tmp_path / "long.k3rec"
    events = make(p, 5)
    lines = p.read_bytes().split(b"\n")
    lines.insert(2, b'{"kind":"output","text":"' + b"A" * 50_000 + b'"}')
    p.write_bytes(b"\n".join(lines))
    rec, back = read_all(p)
    assert back == events
    shown = [pr for pr in rec.problems if not pr.tampered]
    assert [pr.line_number for pr in shown] == [3] and "longer than" in shown[0].message
    assert not verify(p).ok and verify(p).bad_line == 3


def test_lines_spanning_many_chunks_read_back(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "CHUNK", 7)
    p = tmp_path / "s.k3rec"
    events = make(p, 30)
    assert read_all(p, strict=True)[1] == events
    assert verify(p).ok


# --- fuzz ------------------------------------------------------------------------------------


def _survives(p: Path) -> None:
    """Whatever the bytes, the reader answers with events, problems or one RecordingError."""
    try:
        rec = open_recording(p)
        list(rec.events())
        rec.index()
        list(rec.events_from_number(3))
    except RecordingError as exc:
        assert str(exc) and "\n" not in str(exc)
    try:
        verify(p)
    except RecordingError as exc:
        assert str(exc) and "\n" not in str(exc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=3000))
def test_fuzz_random_bytes(tmp_path, data):
    p = tmp_path / f"f{next(_n)}.k3rec"
    p.write_bytes(data)
    _survives(p)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32), st.integers(1, 8))
def test_fuzz_mutated_recordings(tmp_path, seed, mutations):
    rnd = random.Random(seed)
    p = tmp_path / f"m{next(_n)}.k3rec"
    make(p, 12)
    data = bytearray(p.read_bytes())
    for _ in range(mutations):
        op = rnd.choice(("flip", "cut", "dup", "insert", "delete"))
        i = rnd.randrange(len(data)) if data else 0
        if op == "flip" and data:
            data[i] = rnd.randrange(256)
        elif op == "cut":
            del data[i:]
        elif op == "dup":
            data[i:i] = data[i : i + rnd.randrange(200)]
        elif op == "insert":
            data[i:i] = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 40)))
        elif op == "delete":
            del data[i : i + rnd.randrange(1, 80)]
    p.write_bytes(bytes(data))
    Path(str(p) + ".idx").write_bytes(bytes(rnd.randrange(256) for _ in range(rnd.randrange(100))))
    _survives(p)


# --- seeking -----------------------------------------------------------------------------------


@pytest.fixture
def small_index(monkeypatch):
    monkeypatch.setattr(recording, "INDEX_EVERY", 7)
    monkeypatch.setattr(reader, "INDEX_EVERY", 7)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    times=st.lists(st.floats(0.001, 100, allow_nan=False), min_size=1, max_size=60),
    probes=st.lists(st.floats(-1, 101, allow_nan=False), min_size=1, max_size=5),
    sidecar=st.sampled_from(["recorder", "missing", "garbage", "stale"]),
)
def test_seek_equals_the_filtered_full_read(tmp_path, small_index, times, probes, sidecar):
    """Even with a clock that jumps backwards, and whatever state the .idx is in."""
    p = tmp_path / f"s{next(_n)}.k3rec"
    events = make(p, len(times), times)
    side = Path(str(p) + ".idx")
    if sidecar == "missing":
        side.unlink()
    elif sidecar == "garbage":
        side.write_bytes(b"0 1 2\nnot numbers\n")
    elif sidecar == "stale":
        side.write_bytes(b"0 %d 0.0 -inf\n5 %d 3.0 3.0\n" % (open_recording(p).header_size, 999))
    rec = open_recording(p)
    for t in probes + times[:3]:
        assert list(rec.events_from_time(t)) == [e for e in events if e.t >= t]
    for k in {0, 1, 6, 7, 8, len(events) - 1, len(events), len(events) + 5}:
        assert list(rec.events_from_number(k)) == events[k:]


def test_index_covers_a_tail_the_sidecar_missed(tmp_path, small_index):
    p = tmp_path / "tail.k3rec"
    events = make(p, 100)
    side = Path(str(p) + ".idx")
    side.write_bytes(b"".join(side.read_bytes().splitlines(keepends=True)[:2]))
    rec = open_recording(p)
    idx = rec.index()
    assert idx.numbers[-1] >= 93, "the tail was indexed"
    assert list(rec.events_from_number(95)) == events[95:]


def test_index_is_cached_and_refreshed_when_the_file_grows(tmp_path):
    p = tmp_path / "g.k3rec"
    make(p, 10)
    rec = open_recording(p)
    first = rec.index()
    assert rec.index() is first
    with open(p, "ab") as fh:
        fh.write(b'{"kind":"note","t":99.0,"text":"appended"}\n')
    assert rec.index() is not first
    assert [e.text for e in rec.events_from_time(50)] == ["appended"]


def test_index_of_a_read_only_directory_lives_in_memory(tmp_path):
    p = tmp_path / "ro" / "r.k3rec"
    p.parent.mkdir()
    events = make(p, 20)
    Path(str(p) + ".idx").unlink()
    p.parent.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        assert list(open_recording(p).events_from_number(10)) == events[10:]
    finally:
        p.parent.chmod(0o755)


def test_seek_on_a_damaged_file_matches_the_tolerant_full_read(tmp_path, small_index):
    p = tmp_path / "d.k3rec"
    make(p, 40)
    lines = p.read_bytes().split(b"\n")
    rnd = random.Random(3)
    for i in rnd.sample(range(2, 40), 4):
        lines[i] = b"garbage"
    p.write_bytes(b"\n".join(lines))
    Path(str(p) + ".idx").unlink()
    _, full = read_all(p)
    rec = open_recording(p)
    for t in (0.0, full[10].t, full[-1].t):
        assert list(rec.events_from_time(t)) == [e for e in full if e.t >= t]

"""The asciicast export: valid v2 read back by the real ``asciinema`` 2.x, monotonic, marked, harmless."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from k3tui import events as ev
from k3tui.package import export_session
from k3tui.reader import read_all
from k3tui.recording import Recorder
from k3tui.redact import Redactor

from .test_export import FAIL_LOG, make_session, members

ASCIINEMA = Path(sys.executable).with_name("asciinema")
SGR = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def hostile_session(tmp_path: Path, shared: Path) -> Path:
    return make_session(tmp_path / "s.k3rec", shared, hostile=True)


@pytest.fixture
def cast(hostile_session: Path) -> Path:
    return export_session(hostile_session, cast_only=True)


def _lines(cast: Path) -> tuple[dict, list[list]]:
    text = cast.read_text(encoding="utf-8")
    assert text.endswith("\n") and "\n\n" not in text  # asciinema stops reading at a blank line
    first, *rest = text.splitlines()
    return json.loads(first), [json.loads(x) for x in rest]


def test_header_and_events_are_asciicast_v2(cast: Path, hostile_session: Path) -> None:
    header, events = _lines(cast)
    rec, _ = read_all(hostile_session)
    assert header["version"] == 2
    assert isinstance(header["width"], int) and isinstance(header["height"], int)
    assert header["timestamp"] == int(rec.header.started)
    assert rec.header.session_id in header["title"] and "gb300-01" in header["title"]
    times = [e[0] for e in events]
    assert times == sorted(times) and times[0] >= 0
    for e in events:
        assert len(e) == 3 and isinstance(e[0], (int, float)) and e[1] in ("o", "m") and isinstance(e[2], str)


def test_markers_at_every_rung_stage_exception_freeze_and_note(cast: Path, hostile_session: Path) -> None:
    _, events = _lines(cast)
    _, recorded = read_all(hostile_session)
    expected = [x for x in recorded if ev.kind_of(x) in ev.MARKER_KINDS]
    marks = [e for e in events if e[1] == "m"]
    assert len(marks) == len(expected) >= 15
    assert [m[0] for m in marks] == [x.t for x in expected]  # at the times they happened
    labels = "\n".join(m[2] for m in marks)
    for want in (
        "rung minimal",
        "rung single-request",
        "stage weights",
        "FIRST EXCEPTION at weights",
        "scene frozen (first-exception)",
        "note: fastsafetensors missing",
        "marker: handing over",
    ):
        assert want in labels


def test_asciinema_cat_reads_it_back(cast: Path, shared: Path) -> None:
    r = subprocess.run([str(ASCIINEMA), "cat", str(cast)], capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode("utf-8")
    _, events = _lines(cast)
    assert out == "".join(e[2] for e in events if e[1] == "o")
    root = (shared / "corpus" / FAIL_LOG).read_text().splitlines()
    assert next(x for x in root if "ModuleNotFoundError" in x) + "\r\n" in out
    assert "plain tail" in out  # the hostile line's harmless text survives …
    assert not SGR.sub("", out).count("\x1b")  # … and no escape but our own colours reaches the terminal
    assert "\x07" not in out and "]52;" not in out and "pwned title" not in out


def test_hostile_sequences_never_reach_the_viewer(cast: Path, hostile_session: Path) -> None:
    assert "\\u001b]52;c;" in hostile_session.read_text()  # the recording keeps it as received
    raw = cast.read_text(encoding="utf-8")
    _, events = _lines(cast)
    text = "".join(e[2] for e in events)
    assert "\x1b]52" not in text and "\x1b]0;" not in text and "\x1b[2J" not in text and "\x07" not in text
    assert "ZXZpbCBjbGlwYm9hcmQ=" not in text and "pwned title" not in text  # whole sequences dropped, payload too
    assert set(SGR.findall(text)) <= {"\x1b[2m", "\x1b[1;36m", "\x1b[1;31m", "\x1b[0m"}
    assert "\\u001b]" not in raw


def test_asciinema_play_runs_it(cast: Path) -> None:
    r = subprocess.run(
        [str(ASCIINEMA), "play", "-s", "1000", "-i", "0.001", str(cast)],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert b"FIRST EXCEPTION at weights" in r.stdout


def test_package_cast_is_the_cast_only_export(hostile_session: Path, cast: Path, tmp_path: Path) -> None:
    pkg = export_session(hostile_session, tmp_path / "p.tar.gz")
    assert members(pkg)["session.cast"] == cast.read_bytes()


def test_times_never_go_backwards(tmp_path: Path) -> None:
    path = tmp_path / "shuffled.k3rec"
    with Recorder(path, ev.Header(host="h"), redactor=Redactor(), index=False) as rec:
        for t, text in [(5.0, "five\n"), (3.0, "three\n"), (7.5, "seven\n"), (1.0, "one\n")]:
            rec.emit(ev.Output(t=t, id="c", text=text))
        rec.emit(ev.Marker(t=2.0, label="late marker"))
    _, events = _lines(export_session(path, cast_only=True))
    assert [e[0] for e in events] == [5.0, 5.0, 7.5, 7.5, 7.5, 7.5]
    assert [e[2] for e in events][:4] == ["five\r\n", "three\r\n", "seven\r\n", "one\r\n"]


def test_cli_cast_only(hostile_session: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.cast"
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "export", str(hostile_session), "--cast-only", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "asciicast v2" in r.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.k3rec", "x.cast"]
    header, _ = _lines(out)
    assert header["version"] == 2


def test_writer_with_its_own_redactor_masks_raw_events() -> None:
    """Fed raw events (not the export's), the writer redacts them itself."""
    import io as _io

    from k3tui.cast import CastWriter

    buf = _io.StringIO()
    w = CastWriter(buf, ev.Header(session_id="s1", host="h"), Redactor())
    w.add(ev.Output(t=1.0, id="c", text="export HF_TOKEN=hf_abcdefghijklmnopqrstuvwx\n"))
    w.add(ev.Note(t=2.0, text="token is hf_abcdefghijklmnopqrstuvwx"))
    out = buf.getvalue()
    assert "hf_abcdefghijklmnopqrstuvwx" not in out and out.count("<redacted>") >= 2
    assert w.events == 2 and w.markers == 1

"""Tamper evidence: `k3tui verify` names the first altered, removed, inserted or reordered line
(exit 1), passes an intact file (exit 0), and calls a cut last line truncated, not tampered (exit 0)."""

from __future__ import annotations

from itertools import count
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3tui import events as ev
from k3tui.cli import main
from k3tui.reader import verify
from k3tui.recording import Recorder
from k3tui.redact import Redactor

N_EVENTS = 30
_n = count()


def _record(path: Path) -> list[bytes]:
    with Recorder(path, ev.Header(host="gb300-01"), redactor=Redactor()) as rec:
        for i in range(N_EVENTS):
            rec.emit(ev.Output(id="c1", text=f"line {i}\n") if i % 4 else ev.Marker(label=f"m{i}"))
    return path.read_bytes().split(b"\n")[:-1]  # line 1 is the header


def _interrupted(path: Path) -> None:
    """What ``kill -9`` leaves: the recording without its closing seal (in the file and the .idx)."""
    lines = path.read_bytes().split(b"\n")
    assert b'"kind":"seal"' in lines[-2]
    path.write_bytes(b"\n".join(lines[:-2]) + b"\n")
    idx = Path(str(path) + ".idx")
    idx.write_bytes(b"".join(ln + b"\n" for ln in idx.read_bytes().splitlines() if not ln.startswith(b"seal")))


def _verify_cli(path: Path, capsys) -> tuple[int, str]:  # noqa: ANN001
    code = main(["verify", str(path)])
    out = capsys.readouterr()
    return code, out.out + out.err


def _edit(line: bytes) -> bytes:
    for old, new in ((b"line", b"LINE"), (b'"m', b'"M'), (b"gb300-01", b"gb300-02")):
        if old in line:
            return line.replace(old, new, 1)
    raise AssertionError(f"nothing to edit in {line!r}")


TAMPERS = {
    "edit": lambda lines, k: lines[: k - 1] + [_edit(lines[k - 1])] + lines[k:],
    "delete": lambda lines, k: lines[: k - 1] + lines[k:],
    "insert": lambda lines, k: lines[: k - 1] + [lines[(k + 5) % len(lines) or 1]] + lines[k - 1 :],
    "insert-forged": lambda lines, k: (
        lines[: k - 1] + [b'{"kind":"note","t":1.0,"text":"all fine","h":"' + b"0" * 24 + b'"}'] + lines[k - 1 :]
    ),
    "swap": lambda lines, k: lines[: k - 1] + [lines[k], lines[k - 1]] + lines[k + 1 :],
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(how=st.sampled_from(sorted(TAMPERS)), k=st.integers(1, N_EVENTS))
def test_tampering_is_named_at_the_right_line(tmp_path, capsys, how, k):
    path = tmp_path / f"t{next(_n)}.k3rec"
    lines = _record(path)
    path.write_bytes(b"\n".join(TAMPERS[how](lines, k)) + b"\n")
    code, out = _verify_cli(path, capsys)
    assert code == 1, out
    assert f"TAMPERED at line {k}:" in out
    assert verify(path).bad_line == k


def test_intact_file_exits_0(tmp_path, capsys):
    path = tmp_path / "ok.k3rec"
    _record(path)
    code, out = _verify_cli(path, capsys)
    assert code == 0 and "intact" in out and f"{N_EVENTS + 2} lines" in out  # header, events, seal
    assert f"sealed after {N_EVENTS} events" in out and "not closed" not in out


@pytest.mark.parametrize("cut", [2, 10, 40, 70])
def test_truncated_last_line_is_truncated_not_tampered(tmp_path, capsys, cut):
    path = tmp_path / "cut.k3rec"
    _record(path)
    _interrupted(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - cut])
    code, out = _verify_cli(path, capsys)
    assert code == 0, out
    assert "truncated" in out and "TAMPERED" not in out
    assert verify(path).truncated


def test_a_missing_final_newline_is_not_tampering(tmp_path, capsys):
    path = tmp_path / "nl.k3rec"
    _record(path)
    path.write_bytes(path.read_bytes()[:-1])
    code, out = _verify_cli(path, capsys)
    assert code == 0 and "intact" in out and "lacks its newline" in out


def test_edited_header_is_named(tmp_path, capsys):
    path = tmp_path / "h.k3rec"
    lines = _record(path)
    lines[0] = lines[0].replace(b"gb300-01", b"gb300-02")
    path.write_bytes(b"\n".join(lines) + b"\n")
    code, out = _verify_cli(path, capsys)
    assert code == 1 and "TAMPERED at line 1: the header was altered" in out


def test_a_line_without_digest_is_named(tmp_path, capsys):
    path = tmp_path / "n.k3rec"
    lines = _record(path)
    lines.insert(4, b'{"kind":"note","t":1.0,"text":"I was never here"}')
    path.write_bytes(b"\n".join(lines) + b"\n")
    code, out = _verify_cli(path, capsys)
    assert code == 1 and "line 5" in out and "no digest" in out


def test_rechaining_after_an_edit_still_shows_at_the_header_seed(tmp_path):
    """The chain is keyed by content only: a forger must recompute every later digest —
    possible (this is tamper-evidence for accidents and casual edits, not a signature),
    and documented as such. Here: an edit without recomputing is always caught."""
    path = tmp_path / "r.k3rec"
    lines = _record(path)
    lines[10] = _edit(lines[10])
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert verify(path).bad_line == 11


def test_verify_a_file_that_is_not_a_recording_exits_2(tmp_path, capsys):
    path = tmp_path / "x.k3rec"
    path.write_bytes(b"\x00\x01binary")
    code, out = _verify_cli(path, capsys)
    assert code == 2 and out.count("\n") == 1 and out.startswith("k3tui: ")


def test_lines_removed_from_the_end_are_caught_by_the_index(tmp_path, capsys, monkeypatch):
    """The chain alone cannot see a cut-off end; the sidecar the recorder wrote can."""
    from k3tui import recording

    monkeypatch.setattr(recording, "INDEX_EVERY", 5)
    path = tmp_path / "cut.k3rec"
    lines = _record(path)
    path.write_bytes(b"\n".join(lines[:20]) + b"\n")
    code, out = _verify_cli(path, capsys)
    assert code == 1 and "TAMPERED at line 21" in out and "removed from the end" in out
    Path(str(path) + ".idx").unlink()  # without the sidecar it cannot be told from a shorter recording
    code, out = _verify_cli(path, capsys)
    assert code == 0 and "20 lines" in out


def test_an_interrupted_recording_is_not_called_cut(tmp_path, capsys):
    """kill -9 leaves the index behind the data, never ahead of it."""
    path = tmp_path / "ok.k3rec"
    _record(path)
    _interrupted(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 15])
    code, out = _verify_cli(path, capsys)
    assert code == 0 and "truncated" in out

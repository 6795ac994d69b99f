"""``open_package(check=True)`` refusals a mutation run found unpinned (issue 22).

The tamper tests elsewhere call ``verify_package`` only, so deleting the refusal inside
``open_package`` passed every test. Here each way a package can be wrong — a file edited
after export (any listed file, any byte), no ``MANIFEST.sha256``, a ``..`` path in the
manifest, two manifests — is opened with ``check=True`` and must be refused in one line
with nothing left in the target folder; the same archive opens with ``check=False`` (so the
refusal, not the archive, is what the test sees)."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
from itertools import count
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3tui import events as ev
from k3tui.errors import PackageError
from k3tui.package import MANIFEST, Limits, export_session, open_package
from k3tui.reader import read_all
from k3tui.recording import Recorder
from k3tui.redact import Redactor

_n = count()


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The members of one real export, by name (top folder included)."""
    d = tmp_path_factory.mktemp("pins-pkg")
    with Recorder(d / "s.k3rec", ev.Header(host="h200-01"), redactor=Redactor()) as rec:
        for i in range(30):
            rec.emit(ev.Output(id="c1", text=f"INFO line {i}\n"))
        rec.emit(ev.Marker(label="handing over"))
    pkg = export_session(d / "s.k3rec")
    with tarfile.open(pkg, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}


def _pack(path: Path, files: dict[str, bytes]) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip.compress(buf.getvalue()))
    return path


def _manifest_name(files: dict[str, bytes]) -> str:
    return next(n for n in files if n.endswith("/" + MANIFEST))


def _refused(tmp_path: Path, files: dict[str, bytes], match: str) -> None:
    arc = _pack(tmp_path / f"p{next(_n)}.tar.gz", files)
    target = tmp_path / f"t{next(_n)}"
    with pytest.raises(PackageError, match=match) as err:
        open_package(arc, target, check=True)
    assert "\n" not in str(err.value)
    assert not target.exists() or list(target.iterdir()) == [], "a refused package left files behind"


def test_the_export_itself_opens(tmp_path, exported):
    session = open_package(_pack(tmp_path / "ok.tar.gz", exported), tmp_path / "t", check=True)
    assert session.is_file() and session.suffix == ".k3rec"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_listed_file_edited_after_export_is_refused(tmp_path, exported, data):
    listed = sorted(n for n in exported if not n.endswith(MANIFEST) and not n.endswith(".k3rec"))
    name = data.draw(st.sampled_from(listed), label="file")
    body = bytearray(exported[name])
    at = data.draw(st.integers(0, max(len(body) - 1, 0)), label="byte")
    if body:
        body[at] ^= data.draw(st.integers(1, 255), label="xor")
    else:
        body += b"x"
    files = {**exported, name: bytes(body)}
    _refused(tmp_path, files, "ALTERED")
    opened = open_package(_pack(tmp_path / f"nc{next(_n)}.tar.gz", files), tmp_path / f"nc{next(_n)}", check=False)
    assert opened.is_file()


def test_an_edited_report_is_refused(tmp_path, exported):
    report = next(n for n in exported if n.endswith("/REPORT.md"))
    _refused(
        tmp_path, {**exported, report: exported[report] + b"\nAll fine, nothing to see.\n"}, "REPORT.md was ALTERED"
    )


def test_a_package_without_its_manifest_is_refused(tmp_path, exported):
    files = {n: b for n, b in exported.items() if not n.endswith(MANIFEST)}
    _refused(tmp_path, files, f"{MANIFEST} is missing")


@pytest.mark.parametrize("bad", ["../outside.txt", "logs/../../outside.txt", "/etc/passwd"])
def test_a_manifest_naming_a_path_outside_is_refused(tmp_path, exported, bad):
    m = _manifest_name(exported)
    line = f"{hashlib.sha256(b'x').hexdigest()}  {bad}\n".encode()
    _refused(tmp_path, {**exported, m: exported[m] + line}, "malformed")


def test_two_manifests_in_one_package_are_refused(tmp_path, exported):
    top = _manifest_name(exported).split("/", 1)[0]
    nested = {f"{top}/copy/{n.split('/', 1)[1]}": b for n, b in exported.items()}
    _refused(tmp_path, {**exported, **nested}, "2 manifests")


def _session(tmp_path: Path) -> Path:
    path = tmp_path / f"s{next(_n)}.k3rec"
    with Recorder(path, ev.Header(host="h200-01"), redactor=Redactor()) as rec:
        for i in range(12):
            rec.emit(ev.Output(id="c1", text=f"INFO line {i}\n"))
    return path


def test_a_package_is_refused_as_export_input(tmp_path):
    """Exporting a package again (a mix-up of file names) is refused, saying what it is."""
    pkg = export_session(_session(tmp_path))
    with pytest.raises(PackageError, match="already a repro package"):
        export_session(pkg, tmp_path / "again.tar.gz")


def test_a_failed_export_leaves_no_temporary_file(tmp_path):
    """The package is written to a temporary name and renamed; when that fails (here the output is
    a folder) the error is one line and no half-written temporary file stays beside it."""
    src = _session(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(PackageError, match="cannot write"):
        export_session(src, out, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([src.name, src.name + ".idx", "out"])


def test_the_packaged_session_is_sealed_with_its_event_count(tmp_path):
    """When the export masks more than the recorder did, the package holds a re-sealed copy of the
    session: it verifies, its seal counting every event, and the newly masked word is gone."""
    src = _session(tmp_path)
    pkg = export_session(src, redactor=Redactor(extra_patterns=[r"line 7"]))
    session = open_package(pkg, tmp_path / "opened", check=True)
    rec, events = read_all(session, strict=True)
    assert rec.integrity is not None and rec.integrity.ok and rec.integrity.sealed, rec.integrity
    assert [e.text for e in events if isinstance(e, ev.Output)] == [
        "INFO <redacted>\n" if i == 7 else f"INFO line {i}\n" for i in range(12)
    ]


@pytest.mark.parametrize(("cap", "said"), [(100, "100 bytes"), (1536, "1.5 KiB")])
def test_a_member_over_a_small_cap_is_refused_in_readable_units(tmp_path, exported, cap, said):
    """Caps are said in the unit an operator reads: '100 bytes', '1.5 KiB'."""
    big = {**exported, next(iter(exported)).split("/")[0] + "/logs/big.log": b"x" * 4000}
    arc = _pack(tmp_path / "big.tar.gz", big)
    with pytest.raises(PackageError, match=rf"over the cap of {said}"):
        open_package(arc, tmp_path / "t", limits=Limits(max_member_bytes=cap))


def test_opened_folders_are_traversable_like_the_files_are_readable(tmp_path, exported):
    """The folders an opened package creates get 0755 (less the umask), as its files get 0644: a
    colleague on the same host can read what was opened."""
    umask = os.umask(0)
    os.umask(umask)
    files = {**exported, next(iter(exported)).split("/")[0] + "/logs/run1/server.log": b"INFO up\n"}
    session = open_package(_pack(tmp_path / "ok.tar.gz", files), tmp_path / "t", check=False)
    top = session.parent
    folders = [top, *(p for p in top.rglob("*") if p.is_dir())]
    assert len(folders) == 3
    assert {stat.S_IMODE(p.stat().st_mode) for p in folders} == {0o755 & ~umask}

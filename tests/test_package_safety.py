"""Opening a hostile package: each attack refused with a clear message, nothing written outside the target.

The archives are built here byte by byte with :mod:`tarfile` (and by hand where tarfile will
not write the lie): traversal, absolute paths, symbolic and hard links, devices, FIFOs,
duplicate and colliding names, a member whose header claims gigabytes, a real decompression
bomb, a memory bomb in a PAX header, too many members, plain garbage.
"""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from k3tui.errors import PackageError
from k3tui.package import Limits, UnsafeMember, open_package, session_from_package, verify_package


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], pax: dict | None = None) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT, pax_headers=pax or {}) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    path.write_bytes(gzip.compress(buf.getvalue(), compresslevel=6))
    return path


def _info(name: str, type_: bytes = tarfile.REGTYPE, **kw) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = type_
    for k, v in kw.items():
        setattr(info, k, v)
    return info


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _good() -> list[tuple[tarfile.TarInfo, bytes | None]]:
    return [(_info("k3repro-x/REPORT.md"), b"# report\n")]


def _cases(tmp: Path) -> dict[str, tuple[list, str]]:
    return {
        "traversal": (_good() + [(_info("k3repro-x/../../escaped.txt"), b"pwned")], "climbs out with '..'"),
        "dotdot-top": (_good() + [(_info("../escaped.txt"), b"pwned")], "climbs out with '..'"),
        "absolute": (_good() + [(_info(str(tmp / "abs-victim.txt")), b"pwned")], "absolute path"),
        "symlink": (
            _good()
            + [
                (_info("k3repro-x/link", tarfile.SYMTYPE, linkname="/etc"), None),
                (_info("k3repro-x/link/passwd"), b"pwned"),
            ],
            "is a symbolic link",
        ),
        "hardlink": (
            _good() + [(_info("k3repro-x/hard", tarfile.LNKTYPE, linkname="/etc/passwd"), None)],
            "is a hard link",
        ),
        "chardev": (
            _good() + [(_info("k3repro-x/null", tarfile.CHRTYPE, devmajor=1, devminor=3), None)],
            "is a device",
        ),
        "blockdev": (
            _good() + [(_info("k3repro-x/sda", tarfile.BLKTYPE, devmajor=8, devminor=0), None)],
            "is a device",
        ),
        "fifo": (_good() + [(_info("k3repro-x/pipe", tarfile.FIFOTYPE), None)], "is a FIFO"),
        "duplicate": (_good() + _good(), "appears twice"),
        "control-char": ([(_info("k3repro-x/RE\x1b]0;x\x07PORT.md"), b"x")], "unsafe name"),
        "backslash": ([(_info("k3repro-x\\..\\..\\evil"), b"x")], "unsafe name"),
        "file-then-dir": ([(_info("k3repro-x/a"), b"x"), (_info("k3repro-x/a/b"), b"y")], "collides"),
    }


@pytest.mark.parametrize("case", list(_cases(Path("/nonexistent"))))
def test_hostile_member_refused_and_nothing_written(tmp_path: Path, case: str) -> None:
    members, why = _cases(tmp_path)[case]
    arc = _tar(tmp_path / "evil.tar.gz", members)
    target = tmp_path / "target"
    before = _tree(tmp_path)
    with pytest.raises(PackageError, match=why) as err:
        open_package(arc, target)
    assert "\n" not in str(err.value) and str(err.value).startswith("evil.tar.gz: ")
    assert _tree(tmp_path) == before | {"target"}  # the target exists, empty; nothing else appeared
    assert list(target.iterdir()) == []
    assert not Path("/tmp/escaped.txt").exists() and not (tmp_path / "escaped.txt").exists()
    ok, msg = verify_package(arc)
    assert not ok and why in msg
    assert _tree(tmp_path) == before | {"target"}


def test_member_claiming_gigabytes_refused_from_its_header(tmp_path: Path) -> None:
    # tarfile will not write a 3 GiB header over 5 bytes of data: write the lie by hand.
    info = _info("k3repro-x/huge.log", size=3 << 30)
    raw = info.tobuf(tarfile.PAX_FORMAT) + b"zeros" + b"\0" * 507 + b"\0" * 1024
    arc = tmp_path / "huge.tar.gz"
    arc.write_bytes(gzip.compress(raw))
    with pytest.raises(UnsafeMember, match=r"huge.log' is 3.0 GiB, over the cap of 2.0 GiB"):
        open_package(arc, tmp_path / "t")
    assert list((tmp_path / "t").iterdir()) == []


def test_decompression_bomb_stops_at_the_cap(tmp_path: Path) -> None:
    """64 MiB of zeros in 64 KiB of gzip: refused by the member cap, the disk untouched."""
    zeros = b"\0" * (64 << 20)
    arc = _tar(tmp_path / "bomb.tar.gz", [(_info("k3repro-x/bomb.bin"), zeros)])
    del zeros
    assert arc.stat().st_size < 1 << 20
    limits = Limits(max_member_bytes=8 << 20, max_total_bytes=16 << 20)
    with pytest.raises(UnsafeMember, match="over the cap"):
        open_package(arc, tmp_path / "t", limits=limits)
    assert list((tmp_path / "t").iterdir()) == []


def test_many_members_adding_up_past_the_total_cap(tmp_path: Path) -> None:
    members = [(_info(f"k3repro-x/part{i}.bin"), b"\0" * (3 << 20)) for i in range(6)]
    arc = _tar(tmp_path / "sum.tar.gz", members)
    with pytest.raises(UnsafeMember, match="add up to more than 16.0 MiB"):
        open_package(arc, tmp_path / "t", limits=Limits(max_member_bytes=4 << 20, max_total_bytes=16 << 20))
    assert list((tmp_path / "t").iterdir()) == []


def test_pax_header_memory_bomb_refused_before_it_is_read(tmp_path: Path) -> None:
    arc = _tar(tmp_path / "pax.tar.gz", _good(), pax={"comment": "A" * (16 << 20)})
    assert arc.stat().st_size < 1 << 20
    with pytest.raises(UnsafeMember, match="extended header record of 16.0 MiB"):
        open_package(arc, tmp_path / "t")


def test_stream_counter_is_the_last_fuse(tmp_path: Path) -> None:
    """With the header cap lifted, counting the decompressed stream still stops the bomb."""
    arc = _tar(tmp_path / "pax.tar.gz", _good(), pax={"comment": "A" * (16 << 20)})
    limits = Limits(max_total_bytes=1 << 20, max_members=4, max_header_bytes=1 << 30)
    with pytest.raises(UnsafeMember, match="decompresses to more than"):
        open_package(arc, tmp_path / "t", limits=limits)
    assert list((tmp_path / "t").iterdir()) == []


def test_too_many_members(tmp_path: Path) -> None:
    arc = _tar(tmp_path / "many.tar.gz", [(_info(f"k3repro-x/f{i}"), b"") for i in range(150)])
    with pytest.raises(UnsafeMember, match="more than 100 members"):
        open_package(arc, tmp_path / "t", limits=Limits(max_members=100))
    assert list((tmp_path / "t").iterdir()) == []


@pytest.mark.parametrize(
    "content", [b"", b"plain text, not gzip", gzip.compress(b"gzip but not tar" * 100, mtime=0), b"\x1f\x8bbroken"]
)
def test_garbage_is_one_clear_error(tmp_path: Path, content: bytes) -> None:
    arc = tmp_path / "garbage.tar.gz"
    arc.write_bytes(content)
    with pytest.raises(PackageError, match="not a (valid )?repro package|holds 0 session files|MANIFEST"):
        open_package(arc, tmp_path / "t")
    assert not any((tmp_path / "t").iterdir())


def test_cli_verify_and_cat_refuse_hostile_package(tmp_path: Path) -> None:
    arc = _tar(tmp_path / "evil.tar.gz", _good() + [(_info("k3repro-x/../../escaped.txt"), b"pwned")])
    run = lambda *a: subprocess.run([sys.executable, "-m", "k3tui.cli", *a], capture_output=True, text=True, timeout=60)  # noqa: E731
    r = run("verify", str(arc))
    assert r.returncode == 1 and "climbs out with '..'" in r.stdout and r.stdout.count("\n") == 1
    r = run("cat", str(arc))
    assert r.returncode == 2 and r.stderr.startswith("k3tui: evil.tar.gz: member") and r.stderr.count("\n") == 1
    assert not (tmp_path / "escaped.txt").exists()


def test_extracted_files_are_plain_and_not_executable(tmp_path: Path, shared: Path) -> None:
    """Set-uid, world-writable and executable bits and foreign owners in the archive never reach the disk."""
    from k3tui.package import export_session

    from .test_export import make_session

    pkg = export_session(make_session(tmp_path / "s.k3rec", shared))
    evil = tmp_path / "modes.tar.gz"
    with tarfile.open(pkg) as src, tarfile.open(evil, "w:gz") as dst:
        for m in src:
            data = src.extractfile(m).read()
            m.mode = 0o6777
            m.uid, m.gid = 4242, 4242
            dst.addfile(m, io.BytesIO(data))
    session = Path(session_from_package(evil))
    files = [p for p in session.parent.rglob("*") if p.is_file()]
    assert len(files) >= 12
    for p in files:
        st = p.stat()
        assert st.st_mode & 0o7777 == 0o644 and st.st_uid == os.getuid(), p

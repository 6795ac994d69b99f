"""Repro packages: export a session as one ``.tar.gz``, and open or verify one safely.

A package is what an on-call engineer hands to a platform team, and what that team
opens on their own laptop — so exporting must never leak a secret, and opening must
treat the archive as hostile until proven otherwise.

Layout (one top folder, ``k3repro-<session id>/``)::

    REPORT.md  fingerprint.json  launch.sh  request.json  first-error.txt
    changes.csv  checklist.md  logs/<host>-<run>.log  session.k3rec  session.cast  MANIFEST.sha256

``MANIFEST.sha256`` is in ``sha256sum`` format, so ``sha256sum -c`` checks a package
without k3tui; :func:`verify_package` checks it *and* the session's digest chain.

**Export** copies the session first (a live recording keeps growing; the package is one
consistent snapshot) and reads that copy twice: a first pass teaches a fresh
:class:`~k3tui.redact.Redactor` every secret value the stream reveals (env maps,
secret-named keys), the second re-redacts every event with that knowledge (defence in
depth: a recorder bug or an older recorder must not leak through the package) and
streams output into the per-run logs and the cast while folding the facts for the
report. The files built from those facts (report, checklist, CSV, JSON, launch.sh) go
through the redactor once more as they are written — format-aware, so JSON and CSV
quoting survive; logs and the cast are written from the events pass 2 just redacted. The
session file is copied byte for byte unless the export's redactor had to change an
event; then it is re-sealed from the redacted events and the report says so. The archive
is written to a temporary name and renamed into place, so a failed export leaves nothing.

**Opening** never executes anything and writes nothing outside its target directory:

1. a scan pass reads the whole archive *without writing a byte*: every member must be a
   regular file or a directory with a relative, ``..``-free, printable name; links,
   devices, FIFOs and sparse files are refused; member count, each member's size and the
   total are capped; a long-name or PAX record over 1 MiB is refused before tarfile reads
   it into memory; the decompressed stream is *counted* as it is read (headers are not
   trusted), so a decompression bomb stops at the cap, not at a full disk or full memory;
2. an extract pass repeats every check (the file could change between passes), also runs
   tarfile's own ``data`` filter, and writes each regular file itself with
   ``O_CREAT|O_EXCL|O_NOFOLLOW`` and mode 0644 into a fresh private staging folder inside
   the target (no tarfile ``extract``: no owners, no set-uid bits, no execute bits);
3. the manifest and the chain are verified, then the folder is moved into the target
   (never over an existing name). Any failure removes the staging folder.
"""

from __future__ import annotations

import atexit
import csv
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

import msgspec

from . import events as ev
from . import report, report_md
from .cast import CastWriter
from .errors import PackageError, RecordingError
from .reader import Recording, open_recording, verify
from .recording import encode_event, seal
from .redact import MASK, Redactor

MANIFEST = "MANIFEST.sha256"
SESSION = "session.k3rec"
CAST = "session.cast"
_CHUNK = 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"


class UnsafeMember(PackageError):
    """The archive holds a member k3tui refuses to extract (hostile or malformed)."""


@dataclass(frozen=True)
class Limits:
    """Caps applied when opening a package (a package holds logs and a session, not datasets)."""

    max_members: int = 10_000
    max_member_bytes: int = 2 << 30
    max_total_bytes: int = 4 << 30
    max_name: int = 1024
    max_header_bytes: int = 1 << 20
    """Long-name and PAX extension records: tarfile reads these into memory whole."""

    @property
    def max_stream_bytes(self) -> int:
        """Decompressed bytes the tar stream may have: data plus headers and padding."""
        return self.max_total_bytes + (self.max_members + 4) * 2048 + 20 * 512


# --- export ---------------------------------------------------------------------------------

_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate"})
_TOKEN_LEFT_BEHIND = re.compile(
    r"(?i)((?:proxy-)?authorization\"?\s*[:=]\s*\"?<redacted>\s+)(?!<redacted>)([A-Za-z0-9._~+/=-]{8,})"
)


class ExportRedactor(Redactor):
    """The export's redactor: :class:`~k3tui.redact.Redactor` with two guards for what a recorder can miss.

    - It never *learns* an auth scheme word (``Bearer``) as a secret value. The base class
      learns it from ``Authorization: Bearer X``; from then on its learned-values layer masks
      the scheme first, and the bearer-token shape no longer sees the token of the *next*
      header, which leaks.
    - It masks a token left standing after ``Authorization: <redacted>`` (what that leak
      looks like in a recording already on disk).
    """

    def learn(self, value: str) -> None:
        if value.strip().strip("\"'").lower() in _SCHEMES:
            return
        super().learn(value)

    def text(self, s: str) -> str:
        out = super().text(s)
        return _TOKEN_LEFT_BEHIND.sub(r"\1" + MASK, out) if "<redacted>" in out else out


def export_session(
    session_path: str | os.PathLike[str],
    out_path: str | os.PathLike[str] | None = None,
    cast_only: bool = False,
    *,
    force: bool = False,
    redactor: Redactor | None = None,
    warn: Callable[[str], None] | None = None,
) -> Path:
    """Export a session file as a repro package (or just its ``.cast``).

    Args:
        session_path: the ``.k3rec`` file.
        out_path: where to write; default beside the session, ``NAME.repro.tar.gz`` / ``NAME.cast``.
        cast_only: write only the asciicast.
        force: replace an existing output file.
        redactor: the export's redactor (default: built-in patterns plus the user's configured ones).
        warn: told what the chain said when it does not prove the session (tampered, or not closed);
            the package is still written and its report says the same.

    Returns:
        The path written.

    Raises:
        RecordingError: the session cannot be read. PackageError: the output cannot be written.
    """
    src = Path(session_path)
    _refuse_package_input(src)
    open_recording(src)  # a clear error before any work
    out = (
        Path(out_path)
        if out_path
        else src.with_name(src.name.removesuffix(".k3rec") + (".cast" if cast_only else ".repro.tar.gz"))
    )
    if out.exists() and not force:
        raise PackageError(f"{out} already exists: choose another name with -o, or pass --force to replace it")
    red = redactor or ExportRedactor.from_environment()
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        with tempfile.TemporaryDirectory(prefix=".k3tui-export-", dir=out.parent) as staging:
            snap = Path(staging) / "snapshot.k3rec"
            _copy_index(src, snap)  # first: an index copied after the file could run ahead of the copy
            shutil.copyfile(src, snap)  # a live recording keeps growing: export one consistent snapshot
            rec = open_recording(snap)
            for e in rec.events():  # pass 1: learn every secret value the stream reveals (and check the chain)
                red.event(e)
            if warn is not None and rec.integrity is not None and not (rec.integrity.ok and rec.integrity.sealed):
                warn(rec.integrity.message.replace(str(snap), str(src)))
            rec.problems.clear()
            header = red.event(rec.header)
            if cast_only:
                _write_cast_only(rec, header, red, tmp)
            else:
                _write_package(rec, src.name, header, red, tmp, Path(staging) / "package")
        os.replace(tmp, out)
    except OSError as exc:
        raise PackageError(f"cannot write {out}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return out


def _copy_index(src: Path, snap: Path) -> None:
    """The ``.idx`` beside the snapshot: it remembers the seal, so the export sees a cut end too."""
    try:
        shutil.copyfile(str(src) + ".idx", str(snap) + ".idx")
    except OSError:
        pass  # none, or unreadable: the chain alone speaks


def _refuse_package_input(src: Path) -> None:
    try:
        if not stat.S_ISREG(os.stat(src).st_mode):  # a FIFO would block the open below forever
            kind = "a directory" if src.is_dir() else "not a regular file (a device, FIFO or socket)"
            raise RecordingError(f"{src} is {kind}, not a session file")
        with open(src, "rb") as fh:
            if fh.read(2) == _GZIP_MAGIC:
                raise PackageError(f"{src} is already a repro package; export takes a .k3rec session file")
    except FileNotFoundError:
        raise RecordingError(f"{src}: no such file") from None
    except IsADirectoryError:
        raise RecordingError(f"{src} is a directory, not a session file") from None


def _write_cast_only(rec: Recording, header: ev.Header, red: Redactor, tmp: Path) -> None:
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        cast = CastWriter(fh, header)
        for e in rec.events():
            cast.add(red.event(e))  # redacted here, once


def _write_package(rec: Recording, name: str, header: ev.Header, red: Redactor, tmp: Path, root: Path) -> None:
    """Pass 2 and the text files into ``root``, then the archive into ``tmp``."""
    root.mkdir()
    c = report.Collector(header=header, session_name=SESSION)
    c.chain = _chain_message(rec.path, name)
    _stream(rec, red, c, root)
    c.problems = [p.message for p in rec.problems]
    if c.re_redacted == 0 and rec.header is header:
        os.replace(rec.path, root / SESSION)
    else:
        c.re_redacted = max(c.re_redacted, 1)
        os.replace(root / "resealed.k3rec", root / SESSION)
    (root / "resealed.k3rec").unlink(missing_ok=True)
    _write_texts(c, red, root)
    _write_tar(root, tmp, _top_name(header), header.started)


def _chain_message(path: Path, name: str) -> str:
    try:
        return verify(path).message.replace(str(path), name)
    except RecordingError as exc:
        return f"cannot verify: {exc}".replace(str(path), name)


def _stream(rec: Recording, red: Redactor, c: report.Collector, root: Path) -> None:
    """Pass 2: redact, fold, write the cast, the per-run logs and a re-sealed session copy."""
    logs: dict[tuple[str, str], IO[bytes]] = {}
    (root / "logs").mkdir()
    with (
        open(root / CAST, "w", encoding="utf-8", newline="\n") as cast_fh,
        open(root / "resealed.k3rec", "wb") as sealed,
    ):
        cast = CastWriter(cast_fh, c.header)  # events arrive redacted
        line, prev = seal(b"", _header_encoder.encode(c.header))
        sealed.write(line)
        count, last_t = 0, 0.0
        for e in rec.events():
            r = red.event(e)
            if r is not e:
                c.re_redacted += 1
            line, prev = seal(prev, encode_event(r))
            sealed.write(line)
            c.add(r)
            cast.add(r)
            if isinstance(r, ev.Output) and r.id in c.state.runs:
                _append_log(c, logs, root, r)
            count, last_t = count + 1, r.t
        sealed.write(seal(prev, encode_event(ev.Seal(t=last_t, events=count, last=prev.decode())))[0])
        for fh in logs.values():
            fh.close()


_header_encoder = msgspec.json.Encoder()
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def _append_log(c: report.Collector, logs: dict[tuple[str, str], IO[bytes]], root: Path, e: ev.Output) -> None:
    key = (e.host, e.id)  # one log per host and run: the same run id may run on every node
    info = c.logs.get(key)
    if info is None:
        base = _SAFE_NAME.sub("_", f"{e.host}-{e.id}" if e.host else e.id).strip("._") or "run"
        name = f"logs/{base}.log"
        while any(i.name == name for i in c.logs.values()):
            name = name.removesuffix(".log") + "_.log"
        info = c.logs[key] = report.LogFile(name)
        logs[key] = open(root / name, "wb")  # noqa: SIM115 - closed at the end of the stream
    data = e.text.encode("utf-8", "replace")  # already redacted by this export
    logs[key].write(data)
    info.bytes += len(data)
    info.lines += e.text.count("\n")


def _write_texts(c: report.Collector, red: Redactor, root: Path) -> None:
    texts = {
        "fingerprint.json": report.fingerprint_json(c),
        "launch.sh": report.launch_sh(c),
        "request.json": report.request_json(c),
        "first-error.txt": report.first_error_txt(c),
        "changes.csv": report.changes_csv(report.changes(c)),
        "checklist.md": report.checklist_md(c),
    }
    names = sorted(
        [n for n, t in texts.items() if t is not None]
        + ["REPORT.md", SESSION, CAST]
        + [i.name for i in c.logs.values()]
    )
    texts["REPORT.md"] = report_md.report_md(c, [*names, MANIFEST])
    for name, text in texts.items():
        if text is not None:
            (root / name).write_text(_redact_file(name, text, red), encoding="utf-8", errors="replace")
    manifest = "".join(f"{_sha256(root / n)}  {n}\n" for n in names)
    (root / MANIFEST).write_text(manifest, encoding="utf-8")


def _redact_file(name: str, text: str, red: Redactor) -> str:
    """The last redaction pass, aware of the file's format so it cannot break JSON or CSV quoting."""
    if name.endswith(".json"):
        try:
            return json.dumps(red.obj(json.loads(text)), indent=2, ensure_ascii=False) + "\n"
        except ValueError:
            pass
    if name.endswith(".csv"):
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(
            [[red.text(c) for c in row] for row in csv.reader(io.StringIO(text))]
        )
        return buf.getvalue()
    return red.text(text)


def _top_name(header: ev.Header) -> str:
    return "k3repro-" + (_SAFE_NAME.sub("_", header.session_id).strip("._") or "session")


def _write_tar(root: Path, out: Path, top: str, mtime: float) -> None:
    """A reproducible archive: fixed times, no owners, no local file name in the gzip header."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    # gzip's header holds a 32-bit time (0 = none): a session started after 2106-02-07 keeps its time in
    # the tar members (PAX), the gzip header says none instead of failing the export
    gz_mtime = int(mtime) if 0 <= mtime < 2**32 else 0
    with open(out, "xb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=gz_mtime) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for p in files:
                rel = p.relative_to(root).as_posix()
                info = tarfile.TarInfo(f"{top}/{rel}")
                info.size, info.mtime, info.mode = p.stat().st_size, int(mtime), 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                with open(p, "rb") as fh:
                    tar.addfile(info, fh)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


# --- opening ----------------------------------------------------------------------------------


class _Counted(io.RawIOBase):
    """A read-only stream that refuses to yield more than ``cap`` bytes (the bomb fuse)."""

    def __init__(self, inner: IO[bytes] | gzip.GzipFile, cap: int, what: str) -> None:
        self._inner, self._cap, self._what, self.count = inner, cap, what, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # noqa: ANN001 - a writable buffer
        data = self._inner.read(len(b))
        self.count += len(data)
        if self.count > self._cap:
            raise UnsafeMember(
                f"{self._what}: decompresses to more than {_size(self._cap)} (the cap): refusing it as a "
                f"decompression bomb; nothing was extracted"
            )
        b[: len(data)] = data
        return len(data)


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} GiB"  # pragma: no cover


_EXTENSION_TYPES = (
    tarfile.GNUTYPE_LONGNAME,
    tarfile.GNUTYPE_LONGLINK,
    tarfile.XHDTYPE,
    tarfile.XGLTYPE,
    tarfile.SOLARIS_XHDTYPE,
)


class _GuardedInfo(tarfile.TarInfo):
    """Refuses an oversized long-name/PAX record *before* tarfile reads it into memory."""

    header_cap = 1 << 20

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type in _EXTENSION_TYPES and self.size > self.header_cap:
            raise UnsafeMember(
                f"an extended header record of {_size(self.size)} (cap {_size(self.header_cap)}): refusing the archive "
                f"as a memory bomb; nothing was extracted"
            )
        return super()._proc_member(tarfile_)  # type: ignore[misc]


_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")


def _safe_name(m: tarfile.TarInfo, limits: Limits, what: str) -> str:
    """The member's name, normalised, or UnsafeMember saying why it is refused."""
    name = m.name
    if not name or len(name) > limits.max_name or _BAD_CHARS.search(name):
        raise UnsafeMember(
            f"{what}: member {name[:80]!r} has an empty, overlong or unsafe name (control characters, backslashes): refused"
        )
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise UnsafeMember(f"{what}: member {name!r} has an absolute path: refused (nothing was extracted)")
    parts = [p for p in PurePosixPath(name).parts if p != "."]
    if ".." in parts:
        raise UnsafeMember(f"{what}: member {name!r} climbs out with '..': refused (nothing was extracted)")
    if not parts or any(len(p.encode()) > 255 for p in parts):
        raise UnsafeMember(f"{what}: member {name[:80]!r} has an invalid path: refused")
    return "/".join(parts)


def _check_type(m: tarfile.TarInfo, name: str, what: str) -> None:
    kind = (
        "a symbolic link"
        if m.issym()
        else "a hard link"
        if m.islnk()
        else "a device"
        if m.ischr() or m.isblk()
        else "a FIFO"
        if m.isfifo()
        else "a sparse file"
        if m.issparse()
        else None
        if m.isreg() or m.isdir()
        else f"an unsupported member type {m.type!r}"
    )
    if kind:
        raise UnsafeMember(
            f"{what}: member {name!r} is {kind}: refused — a package holds only plain files (nothing was extracted)"
        )


def _members(path: Path, limits: Limits, dest: Path) -> Iterator[tuple[tarfile.TarInfo, str, tarfile.TarFile]]:
    """Stream the archive's members, each checked; the caller may read a regular member's data."""
    what = path.name
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise PackageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise PackageError(f"{path} is a directory, not a repro package") from None
    try:
        if raw.read(2) != _GZIP_MAGIC:
            raise PackageError(f"{path} is not a repro package (not gzip-compressed)")
        raw.seek(0)
        stream = io.BufferedReader(
            _Counted(gzip.GzipFile(fileobj=raw, mode="rb"), limits.max_stream_bytes, what), _CHUNK
        )
        info = type("_Info", (_GuardedInfo,), {"header_cap": limits.max_header_bytes})
        yield from _walk(tarfile.open(fileobj=stream, mode="r|", tarinfo=info), limits, dest, what)
    except UnsafeMember as exc:
        if not str(exc).startswith(what):
            raise UnsafeMember(f"{what}: {exc}") from None
        raise
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise PackageError(f"{path} is not a valid repro package: {str(exc) or type(exc).__name__}") from None
    finally:
        raw.close()


def _walk(
    tar: tarfile.TarFile, limits: Limits, dest: Path, what: str
) -> Iterator[tuple[tarfile.TarInfo, str, tarfile.TarFile]]:
    seen: set[str] = set()
    total = 0
    for n, m in enumerate(tar, start=1):
        if n > limits.max_members:
            raise UnsafeMember(f"{what}: more than {limits.max_members} members: refused (nothing was extracted)")
        name = _safe_name(m, limits, what)
        _check_type(m, name, what)
        if m.size > limits.max_member_bytes:
            raise UnsafeMember(
                f"{what}: member {name!r} is {_size(m.size)}, over the cap of {_size(limits.max_member_bytes)}: refused"
            )
        total += m.size
        if total > limits.max_total_bytes:
            raise UnsafeMember(
                f"{what}: members add up to more than {_size(limits.max_total_bytes)} (the cap): refused"
            )
        if name in seen:
            raise UnsafeMember(f"{what}: member {name!r} appears twice: refused")
        seen.add(name)
        _data_filter(m, name, dest, what)
        yield m, name, tar


def _data_filter(m: tarfile.TarInfo, name: str, dest: Path, what: str) -> None:
    """tarfile's own ``data`` filter (Python 3.11.4+), as a second opinion on every member."""
    check = getattr(tarfile, "data_filter", None)
    if check is None:  # pragma: no cover - older 3.11 patch releases: our own checks stand alone
        return
    try:
        check(m, str(dest))
    except tarfile.FilterError as exc:
        raise UnsafeMember(f"{what}: member {name!r} refused by the data filter: {exc}") from None


def _scan(path: Path, limits: Limits, dest: Path) -> int:
    """Pass 1: check every member and count the stream; writes nothing. Returns the declared total."""
    total = 0
    for m, _, _ in _members(path, limits, dest):
        total += m.size
    return total


def _extract(path: Path, limits: Limits, staging: Path) -> None:
    """Pass 2: the same checks again, writing plain files under ``staging`` only."""
    for m, name, tar in _members(path, limits, staging):
        target = staging.joinpath(*name.split("/"))
        try:
            if m.isdir():
                target.mkdir(parents=True, exist_ok=True, mode=0o755)
                continue
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            src = tar.extractfile(m)
            if src is None:  # pragma: no cover - regular members always have data
                raise UnsafeMember(f"{path.name}: member {name!r} has no data")
            _copy_member(src, target, m.size, name, path.name)
        except (FileExistsError, NotADirectoryError) as exc:
            raise UnsafeMember(
                f"{path.name}: member {name!r} collides with another member ({exc.strerror}): refused"
            ) from None


def _copy_member(src: IO[bytes], target: Path, size: int, name: str, what: str) -> None:
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    written = 0
    with os.fdopen(fd, "wb") as out:
        while chunk := src.read(_CHUNK):
            written += len(chunk)
            if written > size:  # pragma: no cover - tarfile reads exactly size bytes
                raise UnsafeMember(f"{what}: member {name!r} holds more data than its header says: refused")
            out.write(chunk)


def open_package(
    path: str | os.PathLike[str], target_dir: str | os.PathLike[str], *, limits: Limits = Limits(), check: bool = True
) -> Path:
    """Safely extract a repro package into ``target_dir`` and return its session file.

    Nothing is executed and nothing is written outside ``target_dir``. With ``check`` (the
    default) the manifest and the session's digest chain must verify, else nothing stays.

    Raises:
        PackageError: not a package, hostile (``UnsafeMember``), over the caps, tampered with,
            or it would overwrite something already in ``target_dir``.
    """
    src, target = Path(path), Path(target_dir)
    target.mkdir(parents=True, exist_ok=True)
    declared = _scan(src, limits, target)
    free = shutil.disk_usage(target).free
    if declared > free:
        raise PackageError(f"{src.name}: needs {_size(declared)} but {target} has only {_size(free)} free")
    staging = Path(tempfile.mkdtemp(prefix=".k3tui-open-", dir=target))
    try:
        _extract(src, limits, staging)
        root = _root(staging, src.name)
        if check:
            ok, message = check_folder(root, src.name)
            if not ok:
                raise PackageError(message)
        session = _session_in(root, src.name)
        final = _move_out(staging, target, src.name)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final / session.relative_to(staging)


def _root(staging: Path, what: str) -> Path:
    found = [p.parent for p in staging.rglob(MANIFEST) if p.is_file()]
    if len(found) == 1:
        return found[0]
    if found:
        raise PackageError(f"{what}: holds {len(found)} manifests: not one repro package")
    tops = [p for p in staging.iterdir()]
    return tops[0] if len(tops) == 1 and tops[0].is_dir() else staging


def _session_in(root: Path, what: str) -> Path:
    if (root / SESSION).is_file():
        return root / SESSION
    found = sorted(root.rglob("*.k3rec"))
    if len(found) != 1:
        raise PackageError(f"{what}: holds {len(found)} session files (.k3rec), expected exactly one")
    return found[0]


def _move_out(staging: Path, target: Path, what: str) -> Path:
    """Move the extracted top entry out of staging; returns where ``staging`` now maps to."""
    entries = list(staging.iterdir())
    clash = [e.name for e in entries if os.path.lexists(target / e.name)]
    if clash:
        raise PackageError(f"{what}: {target / clash[0]} already exists: open the package into an empty folder")
    if len(entries) != 1:
        return staging  # loose files: leave them in the (private) staging folder, named in the return value
    os.rename(entries[0], target / entries[0].name)
    staging.rmdir()
    return target


# --- verification --------------------------------------------------------------------------------


def check_folder(root: Path, what: str = "") -> tuple[bool, str]:
    """Check an extracted package folder: manifest hashes, then the session's chain."""
    label = what or root.name
    manifest = root / MANIFEST
    if not manifest.is_file():
        return False, f"{label}: {MANIFEST} is missing: not a k3tui package, or the manifest was removed"
    try:
        listed = _parse_manifest(manifest.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        return False, f"{label}: {MANIFEST} is malformed ({exc}): the package was damaged or edited"
    for name, digest in listed.items():
        p = root.joinpath(*name.split("/"))
        if not p.is_file() or p.is_symlink():
            return False, f"{label}: {name} is listed in {MANIFEST} but missing from the package"
        got = _sha256(p)
        if got != digest:
            return False, f"{label}: {name} was ALTERED: its SHA-256 is {got[:16]}…, the manifest says {digest[:16]}…"
    extra = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if not p.is_dir() and p != manifest)
    extra = [n for n in extra if n not in listed]
    if extra:
        return False, f"{label}: {extra[0]} is in the package but not in {MANIFEST} (added after export)"
    return _check_chain(root, label, len(listed))


def _parse_manifest(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for i, line in enumerate(text.splitlines(), start=1):
        m = re.fullmatch(r"([0-9a-f]{64}) [ *](\S.*)", line)
        if not m or ".." in PurePosixPath(m.group(2)).parts or m.group(2).startswith("/"):
            raise ValueError(f"line {i} is not 'SHA256  relative/path'")
        if m.group(2) in out:  # which digest would count? sha256sum -c fails such a manifest too
            raise ValueError(f"line {i} lists {m.group(2)!r} a second time")
        out[m.group(2)] = m.group(1)
    return out


def _check_chain(root: Path, label: str, files: int) -> tuple[bool, str]:
    try:
        session = _session_in(root, label)
        result = verify(session)
    except (PackageError, RecordingError) as exc:
        return False, f"{label}: {exc}".replace(str(root) + os.sep, "")
    rel = session.relative_to(root).as_posix()
    chain = result.message.replace(str(session), rel)
    if not result.ok:
        return False, f"{label}: {chain}"
    return True, f"{label}: package intact, {files} files match {MANIFEST}; {chain}"


def verify_package(path: str | os.PathLike[str], *, limits: Limits = Limits()) -> tuple[bool, str]:
    """Verify a repro package: safe extraction, manifest hashes, the session's chain.

    Returns:
        (ok, message): the message names the first bad file (or the hostile member).

    Raises:
        PackageError: the file is not a package at all (missing, not gzip, not tar).
    """
    src = Path(path)
    with tempfile.TemporaryDirectory(prefix="k3tui-verify-") as tmp:
        staging = Path(tmp) / "x"
        staging.mkdir()
        try:
            _scan(src, limits, staging)
            _extract(src, limits, staging)
        except UnsafeMember as exc:
            return False, str(exc)
        return check_folder(_root(staging, src.name), src.name)


def session_from_package(path: str | os.PathLike[str]) -> str:
    """Open a package into a private temporary folder (removed at exit); return its session path."""
    tmp = tempfile.mkdtemp(prefix="k3tui-pkg-")
    atexit.register(shutil.rmtree, tmp, True)
    try:
        return str(open_package(path, tmp))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise

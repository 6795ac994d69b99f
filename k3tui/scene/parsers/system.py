"""Parsers for what the operating system and the Python stack print: os-release, uname,
``ldconfig -p``, ``/etc/ld.so.conf.d``, env, ``/proc/PID/cmdline`` and ``/proc/PID/maps``,
the versions probe's JSON, and the fixture form of torch's version report.

Why the loaded libcuda matters: vLLM images since 0.15 ship a ``cuda-compat.conf``
linker entry; under some runtimes the container's forward-compatibility ``libcuda``
then shadows the host driver and start-up dies with Error 803 while ``nvidia-smi``
still works. Only ``/proc/PID/maps`` says which copy the server really mapped, and
the copy's file name carries its driver version (``libcuda.so.580.159.04``).
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from ._common import ParseError, strip_transcript


def parse_os_release(text: str) -> dict[str, str]:
    """``/etc/os-release`` → its keys lower-cased (``pretty_name``, ``id``, ``version_id`` …)."""
    out: dict[str, str] = {}
    for ln in strip_transcript(text).splitlines():
        key, sep, val = ln.partition("=")
        if sep and re.fullmatch(r"[A-Z_][A-Z0-9_]*", key):
            try:
                parts = shlex.split(val)
            except ValueError:
                parts = [val.strip("\"'")]
            out[key.lower()] = parts[0] if parts else ""
    if not out:
        raise ParseError("not an os-release file: no KEY=value lines")
    return out


def parse_uname(text: str) -> dict[str, str]:
    """``uname -a`` → {system, hostname, kernel, arch, raw}."""
    line = strip_transcript(text).strip().splitlines()
    if not line or not re.match(r"^[A-Z][\w-]* \S+ \d+\.\d+\S* ", line[0]):
        raise ParseError("not uname -a output (SYSTEM HOSTNAME KERNEL …)")
    f = line[0].split()
    arch = next((x for x in reversed(f) if x in {"x86_64", "aarch64", "arm64", "ppc64le", "s390x", "riscv64"}), None)
    return {"system": f[0], "hostname": f[1], "kernel": f[2], "arch": arch or "", "raw": line[0]}


_LDC = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)")


def parse_ldconfig(text: str) -> list[dict[str, str]]:
    """``ldconfig -p`` lines → [{lib, arch, path}] in the linker's order of preference."""
    out = []
    for ln in strip_transcript(text).splitlines():
        if m := _LDC.match(ln):
            out.append({"lib": m[1], "arch": m[2], "path": m[3]})
    return out


def parse_ld_so_conf(text: str) -> dict[str, list[str]]:
    """The ``ld_so_conf`` probe (``==> FILE <==`` blocks) → {file: [entries]} (comments dropped)."""
    out: dict[str, list[str]] = {}
    cur: list[str] | None = None
    for ln in strip_transcript(text).splitlines():
        if m := re.match(r"^==> (.+) <==$", ln):
            cur = out.setdefault(m[1], [])
        elif cur is not None and ln.strip() and not ln.lstrip().startswith("#"):
            cur.append(ln.strip())
    return out


def parse_env(text: str) -> dict[str, str]:
    """``env`` / ``/proc/PID/environ`` (one ``NAME=value`` per line) → dict.

    A line that does not start a new ``NAME=`` continues the previous value (a value
    with a newline in it).
    """
    out: dict[str, str] = {}
    last = None
    for ln in strip_transcript(text).split("\n"):
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_.-]*)=(.*)$", ln)
        if m:
            last = m[1]
            out[last] = m[2]
        elif last is not None and ln:
            out[last] += "\n" + ln
    return out


def parse_cmdline(text: str) -> list[str]:
    """``/proc/PID/cmdline`` (NULs, or the probe's one-arg-per-line) → argv."""
    body = text.replace("\0", "\n")
    return [a for a in body.split("\n") if a != ""]


def parse_pgrep(text: str) -> list[dict[str, Any]]:
    """``pgrep -af`` lines, or the probe's ``PID CONTAINER-ID|- ARGS`` lines → [{pid, container_id, command}]."""
    out = []
    for ln in strip_transcript(text).splitlines():
        pid, _, rest = ln.strip().partition(" ")
        if not pid.isdigit():
            continue
        cid, _, cmd = rest.partition(" ")
        if cid == "-" or re.fullmatch(r"[0-9a-f]{64}", cid):
            out.append({"pid": int(pid), "container_id": None if cid == "-" else cid, "command": cmd.strip()})
        else:
            out.append({"pid": int(pid), "container_id": None, "command": rest.strip()})
    return out


_MAPS_RAW = re.compile(r"^[0-9a-f]+-[0-9a-f]+\s+\S{4}\s+\S+\s+\S+\s+\d+\s+(/.*?)(?: \(deleted\))?$")
_MAPS_PROBE = re.compile(r"^(\d+) (/\S+) -> ?(\S*)$")


def parse_maps(text: str) -> list[dict[str, Any]]:
    """Loaded shared libraries → [{pid, path, resolved}], unique per (pid, path).

    Accepts raw ``/proc/PID/maps`` lines, the ``proc_maps`` probe's ``PID PATH -> RESOLVED``
    lines, and bare paths (one per line, as a process's loaded-libs listing prints them).
    """
    seen: dict[tuple[Any, Any], dict[str, Any]] = {}
    for ln in strip_transcript(text).splitlines():
        ln = ln.rstrip()
        rec: dict[str, Any]
        if m := _MAPS_PROBE.match(ln):
            rec = {"pid": int(m[1]), "path": m[2], "resolved": m[3] or None}
        elif m := _MAPS_RAW.match(ln):
            rec = {"pid": None, "path": m[1], "resolved": None}
        elif re.fullmatch(r"/\S+\.so[\w.]*", ln.strip()):
            rec = {"pid": None, "path": ln.strip(), "resolved": None}
        else:
            continue
        seen.setdefault((rec["pid"], rec["path"]), rec)
    return list(seen.values())


def lib_version(path: str | None) -> str | None:
    """``/x/libcuda.so.580.159.04`` → ``580.159.04``; ``libcuda.so.1`` → None (not a version)."""
    if not path:
        return None
    m = re.search(r"\.so\.(\d+\.\d+(?:\.\d+)*)$", path)
    return m[1] if m else None


def libcuda_from_maps(libs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The libcuda the process mapped: {path, resolved, version, compat, pids}, or None."""
    hits = [r for r in libs if re.search(r"/libcuda\.so", r["path"])]
    if not hits:
        return None
    first = hits[0]
    real = first.get("resolved") or first["path"]
    paths = sorted({r["path"] for r in hits})
    return {
        "path": first["path"],
        "resolved": first.get("resolved"),
        "version": lib_version(real) or lib_version(first["path"]),
        "compat": any("compat" in p for p in paths),
        "all_paths": paths,
        "pids": sorted({r["pid"] for r in hits if r["pid"] is not None}),
    }


def parse_versions_json(text: str) -> dict[str, Any]:
    """The ``*_versions`` probe's one JSON line → {python, torch, torch_cuda, vllm, nccl, …}."""
    for ln in reversed(strip_transcript(text).splitlines()):
        if ln.startswith("{"):
            try:
                data = json.loads(ln)
            except json.JSONDecodeError as exc:
                raise ParseError(f"versions probe printed broken JSON: {exc}") from None
            if isinstance(data, dict):
                return data
    raise ParseError("versions probe printed no JSON line")


def parse_torch_report(text: str) -> dict[str, Any]:
    """A torch self-report (``torch X cuda Y cudnn Z`` / ``nccl (2, 28, 9)`` / ``devices N …`` /
    ``loaded libs:`` paths) → versions, devices and the libraries it loaded."""
    body = strip_transcript(text)
    m = re.search(r"^torch (\S+) cuda (\S+)(?: cudnn (\S+))?", body, re.M)
    if m is None:
        raise ParseError("no 'torch VERSION cuda VERSION' line")
    nccl = re.search(r"^nccl \((\d+), (\d+), (\d+)\)", body, re.M)
    dev = re.search(r"^devices (\d+) (.+?) \((\d+), (\d+)\)", body, re.M)
    libs_text = body.split("loaded libs:", 1)[1] if "loaded libs:" in body else ""
    return {
        "torch": m[1],
        "torch_cuda": None if m[2] == "None" else m[2],
        "cudnn": m[3],
        "nccl": ".".join(nccl.groups()) if nccl else None,
        "device_count": int(dev[1]) if dev else None,
        "device_name": dev[2] if dev else None,
        "compute_cap": f"{dev[3]}.{dev[4]}" if dev else None,
        "loaded_libs": parse_maps(libs_text),
    }

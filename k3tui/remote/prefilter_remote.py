"""k3tui log prefilter, shipped to the host over SSH and run there as ``python3 -S - OP ARGS`` (source on stdin).

Why a program on the host: a server log that has grown for days is gigabytes, and reading
it over SSH costs minutes; reading it once where it lies costs seconds. This program reads
the WHOLE file once and answers with byte offsets of the lines that can matter to k3tui's
classifier (the needles k3tui sends), the file's size and its SHA-256 — so that k3tui then
fetches only small windows around those lines and classifies them.

Shape, for speed on a host with many cores and no packages:

- stdlib only, Python 3.6+, run with ``-S`` (no site-packages, nothing installed);
- the file is mapped once (``mmap``) and each needle is found with ``mmap.find`` (C speed);
  the search is split by byte range over forked workers, the SHA-256 runs in its own
  forked process at the same time (hashlib releases nothing in pure Python; a process is
  the only parallelism), so the hits are printed as soon as the search ends, the hash after;
- only the bytes present when the scan started are read (a growing log is scanned as the
  prefix it had; its size says which), so size, hash and offsets always agree.

Ops (one JSON argument each; one JSON object per output line):

- ``scan {"path","start","needles":[[id,hex,cap]...],"gate":[hex,[[id,hex,cap]...]]|null,
  "sep":hex,"hash"}`` → ``{"hits":[[line_offset,line_number,id]...],"size","lines","last_nl",
  "dropped":{id:[line_offset,line_number]}}`` then ``{"sha256","hashed"}``. ``line_number``
  counts ``sep`` (b"\\n", or the format's end of a text line) from ``start`` to the line; a
  needle that reached its cap (per worker range) is ``dropped`` there: hits of it after that
  line are missing, and k3tui scans again from there if it still needs them.
- ``fetch {"path","ranges":[[lo,anchor,before,min_end]...],"size","nonce","sep"}`` → for each
  range, a header line ``NONCE START END K`` and the bytes from START (the start of the line
  holding ``anchor - before``, never before ``lo``) to the first line end at or after
  ``min_end`` (never past ``size``); K is the count of ``sep`` from START to ``anchor``. A
  range cut by ``size`` without a final newline gets one added; END says where the file's
  bytes stopped.
"""

import hashlib
import json
import mmap
import os
import re
import sys

BLOCK = 8 << 20
CHUNK = 64 << 20
"""Bytes one worker searches before its hits are printed."""


def _line_start(mm, pos):
    return mm.rfind(b"\n", 0, pos) + 1


_SEARCHES = {}


def _find(mm, needle, pos, end):
    """``mm.find(needle, pos, end)``; a short needle (``rror``, the ``.py:`` gate) by a compiled literal
    pattern, whose scan for its first byte runs about twice as fast as find's on log text (find's skip table
    for a 4-byte needle aliases the digits and letters logs are full of); a long one by find, which skips by
    its length. (The bound is the classifier's ``_FIND_FROM``, written again: this program runs on the host
    and imports nothing of k3tui.)"""
    if len(needle) >= 8:
        return mm.find(needle, pos, end)
    search = _SEARCHES.get(needle)
    if search is None:
        search = _SEARCHES[needle] = re.compile(re.escape(needle)).search
    m = search(mm, pos, end)
    return -1 if m is None else m.start()


def _find_all(mm, needle, lo, hi, cap, out, nid):
    """Offsets in [lo, hi) where needle starts (it may run past hi); at most cap."""
    if cap == 1:  # one of a family of spellings: only the first of them all matters
        hi = min([hi] + [i for i, n in out if n < 0 and i >= lo] or [hi])
    end = min(len(mm), hi + len(needle) - 1)
    pos = lo
    n = 0
    while True:
        i = _find(mm, needle, pos, end)
        if i < 0 or i >= hi:
            return None
        out.append((i, nid))
        if cap == 1:
            out.append((i, -1))
        n += 1
        if cap is not None and n >= cap:
            return i
        pos = i + 1


def _gate_hits(mm, gate, markers, lo, hi, caps, out):
    """Lines holding the gate (``.py:``) and one of the gated markers; a marker is dropped at its cap."""
    gb, counts, active = gate, {}, list(markers)
    end = min(len(mm), hi + len(gb) - 1)
    pos, last_line = lo, -1
    dropped = {}
    while active:
        i = _find(mm, gb, pos, end)
        if i < 0 or i >= hi:
            break
        ls = _line_start(mm, i)
        nl = mm.find(b"\n", i)
        nl = len(mm) if nl < 0 else nl
        pos = nl + 1
        if ls == last_line:
            continue
        last_line = ls
        low = mm[ls:nl].lower()
        for mid, mb in list(active):
            if mb in low:
                out.append((i, mid))
                counts[mid] = counts.get(mid, 0) + 1
                if caps[mid] is not None and counts[mid] >= caps[mid]:
                    active.remove((mid, mb))
                    dropped[mid] = i
    return dropped


def _search(mm, spec, lo, hi):
    """All needle hits in [lo, hi), the newline count there, which needles hit their cap where."""
    hits, dropped = [], {}
    once = {nid for nid, _, cap in spec["needles"] if cap == 1}
    for nid, hexb, cap in spec["needles"]:
        at = _find_all(mm, bytes.fromhex(hexb), lo, hi, cap, hits, nid)
        if at is not None and cap != 1:
            dropped[nid] = at
    if spec.get("gate"):
        gate, markers = spec["gate"]
        caps = {m[0]: m[2] for m in markers}
        dropped.update(
            _gate_hits(mm, bytes.fromhex(gate), [(m[0], bytes.fromhex(m[1])) for m in markers], lo, hi, caps, hits)
        )
    first = min([i for i, n in hits if n < 0] or [-1])
    hits = [(i, n) for i, n in hits if n >= 0 and (n not in once or i == first)]
    hits.sort()
    return hits, dropped


def _count(mm, sep, lo, hi):
    n, pos = 0, lo
    while pos < hi:
        e = min(hi, pos + BLOCK)
        n += mm[pos : e + len(sep) - 1].count(sep) if len(sep) > 1 else mm[pos:e].count(sep)
        pos = e
    return n


def _worker(path, size, spec, lo, hi, wfd):
    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), size, access=mmap.ACCESS_READ)
        hits, dropped = _search(mm, spec, lo, hi)
        sep = bytes.fromhex(spec.get("sep", "0a"))
        marks, at, pos, n = [], {}, lo, 0
        for i, nid in hits:
            ls = _line_start(mm, i)
            if ls < lo:
                line = -_count(mm, sep, ls, lo)
            else:
                if ls > pos:
                    n += _count(mm, sep, pos, ls)
                    pos = ls
                line = n
            marks.append((ls, line, nid))
            at[i] = (ls, line)
        drop = {nid: list(at[i]) for nid, i in dropped.items()}
        total = n + _count(mm, sep, pos, hi)
    os.write(wfd, json.dumps({"marks": marks, "lines": total, "dropped": drop}).encode())
    os.close(wfd)


def _spawn(fn, *args):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            fn(*args, w)
        finally:
            os._exit(0)
    os.close(w)
    return pid, r


def _collect(pid, r):
    parts = []
    while True:
        b = os.read(r, 1 << 16)
        if not b:
            break
        parts.append(b)
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(b"".join(parts).decode()) if parts else None


def _hash(path, start, size, wfd):
    h = hashlib.sha256()
    buf = bytearray(BLOCK)
    view = memoryview(buf)
    left = size
    with open(path, "rb", buffering=0) as fh:
        while left > 0:
            n = fh.readinto(view[: min(BLOCK, left)])
            if not n:
                break
            h.update(view[:n])
            left -= n
    os.write(wfd, json.dumps({"sha256": h.hexdigest(), "hashed": size - left}).encode())
    os.close(wfd)


def _workers():
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cpus - 1, 16))


def scan(spec):
    path, start = spec["path"], int(spec.get("start", 0))
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        end = min(size, int(spec.get("end") or size))
        fh.seek(max(0, size - 1))
        last_nl = size == 0 or fh.read(1) == b"\n"
    _emit({"size": size, "path": path})
    hasher = _spawn(_hash, path, start, size) if spec.get("hash") and start == 0 else None
    lines = _scan_chunks(path, size, spec, start, end) if end > start else 0
    _emit({"done": True, "lines": lines, "last_nl": last_nl, "upto": end})
    if hasher is not None:
        _emit(_collect(*hasher) or {"sha256": None})


def _emit(doc):
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def _scan_chunks(path, size, spec, start, end):
    """Chunks searched by a pool of forked workers, their hits printed in FILE ORDER as soon
    as every chunk before them is done: k3tui reads the first windows while the rest is scanned."""
    step = max(1 << 20, min(CHUNK, (end - start) // (_workers() * 2) + 1))
    chunks, lo, size_k = [], start, 4 << 20
    while lo < end:  # small chunks first: the start of a log is answered at once
        chunks.append((lo, min(end, lo + min(size_k, step))))
        lo, size_k = chunks[-1][1], size_k * 2
    running, nxt, base = {}, 0, 0
    for k in range(len(chunks)):
        while nxt < len(chunks) and len(running) < _workers():
            running[nxt] = _spawn(_worker, path, size, spec, *chunks[nxt])
            nxt += 1
        res = _collect(*running.pop(k))
        hits = [[ls, base + n, nid] for ls, n, nid in res["marks"]]
        dropped = {nid: [ls, base + n] for nid, (ls, n) in res["dropped"].items()}
        base += res["lines"]
        _emit({"hits": hits, "dropped": dropped, "upto": chunks[k][1], "lines": base})
    return base


def fetch(spec):
    path, size, nonce = spec["path"], int(spec["size"]), spec["nonce"]
    sep = bytes.fromhex(spec.get("sep", "0a"))
    out = sys.stdout.buffer
    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), size, access=mmap.ACCESS_READ) if size else b""
        for lo, anchor, before, min_end in spec["ranges"]:
            lo, anchor = max(0, min(int(lo), size)), max(0, min(int(anchor), size))
            x = max(lo, anchor - int(before))
            start = max(lo, mm.rfind(b"\n", 0, x) + 1) if x > 0 else 0
            k = _count(mm, sep, start, anchor) if anchor > start else 0
            nl = mm.find(b"\n", max(start, min(int(min_end), size) - 1)) if size else -1
            end = size if nl < 0 else nl + 1
            out.write(f"{nonce} {start} {end} {k}\n".encode())
            out.write(mm[start:end])
            if end > start and mm[end - 1 : end] != b"\n":
                out.write(b"\n")
    out.flush()


def main(argv):
    op, spec = argv[1], json.loads(argv[2])
    try:
        {"scan": scan, "fetch": fetch}[op](spec)
    except (OSError, ValueError) as exc:
        sys.stderr.write("k3tui-prefilter: {}: {}\n".format(spec.get("path"), getattr(exc, "strerror", None) or exc))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

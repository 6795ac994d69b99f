"""`k3tui classify LOG [--json]` — first failing stage and root exception of a vLLM log.

The log is streamed through the same :class:`~k3tui.classify.Classifier` the live
session uses, in 1 MiB chunks, so a multi-GB log needs no more memory than a small one.
Bad input (missing file, a directory, binary garbage) is one line on stderr and a
non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import codecs
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from ..classify import Classifier, ClassifyResult
from ..errors import UsageError
from ..textsafe import neutralise as safe_line

HELP = "classify a vLLM server log: first failing stage and root exception"
CHUNK = 1 << 20
SNIFF = 8192


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("log", metavar="LOG", help="server log file, or - for stdin")
    p.add_argument("--json", action="store_true", help="print one JSON object (keys documented in issue 4)")
    p.add_argument("--run", default="", help="run id to put on the result (default: the file name)")


def run(args: argparse.Namespace) -> int:
    name = "stdin" if args.log == "-" else args.log
    classifier = Classifier(run=args.run or name)
    for chunk in _chunks(args.log):
        classifier.feed(chunk)
    result = classifier.finish()
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        print(render(result, name))
    return 0


def _open(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{path}: is a directory; give the server log file (e.g. run-dir/server.log)")
    if not p.exists():
        raise UsageError(f"{path}: no such file; check the path of the server log")
    try:
        return p.open("rb")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from exc


def _chunks(path: str) -> Iterator[str]:
    """Decoded chunks of the log; refuses binary files after sniffing the first bytes."""
    stream = _open(path)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        first = True
        while block := stream.read(CHUNK):
            if first:
                _refuse_binary(block[:SNIFF], path)
                first = False
            yield decoder.decode(block)
        if first:
            raise UsageError(f"{path}: empty log, nothing to classify; is the server writing to another file?")
        yield decoder.decode(b"", final=True)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def _refuse_binary(head: bytes, path: str) -> None:
    """A text log has no NUL bytes and few control bytes; anything else is not a log."""
    if b"\x00" in head:
        raise UsageError(f"{path}: looks binary (NUL bytes), not a server log")
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 13, 27))
    if head and controls / len(head) > 0.1:
        raise UsageError(f"{path}: looks binary ({controls} control bytes in the first {len(head)}), not a server log")


def render(result: ClassifyResult, name: str = "") -> str:
    """The human report: timeline, failed stage, root exception with its stack, advice."""
    out = [f"log: {name}  ({result.lines} lines)" if name else f"{result.lines} lines"]
    out.append("stage timeline:")
    for mark in result.stages:
        when = f"  {mark.time}" if mark.time else ""
        out.append(f"  {mark.stage:<10} line {mark.line}{when}")
    if not result.stages:
        out.append("  (no stage marker found)")
    out.append(f"failed stage: {result.failed_stage.upper() if result.failed_stage != 'none' else 'none'}")
    fe = result.first_exception
    if fe is not None:
        proc = f" in {fe.process}" if fe.process else ""
        out.append(f"root exception (line {fe.line_number}{proc}):")
        out.append(f"  {safe_line(fe.line)}")
        out.append("stack as printed:")
        out += [f"  | {safe_line(s)}" for s in fe.stack]
    oom = {True: "yes, the root cause", False: "only as a consequence", None: "none"}[result.oom_root_cause]
    out.append(f"out of memory: {oom}")
    if result.signature:
        out.append(f"signature: {safe_line(result.signature)}")
    out.append(f"advice: {result.advice}")
    return "\n".join(out)

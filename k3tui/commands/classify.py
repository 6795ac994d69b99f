"""`k3tui classify LOG [--json]` — first failing stage and root exception of a vLLM log.

The log is streamed through the same :class:`~k3tui.classify.Classifier` the live
session uses, in 1 MiB chunks, so a multi-GB log needs no more memory than a small one; a log
up to 16 MiB is held whole first, so that an export a log viewer wrote newest first is read in
the order it was printed (its line numbers still the file's).
Bad input (missing file, a directory, an empty file) is one line on stderr and exit 2,
never a traceback. A file that is not a vLLM log at all (``/etc/passwd``, random text, a
binary) is classified ``unknown`` with one line saying so and exit 3, never a healthy
``none`` with exit 0.
"""

from __future__ import annotations

import argparse
import codecs
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from ..classify import Classifier, ClassifyResult, advice_for, classify_text
from ..errors import K3Error, UsageError
from ..textsafe import neutralise as safe_line

HELP = "classify a vLLM server log: first failing stage and root exception"
CHUNK = 1 << 20
SNIFF = 8192
HOLD = 16 << 20
"""Characters of a log held whole (to read a newest-first export in order); a longer log is streamed."""
EXIT_NOT_A_LOG = 3

EPILOG = """\
--json prints one object with these keys:
  failed_stage     container|config|device|weights|engine|api|runtime: the layer of the
                   first root failure; none: no failure; unknown: not a vLLM log
  stages           [{stage, line, time}]: start-up stages reached, line numbers 1-based
  first_exception  null, or {line (the root error line as printed), line_number, stack
                   (the root's stack as printed), process ("Worker_TP3 pid=42" or null),
                   context (the wrapper line it was unwrapped from: pydantic's header,
                   RayTaskError(...), CalledProcessError; the line a logger printed the
                   message on before its traceback; the first line of a message that
                   starts on the line after the exception's; or null)}
  oom_root_cause   true: an out-of-memory is the root; false: only a consequence; null: none
  signature        "stage|ExceptionType|normalised message" ("" without a failure)
  advice           what the failed layer means and the one next step there
  evidence         {rule, lines, why}: what decided failed_stage. rule is one of
                   message, frames, api-ready, wording, markers, exception-type, default,
                   hang (no failure line; the log ends with the server waiting on a part that
                   never answered), no-root, not-a-vllm-log; lines are the log lines it rests on
  confidence       high (the root's own message or stack), medium (when it happened,
                   the wording, the start-up markers), low (its type alone, or nothing)
  host_fault       only with --host-log: null, or the kernel's fatal Xid/SXid close before
                   the first exception, which is then the root ({summary, gpu, xid, unix,
                   meaning, action, line, …}); failed_stage stays the software's layer

A log up to 16 MiB that a log viewer exported newest first (its entries' times run backwards) is
read in the order it was printed; every line number above is still the file's.

exit status: 0 classified (a failure or a healthy run), 2 bad input (no such file,
a directory, an empty file), 3 not a vLLM server log (failed_stage "unknown")."""


class NotAServerLog(K3Error):
    """The file is not a vLLM server log at all (binary, or no vLLM line in it)."""

    exit_code = EXIT_NOT_A_LOG


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = EPILOG
    p.add_argument("log", metavar="LOG", help="server log file, or - for stdin")
    p.add_argument("--json", action="store_true", help="print one JSON object (its keys are listed below)")
    p.add_argument("--run", default="", help="run id to put on the result (default: the file name)")
    p.add_argument(
        "--host-log",
        metavar="KERNEL_LOG",
        help="the host's kernel log (journalctl -k, dmesg -T, or dmesg with a '# boot: UNIX' line): "
        "a fatal Xid/SXid close before the first exception becomes the root",
    )


def run(args: argparse.Namespace) -> int:
    name = "stdin" if args.log == "-" else args.log
    try:
        result = _classify(args.log, args.run or name)
    except NotAServerLog as exc:
        return _not_a_log(args, str(exc))
    if result.failed_stage == "unknown":
        return _not_a_log(
            args, f"{name}: not a vLLM server log (no vLLM line, start-up marker, exception or word of its stack in it)"
        )
    fault = _host_fault(args.host_log, result) if getattr(args, "host_log", None) else None
    if args.json:
        out = result.to_json()
        if getattr(args, "host_log", None):
            out["host_fault"] = fault
        print(json.dumps(out, ensure_ascii=False))
    elif fault is not None:
        # the hardware is the root: it comes first, the software's diagnosis is its consequence
        print(_fault_text(fault, result))
        print("consequence, as the server log alone reads:")
        print("\n".join("  " + ln for ln in render(result, name).splitlines()))
    else:
        print(render(result, name))
        if getattr(args, "host_log", None):
            print(_fault_text(fault, result))
    return 0


def _classify(path: str, run: str) -> ClassifyResult:
    """The log held whole up to ``HOLD`` (an export a log viewer wrote newest first is then read in
    the order it was printed, :func:`~k3tui.classify.classify_text`), streamed beyond that."""
    chunks = _chunks(path)
    held: list[str] = []
    size = 0
    for chunk in chunks:
        held.append(chunk)
        size += len(chunk)
        if size > HOLD:
            break
    else:
        return classify_text("".join(held), run=run)
    classifier = Classifier(run=run)
    for chunk in held:
        classifier.feed(chunk)
    held.clear()
    for chunk in chunks:
        classifier.feed(chunk)
    return classifier.finish()


def _not_a_log(args: argparse.Namespace, why: str) -> int:
    """``unknown`` on stdout (JSON when asked), the one-line reason on stderr, exit 3."""
    if args.json:
        out = ClassifyResult(failed_stage="unknown", confidence="low", advice=advice_for("unknown")).to_json()
        out["evidence"] = {"rule": "not-a-vllm-log", "lines": [], "why": why}
        print(json.dumps(out, ensure_ascii=False))
    else:
        print("failed stage: unknown")
    print(f"k3tui: {why}", file=sys.stderr)
    return EXIT_NOT_A_LOG


def _host_fault(path: str, result: ClassifyResult) -> dict | None:
    """The kernel log's fatal fault that is the root of the log's first exception (issue 14)."""
    from ..classify.hostfault import exception_time, faults_from_kernel_log, root_fault
    from ..fleet.timeline import NodeLog

    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(
            f"{path}: cannot read the kernel log: {exc.strerror}; give journalctl -k or dmesg -T output"
        ) from exc
    fe = result.first_exception
    t = exception_time([fe.line, *fe.stack], NodeLog("", "")) if fe else None
    return root_fault(faults_from_kernel_log(text), t) if fe else None


def _fault_text(fault: dict | None, result: ClassifyResult) -> str:
    from ..classify.hostfault import consequence_text

    if fault is None:
        return "host fault: none close before the first exception"
    fe = result.first_exception
    return "\n".join(
        [
            safe_line(consequence_text(fault, fe.line if fe else "")),
            f"advice: {safe_line(str(fault.get('action')))} (hardware first: the software advice below waits until then)",
        ]
    )


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
                encoding = text_encoding(block[:SNIFF])
                decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
                if encoding == "utf-8":
                    _refuse_binary(block[:SNIFF], path)
                first = False
            yield decoder.decode(block)
        if first:
            raise UsageError(f"{path}: empty log, nothing to classify; is the server writing to another file?")
        yield decoder.decode(b"", final=True)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def text_encoding(head: bytes) -> str:
    """The encoding a log was saved in, from its first bytes: a byte-order mark (UTF-8's, UTF-16's and
    UTF-32's, as Windows PowerShell's ``>`` and ``Out-File`` write UTF-16 LE with one), else UTF-16
    without one when every other byte of the text is NUL (ASCII saved as UTF-16), else UTF-8."""
    for bom, name in (
        (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
    ):  # fmt: skip
        if head.startswith(bom):
            return name
    pairs = len(head) // 2
    if pairs >= 8:
        odd, even = head[1 : 2 * pairs : 2], head[0 : 2 * pairs : 2]
        if odd.count(0) > 0.9 * pairs and even.count(0) < 0.1 * pairs:
            return "utf-16-le"
        if even.count(0) > 0.9 * pairs and odd.count(0) < 0.1 * pairs:
            return "utf-16-be"
    return "utf-8"


def _refuse_binary(head: bytes, path: str) -> None:
    """A text log has no NUL bytes and few control bytes; anything else is not a log."""
    if b"\x00" in head:
        raise NotAServerLog(f"{path}: looks binary (NUL bytes), not a vLLM server log")
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 13, 27))
    if head and controls / len(head) > 0.1:
        why = f"looks binary ({controls} control bytes in the first {len(head)})"
        raise NotAServerLog(f"{path}: {why}, not a vLLM server log")


def render(result: ClassifyResult, name: str = "") -> str:
    """The human report: timeline, failed stage, root exception with its stack, advice."""
    out = [f"log: {name}  ({result.lines} lines)" if name else f"{result.lines} lines"]
    if result.newest_first:
        out.append(
            "order: the file runs newest first (a log viewer's export); read oldest first, line numbers are the file's"
        )
    out.append("stage timeline:")
    for mark in result.stages:
        when = f"  {mark.time}" if mark.time else ""
        out.append(f"  {mark.stage:<10} line {mark.line}{when}")
    if not result.stages:
        out.append("  (no stage marker found)")
    out.append(f"failed stage: {result.failed_stage.upper() if result.failed_stage != 'none' else 'none'}")
    if result.evidence is not None:
        lines = ", ".join(str(n) for n in result.evidence.lines)
        where = f", line {lines}" if lines else ""
        out.append(
            f"why: {safe_line(result.evidence.why)} ({result.evidence.rule}{where}; confidence {result.confidence})"
        )
    fe = result.first_exception
    if fe is not None:
        proc = f" in {fe.process}" if fe.process else ""
        out.append(f"root exception (line {fe.line_number}{proc}):")
        out.append(f"  {safe_line(fe.line)}")
        if fe.context:
            out.append(f"  with: {safe_line(fe.context.strip())}")
        out.append("stack as printed:")
        out += [f"  | {safe_line(s)}" for s in fe.stack]
    oom = {True: "yes, the root cause", False: "only as a consequence", None: "none"}[result.oom_root_cause]
    out.append(f"out of memory: {oom}")
    if result.signature:
        out.append(f"signature: {safe_line(result.signature)}")
    out.append(f"advice: {result.advice}")
    return "\n".join(out)

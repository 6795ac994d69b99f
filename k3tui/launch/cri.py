"""The CRI container log format, as the kubelet's runtime writes ``/var/log/pods/NS_NAME_UID/CONTAINER/N.log``.

Each line is ``TIMESTAMP STREAM TAG TEXT``: an RFC 3339 timestamp with nanoseconds, ``stdout``
or ``stderr``, ``F`` (the line is complete) or ``P`` (a partial line: the runtime cut a long
line, the rest follows in the next ``P``/``F`` entries of the same stream), then the text.
``N`` counts the container's restarts, so ``N-1.log`` is the *previous* container's log —
on a crash-looping pod the first root exception is there.

Why a parser of our own: the classifier needs the server's own lines, whole; a 64 KiB
Python traceback line cut into ``P`` pieces must be joined again, per stream, or a
frame is split in two.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

_LINE = re.compile(r"^(\S+) (stdout|stderr) ([FP])(?: (.*))?$", re.S)


@dataclass(frozen=True)
class CriLine:
    time: str
    stream: str
    text: str


def parse(lines: Iterable[str]) -> Iterator[CriLine]:
    """Whole log lines from CRI entries (partials joined per stream); lines not in the format pass as stdout."""
    partial: dict[str, list[str]] = {}
    first: dict[str, str] = {}
    for raw in lines:
        m = _LINE.match(raw.rstrip("\n"))
        if m is None:
            yield CriLine("", "stdout", raw.rstrip("\n"))
            continue
        ts, stream, tag, text = m.group(1), m.group(2), m.group(3), m.group(4) or ""
        if tag == "P":
            first.setdefault(stream, ts)
            partial.setdefault(stream, []).append(text)
            continue
        pieces = partial.pop(stream, [])
        yield CriLine(first.pop(stream, ts), stream, "".join(pieces) + text)
    for stream, pieces in partial.items():  # a log cut mid-line (the container died): keep what there is
        yield CriLine(first[stream], stream, "".join(pieces))


def to_text(data: str) -> str:
    """A CRI log file's content as the plain text the container printed (stdout and stderr interleaved)."""
    return "".join(line.text + "\n" for line in parse(data.splitlines()))


def log_dir(root: str, namespace: str, pod: str, uid: str, container: str) -> str:
    """The kubelet's log folder of one container: ``ROOT/NS_NAME_UID/CONTAINER``."""
    return f"{root.rstrip('/')}/{namespace}_{pod}_{uid}/{container}"

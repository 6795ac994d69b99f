"""Splitting a byte stream into whole lines, fast.

Remote output arrives in chunks of up to 64 KiB. asyncssh's per-line iterator is 6–10×
slower than reading chunks and splitting them here, and whole lines matter beyond speed:
an ``Output`` event carries only complete lines, so the redactor never sees a secret cut
in two across events. A chunk is cut at its last newline *as bytes* before decoding, so a
multi-byte UTF-8 character is never split either.
"""

from __future__ import annotations


class LineSplitter:
    """Feeds bytes in, hands whole lines out; keeps the unterminated tail for later."""

    __slots__ = ("_rest", "consumed")

    def __init__(self) -> None:
        self._rest = b""
        self.consumed = 0
        """Bytes handed out so far as whole lines (the offset to resume from)."""

    def feed(self, data: bytes) -> str:
        """Add a chunk; return the newly completed lines as one text ("" if none), newlines kept."""
        cut = data.rfind(b"\n")
        if cut < 0:
            self._rest += data
            return ""
        whole = self._rest + data[: cut + 1] if self._rest else data[: cut + 1]
        self._rest = data[cut + 1 :]
        self.consumed += len(whole)
        return whole.decode("utf-8", "replace")

    def flush(self) -> str:
        """The unterminated last line, if any (call at end of stream)."""
        rest, self._rest = self._rest, b""
        self.consumed += len(rest)
        return rest.decode("utf-8", "replace")

    @property
    def pending(self) -> int:
        """Bytes received but not yet part of a whole line."""
        return len(self._rest)


def split(text: str) -> list[str]:
    """The lines of a text returned by :meth:`LineSplitter.feed` (without their newlines)."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines

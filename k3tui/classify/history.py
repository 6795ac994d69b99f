"""The last MiB of the log, for the few questions that can only be answered looking back.

An unprefixed traceback (the API server's own stderr) has no sentinel word until its
exception line, and a normal stop announces itself in an INFO line; rather than search
every chunk for those too (each literal is another pass over the whole log), the
classifier asks, when a would-be root arrives: where did this traceback start, and was
the server being stopped just before? The answer depends only on the text before the
current line, never on how it was chunked.
"""

from __future__ import annotations

from collections import deque

LOOKBACK = 1 << 20
"""Characters of history searched."""


class History:
    """The text before the line being classified: the current buffer plus a bounded window."""

    def __init__(self) -> None:
        self._parts: deque[str] = deque()
        """Earlier buffers, oldest first, kept while they reach into the last LOOKBACK characters;
        joined only when a question is asked (rare), so feeding line by line stays O(1) a line."""
        self._size = 0
        self._buf = ""
        self._start = 0

    def begin(self, buf: str) -> None:
        """A new buffer of complete lines is being scanned."""
        self._buf = buf

    def at(self, start: int) -> None:
        """The current line starts at this offset of the buffer."""
        self._start = start

    def end(self, upto: int) -> None:
        """The buffer was scanned up to ``upto``: keep what reaches into the last LOOKBACK characters."""
        part = self._buf[max(0, upto - LOOKBACK) : upto]
        self._parts.append(part)
        self._size += len(part)
        while self._size - len(self._parts[0]) >= LOOKBACK:
            self._size -= len(self._parts.popleft())
        self._buf = ""

    def at_end(self) -> None:
        """Every buffer was scanned: the "current line" is the one after the last."""
        self._buf, self._start = "", 0

    def before(self, chars: int) -> str:
        """Up to ``chars`` characters of text before the current line (ends with its newline)."""
        buf, start = self._buf, self._start
        if start >= chars:
            return buf[start - chars : start]
        w = "".join(self._parts)
        return w[max(0, len(w) - (chars - start)) :] + buf[:start]

    def since(self, needle: str) -> str | None:
        """The text from the line holding the last ``needle`` up to the current line, or None."""
        buf, start = self._buf, self._start
        h = buf.rfind(needle, max(0, start - LOOKBACK), start)
        if h >= 0:
            return buf[buf.rfind("\n", 0, h) + 1 : start]
        if start >= LOOKBACK:
            return None
        w = "".join(self._parts)
        h = w.rfind(needle, max(0, len(w) - (LOOKBACK - start)))
        if h < 0:
            return None
        return w[w.rfind("\n", 0, h) + 1 :] + buf[:start]

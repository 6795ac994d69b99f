"""A REAL slow link in front of a real server: a TCP relay that delays and rate-limits every byte.

Why not ``tc qdisc … netem``: this machine's kernel is built without netem
(``CONFIG_NET_SCH_NETEM is not set`` in ``/proc/config.gz``: ``tc qdisc add … netem`` answers
"Specified qdisc kind is unknown", and there are no modules to load). It has ``tbf`` and
``htb`` (rate only, no delay), so the link is built here, in user space, with the same model
netem + a rate limit use: each direction is a queue drained at ``rate`` bytes/s (serialisation),
and every byte arrives ``delay`` seconds after it left (propagation). Bytes are relayed
unchanged and in order, so the peer behind it (a real OpenSSH sshd) sees an ordinary TCP client.

The relay runs in its own thread with its own event loop, so a busy test loop does not slow
the link, and the link does not slow the rest of the suite (only connections to its port
cross it).

Fixture: ``slow_link`` → ``start(port, *, delay=0.05, rate=1 << 20, host="127.0.0.1") -> SlowLink``:
a relay on a free 127.0.0.1 port to ``host:port``; ``delay`` is ONE WAY (the round trip is
twice it), ``rate`` is bytes/s in each direction. Every relay is stopped at teardown.
``SlowLink`` gives ``port``, ``rtt``, ``rate`` and the bytes relayed each way (``up``, ``down``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

CHUNK = 4096
"""Bytes sent as one unit on the simulated wire: small, so the rate limit is smooth."""


@dataclass
class SlowLink:
    """One relay: 127.0.0.1:``port`` → ``to_host``:``to_port`` over a slow link."""

    to_host: str
    to_port: int
    delay: float
    rate: float
    port: int = 0
    up: int = 0
    """Bytes relayed client → server."""
    down: int = 0
    """Bytes relayed server → client."""
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _server: asyncio.Server | None = field(default=None, repr=False)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set, repr=False)

    @property
    def rtt(self) -> float:
        return 2 * self.delay

    def start(self) -> SlowLink:
        ready = threading.Event()
        failed: list[BaseException] = []

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self._server = loop.run_until_complete(asyncio.start_server(self._accept, "127.0.0.1", 0))
                self.port = self._server.sockets[0].getsockname()[1]
            except BaseException as exc:  # noqa: BLE001 - reported to start()
                failed.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._thread = threading.Thread(target=main, name=f"slowlink-{self.to_port}", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failed:
            raise failed[0]
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is None or self._thread is None:
            return

        async def shut() -> None:
            if self._server is not None:
                self._server.close()
            for t in list(self._tasks):
                t.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shut(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(10)
        self._loop = self._thread = None

    async def _accept(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            s_reader, s_writer = await asyncio.open_connection(self.to_host, self.to_port)
        except OSError:
            c_writer.close()
            self._tasks.discard(task)
            return
        try:
            await asyncio.gather(
                self._direction(c_reader, s_writer, "up"),
                self._direction(s_reader, c_writer, "down"),
            )
        except (asyncio.CancelledError, OSError):
            pass
        finally:
            for w in (c_writer, s_writer):
                w.close()
            self._tasks.discard(task)

    async def _direction(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, name: str) -> None:
        """Relay one direction: serialise at ``rate``, deliver ``delay`` later, in order."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def wire() -> None:
            free_at = 0.0  # when the sender's side of the wire is free again
            while True:
                data = await reader.read(CHUNK)
                now = time.monotonic()
                if not data:
                    await queue.put((now + self.delay, b""))
                    return
                free_at = max(now, free_at) + len(data) / self.rate
                await queue.put((free_at + self.delay, data))

        async def deliver() -> None:
            while True:
                at, data = await queue.get()
                wait = at - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(data)
                setattr(self, name, getattr(self, name) + len(data))
                await writer.drain()

        await asyncio.gather(wire(), deliver())


@pytest.fixture
def slow_link() -> Iterator[Callable[..., SlowLink]]:
    """``start(port, *, delay=0.05, rate=1 << 20, host="127.0.0.1")``: a slow relay to ``host:port``."""
    links: list[SlowLink] = []

    def start(port: int, *, delay: float = 0.05, rate: float = float(1 << 20), host: str = "127.0.0.1") -> SlowLink:
        link = SlowLink(to_host=host, to_port=port, delay=delay, rate=rate).start()
        links.append(link)
        return link

    try:
        yield start
    finally:
        for link in links:
            link.stop()

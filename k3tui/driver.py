"""The one port from core to UI: a :class:`Driver` runs the procedure, the UI renders its state.

A live driver owns the recorder, the hosts and the ladder engine. Every fact goes
through :meth:`LiveDriver.emit`: the recorder redacts and stamps it, the state folds it,
then subscribers (the UI) get it. Subscribers may be called from the recorder's writer
thread (for recording notices), so the UI must hop to its own thread
(``App.call_from_thread`` or ``post_message``).

The UI calls intents (``run_rung``, ``freeze``, ``note`` …) and never touches SSH,
Docker or HTTP itself. Replay does not use a driver: it reads events from a file and
folds them with the same reducer, so what a colleague replays is what you saw.

How a command hands a live session to the UI (``k3tui demo``, ``k3tui connect``)::

    K3App(driver_factory=make_driver, on_exit=cleanup).run()

``make_driver`` is an async callable returning a :class:`Driver` (not yet started);
the app awaits it on its own event loop, then ``await driver.start()`` in a worker,
renders ``driver.state``, and on quit awaits ``driver.close()`` then ``on_exit()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from . import events as ev
from .recording import Recorder
from .state import SessionState, reduce

Subscriber = Callable[[Any], None]


@runtime_checkable
class Driver(Protocol):
    """What the UI may ask of the core during a live session."""

    state: SessionState
    simulated: bool
    recording_path: Path

    def subscribe(self, cb: Subscriber) -> None: ...
    async def start(self) -> None: ...
    async def run_rung(self, rung: str, repeat: int = 1) -> None: ...
    async def freeze(self, reason: str = "operator") -> None: ...
    async def note(self, text: str) -> None: ...
    async def marker(self, label: str) -> None: ...
    def preview_change(self, changes: dict[str, Any]) -> list[dict[str, Any]]: ...
    async def stop_run(self) -> None: ...
    async def close(self) -> None: ...


def default_recordings_dir() -> Path:
    """Where live sessions are recorded unless told otherwise."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return Path(base) / "k3tui" / "recordings"


def new_recording_path(label: str, directory: Path | None = None) -> Path:
    """A fresh, never-existing session file name: ``<label>-YYYYmmdd-HHMMSS.k3rec``."""
    d = directory or default_recordings_dir()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in label)[:60] or "session"
    p = d / f"{safe}-{stamp}.k3rec"
    n = 1
    while p.exists():
        n += 1
        p = d / f"{safe}-{stamp}-{n}.k3rec"
    return p


def group_connector(spec: str, **kwargs: Any) -> Callable[[Callable[[Any], Any]], Any]:
    """The ``connect`` a :class:`LiveDriver` takes for a TARGET (``host`` or a group ``a,b``).

    One connection per host, opened concurrently; in a group the first host is the head and
    the others are workers (recorded in each ``HostConnected``, so a replay can tell them
    apart); a single host has no role. The first failure closes the others and is raised.
    ``kwargs`` go to :func:`k3tui.remote.ssh.connect` (identity, known_hosts …).
    """

    async def _connect(emit: Callable[[Any], Any]) -> list[Any]:
        from .fleet.inventory import nodes_from_group_spec
        from .remote.ssh import connect

        nodes = nodes_from_group_spec(spec)
        many = len(nodes) > 1
        results = await asyncio.gather(
            *(connect(n.target, emit=emit, role=n.role if many else "", **kwargs) for n in nodes),
            return_exceptions=True,
        )
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            await asyncio.gather(
                *(r.close() for r in results if not isinstance(r, BaseException)), return_exceptions=True
            )
            raise failed[0]
        return list(results)

    return _connect


class LiveDriver:
    """Runs a live session: hosts + recorder + state + ladder engine.

    Args:
        recorder: where events go (it redacts).
        connect: an async callable returning the list of connected ``Host`` objects
            (given ``emit``); the driver closes them on :meth:`close`.
        profile: profile name or path for the ladder.
        simulated: the hosts are the embedded simulated host (shown in the UI).
        container: the serving container to freeze (default: the one running vLLM).
        engine_factory: builds the ladder engine from (hosts, profile, emit); default
            :class:`~k3tui.ladder.LadderEngine` (a multi-node deployment passes its own).
    """

    def __init__(
        self,
        recorder: Recorder,
        connect: Callable[[Callable[[Any], Any]], Any],
        profile: str = "kimi-k3",
        simulated: bool = False,
        container: str | None = None,
        engine_factory: Callable[..., Any] | None = None,
    ) -> None:
        self.recorder = recorder
        self.recording_path = recorder.path
        self.state = SessionState()
        self.simulated = simulated
        self.profile_name = profile
        self.container = container
        self._connect = connect
        self._engine_factory = engine_factory
        self._subs: list[Subscriber] = []
        self.hosts: list[Any] = []
        self.engine: Any = None
        self._lock = asyncio.Lock()
        recorder.subscribe(self._on_event)

    # --- events --------------------------------------------------------------------

    def subscribe(self, cb: Subscriber) -> None:
        """Call ``cb(event)`` for every event (possibly from another thread)."""
        self._subs.append(cb)

    def emit(self, event: ev.Event) -> ev.Event:
        """Record an event (the state and subscribers follow via the recorder)."""
        return self.recorder.emit(event)

    def _on_event(self, event: Any) -> None:
        reduce(self.state, event)
        for cb in list(self._subs):
            with contextlib.suppress(Exception):
                cb(event)

    # --- intents ---------------------------------------------------------------------

    async def start(self) -> None:
        """Connect to the hosts and prepare the ladder engine."""
        from .ladder import LadderEngine
        from .profile import load_profile

        self.hosts = list(await self._connect(self.emit))
        profile = load_profile(self.profile_name)
        factory = self._engine_factory or LadderEngine
        self.engine = factory(self.hosts, profile, self.emit)

    async def run_rung(self, rung: str, repeat: int = 1) -> None:
        async with self._lock:
            await self.engine.run_rung(rung, repeat=repeat)

    async def run_all(self) -> None:
        async with self._lock:
            await self.engine.run_all()

    async def freeze(self, reason: str = "operator") -> None:
        """Freeze every host now (the ``f`` key), each with its current run's log where it has one."""
        if self.engine is not None and self.container is None:
            await self.engine.freeze_all(reason=reason, run=getattr(self.engine, "server", None))
            return
        from .scene.freeze import freeze  # the function (``from .scene import freeze`` was the module)

        await asyncio.gather(
            *(freeze(host, container=self.container, emit=self.emit, reason=reason) for host in self.hosts)
        )

    async def note(self, text: str) -> None:
        self.emit(ev.Note(text=text))

    async def marker(self, label: str) -> None:
        self.emit(ev.Marker(label=label))

    async def decision(self, action: str, reason: str) -> None:
        self.emit(ev.Decision(action=action, reason=reason))

    def preview_change(self, changes: dict[str, Any]) -> list[dict[str, Any]]:
        if self.engine is None:
            return []
        return list(self.engine.preview_change(changes))

    async def apply_change(self, changes: dict[str, Any], reason: str | None = None) -> None:
        self.engine.apply_change(changes, reason=reason)

    async def stop_run(self) -> None:
        if self.engine is not None:
            await self.engine.stop_run()

    async def close(self) -> None:
        """Stop what we started, close connections, finish the recording."""
        if self.engine is not None:
            with contextlib.suppress(Exception):
                await self.engine.close()
        for h in self.hosts:
            with contextlib.suppress(Exception):
                await h.close()
        await asyncio.to_thread(self.recorder.close)

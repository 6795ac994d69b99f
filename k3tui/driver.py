"""The one port from core to UI: a :class:`Driver` runs the procedure, the UI renders its state.

A live driver owns the recorder, the hosts and the ladder engine. Every fact goes
through :meth:`LiveDriver.emit`: the recorder redacts and stamps it, the state folds it,
then subscribers (the UI) get it. Subscribers may be called from the recorder's writer
thread (for recording notices), so the UI must hop to its own thread
(``App.call_from_thread`` or ``post_message``).

The UI calls intents (``run_rung``, ``freeze``, ``note``, ``apply_change``, ``revert``,
``toggle`` …) and never touches SSH, Docker or HTTP itself. A change to the run config
(apply, revert, toggle) is refused while a rung runs: rungs change the config themselves,
and a change must land between runs, never in the middle of one. Replay does not use a
driver: it reads events from a file and folds them with the same reducer, so what a
colleague replays is what you saw (and it has nothing to apply, revert or toggle).

How a command hands a live session to the UI (``k3tui demo``, ``k3tui connect``)::

    K3App(driver_factory=make_driver, on_exit=cleanup).run()

``make_driver`` is an async callable returning a :class:`Driver` (not yet started);
the app awaits it on its own event loop, then ``await driver.start()`` in a worker,
renders ``driver.state``, and on quit awaits ``driver.close()`` then ``on_exit()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from . import events as ev
from .errors import UsageError
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
    async def apply_change(self, changes: dict[str, Any], reason: str | None = None) -> list[dict[str, Any]]: ...
    async def revert(self, reason: str = "") -> list[dict[str, Any]]: ...
    def toggles(self) -> list[dict[str, Any]]: ...
    async def toggle(self, name: str, on: bool = True, confirmed: bool = False) -> list[dict[str, Any]]: ...
    async def stop_run(self) -> None: ...
    def accept_host_key(self, host: str, fingerprint: str) -> None: ...
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


def group_connector(spec: str, **kwargs: Any) -> Callable[..., Any]:
    """The ``connect`` a :class:`LiveDriver` takes for a TARGET (``host`` or a group ``a,b``).

    One connection per host, opened concurrently; in a group the first host is the head and
    the others are workers (recorded in each ``HostConnected``, so a replay can tell them
    apart); a single host has no role. The first failure closes the others and is raised.
    ``kwargs`` go to :func:`k3tui.remote.ssh.connect` (identity, known_hosts …).

    The returned ``connect(emit, accept_new_host_key={alias: fingerprint})`` accepts an
    unknown host key only for the hosts the operator confirmed, each only with the
    fingerprint they were shown: a host that then offers another key is a
    :class:`~k3tui.errors.HostKeyChanged` (every connection closed), refused during the
    handshake (``connect(accept_fingerprint=…)``), so nothing is written to known_hosts.
    """

    async def _connect(emit: Callable[[Any], Any], accept_new_host_key: dict[str, str] | None = None) -> list[Any]:
        from .fleet.inventory import nodes_from_group_spec
        from .remote.ssh import connect

        nodes = nodes_from_group_spec(spec)
        many = len(nodes) > 1
        pins = dict(accept_new_host_key or {})

        def opts(alias: str) -> dict[str, Any]:
            if alias in pins:  # only the key the operator was shown: another one is refused before anything is written
                return {**kwargs, "accept_fingerprint": pins[alias]}
            return kwargs

        results = await asyncio.gather(
            *(connect(n.target, emit=emit, role=n.role if many else "", **opts(n.target.alias)) for n in nodes),
            return_exceptions=True,
        )
        failed = [r for r in results if isinstance(r, BaseException)]
        if not failed:
            failed = _pin_mismatches(results, pins)
        if failed:
            await asyncio.gather(
                *(r.close() for r in results if not isinstance(r, BaseException)), return_exceptions=True
            )
            raise failed[0]
        return list(results)

    return _connect


def _pin_mismatches(hosts: list[Any], pins: dict[str, str]) -> list[BaseException]:
    """Hosts that connected with another key than the one the operator accepted for them."""
    from .errors import HostKeyChanged

    return [
        HostKeyChanged(h.alias, h.fingerprint, pins[h.alias])
        for h in hosts
        if h.alias in pins and getattr(h, "fingerprint", "") != pins[h.alias]
    ]


class LiveDriver:
    """Runs a live session: hosts + recorder + state + ladder engine.

    Args:
        recorder: where events go (it redacts).
        connect: an async callable returning the list of connected ``Host`` objects
            (given ``emit``); the driver closes them on :meth:`close`. One that also takes
            ``accept_new_host_key={alias: fingerprint}`` (:func:`group_connector`) lets the
            operator trust an unknown host key from the UI (:meth:`accept_host_key`).
        profile: profile name or path for the ladder.
        simulated: the hosts are the embedded simulated host (shown in the UI).
        container: the serving container to freeze (default: the one running vLLM).
        engine_factory: builds the ladder engine from (hosts, profile, emit); default
            :class:`~k3tui.ladder.LadderEngine` (a multi-node deployment passes its own).
    """

    def __init__(
        self,
        recorder: Recorder,
        connect: Callable[..., Any],
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
        self._accept: dict[str, str] = {}
        """Unknown host keys the operator accepted: alias → the fingerprint they were shown."""
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

        if self._accept:
            self.hosts = list(await self._connect(self.emit, accept_new_host_key=dict(self._accept)))
        else:
            self.hosts = list(await self._connect(self.emit))
        profile = load_profile(self.profile_name)
        factory = self._engine_factory or LadderEngine
        self.engine = factory(self.hosts, profile, self.emit)

    @property
    def can_accept_host_keys(self) -> bool:
        """Whether :meth:`accept_host_key` can work: the connector takes ``accept_new_host_key``."""
        try:
            return "accept_new_host_key" in inspect.signature(self._connect).parameters
        except (TypeError, ValueError):
            return False

    def accept_host_key(self, host: str, fingerprint: str) -> None:
        """The operator accepted ``host``'s unknown key ``fingerprint``: the next :meth:`start` trusts it.

        Only that key: a host offering another one fails with ``HostKeyChanged``. The
        connection appends the key to known_hosts and records the operator's Decision.

        Raises:
            UsageError: this driver's connector cannot accept host keys (use the CLI's flag).
        """
        if not self.can_accept_host_keys:
            raise UsageError(
                "this session cannot accept a new host key: connect with `k3tui connect --accept-new-host-key`"
            )
        self._accept[host] = fingerprint

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

    async def climb_past_hardware(self, reason: str) -> None:
        """Record why the ladder climbs on although a host has a hardware fault (issue 14's stop)."""
        if self.engine is not None:
            self.engine.climb_past_hardware(reason)

    def preview_change(self, changes: dict[str, Any]) -> list[dict[str, Any]]:
        if self.engine is None:
            return []
        return list(self.engine.preview_change(changes))

    async def apply_change(self, changes: dict[str, Any], reason: str | None = None) -> list[dict[str, Any]]:
        """Change the next run's config; returns the diff (recorded as ``RunConfigSet``).

        Raises:
            OneVariableRule: two or more variables change and no reason was given.
            UsageError: unknown variable, bad value, no change, or a rung is running.
        """
        return list(self._ladder("apply a change").apply_change(changes, reason=reason))

    async def revert(self, reason: str = "") -> list[dict[str, Any]]:
        """Back to the last known good config (recorded as a ``Decision`` with ``reason``)."""
        return list(self._ladder("revert").revert(reason=reason))

    def toggles(self) -> list[dict[str, Any]]:
        """The profile's debug toggles: ``name``, ``env``, ``args``, ``warning``, ``on`` (set in the next run)."""
        if self.engine is None:
            return []
        env = self.engine.config.env
        return [
            {
                "name": t.name,
                "env": dict(t.env),
                "args": list(t.args),
                "warning": t.warning,
                "on": bool(t.env) and all(env.get(k) == v for k, v in t.env.items()),
            }
            for t in self.engine.profile.debug_toggles
        ]

    async def toggle(self, name: str, on: bool = True, confirmed: bool = False) -> list[dict[str, Any]]:
        """Set (or remove) a profile debug toggle for the next run, as one change.

        A toggle with a ``warning`` needs ``confirmed``; the confirmation is recorded as a Decision.

        Raises:
            UsageError: unknown toggle, a warning not confirmed, no change, or a rung is running.
        """
        engine = self._ladder("toggle")
        d = list(engine.toggle(name, on=on, confirmed=confirmed))
        warned = next((t.warning for t in engine.profile.debug_toggles if t.name == name and t.warning), "")
        if on and warned:
            self.emit(ev.Decision(action=f"debug toggle {name} on", reason=f"operator confirmed: {warned}"))
        return d

    def _ladder(self, what: str) -> Any:
        """The engine, if the config may change now (connected, and no rung running)."""
        if self.engine is None:
            raise UsageError(f"cannot {what}: not connected yet")
        if self._lock.locked():
            raise UsageError(f"cannot {what} while a rung runs: wait for it to end (or stop it), then try again")
        return self.engine

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

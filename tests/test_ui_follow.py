"""Issue 21: the replay screen's LIVE — following mode (Pilot), on a file a real Recorder is writing,
locally and over a real sshd: new events shown at the live edge, seeking back holds the position
while events keep arriving, ``G`` returns to the live edge, the end and a tamper are shown."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from k3tui.events import Header, Output
from k3tui.follow import LiveFollow, LocalSource, SshSource
from k3tui.recording import Recorder
from k3tui.remote.ssh import connect
from screens.app import K3App
from screens.replay.replay_screen import ReplayScreen


async def _until(pilot, cond, seconds: float = 15.0) -> None:  # noqa: ANN001
    for _ in range(int(seconds / 0.05)):
        if cond():
            return
        await pilot.pause(0.05)
    scr = pilot.app.screen
    eng = getattr(scr, "engine", None)
    where = (eng.count, eng.position) if eng is not None else type(scr).__name__
    raise AssertionError(f"condition not met in time: {where} {[(w.name, w.state, w.error) for w in pilot.app.workers]}")


def _bar(screen: ReplayScreen) -> str:
    return str(screen.query_one("#livebar").render())


async def _drive(opener, spool: Path, rec: Recorder) -> None:  # noqa: ANN001
    app = K3App(live=LiveFollow(opener, spool), home_dirs=[])
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, ReplayScreen))
        screen = app.screen
        await _until(pilot, lambda: bool(screen.sub_title))  # mounted
        assert "LIVE — following" in _bar(screen) and "sends nothing to any host" in _bar(screen)
        assert "read-only" in screen.sub_title
        eng = screen.engine
        await _until(pilot, lambda: eng.count == 20 and eng.position == 20)
        for i in range(20, 30):
            rec.emit(Output(id="c", text=f"line {i}"))
        await _until(pilot, lambda: eng.count == 30 and eng.position == 30)  # the live edge follows
        await pilot.press("g")
        assert eng.position == 0
        for i in range(30, 40):
            rec.emit(Output(id="c", text=f"line {i}"))
        await _until(pilot, lambda: eng.count == 40)
        await pilot.pause(0.3)
        assert eng.position == 0  # seeking back holds while events arrive
        await pilot.press("G")
        assert eng.position == 40
        assert any(text == "line 39" for _, text in eng.state.log_tail)
        await asyncio.to_thread(rec.close)
        await _until(pilot, lambda: "ENDED" in _bar(screen))
        assert "sealed after 40 events, chain verified" in _bar(screen)


async def test_live_mode_local(tmp_path):
    path = tmp_path / "live.k3rec"
    rec = Recorder(path, Header(host="h", title="live"))
    for i in range(20):
        rec.emit(Output(id="c", text=f"line {i}"))

    async def opener():  # noqa: ANN202
        return LocalSource(path), None

    try:
        await _drive(opener, tmp_path / "spool", rec)
    finally:
        rec.close()


async def test_live_mode_over_ssh(sshd):
    d = Path(tempfile.mkdtemp(prefix="k3follow-ui-", dir="/tmp"))
    d.chmod(0o755)
    path = d / "live.k3rec"
    rec = Recorder(path, Header(host="h", title="live"))
    for i in range(20):
        rec.emit(Output(id="c", text=f"line {i}"))

    async def opener():  # noqa: ANN202
        host = await connect(sshd.target, **sshd.connect_kwargs())
        return SshSource(host, str(path)), host

    try:
        await _drive(opener, d / "spool", rec)
    finally:
        rec.close()

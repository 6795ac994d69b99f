"""Connecting from Home to a REAL sshd whose key is not on record: unknown → shown and trusted on a yes; changed → never.

The session factory is the one ``k3tui`` (no subcommand) gives Home
(:func:`k3tui.commands.tui.session_factory`), pointed at a known_hosts file of the test's own.
"""

from __future__ import annotations

import asyncssh
import pytest

from k3tui import events as ev
from k3tui.commands.tui import session_factory
from k3tui.errors import HostKeyChanged
from k3tui.reader import read_all
from screens.app import K3App
from screens.common.confirm_dialog import ConfirmDialog
from screens.common.text_dialog import TextDialog
from screens.home.home_screen import HomeScreen
from screens.home.host_key import inspect_commands
from screens.session.session_screen import SessionScreen


async def _until(pilot, cond, seconds: float = 15.0) -> None:  # noqa: ANN001
    for _ in range(int(seconds / 0.05)):
        if cond():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached in time")


def _fingerprint(pub: str) -> str:
    return asyncssh.import_public_key(pub).get_fingerprint("sha256")


def _app(sshd, tmp_path, known_hosts) -> K3App:  # noqa: ANN001
    factory = session_factory([], tmp_path, identity=[str(sshd.key_path)], known_hosts=str(known_hosts))
    return K3App(session_factory=factory, home_dirs=[])


async def _connect_from_home(app, pilot, target: str) -> None:  # noqa: ANN001
    await _until(pilot, lambda: isinstance(app.screen, HomeScreen))
    await pilot.press("c")
    app.screen.query_one("#target").value = target
    await pilot.press("enter")


def _session(app) -> SessionScreen:  # noqa: ANN001
    return next(s for s in app.screen_stack if isinstance(s, SessionScreen))


async def test_unknown_host_key_is_shown_and_trusted_on_yes(sshd, tmp_path):
    kh = tmp_path / "known_hosts"  # no file yet: every key is unknown
    app = _app(sshd, tmp_path, kh)
    async with app.run_test(size=(120, 40)) as pilot:
        await _connect_from_home(app, pilot, sshd.target)
        await _until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        text = str(app.screen.query_one("#dialog-text").render())
        assert _fingerprint(sshd.host_key_pub) in text
        assert not kh.exists()  # nothing trusted before the yes
        await pilot.press("y")
        await _until(pilot, lambda: _session(app).ready)
        ss = _session(app)
        assert ss.view.state.hosts[f"127.0.0.1:{sshd.port}"].fingerprint == _fingerprint(sshd.host_key_pub)
        path = ss.driver.recording_path
        await ss.close_driver()
    assert sshd.host_key_pub in kh.read_text()
    _, events = read_all(path)
    accepted = [e for e in events if isinstance(e, ev.Decision) and e.action == "accept-new-host-key"]
    assert len(accepted) == 1 and _fingerprint(sshd.host_key_pub) in accepted[0].reason


async def test_unknown_host_key_declined_connects_nothing(sshd, tmp_path):
    kh = tmp_path / "known_hosts"
    app = _app(sshd, tmp_path, kh)
    async with app.run_test(size=(120, 40)) as pilot:
        await _connect_from_home(app, pilot, sshd.target)
        await _until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.press("enter")  # the focus is on "Cancel": Enter never trusts a key
        await _until(pilot, lambda: any("was not trusted" in n.message for n in app._notifications))
        ss = _session(app)
        assert not ss.ready and ss.sub_title == "not connected"
        await ss.close_driver()
    assert not kh.exists()


async def test_changed_host_key_is_never_offered(sshd, tmp_path):
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key("openssh").decode().strip()
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{sshd.port} {other}\n")
    before = kh.read_text()
    app = _app(sshd, tmp_path, kh)
    async with app.run_test(size=(120, 40)) as pilot:
        await _connect_from_home(app, pilot, sshd.target)
        await _until(pilot, lambda: isinstance(app.screen, TextDialog))
        text = str(app.screen.query_one("#dialog-text").render())
        assert "CHANGED" in text and _fingerprint(sshd.host_key_pub) in text and _fingerprint(other) in text
        assert f"ssh-keygen -lF '[127.0.0.1]:{sshd.port}'" in text
        assert not any(isinstance(s, ConfirmDialog) for s in app.screen_stack)
        await pilot.press("escape")
        await pilot.pause(0.1)
        ss = _session(app)
        assert app.screen is ss and not ss.ready and ss.sub_title == "not connected"
        await ss.close_driver()
    assert kh.read_text() == before


async def test_the_driver_trusts_only_the_fingerprint_the_operator_saw(sshd, tmp_path):
    kh = tmp_path / "known_hosts"
    driver = await session_factory([], tmp_path, identity=[str(sshd.key_path)], known_hosts=str(kh))(sshd.target)
    try:
        driver.accept_host_key(f"127.0.0.1:{sshd.port}", "SHA256:not-the-key-the-host-offers")
        with pytest.raises(HostKeyChanged, match="expected SHA256:not-the-key"):
            await driver.start()
        assert driver.hosts == []
    finally:
        await driver.close()


def test_inspect_commands_name_the_known_hosts_entry():
    assert inspect_commands("127.0.0.1:2222")[0].startswith("ssh-keygen -lF '[127.0.0.1]:2222'")
    assert inspect_commands("gb300-01")[1].startswith("ssh-keyscan gb300-01 |")
    assert inspect_commands("[fe80::1]:2200")[2].startswith("ssh-keygen -R '[fe80::1]:2200'")

"""A command's event loop ends in bounded time, Ctrl-C included (``k3tui.aio``).

``asyncio.run`` waits without limit for every task left when the main one ended; one that does not
end when cancelled kept an interrupted ``k3tui bisect`` alive forever (about 1 in 30 interrupts on a
loaded machine). Each case runs in a real Python process; the same program with ``asyncio.run``
shows the hang (it is killed by the test's timeout), with ``k3tui.aio.run`` it exits.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

PROGRAM = r"""
import asyncio, sys
from k3tui import aio

async def stubborn():
    while True:  # a clean-up that waits for a peer that is gone, and swallows its cancel
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            continue

async def main():
    asyncio.get_running_loop().create_task(stubborn())
    print("started", flush=True)
    try:
        await asyncio.sleep({work})
    except asyncio.CancelledError:  # Ctrl-C: what it learnt stays, as bisect does
        return "aborted"
    return "done"

runner = asyncio.run if sys.argv[1] == "asyncio" else (lambda c: aio.run(c, grace=0.5))
print(runner(main()), flush=True)
"""


def _start(runner: str, work: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", PROGRAM.format(work=work), runner],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("interrupt", [False, True])
def test_a_task_that_will_not_end_does_not_keep_the_command_alive(interrupt: bool) -> None:
    p = _start("aio", 30 if interrupt else 0.1)
    assert p.stdout is not None and p.stdout.readline() == "started\n"
    if interrupt:
        time.sleep(0.2)
        p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 0, err
    assert out.strip() == ("aborted" if interrupt else "done")
    assert "1 task(s) did not end within 0.5 s" in err and "Task was destroyed" not in err


def test_asyncio_run_hangs_on_the_same_task() -> None:
    """The reason for k3tui.aio: the same program under asyncio.run never exits."""
    p = _start("asyncio", 0.1)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            p.communicate(timeout=3)
    finally:
        p.kill()
        p.communicate()


def test_a_second_ctrl_c_while_the_main_task_handles_the_first_is_a_keyboard_interrupt() -> None:
    code = r"""
import asyncio, os, signal
from k3tui import aio
async def main():
    print("started", flush=True)
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C while it winds down
        await asyncio.sleep(30)
try:
    aio.run(main(), grace=0.5)
except KeyboardInterrupt:
    print("interrupted")
"""
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline() == "started\n"
    time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert out.strip() == "interrupted", err


def test_every_command_runs_its_loop_through_aio() -> None:
    """No command of the CLI starts its event loop with ``asyncio.run``: each is one an operator may
    interrupt (connect, freeze, check, sign, replay --follow, ladder, bisect, demo)."""
    import ast
    from pathlib import Path

    import k3tui.commands

    folder = Path(k3tui.commands.__file__).parent
    users, offenders = [], []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "run":
                owner = node.func.value
                if isinstance(owner, ast.Name) and owner.id == "asyncio":
                    offenders.append(f"{path.name}:{node.lineno}")
                elif isinstance(owner, ast.Name) and owner.id == "aio":
                    users.append(path.stem)
    assert not offenders, offenders
    assert {"connect", "freeze", "check", "sign", "replay_follow", "ladder", "bisect", "demo"} <= set(users)

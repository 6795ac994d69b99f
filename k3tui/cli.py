"""The ``k3tui`` command line: one subcommand per module in :mod:`k3tui.commands`.

Each subcommand module exposes ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int``. Modules load lazily so ``k3tui verify`` never pays for asyncssh,
and so the TUI (Textual) is imported only by the commands that start it.

Every :class:`~k3tui.errors.K3Error` becomes one line on stderr and a non-zero exit;
so do the ordinary OS errors a bad path produces. Nothing prints a traceback unless
``K3TUI_DEBUG=1``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from . import __version__
from .errors import K3Error

COMMANDS: dict[str, str] = {
    "demo": "run the whole procedure against the embedded SIMULATED GB300 host",
    "connect": "connect to a host (or a group) and open a live session",
    "replay": "replay a session file or a repro package (runs nothing on any host)",
    "freeze": "freeze the failure scene of a host",
    "check": "check the compatibility baseline against a profile",
    "classify": "classify a vLLM server log: first failing stage and root exception",
    "ladder": "run the ladder rungs headless, one variable at a time",
    "bisect": "find the one variable that flips a good run config into a bad one",
    "export": "export a session as a repro package (or just a .cast)",
    "diff": "diff two frozen scenes",
    "verify": "verify a session file's digest chain (or a package's manifest)",
    "cat": "print a session as a readable timeline",
    "sign": "sign a closed session with your SSH key (SSHSIG; checked by verify --signer)",
}


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2), like every other k3tui error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"k3tui: {_one_line(message)} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="k3tui",
        description="Freeze the failure scene of a vLLM deployment, then reproduce it one variable at a time.",
    )
    parser.add_argument("--version", action="version", version=f"k3tui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_ in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)  # subparsers inherit _Parser
        _module(name).add_arguments(p)
    return parser


def _module(name: str):  # noqa: ANN202 - a command module
    return importlib.import_module(f"k3tui.commands.{name}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``k3tui`` script."""
    _safe_streams()
    _exit_on_hangup()
    _quiet_closed_loop_noise()
    try:
        args = build_parser().parse_args(argv)  # imports every command: Ctrl-C can land here
    except KeyboardInterrupt:
        print("k3tui: interrupted", file=sys.stderr)
        return 130
    try:
        if args.command is None:
            from .commands import tui

            return tui.run(args)
        return int(_module(args.command).run(args) or 0)
    except K3Error as exc:
        return _fail(str(exc), exc.exit_code, exc)
    except KeyboardInterrupt:
        print("k3tui: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the interpreter's own flush error
        except OSError:
            pass
        return 0
    except IsADirectoryError as exc:
        return _fail(f"{exc.filename}: is a directory", 2, exc)
    except FileNotFoundError as exc:
        return _fail(f"{exc.filename}: no such file", 2, exc)
    except PermissionError as exc:
        return _fail(f"{exc.filename}: permission denied", 2, exc)
    except UnicodeDecodeError as exc:
        return _fail(f"input is not text ({exc.reason})", 2, exc)
    except OSError as exc:
        return _fail(f"{getattr(exc, 'filename', '') or 'I/O'}: {exc.strerror or exc}", 2, exc)
    except Exception as exc:  # noqa: BLE001 - the promise: never a traceback at 3 a.m.
        where = f"{type(exc).__name__}: {exc}"
        return _fail(f"internal error ({where}); re-run with K3TUI_DEBUG=1 for the traceback", 70, exc)


def _fail(message: str, code: int, exc: BaseException) -> int:
    if os.environ.get("K3TUI_DEBUG"):
        raise exc
    print(f"k3tui: {_one_line(message)}", file=sys.stderr)
    return code


def _one_line(message: str) -> str:
    """A message as one safe line: names from hostile files can hold escapes and newlines."""
    from .textsafe import neutralise

    return neutralise(message.replace("\r\n", " ").replace("\n", " ⏎ "))[:2000]


def _quiet_closed_loop_noise() -> None:
    """asyncio's child watcher logs "Loop … that handles pid N is closed" when a child it watches
    exits after its event loop was closed: an interrupted command (Ctrl-C) returns while a stopped
    run's process is still exiting. The child has exited and was reaped by then; the line says
    nothing an operator can act on and broke the CLI's promise of one clear line on interrupt."""
    import logging

    log = logging.getLogger("asyncio")
    if _not_closed_loop not in log.filters:
        log.addFilter(_not_closed_loop)


def _not_closed_loop(record: object) -> bool:
    """A logging filter: False for asyncio's "Loop … that handles pid N is closed" record."""
    return not str(getattr(record, "msg", "")).startswith("Loop %r that handles pid")


def _exit_on_hangup() -> None:
    """SIGTERM or SIGHUP (the operator's SSH session to the jump box dropped) end k3tui like
    an exception does, so open recordings are finished (see recording's atexit hook)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, _raise_exit)


def _raise_exit(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _safe_streams() -> None:
    """Never die on output the terminal's encoding cannot show (LANG=C, a pipe to a latin-1 tool)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

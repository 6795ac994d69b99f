"""Shell scripts for detached runs, shared by every transport (SSH, local, simulated).

A detached run must outlive the SSH connection that started it (a network blip must not
kill the ``vllm serve`` under test), so it is started in its own session (``setsid``,
``nohup``) by a tiny POSIX-sh wrapper, and everything about it lives in a per-run
directory on the host::

    ~/.k3tui/runs/<run_id>/
        cmd    the command (redacted copy)       env   the extra env (redacted copy)
        pgid   the wrapper's pid = process group  pid   the command's pid
        log    stdout+stderr of the command      exit  its exit status, written when it ends

Only POSIX sh, coreutils (``tail``, ``sleep``, ``wc``), ``setsid`` and ``ps`` are used: the
simulated host runs these same scripts with real bash. The real env values travel to the
host on the launch script's stdin, never on a command line and never into a file.

Stopping signals the whole process group (the wrapper traps TERM and survives to write
``exit``); after the grace period everything in the group but the wrapper gets KILL.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

RUNS_DIR = ".k3tui/runs"
"""Per-run directories live here, relative to the remote user's ``$HOME``."""

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# $1 = run dir; the real command arrives in K3TUI_CMD and is removed from the env at once.
WRAPPER = r"""d=$1; c=$K3TUI_CMD; unset K3TUI_CMD
echo $$ > "$d/pgid"
trap : TERM INT HUP
sh -c "$c" </dev/null >>"$d/log" 2>&1 &
child=$!
echo $child > "$d/pid.tmp" && mv "$d/pid.tmp" "$d/pid"
wait $child; st=$?
while kill -0 $child 2>/dev/null; do wait $child; st=$?; done
echo $st > "$d/exit.tmp" && mv "$d/exit.tmp" "$d/exit"
"""


def check_run_id(run_id: str) -> str:
    """A run id safe as a directory name and in a shell word; raises ValueError otherwise."""
    if not _RUN_ID.match(run_id):
        raise ValueError(f"run id {run_id!r} must be letters, digits, '.', '_' or '-' (at most 100)")
    return run_id


def run_dir_expr(run_id: str) -> str:
    """The run directory as a shell expression (``$HOME`` expands on the host)."""
    return f'"$HOME"/{RUNS_DIR}/{check_run_id(run_id)}'


def _dir(run_dir: str) -> str:
    return shlex.quote(run_dir)


def launch_script(
    run_id: str,
    command: str,
    *,
    env: Mapping[str, str] | None = None,
    shown_command: str | None = None,
    shown_env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> str:
    """The script to feed to ``sh -s`` that starts ``command`` detached.

    Args:
        env: extra variables for the command (real values: they stay in memory only).
        shown_command / shown_env: the redacted copies written to ``cmd`` and ``env``.
        cwd: working directory of the command (default: the remote ``$HOME``).

    The script prints one line, ``RUN_DIR PID PGID``, once the command runs.
    """
    env = dict(env or {})
    for name in env:
        if not _ENV_NAME.match(name):
            raise ValueError(f"not a valid environment variable name: {name!r}")
    shown_env = dict(shown_env if shown_env is not None else env)
    q = shlex.quote
    lines = [
        "set -e",
        "umask 077",
        "command -v setsid >/dev/null 2>&1 || { echo 'k3tui: setsid (util-linux) is missing on this host' >&2; exit 4; }",
        f"d={run_dir_expr(run_id)}",
        'mkdir -p "$d"',
        '[ ! -e "$d/pgid" ] || { echo "k3tui: run dir $d is already used" >&2; exit 3; }',
        f'printf "%s\\n" {q(shown_command if shown_command is not None else command)} > "$d/cmd"',
        ': > "$d/env"',
        *(f'printf "%s\\n" {q(f"{k}={v}")} >> "$d/env"' for k, v in shown_env.items()),
        ': > "$d/log"',
    ]
    if cwd:
        lines.append(f"cd {q(cwd)}")
    lines += [f"export {k}={q(v)}" for k, v in env.items()]
    lines += [
        f"K3TUI_CMD={q(command)}; export K3TUI_CMD",
        f'setsid nohup sh -c {q(WRAPPER)} k3tui-run "$d" </dev/null >/dev/null 2>&1 &',
        "unset K3TUI_CMD",
        "i=0",
        'while [ ! -s "$d/pid" ]; do i=$((i+1)); '
        '[ $i -le 400 ] || { echo "k3tui: run did not start" >&2; exit 5; }; sleep 0.025; done',
        'printf "%s %s %s\\n" "$d" "$(cat "$d/pid")" "$(cat "$d/pgid")"',
    ]
    return "\n".join(lines) + "\n"


def tail_command(run_dir: str, offset: int) -> str:
    """Follow the log from byte ``offset`` (0-based) for as long as the channel lives."""
    return f"exec tail -c +{int(offset) + 1} -f {_dir(run_dir)}/log"


def status_command(run_dir: str) -> str:
    """Prints ``EXIT SIZE ALIVE``: exit status or ``-``, log size in bytes, 1 while any process of
    the run's group lives (zombies aside).

    ALIVE is the group, not the wrapper: ``exit`` is written when the wrapper's own child ends,
    but a process that child started (``docker run``'s client, the server itself) may still be
    printing its last lines into ``log`` — vLLM's shutdown lines after a stop.
    """
    d = _dir(run_dir)
    return (
        f'd={d}; e=$(cat "$d/exit" 2>/dev/null) || e=-; s=$(wc -c < "$d/log" 2>/dev/null) || s=-; '
        'g=$(cat "$d/pgid" 2>/dev/null) || g=-; '
        "a=$(ps -e -o pgid= -o stat= 2>/dev/null | { a=0; while read q t; do "
        '[ "$q" = "$g" ] && case "$t" in Z*) ;; *) a=1 ;; esac; done; echo $a; }); '
        f'echo "${{e:--}} ${{s:--}} ${{a:-0}}"'
    )


def term_command(run_dir: str) -> str:
    """Send TERM to the run's process group; prints ``done`` if it had already ended."""
    d = _dir(run_dir)
    return (
        f'd={d}; [ -e "$d/exit" ] && {{ echo done; exit 0; }}; '
        f'g=$(cat "$d/pgid") || exit 5; kill -TERM -"$g" 2>/dev/null || kill -TERM "$(cat "$d/pid")"; echo sent'
    )


def kill_command(run_dir: str) -> str:
    """KILL every process of the run's group except the wrapper (which then writes ``exit``)."""
    d = _dir(run_dir)
    return (
        f'd={d}; [ -e "$d/exit" ] && exit 0; g=$(cat "$d/pgid") || exit 5; '
        "ps -e -o pid= -o pgid= | while read p q; do "
        '[ "$q" = "$g" ] && [ "$p" != "$g" ] && kill -KILL "$p" 2>/dev/null; done; '
        'kill -KILL "$(cat "$d/pid")" 2>/dev/null; exit 0'
    )


def survivors_command(run_dir: str) -> str:
    """Prints how many processes of the run's group are still alive (the wrapper may be gone)."""
    d = _dir(run_dir)
    return (
        f'd={d}; g=$(cat "$d/pgid" 2>/dev/null) || {{ echo 0; exit 0; }}; '
        'n=0; for q in $(ps -e -o pgid=); do [ "$q" = "$g" ] && n=$((n+1)); done; echo $n'
    )


def sweep_command(run_dir: str) -> str:
    """KILL every process left in the run's group after the wrapper ended (a child that ignored TERM)."""
    d = _dir(run_dir)
    return (
        f'd={d}; g=$(cat "$d/pgid" 2>/dev/null) || exit 0; '
        "ps -e -o pid= -o pgid= | while read p q; do "
        '[ "$q" = "$g" ] && kill -KILL "$p" 2>/dev/null; done; exit 0'
    )


def reap_command(run_dir: str, status: int = 137) -> str:
    """Last resort when the wrapper itself is gone or stuck: KILL it and write ``exit``."""
    d = _dir(run_dir)
    return (
        f'd={d}; [ -e "$d/exit" ] && {{ cat "$d/exit"; exit 0; }}; '
        f'g=$(cat "$d/pgid" 2>/dev/null) && kill -KILL "$g" 2>/dev/null; echo {int(status)} > "$d/exit"; echo {int(status)}'
    )


def parse_status(text: str) -> tuple[int | None, int | None, bool]:
    """Parse :func:`status_command` output into (exit status, log size, a process of the run's group alive)."""
    parts = text.split()
    if len(parts) != 3:
        return None, None, False
    e, s, a = parts
    status = int(e) if e.lstrip("-").isdigit() and e != "-" else None
    size = int(s) if s.isdigit() else None
    return status, size, a == "1"

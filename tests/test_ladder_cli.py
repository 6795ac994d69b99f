"""`k3tui ladder`: bad input is one clear line and a non-zero exit, and nothing is started."""

from __future__ import annotations

import pytest

from k3tui.cli import main
from k3tui.commands.ladder import parse_sets
from k3tui.errors import UsageError

BASE = ["ladder", "local", "--profile", "tiny-cpu", "--model-path", "/nonexistent-model"]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--rung", "bogus"], "no rung 'bogus'"),
        (["--set", "max_model_len"], "expected VAR=VALUE"),
        (["--set", "colour=blue"], "unknown run variable 'colour'"),
        (["--set", "max_model_len=4096", "--set", "env:NCCL_DEBUG=INFO"], "2 variables would change at once"),
        (["--rung", "prefix-caching"], "runs only after the rungs below it are stable"),
        (["--toggle", "vllm-trace-function"], "start-up becomes very slow"),
        (["--toggle", "nope"], "has no debug toggle 'nope'"),
        (["--repeat", "0", "--rung", "minimal"], "--repeat must be at least 1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(extra, needle, capsys, tmp_path):
    rec = tmp_path / "s.k3rec"
    code = main([*BASE, *extra, "--record", str(rec)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and needle in err[0], err
    assert "run r1" not in capsys.readouterr().out  # no server was started


def test_unknown_profile_is_one_line(capsys):
    assert main(["ladder", "local", "--profile", "no-such-profile"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no-such-profile" in err[0] and "kimi-k3" in err[0]


def test_two_variables_with_a_reason_are_accepted_and_recorded(capsys, tmp_path):
    from k3tui import events as ev
    from k3tui.reader import read_all

    rec = tmp_path / "s.k3rec"
    # --rung bogus stops the run after the change is recorded: nothing starts, the decision is kept.
    main(
        [
            *BASE,
            "--set",
            "max_model_len=4096",
            "--set",
            "env:NCCL_DEBUG=INFO",
            "--reason",
            "vendor asked",
            "--rung",
            "bogus",
            "--record",
            str(rec),
        ]
    )
    _, events = read_all(rec)
    decisions = [e for e in events if isinstance(e, ev.Decision)]
    assert decisions and decisions[0].reason == "vendor asked" and "override one-variable rule" in decisions[0].action
    changes = [e for e in events if isinstance(e, ev.RunConfigSet)]
    assert len(changes) == 2 and len(changes[1].diff) == 2


def test_set_values_are_typed():
    assert parse_sets(["flag:enforce-eager=true", "env:X=", "max_model_len=4096"]) == {
        "flag:enforce-eager": True,
        "env:X": None,
        "max_model_len": "4096",
    }
    with pytest.raises(UsageError):
        parse_sets(["=3"])

"""What a host sends never drives the operator's terminal, and what is displayed is redacted.

Issue 16: an unterminated OSC in one line hid every later line of the same chunk in
``cat --raw``, the ``.cast``, the live log and replay; ``ladder`` printed the server's log
line and ``freeze`` the host name raw; ``connect --run`` printed remote output unredacted;
a multi-variable change rendered ``env:WANDB_API_KEY: None → '…'`` with the real value.
Each sink is fed generated hostile sequences and its *rendered* output is checked.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from k3tui import events as ev
from k3tui.cast import terminal_text
from k3tui.commands.cat import _write_event
from k3tui.commands.ladder import _printer
from k3tui.ladder.ledger import _describe
from k3tui.redact import MASK
from k3tui.report import diff_text
from k3tui.textsafe import neutralise

_DANGEROUS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

# Openers of every terminal sequence kind, 7- and 8-bit, with and without their terminator.
_OPEN = st.sampled_from(["\x1b]", "\x1bP", "\x1b_", "\x1b^", "\x1bX", "\x1b[", "\x9d", "\x9b", "\x90", "\x1b"])
_BODY = st.text(st.characters(blacklist_characters="\n", max_codepoint=0x2FF), max_size=12)
_END = st.sampled_from(["", "", "\x07", "\x1b\\", "\x9c", "m"])
_SEQ = st.builds(lambda o, b, e: o + b + e, _OPEN, _BODY, _END)
_LINE = st.lists(_SEQ | st.text(alphabet="abc xyz;52", max_size=4), max_size=5).map("".join)


def _chunk(lines: list[str]) -> tuple[str, list[str]]:
    """A chunk of hostile lines, each followed by a line that must stay visible (the real error)."""
    markers = [f"MARK{i}Z" for i in range(len(lines))]
    return "".join(f"{h}\n{m}\n" for h, m in zip(lines, markers, strict=True)), markers


def _sinks(text: str) -> dict[str, str]:
    raw, timeline = io.StringIO(), io.StringIO()
    _write_event(raw, ev.Output(t=1.0, id="r1", text=text), True, {})
    _write_event(timeline, ev.Output(t=1.0, id="r1", text=text), False, {})
    return {
        "neutralise (TUI log, replay)": neutralise(text),
        "cat --raw": raw.getvalue(),
        "cat": timeline.getvalue(),
        "cast": terminal_text(text).replace("\r\n", "\n"),
    }


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=6))
def test_no_sequence_runs_past_its_line_in_any_sink(lines):
    text, markers = _chunk(lines)
    for sink, out in _sinks(text).items():
        assert not _DANGEROUS.search(out.replace("\n", "").replace("\t", "")), (sink, out)
        shown = out.removesuffix("\n").split("\n")
        assert len(shown) == 2 * len(markers), (sink, out)  # no line swallowed, none invented
        for m, line in zip(markers, shown[1::2], strict=True):
            assert line.endswith(m), (sink, line)


def test_unterminated_osc_hides_nothing_after_it():
    text = "\x1b]0;owned\nreal error: CUDA out of memory\n"
    assert "real error: CUDA out of memory" in neutralise(text)


def _run_printer(e) -> str:
    show = _printer(None)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        show(e)
    return buf.getvalue()


@settings(max_examples=60, deadline=None)
@given(seq=_SEQ, name=st.sampled_from(["HF_TOKEN", "WANDB_API_KEY", "_HF_TOKEN", "DB_PASSWORD"]))
def test_ladder_prints_neither_escapes_nor_secrets(seq, name):
    secret = "hf_" + "Q7w" * 10
    for e in (
        ev.CheckVerdict(rung="minimal", check="log", verdict="FAIL", evidence=f"{seq}last line {seq}"),
        ev.ExceptionFound(stage="engine", line=f"RuntimeError: {seq} boom"),
        ev.RunConfigSet(run="r2", diff=[{"key": f"env:{name}", "old": None, "new": secret}]),
        ev.Decision(
            action=f"override one-variable rule: {_describe([{'key': f'env:{name}', 'old': None, 'new': secret}])}"
        ),
    ):
        out = _run_printer(e)
        assert secret not in out and "Q7wQ7w" not in out, out
        assert not _DANGEROUS.search(out.replace("\n", "")), repr(out)


_SECRET_KEYS = st.sampled_from(
    ["env:HF_TOKEN", "env:WANDB_API_KEY", "env:_HF_TOKEN", "flag:--api-key", "env:DB_PASSWORD"]
)
_VALUES = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=40).filter(
    lambda v: v not in ("None", "''", "<redacted>") and "<" not in v
)


@settings(max_examples=300, deadline=None)
@given(key=_SECRET_KEYS, old=st.none() | _VALUES, new=_VALUES, other=st.integers())
def test_secret_values_are_masked_by_name_in_every_rendering(key, old, new, other):
    d = [{"key": key, "old": old, "new": new}, {"key": "max_model_len", "old": other, "new": other + 1}]
    for text in (_describe(d), diff_text(d), ev.summary(ev.RunConfigSet(run="r", diff=d), 10_000)):
        assert repr(new) not in text and (old is None or repr(old) not in text), text
        assert MASK in text and f"{other + 1}" in text  # the other variable is still shown


def test_connect_run_output_is_redacted_and_neutralised(tmp_path: Path):
    token = "nvapi-" + "Zk3" * 20
    cmd = f"echo HF_TOKEN=hf_{'a1B2' * 8}; echo docker login -p {token}; printf '\\033]52;c;cm0=\\a\\033]0;t\\nnext\\n'"
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "connect", "local", "--run", cmd],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "a1B2a1B2" not in r.stdout and token not in r.stdout, r.stdout
    assert "\x1b" not in r.stdout and "next" in r.stdout and MASK in r.stdout


def test_report_changes_table_masks_a_multi_variable_override():
    d = [
        {"key": "env:WANDB_API_KEY", "old": None, "new": "wandb-abcdef0123456789"},
        {"key": "max_model_len", "old": 1, "new": 2},
    ]
    assert "wandb-abcdef" not in json.dumps(diff_text(d))

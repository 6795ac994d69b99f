"""`k3tui classify`: the JSON contract scripts rely on, stdin, and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3tui.classify.rules import load_rules
from k3tui.cli import main

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
LOG = SHARED / "corpus" / "vllm-cpu" / "10f1-fail-kvcache-space-0.log"
KEYS = {"failed_stage", "stages", "first_exception", "oom_root_cause", "signature", "advice", "evidence", "confidence"}


def test_json_has_exactly_the_documented_keys(capsys) -> None:
    assert main(["classify", str(LOG), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == KEYS
    assert out["failed_stage"] == "engine"
    assert set(out["first_exception"]) == {"line", "line_number", "stack", "process", "context"}
    assert set(out["evidence"]) == {"rule", "lines", "why"} and out["confidence"] in ("high", "medium", "low")
    assert out["first_exception"]["process"] == "EngineCore pid=2811"
    assert all(set(s) == {"stage", "line", "time"} for s in out["stages"])
    assert out["oom_root_cause"] is None


def test_healthy_log_json(capsys) -> None:
    assert main(["classify", str(SHARED / "corpus" / "vllm-cpu" / "01-baseline-full-session.log"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["failed_stage"] == "none" and out["first_exception"] is None and out["signature"] == ""


def test_human_output_has_timeline_root_stack_and_advice(capsys) -> None:
    assert main(["classify", str(LOG)]) == 0
    out = capsys.readouterr().out
    for needle in (
        "stage timeline:",
        "weights",
        "failed stage: ENGINE",
        "ValueError: No available memory",
        "stack as printed:",
        "_initialize_kv_caches",
        "advice:",
    ):
        assert needle in out


def test_stdin_dash() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "classify", "-", "--json"],
        input=LOG.read_bytes(),
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0 and b"No module named k3tui.cli.__main__" in proc.stderr:
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from k3tui.cli import main; sys.exit(main())",
                "classify",
                "-",
                "--json",
            ],
            input=LOG.read_bytes(),
            capture_output=True,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["failed_stage"] == "engine"


def test_bad_inputs_are_one_line_errors(tmp_path: Path, capsys) -> None:
    binary = tmp_path / "core.bin"
    binary.write_bytes(bytes(range(256)) * 64)
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    for arg in (str(tmp_path / "missing.log"), str(tmp_path), str(binary), str(empty)):
        assert main(["classify", arg]) != 0
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and arg in err and "Traceback" not in err


def _not_a_log(path: str, capsys) -> dict:
    assert main(["classify", path, "--json"]) == 3
    captured = capsys.readouterr()
    assert captured.err.strip().count("\n") == 0 and "not a vLLM server log" in captured.err
    out = json.loads(captured.out)
    assert out["failed_stage"] == "unknown" and out["first_exception"] is None
    assert out["evidence"]["rule"] == "not-a-vllm-log" and out["confidence"] == "low"
    return out


def test_etc_passwd_is_not_a_vllm_log(capsys) -> None:
    """Issue 13, "What goes wrong" 5: /etc/passwd used to be a healthy run with exit 0."""
    _not_a_log("/etc/passwd", capsys)
    assert main(["classify", "/etc/passwd"]) == 3
    assert "failed stage: unknown" in capsys.readouterr().out


def test_a_real_binary_is_not_a_vllm_log(capsys) -> None:
    _not_a_log(sys.executable, capsys)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.characters(codec="ascii", exclude_characters="\r\n\x00"), max_size=80).filter(
            lambda s: (
                not any(w.lower() in s.lower() for w in load_rules().recognise)
                and load_rules().stack.search(s) is None
                and "rror" not in s.lower()
                and not any(c in s for c in ":[(")
            )
        ),
        min_size=1,
        max_size=40,
    )
)
def test_random_text_is_not_a_vllm_log(tmp_path_factory, capsys, lines: list[str]) -> None:
    path = tmp_path_factory.mktemp("t") / "notes.txt"
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    if not path.read_text().strip("\n"):
        return
    _not_a_log(str(path), capsys)


def test_help_documents_the_json_keys_and_exit_3(capsys) -> None:
    try:
        main(["classify", "--help"])
    except SystemExit:
        pass
    out = capsys.readouterr().out
    assert "issue 4" not in out
    for key in (*KEYS, "context", "exit status", "3 not a vLLM server log"):
        assert key in out, key


def test_human_output_says_why_this_stage(capsys) -> None:
    assert main(["classify", str(LOG)]) == 0
    why = [x for x in capsys.readouterr().out.splitlines() if x.startswith("why: ")]
    assert len(why) == 1 and "confidence" in why[0] and "line" in why[0]


ENCODINGS = {
    "UTF-16 with its BOM (Windows PowerShell's > and Out-File)": lambda t: t.encode("utf-16"),
    "UTF-16 LE without a BOM": lambda t: t.encode("utf-16-le"),
    "UTF-16 BE without a BOM": lambda t: t.encode("utf-16-be"),
    "UTF-8 with a BOM (Notepad)": lambda t: t.encode("utf-8-sig"),
    "UTF-32 with its BOM": lambda t: t.encode("utf-32"),
}


def test_a_log_saved_in_another_unicode_encoding_reads_as_the_same_log(tmp_path: Path, capsys) -> None:
    """A log a Windows shell saved as UTF-16 (its NUL bytes used to make it "binary, not a vLLM log",
    exit 3) or with a BOM classifies as its UTF-8 text does; a real binary is still refused."""
    from tests.support.corpus import SHARED_CORPUS, cases

    logs = [c for c in cases(SHARED_CORPUS) if c.text().strip()][:6]
    for case in logs:
        text = case.text()
        src = tmp_path / "utf8.log"
        src.write_text(text, encoding="utf-8")
        assert main(["classify", str(src), "--json", "--run", "r"]) == 0
        want = json.loads(capsys.readouterr().out)
        for how, encode in ENCODINGS.items():
            path = tmp_path / "other.log"
            path.write_bytes(encode(text))
            code = main(["classify", str(path), "--json", "--run", "r"])
            got = json.loads(capsys.readouterr().out)
            assert code == 0 and got == want, (case.id, how)
    _not_a_log(sys.executable, capsys)


@given(st.binary(min_size=64, max_size=4096))
def test_the_encoding_sniff_never_fails_and_names_a_codec(head: bytes) -> None:
    import codecs

    from k3tui.commands.classify import text_encoding

    codecs.lookup(text_encoding(head))  # an encoding Python has, for any first bytes

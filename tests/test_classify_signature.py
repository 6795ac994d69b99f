"""Signatures: the same failure matches across runs, a different root does not; reproduction counts."""

from __future__ import annotations

from pathlib import Path

from k3tui.classify import advice_for, classify_text, normalise, reproduction

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
CPU = SHARED / "corpus" / "vllm-cpu"


def _other_run(text: str) -> str:
    """The same failure as another run prints it: other pids, times, sizes, paths, addresses."""
    return (
        text.replace("pid=31563", "pid=90211")
        .replace("pid=31542", "pid=90177")
        .replace("pid=31504", "pid=90001")
        .replace("11-30 03:33", "12-01 17:02")
        .replace("/opt/venv/lib/python3.11", "/usr/local/lib/python3.12")
        .replace("/models/tiny-llama-corrupt", "/mnt/nvme0/kimi-k3")
        .replace("line 1208", "line 1311")
    )


def test_same_failure_other_run_same_signature() -> None:
    text = (CPU / "10e-fail-truncated-safetensors.log").read_text()
    a, b = classify_text(text), classify_text(_other_run(text))
    assert a.first_exception.line != b.first_exception.line
    assert a.signature == b.signature != ""


def test_oom_sizes_and_pids_are_normalised() -> None:
    oom = (SHARED / "fixtures" / "hosts" / "h200-r580" / "fail_oom.txt").read_text()
    other = oom.replace("200.00 GiB", "37.50 GiB").replace("139.29 GiB", "0.98 GiB").replace("518.00 MiB", "131.2 GiB")
    assert classify_text(oom).signature == classify_text(other).signature
    assert "GiB" not in classify_text(oom).signature


def test_different_roots_have_different_signatures() -> None:
    sigs = {
        p.name: classify_text(p.read_text(errors="replace")).signature
        for p in sorted((SHARED / "corpus").glob("*/*.log"))
    }
    failing = {k: v for k, v in sigs.items() if v}
    assert len(failing) >= 20
    # 007 and 022 are the same failure class (V0 worker, NCCL init) with different NCCL errors
    assert len(set(failing.values())) == len(failing)


def test_normalise_examples() -> None:
    assert (
        normalise("Tried to allocate 128.00 MiB at 0x7f9ea7650c28 on 10.0.0.2:29500")
        == "Tried to allocate <size> at <addr> on <ip>"
    )
    assert normalise("open /models/a/b.safetensors failed for pid 4242") == "open <path> failed for pid <n>"


def test_reproduction_counts_and_drift() -> None:
    a, b = "engine|DistBackendError|NCCL error", "device|RuntimeError|Error <n>"
    assert reproduction([a, a, a]) == (3, 3, False, [a])
    assert reproduction([a, "", a]) == (2, 3, False, [a])
    assert reproduction([a, b, a]) == (2, 3, True, [a, b])
    assert reproduction([b, a]) == (1, 2, True, [b, a])
    assert reproduction(["", ""]) == (0, 2, False, [])
    assert reproduction([]) == (0, 0, False, [])


def test_advice_comes_from_the_decision_table() -> None:
    device = advice_for("device")
    assert "libcuda" in device and "driver" in device
    assert advice_for("none")
    assert advice_for("no-such-layer") == ""
    for stage in ("container", "config", "weights", "engine", "api", "runtime"):
        assert advice_for(stage) and advice_for(stage) != device

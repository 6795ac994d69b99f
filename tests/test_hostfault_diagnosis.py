"""A fatal host fault close before the first exception is the root (k3tui.classify.hostfault).

The vLLM log is the real shape the simulated host replays (runtime-xid79: a worker's
``CUDA error: unspecified launch failure``); the kernel lines are the real shapes of
journalctl, ``dmesg -T`` and dmesg with a boot time. Times are generated around the
exception's own stamp, so the window, the order and the clock-skew correction are tested
as a class, not one example.
"""

from __future__ import annotations

import calendar
import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k3tui.classify import classify_text
from k3tui.classify.hostfault import AFTER_S, BEFORE_S, exception_time, faults_from_kernel_log, root_fault
from k3tui.cli import main
from k3tui.fleet.timeline import NodeLog
from k3tui.sim.rootfs import _container_log
from k3tui.sim.scenario import load_raw

XID79 = "NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


@pytest.fixture(scope="module")
def server_log() -> tuple[str, float]:
    """The runtime-xid79 deployment's log and the (UTC) time of its first root exception."""
    d = load_raw("runtime-xid79")
    text = _container_log(dict(d["container"], _vllm=d["vllm"]), time.time() - 7200)
    fe = classify_text(text).first_exception
    t = exception_time([fe.line, *fe.stack], NodeLog("", ""))
    assert t is not None
    return text, t


def _journal(t: float, host: str = "gb300-02", msg: str = XID79) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}+0000 {host} kernel: {msg}"


@settings(max_examples=200, deadline=None)
@given(st.floats(-2 * BEFORE_S, 2 * AFTER_S + 30, allow_nan=False), st.floats(-30, 30, allow_nan=False))
def test_the_fault_is_the_root_exactly_when_it_is_close_before_the_exception(server_log, offset, skew) -> None:
    _, t_exc = server_log
    # the host's clock runs `skew` ahead of ours: its journal stamps are that much later
    faults = faults_from_kernel_log(_journal(t_exc + offset + skew))
    root = root_fault(faults, t_exc, {"gb300-02": skew})
    close = -BEFORE_S <= offset <= AFTER_S
    if abs(offset + BEFORE_S) < 1e-3 or abs(offset - AFTER_S) < 1e-3:
        return  # on the edge of the window, the stamp's microseconds decide
    assert (root is not None) == close, (offset, skew, root)
    if root:
        assert (
            root["host"] == "gb300-02"
            and root["code"] == 79
            and root["seconds_before"] == pytest.approx(-offset, abs=1e-3)
        )


def test_an_old_fault_is_history_and_a_burst_names_its_first_line(server_log) -> None:
    _, t = server_log
    old = faults_from_kernel_log(_journal(t - 3 * 3600))
    assert root_fault(old, t) is None
    burst = "\n".join(
        [
            _journal(
                t - 2,
                msg="NVRM: Xid (PCI:0000:5d:00): 95, pid=74, name=VLLM::Worker_TP3, Uncontained: FBHUB. RST: Yes, D-RST: No",
            ),
            _journal(
                t - 1.9, msg="NVRM: Xid (PCI:0000:5d:00): 64, pid='<unknown>', name=<unknown>, Row Remapper Error"
            ),
            _journal(t - 1, msg="NVRM: Xid (PCI:0000:5d:00): 13, Graphics Exception: ESR 0x404490=0x80000001"),
        ]
    )
    root = root_fault(faults_from_kernel_log(burst), t)
    assert root["code"] == 95  # the first fatal one; Xid 13 is the application's, never a root here


@pytest.mark.parametrize(
    "form",
    [
        lambda t: _journal(t),
        lambda t: time.strftime("[%a %b %e %H:%M:%S %Y] ", time.gmtime(t)) + XID79,  # dmesg -T
        lambda t: f"# boot: {int(t) - 86400}\n[{86400 + t % 1:12.6f}] {XID79}",  # dmesg with the probe's boot line
    ],
    ids=["journalctl", "dmesg-T", "dmesg+boot"],
)
def test_classify_host_log_json_names_the_root_beside_first_exception(server_log, tmp_path, capsys, form) -> None:
    text, t = server_log
    log, klog = tmp_path / "server.log", tmp_path / "kernel.log"
    log.write_text(text)
    klog.write_text(form(t - 1) + "\n")
    assert main(["classify", str(log), "--host-log", str(klog), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["first_exception"]["line"].endswith("torch.AcceleratorError: CUDA error: unspecified launch failure")
    hf = out["host_fault"]
    assert hf["kind"] == "xid" and hf["code"] == 79 and hf["fatal"] is True and hf["pci"] == "0000:5d:00"
    assert 0 <= hf["seconds_before"] <= 2
    assert main(["classify", str(log), "--host-log", str(klog)]) == 0
    human = capsys.readouterr().out
    assert "root: " in human and "Xid 79" in human and "the vLLM exception is its consequence" in human
    # the hardware comes first: the software's advice (CUDA_LAUNCH_BLOCKING …) only after it, as its consequence
    lines = human.splitlines()
    assert lines[0].startswith("root: ") and lines[1].startswith("advice: ") and "hardware first" in lines[1]
    assert lines[2] == "consequence, as the server log alone reads:" and all(ln.startswith("  ") for ln in lines[3:])
    assert "host_fault" in subprocess_help()


def subprocess_help() -> str:
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "classify", "--help"], capture_output=True, text=True
    ).stdout


def test_classify_without_host_log_keeps_the_documented_keys_and_a_quiet_kernel_log_is_null(
    server_log, tmp_path, capsys
) -> None:
    text, t = server_log
    log, klog = tmp_path / "server.log", tmp_path / "kernel.log"
    log.write_text(text)
    assert main(["classify", str(log), "--json"]) == 0
    assert "host_fault" not in json.loads(capsys.readouterr().out)
    klog.write_text(_journal(t - 1, msg="NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.95.05") + "\n")
    assert main(["classify", str(log), "--host-log", str(klog), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["host_fault"] is None
    assert main(["classify", str(log), "--host-log", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot read the kernel log" in err[0]


def test_iso_and_dmesg_t_agree_on_the_wall_time() -> None:
    t = calendar.timegm((2026, 12, 1, 3, 12, 44))
    a = faults_from_kernel_log(_journal(t))[0][1]["unix"]
    b = faults_from_kernel_log(time.strftime("[%a %b %e %H:%M:%S %Y] ", time.gmtime(t)) + XID79)[0][1]["unix"]
    assert a == b == t

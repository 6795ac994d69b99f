"""Host-fault parsers and the scene's host_faults, on real captures and generated kernel lines.

The real captures: ``tests/data/h200-r580-health-probes`` (every host probe as k3tui sends
it, on a real H200 with driver 580) and ``../shared/fixtures/hosts/h200-r580-health``. The
faults are planted into the REAL XML (a value changed in place), so the shape stays real.
"""

from __future__ import annotations

import calendar
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k3tui.remote.base import RunResult
from k3tui.scene import hostfaults
from k3tui.scene import parsers as P
from k3tui.scene.assemble import Outputs, assemble
from k3tui.scene.model import Scene, scene_from_dict, scene_json

DATA = Path(__file__).parent / "data" / "h200-r580-health-probes"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "hosts" / "h200-r580-health"


def _capture() -> dict[str, dict]:
    return json.loads((DATA / "probes.json").read_text())


def _scene(cap: dict[str, dict]) -> Scene:
    res = {k: RunResult(v["command"], v["stdout"], v["stderr"], v["status"], v["seconds"]) for k, v in cap.items()}
    return assemble(Outputs(res), alias="h200")


def test_the_real_h200_probes_parse_to_a_healthy_host_with_every_fact_or_its_reason() -> None:
    s = _scene(_capture())
    (g,) = s.gpus
    assert g.fabric == {"state": None, "status": None, "clique_id": None, "cluster_uuid": None}
    assert g.health["ecc"] == {"volatile_uncorrectable": 0, "aggregate_uncorrectable": 0}
    assert g.health["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert g.health["pcie"] == {"gen": 5, "gen_max": 5, "width": 16, "width_max": 16}
    assert g.health["clocks_event_reasons"] == ["gpu_idle"]
    assert s.kernel_log == {"source": "dmesg", "boot": 1796162652.0}
    assert s.nvlink == {"gpus": {}}
    assert s.imex["service"] == "absent" and s.imex["ctl_error"] == "nvidia-imex-ctl: not installed"
    assert s.fabricmanager == {"service": "absent"}
    assert s.imex_channels["host"]["present"] is False and "No such file" in s.imex_channels["host"]["error"]
    assert s.host_faults == []
    assert {p.name for p in s.probes if p.ok} >= {"xid", "nvlink", "fabric_services", "smi_xml"}


def test_old_scene_json_without_the_new_fields_still_loads() -> None:
    old = json.loads((Path(__file__).parent / "data" / "h200-r580-local" / "scene.json").read_text())
    assert "host_faults" not in old
    s = scene_from_dict(old)
    assert s.host_faults == [] and s.gpus[0].fabric is None and s.imex is None
    again = scene_from_dict(json.loads(scene_json(_scene(_capture()))))
    assert again.gpus[0].health["pcie"]["gen"] == 5


def _planted(**subs: str) -> dict[str, dict]:
    cap = _capture()
    xml = cap["smi_xml"]["stdout"]
    for old, new in subs.items():
        assert old in xml, old
        xml = xml.replace(old, new, 1)
    cap["smi_xml"]["stdout"] = xml
    return cap


def test_uncorrectable_ecc_and_a_pending_row_remap_in_the_real_xml_are_fatal_faults_of_that_gpu() -> None:
    cap = _planted(
        **{
            "<dram_uncorrectable>0</dram_uncorrectable>": "<dram_uncorrectable>2</dram_uncorrectable>",
            "<remapped_row_pending>No</remapped_row_pending>": "<remapped_row_pending>Yes</remapped_row_pending>",
        }
    )
    s = _scene(cap)
    kinds = {(f["kind"], f["gpu"], f["fatal"]) for f in s.host_faults}
    assert kinds == {("ecc", 0, True), ("row-remap", 0, True)}
    assert all(f["uuid"] == s.gpus[0].uuid for f in s.host_faults)


def test_a_remap_failure_says_replace_and_a_fabric_not_completed_is_a_fault() -> None:
    cap = _planted(
        **{
            "<remapped_row_failure>No</remapped_row_failure>": "<remapped_row_failure>Yes</remapped_row_failure>",
            "<state>N/A</state>\n\t\t\t<status>N/A</status>": "<state>In Progress</state>\n\t\t\t<status>N/A</status>",
        }
    )
    s = _scene(cap)
    by_kind = {f["kind"]: f for f in s.host_faults}
    assert "replace" in by_kind["row-remap"]["action"]
    assert by_kind["fabric"]["fatal"] and "In Progress" in by_kind["fabric"]["line"]


def test_the_shared_h200_health_capture_agrees() -> None:
    xml = (SHARED / "smi_q.xml").read_text()
    (h,) = P.health_from_smi_xml(xml)
    assert h["fabric"]["state"] is None and h["remapped_rows"]["pending"] is False
    dmesg = (SHARED / "kernel_and_fabric.txt").read_text().split("===== journalctl")[0]
    k = P.parse_kernel_events("# source: dmesg\n" + dmesg)
    assert k["events"] == [] and k["source"] == "dmesg"
    with pytest.raises(P.ParseError):
        P.health_from_smi_xml("not xml")


# --- kernel lines of the real shapes, generated --------------------------------------------

_pci = st.tuples(st.integers(0, 0xFFFF), st.integers(0, 0xFF), st.integers(0, 0x1F), st.sampled_from(["", ".0"])).map(
    lambda t: (f"{t[0]:04x}:{t[1]:02x}:{t[2]:02x}{t[3]}", f"{t[1]:02x}:{t[2]:02x}")
)
_pid = st.sampled_from(["pid='<unknown>', name=<unknown>, ", "pid=4242, name=python3, ", "pid=77, ", ""])
_msg = st.sampled_from(
    [
        "GPU has fallen off the bus.",
        "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x1c054",
        "Timeout after 6s of waiting for RPC response from GPU0 GSP!",
        "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 1.",
    ]
)
_when = st.one_of(
    st.floats(0, 9_999_999, allow_nan=False).map(lambda up: ("dmesg", up)),
    st.integers(1_600_000_000, 1_900_000_000).map(lambda t: ("iso", t)),
)


def _stamp(when: tuple[str, float]) -> str:
    kind, v = when
    if kind == "dmesg":
        return f"[{v:12.6f}] "
    return (
        __import__("time").strftime("%Y-%m-%dT%H:%M:%S", __import__("time").gmtime(v))
        + ".123456+0000 gb300-02 kernel: "
    )


@settings(max_examples=300, deadline=None)
@given(_pci, st.integers(1, 200), _pid, _msg, _when, st.floats(1_600_000_000, 1_800_000_000, allow_nan=False))
def test_any_xid_line_of_the_real_shapes_gives_its_code_gpu_and_wall_time(pci, code, pid, msg, when, boot) -> None:
    full, key = pci
    line = _stamp(when) + f"NVRM: Xid (PCI:{full}): {code}, {pid}{msg}"
    e = P.parse_kernel_event(line, boot)
    assert e is not None and e["kind"] == "xid" and e["code"] == code
    assert P.pci_key(e["pci"]) == key
    if when[0] == "dmesg":
        assert e["unix"] == pytest.approx(boot + when[1], abs=1e-5)
    else:
        assert e["unix"] == pytest.approx(when[1] + 0.123456, abs=1e-5)
    if "pid=4242" in pid:
        assert e["pid"] == 4242


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 15), _pci, st.integers(10000, 29999), st.sampled_from(["Non-fatal", "Fatal"]), _when)
def test_any_sxid_line_gives_its_switch_code_and_severity(sw, pci, code, severity, when) -> None:
    line = (
        _stamp(when)
        + f"nvidia-nvswitch{sw}: SXid (PCI:{pci[0]}): {code}, {severity}, Link 44 egress non-posted PRIV error"
    )
    e = P.parse_kernel_event(line, 1_700_000_000.0)
    assert e is not None and (e["kind"], e["code"], e["device"]) == ("sxid", code, f"nvidia-nvswitch{sw}")
    assert e["severity"] == severity.lower()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_lines_that_are_not_xid_are_never_events(text) -> None:
    if "Xid (" not in text:
        assert P.parse_kernel_event(text) is None
    P.parse_kernel_events(text)  # never raises on any text


def test_a_kernel_log_with_an_xid_79_maps_to_the_gpu_index_uuid_and_wall_time() -> None:
    cap = _capture()
    boot = 1796162652
    cap["xid"]["stdout"] = (
        f"# boot: {boot}\n# source: dmesg\n"
        "[ 1000.500000] NVRM: GPU at PCI:0000:00:06: GPU-7ee30568-29e3-25af-6e27-cbd616550345\n"
        "[ 1000.600000] NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
        "[ 1001.000000] NVRM: Xid (PCI:0000:00:06): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)\n"
    )
    s = _scene(cap)
    x79, x154 = s.host_faults
    assert (x79["kind"], x79["gpu"], x79["code"], x79["fatal"]) == ("xid", 0, 79, True)
    assert x79["uuid"] == "GPU-7ee30568-29e3-25af-6e27-cbd616550345"
    assert x79["time"] == __import__("time").strftime("%Y-%m-%dT%H:%M:%SZ", __import__("time").gmtime(boot + 1000.6))
    assert x154["fatal"] is True
    line = hostfaults.describe(x79, "gb300-02")
    assert line.startswith("gb300-02 GPU 0: Xid 79 at ") and "GPU has fallen off the bus: drain the node" in line


def test_xid_154_to_none_and_application_xids_are_not_fatal() -> None:
    assert (
        hostfaults.xid_class(154, "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)")[2] is False
    )
    assert hostfaults.xid_class(13)[2] is False and hostfaults.xid_class(31)[2] is False
    assert hostfaults.xid_class(99999)[2] is False
    for code in (48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120):
        assert hostfaults.xid_class(code)[2] is True, code


def test_journal_iso_stamps_with_offsets_are_utc() -> None:
    t, up = P.hardware.kernel_line_time(
        "2026-12-01T05:12:44.500000+0200 h kernel: NVRM: Xid (PCI:0000:5d:00): 79, x", None
    )
    assert up is None and t == calendar.timegm((2026, 12, 1, 3, 12, 44)) + 0.5


# --- NVLink, IMEX, channels (documented shapes: no capture has a live NVLink domain) ----------

NVLINK = """GPU 0: NVIDIA GB300 (UUID: GPU-11111111-2222-3333-4444-555555555555)
\t Link 0: 53.125 GB/s
\t Link 1: <inactive>
GPU 1: NVIDIA GB300 (UUID: GPU-11111111-2222-3333-4444-666666666666)
\t Link 0: 53.125 GB/s
\t Link 1: 53.125 GB/s
# errors
GPU 0: NVIDIA GB300 (UUID: GPU-11111111-2222-3333-4444-555555555555)
\t Link 0: Replay Errors: 0
\t Link 0: Recovery Errors: 0
\t Link 0: CRC Errors: 0
\t Link 1: Replay Errors: 3
\t Link 1: CRC Errors: 12
GPU 1: NVIDIA GB300 (UUID: GPU-11111111-2222-3333-4444-666666666666)
\t Link 0: Replay Errors: 0
"""


def test_nvlink_status_and_errors_per_gpu_and_a_link_down_is_a_fault() -> None:
    n = P.parse_nvlink(NVLINK)
    assert n["gpus"]["0"]["links"] == {"0": "up", "1": "down"}
    assert n["gpus"]["0"]["errors"] == {"replay_errors": 3, "recovery_errors": 0, "crc_errors": 12}
    s = Scene(alias="t", nvlink=n)
    faults = hostfaults.nvlink_faults(s)
    assert [(f["kind"], f["fatal"]) for f in faults] == [("nvlink", True), ("nvlink", False)]
    assert P.parse_nvlink("# errors\n") == {"gpus": {}}


IMEX_OK = """==> imex-service <==
LoadState=loaded
ActiveState=active
==> imex-ctl <==
Connectivity Table Legend:
I - Invalid - Node wasn't reachable, no connection status available
C - Connected - Ready for operation

12/01/2026 03:10:11.580
Nodes:
Node #0   - 10.115.131.8    - READY                - Version: 580.95.05
Node #1   - 10.115.131.9    - READY                - Version: 580.95.05

 Nodes From\\To  0   1
       0        C   C
       1        C   C
Domain State: UP
==> imex-nodes <==
10.115.131.8
10.115.131.9
==> channels <==
channel0
==> fm-service <==
LoadState=not-found
ActiveState=inactive
"""


def test_imex_up_with_every_node_ready_is_no_fault_and_a_node_down_is() -> None:
    f = P.parse_fabric_services(IMEX_OK)
    assert f["imex"]["service"] == "active" and f["imex"]["domain_state"] == "UP"
    assert [n["state"] for n in f["imex"]["nodes"]] == ["READY", "READY"]
    assert f["imex"]["config_nodes"] == ["10.115.131.8", "10.115.131.9"]
    assert f["channels"] == {"present": True, "channels": ["channel0"], "error": None}
    assert f["fabricmanager"] == {"service": "absent"}
    assert hostfaults.imex_faults(Scene(imex=f["imex"])) == []
    down = P.parse_fabric_services(IMEX_OK.replace("10.115.131.9    - READY", "10.115.131.9    - UNAVAILABLE").replace(
        "Domain State: UP", "Domain State: DEGRADED"))  # fmt: skip
    (fault,) = hostfaults.imex_faults(Scene(imex=down["imex"]))
    assert fault["fatal"] and "10.115.131.9 UNAVAILABLE" in fault["meaning"]
    stopped = P.parse_fabric_services(IMEX_OK.replace("ActiveState=active", "ActiveState=failed", 1))
    assert hostfaults.imex_faults(Scene(imex=stopped["imex"]))[0]["meaning"] == "the IMEX daemon is failed"
    with pytest.raises(P.ParseError):
        P.parse_fabric_services("garbage")


def test_the_health_captures_sections_say_what_answered_there() -> None:
    smi = P.parse_capture_sections((SHARED / "smi_sections.txt").read_text())
    assert smi["nvidia-smi -q -d PCIE"]["exit"] == 2  # not a section name on driver 580
    assert smi["nvidia-smi nvlink -s"] == {"output": "", "exit": 0}
    assert P.parse_nvlink(smi["nvidia-smi nvlink -e"]["output"]) == {"gpus": {}}
    kern = P.parse_capture_sections((SHARED / "kernel_and_fabric.txt").read_text())
    assert "journalctl: command not found" in kern["journalctl -k"]["output"]
    assert P.parse_channels(kern["imex channels"]["output"])["present"] is False
    ours = P.parse_nvml_calls((DATA / "nvml_calls.txt").read_text())
    shared = P.parse_nvml_calls((SHARED / "nvml_calls.txt").read_text())
    assert shared["fabric_v"]["rc"] == -11  # the v2 struct: SIGSEGV in the child, nothing else harmed
    for calls in (ours, shared):
        assert calls["fabric_v1"]["rc"] == 0 and "'state': 0" in calls["fabric_v1"]["value"]
        assert calls["remapped_rows"]["value"] == "(0, 0, 0, 0)" and calls["ecc_uncorrected_volatile"]["value"] == "0"
        assert "registered" in calls["xid_register_wait"]["value"]
    extras = P.parse_capture_sections((DATA / "extras.txt").read_text())
    (h,) = P.health_from_smi_xml(_capture()["smi_xml"]["stdout"])
    assert "Fabric" in extras["nvidia-smi -q"]["output"] and h["fabric"]["state"] is None


async def test_the_hardware_probes_through_a_real_sshd_as_an_unprivileged_user(sshd) -> None:
    """A real OpenSSH sshd, user k3test (not root): every hardware probe answers or says why, none aborts."""
    from k3tui.profile import load_profile
    from k3tui.remote.ssh import connect
    from k3tui.scene.checks import check_baseline
    from k3tui.scene.freeze import freeze

    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        s = await freeze(host)
    probes = {p.name: p for p in s.probes}
    kernel = probes["xid"]
    if kernel.ok:  # this machine lets the user read the kernel log: its source and boot time are known
        assert s.kernel_log["source"] in ("journalctl", "dmesg") and s.kernel_log["boot"] > 1e9
    else:
        assert "kernel log not readable" in kernel.error and "adm / systemd-journal" in kernel.error
    assert probes["fabric_services"].ok and s.imex["service"] in ("absent", "inactive", "active", "failed")
    assert s.imex_channels["host"]["present"] in (True, False)
    if not s.gpus:  # no NVIDIA GPU on this machine: the NVLink probe says so, and nothing else breaks
        assert not probes["nvlink"].ok and "nvidia-smi not found" in probes["nvlink"].error
    v = {c.check: c for c in check_baseline(s, load_profile("kimi-k3"))}
    assert v["kernel-faults"].verdict == ("PASS" if kernel.ok else "UNKNOWN"), v["kernel-faults"].evidence
    if not s.gpus:
        assert v["gpu-memory"].verdict == "UNKNOWN"  # no nvidia-smi: nothing to judge, nothing guessed


def test_a_narrow_pcie_link_and_a_thermal_slowdown_are_notes_not_faults() -> None:
    cap = _planted(
        **{
            "<current_link_width>16x</current_link_width>": "<current_link_width>8x</current_link_width>",
            "<clocks_event_reason_hw_thermal_slowdown>Not Active</clocks_event_reason_hw_thermal_slowdown>":
                "<clocks_event_reason_hw_thermal_slowdown>Active</clocks_event_reason_hw_thermal_slowdown>",
        }
    )  # fmt: skip
    s = _scene(cap)
    assert s.host_faults == []
    assert any("PCIe link x8 of x16" in n for n in s.notes) and any("hw_thermal_slowdown" in n for n in s.notes)
    assert not _scene(_capture()).notes  # the real capture: gen 5/5 x16/16, only gpu_idle active


def test_two_trays_in_two_cliques_the_head_is_the_reference_whatever_froze_first() -> None:
    def tray(cluster: str, clique: str) -> dict:
        return {"gpus": [{"index": i, "fabric": {"state": "Completed", "status": "Success", "cluster_uuid": cluster,
                                                 "clique_id": clique}} for i in range(4)]}  # fmt: skip

    head, worker = tray("5d0c3f6e", "32766"), tray("a1f4e2c9", "4097")
    for scenes in ({"tray01": head, "tray02": worker}, {"tray02": worker, "tray01": head}):
        ((host, fault),) = hostfaults.domain_faults(scenes, ["tray01", "tray02"])
        assert host == "tray02" and fault["fatal"] and "CliqueId 4097" in fault["meaning"]
    three = {"a": head, "b": worker, "c": worker}  # a majority wins over the order
    assert [h for h, _ in hostfaults.domain_faults(three, ["a", "b", "c"])] == ["a"]
    assert hostfaults.domain_faults({"a": head, "b": head}) == []


def _xid79(cap: dict[str, dict]) -> dict[str, dict]:
    cap["xid"]["stdout"] = (
        "# boot: 1796162652\n# source: dmesg\n"
        "[ 1000.500000] NVRM: GPU at PCI:0000:00:06: GPU-7ee30568-29e3-25af-6e27-cbd616550345\n"
        "[ 1000.600000] NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
    )
    return cap


def test_a_fatal_xid_counts_until_the_driver_says_nothing_is_owed_since_a_reset() -> None:
    """'Since the last GPU reset': the real XML's GPU Recovery Action (r580: None) says a reset cleared it."""
    from k3tui.profile import load_profile
    from k3tui.scene.checks import check_kernel_faults

    profile = load_profile("kimi-k3")
    real = _scene(_xid79(_capture()))
    assert real.gpus[0].health["recovery_action"] == "None"  # as the real H200 answered
    verdict, text = check_kernel_faults(real, profile)
    assert verdict == "PASS" and "history: h200 GPU 0: Xid 79" in text and "reset since" in text, text

    owed = _scene(_xid79(_planted(**{"<gpu_recovery_action>None<": "<gpu_recovery_action>Reset<"})))
    verdict, text = check_kernel_faults(owed, profile)
    assert verdict == "FAIL" and "h200 GPU 0: Xid 79" in text and "the driver asks for: Reset" in text, text

    # a driver without the field (or a GPU that no longer answers): the Xid since boot counts
    silent = _scene(_xid79(_planted(**{"<gpu_recovery_action>None</gpu_recovery_action>": ""})))
    assert silent.gpus[0].health["recovery_action"] is None
    verdict, text = check_kernel_faults(silent, profile)
    assert verdict == "FAIL" and "Xid 79" in text and "asks for" not in text, text

"""Every parser on every real capture in ../shared/fixtures/hosts (H200, driver 580)."""

from __future__ import annotations

from pathlib import Path

import pytest

from k3tui.scene import parsers as P

UUID0 = "GPU-3495a0bd-4dbd-86a9-74cc-5906489ee0e9"


def read(shared: Path, rel: str) -> str:
    return (shared / "fixtures" / "hosts" / rel).read_text()


# Every fixture file has a parser; a new capture without one fails here.
PARSER_OF = {
    "h200-r580/nvidia_smi_q.xml": P.parse_smi_xml,
    "h200-r580/nvidia_smi_q.txt": P.parse_smi_q,
    "h200x2-r580/smi_q_sections.txt": P.parse_smi_q,
    "h200-r580/nvidia_smi.txt": P.parse_smi_table,
    "h200x2-r580/nvidia_smi_2gpu.txt": P.parse_smi_table,
    "h200-r580/nvidia_smi_L.txt": P.parse_smi_list,
    "h200-r580/nvidia_smi_query.txt": P.parse_csv_query,
    "h200-r580/nvidia_smi_apps.txt": P.parse_csv_query,
    "h200-r580/nvidia_smi_topo.txt": P.parse_topo,
    "h200x2-r580/topo_2gpu.txt": P.parse_topo,
    "h200-r580/proc_driver.txt": P.parse_proc_driver,
    "h200-r580/pynvml.txt": P.parse_pynvml,
    "h200-r580/nccl_ok.txt": P.parse_nccl_log,
    "h200x2-r580/nccl2_ok.txt": P.parse_nccl_log,
    "h200-r580/nvcc.txt": P.parse_nvcc,
    "h200x2-r580/smi_loop.txt": P.parse_smi_loop,
    "h200-r580/os_release.txt": P.parse_os_release,
    "h200-r580/uname.txt": P.parse_uname,
    "h200-r580/ldconfig_cuda.txt": P.parse_ldconfig,
    "h200-r580/env_gpu_vars.txt": P.parse_env,
    "h200-r580/py_versions.txt": P.parse_torch_report,
    "h200-r580/fail_cudart12.txt": P.parse_failure,
    "h200-r580/fail_nogpu.txt": P.parse_failure,
    "h200-r580/fail_oom.txt": P.parse_failure,
    "h200-r580/nccl_fail_worldsize.txt": P.parse_failure,
    "h200x2-r580/fail_index_assert.txt": P.parse_failure,
    "h200-r580-health/smi_q.xml": P.health_from_smi_xml,
    "h200-r580-health/smi_sections.txt": P.parse_capture_sections,
    "h200-r580-health/kernel_and_fabric.txt": P.parse_capture_sections,
    "h200-r580-health/nvml_calls.txt": P.parse_nvml_calls,
    "h200-r580-health/nccl_trace_1rank.txt": P.parse_nccl_log,
}


def test_every_fixture_has_a_parser(shared: Path) -> None:
    root = shared / "fixtures" / "hosts"
    files = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.name.startswith("README")}
    assert files - set(PARSER_OF) == set(), "captures without a parser"


@pytest.mark.parametrize("rel", sorted(PARSER_OF))
def test_parser_accepts_its_fixture_and_rejects_garbage(shared: Path, rel: str) -> None:
    fn = PARSER_OF[rel]
    out = fn(read(shared, rel))
    assert out or rel.endswith("apps.txt")  # the apps capture is a header with no process: []
    if fn not in (P.parse_ldconfig, P.parse_env, P.parse_csv_query):  # these read "nothing found" as empty
        with pytest.raises(P.ParseError):
            fn("\x00garbage: not a capture\n{<\n")


def test_smi_xml(shared: Path) -> None:
    s = P.parse_smi_xml(read(shared, "h200-r580/nvidia_smi_q.xml"))
    assert s["driver_version"] == "580.159.04" and s["cuda_driver_version"] == "13.0"
    (g,) = s["gpus"]
    assert g["name"] == "NVIDIA H200" and g["uuid"] == UUID0 and g["pci_bus_id"] == "00000000:00:06.0"
    assert g["memory_total_mib"] == 143771 and g["memory_used_mib"] == 0
    assert g["persistence_mode"] == "Enabled" and g["mig_mode"] == "Disabled" and g["ecc_mode"] == "Enabled"
    assert g["ecc_errors"]["volatile.dram_uncorrectable"] == 0
    assert s["processes"] == []


def test_smi_xml_processes_and_malformed() -> None:
    xml = (
        "<nvidia_smi_log><driver_version>580.95.05</driver_version><cuda_version>13.0</cuda_version>"
        "<gpu id='00000009:01:00.0'><product_name>NVIDIA GB300</product_name><uuid>GPU-aa</uuid><minor_number>2</minor_number>"
        "<processes><process_info><pid>4242</pid><type>C</type><process_name>VLLM::Worker_TP2</process_name>"
        "<used_memory>270000 MiB</used_memory></process_info></processes></gpu></nvidia_smi_log>"
    )
    s = P.parse_smi_xml(xml)
    assert s["gpus"][0]["index"] == 2 and s["gpus"][0]["pci_bus_id"] == "00000009:01:00.0"
    assert s["processes"] == [
        {
            "gpu_index": 0,
            "gpu_uuid": "GPU-aa",
            "pid": 4242,
            "type": "C",
            "name": "VLLM::Worker_TP2",
            "used_memory_mib": 270000.0,
        }
    ]
    with pytest.raises(P.ParseError, match="malformed"):
        P.parse_smi_xml(xml[:-30])


def test_smi_q_text_matches_xml(shared: Path) -> None:
    x = P.parse_smi_xml(read(shared, "h200-r580/nvidia_smi_q.xml"))
    q = P.parse_smi_q(read(shared, "h200-r580/nvidia_smi_q.txt"))
    for key in ("index", "name", "uuid", "pci_bus_id", "memory_total_mib", "persistence_mode", "mig_mode", "ecc_mode"):
        assert q["gpus"][0][key] == x["gpus"][0][key], key
    assert q["driver_version"] == x["driver_version"]


def test_smi_q_sections_two_gpus(shared: Path) -> None:
    q = P.parse_smi_q(read(shared, "h200x2-r580/smi_q_sections.txt"))
    assert q["attached_gpus"] == 2
    assert [g["pci_bus_id"] for g in q["gpus"]] == ["00000000:00:06.0", "00000000:00:07.0"]
    assert all(g["memory_total_mib"] == 143771 for g in q["gpus"])


def test_smi_table(shared: Path) -> None:
    t = P.parse_smi_table(read(shared, "h200x2-r580/nvidia_smi_2gpu.txt"))
    assert t["driver_version"] == "580.159.04" and t["cuda_driver_version"] == "13.0"
    assert [(g["index"], g["name"], g["pci_bus_id"], g["memory_total_mib"]) for g in t["gpus"]] == [
        (0, "NVIDIA H200", "00000000:00:06.0", 143771.0),
        (1, "NVIDIA H200", "00000000:00:07.0", 143771.0),
    ]
    assert t["processes"] == []


def test_smi_list(shared: Path) -> None:
    assert P.parse_smi_list(read(shared, "h200-r580/nvidia_smi_L.txt")) == [
        {"index": 0, "name": "NVIDIA H200", "uuid": UUID0, "mig": []}
    ]


def test_csv_query_with_header_and_without(shared: Path) -> None:
    rows = P.parse_csv_query(read(shared, "h200-r580/nvidia_smi_query.txt"))
    (g,) = P.gpus_from_query(rows)
    assert (
        g["uuid"] == UUID0
        and g["compute_cap"] == "9.0"
        and g["memory_total_mib"] == 143771
        and g["driver_version"] == "580.159.04"
    )
    from k3tui.scene.probes import QUERY_GPU_FIELDS

    line = "3, NVIDIA GB300, GPU-x, 00000000:03:00.0, 580.95.05, 284208, 12, 10.3, Enabled, [N/A], 0"
    (g2,) = P.gpus_from_query(P.parse_csv_query(line, QUERY_GPU_FIELDS))
    assert (g2["index"], g2["compute_cap"], g2["mig_mode"], g2["memory_used_mib"]) == (3, "10.3", None, 12.0)
    with pytest.raises(P.ParseError, match="columns"):
        P.parse_csv_query("1, 2", QUERY_GPU_FIELDS)


def test_apps_empty_and_rows(shared: Path) -> None:
    assert P.apps_from_query(P.parse_csv_query(read(shared, "h200-r580/nvidia_smi_apps.txt"))) == []
    rows = P.parse_csv_query("GPU-a, 77, VLLM::Worker, 1200", ("gpu_uuid", "pid", "process_name", "used_memory"))
    assert P.apps_from_query(rows) == [
        {"gpu_uuid": "GPU-a", "pid": 77, "name": "VLLM::Worker", "used_memory_mib": 1200.0}
    ]


def test_topo(shared: Path) -> None:
    t = P.parse_topo(read(shared, "h200x2-r580/topo_2gpu.txt"))
    assert t["links"]["GPU0"]["GPU1"] == "NV18" and t["nvlink"] == ["NV18"] and t["cpu_affinity"]["GPU1"] == "0-31"
    assert P.parse_topo(read(shared, "h200-r580/nvidia_smi_topo.txt"))["nvlink"] == []


def test_proc_driver_pynvml_nccl_nvcc(shared: Path) -> None:
    d = P.parse_proc_driver(read(shared, "h200-r580/proc_driver.txt"))
    assert d["driver_version"] == "580.159.04" and d["open_kernel_module"]
    n = P.parse_pynvml(read(shared, "h200-r580/pynvml.txt"))
    assert n["cuda_driver_version"] == "13.0" and n["gpus"][0]["uuid"] == UUID0 and n["gpus"][0]["compute_cap"] == "9.0"
    assert round(n["gpus"][0]["memory_total_mib"]) == 143771
    c = P.parse_nccl_log(read(shared, "h200x2-r580/nccl2_ok.txt"))
    assert (c["nccl_version"], c["cuda_driver_version"], c["nranks"], c["mnnvl"]) == ("2.28.9+cuda13.0", 13000, 2, 0)
    assert P.parse_nvcc(read(shared, "h200-r580/nvcc.txt"))["cuda_release"] == "13.0"


def test_smi_loop(shared: Path) -> None:
    rows = P.parse_smi_loop(read(shared, "h200x2-r580/smi_loop.txt"))
    assert {r["index"] for r in rows} == {0, 1}
    assert max(r["used_mib"] for r in rows if r["index"] == 0) > 30000


def test_os_uname(shared: Path) -> None:
    o = P.parse_os_release(read(shared, "h200-r580/os_release.txt"))
    assert o["pretty_name"] == "Ubuntu 24.04.3 LTS" and o["id"] == "ubuntu"
    u = P.parse_uname(read(shared, "h200-r580/uname.txt"))
    assert (u["hostname"], u["kernel"], u["arch"]) == ("vm", "6.18.44-fc-v657-gpu", "x86_64")


def test_ldconfig_env_versions(shared: Path) -> None:
    libs = P.parse_ldconfig(read(shared, "h200-r580/ldconfig_cuda.txt"))
    assert libs[0] == {
        "lib": "libnvidia-ml.so.1",
        "arch": "libc6,x86-64",
        "path": "/usr/local/nvidia/lib64/libnvidia-ml.so.1",
    }
    assert [x["path"] for x in libs if x["lib"] == "libcuda.so.1"] == [
        "/usr/local/nvidia/lib64/libcuda.so.1",
        "/lib/libcuda.so.1",
    ]
    env = P.parse_env(read(shared, "h200-r580/env_gpu_vars.txt"))
    assert env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64:/usr/local/nvidia/lib" and env["CUDA_VERSION"] == "13.0.2"
    assert env["NVIDIA_REQUIRE_CUDA"].startswith("cuda>=13.0 ")
    v = P.parse_torch_report(read(shared, "h200-r580/py_versions.txt"))
    assert (v["torch"], v["torch_cuda"], v["nccl"], v["compute_cap"]) == ("2.11.0+cu130", "13.0", "2.28.9", "9.0")
    cuda = P.libcuda_from_maps(v["loaded_libs"])
    assert (
        cuda["path"] == "/usr/local/nvidia/lib64/libcuda.so.580.159.04"
        and cuda["version"] == "580.159.04"
        and not cuda["compat"]
    )


def test_maps_raw_and_probe_forms() -> None:
    raw = (
        "7f1c2a000000-7f1c2a200000 r-xp 00000000 08:01 1234 /usr/local/cuda/compat/lib/libcuda.so.575.57.08\n"
        "7f1c2a200000-7f1c2a400000 r--p 00200000 08:01 1234 /usr/local/cuda/compat/lib/libcuda.so.575.57.08\n"
        "7f1c2b000000-7f1c2b100000 r-xp 00000000 08:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
    )
    libs = P.parse_maps(raw)
    assert [x["path"].rsplit("/", 1)[1] for x in libs] == ["libcuda.so.575.57.08", "libc.so.6"]
    cuda = P.libcuda_from_maps(libs)
    assert cuda["version"] == "575.57.08" and cuda["compat"]
    probe = "812 /usr/lib/x86_64-linux-gnu/libcuda.so.1 -> /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04\n"
    cuda2 = P.libcuda_from_maps(P.parse_maps(probe))
    assert cuda2["version"] == "580.159.04" and cuda2["pids"] == [812]
    assert P.libcuda_from_maps(P.parse_maps("")) is None
    assert P.lib_version("/lib/libcuda.so.1") is None


def test_failures(shared: Path) -> None:
    kinds = {
        "h200-r580/fail_cudart12.txt": ("cuda-library-missing", "OSError"),
        "h200-r580/fail_nogpu.txt": ("no-gpu", "RuntimeError"),
        "h200-r580/fail_oom.txt": ("oom", "torch.OutOfMemoryError"),
        "h200-r580/nccl_fail_worldsize.txt": ("distributed-timeout", "torch.distributed.DistStoreError"),
        "h200x2-r580/fail_index_assert.txt": ("device-assert", "torch.AcceleratorError"),
    }
    for rel, (kind, exc) in kinds.items():
        f = P.parse_failure(read(shared, rel))
        assert (f["kind"], f["exception"]) == (kind, exc), rel
    assert (
        P.parse_failure("RuntimeError: CUDA error: system has unsupported display driver / cuda driver combination")[
            "kind"
        ]
        == "cuda-compat-803"
    )


def test_xid_and_docker() -> None:
    log = (
        "# source: dmesg\n[ 12.5] NVRM: Xid (PCI:0000:03:00): 79, pid=4242, name=python3, GPU has fallen off the bus.\n"
    )
    x = P.parse_xid(log)
    assert x["source"] == "dmesg" and x["events"][0]["xid"] == 79 and x["events"][0]["pid"] == 4242
    ps = P.parse_docker_ps(
        '{"ID":"abc","Names":"vllm","Image":"vllm/vllm-openai:kimi-k3","Command":"\\"vllm serve\\"","Status":"Up 2 minutes"}\n'
    )
    assert ps == [
        {
            "id": "abc",
            "name": "vllm",
            "image": "vllm/vllm-openai:kimi-k3",
            "command": "vllm serve",
            "status": "Up 2 minutes",
        }
    ]
    with pytest.raises(P.ParseError):
        P.container_from_inspect("[]")


def test_parsers_on_what_a_real_h200_printed_to_the_probes() -> None:
    """tests/data/h200-r580-local: the probe commands run on a real H200 (driver 580) while a
    CUDA process held 1.6 GiB — the forms the shared captures lack (noheader CSV, XML with a
    process, the maps probe, the versions JSON, the linker config)."""
    import json

    from k3tui.scene.probes import QUERY_APPS_FIELDS, QUERY_GPU_FIELDS

    cap = json.loads((Path(__file__).parent / "data" / "h200-r580-local" / "probes.json").read_text())
    out = {k: v["stdout"] for k, v in cap.items()}
    x = P.parse_smi_xml(out["smi_xml"])
    assert x["processes"] == [
        {
            "gpu_index": 0,
            "gpu_uuid": x["gpus"][0]["uuid"],
            "pid": 416,
            "type": "C",
            "name": "python3",
            "used_memory_mib": 1634.0,
        }
    ]
    (g,) = P.gpus_from_query(P.parse_csv_query(out["smi_query"], QUERY_GPU_FIELDS))
    assert (g["memory_used_mib"], g["persistence_mode"], g["mig_mode"], g["ecc_uncorrected_volatile"]) == (
        1643.0,
        "Enabled",
        "Disabled",
        0,
    )
    (app,) = P.apps_from_query(P.parse_csv_query(out["smi_apps"], QUERY_APPS_FIELDS))
    assert app == {"gpu_uuid": g["uuid"], "pid": 416, "name": "python3", "used_memory_mib": 1634.0}
    libs = P.parse_maps(out["proc_maps"])
    assert {x["path"].rsplit("/", 1)[1] for x in libs} == {
        "libcudart.so.13",
        "libnccl.so.2",
        "libcuda.so.580.159.04",
        "libnvidia-ml.so.580.159.04",
    }
    assert P.libcuda_from_maps(libs)["pids"] == [416]
    v = P.parse_versions_json(out["proc_versions"])
    assert (v["python"], v["torch"], v["torch_cuda"], v["nccl"], v["vllm"]) == (
        "3.12.3",
        "2.11.0",
        "13.0",
        "2.28.9",
        None,
    )
    conf = P.parse_ld_so_conf(out["host_ld_so_conf"])
    assert conf["/etc/ld.so.conf.d/git-farm-nvidia-folders.conf"] == [
        "/usr/local/nvidia/lib64",
        "/usr/local/nvidia/lib",
    ]
    assert not any("compat" in f for f in conf)
    assert P.parse_xid(out["xid"]) == {"source": "dmesg", "events": []}
    assert P.parse_topo(out["smi_topo"])["gpus"] == ["GPU0"]
    assert [r["pid"] for r in P.parse_pgrep(out["pgrep"])] == []
    n = P.parse_pynvml(out["nvml"])
    assert n["driver_version"] == "580.159.04" and n["cuda_driver_version"] == "13.0"
    assert [(x["uuid"], x["compute_cap"], x["pci_bus_id"]) for x in n["gpus"]] == [(g["uuid"], "9.0", g["pci_bus_id"])]

"""Freeze end to end: on what a real H200 host answered, on this machine, and through a real sshd."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from k3tui.events import SceneFrozen
from k3tui.reader import read_all
from k3tui.recording import Recorder
from k3tui.remote.base import RunResult
from k3tui.scene import probes as probes_mod
from k3tui.scene.capture import CapturedHost
from k3tui.scene.freeze import freeze
from k3tui.scene.probes import command_for, probe_commands, probes_for

DATA = Path(__file__).parent / "data" / "h200-r580-local"
H200_PID = 416  # the CUDA process that held the GPU while the capture ran
SECRET = "hf_PlantedSecretValue0123456789abcdef"


def freeze_limit(seconds: float = 3.0) -> float:
    """The issue's "< 3 s for a responsive host", scaled by how busy this machine is right now.

    The shared 2-core machines run several test suites at once (load averages of 20 were
    seen); a freeze is many concurrent processes, so its wall time grows with the load.
    bench/bench_freeze.py reports the unscaled figure.
    """
    load = os.getloadavg()[0] / (os.cpu_count() or 1)
    return seconds * max(1.0, load)


def h200_capture() -> dict:
    return json.loads((DATA / "probes.json").read_text())


async def test_freeze_real_h200_capture_gives_driver_gpus_and_loaded_libcuda() -> None:
    host = CapturedHost(h200_capture(), alias="h200")
    events: list = []
    s = await freeze(host, pid=H200_PID, emit=events.append)
    assert s.host.driver_version == "580.159.04" == s.host.driver_version_proc
    assert s.host.cuda_driver_version == "13.0" and s.host.os == "Ubuntu 24.04.3 LTS" and s.host.arch == "x86_64"
    (g,) = s.gpus
    assert (g.name, g.uuid, g.compute_cap, g.memory_total_mib) == (
        "NVIDIA H200",
        "GPU-b137310c-8d33-f3ca-5054-657d73073863",
        "9.0",
        143771.0,
    )
    assert [(p.pid, p.gpu_index) for p in s.gpu_processes] == [(H200_PID, 0)]
    assert s.libcuda["path"] == "/usr/local/nvidia/lib64/libcuda.so.580.159.04" and s.libcuda["version"] == "580.159.04"
    assert (s.versions["torch"], s.versions["torch_cuda"], s.versions["nccl"], s.versions["vllm"]) == (
        "2.11.0",
        "13.0",
        "2.28.9",
        None,
    )
    assert s.process["cmdline"][0] == "python3" and s.container is None and s.notes == []
    failed = {p.name: p.error for p in s.probes if not p.ok}
    assert list(failed) == ["docker_ps"] and "docker: not found" in failed["docker_ps"]
    # the contract with every host: exactly the probe table's commands were sent
    assert set(host.commands) == set(probe_commands(pid=H200_PID).values())
    (ev,) = [e for e in events if isinstance(e, SceneFrozen)]
    assert ev.host == "h200" and ev.scene["libcuda"]["version"] == "580.159.04"
    assert set(ev.scene) >= {
        "host",
        "gpus",
        "gpu_processes",
        "container",
        "container_gpus",
        "versions",
        "libcuda",
        "env",
        "first_exception",
        "probes",
    }


class FlakyHost(CapturedHost):
    """Raises on one probe, hangs on another, answers garbage on a third."""

    async def run(
        self, command: str, *, timeout: float = 30.0, purpose: str = "", stdin: str | None = None
    ) -> RunResult:
        if purpose == "uname":
            raise ConnectionResetError("channel died")
        if purpose == "hostname":
            await asyncio.sleep(3600)
        if purpose == "smi_xml":
            return RunResult(command, stdout="<nvidia_smi_log><gpu>", status=0)
        return await super().run(command, timeout=timeout, purpose=purpose)


async def test_failing_probes_never_abort_the_freeze(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = [
        probes_mod.Probe(p.name, p.command, 0.2 if p.name == "hostname" else p.timeout, p.phase)
        for p in probes_mod.PROBES
    ]
    monkeypatch.setattr("k3tui.scene.freeze.probes_for", lambda phase: [p for p in fast if p.phase == phase])
    t = time.monotonic()
    s = await freeze(FlakyHost(h200_capture()), pid=H200_PID)
    assert time.monotonic() - t < freeze_limit()
    rec = {p.name: p for p in s.probes}
    assert not rec["uname"].ok and "ConnectionResetError: channel died" in rec["uname"].error
    assert not rec["hostname"].ok and "timed out" in rec["hostname"].error
    assert not rec["smi_xml"].ok and "not understood" in rec["smi_xml"].error
    # the other sources still fill the scene
    assert s.gpus[0].uuid.startswith("GPU-b137") and s.host.driver_version == "580.159.04" and s.host.kernel is None
    assert s.libcuda["version"] == "580.159.04"


async def test_driver_disagreement_and_compat_libcuda_are_noted() -> None:
    cap = h200_capture()
    cap["proc_driver"]["stdout"] = cap["proc_driver"]["stdout"].replace("580.159.04", "575.57.08")
    cap["proc_maps"]["stdout"] = (
        f"{H200_PID} /usr/local/cuda/compat/libcuda.so.1 -> /usr/local/cuda/compat/libcuda.so.575.57.08\n"
    )
    s = await freeze(CapturedHost(cap), pid=H200_PID)
    assert any("disagree" in n and "575.57.08" in n for n in s.notes)
    assert s.libcuda["compat"] and s.libcuda["version"] == "575.57.08"
    assert any("loaded libcuda 575.57.08" in n for n in s.notes)


def _docker_capture(shared: Path, name: str = "vllm-k3") -> dict:
    """The H200 capture plus a container that a Docker engine would describe (planted secret and LD path)."""
    cap = h200_capture()
    inspect = [
        {
            "Id": "c0ffee" * 10 + "abcd",
            "Name": f"/{name}",
            "Image": "sha256:" + "1" * 64,
            "Path": "vllm",
            "Args": [
                "serve",
                "moonshotai/Kimi-K3",
                "--tensor-parallel-size",
                "8",
                "--api-key",
                "sk-proj-PlantedApiKey0123456789",
            ],
            "State": {"Status": "running", "Pid": 4242, "StartedAt": "2026-11-30T03:00:00Z"},
            "Config": {
                "Image": "vllm/vllm-openai:kimi-k3",
                "Env": [
                    "PATH=/usr/bin",
                    "CUDA_VERSION=13.0.2",
                    f"HF_TOKEN={SECRET}",
                    "LD_LIBRARY_PATH=/opt/planted/lib:/usr/local/nvidia/lib64",
                ],
                "Labels": {},
            },
            "HostConfig": {"Runtime": "nvidia", "IpcMode": "host", "ShmSize": 67108864},
            "Mounts": [],
        }
    ]
    image = [
        {
            "Id": "sha256:" + "1" * 64,
            "RepoTags": ["vllm/vllm-openai:kimi-k3"],
            "RepoDigests": ["vllm/vllm-openai@sha256:" + "2" * 64],
            "Config": {"Env": ["PATH=/usr/bin", "CUDA_VERSION=13.0.2"]},
        }
    ]
    answers = {
        "docker_ps": json.dumps(
            {
                "ID": "c0ffee",
                "Names": name,
                "Image": "vllm/vllm-openai:kimi-k3",
                "Command": '"vllm serve"',
                "Status": "Up",
            }
        )
        + "\n",
        "docker_inspect": json.dumps(inspect),
        "docker_image_inspect": json.dumps(image),
        "docker_logs": (shared / "corpus" / "vllm-cpu" / "10c-fail-model-path-missing.log").read_text(),
        "container_smi_list": cap["smi_list"]["stdout"],
        # what ls printed on the real H200 (tests/data/h200-r580-health-probes): no IMEX channel there
        "container_imex_channels": "ls: cannot access '/dev/nvidia-caps-imex-channels': No such file or directory\n",
        "container_env": f"PATH=/usr/bin\nCUDA_VERSION=13.0.2\nHF_TOKEN={SECRET}\nLD_LIBRARY_PATH=/opt/planted/lib:/usr/local/nvidia/lib64\n",
        "container_ldconfig": cap["host_ldconfig"]["stdout"],
        "container_ld_so_conf": "==> /etc/ld.so.conf.d/00-cuda-compat.conf <==\n/usr/local/cuda/compat\n",
        "container_versions": '{"python": "3.12.3", "torch": "2.11.0+cu130", "torch_cuda": "13.0", "vllm": "0.27.1", "nccl": "2.28.9"}\n',
    }
    for p in probes_for("container"):
        cap[p.name] = {"command": command_for(p, container=name), "stdout": answers[p.name], "stderr": "", "status": 0}
    for p in probes_for("process"):
        cap[p.name] = {**cap[p.name], "command": command_for(p, pid=4242)}
    cap["proc_environ"]["stdout"] = (
        f"CUDA_VERSION=13.0.2\nHF_TOKEN={SECRET}\nLD_LIBRARY_PATH=/opt/planted/lib:/usr/local/nvidia/lib64\nNCCL_SOCKET_IFNAME=eth7\n"
    )
    cap["docker_ps"] = {**cap["docker_ps"], "stdout": answers["docker_ps"], "stderr": "", "status": 0}
    return cap


async def test_container_found_by_image_and_secrets_redacted(tmp_path: Path, shared: Path) -> None:
    host = CapturedHost(_docker_capture(shared), alias="gb300-01")
    rec = Recorder(tmp_path / "s.k3rec")
    s = await freeze(host, emit=rec.emit)
    rec.close()
    assert s.container["name"] == "vllm-k3" and s.container["repo_digests"] == ["vllm/vllm-openai@sha256:" + "2" * 64]
    assert s.process["pid"] == 4242 and s.container_gpus[0]["uuid"] == s.gpus[0].uuid
    assert s.versions["vllm"] == "0.27.1" and s.versions["source"] == "container"
    assert s.env_origin == {
        "CUDA_VERSION": "image",
        "HF_TOKEN": "runtime",
        "LD_LIBRARY_PATH": "runtime",
        "NCCL_SOCKET_IFNAME": "process",
    }
    assert any("cuda-compat" in n for n in s.notes)
    assert s.first_exception and s.first_exception["stage"] == "weights" and s.log_source == "container log"
    blob = json.dumps(s.to_dict())
    assert SECRET not in blob and "PlantedApiKey" not in blob and "<redacted>" in blob
    raw = (tmp_path / "s.k3rec").read_text()
    assert SECRET not in raw and "PlantedApiKey" not in raw
    _, events = read_all(tmp_path / "s.k3rec")
    assert [e for e in events if isinstance(e, SceneFrozen)][0].scene["container"]["name"] == "vllm-k3"


async def test_freeze_this_machine_with_a_planted_process(tmp_path: Path) -> None:
    from k3tui.remote.local import LocalHost

    env = {**os.environ, "HF_TOKEN": SECRET, "LD_LIBRARY_PATH": "/opt/planted/lib"}
    # A real vLLM server of another test may be running on this machine: then name our pid.
    others = subprocess.run(
        ["pgrep", "-f", "[v]llm serve|[v]llm.entrypoints"], capture_output=True, text=True
    ).stdout.split()
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "vllm", "serve", "tiny"], env=env)
    try:
        async with LocalHost() as h:
            s = await freeze(h, pid=proc.pid if others else None)
    finally:
        proc.kill()
        proc.wait()
    assert s.process["pid"] == proc.pid, "found by pgrep as the vLLM server"
    assert s.process["cmdline"][-3:] == ["vllm", "serve", "tiny"]
    assert s.env["LD_LIBRARY_PATH"] == "/opt/planted/lib" and s.env["HF_TOKEN"] == "<redacted>"
    assert SECRET not in json.dumps(s.to_dict())
    assert s.host.hostname and s.host.kernel and s.versions["python"]
    assert {p.name for p in s.probes} >= {"proc_cmdline", "proc_environ", "proc_maps", "proc_versions"}
    assert s.seconds < freeze_limit()


@pytest.mark.sshd
async def test_freeze_through_a_real_sshd(sshd, tmp_path: Path, shared: Path) -> None:
    from k3tui.remote.ssh import connect

    # pytest's tmp dirs are 0700 and the sshd user is another user: a world-readable copy.
    fd, name = tempfile.mkstemp(suffix=".log")
    os.close(fd)
    log = Path(name)
    shutil.copy(shared / "corpus" / "vllm-cpu" / "10a-fail-tensor-parallel-8.log", log)
    log.chmod(0o644)
    rec = Recorder(tmp_path / "s.k3rec")
    async with connect(sshd.target, emit=rec.emit, **sshd.connect_kwargs()) as host:
        handle = await host.start_detached(
            f"cat {log}; exec python3 -c 'import time; time.sleep(60)' vllm serve tiny",
            run_id=f"freeze-{os.getpid()}-{time.time_ns()}",
            env={"HF_TOKEN": SECRET, "LD_LIBRARY_PATH": "/opt/planted/lib"},
        )
        try:
            for _ in range(50):
                if (await host.run("pgrep -f '[v]llm serve tiny'")).ok:
                    break
                await asyncio.sleep(0.1)
            others = subprocess.run(
                ["pgrep", "-f", "[v]llm serve|[v]llm.entrypoints"], capture_output=True, text=True
            ).stdout.split()
            t = time.monotonic()
            s = await freeze(host, run=handle, emit=rec.emit, pid=handle.pid if len(others) > 1 else None)
            took = time.monotonic() - t
        finally:
            await host.stop(handle, grace=1)
    rec.close()
    log.unlink()
    assert took < freeze_limit(), f"freeze over real sshd took {took:.2f}s"
    assert s.alias == sshd.target.split("@")[1] or s.alias
    assert s.host.hostname and s.host.os and s.process and s.process["cmdline"][-3:] == ["vllm", "serve", "tiny"]
    assert s.env["LD_LIBRARY_PATH"] == "/opt/planted/lib"
    # pydantic's root is its 'Value error, …' line; the ValidationError header is its context (issue 13)
    fe = s.first_exception
    assert fe and "must be divisible by tensor parallel size" in fe["line"] and s.log_source.startswith("run freeze-")
    assert "ValidationError" in (fe.get("context") or "")
    raw = (tmp_path / "s.k3rec").read_text()
    assert SECRET not in raw and SECRET not in json.dumps(s.to_dict())


@pytest.mark.sshd
def test_freeze_cli_on_a_group_of_two_real_sshd_nodes(sshd, sshd_factory, tmp_path: Path) -> None:
    other = sshd_factory("node-b")
    kh = tmp_path / "known_hosts"
    kh.write_text(Path(sshd.known_hosts).read_text() + Path(other.known_hosts).read_text())
    group = f"{sshd.target},{other.target}"
    out = tmp_path / "scenes.json"
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "freeze", group, "-i", str(sshd.key_path), "--known-hosts", str(kh),
         "--docker-socket", "", "--json", str(out), "--record", str(tmp_path / "g.k3rec")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    scenes = json.loads(out.read_text())
    assert [s["alias"] for s in scenes] == [sshd.target.split("@")[1], other.target.split("@")[1]]
    assert "== 2 nodes compared" in r.stdout and "all nodes agree on every compared fact" in r.stdout
    _, events = read_all(tmp_path / "g.k3rec")
    assert sorted(e.host for e in events if isinstance(e, SceneFrozen)) == sorted(s["alias"] for s in scenes)


def test_freeze_cli_json_to_stdout_and_bad_target() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "freeze", "local", "--docker-socket", "", "--json", "-"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    data = json.loads(r.stdout)
    assert (
        r.returncode == 0
        and data["alias"] == "local"
        and set(data["host"]) >= {"hostname", "os", "kernel", "driver_version", "cuda_driver_version"}
    )
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "freeze", "127.0.0.1:1", "--known-hosts", "/dev/null"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "connection refused" in r.stderr


async def test_xid_lines_become_xid_events_on_the_right_gpu() -> None:
    from k3tui.events import XidEvent

    cap = h200_capture()
    cap["xid"]["stdout"] = (
        "# source: dmesg\n"
        "[ 9120.441] NVRM: Xid (PCI:0000:00:06): 79, pid=416, name=python3, GPU has fallen off the bus.\n"
    )
    events: list = []
    s = await freeze(CapturedHost(cap, alias="h200"), pid=H200_PID, emit=events.append)
    assert s.xids[0]["xid"] == 79 and s.xids[0]["pid"] == H200_PID
    (x,) = [e for e in events if isinstance(e, XidEvent)]
    assert (x.host, x.gpu, x.xid) == ("h200", 0, 79) and "fallen off the bus" in x.text


async def test_nvml_gives_the_same_facts_when_nvidia_smi_fails() -> None:
    cap = h200_capture()
    for name in ("smi_xml", "smi_query", "smi_apps", "smi_list", "smi_topo"):
        cap[name] = {**cap[name], "stdout": "", "stderr": "sh: nvidia-smi: not found\n", "status": 127}
    s = await freeze(CapturedHost(cap), pid=H200_PID)
    (g,) = s.gpus
    assert (g.name, g.uuid, g.compute_cap, g.pci_bus_id) == (
        "NVIDIA H200",
        "GPU-b137310c-8d33-f3ca-5054-657d73073863",
        "9.0",
        "00000000:00:06.0",
    )
    assert round(g.memory_total_mib) == 143771
    assert s.host.driver_version == "580.159.04" and s.host.cuda_driver_version == "13.0"
    assert {p.name for p in s.probes if p.ok} >= {"nvml"}


async def test_nvml_and_nvidia_smi_disagreeing_is_noted() -> None:
    cap = h200_capture()
    cap["nvml"] = {**cap["nvml"], "stdout": cap["nvml"]["stdout"].replace("driver 580.159.04", "driver 580.95.05")}
    s = await freeze(CapturedHost(cap), pid=H200_PID)
    assert any("NVML (580.95.05)" in n for n in s.notes)


def test_the_serving_process_is_the_one_inside_the_container() -> None:
    from k3tui.scene.freeze import _pick_pid

    cid = "ab" * 32
    out = (
        f"4207 - sh -c vllm serve other --port 1\n"
        f"4217 - /venv/bin/python /venv/bin/vllm serve other --port 1\n"
        f"5100 {cid} /usr/bin/python3 /usr/local/bin/vllm serve moonshotai/Kimi-K3\n"
        f"5150 {cid} VLLM::EngineCore\n"
    )
    results = {"pgrep": RunResult("pgrep", stdout=out, status=0)}
    assert _pick_pid(results, 5000, cid) == 5100, "the server in this container, not another one on the host"
    assert _pick_pid(results, 5000, "cd" * 32) == 5000, "no server in that container: its main process"
    assert _pick_pid(results, None) == 4217, "no container: the first server that is not a shell wrapper"
    assert _pick_pid({"pgrep": RunResult("pgrep", stdout="", status=0)}, None) is None

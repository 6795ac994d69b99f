"""The simulated GB300 host over real SSH: strict keys, the probes a freeze sends, the
project's transport running ``vllm serve`` detached, HTTP through a forwarded port, the
Docker SDK through a forwarded socket."""

from __future__ import annotations

import asyncio
import json
import re
import time
import xml.etree.ElementTree as ET

import asyncssh
import docker
import httpx
import pytest

from k3tui.classify import classify_text
from k3tui.remote.ssh import connect
from k3tui.scene.probes import BY_NAME, probe_commands, stdin_for
from k3tui.sim import SimHost, scenarios

MINIMAL = "vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 8 --trust-remote-code --load-format fastsafetensors"
BASELINE = {
    "model": "moonshotai/Kimi-K3",
    "messages": [{"role": "user", "content": "Reply with exactly: baseline-ok"}],
    "max_tokens": 16,
    "temperature": 0,
}


async def test_starts_fast_and_says_it_is_simulated() -> None:
    t0 = time.monotonic()
    async with SimHost() as sim:
        assert time.monotonic() - t0 < 1.0
        async with asyncssh.connect(**sim.asyncssh_kwargs()) as c:
            r = await c.run("hostname; echo $K3TUI_SIMULATED; cat /etc/motd; uname -m", check=True)
            assert r.stdout.split("\n")[:2] == ["gb300-sim", "1"] and "SIMULATED" in r.stdout
            assert "x86_64" in r.stdout


async def test_host_key_is_checked_strictly(tmp_path) -> None:  # noqa: ANN001
    async with SimHost() as a, SimHost() as b:
        kw = a.asyncssh_kwargs()
        kw["known_hosts"] = b.known_hosts_path  # another host's key
        with pytest.raises(asyncssh.HostKeyNotVerifiable):
            async with asyncssh.connect(**kw):
                pass
        kw = a.asyncssh_kwargs()
        kw["client_keys"] = [b.client_key_path]
        with pytest.raises(asyncssh.PermissionDenied):
            async with asyncssh.connect(**kw):
                pass


async def test_every_freeze_probe_answers(simhost) -> None:  # noqa: ANN001
    cmds = probe_commands(container="vllm-k3")
    async with asyncssh.connect(**simhost.asyncssh_kwargs()) as c:
        runs = [c.run(cmd, input=stdin_for(BY_NAME[name]) or "") for name, cmd in cmds.items()]
        results = dict(zip(cmds, await asyncio.gather(*runs), strict=True))
    failed = {k: (r.exit_status, r.stderr[-300:]) for k, r in results.items() if r.exit_status != 0}
    assert failed == {}
    out = {k: r.stdout for k, r in results.items()}
    assert ET.fromstring(out["smi_xml"].split("\n", 2)[2]).findtext("driver_version") == "580.95.05"
    assert out["proc_driver"].startswith("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05")
    assert len(out["smi_query"].splitlines()) == 8 and out["smi_apps"] == ""
    assert json.loads(out["docker_ps"])["Names"] == "vllm-k3"
    inspect = json.loads(out["docker_inspect"])[0]
    assert inspect["Config"]["Image"] == "vllm/vllm-openai:kimi-k3" and inspect["HostConfig"]["Runtime"] == "nvidia"
    assert any(e.startswith("HF_TOKEN=hf_") for e in inspect["Config"]["Env"])  # the planted secret
    assert json.loads(out["docker_image_inspect"])[0]["RepoDigests"][0].startswith("vllm/vllm-openai@sha256:")
    assert out["container_smi_list"] == out["smi_list"]
    assert "HF_TOKEN=hf_" in out["container_env"] and "NVIDIA_VISIBLE_DEVICES=all" in out["container_env"]
    assert "cuda-compat" not in out["container_ld_so_conf"] and "00-nvidia.conf" in out["container_ld_so_conf"]
    versions = json.loads(out["container_versions"])
    assert versions["torch"] == "2.11.0+cu130" and versions["torch_cuda"] == "13.0" and versions["vllm"] == "0.27.1"
    nvml = out["nvml"].splitlines()  # the real pynvml.py, the simulated libnvidia-ml
    assert nvml[0] == "driver 580.95.05 nvml 13.580.95.05 cuda_driver 13000" and len(nvml) >= 9
    assert nvml[1].startswith("0 NVIDIA GB300 GPU-") and "(10, 3) 00000000:18:00.0" in nvml[1]
    assert "Error 803" not in out["docker_logs"] and "Application startup complete" in out["docker_logs"]


@pytest.mark.parametrize("simhost", ["cuda-compat-803"], indirect=True)
async def test_compat_scenario_shadows_libcuda_in_the_container(simhost) -> None:  # noqa: ANN001
    cmds = probe_commands(container="vllm-k3")
    async with asyncssh.connect(**simhost.asyncssh_kwargs()) as c:
        conf = (await c.run(cmds["container_ld_so_conf"], check=True)).stdout
        ld = (await c.run(cmds["container_ldconfig"], check=True)).stdout
        smi_in = await c.run("docker exec vllm-k3 nvidia-smi -L")
        host_conf = (await c.run(cmds["host_ld_so_conf"], check=True)).stdout
    assert "==> /etc/ld.so.conf.d/cuda-compat.conf <==\n/usr/local/cuda/compat" in conf
    assert "cuda-compat" not in host_conf
    first_libcuda = next(line for line in ld.splitlines() if "libcuda.so.1 " in line)
    assert "/usr/local/cuda/compat/libcuda.so.1" in first_libcuda
    assert smi_in.exit_status == 0 and smi_in.stdout.count("NVIDIA GB300") == 8  # nvidia-smi still works


@pytest.mark.parametrize("simhost", ["driver-r575"], indirect=True)
async def test_r575_host_reports_the_old_driver(simhost) -> None:  # noqa: ANN001
    async with asyncssh.connect(**simhost.asyncssh_kwargs()) as c:
        r = await c.run(
            "nvidia-smi | sed -n 3p; nvidia-smi --query-gpu=driver_version --format=csv,noheader | sort -u", check=True
        )
    assert "Driver Version: 575.57.08" in r.stdout and "CUDA Version: 12.9" in r.stdout
    assert r.stdout.splitlines()[-1] == "575.57.08"


async def _run_to_end(host, handle, limit: float = 20.0) -> tuple[list[str], int | None]:  # noqa: ANN001
    lines: list[str] = []

    async def follow() -> None:
        async for line in host.tail(handle):
            lines.append(line)

    await asyncio.wait_for(follow(), limit)
    return lines, await host.run_status(handle)


@pytest.mark.parametrize("name", ["fastsafetensors-missing", "nccl-init", "cuda-compat-803"])
async def test_failing_launch_replays_and_exits_like_vllm(name: str) -> None:
    info = {s.name: s for s in scenarios()}[name]
    async with SimHost(name, speed=4) as sim:
        async with connect(**sim.connect_kwargs()) as host:
            handle = await host.start_detached(MINIMAL, run_id="minimal-1")
            lines, status = await _run_to_end(host, handle)
            assert (await host.run(f"test -d /proc/{handle.pid} || echo gone")).stdout.strip() == "gone"
            apps = await host.run("nvidia-smi --query-compute-apps=pid --format=csv,noheader")
    assert status == 1 and apps.stdout == ""
    result = classify_text("\n".join(lines) + "\n")
    assert result.failed_stage == info.expected_stage
    assert info.expected_exception in result.first_exception.line


async def test_healthy_launch_serves_http_and_counts_prefix_cache_hits() -> None:
    async with SimHost("healthy") as sim:  # default speed: the whole start-up within 5 s
        async with connect(**sim.connect_kwargs()) as host:
            t0 = time.monotonic()
            handle = await host.start_detached(MINIMAL + " --enable-prefix-caching", run_id="pc-on")
            port = await host.forward_port(8000)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:
                while True:
                    try:
                        if (await http.get("/health")).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    assert time.monotonic() - t0 < 6.0, "start-up replay took more than 6 s (3.4-3.8 s measured)"
                    await asyncio.sleep(0.1)
                apps = await host.run(
                    "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits"
                )
                models = (await http.get("/v1/models")).json()
                r1 = (await http.post("/v1/chat/completions", json=BASELINE)).json()
                long = "A shared system prompt about GPU serving. " * 40
                hits = []
                for tail in ("first question", "second question"):
                    req = {
                        "model": "moonshotai/Kimi-K3",
                        "messages": [{"role": "user", "content": long + tail}],
                        "max_tokens": 8,
                    }
                    assert (await http.post("/v1/chat/completions", json=req)).status_code == 200
                    hits.append(_metric((await http.get("/metrics")).text, "vllm:prefix_cache_hits_total"))
                wrong = await http.post("/v1/chat/completions", json={**BASELINE, "model": "moonshotai/Kimi-K2"})
            assert (
                apps.stdout.count(", VLLM::Worker_TP") == 8
                and len({line.split(",")[0] for line in apps.stdout.splitlines()}) == 1
            )
            assert models["data"][0]["id"] == "moonshotai/Kimi-K3"
            assert (
                r1["choices"][0]["message"]["content"] == "baseline-ok" and r1["choices"][0]["finish_reason"] == "stop"
            )
            assert hits[0] == 0 and hits[1] > 0
            assert wrong.status_code == 404 and "does not exist" in wrong.json()["error"]["message"]
            status = await host.stop(handle, grace=5)
            log = (await host.run(f"cat {handle.run_dir}/log")).stdout
    # vllm itself exits 0 on TERM; the run's `sh -c` may be killed by the same group TERM first (143)
    assert status in (0, 143) and "[shutdown] API server: shutdown triggered" in log
    assert "Application startup complete." in log and '"POST /v1/chat/completions HTTP/1.1" 200 OK' in log
    assert classify_text(log).failed_stage == "none"


def _metric(text: str, name: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name:
                return s.value
    raise KeyError(name)


async def test_no_prefix_caching_keeps_the_counters_at_zero() -> None:
    async with SimHost("healthy", speed=4) as sim, connect(**sim.connect_kwargs()) as host:
        handle = await host.start_detached(MINIMAL + " --no-enable-prefix-caching --port 8011", run_id="pc-off")
        port = await host.forward_port(8011)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:
            await _wait_ready(http)
            long = "The same long prefix again and again. " * 40
            for tail in ("one", "two"):
                req = {
                    "model": "moonshotai/Kimi-K3",
                    "messages": [{"role": "user", "content": long + tail}],
                    "max_tokens": 8,
                }
                await http.post("/v1/chat/completions", json=req)
            text = (await http.get("/metrics")).text
        await host.stop(handle, grace=5)
    assert _metric(text, "vllm:prefix_cache_queries_total") == 0 and _metric(text, "vllm:prefix_cache_hits_total") == 0
    assert _metric(text, "vllm:prompt_tokens_total") > 0
    assert 'enable_prefix_caching="False"' in text


async def _wait_ready(http: httpx.AsyncClient, limit: float = 10.0) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        try:
            if (await http.get("/health")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.05)
    raise AssertionError("the simulated vllm never became ready")


async def test_first_request_kills_a_worker_in_the_runtime_scenario() -> None:
    info = {s.name: s for s in scenarios()}["runtime-worker-dies"]
    async with SimHost("runtime-worker-dies", speed=4) as sim, connect(**sim.connect_kwargs()) as host:
        handle = await host.start_detached(MINIMAL, run_id="rt")
        port = await host.forward_port(8000)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            await _wait_ready(http)
            first = await http.post("/v1/chat/completions", json=BASELINE)
            try:
                health = (await http.get("/health")).status_code
            except httpx.TransportError:
                health = None  # already gone
        lines, status = await _run_to_end(host, handle)
        kernel = (await host.run("dmesg | tail -n 2")).stdout
    assert first.status_code == 500 and first.json()["error"]["type"] == "InternalServerError"
    assert health in (503, None)
    assert status == 0  # vLLM exits 0 after its engine died at runtime (as in the real corpus log)
    result = classify_text("\n".join(lines) + "\n")
    assert result.failed_stage == "runtime" and info.expected_exception in result.first_exception.line
    assert "Out of memory: Killed process" in kernel


async def test_docker_sdk_reads_the_container_through_the_forwarded_socket(simhost) -> None:  # noqa: ANN001
    async with connect(**simhost.connect_kwargs()) as host:
        sock = await host.forward_unix("/var/run/docker.sock")

        def read() -> tuple:
            client = docker.DockerClient(base_url=f"unix://{sock}", version="1.45")
            try:
                c = client.containers.get("vllm-k3")
                listed = [x.name for x in client.containers.list()]
                image = client.images.get(c.attrs["Config"]["Image"])
                logs = c.logs(tail=3).decode()
                return client.ping(), listed, c.attrs, image.attrs, logs
            finally:
                client.close()

        ping, listed, attrs, image, logs = await asyncio.to_thread(read)
    assert ping is True and listed == ["vllm-k3"]
    assert attrs["HostConfig"]["DeviceRequests"][0]["Capabilities"] == [["gpu"]] and attrs["HostConfig"]["ShmSize"] > 0
    assert attrs["Config"]["Entrypoint"] == ["vllm", "serve"] and "--tensor-parallel-size" in attrs["Config"]["Cmd"]
    assert image["RepoDigests"][0].startswith("vllm/vllm-openai@sha256:") and image["Id"] == attrs["Image"]
    assert len(logs.splitlines()) == 3


async def test_two_trays_of_an_nvl72_scenario(simhost_factory) -> None:  # noqa: ANN001
    a = await simhost_factory("nvl72-2x4-healthy", node=0)
    b = await simhost_factory("nvl72-2x4-healthy", node=1)
    outs = []
    for sim in (a, b):
        async with asyncssh.connect(**sim.asyncssh_kwargs()) as c:
            outs.append((await c.run("hostname; uname -m; nvidia-smi -L | wc -l", check=True)).stdout.split())
    assert outs == [["gb300-sim-tray01", "aarch64", "4"], ["gb300-sim-tray02", "aarch64", "4"]]
    assert a.host_alias != b.host_alias


async def test_smi_loop_streams_until_the_channel_closes(simhost) -> None:  # noqa: ANN001
    cmd = "nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total --format=csv,noheader,nounits -lms 100"
    async with asyncssh.connect(**simhost.asyncssh_kwargs()) as c:
        proc = await c.create_process(cmd)
        lines: list[str] = []
        t0 = time.monotonic()
        while len(lines) < 24 and time.monotonic() - t0 < 10:
            lines.append((await proc.stdout.readline()).rstrip("\n"))
        looking = f"/usr/bin/pgrep -af 'tool_main[.]py {simhost.root} host nvidia-smi' || true"
        running = await c.run(looking)
        proc.close()
        await proc.wait_closed()
        await asyncio.sleep(0.3)
        left = await c.run(looking)
    assert len(lines) == 24 and [line.split(", ")[1] for line in lines[:8]] == [str(i) for i in range(8)]
    assert re.fullmatch(r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d{3}, 0, 0, 284208", lines[0])
    assert "-lms 100" in running.stdout and left.stdout == ""  # the loop ended with its channel


async def test_docker_run_of_the_official_image_runs_vllm_serve_in_the_container() -> None:
    async with SimHost("fastsafetensors-missing", speed=4) as sim, connect(**sim.connect_kwargs()) as host:
        ok = await host.start_detached(
            "docker run --rm --gpus all --ipc=host -e HF_TOKEN=hf_x vllm/vllm-openai:kimi-k3 moonshotai/Kimi-K3 "
            "--tensor-parallel-size 8 --trust-remote-code --load-format fastsafetensors",
            run_id="docker-run",
        )
        lines, status = await _run_to_end(host, ok)
        missing = await host.run("docker run --rm vllm/vllm-openai:cu129-nightly --help")
    assert status == 1 and classify_text("\n".join(lines) + "\n").failed_stage == "weights"
    assert missing.status == 125 and "pull access denied" in missing.stderr


async def test_sftp_relative_paths_land_in_the_session_home(simhost) -> None:  # noqa: ANN001
    async with asyncssh.connect(**simhost.asyncssh_kwargs()) as c:
        async with c.start_sftp_client() as sftp:
            await sftp.makedirs(".k3tui/tools", exist_ok=True)
            async with sftp.open(".k3tui/tools/hello.py", "w") as f:
                await f.write("print('hello from the simulated host')\n")
        r = await c.run("python3 -S .k3tui/tools/hello.py; echo $HOME", check=True)
    assert r.stdout.splitlines() == ["hello from the simulated host", str(simhost.root / "home")]


async def test_a_forward_to_a_port_nobody_serves_is_refused(simhost) -> None:  # noqa: ANN001
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Ok(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *a) -> None:  # noqa: ANN002
            pass

    # a real service of this machine must stay out of the simulated host's reach
    real = HTTPServer(("127.0.0.1", 0), Ok)
    threading.Thread(target=real.serve_forever, daemon=True).start()
    try:
        assert httpx.get(f"http://127.0.0.1:{real.server_address[1]}/health").status_code == 200
        async with connect(**simhost.connect_kwargs()) as host:
            port = await host.forward_port(real.server_address[1])
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=3) as http:
                with pytest.raises(httpx.TransportError):
                    await http.get("/health")
    finally:
        real.shutdown()
        real.server_close()


@pytest.mark.parametrize("simhost", ["runtime-xid79"], indirect=True)
async def test_xid_scenario_kernel_log_holds_the_xid(simhost) -> None:  # noqa: ANN001
    cmds = probe_commands()
    async with asyncssh.connect(**simhost.asyncssh_kwargs()) as c:
        xid = (await c.run(cmds["xid"], check=True)).stdout
        journal = (await c.run("journalctl -k --no-pager -q | grep -c 'NVRM: Xid'", check=True)).stdout
    boot, source = xid.splitlines()[:2]  # issue 14: the boot time (dmesg stamps to wall time), then the source
    assert boot.startswith("# boot: ") and int(boot.split()[-1]) > 1e9 and source == "# source: journalctl"
    assert "NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus." in xid
    assert journal.strip() == "1"


@pytest.mark.parametrize("simhost", ["healthy"], indirect=True)
async def test_healthy_kernel_log_has_no_xid(simhost) -> None:  # noqa: ANN001
    async with asyncssh.connect(**simhost.asyncssh_kwargs()) as c:
        xid = (await c.run(probe_commands()["xid"], check=True)).stdout
    assert xid.startswith("# boot: ") and xid.splitlines()[1:] == ["# source: journalctl"]

"""The containerd launcher against a REAL containerd (pod containers made as the kubelet makes them),
read over a REAL sshd as an unprivileged user: pod identity, the OCI spec's injected env, the image
digest, the previous container's CRI log; the CLI's freeze and check; and the CRI log format as a class."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k3tui.launch import Pick, cri, detect, get
from k3tui.profile import load_profile
from k3tui.scene.checks import check_baseline

pytestmark = [pytest.mark.docker]

NS, POD, UID, CTR = "vllm", "vllm-server-6d9c8f7b5d-x7k2p", "c0b9a3d2-5e1f-4b7a-9c3d-8e2f1a6b4d90", "vllm"
INJECTED = "/usr/local/cuda/compat/lib:/usr/local/nvidia/lib64"
SECRET = "hf_PlantedSecretValue9d8c7b6a"
TOOLKIT_ENV = {
    "LD_LIBRARY_PATH": INJECTED,
    "NVIDIA_VISIBLE_DEVICES": "GPU-6b3c1a2e-0f4d-4c5b-9a8e-7d6f5e4c3b2a",
    "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
    "NCCL_DEBUG": "INFO",
    "HF_TOKEN": SECRET,
}


@pytest.fixture(scope="module")
def pod(containerd, shared: Path) -> dict[str, str]:
    """Restart 0 died with a real vLLM start-up failure; restart 1 runs (its log has no exception yet)."""
    log = shared / "corpus" / "vllm-cpu" / "10d-fail-load-format-fastsafetensors.log"
    first = containerd.run_pod_container(
        NS, POD, CTR, UID, ["sh", "-c", "cat /srv/server.log; exit 1", "vllm", "serve"], env=TOOLKIT_ENV,
        mounts={str(log): "/srv/server.log"},
    )  # fmt: skip
    _wait_exited(containerd, first)
    now = containerd.run_pod_container(
        NS, POD, CTR, UID, ["sh", "-c", "echo 'INFO vllm serve starting'; exec sleep 3600", "vllm", "serve"],
        env=TOOLKIT_ENV, restart=1,
    )  # fmt: skip
    containerd.run_pod_container("kube-system", "nvidia-device-plugin-x", "plugin", "u2", ["sleep", "3600"])
    return {"first": first, "now": now}


def _wait_exited(containerd, cid: str) -> None:  # noqa: ANN001
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        rows = containerd.ctr("tasks", "ls").stdout.decode()
        if any(line.startswith(cid) and "STOPPED" in line for line in rows.splitlines()):
            return
        time.sleep(0.1)
    raise AssertionError(f"container {cid} did not exit: {rows}")


def _pick(containerd, **kw) -> Pick:  # noqa: ANN001
    return Pick(containerd_socket=containerd.socket, pod_log_root=containerd.log_root, **kw)


def _assert_pod_scene(s, containerd, pod) -> None:  # noqa: ANN001
    assert s.launcher == "containerd", s.notes
    c = s.container
    assert c is not None, [p for p in s.probes if not p.ok]
    assert c["id"] == pod["now"] and c["name"] == CTR and c["image"] == containerd.image
    assert c["repo_digests"] == [f"docker.io/vllm/vllm-openai@{containerd.image_digest}"]
    assert c["state"] == "running" and c["pid"]
    assert {"/dev/nvidia0", "/dev/nvidia-caps-imex-channels/channel0"} <= set(c["gpu_devices"])
    assert s.pod == {"namespace": NS, "name": POD, "uid": UID, "container": CTR}
    assert s.env["LD_LIBRARY_PATH"] == INJECTED and s.env_origin["LD_LIBRARY_PATH"] == "runtime"
    assert s.env["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility"
    assert s.first_exception is not None, s.log_source
    assert "fastsafetensors" in s.first_exception["line"] and s.first_exception["stage"] == "weights"
    assert s.log_source.startswith("previous container's CRI log") and s.log_source.endswith(f"{CTR}/0.log")
    assert s.log_scan is None, "a log the tail read whole is not scanned again"
    assert SECRET not in json.dumps(s.to_dict())


async def test_freeze_a_pod_container_over_real_sshd_through_ctr(sshd, containerd, pod) -> None:
    from k3tui.remote.ssh import connect

    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        pick = _pick(containerd, pod=f"{NS}/{POD}", docker_socket="/nonexistent/docker.sock")
        assert (
            await detect(host, Pick(containerd_socket=containerd.socket, docker_socket="/nonexistent/d.sock"))
            == "containerd"
        )
        s = await get("containerd", pick).freeze(host, pick)
    _assert_pod_scene(s, containerd, pod)
    assert {p.name for p in s.probes if p.ok} >= {"ctr_containers", "ctr_tasks", "ctr_images", "cri_log_previous"}
    verdicts = {v.check: v for v in check_baseline(s, load_profile("kimi-k3"))}
    assert (
        verdicts["injected-env"].verdict == "FAIL" and "/usr/local/cuda/compat/lib" in verdicts["injected-env"].evidence
    )


async def test_found_by_container_name_or_as_the_one_serving_vllm(sshd, containerd, pod) -> None:
    from k3tui.remote.ssh import connect

    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        picks = [_pick(containerd, container=CTR), _pick(containerd), _pick(containerd, pod="vllm/no-such-pod")]
        by_name, found, none = [await get("containerd", p).find(host, p) for p in picks]
    for f in (by_name, found):
        assert f.container is not None and f.container["id"] == pod["now"], f.notes
    assert none.container is None and none.notes == ["containerd has no pod vllm/no-such-pod (namespace k8s.io)"]


async def test_an_unreachable_containerd_is_one_note_and_the_freeze_goes_on(sshd) -> None:
    from k3tui.remote.ssh import connect

    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        s = await get("containerd").freeze(host, Pick(containerd_socket="/nonexistent/containerd.sock"))
    assert s.container is None and s.host.kernel
    assert any(n.startswith("containerd not readable:") for n in s.notes), s.notes
    assert not s.probe("ctr_containers").ok


def test_cli_freeze_and_check_a_pod_on_a_node_without_dockerd(sshd, containerd, pod, tmp_path: Path) -> None:
    out = tmp_path / "scene.json"
    common = [sshd.target, "-i", str(sshd.key_path), "--known-hosts", str(sshd.known_hosts), "--pod", f"{NS}/{POD}",
              "--runtime", "containerd", "--containerd-socket", containerd.socket, "--pod-log-root", containerd.log_root]  # fmt: skip
    r = _k3tui("freeze", *common, "--json", str(out))
    assert r.returncode == 0, r.stderr
    scene = json.loads(out.read_text())
    assert scene["launcher"] == "containerd" and scene["pod"]["uid"] == UID
    assert scene["container"]["repo_digests"] == [f"docker.io/vllm/vllm-openai@{containerd.image_digest}"]
    assert scene["env"]["LD_LIBRARY_PATH"] == INJECTED and "fastsafetensors" in scene["first_exception"]["line"]
    assert SECRET not in out.read_text() and SECRET not in r.stdout
    chk = _k3tui("check", *common)
    assert chk.returncode == 1, chk.stdout + chk.stderr
    line = next(ln for ln in chk.stdout.splitlines() if "injected-env" in ln)
    assert line.split()[0] == "FAIL" and "LD_LIBRARY_PATH adds /usr/local/cuda/compat/lib" in line
    bad = _k3tui("freeze", *common[:5], "--pod", "just-a-name")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "NAMESPACE/NAME" in bad.stderr


TRITON = "nvcr.io/nvidia/tritonserver:25.09-vllm-python-py3"


@pytest.fixture(scope="module")
def other_image(containerd) -> str:  # noqa: ANN001
    """A second image in the real containerd (imported, never pulled) and a pod container of it."""
    from tests.support.containerd import oci_image_tar

    containerd.ctr("images", "import", "-", input=oci_image_tar(TRITON)[0])
    kept, containerd.image = containerd.image, TRITON
    try:
        return containerd.run_pod_container("triton", "triton-0", "triton", "u-triton", ["sleep", "3600"])
    finally:
        containerd.image = kept


async def test_found_by_image_exact_or_a_part_naming_one_image(sshd, containerd, pod, other_image) -> None:  # noqa: ANN001
    from k3tui.errors import UsageError
    from k3tui.remote.ssh import connect

    async with connect(sshd.target, **sshd.connect_kwargs()) as host:

        async def find(ref: str):  # noqa: ANN202
            return await get("containerd").find(host, _pick(containerd, image=ref))

        exact, short, part = await find(TRITON), await find("vllm/vllm-openai:kimi-k3"), await find("tritonserver")
        missing = await find("sglang")
        with pytest.raises(UsageError) as ambiguous:
            await find("vllm")
    assert exact.container is not None and exact.container["id"] == other_image, exact.notes
    assert exact.pod == {"namespace": "triton", "name": "triton-0", "uid": "u-triton", "container": "triton"}
    assert part.container is not None and part.container["id"] == other_image
    # docker.io/… written short is the exact reference; of its containers the running vLLM server is taken
    assert short.container is not None and short.container["id"] == pod["now"], short.notes
    assert missing.container is None and missing.notes == [
        "containerd has no container of image sglang (namespace k8s.io)"
    ]
    assert str(ambiguous.value) == (
        f"--image 'vllm' matches 2 images: docker.io/vllm/vllm-openai:kimi-k3, {TRITON}; give more of the reference"
    )


def test_cli_image_chooses_the_container_and_an_ambiguous_part_is_one_line(
    sshd, containerd, pod, other_image, tmp_path: Path
) -> None:  # noqa: ANN001, E501
    out = tmp_path / "scene.json"
    common = [sshd.target, "-i", str(sshd.key_path), "--known-hosts", str(sshd.known_hosts), "--runtime", "containerd",
              "--containerd-socket", containerd.socket, "--pod-log-root", containerd.log_root]  # fmt: skip
    r = _k3tui("freeze", *common, "--image", "tritonserver:25.09", "--json", str(out))
    assert r.returncode == 0, r.stderr
    scene = json.loads(out.read_text())
    assert scene["container"]["id"] == other_image and scene["container"]["image"] == TRITON
    bad = _k3tui("freeze", *common, "--image", "vllm")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stdout[-1000:] + bad.stderr
    assert "matches 2 images: docker.io/vllm/vllm-openai:kimi-k3, nvcr.io/nvidia/tritonserver" in bad.stderr
    docker = _k3tui("freeze", *common[:5], "--runtime", "docker", "--image", TRITON)  # not silently ignored
    assert docker.returncode == 2 and "add --runtime containerd" in docker.stderr, docker.stdout[-500:] + docker.stderr


def _tail(path: Path) -> bytes:
    with path.open("rb") as fh:
        fh.seek(max(0, path.stat().st_size - 300))
        return fh.read()


def _k3tui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "k3tui.cli", *args], capture_output=True, text=True, timeout=180)


# --- the CRI log format, as a class of inputs ------------------------------------------------

_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=80)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["stdout", "stderr"]), _text, st.integers(1, 5)), max_size=30), st.randoms())
def test_cri_partial_lines_join_back_per_stream(entries, rnd) -> None:  # noqa: ANN001
    """Lines cut into P pieces and interleaved across streams come back whole, in order, per stream."""
    written, pending = [], {"stdout": [], "stderr": []}
    for n, (stream, text, cuts) in enumerate(entries):
        marks = sorted(rnd.sample(range(len(text) + 1), min(cuts - 1, len(text) + 1))) if cuts > 1 else []
        pieces = [text[a:b] for a, b in zip([0, *marks], [*marks, len(text)], strict=True)]
        ts = f"2026-12-01T22:00:{n % 60:02d}.{n:09d}Z"
        pending[stream] += [f"{ts} {stream} P {p}" for p in pieces[:-1]] + [f"{ts} {stream} F {pieces[-1]}"]
    while pending["stdout"] or pending["stderr"]:  # interleave the two streams at random
        stream = rnd.choice([s for s in pending if pending[s]])
        written.append(pending[stream].pop(0))
    got = list(cri.parse(written))
    for stream in ("stdout", "stderr"):
        assert [x.text for x in got if x.stream == stream] == [t for s, t, _ in entries if s == stream]


async def test_the_simulated_kubernetes_node_freezes_through_containerd(simhost_factory) -> None:
    """The demo's Kubernetes-node scenario: no dockerd, a pod whose injected LD_LIBRARY_PATH loads the compat libcuda."""
    from k3tui.launch import freeze_host
    from k3tui.remote.ssh import connect

    sim = await simhost_factory("k8s-node-injected-ld")
    async with connect(**sim.connect_kwargs()) as host:
        s = await freeze_host(host)
        docker = await host.run("docker ps")
    assert s.launcher == "containerd" and s.simulated
    assert s.pod["name"] == "vllm-server-6d9c8f7b5d-x7k2p" and s.pod["namespace"] == "vllm"
    assert (
        s.env["LD_LIBRARY_PATH"].startswith("/usr/local/cuda/compat") and s.env_origin["LD_LIBRARY_PATH"] == "runtime"
    )
    assert s.env_origin["CUDA_VERSION"] == "image"
    assert "Error 803" in s.first_exception["line"] and s.log_source.startswith("CRI log /var/log/pods/vllm_")
    assert "/dev/nvidia-caps-imex-channels/channel0" in s.container["gpu_devices"]
    assert docker.status == 1 and "Cannot connect to the Docker daemon" in docker.stderr
    verdicts = {v.check: v for v in check_baseline(s, load_profile("kimi-k3"))}
    assert verdicts["injected-env"].verdict == "FAIL" and "/usr/local/cuda/compat" in verdicts["injected-env"].evidence
    # no exec into a containerd container: the IMEX channel is read from the OCI spec's devices
    from k3tui.scene.checks import check_imex_channel

    verdict, evidence = check_imex_channel(s, load_profile("kimi-k3"))
    assert verdict == "PASS" and "channel0" in evidence and "OCI runtime spec" in evidence, evidence
    no_channel = dict(s.container, devices=[d for d in s.container["devices"] if "imex" not in d], mounts=[])
    s.container = no_channel
    verdict, evidence = check_imex_channel(s, load_profile("kimi-k3"))
    assert verdict == "FAIL" and "no IMEX channel in the serving container" in evidence, evidence
    assert "hf_SimulatedSecretTokenDoNotLeak" not in json.dumps(s.to_dict())


async def test_a_root_hours_before_a_flood_is_found_in_the_whole_cri_log(sshd, containerd, shared: Path) -> None:
    """The root, then 7 MiB of later lines: past the 4 MiB tail, found by the scan on the node (issue 15's find_root)."""
    from k3tui.remote.ssh import connect

    log = shared / "corpus" / "vllm-cpu" / "10d-fail-load-format-fastsafetensors.log"
    flood = 'i=0; while [ $i -lt 90000 ]; do echo "INFO 12-01 22:00:00 [metrics.py:88] Avg prompt throughput: 0.0 tokens/s, $i"; i=$((i+1)); done'
    cid = containerd.run_pod_container(
        "vllm", "flood-0", "vllm", "u-flood", ["sh", "-c", f"cat /srv/server.log; {flood}; exec sleep 3600", "vllm", "serve"],
        mounts={str(log): "/srv/server.log"},
    )  # fmt: skip
    path = Path(containerd.log_root) / "vllm_flood-0_u-flood" / "vllm" / "0.log"
    for _ in range(600):
        if path.exists() and path.stat().st_size > 7 * 1024 * 1024 and b", 89999\n" in _tail(path):
            break
        await asyncio.sleep(0.1)
    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        pick = _pick(containerd, pod="vllm/flood-0")
        s = await get("containerd", pick).freeze(host, pick)
    assert s.container["id"] == cid and path.stat().st_size > 4 * 1024 * 1024
    assert s.first_exception is not None and "fastsafetensors" in s.first_exception["line"], s.notes
    assert s.log_scan["format"] == "cri" and s.log_scan["bytes_read"] < s.log_scan["size"]
    assert s.log_scan["path"].endswith("vllm_flood-0_u-flood/vllm/0.log") and len(s.log_scan["sha256"]) == 64


def test_the_demo_of_the_kubernetes_node_flags_the_path_and_says_how_to_ladder_it(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "demo", "--scenario", "k8s-node-injected-ld", "--headless",
         "--record", str(tmp_path / "demo.k3rec")],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    flagged = next(ln for ln in r.stdout.splitlines() if "baseline/injected-env" in ln)
    assert "FAIL" in flagged and "LD_LIBRARY_PATH adds /usr/local/cuda/compat" in flagged
    assert "runs the server in pod vllm/vllm-server-6d9c8f7b5d-x7k2p (no dockerd): ladder it" in r.stdout, r.stdout[
        -3000:
    ]
    assert "docker run" not in r.stdout, "no docker run is tried on a node without dockerd"

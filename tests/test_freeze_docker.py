"""Freeze and check a REAL container on a REAL dockerd: through real sshd (Engine API over a
forwarded socket) and on this machine (docker CLI). The container is tagged like the official
image and carries a planted LD_LIBRARY_PATH and a planted secret in its env."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from k3tui.profile import load_profile
from k3tui.reader import read_all
from k3tui.recording import Recorder
from k3tui.scene.checks import check_baseline, exit_status
from k3tui.scene.freeze import freeze
from tests.test_freeze import freeze_limit

pytestmark = [pytest.mark.docker]

SECRET = "planted-Secret-Value-7f3a9c2e51"
PLANTED_LD = "/opt/planted/cuda-compat:/usr/local/nvidia/lib64"


@pytest.fixture(scope="module")
def container(dockerd, shared: Path):  # noqa: ANN201 - a docker Container
    """A busybox 'vllm/vllm-openai:kimi-k3' container whose log is a real failing vLLM start-up."""
    d = tempfile.mkdtemp(prefix="k3-frz-", dir="/tmp")
    os.chmod(d, 0o755)
    shutil.copy(shared / "corpus" / "vllm-cpu" / "10c-fail-model-path-missing.log", f"{d}/server.log")
    c = dockerd.run_container(
        # "vllm serve" as the shell's $0 $1: the container's command line names a vLLM server
        command=("sh", "-c", "cat /srv/server.log; exec sleep 3600", "vllm", "serve"),
        env={"LD_LIBRARY_PATH": PLANTED_LD, "K3_DB_PASSWORD": SECRET, "NCCL_DEBUG": "INFO"},
        volumes={d: {"bind": "/srv", "mode": "ro"}},
    )
    yield c
    shutil.rmtree(d, ignore_errors=True)


def _assert_scene(s, container) -> None:  # noqa: ANN001
    assert s.container is not None, [p for p in s.probes if not p.ok]
    assert s.container["name"] == container.name and s.container["image"] == "vllm/vllm-openai:kimi-k3"
    assert s.container["image_id"].startswith("sha256:") and s.container["repo_digests"] == []
    assert s.container["command"] == ["sh", "-c", "cat /srv/server.log; exec sleep 3600", "vllm", "serve"]
    assert any(e.startswith("K3_DB_PASSWORD=") for e in s.container["env"])
    assert s.env["LD_LIBRARY_PATH"] == PLANTED_LD and s.env_origin["LD_LIBRARY_PATH"] == "runtime"
    assert s.first_exception is not None and s.first_exception["stage"] == "weights"
    assert s.log_source == "container log"
    failed = {p.name for p in s.probes if not p.ok}
    assert {"container_smi_list", "container_versions"} <= failed, "busybox has neither nvidia-smi nor python"
    assert SECRET not in json.dumps(s.to_dict())


def _assert_check(s) -> None:  # noqa: ANN001
    verdicts = {v.check: v for v in check_baseline(s, load_profile("kimi-k3"))}
    assert verdicts["image"].verdict == "PASS"
    assert (
        verdicts["injected-env"].verdict == "FAIL" and "/opt/planted/cuda-compat" in verdicts["injected-env"].evidence
    )
    assert "NCCL_DEBUG=INFO [runtime]" in verdicts["injected-env"].evidence
    assert verdicts["container-gpus"].verdict == "UNKNOWN"
    assert exit_status(list(verdicts.values())) == 1


@pytest.mark.sshd
async def test_freeze_container_over_real_sshd_through_the_engine_api(sshd, dockerd, container, tmp_path: Path) -> None:
    from k3tui.remote.ssh import connect

    rec = Recorder(tmp_path / "s.k3rec")
    async with connect(sshd.target, emit=rec.emit, **sshd.connect_kwargs()) as host:
        s = await freeze(host, container=container.name, docker_socket=dockerd.socket, emit=rec.emit)
        forwards = [k for k in host._listeners if isinstance(k, str)]
    rec.close()
    assert forwards == [], "the freeze closes the Docker socket forward it opened"
    api = next(p for p in s.probes if p.name == "docker_api")
    assert api.ok, f"the Engine API must answer through the forwarded socket: {api.error} {sshd.log()[-3000:]}"
    print(f"freeze of a real container over real sshd: {s.seconds:.3f}s")
    assert s.seconds < freeze_limit(), f"freeze took {s.seconds}s"
    _assert_scene(s, container)
    _assert_check(s)
    raw = (tmp_path / "s.k3rec").read_text()
    assert SECRET not in raw
    _, events = read_all(tmp_path / "s.k3rec")
    assert any(getattr(e, "scene", None) for e in events)


async def test_freeze_container_found_by_image_with_the_docker_cli(
    dockerd, container, monkeypatch: pytest.MonkeyPatch
) -> None:
    from k3tui.remote.local import LocalHost

    monkeypatch.setenv("DOCKER_HOST", dockerd.base_url)
    async with LocalHost() as host:
        s = await freeze(host, docker_socket=None)
    assert "docker_api" not in {p.name for p in s.probes}
    _assert_scene(s, container)
    _assert_check(s)
    container.reload()
    assert s.process is not None and s.process["pid"] == container.attrs["State"]["Pid"], "the container's main process"
    assert s.process["cmdline"] == ["sleep", "3600"]


@pytest.mark.sshd
async def test_a_missing_engine_socket_is_recorded_in_one_line_and_the_freeze_goes_on(sshd) -> None:
    from k3tui.remote.ssh import connect

    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        s = await freeze(host, docker_socket="/nonexistent/docker.sock")
    api = next(p for p in s.probes if p.name == "docker_api")
    assert not api.ok and "\n" not in api.error
    assert "no Docker engine answers on /nonexistent/docker.sock: there is no such socket on the host" in api.error
    assert s.host, "the host probes still answered"

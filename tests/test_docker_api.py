"""Container facts through the Docker SDK over a forwarded socket: REAL sshd + REAL dockerd."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time

import pytest

from k3tui.errors import HostError
from k3tui.remote.docker_api import DockerApi, container_probes, docker_client, docker_facts
from k3tui.remote.local import LocalHost
from k3tui.remote.ssh import connect
from k3tui.scene.probes import probes_for

SECRET = "hf_abcdefghijklmnopqrstuvwxyz123456"


@pytest.fixture(scope="module")
def serving(dockerd):
    """A container shaped like a vLLM server: official image name, env, args with a secret, a bind mount."""
    models = tempfile.mkdtemp(prefix="k3models-")
    c = dockerd.run_container(
        command=[
            "sh",
            "-c",
            "echo 'INFO Starting vLLM API server'; echo \"key=$HF_TOKEN\"; sleep 3600",
            "--api-key",
            "sk-notreallyasecretbutlong1234",
        ],
        env={"HF_TOKEN": SECRET, "NCCL_DEBUG": "INFO", "LD_LIBRARY_PATH": "/usr/local/cuda/compat"},
        labels={"role": "head"},
        volumes={models: {"bind": "/models", "mode": "ro"}},
        shm_size="64m",
        ipc_mode="host",
    )
    yield c, models


async def test_facts_through_ssh_forwarded_socket(sshd, dockerd, serving):
    c, models = serving
    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        facts = await docker_facts(host, c.name, socket=dockerd.socket)
    assert "error" not in facts, facts.get("error")
    assert facts["engine"]["version"] and facts["engine"]["api_version"]
    assert any(x["id"] == c.id and x["state"] == "running" for x in facts["containers"])
    ct = facts["container"]
    assert ct["name"] == c.name and ct["image_ref"] == "vllm/vllm-openai:kimi-k3"
    assert ct["state"]["running"] is True
    assert "HF_TOKEN=<redacted>" in ct["env"] and "NCCL_DEBUG=INFO" in ct["env"]
    assert "LD_LIBRARY_PATH=/usr/local/cuda/compat" in ct["env"]
    assert ct["cmd"][-2:] == ["--api-key", "<redacted>"]
    assert ct["labels"] == {"role": "head"}
    assert ct["host_config"]["network_mode"] == "host" and ct["host_config"]["ipc_mode"] == "host"
    assert ct["host_config"]["shm_size"] == 64 * 1024 * 1024
    assert {"type": "bind", "source": models, "destination": "/models", "mode": "ro", "rw": False} in ct["mounts"]
    img = facts["image"]
    assert (img["repository"], img["tag"]) == ("vllm/vllm-openai", "kimi-k3")
    assert img["id"].startswith("sha256:") and img["id"] == ct["image_id"]
    assert img["repo_digests"] == [] and img["digest"] is None  # imported locally, never pushed: no registry digest
    assert any("Starting vLLM API server" in line for line in facts["logs"])
    assert not any(SECRET in line for line in facts["logs"])  # a learnt secret is masked in logs too
    assert SECRET not in repr(facts)


async def test_sdk_client_through_forward(sshd, dockerd, serving):
    c, _ = serving
    async with connect(sshd.target, **sshd.connect_kwargs()) as host, docker_client(host, dockerd.socket) as client:
        import asyncio

        # The SDK is synchronous: it must run in a thread, the forward lives on the event loop.
        top = await asyncio.to_thread(lambda: client.containers.get(c.id).top())
        assert any("sleep" in " ".join(p) for p in top["Processes"])


async def test_missing_container_and_missing_socket_are_one_line(sshd, dockerd, serving):
    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        facts = await docker_facts(host, "no-such-container", socket=dockerd.socket)
        assert facts["error"] == "no such container: no-such-container" and facts["engine"]["version"]
        dead = await docker_facts(host, socket="/nonexistent/docker.sock")
    assert set(dead) == {"error"} and "\n" not in dead["error"]
    assert "no Docker engine answers on /nonexistent/docker.sock: there is no such socket on the host" in dead["error"]


@pytest.fixture
def refusing_sockets():
    """Two real unix sockets the test user cannot use: one root-only (0600), one nobody listens on."""
    d = tempfile.mkdtemp(prefix="k3sock-", dir="/tmp")
    os.chmod(d, 0o755)
    private, stale = os.path.join(d, "private.sock"), os.path.join(d, "stale.sock")
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(private)
    listening.listen()
    os.chmod(private, 0o600)
    closed = socket.socket(socket.AF_UNIX)
    closed.bind(stale)  # bound, never listening: the file of a dead daemon
    os.chmod(stale, 0o666)
    closed.close()
    yield private, stale
    listening.close()
    shutil.rmtree(d, ignore_errors=True)


async def test_a_socket_the_user_may_not_open_and_a_dead_daemon_say_so(sshd, refusing_sockets):
    private, stale = refusing_sockets
    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        denied = await docker_facts(host, socket=private)
        silent = await docker_facts(host, socket=stale)
        with pytest.raises(HostError, match=f"no Docker engine answers on {stale}: the socket is there but nothing"):
            async with docker_client(host, stale):
                pass
        # a failed open leaves no forward behind
        assert not [p for p in os.listdir(host._sock_dir or "/nonexistent") if p.endswith(".sock")]
    assert f"{sshd.user} may not open it (add {sshd.user} to group docker" in denied["error"]
    assert "nothing answers on it (is dockerd running?)" in silent["error"]
    assert "\n" not in denied["error"] + silent["error"]


async def test_an_engine_that_never_answers_times_out(tmp_path):
    """A socket that accepts and then says nothing (a hung daemon): opening ends at ping_timeout."""
    path = str(tmp_path / "hung.sock")
    hung = socket.socket(socket.AF_UNIX)
    hung.bind(path)
    hung.listen()
    try:
        async with LocalHost() as host:
            t = time.monotonic()
            with pytest.raises(HostError, match=r"nothing answers on it .*\(timed out after 0.5s\)"):
                await DockerApi.open(host, path, ping_timeout=0.5)
            assert time.monotonic() - t < 3.0
    finally:
        hung.close()


async def test_every_api_call_has_a_timeout(dockerd, serving):
    """One call that the engine is slow to answer ends as a timed-out probe; the next call still works."""
    c, _ = serving
    async with LocalHost() as host:
        api, ping = await DockerApi.connect(host, dockerd.socket)
        assert api is not None and ping.ok and ping.stdout.startswith("engine ")
        try:
            api.timeout = 0.3
            inspect = api.client.inspect_container
            api.client.inspect_container = lambda cid: (time.sleep(1.0), inspect(cid))[1]  # a slow engine
            t = time.monotonic()
            r = await api.inspect(c.name)
            assert r.timed_out and not r.ok and r.error == "timed out after 0.3s"
            assert time.monotonic() - t < 0.9
            api.client.inspect_container = inspect
            assert (await api.inspect(c.name)).ok
        finally:
            await api.aclose()


async def test_probe_answers_are_redacted_at_the_source(dockerd, serving):
    """What the freeze gets from the API (inspect, logs, exec env) carries no secret."""
    c, _ = serving
    async with LocalHost() as host:
        api, _ = await DockerApi.connect(host, dockerd.socket)
        assert api is not None
        try:
            inspect = await api.inspect(c.name)
            got = await container_probes(api, c.name, inspect, probes_for("container"))
        finally:
            await api.aclose()
    assert inspect.ok and "HF_TOKEN=<redacted>" in inspect.stdout and '"--api-key", "<redacted>"' in inspect.stdout
    assert got["container_env"].ok and "HF_TOKEN=<redacted>" in got["container_env"].stdout
    assert got["docker_logs"].ok and "key=<redacted>" in got["docker_logs"].stdout
    assert got["docker_image_inspect"].ok and "NCCL_DEBUG=INFO" in got["container_env"].stdout
    for r in (inspect, *got.values()):
        assert SECRET not in r.stdout + r.stderr and "sk-notreallyasecretbutlong1234" not in r.stdout


async def test_local_host_reads_the_socket_directly(dockerd, serving):
    c, _ = serving
    async with LocalHost() as host:
        facts = await docker_facts(host, socket=dockerd.socket)
    # With exactly one running container it is selected without being named.
    running = [x for x in facts["containers"] if x["state"] == "running"]
    if len(running) == 1:
        assert facts["container"]["id"] == c.id
    else:
        assert "container" not in facts

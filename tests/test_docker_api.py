"""Container facts through the Docker SDK over a forwarded socket: REAL sshd + REAL dockerd."""

from __future__ import annotations

import tempfile

import pytest

from k3tui.remote.docker_api import docker_client, docker_facts
from k3tui.remote.local import LocalHost
from k3tui.remote.ssh import connect

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


async def test_missing_container_and_dead_engine_are_one_line(sshd, dockerd, serving):
    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        facts = await docker_facts(host, "no-such-container", socket=dockerd.socket)
        assert facts["error"] == "no such container: no-such-container" and facts["engine"]["version"]
        dead = await docker_facts(host, socket="/nonexistent/docker.sock")
    assert set(dead) == {"error"}
    assert "no Docker engine answers on /nonexistent/docker.sock" in dead["error"] and "\n" not in dead["error"]


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

"""``freeze`` of a REAL container on a REAL dockerd through a REAL sshd names the root that its
json-file log holds before a flood of tens of MB (issue 15), reading a small part of it; the
scene's byte ranges, size and SHA-256 are those of the file on the host (``sha256sum``).
Also ``k3tui freeze TARGET --log PATH`` and ``--full-log`` from the CLI over the same sshd.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from k3tui.classify import classify_text
from k3tui.remote.prefilter import decode
from k3tui.scene.freeze import freeze

pytestmark = [pytest.mark.docker, pytest.mark.sshd]

NCCL = Path("/work/shared/fixtures/hosts/h200-r580-health/nccl_trace_1rank.txt")
ROOT_LOG = "10c-fail-model-path-missing.log"
FLOOD_MB = 24


def _server_log(shared: Path, d: str) -> str:
    flood = NCCL.read_text(encoding="utf-8")
    head = flood[:20_000]
    body = (shared / "corpus" / "vllm-cpu" / ROOT_LOG).read_text(encoding="utf-8")
    text = head + body + flood * (FLOOD_MB * 1024 * 1024 // len(flood))
    Path(d, "server.log").write_text(text, encoding="utf-8")
    return text


def _wait_logged(container, lines: int) -> str:  # noqa: ANN001
    container.reload()
    path = container.attrs["LogPath"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with open(path, "rb") as fh:
            if sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b"")) >= lines:
                return path
        time.sleep(0.5)
    raise AssertionError(f"docker did not log {lines} lines in 120 s")


def _readable_by_all(path: str) -> None:
    """The test's sshd logs in as an unprivileged user; on a GPU host the on-call engineer is root."""
    p = Path(path)
    os.chmod(p, 0o644)
    for parent in p.parents:
        if parent == Path("/"):
            break
        os.chmod(parent, os.stat(parent).st_mode | 0o005)


@pytest.fixture(scope="module")
def flooded(dockerd, shared: Path):  # noqa: ANN201
    d = tempfile.mkdtemp(prefix="k3-big-", dir="/tmp")
    os.chmod(d, 0o755)
    text = _server_log(shared, d)
    c = dockerd.run_container(
        command=("sh", "-c", "cat /srv/server.log; exec sleep 3600", "vllm", "serve"),
        volumes={d: {"bind": "/srv", "mode": "ro"}},
    )
    path = _wait_logged(c, text.count("\n"))
    yield c, path, text
    shutil.rmtree(d, ignore_errors=True)


async def test_unreadable_log_falls_back_to_the_tail_loudly(sshd, dockerd, flooded) -> None:
    from k3tui.remote.ssh import connect

    c, path, _ = flooded
    os.chmod(path, 0o600)
    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        s = await freeze(host, container=c.name, docker_socket=dockerd.socket)
    assert s.log_scan is None
    assert any("cannot scan" in n and "END of the log only" in n for n in s.notes), s.notes


async def test_freeze_names_the_root_before_a_flood_over_real_sshd(sshd, dockerd, flooded) -> None:
    from k3tui.remote.ssh import connect
    from k3tui.scene.logscan import ROOT_NAMED

    c, path, text = flooded
    _readable_by_all(path)
    told: list[tuple[str, str, float, float]] = []
    token = ROOT_NAMED.set(lambda alias, line, secs: told.append((alias, line, secs, time.monotonic())))
    try:
        async with connect(sshd.target, alias="gb300-01", **sshd.connect_kwargs()) as host:
            s = await freeze(host, container=c.name, docker_socket=dockerd.socket)
            frozen_at = time.monotonic()
    finally:
        ROOT_NAMED.reset(token)
    ref = classify_text(text)
    # the operator is told the root once, as soon as the scan names it, before the freeze ends
    assert len(told) == 1 and told[0][0] == "gb300-01" and told[0][1] == ref.first_exception.line, told
    assert told[0][3] <= frozen_at and told[0][2] <= s.log_scan["seconds"]
    assert ref.first_exception is not None
    assert s.first_exception is not None, s.notes
    assert s.first_exception["line"] == ref.first_exception.line
    assert s.first_exception["line_number"] == ref.first_exception.line_number
    assert s.first_exception["signature"] == ref.signature
    scan = s.log_scan
    assert scan is not None and scan["path"] == path and scan["format"] == "docker-json"
    data = Path(path).read_bytes()
    sha = subprocess.run(["sha256sum", path], capture_output=True, text=True, check=True).stdout.split()[0]
    assert scan["sha256"] == sha and scan["size"] == len(data)
    assert scan["bytes_read"] == sum(b - a for a, b in scan["ranges"]) and scan["bytes_read"] < 0.1 * len(data)
    assert all(0 <= a < b <= len(data) for a, b in scan["ranges"])
    assert ref.first_exception.line in scan["excerpt"]
    print(f"\nfreeze of a {len(data) / 1e6:.1f} MB json-file log: read {scan['bytes_read']:,} B in {scan['seconds']} s")


def _cli(sshd, *args: str) -> subprocess.CompletedProcess[str]:  # noqa: ANN001
    cmd = [sys.executable, "-m", "k3tui.cli", "freeze", sshd.target, "-i", str(sshd.key_path)]
    cmd += ["--known-hosts", str(sshd.known_hosts), "--docker-socket", "", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_cli_log_path_and_full_log(sshd, flooded) -> None:
    _, path, text = flooded
    d = tempfile.mkdtemp(prefix="k3-log-", dir="/tmp")
    os.chmod(d, 0o755)
    raw = Path(d) / "server.log"
    decoded = decode(Path(path).read_text(encoding="utf-8"), "docker-json")
    raw.write_text(decoded, encoding="utf-8")
    _readable_by_all(str(raw))
    ref = classify_text(decoded)
    for extra in ([], ["--full-log"]):
        r = _cli(sshd, "--log", str(raw), "--json", "-", *extra)
        assert r.returncode == 0, r.stderr[-2000:]
        s = json.loads(r.stdout)  # stdout stays one JSON document; the early word is on stderr
        named = [ln for ln in r.stderr.splitlines() if "first exception named after" in ln]
        assert len(named) == 1 and ref.first_exception.line.strip()[:200] in named[0], r.stderr[-2000:]
        assert s["first_exception"] and s["first_exception"]["line"] == ref.first_exception.line, s["notes"]
        assert s["log_source"] == f"log file {raw}"
        scan = s["log_scan"]
        assert scan["sha256"] == hashlib.sha256(raw.read_bytes()).hexdigest()
        if extra:
            assert scan["method"] == "full" and scan["bytes_read"] == raw.stat().st_size
        else:
            assert scan["method"] == "python" and scan["bytes_read"] < 0.1 * raw.stat().st_size
    shutil.rmtree(d, ignore_errors=True)


async def test_a_restarted_containers_earlier_run_holds_the_root(sshd, dockerd, shared: Path) -> None:
    """docker keeps a restarted container's earlier output in the same json-file: its first run's
    root, before the second run's flood (more than the old 5000-line tail), is the one named."""
    from k3tui.remote.ssh import connect

    d = tempfile.mkdtemp(prefix="k3-restart-", dir="/tmp")
    os.chmod(d, 0o777)
    root = (shared / "corpus" / "vllm-cpu" / ROOT_LOG).read_text(encoding="utf-8")
    Path(d, "root.log").write_text(root, encoding="utf-8")
    Path(d, "flood.log").write_text(NCCL.read_text(encoding="utf-8") * 40, encoding="utf-8")
    script = (
        "n=$(cat /srv/n 2>/dev/null || echo 0); echo $((n+1)) > /srv/n; "
        "if [ $n = 0 ]; then cat /srv/root.log; else cat /srv/flood.log; fi; exit 1"
    )
    c = dockerd.run_container(
        command=("sh", "-c", script, "vllm", "serve"), volumes={d: {"bind": "/srv", "mode": "rw"}}
    )
    try:
        c.wait(timeout=60)
        c.start()
        c.wait(timeout=60)
        path = _wait_logged(c, root.count("\n") + NCCL.read_text(encoding="utf-8").count("\n") * 40)
        _readable_by_all(path)
        async with connect(sshd.target, **sshd.connect_kwargs()) as host:
            s = await freeze(host, container=c.name, docker_socket=dockerd.socket)
        ref = classify_text(root)
        assert s.first_exception is not None, s.notes
        assert (s.first_exception["line"], s.first_exception["line_number"]) == (
            ref.first_exception.line,
            ref.first_exception.line_number,
        )
        assert s.log_scan["size"] == os.path.getsize(path)
    finally:
        c.remove(force=True)
        shutil.rmtree(d, ignore_errors=True)

"""A freeze over a REAL slow link: a real OpenSSH sshd behind a relay that delays and rate-limits
every byte (:mod:`tests.support.slowlink`; this kernel has no netem), 50 ms each way as issue 16 says.

- At 1 MiB/s the link is measured at connect (round trip, throughput, in ``HostConnected`` too),
  every probe's timeout is scaled to it, and a freeze of this machine with a planted vLLM server
  answers every probe: the serving process, the libcuda it mapped, the first exception of its log.
  A probe that truly hangs (a real ``sleep`` on the host) is named in the scene, with the scaled
  timeout it was given, and the summary says loudly which fact is lost.
- At 256 KiB/s (25 ms each way) the table's fixed timeouts lose the serving process's
  environment — a Kubernetes pod's service links, 3300 services, ~920 KB: 3.5 s of wire alone,
  and the probe has 3 s — and with it the ``LD_LIBRARY_PATH`` that points at cuda-compat; the
  scaled ones keep it. Both freezes run, on the same link, against the same process.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
import zlib  # noqa: F401 - maps the real libz, copied below as the server's "libcuda"
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from k3tui.events import HostConnected
from k3tui.remote.base import RunHandle
from k3tui.remote.ssh import SshHost, connect
from k3tui.scene import probes as probes_mod
from k3tui.scene.freeze import freeze
from k3tui.scene.model import Scene
from k3tui.scene.probes import BY_NAME, PROBES, timeout_for
from k3tui.scene.summary import scene_lines, timed_out

pytestmark = pytest.mark.sshd

DELAY = 0.05
"""One way: the round trip is 100 ms."""
MIB = 1 << 20
DRIVER = "580.95.05"


def _libz() -> str:
    """The libz this test process mapped (a real shared library to load under libcuda's name)."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1]
        if "/libz.so" in path:
            return path
    pytest.fail("zlib's shared library is not mapped by this python")


SERVER = """
import ctypes, os, sys, time
services = int(sys.argv[1])
if "LD_LIBRARY_PATH" not in os.environ:  # once: re-exec with cuda-compat first and the pod's service links
    env = dict(os.environ, LD_LIBRARY_PATH="/usr/local/cuda/compat/lib")
    for i in range(services):
        ip = f"10.96.{i // 250}.{i % 250 + 1}"
        env.update({f"SVC_{i}_SERVICE_HOST": ip, f"SVC_{i}_SERVICE_PORT": "8080", f"SVC_{i}_PORT": f"tcp://{ip}:8080",
                    f"SVC_{i}_PORT_8080_TCP": f"tcp://{ip}:8080", f"SVC_{i}_PORT_8080_TCP_PROTO": "tcp",
                    f"SVC_{i}_PORT_8080_TCP_PORT": "8080", f"SVC_{i}_PORT_8080_TCP_ADDR": ip})
    os.execve(sys.executable, [sys.executable, *sys.argv], env)
ctypes.CDLL(os.path.join(os.path.dirname(__file__), "libcuda.so.@DRIVER@"))
time.sleep(120)
"""


@pytest.fixture
def planted(shared: Path) -> Iterator[Path]:
    """A world-readable dir (the sshd user is another user): a real vLLM failure log, a "libcuda", the server."""
    d = Path(tempfile.mkdtemp(prefix="k3tui-slowlink-"))
    d.chmod(0o755)
    shutil.copy(shared / "corpus" / "vllm-cpu" / "10a-fail-tensor-parallel-8.log", d / "server.log")
    shutil.copy(_libz(), d / f"libcuda.so.{DRIVER}")
    (d / "serve.py").write_text(SERVER.replace("@DRIVER@", DRIVER))
    for f in d.iterdir():
        f.chmod(0o644)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@asynccontextmanager
async def _serving(
    sshd: Any, link: Any, tmp_path: Path, planted: Path, services: int = 0
) -> AsyncIterator[tuple[SshHost, RunHandle, list]]:
    """Connect through ``link``; start a "vllm serve" on the host that printed a real failure, mapped a
    libcuda and has the service links of ``services`` Kubernetes services in its environment."""
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{link.port} {sshd.host_key_pub}\n")
    events: list = []
    async with connect(
        f"{sshd.user}@127.0.0.1:{link.port}", identity=[str(sshd.key_path)], known_hosts=str(kh), emit=events.append
    ) as host:
        handle = await host.start_detached(
            f"cat {planted}/server.log; exec python3 {planted}/serve.py {services} vllm serve tiny",
            run_id=f"slowlink-{os.getpid()}-{time.time_ns()}",
        )
        try:
            for _ in range(100):
                maps = await host.run(f"grep -c libcuda /proc/{handle.pid}/maps")
                if maps.ok:
                    break
                await asyncio.sleep(0.1)
            assert maps.ok, f"the planted server did not map its libcuda: {maps.stderr}"
            yield host, handle, events
        finally:
            await host.stop(handle, grace=1)


async def _freeze(host: SshHost, handle: RunHandle) -> Scene:
    # pid given and no container picked: a vLLM container of another test on this machine is not ours;
    # no Docker API forward: whether some dockerd answers on this machine's default socket is not ours either
    return await freeze(host, run=handle, pid=handle.pid, pick_container=False, docker_socket=None)


def _answered_everything(s: Scene) -> None:
    assert timed_out(s) == {}, [f"{p.name}: {p.error}" for p in s.probes if not p.ok]
    assert s.process and s.process["cmdline"][-3:] == ["vllm", "serve", "tiny"], s.process
    assert s.libcuda and s.libcuda["version"] == DRIVER, s.libcuda
    fe = s.first_exception
    assert fe and "must be divisible by tensor parallel size" in fe["line"], fe
    assert s.env["LD_LIBRARY_PATH"] == "/usr/local/cuda/compat/lib" and s.env_origin["LD_LIBRARY_PATH"] == "process"
    text = "\n".join(scene_lines(s))
    assert "TIMED OUT" not in text and "timed out" not in text and "NOT READ" not in text, text


async def test_a_slow_link_is_measured_every_probe_answers_and_a_hung_one_is_named(
    sshd, slow_link, tmp_path: Path, planted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = slow_link(sshd.port, delay=DELAY, rate=MIB)
    async with _serving(sshd, link, tmp_path, planted) as (host, handle, events):
        # measured at connect, and recorded
        assert host.link is not None
        assert 0.095 <= host.link.rtt <= 0.5, host.link
        assert host.link.throughput and 0.6 * MIB <= host.link.throughput <= 1.2 * MIB, host.link
        connected = [e for e in events if isinstance(e, HostConnected)]
        assert connected and connected[0].rtt == host.link.rtt and connected[0].throughput == host.link.throughput

        # every timeout scaled: 12 round trips and the freeze's ~2.3 MiB at 1 MiB/s on top of the table's
        scaled = {p.name: timeout_for(p, host.link) for p in PROBES}
        assert all(scaled[p.name] >= p.timeout + 3.0 for p in PROBES), scaled

        s = await _freeze(host, handle)
        _answered_everything(s)
        for p in s.probes:
            if p.name in scaled:
                assert p.seconds < scaled[p.name], (p.name, p.seconds, scaled[p.name])

        # a probe that truly hangs: the host really runs it, and it never ends
        hung = [
            probes_mod.Probe(p.name, "exec sleep 60", p.timeout, p.phase) if p.name == "proc_maps" else p
            for p in PROBES
        ]
        monkeypatch.setattr(probes_mod, "PROBES", tuple(hung))
        t = time.monotonic()
        s = await _freeze(host, handle)
        took = time.monotonic() - t

    want = timeout_for(BY_NAME["proc_maps"], host.link)
    assert list(timed_out(s)) == ["proc_maps"], [f"{p.name}: {p.error}" for p in s.probes if not p.ok]
    assert timed_out(s)["proc_maps"].error == f"timed out after {want:g}s"
    assert want <= took < want + 5, "the hung probe was given its scaled timeout, no more"
    assert s.process and s.process["cmdline"][-3:] == ["vllm", "serve", "tiny"] and s.first_exception
    lines = scene_lines(s)
    assert lines[1] == f"TIMED OUT the libcuda the server loaded was NOT read: proc_maps timed out after {want:g}s"
    assert f"libcuda   NOT READ (proc_maps timed out after {want:g}s)" in lines
    assert f"  timed out proc_maps (after {want:g}s)" in lines
    assert not any(ln.startswith("libcuda   none mapped") for ln in lines), "a lost answer must not read as 'none'"


async def test_fixed_timeouts_lose_the_serving_process_where_scaled_ones_keep_it(
    sshd, slow_link, tmp_path: Path, planted: Path
) -> None:
    link = slow_link(sshd.port, delay=DELAY / 2, rate=256 * 1024)
    async with _serving(sshd, link, tmp_path, planted, services=3300) as (host, handle, _):
        measured = host.link
        assert measured is not None and measured.throughput and measured.throughput < 320 * 1024, measured

        host.link = None  # the table's own timeouts: what a freeze did before the link was measured
        fixed = await _freeze(host, handle)
        host.link = measured
        s = await _freeze(host, handle)

    # fixed: the serving process's environment needs more than its 3 s on this wire
    lost = timed_out(fixed)
    assert "proc_environ" in lost, [f"{p.name}: {p.error}" for p in fixed.probes if not p.ok]
    assert lost["proc_environ"].error == f"timed out after {BY_NAME['proc_environ'].timeout:g}s"
    assert fixed.env.get("LD_LIBRARY_PATH") != "/usr/local/cuda/compat/lib", "the process env was not read"
    lines = scene_lines(fixed)
    assert lines[1].startswith(f"TIMED OUT the serving process (pid {handle.pid}) was NOT read: "), lines
    assert "proc_environ timed out after 3s" in lines[1]

    # scaled: the same process, the same link, every probe answered
    _answered_everything(s)
    assert s.process["env"]["SVC_3299_SERVICE_HOST"] == "10.96.13.50" and len(s.process["env"]) > 23000
    need = {p.name: p.seconds for p in s.probes}
    assert need["proc_environ"] > BY_NAME["proc_environ"].timeout, need
    assert need["proc_environ"] < timeout_for(BY_NAME["proc_environ"], measured)
    print(
        f"\n{measured}: fixed timeouts lost {sorted(lost)}; scaled ones held: proc_environ needed "
        f"{need['proc_environ']:.2f}s of {timeout_for(BY_NAME['proc_environ'], measured):g}s",
        file=sys.stderr,
    )

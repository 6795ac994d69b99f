"""A REAL dockerd (Debian's docker.io) for the tests, session-scoped, with a local busybox image.

Fixture ``dockerd`` → :class:`DockerServer`:

- ``socket``: path of its API socket (group ``docker``, mode 0660: the ``sshd`` fixture's
  user ``k3test`` is in that group, so over SSH forward ``dockerd.socket`` instead of
  ``/var/run/docker.sock``: ``await host.forward_unix(dockerd.socket)``);
  ``base_url`` (``unix://…``), ``client()`` (a docker SDK client, close it),
  ``cli(*args)`` (runs the ``docker`` CLI against it, returns CompletedProcess).
- ``image`` = ``vllm/vllm-openai:kimi-k3``: a 2 MB busybox rootfs built from this
  machine's ``/bin/busybox`` (Debian's busybox-static) and imported under the official
  image name. **Never pulled** — no registry is reachable. An imported image has an Id
  (``sha256:…``) but no RepoDigests (those come only from a registry).
- ``run_container(name=None, command=("sleep", "3600"), env=None, labels=None, **kw)``:
  starts a detached container of ``image`` (``network_mode="host"``; ``**kw`` go to
  ``containers.run``), removed at session end; returns the SDK ``Container``.

It runs with ``--bridge=none --iptables=false --ip-forward=false --ip-masq=false`` and its
own data root, exec root, pidfile and socket, so it touches no network config and no
other dockerd. ``--gpus``, ``--privileged`` and ``--ulimit memlock`` fail here (useful
error paths). Needs root and ``/usr/sbin/dockerd`` + ``/bin/busybox`` (``.ci/install
--test``); under ``CI=true`` a missing piece fails the run, elsewhere it skips loudly.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from . import unavailable

DOCKERD = "/usr/sbin/dockerd"
BUSYBOX = "/bin/busybox"
IMAGE = "vllm/vllm-openai:kimi-k3"


def busybox_rootfs_tar() -> bytes:
    """A tar of a minimal rootfs: /bin/busybox plus its applet links, /tmp, /etc/passwd."""
    applets = subprocess.run([BUSYBOX, "--list"], capture_output=True, text=True, check=True).stdout.split()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d, mode in (
            ("bin", 0o755),
            ("tmp", 0o1777),
            ("etc", 0o755),
            ("proc", 0o755),
            ("sys", 0o755),
            ("dev", 0o755),
        ):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)
        tar.add(BUSYBOX, arcname="bin/busybox")
        for name in applets:
            if name != "busybox":
                link = tarfile.TarInfo(f"bin/{name}")
                link.type, link.linkname = tarfile.SYMTYPE, "busybox"
                tar.addfile(link)
        passwd = b"root:x:0:0:root:/root:/bin/sh\n"
        info = tarfile.TarInfo("etc/passwd")
        info.size = len(passwd)
        tar.addfile(info, io.BytesIO(passwd))
    return buf.getvalue()


@dataclass
class DockerServer:
    """One running dockerd; see the module docstring."""

    root: Path
    image: str = IMAGE
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _containers: list[str] = field(default_factory=list, repr=False)

    @property
    def socket(self) -> str:
        return str(self.root / "docker.sock")

    @property
    def base_url(self) -> str:
        return f"unix://{self.socket}"

    def client(self):  # noqa: ANN201 - docker.DockerClient
        import docker

        return docker.DockerClient(base_url=self.base_url, timeout=30)

    def cli(self, *args: str, input: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["docker", "-H", self.base_url, *args], input=input, capture_output=True, check=check, timeout=120
        )

    def run_container(self, name: str | None = None, command=("sleep", "3600"), env=None, labels=None, **kw):  # noqa: ANN001, ANN201
        """Start a detached container of ``image``; it is removed at session end."""
        name = name or f"k3t-{uuid.uuid4().hex[:8]}"
        self._containers.append(name)
        kw.setdefault("network_mode", "host")
        c = self.client()
        try:
            return c.containers.run(
                self.image, list(command), name=name, environment=env or {}, labels=labels or {}, detach=True, **kw
            )
        finally:
            c.close()

    def start(self) -> None:
        (self.root / "data").mkdir()
        (self.root / "exec").mkdir()
        argv = [
            DOCKERD, "--data-root", str(self.root / "data"), "--exec-root", str(self.root / "exec"),
            "--pidfile", str(self.root / "dockerd.pid"), "-H", self.base_url, "--group", "docker",
            "--iptables=false", "--ip-forward=false", "--ip-masq=false", "--bridge=none",
        ]  # fmt: skip
        with open(self.root / "dockerd.log", "wb") as log:  # the child keeps its own copy of the fd
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"dockerd exited {self.proc.returncode}: {(self.root / 'dockerd.log').read_text()[-2000:]}"
                )
            if os.path.exists(self.socket) and self.cli("version", check=False).returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError(f"dockerd not ready after 60s: {(self.root / 'dockerd.log').read_text()[-2000:]}")

    def build_image(self) -> None:
        self.cli("import", "-c", 'CMD ["/bin/sh"]', "-", self.image, input=busybox_rootfs_tar())

    def stop(self) -> None:
        if self._containers:
            self.cli("rm", "-f", *self._containers, check=False)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        netns = self.root / "exec" / "netns" / "default"
        if netns.exists():
            subprocess.run(["umount", str(netns)], capture_output=True)
        subprocess.run(["umount", "-R", str(self.root / "data")], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def dockerd():
    """A real dockerd with ``vllm/vllm-openai:kimi-k3`` (busybox) imported; see the module docstring."""
    if os.geteuid() != 0:
        unavailable("dockerd", "dockerd needs root")
    for path in (DOCKERD, BUSYBOX):
        if not os.path.exists(path):
            unavailable("dockerd", f"{path} is not installed (apt-get install docker.io busybox-static)")
    subprocess.run(["groupadd", "-f", "docker"], check=True, capture_output=True)
    root = Path(tempfile.mkdtemp(prefix="k3d-", dir="/tmp"))  # short: unix socket paths are limited to 108 bytes
    root.chmod(0o755)
    server = DockerServer(root)
    try:
        server.start()
        server.build_image()
    except BaseException:
        server.stop()
        raise
    yield server
    server.stop()

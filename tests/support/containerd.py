"""A REAL containerd (Debian's ``containerd``) for the tests, session-scoped, with pod containers as the kubelet makes them.

Fixture ``containerd`` → :class:`ContainerdServer`:

- ``socket``: its private gRPC socket (group ``docker``, so the ``sshd`` fixture's user
  ``k3test`` may use it over SSH: ``ctr -a SOCKET -n k8s.io …``); ``ctr(*args)`` runs the real
  ``ctr`` against it as root;
- ``image`` = ``docker.io/vllm/vllm-openai:kimi-k3``: an OCI image built here from the same
  busybox rootfs as the Docker tests (``tests/support/dockerd.py``), its config setting
  ``NVIDIA_VISIBLE_DEVICES``/``PATH`` as the official image does, imported with ``ctr images
  import`` — **never pulled**. Unlike a ``docker import``, containerd keeps the manifest
  digest: ``image_digest``;
- ``log_root``: the stand-in for ``/var/log/pods`` (the tests pass it as ``--pod-log-root``);
- ``run_pod_container(namespace, pod, container, uid, args, env=…, restart=0, mounts={src: dst})``: a container in
  namespace ``k8s.io`` with the labels the kubelet sets (``io.kubernetes.pod.*``,
  ``io.kubernetes.container.name``, ``io.cri-containerd.kind=container``), the CRI annotations,
  env and device/IMEX-channel mounts as the NVIDIA toolkit injects them (``/dev/null`` stands
  in for the device nodes: there is no GPU here), started by the real containerd; its
  stdout/stderr go through containerd's *binary log driver* to a small shim that writes
  the CRI format (``TIMESTAMP STREAM F|P TEXT``) to ``LOG_ROOT/NS_POD_UID/CONTAINER/RESTART.log``,
  which is what containerd's CRI plugin does for the kubelet.

containerd runs with its own root, state dir and socket, and its CRI plugin disabled (no
kubelet here), so it touches no system containerd. Needs root, ``/usr/bin/containerd``,
``ctr``, ``runc`` and ``/bin/busybox`` (``.ci/install --test``); under ``CI=true`` a missing
piece fails the run, elsewhere it skips loudly.
"""

from __future__ import annotations

import grp
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from . import unavailable

BUSYBOX = "/bin/busybox"
CONTAINERD = "/usr/bin/containerd"
CTR = "/usr/bin/ctr"
IMAGE = "docker.io/vllm/vllm-openai:kimi-k3"
NAMESPACE = "k8s.io"
IMAGE_ENV = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "NVIDIA_VISIBLE_DEVICES=all"]

_LOG_SHIM = r'''#!/usr/bin/python3
"""containerd binary log driver -> the CRI log format (what the CRI plugin writes for the kubelet)."""
import datetime, os, sys, threading
opts = dict(zip(sys.argv[1::2], sys.argv[2::2]))
path = opts["path"]
os.makedirs(os.path.dirname(path), exist_ok=True)
out = open(path, "a", buffering=1)
lock = threading.Lock()
def pump(fd, stream):
    with os.fdopen(fd, "rb") as f:
        for line in f:
            ts = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"
            text = line.decode("utf-8", "replace")
            tag = "F" if text.endswith("\n") else "P"
            with lock:
                out.write(f"{ts} {stream} {tag} {text.rstrip(chr(10))}\n")
threads = [threading.Thread(target=pump, args=(3, "stdout")), threading.Thread(target=pump, args=(4, "stderr"))]
for t in threads:
    t.start()
os.close(5)
for t in threads:
    t.join()
'''


def _digest(b: bytes) -> str:
    return "sha256:" + hashlib.sha256(b).hexdigest()


def oci_image_tar(ref: str = IMAGE, env: list[str] | None = None) -> tuple[bytes, str]:
    """An OCI image layout tar of the busybox rootfs, named ``ref``; returns (tar, manifest digest)."""
    from .dockerd import busybox_rootfs_tar  # at call time: the plugin loader imports that module itself

    layer = busybox_rootfs_tar()
    config = json.dumps(
        {
            "architecture": {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine),
            "os": "linux",
            "config": {"Env": env or IMAGE_ENV, "Cmd": ["/bin/sh"]},
            "rootfs": {"type": "layers", "diff_ids": [_digest(layer)]},
        }
    ).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": _digest(config),
                "size": len(config),
            },
            "layers": [
                {"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": _digest(layer), "size": len(layer)}
            ],
        }
    ).encode()
    index = json.dumps(
        {
            "schemaVersion": 2,
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": _digest(manifest),
                    "size": len(manifest),
                    "annotations": {"io.containerd.image.name": ref},
                }
            ],
        }
    ).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in (("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'), ("index.json", index)) + tuple(
            (f"blobs/sha256/{_digest(b)[7:]}", b) for b in (layer, config, manifest)
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue(), _digest(manifest)


@dataclass
class ContainerdServer:
    """One running containerd; see the module docstring."""

    root: Path
    image: str = IMAGE
    image_digest: str = ""
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _containers: list[str] = field(default_factory=list, repr=False)

    @property
    def socket(self) -> str:
        return str(self.root / "c.sock")

    @property
    def log_root(self) -> str:
        return str(self.root / "pods")

    def ctr(self, *args: str, input: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [CTR, "-a", self.socket, "-n", NAMESPACE, *args], input=input, capture_output=True, check=check, timeout=120
        )

    def start(self) -> None:
        gid = grp.getgrnam("docker").gr_gid
        config = self.root / "config.toml"
        config.write_text(
            "version = 2\n"
            f'root = "{self.root / "root"}"\nstate = "{self.root / "state"}"\n'
            f'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
            f'[grpc]\n  address = "{self.socket}"\n  gid = {gid}\n'
            f'[ttrpc]\n  address = "{self.socket}.ttrpc"\n'
            '[debug]\n  address = ""\n[metrics]\n  address = ""\n'
        )
        with open(self.root / "containerd.log", "wb") as log:
            self.proc = subprocess.Popen(
                [CONTAINERD, "--config", str(config)], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"containerd exited {self.proc.returncode}: {self._log()}")
            if os.path.exists(self.socket) and self.ctr("version", check=False).returncode == 0:
                os.chmod(self.socket, 0o660)
                return
            time.sleep(0.1)
        raise RuntimeError(f"containerd not ready after 60s: {self._log()}")

    def _log(self) -> str:
        return (self.root / "containerd.log").read_text(errors="replace")[-2000:]

    def build_image(self) -> None:
        data, self.image_digest = oci_image_tar(self.image)
        self.ctr("images", "import", "-", input=data)
        shim = self.root / "cri-log-shim"
        shim.write_text(
            _LOG_SHIM.replace(
                "/usr/bin/python3", "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable, 1
            )
        )
        shim.chmod(0o755)
        Path(self.log_root).mkdir(mode=0o755)

    def run_pod_container(
        self,
        namespace: str,
        pod: str,
        container: str,
        uid: str,
        args: list[str],
        env: dict[str, str] | None = None,
        restart: int = 0,
        devices: tuple[str, ...] = ("/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-caps-imex-channels/channel0"),
        mounts: dict[str, str] | None = None,
    ) -> str:
        """Start a pod container the way the kubelet would (labels, annotations, env, devices, CRI log); returns its id."""
        cid = uuid.uuid4().hex + uuid.uuid4().hex  # 64 hex, like a CRI container id
        self._containers.append(cid)
        log = f"{self.log_root}/{namespace}_{pod}_{uid}/{container}/{restart}.log"
        argv = ["run", "-d", "--net-host", f"--log-uri=binary://{self.root / 'cri-log-shim'}?path={log}"]
        labels = {
            "io.kubernetes.pod.namespace": namespace,
            "io.kubernetes.pod.name": pod,
            "io.kubernetes.pod.uid": uid,
            "io.kubernetes.container.name": container,
            "io.cri-containerd.kind": "container",
        }
        annotations = {
            "io.kubernetes.cri.container-type": "container",
            "io.kubernetes.cri.container-name": container,
            "io.kubernetes.cri.sandbox-name": pod,
            "io.kubernetes.cri.sandbox-namespace": namespace,
            "io.kubernetes.cri.image-name": self.image,
        }
        argv += [f"--label={k}={v}" for k, v in labels.items()]
        argv += [f"--annotation={k}={v}" for k, v in annotations.items()]
        argv += [f"--env={k}={v}" for k, v in (env or {}).items()]
        argv += [f"--mount=type=bind,src=/dev/null,dst={d},options=rbind:rw" for d in devices]
        argv += [f"--mount=type=bind,src={src},dst={dst},options=rbind:ro" for src, dst in (mounts or {}).items()]
        self.ctr(*argv, self.image, cid, *args)
        return cid

    def stop(self) -> None:
        for cid in self._containers:
            self.ctr("tasks", "kill", "-s", "KILL", cid, check=False)
        time.sleep(0.3 if self._containers else 0)
        for cid in self._containers:
            self.ctr("tasks", "delete", "-f", cid, check=False)
            self.ctr("containers", "delete", cid, check=False)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        subprocess.run(["umount", "-R", str(self.root / "root")], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def containerd():
    """A real containerd with ``docker.io/vllm/vllm-openai:kimi-k3`` (busybox, OCI) imported; see the module docstring."""
    if os.geteuid() != 0:
        unavailable("containerd", "containerd needs root")
    for path in (CONTAINERD, CTR, "/usr/sbin/runc", BUSYBOX):
        if not os.path.exists(path):
            unavailable("containerd", f"{path} is not installed (apt-get install containerd busybox-static)")
    subprocess.run(["groupadd", "-f", "docker"], check=True, capture_output=True)
    root = Path(tempfile.mkdtemp(prefix="k3c-", dir="/tmp"))  # short: unix socket paths are limited to 108 bytes
    root.chmod(0o755)
    server = ContainerdServer(root)
    try:
        server.start()
        server.build_image()
    except BaseException:
        server.stop()
        raise
    yield server
    server.stop()

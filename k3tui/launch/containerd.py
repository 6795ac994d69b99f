"""The ``containerd`` launcher: a serving container on a Kubernetes node, through containerd's own client.

On a GB300 node run by Kubernetes there is no dockerd: the kubelet's CRI plugin creates
every pod container in containerd's namespace ``k8s.io``. ``ctr`` (Debian's containerd
ships it; ``crictl`` is not in Debian 12) reads the container exactly as the runtime
created it: its **OCI runtime spec** holds the process args and env *as injected* — by the
kubelet, the NVIDIA device plugin / container toolkit (``NVIDIA_*``, ``LD_LIBRARY_PATH``,
``/dev/nvidia*``, IMEX channels) and the node image — which ``kubectl get pod`` never
shows. So the freeze reads, over the host's own connection:

- ``ctr containers ls -q`` + ``containers info`` — labels (``io.kubernetes.pod.namespace``,
  ``.pod.name``, ``.pod.uid``, ``.container.name``), image, runtime, the spec;
- ``ctr tasks ls`` — the main process's pid, for the host's ``/proc`` probes (loaded libcuda, environ);
- ``ctr images ls`` + ``content get`` — the image digest and the image's own env (so an env
  variable the image sets is told apart from one the runtime injected);
- the CRI log file ``/var/log/pods/NS_NAME_UID/CONTAINER/N.log`` (:mod:`k3tui.launch.cri`),
  the current one and the previous container's (``N-1.log``).

Every command goes through ``host.run`` (recorded, redacted, on a real host over SSH), and
each is a probe in the scene: a command that fails is ``ok: false`` with its error, never
an exception. The ladder does not start runs through bare containerd (a pod's container
belongs to the kubelet): :class:`ContainerdLauncher` raises a clear error for ``start``.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from ..remote.base import RunResult
from . import cri
from .base import Pick, run_probe

POD_LOGS = "/var/log/pods"
LOG_TAIL_BYTES = 4 * 1024 * 1024
POD_LABELS = {
    "namespace": "io.kubernetes.pod.namespace",
    "name": "io.kubernetes.pod.name",
    "uid": "io.kubernetes.pod.uid",
    "container": "io.kubernetes.container.name",
}
_CRI_META = "io.cri-containerd.container.metadata"
_SERVING = re.compile(r"vllm.{0,3}serve|vllm\.entrypoints")


@dataclass
class Found:
    """What containerd said about the serving container (everything None when none was found)."""

    container: dict[str, Any] | None = None
    pid: int | None = None
    pod: dict[str, Any] | None = None
    logs: dict[str, str] = field(default_factory=dict)
    """``current`` / ``previous`` → the container's log text (CRI format undone)."""
    log_paths: dict[str, str] = field(default_factory=dict)
    probes: dict[str, RunResult] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    truncated: set[str] = field(default_factory=set)
    """The logs of which only the last :data:`LOG_TAIL_BYTES` were read (``current``, ``previous``)."""


class ContainerdLauncher:
    """Find and freeze a pod's container through ``ctr`` (see the module docstring)."""

    name = "containerd"

    def __init__(self, pick: Pick) -> None:
        self.pick = pick
        self.log_root = pick.pod_log_root or POD_LOGS

    # --- reading containerd -----------------------------------------------------------------

    def ctr(self, args: str) -> str:
        """One ``ctr`` command line against the pick's socket and namespace."""
        sock = f"-a {shlex.quote(self.pick.containerd_socket)} " if self.pick.containerd_socket else ""
        return f"ctr {sock}-n {shlex.quote(self.pick.containerd_namespace)} {args}"

    async def _run(self, host: Any, found: Found, name: str, command: str, timeout: float = 10.0) -> RunResult:
        return await run_probe(host, found.probes, name, command, timeout)

    async def find(self, host: Any, pick: Pick) -> Found:
        """The serving container ``pick`` names (by container name or id, pod, image, or the one running vLLM)."""
        self.pick = pick
        found = Found()
        ids = self.ctr("containers ls -q")
        each = self.ctr("containers info")
        script = f'ids=$({ids}) || exit $?; for id in $ids; do {each} "$id"; done'
        listed = await self._run(host, found, "ctr_containers", script, 15.0)
        if not listed.ok:
            found.notes.append(f"containerd not readable: {_why(listed)}")
            return found
        tasks = await self._run(host, found, "ctr_tasks", self.ctr("tasks ls"))
        running = parse_tasks(tasks.stdout) if tasks.ok else {}
        info = choose(parse_infos(listed.stdout), pick, running, found.notes)
        if info is None:
            return found
        found.container = container_facts(info)
        found.pid, state = running.get(info["ID"], (None, "unknown"))
        found.container["state"], found.container["pid"] = state, found.pid
        found.pod = pod_identity(info)
        await self._image(host, found, info.get("Image") or "")
        await self._logs(host, found, info)
        return found

    async def _image(self, host: Any, found: Found, ref: str) -> None:
        """Digest, id and the image's own env (``ctr images ls``, then the manifest and config blobs)."""
        assert found.container is not None
        r = await self._run(host, found, "ctr_images", self.ctr("images ls"))
        digest = parse_images(r.stdout).get(ref) if r.ok else None
        if digest is None:
            return
        repo = ref.rsplit(":", 1)[0] if ":" in ref.rsplit("/", 1)[-1] else ref
        found.container.update(digest=digest, repo_digests=[f"{repo.split('@')[0]}@{digest}"])
        config = await self._blob(host, found, digest)
        if config is None:
            return
        cfg = config.get("config") or {}
        found.container.update(
            image_id=found.container.get("image_config_digest"),
            image_env=list(cfg.get("Env") or []),
            architecture=config.get("architecture"),
        )

    async def _blob(self, host: Any, found: Found, digest: str) -> dict[str, Any] | None:
        """The image config from a manifest (or an index's first linux manifest) digest."""
        assert found.container is not None
        for step in range(3):  # index -> manifest -> config
            r = await self._run(host, found, f"ctr_content_{step}", self.ctr(f"content get {shlex.quote(digest)}"))
            try:
                doc = json.loads(r.stdout) if r.ok else None
            except ValueError:
                return None
            if not isinstance(doc, dict):
                return None
            if "manifests" in doc:
                linux = [m for m in doc["manifests"] if (m.get("platform") or {}).get("os", "linux") == "linux"]
                digest = (linux or doc["manifests"] or [{}])[0].get("digest", "")
            elif "config" in doc and "digest" in (doc.get("config") or {}):
                digest = doc["config"]["digest"]
                found.container["image_config_digest"] = digest
            else:
                return doc
        return None

    async def _logs(self, host: Any, found: Found, info: dict[str, Any]) -> None:
        """The current and the previous container's CRI log (the kubelet keeps both)."""
        folder = log_folder(info, self.log_root)
        if folder is None:
            return
        q = shlex.quote(folder)
        r = await self._run(host, found, "cri_log_files", f"ls -1 {q} 2>/dev/null; exit 0", 5.0)
        numbers = sorted(int(n[:-4]) for n in r.stdout.split() if re.fullmatch(r"\d+\.log", n))
        for which, n in zip(("current", "previous"), reversed(numbers[-2:]), strict=False):
            path = f"{folder}/{n}.log"
            got = await self._run(
                host, found, f"cri_log_{which}", f"tail -c {LOG_TAIL_BYTES} {shlex.quote(path)}", 10.0
            )
            if got.ok:
                found.logs[which], found.log_paths[which] = cri.to_text(got.stdout), path
                if len(got.stdout.encode()) >= LOG_TAIL_BYTES:  # only the end of it: the whole file is scanned
                    found.truncated.add(which)

    # --- the protocol ------------------------------------------------------------------------

    async def freeze(self, host: Any, pick: Pick, *, emit: Any = None, reason: str = "operator") -> Any:
        from ..scene.freeze import freeze

        found = await self.find(host, pick)
        scanned = await scan_cri(host, found)
        source, text = first_log(found.logs, found.log_paths) if scanned is None else (scanned[0], None)

        def add(scene: Any) -> None:
            overlay(scene, self.name, found, source)
            with_scan(scene, scanned)

        return await freeze(
            host,
            pid=pick.pid,
            serving=(found.pid, found.container["id"]) if found.container else None,
            log_text=text,
            emit=emit,
            reason=reason,
            docker_socket=None,
            pick_container=False,
            launcher_probes=found.probes,
            overlay=add,
        )

    def plan(self, config: Any, run_id: str) -> list[str]:
        raise UsageError(_NO_RUNS)

    async def start(self, host: Any, config: Any, run_id: str, rung: str = "") -> Any:
        raise UsageError(_NO_RUNS)

    def follow(self, host: Any, handle: Any) -> Any:
        raise UsageError(_NO_RUNS)

    async def forward(self, host: Any, handle: Any, port: int) -> int:
        raise UsageError(_NO_RUNS)

    async def stop(self, host: Any, handle: Any, grace: float = 10.0, reason: str = "") -> int | None:
        raise UsageError(_NO_RUNS)


_NO_RUNS = (
    "containerd runs a pod's containers for the kubelet: start ladder runs through the Kubernetes API instead "
    "(--pod NAMESPACE/NAME, kubectl on the target or --kube-context)"
)


# --- pure parts (tested without a daemon) ---------------------------------------------------


def parse_infos(text: str) -> list[dict[str, Any]]:
    """The JSON objects ``ctr containers info`` printed one after another."""
    out: list[dict[str, Any]] = []
    dec, i = json.JSONDecoder(), 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        try:
            obj, i = dec.raw_decode(text, i)
        except ValueError:
            nxt = text.find("\n{", i)
            if nxt < 0:
                return out
            i = nxt + 1
            continue
        if isinstance(obj, dict) and obj.get("ID"):
            out.append(obj)


def parse_tasks(text: str) -> dict[str, tuple[int | None, str]]:
    """``ctr tasks ls`` → {container id: (pid, status)}."""
    out: dict[str, tuple[int | None, str]] = {}
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 3:
            out[parts[0]] = (int(parts[1]) if parts[1].isdigit() and int(parts[1]) > 0 else None, parts[2].lower())
    return out


def parse_images(text: str) -> dict[str, str]:
    """``ctr images ls`` → {reference: manifest digest}."""
    out = {}
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 3 and parts[2].startswith("sha256:"):
            out[parts[0]] = parts[2]
    return out


def _is_sandbox(info: dict[str, Any]) -> bool:
    labels = info.get("Labels") or {}
    return labels.get("io.cri-containerd.kind") == "sandbox" or "pause" in (info.get("Image") or "").rsplit("/", 1)[-1]


def _args(info: dict[str, Any]) -> list[str]:
    return list(((info.get("Spec") or {}).get("process") or {}).get("args") or [])


def choose(
    infos: list[dict[str, Any]], pick: Pick, running: dict[str, tuple[int | None, str]], notes: list[str]
) -> dict[str, Any] | None:
    """The container ``pick`` names; without a name, the running one that serves vLLM (a note when not unique)."""
    cands = [i for i in infos if not _is_sandbox(i)]
    ref = pick.pod_ref()
    if ref is not None:
        cands = [i for i in cands if _label(i, "namespace") == ref[0] and _label(i, "name") == ref[1]]
    if pick.container:
        c = pick.container
        cands = [i for i in cands if i["ID"] == c or i["ID"].startswith(c) or _label(i, "container") == c]
    if pick.image:
        cands = by_image(cands, pick.image)
    what = " ".join(
        x
        for x in (
            f"pod {pick.pod}" if pick.pod else "",
            f"container {pick.container}" if pick.container else "",
            f"container of image {pick.image}" if pick.image else "",
        )
        if x
    )
    if not cands:
        notes.append(f"containerd has no {what or 'container'} (namespace {pick.containerd_namespace})")
        return None
    serving = [i for i in cands if _SERVING.search(" ".join(_args(i)))] or [
        i for i in cands if "vllm" in (i.get("Image") or "").lower() or "vllm" in " ".join(_args(i)).lower()
    ]
    pool = serving or (cands if what else [])
    if not pool:
        return None
    pool.sort(key=lambda i: (running.get(i["ID"], (None, ""))[1] != "running", i.get("CreatedAt") or ""), reverse=False)
    live = [i for i in pool if running.get(i["ID"], (None, ""))[1] == "running"]
    if len(live) > 1:
        names = ", ".join(_label(i, "container") or i["ID"][:12] for i in live)
        notes.append(
            f"{len(live)} containers look like vLLM servers ({names}); froze the first: give --container or --pod"
        )
    return pool[0]


def normal_ref(ref: str) -> str:
    """An image reference as containerd names it: ``vllm/x:t`` → ``docker.io/vllm/x:t``, ``busybox`` →
    ``docker.io/library/busybox:latest`` (a digest reference keeps its digest)."""
    ref = ref.strip()
    first, sep, _ = ref.partition("/")
    if not sep or not ("." in first or ":" in first or first == "localhost"):
        ref = f"docker.io/{ref}" if sep else f"docker.io/library/{ref}"
    last = ref.rsplit("/", 1)[-1]
    return ref if "@" in last or ":" in last else f"{ref}:latest"


def by_image(infos: list[dict[str, Any]], ref: str) -> list[dict[str, Any]]:
    """The containers of image ``ref``: exactly that reference, else every image whose reference contains it.

    Raises:
        UsageError: the part matches more than one image reference (the line lists them).
    """
    exact = [i for i in infos if normal_ref(str(i.get("Image") or "")) == normal_ref(ref)]
    if exact:
        return exact
    part = [i for i in infos if ref.lower() in str(i.get("Image") or "").lower()]
    refs = sorted({str(i.get("Image")) for i in part})
    if len(refs) > 1:
        raise UsageError(f"--image {ref!r} matches {len(refs)} images: {', '.join(refs)}; give more of the reference")
    return part


def _label(info: dict[str, Any], key: str) -> str:
    return str((info.get("Labels") or {}).get(POD_LABELS[key]) or "")


def pod_identity(info: dict[str, Any]) -> dict[str, Any] | None:
    """Namespace, pod, uid and container name from the kubelet's labels (None: not a pod's container)."""
    ident = {k: _label(info, k) or None for k in POD_LABELS}
    return ident if ident["namespace"] and ident["name"] else None


def container_facts(info: dict[str, Any]) -> dict[str, Any]:
    """The scene's container facts from ``ctr containers info`` (the OCI runtime spec; redacted later)."""
    spec = info.get("Spec") or {}
    proc, linux = spec.get("process") or {}, spec.get("linux") or {}
    devices = [d.get("path") for d in linux.get("devices") or [] if d.get("path")]
    mounts = [
        {
            "type": m.get("type"),
            "source": m.get("source"),
            "destination": m.get("destination"),
            "options": m.get("options"),
        }
        for m in spec.get("mounts") or []
    ]
    return {
        "name": _label(info, "container") or info["ID"],
        "id": info["ID"],
        "image": info.get("Image") or "",
        "image_id": None,
        "repo_digests": [],
        "created": info.get("CreatedAt"),
        "command": _args(info),
        "entrypoint": None,
        "cmd": None,
        "env": list(proc.get("env") or []),
        "cwd": proc.get("cwd"),
        "user": (proc.get("user") or {}).get("uid"),
        "labels": dict(info.get("Labels") or {}),
        "annotations": dict(spec.get("annotations") or {}),
        "runtime": (info.get("Runtime") or {}).get("Name"),
        "devices": devices,
        "gpu_devices": [d for d in devices if d.startswith("/dev/nvidia")]
        + [m["destination"] for m in mounts if str(m["destination"] or "").startswith("/dev/nvidia")],
        "mounts": mounts,
        "source": "containerd OCI runtime spec",
    }


def log_folder(info: dict[str, Any], root: str = POD_LOGS) -> str | None:
    """Where the kubelet writes this container's log: the CRI metadata's LogPath, else from its labels."""
    ext = (info.get("Extensions") or {}).get(_CRI_META) or {}
    meta = _decode_extension(ext)
    path = ((meta or {}).get("Metadata") or {}).get("LogPath") or ""
    if path:
        return path.rsplit("/", 1)[0]
    ident = pod_identity(info)
    if ident is None or not ident["uid"] or not ident["container"]:
        return None
    return cri.log_dir(root, ident["namespace"], ident["name"], ident["uid"], ident["container"])


def _decode_extension(ext: dict[str, Any]) -> dict[str, Any] | None:
    """containerd's CRI plugin stores its metadata as JSON in a typeurl Any (``value``: base64 in ``ctr`` output)."""
    import base64

    value = ext.get("value")
    if not isinstance(value, str):
        return None
    try:
        out = json.loads(base64.b64decode(value))
    except ValueError:
        return None
    return out if isinstance(out, dict) else None


def first_log(logs: dict[str, str], paths: dict[str, str]) -> tuple[str, str | None]:
    """(source, text) of the log the first exception is read from: the previous container's when it has one."""
    from ..scene.freeze import classify_first_exception

    if logs.get("previous") and classify_first_exception(logs["previous"]) is not None:
        return f"previous container's CRI log {paths['previous']}", logs["previous"]
    if "current" in logs:
        return f"CRI log {paths['current']}", logs["current"]
    return "", None


async def scan_cri(host: Any, found: Found) -> tuple[str, Any, dict[str, Any]] | None:
    """The first root from the WHOLE CRI log, scanned on the node (:func:`k3tui.remote.prefilter.find_root`).

    The previous container's log first (a crash loop's root is there), else the current one;
    None when there is none to scan, when :meth:`ContainerdLauncher.find` already read the whole
    file (a scan costs ~2 s of fixed work on the host), or when it cannot be read there (the
    tail read by ``find`` is used then).
    """
    if getattr(host, "simulated", False) or not found.truncated:
        return None  # the simulated host serves its scenario's log through the tail
    from ..scene.logscan import LogTarget, scan_server_log

    for which in ("previous", "current"):
        path = found.log_paths.get(which)
        if not path:
            continue
        source = f"{'previous container' if which == 'previous' else 'container'}'s CRI log {path}"
        got = await scan_server_log(host, LogTarget(path, "cri", source))
        if isinstance(got, str):
            found.notes.append(f"{got}; the first exception comes from the END of the CRI log only")
            return None
        if got[0].first_exception is not None or which == "current":
            return source, got[0], got[1]
    return None


def with_scan(scene: Any, scanned: tuple[str, Any, dict[str, Any]] | None) -> None:
    """Put a whole-log scan's root into the scene (before its redaction)."""
    if scanned is None:
        return
    from ..scene.freeze import exception_dict

    scene.log_source, scene.log_scan = scanned[0], scanned[2]
    scene.first_exception = exception_dict(scanned[1])


def env_origins(env: dict[str, str], image_env: list[str], runtime_env: list[str], other: str) -> dict[str, str]:
    """Where each variable comes from: ``image`` (the image sets it so), ``runtime`` (the OCI spec: injected), ``other``."""
    img, rt = _env_map(image_env), _env_map(runtime_env)
    return {k: "image" if img.get(k) == v else "runtime" if rt.get(k) == v else other for k, v in env.items()}


def _env_map(items: list[str]) -> dict[str, str]:
    return dict(i.partition("=")[::2] for i in items)


def overlay(scene: Any, launcher: str, found: Found, log_source: str) -> None:
    """Put containerd's facts into a frozen scene (before its redaction)."""
    from ..scene.assemble import SERVING_ENV

    scene.launcher = launcher
    scene.notes.extend(found.notes)
    if found.container is None:
        return
    c = scene.container = found.container
    if scene.pod is None and found.pod is not None:
        scene.pod = dict(found.pod)
    # The OCI spec is the env the runtime started the process with; /proc/PID/environ (when
    # readable: not another user's process) is what the process itself shows, and wins.
    proc_env = (scene.process or {}).get("env") or {}
    merged = {**_env_map(c["env"]), **proc_env}
    scene.env = {k: v for k, v in sorted(merged.items()) if SERVING_ENV.match(k)}
    scene.env_origin = env_origins(scene.env, c.get("image_env") or [], c["env"], "process")
    if scene.log_source == "given" and log_source:
        scene.log_source = log_source


def _why(r: RunResult) -> str:
    last = (r.stderr.strip().splitlines() or [""])[-1]
    return r.error or (f"exit {r.status}: {last[:200]}" if last else f"exit {r.status}")

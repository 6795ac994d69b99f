"""A STAND-IN for a Kubernetes API server, answering the REAL ``kubectl`` with real API objects.

No Kubernetes API server can be installed on these machines (no kube-apiserver/etcd
package, no registry to pull one from), so the kubectl path is tested against this small
HTTP server instead. It is a stand-in and says so; it never replaces a real part that
exists — containerd, sshd and kubectl itself are the real ones in the same tests.

It answers the REST calls k3tui's kubectl commands make (``kubectl get --raw`` /
``create --raw`` / ``delete --raw``), with the objects of ``tests/data/kube/*.json`` (see the
README there: shaped as the API server returns them, after the public vLLM Kubernetes
examples) and real vLLM logs from ``../shared/corpus``:

- ``GET /api/v1/namespaces/NS/pods?labelSelector=k=v,…`` (a PodList), ``GET /api/v1/namespaces/NS/pods/NAME`` (and ``/log?container=&previous=&follow=&timestamps=&sinceTime=&tailLines=``),
  ``GET …/events?fieldSelector=involvedObject.name=NAME``, ``GET /apis/GROUP/VERSION/namespaces/NS/KINDS/NAME``;
- ``POST /api/v1/namespaces/NS/pods``: the pod is stored (uid, ``Running``, ``podIP``) and —
  standing in for the kubelet — its log is ``run_log`` (``run_logs[NODE]`` for a pod on NODE) played line by
  line (``line_delay`` s);
  when it ends the pod's phase becomes ``Failed`` (``Succeeded`` with ``run_exit = 0``);
- ``DELETE …/pods/NAME``: gone (404 after), recorded in ``deleted``.

``drop_follow_after = N`` closes the first follow stream after N lines (an API connection
that drops), to test the resume. Every request is recorded in ``requests`` as
``(method, path)``. Fixture ``kubeapi`` → :class:`KubeApi` (function-scoped): ``url``,
``kubeconfig(path)`` writes a kubeconfig with context ``gb300`` pointing at it
(:func:`kubeconfig_of`: one context per stand-in, for ``--kube-context``).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "kube"


def load_objects(name: str = "vllm-gb300") -> dict[str, Any]:
    return json.loads((DATA / f"{name}.json").read_text())


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


class KubeApi:
    """The stand-in's state: objects by REST path, logs by (ns, pod, container, previous)."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.events: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.logs: dict[tuple[str, str, str, bool], str] = {}
        self.run_log: str = ""
        self.run_logs: dict[str, str] = {}
        """A created pod's log by its ``spec.nodeName`` (the members of a group run on their own trays); else ``run_log``."""
        self.run_exit = 1
        self.line_delay = 0.01
        self.drop_follow_after: int | None = None
        self.created: list[dict[str, Any]] = []
        self.deleted: list[str] = []
        self.requests: list[tuple[str, str]] = []
        self._played: dict[str, list[tuple[str, str]]] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # --- content ----------------------------------------------------------------------

    def add(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        group = obj["apiVersion"]
        prefix = "/api/v1" if group == "v1" else f"/apis/{group}"
        self.objects[f"{prefix}/namespaces/{meta['namespace']}/{obj['kind'].lower()}s/{meta['name']}"] = obj

    def add_scenario(
        self,
        name: str = "vllm-gb300",
        previous_log: str = "",
        current_log: str = "",
        rename: tuple[str, str] | None = None,
    ) -> dict[str, Any]:
        """Serve one scenario's objects; returns them (the pod under ``pod``; ``rename`` = (pod name, uid))."""
        objs = load_objects(name)
        if rename is not None:
            objs["pod"]["metadata"]["name"], objs["pod"]["metadata"]["uid"] = rename
        for key, obj in objs.items():
            if key not in ("events", "workers"):
                self.add(obj)
        for obj in objs.get("workers", []):
            self.add(obj)
        pod = objs["pod"]
        ns, pname = pod["metadata"]["namespace"], pod["metadata"]["name"]
        self.events[(ns, pname)] = [
            dict(
                e,
                kind="Event",
                involvedObject={"kind": "Pod", "namespace": ns, "name": pname, "uid": pod["metadata"]["uid"]},
            )
            for e in objs["events"]
        ]
        cname = pod["spec"]["containers"][0]["name"]
        self.logs[(ns, pname, cname, True)] = previous_log
        self.logs[(ns, pname, cname, False)] = current_log
        return objs

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def kubeconfig(self, path: Path, context: str = "gb300") -> Path:
        return kubeconfig_of(path, {context: self}, context)

    # --- serving -----------------------------------------------------------------------

    def start(self) -> None:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's names
                api._get(self)

            def do_POST(self) -> None:  # noqa: N802
                api._post(self)

            def do_DELETE(self) -> None:  # noqa: N802
                api._delete(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _send(self, h: BaseHTTPRequestHandler, code: int, obj: Any) -> None:
        body = json.dumps(obj).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _not_found(self, h: BaseHTTPRequestHandler, what: str) -> None:
        self._send(h, 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
                            "code": 404, "message": f"{what} not found"})  # fmt: skip

    def _get(self, h: BaseHTTPRequestHandler) -> None:
        url = urllib.parse.urlsplit(h.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        self.requests.append(("GET", h.path))
        parts = url.path.strip("/").split("/")
        if url.path.endswith("/log"):
            return self._log(h, parts[3], parts[5], q)
        if url.path.endswith("/events"):
            name = q.get("fieldSelector", "").partition("involvedObject.name=")[2].split(",")[0]
            items = self.events.get((parts[3], name), [])
            return self._send(h, 200, {"kind": "EventList", "apiVersion": "v1", "items": items})
        obj = self.objects.get(url.path)
        if obj is None and url.path.endswith("/pods"):
            return self._send(h, 200, {"kind": "PodList", "apiVersion": "v1", "items": self._select(url.path, q)})
        if obj is None:
            return self._not_found(h, url.path)
        return self._send(h, 200, obj)

    def _select(self, path: str, q: dict[str, str]) -> list[dict[str, Any]]:
        """The pods under ``path`` whose labels match every ``k=v`` of ``labelSelector``."""
        want = dict(t.split("=", 1) for t in q.get("labelSelector", "").split(",") if "=" in t)
        return [
            o for p, o in self.objects.items()
            if p.startswith(path + "/") and p.count("/") == path.count("/") + 1
            and all((o["metadata"].get("labels") or {}).get(k) == v for k, v in want.items())
        ]  # fmt: skip

    def _post(self, h: BaseHTTPRequestHandler) -> None:
        url = urllib.parse.urlsplit(h.path)
        self.requests.append(("POST", h.path))
        body = json.loads(_body(h) or b"{}")
        ns = url.path.strip("/").split("/")[3]
        pod = copy.deepcopy(body)
        meta = pod.setdefault("metadata", {})
        meta.update(namespace=ns, uid=str(uuid.uuid4()), creationTimestamp=_now()[:19] + "Z")
        pod["status"] = {"phase": "Running", "podIP": "127.0.0.1", "hostIP": "127.0.0.1"}
        path = f"/api/v1/namespaces/{ns}/pods/{meta['name']}"
        if path in self.objects:
            return self._send(h, 409, {"kind": "Status", "status": "Failure", "reason": "AlreadyExists", "code": 409,
                                      "message": f"pods \"{meta['name']}\" already exists"})  # fmt: skip
        self.objects[path] = pod
        self.created.append(pod)
        threading.Thread(target=self._play, args=(path, pod), daemon=True).start()
        return self._send(h, 201, pod)

    def _delete(self, h: BaseHTTPRequestHandler) -> None:
        url = urllib.parse.urlsplit(h.path)
        self.requests.append(("DELETE", h.path))
        pod = self.objects.pop(url.path, None)
        if pod is None:
            return self._not_found(h, url.path)
        self.deleted.append(url.path)
        return self._send(h, 200, pod)

    # --- the kubelet's part (a created pod "runs" by playing run_log) -------------------

    def _play(self, path: str, pod: dict[str, Any]) -> None:
        played: list[tuple[str, str]] = []
        with self._lock:
            self._played[path] = played
        log = self.run_logs.get(str((pod.get("spec") or {}).get("nodeName")), self.run_log)
        for line in log.splitlines():
            if path not in self.objects:
                return
            with self._lock:
                played.append((_now(), line))
            time.sleep(self.line_delay)
        if path in self.objects:
            pod["status"]["phase"] = "Succeeded" if self.run_exit == 0 else "Failed"

    def _log(self, h: BaseHTTPRequestHandler, ns: str, name: str, q: dict[str, str]) -> None:
        path = f"/api/v1/namespaces/{ns}/pods/{name}"
        if path not in self.objects:
            return self._not_found(h, f"pods {name}")
        if path in self._played:
            return self._stream(h, path, q)
        text = self.logs.get((ns, name, q.get("container", ""), q.get("previous") == "true"))
        if text is None:
            return self._send(h, 400, {"kind": "Status", "status": "Failure", "reason": "BadRequest", "code": 400,
                                      "message": f"previous terminated container \"{q.get('container')}\" in pod \"{name}\" not found"})  # fmt: skip
        lines = text.splitlines()
        if "tailLines" in q:
            lines = lines[-int(q["tailLines"]) :]
        body = "".join(line + "\n" for line in lines).encode()
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _stream(self, h: BaseHTTPRequestHandler, path: str, q: dict[str, str]) -> None:
        """A created pod's log, chunked; with ``follow`` until the pod ends (or a planned drop)."""
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        since, i, sent = q.get("sinceTime", ""), 0, 0
        drop, self.drop_follow_after = self.drop_follow_after, None
        while True:
            with self._lock:
                lines = self._played.get(path, [])[i:]
            for ts, text in lines:
                i += 1
                if since and ts < since:
                    continue
                out = (f"{ts} {text}" if q.get("timestamps") == "true" else text) + "\n"
                data = out.encode()
                h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                h.wfile.flush()
                sent += 1
                if drop is not None and sent >= drop:
                    h.close_connection = True
                    return  # no final chunk: the connection just ends
            pod = self.objects.get(path)
            if q.get("follow") != "true" or pod is None or pod["status"]["phase"] in ("Succeeded", "Failed"):
                with self._lock:
                    done = i >= len(self._played.get(path, []))
                if done or pod is None or q.get("follow") != "true":
                    break
            time.sleep(0.02)
        h.wfile.write(b"0\r\n\r\n")


def kubeconfig_of(path: Path, contexts: dict[str, KubeApi], current: str) -> Path:
    """A kubeconfig with one context (and cluster) per stand-in, ``current`` its current context."""
    clusters = "".join(f"- name: c-{n}\n  cluster:\n    server: {api.url}\n" for n, api in contexts.items())
    ctxs = "".join(
        f"- name: {n}\n  context:\n    cluster: c-{n}\n    user: oncall\n    namespace: default\n" for n in contexts
    )
    path.write_text(
        f"apiVersion: v1\nkind: Config\nclusters:\n{clusters}contexts:\n{ctxs}"
        f"current-context: {current}\nusers:\n- name: oncall\n  user:\n    token: not-a-real-token\n"
    )
    path.chmod(0o644)
    return path


def _body(h: BaseHTTPRequestHandler) -> bytes:
    """A request body, sent with a length or chunked (kubectl streams ``-f -`` chunked)."""
    if h.headers.get("Transfer-Encoding", "").lower() != "chunked":
        return h.rfile.read(int(h.headers.get("Content-Length") or 0))
    out = b""
    while True:
        size = int(h.rfile.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            h.rfile.readline()
            return out
        out += h.rfile.read(size)
        h.rfile.readline()


@pytest.fixture
def kubeapi():
    """A kubectl-facing STAND-IN API server (see the module docstring)."""
    api = KubeApi()
    api.start()
    yield api
    api.stop()

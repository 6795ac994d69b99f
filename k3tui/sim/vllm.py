"""The simulated host's ``vllm serve``: a real process that replays a real vLLM log.

It is a FAKE on purpose. Started like the real one (``vllm serve MODEL --tensor-parallel-size
8 …``, on the host or through ``docker exec``/``docker run``), it

- replays its scenario's log template (:mod:`k3tui.sim.logplay`) on stdout with the
  log's own timing compressed (a whole start-up in a few seconds; ``K3SIM_SPEED=2`` is
  twice as fast), honouring ``--port``, ``--host``, ``--tensor-parallel-size``,
  ``--served-model-name``, ``--max-model-len`` and ``--[no-]enable-prefix-caching``;
- registers itself as the process using the GPUs (nvidia-smi shows its memory grow) and
  publishes ``/proc/PID/maps`` with the scenario's libcuda (what a freeze reads);
- when healthy, serves HTTP: ``/health``, ``/v1/models``, ``/version``, ``/tokenize``,
  ``/v1/chat/completions``, ``/v1/completions`` (bodies modelled on real vLLM 0.32
  responses) and ``/metrics`` (a real Prometheus snapshot whose counters move: prefix
  cache queries/hits rise on a same-prefix second request, stay 0 with
  ``--no-enable-prefix-caching``). It binds an ephemeral loopback port and records it
  under ``ROOT/state/ports/<requested port>``; the simulated SSH server maps a forward
  of the requested port to it, so many simulated hosts run side by side;
- in a runtime-failure scenario the first completion request kills a worker: the real
  runtime-failure lines are printed, the request gets a 500, ``/health`` 503, the
  process exits like real vLLM;
- answers a prompt longer than ``--max-model-len`` (3 characters a pseudo-token) with vLLM 0.32's
  400 (``maximum context length``): the server lives on, as the real one does;
- on SIGTERM prints vLLM's shutdown lines and exits 0 (a normal stop is not a failure).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ..assets import asset
from .logplay import LogVars, Op, ops
from .pathmap import recorded_alive, this_process
from .signals import stop_on_signals

BLOCK = 64
"""Prefix-cache block size in (pseudo-)tokens."""
PACE = 0.01
"""Wall seconds per second of log time at K3SIM_SPEED=1 (a 340 s start-up replays in 3.4 s)."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="vllm serve", add_help=False)
    p.add_argument("model_tag", nargs="?")
    p.add_argument("--model")
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--served-model-name", nargs="+")
    p.add_argument("--max-model-len", type=int)
    p.add_argument("--load-format", default="auto")
    p.add_argument("--enable-prefix-caching", dest="prefix", action="store_true", default=True)
    p.add_argument("--no-enable-prefix-caching", dest="prefix", action="store_false")
    p.add_argument("--trust-remote-code", action="store_true")
    p.add_argument("--gpu-memory-utilization", type=float)
    p.add_argument("--headless", action="store_true")
    ns, _unknown = p.parse_known_args(argv)
    ns.model = ns.model or ns.model_tag or "facebook/opt-125m"
    return ns


def _non_default(ns: argparse.Namespace) -> str:
    d: dict[str, Any] = {"model_tag": ns.model_tag} if ns.model_tag else {}
    if ns.host != "0.0.0.0":
        d["host"] = ns.host
    if ns.port != 8000:
        d["port"] = ns.port
    d["model"] = ns.model
    if ns.trust_remote_code:
        d["trust_remote_code"] = True
    if ns.load_format != "auto":
        d["load_format"] = ns.load_format
    if ns.max_model_len:
        d["max_model_len"] = ns.max_model_len
    if ns.tensor_parallel_size != 1:
        d["tensor_parallel_size"] = ns.tensor_parallel_size
    if ns.gpu_memory_utilization:
        d["gpu_memory_utilization"] = ns.gpu_memory_utilization
    if not ns.prefix:
        d["enable_prefix_caching"] = False
    if ns.served_model_name:
        d["served_model_name"] = ns.served_model_name
    return repr(d)


def choose_template(
    vllm: dict[str, Any],
    argv: list[str],
    env: dict[str, str] | None = None,
    image: str | None = None,
    gpus: int = 8,
) -> str:
    """The scenario's log, unless its failure needs launch arguments, env or an image this launch lacks.

    The causes a scenario declares (issue 20: the simulated host is causal, so bisect can find them):
    ``trigger_args`` (each present in the launch), ``trigger_env`` (each ``NAME=VALUE`` the host
    injects: the failure holds unless the server's env sets NAME to another value; ``env`` defaults
    to this process's), ``trigger_max_model_len_above`` (the launch's
    ``--max-model-len``, or the model's own when unset, beyond what the KV cache holds),
    ``trigger_images`` (the image references on the host that run the failing build; ``image``
    None = not known, the cause holds; "" = a launch on the host, outside any image),
    ``trigger_tp_above_visible`` (``--tensor-parallel-size`` above the GPUs the server sees:
    its ``CUDA_VISIBLE_DEVICES``, else the value declared there, else the host's ``gpus``). All
    declared causes must hold.
    """
    need = vllm.get("trigger_args", [])
    joined = " " + " ".join(a.replace("=", " ", 1) if a.startswith("--") else a for a in argv) + " "
    if need and not all(f" {t} " in joined for t in need):
        return "healthy.log"
    have = os.environ if env is None else env
    for item in vllm.get("trigger_env", []):
        name, _, value = item.partition("=")
        if have.get(name, value) != value:
            return "healthy.log"
    limit = vllm.get("trigger_max_model_len_above")
    asked = parse_args(argv).max_model_len or int(vllm.get("max_model_len", 1048576))  # unset: the model's own
    if limit is not None and not asked > int(limit):
        return "healthy.log"
    images = vllm.get("trigger_images")
    if images and image is not None and image not in images:
        return "healthy.log"
    if "trigger_tp_above_visible" in vllm and not parse_args(argv).tensor_parallel_size > visible_gpus(
        vllm, have, gpus
    ):
        return "healthy.log"
    return vllm.get("log", "healthy.log")


def visible_gpus(vllm: dict[str, Any], env: Any, gpus: int = 8) -> int:
    """The GPUs a server sees: its ``CUDA_VISIBLE_DEVICES``, else the scenario's injected default, else all."""
    spec = env.get("CUDA_VISIBLE_DEVICES")
    if spec is None:
        spec = str(vllm.get("trigger_tp_above_visible") or "")
    spec = spec.strip()
    return len([d for d in spec.split(",") if d.strip()]) if spec else gpus


class Server:
    """One fake ``vllm serve`` process: replay thread, HTTP thread, GPU registration."""

    def __init__(self, root: Path, argv: list[str]) -> None:
        self.root = root
        self.state = json.loads((root / "state" / "host.json").read_text())
        self.ns = parse_args(argv)
        self.argv = argv
        self.pid = os.getpid()
        self.served = (self.ns.served_model_name or [self.ns.model])[0]
        self.speed = float(os.environ.get("K3SIM_SPEED", "1") or 1)
        self.lock = threading.Lock()
        self.ready = False
        self.dead = False
        self.stop = threading.Event()
        self.request_seen = threading.Event()
        self.failed = threading.Event()
        self.waiting = False
        self.httpd: ThreadingHTTPServer | None = None
        self.counters: dict[str, float] = {}
        self.blocks: set[str] = set()
        self.status = 0
        in_ctr = bool(os.environ.get("K3SIM_CONTAINER"))
        self.image = os.environ.get("K3SIM_IMAGE") or (str(self.state["container"].get("image", "")) if in_ctr else "")
        """The image this server runs in (``docker run IMAGE`` / the deployment's container; "" on the host)."""
        self.vars = LogVars(
            model=self.ns.model,
            served=self.served,
            tp=self.ns.tensor_parallel_size,
            api_pid=self.pid,
            host=self.ns.host,
            port=self.ns.port,
            version=self.state["container"].get("vllm", "0.27.1"),
            max_model_len=self.ns.max_model_len or int(self.state["vllm"].get("max_model_len", 1048576)),
            load_format=self.ns.load_format,
            prefix_caching=self.ns.prefix,
            cuda_driver_int=int(self.state["host"].get("cuda_driver_int", 13000)),
            args=_non_default(self.ns),
            visible=visible_gpus(self.state["vllm"], os.environ, len(self.state["host"]["gpus"])),
            pace=PACE / max(self.speed, 1e-3),  # log stamps follow the wall clock the session is recorded on
        )

    # --- output and bookkeeping ----------------------------------------------------------

    def say(self, line: str) -> None:
        with self.lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def _proc_file(self) -> Path:
        return self.root / "state" / "procs" / f"{self.pid}.json"

    def register(self, used_mib: int) -> None:
        tp = self.ns.tensor_parallel_size
        names = {str(i): (f"VLLM::Worker_TP{i}" if tp > 1 else "VLLM::Worker") for i in range(tp)}
        rec = {
            **this_process(),
            "name": "VLLM::Worker",
            "gpus": list(range(tp)),
            "gpu_names": names,
            "used_mib": used_mib,
            "argv": self.argv,
        }
        tmp = self._proc_file().with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(rec))
            tmp.replace(self._proc_file())
        except OSError:  # the simulated host is being torn down
            self.stop.set()

    def publish_proc(self) -> None:
        """/proc/PID/{maps,cmdline} as the simulated host shows them (the scenario's libcuda)."""
        d = self.root / "fs" / "proc" / str(self.pid)
        d.mkdir(parents=True, exist_ok=True)
        c = self.state["container"]
        in_ctr = bool(os.environ.get("K3SIM_CONTAINER"))
        libcuda = (
            c.get("process_libcuda")
            if in_ctr or c.get("process_libcuda_everywhere", True)
            else self.state["host"]["host_libcuda"]
        )
        images = self.state["vllm"].get("trigger_images")
        if images and self.image not in images:  # another build than the failing one: the host driver's libcuda
            libcuda = self.state["host"]["host_libcuda"]
        libcuda = libcuda or self.state["host"]["host_libcuda"]
        drv = self.state["host"]["driver"]
        triplet = "aarch64-linux-gnu" if self.state["host"]["arch"] == "aarch64" else "x86_64-linux-gnu"
        libs = [
            f"/usr/lib/{triplet}/libc.so.6",
            "/usr/local/lib/python3.12/dist-packages/nvidia/cu13/lib/libcudart.so.13",
            "/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2",
            libcuda,
            f"/usr/lib/{triplet}/libnvidia-ml.so.{drv}",
        ]
        lines, addr = [], 0x7F3A10000000
        for n, lib in enumerate(libs):
            for perm, off in (("r--p", 0), ("r-xp", 0x200000), ("rw-p", 0x1800000)):
                lines.append(
                    f"{addr:012x}-{addr + 0x200000:012x} {perm} {off:08x} 103:02 {2883584 + n * 17} {' ' * 26}{lib}"
                )
                addr += 0x200000
        (d / "maps").write_text("\n".join(lines) + "\n")
        if in_ctr:  # a process in the container: its cgroup names the container (what a freeze matches)
            from .containers import container_id

            (d / "cgroup").write_text(f"0::/system.slice/docker-{container_id(self.state)}.scope\n")
        cmd = [str(self.root / "venv" / "bin" / "python3"), "/usr/local/bin/vllm", "serve", *self.argv]
        (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in cmd) + b"\0")
        for lib in libs:
            f = self.root / "fs" / lib.lstrip("/")
            f.parent.mkdir(parents=True, exist_ok=True)
            f.touch()

    def cleanup(self) -> None:
        for p in (
            self._proc_file(),
            self.root / "fs" / "proc" / str(self.pid) / "maps",
            self.root / "fs" / "proc" / str(self.pid) / "cmdline",
            self.root / "fs" / "proc" / str(self.pid) / "cgroup",
            self._port_file(),
        ):
            try:
                p.unlink()
            except OSError:
                pass
        try:
            (self.root / "fs" / "proc" / str(self.pid)).rmdir()
        except OSError:
            pass

    def _port_file(self) -> Path:
        return self.root / "state" / "ports" / str(self.ns.port)

    # --- HTTP ----------------------------------------------------------------------------

    def serve(self) -> bool:
        if self.ns.headless:  # a headless (worker) node of a multi-node deployment has no API server
            return True
        pf = self._port_file()
        if pf.exists():
            try:
                other = json.loads(pf.read_text())
                if not recorded_alive(other):  # its owner died (or is a zombie) before unlinking it
                    raise ProcessLookupError
                self.say(
                    f"ERROR:    [Errno 98] error while attempting to bind on address ('{self.ns.host}', {self.ns.port}): address already in use"
                )
                return False
            except (OSError, ValueError, KeyError):
                pass
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        pf.write_text(json.dumps({**this_process(), "port": self.httpd.server_address[1]}))
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return True

    def unserve(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None
        try:
            self._port_file().unlink()
        except OSError:
            pass

    # --- replay --------------------------------------------------------------------------

    def sleep(self, log_seconds: float) -> None:
        self.stop.wait(log_seconds * PACE / max(self.speed, 1e-3))

    def run(self, template: str) -> int:
        self.publish_proc()
        self.register(0)
        it = ops(template, self.vars)
        for op in it:
            if self.stop.is_set() and op.kind != "exit":
                return self.shutdown()
            if not self.step(op, it):
                break
        return self.status

    def step(self, op: Op, it: Any) -> bool:
        k = op.kind
        if k == "line":
            self.say(op.text)
        elif k == "advance":
            self.sleep(op.value)
        elif k == "mem":
            self.register(int(op.value))
        elif k == "serve":
            if not self.serve():
                self.status = 1
                return False
        elif k == "ready":
            self.ready = True
        elif k == "unserve":
            self.unserve()
        elif k == "wait-stop":
            self.stop.wait()
        elif k == "wait-request":
            self.waiting = True
            while not self.request_seen.wait(0.1):
                if self.stop.is_set():
                    return True
        elif k == "respond-failed":
            self.dead = True
            self.ready = False
            self.failed.set()
        elif k == "kernel":
            self._kernel(op.text, op.value)
        elif k == "exit":
            self.status = int(op.value)
            return False
        return True

    def shutdown(self) -> int:
        self.ready = False
        # stamped now: a fresh clock from the run's start would jump back to it
        for op in ops("_shutdown.log", dataclasses.replace(self.vars, start=time.time())):
            if op.kind == "line":
                self.say(op.text)
        self.unserve()
        return 0

    def _kernel(self, text: str, clock: float) -> None:
        """Append a kernel line stamped like dmesg: seconds since the simulated boot, at the log's clock."""
        uptime = max(clock - float(self.state["host"].get("boot_time", 0)), 0.0)
        try:
            with open(self.root / "state" / "dmesg", "a") as f:
                f.write(f"[{uptime:12.6f}] {text}\n")
        except OSError:
            pass

    # --- requests ------------------------------------------------------------------------

    def complete(self, body: dict[str, Any], chat: bool) -> tuple[int, dict[str, Any]]:
        if body.get("model") not in (None, self.served):
            return 404, _error(
                f"The model `{body.get('model')}` does not exist. Valid aliases: {self.served}.",
                "NotFoundError",
                404,
                "model",
            )
        text = _prompt_text(body, chat)
        tokens = [text[i : i + 3] for i in range(0, len(text), 3)] or [""]
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        if max_tokens > self.vars.max_model_len:
            return 400, _error(
                f"max_tokens={max_tokens} cannot be greater than max_model_len={self.vars.max_model_len}. Please request fewer output tokens. (parameter=max_tokens, value={max_tokens})",
                "BadRequestError",
                400,
                "max_tokens",
            )
        if len(tokens) > self.vars.max_model_len:  # vLLM 0.32 tokenizes at most max_model_len + 1 tokens
            n = self.vars.max_model_len + 1
            return 400, _error(
                f"This model's maximum context length is {self.vars.max_model_len} tokens. However, your prompt contains at least {n} input tokens, which exceeds this limit even without any output tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value={n})",
                "BadRequestError",
                400,
                "input_tokens",
            )
        cached = self._prefix_cache(tokens)
        if "baseline-ok" in text:
            content, finish, n_out = "baseline-ok", "stop", 4
        else:
            words = "This reply comes from the k3tui simulated GB300 host, not from a real model.".split()
            n_out = min(max_tokens, len(words))
            content, finish = " ".join(words[:n_out]), ("length" if n_out == max_tokens else "stop")
        self._count(len(tokens), cached, n_out, finish)
        rid = hashlib.sha256(f"{time.time()}{text}".encode()).hexdigest()[:16]
        usage = {
            "prompt_tokens": len(tokens),
            "total_tokens": len(tokens) + n_out,
            "completion_tokens": n_out,
            "prompt_tokens_details": None,
        }
        base = json.loads(asset("scenarios", "http", "chat.json").read_text())
        base.update(
            id=("chatcmpl-" if chat else "cmpl-") + rid,
            created=int(time.time()),
            model=self.served,
            usage=usage,
            system_fingerprint=f"vllm-{self.vars.version}-k3sim",
        )
        choice = base["choices"][0]
        choice["finish_reason"] = finish
        if chat:
            choice["message"]["content"] = content
        else:
            base["object"] = "text_completion"
            choice.pop("message", None)
            choice["text"] = content
        return 200, base

    def _prefix_cache(self, tokens: list[str]) -> int:
        if not self.ns.prefix:
            return 0
        cached, h, hit = 0, "", True
        full = (len(tokens) - 1) // BLOCK
        for b in range(full):
            h = hashlib.sha256((h + "\x00".join(tokens[b * BLOCK : (b + 1) * BLOCK])).encode()).hexdigest()
            if hit and h in self.blocks:
                cached += BLOCK
            else:
                hit = False
            self.blocks.add(h)
        return cached

    def _count(self, n_in: int, cached: int, n_out: int, finish: str) -> None:
        c = self.counters
        with self.lock:
            if self.ns.prefix:
                c["vllm:prefix_cache_queries_total"] = c.get("vllm:prefix_cache_queries_total", 0) + n_in
                c["vllm:prefix_cache_hits_total"] = c.get("vllm:prefix_cache_hits_total", 0) + cached
            for key, add in (
                ("vllm:prompt_tokens_total", n_in),
                ("vllm:generation_tokens_total", n_out),
                ("vllm:prompt_tokens_cached_total", cached),
                (f"success:{finish}", 1),
                ("source:local_cache_hit", cached),
                ("source:local_compute", n_in - cached),
                ("cached_source:device", cached),
            ):
                c[key] = c.get(key, 0) + add

    def metrics(self) -> str:
        out = []
        for line in asset("scenarios", "http", "metrics-template.txt").read_text().splitlines():
            if not line.startswith("#") and " " in line:
                key, _, value = line.rpartition(" ")
                value = self._metric_value(key, value)
                line = f"{key} {value}"
            line = line.replace('enable_prefix_caching="True"', f'enable_prefix_caching="{self.ns.prefix}"')
            line = line.replace('block_size="128"', f'block_size="{BLOCK}"').replace(
                'model_name="moonshotai/Kimi-K3"', f'model_name="{self.served}"'
            )
            out.append(line)
        return "\n".join(out) + "\n"

    def _metric_value(self, key: str, value: str) -> str:
        name, _, labels = key.partition("{")
        c = self.counters
        if name in c:
            return f"{float(c[name])}"
        for kind, label in (("success", "finished_reason"), ("source", "source"), ("cached_source", "source")):
            wanted = {
                "success": "vllm:request_success_total",
                "source": "vllm:prompt_tokens_by_source_total",
                "cached_source": "vllm:prompt_tokens_cached_by_source_total",
            }[kind]
            if name == wanted:
                for k, v in c.items():
                    if k.startswith(kind + ":") and f'{label}="{k.split(":", 1)[1]}"' in labels:
                        return f"{float(v)}"
        return value


def _error(message: str, kind: str, code: int, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _prompt_text(body: dict[str, Any], chat: bool) -> str:
    if not chat:
        p = body.get("prompt", "")
        return p if isinstance(p, str) else " ".join(map(str, p))
    parts = []
    for m in body.get("messages", []):
        c = m.get("content", "")
        if isinstance(c, list):
            c = " ".join(x.get("text", "") for x in c if isinstance(x, dict))
        parts.append(f"<|im_{m.get('role', 'user')}|>{c}<|im_end|>")
    return "".join(parts) + "<|im_assistant|>"


def _handler(srv: Server) -> type[BaseHTTPRequestHandler]:
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "uvicorn"
        sys_version = ""

        def log_message(self, *a: Any) -> None:  # access lines go to the vLLM log instead
            pass

        def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            phrase = {
                200: "OK",
                400: "Bad Request",
                404: "Not Found",
                500: "Internal Server Error",
                503: "Service Unavailable",
            }[code]
            srv.say(
                f'INFO:     {self.client_address[0]}:{self.client_address[1]} - "{self.command} {self.path} HTTP/1.1" {code} {phrase}'
            )

        def _json(self, code: int, obj: Any) -> None:
            self._send(code, json.dumps(obj, separators=(",", ":")).encode())

        def do_GET(self) -> None:  # noqa: N802
            path = self.path.split("?")[0]
            if path == "/health":
                self._send(200 if srv.ready else 503, b"", "text/plain")
            elif srv.dead:
                self._send(503, b"", "text/plain")
            elif path == "/v1/models":
                m = json.loads(asset("scenarios", "http", "models.json").read_text())
                m["data"][0].update(
                    id=srv.served, root=srv.ns.model, max_model_len=srv.vars.max_model_len, created=int(time.time())
                )
                self._json(200, m)
            elif path == "/version":
                self._json(200, {"version": srv.vars.version})
            elif path == "/metrics":
                self._send(200, srv.metrics().encode(), "text/plain; version=0.0.4; charset=utf-8")
            else:
                self._json(404, {"detail": "Not Found"})

        def do_POST(self) -> None:  # noqa: N802
            n = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(n) or b"{}")
            except ValueError:
                self._json(400, _error("Invalid JSON body", "BadRequestError", 400))
                return
            path = self.path.split("?")[0]
            if path == "/tokenize":
                text = body.get("prompt") or _prompt_text(body, True)
                toks = list(range(len(text[::3])))
                self._json(
                    200,
                    {"count": len(toks), "max_model_len": srv.vars.max_model_len, "tokens": toks, "token_strs": None},
                )
                return
            if path not in ("/v1/chat/completions", "/v1/completions"):
                self._json(404, {"detail": "Not Found"})
                return
            if srv.dead or not srv.ready:
                self._json(
                    500,
                    _error(
                        "EngineCore encountered an issue. See stack trace (above) for the root cause.",
                        "InternalServerError",
                        500,
                    ),
                )
                return
            if srv.waiting and not srv.request_seen.is_set():
                srv.request_seen.set()
                srv.failed.wait(30)
                self._json(
                    500,
                    _error(
                        "EngineCore encountered an issue. See stack trace (above) for the root cause.",
                        "InternalServerError",
                        500,
                    ),
                )
                return
            code, obj = srv.complete(body, path.endswith("chat/completions"))
            self._json(code, obj)

    return H


def _watch_owner(srv: Server) -> None:
    """Stop when the process simulating this host is gone or its root was removed (no orphans)."""
    owner = int(os.environ.get("K3SIM_OWNER") or 0)
    while not srv.stop.wait(0.5):
        try:
            if owner:
                os.kill(owner, 0)
        except ProcessLookupError:
            srv.stop.set()
        if not (srv.root / "state").is_dir():
            srv.stop.set()


def main(argv: list[str], root: str | None = None) -> int:
    if argv[:1] in (["--version"], ["-v"]):
        state = json.loads((Path(root or os.environ["K3SIM_ROOT"]) / "state" / "host.json").read_text())
        print(state["container"].get("vllm", "0.27.1"))
        return 0
    if argv[:1] != ["serve"]:
        print(
            "usage: vllm serve [model_tag] [options]  (k3tui simulated vllm: only `serve` is simulated)",
            file=sys.stderr,
        )
        return 2
    srv = Server(Path(root or os.environ["K3SIM_ROOT"]), argv[1:])
    threading.Thread(target=_watch_owner, args=(srv,), daemon=True).start()
    stop_on_signals(srv.stop)  # no lock in a handler: a second TERM must not deadlock the stop
    template = choose_template(srv.state["vllm"], argv[1:], image=srv.image, gpus=len(srv.state["host"]["gpus"]))
    from .ray import serve_template  # --distributed-executor-backend ray: is the (fake) cluster big enough?

    template = serve_template(srv.state, argv[1:], template, srv.ns.tensor_parallel_size)
    try:
        return srv.run(template)
    finally:
        srv.unserve()
        srv.cleanup()

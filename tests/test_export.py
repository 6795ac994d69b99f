"""Export of a realistic session: every file of the package, its content, verify, tamper, CLI.

Sessions are made with the real :class:`~k3tui.recording.Recorder` from real vLLM logs of
``../shared/corpus`` (the label of each log says its first failing stage and root error),
shaped the way the ladder records a failing minimal launch, a repeat, a one-variable fix
and the fixed request.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from k3tui import events as ev
from k3tui.errors import PackageError, RecordingError
from k3tui.package import MANIFEST, export_session, open_package, verify_package
from k3tui.reader import read_all
from k3tui.recording import Recorder
from k3tui.redact import Redactor

FAIL_LOG = "vllm-cpu/10d-fail-load-format-fastsafetensors.log"
OK_LOG = "vllm-cpu/01-baseline-startup-only.log"
NCCL_LOG = "vllm-issues/007.log"

SECRETS = {
    "hf": "hf_" + "Q" * 8 + "abcdEFGHijklMNOPqrst",
    "openai": "sk-proj-" + "Z9y8X7w6V5u4T3s2R1q0",
    "gh": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7",
    "aws": "AKIA" + "ABCDEFGH12345678",
    "bearer": "bearerTOK" + "xyz0123456789abc",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvbmNhbGwifQ.c2lnbmF0dXJlLXBhcnQ",
    "dbpass": "hunter2-" + "correct-horse",
    "urlpass": "s3cr3tP" + "assw0rd",
    "cli": "cliSecret" + "Value42xyz",
    "pem": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" + "VJTUt9Us8cKj",
    "slack": "xoxb-" + "123456789012-abcdefABCDEF",
}


def label(shared: Path, rel: str) -> dict:
    folder, name = rel.split("/")
    for line in (shared / "corpus" / folder / "labels.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["file"] == name:
            return row
    raise AssertionError(f"no label for {rel}")


def log_lines(shared: Path, rel: str) -> list[str]:
    return (shared / "corpus" / rel).read_text(encoding="utf-8").splitlines(keepends=True)


def root_stack(lines: list[str], first_exception: str) -> tuple[list[str], int]:
    """The worker's traceback up to the labelled root error line (and that line's number)."""
    end = next(i for i, ln in enumerate(lines) if first_exception in ln)
    prefix = lines[end].split("]", 1)[0]
    start = end
    while start > 0 and lines[start - 1].startswith(prefix.split(" ERROR")[0]) and "ERROR" in lines[start - 1]:
        start -= 1
    return [ln.rstrip("\n") for ln in lines[start : end + 1]], end + 1


SCENE = {
    "host": {
        "hostname": "gb300-01",
        "os": "Ubuntu 24.04.2 LTS",
        "kernel": "6.8.0-1021-nvidia",
        "driver_version": "580.159.04",
        "cuda_driver_version": "13.0",
    },
    "gpus": [
        {
            "index": i,
            "name": "NVIDIA GB300",
            "uuid": f"GPU-0000000{i}-aaaa-bbbb-cccc-ddddeeeeffff",
            "pci_bus_id": f"00000000:0{i}:00.0",
            "memory_total_mib": 284208,
            "memory_used_mib": 0,
            "compute_cap": "10.3",
        }
        for i in range(8)
    ],
    "container": {
        "name": "k3",
        "image": "vllm/vllm-openai:kimi-k3",
        "image_id": "sha256:" + "ab" * 32,
        "repo_digests": ["vllm/vllm-openai@sha256:" + "cd" * 32],
        "env": ["HF_TOKEN=" + SECRETS["hf"], "LD_LIBRARY_PATH=/usr/local/nvidia/lib64"],
    },
    "versions": {"python": "3.12.3", "torch": "2.9.0", "torch_cuda": "13.0", "vllm": "0.27.1", "nccl": "2.27.7"},
    "libcuda": {"path": "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04", "version": "580.159.04"},
    "env": {"NCCL_DEBUG": "INFO", "DB_PASSWORD": SECRETS["dbpass"], "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"},
    "first_exception": None,
    "probes": [
        {"name": "nvidia-smi", "ok": True, "error": "", "seconds": 0.4},
        {"name": "xid", "ok": False, "error": "dmesg: permission denied", "seconds": 0.1},
    ],
}

MINIMAL = (
    "vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 8 --trust-remote-code "
    "--load-format fastsafetensors --no-enable-prefix-caching --host 0.0.0.0 --port 8000"
)
REQUEST = {
    "model": "moonshotai/Kimi-K3",
    "messages": [{"role": "user", "content": "Reply only: baseline-ok"}],
    "max_tokens": 16,
    "temperature": 0,
}


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self, dt: float = 0.05) -> float:
        self.t += dt
        return round(self.t, 6)


def _run(
    rec: Recorder,
    clk: _Clock,
    shared: Path,
    run: str,
    log: str,
    config: dict,
    diff: list,
    rung: str,
    env: dict,
    command: str,
) -> None:
    lab = label(shared, log)
    lines = log_lines(shared, log)
    rec.emit(ev.RunConfigSet(t=clk(), run=run, config=config, diff=diff))
    rec.emit(
        ev.RunStarted(t=clk(), run=run, command=command, env=env, run_dir=f"/var/tmp/k3tui/{run}", pid=31201, rung=rung)
    )
    rec.emit(ev.StageReached(t=clk(), run=run, stage="container", line=1))
    for i in range(0, len(lines), 20):
        rec.emit(ev.Output(t=clk(0.01), id=run, text="".join(lines[i : i + 20])))
    if lab["stage"] == "none":
        rec.emit(ev.StageReached(t=clk(), run=run, stage="api", line=len(lines)))
        rec.emit(ev.RunClassified(t=clk(), run=run, failed_stage="none", signature="none"))
        return
    stack, n = root_stack(lines, lab["first_exception"])
    sig = f"{lab['stage']}|ModuleNotFoundError|No module named <str>"
    rec.emit(ev.StageReached(t=clk(), run=run, stage=lab["stage"], line=n - 5))
    rec.emit(
        ev.ExceptionFound(
            t=clk(),
            run=run,
            stage=lab["stage"],
            line=stack[-1],
            line_number=n,
            stack=stack,
            process="Worker pid=31264",
            signature=sig,
        )
    )
    rec.emit(ev.SceneFrozen(t=clk(), scene=dict(SCENE, first_exception=stack[-1]), reason="first-exception", run=run))
    rec.emit(
        ev.RunClassified(
            t=clk(),
            run=run,
            failed_stage=lab["stage"],
            signature=sig,
            exception=lab["first_exception"],
            advice="install fastsafetensors in the image or use --load-format safetensors",
        )
    )
    rec.emit(ev.RunEnded(t=clk(), run=run, status=1, reason="exited"))


def make_session(path: Path, shared: Path, redactor: Redactor | None = None, hostile: bool = False) -> Path:
    """A failing minimal launch (x2), a one-variable fix, the fixed request, checklist and notes."""
    clk = _Clock()
    header = ev.Header(host="gb300-01", profile="kimi-k3", title="K3 load-format failure")
    with Recorder(path, header, redactor=redactor or Redactor(), index=False) as rec:
        rec.emit(
            ev.HostConnected(t=clk(), host="gb300-01", address="10.0.0.7", user="oncall", fingerprint="SHA256:abc")
        )
        rec.emit(
            ev.CommandSent(
                t=clk(), id="c1", command="nvidia-smi -q -x", env={"DB_PASSWORD": SECRETS["dbpass"]}, purpose="probe"
            )
        )
        rec.emit(ev.SceneFrozen(t=clk(), scene=SCENE, reason="operator"))
        for check, verdict, evidence in [
            ("driver", "PASS", "580.159.04 >= 580"),
            ("gpus", "PASS", "8 x NVIDIA GB300"),
            ("image", "PASS", "vllm/vllm-openai:kimi-k3, torch cuda 13.0"),
            ("ld-library-path", "FAIL", "LD_LIBRARY_PATH injected by the runtime: /opt/hpcx/lib"),
        ]:
            rec.emit(
                ev.CheckVerdict(
                    t=clk(), rung="baseline", check=check, verdict=verdict, evidence=evidence, title=f"baseline {check}"
                )
            )
        config = {
            "image": "vllm/vllm-openai:kimi-k3",
            "tensor_parallel_size": 8,
            "load_format": "fastsafetensors",
            "env": {"HF_TOKEN": SECRETS["hf"], "NCCL_DEBUG": "INFO"},
        }
        env = {"HF_TOKEN": SECRETS["hf"], "NCCL_DEBUG": "INFO", "VLLM_ENGINE_READY_TIMEOUT_S": "3600"}
        command = MINIMAL + f" --api-key {SECRETS['cli']}"
        rec.emit(ev.RungEntered(t=clk(), rung="minimal"))
        _run(rec, clk, shared, "r1", FAIL_LOG, config, [], "minimal", env, command)
        _run(rec, clk, shared, "r2", FAIL_LOG, config, [], "minimal", env, command)
        rec.emit(
            ev.RungLeft(
                t=clk(), rung="minimal", verdict="FAIL", summary="weights: ModuleNotFoundError", reproduced=2, repeats=2
            )
        )
        rec.emit(ev.Note(t=clk(), text=f"fastsafetensors missing from the image? password={SECRETS['urlpass']}"))
        rec.emit(ev.Decision(t=clk(), action="change load-format", reason="isolate the loader; one variable"))
        fixed = dict(config, load_format="safetensors")
        _run(
            rec,
            clk,
            shared,
            "r3",
            OK_LOG,
            fixed,
            [{"key": "load_format", "old": "fastsafetensors", "new": "safetensors"}],
            "minimal",
            env,
            command.replace("fastsafetensors", "safetensors"),
        )
        rec.emit(ev.RungEntered(t=clk(), rung="single-request"))
        for i in range(2):
            rec.emit(
                ev.HttpRequest(
                    t=clk(),
                    id=f"q{i}",
                    method="POST",
                    url="http://127.0.0.1:8000/v1/chat/completions",
                    body=json.dumps(REQUEST),
                )
            )
            rec.emit(
                ev.HttpResponse(
                    t=clk(),
                    id=f"q{i}",
                    status=200,
                    body='{"choices":[{"message":{"content":"baseline-ok"}}]}',
                    duration=0.21,
                )
            )
            rec.emit(
                ev.GpuSample(
                    t=clk(),
                    gpus=[ev.GpuMem(index=g, used_mib=1000.0 + 10 * i, total_mib=284208) for g in range(2)],
                    source="nvml",
                )
            )
        rec.emit(
            ev.RungLeft(
                t=clk(), rung="single-request", verdict="PASS", summary="2/2 completed", reproduced=0, repeats=2
            )
        )
        for item, verdict in [("first-stack", "PASS"), ("isolated-node", "UNKNOWN")]:
            rec.emit(
                ev.CheckVerdict(
                    t=clk(), rung="checklist", check=item, verdict=verdict, evidence=f"evidence for {item}", title=item
                )
            )
        rec.emit(
            ev.CheckVerdict(
                t=clk(),
                rung="stop",
                check="gpus-exclusive",
                verdict="PASS",
                evidence="no other processes",
                title="GPUs exclusive",
            )
        )
        leaks = [
            f"curl -H 'Authorization: Bearer {SECRETS['bearer']}' http://127.0.0.1:8000/v1/models\n",
            f"export OPENAI_API_KEY={SECRETS['openai']} GH={SECRETS['gh']} AWS={SECRETS['aws']}\n",
            f"token {SECRETS['jwt']} slack {SECRETS['slack']}\n",
            f"pulling from https://oncall:{SECRETS['urlpass']}@registry.example.com/v2/\n",
            f"-----BEGIN RSA PRIVATE KEY-----\n{SECRETS['pem']}\n-----END RSA PRIVATE KEY-----\n",
            f"db said: wrong value {SECRETS['dbpass']}\n",
        ]
        if hostile:
            leaks.append("\x1b]52;c;ZXZpbCBjbGlwYm9hcmQ=\x07\x1b]0;pwned title\x07\x1b[2J plain tail\n")
        rec.emit(ev.Output(t=clk(), id="r3", text="".join(leaks)))
        rec.emit(ev.Marker(t=clk(), label="handing over to platform"))
    return path


@pytest.fixture
def session(tmp_path: Path, shared: Path) -> Path:
    return make_session(tmp_path / "k3.k3rec", shared)


@pytest.fixture
def package(session: Path) -> Path:
    return export_session(session)


def members(pkg: Path) -> dict[str, bytes]:
    """Every file of our own package (read with plain tarfile: the archive is trusted here)."""
    with tarfile.open(pkg, "r:gz") as tar:
        out = {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar if m.isfile()}
    return out


def test_package_holds_every_file(package: Path, session: Path) -> None:
    files = members(package)
    expected = {
        "REPORT.md",
        "fingerprint.json",
        "launch.sh",
        "request.json",
        "first-error.txt",
        "changes.csv",
        "checklist.md",
        "session.k3rec",
        "session.cast",
        MANIFEST,
        "logs/r1.log",
        "logs/r2.log",
        "logs/r3.log",
    }
    assert expected <= set(files), sorted(files)
    assert files["session.k3rec"] == session.read_bytes()  # a sound recording is copied byte for byte
    manifest = dict(reversed(ln.split("  ", 1)) for ln in files[MANIFEST].decode().splitlines())
    assert set(manifest) == set(files) - {MANIFEST}
    import hashlib

    for name, digest in manifest.items():
        assert hashlib.sha256(files[name]).hexdigest() == digest


def test_report_names_stage_exception_and_tables(package: Path, shared: Path) -> None:
    files = members(package)
    rep = files["REPORT.md"].decode()
    lab = label(shared, FAIL_LOG)
    assert "first failing stage: **weights**" in rep
    assert lab["first_exception"].replace("'", "'") in files["first-error.txt"].decode()
    assert "No module named" in rep and "fastsafetensors" in rep
    for section in (
        "Environment fingerprint",
        "Compatibility verdicts",
        "Minimal launch command",
        "Fixed request",
        "First failure",
        "Single-variable changes",
        "Deliverable checklist",
        "Stop conditions",
        "Operator notes and decisions",
        "Timeline",
    ):
        assert section in rep
    assert "580.159.04" in rep and "8 × NVIDIA GB300" in rep and "vllm/vllm-openai:kimi-k3" in rep
    assert "LD\\_LIBRARY\\_PATH injected" in rep  # the FAIL baseline verdict with its evidence
    assert "2/2" in rep  # r1 and r2 share a config and a signature
    assert rep.count("`weights\\|ModuleNotFoundError\\|No module named <str>`") >= 4  # failure, runs, changes
    _assert_tables_well_formed(rep)


def _assert_tables_well_formed(rep: str) -> None:
    """Every row of every Markdown table has its header's number of cells (GFM splits on unescaped |)."""
    import re

    tables: list[list[int]] = []
    prev = False
    for line in rep.splitlines():
        is_row = line.startswith("|")
        if is_row:
            cells = len(re.split(r"(?<!\\)\|", line)) - 2
            (tables[-1] if prev else tables.append([]) or tables[-1]).append(cells)
        prev = is_row
    assert len(tables) >= 8
    for t in tables:
        assert len(set(t)) == 1, t
    assert "isolate the loader" in rep  # the decision


def test_first_error_has_the_whole_root_stack(package: Path, shared: Path) -> None:
    text = members(package)["first-error.txt"].decode()
    stack, _ = root_stack(log_lines(shared, FAIL_LOG), label(shared, FAIL_LOG)["first_exception"])
    assert "stage       weights" in text and "found in    run r1" in text
    assert "signature   weights|ModuleNotFoundError|No module named <str>" in text
    for line in stack:
        assert line in text
    assert "EngineCore failed to start" not in text  # a consequence, not the root


def test_launch_sh_is_the_minimal_command_with_env_redacted(package: Path) -> None:
    text = members(package)["launch.sh"].decode()
    assert text.startswith("#!/bin/sh\n")
    assert "\nexport HF_TOKEN=<redacted>\n" in text  # bare: the file cannot run with a placeholder secret
    assert "export VLLM_ENGINE_READY_TIMEOUT_S=3600" in text
    last = text.rstrip("\n").splitlines()[-1]
    assert last == MINIMAL + " --api-key <redacted>"
    with tarfile.open(package) as tar:
        assert all(not (m.mode & 0o111) for m in tar if m.isfile())  # nothing in a package is executable


def test_request_changes_checklist_and_logs(package: Path, shared: Path) -> None:
    files = members(package)
    assert json.loads(files["request.json"]) == REQUEST
    rows = list(csv.DictReader(io.StringIO(files["changes.csv"].decode())))
    assert [r["run"] for r in rows] == ["r1", "r2", "r3"]
    assert (
        rows[0]["reproduced"] == "2" and rows[0]["repeats"] == "2" and rows[0]["result"].startswith("FAILED at weights")
    )
    assert rows[0]["signature"] == "weights|ModuleNotFoundError|No module named <str>"
    assert rows[2]["variables_changed"] == "1" and "load_format: 'fastsafetensors' → 'safetensors'" in rows[2]["diff"]
    assert rows[2]["result"] == "ok (no failure)" and rows[2]["reproduced"] == "1"
    assert "isolate the loader" in rows[2]["decision"]
    check = files["checklist.md"].decode()
    assert "- [x] **first-stack** (PASS)" in check and "- [ ] **isolated-node** (UNKNOWN)" in check
    assert files["logs/r1.log"].decode() == (shared / "corpus" / FAIL_LOG).read_text()
    assert json.loads(files["fingerprint.json"])["first_exception"].endswith("No module named 'fastsafetensors'")


def test_verify_ok_then_tamper_names_the_file(package: Path, tmp_path: Path) -> None:
    ok, msg = verify_package(package)
    assert ok, msg
    assert "package intact" in msg and "chain verified" in msg
    for victim, edit in [
        ("REPORT.md", lambda b: b.replace(b"weights", b"engine", 1)),
        ("logs/r2.log", lambda b: b[:-10]),
        ("changes.csv", lambda b: b + b"r9,forged\n"),
    ]:
        bad = _repack(package, tmp_path / f"bad-{victim.replace('/', '_')}.tar.gz", {victim: edit})
        ok, msg = verify_package(bad)
        assert not ok and f"{victim} was ALTERED" in msg, msg


def test_tampered_session_with_updated_manifest_is_caught_by_the_chain(package: Path, tmp_path: Path) -> None:
    def edit(b: bytes) -> bytes:
        lines = b.split(b"\n")
        lines[5] = lines[5].replace(b'"t":', b'"t": ', 1)
        return b"\n".join(lines)

    bad = _repack(package, tmp_path / "bad-session.tar.gz", {"session.k3rec": edit}, fix_manifest=True)
    ok, msg = verify_package(bad)
    assert not ok and "session.k3rec" in msg and "TAMPERED at line 6" in msg, msg


def test_missing_and_extra_files_are_named(package: Path, tmp_path: Path) -> None:
    bad = _repack(package, tmp_path / "missing.tar.gz", {"checklist.md": None})
    ok, msg = verify_package(bad)
    assert not ok and "checklist.md is listed" in msg and "missing" in msg
    bad = _repack(package, tmp_path / "extra.tar.gz", {}, add={"notes.txt": b"hello"})
    ok, msg = verify_package(bad)
    assert not ok and "notes.txt is in the package but not in" in msg


def _repack(pkg: Path, out: Path, edits: dict, add: dict | None = None, fix_manifest: bool = False) -> Path:
    import hashlib

    files = members(pkg)
    top = next(iter(tarfile.open(pkg).getnames())).split("/")[0]
    for name, fn in edits.items():
        if fn is None:
            del files[name]
        else:
            files[name] = fn(files[name])
    files.update(add or {})
    if fix_manifest:
        files[MANIFEST] = "".join(
            f"{hashlib.sha256(b).hexdigest()}  {n}\n" for n, b in sorted(files.items()) if n != MANIFEST
        ).encode()
    with tarfile.open(out, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "k3tui.cli", *args], capture_output=True, text=True, timeout=60)


def test_cli_export_verify_cat(session: Path, tmp_path: Path) -> None:
    out = tmp_path / "pkg.tar.gz"
    r = _cli("export", str(session), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "package intact" in r.stdout
    r = _cli("verify", str(out))
    assert r.returncode == 0 and "chain verified" in r.stdout, r.stdout + r.stderr
    r = _cli("cat", str(out))
    assert r.returncode == 0, r.stderr
    assert "FIRST EXCEPTION at weights" in r.stdout and "No module named 'fastsafetensors'" in r.stdout
    r = _cli("export", str(session), "-o", str(out))
    assert r.returncode != 0 and "already exists" in r.stderr
    bad = _repack(out, tmp_path / "bad.tar.gz", {"REPORT.md": lambda b: b + b"x"})
    r = _cli("verify", str(bad))
    assert r.returncode == 1 and "REPORT.md was ALTERED" in r.stdout


@pytest.mark.parametrize("content", [b"", b"not a session\n", b"\x00\x01garbage" * 100, b'{"format":"other"}\n'])
def test_garbage_session_is_one_line_error(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "bad.k3rec"
    p.write_bytes(content)
    with pytest.raises(RecordingError):
        export_session(p)
    r = _cli("export", str(p))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("k3tui: "), r.stderr
    assert not list(tmp_path.glob("*.tar.gz")) and not list(tmp_path.glob(".*tmp"))


def test_missing_session_and_package_as_input(tmp_path: Path, package: Path) -> None:
    r = _cli("export", str(tmp_path / "nope.k3rec"))
    assert r.returncode == 2 and "no such file" in r.stderr
    with pytest.raises(PackageError, match="already a repro package"):
        export_session(package, tmp_path / "again.tar.gz")


def test_open_package_returns_the_session(package: Path, session: Path, tmp_path: Path) -> None:
    target = tmp_path / "opened"
    got = open_package(package, target)
    assert got.name == "session.k3rec" and got.read_bytes() == session.read_bytes()
    assert target in got.parents
    _, events = read_all(got)
    assert any(isinstance(e, ev.ExceptionFound) for e in events)
    with pytest.raises(PackageError, match="already exists"):
        open_package(package, target)
    assert [p.name for p in target.iterdir()] == [got.parent.name]  # the failed second open left nothing


def test_ladder_conventions_config_ids_and_repeats(tmp_path: Path, shared: Path) -> None:
    """The ladder records a config under the id it expects (``r1``) and starts ``r1-minimal``;
    repeats start without a new config; a GPU sampler run is not a server run."""
    lines = log_lines(shared, FAIL_LOG)
    lab = label(shared, FAIL_LOG)
    stack, n = root_stack(lines, lab["first_exception"])
    path = tmp_path / "ladder.k3rec"
    cfg = {"image": "vllm/vllm-openai:kimi-k3", "load_format": "fastsafetensors", "max_model_len": None}
    with Recorder(path, ev.Header(host="gb300-01"), redactor=Redactor(), index=False) as rec:
        rec.emit(ev.RunStarted(t=0.5, run="gpu-sampler", command="python3 -S sampler.py"))
        rec.emit(ev.RunConfigSet(t=1.0, run="r1", config=cfg, diff=[]))
        sigs = ["weights|ModuleNotFoundError|x", "weights|ModuleNotFoundError|x", "engine|RuntimeError|y"]
        for i, sig in enumerate(sigs, start=1):
            run = f"r{i}-minimal"
            rec.emit(ev.RunStarted(t=i * 10.0, run=run, command=MINIMAL, rung="minimal"))
            rec.emit(ev.Output(t=i * 10.0 + 1, id=run, stream="log", text="".join(lines)))
            rec.emit(
                ev.ExceptionFound(
                    t=i * 10.0 + 2, run=run, stage=sig.split("|")[0], line=stack[-1], stack=stack, signature=sig
                )
            )
            rec.emit(ev.RunClassified(t=i * 10.0 + 3, run=run, failed_stage=sig.split("|")[0], signature=sig))
            rec.emit(ev.RunEnded(t=i * 10.0 + 4, run=run, status=1, reason="exited"))
        rec.emit(
            ev.Decision(
                t=40.0,
                action="override one-variable rule: load_format, max_model_len",
                reason="the loader and the length are tied",
            )
        )
        rec.emit(
            ev.RunConfigSet(
                t=41.0,
                run="r4",
                config=dict(cfg, load_format="safetensors", max_model_len=4096),
                diff=[
                    {"key": "load_format", "old": "fastsafetensors", "new": "safetensors"},
                    {"key": "max_model_len", "old": None, "new": 4096},
                ],
            )
        )
        rec.emit(ev.RunStarted(t=42.0, run="r4-minimal", command=MINIMAL, rung="minimal"))
        rec.emit(ev.RunClassified(t=43.0, run="r4-minimal", failed_stage="none", signature="none"))
    files = members(export_session(path))
    rows = list(csv.DictReader(io.StringIO(files["changes.csv"].decode())))
    assert [(r["run"], r["reproduced"], r["repeats"], r["drift"]) for r in rows] == [
        ("r1-minimal", "2", "3", "DRIFT"),
        ("r4-minimal", "1", "1", ""),
    ]
    assert rows[1]["variables_changed"] == "2" and "the loader and the length" in rows[1]["decision"]
    rep = files["REPORT.md"].decode()
    assert "MORE THAN ONE VARIABLE" in rep and "**DRIFT**" in rep
    runs = rep.split("## 6. Runs")[1].split("## 7.")[0]
    assert "| r1-minimal |" in runs and "gpu-sampler" not in runs
    assert "| r1 |" not in runs  # no phantom run from the config's expected id
    assert files["launch.sh"].decode().rstrip().endswith(MINIMAL)
    assert {"logs/r1-minimal.log", "logs/r2-minimal.log", "logs/r3-minimal.log"} <= set(files)


def test_interrupted_recording_exports_and_verifies(session: Path) -> None:
    """What kill -9 leaves: no closing seal, a truncated last line. The package keeps it, says so, and verifies."""
    lines = session.read_bytes().split(b"\n")
    assert b'"kind":"seal"' in lines[-2]  # a closed session ends with its seal: kill -9 never wrote it
    session.write_bytes(b"\n".join(lines[:-2]) + b"\n")
    Path(str(session) + ".idx").unlink(missing_ok=True)
    with open(session, "ab") as fh:
        fh.write(b'{"kind":"output","id":"r3","text":"half a li')
    pkg = export_session(session)
    rep = members(pkg)["REPORT.md"].decode()
    assert "is truncated (recording was interrupted)" in rep
    ok, msg = verify_package(pkg)
    assert ok and "truncated" in msg, msg


def test_export_while_still_recording(tmp_path: Path, shared: Path) -> None:
    """The TUI exports a live session: the export works on one consistent snapshot."""
    import time

    path = tmp_path / "live.k3rec"
    rec = Recorder(path, ev.Header(host="gb300-01"), redactor=Redactor(), index=False)
    try:
        rec.emit(ev.RunStarted(run="r1-minimal", command=MINIMAL, rung="minimal"))
        for line in log_lines(shared, FAIL_LOG)[:100]:
            rec.emit(ev.Output(id="r1-minimal", stream="log", text=line))
        deadline = time.monotonic() + 20  # the recorder flushes at least every 200 ms; the CPU may be busy
        while _events_on_disk(path) < 101 and time.monotonic() < deadline:
            time.sleep(0.1)
        pkg = export_session(path)
        for line in log_lines(shared, FAIL_LOG)[100:]:
            rec.emit(ev.Output(id="r1-minimal", stream="log", text=line))
    finally:
        rec.close()
    ok, msg = verify_package(pkg)
    assert ok, msg
    log = members(pkg)["logs/r1-minimal.log"].decode()
    assert log == "".join(log_lines(shared, FAIL_LOG)[:100])


def _events_on_disk(path: Path) -> int:
    try:
        return len(read_all(path)[1])
    except RecordingError:  # the header may not be flushed yet
        return 0


def test_tampered_session_exports_but_says_so(session: Path, tmp_path: Path) -> None:
    lines = session.read_bytes().split(b"\n")
    lines[7] = lines[7].replace(b'"t":', b'"t": ', 1)
    session.write_bytes(b"\n".join(lines))
    out = tmp_path / "t.tar.gz"
    r = _cli("export", str(session), "-o", str(out))
    assert r.returncode == 1 and "TAMPERED at line 8" in r.stdout, r.stdout + r.stderr
    assert "TAMPERED at line 8" in members(out)["REPORT.md"].decode()


def test_two_trays_one_run_id_two_logs_two_scenes(tmp_path: Path, shared: Path) -> None:
    """An NVL72 deployment is two 4-GPU trays: the same run id on each, logged and fingerprinted per host."""
    path = tmp_path / "nvl72.k3rec"
    ok_lines = log_lines(shared, OK_LOG)
    with Recorder(path, ev.Header(host="tray01,tray02"), redactor=Redactor(), index=False) as rec:
        for host in ("tray01", "tray02"):
            scene = dict(SCENE, host=dict(SCENE["host"], hostname=host), gpus=SCENE["gpus"][:4])
            rec.emit(ev.SceneFrozen(t=1.0, host=host, scene=scene, reason="operator"))
        for host in ("tray01", "tray02"):
            rec.emit(ev.RunStarted(t=2.0, host=host, run="r1-minimal", command=MINIMAL, rung="minimal"))
        for i, line in enumerate(ok_lines):
            host = ("tray01", "tray02")[i % 2]
            rec.emit(ev.Output(t=3.0 + i * 0.001, host=host, id="r1-minimal", stream="log", text=f"[{host}] {line}"))
    files = members(export_session(path))
    for host in ("tray01", "tray02"):
        log = files[f"logs/{host}-r1-minimal.log"].decode()
        assert log.count(f"[{host}] ") == log.count("\n") > 40 and "[tray0" not in log.replace(f"[{host}] ", "")
    rep = files["REPORT.md"].decode()
    assert "Scene of tray01" in rep and "Scene of tray02" in rep and rep.count("4 × NVIDIA GB300") == 2


def test_sha256sum_checks_the_package_without_k3tui(package: Path, tmp_path: Path) -> None:
    session = open_package(package, tmp_path / "opened")
    r = subprocess.run(["sha256sum", "-c", MANIFEST], cwd=session.parent, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count(": OK") == len((session.parent / MANIFEST).read_text().splitlines()) >= 12


def test_same_session_same_package_bytes(session: Path, tmp_path: Path) -> None:
    """Nothing in a package depends on when or where it was exported: two exports are identical."""
    a = export_session(session, tmp_path / "a.tar.gz")
    b = export_session(session, tmp_path / "b.tar.gz")
    assert a.read_bytes() == b.read_bytes()


def test_client_side_change_without_a_restart(tmp_path: Path) -> None:
    """Concurrency changes need no new server: the row says so, names its rung, and claims no k/K."""
    path = tmp_path / "conc.k3rec"
    with Recorder(path, ev.Header(host="h"), redactor=Redactor(), index=False) as rec:
        rec.emit(ev.RunConfigSet(t=1.0, run="r1", config={"concurrency": 1}))
        rec.emit(ev.Decision(t=1.5, action="stop-run", reason="restart for rung minimal"))
        rec.emit(ev.RunStarted(t=2.0, run="r1-minimal", command=MINIMAL, rung="minimal"))
        rec.emit(ev.RunClassified(t=3.0, run="r1-minimal", failed_stage="none", signature="none"))
        rec.emit(ev.RungEntered(t=4.0, rung="concurrency"))
        rec.emit(
            ev.RunConfigSet(
                t=5.0, run="r2", config={"concurrency": 8}, diff=[{"key": "concurrency", "old": 1, "new": 8}]
            )
        )
        rec.emit(ev.RungLeft(t=6.0, rung="concurrency", verdict="PASS"))
    rows = list(csv.DictReader(io.StringIO(members(export_session(path))["changes.csv"].decode())))
    assert rows[0]["run"] == "r1-minimal" and rows[0]["decision"] == ""  # the restart belongs to the run, not a change
    assert rows[1]["run"] == "" and rows[1]["rung"] == "concurrency" and rows[1]["repeats"] == "0"
    assert rows[1]["result"] == "no new server run; rung concurrency: PASS"

"""Scene diff: grouped differences, variables counted, a loud note for more than one; odd node out."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from k3tui.scene.diff import diff_lines, diff_scenes, odd_lines, odd_nodes
from k3tui.scene.model import scene_from_dict

H200 = Path(__file__).parent / "data" / "h200-r580-local" / "scene.json"


def base(alias: str = "a") -> dict:
    d = json.loads(H200.read_text())
    d["alias"] = alias
    return d


def sd(d: dict):  # noqa: ANN202
    return scene_from_dict(d)


def test_identical_scenes_and_noise_do_not_differ() -> None:
    a, b = base(), base()
    b["gpus"][0]["memory_used_mib"] = 99999.0
    b["frozen_at"] += 3600
    b["seconds"] = 9.0
    b["probes"] = []
    d = diff_scenes(sd(a), sd(b))
    assert d.changes == [] and d.loud == ""
    assert diff_lines(d) == ["no differences in driver, GPUs, image, env, versions, libraries, command or host"]


def test_one_variable_is_said_plainly() -> None:
    a, b = base(), base()
    b["host"]["driver_version"] = "575.57.08"
    b["host"]["cuda_driver_version"] = "12.9"
    d = diff_scenes(sd(a), sd(b))
    assert [(c.group, c.key) for c in d.changes] == [("driver", "driver_version"), ("driver", "cuda_driver_version")]
    assert d.variables == ["driver"] and d.loud == ""
    assert diff_lines(d)[-1] == "one variable changed: driver"


def test_more_than_one_variable_is_loud() -> None:
    a, b = base(), base()
    b["env"]["LD_LIBRARY_PATH"] = "/usr/local/cuda/compat"
    b["env"]["NCCL_DEBUG"] = "TRACE"
    b["libcuda"]["path"] = "/usr/local/cuda/compat/libcuda.so.575.57.08"
    b["gpus"].append({**b["gpus"][0], "index": 1, "uuid": "GPU-new"})
    d = diff_scenes(sd(a), sd(b))
    assert set(d.by_group()) == {"env", "libraries", "gpus"}
    assert sorted(d.variables) == ["env LD_LIBRARY_PATH", "env NCCL_DEBUG", "gpus", "libraries"]
    assert d.loud.startswith("MORE THAN ONE VARIABLE CHANGED (4:")
    lines = diff_lines(d)
    assert "[env]" in lines and "  NCCL_DEBUG: (none)  →  TRACE" in lines and lines[-1].startswith("!!! MORE THAN ONE")


def test_image_and_command_groups() -> None:
    a, b = base(), base()
    a["container"] = {
        "image": "vllm/vllm-openai:kimi-k3",
        "image_id": "sha256:1",
        "repo_digests": ["x@sha256:1"],
        "command": ["vllm", "serve"],
    }
    b["container"] = {
        **a["container"],
        "image": "vllm/vllm-openai:kimi-k3-cu129",
        "image_id": "sha256:2",
        "repo_digests": ["x@sha256:2"],
    }
    d = diff_scenes(sd(a), sd(b))
    assert d.variables == ["image"] and {c.key for c in d.changes} == {"image", "image_id", "repo_digests"}
    b["container"]["command"] = ["vllm", "serve", "--enable-prefix-caching"]
    assert diff_scenes(sd(a), sd(b)).variables == ["image", "command"]


def test_odd_node_out_among_three() -> None:
    a, b, c = base("node-a"), base("node-b"), base("node-c")
    c["host"]["driver_version"] = "575.57.08"
    c["env"]["LD_LIBRARY_PATH"] = "/opt/extra/lib:" + c["env"]["LD_LIBRARY_PATH"]
    c["container"] = {"image_id": "sha256:other"}
    findings = {f.fact: f for f in odd_nodes([sd(a), sd(b), sd(c)])}
    assert set(findings) == {"driver.driver_version", "env.LD_LIBRARY_PATH", "image.image_id"}
    for f in findings.values():
        assert f.odd == ["node-c"]
    assert findings["driver.driver_version"].majority == "580.159.04"
    lines = odd_lines(list(findings.values()))
    assert "ODD NODE driver.driver_version: node-c has 575.57.08 while the others have 580.159.04" in lines


def test_two_nodes_that_differ_have_no_majority() -> None:
    a, b = base("a"), base("b")
    b["gpus"] = b["gpus"] * 2
    (f,) = odd_nodes([sd(a), sd(b)])
    assert f.fact == "gpus.count" and f.majority is None and f.odd == ["a", "b"]
    assert odd_lines([f]) == ["NODES DIFFER gpus.count: a=1, b=2"]
    assert odd_nodes([sd(a), sd(copy.deepcopy(a))]) == []
    assert odd_lines([]) == ["all nodes agree on every compared fact"]


def k3(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "k3tui.cli", *args], capture_output=True, text=True, timeout=120)


def test_diff_cli_json_and_recordings(tmp_path: Path) -> None:
    b = base("b")
    b["host"]["driver_version"] = "575.57.08"
    (tmp_path / "b.json").write_text(json.dumps(b))
    r = k3("diff", str(H200), str(tmp_path / "b.json"))
    assert (
        r.returncode == 1
        and "driver_version: 580.159.04  →  575.57.08" in r.stdout
        and "one variable changed: driver" in r.stdout
    )
    assert k3("diff", str(H200), str(H200)).returncode == 0
    # the last scene of two session files
    for name in ("one", "two"):
        f = k3("freeze", "local", "--docker-socket", "", "--record", str(tmp_path / f"{name}.k3rec"))
        assert f.returncode == 0, f.stderr
    r = k3("diff", str(tmp_path / "one.k3rec"), str(tmp_path / "two.k3rec"))
    assert r.returncode in (0, 1) and r.stdout.startswith("--- ")
    r = k3("diff", str(tmp_path / "one.k3rec"), str(H200), str(tmp_path / "b.json"), "--nodes")
    assert r.returncode == 1 and "driver.driver_version" in r.stdout


@pytest.mark.parametrize("content", [b"{broken", b'{"no": "host"}', b"\x00\x01binary"])
def test_diff_cli_bad_input_is_one_line(tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    r = k3("diff", str(bad), str(H200))
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1 and str(bad) in r.stderr


def test_diff_cli_recording_without_scene(tmp_path: Path) -> None:
    from k3tui.events import Note
    from k3tui.recording import Recorder

    rec = Recorder(tmp_path / "empty.k3rec")
    rec.emit(Note(text="nothing frozen"))
    rec.close()
    r = k3("diff", str(tmp_path / "empty.k3rec"), str(H200))
    assert r.returncode == 2 and "no frozen scene" in r.stderr

"""The compatibility baseline: verdicts, evidence and exit status, from real and edited scenes."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from k3tui.profile import load_profile
from k3tui.reader import read_all
from k3tui.scene.checks import at_least, check_baseline, exit_status, vtuple
from k3tui.scene.model import Scene, scene_from_dict

H200 = Path(__file__).parent / "data" / "h200-r580-local" / "scene.json"
K3 = load_profile("kimi-k3")


def h200() -> dict:
    return json.loads(H200.read_text())


def gb300(n: int = 8, alias: str = "gb300-01") -> dict:
    """The real H200 scene edited into what the official boundary asks for."""
    d = h200()
    d["alias"] = alias
    g0 = d["gpus"][0]
    d["gpus"] = [
        {**g0, "index": i, "name": "NVIDIA GB300", "uuid": f"GPU-{alias}-{i}", "compute_cap": "10.3"} for i in range(n)
    ]
    d["container"] = {
        "name": "vllm-k3", "image": "vllm/vllm-openai:kimi-k3", "image_id": "sha256:" + "6" * 64,
        "repo_digests": ["vllm/vllm-openai@sha256:" + "9" * 64], "command": ["vllm", "serve"], "env": [],
        "architecture": "amd64",
    }  # fmt: skip
    d["container_gpus"] = [{"index": g["index"], "name": g["name"], "uuid": g["uuid"]} for g in d["gpus"]]
    d["versions"].update(vllm="0.27.1", torch="2.11.0+cu130")
    d["env_origin"] = {k: "image" for k in d["env"]}
    return d


def verdicts(d: dict | list[dict], profile=K3) -> dict[str, tuple[str, str]]:  # noqa: ANN001
    scenes = [scene_from_dict(x) for x in d] if isinstance(d, list) else scene_from_dict(d)
    return {v.check: (v.verdict, v.evidence) for v in check_baseline(scenes, profile)}


def test_real_h200_scene_against_kimi_k3() -> None:
    v = verdicts(h200())
    assert v["driver"] == ("PASS", "driver 580.159.04; profile needs ≥ 580")
    assert v["gpus"][0] == "FAIL" and "1 × NVIDIA H200" in v["gpus"][1] and "≥ 8 × GB300" in v["gpus"][1]
    assert v["libcuda"] == (
        "PASS",
        "server loaded /usr/local/nvidia/lib64/libcuda.so.580.159.04 = host driver 580.159.04",
    )
    assert v["image"][0] == "UNKNOWN" and v["container-gpus"][0] == "UNKNOWN"
    assert v["image-cuda"][0] == "PASS" and v["versions"][0] == "UNKNOWN" and "vllm" in v["versions"][1]
    vs = check_baseline(scene_from_dict(h200()), K3)
    assert exit_status(vs) == 1 and {x.rung for x in vs} == {"baseline"} and all(x.title for x in vs)


def test_the_official_shape_passes_everything() -> None:
    v = verdicts(gb300())
    assert {k: x[0] for k, x in v.items()} == dict.fromkeys(v, "PASS"), v
    assert exit_status(check_baseline(scene_from_dict(gb300()), K3)) == 0


# Facts two checks share: the driver is also what the loaded libcuda must match, torch's
# CUDA build is also a version, the GPU list is also what the container must see.
# "gpu-memory": with no GPU list there is no GPU whose ECC could be read (UNKNOWN, honestly)
COUPLED = {"driver": {"libcuda"}, "image-cuda": {"versions"}, "gpus": {"container-gpus", "gpu-memory"}}


@pytest.mark.parametrize(
    ("edit", "check", "verdict", "evidence"),
    [
        (lambda d: d["host"].update(driver_version="575.57.08"), "driver", "FAIL", "driver 575.57.08"),
        (lambda d: d["host"].update(driver_version=None), "driver", "UNKNOWN", "not readable"),
        (lambda d: d["container"].update(image="vllm/vllm-openai:kimi-k3-cu129"), "image", "FAIL", "guessed variant"),
        (lambda d: d["container"].update(image="vllm/vllm-openai:latest"), "image", "FAIL", "not the official"),
        (lambda d: d["versions"].update(torch_cuda="12.9", torch="2.8.0+cu129"), "image-cuda", "FAIL", "CUDA 12"),
        (lambda d: d["versions"].update(vllm="0.26.3"), "versions", "FAIL", "vllm 0.26.3 < 0.27"),
        (lambda d: d["host"].update(arch="aarch64"), "image-arch", "FAIL", "image is built for amd64, the host is aarch64"),
        (lambda d: d["container"].pop("architecture"), "image-arch", "UNKNOWN", "architecture not known"),
        (lambda d: d["container_gpus"].pop(), "container-gpus", "FAIL", "not visible"),
        (lambda d: d.update(container_gpus=None), "container-gpus", "UNKNOWN", "nvidia-smi -L inside"),
        (lambda d: d["gpus"].pop(), "gpus", "FAIL", "7 × NVIDIA GB300"),
        (lambda d: d.update(gpus=[]), "gpus", "UNKNOWN", "no GPU list"),
        (lambda d: d["gpus"][3].update(compute_cap="9.0"), "gpus", "FAIL", "compute capability ≥ 10.3 (seen 10.3, 9.0)"),
        (
            lambda d: d["libcuda"].update(path="/usr/local/cuda/compat/libcuda.so.575.57.08", version="575.57.08", compat=True),
            "libcuda", "FAIL", "Error 803",
        ),
        (lambda d: d.update(libcuda=None), "libcuda", "UNKNOWN", "has no libcuda mapped"),
        (lambda d: d.update(libcuda=None, process=None), "libcuda", "UNKNOWN", "no serving process"),
        (
            lambda d: (d["env"].update(LD_LIBRARY_PATH="/usr/local/cuda/compat:/usr/local/nvidia/lib64"), d["env_origin"].update(LD_LIBRARY_PATH="runtime")),
            "injected-env", "FAIL", "LD_LIBRARY_PATH adds /usr/local/cuda/compat [runtime]",
        ),
        (
            lambda d: (d["env"].update(NCCL_P2P_DISABLE="1"), d["env_origin"].update(NCCL_P2P_DISABLE="runtime")),
            "injected-env", "FAIL", "NCCL_P2P_DISABLE=1 [runtime]",
        ),
    ],
)  # fmt: skip
def test_each_check_fails_or_is_unknown_for_its_reason(edit, check, verdict, evidence) -> None:  # noqa: ANN001
    d = gb300()
    edit(d)
    v = verdicts(d)
    assert v[check][0] == verdict and evidence in v[check][1], v[check]
    others = {k for k, x in v.items() if k != check and x[0] != "PASS"}
    assert others <= COUPLED.get(check, set()), f"one edit moved unrelated checks too: {others}"


def test_exit_status_rules() -> None:
    d = gb300()
    d["container_gpus"] = None
    assert exit_status(check_baseline(scene_from_dict(d), K3)) == 2  # none failed, one unknown
    d["host"]["driver_version"] = "575.57.08"
    assert exit_status(check_baseline(scene_from_dict(d), K3)) == 1  # a fail wins over unknowns


def test_multi_node_counts_gpus_across_nodes_and_wants_one_driver_and_digest() -> None:
    a, b = gb300(4, "tray-a"), gb300(4, "tray-b")
    v = verdicts([a, b])
    assert v["gpus"][0] == "PASS" and "across 2 nodes" in v["gpus"][1]
    assert v["nodes-driver"][0] == "PASS" and v["nodes-image"][0] == "PASS"
    b2 = copy.deepcopy(b)
    b2["host"]["driver_version"] = "575.57.08"
    b2["container"]["repo_digests"] = ["vllm/vllm-openai@sha256:" + "1" * 64]
    v = verdicts([a, b2])
    assert v["nodes-driver"] == ("FAIL", "nodes differ: tray-a=580.159.04, tray-b=575.57.08")
    assert v["nodes-image"][0] == "FAIL" and v["driver"][0] == "FAIL" and "tray-b: driver 575.57.08" in v["driver"][1]
    assert verdicts([gb300(4, "solo")])["gpus"][0] == "FAIL"


def test_cpu_profile_leaves_gpu_checks_out() -> None:
    v = verdicts(h200(), load_profile("tiny-cpu"))
    assert set(v) == {"versions", "injected-env"}


def test_version_helpers() -> None:
    assert vtuple("0.32.0+cpu") == (0, 32, 0) and vtuple("580.159.04") == (580, 159, 4) and vtuple("nightly") is None
    assert at_least("0.27.0rc1", "0.27") and not at_least("0.26.9", "0.27") and at_least(None, "1") is None
    assert at_least("580.95.05", "580") and not at_least("575.57.08", "580")


def test_check_cli_on_saved_scenes_exit_codes(tmp_path: Path) -> None:
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(gb300()))
    unk = tmp_path / "unk.json"
    unk.write_text(json.dumps({**gb300(), "container_gpus": None}))

    def k3(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "k3tui.cli", *args], capture_output=True, text=True, timeout=60)

    assert k3("check", "-", "--scene", str(ok)).returncode == 0
    r = k3("check", "-", "--scene", str(unk))
    assert r.returncode == 2 and "UNKNOWN container-gpus" in r.stdout
    r = k3("check", "-", "--scene", str(H200))
    assert r.returncode == 1 and "FAIL    gpus" in r.stdout
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = k3("check", "-", "--scene", str(bad))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "neither a scene JSON nor a session file" in r.stderr


def test_check_local_records_verdicts(tmp_path: Path) -> None:
    rec = tmp_path / "c.k3rec"
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "check", "local", "--profile", "tiny-cpu", "--docker-socket", "", "--record", str(rec)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode in (0, 1, 2) and "against profile tiny-cpu" in r.stdout
    _, events = read_all(rec)
    kinds = [type(e).__name__ for e in events]
    assert "SceneFrozen" in kinds and kinds.count("CheckVerdict") == 2
    verdict_lines = [ln for ln in r.stdout.splitlines() if ln.startswith("  ")]
    worst = {ln.split()[0] for ln in verdict_lines}
    assert r.returncode == (1 if "FAIL" in worst else 2 if "UNKNOWN" in worst else 0)


def test_scene_round_trips_through_json() -> None:
    s = scene_from_dict(h200())
    assert isinstance(s, Scene) and scene_from_dict(json.loads(json.dumps(s.to_dict()))) == s


def test_libcuda_predicted_from_the_container_linker_when_no_process_runs(shared: Path) -> None:
    from k3tui.scene.parsers import parse_ldconfig

    compat = [{"lib": "libcuda.so.1", "arch": "libc6,x86-64", "path": "/usr/local/cuda/compat/libcuda.so.1"}]
    host_first = parse_ldconfig((shared / "fixtures" / "hosts" / "h200-r580" / "ldconfig_cuda.txt").read_text())
    d = gb300()
    d["libcuda"] = None
    d["env"]["LD_LIBRARY_PATH"] = "/usr/local/cuda/lib64"
    d["libraries"]["container_ldconfig"] = compat + host_first
    verdict, evidence = verdicts(d)["libcuda"]
    assert verdict == "FAIL" and "/usr/local/cuda/compat/libcuda.so.1" in evidence and "predicted" in evidence
    # the runtime's LD_LIBRARY_PATH puts the host driver's directory first: no shadowing
    d["env"]["LD_LIBRARY_PATH"] = "/usr/local/nvidia/lib64:/usr/local/nvidia/lib"
    assert verdicts(d)["libcuda"][0] == "UNKNOWN"
    # a real container linker cache (H200, driver 580): the host driver's libcuda, nothing to flag
    d["libraries"]["container_ldconfig"] = host_first
    d["env"].pop("LD_LIBRARY_PATH")
    assert verdicts(d)["libcuda"][0] == "UNKNOWN"


def test_per_node_evidence_names_each_host_once() -> None:
    """A multi-node check prefixes each node's evidence with its alias, unless the evidence already starts with it."""
    from k3tui.scene.checks import PASS, _per_node
    from k3tui.scene.model import Scene

    scenes = [Scene(alias="tray-a"), Scene(alias="tray-b")]
    said = {"tray-a": "tray-a GPU 3: Xid 79 at 03:12:44 — drain", "tray-b": "no fatal Xid"}
    verdict, text = _per_node(scenes, lambda s: (PASS, said[s.alias]))
    assert text == "tray-a GPU 3: Xid 79 at 03:12:44 — drain; tray-b: no fatal Xid", text

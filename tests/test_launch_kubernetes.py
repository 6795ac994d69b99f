"""The kubernetes launcher with the REAL kubectl, run over a REAL sshd on the node, against the
kubectl-facing API STAND-IN (tests/support/kubeapi.py: no API server can be installed here) and a
REAL containerd holding the pod's container: the freeze (pod as applied, owner chain, events,
restarts, the previous container's log), the CLI's freeze/check/ladder, and a ladder run pod that
is created, followed across a dropped API stream, and deleted — all through kubectl."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k3tui.ladder.config import apply_changes, diff
from k3tui.launch import Pick, get
from k3tui.launch import manifest as M
from k3tui.redact import MASK

pytestmark = [pytest.mark.docker]

NS, POD, UID = "vllm", "vllm-server-6d9c8f7b5d-k8s01", "4d1e2f3a-0b9c-4d8e-a7f6-5e4d3c2b1a09"
SECRET = "hf_PlantedKubeSecret5a4b3c2d1e"


@pytest.fixture
def cluster(kubeapi, shared: Path):  # noqa: ANN201 - (KubeApi, kubeconfig path on the node)
    prev = (shared / "corpus" / "vllm-cpu" / "10d-fail-load-format-fastsafetensors.log").read_text()
    cur = "\n".join((shared / "corpus" / "vllm-cpu" / "01-baseline-startup-only.log").read_text().splitlines()[:20])
    kubeapi.add_scenario(previous_log=prev, current_log=cur, rename=(POD, UID))
    d = tempfile.mkdtemp(prefix="k3-kube-", dir="/tmp")
    os.chmod(d, 0o755)
    return kubeapi, kubeapi.kubeconfig(Path(d) / "config")


@pytest.fixture(scope="module")
def node_container(containerd) -> str:
    """The pod's running container on this node (restart 4), with the toolkit's env and a planted secret."""
    env = {"LD_LIBRARY_PATH": "/usr/local/cuda/compat/lib:/usr/local/nvidia/lib64", "HF_TOKEN": SECRET}
    return containerd.run_pod_container(
        NS, POD, "vllm", UID, ["sh", "-c", "echo 'INFO vllm serve starting'; exec sleep 3600", "vllm", "serve"],
        env=env, restart=4,
    )  # fmt: skip


def _pick(kubeconfig: Path, containerd=None, **kw) -> Pick:  # noqa: ANN001
    sock = containerd.socket if containerd is not None else "/nonexistent/containerd.sock"
    root = containerd.log_root if containerd is not None else "/nonexistent"
    return Pick(pod=f"{NS}/{POD}", kubeconfig=str(kubeconfig), containerd_socket=sock, pod_log_root=root, **kw)


async def test_freeze_a_crash_looping_pod_through_kubectl_and_containerd(
    sshd, containerd, node_container, cluster
) -> None:
    from k3tui.remote.ssh import connect

    api, kc = cluster
    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        s = await get("kubernetes").freeze(host, _pick(kc, containerd))
    assert s.launcher == "kubernetes"
    p = s.pod
    assert (p["namespace"], p["name"], p["uid"], p["node"]) == (NS, POD, UID, "gb300-tray-07")
    assert p["owner"]["kind"] == "Deployment" and p["owner"]["name"] == "vllm-server"
    assert [o["kind"] for o in p["owner_chain"]] == ["ReplicaSet", "Deployment"]
    assert p["restarts"] == 4 and p["waiting"] == "CrashLoopBackOff" and p["last_termination"]["exitCode"] == 1
    assert p["resource_claims"][0]["resourceClaimTemplateName"] == "kimi-k3-compute-domain-channel"
    assert "managedFields" not in p["manifest"]["metadata"] and p["manifest"]["spec"]["nodeName"] == "gb300-tray-07"
    assert {"BackOff", "Unhealthy"} <= {e["reason"] for e in p["events"]}
    assert any(n.startswith("pod event BackOff") for n in s.notes)
    # the node's facts: the OCI spec's env and the image digest, from the real containerd
    assert s.container["id"] == node_container and s.container["repo_digests"][0].endswith(containerd.image_digest)
    assert s.env_origin["LD_LIBRARY_PATH"] == "runtime"
    # the first root is in the previous container's log, not in the one running now
    assert s.log_source == "previous container's log (kubectl logs --previous)"
    assert "fastsafetensors" in s.first_exception["line"] and s.first_exception["stage"] == "weights"
    assert ("GET", f"/api/v1/namespaces/{NS}/pods/{POD}/log?container=vllm&previous=true") in api.requests
    assert SECRET not in json.dumps(s.to_dict())


async def test_without_containerd_the_manifest_and_status_speak(sshd, cluster) -> None:
    from k3tui.remote.ssh import connect

    _, kc = cluster
    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        s = await get("kubernetes").freeze(host, _pick(kc))
        missing = await get("kubernetes").freeze(host, Pick(pod="vllm/gone-pod", kubeconfig=str(kc)))
    assert s.container["source"] == "pod manifest (kubectl)" and s.container["image"] == "vllm/vllm-openai:kimi-k3"
    assert s.container["digest"] == "sha256:4f6c4b0b1f0d2a9e5c3b7d8e6f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c"
    assert (
        s.env["LD_LIBRARY_PATH"].startswith("/usr/local/cuda/compat/lib")
        and s.env_origin["LD_LIBRARY_PATH"] == "manifest"
    )
    assert any(n.startswith("the pod runs on node gb300-tray-07, not on") for n in s.notes), s.notes
    assert s.process is None, "no local vLLM process is taken for a pod that runs elsewhere"
    assert s.env["HF_TOKEN"] == MASK  # a secretKeyRef: never its value, and the name is a secret name
    assert missing.pod is None and missing.host.kernel
    assert any("pod vllm/gone-pod not read through kubectl" in n and "NotFound" in n for n in missing.notes), (
        missing.notes
    )


def test_cli_freeze_check_and_a_ladder_run_pod_through_kubectl(
    sshd, containerd, node_container, cluster, shared, tmp_path
) -> None:
    api, kc = cluster
    common = [sshd.target, "-i", str(sshd.key_path), "--known-hosts", str(sshd.known_hosts), "--pod", f"{NS}/{POD}",
              "--kubeconfig", str(kc), "--containerd-socket", containerd.socket, "--pod-log-root", containerd.log_root]  # fmt: skip
    out = tmp_path / "scene.json"
    r = _k3tui("freeze", *common, "--json", str(out))
    assert r.returncode == 0, r.stderr
    scene = json.loads(out.read_text())
    assert scene["launcher"] == "kubernetes" and scene["pod"]["uid"] == UID and scene["pod"]["restarts"] == 4
    assert scene["container"]["repo_digests"][0].endswith(containerd.image_digest)
    assert scene["env"]["LD_LIBRARY_PATH"].startswith("/usr/local/cuda/compat/lib")
    assert "fastsafetensors" in scene["first_exception"]["line"]
    assert (
        f"launcher  kubernetes: pod {NS}/{POD} uid {UID} on gb300-tray-07, owner Deployment vllm-server, restarts 4"
        in r.stdout
    )
    api_only = _k3tui("freeze", *common[:-4], "--containerd-socket", "/nonexistent/c.sock")
    assert (
        api_only.returncode == 0
        and "image vllm/vllm-openai:kimi-k3 (docker.io/vllm/vllm-openai@sha256:4f6c" in api_only.stdout
    ), api_only.stdout[-2000:] + api_only.stderr
    chk = _k3tui("check", *common)
    line = next(ln for ln in chk.stdout.splitlines() if "injected-env" in ln)
    assert chk.returncode == 1 and line.split()[0] == "FAIL" and "/usr/local/cuda/compat/lib" in line
    # the ladder: one run pod with exactly the one change, followed, deleted
    api.run_log = (shared / "corpus" / "vllm-cpu" / "10d-fail-load-format-fastsafetensors.log").read_text()
    api.drop_follow_after = 40
    stale = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "k3tui-r1-dead00-minimal", "namespace": NS,
             "labels": {M.MANAGED_BY: "k3tui"}}, "spec": {}, "status": {"phase": "Running"}}  # fmt: skip
    api.add(stale)  # a run pod of a session that died before deleting it
    lad = _k3tui("ladder", *common, "--rung", "minimal", "--set", "env:LD_LIBRARY_PATH=unset", "--reason", "")
    assert len(api.created) == 1, lad.stdout[-3000:] + lad.stderr[-2000:]
    run = api.created[0]
    assert run["metadata"]["labels"][M.MANAGED_BY] == "k3tui" and run["spec"]["restartPolicy"] == "Never"
    frozen = M.applied(json.loads(json.dumps(scene["pod"]["manifest"])))
    env_names = [e["name"] for e in run["spec"]["containers"][0]["env"]]
    assert "LD_LIBRARY_PATH" not in env_names and "HF_TOKEN" in env_names  # the secretKeyRef stays a reference
    assert run["spec"]["nodeName"] == frozen["spec"]["nodeName"] and "ownerReferences" not in run["metadata"]
    assert (
        f"spec.containers[vllm].env[LD_LIBRARY_PATH]: {frozen['spec']['containers'][0]['env'][1]['value']} -> (none)"
        in lad.stdout
    )
    assert any(m == "DELETE" and p.endswith(run["metadata"]["name"]) for m, p in api.requests), lad.stdout[-3000:]
    assert f"/api/v1/namespaces/{NS}/pods/k3tui-r1-dead00-minimal" in api.deleted
    assert f"deleted run pods an earlier session left: {NS}/k3tui-r1-dead00-minimal" in lad.stdout
    follows = [p for m, p in api.requests if m == "GET" and "follow=true" in p]
    assert len(follows) >= 2 and "sinceTime=" in follows[1], follows  # the dropped stream was resumed
    assert "result: rung=minimal verdict=FAIL" in lad.stdout and "stage=weights" in lad.stdout, lad.stdout[-2000:]
    assert lad.stdout.count("ModuleNotFoundError: No module named 'fastsafetensors'") >= 1
    assert SECRET not in lad.stdout + r.stdout + out.read_text()


def _k3tui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "k3tui.cli", *args], capture_output=True, text=True, timeout=300)


# --- a run pod differs from the frozen one in exactly the variable that changed ------------------

_name = st.from_regex(r"[A-Z][A-Z0-9_]{0,12}", fullmatch=True)
_val = st.text(st.characters(min_codepoint=33, max_codepoint=126, blacklist_characters="<"), min_size=1, max_size=20)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_name, _val, max_size=6), _name, st.one_of(st.none(), _val))
def test_a_run_pod_changes_only_the_one_variable(env, key, value) -> None:  # noqa: ANN001
    from tests.support.kubeapi import load_objects

    kl = get("kubernetes", Pick(pod="vllm/x"))
    pod = load_objects()["pod"]
    pod["spec"]["containers"][0]["env"] = [{"name": k, "value": v} for k, v in env.items()]
    kl.frozen = pod
    base = kl.start_config()
    changed = apply_changes(base, {f"env:{key}": value})
    same, new = kl.run_manifest(base, "r1"), kl.run_manifest(changed, "r1")
    fields = {d["key"] for d in M.diff(same, new)}
    want = {f"spec.containers[vllm].env[{key}]"} if diff(base, changed) else set()
    assert fields == want
    identity = {d["key"] for d in M.diff(M.applied(pod), same) if not d["key"].startswith("metadata.ownerReferences[")}
    assert identity <= {
        "metadata.name", "metadata.generateName", "metadata.uid", "metadata.resourceVersion", "metadata.creationTimestamp",
        "metadata.ownerReferences", "metadata.labels.pod-template-hash", f"metadata.labels.{M.MANAGED_BY}",
        f"metadata.labels.{M.RUN_LABEL}", "spec.restartPolicy",
    }  # fmt: skip


def _scene_with(pod: dict) -> dict:  # noqa: ANN001
    from k3tui.scene.model import Scene

    return dict(Scene(alias="gb300-tray-07", launcher="kubernetes").to_dict(), pod={"manifest": M.applied(pod)})


def test_diff_compares_two_manifests_field_by_field(tmp_path: Path) -> None:
    from tests.support.kubeapi import load_objects

    a, b, c = load_objects()["pod"], load_objects()["pod"], load_objects()["pod"]
    b["spec"]["containers"][0]["args"][-1] = "8001"  # one field
    b["metadata"]["uid"], b["metadata"]["name"] = "another-uid", "vllm-server-6d9c8f7b5d-zzzzz"  # identity: no variable
    c["spec"]["containers"][0]["args"][-1] = "8001"
    c["spec"]["runtimeClassName"] = "runc"  # and a second field
    paths = []
    for name, pod in (("a", a), ("b", b), ("c", c)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(_scene_with(pod)))
    one = _k3tui("diff", str(paths[0]), str(paths[1]))
    assert "[manifest]" in one.stdout and "spec.containers[vllm].args" in one.stdout, one.stdout + one.stderr
    assert "one variable changed: manifest spec.containers[vllm].args" in one.stdout and "uid" not in one.stdout
    two = _k3tui("diff", str(paths[0]), str(paths[2]))
    assert "MORE THAN ONE VARIABLE CHANGED (2:" in two.stdout and "spec.runtimeClassName" in two.stdout, two.stdout


@settings(max_examples=100, deadline=None)
@given(st.permutations(range(3)), st.permutations(range(2)))
def test_reordered_named_lists_are_no_change(env_order, volume_order) -> None:  # noqa: ANN001
    from tests.support.kubeapi import load_objects

    a, b = load_objects()["pod"], load_objects()["pod"]
    env, vols = b["spec"]["containers"][0]["env"], b["spec"]["volumes"]
    b["spec"]["containers"][0]["env"] = [env[i] for i in env_order]
    b["spec"]["volumes"] = [vols[i] for i in volume_order]
    assert M.diff(M.applied(a), M.applied(b)) == []


async def test_a_leaderworkerset_pod_is_frozen_with_its_group(sshd, kubeapi, shared: Path) -> None:
    """Multi-node: the leader pod of a LeaderWorkerSet group, its owner chain and every member's tray."""
    from k3tui.remote.ssh import connect

    prev = (shared / "corpus" / "vllm-cpu" / "10d-fail-load-format-fastsafetensors.log").read_text()
    kubeapi.add_scenario("vllm-lws", previous_log=prev)
    d = tempfile.mkdtemp(prefix="k3-kube-", dir="/tmp")
    os.chmod(d, 0o755)
    kc = kubeapi.kubeconfig(Path(d) / "config")
    async with connect(sshd.target, **sshd.connect_kwargs()) as host:
        pick = Pick(pod="vllm/vllm-0", kubeconfig=str(kc), containerd_socket="/nonexistent/c.sock")
        s = await get("kubernetes", pick).freeze(host, pick)
    p = s.pod
    assert [(o["kind"], o["name"]) for o in p["owner_chain"]] == [("StatefulSet", "vllm"), ("LeaderWorkerSet", "vllm")]
    g = p["group"]
    assert (g["kind"], g["name"], g["size"]) == ("LeaderWorkerSet", "vllm", "2")
    assert [(m["name"], m["node"], m["worker_index"]) for m in g["members"]] == [
        ("vllm-0", "gb300-tray-07", "0"),
        ("vllm-0-1", "gb300-tray-08", "1"),
    ]
    assert any(
        n.startswith("group member vllm-0 on gb300-tray-07: Running, restarts 4, CrashLoopBackOff") for n in s.notes
    )
    assert "fastsafetensors" in s.first_exception["line"]


def test_kube_context_selects_the_server_of_that_context_and_a_wrong_name_is_one_line(sshd, kubeapi) -> None:  # noqa: ANN001
    """Two contexts, two (stand-in) API servers: ``--kube-context`` reaches the one it names, on the target's kubectl."""
    from tests.support.kubeapi import KubeApi, kubeconfig_of

    other = KubeApi()
    other.start()
    try:
        kubeapi.add_scenario(rename=(POD, UID))
        other_uid = "9e8d7c6b-5a49-4382-b1a0-f9e8d7c6b5a4"
        other.add_scenario(rename=(POD, other_uid))
        d = tempfile.mkdtemp(prefix="k3-kube-", dir="/tmp")
        os.chmod(d, 0o755)
        kc = kubeconfig_of(Path(d) / "config", {"gb300": kubeapi, "gb300-b": other}, current="gb300")
        common = [sshd.target, "-i", str(sshd.key_path), "--known-hosts", str(sshd.known_hosts), "--pod", f"{NS}/{POD}",
                  "--kubeconfig", str(kc), "--containerd-socket", "/nonexistent/c.sock"]  # fmt: skip
        out = Path(d) / "scene.json"
        picked = _k3tui("freeze", *common, "--kube-context", "gb300-b", "--json", str(out))
        assert picked.returncode == 0, picked.stderr
        assert json.loads(out.read_text())["pod"]["uid"] == other_uid
        pod_path = f"/api/v1/namespaces/{NS}/pods/{POD}"
        assert ("GET", pod_path) in other.requests and ("GET", pod_path) not in kubeapi.requests
        default = _k3tui("freeze", *common, "--json", str(out))  # no --kube-context: the current context's server
        assert default.returncode == 0 and json.loads(out.read_text())["pod"]["uid"] == UID, default.stderr
        wrong = _k3tui("freeze", *common, "--kube-context", "gb300-c")
        assert wrong.returncode == 2 and len(wrong.stderr.strip().splitlines()) == 1, (
            wrong.stdout[-1000:] + wrong.stderr
        )
        assert f"--kube-context 'gb300-c': no such context in {kc}" in wrong.stderr
        assert "(it has: gb300, gb300-b)" in wrong.stderr
        n = len(other.requests)
        lad = _k3tui("ladder", *common, "--kube-context", "gb300-x", "--rung", "minimal")
        assert lad.returncode == 2 and "--kube-context 'gb300-x'" in lad.stderr and len(other.requests) == n
    finally:
        other.stop()


def test_cli_ladder_of_a_leaderworkerset_group_runs_every_member_as_a_node(
    sshd, containerd, kubeapi, shared, tmp_path
) -> None:  # noqa: ANN001, E501
    """A pod of a LeaderWorkerSet group ladders as its group: one run pod per member from its frozen manifest, the
    same one change in each (each diff shown first), the worker pointed at the run leader, every member's log
    followed as its node's (head = the leader's tray), the failure named on the worker's tray, every pod deleted."""
    from k3tui.reader import read_all

    corpus = shared / "corpus" / "vllm-cpu"
    objs = kubeapi.add_scenario(
        "vllm-lws", previous_log=(corpus / "10d-fail-load-format-fastsafetensors.log").read_text()
    )
    leader_uid = objs["pod"]["metadata"]["uid"]
    cid = containerd.run_pod_container(
        NS, "vllm-0", "vllm", leader_uid, ["sh", "-c", "echo 'INFO vllm serve starting'; exec sleep 3600", "vllm", "serve"],
        env={"LD_LIBRARY_PATH": "/usr/local/cuda/compat/lib:/usr/local/nvidia/lib64", "HF_TOKEN": SECRET},
    )  # fmt: skip
    d = tempfile.mkdtemp(prefix="k3-kube-", dir="/tmp")
    os.chmod(d, 0o755)
    kc = kubeapi.kubeconfig(Path(d) / "config")
    # the members' logs: the leader starts and waits; the worker on the other tray dies loading weights
    kubeapi.run_logs = {
        "gb300-tray-07": "\n".join((corpus / "01-baseline-startup-only.log").read_text().splitlines()[:25]),
        "gb300-tray-08": (corpus / "10d-fail-load-format-fastsafetensors.log").read_text(),
    }
    stale = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "k3tui-r1-dead00-minimal-w1", "namespace": NS,
             "labels": {M.MANAGED_BY: "k3tui"}}, "spec": {}, "status": {"phase": "Running"}}  # fmt: skip
    kubeapi.add(stale)
    rec = tmp_path / "group.k3rec"
    common = [sshd.target, "-i", str(sshd.key_path), "--known-hosts", str(sshd.known_hosts), "--pod", f"{NS}/vllm-0",
              "--kubeconfig", str(kc), "--containerd-socket", containerd.socket, "--pod-log-root", containerd.log_root]  # fmt: skip
    try:
        lad = _k3tui("ladder", *common, "--rung", "minimal", "--set", "env:NCCL_DEBUG=WARN", "--record", str(rec))
    finally:  # the session's containerd is shared: no second serving container left for other modules
        containerd.ctr("tasks", "kill", "-s", "KILL", cid, check=False)
    out = lad.stdout + lad.stderr
    assert len(kubeapi.created) == 2, out[-4000:]
    leader, worker = kubeapi.created
    run = leader["metadata"]["labels"][M.RUN_LABEL]
    assert (leader["metadata"]["name"], worker["metadata"]["name"]) == (f"k3tui-{run}", f"k3tui-{run}-w1")
    assert (leader["spec"]["nodeName"], worker["spec"]["nodeName"]) == ("gb300-tray-07", "gb300-tray-08")
    for pod, role in ((leader, "leader"), (worker, "worker")):
        labels = pod["metadata"]["labels"]
        assert labels[M.MANAGED_BY] == "k3tui" and labels["k3tui.io/group"] == run and labels["k3tui.io/role"] == role
        assert "leaderworkerset.sigs.k8s.io/name" not in labels and "ownerReferences" not in pod["metadata"]
        assert pod["spec"]["restartPolicy"] == "Never"
        env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
        assert env["NCCL_DEBUG"]["value"] == "WARN", "the one change, identically in every member"
        assert "valueFrom" in env["HF_TOKEN"] and "valueFrom" in env["LWS_WORKER_INDEX"]
    lenv = {e["name"]: e for e in leader["spec"]["containers"][0]["env"]}
    wenv = {e["name"]: e for e in worker["spec"]["containers"][0]["env"]}
    assert lenv["LWS_LEADER_ADDRESS"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert wenv["LWS_LEADER_ADDRESS"]["value"] == "127.0.0.1", "the worker is pointed at the run leader's pod IP"
    # every member's diff was shown before its pod was applied
    assert f"pod {NS}/k3tui-{run} (head, from vllm-0 on gb300-tray-07)" in lad.stdout, lad.stdout[-3000:]
    assert f"pod {NS}/k3tui-{run}-w1 (worker, from vllm-0-1 on gb300-tray-08)" in lad.stdout
    assert lad.stdout.count("spec.containers[vllm].env[NCCL_DEBUG]: INFO -> WARN") == 2
    assert f"spec.containers[vllm].env[LWS_LEADER_ADDRESS]: vllm-0.vllm.vllm -> <pod IP of k3tui-{run}>" in lad.stdout
    # every member's log followed; the worker's root names its tray; every pod of the group deleted, the leftover too
    follows = {p.split("/pods/")[1].split("/")[0] for m, p in kubeapi.requests if m == "GET" and "follow=true" in p}
    assert follows == {f"k3tui-{run}", f"k3tui-{run}-w1"}, follows
    assert "result: rung=minimal verdict=FAIL" in lad.stdout and "stage=weights" in lad.stdout, out[-3000:]
    assert "failed on node gb300-tray-08 at stage weights" in lad.stdout, lad.stdout[-3000:]
    assert {
        f"/api/v1/namespaces/{NS}/pods/{n}" for n in (f"k3tui-{run}", f"k3tui-{run}-w1", stale["metadata"]["name"])
    } <= set(kubeapi.deleted)  # noqa: E501
    assert f"/api/v1/namespaces/{NS}/pods/vllm-0" not in kubeapi.deleted, "the frozen group is never touched"
    _, events = read_all(rec)
    from k3tui import events as ev

    roles = {e.host: e.role for e in events if isinstance(e, ev.HostConnected) and e.role}
    assert roles == {"gb300-tray-07": "head", "gb300-tray-08": "worker"}, roles
    found = [e for e in events if isinstance(e, ev.ExceptionFound)]
    assert found and found[0].host == "gb300-tray-08" and "fastsafetensors" in found[0].line
    created = {e.host: e.message for e in events if isinstance(e, ev.Notice) and " created (" in e.message}
    assert created == {
        "gb300-tray-07": f"run {run}: pod {NS}/k3tui-{run} created (head of run {run}, from vllm-0 on node gb300-tray-07)",
        "gb300-tray-08": f"run {run}-w1: pod {NS}/k3tui-{run}-w1 created (worker of run {run}, from vllm-0-1 on node "
        "gb300-tray-08)",
    }
    # each member's log is recorded under its run, and classified as its node's
    logged = {e.id for e in events if isinstance(e, ev.Output) and e.stream == "log"}
    assert {run, f"{run}-w1"} <= logged, logged
    classified = {(e.host, e.run, e.failed_stage) for e in events if isinstance(e, ev.RunClassified)}
    assert ("gb300-tray-08", f"{run}-w1", "weights") in classified and any(
        h == "gb300-tray-07" and r == run for h, r, _ in classified
    ), classified
    assert "checklist missing One variable per change" not in lad.stdout or "logs missing" not in lad.stdout
    assert SECRET not in lad.stdout and SECRET not in rec.read_bytes().decode(errors="replace")

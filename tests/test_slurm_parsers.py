"""Slurm's text formats and the batch-script rewrite, as classes of inputs (hypothesis).

The real outputs these parsers read are exercised in tests/test_slurm.py against the real
daemons; here every shape is generated: free-text values with spaces and ``=``, host lists
with ranges and zero padding, GRES strings, scripts with continuation lines and exports,
and one-variable changes whose script diff must touch exactly the server line.
"""

from __future__ import annotations

import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from k3tui.launch.slurm import environ_map, requeue_findings, serving_pid
from k3tui.scene.parsers import slurm as S

_word = st.text(
    st.characters(whitelist_categories=("Ll", "Lu", "Nd"), whitelist_characters="_-./:"), min_size=1, max_size=12
)
_free = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\n\r"), max_size=60).map(
    str.strip
)
_key = st.from_regex(r"[A-Z][A-Za-z]{1,10}", fullmatch=True).filter(lambda k: k not in S.FREE_TEXT_KEYS)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_key, _word), min_size=1, max_size=6, unique_by=lambda kv: kv[0]),
    st.sampled_from(sorted(S.FREE_TEXT_KEYS)),
    _free,
)
def test_a_line_keeps_every_value_and_a_free_text_value_whole(pairs, free_key, free_value) -> None:  # noqa: ANN001
    """``K=V K=V … Comment=any text, even a=b`` → every pair, the free text exactly as printed."""
    line = " ".join(f"{k}={v}" for k, v in pairs) + f" {free_key}={free_value}"
    got = S.parse_kv_line(line)
    assert got == [*pairs, (free_key, free_value)]


@settings(max_examples=200, deadline=None)
@given(_free, _free, st.integers(0, 255), st.integers(0, 64))
def test_a_job_record_round_trips_through_scontrols_layout(name, comment, status, signal) -> None:  # noqa: ANN001
    text = (
        f"JobId=42 JobName={name}\n   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)\n"
        f"   Requeue=1 Restarts=3 BatchFlag=1 Reboot=0 ExitCode={status}:{signal}\n   NodeList=gpu-[01-02]\n"
        f"   JOB_GRES=gpu:h200:8\n     Nodes=gpu-[01-02] CPU_IDs=0-15 Mem=0 GRES=gpu:h200:8(IDX:0-7)\n"
        f"   Command=/s/run.sh --port=8000 a b\n   WorkDir=/scratch/my runs\n   Comment={comment}\n"
    )
    job = S.parse_jobs(text + "\n" + text.replace("JobId=42", "JobId=43"))[0]
    assert job["JobName"] == name and job["Comment"] == comment and job["Command"] == "/s/run.sh --port=8000 a b"
    assert job["WorkDir"] == "/scratch/my runs" and S.exit_code(job["ExitCode"]) == (status, signal)
    assert S.gres_binding(job) == [
        {
            "node": n,
            "gres": [{"name": "gpu", "type": "h200", "count": 8, "idx": list(range(8))}],
            "cpu_ids": "0-15",
            "mem": "0",
        }
        for n in ("gpu-01", "gpu-02")
    ]


def test_an_error_instead_of_a_record_is_one_line() -> None:
    try:
        S.parse_jobs("slurm_load_jobs error: Invalid job id specified\n")
    except S.ParseError as exc:
        assert "Invalid job id" in str(exc) and "\n" not in str(exc)
    else:
        raise AssertionError("no ParseError")


_host = st.tuples(
    st.from_regex(r"[a-z][a-z-]{0,6}", fullmatch=True),
    st.integers(0, 3),
    st.lists(st.integers(0, 300), min_size=1, max_size=6),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_host, min_size=1, max_size=4))
def test_host_lists_expand_to_every_name_with_padding(groups) -> None:  # noqa: ANN001
    parts, want = [], []
    for prefix, width, nums in groups:
        nums = sorted(set(nums))
        spans, names = [], []
        for n in nums:
            spans.append(f"{n:0{width}d}")
            names.append(f"{prefix}{n:0{width}d}")
        parts.append(f"{prefix}[{','.join(spans)}]")
        want += names
    assert S.expand_hostlist(",".join(parts)) == want


def test_host_list_ranges_and_bad_ones() -> None:
    assert S.expand_hostlist("n[1-3,7]") == ["n1", "n2", "n3", "n7"]
    assert S.expand_hostlist("gb300-[008-010]") == ["gb300-008", "gb300-009", "gb300-010"]
    assert S.expand_hostlist("(null)") == []
    for bad in ("n[1-3", "n[3-1]", "n[a-b]"):
        try:
            S.expand_hostlist(bad)
        except S.ParseError:
            continue
        raise AssertionError(bad)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["gpu", "nic", "mps", "shard"]),
            st.one_of(st.none(), st.sampled_from(["h200", "gb300", "a100_80g"])),
            st.integers(1, 8),
            st.booleans(),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_gres_strings(items) -> None:  # noqa: ANN001
    text = ",".join(f"{n}{':' + t if t else ''}:{c}" + (f"(IDX:0-{c - 1})" if idx else "") for n, t, c, idx in items)
    assert S.parse_gres(text) == [
        {"name": n, "type": t, "count": c, "idx": list(range(c)) if idx else None} for n, t, c, idx in items
    ]


def test_listpids_sacct_and_jobcomp_formats() -> None:
    pids = S.parse_listpids(
        "PID      JOBID    STEPID   LOCALID GLOBALID\n18330    1        0        0       0\n18269    1        batch    -       -\n"
    )
    assert pids == [{"pid": 18330, "job": "1", "step": "0", "local_id": 0, "global_id": 0},
                    {"pid": 18269, "job": "1", "step": "batch", "local_id": None, "global_id": None}]  # fmt: skip
    rows = S.parse_sacct(
        "7|kimi|FAILED|1:0|2026-12-01T22:00:00|2026-12-01T22:01:00|n1\n7|kimi|REQUEUED|0:0|a|b|n[1-2]\n",
        S.SACCT_FIELDS[:7],
    )
    assert [r["State"] for r in rows] == ["FAILED", "REQUEUED"] and rows[1]["NodeList"] == "n[1-2]"
    comp = S.parse_jobcomp(
        "JobId=1 UserId=k(1) GroupId=k(1) Name=my job JobState=FAILED Partition=gpu WorkDir=/a b ExitCode=3:0 \n"
    )
    assert comp == [{"JobId": "1", "UserId": "k(1)", "GroupId": "k(1)", "Name": "my job", "JobState": "FAILED",
                     "Partition": "gpu", "WorkDir": "/a b", "ExitCode": "3:0"}]  # fmt: skip


def test_container_flags_pyxis_and_apptainer() -> None:
    digest = "sha256:" + "ab" * 32
    pyxis = f"#!/bin/bash\n#SBATCH --container-image=nvcr.io#nvidia/vllm@{digest}\n#SBATCH --container-mounts=/models:/models,/scratch:/s\nsrun vllm serve /models/k3\n"
    got = S.container_flags(pyxis)
    assert got["kind"] == "pyxis" and got["digest"] == digest and got["mounts"] == ["/models:/models", "/scratch:/s"]
    srun = "#!/bin/bash\nsrun --container-image=vllm/vllm-openai:v0.9 \\\n  --container-mounts=/m:/m vllm serve /m\n"
    got = S.container_flags(srun)
    assert got["image"] == "vllm/vllm-openai:v0.9" and got["mounts"] == ["/m:/m"] and got["digest"] is None
    app = "#!/bin/bash\nsrun apptainer exec --nv -B /models:/models,/x:/y /images/vllm.sif vllm serve /models/k3\n"
    got = S.container_flags(app)
    assert (
        got["kind"] == "apptainer"
        and got["image"] == "/images/vllm.sif"
        and got["mounts"] == ["/models:/models", "/x:/y"]
    )
    assert S.container_flags("#!/bin/bash\nvllm serve m\n") is None


def test_sbatch_reads_directives_only_before_the_first_command() -> None:
    script = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --gres=gpu:4 # four\n\necho hi\n#SBATCH --time=1\n"
    assert S.sbatch_directives(script) == [("-N", "2"), ("--gres", "gpu:4")]


# --- the ladder's script rewrite ------------------------------------------------------------------

_SCRIPT = """#!/bin/bash
#SBATCH --job-name=kimi
#SBATCH --nodes=1
module load cuda/12.8
export VLLM_LOGGING_LEVEL=INFO
export HF_HOME=/scratch/hf
cd /work
srun --container-image=nvcr.io#nvidia/vllm:25.10 --container-mounts=/models:/models \\
  vllm serve /models/kimi-k3 --port 8000 --max-model-len {mml} \\
  --tensor-parallel-size 8 {flag}--trust-remote-code 2>&1 | tee /scratch/log-$SLURM_JOB_ID.txt
echo done
"""


def _launcher(script: str):  # noqa: ANN202
    from k3tui.launch.slurm import JobFacts, SlurmLauncher

    launcher = SlurmLauncher()
    launcher.frozen = JobFacts(job={"JobId": "9", "JobName": "kimi", "WorkDir": "/work"}, script=script)
    return launcher


@settings(max_examples=40, deadline=None)
@given(
    st.integers(256, 1 << 20), st.integers(256, 1 << 20), st.booleans(),
    st.sampled_from(["max_model_len", "env:NCCL_DEBUG", "env:VLLM_LOGGING_LEVEL", "flag:enforce-eager", "flag:enable-prefix-caching", "tensor_parallel_size"]),
)  # fmt: skip
def test_one_change_touches_exactly_its_line(mml, new_mml, prefix_on, key) -> None:  # noqa: ANN001
    """Whatever the variable, the run's script differs from the frozen one only where that variable lives."""
    from k3tui.ladder.config import apply_changes, diff

    script = _SCRIPT.format(mml=mml, flag="--enable-prefix-caching " if prefix_on else "")
    launcher = _launcher(script)
    start = launcher.start_config()
    assert launcher.run_script(start) == script  # no change: the script itself, byte for byte
    value = {"max_model_len": new_mml, "tensor_parallel_size": 4, "env:NCCL_DEBUG": "TRACE", "env:VLLM_LOGGING_LEVEL": "DEBUG",
             "flag:enforce-eager": True, "flag:enable-prefix-caching": not prefix_on}[key]  # fmt: skip
    cfg = apply_changes(start, {key: value})
    new = launcher.run_script(cfg)
    if not diff(start, cfg):
        assert new == script
        return
    old_lines, new_lines = script.split("\n"), new.split("\n")
    changed_old = [ln for ln in old_lines if ln not in new_lines]
    changed_new = [ln for ln in new_lines if ln not in old_lines]
    assert len(changed_new) == 1 and len(changed_old) <= 1, (changed_old, changed_new)
    if key.startswith("env:"):
        assert (
            changed_new[0].startswith(f"export {key[4:]}=") and shlex.split(changed_new[0])[1] == f"{key[4:]}={value}"
        )
    else:
        assert changed_old and "--container-image=nvcr.io#nvidia/vllm:25.10" not in changed_new[0] + changed_old[0]
        assert "| tee" in new and new.count("srun --container-image") == 1
    again = _launcher(new)
    assert diff(again.start_config(), cfg) == []  # the rewritten script parses back to the run's config


def test_resources_given_outside_the_script_are_given_again() -> None:
    from k3tui.launch.slurm import outside_options

    job = {"Partition": "gb300", "NumNodes": "2", "TresPerNode": "gres:gpu:gb300:4", "TimeLimit": "04:00:00"}
    assert outside_options(job, []) == ["--partition=gb300", "--nodes=2", "--gres=gpu:gb300:4", "--time=04:00:00"]
    asked = S.sbatch_directives(
        "#!/bin/bash\n#SBATCH -p gb300\n#SBATCH --nodes=2\n#SBATCH --gres=gpu:gb300:4\n#SBATCH -t 4:00:00\n"
    )
    assert outside_options(job, asked) == []
    assert outside_options({"NumNodes": "1", "TimeLimit": "UNLIMITED", "Partition": "(null)"}, []) == []


def test_a_script_without_a_server_line_is_one_clear_error() -> None:
    from k3tui.errors import UsageError

    try:
        _launcher("#!/bin/bash\nsrun python train.py\n").start_config()
    except UsageError as exc:
        assert "no 'vllm serve'" in str(exc)
    else:
        raise AssertionError("no UsageError")


# --- the step, its env, the requeue loop ----------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.from_regex(r"[A-Z_][A-Z0-9_]{0,15}", fullmatch=True), _free.filter(lambda v: "\n" not in v), max_size=12
    )
)
def test_environ_round_trips(env) -> None:  # noqa: ANN001
    assert environ_map("\n".join(f"{k}={v}" for k, v in env.items())) == env


def test_the_serving_pid_is_the_vllm_task_else_the_latest_step() -> None:
    steps = [
        {"pid": 10, "step": "batch", "local_id": 0, "cmdline": "/bin/bash slurm_script"},
        {"pid": 11, "step": "batch", "local_id": None, "cmdline": "srun vllm serve m"},
        {"pid": 20, "step": "0", "local_id": 0, "cmdline": "python3 /x/vllm serve m"},
    ]
    assert serving_pid(steps) == 20
    assert serving_pid([{**s, "cmdline": "sleep"} for s in steps]) == 20
    assert serving_pid(steps[:2]) == 11 and serving_pid([]) is None


def test_requeue_loop_threshold() -> None:
    job = {"JobId": "5", "JobName": "k", "Restarts": "0"}
    one = [{"id": "5", "state": "FAILED", "exit_code": 1}]
    assert requeue_findings(job, one) == []
    assert requeue_findings(job, one * 2)[0].startswith("requeue loop: job 5 (k) restarted 0 time(s); 2 failed")
    assert requeue_findings({**job, "Restarts": "4"}, [])[0].startswith("requeue loop: job 5 (k) restarted 4")
    assert requeue_findings(job, [{"id": "5", "state": "COMPLETED", "exit_code": 0}] * 5) == []

"""Profiles are data: the shipped ones encode their boundary; a broken one is one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from k3tui.errors import ProfileError
from k3tui.profile import available_profiles, load_profile


def test_shipped_profiles_load() -> None:
    assert {"kimi-k3", "tiny-cpu"} <= set(available_profiles())


def test_kimi_k3_is_the_official_boundary(shared: Path) -> None:
    p = load_profile("kimi-k3")
    recipe = " ".join((shared / "recipes" / "kimi-k3-official.md").read_text().split())
    assert p.image.reference == "vllm/vllm-openai:kimi-k3" and p.image.reference in recipe
    assert p.image.cuda_major == 13 and p.driver.min_version == "580" and p.versions.vllm_min == "0.27"
    assert (p.gpus.model, p.gpus.min_count, p.gpus.required) == ("GB300", 8, True)
    quick = "vllm serve moonshotai/Kimi-K3 --tensor-parallel-size 8 --trust-remote-code --load-format fastsafetensors"
    assert quick in recipe and " ".join(p.launch.minimal).startswith(quick + " --no-enable-prefix-caching")
    assert [f.name for f in p.features] == ["prefix-caching", "context-length", "concurrency"]
    assert p.feature("prefix-caching").args == ["--enable-prefix-caching"]
    assert p.feature("prefix-caching").remove_args == ["--no-enable-prefix-caching"]
    toggles = {t.name: t for t in p.debug_toggles}
    assert {tuple(t.env.items())[0] for t in toggles.values()} == {
        ("VLLM_LOGGING_LEVEL", "DEBUG"), ("CUDA_LAUNCH_BLOCKING", "1"), ("NCCL_DEBUG", "TRACE"), ("VLLM_TRACE_FUNCTION", "1"),
    }  # fmt: skip
    assert toggles["vllm-trace-function"].warning and not toggles["nccl-debug"].warning
    assert p.request.file == "baseline.json"


def test_tiny_cpu_profile() -> None:
    p = load_profile("tiny-cpu")
    assert not p.gpus.required and p.image.reference == "" and not p.launch.in_container
    argv = p.launch.minimal
    assert argv[:3] == ["vllm", "serve", "{model_path}"] and "{port}" in argv and "--enforce-eager" in argv
    assert (
        argv[argv.index("--served-model-name") + 1] == "moonshotai/Kimi-K3"
        and argv[argv.index("--max-model-len") + 1] == "1024"
    )
    assert p.launch.env["VLLM_CPU_KVCACHE_SPACE"] == "1" and p.launch.env["VLLM_HOST_IP"] == "127.0.0.1"


BASE = 'name = "x"\n[launch]\nminimal = ["vllm", "serve", "m"]\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BASE + "[image]\nreferense = 'typo'\n", "unknown field `referense`"),
        (BASE + "[gpus]\nmin_count = 'eight'\n", "Expected `int`"),
        ('name = "x"\n', "missing required field `launch`"),
        ('name = "x"\n[launch]\nminimal = []\n', "launch.minimal is empty"),
        ("name = \n", "not valid TOML"),
        (BASE + "[[features]]\ntitle = 'no name'\n", "missing required field `name`"),
    ],
)
def test_invalid_profile_is_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ProfileError, match=message.replace("`", ".").replace("(", r"\(")) as e:
        load_profile(str(f))
    assert str(f) in str(e.value) and "\n" not in str(e.value).strip()


def test_missing_profile_lists_the_shipped_ones() -> None:
    with pytest.raises(ProfileError, match="kimi-k3.*tiny-cpu|tiny-cpu.*kimi-k3"):
        load_profile("no-such-model")
    with pytest.raises(ProfileError, match="no feature 'nope'"):
        load_profile("kimi-k3").feature("nope")


def test_a_new_model_is_a_new_file(tmp_path: Path) -> None:
    f = tmp_path / "next-model.toml"
    f.write_text(BASE.replace('"x"', '"next"') + '[gpus]\nmodel = "B300"\nmin_count = 4\n')
    p = load_profile(str(f))
    assert (p.name, p.gpus.model, p.gpus.min_count, p.path) == ("next", "B300", 4, str(f))


def test_the_multinode_launch_shape_is_data() -> None:
    for name in ("kimi-k3", "tiny-cpu"):
        m = load_profile(name).launch.multinode
        assert m.mode == "vllm" and (m.master_port, m.ray_port) == (29501, 6379)
        assert "--headless" in m.vllm.worker_args and "--headless" not in m.vllm.head_args
        assert m.ray.head[:3] == ["ray", "start", "--head"] and "{head_addr}:{ray_port}" in m.ray.worker
        assert m.ray.serve_args == ["--distributed-executor-backend", "ray"] and m.ray.status[:2] == ["ray", "status"]
        assert m.ray.docker_args == ["-v", "/tmp/ray:/tmp/ray"]
    assert load_profile("kimi-k3").launch.multinode.cluster_timeout_s == 600


MULTI = BASE + "[launch.multinode]\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (MULTI + "rya_port = 6379\n", "unknown field `rya_port`"),
        (MULTI + "mode = 'rya'\n", "Invalid enum value 'rya' - at `$.launch.multinode.mode`"),
        (MULTI + "ray_port = 70000\n", "launch.multinode.ray_port 70000 out of range"),
        (MULTI + "[launch.multinode.vllm]\nworker_args = ['--node-rank', '{rnak}']\n", "unknown placeholder {rnak}"),
        (
            MULTI + "[launch.multinode.ray]\nhead = ['ray', 'start', '--port', '{ray_port']\n",
            "launch.multinode.ray.head",
        ),
        (MULTI + "[launch.multinode.ray]\nstatuz = ['ray', 'status']\n", "unknown field `statuz`"),
        (MULTI + "mode = 'ray'\n[launch.multinode.ray]\nstatus = []\n", "head, worker and status commands are needed"),
    ],
)
def test_invalid_multinode_section_is_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ProfileError) as e:
        load_profile(str(f))
    assert message in str(e.value) and str(f) in str(e.value) and "\n" not in str(e.value).strip()


def test_a_ray_profile_loads(tmp_path: Path) -> None:
    f = tmp_path / "ray.toml"
    f.write_text(MULTI + "mode = 'ray'\nray_port = 6380\ncluster_timeout_s = 5\n")
    m = load_profile(str(f)).launch.multinode
    assert (m.mode, m.ray_port, m.cluster_timeout_s) == ("ray", 6380, 5.0)


@pytest.mark.parametrize("what", ["profile", "inventory"])
def test_profiles_and_inventories_report_file_errors_alike(tmp_path: Path, what: str) -> None:
    from k3tui.fleet.inventory import load_inventory

    load = load_profile if what == "profile" else load_inventory
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    folder = tmp_path / "dir.toml"
    folder.mkdir()
    for path, message in ((bad, "not valid TOML"), (folder, "cannot read")):
        with pytest.raises(ProfileError) as e:
            load(str(path))
        assert str(e.value).startswith(f"{what} {path}: {message}") and "\n" not in str(e.value)

"""Launch-parser and diff behaviours a mutation run found unpinned (issue 22).

Each test is a class of input: ``env K=V`` before the server, ``docker run`` options that
take a value (``--volume /a:/b``, ``-u 1000``) so the image is not mistaken for one, a
one-letter switch (``-q``) after a switch, negative numbers as option values, and the diff
from nothing naming exactly the variables that are set (not a superset check)."""

from __future__ import annotations

import shlex
from types import SimpleNamespace

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k3tui.errors import UsageError
from k3tui.ladder.config import (
    RunConfig,
    apply_changes,
    changes_from_args,
    command_line,
    diff,
    from_profile,
    launch_argv,
    parse_command,
)

_name = st.from_regex(r"[a-z][a-z0-9]{0,6}(-[a-z0-9]{1,5}){0,2}", fullmatch=True)
_env_key = st.from_regex(r"[A-Z_][A-Z0-9_]{0,10}", fullmatch=True).filter(lambda k: k != "CUDA_VISIBLE_DEVICES")
_value = st.from_regex(r"[A-Za-z0-9_./:]{1,12}", fullmatch=True).filter(lambda v: not v.startswith("-"))
_path = st.from_regex(r"/[a-z0-9]{1,8}(/[a-z0-9]{1,8}){0,2}", fullmatch=True)
_image = st.from_regex(r"[a-z0-9]{1,8}/[a-z0-9-]{1,8}(:[a-z0-9.]{1,6})?", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(env=st.dictionaries(_env_key, _value, min_size=1, max_size=3), model=_path, with_env_word=st.booleans())
def test_env_assignments_before_vllm_serve_become_env(env, model, with_env_word):
    head = ["env"] if with_env_word else []
    argv = [*head, *(f"{k}={v}" for k, v in env.items()), "vllm", "serve", model, "--max-model-len", "64"]
    cfg = parse_command(shlex.join(argv))
    assert cfg.env == env
    assert cfg.model_path == model
    assert cfg.max_model_len == 64
    assert cfg.entry == ["vllm", "serve"]


@settings(max_examples=60, deadline=None)
@given(
    opt=st.sampled_from(["--volume", "-v", "-u", "--user", "--shm-size", "-w", "--ipc", "--gpus"]),
    val=st.one_of(st.tuples(_path, _path).map(lambda ab: f"{ab[0]}:{ab[1]}"), st.integers(0, 65535).map(str)),
    image=_image,
    model=_path,
    with_serve=st.booleans(),
)
def test_docker_options_with_a_value_never_swallow_the_image(opt, val, image, model, with_serve):
    serve = ["vllm", "serve"] if with_serve else []
    cfg = parse_command(["docker", "run", "--rm", opt, val, image, *serve, model, "-tp", "2"])
    assert cfg.image == image
    assert cfg.docker_args == [opt, val]
    assert cfg.model_path == model
    assert cfg.tensor_parallel_size == 2


@settings(max_examples=60, deadline=None)
@given(
    switch=_name.filter(lambda n: not n.startswith("no-")),  # --no-X is X's negation, pinned elsewhere
    letter=st.sampled_from(list("qvx")),
    nxt=_name.filter(lambda n: not n.startswith("no-")),
)
def test_a_one_letter_switch_after_a_switch_is_a_switch(switch, letter, nxt):
    cfg = parse_command(["vllm", "serve", "/m", f"--{switch}", f"-{letter}", f"--{nxt}"])
    assert cfg.flags[switch] is True
    assert cfg.flags[letter] is True
    assert cfg.flags[nxt] is True


@settings(max_examples=60, deadline=None)
@given(
    name=_name.filter(lambda n: not n.startswith("no-")),
    num=st.one_of(st.integers(-(10**6), -1).map(str), st.floats(-1e3, -1e-3).map(lambda f: f"{f:g}")),
)
def test_a_negative_number_is_an_option_value_not_an_option(name, num):
    cfg = parse_command(["vllm", "serve", "/m", f"--{name}", num, "--enforce-eager"])
    assert cfg.flags[name] == num
    assert cfg.flags["enforce-eager"] is True


@settings(max_examples=60, deadline=None)
@given(
    flags=st.dictionaries(
        _name.filter(lambda n: not n.startswith("no-") and n not in ("model", "tensor-parallel-size")),
        st.one_of(st.booleans(), _value, st.integers(-99, -1).map(str)),
        max_size=4,
    ),
    env=st.dictionaries(_env_key, _value, max_size=2),
    image=st.one_of(st.just(""), _image),
    docker=st.sampled_from([[], ["--volume", "/a:/b"], ["-u", "1000"], ["--ipc=host"]]),
    tp=st.one_of(st.none(), st.integers(1, 16)),
    mml=st.one_of(st.none(), st.integers(1, 10**6)),
)
def test_every_launch_parses_back_to_its_config(flags, env, image, docker, tp, mml):
    cfg = RunConfig(
        model_path="/models/x",
        flags=flags,
        env=env if image else {},
        image=image,
        docker_args=docker if image else [],
        tensor_parallel_size=tp,
        max_model_len=mml,
    )
    back = parse_command(launch_argv(cfg))
    assert diff(cfg, back) == []
    if not image:
        host = parse_command(command_line(RunConfig(model_path="/m", env=env, flags=flags)))
        assert host.env == env and host.flags == flags


@settings(max_examples=60, deadline=None)
@given(
    model=st.one_of(st.just(""), _path),
    mml=st.one_of(st.none(), st.integers(1, 10**6)),
    tp=st.one_of(st.none(), st.integers(1, 8)),
    image=st.one_of(st.just(""), _image),
    flags=st.dictionaries(_name, st.booleans(), max_size=3),
)
def test_the_diff_from_nothing_names_exactly_the_set_variables(model, mml, tp, image, flags):
    cfg = RunConfig(model_path=model, max_model_len=mml, tensor_parallel_size=tp, image=image, flags=flags)
    want = {"concurrency"} | {f"flag:{k}" for k in flags}
    want |= {
        k
        for k, v in (("model_path", model), ("max_model_len", mml), ("tensor_parallel_size", tp), ("image", image))
        if v not in (None, "")
    }
    got = diff(None, cfg)
    assert {x["key"] for x in got} == want
    assert all(x["old"] is None for x in got)


@pytest.mark.parametrize("line", ["env", "env K=V", "docker run --volume /a:/b", "docker run -u 1000", "vllm"])
def test_a_launch_cut_short_is_a_one_line_usage_error(line):
    with pytest.raises(UsageError) as err:
        parse_command(line)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("key", ["image", "driver", "visible_devices", "model_path"])
@pytest.mark.parametrize("empty", [None, ""])
def test_clearing_a_text_variable_leaves_empty_text(key, empty):
    cfg = apply_changes(RunConfig(**{key: "x"}), {key: empty})
    assert getattr(cfg, key) == ""


@pytest.mark.parametrize("key", ["tensor_parallel_size", "max_model_len", "gpu_memory_utilization", "gpu_count"])
@pytest.mark.parametrize("empty", [None, ""])
def test_clearing_a_number_variable_leaves_none(key, empty):
    assert getattr(apply_changes(RunConfig(**{key: 1}), {key: empty}), key) is None


@pytest.mark.parametrize("arg", ["{model}", "--port={prt}", "{0}", "{model_path"])
def test_a_profile_with_an_unknown_placeholder_is_a_usage_error(arg):
    launch = SimpleNamespace(
        minimal=["vllm", "serve", "{model_path}", arg], model_path="/m", model="m", port=8000, host="127.0.0.1",
        env={}, in_container=False, docker_args=[],
    )  # fmt: skip
    with pytest.raises(UsageError, match="unknown placeholder"):
        from_profile(SimpleNamespace(launch=launch, image=SimpleNamespace(reference="")))


@pytest.mark.parametrize("opt", ["--rm", "-d", "--detach", "-it", "-t", "-i"])
def test_docker_switches_of_the_session_itself_are_not_kept_as_run_arguments(opt):
    cfg = parse_command(["docker", "run", opt, "--ipc=host", "img/x", "/m"])
    assert cfg.docker_args == ["--ipc=host"]
    assert cfg.image == "img/x"


@settings(max_examples=30, deadline=None)
@given(devices=st.from_regex(r"[0-7](,[0-7]){0,3}", fullmatch=True), image=_image, name=_name)
def test_visible_devices_go_into_the_container_and_back(devices, image, name):
    cfg = RunConfig(model_path="/m", image=image, visible_devices=devices)
    argv = launch_argv(cfg, name)
    assert argv[argv.index("--name") + 1] == name
    assert f"CUDA_VISIBLE_DEVICES={devices}" in argv
    assert parse_command(argv).visible_devices == devices


def test_the_container_is_named_k3tui_by_default():
    argv = launch_argv(RunConfig(model_path="/m", image="img/x"))
    assert argv[argv.index("--name") + 1] == "k3tui"


def test_a_module_entry_without_options_is_a_launch():
    cfg = parse_command("python3 -m vllm.entrypoints.openai.api_server")
    assert cfg.entry == ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    assert cfg.flags == {}


@pytest.mark.parametrize(("line", "shown"), [("", "(empty)"), ("python3 app.py --port 1", "python3 app.py --port")])
def test_a_line_that_is_not_a_launch_names_what_it_got(line, shown):
    with pytest.raises(UsageError, match="got " + repr(shown).replace("(", r"\(").replace(")", r"\)")):
        parse_command(line)


def test_a_config_is_stored_without_its_defaults():
    assert msgspec.json.decode(msgspec.json.encode(RunConfig(model_path="/m"))) == {
        "entry": ["vllm", "serve"],
        "model_path": "/m",
    }


@pytest.mark.parametrize(
    "opt",
    ["--name", "--gpus", "--network", "--ipc", "-v", "--volume", "--shm-size", "-p", "--publish", "--runtime",
     "--ulimit", "--device", "-w", "--workdir", "--user", "-u", "--mount", "--env-file", "--platform", "--pull"],
)  # fmt: skip
def test_every_docker_option_with_a_value_keeps_the_image_in_place(opt):
    cfg = parse_command(["docker", "run", opt, "8000:8000", "img/x", "/m"])
    assert cfg.image == "img/x"
    assert cfg.model_path == "/m"


def test_env_and_flag_changes_land_under_their_own_names():
    cfg = apply_changes(RunConfig(), {"env:VLLM_LOGGING_LEVEL": "DEBUG", "flag:enforce-eager": True})
    assert cfg.env == {"VLLM_LOGGING_LEVEL": "DEBUG"} and cfg.flags == {"enforce-eager": True}
    cleared = apply_changes(cfg, {"env:VLLM_LOGGING_LEVEL": None, "flag:enforce-eager": None})
    assert cleared.env == {} and cleared.flags == {}


def test_an_unknown_variable_names_the_known_ones():
    with pytest.raises(UsageError, match="use one of image, driver, gpu_count.*flag:NAME or env:NAME"):
        apply_changes(RunConfig(), {"colour": "red"})


def test_launch_arguments_become_scalar_and_flag_changes():
    got = changes_from_args(["--max-model-len", "8192", "-tp", "4", "--enable-prefix-caching"], ["--no-x"])
    assert got == {"flag:x": None, "max_model_len": 8192, "tensor_parallel_size": 4, "flag:enable-prefix-caching": True}


@settings(max_examples=30, deadline=None)
@given(name=_name.filter(lambda n: not n.startswith("no-")), values=st.lists(_value, min_size=2, max_size=4))
def test_an_option_given_several_times_round_trips_as_a_list(name, values):
    argv = launch_argv(RunConfig(model_path="/m", flags={name: values}))
    assert argv.count(f"--{name}") == len(values)
    assert parse_command(argv).flags == {name: values}


@pytest.mark.parametrize("line", ["python3 -m", "python3", "-m"])
def test_a_short_module_line_is_a_usage_error(line):
    with pytest.raises(UsageError, match="not a vLLM server launch"):
        parse_command(line)

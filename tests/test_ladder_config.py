"""RunConfig, its diff, the one-variable rule and revert — on the shipped profiles' real commands."""

from __future__ import annotations

import pytest

from k3tui import events as ev
from k3tui.errors import OneVariableRule, UsageError
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
from k3tui.ladder.ledger import ConfigLedger
from k3tui.profile import load_profile


def test_kimi_profile_minimal_launch_round_trips_through_the_command_line():
    cfg = from_profile(load_profile("kimi-k3"))
    line = command_line(cfg, "k3tui-run1")
    assert line.startswith("docker run --rm --name k3tui-run1 --gpus all --ipc=host --network host")
    assert "--entrypoint vllm vllm/vllm-openai:kimi-k3 serve moonshotai/Kimi-K3 --tensor-parallel-size 8" in line
    assert "--no-enable-prefix-caching" in line and "--load-format fastsafetensors" in line
    back = parse_command(line)
    assert diff(cfg, back) == []
    assert back.tensor_parallel_size == 8 and back.flags["enable-prefix-caching"] is False


def test_tiny_profile_fills_placeholders_and_keeps_env_out_of_argv():
    cfg = from_profile(load_profile("tiny-cpu"), model_path="/models/tiny", port=18000)
    argv = launch_argv(cfg)
    assert argv[:3] == ["vllm", "serve", "/models/tiny"]
    assert argv[argv.index("--port") + 1] == "18000"
    assert cfg.env["VLLM_CPU_KVCACHE_SPACE"] == "1" and "VLLM_CPU_KVCACHE_SPACE=1" not in argv
    assert command_line(cfg).startswith("VLLM_CPU_KVCACHE_SPACE=1 ")


def test_enabling_a_switch_is_one_variable_however_it_is_spelled():
    base = parse_command("vllm serve m --no-enable-prefix-caching --max-model-len 1024")
    changes = changes_from_args(["--enable-prefix-caching"], remove=["--no-enable-prefix-caching"])
    d = diff(base, apply_changes(base, changes))
    assert d == [{"key": "flag:enable-prefix-caching", "old": False, "new": True}]


def test_parse_pasted_commands_with_env_docker_and_module_entry():
    cfg = parse_command(
        "CUDA_VISIBLE_DEVICES=0,1 NCCL_DEBUG=INFO vllm serve /m -tp 2 --gpu-memory-utilization=0.9 --enforce-eager"
    )
    assert (cfg.visible_devices, cfg.env, cfg.tensor_parallel_size, cfg.gpu_memory_utilization) == (
        "0,1",
        {"NCCL_DEBUG": "INFO"},
        2,
        0.9,
    )
    d = parse_command(
        "docker run -d --gpus all -e HF_TOKEN=x -v /a:/b vllm/vllm-openai:kimi-k3 --model m --max-model-len 8192"
    )
    assert d.image == "vllm/vllm-openai:kimi-k3" and d.model_path == "m" and d.max_model_len == 8192
    assert d.docker_args == ["--gpus", "all", "-v", "/a:/b"]
    m = parse_command("python3 -m vllm.entrypoints.openai.api_server --model m --port 8000")
    assert m.entry == ["python3", "-m", "vllm.entrypoints.openai.api_server"] and m.flags["port"] == "8000"


@pytest.mark.parametrize(
    "bad", ["", "ls -l", "docker run --rm", "vllm serve m 'unclosed", "vllm serve m --port 1 stray"]
)
def test_a_command_that_is_not_a_vllm_launch_is_a_clear_error(bad):
    with pytest.raises(UsageError) as err:
        parse_command(bad)
    assert "\n" not in str(err.value)


def _ledger():
    events: list = []
    led = ConfigLedger(events.append, host="h")
    led.start(from_profile(load_profile("tiny-cpu"), model_path="/m"), run="r1")
    return led, events


def test_one_change_is_recorded_with_its_diff():
    led, events = _ledger()
    cfg, d = led.apply({"max_model_len": "4096"}, run="r2")
    assert cfg.max_model_len == 4096 and d == [{"key": "max_model_len", "old": 1024, "new": 4096}]
    last = events[-1]
    assert (
        isinstance(last, ev.RunConfigSet)
        and last.run == "r2"
        and last.diff == d
        and last.config["max_model_len"] == 4096
    )


def test_two_changes_are_refused_without_a_reason_and_nothing_is_recorded():
    led, events = _ledger()
    n = len(events)
    with pytest.raises(OneVariableRule) as err:
        led.apply({"max_model_len": 4096, "env:VLLM_LOGGING_LEVEL": "DEBUG"})
    assert "2 variables" in str(err.value) and len(events) == n and led.current.max_model_len == 1024


def test_two_changes_with_a_reason_are_recorded_as_a_decision():
    led, events = _ledger()
    led.apply({"max_model_len": 4096, "env:VLLM_LOGGING_LEVEL": "DEBUG"}, reason="vendor asked for both")
    decisions = [e for e in events if isinstance(e, ev.Decision)]
    assert (
        decisions
        and decisions[-1].reason == "vendor asked for both"
        and "override one-variable rule" in decisions[-1].action
    )


def test_revert_goes_back_to_the_last_known_good_state():
    led, events = _ledger()
    led.mark_good()
    first = led.current
    led.apply({"max_model_len": 4096})
    cfg, d = led.revert(reason="4096 failed")
    assert diff(first, cfg) == [] and d == [{"key": "max_model_len", "old": 4096, "new": 1024}]
    assert any(isinstance(e, ev.Decision) and e.action.startswith("revert") for e in events)


def test_an_observed_driver_change_cannot_be_reverted_and_says_so():
    led, events = _ledger()
    led.observe(driver="580.65.06", gpu_count=8)
    led.mark_good()
    led.apply({"max_model_len": 2048})
    led.observe(driver="575.57.08")
    cfg, _ = led.revert()
    assert cfg.driver == "575.57.08"
    assert any(isinstance(e, ev.Notice) and e.level == "warning" and "driver" in e.message for e in events)


def test_unknown_variable_and_no_op_change_are_usage_errors():
    led, _ = _ledger()
    with pytest.raises(UsageError):
        led.apply({"colour": "blue"})
    with pytest.raises(UsageError):
        led.apply({"max_model_len": 1024})
    with pytest.raises(UsageError):
        led.apply({"max_model_len": "lots"})


def test_empty_config_diff_lists_every_set_variable():
    d = diff(None, RunConfig(model_path="m", max_model_len=10))
    assert {x["key"] for x in d} >= {"model_path", "max_model_len", "concurrency"}

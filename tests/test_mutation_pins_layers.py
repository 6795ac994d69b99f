"""Pins for classify/layers.py found by issue 22's mutation run (seed 2146827320): what each rule
reports, not only which stage it names."""

from __future__ import annotations

from k3tui.classify.layers import Evidence, decide
from k3tui.classify.rules import load_rules

RULES = load_rules()


def test_evidence_with_nothing_in_it_is_the_default_not_a_marker() -> None:
    v = decide(RULES, Evidence("something went wrong", 3))
    assert (v.stage, v.rule, v.confidence, v.lines) == ("engine", "default", "low", (3,))
    v = decide(RULES, Evidence("something went wrong", 3, talk=("serving", "requests")))
    assert (v.stage, v.rule, v.confidence, v.lines) == ("runtime", "default", "low", (3,))
    v = decide(RULES, Evidence("something went wrong", 3, talk=("startup", "warm-up")))
    assert (v.stage, v.rule, v.confidence, v.lines) == ("engine", "default", "low", (3,))
    assert "'warm-up'" in v.why


def test_a_firm_rule_is_high_confidence() -> None:
    v = decide(RULES, Evidence("OSError: [Errno 98] Address already in use", 7))
    assert (v.stage, v.rule, v.confidence) == ("api", "message", "high")


def test_runtime_wording_is_reported_as_wording() -> None:
    v = decide(RULES, Evidence("RuntimeError('Engine loop has died')", 5))
    assert (v.stage, v.rule, v.confidence, v.lines) == ("runtime", "wording", "medium", (5,))
    header = ("Engine background task failed", 2)
    v = decide(RULES, Evidence("RuntimeError: something", 5, header=header))
    assert (v.stage, v.rule, v.lines) == ("runtime", "wording", (2,))


def test_the_markers_verdict_points_at_the_marker_of_the_stage_reached() -> None:
    marks = [("container", 1), ("config", 2), ("device", 5), ("weights", 9)]
    v = decide(RULES, Evidence("something went wrong", 12, stage_idx=3, marks=marks))
    assert (v.stage, v.rule, v.lines) == ("weights", "markers", (9,))


def test_start_up_wording_keeps_the_layer_rules_and_drops_only_runtime() -> None:
    """Second run (seed 456528944): 'EngineCore failed to start' excludes runtime rules, nothing else."""
    header = ("EngineCore failed to start.", 1)
    v = decide(RULES, Evidence("RuntimeError: No CUDA GPUs are available", 4, header=header))
    assert (v.stage, v.rule, v.confidence) == ("device", "message", "high")
    v = decide(RULES, Evidence("RuntimeError: CUDA error: an illegal memory access was encountered", 4, header=header))
    assert v.stage != "runtime"
    v = decide(RULES, Evidence("KeyError: 'x'", 4, header=header))  # nothing but the wording: the engine's set-up
    assert (v.stage, v.rule, v.lines) == ("engine", "default", (1, 4))


def test_a_start_up_rule_is_high_confidence() -> None:
    v = decide(RULES, Evidence("ImportError: /x/_C.abi3.so: undefined symbol: _ZN3c10", 2))
    assert (v.stage, v.rule, v.confidence) == ("container", "message", "high")


def test_a_weak_rule_is_reported_as_the_exception_type() -> None:
    v = decide(RULES, Evidence("ModuleNotFoundError: No module named 'flash_attn'", 3))
    assert (v.stage, v.rule, v.confidence) == ("container", "exception-type", "low")


# --- session 6's run (seed 591582247: 25/30) -----------------------------------------------------

_FRAME = '  File "/usr/lib/python3/dist-packages/vllm/{path}", line 1, in {func}'


def _stack(*frames: tuple[str, str]) -> list[str]:
    return ["Traceback (most recent call last):", *(_FRAME.format(path=p, func=f) for p, f in frames)]


def test_the_logging_file_is_the_outermost_frame() -> None:
    """119:22: the serving code that logged the root called everything in its stack (start-up work
    redone while serving, here the loader and the platform, is a runtime failure)."""
    stack = _stack(("model_executor/model_loader/loader.py", "load_model"), ("platforms/cuda.py", "get_device_name"))
    raw = "(APIServer pid=1) ERROR 01-08 12:21:38 [serving_chat.py:218] RuntimeError: boom"
    v = decide(RULES, Evidence("RuntimeError: boom", 9, stack=stack, raw=raw))
    assert (v.stage, v.rule) == ("runtime", "frames")


def test_a_runtime_frame_wins_only_outside_every_start_up_frame() -> None:
    """124:56 and 124:83: the serving loop outside the loader is runtime; V0's profile_run calling
    execute_model calling the attention back-end is the engine's profiling, not runtime."""
    serving = _stack(
        ("v1/engine/core.py", "run_busy_loop"),
        ("model_executor/model_loader/loader.py", "load_model"),
        ("v1/worker/gpu_model_runner.py", "execute_model"),
    )
    assert decide(RULES, Evidence("RuntimeError: boom", 9, stack=serving)).stage == "runtime"
    profiling = _stack(
        ("worker/model_runner.py", "profile_run"),
        ("worker/model_runner.py", "execute_model"),
        ("attention/selector.py", "get_attn_backend"),
    )
    assert decide(RULES, Evidence("RuntimeError: boom", 9, stack=profiling)).stage == "engine"


def test_a_crash_on_the_first_line_points_at_that_line() -> None:
    """167:46: the verdict's evidence is line 1, where it crashed before printing anything."""
    v = decide(RULES, Evidence("Segmentation fault (core dumped)", 1, native=True))
    assert (v.stage, v.rule, v.lines) == ("container", "markers", (1,))


def test_the_process_is_named_without_its_pid() -> None:
    """175:37: the one-line why names the process as the operator knows it, not its pid."""
    v = decide(RULES, Evidence("KeyError: 'x'", 4, process="EngineCore_DP0 pid=4242"))
    assert (v.stage, v.rule) == ("engine", "default")
    assert "EngineCore_DP0 printed it" in v.why and "4242" not in v.why


def test_evidence_is_not_a_native_crash_unless_told() -> None:
    """Seed 1555327121, 56:19: a Python root on line 1 is not 'crashed before printing anything'."""
    v = decide(RULES, Evidence("KeyError: 'x'", 1))
    assert (v.stage, v.rule) == ("engine", "default") and "native" not in v.why


# session 15's run (seed 743063195): what the import, entry-only, api-ready and native-crash verdicts report


def test_an_import_at_module_level_is_the_container_with_high_confidence() -> None:
    stack = [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3/dist-packages/vllm/entrypoints/openai/api_server.py", line 12, in <module>',
        "    import uvloop",
        "ModuleNotFoundError: No module named 'uvloop'",
    ]
    v = decide(RULES, Evidence(stack[-1], 4, stack=stack, numbers=[1, 2, 3, 4], raw=stack[-1]))
    assert (v.stage, v.rule, v.confidence) == ("container", "frames", "high")


def test_a_stack_of_only_the_programs_entry_is_the_process_start_whatever_other_frames_it_holds() -> None:
    stack = [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/runpy.py", line 198, in _run_module_as_main',
        '  File "/usr/lib/python3/dist-packages/vllm/entrypoints/cli/main.py", line 54, in main',
        "    args.dispatch_function(args)",
        "RuntimeError: something broke",
    ]
    v = decide(RULES, Evidence(stack[-1], 5, stack=stack, numbers=[1, 2, 3, 4, 5], raw=stack[-1]))
    assert (v.stage, v.rule, v.confidence, v.lines) == ("container", "frames", "high", (3,))
    assert "program's entry" in v.why


def test_the_api_ready_verdict_is_medium_and_names_both_lines() -> None:
    marks = [("container", 1), ("api", 8), ("runtime", 9)]
    v = decide(RULES, Evidence("RuntimeError: something", 20, stage_idx=6, marks=marks))
    assert (v.stage, v.rule, v.confidence, v.lines) == ("runtime", "api-ready", "medium", (9, 20))


def test_a_native_crash_that_nothing_places_says_so() -> None:
    ev = Evidence("*** SIGBUS received at time=1709021359 on cpu 44 ***", 4, native=True)
    v = decide(RULES, ev)
    assert (v.stage, v.rule, v.confidence) == ("engine", "default", "low")
    assert "native crash" in v.why


def test_a_stack_that_ends_in_module_level_code_is_the_container_with_high_confidence() -> None:
    stack = [
        "Traceback (most recent call last):",
        '  File "/opt/app/serve.py", line 3, in <module>',
        "    import torch",
        '  File "/usr/lib/python3/dist-packages/torch/__init__.py", line 290, in <module>',
        "    _load_global_deps()",
        "RuntimeError: something broke",
    ]
    v = decide(RULES, Evidence(stack[-1], 6, stack=stack, numbers=[1, 2, 3, 4, 5, 6], raw=stack[-1]))
    assert (v.stage, v.rule, v.confidence, v.lines) == ("container", "frames", "high", (4,))
    assert "module-level" in v.why

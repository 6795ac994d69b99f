"""Pins for classify/layers.py found by issue 22's mutation run (seed 2146827320): what each rule
reports, not only which stage it names."""

from __future__ import annotations

from k3tui.classify.layers import Evidence, decide
from k3tui.classify.rules import load_rules

RULES = load_rules()


def test_evidence_with_nothing_in_it_is_the_default_not_a_marker() -> None:
    v = decide(RULES, Evidence("something went wrong", 3))
    assert (v.stage, v.rule, v.confidence, v.lines) == ("container", "default", "low", (3,))


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


def test_a_start_up_rule_is_high_confidence() -> None:
    v = decide(RULES, Evidence("ImportError: /x/_C.abi3.so: undefined symbol: _ZN3c10", 2))
    assert (v.stage, v.rule, v.confidence) == ("container", "message", "high")


def test_a_weak_rule_is_reported_as_the_exception_type() -> None:
    v = decide(RULES, Evidence("ModuleNotFoundError: No module named 'flash_attn'", 3))
    assert (v.stage, v.rule, v.confidence) == ("container", "exception-type", "low")

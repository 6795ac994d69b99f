"""The classifier's data files (assets/classify/*.toml): a damaged installation is refused with a
message that names the file and what is wrong, never half-loaded (issue 22's rules.py gaps)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import k3tui.classify.rules as rules_mod
from k3tui.assets import asset
from k3tui.errors import ProfileError

STAGES = rules_mod.STAGES


@pytest.fixture
def copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """A copy of assets/classify that load_rules() reads instead of the installed one."""
    root = tmp_path / "assets"
    shutil.copytree(asset("classify"), root / "classify")
    monkeypatch.setattr(rules_mod, "asset", lambda *parts: root.joinpath(*parts))
    rules_mod.load_rules.cache_clear()
    yield root / "classify"
    rules_mod.load_rules.cache_clear()


def test_the_copy_loads_like_the_installed_rules(copy: Path) -> None:
    r = rules_mod.load_rules()
    assert [s.name for s in r.stages] == list(STAGES)
    assert r.gate == ".py:" and "rror" in r.always
    assert all(n == n.lower() for n in r.crash_needles)


@pytest.mark.parametrize(
    ("name", "edit", "says"),
    [
        ("patterns.toml", None, "classifier data missing"),
        ("stages.toml", lambda t: t + "\n[[[", "invalid TOML"),
        (
            "patterns.toml",
            lambda t: t.replace("pattern = '(?i)out of memory", "pattern = '(?i)(out of memory", 1),
            "bad regex",
        ),
        ("stages.toml", lambda t: t.replace('name = "device"', 'name = "weights"', 1), "must be, in order"),
        ("stages.toml", lambda t: t[: t.index('[[stage]]\nname = "runtime"')], "expected the stages"),
        (
            "patterns.toml",
            lambda t: t.replace('stage = "device"\nstrength = "strong"', 'stage = "gpu"\nstrength = "strong"', 1),
            "unknown stage 'gpu'",
        ),
        ("patterns.toml", lambda t: t.replace('strength = "strong"', 'strength = "mighty"', 1), "not 'mighty'"),
        (
            "frames.toml",
            lambda t: t.replace('stage = "engine"', 'stage = "gpu"', 1),
            "unknown stage 'gpu' in a [[frame]]",
        ),
        ("frames.toml", lambda t: t.replace("func = '.*'", "func = '(.*'", 1), "frames.toml: bad regex"),
        (
            "patterns.toml",
            lambda t: t.replace('\ninner = "type"', '\ninner = "outer"', 1),
            "inner must be type, value-error, any or next",
        ),
        ("advice.toml", lambda t: t.replace("[runtime]", "[runtime_]", 1), "no advice for runtime"),
        (
            "patterns.toml",
            lambda t: t.replace('roots = "InstallError"', 'roots = "InstalError"', 1),
            "names a [[root]] type ('InstalError': 0 found)",
        ),
        (
            "patterns.toml",
            lambda t: t.replace('roots = "InstallError"', "roots = \"InstallError\"\nmatch = 'x'", 1),
            "has no match= of its own",
        ),
        (
            "patterns.toml",
            lambda t: t.replace('crash = "driver"', 'crash = "drivers"', 1),
            "a stage_rule's crash= names a pattern of the [crash] table ('drivers')",
        ),
        (
            "patterns.toml",
            lambda t: t.replace('crash = "driver"', "crash = \"driver\"\nmatch = 'x'", 1),
            "has no match= or roots= of its own",
        ),
        (
            "patterns.toml",
            lambda t: t.replace("'Engine loop has died',", "'Engine loop (has died',", 1),
            "patterns.toml [wording]: bad regex",
        ),
    ],
)
def test_a_damaged_file_is_refused_with_its_name_and_fault(copy: Path, name: str, edit, says: str) -> None:  # noqa: ANN001
    f = copy / name
    if edit is None:
        f.unlink()
    else:
        new = edit(f.read_text())
        assert new != f.read_text(), "the edit must change the file"
        f.write_text(new)
    with pytest.raises(ProfileError) as e:
        rules_mod.load_rules()
    assert says in str(e.value) and name.split(".")[0] in str(e.value)


def test_frame_stage_stays_right_past_its_cache_size() -> None:
    r = rules_mod.load_rules()
    first = r.frame_stage("/x/vllm/v1/worker/gpu_model_runner.py", "load_model")
    for i in range(5000):  # more distinct frames than the cache holds: it is emptied, not wrong
        r.frame_stage(f"/x/mod{i}.py", f"f{i}")
    assert len(r._frame_cache) <= 4097
    r._frame_cache.clear()
    for i in range(4097):
        r.frame_stage(f"/y/mod{i}.py", "f")
    assert len(r._frame_cache) == 4097  # the bound: 4096 kept, the next one clears first
    r.frame_stage("/y/one-more.py", "f")
    assert len(r._frame_cache) == 1
    assert first == "weights" == r.frame_stage("/x/vllm/v1/worker/gpu_model_runner.py", "load_model")
    assert r.frame_stage("/x/vllm/platforms/cuda.py", "anything") == "device"
    assert r.frame_stage("/x/other/cuda.py", "anything") is None  # a path rule needs its path


def test_the_loaded_rules_cannot_be_changed_by_one_user_for_all() -> None:
    """load_rules() is cached and shared by every Classifier: its parts are frozen."""
    import dataclasses

    r = rules_mod.load_rules()
    assert rules_mod.load_rules() is r  # loaded once per process, then shared
    for part in (r, r.stages[0], r.roots[0], r.stage_rules[0], r.frame_rules[0], r.wrappers[0]):
        field = dataclasses.fields(part)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(part, field, getattr(part, field))


def _first_patterns() -> list[tuple[str, str, str, str]]:
    """(table header, key, the first regex of it, the label its error must carry) for every regex table."""
    import tomllib

    pat = tomllib.loads((asset("classify") / "patterns.toml").read_text())
    out = [
        ("[oom]", "pattern", pat["oom"]["pattern"], "[oom]"),
        ("[exception]", "pattern", pat["exception"]["pattern"], "[exception]"),
        ("[[root]]", "match", pat["root"][0]["match"], "[[root]]"),
        ("[[wrapper]]", "match", pat["wrapper"][0]["match"], "[[wrapper]]"),
        ("[[stage_rule]]", "match", pat["stage_rule"][0]["match"], "patterns.toml: bad regex"),
        ("[wording]", "method", pat["wording"]["method"], "[wording]"),
        ("[crash]", "faulthandler", pat["crash"]["faulthandler"], "[crash]"),
    ]
    for table, key in [
        ("consequence", "patterns"), ("consequence", "carries"), ("wording", "startup"), ("wording", "runtime"),
        ("warning_root", "patterns"), ("warning_root", "failure"), ("warning_root", "info"),
        ("teardown", "patterns"), ("request_error", "patterns"), ("crash", "patterns"), ("crash", "after"),
    ]:  # fmt: skip
        out.append((f"[{table}]", key, pat[table][key][0], f"[{table}]"))
    return out


@pytest.mark.parametrize(
    ("header", "key", "first", "label"), _first_patterns(), ids=[f"{h}{k}" for h, k, *_ in _first_patterns()]
)
def test_a_bad_regex_in_any_table_is_refused_naming_that_table(
    copy: Path, header: str, key: str, first: str, label: str
) -> None:
    f = copy / "patterns.toml"
    text = f.read_text()
    at = text.index(f"\n{key} =", text.index(f"\n{header}\n"))
    quote = next(q for q in ("'''", "'", '"') if text.find(q + first + q, at) == text.find(first, at) - len(q))
    i = text.index(quote + first + quote, at) + len(quote)
    f.write_text(text[:i] + "(" + text[i:])  # an unclosed group in that table's first regex
    with pytest.raises(ProfileError) as e:
        rules_mod.load_rules()
    assert "bad regex" in str(e.value) and label in str(e.value), str(e.value)


def test_the_gate_defaults_to_a_python_logger_location(copy: Path) -> None:
    f = copy / "stages.toml"
    text = f.read_text()
    assert 'gate = ".py:"' in text
    f.write_text(text.replace('gate = ".py:"', "", 1))
    assert rules_mod.load_rules().gate == ".py:"


def test_advice_without_a_meaning_or_a_next_step_reads_as_empty(copy: Path) -> None:
    f = copy / "advice.toml"
    text = f.read_text()
    start = text.index("[engine]")
    section = text[start : text.index("\n[", start + 1)]
    bare = "\n".join(ln for ln in section.splitlines() if not ln.startswith(("meaning", "next")))
    f.write_text(text.replace(section, bare, 1))
    assert rules_mod.load_rules().advice["engine"] == ("", "")

"""Diffs are not noise (issue 17, item 5): ``k3tui diff`` and the TUI's ``D`` count variables, not pids.

Two freezes of the same setup differ in pids (``kill -0 8356``), timestamps, durations and
k3tui's random run ids; those must not count as variables ("MORE THAN ONE VARIABLE CHANGED"
over a pid), and two scenes that differ only there are "nothing that matters changed"
(exit 0). A real change buried in a long value (an ``ld.so.conf`` entry) is shown where it
differs, never clipped after the common prefix. Scenes are the real H200 capture
(``tests/data/h200-r580-local``) and the shipped demo recordings.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from k3tui.scene.diff import diff_lines, diff_scenes, stable, where_differs
from k3tui.scene.model import scene_from_dict

H200 = Path(__file__).parent / "data" / "h200-r580-local" / "scene.json"
RECORDINGS = Path(__file__).parent.parent / "recordings"


def _base() -> dict:
    d = json.loads(H200.read_text())
    d.setdefault("process", {})
    d["process"] = dict(d["process"] or {})
    return d


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "k3tui.cli", *args], capture_output=True, text=True, timeout=120)


pids = st.integers(min_value=2, max_value=4_194_304)
stamps = st.builds(
    "{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}Z".format,
    st.integers(2020, 2030),
    st.integers(1, 12),
    st.integers(1, 28),
    st.integers(0, 23),
    st.integers(0, 59),
    st.integers(0, 59),
)
run_ids = st.builds("r{}-{}-minimal".format, st.integers(1, 99), st.text("0123456789abcdef", min_size=6, max_size=6))


def _cmdline(pid: int, stamp: str, run: str) -> str:
    return f"sh -c while kill -0 {pid} 2>/dev/null; do sleep 1; done --name {run} --started {stamp} pid={pid}"


@settings(max_examples=60, deadline=None)
@given(pids, pids, stamps, stamps, run_ids, run_ids)
def test_volatile_parts_are_not_variables(p1, p2, s1, s2, r1, r2):
    a, b = _base(), _base()
    a["process"]["cmdline"] = _cmdline(p1, s1, r1)
    b["process"]["cmdline"] = _cmdline(p2, s2, r2)
    d = diff_scenes(scene_from_dict(a), scene_from_dict(b))
    assert d.changes == [] and d.loud == ""
    lines = diff_lines(d)
    if a["process"]["cmdline"] != b["process"]["cmdline"]:
        assert lines[-1].startswith("nothing that matters changed") and "command.process_cmdline" in lines[0]


@settings(max_examples=60, deadline=None)
@given(pids, pids, st.sampled_from(["--max-model-len 4096", "--enforce-eager", "--port 8001", "-tp 4"]))
def test_a_real_change_next_to_a_pid_is_one_variable(p1, p2, flag):
    a, b = _base(), _base()
    a["process"]["cmdline"] = f"vllm serve m pid={p1}"
    b["process"]["cmdline"] = f"vllm serve m pid={p2} {flag}"
    d = diff_scenes(scene_from_dict(a), scene_from_dict(b))
    assert d.variables == ["command"] and not d.loud
    assert any(flag in line for line in diff_lines(d))


@given(st.text(min_size=200, max_size=600), st.text(min_size=1, max_size=20), st.text(max_size=300))
def test_a_long_value_is_shown_where_it_differs(prefix, change, suffix):
    a, b = prefix + suffix, prefix + change + suffix
    wa, wb = where_differs(a, b, width=80)
    if a != b:
        n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        # the window starts at most 24 characters before the first difference, so it is on screen
        assert b[n : n + 20] in wb or b[n:] in wb
        assert len(wa) <= 82 and len(wb) <= 82


def test_stable_keeps_what_an_operator_changes():
    for text in ("--max-model-len 4096", "--port 8000", "CUDA_VISIBLE_DEVICES=0,1,2,3", "/usr/local/cuda/compat"):
        assert stable(text) == text


def test_cli_diff_of_two_demo_recordings_names_the_ldso_entry_and_not_the_pid():
    r = _cli("diff", str(RECORDINGS / "demo-healthy.k3rec"), str(RECORDINGS / "demo-cuda-compat-803.k3rec"))
    assert r.returncode == 1, r.stderr
    assert "MORE THAN ONE VARIABLE" not in r.stdout
    assert "cuda-compat.conf: (none)  →  /usr/local/cuda/compat" in r.stdout
    assert "one variable changed: libraries" in r.stdout


def test_cli_diff_of_a_recording_with_itself_changed_only_in_pids_is_nothing_that_matters(tmp_path):
    a, b = _base(), copy.deepcopy(_base())
    a["process"]["cmdline"] = _cmdline(100, "2026-12-01T00:00:00Z", "r1-abcdef-minimal")
    b["process"]["cmdline"] = _cmdline(200, "2026-12-01T00:05:00Z", "r1-123456-minimal")
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    r = _cli("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "nothing that matters changed" in r.stdout


async def test_tui_scene_diff_shows_variables_not_timings(tmp_path, shared):
    """``D`` in a session used to list epoch ``frozen_at``, ~30 probe timings and raw leaves."""
    from screens.app import K3App
    from screens.common.text_dialog import TextDialog
    from screens.replay.replay_screen import ReplayScreen

    from .ui_recordings import open_screen

    app = K3App(replay_path=RECORDINGS / "demo-cuda-compat-803.k3rec", home_dirs=[])
    async with app.run_test(size=(160, 48)) as pilot:
        rs = await open_screen(app, pilot, ReplayScreen)
        await pilot.press("G")
        await pilot.pause(0.3)
        assert len(rs.view.state.scenes) >= 2
        await pilot.press("D")
        dialog = await open_screen(app, pilot, TextDialog)
        text = str(dialog.query_one("#dialog-text").render())
    assert "frozen_at" not in text and "seconds" not in text and "probes" not in text
    assert "MORE THAN ONE VARIABLE" not in text
    assert "nothing that matters changed" in text or "one variable changed" in text or "no differences" in text

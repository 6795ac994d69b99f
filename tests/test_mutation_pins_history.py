"""The look-back window (``k3tui/classify/history.py``) a mutation run found unpinned (issue 22).

A normal stop (``shutdown triggered``) is found by looking back from the line that would be a
failure, over the last MiB of the log (``LOOKBACK``): a stop that far back still
explains a traceback cut by it; one further back does not.
"""

from __future__ import annotations

import pytest

from k3tui.classify import classify_text

_A = "(APIServer pid=9) INFO 11-30 06:13:00 [launcher.py:254] "
_E = "(EngineCore_0 pid=77) ERROR 11-30 06:13:01 [core.py:700] "


def _log(flood_chars: int) -> str:
    filler = _A + "GET /metrics 200 OK " + "x" * 60
    flood = [filler] * (flood_chars // (len(filler) + 1))
    cut = [
        _E + "EngineCore failed.",
        _E + "Traceback (most recent call last):",
        _E + '  File "/x/vllm/v1/m.py", line 3, in run',
    ]
    lines = [
        "(APIServer pid=9) INFO 11-30 06:12:30 [api_server.py:1] Application startup complete.",
        _A + "[shutdown] API server: shutdown triggered",
        *flood,
        *cut,
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("flood", "stopped"), [(768 << 10, True), (1152 << 10, False)])
def test_a_stop_within_the_last_mib_explains_a_cut_traceback(flood, stopped):
    r = classify_text(_log(flood))
    assert (r.failed_stage == "none") is stopped, r.evidence

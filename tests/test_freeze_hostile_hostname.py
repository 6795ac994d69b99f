"""`freeze` prints the host's own name: a hostile one must not drive the operator's terminal (issue 16).

The host is real (``freeze local``: the same probes over the same transport as any host); its
``hostname`` command is a script first on PATH that answers with a window title (OSC 0), a
screen clear (CSI 2J) and a clipboard write (OSC 52) inside the name, as a compromised or
hostile host can.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HOSTILE = "gpu-\x1b]0;pwned\x07node\x1b[2J\x1b]52;c;ZXZpbA==\x07-7"


def test_a_hostile_host_name_reaches_stdout_neutralised(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "hostname"
    fake.write_text("#!/bin/sh\nprintf '%s\\n' " + "'" + HOSTILE + "'\n", encoding="utf-8")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    assert subprocess.run(["hostname"], env=env, capture_output=True, text=True).stdout.strip() == HOSTILE
    r = subprocess.run(
        [sys.executable, "-m", "k3tui.cli", "freeze", "local"],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-800:]
    head = r.stdout.splitlines()[0]
    assert head.startswith("== scene of local (gpu-") and "-7)" in head, head  # the host's name is shown …
    for out in (r.stdout, r.stderr):
        assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out  # … and no byte of its sequences runs

"""The labelled corpus of real vLLM logs and its fixed tuned / held-out split.

Two places hold labelled logs, in the same label format (``../shared/corpus/README.md``):

- ``../shared/corpus/<folder>/`` — the project's given corpus (never edited);
- ``tests/data/corpus/<folder>/`` — the corpus this repository grows: complete logs of real
  ``vllm serve`` runs with a fault injected (made by ``tests/data/corpus/make_vllm_cpu_faults.py``)
  and excerpts quoted in public vLLM issue threads.

One fifth of ``tests/data/corpus`` is **held out**, chosen by a fixed hash of
``<folder>/<file>`` (:func:`held_out`), so that the choice does not depend on anyone's view
of the logs. Rules are tuned on the rest; the held-out part is only scored.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
REPO_CORPUS = HERE / "data" / "corpus"
SHARED_CORPUS = HERE.parent.parent / "shared" / "corpus"
STAGES = ("container", "config", "device", "weights", "engine", "api", "runtime", "none")


def held_out(folder: str, file: str) -> bool:
    """True for the fixed fifth of the repository's corpus that is never looked at while tuning."""
    return hashlib.sha256(f"{folder}/{file}".encode()).digest()[0] % 5 == 0


@dataclass(frozen=True, slots=True)
class Case:
    root: Path
    folder: str
    label: dict

    @property
    def path(self) -> Path:
        return self.root / self.folder / self.label["file"]

    @property
    def id(self) -> str:
        return f"{self.folder}/{self.label['file']}"

    @property
    def held_out(self) -> bool:
        return self.root == REPO_CORPUS and held_out(self.folder, self.label["file"])

    def text(self) -> str:
        return self.path.read_text(encoding="utf-8", errors="replace")


def issue_text(name: str) -> str:
    """The text of one excerpt of ``tests/data/corpus/vllm-issues`` (as :meth:`Case.text` reads it)."""
    return (REPO_CORPUS / "vllm-issues" / name).read_text(encoding="utf-8", errors="replace")


def tuned_text(folder: str, name: str) -> str:
    """The text of one log of the TUNED part of ``tests/data/corpus`` (as :meth:`Case.text` reads it); a
    held-out name fails the caller (a test may rest on a tuned log only)."""
    assert not held_out(folder, name), f"{folder}/{name} is in the held-out part"
    return (REPO_CORPUS / folder / name).read_text(encoding="utf-8", errors="replace")


def cases(root: Path = REPO_CORPUS) -> list[Case]:
    """Every labelled log under ``root`` (one folder per source, each with ``labels.jsonl``)."""
    out: list[Case] = []
    if not root.is_dir():
        return out
    for labels in sorted(root.glob("*/labels.jsonl")):
        for line in labels.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(Case(root, labels.parent.name, json.loads(line)))
    return out


def tuned_cases() -> list[Case]:
    """The part of the repository's corpus that rules may be tuned on."""
    return [c for c in cases() if not c.held_out]


def held_out_cases() -> list[Case]:
    """The held-out fifth: score it, never read it while changing rules."""
    return [c for c in cases() if c.held_out]

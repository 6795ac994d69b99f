"""Redaction at write time: secrets never reach the disk.

Every event passes through one :class:`Redactor` before it is recorded, shown or
exported. Three layers:

1. **Env maps** (``CommandSent.env``, a container's env, a process's env): values of
   variables whose *names* look secret are replaced, and the values are learnt, so the
   same secret echoed later in a log line is caught by its literal value too.
2. **Text** (command lines, output, HTTP bodies): one compiled alternation of patterns —
   ``Authorization:`` headers, bearer tokens, ``sk-…``/``hf_…``/``ghp_…``/AWS-style keys,
   ``password=``-style arguments, ``NAME=value`` assignments with secret-looking names,
   private-key blocks, credentials in URLs — plus extra patterns from configuration.
3. **Structures** (a frozen scene, a run config): walked recursively; dict keys that look
   secret get their values replaced, strings get layer 2.

Most log text contains none of this: a cheap prefilter keeps the per-chunk cost low.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

MASK = "<redacted>"

# Names of variables / keys whose value is a secret.
SECRET_NAME = re.compile(
    r"(?i)(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|"
    r"CREDENTIAL|AUTH|COOKIE|SESSION_?KEY|^KEY$|_KEY$|^PASS$|_PASS$|_PWD$|SIGNATURE)"
)
# Names that match the above but are not secrets (paths, counts, switches).
NOT_SECRET_NAME = re.compile(r"(?i)(_PATH|_FILE|_DIR|_URL_BASE|_COUNT|_SIZE|_LEN|KEYS_DIR|AUTHOR$|_CACHE|_HOME$)")

_TEXT_PATTERNS: list[tuple[str, str]] = [
    # Authorization / Proxy-Authorization headers: keep the scheme name, drop the rest.
    (r"(?i)((?:proxy-)?authorization\s*[:=]\s*\"?(?:bearer|basic|token|digest)?\s*)[^\s\"',}]+", r"\1" + MASK),
    (r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}", r"\1" + MASK),
    # Well-known key shapes.
    (r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}", MASK),
    (r"\bhf_[A-Za-z0-9]{20,}", MASK),
    (r"\bgh[pousr]_[A-Za-z0-9]{30,}", MASK),
    (r"\bglpat-[A-Za-z0-9_-]{20,}", MASK),
    (r"\bxox[abposr]-[A-Za-z0-9-]{10,}", MASK),
    (r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", MASK),
    (r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}", MASK),  # JWT
    # --password X, --api-key=X, --token X, --hf-token X …
    (
        r"(?i)(--?(?:[a-z0-9]+[-_])*(?:password|passwd|token|secret|api[-_]?key|access[-_]?key|"
        r"private[-_]?key|credentials?)(?:[=\s]+))(?!<redacted>)(\"[^\"]*\"|'[^']*'|[^\s\"']+)",
        r"\1" + MASK,
    ),
    # password=X, passwd: X, "api_key": "X", NAME_TOKEN=X in env-style assignments.
    (
        r"(?i)(\b[A-Z0-9_.-]*(?:password|passwd|pwd|token|secret|api[-_]?key|access[-_]?key|"
        r"private[-_]?key|credentials?)[A-Z0-9_.-]*\"?\s*[=:]\s*)(?!<redacted>)(\"[^\"]*\"|'[^']*'|[^\s\"',;&}]+)",
        r"\1" + MASK,
    ),
    # user:password@host in URLs.
    (r"([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:)[^@\s/]+(@)", r"\1" + MASK + r"\2"),
    # PEM private keys (the whole block, or its start if cut by a chunk).
    (
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:.|\n)*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
        "-----BEGIN PRIVATE KEY-----" + MASK,
    ),
]

# A cheap prefilter: if none of these substrings appear (case-insensitive), no pattern can match.
_PREFILTER = re.compile(
    r"(?i)author|bearer|sk-|hf_|gh[pousr]_|glpat-|xox|AKIA|ASIA|eyJ|pass|pwd|token|secret|key|"
    r"credential|://[^/\s]*@|PRIVATE"
)


class Redactor:
    """Removes secrets from text, env maps and structures.

    Args:
        extra_patterns: more regular expressions whose matches are masked.
        extra_names: more env-variable name patterns whose values are secret.
    """

    def __init__(self, extra_patterns: Iterable[str] = (), extra_names: Iterable[str] = ()) -> None:
        self._subs = [(re.compile(p), r) for p, r in _TEXT_PATTERNS]
        self._subs += [(re.compile(p), MASK) for p in extra_patterns]
        self._extra_prefilter = [re.compile(p) for p in extra_patterns]
        self._names = [re.compile(n, re.I) for n in extra_names]
        self._known: set[str] = set()
        self._known_re: re.Pattern[str] | None = None

    @classmethod
    def from_environment(cls) -> Redactor:
        """A redactor with extra patterns from ``K3TUI_REDACT`` (``;``-separated) and the config file."""
        patterns = [p for p in os.environ.get("K3TUI_REDACT", "").split(";") if p.strip()]
        cfg = os.path.join(os.environ.get("XDG_CONFIG_HOME", os.path.expanduser("~/.config")), "k3tui", "redact.txt")
        try:
            with open(cfg, encoding="utf-8") as fh:
                patterns += [ln.strip() for ln in fh if ln.strip() and not ln.startswith("#")]
        except OSError:
            pass
        return cls(extra_patterns=patterns)

    # --- names and values ---------------------------------------------------------

    def is_secret_name(self, name: str) -> bool:
        """Whether a variable or key with this name holds a secret."""
        if any(p.search(name) for p in self._names):
            return True
        return bool(SECRET_NAME.search(name)) and not NOT_SECRET_NAME.search(name)

    def learn(self, value: str) -> None:
        """Remember a secret value so its literal occurrences are masked everywhere."""
        if len(value) >= 6 and value != MASK and value not in self._known:
            self._known.add(value)
            alts = sorted(self._known, key=len, reverse=True)
            self._known_re = re.compile("|".join(re.escape(v) for v in alts))

    # --- text ---------------------------------------------------------------------

    def text(self, s: str) -> str:
        """Mask every secret in a piece of text."""
        if not s:
            return s
        if self._known_re is not None:
            s = self._known_re.sub(MASK, s)
        if not _PREFILTER.search(s) and not any(p.search(s) for p in self._extra_prefilter):
            return s
        for rx, repl in self._subs:
            s = rx.sub(repl, s)
        return s

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """Mask the values of secret-looking variables (and learn them)."""
        out: dict[str, str] = {}
        for k, v in env.items():
            v = "" if v is None else str(v)
            if self.is_secret_name(k):
                self.learn(v)
                out[k] = MASK if v else v
            else:
                out[k] = self.text(v)
        return out

    def env_list(self, items: Iterable[str]) -> list[str]:
        """Same as :meth:`env` for ``NAME=value`` lists (Docker's ``Config.Env``)."""
        out = []
        for item in items:
            name, sep, value = item.partition("=")
            if sep and self.is_secret_name(name):
                self.learn(value)
                out.append(f"{name}={MASK}" if value else item)
            else:
                out.append(self.text(item))
        return out

    def obj(self, value: Any, key: str = "") -> Any:
        """Walk a JSON-like structure and mask secrets (secret keys first, then text)."""
        if isinstance(value, str):
            if key and self.is_secret_name(key):
                self.learn(value)
                return MASK if value else value
            return self.text(value)
        if isinstance(value, Mapping):
            return {k: self.obj(v, str(k)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            if value and all(isinstance(x, str) and "=" in x for x in value) and key.lower() in ("env", "environment"):
                return self.env_list(value)
            return [self.obj(v) for v in value]
        return value

    def event(self, event: Any) -> Any:
        """A copy of an event with every string field redacted."""
        if isinstance(event, msgspec.Struct):
            changes: dict[str, Any] = {}
            for name in event.__struct_fields__:
                v = getattr(event, name)
                if name == "env" and isinstance(v, dict):
                    nv: Any = self.env(v)
                elif isinstance(v, str):
                    nv = self.text(v)
                elif isinstance(v, (dict, list)):
                    nv = self.obj(v, name)
                else:
                    continue
                if nv != v:
                    changes[name] = nv
            return msgspec.structs.replace(event, **changes) if changes else event
        return self.obj(event)

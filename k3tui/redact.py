"""Redaction at write time: secrets never reach the disk.

Every event passes through one :class:`Redactor` before it is recorded, shown or
exported. Three layers:

1. **Names** (env maps, dict keys, ``NAME=value`` and ``--flag value`` in text): a name
   looks secret when it contains TOKEN, SECRET, PASSWORD, AUTH, CREDENTIAL, COOKIE,
   or ends in KEY (``HF_TOKEN``, ``HUGGING_FACE_HUB_TOKEN``, ``OPENAI_API_KEY``,
   ``--api-key``, ``db_password``). Secret values are *learnt*, so the same secret echoed
   later in a log line is caught by its literal value too.
2. **Shapes** (command lines, output, HTTP bodies): ``Authorization:`` headers, bearer
   tokens, ``sk-…``/``hf_…``/``ghp_…``/AWS/JWT-style keys, credentials in URLs, private
   key blocks — plus extra patterns from ``K3TUI_REDACT`` or the config file.
3. **Structures** (a frozen scene, a run config): walked recursively; secret-named keys
   get their values replaced, ``{"key": "HF_TOKEN", "old": …, "new": …}`` diff entries
   too, and strings get layers 1–2.

Why names are matched on *words*, not substrings: vLLM logs are full of
``max_num_batched_tokens=8192``, ``tokenizer='…'``, ``prompt_token_ids`` and
``inter-token latency``. Masking those would make a recording useless for the very
diagnosis it exists for, and a learnt "secret" like a model path would then be masked
everywhere. So ``TOKENS``/``TOKENIZER``/``*_IDS``/``*_PATH``/``*_FILE`` are not secret
names; ``TOKEN``, ``*_TOKEN``, ``*_TOKEN_*`` are. The tests run the redactor over the
whole real corpus and require it to change nothing there.

Most log text contains none of this: a cheap prefilter keeps the per-chunk cost low.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

MASK = "<redacted>"

# A name (env var, dict key, CLI flag) whose value is a secret.
SECRET_NAME = re.compile(
    r"(?i)token(?!s|i[sz]|_?ids?(?![a-z]))|secret|passw|passphrase|credential|cookie|signature|auth(?!or(?!i))|"
    r"(?<=.)keys?(?![a-z])|private_?key|(?<=[_.-])pwd$|(?<=[_.-])pass$|^pass$|session_?id"
)
# Names that match the above but hold no secret: where a secret lives, counts, switches.
NOT_SECRET_NAME = re.compile(
    r"(?i)(?:[_.-](?:path|file|dir|url_base|count|size|len|cache|home|ids?|limit|ttl|timeout|enabled|type|mode|"
    r"backend|budget|length|num))$|^(?:author|authors|keyboard)$"
)

# After a secret-looking name: the separator and the value ("name = value", "--flag value").
_AFTER_NAME = re.compile(r"(\"?\s*[=:]\s*)(?!<redacted>)(\"[^\"]*\"|'[^']*'|[^\s\"',;&}\]\)]+)")
_AFTER_FLAG = re.compile(r"(=|\s+)(?!<redacted>)(?!-)(\"[^\"]*\"|'[^']*'|[^\s\"']+)")
_ARGV_FLAG = re.compile(r"--?[A-Za-z][\w-]*$")
# Words a secret name contains (lower case): where to look before asking SECRET_NAME.
_NAME_WORDS = (
    "token",
    "secret",
    "pass",
    "credential",
    "cookie",
    "signature",
    "auth",
    "key",
    "pwd",
    "session",
    "bearer",
)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_EMPTY_VALUES = frozenset({"null", "None", "true", "false", '""', "''"})

# Key shapes, each behind a cheap substring gate: Python's re scans every position for
# every alternative, so a gate (C-speed ``in``) is what keeps ordinary log text cheap.
_SHAPES: list[tuple[tuple[str, ...], bool, str, str]] = [
    # (gates, gate on lower-cased text?, pattern, replacement); lower-cased gates are
    # (a word of _NAME_WORDS already found, a longer substring that must also be there)
    # Authorization / Proxy-Authorization headers: keep the scheme name, drop the rest.
    (
        ("auth", "authorization"),
        True,
        r"(?i)((?:proxy-)?authorization\"?\s*[:=]\s*\"?(?:(?:bearer|basic|token|digest|negotiate)\s+)?)"
        r"(?!<redacted>)[^\s\"',}]+",
        r"\1" + MASK,
    ),
    (("bearer", "bearer"), True, r"(?i)(\bbearer\s+)(?!<redacted>)[A-Za-z0-9._~+/=-]{8,}", r"\1" + MASK),
    (("sk-",), False, r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}", MASK),
    (("hf_",), False, r"\bhf_[A-Za-z0-9]{20,}", MASK),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), False, r"\bgh[pousr]_[A-Za-z0-9]{30,}", MASK),
    (("glpat-",), False, r"\bglpat-[A-Za-z0-9_-]{20,}", MASK),
    (("xox",), False, r"\bxox[abposr]-[A-Za-z0-9-]{10,}", MASK),
    (("AKIA", "ASIA"), False, r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", MASK),
    (("eyJ",), False, r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}", MASK),  # JWT
    # user:password@host in URLs.
    (("://",), False, r"([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:)(?!<redacted>)[^@\s/]+(@)", r"\1" + MASK + r"\2"),
]
_PEM = re.compile(r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----(?:.|\n)*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)")
_PEM_TAIL = re.compile(r"\A(?:.|\n)*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)")
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
_PEM_MASK = "-----BEGIN PRIVATE KEY-----" + MASK + "-----END PRIVATE KEY-----"

MIN_LEARNT = 6
"""Shorter secret values are masked where they stand but not hunted for in all text."""


class Redactor:
    """Removes secrets from text, env maps and structures.

    Args:
        extra_patterns: more regular expressions whose matches are masked.
        extra_names: more env-variable name patterns whose values are secret.

    Raises:
        re.error: an extra pattern is not a valid regular expression.
    """

    def __init__(self, extra_patterns: Iterable[str] = (), extra_names: Iterable[str] = ()) -> None:
        self._shapes = [(gates, low, re.compile(p), r) for gates, low, p, r in _SHAPES]
        self._extra = [re.compile(p) for p in extra_patterns]
        self._names = [re.compile(n, re.I) for n in extra_names]
        self._known: set[str] = set()
        self._known_re: re.Pattern[str] | None = None
        self._pem_open: set[tuple[str, str, str]] = set()

    @classmethod
    def from_environment(cls) -> Redactor:
        """A redactor with extra patterns from ``K3TUI_REDACT`` (``;``-separated) and the config file.

        An invalid pattern is skipped (and named on stderr) rather than stopping the session.
        """
        patterns = [p for p in os.environ.get("K3TUI_REDACT", "").split(";") if p.strip()]
        cfg = os.path.join(os.environ.get("XDG_CONFIG_HOME", os.path.expanduser("~/.config")), "k3tui", "redact.txt")
        try:
            with open(cfg, encoding="utf-8") as fh:
                patterns += [ln.strip() for ln in fh if ln.strip() and not ln.startswith("#")]
        except (OSError, UnicodeDecodeError):
            pass
        good = []
        for p in patterns:
            try:
                re.compile(p)
                good.append(p)
            except re.error as exc:
                import sys

                print(f"k3tui: ignoring redaction pattern {p!r}: {exc}", file=sys.stderr)
        return cls(extra_patterns=good)

    # --- names and values ---------------------------------------------------------

    def is_secret_name(self, name: str) -> bool:
        """Whether a variable, key or flag with this name holds a secret."""
        if any(p.search(name) for p in self._names):
            return True
        return bool(SECRET_NAME.search(name)) and not NOT_SECRET_NAME.search(name)

    def learn(self, value: str) -> None:
        """Remember a secret value so its literal occurrences are masked everywhere."""
        value = value.strip().strip("\"'")
        if len(value) >= MIN_LEARNT and MASK not in value and value not in self._known:
            self._known.add(value)
            alts = sorted(self._known, key=len, reverse=True)
            self._known_re = re.compile("|".join(re.escape(v) for v in alts))

    # --- text ---------------------------------------------------------------------

    def text(self, s: str) -> str:
        """Mask every secret in a piece of text."""
        if len(s) < 5:  # too short for "name=value" or any key shape; a user's pattern may still match
            return self._extras(s)
        if self._known_re is not None and any(k in s for k in self._known):
            s = self._known_re.sub(MASK, s)
        low = s.lower()
        words = [w for w in _NAME_WORDS if w in low]
        if "key" in words and "private key" in low:
            s = _PEM.sub(_PEM_MASK, s)
        for gates, on_low, rx, repl in self._shapes:
            if on_low:
                hit = gates[0] in words and gates[1] in low
            else:
                hit = any(g in s for g in gates)
            if hit:
                s = rx.sub(repl, s)
        if words:
            s = self._names_in_text(s, words)
        return self._extras(s)

    def _extras(self, s: str) -> str:
        for rx in self._extra:
            s = rx.sub(MASK, s)
        return s

    def _names_in_text(self, s: str, words: list[str]) -> str:
        """Mask the value after every secret-looking ``name=value``, ``name: value`` or ``--flag value``."""
        low = s.lower()
        spans: dict[int, int] = {}
        seen: set[int] = set()
        for word in words:
            i = low.find(word)
            while i >= 0:
                start, end = _name_around(s, i, i + len(word))
                if start not in seen:
                    seen.add(start)
                    hit = self._value_after(s, start, end)
                    if hit is not None:
                        spans[hit[0]] = hit[1]
                i = low.find(word, end)
        if not spans:
            return s
        out, pos = [], 0
        for a in sorted(spans):
            if a < pos:
                continue
            out += [s[pos:a], MASK]
            pos = spans[a]
        out.append(s[pos:])
        return "".join(out)

    def _value_after(self, s: str, start: int, end: int) -> tuple[int, int] | None:
        """The span of the secret value that follows the name s[start:end], if it is secret."""
        name = s[start:end]
        bare = name.lstrip("-")
        if not bare or not (bare[0].isalpha() or bare[0] == "_"):
            return None
        if name.startswith("-") and len(name) - len(bare) <= 2:
            m = _AFTER_FLAG.match(s, end) or _AFTER_NAME.match(s, end)
        else:
            m = _AFTER_NAME.match(s, end)
        if m is None or m.group(2) in _EMPTY_VALUES or not self.is_secret_name(bare):
            return None
        self.learn(m.group(2))
        return m.start(2), m.end(2)

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """Mask the values of secret-looking variables (and learn them)."""
        out: dict[str, str] = {}
        for k, v in env.items():
            v = "" if v is None else str(v)
            if self.is_secret_name(str(k)):
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
            return self._mapping(value)
        if isinstance(value, (list, tuple)):
            if value and all(isinstance(x, str) and "=" in x for x in value) and key.lower() in ("env", "environment"):
                return self.env_list(value)
            return self._sequence(value, key if self.is_secret_name(key) else "")
        return value

    def _sequence(self, value: list[Any] | tuple[Any, ...], key: str) -> list[Any]:
        """A list; in an argv (``["vllm", "--api-key", "X"]``) the value after a secret flag is masked."""
        out = []
        after_secret_flag = False
        for v in value:
            if after_secret_flag and isinstance(v, str) and not v.startswith("-"):
                out.append(self._secret_value(v))
            else:
                out.append(self.obj(v, key))
            after_secret_flag = isinstance(v, str) and _ARGV_FLAG.match(v) is not None and self.is_secret_name(v)
        return out

    def _mapping(self, value: Mapping[Any, Any]) -> dict[Any, Any]:
        # {"key": "HF_TOKEN", "old": "…", "new": "…"}: the entry names a secret variable
        named = next((value[k] for k in ("key", "name", "var", "variable") if isinstance(value.get(k), str)), None)
        if named is not None and self.is_secret_name(named):
            return {
                k: (v if k in ("key", "name", "var", "variable") else self._secret_value(v)) for k, v in value.items()
            }
        return {k: self.obj(v, str(k)) for k, v in value.items()}

    def _secret_value(self, v: Any) -> Any:
        if isinstance(v, str):
            self.learn(v)
            return MASK if v else v
        return self.obj(v)

    def event(self, event: Any) -> Any:
        """A copy of an event with every string field redacted (the event itself is not changed)."""
        if not isinstance(event, msgspec.Struct):
            return self.obj(event)
        changes: dict[str, Any] = {}
        for name in event.__struct_fields__:
            v = getattr(event, name)
            if name == "env" and isinstance(v, dict):
                nv: Any = self.env(v)
            elif isinstance(v, str):
                nv = self._field_text(event, name, v)
            elif isinstance(v, (dict, list)):
                nv = self.obj(v, name)
            else:
                continue
            if nv != v:
                changes[name] = nv
        return msgspec.structs.replace(event, **changes) if changes else event

    def _field_text(self, event: Any, name: str, v: str) -> str:
        if name != "text" or not hasattr(event, "stream"):
            return self.text(v)
        return self._stream_text((getattr(event, "host", ""), getattr(event, "id", ""), event.stream), v)

    def _stream_text(self, key: tuple[str, str, str], s: str) -> str:
        """Output text: a private key cut across chunks stays masked until its END line."""
        if key in self._pem_open:
            m = _PEM_TAIL.match(s)
            assert m is not None  # the pattern matches any string
            if "-----END" in m.group(0):
                self._pem_open.discard(key)
            s = MASK + s[m.end() :]
        out = self.text(s)
        begins = [m.end() for m in _PEM_BEGIN.finditer(s)]
        if begins and "-----END" not in s[begins[-1] :]:
            self._pem_open.add(key)
        return out


def _name_around(s: str, i: int, j: int) -> tuple[int, int]:
    """Grow s[i:j] to the whole identifier (letters, digits, ``_ . -``) around it."""
    while i > 0 and s[i - 1] in _NAME_CHARS:
        i -= 1
    n = len(s)
    while j < n and s[j] in _NAME_CHARS:
        j += 1
    return i, j

"""Redaction at write time: secrets never reach the disk.

Every event passes through one :class:`Redactor` before it is recorded, shown or
exported. Three layers:

1. **Names** (env maps, dict keys, ``NAME=value`` and ``--flag value`` in text): a name
   looks secret when it contains TOKEN, SECRET, PASSWORD, AUTH, CREDENTIAL, COOKIE,
   or ends in KEY (``HF_TOKEN``, ``HUGGING_FACE_HUB_TOKEN``, ``OPENAI_API_KEY``,
   ``--api-key``, ``db_password``). Secret values are *learnt*, so the same secret echoed
   later in a log line is caught by its literal value too.
2. **Shapes** (command lines, output, HTTP bodies): ``Authorization:`` headers, bearer
   tokens, ``sk-…``/``hf_…``/``ghp_…``/AWS/JWT-style keys and the other issuers' prefixes
   gitleaks and detect-secrets know (NGC ``nvapi-``, Stripe, Google, Slack …), credentials
   and tokens in URLs, webhook paths, signed-URL parameters, netrc entries, registry logins,
   client password flags (``mysql -p``, ``sshpass -p``, ``redis-cli -a`` …), login positionals
   (``wandb login KEY``), private key blocks (PGP, PuTTY too), token-like values beside a
   credential word (entropy), password-like values after "password is" / "NGC key:" —
   plus extra patterns from ``K3TUI_REDACT`` or the config file. Output is redacted as the
   continuation of its stream's unfinished line, so a value cut from its name by a chunk
   boundary is still found.
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

import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec

try:  # google-re2: one linear-time pass finds every place a secret can start (see _Gate)
    import re2 as _re2

    if not hasattr(_re2, "Options"):  # another package's "re2" module: not the one we know
        _re2 = None
except ImportError:  # the pure-Python path below gives the same result, slower
    _re2 = None

MASK = "<redacted>"

# A name (env var, dict key, CLI flag) whose value is a secret.
SECRET_NAME = re.compile(
    r"(?i)token(?!s|i[sz]|_?ids?(?![a-z]))|secret|passw|passphrase|credential|cookie|signature|auth(?!or(?!i))|"
    r"(?<=.)keys?(?![a-z])|private_?key|(?<=[_.-])pwd?$|^pw$|(?<=[_.-])pass$|^pass$|(?:store|key)pass$|session_?id"
)
# Names that match the above but hold no secret: where a secret lives, counts, switches.
NOT_SECRET_NAME = re.compile(
    r"(?i)(?:[_.-](?:path|file|dir|url_base|count|size|len|cache|home|ids?|limit|ttl|timeout|enabled|type|mode|"
    r"backend|budget|length|num|stdin|warning))$|^(?:author|authors|keyboard|signature)$"
)

# After a secret-looking name: the separator and the value ("name = value", "--flag value").
# An HTTP auth scheme word ("Authorization: Bearer X") is skipped: the secret is what follows
# it, and learning the scheme word itself would let every later token through.
_SGR = r"(?:\x1b\[[0-9;]*[mK])*"  # colour codes (env | grep --color=always) around the separator
_VALUE_CHAR = r"[^\s\"',;&}\]\)\x1b]"
# A separator inside an unquoted value ("pass: Tr0ub4dor&3", "p@ss;w0rd", "pw=a,b9") is part of it, unless
# the value ends there: at a space, a second separator ("&&"), or the next "name=" ("?token=x&next=/").
# Closing brackets stay the end ("f(token=x).y", "{TOKEN}/run"): in code and reprs they close the value.
_VALUE_PUNCT = r"(?:[,;]|&(?!&))+(?![A-Za-z_][\w.-]*[=:])(?=" + _VALUE_CHAR + r")"
_AFTER_NAME = re.compile(
    r"(" + _SGR + r"\"?\s*[=:]" + _SGR + r"\s*\"?(?:(?i:bearer|basic|token|digest|negotiate)\s+)?+)"
    r"(?!<redacted>)(\"[^\"]*\"|'[^']*'|" + _VALUE_CHAR + r"(?:" + _VALUE_CHAR + r"|" + _VALUE_PUNCT + r")*)"
)
_INNER_PUNCT = re.compile(r"[,;&]")
# A value after "password is" / "NGC key:": quoted (the inside), or unquoted as after a name.
_LOOSE_VALUE = (
    r"(?:\"(?=[^\"\n]*\")|'(?=[^'\n]*'))?(?!<redacted>)"
    r"((?<=\")[^\"\n]*|(?<=')[^'\n]*|" + _VALUE_CHAR + r"(?:" + _VALUE_CHAR + r"|" + _VALUE_PUNCT + r")*)"
)
_AFTER_FLAG = re.compile(r"(=|\s+)(?!<redacted>)(?!-)(\"[^\"]*\"|'[^']*'|[^\s\"']+)")
_ARGV_FLAG = re.compile(r"--?[A-Za-z][\w-]*$")
# Words a secret name contains (lower case): where to look before asking SECRET_NAME.
_NAME_WORDS = ("token", "secret", "pass", "credential", "cookie", "signature", "auth", "key", "pw", "session")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_EMPTY_VALUES = frozenset({"null", "None", "true", "false", '""', "''"})


class _Shape:
    """A secret shape found from its needle: C-speed ``find`` for the needle, then one
    anchored ``match`` per hit. (Python's re would otherwise try every alternative at every
    position of every log chunk, which made redaction the recorder's whole cost.)"""

    def __init__(
        self,
        needles: tuple[str, ...],
        pattern: str,
        on_low: bool = False,
        word_start: bool = True,
        check: Callable[[str], bool] | None = None,
        before: Callable[[str, int], bool] | None = None,
    ) -> None:
        self.needles = needles
        self.rx = re.compile(pattern)
        self.on_low = on_low
        self.word_start = word_start
        self.check = check
        """A last test of the matched value (token-like, not a word or a path)."""
        self.before = before
        """A test of what stands before the needle (s, its position): a qualifying word ("NGC key")."""

    def spans(
        self,
        s: str,
        low: str,
        out: list[tuple[int, int]],
        asc: str | None = None,
        absent: frozenset[str] = frozenset(),
        present: set[str] | None = None,
    ) -> None:
        """Append the secret spans of s. ``asc``/``low``: haystacks whose ASCII characters sit
        at the same positions as in s (``asc`` defaults to s); ``absent``: needles known not
        to occur, skipped without a pass; ``present``: else, the only ones (lower case) that may."""
        hay = low if self.on_low else (s if asc is None else asc)
        for needle in self.needles:
            if needle in absent or (present is not None and needle.lower() not in present):
                continue
            i = hay.find(needle)
            while i >= 0:
                if not (self.word_start and i > 0 and s[i - 1] in _WORD_CHARS) and (
                    self.before is None or self.before(s, i)
                ):
                    m = self.rx.match(s, i)
                    if m is not None:
                        g = 1 if self.rx.groups else 0
                        if self.check is None or self.check(m.group(g)):
                            out.append((m.start(g), m.end(g)))
                i = hay.find(needle, i + 1)


_SHAPES = [
    # Authorization / Proxy-Authorization headers: keep the scheme name, drop the rest.
    _Shape(
        ("authorization",),
        r"(?i)authorization\"?\s*[:=]\s*\"?(?:(?:bearer|basic|token|digest|negotiate)\s+)?+(?!<redacted>)([^\s\"',}]+)",
        on_low=True,
        word_start=False,
    ),
    _Shape(("bearer",), r"(?i)bearer\s+(?!<redacted>)([A-Za-z0-9._~+/=-]{8,})", on_low=True),
    _Shape(("sk-",), r"sk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"),
    _Shape(("hf_",), r"hf_[A-Za-z0-9]{20,}"),
    _Shape(("gh",), r"gh[pousr]_[A-Za-z0-9]{30,}"),
    _Shape(("glpat-",), r"glpat-[A-Za-z0-9_-]{20,}"),
    _Shape(("xox",), r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    _Shape(("AKIA", "ASIA"), r"(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    _Shape(("eyJ",), r"eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),  # JWT
]


def token_like(value: str) -> bool:
    """Whether a value beside a credential word looks like a token: letters *and* digits, not a
    path, and random enough (Shannon entropy, as detect-secrets and gitleaks use for generic keys)."""
    if value.startswith(("/", ".", "<")) or not any(c.isdigit() for c in value) or not any(c.isalpha() for c in value):
        return False
    n = len(value)
    bits = -sum(k / n * math.log2(k / n) for k in Counter(value).values())
    return bits >= 3.0


_PLACEHOLDER_START = ("/", "./", "~/", "<", "$", "{", "%", "[", "*")


def password_like(value: str) -> bool:
    """Whether a value after "password is", "NGC key:" … can be a password: at least 6 characters with a
    digit or punctuation ("hunter2", "Tr0ub4dor&3", a hex key, a quoted phrase), not a path or a
    placeholder. Plain words stay ("password is incorrect", "secret is required.")."""
    v = value.rstrip(".,;:!?)")
    if len(v) < 6 or v in _EMPTY_VALUES or v.startswith(_PLACEHOLDER_START):
        return False
    return any(c.isdigit() for c in v) or (any(c.isalpha() for c in v) and not v.isalpha())


_KEY_QUALIFIERS = frozenset(
    "api ngc nvidia access secret private license licence auth master encryption signing account service client app "
    "admin deploy wandb openai anthropic hf mailgun twilio sendgrid stripe github gitlab slack".split()
)


def _qualified_key(s: str, i: int) -> bool:
    """Whether the "key" at s[i] follows a word that makes it a credential ("NGC key", "api_key")."""
    j = i - 1 if i > 0 and s[i - 1] in " \t_-" else i
    k = j
    while k > 0 and s[k - 1].isalpha():
        k -= 1
    return s[k:j].lower() in _KEY_QUALIFIERS


# Known key shapes (compared with gitleaks' and detect-secrets' rule sets): each a prefix its
# issuer put there so scanners can find it, and the minimum length of what follows.
_SHAPES += [
    _Shape(("nvapi-",), r"nvapi-[A-Za-z0-9_-]{20,}"),  # NVIDIA NGC
    _Shape(("github_pat_",), r"github_pat_[A-Za-z0-9_]{22,}"),  # GitHub fine-grained
    _Shape(("sk_live_", "sk_test_", "rk_live_", "rk_test_"), r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"),  # Stripe
    _Shape(("AIza",), r"AIza[0-9A-Za-z_-]{35}"),  # Google API key
    _Shape(("npm_",), r"npm_[A-Za-z0-9]{36}"),
    _Shape(("pypi-",), r"pypi-AgE[A-Za-z0-9_-]{50,}"),
    _Shape(("SG.",), r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),  # SendGrid
    _Shape(("dop_v1_", "doo_v1_", "dor_v1_"), r"do[opr]_v1_[a-f0-9]{64}"),  # DigitalOcean
    _Shape(("dapi",), r"dapi[a-f0-9]{32}"),  # Databricks
    _Shape(("dckr_pat_",), r"dckr_pat_[A-Za-z0-9_-]{20,}"),  # Docker Hub
    _Shape(("hvs.", "hvb."), r"hv[sb]\.[A-Za-z0-9_-]{24,}"),  # HashiCorp Vault
    _Shape(("AGE-SECRET-KEY-1",), r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    _Shape(("xapp-",), r"xapp-[A-Za-z0-9-]{10,}"),  # Slack app token
    _Shape(("glrt-", "glptt-", "gldt-", "glft-", "glsoat-"), r"gl(?:rt|ptt|dt|ft|soat)-[A-Za-z0-9_-]{20,}"),  # GitLab
    _Shape(("glsa_", "glc_"), r"gl(?:sa|c)_[A-Za-z0-9_=+/-]{32,}"),  # Grafana
    _Shape(("shpat_", "shpss_", "shpca_", "shppa_"), r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),  # Shopify
    _Shape(("SK",), r"SK[0-9a-fA-F]{32}(?![0-9A-Za-z])"),  # Twilio API key
    _Shape(("key-",), r"key-[0-9a-f]{32}(?![0-9A-Za-z])"),  # Mailgun
    _Shape(("api_org_",), r"api_org_[A-Za-z0-9]{30,}"),  # Hugging Face organisation
    _Shape(("r8_",), r"r8_[A-Za-z0-9]{37}"),  # Replicate
    _Shape(("gsk_",), r"gsk_[A-Za-z0-9]{48,}"),  # Groq
    _Shape(("pplx-",), r"pplx-[A-Za-z0-9]{40,}"),  # Perplexity
    _Shape(("xai-",), r"xai-[A-Za-z0-9]{70,}"),  # xAI
    _Shape(("lsv2_",), r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),  # LangSmith
    _Shape(("pcsk_",), r"pcsk_[A-Za-z0-9_]{40,}"),  # Pinecone
    _Shape(("ya29.",), r"ya29\.[0-9A-Za-z_-]{20,}"),  # Google OAuth access token
    _Shape(("LTAI",), r"LTAI[A-Za-z0-9]{20}(?![A-Za-z0-9])"),  # Alibaba Cloud
    _Shape(("PMAK-",), r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),  # Postman
    _Shape(("lin_api_",), r"lin_api_[A-Za-z0-9]{40}"),  # Linear
    _Shape(("sntrys_",), r"sntrys_[A-Za-z0-9_+/=-]{40,}"),  # Sentry
    _Shape(("sq0atp-", "sq0csp-"), r"sq0(?:atp|csp)-[0-9A-Za-z_-]{22,}"),  # Square
    _Shape(("dp.pt.",), r"dp\.pt\.[A-Za-z0-9]{40,}"),  # Doppler
    _Shape(("pscale_",), r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9=._-]{32,}"),  # PlanetScale
    _Shape(("NRAK-",), r"NRAK-[A-Z0-9]{27}"),  # New Relic
    _Shape(("tskey-",), r"tskey-[a-z]+-[A-Za-z0-9_-]{16,}"),  # Tailscale
    # Webhook URLs: the path is the secret (Slack, Discord).
    _Shape(
        ("hooks.slack.com/",),
        r"(?i)hooks\.slack\.com/(?:services|workflows|triggers)/(?!<redacted>)([A-Za-z0-9/_-]{8,})",
        on_low=True,
        word_start=False,
    ),
    _Shape(("/api/webhooks/",), r"/api/webhooks/(?!<redacted>)([0-9]+/[A-Za-z0-9_-]{16,})", word_start=False),
    # Signed-URL parameters not named like a secret (X-Amz-Signature, access_token … are).
    _Shape(
        ("?sig=", "&sig=", "?key=", "&key=", "?code=", "&code="),
        r"(?i)[?&](?:sig|key|code)=(?!<redacted>)([^&\s#\"'<>]+)",
        on_low=True,
        word_start=False,
    ),
    # "docker login -u me -p X" (also podman, helm registry, oras …).
    _Shape(("login",), r"(?i)login\b[^\n]*?[ \t](?:-p|--password)(?:=|[ \t]+)(?!<redacted>)([^\s\"']+)", on_low=True),
    # "curl -u user:password …"
    _Shape(
        ("curl",),
        r"(?i)curl\b[^\n]*?[ \t](?:-u|--user)(?:=|[ \t]*)[\"']?[^\s:\"']+:(?!<redacted>)([^\s\"']+)",
        on_low=True,
    ),
    # "echo X | docker login --password-stdin"
    _Shape(
        ("echo",),
        r"(?i)echo[ \t]+(?:-[ne]+[ \t]+)?[\"']?(?!<redacted>)([^\s|\"']+)[\"']?[ \t]*\|[^\n]*--password-stdin",
        on_low=True,
    ),
    # Password flags of common clients ("mysql -pX", "sshpass -p X", "redis-cli -a X" …); their long
    # forms (--password X) and env (PGPASSWORD, MYSQL_PWD, REDISCLI_AUTH) are secret names already.
    *(
        _Shape(needles, r"(?i:" + tool + r")\b[^\n]*?[ \t]" + flag + r"(?!<redacted>)(?!-)([^\s\"']+)", on_low=True)
        for needles, tool, flag in (
            (("mysql", "mariadb"), r"mysql[a-z_]*|mariadb(?:-[a-z]+)?", r"-p"),  # attached only: "-p db" prompts
            (("sshpass",), r"sshpass", r"-p[ \t]*"),
            (("redis-cli",), r"redis-cli", r"-a[ \t]+"),
            (("mongo",), r"mongo(?:sh|dump|restore|export|import|stat|top|files)?", r"-p[ \t]+"),
            (("ldap",), r"ldap[a-z]*", r"-w[ \t]*"),
            (("sqlcmd", "bcp", "osql", "isql"), r"sqlcmd|bcp|osql|isql", r"-P[ \t]*"),
            (("zip", "unzip", "7z"), r"zip|unzip|7z[az]?", r"(?:-P[ \t]*|-p)"),
            (("twine",), r"twine", r"-p[ \t]+"),
            (("smbclient", "rpcclient"), r"smbclient|rpcclient", r"(?:-U|--user(?:=|[ \t]))[ \t]*[^\s%\"']+%"),
        )
    ),
    # Login commands whose token is a positional or a keyword ("wandb login KEY", "ngrok authtoken X",
    # "wandb.login(key='…')"); "--token X" and "-p X" are covered by name and by the rule above.
    _Shape(
        ("wandb",),
        r"(?i)wandb[ \t]+login(?:[ \t]+(?:--host(?:=|[ \t]+)\S+|--?[a-z][\w-]*))*[ \t]+(?!<redacted>)(?!-)([^\s\"']+)",
        on_low=True,
    ),
    _Shape(
        ("ngrok",),
        r"(?i)ngrok[ \t]+(?:config[ \t]+add-)?authtoken[ \t]+(?!<redacted>)(?!-)([^\s\"']+)",
        on_low=True,
    ),
    _Shape(
        ("login(",),
        r"(?i)login\((?:[^)\n]*?\bkey[ \t]*=[ \t]*)?(?!<redacted>)(\"[^\"\n]+\"|'[^'\n]+')",
        on_low=True,
    ),
    # "password is hunter2", "db secret was x9!" (a password, not only a token: see password_like).
    _Shape(
        ("passw", "passphrase", "pw", "secret", "credential"),
        r"(?i)(?<![a-z0-9])(?:passw(?:or)?d|passphrase|pw|secret|credentials?)[ \t]+(?:is|was)[ \t]+" + _LOOSE_VALUE,
        on_low=True,
        word_start=False,
        check=password_like,
    ),
    # "NGC key is 0a1b…", "API key: x9…", "license key = …": a key after a word that makes it a credential.
    _Shape(
        ("key",),
        r"(?i)keys?(?:[ \t]+(?:is|was)[ \t]+|[ \t]*[:=][ \t]*)" + _LOOSE_VALUE,
        on_low=True,
        word_start=False,
        check=password_like,
        before=_qualified_key,
    ),
    # A token-like value beside a credential word ("db pw is 9fK…", "token 3c1e…"): entropy-checked.
    _Shape(
        ("token", "secret", "passw", "pw", "api_key", "api-key", "apikey", "access_key", "access-key", "credential"),
        r"(?i)(?:token|secret|passw(?:or)?d|pw|api[_-]?key|access[_-]?key|credentials?)"
        r"(?:[ \t]+(?:is|was))?[ \t]*[:=]?[ \t]+[\"']?(?!<redacted>)([A-Za-z0-9+/_.~=-]{16,})",
        on_low=True,
        check=token_like,
    ),
]
# Netrc entries ("machine h login u password p"), over lines: followed to their end by the gate.
_NETRC = _Shape(
    ("machine",),
    r"(?i)machine\s+\S+(?:\s+(?:login|account|port)\s+\S+)*\s+password\s+(?!<redacted>)(\S+)",
    on_low=True,
)
_SHAPES.append(_NETRC)
# A PuTTY key file (PuTTY-User-Key-File-2/3): the base64 lines after "Private-Lines: N" are the key.
_PPK = _Shape(
    ("private-lines:",),
    r"(?i)private-lines:[ \t]*\d+[ \t]*\r?\n((?:[A-Za-z0-9+/=]+[ \t]*\r?\n)*[A-Za-z0-9+/=]+)(?=[ \t]*(?:\r?\n|\Z))",
    on_low=True,
    word_start=False,
)
_SHAPES.append(_PPK)
_PPK_OPEN = re.compile(r"(?i)private-lines:[ \t]*\d*[ \t]*(?:\r?\n(?:[A-Za-z0-9+/=]*[ \t]*\r?\n)*[A-Za-z0-9+/=]*)?\Z")
"""A chunk that ends inside a PuTTY key's private lines: the next chunk of the stream goes on with them."""
_PPK_TAIL = re.compile(r"\A(?:\r?\n)?(?:[A-Za-z0-9+/=]+[ \t]*(?:\r?\n|\Z))*")  # (the cut line's end first)
_AUTH_SHAPES = [_SHAPES[0], _SHAPES[1], _NETRC, _PPK]
"""The Authorization header, the bearer token, a netrc entry and a PuTTY key: their value may sit on a later line."""
_LOOSE_AFTER = re.compile(
    r"(?i:[ \t]+keys?(?:[ \t]+(?:is|was)[ \t]|[ \t]*[:=]))|[ \t]+(?:is|was)[ \t]"
    r"|(?:[ \t]+(?:is|was))?[ \t]*[:=]?[ \t]+[\"']?[A-Za-z0-9+/_.~=-]{16}"
)
"""What follows a credential word when a rule beside the name may match ("password is x9", "secret key: …",
a token-like value): the gate keeps such a name hit."""
# user:password@host in URLs (matched from the scheme's start, found by its "://").
_URL_CREDS = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:(?!<redacted>)([^@\s/]+)@")
_URL_USER = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://(?!<redacted>)([^/\s:@]{16,})@")
# RSA, EC, OpenSSH, PKCS#8 and PGP ("-----BEGIN PGP PRIVATE KEY BLOCK-----") private keys.
_PEM = re.compile(
    r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY(?: BLOCK)?-----(?:.|\n)*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
)
_PEM_TAIL = re.compile(r"\A(?:.|\n)*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)")
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_PEM_MASK = "-----BEGIN PRIVATE KEY-----" + MASK + "-----END PRIVATE KEY-----"

# Fast path (see Redactor.text). A pass of ``str.find`` per needle made the cost of a chunk
# ~20 passes over it, although most needles never occur in log text. Each regex below is
# led by one literal character, which re scans for in C (as fast as a ``find``), and tells
# which of its needles can occur; the needles that cannot are skipped. Every occurrence of a
# needle in the lowered text contains a match of its lead: a lead may over-report, never
# hide, a needle. (Matches do not overlap, so no suffix may contain its lead character
# where another needle of the group could start: hence "si(?=a)", not "sia", for ASIA.)
_LEADS: tuple[tuple[re.Pattern[str], dict[str, str]], ...] = (
    (re.compile(r"k(en|ie|ey|-|ia)"), {"en": "token", "ie": "cookie", "ey": "key", "-": "sk-", "ia": "AKIA"}),
    (re.compile(r"s(ecret|ession)"), {"ecret": "secret", "ession": "session"}),
    (re.compile(r"a(uth|si(?=a))"), {"uth": "auth", "si": "ASIA"}),
    (re.compile(r"p(ass|w)"), {"ass": "pass", "w": "pw"}),
    (re.compile(r"d(ential)"), {"ential": "credential"}),
    (re.compile(r"g(h(?=[pousr]_)|lpat-|nature)"), {"h": "gh", "lpat-": "glpat-", "nature": "signature"}),
    (re.compile(r"b(earer)"), {"earer": "bearer"}),
    (re.compile(r"y(j)"), {"j": "eyJ"}),
    (re.compile(r"x(ox)"), {"ox": "xox"}),
    (re.compile(r"h(f_)"), {"f_": "hf_"}),
)
# Needles the leads speak for ("authorization" needs "auth", "private key" needs "key").
_GATED = frozenset({n for _, names in _LEADS for n in names.values()} | {"authorization"})
# The only characters whose lower case is (or contains) ASCII, or is not one character:
# with them in a chunk, s.lower() does not line up with s, so the reference path runs.
_ODD_LOWER = ("\u0130", "\u212a")

MIN_LEARNT = 6
"""Shorter secret values are masked where they stand but not hunted for in all text."""
_FAST_FROM = 200  # shorter texts: a find per needle costs less than the leads (measured)
_SHORT = 64  # texts up to this long are remembered with their result (field values repeat)
_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate"})
_TAIL_KEEP = 512  # how much of a stream's unfinished last line is kept to join with its next chunk
GATE_FROM = _FAST_FROM
"""Texts at least this long go through the gate (when google-re2 is installed). It was 4096; with
the key shapes of issue 16 the leads path grew to ~45 finds a chunk, and the gate's one DFA pass
is cheaper from 200 characters on (typical 1–20-line log chunks: 24 µs vs 77 µs, measured)."""


class _Gate:
    """Where in a long text a secret *can* start, found by RE2 in one pass.

    Why: a 64 KiB chunk of log holds a secret almost never, yet the leads above still cost
    ten regex passes plus a lowering of the whole chunk (~11 ns per byte, the recorder's
    whole cost when a log floods). RE2 runs a DFA: every alternative at once, linear time.

    The gate is a *superset* of the rules of :meth:`Redactor._text_reference_tail`, on
    ASCII bytes that line up with the text (non-ASCII as ``?``): the words of every
    ``SECRET_NAME`` alternative with its lookarounds written as the continuations they
    allow (``tokens``, ``tokenizer``, ``token_ids``, ``author`` and a ``key`` that starts a
    name cannot be secret names, and they fill vLLM logs), each key shape's prefix and
    minimum length, credentials in URLs, auth headers and private keys. A name hit whose
    whole identifier is not a secret name (the cached check) is dropped. The redactor runs
    its exact rules on the whole lines around each other hit only (a hit whose rule may run
    over lines is followed to its end); the rest of the text passes through untouched. With
    extra secret-name patterns configured, every name word is a hit (``broad``).
    """

    _WORDS_NARROW = (
        rb"token(?:$|[^si_]|i(?:$|[^szd]|d(?:[a-rt-z]|s[a-z]))|_(?:$|[^i]|i(?:$|[^d]|d(?:[a-rt-z]|s[a-z]))))"
        rb"|secret|pass(?:w|phrase|$|[^a-z0-9_.\-])|credential|cookie|signature"
        rb"|auth(?:$|[^o]|o$|o[^r]|ori)|[a-z0-9_.\-]keys?(?:$|[^a-z])|private_?key|pwd?(?:$|[^a-z0-9_.\-])|session_?id"
    )

    def __init__(self, re2: Any) -> None:
        shapes = [
            rb"sk-[A-Za-z0-9_\-]{16}",
            rb"hf_[A-Za-z0-9]{20}",
            rb"gh[pousr]_[A-Za-z0-9]{30}",
            rb"glpat-[A-Za-z0-9_\-]{20}",
            rb"xox[abposr]-[A-Za-z0-9\-]{10}",
            rb"(?:AKIA|ASIA)[A-Z0-9]{16}",
            rb"eyJ[A-Za-z0-9_\-]{10}",
            rb"nvapi-[A-Za-z0-9_\-]{20}",
            rb"github_pat_[A-Za-z0-9_]{22}",
            rb"[sr]k_(?:live|test)_[A-Za-z0-9]{16}",
            rb"AIza[0-9A-Za-z_\-]{35}",
            rb"npm_[A-Za-z0-9]{36}",
            rb"pypi-AgE[A-Za-z0-9_\-]{50}",
            rb"SG\.[A-Za-z0-9_\-]{22}\.",
            rb"do[opr]_v1_[a-f0-9]{64}",
            rb"dapi[a-f0-9]{32}",
            rb"dckr_pat_[A-Za-z0-9_\-]{20}",
            rb"hv[sb]\.[A-Za-z0-9_\-]{24}",
            rb"AGE-SECRET-KEY-1",
            rb"xapp-[A-Za-z0-9\-]{10}",
            rb"gl(?:rt|ptt|dt|ft|soat)-[A-Za-z0-9_\-]{20}",
            rb"(?i:curl)",
            rb"gl(?:sa|c)_[A-Za-z0-9_=+/\-]{32}",
            rb"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}",
            rb"SK[0-9a-fA-F]{32}",
            rb"key-[0-9a-f]{32}",
            rb"api_org_[A-Za-z0-9]{30}",
            rb"r8_[A-Za-z0-9]{37}",
            rb"gsk_[A-Za-z0-9]{48}",
            rb"pplx-[A-Za-z0-9]{40}",
            rb"xai-[A-Za-z0-9]{70}",
            rb"lsv2_",
            rb"pcsk_[A-Za-z0-9_]{40}",
            rb"ya29\.[0-9A-Za-z_\-]{20}",
            rb"LTAI[A-Za-z0-9]{20}",
            rb"PMAK-",
            rb"lin_api_",
            rb"sntrys_",
            rb"sq0(?:atp|csp)-",
            rb"dp\.pt\.",
            rb"pscale_",
            rb"NRAK-",
            rb"tskey-",
            # client password flags, login positionals: the tool's name (short, as "login" below)
            rb"(?i:mysql|mariadb|sshpass|redis-cli|mongo|ldap|sqlcmd|bcp|osql|isql|zip|7z|twine|smbclient|rpcclient)",
            rb"(?i:wandb|ngrok)",
            # "NGC key is …" (with "_", "-" or nothing between, the key is a name hit already)
            rb"(?i:(?:" + "|".join(sorted(_KEY_QUALIFIERS)).encode() + rb")[ \t]+key)",
            rb"(?i:hooks\.slack\.com/)",
            rb"/api/webhooks/[0-9]",
            rb"(?i:[?&](?:sig|key|code)=)",
            rb"(?i:login)",  # short: a long hit would swallow the hits after it on its line
            rb"(?i:echo[ \t])",
            # from "//": a name hit may have taken the ":" ("bypass://u:pw@h" gives the hit "pass:")
            rb"//[^/\t-\r :@]+:[^@\t-\r /]+@",  # RE2's \s is narrower than Python's: never \s here
            rb"//[^/\t-\r :@]{16,}@",  # a token as the URL's user
        ]

        def build(words: bytes) -> Any:
            return re2.compile(
                b"|".join(
                    [
                        rb"(?i:(private key))",  # group 1: a key block runs over lines: whole-text path
                        rb"(?i:(authorization|bearer|machine|private-lines))",  # group 2: may run over lines
                        rb"(?i:(" + words + rb"))",  # group 3: a name; its value may be quoted over lines
                        *shapes,
                    ]
                )
            )

        self.narrow = build(self._WORDS_NARROW)
        self.broad = build(b"|".join(w.encode() for w in _NAME_WORDS))


_GATE = _Gate(_re2) if _re2 is not None else None


class _NeedleFinder:
    """Which needles (of every key shape and name word) occur in a short text, by RE2.

    Why: a text under ``GATE_FROM`` characters (most events are one log line) took a ``find``
    per needle, and the needles grew to over a hundred with the issuers' shapes and client
    flags: most of the time of a line went there. One search per occurrence (usually none)
    gives the same set. Exact: the alternatives are sorted longest first, so a match at a
    position is the longest needle there and every other needle there is its prefix; the
    next search starts one character on, so needles that overlap are found too.
    """

    def __init__(self, re2: Any) -> None:
        needles = {n.lower() for shape in _SHAPES for n in shape.needles} | set(_NAME_WORDS)
        order = sorted(needles, key=lambda n: (-len(n), n))
        lit = (b"".join(bytes([c]) if chr(c).isalnum() else b"\\x%02x" % c for c in n.encode()) for n in order)
        self.rx = re2.compile(b"(?i:" + b"|".join(lit) + b")")
        self.prefixes = {n: frozenset(p for p in order if n.startswith(p)) for n in order}
        self.shapes: dict[str, list[_Shape]] = {n: [] for n in order}
        for shape in _SHAPES:
            for n in {x.lower() for x in shape.needles}:
                self.shapes[n].append(shape)

    def present(self, asc: bytes) -> set[str]:
        found: set[str] = set()
        search, pos = self.rx.search, 0
        while (m := search(asc, pos)) is not None:
            found |= self.prefixes[m.group().decode().lower()]
            pos = m.start() + 1
        return found


_NEEDLES = _NeedleFinder(_re2) if _re2 is not None else None
_NAME_WORD_SET = frozenset(_NAME_WORDS)


_ORIGIN_KEYS = frozenset({"env_origin"})
"""Maps of variable NAME → where it came from (``{"HF_TOKEN": "process"}``): the names are not values and
the words are not secrets — walked like env, ``process`` would be learnt as a secret and masked everywhere."""


class Redactor:
    """Removes secrets from text, env maps and structures.

    Args:
        extra_patterns: more regular expressions whose matches are masked.
        extra_names: more env-variable name patterns whose values are secret.

    Raises:
        re.error: an extra pattern is not a valid regular expression.
    """

    def __init__(
        self, extra_patterns: Iterable[str] = (), extra_names: Iterable[str] = (), *, gate_from: int = GATE_FROM
    ) -> None:
        self.gate_from = gate_from
        """Texts at least this long take the RE2 gate (the tests lower it to reach the gate with short texts)."""
        self._name_cache: dict[str, bool] = {}
        self._extra = [re.compile(p) for p in extra_patterns]
        self._names = [re.compile(n, re.I) for n in extra_names]
        self._known: set[str] = set()
        self._known_re: re.Pattern[str] | None = None
        self._learnt = 0  # how many values were learnt: a cached text is only valid for one count
        self._short: dict[str, str] = {}  # short texts (host names, stream names, ids) already redacted
        self._pem_open: set[tuple[str, str, str]] = set()
        self._ppk_open: set[tuple[str, str, str]] = set()
        self._tails: dict[tuple[str, str, str], str] = {}
        """Per output stream: its unfinished last line (a secret's name may end a chunk, its value start the next)."""

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

    def _secret_name_cached(self, name: str) -> bool:
        hit = self._name_cache.get(name)
        if hit is None:
            if len(self._name_cache) > 50_000:
                self._name_cache.clear()
            hit = self._name_cache[name] = self.is_secret_name(name)
        return hit

    def learn(self, value: str) -> None:
        """Remember a secret value so its literal occurrences are masked everywhere."""
        value = value.strip().strip("\"'")
        if value.lower() in _AUTH_SCHEMES:  # "Bearer" is how a secret is sent, not the secret
            return
        if len(value) >= MIN_LEARNT and MASK not in value and value not in self._known:
            self._known.add(value)
            self._learnt += 1
            self._short.clear()
            alts = sorted(self._known, key=len, reverse=True)
            self._known_re = re.compile("|".join(re.escape(v) for v in alts))

    # --- text ---------------------------------------------------------------------

    def text(self, s: str) -> str:
        """Mask every secret in a piece of text."""
        if len(s) < 5:  # too short for "name=value" or any key shape; a user's pattern may still match
            return self._extras(s)
        if len(s) > _SHORT:
            return self._text(s)
        hit = self._short.get(s)
        if hit is None:
            learnt = self._learnt
            hit = self._text(s)
            if learnt == self._learnt:  # the text taught nothing: the same text gives the same result
                if len(self._short) >= 4096:
                    self._short.clear()
                self._short[s] = hit
        return hit

    def _text(self, s: str) -> str:
        learnt = self._learnt
        out = self._rules(self._known_sub(s))
        # A value learnt from this text ("export HF_TOKEN=x9…; echo x9…") is masked where else it stands in it.
        return self._known_sub(out) if self._learnt != learnt else out

    def _known_sub(self, s: str) -> str:
        """Mask every learnt secret value where it stands."""
        if self._known_re is not None and any(k in s for k in self._known):
            s = self._known_re.sub(MASK, s)
        return s

    def _rules(self, s: str) -> str:
        """Every rule but the learnt values, by the cheapest exact path for the text's size."""
        if len(s) < _FAST_FROM:
            return self._text_reference_tail(s)
        if _GATE is not None and len(s) >= self.gate_from:
            gated = self._gated(s, _GATE)
            if gated is not None:
                return gated
        if s.isascii():
            asc = s
        elif (twin := _ascii_twin(s)) is not None:
            asc = twin.decode("ascii")
        else:
            return self._text_reference_tail(s)
        low = asc.lower()
        found = {"authorization"}
        for rx, names in _LEADS:
            for x in set(rx.findall(low)):
                found.add(names[x])
        if "auth" not in found:
            found.discard("authorization")
        if "key" in found and "private key" in low:
            s = _PEM.sub(_PEM_MASK, s)
            return self._text_reference_tail(s, pem_done=True)
        absent = _GATED - found
        spans: list[tuple[int, int]] = []
        self._name_spans(s, low, spans, absent)
        for shape in _SHAPES:
            shape.spans(s, low, spans, asc, absent)
        if "://" in asc:
            self._url_spans(s, spans, asc)
        return self._extras(_mask(s, spans) if spans else s)

    def _gated(self, s: str, gate: _Gate) -> str | None:
        """The exact rules run on the lines around each gate hit only (None: use the whole-text path)."""
        asc = _ascii_twin(s)
        if asc is None:
            return None
        spans: list[tuple[int, int]] = []
        for m in (gate.broad if self._names else gate.narrow).finditer(asc):
            a, e = m.span()
            if m.start(1) >= 0:
                return None  # a private key block: the whole-text path masks it across lines
            if m.start(3) >= 0:  # a name: masked only as _value_after would, its value maybe quoted over lines
                a, b = _name_around(s, a, a + 1)
                value = self._value_match(s, a, b)
                if value is None and _LOOSE_AFTER.match(s, b) is not None:
                    e = max(e, s.find("\n", b) % (len(s) + 1))  # the token-like rule may match: keep its line
                elif value is None:
                    # No value to mask (max_num_batched_tokens=8192, "Token indices", oauth2-redirect).
                    # Dropping the hit hides nothing: a name hit's only non-word character is its
                    # last, so no key shape (each starts after a non-word character) begins inside.
                    continue
                else:
                    e = max(e, value.end())
            else:
                if m.start(2) >= 0:  # "Authorization: Bearer X" may run over lines: find its end by its rule
                    for shape in _AUTH_SHAPES:
                        if (hit := shape.rx.match(s, a)) is not None:
                            e = max(e, hit.end())
                # A key shape lies inside one identifier and may have swallowed a name hit in it
                # ("xoxb-tokentokenx=" then a value on the next line): follow that name's value too.
                ia, ib = _name_around(s, e - 1, e)
                if ib > ia and (value := self._value_match(s, ia, ib)) is not None:
                    e = max(e, value.end())
            spans.append((a, e))
        if not spans:
            return self._extras(s)
        spans.sort()
        n = len(s)
        regions: list[tuple[int, int]] = []  # whole lines around the hits, merged
        for a, e in spans:
            if regions and a < regions[-1][1]:
                if e > regions[-1][1]:
                    end = s.find("\n", e)
                    regions[-1] = (regions[-1][0], n if end < 0 else end + 1)
                continue
            end = s.find("\n", e)
            regions.append((s.rfind("\n", 0, a) + 1, n if end < 0 else end + 1))
        if sum(b - a for a, b in regions) * 2 > n:
            return None  # hits everywhere: the whole-text path is cheaper than many small ones
        out: list[str] = []
        pos = 0
        for a, b in regions:
            out.append(s[pos:a])
            out.append(self._text_reference_tail(s[a:b], extras=False))
            pos = b
        out.append(s[pos:])
        return self._extras("".join(out))

    def text_reference(self, s: str) -> str:
        """The plain form of :meth:`text` (every needle searched, on ``s.lower()``): the
        fast path must give the same result; kept for the tests and for odd text."""
        if len(s) < 5:
            return self._extras(s)
        learnt = self._learnt
        out = self._text_reference_tail(self._known_sub(s), plain=True)
        return self._known_sub(out) if self._learnt != learnt else out

    def _text_reference_tail(self, s: str, pem_done: bool = False, extras: bool = True, plain: bool = False) -> str:
        """Every rule on s. ``plain``: a ``find`` per needle (the reference); else the needles
        present are found first, by RE2 when it is installed (the same result, see _NeedleFinder)."""
        low = _lower(s)
        if not pem_done and "private key" in low:
            s = _PEM.sub(_PEM_MASK, s)
            low = _lower(s)
        spans: list[tuple[int, int]] = []
        asc = None if plain or _NEEDLES is None else _ascii_twin(s)
        if asc is None:
            for shape in _SHAPES:
                shape.spans(s, low, spans)
            absent: frozenset[str] = frozenset()
        else:
            present = _NEEDLES.present(asc)
            run: set[_Shape] = set()
            for n in present:
                run.update(_NEEDLES.shapes[n])
            for shape in run:  # (spans are sorted when masked: the order of the shapes does not matter)
                shape.spans(s, low, spans, present=present)
            absent = _NAME_WORD_SET - present
        if "://" in s:
            self._url_spans(s, spans)
        self._name_spans(s, low, spans, absent)
        out = _mask(s, spans) if spans else s
        return self._extras(out) if extras else out

    def _extras(self, s: str) -> str:
        for rx in self._extra:
            s = rx.sub(MASK, s)
        return s

    @staticmethod
    def _url_spans(s: str, out: list[tuple[int, int]], asc: str | None = None) -> None:
        hay = s if asc is None else asc
        i = hay.find("://")
        while i >= 0:
            j = i
            while j > 0 and s[j - 1] in _SCHEME_CHARS:
                j -= 1
            m = _URL_CREDS.match(s, j)
            if m is None:
                m = _URL_USER.match(s, j)  # a token as the URL's user (https://github_pat_…@github.com)
                m = m if m is not None and token_like(m.group(1)) else None
            if m is not None:
                out.append((m.start(1), m.end(1)))
            i = hay.find("://", i + 3)

    def _name_spans(self, s: str, low: str, out: list[tuple[int, int]], absent: frozenset[str] = frozenset()) -> None:
        """Values after every secret-looking ``name=value``, ``name: value`` or ``--flag value``
        (name words in ``absent`` are known not to occur in ``low``)."""
        seen: set[int] = set()
        for word in _NAME_WORDS:
            if word in absent:
                continue
            i = low.find(word)
            while i >= 0:
                start, end = _name_around(s, i, i + len(word))
                if start not in seen:
                    seen.add(start)
                    hit = self._value_after(s, start, end)
                    if hit is not None:
                        out.append(hit)
                i = low.find(word, end)

    def _value_after(self, s: str, start: int, end: int) -> tuple[int, int] | None:
        """The span of the secret value that follows the name s[start:end], if it is secret."""
        m = self._value_match(s, start, end)
        if m is None:
            return None
        value = m.group(2)
        self.learn(value)
        if value[:1] not in ("'", '"') and (cut := _INNER_PUNCT.search(value)) is not None:
            self.learn(value[: cut.start()])  # "export TOKEN=x9…;cd /": x9… alone is the secret echoed later
        return m.start(2), m.end(2)

    def _value_match(self, s: str, start: int, end: int) -> re.Match[str] | None:
        """The separator and value (group 2) after the name s[start:end], if the name is secret."""
        name = s[start:end]
        bare = name.lstrip("-")
        if not bare or not (bare[0].isalpha() or bare[0] == "_") or not self._secret_name_cached(bare):
            return None
        if name.startswith("-") and len(name) - len(bare) <= 2:
            m = _AFTER_FLAG.match(s, end) or _AFTER_NAME.match(s, end)
        else:
            m = _AFTER_NAME.match(s, end)
        if m is None or m.group(2) in _EMPTY_VALUES:
            return None
        return m

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
            # (an item without "=" is a name passed through from the host: env_list redacts it as text)
            if value and all(isinstance(x, str) for x in value) and key.lower() in ("env", "environment"):
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
        return {k: v if k in _ORIGIN_KEYS else self.obj(v, str(k)) for k, v in value.items()}

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
        # The env map first: its values are learnt by their names, and the command beside it may echo one.
        for name in sorted(event.__struct_fields__, key=lambda n: n != "env"):
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
        """Output text: a private key cut across chunks stays masked until its END line, and a
        value cut from its name (``Authorization: Bearer`` | ``eyJ…``) is masked in the next chunk."""
        if key in self._pem_open:
            m = _PEM_TAIL.match(s)
            assert m is not None  # the pattern matches any string
            if "-----END" in m.group(0):
                self._pem_open.discard(key)
            s = MASK + s[m.end() :]
        if key in self._ppk_open:  # a PuTTY key's private lines go on in this chunk
            m = _PPK_TAIL.match(s)
            assert m is not None  # the pattern matches any string
            if m.end() < len(s):
                self._ppk_open.discard(key)
            if m.end():
                s = MASK + s[m.end() :] if s[m.end() - 1] != "\n" else MASK + "\n" + s[m.end() :]
        tail = self._tails.get(key, "")[-20:]  # "Private-Li" | "nes: 3\n…": the header may be cut too
        out = self._after_tail(key, s)
        begins = [m.end() for m in _PEM_BEGIN.finditer(s)] if "PRIVATE KEY" in s else []
        if begins and "-----END" not in s[begins[-1] :]:
            self._pem_open.add(key)
        if "Private-Lines:" in s:
            if _PPK_OPEN.search(s) is not None:
                self._ppk_open.add(key)
        elif tail and "Private-Lines:" in tail + s[:20] and _PPK_OPEN.search(tail + s) is not None:
            self._ppk_open.add(key)
        return out

    def _after_tail(self, key: tuple[str, str, str], s: str) -> str:
        """Redact s as the continuation of the stream's unfinished last line.

        The line so far is redacted again with s after it; where the result no longer starts
        with that line alone redacted, a secret crosses the chunk boundary: s is shown from
        inside the mask that covers it. Log chunks usually end at a newline: no cost then.
        """
        tail = self._tails.get(key, "")
        if not tail:
            out = self.text(s)
        else:
            # The rules first: a value learnt from the first part (masked alone) would otherwise
            # stand in front of the rest of the token, and a mask never starts after a mask.
            joined = self._known_sub(self._rules(tail + s))
            alone = self._known_sub(self._rules(tail))
            if joined.startswith(alone):
                out = joined[len(alone) :]
            else:
                k = len(os.path.commonprefix([joined, alone]))
                j = joined.rfind(MASK, 0, k + len(MASK))  # the mask over the boundary starts at or before it
                out = MASK + joined[j + len(MASK) :] if j >= 0 and j + len(MASK) > k else self.text(s)
        line = (tail + s).rpartition("\n")[2]
        if line:
            self._tails[key] = line[-_TAIL_KEEP:]
        else:
            self._tails.pop(key, None)
        return out


def secret_variable(key: str) -> bool:
    """Whether a run variable (``env:HF_TOKEN``, ``flag:--api-key``, ``hf_token``) holds a secret, by its name."""
    bare = key.split(":", 1)[1] if key.startswith(("env:", "flag:")) else key
    bare = bare.lstrip("-")
    return bool(bare) and bool(SECRET_NAME.search(bare)) and not NOT_SECRET_NAME.search(bare)


def shown(key: str, value: Any) -> str:
    """``repr(value)`` of a run variable for display, masked by the variable's *name*.

    Why structural: a rendered change reads ``env:WANDB_API_KEY: None → 'abc…'``; a text
    scan takes "None" as the value and lets the real one through. Unset stays ``None``.
    """
    if value is None or value == "" or not secret_variable(str(key)):
        return repr(value)
    return repr(MASK)


def _ascii_twin(s: str) -> bytes | None:
    """s as ASCII bytes, one per character (non-ASCII as ``?``), so a position found in it is
    the same position in s: every needle is ASCII without "?". None when s holds a character
    whose lower case is ASCII or longer (``_ODD_LOWER``): then only the reference path is exact."""
    if s.isascii():
        return s.encode("ascii")
    if any(c in s for c in _ODD_LOWER):
        return None
    return s.encode("ascii", "replace")


def _lower(s: str) -> str:
    """``s.lower()`` with every character where it was: positions found in it are used on s.
    ("İ".lower() is two characters; shifting every later position made text after it leak,
    or raise IndexError.)"""
    low = s.lower()
    if len(low) != len(s):
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in s)
    return low


def _name_around(s: str, i: int, j: int) -> tuple[int, int]:
    """Grow s[i:j] to the whole identifier (letters, digits, ``_ . -``) around it."""
    while i > 0 and s[i - 1] in _NAME_CHARS:
        i -= 1
    n = len(s)
    while j < n and s[j] in _NAME_CHARS:
        j += 1
    return i, j


def _mask(s: str, spans: list[tuple[int, int]]) -> str:
    """Replace the (possibly overlapping) spans of s with MASK, each merged run once."""
    spans.sort()
    out, pos = [], 0
    run_start, run_end = spans[0]
    for a, b in spans[1:]:
        if a <= run_end:
            run_end = max(run_end, b)
            continue
        out += [s[pos:run_start], MASK]
        pos = run_end
        run_start, run_end = a, b
    out += [s[pos:run_start], MASK, s[run_end:]]
    return "".join(out)

"""Redaction gaps of issue 16 (and 22), each a class of generated shapes, on every path.

Classes: secrets that are not ``NAME=value`` (registry logins, a token as a URL's user,
webhook paths, signed-URL parameters, netrc entries, PGP blocks, colour codes between a
name and its ``=``, operator notes), the known key shapes gitleaks and detect-secrets carry
(NGC, Stripe, Google, Slack …), token-like values beside credential words, ``_``-led names,
numeric values under secret names, a learnt secret of exactly the minimum length, a
value cut from its name by an output chunk boundary; and from the second audit: values with
punctuation in them, "password is …" / "NGC key is …" forms, password flags of common clients,
login positionals (``wandb login KEY``), Twilio, Mailgun and more issuers' shapes, PuTTY key files. Every text goes through the reference
path, the leads path and the RE2 gate (``gate_from=0``), which must agree, and between real
log lines (the gate redacts the hit's lines only).
"""

from __future__ import annotations

import random
import string

from hypothesis import given, settings
from hypothesis import strategies as st

from k3tui import events as ev
from k3tui import redact as _redact
from k3tui.redact import MASK, MIN_LEARNT, Redactor

_PAD = "INFO 11-30 06:12:00 [model_runner.py:1234] Chunked prefill is enabled with max_num_batched_tokens=8192.\n"
_ALNUM = string.ascii_letters + string.digits


def _tok(n: int, alphabet: str = _ALNUM) -> st.SearchStrategy[str]:
    """A random token of n characters with a digit and a letter (what keys look like; seeded by hypothesis)."""

    def make(seed: int) -> str:  # from a seed: shrinking gives another random token, not "aaaa…0"
        r = random.Random(seed)
        return "".join(r.choice(alphabet) for _ in range(n - 2)) + r.choice("abcdefXYZ") + r.choice("0123456789")

    return st.integers(0, 2**32).map(make)


_HEX = "0123456789abcdef"
_PUNCT = "!@#$%^&*+?~;,"  # no "=": "x;a=b" is the next name, not the same value


def _hex(n: int) -> st.SearchStrategy[str]:
    """n random hex digits with a letter and a digit among them."""
    return st.integers(0, 2**32).map(
        lambda seed: (lambda r: "".join(r.choice(_HEX) for _ in range(n - 2)) + r.choice("abcdef") + r.choice("0123"))(
            random.Random(seed)
        )
    )


def _password(n: int) -> st.SearchStrategy[str]:
    """A password with punctuation inside it (never at its end: "x&" then a space ends a value)."""

    def make(seed: int) -> str:
        r = random.Random(seed)
        body = [r.choice(_ALNUM + _PUNCT) for _ in range(n - 3)]
        pw = r.choice("abcXYZ") + "".join(body) + r.choice(_PUNCT) + r.choice("0123456789")
        return pw.replace("&&", "&a")  # "x&&y" is two shell commands

    return st.integers(0, 2**32).map(make)


def _ppk(body: str) -> str:
    """A PuTTY key file whose private lines are the body (64 characters a line)."""
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-20240101\nPublic-Lines: 2\n"
        "AAAAC3NzaC1lZDI1NTE5AAAAIGq7\nAAAA\n"
        f"Private-Lines: {len(lines)}\n" + "\n".join(lines) + "\nPrivate-MAC: 4f2a9c0e"
    )


# (secret value strategy, how it is written in text): the value must vanish from every path.
_CASES = {
    "ngc": (_tok(40, _ALNUM + "_-").map(lambda t: "nvapi-" + t), "docker login nvcr.io -u '$oauthtoken' -p {v}"),
    "ngc-stdin": (_tok(40).map(lambda t: "nvapi-" + t), "echo {v} | docker login nvcr.io --password-stdin"),
    "stdin": (_tok(14), "echo '{v}' | docker login -u me --password-stdin"),
    "login-p": (_tok(12), "podman login registry.example.com -u me -p {v}"),
    "pat-user": (_tok(60, _ALNUM + "_").map(lambda t: "github_pat_" + t), "git clone https://{v}@github.com/o/r.git"),
    "url-user": (_tok(32), "pip install git+https://{v}@git.example.com/r.git"),
    "slack-hook": (_tok(24).map(lambda t: f"T0ABC12/B0DEF34/{t}"), "curl https://hooks.slack.com/services/{v}"),
    "discord-hook": (_tok(40).map(lambda t: f"1234567890/{t}"), "POST https://discord.com/api/webhooks/{v}"),
    "sas-sig": (_tok(30), "https://a.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig={v}&se=2030"),
    "google-key": (_tok(35, _ALNUM + "_-").map(lambda t: "AIza" + t), "GET https://maps.googleapis.com/x?key={v}"),
    "amz-sig": (_tok(64, _HEX), "https://b.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4&X-Amz-Signature={v}"),
    "netrc": (_tok(14), "machine api.example.com\n  login me\n  password {v}"),
    "netrc-line": (_tok(14), "machine h.example.com login me password {v}"),
    "stripe": (_tok(24).map(lambda t: "sk_live_" + t), "stripe key {v} in env"),
    "npm": (_tok(36).map(lambda t: "npm_" + t), "//registry.npmjs.org/:_authToken {v}"),
    "vault": (_tok(30, _ALNUM + "_-").map(lambda t: "hvs." + t), "vault token {v}"),
    "gitlab-runner": (_tok(24).map(lambda t: "glrt-" + t), "register --token {v}"),
    "curl-user": (_tok(14), "curl -sS -u admin:{v} https://x/api"),
    "grep-colour": (_tok(12), "\x1b[01;31m\x1b[KDB_PASSWORD\x1b[m\x1b[K={v}"),
    "note-pw": (_tok(10), "db pw: {v}"),
    "note-entropy": (_tok(24), "the api token is {v} for now"),
    "bare-ngc": (_tok(40).map(lambda t: "nvapi-" + t), "{v}"),
    "underscore-name": (_tok(12), "_HF_TOKEN={v}"),
    "numeric-key": (st.integers(1000, 10**12).map(str), "API_KEY: {v}"),
    # issue 16, second audit: punctuation in values, "is" forms, client password flags, login positionals,
    # Twilio, Mailgun and the other issuers' shapes gitleaks carries, PuTTY key files.
    "pass-punct": (_password(12), "ssh pass: {v}"),
    "password-is": (_password(8), "the db password is {v} (rotate it)"),
    "password-was": (_tok(8), "root password was {v}"),
    "password-quoted": (_password(10), "password is '{v}'"),
    "ngc-key-is": (_hex(32), "NGC key is {v}"),
    "api-key-colon": (_tok(20), "OpenAI API key: {v}"),
    "license-key": (_password(16), "license key = {v}"),
    "secret-key-is": (_tok(24), "Django secret key is {v}"),
    "wandb-login": (_hex(40), "wandb login {v}"),
    "wandb-relogin": (_hex(40), "wandb login --relogin --host https://wandb.example.com {v}"),
    "wandb-py": (_hex(40), "python -c \"import wandb; wandb.login(key='{v}')\""),
    "hf-cli-login": (_tok(30), "huggingface-cli login --token {v} --add-to-git-credential"),
    "hf-auth-login": (_tok(30), "hf auth login --token {v}"),
    "ngrok": (_tok(40), "ngrok config add-authtoken {v}"),
    "mysql-p": (_password(12), "mysql -h db -u root -p{v} -e 'select 1'"),
    "mysql-password": (_password(12), "mysqldump --user=root --password={v} app > dump.sql"),
    "pgpassword": (_password(12), "PGPASSWORD={v} psql -h db -U app"),
    "sshpass": (_tok(12), "sshpass -p {v} ssh root@gpu-node-3"),
    "sshpass-attached": (_tok(12), "sshpass -p{v} scp x root@h:/tmp"),
    "redis-cli": (_tok(16), "redis-cli -h cache -a {v} --no-auth-warning ping"),
    "mongosh": (_tok(16), "mongosh --host db -u admin -p {v}"),
    "ldapsearch": (_tok(16), "ldapsearch -x -D cn=admin -w {v} -b dc=x"),
    "sqlcmd": (_tok(16), "sqlcmd -S db -U sa -P {v} -Q 'select 1'"),
    "7z": (_tok(16), "7z x -p{v} weights.7z"),
    "unzip": (_tok(16), "unzip -P {v} weights.zip"),
    "smbclient": (_tok(16), "smbclient //nas/share -U admin%{v}"),
    "keytool": (_tok(16), "keytool -importkeystore -srcstorepass {v} -destkeystore x.p12"),
    "twilio": (_hex(32).map(lambda t: "SK" + t), "TWILIO key {v}"),
    "mailgun": (_hex(32).map(lambda t: "key-" + t), "curl --user api:{v} https://api.mailgun.net"),
    "mailgun-bare": (_hex(32).map(lambda t: "key-" + t), "sending with {v}"),
    "hf-org": (_tok(34).map(lambda t: "api_org_" + t), "{v}"),
    "replicate": (_tok(37).map(lambda t: "r8_" + t), "REPLICATE {v}"),
    "groq": (_tok(52).map(lambda t: "gsk_" + t), "{v}"),
    "google-oauth": (_tok(60, _ALNUM + "_-").map(lambda t: "ya29." + t), "x-goog: {v}"),
    "alibaba": (_tok(20).map(lambda t: "LTAI" + t), "ak {v} region cn"),
    "sentry": (_tok(60).map(lambda t: "sntrys_" + t), "{v}"),
    "putty": (_tok(192, _ALNUM + "+/"), "cat ~/.ssh/id.ppk\n" + _ppk("{v}")),
    "pgp": (
        _tok(64, _ALNUM + "+/"),
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGF{v}\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----",
    ),
}


def _paths(text: str) -> dict[str, str]:
    padded = _PAD * 40 + text + "\n" + _PAD * 40
    return {
        "reference": Redactor().text_reference(text),
        "short/leads": Redactor().text(text),
        "leads, long": Redactor(gate_from=10**9).text(padded),
        "gate": Redactor(gate_from=0).text(padded),
        "gate, short": Redactor(gate_from=0).text(text),
    }


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_every_class_is_masked_on_every_path(data):
    for name, (values, form) in _CASES.items():
        v = data.draw(values, label=name)
        text = form.format(v=v)
        outs = _paths(text)
        for path, out in outs.items():
            assert v not in out, (name, path, out[-300:])
        padded = _PAD * 40 + text + "\n" + _PAD * 40
        assert Redactor(gate_from=0).text(padded) == Redactor().text_reference(padded), name


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "nvapi-", "github_pat_", "sk_live_", "AIza", "hooks.slack.com/services/", "/api/webhooks/1/", "?sig=",
                "&key=", "?code=", "machine ", " login ", " -p ", "--password ", "echo ", " | docker login --password-stdin",
                " password ", "pw: ", "db pw ", "token is ", "secret ", "\x1b[m\x1b[K=", "_HF_TOKEN=", "API_KEY: ",
                "-----BEGIN PGP PRIVATE KEY BLOCK-----", "-----END PGP PRIVATE KEY BLOCK-----", "https://", "@", "\n",
                "1234", "abcDEF0123456789xyzQ", "hvs.", "npm_", "xapp-", "=", " ", "'", "curl ", " -u ", "a:b", "glrt-",
                " is ", " was ", "password", "secret key", "NGC key", "api_key", "&", ";", ",", ")", "}", "!x9",
                "mysql ", " -p", "sshpass ", "redis-cli ", " -a ", "wandb login ", "ngrok authtoken ", "login(key='",
                "SK0123456789abcdef0123456789abcdef", "key-0123456789abcdef0123456789abcdef", "ya29.", "r8_",
                "Private-Lines: 2\n", "AAAAB3NzaC1yc2EAAAA\n", "Private-MAC: ", "-storepass ", "?token=", "&next=",
            ]
        )
        | st.text(max_size=5),
        max_size=40,
    ).map("".join)
)  # fmt: skip
def test_the_three_paths_agree_on_generated_fragments(s):
    for text in (s, _PAD * 3 + s + "\n" + _PAD * 3, _PAD * 40 + s):
        ref = Redactor()
        want = ref.text_reference(text)
        for fast in (Redactor(), Redactor(gate_from=0)):
            assert fast.text(text) == want, text
            assert fast._known == ref._known


def test_ordinary_vllm_words_are_not_taken_for_secrets():
    for line in (
        "cd $PWD && echo started | tee -a log",
        "pwd=/root/work",
        "docker login --password-stdin < file",
        "Using max_num_batched_tokens=8192 and tokenizer=/models/k3 (tokens 123456789012345678)",
        "prefix caching: 0.12 token hit rate; key 3 of 8 done",
        "password authentication disabled",
        # issue 16, second audit: the new classes leave these alone
        "ERROR: password is incorrect for user 'app'",
        "the secret is required.",
        "the pad token is <pad>; eos token is <|im_end|>",
        "cache key: 0x1f2e3d, prefix key is model_3b",
        "unzip -p archive.zip config.json",
        "mysql -h db -u app -p mydb -P 3306",
        "redis-cli --no-auth-warning ping",
        "the key is cached; api key is set",
        "?token=&next=/home",
        "wandb login --relogin",
        "Private-Lines: 28 (see the PuTTY docs)",
    ):
        assert Redactor().text(line) == line, line


def test_a_learnt_secret_of_exactly_the_minimum_length_is_hunted():
    r = Redactor()
    value = "Zq7!x2"[:MIN_LEARNT]
    assert len(value) == MIN_LEARNT
    r.env({"MY_SECRET": value})
    assert value not in r.text(f"echoed later: {value} and again {value}")
    shorter = value[:-1]
    r2 = Redactor()
    r2.env({"MY_SECRET": shorter})
    assert r2.text(f"x {shorter} y") == f"x {shorter} y"  # shorter: masked where it stands only


_SPLIT_FORMS = [
    ("Authorization: Bearer ", "{v}", " http://x"),
    ('-H "Authorization: Basic ', "{v}", '" -X GET'),
    ("export HF_TOKEN=", "{v}", " && run"),
    ('{"api_key": "', "{v}", '"}'),
    ("vllm serve m --api-key ", "{v}", " --port 8000"),
    ("db pw: ", "{v}", " (rotate)"),
    ("the password is ", "{v}", " for now"),
    ("NGC key is ", "{v}", " (rotate)"),
    ("wandb login ", "{v}", " && train"),
]


@settings(max_examples=40, deadline=None)
@given(form=st.sampled_from(_SPLIT_FORMS), value=_tok(28), gate=st.booleans())
def test_a_value_cut_from_its_name_by_a_chunk_boundary_is_masked_at_every_split(form, value, gate):
    head, _, tail = form
    line = f"{_PAD}{head}{value}{tail}\nINFO next line\n"
    start = len(_PAD) + len(head)
    for i in range(len(_PAD) - 5, len(line) + 1):  # every split point from the line's start to the end
        r = Redactor(gate_from=0 if gate else 10**9)
        first = r.event(ev.Output(id="c1", text=line[:i])).text
        second = r.event(ev.Output(id="c1", text=line[i:])).text
        rest = value[max(0, i - start) :]
        if len(rest) >= 4:
            assert rest not in second, (i, first, second)
        if i <= start + 1:  # the name alone ended the first chunk: nothing of the value may show
            assert value[:4] not in first + second, (i, first, second)
        assert "INFO next line" in first + second
        assert MASK in first + second


def test_a_putty_key_cut_by_chunk_boundaries_stays_masked():
    r7 = random.Random(7)
    body = "".join(r7.choice(_ALNUM + "+/") for _ in range(320))  # 5 private lines
    text = "cat k.ppk\n" + _ppk(body) + "\nINFO next line\n"
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    cuts = [text.index(x) + 30 for x in lines]  # inside each private line
    for gate in (0, 10**9):
        for i in range(1, len(text)):  # one cut anywhere
            r = Redactor(gate_from=gate)
            out = r.event(ev.Output(id="c1", text=text[:i])).text + r.event(ev.Output(id="c1", text=text[i:])).text
            shown = out.replace(MASK, "\x00")
            assert not any(x[5:-5] in shown for x in lines), (i, out)
            # (a cut inside "Private-MAC" masks its start: the first chunk cannot tell it from a private line)
            assert "INFO next line" in out and "-MAC: 4f2a9c0e" in out
        for a, b in zip(cuts, cuts[1:], strict=False):  # the private lines over three chunks
            r = Redactor(gate_from=gate)
            out = "".join(r.event(ev.Output(id="c1", text=t)).text for t in (text[:a], text[a:b], text[b:]))
            assert not any(x[5:-5] in out for x in lines), (a, b, out)
            assert "INFO next line" in out


_ALL_NEEDLES = sorted({n.lower() for shape in _redact._SHAPES for n in shape.needles} | set(_redact._NAME_WORDS))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_ALL_NEEDLES) | st.text("aeksyJ-_.:/ x?", max_size=3), max_size=12).map("".join))
def test_the_needle_finder_finds_every_needle_a_find_would(s):
    """The short-text path asks RE2 which needles occur (overlapping ones too: "keyJ…" holds "key" and "eyJ")."""
    if _redact._NEEDLES is None:
        return  # no google-re2: the short path takes a find per needle
    want = {n for n in _ALL_NEEDLES if n in s.lower()}
    assert _redact._NEEDLES.present(s.encode()) == want


_PUNCT_FORMS = ("ssh pass: {v}", "export DB_PASSWORD={v}", "the db password is {v} (rotate it)", "license key = {v}")


@settings(max_examples=60, deadline=None)
@given(form=st.sampled_from(_PUNCT_FORMS), value=_password(12))
def test_a_value_with_punctuation_is_masked_whole_on_every_path(form, value):
    """Not only the part before its first "&" or ";" ("ssh pass: Tr0ub4dor&3" left "&3")."""
    text = form.format(v=value)
    for path, out in _paths(text).items():
        assert form.format(v=MASK) in out, (path, out[-200:])

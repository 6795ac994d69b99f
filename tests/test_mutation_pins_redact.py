"""Every known secret-key shape is masked (``k3tui/redact.py``), a mutation run found most unpinned (issue 22).

One made-up token per vendor shape the redactor knows (NGC, GitHub, Stripe, Databricks, Vault, …),
written out here rather than derived from the module, so that a shape whose prefix or pattern
stops matching leaks in this test as it would leak in a recording.
"""

from __future__ import annotations

import pytest

from k3tui import events as ev
from k3tui.redact import MASK, Redactor, secret_variable, shown

TOKENS = [
    'authorization"    :    "bearer     T4dK4',
    "bearer     G17gfdOiIUWo",
    "sk-proj-O9pVwIrawQ63Gy64uakB",
    "hf_bYJEz5xRw5Xv6Az56zdhn4ge",
    "ghs_U0R1XuH9RVx4XR0ERvW9UySajvLwzvGfKP",
    "glpat-zFM-LqmXRZa9F_1N22VoPc_z",
    "xoxr-QcX9wcNuGxB9rw",
    "AKIAC4A9P702XDH0TZ9I",
    "eyJzE2-FRig_O4tRR.NQwlPCz-c8y2wi.ipYI2Uu6-W9yrE",
    "nvapi-31wXrKo6NO0RVd-n6RIY0q3R",
    "github_pat_GtqsOogDO003XO62i9NLM6oClv",
    "sk_live_sz6ie2LRHIWOhZExxTrx",
    "AIzaCnFkQOihDSvjGyGA_cHyTfnnHJXVoM4s1Oa",
    "npm_RoNObZq7eyHurOulL1trtcK44G2i4I7gRTJ1",
    "pypi-AgEPv2XdSWGP4QlZ00CgkvvH7KlNw2uytbs17vMrGYu3G8LYcS9qnq4No",
    "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",
    "dop_v1_d159bd18193a183fad1779b105014cc9a0f053ebc9c9d3139bd47d49f63bc609",
    "dapie2897bc8c08005d32b7e9e9d6cd5e19b",
    "dckr_pat_Vxp4q7Gkk_GajwxjPmGvrEnK",
    "hvs.pdW55uuE9ZnUiJ1gWPglS2Jokd_L",
    "AGE-SECRET-KEY-1CSPZSWN5R3SBE67GS0SOUTRF7G9U6J4IRL99550BOKEC2RQI8WOB1D6RID",
    "xapp-CUjBMStBE7A08d",
    "glrt-jbDXSe3h76wQOGO2jILm6oXz",
    "glsa_tiyOfZhzcOllmcmR+ldSSOGF3JzlkLAzD57=",
    "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",
    "SK9D37BeAb951fFFD1BaD3769c79e6672F",
    "key-b0712507c19c35c89180176e429baf54",
    "api_org_bzaj9bxXmwqkfdoleYNre36VJnDNczAfjw",
    "r8_WOh5GODQA4o5Yt8X1jWYiJCidpBHxv6cS3AqM",
    "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",
    "pplx-w0THhUcFf94jdz5kXbkzjFhV3T4w3FaChaCX6NdbFjw5",
    "xai-mHiP0Q6aDYy4YDQMynJjte0Qsj4MvlpjVVb95tbVw1xVV4r8zNC1yehG7O611Lh4kd9QnswgWy",
    "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",
    "pcsk_DkPJfYsfxsZjZ0JPctIoW5fIkOdMfkKJW2PtUm5nUNTC",
    "ya29.NQaljIb7Ry9tip8Ufq1791g7",
    "LTAID8iFt3auWitPxqUWx7X2",
    "PMAK-8ac2e97f31b1912e27f0c2d5-275c93d6d3667310e2a6552ee500afb569",
    "lin_api_X1vlBn7f8pk3YDhoswCf7QEbxaj4j5ftOBsc0AKm",
    "sntrys_b9z/E1grrUtpcFfKCZMZel33mR3==DL5RB21nY-wcUvl",
    "sq0atp-0Xgh3hox49UVNWyVDPEF0oXljO",
    "dp.pt.5RE9n0lxg7fRd4ZyeCZx4RorF1ah8ZBPctaLHpyjtWcv",
    "pscale_tkn_-PrtI8i0IbOaWA.KsFw6C_8ZtZ9OWkA4-.NJ",
    "NRAK-EOGJVVBQTU3PTT85SFTU0C6CIYP",
    "tskey-lcdyb-zuqX8xxB7QhLMayiz9Wi",
    "hooks.slack.com/services/BkJsHdEz5gVl",
    "/api/webhooks/17946/Tzm8cIjdCUNMKRa1VHE4",
    "?sig=U4Gzo",
    "wandb\t\t \t\tlogin\t \t \t--host=l07lS \t\t\t\t--host=oZm6z\t\t\t\t --host=EfOsq  \t  --host=XAdNJ\t \t\t S38MT",
    "ngrok\t\t\t \tconfig\t  \t add-authtoken  \t\t\tojROO",
    'token  \t\t is\t\t  =  \t \t"sxB3z9iZb6DStBYHTj-+',
    "machine     mzaGN     login     n1HOV     login     q39Ce     login     lOJnw     login     axoxs     password     Op2JQ",
    "private-lines:\t\t  58874\t\t \t\r\nWnqny\t   \r\nSFaAa\t  \t\r\nOaacb\t\t\t \r\n=d5+x  \t \r\nqRWRL",
]


@pytest.mark.parametrize("pad", [0, 400], ids=["short-line", "long-line"])
@pytest.mark.parametrize("token", TOKENS)
def test_every_vendor_key_shape_is_masked_in_a_log_line(token, pad):
    """Short lines and long ones (past the length where the fast gate picks where to look)."""
    out = Redactor().text(f"INFO 11-30 06:12:00 [env.py:1] {'x' * pad} using {token} for the download")
    assert token not in out
    assert MASK in out


@pytest.mark.parametrize(
    ("said", "value"),
    [
        ("the password is", "hunter2!X"),
        ("my passphrase was", "c0rrect-h0rse!"),
        ("pw is", "Xk9#pq2z"),
        ("the db secret was", "x9!Qz7wv"),
        ("the credential is", "T0p$ecret9"),
    ],
)
def test_a_password_said_in_words_is_masked(said, value):
    """An operator's note or a script's echo that says the password in words."""
    out = Redactor().text(f"note: {said} {value} for now")
    assert value not in out


@pytest.mark.parametrize("given", ['"Zq8vLx3pW0rTa"', "  Zq8vLx3pW0rTa  ", "'Zq8vLx3pW0rTa'"])
def test_a_value_learnt_with_its_quotes_or_spaces_is_masked_bare(given):
    """A secret learnt from ``KEY="value"`` is masked wherever the value appears, quoted or not."""
    r = Redactor()
    r.learn(given)
    assert "Zq8vLx3pW0rTa" not in r.text("INFO later the client used Zq8vLx3pW0rTa again")


@pytest.mark.parametrize("pad", [0, 400], ids=["short-line", "long-line"])
def test_an_authorization_header_is_masked_on_long_lines_too(pad):
    """``Authorization: Bearer …`` in a logged request, on a short line and on a long one."""
    tok = "Qm9vZ3llV29vZ2llMTIzNDU2"
    out = Redactor().text(f"DEBUG {'x' * pad} headers={{'Authorization': 'Bearer {tok}'}}")
    assert tok not in out


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ("export AUTH_COOKIE=Zq8vLx3pW0rTa", "Zq8vLx3pW0rTa"),
        ("DATABASE_URL is postgresql+psycopg2://admin:S3cretPass@db:5432/x", "S3cretPass"),
        ("connecting to mongodb+srv://svc:Hx7pLq2wZ@cluster0.example.net/db", "Hx7pLq2wZ"),
    ],
    ids=["cookie-name", "url-scheme-with-plus", "srv-url"],
)
def test_a_cookie_variable_and_a_driver_url_password_are_masked(line, secret):
    assert secret not in Redactor().text(line)


# --- issue 22, third session: the survivors of the last runs (each test fails on its mutant) ---------------------

_LONG = "INFO 11-30 06:12:00 [model_runner.py:1234] Chunked prefill is enabled with max_num_batched_tokens=8192.\n"


def _every_path(text: str) -> dict[str, str]:
    """The short path, the leads path on a long text and the RE2 gate on the same long text."""
    padded = _LONG * 4 + text + "\n" + _LONG * 4
    return {
        "short": Redactor().text(text),
        "leads, long": Redactor(gate_from=10**9).text(padded),
        "gate, long": Redactor(gate_from=0).text(padded),
    }


@pytest.mark.parametrize(
    "line",
    ["export COOKIE=Zq8vLx3pW0rTa", "JUPYTER_COOKIE: Zq8vLx3pW0rTa", "curl --cookie Zq8vLx3pW0rTa https://x/api"],
)
def test_a_name_whose_only_secret_word_is_cookie_is_masked(line):
    """No other name word (token, auth, session, key …) in the name: "cookie" alone makes it secret."""
    for path, out in _every_path(line).items():
        assert "Zq8vLx3pW0rTa" not in out, (path, out[-200:])


@pytest.mark.parametrize("empty", ["null", "None", "true", "false", '""', "''"])
@pytest.mark.parametrize("form", ["HF_TOKEN={v}", "api_key: {v}", "--api-key={v}"])
def test_an_empty_value_under_a_secret_name_stays_readable(form, empty):
    """``HF_TOKEN=null`` says the token is missing: what a diagnosis needs, and no secret."""
    line = form.format(v=empty)
    for path, out in _every_path(line).items():
        assert line in out and MASK not in out, (path, out[-200:])


def test_a_twine_upload_password_is_masked():
    line = "twine upload -u alice -p Hx7pLq2wZ9v dist/*"
    for path, out in _every_path(line).items():
        assert "Hx7pLq2wZ9v" not in out and "twine upload -u alice -p " in out, (path, out[-200:])


@pytest.mark.parametrize("field", ["key", "name", "var", "variable"])
def test_a_diff_entry_naming_a_secret_variable_masks_its_values_and_keeps_the_name(field):
    """``{"key": "WANDB_API_KEY", "old": …, "new": …}`` (a run config's diff, YAML or JSON)."""
    entry = {field: "WANDB_API_KEY", "old": "Zq8vLx3pW0rTa", "new": "Hx7pLq2wZ9v", "at": {"rung": 3}}
    r = Redactor()
    out = r.obj({"changes": [entry]})
    assert out == {"changes": [{field: "WANDB_API_KEY", "old": MASK, "new": MASK, "at": {"rung": 3}}]}
    assert r.text("later: Zq8vLx3pW0rTa, Hx7pLq2wZ9v") == f"later: {MASK}, {MASK}"  # both learnt


@pytest.mark.parametrize(
    "header",
    [
        "(Authorization: Basic dXNlcjpwYXNzd29yZA==)",
        "...Authorization: Basic dXNlcjpwYXNzd29yZA==",
        "1.Authorization: Basic dXNlcjpwYXNzd29yZA==",
        "Authorization: Bearer null",
    ],
)
def test_an_authorization_header_on_one_long_line_is_masked_as_on_a_short_one(header):
    """A long single line: the gate's region would be the whole text, so the leads path redacts it; an
    Authorization header there is masked by its own rule, not only as a secret name (whose identifier
    ("...Authorization", "1.Authorization") may not start with a letter)."""
    line = "DEBUG request " + "x" * 240 + " " + header + " sent"
    assert "\n" not in line and len(line) > 250
    want = Redactor().text_reference(line)
    assert "dXNlcjpwYXNzd29yZA" not in want
    assert Redactor().text(line) == want
    assert Redactor(gate_from=10**9).text(line) == want


def _ppk_text() -> tuple[str, list[str]]:
    lines = ["AAAAIGq7Zq8vLx3pW0rTaHx7pLq2wZ9vQp3xT7kLm2Mn4", "BBBBJh5Wc6Yd8Re2Tf4Ug6Vh8Wi0Xj2Yk4Zl6Am8Bn0"]
    head = "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 1\nAAAAC3NzaC1lZDI1NTE5\n"
    return head + "Private-Lines: 2\n" + "\n".join(lines) + "\nPrivate-MAC: 4f2a9c0e\nINFO next line\n", lines


@pytest.mark.parametrize("gate", [0, 10**9])
def test_a_putty_key_whose_header_and_private_lines_are_cut_stays_masked(gate):
    """Three chunks: one cut inside "Private-Lines: 2", one inside the first private line."""
    text, lines = _ppk_text()
    h = text.index("Private-Lines:")
    second = text.index(lines[0]) + 20
    for a in range(h + 1, h + len("Private-Lines: 2")):
        r = Redactor(gate_from=gate)
        out = "".join(r.event(ev.Output(id="c1", text=t)).text for t in (text[:a], text[a:second], text[second:]))
        assert not any(x[:10] in out or x[-10:] in out for x in lines), (a, out)
        assert "INFO next line" in out


@pytest.mark.parametrize("gate", [0, 10**9])
def test_a_putty_key_cut_inside_its_private_lines_keeps_the_line_after_it(gate):
    """The chunk that goes on with the private lines is masked up to their end and keeps the newline
    before ``Private-MAC`` (the key file's lines stay lines)."""
    text, lines = _ppk_text()
    for cut in (text.index(lines[0]) + 20, text.index(lines[1]) + 20):
        r = Redactor(gate_from=gate)
        first = r.event(ev.Output(id="c1", text=text[:cut])).text
        second = r.event(ev.Output(id="c1", text=text[cut:])).text
        assert second == MASK + "\nPrivate-MAC: 4f2a9c0e\nINFO next line\n", (cut, first, second)


@pytest.mark.parametrize("gate", [0, 10**9])
def test_a_token_that_starts_a_line_cut_by_a_chunk_boundary_is_masked_in_the_next_chunk(gate):
    """The mask over the boundary starts at the line's first character (position 0 of the joined line)."""
    token = "hf_" + "Zq8vLx3pW0rTaHx7pLq2wZ9v"
    r = Redactor(gate_from=gate)
    r.event(ev.Output(id="c1", text="INFO loading\n" + token[:12]))
    second = r.event(ev.Output(id="c1", text=token[12:] + " used for the download\n")).text
    assert token[12:] not in second and second == MASK + " used for the download\n"


@pytest.mark.parametrize("gate", [0, 10**9])
def test_a_chunk_that_completes_an_empty_value_is_shown_as_it_came(gate):
    """``TOKEN=nul`` | ``l``: the first chunk alone masked "nul", the line joined holds ``TOKEN=null``,
    which is no secret: no mask crosses the boundary, so the second chunk is shown unchanged."""
    r = Redactor(gate_from=gate)
    r.event(ev.Output(id="c1", text="INFO env\nTOKEN=nul"))
    assert r.event(ev.Output(id="c1", text="l\nINFO next\n")).text == "l\nINFO next\n"


@pytest.mark.parametrize("token", TOKENS)
def test_every_vendor_key_shape_is_masked_between_ordinary_log_lines(token):
    """A chunk of many lines: the RE2 gate (when installed) picks the lines to redact, so each shape must be
    one of its hits; the answer is the reference's."""
    text = _LONG * 20 + f"INFO 11-30 06:12:00 [env.py:1] using {token} for the download\n" + _LONG * 20
    out = Redactor().text(text)
    assert token not in out and MASK in out
    assert out == Redactor().text_reference(text)


# --- the public helpers no covering test called: run variables, env lists, extra names, the config file ---------


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("env:HF_TOKEN", True), ("flag:--api-key", True), ("hf_token", True), ("env:PW", True), ("flag:-pw", True),
        ("env:HF_TOKEN_PATH", False), ("flag:--tokenizer", False), ("flag:--key", False), ("env:", False),
        ("flag:--", False), ("max_num_batched_tokens", False), ("env:NCCL_DEBUG", False), ("env:X:HF_TOKEN", True),
    ],
)  # fmt: skip
def test_a_run_variable_is_secret_by_its_name_without_its_kind_prefix(key, secret):
    """``env:``/``flag:`` and a flag's dashes are not part of the name ("env:PW" is the variable PW)."""
    assert secret_variable(key) is secret


def test_a_run_variable_is_shown_masked_by_its_name_and_unset_stays_unset():
    assert shown("env:WANDB_API_KEY", "abc9Zq8vLx3p") == repr(MASK)
    assert shown("flag:--api-key", 12345) == repr(MASK)
    assert shown("env:WANDB_API_KEY", None) == "None"
    assert shown("env:WANDB_API_KEY", "") == "''"
    assert shown("env:NCCL_DEBUG", "INFO") == "'INFO'"
    assert shown("flag:--max-model-len", 8192) == "8192"


def test_an_env_list_masks_secret_values_learns_them_and_keeps_the_rest():
    r = Redactor()
    items = ["HF_TOKEN=Zq8vLx3pW0rTa", "NCCL_DEBUG=INFO", "WANDB_API_KEY=", "MY_TOKEN", "NOTE=used Zq8vLx3pW0rTa"]
    assert r.env_list(items) == [
        "HF_TOKEN=" + MASK,
        "NCCL_DEBUG=INFO",
        "WANDB_API_KEY=",
        "MY_TOKEN",
        "NOTE=used " + MASK,
    ]
    assert r.text("echo Zq8vLx3pW0rTa") == "echo " + MASK


def test_an_env_map_keeps_unset_and_non_string_values_readable():
    r = Redactor()
    env = {"HF_TOKEN": None, "WANDB_API_KEY": "", "PORT": 8000, "DB_PASSWORD": "Hx7pLq2wZ9v", "CUDA": None}
    assert r.env(env) == {"HF_TOKEN": "", "WANDB_API_KEY": "", "PORT": "8000", "DB_PASSWORD": MASK, "CUDA": ""}


def test_a_structure_masks_lists_under_secret_keys_and_env_lists_under_any_case_of_env():
    r = Redactor()
    scene = {
        "api_keys": ["Zq8vLx3pW0rTa", "Hx7pLq2wZ9v"],
        "Environment": ["HF_TOKEN=Qp3xT7kLm2aa", "A=1"],
        "cmdline": ["vllm", "--api-key", "--port", "8000", "HF_TOKEN", "plain"],
        "tags": ("x", "y"),
    }
    assert r.obj(scene) == {
        "api_keys": [MASK, MASK],
        "Environment": ["HF_TOKEN=" + MASK, "A=1"],
        "cmdline": ["vllm", "--api-key", "--port", "8000", "HF_TOKEN", "plain"],
        "tags": ["x", "y"],
    }


def test_an_env_list_in_a_structure_masks_a_secret_value_whole_and_walks_other_lists_as_lists():
    """Under "env"/"Environment" every item is ``NAME=value``: a password with spaces is masked whole (as
    text, only its first word would be); a list that is not all ``NAME=value`` strings is walked as a list."""
    r = Redactor()
    scene = {"env": ["DB_PASSWORD=correct horse battery", "A=1"], "Environment": ["MY_TOKEN=x y z"]}
    assert r.obj(scene) == {"env": ["DB_PASSWORD=" + MASK, "A=1"], "Environment": ["MY_TOKEN=" + MASK]}
    assert r.obj({"env": ["A=1", 3, "PLAIN"]}) == {"env": ["A=1", 3, "PLAIN"]}
    # a name passed through from the host ("FOO", no "=") beside it: still an env list (it leaked "horse battery")
    mixed = {"env": ["DB_PASSWORD=correct horse battery", "FOO", "prod"]}
    assert Redactor().obj(mixed) == {"env": ["DB_PASSWORD=" + MASK, "FOO", "prod"]}
    assert Redactor().obj({"argv": ["DB_PASSWORD=correct horse battery"]}) == {
        "argv": ["DB_PASSWORD=" + MASK + " horse battery"]
    }


def test_a_value_under_a_secret_key_is_learnt():
    r = Redactor()
    assert r.obj({"api_token": "Zq8vLx3pW0rTa", "n": 3}) == {"api_token": MASK, "n": 3}
    assert r.text("echo Zq8vLx3pW0rTa") == "echo " + MASK


def test_where_a_variable_came_from_is_not_a_value():
    """``env_origin`` maps names to their source: "process" must not be learnt as HF_TOKEN's value."""
    r = Redactor()
    scene = {"env_origin": {"HF_TOKEN": "process", "WANDB_API_KEY": "dotenv"}, "note": "process started"}
    assert r.obj(scene) == scene
    assert r.text("the process started by dotenv") == "the process started by dotenv"


def test_extra_secret_names_count_for_maps_and_text_on_every_path():
    """``extra_names``: a name the built-in words would not call secret (with a word in it the gate must then
    take broadly: "pass_hint" is no narrow name hit)."""
    r = Redactor(extra_names=[r"^corp_", r"^pass_hint$"])
    assert r.is_secret_name("CORP_THING") and r.is_secret_name("pass_hint") and not r.is_secret_name("OTHER")
    assert r.env({"CORP_THING": "Zq8vLx3pW0rTa", "OTHER": "x"}) == {"CORP_THING": MASK, "OTHER": "x"}
    assert not Redactor().is_secret_name("pass_hint")
    text = _LONG * 20 + "pass_hint=Hx7pLq2wZ9v\n" + _LONG * 20
    for gate in (0, 10**9):
        out = Redactor(extra_names=[r"^pass_hint$"], gate_from=gate).text(text)
        assert "Hx7pLq2wZ9v" not in out and "pass_hint=" + MASK in out, gate


def test_extra_patterns_come_from_the_config_file_skipping_comments_and_blank_lines(tmp_path, monkeypatch):
    (tmp_path / "k3tui").mkdir()
    (tmp_path / "k3tui" / "redact.txt").write_text("#note\n\nCORP-[0-9]+\n   \n", encoding="utf-8")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("K3TUI_REDACT", " ;ACME-[a-z]+;")
    r = Redactor.from_environment()
    assert r.text("#note CORP-42 and ACME-x in a line") == f"#note {MASK} and {MASK} in a line"


def test_the_config_file_defaults_to_the_home_config_folder_and_a_bad_file_is_skipped(tmp_path, monkeypatch):
    (tmp_path / ".config" / "k3tui").mkdir(parents=True)
    (tmp_path / ".config" / "k3tui" / "redact.txt").write_text("CORP-[0-9]+\n", encoding="utf-8")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("K3TUI_REDACT", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert Redactor.from_environment().text("id CORP-42 ok") == f"id {MASK} ok"
    (tmp_path / ".config" / "k3tui" / "redact.txt").write_bytes(b"CORP-\xff[0-9]+\n")
    assert Redactor.from_environment().text("id CORP-42 ok") == "id CORP-42 ok"


def test_learnt_values_that_share_a_start_are_masked_whole():
    """The longest learnt value is tried first: "abcdef12" learnt before "abcdef12XYZ9" must not leave "XYZ9"."""
    r = Redactor()
    r.learn("Zq8vLx3p")
    r.learn("Zq8vLx3pXYZ9")
    assert r.text("later Zq8vLx3pXYZ9 and Zq8vLx3p") == f"later {MASK} and {MASK}"


def test_texts_under_five_characters_only_take_the_extra_patterns():
    """Stream names, ids and "pw=a" hold no secret worth a pass: only a user's own pattern applies."""
    assert Redactor().text("pw=a") == "pw=a"
    assert Redactor().text("pw=ab") == "pw=" + MASK
    assert Redactor(extra_patterns=["ab"]).text("xabx") == f"x{MASK}x"


def test_an_event_with_nothing_secret_is_returned_as_it_is():
    r = Redactor()
    e = ev.Output(id="c1", text="INFO plain line\n")
    assert r.event(e) is e
    assert r.event({"token": "Zq8vLx3pW0rTa"}) == {"token": MASK}


# --- a real fault found by the survivors of issue 22's third session ----------------------------------------------


@pytest.mark.parametrize("pad", ["", _LONG * 3, "x" * 300 + " "], ids=["short", "lines", "long-line"])
def test_a_value_learnt_from_a_text_is_masked_where_it_is_echoed_in_the_same_text(pad):
    """``+ export HF_TOKEN=x9…`` then ``+ echo x9…`` in one chunk of a shell trace: the value was learnt while
    the chunk was redacted, so only its later chunks had it masked (the echo in the same chunk leaked)."""
    text = pad + "+ export HF_TOKEN=Zq8vLx3pW0rTa\n+ curl -H 'X-Hub: Zq8vLx3pW0rTa' https://x\n"
    for gate in (0, 10**9):
        assert "Zq8vLx3pW0rTa" not in Redactor(gate_from=gate).text(text), gate
    assert "Zq8vLx3pW0rTa" not in Redactor().text_reference(text)
    r = Redactor()
    assert "Zq8vLx3pW0rTa" not in r.event(ev.Output(id="c1", text=text)).text


def test_a_command_that_echoes_a_value_of_its_env_map_is_masked():
    """The env map is read first, whatever the field order: its values are secret by their names."""
    e = ev.CommandSent(id="c1", command="python dl.py --hub Zq8vLx3pW0rTa", env={"HF_TOKEN": "Zq8vLx3pW0rTa"})
    out = Redactor().event(e)
    assert out.command == "python dl.py --hub " + MASK and out.env == {"HF_TOKEN": MASK}
    started = ev.RunStarted(run="r1", command="serve Zq8vLx3pW0rTa", env={"WANDB_API_KEY": "Zq8vLx3pW0rTa"})
    assert Redactor().event(started).command == "serve " + MASK


def test_texts_under_five_characters_take_the_same_way_in_the_reference():
    assert Redactor().text_reference("pw=a") == "pw=a"
    assert Redactor().text_reference("pw=ab") == "pw=" + MASK


_PEM_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEF\n-----END RSA PRIVATE KEY-----"


def test_a_short_private_key_block_is_masked_whole():
    """Under 200 characters (the short path) the block is masked as on long texts, its END line too."""
    assert len(_PEM_KEY) < 100
    for out in (
        Redactor().text(_PEM_KEY),
        Redactor().text_reference(_PEM_KEY),
        Redactor().text(f"cat k\n{_PEM_KEY}\n"),
    ):
        assert "MIIEvQIBADANBgkqhkiG9w0BAQEF" not in out and "-----END RSA PRIVATE KEY-----" not in out, out


def test_a_second_private_key_begun_in_a_chunk_after_a_whole_one_stays_masked_in_the_next():
    r = Redactor()
    first = r.event(
        ev.Output(id="c1", text=f"{_PEM_KEY}\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yRx\n")
    )
    second = r.event(ev.Output(id="c1", text="Zq8vLx3pW0rTaHx7pLq2wZ9v\n-----END EC PRIVATE KEY-----\ndone\n"))
    assert "MHcCAQEEIBkg4LVWM9nuwNSk3yRx" not in first.text and "Zq8vLx3pW0rTaHx7pLq2wZ9v" not in second.text
    assert second.text.endswith("done\n")


def test_output_of_another_host_or_command_is_not_joined_to_an_unfinished_line():
    """The unfinished line is kept per (host, command id, stream): "export HF_TOKEN=" on one host does not
    make the next chunk of another host (or command) its value."""
    for other in ({"host": "gpu-2", "id": "c1"}, {"host": "gpu-1", "id": "c2"}, {"host": "gpu-1", "stream": "stderr"}):
        r = Redactor()
        r.event(ev.Output(host="gpu-1", id="c1", text="INFO x\nexport HF_TOKEN="))
        out = r.event(ev.Output(**{"host": "gpu-1", "id": "c1", **other}, text="ready to serve\n"))
        assert out.text == "ready to serve\n", other


def test_word_lines_after_an_ordinary_cut_line_are_not_taken_for_a_putty_key():
    """Only a cut ``Private-Lines:`` header opens a key: a line cut anywhere else opens nothing."""
    r = Redactor()
    outs = [r.event(ev.Output(id="c1", text=t)).text for t in ("INFO loading", " weights\n", "Done\nReady\n")]
    assert outs == ["INFO loading", " weights\n", "Done\nReady\n"]


# Every needle of a shape that has several (each a way the same secret is written), and every credential
# word the token-like rule and the "password is" rule start from: each alone in its line, so that no other
# rule masks it first.
_VARIANTS = [
    "sk_test_sz6ie2LRHIWOhZExxTrx", "rk_live_sz6ie2LRHIWOhZExxTrx", "rk_test_sz6ie2LRHIWOhZExxTrx",
    "ASIAC4A9P702XDH0TZ9I",
    "doo_v1_d159bd18193a183fad1779b105014cc9a0f053ebc9c9d3139bd47d49f63bc609",
    "dor_v1_d159bd18193a183fad1779b105014cc9a0f053ebc9c9d3139bd47d49f63bc609",
    "hvb.pdW55uuE9ZnUiJ1gWPglS2Jokd_L",
    "glptt-jbDXSe3h76wQOGO2jILm6oXz", "gldt-jbDXSe3h76wQOGO2jILm6oXz", "glft-jbDXSe3h76wQOGO2jILm6oXz",
    "glsoat-jbDXSe3h76wQOGO2jILm6oXz",
    "glc_tiyOfZhzcOllmcmR+ldSSOGF3JzlkLAzD57=",
    "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", "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",
    "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",
    "sq0csp-0Xgh3hox49UVNWyVDPEF0oXljO",
    "xoxb-QcX9wcNuGxB9rw", "gho_U0R1XuH9RVx4XR0ERvW9UySajvLwzvGfKP", "ghp_U0R1XuH9RVx4XR0ERvW9UySajvLwzvGfKP",
    "&sig=U4Gzo", "?key=U4Gzo", "&key=U4Gzo", "?code=U4Gzo", "&code=U4Gzo",
    "mariadb -h db -uroot -pU4GzoQ9x", "sqlcmd -S db -P U4GzoQ9x", "bcp t out f -P U4GzoQ9x",
    "osql -S db -P U4GzoQ9x", "isql -P U4GzoQ9x", "unzip -P U4GzoQ9x w.zip", "zip -P U4GzoQ9x w.zip a",
    "7za x -pU4GzoQ9x w.7z", "rpcclient -U admin%U4GzoQ9x nas",
    "vault secret Zq8vLx3pW0rTaHx7pLq2", "password Zq8vLx3pW0rTaHx7pLq2", "pw Zq8vLx3pW0rTaHx7pLq2",
    "api-key Zq8vLx3pW0rTaHx7pLq2", "apikey Zq8vLx3pW0rTaHx7pLq2", "access_key Zq8vLx3pW0rTaHx7pLq2",
    "access-key Zq8vLx3pW0rTaHx7pLq2", "credential Zq8vLx3pW0rTaHx7pLq2", "api_key Zq8vLx3pW0rTaHx7pLq2",
    "passphrase is h0rse!Stap1e", "the credential is h0rse!Stap1e", "secret was h0rse!Stap1e",
]  # fmt: skip


@pytest.mark.parametrize("line", _VARIANTS)
def test_every_variant_of_a_shape_is_masked_on_every_path(line):
    secret = next((x for x in ("U4GzoQ9x", "Zq8vLx3pW0rTaHx7pLq2", "h0rse!Stap1e", "U4Gzo") if x in line), line)
    for path, out in _every_path(f"using {line} now").items():
        assert secret not in out and MASK in out, (path, out[-200:])


def test_an_event_env_map_is_read_as_variables_even_with_one_called_name():
    """A variable called "name" (or "key") is one variable, not the name of a diff entry's secret."""
    e = ev.CommandSent(id="c1", command="run", env={"name": "db_password", "PORT": "8000", "HF_TOKEN": "Zq8vLx3pW0rTa"})
    assert Redactor().event(e).env == {"name": "db_password", "PORT": "8000", "HF_TOKEN": MASK}


@pytest.mark.parametrize(
    "value",
    ["/run/secrets/db_pw1", "./pw1.txt", "~/pw1.txt", "<your-password-1>", "$DB_PASS1", "{{db_pass1}}", "%PASSWORD1%",
     "[hidden1]", "*****1"],
)  # fmt: skip
def test_a_path_or_placeholder_said_to_be_the_password_stays(value):
    """Where the password lives or what stands for it ("the password is $DB_PASS1") is no password."""
    line = f"the password is {value} (mounted)"
    for path, out in _every_path(line).items():
        assert line in out, (path, out[-200:])


@pytest.mark.parametrize(
    "line",
    [
        "HF token /root/.cache/huggingface/tok3n_file",  # a path
        "the token ./cache/tok3n_abcdefghij",  # a relative path
        "api token abcdefghijklmnopqrstuv",  # no digit
        "api token 12345678901234567890",  # no letter
        "git clone https://<your-token-here-1234>@github.com/o/r",  # a placeholder as the URL's user
        "ask-projection_layer_norm_weight",  # a key prefix at the second character of a word
    ],
)
def test_a_value_beside_a_credential_word_that_is_no_token_stays(line):
    for path, out in _every_path(line).items():
        assert line in out, (path, out[-200:])


def test_a_key_shape_that_starts_the_text_is_masked_whatever_ends_it():
    """At position 0 nothing stands before the needle (the text's last character is not "before" it)."""
    for line in ("hf_Q7rT9xWmZ2pL4kV8nB3cY6dF is the token", "sk-proj-O9pVwIrawQ63Gy64uakB used"):
        for path, out in _every_path(line).items():
            assert out.count(MASK) == 1 and line.split()[0] not in out, (path, out[-200:])

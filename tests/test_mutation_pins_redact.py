"""Every known secret-key shape is masked (``k3tui/redact.py``), a mutation run found most unpinned (issue 22).

One made-up token per vendor shape the redactor knows (NGC, GitHub, Stripe, Databricks, Vault, …),
written out here rather than derived from the module, so that a shape whose prefix or pattern
stops matching leaks in this test as it would leak in a recording.
"""

from __future__ import annotations

import pytest

from k3tui.redact import MASK, Redactor

TOKENS = [
    'authorization"    :    "bearer     T4dK4',
    "bearer     G17gfdOiIUWo",
    "sk-proj-O9pVwIrawQ63Gy64uakB",
    "hf_bYJEz5xRw5Xv6Az56zdhn4ge",
    "ghs_U0R1XuH9RVx4XR0ERvW9UySajvLwzvGfKP",
    "glpat-zFM-LqmXRZa9F_1N22VoPc_z",
    "xoxr-QcX9wcNuGxB9rw",
    "AKIAC4A9P702XDH0TZ9I",
    "eyJzE2-FRig_O4tRR.NQwlPCz-c7z2wi.ipYI2Uu6-W9yrE",
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
    "xai-mHiP0Q6aDYy4YDQMynJjte0Qsj4MvlpjVVb95tbVw1xVV4r7zNC1yehG7O611Lh4kd9QnswgWy",
    "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",
    "pcsk_DkPJfYsfxsZjZ0JPctIoW5fIkOdMfkKJW2PtUm5nUNTC",
    "ya29.NQaljIb7Ry9tip8Ufq1791g7",
    "LTAID8iFt3auWitPxqUWx7X2",
    "PMAK-8ac2e97f31b1912e27f0c2d5-275c93d6d3667310e2a6552ee500afb569",
    "lin_api_X1vlBn7f8pk3YDhoswCf7QEbxaj4j5ftOBsc0AKm",
    "sntrys_b9z/E1grrUtpcFfKCZMZel33mR3==DL5RB21nY-wcUvl",
    "sq0atp-0Xgh3hox49UVNWyVDPEF0oXljO",
    "dp.pt.5RE9n0lxg7fRd4ZyeCZx4RorF1ah8ZBPctaLHpyjtWcv",
    "pscale_tkn_-PrtI8i0IbOaWA.KsFw6C_7ZtZ9OWkA4-.NJ",
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

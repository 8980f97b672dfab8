"""The built-in detector pack: every detector on what it must catch and what it must leave,
and the redactor over lines and JSON payloads."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nerve.canonical import canonical_json
from nerve.privacy.detectors import DETECTORS, card_ok, luhn_ok
from nerve.privacy.scan import Redactor, merge_counts

PACK = Redactor([d.name for d in DETECTORS])

# Token-shaped test values are assembled here so no whole fake token sits in the source.
GHP = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
PAT = "github_pat_" + "11ABCDEFG0" * 2 + "ab_" + "Z9y8X7w6V5" * 5 + "u4t3s2r1q"
GLPAT = "glpat-" + "xY1_zW2-vU3tS4rQ5pO6"
SLACK = "xoxb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
OPENAI = "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34"
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nq0s=\n-----END RSA PRIVATE KEY-----"


def redact(text: str) -> tuple[str, dict[str, int]]:
    counts: dict[str, int] = {}
    return PACK.text(text, counts), counts


# (rule, before, the part replaced, after): text is all three, the result has the label.
TRUE_POSITIVES = [
    ("private-key", "key: ", PEM, " end"),
    ("private-key", "", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNz", ""),
    ("aws-access-key", "aws_access_key_id ", AWS_ID, ""),
    ("aws-access-key", "", "ASIA" + "Y34FZKBOKMUTVV7A", " x"),
    ("aws-secret-key", "export AWS_SECRET_ACCESS_KEY=", AWS_SECRET, ""),
    ("github-token", "export GITHUB_TOKEN=", GHP, ""),
    ("github-token", "gh auth login --with-token ", PAT, ""),
    ("github-token", "TOKEN='", GHP, "'"),
    ("github-token", "", "gho_" + GHP[4:], ""),
    ("github-token", "", "ghs_" + GHP[4:], ""),
    ("github-token", "", "ghu_" + GHP[4:], ""),
    ("github-token", "", "ghr_" + GHP[4:], ""),
    *[("slack-token", "SLACK=", f"xox{kind}-" + SLACK[5:], "") for kind in "baprs"],
    *[
        ("aws-access-key", "key ", prefix + "IOSFODNN7EXAMPLE", "")
        for prefix in ("AKIA", "ASIA", "ABIA", "ACCA", "A3TX", "A3T7")
    ],
    ("gitlab-token", "curl -H 'PRIVATE-TOKEN: ", GLPAT, "'"),
    ("slack-token", "SLACK=", SLACK, " ./post"),
    ("openai-key", "OPENAI=", OPENAI, ""),
    ("openai-key", "", "sk-" + "a1B2" * 12, ""),
    ("jwt", "curl -H 'Authorization: Bearer ", JWT, "'"),
    ("url-password", "psql postgres://admin:", "s3cr3t", "@db:5432/app"),
    ("url-password", "git clone https://bob:", "hunter2", "@example.com/r.git"),
    ("password-assignment", "PGPASSWORD=", "hunter2", " psql"),
    ("password-assignment", "mysql --password ", "hunter2", " -u root"),
    ("password-assignment", "app --token=", "abc123", ""),
    ("password-assignment", "passwd: ", "hunter2", ""),
    ("password-assignment", "curl -d 'secret=", "xyz", "'"),
    ("password-assignment", 'api_key = "', "a b c", '"'),
    ("password-assignment", '{"password": "', "pw1", '"}'),
    ("card-number", "pay ", "4111 1111 1111 1111", " now"),
    ("card-number", "", "5500-0000-0000-0004", ""),
    ("card-number", "amex ", "378282246310005", ""),
    ("card-number", "order 7 ", "4111111111111111", " 000"),
]

FALSE_POSITIVES = [
    ("private-key", "-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n-----END PUBLIC KEY-----"),
    ("private-key", "ssh-keygen -t ed25519 writes a private key file"),
    ("aws-access-key", "AKIA is the prefix of long-term key ids"),
    ("aws-access-key", "AKIA" + "IOSFODNN7EXAMPL"),  # one character short
    ("aws-access-key", "AKIA" + "IOSFODNN7EXAMPLEX"),  # one too many: not a whole word
    ("aws-secret-key", "the aws secret key rotates monthly"),
    ("github-token", "ghp_short and ghp_ prefixes are documented"),
    ("github-token", "git clone https://github.com/org/repo_name"),
    ("gitlab-token", "glpat-short"),
    ("slack-token", "xoxo-hugs and xox are not tokens"),
    ("slack-token", "xoxc-" + SLACK[5:]),  # c is not one of Slack's token kinds
    ("aws-access-key", "AKIB" + "IOSFODNN7EXAMPLE"),  # not a key-id prefix
    ("aws-access-key", "A3T-" + "IOSFODNN7EXAMPLE"),
    ("github-token", "ghx_" + GHP[4:]),  # not one of GitHub's prefixes
    ("openai-key", "pip install sk-learn is a typo for scikit-learn"),
    ("openai-key", "sk-without-any-digits-but-quite-long-indeed"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9 alone is only a header"),
    ("url-password", "https://example.com:8080/path"),
    ("url-password", "ssh://git@github.com/org/repo"),
    ("url-password", "https://user@host/x"),
    ("password-assignment", "curl -H token=$GITHUB_TOKEN"),
    ("password-assignment", 'export PASSWORD="$(pass show db)"'),
    ("password-assignment", "python train.py tokenizer=bert token_count=5"),
    ("password-assignment", "app --password-file /run/pw"),
    ("password-assignment", "password= and bypass=1"),
    ("card-number", "4111 1111 1111 1112"),  # fails the Luhn check
    ("card-number", "4111111111111112"),
    ("card-number", "valid_time_ns 1700000000123456789"),  # no card network starts with 1
    ("card-number", "order 12345 shipped"),
]


@pytest.mark.parametrize(("rule", "before", "secret", "after"), TRUE_POSITIVES)
def test_detector_catches(rule: str, before: str, secret: str, after: str) -> None:
    out, counts = redact(before + secret + after)
    assert out == f"{before}[redacted:{rule}]{after}"
    assert counts == {rule: 1}


@pytest.mark.parametrize(("rule", "text"), FALSE_POSITIVES)
def test_detector_leaves(rule: str, text: str) -> None:
    out, counts = redact(text)
    assert rule not in counts
    assert counts or out == text


def test_every_detector_has_true_and_false_positive_cases() -> None:
    names = {d.name for d in DETECTORS}
    assert {rule for rule, *_ in TRUE_POSITIVES} == names
    assert {rule for rule, _ in FALSE_POSITIVES} == names


def test_luhn() -> None:
    assert luhn_ok("4111111111111111") and luhn_ok("79927398713")
    assert not luhn_ok("4111111111111112")
    assert card_ok("4111-1111-1111-1111") and not card_ok("411111111111")  # 12 digits


def test_several_secrets_are_counted_by_rule_and_text_is_never_reported() -> None:
    out, counts = redact(f"A={GHP} B={GHP} url=https://u:pw@h/ PGPASSWORD=x")
    assert counts == {"github-token": 2, "url-password": 1, "password-assignment": 1}
    assert GHP not in out and "pw@" not in out
    assert all(GHP not in key for key in counts)


def test_a_disabled_detector_does_not_run() -> None:
    only_cards = Redactor(["card-number"])
    counts: dict[str, int] = {}
    assert only_cards.text(f"T={GHP} 4111111111111111", counts) == f"T={GHP} [redacted:card-number]"
    assert counts == {"card-number": 1}


def _event(payload: object, line: str = "") -> tuple[str, object, dict[str, int]]:
    new_line, data, counts = PACK.event(line, canonical_json(payload))
    return new_line, json.loads(data), counts


def test_payload_strings_are_redacted_recursively_and_marked() -> None:
    _, payload, counts = _event(
        {"cmd": f"x {GHP}", "nested": [{"url": "https://a:b@c/"}, 5, None], "ok": "fine"}
    )
    assert payload == {
        "_redacted": {"github-token": 1, "url-password": 1},
        "cmd": "x [redacted:github-token]",
        "nested": [{"url": "https://a:[redacted:url-password]@c/"}, 5, None],
        "ok": "fine",
    }
    assert counts == payload["_redacted"]  # type: ignore[index]


def test_keys_that_name_a_secret_have_their_value_redacted() -> None:
    _, payload, _ = _event({"password": "pw", "db_token": 1234, "token_count": 5, "key": "$X"})
    assert payload == {
        "_redacted": {"password-assignment": 2},
        "db_token": "[redacted:password-assignment]",
        "key": "$X",
        "password": "[redacted:password-assignment]",
        "token_count": 5,
    }


def test_a_line_and_its_payload_count_one_secret_once() -> None:
    line, _, counts = _event({"command": f"T={GHP}"}, line=f"$ T={GHP}")
    assert line == "$ T=[redacted:github-token]"
    assert counts == {"github-token": 1}
    assert merge_counts({"a": 2}, {"a": 1, "b": 1}) == {"a": 2, "b": 1}


def test_non_object_payloads_are_wrapped_and_line_only_hits_marked() -> None:
    assert _event(f"just {GHP}")[1] == {
        "_redacted": {"github-token": 1},
        "value": "just [redacted:github-token]",
    }
    assert _event({"a": 1}, line=f"x {GHP}")[1] == {"_redacted": {"github-token": 1}, "a": 1}
    assert _event(None, line=f"x {GHP}")[1] == {"_redacted": {"github-token": 1}}


def test_a_binary_payload_under_a_line_hit_is_kept_as_base64() -> None:
    binary = b"\xff\xfe\x00bin"  # neither JSON nor UTF-8 text
    line, payload, counts = PACK.event(f"push {GHP}", binary)
    assert line == "push [redacted:github-token]" and counts == {"github-token": 1}
    assert json.loads(payload) == {"_redacted": {"github-token": 1}, "b64": "//4AYmlu"}


def test_escaped_json_text_is_scanned_as_its_strings() -> None:
    # In the JSON text the tab is the two characters \t, which `--password\s+` cannot match.
    _, payload, counts = _event({"cmd": "app --password\thunter2"})
    assert payload["cmd"] == "app --password\t[redacted:password-assignment]"  # type: ignore[index]
    assert counts == {"password-assignment": 1}


def test_clean_and_binary_payloads_are_left_as_they_are() -> None:
    clean = canonical_json({"i": 1, "v": "x", "path": "src/main.py"})
    assert PACK.event("cpu reading 42", clean) == ("cpu reading 42", clean, {})
    binary = b"\xff\xfe" + GHP.encode()
    assert PACK.event("", binary) == ("", binary, {})


SECRETS = st.sampled_from([GHP, PAT, GLPAT, SLACK, OPENAI, AWS_ID, JWT, "4111 1111 1111 1111"])
# Pieces that make neighbours interact with a secret: keys, quotes, digits, separators.
PIECES = st.sampled_from(
    [
        *("token", "password", "api_key", "=", ":", " ", "--", "://", "@", "$", "'", '"'),
        *("[", "]", "4111", "1111", "0", "-", "_", "\n", "sk-", "ghp_", "eyJ", "PRIVATE KEY"),
    ]
)
WORDS = st.lists(PIECES, max_size=16).map("".join)


@settings(max_examples=500, deadline=None)
@given(before=WORDS, secret=SECRETS, after=WORDS)
def test_a_planted_token_never_survives_and_redaction_is_idempotent(
    before: str, secret: str, after: str
) -> None:
    out, counts = redact(f"{before} {secret} {after}")
    assert secret not in out and counts
    again, more = redact(out)
    assert again == out and not more

"""The built-in detector pack: shapes of secrets that should never reach the log.

Each detector is a regex over text. When it names a ``secret`` group only that part is
replaced (``password=[redacted:password-assignment]`` keeps the key, so the command still
reads); otherwise the whole match is. A ``check`` (the Luhn sum for card numbers) runs on
the matched text and can veto the match. ``generic`` detectors find a secret by where it
sits (an assignment, a URL's password); when that value is itself a known token, the token's
own detector is credited instead (``GITHUB_TOKEN=ghp_…`` fires ``github-token``).

Token shapes follow the vendors' published formats (the facts gitleaks and detect-secrets
also encode): AWS key ids ``AKIA``/``ASIA``/… + 16 base-32 characters, GitHub ``ghp_``,
``gho_``, ``ghs_``, ``ghu_``, ``ghr_`` + 36+ characters and ``github_pat_``, GitLab
``glpat-``, Slack ``xox[baprs]-``, OpenAI-style ``sk-`` keys, JWTs (two base64url JSON
parts, ``eyJ…``), private key PEM blocks, and card numbers with a card-network prefix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["BITS", "DETECTORS", "Detector", "candidates", "card_ok", "detector_names", "luhn_ok"]


@dataclass(frozen=True, slots=True)
class Detector:
    name: str
    pattern: str  # may hold one ``(?P<secret>…)`` group
    description: str
    check: Callable[[str], bool] | None = None
    generic: bool = False
    folded: bool = False  # the pattern is lower case and runs over lower-cased text


def card_ok(text: str) -> bool:
    """13 to 19 digits that pass the Luhn checksum."""
    return 13 <= sum(c.isdigit() for c in text) <= 19 and luhn_ok(text)


def luhn_ok(text: str) -> bool:
    """Whether the digits of ``text`` pass the Luhn checksum (card numbers do)."""
    digits = [int(c) for c in reversed(text) if c.isdigit()]
    doubled = [d * 2 - 9 if d > 4 else d * 2 for d in digits[1::2]]
    return (sum(digits[::2]) + sum(doubled)) % 10 == 0


# A value after ``:``, ``=`` or `` = `` (``PASSWORD= cmd`` assigns nothing): quoted (the quotes
# stay), or a bare word. Not a shell variable (``token=$TOKEN`` names a secret, it does not
# hold one), nor an earlier redaction.
_VALUE = (
    r"""(?:"(?P<secret>(?![$]|[^"\n]*\[redacted:)[^"\n]+)"|'(?P<secret2>(?![^'\n]*\[redacted:)[^'\n]+)'"""
    r"""|(?P<secret3>(?![$\[])[^\s"',;&|<>(){}\[\]]+))"""
)
SECRET_KEYWORDS = (
    r"pass(?:word|wd|phrase)|secret|token"
    r"|(?:api|access|secret|private|signing|encryption|master)[_-]?key"
)

DETECTORS: tuple[Detector, ...] = (
    Detector(
        "private-key",
        r"-----BEGIN[A-Z0-9 _-]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"(?s:.*?-----END[A-Z0-9 _-]{0,40}PRIVATE KEY(?: BLOCK)?-----|.*)",
        "PEM private key blocks (to the end of the text when the END line is missing)",
    ),
    Detector(
        "aws-access-key",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}\b",
        "AWS access key ids",
    ),
    Detector(
        "aws-secret-key",
        r"(?i:aws_?secret_?(?:access_?)?key)[\"']?\s*[:=]\s*[\"']?"
        r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        "AWS secret access keys in an assignment",
    ),
    Detector(
        "github-token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})\b",
        "GitHub tokens: ghp_, gho_, ghs_, ghu_, ghr_, github_pat_",
    ),
    Detector("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,}", "GitLab personal access tokens"),
    Detector("slack-token", r"\bxox[baprs]-[A-Za-z0-9][A-Za-z0-9-]{9,}", "Slack tokens"),
    Detector(
        "openai-key",
        r"\bsk-(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{20,}",
        "OpenAI-style sk- keys (letters and digits, 20+ characters after sk-)",
    ),
    Detector(
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
        "JSON Web Tokens",
    ),
    Detector(
        "url-password",
        r"://[^\s/:@\[\]]+:(?P<secret>(?!\[redacted:)[^\s/@]+)@",
        "the password of scheme://user:password@host",
        generic=True,
    ),
    Detector(
        "password-assignment",
        # (?=…): the first character is one a match can start with, which lets the regex
        # engine skip every other position quickly
        rf"(?=[-psatem])(?:--(?:{SECRET_KEYWORDS})\s+"
        rf"|(?:{SECRET_KEYWORDS})[\"']?(?:\s*:\s*|=|\s+=\s+)){_VALUE}",
        "password=, passwd:, secret=, token=, api_key= and --password VALUE",
        generic=True,
        folded=True,
    ),
    Detector(
        "card-number",
        r"(?<![0-9A-Za-z_])(?:4|5[1-5]|2[2-7]|3[47]|3[0689]|6[0-9])[0-9](?:[ -]?[0-9]){11,17}\b",
        "payment card numbers (a card-network prefix, 13-19 digits, Luhn-checked)",
        check=card_ok,
    ),
)


def detector_names() -> list[str]:
    return [d.name for d in DETECTORS]


BITS = {d.name: 1 << i for i, d in enumerate(DETECTORS)}


def candidates(text: str) -> int:
    """Bits (``BITS``) of the detectors that may match ``text``.

    Plain substring tests, so most text never reaches a regex: each test looks for what
    every match of its detector must contain (the tests of each detector prove it).
    """
    mask = 0
    if "-" in text:  # most text has none: skip the tests for the tokens holding one
        if "PRIVATE KEY" in text:
            mask |= BITS["private-key"]
        if "glpat-" in text:
            mask |= BITS["gitlab-token"]
        if "xox" in text:
            mask |= BITS["slack-token"]
        if "sk-" in text:
            mask |= BITS["openai-key"]
    if "A" in text and (
        "AKIA" in text or "ASIA" in text or "ABIA" in text or "ACCA" in text or "A3T" in text
    ):
        mask |= BITS["aws-access-key"]
    if "_" in text and ("gh" in text or "github_pat_" in text):
        mask |= BITS["github-token"]
    if "eyJ" in text:
        mask |= BITS["jwt"]
    if "@" in text and "://" in text:
        mask |= BITS["url-password"]
    if "=" in text or ":" in text or "--" in text:  # an assignment, a key: value, a flag
        low = text.lower()
        if "secret" in low:
            mask |= BITS["aws-secret-key"] | BITS["password-assignment"]
        elif "pass" in low or "token" in low or "key" in low:
            mask |= BITS["password-assignment"]
    if len(text) >= 13:  # count digits: delete them (a short delete set is fast), compare
        data = text.encode("utf-8", "replace")
        if len(data) - len(data.translate(None, b"0123456789")) >= 13:
            mask |= BITS["card-number"]
    return mask

"""Known secrets, and a search of a folder for them or their long substrings."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

SECRETS = (
    "rm -rf /srv/zebra-quartz-archive",
    "ref-9f2ce1d7a4b84411aa55e3c1",
    "the falcon lands at midnight",
    "subject-ultramarine-ledger",
    "ssh deploy@kestrel-vault.internal",
)
_SPAN = 12  # a substring of this many characters of a secret counts as a leak


def files_under(folder: Path) -> dict[str, str]:
    """Every file's relative path and the sha256 of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def leaks(folder: Path, secrets: tuple[str, ...] = SECRETS) -> list[str]:
    """``file: substring`` for each file under ``folder`` holding a long piece of a secret
    (as UTF-8, or as UTF-16, or escaped in JSON)."""
    found = []
    pieces = {s[i : i + _SPAN] for s in secrets for i in range(len(s) - _SPAN + 1)}
    needles = [(p, form) for p in pieces for form in (p.encode(), p.encode("utf-16-le"))]
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.is_socket():
            continue
        data = path.read_bytes()
        for piece, form in needles:
            if form in data:
                found.append(f"{path.relative_to(folder)}: {piece!r}")
                break
    return found


def encrypt_log(root: Path, monkeypatch: pytest.MonkeyPatch, key: Path | None = None) -> Path:
    """Make ``root`` an encrypted log under a new key file (``key``, else beside the log)
    that ``NERVE_KEY_FILE`` names for the test (so processes it starts find the key too)."""
    from nerve.log import crypt

    key = key or root.parent / f"{root.name}.key"
    crypt.new_key_file(key)
    crypt.new_keyring(root, crypt.kek_from_file(key), crypt.file_source())
    monkeypatch.setenv(crypt.ENV_KEY_FILE, str(key))
    return root


def holding(folder: Path, secret: bytes) -> list[str]:
    """Every file under ``folder`` that holds ``secret`` raw or in hex."""
    forms = (secret, secret.hex().encode(), secret.hex().upper().encode())
    return [
        str(path)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and any(form in path.read_bytes() for form in forms)
    ]

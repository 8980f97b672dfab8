"""The keys of an encrypted log as docs/encryption.md promises them: a damaged key file, an empty
passphrase, a key file others may read or one kept under ``data/`` are each refused in one
line naming the file; the keyring's folder is synced after each key file lands in it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nerve.log import crypt
from tests.conftest import run_cli
from tests.helpers.crypt import files_under
from tests.helpers.synced import synced_paths
from tests.log.test_crypt import _systemd_creds_works


def _key_file(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    os.chmod(path, 0o600)
    return path


def test_every_single_bit_flip_of_a_nerve_key_file_is_refused_with_its_name(
    tmp_path: Path,
) -> None:
    good = tmp_path / "good.key"
    crypt.new_key_file(good)
    crypt.kek_from_file(good)  # whole, it opens
    text = good.read_bytes()
    bad = tmp_path / "bad.key"
    for at in range(len(text)):
        for bit in range(8):
            flipped = bytearray(text)
            flipped[at] ^= 1 << bit
            _key_file(bad, bytes(flipped))
            with pytest.raises(crypt.KeyFileError) as caught:
                crypt.kek_from_file(bad)
            message = str(caught.value)
            assert message.startswith(f"{bad}: ") and "\n" not in message, (at, bit, message)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"nerve-key-2 " + b"ab" * 32 + b" 01234567\n", "not 'nerve-key-1'"),  # wrong magic
        (b"nerve-key-1 " + b"ab" * 33 + b" 01234567\n", "cut short or changed"),  # too long
        (b"nerve-key-1 " + b"ab" * 31 + b" 01234567\n", "cut short or changed"),  # too short
        (b"nerve-key-1 " + b"AB" * 32 + b" 01234567\n", "not lowercase hexadecimal"),
        (b"nerve-key-1 " + b"ab" * 32 + b" 01234567\njunk after it\n", "cut short or changed"),
        (b"\0" * 64, "distinct values"),  # a zeroed file
        (b"ab" * 40, "distinct values"),  # a repeated pattern
        (b"0123456789", "holds 10 bytes"),
    ],
    ids=["magic", "long", "short", "upper", "junk", "zeros", "pattern", "tiny"],
)
def test_a_damaged_key_file_is_refused_with_its_name(
    tmp_path: Path, content: bytes, said: str
) -> None:
    bad = _key_file(tmp_path / "bad.key", content)
    with pytest.raises(crypt.KeyFileError, match=said) as caught:
        crypt.kek_from_file(bad)
    assert str(caught.value).startswith(f"{bad}: ")


def test_a_raw_key_file_and_one_with_a_crlf_still_open(tmp_path: Path) -> None:
    raw = _key_file(tmp_path / "raw.key", os.urandom(32))
    assert len(crypt.kek_from_file(raw)) == 32
    made = tmp_path / "made.key"
    crypt.new_key_file(made)
    crlf = _key_file(tmp_path / "crlf.key", made.read_bytes().replace(b"\n", b"\r\n"))
    assert crypt.kek_from_file(crlf) == crypt.kek_from_file(made)


def test_a_damaged_key_file_is_refused_by_the_cli_naming_it(tmp_path: Path) -> None:
    key, ws = tmp_path / "K", tmp_path / "ws"
    run_cli("init", "--encrypt", "--key-file", str(key), str(ws))
    text = bytearray(key.read_bytes())
    text[3] ^= 0x01  # the magic: "nerve" → "nerwe"
    bad = _key_file(tmp_path / "bad.key", bytes(text))
    before = files_under(ws / "data")
    out = run_cli(
        "-w", str(ws), "emit", "-s", "shell", env={"NERVE_KEY_FILE": str(bad)}, check=False
    )
    assert out.returncode == 1 and out.stderr.startswith(f"KeyFileError: {bad}: "), out.stderr
    assert len(out.stderr.splitlines()) == 1 and "Traceback" not in out.stderr
    assert files_under(ws / "data") == before


def test_an_empty_passphrase_is_refused_in_one_line(tmp_path: Path) -> None:
    source = crypt.passphrase_source()
    with pytest.raises(crypt.WrongKey, match="is empty"):
        crypt.kek_from_passphrase("", source)
    ws = tmp_path / "ws"
    run_cli("init", "--encrypt", "--passphrase", str(ws), input="correct horse\n")
    before = files_under(ws / "data")
    out = run_cli("-w", str(ws), "emit", "-s", "shell", env={"NERVE_PASSPHRASE": ""}, check=False)
    assert out.returncode == 1, out.stderr
    assert out.stderr.startswith("WrongKey: NERVE_PASSPHRASE is empty"), out.stderr
    assert len(out.stderr.splitlines()) == 1
    assert files_under(ws / "data") == before
    empty = run_cli(
        "init", "--encrypt", "--passphrase", str(tmp_path / "e"), input="\n", check=False
    )
    assert empty.returncode == 2 and "no passphrase" in empty.stderr
    assert not (tmp_path / "e" / "data" / "log" / crypt.KEYRING).exists()


def test_a_key_file_others_can_read_is_refused_unless_forced(tmp_path: Path) -> None:
    key, ws = _key_file(tmp_path / "K", os.urandom(32)), tmp_path / "ws"
    os.chmod(key, 0o640)
    out = run_cli("init", "--encrypt", "--key-file", str(key), str(ws), check=False)
    assert out.returncode == 1 and out.stderr.startswith(f"KeyFileError: {key}: "), out.stderr
    assert "group or others (mode 640)" in out.stderr.splitlines()[0]
    assert f"hint: chmod 600 {key}" in out.stderr and crypt.ENV_KEY_FILE_FORCE in out.stderr
    assert not ws.exists()
    forced = {crypt.ENV_KEY_FILE_FORCE: "1"}
    run_cli("init", "--encrypt", "--key-file", str(key), str(ws), env=forced)
    env = {crypt.ENV_KEY_FILE: str(key)}
    refused = run_cli("-w", str(ws), "emit", "-s", "shell", "-l", "x", env=env, check=False)
    assert refused.returncode == 1 and refused.stderr.startswith(f"KeyFileError: {key}: ")
    run_cli("-w", str(ws), "emit", "-s", "shell", "-l", "x", env={**env, **forced})
    os.chmod(key, 0o600)
    run_cli("-w", str(ws), "emit", "-s", "shell", "-l", "x", env=env)


def test_a_key_file_kept_under_data_is_refused_unless_forced(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    inside = ws / "data" / "nerve.key"
    out = run_cli("init", "--encrypt", "--key-file", str(inside), str(ws), check=False)
    assert out.returncode == 1 and out.stderr.startswith(f"KeyFileError: {inside}: "), out.stderr
    assert "kept inside" in out.stderr and "hint: move it out of" in out.stderr
    assert not inside.exists() and not (ws / "nerve.yaml").exists()

    key = tmp_path / "K"
    run_cli("init", "--encrypt", "--key-file", str(key), str(ws))
    moved = ws / "data" / "K"
    os.replace(key, moved)
    env = {crypt.ENV_KEY_FILE: str(moved)}
    refused = run_cli("-w", str(ws), "emit", "-s", "shell", "-l", "x", env=env, check=False)
    assert refused.returncode == 1 and refused.stderr.startswith(f"KeyFileError: {moved}: ")
    link = tmp_path / "link.key"
    link.symlink_to(moved)  # a link outside to the file inside: still inside
    linked = {crypt.ENV_KEY_FILE: str(link)}
    refused = run_cli("-w", str(ws), "emit", "-s", "shell", "-l", "x", env=linked, check=False)
    assert refused.returncode == 1 and "kept inside" in refused.stderr
    run_cli(
        "-w", str(ws), "emit", "-s", "shell", "-l", "x", env={**env, "NERVE_KEY_FILE_FORCE": "1"}
    )


def test_the_keyring_folder_is_synced_after_each_key_file_lands(tmp_path: Path) -> None:
    log_root, keys = tmp_path / "log", tmp_path / "keys"
    keys.mkdir()
    with synced_paths() as synced:
        crypt.new_key_file(keys / "a.key")
    assert str(keys) in synced, synced
    kek = crypt.kek_from_file(keys / "a.key")
    with synced_paths() as synced:
        crypt.new_keyring(log_root, kek, crypt.file_source())
    assert synced[-1] == str(log_root), synced  # the file, then the folder naming it
    crypt.new_key_file(keys / "b.key")
    new = crypt.kek_from_file(keys / "b.key")
    with synced_paths() as synced:
        crypt.rewrap(log_root, kek, new, crypt.file_source())
    assert synced[-1] == str(log_root), synced  # after the rename into place
    archive = tmp_path / "archive"
    archive.mkdir()
    with synced_paths() as synced:
        crypt.copy_keyring(log_root, archive)
    assert synced[-1] == str(archive), synced


def test_a_bare_logs_key_may_sit_beside_it_not_inside_it(tmp_path: Path) -> None:
    """A log outside a workspace: its own folder is what a copy carries."""
    log_root = tmp_path / "log"
    beside = tmp_path / "log.key"
    crypt.new_key_file(beside)
    ring = {"kek": crypt.file_source()}
    assert crypt.kek_from_env(log_root, ring, {crypt.ENV_KEY_FILE: str(beside)})
    log_root.mkdir()
    inside = log_root / "log.key"
    os.replace(beside, inside)
    with pytest.raises(crypt.KeyFileError, match="kept inside"):
        crypt.kek_from_env(log_root, ring, {crypt.ENV_KEY_FILE: str(inside)})
    assert crypt.kept_with(tmp_path / "ws" / "data" / "log") == tmp_path / "ws" / "data"


def test_an_encrypted_log_line_opens_only_with_its_key_held(tmp_path: Path) -> None:
    key = tmp_path / "nerve.key"
    crypt.new_key_file(key)
    root = tmp_path / "log"
    root.mkdir()
    crypt.forget_keys()
    crypt.new_keyring(root, crypt.kek_from_file(key), crypt.file_source())
    crypt.forget_keys()
    cipher = crypt.held_cipher(root, {crypt.ENV_KEY_FILE: str(key)})  # unlocked from env
    assert cipher is not None
    line = crypt.encrypt_line(cipher, "sense cpu failed: boom")
    assert line.startswith(crypt.LINE_TAG) and "boom" not in line
    assert crypt.decrypt_line(line) == "sense cpu failed: boom"
    assert crypt.decrypt_line("plain line") == "plain line"
    crypt.forget_keys()
    assert crypt.decrypt_line(line) == "(an encrypted line: it needs the key)"


def test_a_systemd_credential_made_again_replaces_the_one_before(tmp_path: Path) -> None:
    if not _systemd_creds_works():
        pytest.skip("systemd-creds cannot encrypt here (not installed, or not root)")
    root = tmp_path / "log"
    old_kek, source = crypt.systemd_creds_source(root)
    crypt.new_keyring(root, old_kek, source)
    new_kek, again = crypt.systemd_creds_source(root)  # a rotation onto a new credential
    crypt.rewrap(root, old_kek, new_kek, again)
    assert new_kek != old_kek and again == {"kind": "systemd-creds", "file": crypt.CRED_FILE}
    assert crypt.kek_from_env(root, crypt.read_keyring(root), {}) == new_kek

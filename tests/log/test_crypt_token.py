"""An encrypted log whose key-encryption key is derived inside a PKCS#11 token (SoftHSM2),
through the real CLI: written, reopened and read back with the token; rotated from a
passphrase to the token and back under the same data key; no file holds the derived key;
each way the token can fail is one line naming it, and writes nothing; the token's key
cannot be read out of it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nerve.log import crypt, tokenkek
from tests.conftest import run_cli
from tests.helpers.crypt import SECRETS, files_under, holding, leaks
from tests.helpers.softhsm import MODULE, PIN, needs_softhsm, softhsm_tokens

PIN_ENV = "NERVE_TEST_KEK_PIN"
WITH_PIN = {PIN_ENV: PIN}

pytestmark = needs_softhsm


@pytest.fixture(scope="module")
def softhsm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Fresh tokens ``nerve``, ``spare`` and ``doomed`` (whose key a test deletes)."""
    folder = tmp_path_factory.mktemp("softhsm")
    with softhsm_tokens(folder, ("nerve", "spare", "doomed")) as conf:
        yield conf


def _init(ws: Path, token: str = "nerve") -> None:
    run_cli(
        "init", "--encrypt", "--pkcs11", MODULE, "--token", token, "--pin-env", PIN_ENV,
        str(ws), env=WITH_PIN,
    )  # fmt: skip


def _emit_secrets(ws: Path, env: dict[str, str]) -> None:
    for secret in SECRETS[:3]:
        run_cli("-w", str(ws), "emit", "-s", "shell", "--line", secret, env=env)


def _ring(ws: Path) -> dict[str, Any]:
    ring: dict[str, Any] = json.loads((ws / "data" / "log" / "keyring.json").read_text())
    return ring


def test_a_log_locked_by_a_token_is_written_reopened_and_read_back(
    softhsm: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    _init(ws)
    assert "key: pkcs11" in (ws / "nerve.yaml").read_text()
    kek = _ring(ws)["kek"]
    assert kek == {
        "kind": "pkcs11", "module": MODULE, "token": "nerve", "pin_env": PIN_ENV,
        "label": "nerve-kek", "mechanism": "CKM_SHA256_HMAC", "salt": kek["salt"],
    }  # fmt: skip
    _emit_secrets(ws, WITH_PIN)
    assert "sealed 3 events" in run_cli("-w", str(ws), "seal", env=WITH_PIN).stdout
    run_cli("-w", str(ws), "emit", "-s", "shell", "--line", SECRETS[3], env=WITH_PIN)
    rows = run_cli("-w", str(ws), "tail", "--all", "--json", env=WITH_PIN).stdout.splitlines()
    assert [json.loads(row)["line"] for row in rows] == list(SECRETS[:4])
    assert leaks(ws / "data") == []
    keyless = json.loads(run_cli("-w", str(ws), "replay", "--verify", "--json").stdout)
    assert keyless["ok"] is True and keyless["keyless"] is True


def test_no_file_holds_the_derived_key_or_the_data_key(softhsm: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _init(ws)
    _emit_secrets(ws, WITH_PIN)
    run_cli("-w", str(ws), "seal", env=WITH_PIN)
    ring = _ring(ws)
    derived = tokenkek.kek_of(ring["kek"], WITH_PIN)
    data_key = crypt.unlock(ws / "data" / "log", derived).key
    crypt.forget_keys()
    assert len(derived) == 32
    for folder in (tmp_path, softhsm.parent):  # the workspace, and the token's own store
        assert holding(folder, derived) == [] and holding(folder, data_key) == []
    salt = bytes.fromhex(str(ring["kek"]["salt"]))
    other = {**ring["kek"], "salt": bytes(reversed(salt)).hex()}
    assert tokenkek.kek_of(other, WITH_PIN) != derived  # the salt is in what is derived


def test_rotation_from_a_passphrase_to_the_token_and_back_keeps_the_data_key(
    softhsm: Path, tmp_path: Path
) -> None:
    ws, w = tmp_path / "ws", ("-w", str(tmp_path / "ws"))
    run_cli("init", "--encrypt", "--passphrase", str(ws), input="correct horse\n")
    phrase = {"NERVE_PASSPHRASE": "correct horse"}
    _emit_secrets(ws, phrase)
    run_cli(*w, "seal", env=phrase)
    segments = files_under(ws / "data" / "log" / "segments")
    digest = json.loads(run_cli(*w, "replay", "--json", env=phrase).stdout)["digest"]
    key_id, ring_file = _ring(ws)["key_id"], ws / "data" / "log" / "keyring.json"
    names = sorted(os.listdir(ws / "data" / "log"))

    inode = ring_file.stat().st_ino
    to_token = ("key", "rotate", "--pkcs11", MODULE, "--token", "spare", "--pin-env", PIN_ENV)
    run_cli(*w, *to_token, env={**phrase, **WITH_PIN})
    assert ring_file.stat().st_ino != inode  # a new file put in place, not one written over
    assert _ring(ws)["kek"]["kind"] == "pkcs11" and _ring(ws)["key_id"] == key_id
    assert "key: pkcs11" in (ws / "nerve.yaml").read_text()
    assert files_under(ws / "data" / "log" / "segments") == segments
    assert json.loads(run_cli(*w, "replay", "--json", env=WITH_PIN).stdout)["digest"] == digest
    old = run_cli(*w, "tail", "--all", env=phrase, check=False)
    assert old.returncode == 1 and old.stderr.startswith(f"KeyMissing: ${PIN_ENV} is not set")
    salt = _ring(ws)["kek"]["salt"]
    run_cli(*w, *to_token[:5], "nerve", *to_token[6:], env=WITH_PIN)  # to another token
    assert _ring(ws)["kek"]["token"] == "nerve" and _ring(ws)["kek"]["salt"] != salt
    assert json.loads(run_cli(*w, "replay", "--json", env=WITH_PIN).stdout)["digest"] == digest

    inode = ring_file.stat().st_ino
    run_cli(*w, "key", "rotate", "--passphrase", env=WITH_PIN, input="battery staple\n")
    assert ring_file.stat().st_ino != inode
    assert _ring(ws)["kek"]["kind"] == "passphrase" and _ring(ws)["key_id"] == key_id
    assert "key: passphrase" in (ws / "nerve.yaml").read_text()
    back = {"NERVE_PASSPHRASE": "battery staple"}
    assert json.loads(run_cli(*w, "replay", "--json", env=back).stdout)["digest"] == digest
    assert sorted(os.listdir(ws / "data" / "log")) == names  # no half-made keyring beside it


def _first_line(ws: Path, env: dict[str, str]) -> tuple[int, str]:
    out = run_cli("-w", str(ws), "tail", "--all", env=env, check=False)
    assert "Traceback" not in out.stderr
    return out.returncode, out.stderr.splitlines()[0]


def test_each_way_the_token_fails_is_one_line_naming_it_and_writes_nothing(
    softhsm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    _init(ws)
    _emit_secrets(ws, WITH_PIN)
    before = files_under(ws / "data")
    monkeypatch.delenv(PIN_ENV, raising=False)
    assert _first_line(ws, {}) == (
        1, f"KeyMissing: ${PIN_ENV} is not set: the PIN of PKCS#11 token 'nerve'"
    )  # fmt: skip
    assert _first_line(ws, {PIN_ENV: "9999"}) == (
        1, "WrongKey: PKCS#11 token 'nerve': wrong PIN; nothing was written"
    )  # fmt: skip
    ring = ws / "data" / "log" / "keyring.json"
    text = ring.read_text()
    ring.write_text(text.replace('"token": "nerve"', '"token": "absent"'))
    assert _first_line(ws, WITH_PIN) == (
        1, f"KeyMissing: PKCS#11 token 'absent' not found in {MODULE}"
    )  # fmt: skip
    ring.write_text(text.replace(MODULE, "/nonexistent/libnone.so"))
    code, line = _first_line(ws, WITH_PIN)
    assert code == 1 and line.startswith(
        "KeyMissing: PKCS#11 module /nonexistent/libnone.so cannot be loaded: "
    )
    ring.write_text(text)
    assert files_under(ws / "data") == before


def test_a_token_without_its_key_is_one_line_and_a_bad_token_makes_no_workspace(
    softhsm: Path, tmp_path: Path
) -> None:
    import pkcs11
    from pkcs11 import ObjectClass

    ws = tmp_path / "ws"
    _init(ws, token="doomed")
    with pkcs11.lib(MODULE).get_token(token_label="doomed").open(user_pin=PIN, rw=True) as s:
        s.get_key(label=tokenkek.LABEL, object_class=ObjectClass.SECRET_KEY).destroy()
    before = files_under(ws / "data")
    assert _first_line(ws, WITH_PIN) == (
        1, f"KeyMissing: PKCS#11 token 'doomed' in {MODULE} holds no nerve-kek key"
    )  # fmt: skip
    assert files_under(ws / "data") == before
    made = run_cli(
        "init", "--encrypt", "--pkcs11", MODULE, "--token", "absent", "--pin-env", PIN_ENV,
        str(tmp_path / "never"), env=WITH_PIN, check=False,
    )  # fmt: skip
    assert made.returncode == 1 and made.stderr.splitlines()[0] == (
        f"KeyMissing: PKCS#11 token 'absent' not found in {MODULE}"
    )
    assert not (tmp_path / "never").exists()


def test_the_key_choice_takes_one_source(softhsm: Path, tmp_path: Path) -> None:
    both = run_cli(
        "init", "--encrypt", "--passphrase", "--pkcs11", MODULE, "--token", "nerve",
        str(tmp_path / "ws"), check=False, input="a passphrase\n",
    )  # fmt: skip
    assert both.returncode == 2 and "give one of" in both.stderr
    alone = run_cli(
        "init", "--pkcs11", MODULE, "--token", "nerve", str(tmp_path / "ws"), check=False
    )
    assert alone.returncode == 2 and "go with --encrypt" in alone.stderr
    assert not (tmp_path / "ws").exists()


@pytest.mark.slow
def test_the_daemon_with_a_locked_token_starts_nothing_and_with_its_pin_runs(
    softhsm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    _init(ws)
    (ws / "nerve.yaml").write_text("senses: {}\nlog:\n  encryption:\n    key: pkcs11\n")
    monkeypatch.delenv(PIN_ENV, raising=False)
    before = files_under(ws / "data")
    for env, said in (({}, "KeyMissing: $"), ({PIN_ENV: "9999"}, "WrongKey: PKCS#11 token")):
        out = run_cli("-w", str(ws), "start", env=env, check=False, timeout=90)
        assert out.returncode == 1 and out.stderr.startswith(said), out.stderr
        assert len(out.stderr.strip().splitlines()) <= 2  # the error, and its hint
    assert files_under(ws / "data") == before and not (ws / "data" / "nerve.pid").exists()
    run_cli("-w", str(ws), "start", env=WITH_PIN, timeout=90)
    run_cli("-w", str(ws), "emit", "-s", "shell", "-l", SECRETS[0], env=WITH_PIN)
    locked = run_cli("-w", str(ws), "lock", env=WITH_PIN, timeout=90)
    assert locked.stdout.strip() == "locked: the daemon stopped"
    rows = run_cli("-w", str(ws), "tail", "--all", "--json", env=WITH_PIN).stdout
    assert SECRETS[0] in rows and leaks(ws / "data") == []


def test_the_tokens_key_never_leaves_it(softhsm: Path, tmp_path: Path) -> None:
    import pkcs11
    from pkcs11 import Attribute, ObjectClass

    _init(tmp_path / "ws")
    with pkcs11.lib(MODULE).get_token(token_label="nerve").open(user_pin=PIN, rw=True) as s:
        key = s.get_key(label=tokenkek.LABEL, object_class=ObjectClass.SECRET_KEY)
        assert key[Attribute.EXTRACTABLE] is False and key[Attribute.SENSITIVE] is True
        assert key[Attribute.NEVER_EXTRACTABLE] is True and key[Attribute.LOCAL] is True
        with pytest.raises(pkcs11.exceptions.AttributeSensitive):
            key[Attribute.VALUE]
        with pytest.raises(pkcs11.exceptions.PKCS11Error):
            key[Attribute.EXTRACTABLE] = True  # once false, never true again


def test_two_threads_may_use_one_token_at_once(softhsm: Path, tmp_path: Path) -> None:
    """A token logs a process in once: a second session opened meanwhile (the daemon's
    sealer and its key on one token) waits its turn instead of failing."""
    from concurrent.futures import ThreadPoolExecutor

    ws = tmp_path / "ws"
    _init(ws)
    source = _ring(ws)["kek"]
    with ThreadPoolExecutor(max_workers=4) as pool:
        keks = list(pool.map(lambda _: tokenkek.kek_of(source, WITH_PIN), range(40)))
    assert set(keks) == {keks[0]}

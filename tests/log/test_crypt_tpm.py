"""An encrypted log whose key-encryption key is derived inside an emulated TPM (swtpm), through
libtpm2-pkcs11 and the real CLI (tests/helpers/swtpm.py): written, sealed, reopened and read
back with the TPM; no file (the workspace, the token's store, the TPM's state) holds the
derived key; a wrong PIN is one line of nerve's and writes nothing; the TPM's key cannot be
read out of it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nerve.log import tokenkek
from tests.conftest import run_cli
from tests.helpers.crypt import SECRETS, files_under, holding, leaks
from tests.helpers.swtpm import PIN, key_public, needs_swtpm, tpm_token

PIN_ENV = "NERVE_TEST_TPM_PIN"
WITH_PIN = {PIN_ENV: PIN}

pytestmark = needs_swtpm


@pytest.fixture(scope="module")
def tpm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The libtpm2-pkcs11 module with a token ``nerve`` holding ``nerve-kek``, and the
    folder of the TPM's state and the token's store."""
    folder = tmp_path_factory.mktemp("swtpm")
    with tpm_token(folder, "nerve", tokenkek.LABEL) as module:
        yield module, folder


def _init(module: str, ws: Path) -> None:
    run_cli(
        "init", "--encrypt", "--pkcs11", module, "--token", "nerve", "--pin-env", PIN_ENV,
        str(ws), env=WITH_PIN,
    )  # fmt: skip


def _kek(ws: Path) -> dict[str, Any]:
    ring: dict[str, Any] = json.loads((ws / "data" / "log" / "keyring.json").read_text())
    return dict(ring["kek"])


def test_a_log_locked_by_the_tpm_is_written_sealed_reopened_and_read_back(
    tpm: tuple[str, Path], tmp_path: Path
) -> None:
    module, folder = tpm
    ws = tmp_path / "ws"
    _init(module, ws)
    kek = _kek(ws)
    assert kek == {
        "kind": "pkcs11", "module": module, "token": "nerve", "pin_env": PIN_ENV,
        "label": "nerve-kek", "mechanism": "CKM_SHA256_HMAC", "salt": kek["salt"],
    }  # fmt: skip
    for secret in SECRETS[:3]:
        run_cli("-w", str(ws), "emit", "-s", "shell", "--line", secret, env=WITH_PIN)
    assert "sealed 3 events" in run_cli("-w", str(ws), "seal", env=WITH_PIN).stdout
    run_cli("-w", str(ws), "emit", "-s", "shell", "--line", SECRETS[3], env=WITH_PIN)
    rows = run_cli("-w", str(ws), "tail", "--all", "--json", env=WITH_PIN).stdout.splitlines()
    assert [json.loads(row)["line"] for row in rows] == list(SECRETS[:4])
    assert leaks(ws / "data") == []
    derived = tokenkek.kek_of(kek, WITH_PIN)
    assert len(derived) == 32 and tokenkek.kek_of(kek, WITH_PIN) == derived
    assert holding(tmp_path, derived) == [] and holding(folder, derived) == []


def test_a_wrong_pin_is_one_line_of_nerves_and_writes_nothing(
    tpm: tuple[str, Path], tmp_path: Path
) -> None:
    """Run as a person runs it, in a process: the library prints its own ``WARNING:`` and
    ``ERROR:`` lines on stderr too; nerve's is the last and only other one."""
    module, _folder = tpm
    ws = tmp_path / "ws"
    _init(module, ws)
    run_cli("-w", str(ws), "emit", "-s", "shell", "--line", SECRETS[0], env=WITH_PIN)
    before = files_under(ws / "data")
    wrong = run_cli(
        "-w", str(ws), "tail", "--all", env={PIN_ENV: "9999"}, check=False, process=True
    )
    lines = wrong.stderr.strip().splitlines()
    assert wrong.returncode == 1 and wrong.stdout == ""
    assert lines[-1] == "WrongKey: PKCS#11 token 'nerve': wrong PIN; nothing was written"
    assert [line for line in lines[:-1] if not line.startswith(("WARNING:", "ERROR:"))] == []
    unset = run_cli("-w", str(ws), "tail", "--all", env={PIN_ENV: ""}, check=False)
    assert (unset.returncode, unset.stderr.splitlines()[0]) == (
        1, f"KeyMissing: ${PIN_ENV} is not set: the PIN of PKCS#11 token 'nerve'"
    )  # fmt: skip
    assert files_under(ws / "data") == before
    assert SECRETS[0] in run_cli("-w", str(ws), "tail", "--all", env=WITH_PIN).stdout


# TPMA_OBJECT bits: the key cannot leave this TPM (fixedTPM) nor its parent (fixedParent), and
# the TPM made its secret itself (sensitiveDataOrigin).
FIXED_TPM, FIXED_PARENT, SENSITIVE_DATA_ORIGIN = 1 << 1, 1 << 4, 1 << 5
KEYEDHASH, HMAC, SHA256 = 0x0008, 0x0005, 0x000B


def test_the_tpms_key_never_leaves_it(tpm: tuple[str, Path]) -> None:
    """As PKCS#11 describes it, and as the TPM holds it. libtpm2-pkcs11 lets CKA_EXTRACTABLE
    be turned on (PKCS#11 forbids that); even then it has no value to give."""
    import pkcs11
    from pkcs11 import Attribute, ObjectClass

    module, folder = tpm
    with pkcs11.lib(module).get_token(token_label="nerve").open(user_pin=PIN, rw=True) as s:
        key = s.get_key(label=tokenkek.LABEL, object_class=ObjectClass.SECRET_KEY)
        assert key[Attribute.EXTRACTABLE] is False and key[Attribute.SENSITIVE] is True
        assert key[Attribute.NEVER_EXTRACTABLE] is True and key[Attribute.LOCAL] is True
        assert key[Attribute.VALUE] == b""
        key[Attribute.EXTRACTABLE] = True
        assert key[Attribute.VALUE] == b""
    public = key_public(folder / "store", "nerve")
    kind, attributes = int.from_bytes(public[2:4]), int.from_bytes(public[6:10])
    assert (kind, int.from_bytes(public[12:14]), int.from_bytes(public[14:16])) == (
        KEYEDHASH,
        HMAC,
        SHA256,
    )
    held = FIXED_TPM | FIXED_PARENT | SENSITIVE_DATA_ORIGIN
    assert attributes & held == held

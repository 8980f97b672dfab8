"""The identity key in a PKCS#11 token (SoftHSM2): made there non-extractable, used again,
its signatures verified by PyNaCl; it certifies a seal set-up; a missing or locked token is
one clear error, and a daemon that cannot reach it keeps logging and says it is not sealing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from nacl.signing import VerifyKey

from nerve.pkcs11token import TokenRef
from nerve.seal.sealer import setup_message
from nerve.seal.seed import Seed
from nerve.seal.token import LABEL, sign
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.daemon_util import started
from tests.helpers.softhsm import MODULE, needs_softhsm, softhsm_tokens

PIN_ENV = "NERVE_TEST_TOKEN_PIN"

pytestmark = needs_softhsm


@pytest.fixture(scope="module")
def softhsm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A SoftHSM2 configuration with two fresh tokens, ``nerve`` and ``spare`` (PIN 1234)."""
    with softhsm_tokens(tmp_path_factory.mktemp("softhsm"), ("nerve", "spare")) as conf:
        yield conf


@pytest.fixture
def pin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PIN_ENV, "1234")


def key_cmd(*args: str, token: str = "nerve") -> tuple[int, str, str]:
    proc = run_cli(
        "audit", "key", "--pkcs11", MODULE, "--token", token, "--pin-env", PIN_ENV, *args,
        check=False,
    )  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr


def test_the_identity_key_is_made_once_and_never_leaves_the_token(softhsm: Path, pin: None) -> None:
    import pkcs11
    from pkcs11 import Attribute, ObjectClass

    code, first, _ = key_cmd()
    assert code == 0 and first.startswith("identity key: "), first
    assert key_cmd() == (0, first, "")  # used again, not made anew
    public = bytes.fromhex(first.split()[2])
    ref = TokenRef(MODULE, "nerve", PIN_ENV)
    VerifyKey(public).verify(b"a message", sign(ref, b"a message"))  # PyNaCl checks it
    with pkcs11.lib(MODULE).get_token(token_label="nerve").open(user_pin="1234") as session:
        private = session.get_key(label=LABEL, object_class=ObjectClass.PRIVATE_KEY)
        assert private[Attribute.EXTRACTABLE] is False and private[Attribute.SENSITIVE] is True
        assert len(list(session.get_objects({Attribute.LABEL: LABEL}))) == 2  # one pair


def test_a_wrong_pin_or_no_token_is_one_clear_error(
    softhsm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PIN_ENV, "9999")
    code, out, err = key_cmd(token="spare")
    assert (code, out) == (1, "") and err.splitlines()[0] == (
        "SealError: PKCS#11 token 'spare': wrong PIN"
    )
    monkeypatch.setenv(PIN_ENV, "1234")
    code, _, err = key_cmd(token="absent")
    assert code == 1 and err.splitlines()[0] == (
        f"SealError: PKCS#11 token 'absent' not found in {MODULE}"
    )
    proc = run_cli(
        "audit", "key", "--pkcs11", "/nonexistent/module.so", "--token", "nerve", "--pin-env",
        PIN_ENV, check=False,
    )  # fmt: skip
    assert proc.returncode == 1 and "/nonexistent/module.so" in proc.stderr.splitlines()[0]
    monkeypatch.delenv(PIN_ENV)
    code, _, err = key_cmd()
    assert code == 1 and f"${PIN_ENV} is not set" in err


def test_the_token_certifies_the_setup(softhsm: Path, pin: None, workspace: WorkspaceDir) -> None:
    assert key_cmd()[0] == 0  # the identity key, made here if no test before made it
    proc = run_cli(
        "--workspace", str(workspace.root), "audit", "seal-setup", "--epoch", "2s",
        "--horizon-bits", "4", "--pkcs11", MODULE, "--token", "nerve", "--pin-env", PIN_ENV,
    )  # fmt: skip
    seed = Seed.parse(proc.stdout.splitlines()[0].removeprefix("seed: "))
    stored = json.loads((workspace.data / "seals" / "setup.json").read_text())
    assert stored["identity"]["kind"] == "pkcs11" and stored["identity"]["pin_env"] == PIN_ENV
    leaves = [v for v in stored["identity"].values()] + [v for v in stored.values()]
    assert "1234" not in leaves  # the PIN is never written (hex fields may hold it by chance)
    assert set(stored["identity"]) <= {"kind", "module", "token", "pin_env", "public_key"}
    public = bytes.fromhex(stored["identity"]["public_key"])
    VerifyKey(public).verify(setup_message(seed), bytes.fromhex(stored["certificate"]))


def test_a_daemon_without_its_token_keeps_logging_and_says_it_is_not_sealing(
    softhsm: Path, pin: None, workspace: WorkspaceDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert key_cmd()[0] == 0  # the identity key, made here if no test before made it
    run_cli(
        "--workspace", str(workspace.root), "audit", "seal-setup", "--epoch", "2s",
        "--horizon-bits", "4", "--pkcs11", MODULE, "--token", "nerve", "--pin-env", PIN_ENV,
    )  # fmt: skip
    monkeypatch.delenv(PIN_ENV)  # the daemon starts without the PIN: the token stays locked
    with started(workspace.root) as daemon:
        seal = daemon.wait_for(
            lambda: daemon.request({"type": "status"})["status"]["sealing"],
            what="the sealing status",
        )
        assert seal["sealing"] is False and f"${PIN_ENV} is not set" in seal["why"]
        run_cli(
            "--workspace",
            str(workspace.root),
            "emit",
            "--source",
            "shell",
            "--line",
            "still logging",
        )
        stopped = daemon.wait_for(lambda: daemon.events("seal.stopped"), what="seal.stopped")
        assert len(stopped) == 1 and PIN_ENV in stopped[0]["line"]
        assert daemon.events("observation")  # the log is kept as before
        text = run_cli("--workspace", str(workspace.root), "status").stdout
        assert "sealing  NOT sealing epochs:" in text
    log = (workspace.data / "daemon.log").read_text()
    assert "NOT sealing epochs" in log
    assert not list((workspace.data / "seals").glob("epochs-*.notes"))

"""Another workspace cosigns a log's newest seal (C2SP cosignature/v1); when the log's owner
puts back an old copy (its seal state with it) and re-seals the later epochs, the seed alone
cannot tell, but the witness refuses: the log shows another history than it cosigned."""

from __future__ import annotations

import base64
import hashlib
import shutil
from pathlib import Path

from nacl.signing import VerifyKey

from nerve.runtime.sealing import heads_now
from nerve.seal import Sealer
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli
from tests.seal.sealed import build


def witness(me: WorkspaceDir, other: WorkspaceDir, seed: str) -> tuple[int, str, str]:
    proc = run_cli(
        "--workspace", str(me.root), "audit", "witness", str(other.root), "--seed", seed,
        check=False,
    )  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr


def test_a_witness_cosigns_and_then_refuses_a_second_history(tmp_path: Path) -> None:
    sealed = build(tmp_path / "log", old_copy=tmp_path / "old")
    me = init_workspace(tmp_path / "witness")
    seed = sealed.seed.text()
    code, note, err = witness(me, sealed.ws, seed)
    assert code == 0, err
    body, _, sigs = note.partition("\n\n")
    assert body.split("\n")[3] == "epoch 3"
    line = sigs.splitlines()[1]
    name, raw = line.split(" ")[1], base64.b64decode(line.split(" ")[2])
    assert name.startswith("nerve.witness/") and len(raw) == 4 + 8 + 64
    key = bytes.fromhex((me.data / "witness" / "key").read_text().strip())
    from nacl.signing import SigningKey

    public = bytes(SigningKey(key).verify_key)
    assert raw[:4] == hashlib.sha256(name.encode() + b"\n\x04" + public).digest()[:4]
    timestamp = int.from_bytes(raw[4:12], "big")
    message = f"cosignature/v1\ntime {timestamp}\n{body}\n".encode()
    VerifyKey(public).verify(message, raw[12:])
    # the cosigned note still verifies as a seal (other signature lines are ignored)
    assert run_cli("--workspace", str(sealed.ws.root), "audit", "verify", "--seed", seed)

    # The owner restores the copy made after epoch 1, its state with it, and seals 2 and 3
    # again over a history without the later events: every seal is genuine.
    shutil.rmtree(sealed.ws.data)
    shutil.copytree(tmp_path / "old" / "data", sealed.ws.data, symlinks=True)
    sealer = Sealer(sealed.ws.data / "seals", lambda: heads_now(sealed.ws.log_root))
    assert sealer.seal_due(sealed.at(3, 7)) == [2, 3]
    assert run_cli("--workspace", str(sealed.ws.root), "audit", "verify", "--seed", seed)
    code, _, err = witness(me, sealed.ws, seed)
    assert code == 1 and err.splitlines()[0].startswith("SealError: forked at epoch 3"), err


def test_a_witness_refuses_seals_that_do_not_verify(tmp_path: Path) -> None:
    sealed = build(tmp_path / "log")
    me = init_workspace(tmp_path / "witness")
    other = "nerve-seal1-" + "ab" * 32 + sealed.seed.text()[76:]
    code, _, err = witness(me, sealed.ws, other)
    assert code == 1 and "not cosigning: the seals fail at epoch 0: wrong-key" in err

"""Witnesses: another workspace cosigns a log's newest seal, so that even someone holding
every key of that log cannot show two different histories to two verifiers.

A witness keeps its own Ed25519 key (``data/witness/key``, owner-only) and, per log it
witnesses (by the seals' origin), the newest seal it cosigned (``data/witness/<origin>.json``).
Before cosigning it verifies the log's seals with the log's seed and checks that the seal it
cosigned last is still the one the log shows for that epoch (else ``forked``). The
cosignature is a C2SP ``tlog-cosignature`` line (cosignature/v1, Ed25519)::

    — <witness name> base64(key hash (4) + timestamp (8, big-endian Unix seconds) + signature (64))

signed over ``"cosignature/v1\\ntime <timestamp>\\n" + note body``; the key hash is
``SHA-256(name + "\\n" + 0x04 + public key)[:4]``. The cosigned notes are appended to
``data/witness/<origin>.notes``; ``audit verify --seed`` ignores signature lines of other names.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from nacl.signing import SigningKey

from nerve import fsio
from nerve.canonical import canonical_json
from nerve.seal.note import DASH, parse
from nerve.seal.seed import Seed
from nerve.seal.store import SealError
from nerve.seal.verify import LogView, verify


@dataclass(frozen=True)
class Cosigned:
    epoch: int
    note: str  # the note with the witness's cosignature line added
    name: str  # the witness's name


def cosignature_key_hash(name: str, public_key: bytes) -> bytes:
    return hashlib.sha256(name.encode() + b"\n\x04" + public_key).digest()[:4]


def witness_key(folder: Path) -> SigningKey:
    """The witness's key in ``folder`` (made, owner-only, on first use)."""
    path = fsio.private_dir(folder) / "key"
    if not path.exists():
        fsio.write_private(
            path, SigningKey.generate().encode().hex().encode() + b"\n", site="key.write"
        )
    return SigningKey(bytes.fromhex(fsio.read_bytes(path).decode().strip()))


def name_of(key: SigningKey) -> str:
    return f"nerve.witness/{bytes(key.verify_key).hex()[:16]}"


def cosign(
    folder: Path, seed: Seed, notes: list[str], log: LogView, now_ns: int | None = None
) -> Cosigned:
    """Verify the log's seals, check it continues what this witness cosigned before, and
    cosign its newest seal."""
    now = time.time_ns() if now_ns is None else now_ns
    report = verify(seed, notes, log, now)
    if report.failure is not None:
        f = report.failure
        raise SealError(f"not cosigning: the seals fail at epoch {f.epoch}: {f.kind}: {f.message}")
    by_epoch = {parse(n)[0].epoch: n for n in notes}
    memory = fsio.private_dir(folder) / f"{seed.origin.replace('/', '_')}.json"
    _check_continues(memory, by_epoch)
    last = max(by_epoch)
    key = witness_key(folder)
    note = _with_cosignature(by_epoch[last], key, now // 1_000_000_000)
    body = canonical_json({"epoch": last, "note": _body_hash(by_epoch[last])})
    fsio.write_private(memory, body + b"\n", site="witness.write", exclusive=False)
    notes_file = memory.with_suffix(".notes")
    fd = fsio.open_append(notes_file)
    try:
        fsio.write_all(fd, (note + "\n").encode(), site="witness.write", path=notes_file)
        fsio.fsync(fd, site="witness.write", path=notes_file)
    finally:
        os.close(fd)
    return Cosigned(last, note, name_of(key))


def _check_continues(memory: Path, by_epoch: dict[int, str]) -> None:
    """The seal this witness cosigned last must still be the log's seal of that epoch."""
    if not memory.exists():
        return
    seen = json.loads(fsio.read_bytes(memory))
    epoch, body = int(seen["epoch"]), str(seen["note"])
    shown = by_epoch.get(epoch)
    if shown is None or _body_hash(shown) != body:
        raise SealError(
            f"forked at epoch {epoch}: the log now shows another seal for it than the one "
            "this witness cosigned (two histories)"
        )


def _body_hash(note: str) -> str:
    return hashlib.sha256(note.partition("\n\n")[0].encode()).hexdigest()


def _with_cosignature(note: str, key: SigningKey, timestamp: int) -> str:
    body = note.partition("\n\n")[0] + "\n"
    message = f"cosignature/v1\ntime {timestamp}\n".encode() + body.encode()
    name = name_of(key)
    raw = (
        cosignature_key_hash(name, bytes(key.verify_key))
        + timestamp.to_bytes(8, "big")
        + key.sign(message).signature
    )
    return f"{note}{DASH} {name} {base64.b64encode(raw).decode()}\n"

"""An epoch seal as text: a C2SP signed note whose body is a ``tlog-checkpoint``.

    nerve.seal/<root hex, 16 digits>            origin (names the set-up)
    <manifest records>                         tree size: records in manifest.jsonl
    <base64 manifest head>                     root hash: blake3 of the last record's line
    epoch <n>
    time <Unix ns when it was sealed>
    chain <links> <base64 id of the last surfacing-chain link>
    key <base64 epoch n's Ed25519 public key>
    proof <base64 of the key's Merkle audit path, bottom first>
                                               (blank line)
    — <origin> <base64(key hash (4 bytes) + Ed25519 signature over the body)>

The key hash is the first four bytes of SHA-256(origin + "\\n" + 0x01 + public key), as a
C2SP note's Ed25519 verifier key names it. An empty manifest or chain has size 0 and a head
of 32 zero bytes.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

from nerve.errors import NerveError

DASH = "\u2014"  # the em dash every signature line starts with
ZERO = bytes(32)


class NoteError(NerveError):
    """A seal's text is not a signed note of the shape this module writes."""


@dataclass(frozen=True)
class Seal:
    origin: str
    records: int
    manifest_head: bytes
    epoch: int
    time_ns: int
    links: int
    chain_head: bytes
    key: bytes
    proof: tuple[bytes, ...]

    def body(self) -> str:
        return (
            f"{self.origin}\n{self.records}\n{_b64(self.manifest_head)}\n"
            f"epoch {self.epoch}\ntime {self.time_ns}\n"
            f"chain {self.links} {_b64(self.chain_head)}\n"
            f"key {_b64(self.key)}\nproof {_b64(b''.join(self.proof))}\n"
        )


def key_hash(name: str, public_key: bytes) -> bytes:
    """The 4-byte key id of a C2SP Ed25519 note verifier key."""
    return hashlib.sha256(name.encode() + b"\n\x01" + public_key).digest()[:4]


def sign(seal: Seal, key: SigningKey) -> str:
    """The seal as a signed note, signed by ``key`` (epoch ``seal.epoch``'s)."""
    body = seal.body()
    sig = key.sign(body.encode()).signature
    line = _b64(key_hash(seal.origin, bytes(key.verify_key)) + sig)
    return f"{body}\n{DASH} {seal.origin} {line}\n"


def parse(text: str) -> tuple[Seal, bytes]:
    """The seal a note states and its signature (not yet checked)."""
    body, sep, sigs = text.partition("\n\n")
    lines = body.split("\n")
    if not sep or len(lines) != 8:
        raise NoteError("not a seal note: 8 body lines, a blank line, a signature")
    try:
        seal = _fields(lines)
        sig = _signature(seal, sigs)
    except (ValueError, IndexError) as exc:
        raise NoteError(f"seal note field unreadable: {exc}") from None
    return seal, sig


def _fields(lines: list[str]) -> Seal:
    words = [line.split(" ") for line in lines[3:]]
    for (name, *_), want in zip(words, ("epoch", "time", "chain", "key", "proof"), strict=True):
        if name != want:
            raise ValueError(f"expected a {want!r} line, found {name!r}")
    proof = _unb64(words[4][1])
    if len(proof) % 32:
        raise ValueError("proof is not a list of 32-byte hashes")
    return Seal(
        origin=lines[0],
        records=_count(lines[1]),
        manifest_head=_hash(lines[2]),
        epoch=_count(words[0][1]),
        time_ns=_count(words[1][1]),
        links=_count(words[2][1]),
        chain_head=_hash(words[2][2]),
        key=_hash(words[3][1]),
        proof=tuple(proof[i : i + 32] for i in range(0, len(proof), 32)),
    )


def _signature(seal: Seal, sigs: str) -> bytes:
    lines = sigs.rstrip("\n").split("\n")
    mine = [line for line in lines if line.startswith(f"{DASH} {seal.origin} ")]
    if len(mine) != 1:
        raise ValueError(f"expected one signature line by {seal.origin}")
    raw = _unb64(mine[0].rsplit(" ", 1)[1])
    if len(raw) != 68 or raw[:4] != key_hash(seal.origin, seal.key):
        raise ValueError("the signature line does not name the note's key")
    return raw[4:]


def signed_by_key(seal: Seal, sig: bytes) -> bool:
    """True if ``sig`` is the note's own key's signature over its body."""
    try:
        VerifyKey(seal.key).verify(seal.body().encode(), sig)
    except (BadSignatureError, ValueError):
        return False
    return True


def split_notes(text: str) -> list[str]:
    """The notes of a seals file (each ends with its signature lines; one blank line
    between notes). A torn last note is left out."""
    blocks = text.split("\n\n")
    pairs = zip(blocks[0:-1:2], blocks[1::2], strict=False)
    notes = [f"{body}\n\n{sigs.strip(chr(10))}\n" for body, sigs in pairs]
    return [n for n in notes if n.rstrip("\n").split("\n")[-1].startswith(DASH)]


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode(), validate=True)


def _hash(text: str) -> bytes:
    raw = _unb64(text)
    if len(raw) != 32:
        raise ValueError(f"{text!r} is not a base64 32-byte hash")
    return raw


def _count(text: str) -> int:
    if not text.isdigit() or (len(text) > 1 and text[0] == "0"):
        raise ValueError(f"{text!r} is not a decimal count")
    return int(text)

"""A host's signed manifest head: what its log held when it shipped, vouched for by its key.

The body is canonical JSON; the signature is Ed25519 over ``DOMAIN + body`` by the host's
audit key (the newest epoch of ``data/keys``). The domain keeps a head's signature from
ever being mistaken for a chain link's, which the same key also signs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import blake3

from nerve.canonical import canonical_json
from nerve.errors import NerveError

__all__ = ["DOMAIN", "Head", "HeadError", "Registration", "live_digest"]

DOMAIN = b"nerve.fleet.head.v1\x00"
_FIELDS = ("host", "node", "seq", "head", "segments", "rows", "digest", "key", "time_ns")


class HeadError(NerveError):
    """A head that cannot be read, or whose signature does not verify."""


@dataclass(frozen=True)
class Head:
    body: dict[str, Any]
    sig: bytes

    @property
    def host(self) -> str:
        return str(self.body["host"])

    @property
    def seq(self) -> int:
        return int(self.body["seq"])

    @property
    def hash(self) -> str:
        return str(self.body["head"])

    @property
    def key(self) -> bytes:
        return bytes.fromhex(str(self.body["key"]))

    @property
    def segments(self) -> list[str]:
        return [str(s) for s in self.body["segments"]]

    def to_bytes(self) -> bytes:
        return canonical_json({"body": self.body, "sig": self.sig.hex()})

    def verifies(self) -> bool:
        from nacl.exceptions import BadSignatureError
        from nacl.signing import VerifyKey

        try:
            VerifyKey(self.key).verify(DOMAIN + canonical_json(self.body), self.sig)
        except (BadSignatureError, ValueError, TypeError):
            return False
        return True

    @classmethod
    def sign(cls, body: dict[str, Any], signing_key: Any) -> Head:
        body = {**body, "key": bytes(signing_key.verify_key.encode()).hex()}
        signed = signing_key.sign(DOMAIN + canonical_json(body)).signature
        return cls(body, bytes(signed))

    @classmethod
    def parse(cls, data: bytes, where: str) -> Head:
        try:
            obj = json.loads(data)
            body, sig = obj["body"], bytes.fromhex(obj["sig"])
        except (ValueError, KeyError, TypeError, AttributeError):
            raise HeadError(f"{where}: not a signed head (JSON with body and sig)") from None
        missing = [f for f in _FIELDS if not isinstance(body, dict) or f not in body]
        if missing:
            raise HeadError(f"{where}: head lacks {', '.join(missing)}")
        if not isinstance(body["segments"], list) or not isinstance(body["seq"], int):
            raise HeadError(f"{where}: head's segments or seq has the wrong type")
        return cls(body, sig)


def live_digest(ids: list[bytes]) -> str:
    """blake3 over the live segments' event ids (32 bytes each) in HLC order: the replay
    digest of the sealed part of the log."""
    hasher = blake3.blake3()
    for chunk in ids:
        hasher.update(chunk)
    return hasher.hexdigest()


REGISTRATION_DOMAIN = b"nerve.fleet.registration.v1\x00"


@dataclass(frozen=True)
class Registration:
    """What a ship's snapshot carries instead of its whole head, so the table's metadata
    grows by a fixed ~270 bytes per host however many segments it holds: the host, the
    manifest record and head hash the commit registered, the key, and a signature over
    them (its own domain). The segments are the head's with that record and hash."""

    host: str
    seq: int
    hash: str
    key: bytes
    sig: bytes

    segments = None  # not carried: the head.json of this record names them

    def _body(self) -> bytes:
        body = {"host": self.host, "seq": self.seq, "head": self.hash, "key": self.key.hex()}
        return REGISTRATION_DOMAIN + canonical_json(body)

    def to_text(self) -> str:
        return f"v1.{self.seq}.{self.hash}.{self.key.hex()}.{self.sig.hex()}"

    def verifies(self) -> bool:
        from nacl.exceptions import BadSignatureError
        from nacl.signing import VerifyKey

        try:
            VerifyKey(self.key).verify(self._body(), self.sig)
        except (BadSignatureError, ValueError, TypeError):
            return False
        return True

    def names(self, head: Head) -> bool:
        """``head`` is the one this registration was made from (same host, record, key)."""
        return (head.host, head.seq, head.hash, head.key) == (
            self.host,
            self.seq,
            self.hash,
            self.key,
        )

    @classmethod
    def of(cls, head: Head, signing_key: Any) -> Registration:
        unsigned = cls(head.host, head.seq, head.hash, head.key, b"")
        return cls(
            **{**unsigned.__dict__, "sig": bytes(signing_key.sign(unsigned._body()).signature)}
        )

    @classmethod
    def parse(cls, host: str, text: str, where: str) -> Registration:
        try:
            version, seq, digest, key, sig = text.split(".")
            if version != "v1":
                raise ValueError(version)
            return cls(host, int(seq), digest, bytes.fromhex(key), bytes.fromhex(sig))
        except ValueError:
            raise HeadError(f"{where}: not a nerve registration") from None

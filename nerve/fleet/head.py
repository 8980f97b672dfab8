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

__all__ = ["DOMAIN", "Head", "HeadError", "live_digest"]

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

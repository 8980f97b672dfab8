"""What the transport carries: sealed boxes (XSalsa20-Poly1305, PyNaCl's SecretBox, under
the group key) of zlib-compressed canonical JSON, and names derived from the key, so the
server or bucket sees sizes, times and opaque tokens, never a node, a group name or an event.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

import blake3
from nacl.exceptions import CryptoError
from nacl.secret import SecretBox

__all__ = ["Damaged", "open_box", "seal_box", "token"]


class Damaged(Exception):
    """A box that does not open under the group key (corrupted, truncated or foreign); the
    sync round drops it and waits for the sender's resend (never raised past the engine)."""


def token(key: bytes, what: str, length: int = 16) -> str:
    """An opaque name for ``what`` (a node, the group) under ``key``: blake3 keyed, hex."""
    digest = blake3.blake3(what.encode(), key=key).hexdigest()
    return digest[: 2 * length]


def seal_box(key: bytes, body: dict[str, Any]) -> bytes:
    """``body`` as JSON, compressed, then encrypted and authenticated (random nonce)."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    return bytes(SecretBox(key).encrypt(zlib.compress(text, 6)))


def open_box(key: bytes, blob: bytes) -> dict[str, Any]:
    """The body of a box; ``Damaged`` if it fails authentication or is not a body."""
    try:
        body = json.loads(zlib.decompress(SecretBox(key).decrypt(blob)))
    except (CryptoError, ValueError, zlib.error) as exc:
        raise Damaged(str(exc) or type(exc).__name__) from None
    if not isinstance(body, dict):
        raise Damaged("not an object")
    return body

"""What the transport carries: sealed boxes (XSalsa20-Poly1305, PyNaCl's SecretBox, under
the group key), and names derived from the key, so the server or bucket sees sizes, times and
opaque tokens, never a node, a group name or an event.

A status box (and a batch of version 1) holds zlib-compressed canonical JSON. A batch of
version 2 holds ``BATCH_MAGIC``, the length of a JSON head, the head, then its events as an
Arrow IPC stream (zstd-compressed buffers, but for a few events, where starting zstd would
cost more than it saves): the receiver reads the columns as they are, with no object per
event.
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import TYPE_CHECKING, Any

import blake3
from nacl.exceptions import CryptoError
from nacl.secret import SecretBox

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["BATCH_MAGIC", "Damaged", "open_box", "seal_batch", "seal_box", "token"]

BATCH_MAGIC = b"NB2\0"  # how a version 2 batch starts (a zlib stream never does)
_LENGTH = struct.Struct(">I")
COMPRESS_ROWS = 64


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


def seal_batch(key: bytes, head: dict[str, Any], table: pa.Table) -> bytes:
    """A version 2 batch: ``head`` and ``table`` (see the module docstring), encrypted and
    authenticated (random nonce)."""
    import pyarrow as pa

    text = json.dumps(head, sort_keys=True, separators=(",", ":")).encode()
    sink = pa.BufferOutputStream()
    compression = "zstd" if table.num_rows >= COMPRESS_ROWS else None
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    plain = BATCH_MAGIC + _LENGTH.pack(len(text)) + text + sink.getvalue().to_pybytes()
    return bytes(SecretBox(key).encrypt(plain))


def open_box(key: bytes, blob: bytes) -> dict[str, Any]:
    """The body of a box (a version 2 batch's head, its events under ``"table"``);
    ``Damaged`` if it fails authentication or is not a body."""
    try:
        plain = SecretBox(key).decrypt(blob)
        body = (
            _batch(plain) if plain.startswith(BATCH_MAGIC) else json.loads(zlib.decompress(plain))
        )
    except (CryptoError, ValueError, zlib.error, struct.error) as exc:
        raise Damaged(str(exc) or type(exc).__name__) from None
    if not isinstance(body, dict):
        raise Damaged("not an object")
    return body


def _batch(plain: bytes) -> Any:
    """A version 2 batch's head with its table (ValueError when it is not one)."""
    import pyarrow as pa

    start = len(BATCH_MAGIC) + _LENGTH.size
    (length,) = _LENGTH.unpack_from(plain, len(BATCH_MAGIC))
    head = json.loads(plain[start : start + length])
    if not isinstance(head, dict):
        return head
    try:
        head["table"] = pa.ipc.open_stream(pa.py_buffer(plain[start + length :])).read_all()
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"events unreadable: {exc}") from None
    return head

"""Canonical encodings: JSON for payloads and wire output, det-CBOR for signed records.

Canonical JSON is UTF-8, keys sorted, no insignificant whitespace, no NaN or infinity.

Deterministic CBOR (:func:`det_cbor`, :func:`det_cbor_decode`) is RFC 8949 §4.2.1 core
deterministic encoding restricted to integers, byte strings, text strings, arrays and maps
with text keys; the sealed surfacing chain (``nerve.chain``) signs over it.
"""

from __future__ import annotations

import json
from typing import Any

from nerve.errors import EventError

# One encoder, built once: json.dumps with options builds a new one per call.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_json(value: Any) -> bytes:
    """Encode ``value`` as canonical JSON bytes; raise ``EventError`` if it cannot be."""
    try:
        text = _CANONICAL.encode(value)
    except (TypeError, ValueError) as exc:
        raise EventError(f"value is not JSON-serialisable: {exc}") from None
    return text.encode("utf-8")


def canonical_json_text(value: Any) -> str:
    """Like :func:`canonical_json` but returns ``str``."""
    return canonical_json(value).decode("utf-8")


# --- deterministic CBOR (RFC 8949 §4.2.1, restricted) ------------------------------------
#
# Allowed: unsigned/negative integers in the 64-bit argument range, byte strings, text
# strings, arrays and maps with text-string keys. Forbidden: floats, bools, null, simple
# values, tags and indefinite lengths. Integers and lengths use their shortest form; map keys
# are sorted by their encoded bytes, shorter first, then bytewise.

CBOR_INT_MIN = -(2**64)
CBOR_INT_MAX = 2**64 - 1
CBOR_MAX_DEPTH = 64

_MAJOR_UINT, _MAJOR_NINT, _MAJOR_BYTES, _MAJOR_TEXT, _MAJOR_ARRAY, _MAJOR_MAP = range(6)
_MAJOR_TAG, _MAJOR_SIMPLE = 6, 7


def _head(major: int, arg: int) -> bytes:
    """The initial byte(s) of a data item: major type plus its argument in shortest form."""
    if arg < 24:
        return bytes((major << 5 | arg,))
    for info, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if arg < 1 << (8 * size):
            return bytes((major << 5 | info,)) + arg.to_bytes(size, "big")
    raise EventError(f"det-CBOR: argument {arg} does not fit in 64 bits")


def _encode_key(key: object) -> bytes:
    if not isinstance(key, str):
        raise EventError(f"det-CBOR: map key {key!r} is not a text string")
    return _encode(key, 0)


def _encode_int(value: int) -> bytes:
    if not CBOR_INT_MIN <= value <= CBOR_INT_MAX:
        raise EventError(f"det-CBOR: integer {value} is outside -2^64..2^64-1")
    return _head(_MAJOR_UINT, value) if value >= 0 else _head(_MAJOR_NINT, -1 - value)


def _encode_text(value: str) -> bytes:
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError:
        raise EventError(f"det-CBOR: text {value!r} is not valid Unicode") from None
    return _head(_MAJOR_TEXT, len(raw)) + raw


def _encode_map(value: dict[Any, Any], depth: int) -> bytes:
    pairs = sorted(((_encode_key(k), v) for k, v in value.items()), key=lambda p: (len(p[0]), p[0]))
    body = b"".join(k + _encode(v, depth + 1) for k, v in pairs)
    return _head(_MAJOR_MAP, len(pairs)) + body


def _encode(value: object, depth: int) -> bytes:
    if depth > CBOR_MAX_DEPTH:
        raise EventError(f"det-CBOR: nesting deeper than {CBOR_MAX_DEPTH}")
    if isinstance(value, bool) or value is None or isinstance(value, float):
        raise EventError(f"det-CBOR: {value!r} is not allowed (no floats, bools or null)")
    if isinstance(value, int):
        return _encode_int(value)
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        return _head(_MAJOR_BYTES, len(raw)) + raw
    if isinstance(value, str):
        return _encode_text(value)
    if isinstance(value, list | tuple):
        return _head(_MAJOR_ARRAY, len(value)) + b"".join(_encode(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return _encode_map(value, depth)
    raise EventError(f"det-CBOR: cannot encode a {type(value).__name__}")


def det_cbor(value: object) -> bytes:
    """Encode ``value`` as deterministic CBOR; raise ``EventError`` naming what cannot be.

    Accepts ``int``, ``bytes``, ``str``, ``list``/``tuple`` and ``dict`` with ``str`` keys,
    nested up to ``CBOR_MAX_DEPTH`` levels.
    """
    return _encode(value, 0)


class _Decoder:
    """A strict single-pass decoder; every rejection names the byte offset."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def fail(self, what: str, at: int) -> EventError:
        return EventError(f"det-CBOR: {what} at byte {at}")

    def take(self, size: int, at: int) -> bytes:
        end = self.pos + size
        if end > len(self.data):
            raise self.fail(f"truncated: need {size} byte(s), {len(self.data) - self.pos} left", at)
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def head(self) -> tuple[int, int, int]:
        """Read one initial byte and argument; return ``(major, arg, offset)``."""
        at = self.pos
        first = self.take(1, at)[0]
        major, info = first >> 5, first & 0x1F
        if major == _MAJOR_TAG:
            raise self.fail("tags are not allowed", at)
        if major == _MAJOR_SIMPLE:
            raise self.fail("floats, bools, null and simple values are not allowed", at)
        if info < 24:
            return major, info, at
        if info == 31:
            raise self.fail("indefinite length is not allowed", at)
        if info > 27:
            raise self.fail(f"reserved additional information {info}", at)
        size = 1 << (info - 24)
        arg = int.from_bytes(self.take(size, at), "big")
        if arg < (24 if size == 1 else 1 << (4 * size)):
            raise self.fail(f"non-shortest encoding of argument {arg}", at)
        return major, arg, at

    def item(self, depth: int) -> Any:
        major, arg, at = self.head()
        if depth > CBOR_MAX_DEPTH:
            raise self.fail(f"nesting deeper than {CBOR_MAX_DEPTH}", at)
        if major == _MAJOR_UINT:
            return arg
        if major == _MAJOR_NINT:
            return -1 - arg
        if major == _MAJOR_BYTES:
            return self.take(arg, at)
        if major == _MAJOR_TEXT:
            return self.text(arg, at)
        if major == _MAJOR_ARRAY:
            self.check_count(arg, at)
            return [self.item(depth + 1) for _ in range(arg)]
        return self.map(arg, at, depth)

    def check_count(self, count: int, at: int) -> None:
        if count > len(self.data) - self.pos:
            raise self.fail(f"truncated: {count} item(s) declared, too few bytes left", at)

    def text(self, size: int, at: int) -> str:
        try:
            return self.take(size, at).decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("text string is not valid UTF-8", at) from None

    def map(self, count: int, at: int, depth: int) -> dict[str, Any]:
        self.check_count(count, at)
        out: dict[str, Any] = {}
        last = b""
        for _ in range(count):
            key_at = self.pos
            major, size, _ = self.head()
            if major != _MAJOR_TEXT:
                raise self.fail("map key is not a text string", key_at)
            key = self.text(size, key_at)
            raw = self.data[key_at : self.pos]
            if last and (len(raw), raw) <= (len(last), last):
                raise self.fail(
                    f"map key {key!r} is {'duplicated' if raw == last else 'unsorted'}", key_at
                )
            last = raw
            out[key] = self.item(depth + 1)
        return out


def det_cbor_decode(data: bytes | bytearray | memoryview) -> Any:
    """Decode one deterministic CBOR item that fills ``data`` exactly.

    Raises ``EventError`` naming the problem and its byte offset: truncation, trailing bytes,
    non-shortest integers or lengths, unsorted or duplicate map keys, non-text map keys,
    floats, bools, null, simple values, tags, indefinite lengths or invalid UTF-8.
    """
    decoder = _Decoder(bytes(data))
    value = decoder.item(0)
    if decoder.pos != len(decoder.data):
        raise decoder.fail(f"{len(decoder.data) - decoder.pos} trailing byte(s)", decoder.pos)
    return value

"""Canonical encodings: JSON for payloads and wire output, det-CBOR for signed records.

Canonical JSON is RFC 8785, the JSON Canonicalization Scheme (JCS): UTF-8, object keys
sorted by their UTF-16 code units, no insignificant whitespace, strings escaped as
ECMAScript's ``JSON.stringify`` does, numbers in ECMAScript's shortest form (``1e-7``,
``1e+21``, ``0`` for ``-0``; the number text comes from the ``rfc8785`` package), no NaN or
infinity. One extension: an integer outside JCS's exact range (beyond ±(2^53 − 1), such as
a nanosecond stamp) is written as its exact decimal digits, never rounded to a double.

Payloads written before nerve used JCS were in nerve's first form (:func:`legacy_json`:
keys sorted by code point, Python's float text such as ``1e-07``). Stored bytes are never
re-encoded, so their addresses and ids stay valid; readers that recompute an encoding
(``nerve import`` of a ``"payload"`` value with a claimed address, the manifest check)
accept either form.

**Nesting limit.** JSON nerve stores or reads may nest arrays and objects at most
:data:`MAX_NESTING` (64) levels deep: ``1`` nests 0 levels, ``[1]`` 1, ``{"a": [1]}`` 2.
:func:`canonical_json` refuses anything deeper with an ``EventError`` naming the field and
the depth, so every capture path (CLI, socket, import, senses) enforces it; readers use
:func:`loads_bounded`, which measures the text before parsing it (:func:`nesting_depth`,
iterative and linear, never recursive), so a deep payload stored before the limit existed
is shown raw instead of breaking them.

Deterministic CBOR (:func:`det_cbor`, :func:`det_cbor_decode`) is RFC 8949 §4.2.1 core
deterministic encoding restricted to integers, byte strings, text strings, arrays and maps
with text keys; the sealed surfacing chain (``nerve.chain``) signs over it.
"""

from __future__ import annotations

import json
import json.scanner
import re
import sys
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from nerve.errors import EventError

MAX_NESTING = 64

# One encoder, built once: json.dumps with options builds a new one per call.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
# For values that came out of json.loads (no cycles, no foreign types), the C encoder itself,
# also built once: JSONEncoder.encode builds one per call, which costs more than the work.
_C_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)
_C_CANONICAL = (
    _C_MAKE_ENCODER(None, None, json.encoder.encode_basestring, None, ":", ",", True, False, False)
    if _C_MAKE_ENCODER is not None
    else None
)


# One value at an index, without json.loads' wrapper around it.
_SCAN: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(
    json.JSONDecoder()  # type: ignore[arg-type]  # typeshed types the factory as a class
)


def _encode_parsed(value: Any) -> str:
    text = _CANONICAL.encode(value) if _C_CANONICAL is None else "".join(_C_CANONICAL(value, 0))
    return _as_jcs(text, value)


def _parse_whole(text: str) -> Any:
    """The one JSON value filling ``text`` exactly (no whitespace around it); ValueError else."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        raise ValueError("not JSON") from None
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return value


# --- RFC 8785 (JCS) ----------------------------------------------------------------------
#
# The stdlib's C encoder (keys sorted by code point) already gives JCS bytes unless the value
# holds a float (Python's float text differs from ECMAScript's) or a key with a character
# beyond U+FFFF (code point and UTF-16 order differ there). Both show in its output: floats
# are rewritten token by token in one regex pass that steps over strings, and only a text
# with a character beyond U+FFFF is encoded again by :func:`_jcs`, which sorts keys by UTF-16.

_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|-?\d+(?:\.\d+)?(?:e[+-]\d+)?')
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_FLOAT_MARK = re.compile(r"[.]|e[+-]")  # every float Python writes has one; no other token
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _token_text(match: re.Match[str]) -> str:
    token = match.group()
    if token[0] == '"' or ("." not in token and "e" not in token):
        return token  # a string, or an integer (exact digits)
    return _jcs_number(float(token))


def _as_jcs(text: str, value: Any) -> str:
    """``text`` (the C encoder's output for ``value``) in JCS form."""
    if not text.isascii() and _ASTRAL.search(text):
        out: list[str] = []
        _jcs(value, out)
        return "".join(out)
    if "." not in text and "e+" not in text and "e-" not in text:
        return text
    if _FLOAT_MARK.search(_STRING.sub("", text)) is None:  # the marks were inside strings
        return text
    return _JSON_TOKEN.sub(_token_text, text)


def _jcs_key(key: object) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool | int | float):  # as json.dumps turns them to text
        return _CANONICAL.encode(key) if not isinstance(key, float) else _jcs_number(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def jcs_number(value: float) -> str:
    """A float as RFC 8785 writes it (ECMAScript's shortest number text)."""
    return _jcs_number(value)


def _jcs_number(value: float) -> str:
    """ECMAScript's number text. Where Python writes a float without an exponent
    (1e-4 <= |x| < 1e16) both use the same shortest digits and fixed notation, differing
    only in Python's ``.0`` on whole numbers; elsewhere the ``rfc8785`` package decides."""
    text = float.__repr__(value)
    if "e" not in text and "n" not in text:  # not an exponent, inf or nan
        if value == 0:
            return "0"
        return text[:-2] if text.endswith(".0") else text
    import rfc8785

    return rfc8785.dumps(value).decode("ascii")


def _jcs(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(json.encoder.encode_basestring(value))
    elif value is None or isinstance(value, bool):
        out.append("null" if value is None else "true" if value else "false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))  # exact digits, also beyond 2^53
    elif isinstance(value, float):
        out.append(_jcs_number(value))
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            out.append("," if index else "")
            _jcs(item, out)
        out.append("]")
    elif isinstance(value, dict):
        _jcs_object(value, out)
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _jcs_object(value: dict[Any, Any], out: list[str]) -> None:
    pairs = sorted(((_jcs_key(k), v) for k, v in value.items()), key=_utf16_key)
    out.append("{")
    for index, (key, item) in enumerate(pairs):
        out.append(("," if index else "") + json.encoder.encode_basestring(key) + ":")
        _jcs(item, out)
    out.append("}")


def _utf16_key(pair: tuple[str, Any]) -> bytes:
    return pair[0].encode("utf-16-be", "surrogatepass")


def jcs_text(value: Any) -> str:
    """``value`` as RFC 8785 text (see the module docstring); TypeError / ValueError / a
    RecursionError as ``json.dumps`` raises them."""
    return _as_jcs(_CANONICAL.encode(value), value)


def legacy_json(value: Any) -> bytes:
    """``value`` in nerve's first canonical form (keys by code point, Python float text),
    which payloads stored before JCS use; only for checking such stored bytes."""
    return _CANONICAL.encode(value).encode("utf-8", "surrogatepass")


def canonical_json(value: Any, *, field: str = "value", limit: int = MAX_NESTING) -> bytes:
    """Encode ``value`` as canonical JSON (RFC 8785) bytes; raise ``EventError`` if it
    cannot be.

    ``field`` names the value in errors; ``limit`` is the deepest nesting accepted.
    """
    try:
        text = jcs_text(value)
    except RecursionError:
        raise _too_deep(field, None, limit) from None
    except (TypeError, ValueError) as exc:
        raise EventError(f"{field} is not JSON-serialisable: {exc}", field=field) from None
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EventError(
            f"{field} holds text that is not valid Unicode: {exc.reason} "
            f"({exc.object[exc.start : exc.end]!a})",
            field=field,
        ) from None
    check_nesting(data, field=field, limit=limit)
    return data


def canonical_json_text(value: Any) -> str:
    """Like :func:`canonical_json` but returns ``str``."""
    return canonical_json(value).decode("utf-8")


def parse_canonical(data: bytes) -> tuple[Any, str] | None:
    """``(value, text)`` when ``data`` is canonical JSON nesting within :data:`MAX_NESTING`
    levels, else ``None``. Never raises, whatever the bytes."""
    if _opens(data) > MAX_NESTING and nesting_depth(data) > MAX_NESTING:
        return None
    try:
        text = data.decode("utf-8")
        value = _parse_whole(text)
        return (value, text) if _encode_parsed(value) == text else None
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None


# --- nesting ---------------------------------------------------------------------------

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'[]{}"')
_TOKEN = re.compile(rb'"[^"]*"|[\[\]{},:]')


def _bytes(text: str | bytes | bytearray | memoryview) -> bytes:
    return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)


def _opens(data: bytes) -> int:
    return data.count(b"[") + data.count(b"{")


def nesting_depth(text: str | bytes | bytearray | memoryview) -> int:
    """How many levels of arrays and objects JSON text nests, found without parsing it.

    Linear and iterative, so it is safe on any input, JSON or not; brackets inside strings
    do not count. ``1`` is 0, ``[]`` is 1, ``{"a": [[]]}`` is 3.
    """
    data = _bytes(text)
    if not _opens(data):
        return 0
    import numpy as np  # only here: most callers never get past the count above

    if b"\\" in data:
        data = _ESCAPE.sub(b"", data)  # an escaped quote must not open or close a string
    codes = np.frombuffer(data.translate(None, _NOT_STRUCTURE), dtype=np.uint8)
    outside = np.cumsum(codes == ord('"'), dtype=np.int64) % 2 == 0
    steps = np.zeros(len(codes), dtype=np.int64)
    steps[(codes == ord("[")) | (codes == ord("{"))] = 1
    steps[(codes == ord("]")) | (codes == ord("}"))] = -1
    levels = np.cumsum(steps * outside)
    return max(0, int(levels.max()))


def check_nesting(
    text: str | bytes | bytearray | memoryview,
    *,
    field: str = "value",
    limit: int = MAX_NESTING,
    envelope: int = 0,
) -> None:
    """Raise ``EventError`` if JSON text nests deeper than ``limit`` + ``envelope`` levels.

    ``envelope`` is how many levels wrap the value the limit is about (a JSON lines object
    around a payload is 1); the error then names the field where the text went too deep.
    """
    data = _bytes(text)
    if _opens(data) <= limit + envelope:
        return
    depth = nesting_depth(data)
    if depth > limit + envelope:
        where = _deep_path(data, limit + envelope, envelope) if envelope else field
        if not where or where.startswith("."):  # text not JSON enough to name a path
            where = field
        raise _too_deep(where, depth - envelope, limit)


def loads_bounded(
    text: str | bytes | bytearray,
    *,
    field: str = "value",
    limit: int = MAX_NESTING,
    envelope: int = 0,
) -> Any:
    """``json.loads`` that first refuses text nesting deeper than the limit (``EventError``).

    Other problems raise what ``json.loads`` raises (``ValueError``, ``UnicodeDecodeError``).
    """
    check_nesting(text, field=field, limit=limit, envelope=envelope)
    try:
        return json.loads(text)
    except RecursionError:  # cannot happen within the limit; kept so no reader can crash
        raise _too_deep(field, None, limit) from None
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError) or "digits" not in str(exc):
            raise
        raise EventError(  # Python's guard against quadratic int parsing
            f"{field}: holds an integer of more than {sys.get_int_max_str_digits()} digits; "
            "store a number that long as a string"
        ) from None


def _too_deep(field: str, depth: int | None, limit: int) -> EventError:
    how = f"{depth} levels of" if depth is not None else "too many levels of"
    return EventError(
        f"{field} nests {how} arrays/objects; at most {limit} are allowed",
        field=field,
        hint="flatten it, or store it as opaque bytes (payload_b64)",
    )


def _deep_path(data: bytes, limit: int, envelope: int) -> str | None:
    """The first ``envelope`` steps of the path (``events[2].payload``) to where ``data``
    first nests deeper than ``limit``; only called once the text is known to be too deep."""
    if b"\\" in data:
        data = _ESCAPE.sub(b"", data)
    path: list[str | int] = []  # one step per open container: its current key or index
    key: str | int = 0
    for match in _TOKEN.finditer(data):
        token = match.group()
        if token in (b"[", b"{"):
            path.append(key)
            if len(path) > limit:
                return _format_path(path[1 : envelope + 1])
            key = 0 if token == b"[" else ""
        elif token in (b"]", b"}"):
            key = path.pop() if path else 0
        elif token == b"," and isinstance(key, int):
            key += 1
        elif token.startswith(b'"') and isinstance(key, str):
            key = token[1:-1].decode("utf-8", "replace")
            if not _NAME.fullmatch(key):
                return None  # a key that is not a plain name cannot name the place
    return None


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def _format_path(steps: list[str | int]) -> str:
    text = "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in steps)
    return text.removeprefix(".")


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


_PLAIN = (str, int, float, bool)


def jsonable(value: Any) -> Any:
    """A query value in byte-stable JSON form (bytes as hex, times as ISO strings)."""
    if value is None or type(value) in _PLAIN:  # most values: nothing to convert
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, float | int | str | bool) or value is None:
        return value
    if isinstance(value, Decimal):  # HUGEINT and DECIMAL arrive through Arrow as Decimal
        return int(value) if value == value.to_integral_value() else float(value)
    return str(value)

"""Link format: constants, the core schema, and a tolerant parser for verification.

See :mod:`nerve.chain` for the format. :func:`parse_link` never raises: it returns a
:class:`ParsedLink` carrying either the decoded envelope and core, or the break kind
(``malformed`` / ``non-canonical``) and why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import compress, pairwise
from operator import itemgetter
from typing import Any, Literal

import blake3
import cbor2

from nerve.canonical import det_cbor, det_cbor_decode
from nerve.errors import EventError

FORMAT_VERSION = 1
DOMAIN = b"nerve.chain.v1\x00"
ID_SIZE = 32
SIG_SIZE = 64
NONCE_SIZE = 16
ZERO_ID = bytes(ID_SIZE)
DEFAULT_CHECKPOINT_EVERY = 64

BreakKind = Literal[
    "edited", "excised", "reordered", "duplicated", "bad-signature", "unknown-key",
    "non-canonical", "malformed", "truncated", "rolled-back", "forked", "fresh-genesis",
]  # fmt: skip
EXIT_CODES: dict[str, int] = {
    "ok": 0, "edited": 10, "excised": 11, "reordered": 12, "duplicated": 13,
    "bad-signature": 14, "unknown-key": 15, "non-canonical": 16, "malformed": 17,
    "truncated": 18, "rolled-back": 19, "forked": 20, "fresh-genesis": 21,
}  # fmt: skip


_INT_MIN, _INT_MAX = -(2**64), 2**64 - 1


def digest(data: bytes) -> bytes:
    """blake3 of ``data`` (32 bytes)."""
    return blake3.blake3(data).digest()


def link_id(core: bytes) -> bytes:
    """A link's id: blake3 of its core bytes."""
    return digest(core)


# Exact type checks (a bool is not an int here): together with the kind's field list they
# admit only what det-CBOR can encode, so a parsed core needs no separate type walk.
def _uint(v: object) -> bool:
    return type(v) is int and 0 <= v <= _INT_MAX


def _text(v: object) -> bool:
    return type(v) is str


class _Sized:
    """A byte string of exactly ``n`` bytes."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __call__(self, v: object) -> bool:
        return type(v) is bytes and len(v) == self.n


def _sized(n: int) -> _Sized:
    return _Sized(n)


_TEXT_ONLY = frozenset((str,))
_INT_OR_TEXT = frozenset((int, str))
_INT_ONLY = frozenset((int,))
_is_int = int.__instancecheck__  # after the exact type check above, only real ints pass


def _small_map(v: object, allowed: frozenset[type]) -> bool:
    """A map of text keys to values of the ``allowed`` types, integers in det-CBOR range
    (checked in C: this runs for every decision link)."""
    if type(v) is not dict:
        return False
    if not _TEXT_ONLY.issuperset(map(type, v)) or not allowed.issuperset(map(type, v.values())):
        return False
    ints = tuple(filter(_is_int, v.values()))
    return not ints or (min(ints) >= _INT_MIN and max(ints) <= _INT_MAX)


def _hl(v: object) -> bool:
    return _small_map(v, _INT_OR_TEXT)


def _energy(v: object) -> bool:
    return _small_map(v, _INT_ONLY)


_COMMON: dict[str, Callable[[object], bool]] = {
    "v": _uint, "log": _sized(ID_SIZE), "epoch": _uint, "seq": _uint,
    "prev": _sized(ID_SIZE), "kind": _text,
}  # fmt: skip
_KIND_FIELDS: dict[str, dict[str, Callable[[object], bool]]] = {
    "genesis": {"key": _sized(32), "nonce": _sized(NONCE_SIZE)},
    "decision": {
        "event": _sized(ID_SIZE), "trust": _uint, "probe": _text, "value": _uint,
        "cost": _uint, "decision": _text, "charged_uj": _uint, "budget_uj": _uint,
        "hl": _hl, "t": _uint, "energy": _energy,
    },
    "checkpoint": {"size": _uint, "head": _sized(ID_SIZE), "root": _sized(ID_SIZE)},
    "rotate": {"new_key": _sized(32), "new_epoch": _uint},
}  # fmt: skip


_SPECS = {kind: {**_COMMON, **fields} for kind, fields in _KIND_FIELDS.items()}
_SPEC_KEYS = {kind: frozenset(spec) for kind, spec in _SPECS.items()}


@dataclass(frozen=True, slots=True)
class _Shape:
    """A field list compiled for one pass in C: every value's exact type, the unsigned
    integers' range and the byte strings' sizes; maps are left to their own checks."""

    values: Callable[[Mapping[str, Any]], tuple[Any, ...]]
    types: tuple[type, ...]
    uints: Callable[[Mapping[str, Any]], tuple[int, ...]]
    sized: Callable[[Mapping[str, Any]], tuple[bytes, ...]]
    sizes: tuple[int, ...]
    maps: tuple[tuple[str, Callable[[object], bool]], ...]


def _getter(keys: list[str]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    get = itemgetter(*keys) if keys else (lambda _m: ())
    return get if len(keys) != 1 else (lambda m: (m[keys[0]],))


def _shape(spec: Mapping[str, Callable[[object], bool]]) -> _Shape:
    sizes = {k: check.n for k, check in spec.items() if isinstance(check, _Sized)}
    uints = [k for k, check in spec.items() if check is _uint]
    texts = {k for k, check in spec.items() if check is _text}
    maps = tuple((k, check) for k, check in spec.items() if check in (_hl, _energy))
    plain = [k for k in spec if k not in dict(maps)]
    types = tuple(int if k in uints else str if k in texts else bytes for k in plain)
    return _Shape(
        _getter(plain), types, _getter(uints), _getter(list(sizes)), tuple(sizes.values()), maps
    )


def _fits(core: Mapping[str, Any], shape: _Shape) -> bool:
    """True if every field of ``shape`` checks out (the fields must all be present)."""
    if tuple(map(type, shape.values(core))) != shape.types:
        return False
    uints = shape.uints(core)
    if uints and (min(uints) < 0 or max(uints) > _INT_MAX):
        return False
    if tuple(map(len, shape.sized(core))) != shape.sizes:
        return False
    for key, check in shape.maps:  # noqa: SIM110 -- a plain loop: this runs for every link
        if not check(core[key]):
            return False
    return True


_SPEC_SHAPES = {kind: _shape(spec) for kind, spec in _SPECS.items()}
_COMMON_SHAPE = _shape(_COMMON)


def fits_schema(core: Mapping[str, Any], has_sig2: bool) -> bool:
    """``schema_error(core, has_sig2) is None``, without building a message."""
    kind = core["kind"]
    keys = _SPEC_KEYS.get(kind) if type(kind) is str else None
    return (
        keys is not None
        and core.keys() == keys
        and _fits(core, _SPEC_SHAPES[kind])
        and has_sig2 == (kind == "rotate")
    )


def schema_error(core: Mapping[str, Any], has_sig2: bool) -> str | None:
    """Why ``core`` does not match its kind's fields, or None."""
    if fits_schema(core, has_sig2):
        return None
    if core["kind"] not in _KIND_FIELDS:
        return f"unknown kind {core['kind']!r}"
    spec = _SPECS[core["kind"]]
    if core.keys() != _SPEC_KEYS[core["kind"]]:
        return f"{core['kind']} fields are {sorted(map(str, core))}, expected {sorted(spec)}"
    if not _fits(core, _SPEC_SHAPES[core["kind"]]):
        bad = [k for k, check in spec.items() if not check(core[k])]
        return f"field(s) {bad} have the wrong type or size"
    if has_sig2 != (core["kind"] == "rotate"):
        return "sig2 belongs on rotate links only, and every rotate link needs it"
    return None


@dataclass(frozen=True, slots=True)
class ParsedLink:
    """One presented link, parsed as far as it would go."""

    raw: bytes
    core_bytes: bytes = b""
    core: dict[str, Any] = field(default_factory=dict)
    sig: bytes = b""
    sig2: bytes | None = None
    error: tuple[BreakKind, str] | None = None
    id: bytes = b""  # blake3 of core_bytes
    fits: bool = False  # the core was found to match its kind's schema (else: not checked)


def _plain(value: Any) -> bool:
    """Only what det-CBOR allows: ints (not bools), bytes, text, lists, text-keyed maps."""
    kind = type(value)
    if kind is bytes or kind is str:
        return True
    if kind is int:
        return bool(_INT_MIN <= value <= _INT_MAX)
    if kind is dict:
        return all(type(key) is str and _plain(item) for key, item in value.items())
    if kind is list:
        return all(_plain(item) for item in value)
    return False


_KEY_ORDER: dict[tuple[Any, ...], bool] = {}  # key sequences seen, and whether canonical
_KEY_ORDER_CAP = 4096


def _in_det_order(keys: tuple[Any, ...]) -> bool:
    """True if ``keys`` are text keys in det-CBOR order: shorter encodings first, then
    bytewise (for text keys: by UTF-8 length, then UTF-8 bytes)."""
    try:
        encoded = [(len(b), b) for b in (k.encode("utf-8") for k in keys)]
    except (AttributeError, UnicodeEncodeError):  # not text, or not valid Unicode
        return False
    return all(a < b for a, b in pairwise(encoded))


def _keys_in_order(value: Any) -> bool:
    """True if every map in ``value`` (a decoded item) lists its keys in det-CBOR order."""
    todo, known = [value], _KEY_ORDER.get
    while todo:
        item = todo.pop()
        if type(item) is dict:
            keys = tuple(item)
            ok = known(keys)
            if ok is None:
                ok = _remember_order(keys)
            if not ok:
                return False
            item = item.values()
        elif type(item) is not list:
            continue
        # Only the nested maps and arrays go on, picked out in C (a link has two).
        if not _CONTAINERS.isdisjoint(map(type, item)):
            todo.extend(compress(item, map(_CONTAINERS.__contains__, map(type, item))))
    return True


def _remember_order(keys: tuple[Any, ...]) -> bool:
    ok = _in_det_order(keys)
    if len(_KEY_ORDER) < _KEY_ORDER_CAP:
        _KEY_ORDER[keys] = ok
    return ok


_CONTAINERS = frozenset((dict, list))


def _fast_decode(data: bytes, *, typed: bool = True) -> Any:
    """The common case in C (cbor2): decode, check the types, re-encode and compare.

    cbor2 decodes maps in the order their keys were written and re-encodes them in that
    order, always with the shortest heads and definite lengths. So when every map's keys
    are in det-CBOR order (checked on the decoded value, cached per key sequence) and the
    plain re-encoding equals ``data``, the input was canonical: a longer head, an
    indefinite length, a tag or a repeated key would make the bytes differ. (cbor2's own
    canonical mode proves the same but sorts every map again, five times slower.) Returns
    None when anything is off; the strict decoder then says exactly what.
    """
    try:
        value = cbor2.loads(data)
    except Exception:  # cbor2 raises several types on junk; the slow path names the problem
        return None
    if value is None or (typed and not _plain(value)):
        return None
    if not _keys_in_order(value) or cbor2.dumps(value) != data:
        return None
    return value


def _decode(data: bytes, what: str, *, typed: bool = True) -> Any:
    """Strict det-CBOR decode; ``_DecodeFailure`` says whether it is non-canonical or junk.

    Bytes the strict decoder refuses are non-canonical if a lenient decoder reads them as
    values det-CBOR could encode, and malformed otherwise. ``typed=False`` leaves the type
    check to the caller (a core's schema checks every field exactly).
    """
    value = _fast_decode(data, typed=typed)
    if value is not None:
        return value
    try:
        value = det_cbor_decode(data)
    except EventError as exc:
        try:
            det_cbor(cbor2.loads(data))
        except Exception:  # cbor2 raises many types on junk; all mean "malformed"
            raise _DecodeFailure("malformed", f"{what}: {exc}") from None
        raise _DecodeFailure("non-canonical", f"{what}: {exc}") from None
    if det_cbor(value) != data:  # cannot happen with a correct strict decoder; cheap to check
        raise _DecodeFailure("non-canonical", f"{what}: re-encoding differs")
    return value


class _DecodeFailure(Exception):
    def __init__(self, kind: BreakKind, message: str) -> None:
        super().__init__(message)
        self.kind: BreakKind = kind


def _bstr_head(length: int) -> bytes:
    """The det-CBOR head of a byte string of ``length`` bytes."""
    if length < 24:
        return bytes((0x40 | length,))
    for info, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if length < 1 << (8 * size):
            return bytes((0x40 | info,)) + length.to_bytes(size, "big")
    raise ValueError("byte string too long")


_SIG_PART = b"\x63sig" + _bstr_head(SIG_SIZE)
_SIG2_PART = b"\x64sig2" + _bstr_head(SIG_SIZE)
_CORE_KEY = b"\x64core"


def _is_sig(value: object) -> bool:
    return type(value) is bytes and len(value) == SIG_SIZE


def _split_envelope(raw: bytes) -> dict[str, bytes] | None:
    """The envelope's fields if ``raw`` is exactly its det-CBOR form; else None.

    The canonical layout is fixed (map keys "sig" < "core" < "sig2"), so the common case is
    checked by comparing bytes, not by decoding and re-encoding. Anything unusual returns
    None and goes through the strict decoder, which names the problem.
    """
    count = raw[:1]
    if count not in (b"\xa2", b"\xa3") or raw[1 : 1 + len(_SIG_PART)] != _SIG_PART:
        return None
    at = 1 + len(_SIG_PART)
    sig, at = raw[at : at + SIG_SIZE], at + SIG_SIZE
    if len(sig) != SIG_SIZE or raw[at : at + len(_CORE_KEY)] != _CORE_KEY:
        return None
    core, at = _take_bstr(raw, at + len(_CORE_KEY))
    if core is None:
        return None
    out = {"sig": sig, "core": core}
    if count == b"\xa3":
        if raw[at : at + len(_SIG2_PART)] != _SIG2_PART:
            return None
        at += len(_SIG2_PART)
        out["sig2"], at = raw[at : at + SIG_SIZE], at + SIG_SIZE
    return out if at == len(raw) and len(out.get("sig2", sig)) == SIG_SIZE else None


def _take_bstr(raw: bytes, at: int) -> tuple[bytes | None, int]:
    """A byte string at ``at`` written with its shortest head, and the offset after it."""
    if at >= len(raw) or raw[at] >> 5 != 2:
        return None, at
    info = raw[at] & 0x1F
    size = {24: 1, 25: 2, 26: 4, 27: 8}.get(info, 0 if info < 24 else -1)
    if size < 0:
        return None, at
    length = info if info < 24 else int.from_bytes(raw[at + 1 : at + 1 + size], "big")
    start = at + 1 + size
    if raw[at:start] != _bstr_head(length) or start + length > len(raw):
        return None, at
    return raw[start : start + length], start + length


_COMMON_KEYS = frozenset(_COMMON)


def _parse_plain(raw: bytes) -> ParsedLink | None:
    """The common case in one pass: a canonical envelope around a canonical core whose
    common fields check out. None for anything else (the full parser says what)."""
    outer = _split_envelope(raw)
    if outer is None:
        return None
    core_bytes = outer["core"]
    core = _fast_decode(core_bytes, typed=False)
    if type(core) is not dict or not core.keys() >= _COMMON_KEYS:
        return None
    sig2 = outer.get("sig2")
    fits = fits_schema(core, sig2 is not None)  # implies the common fields check out
    if not fits and not _fits(core, _COMMON_SHAPE):
        return None
    return ParsedLink(raw, core_bytes, core, outer["sig"], sig2, None, link_id(core_bytes), fits)


def parse_link(raw: bytes) -> ParsedLink:
    plain = _parse_plain(raw)
    if plain is not None:
        return plain
    try:
        outer = _split_envelope(raw) or _decode(raw, "link")
        if not isinstance(outer, dict) or set(outer) - {"sig2"} != {"core", "sig"}:
            return ParsedLink(raw, error=("malformed", "link is not a {core, sig[, sig2]} map"))
        sigs = [outer["sig"], outer.get("sig2", b"\0" * SIG_SIZE)]
        if not isinstance(outer["core"], bytes) or not all(_is_sig(s) for s in sigs):
            return ParsedLink(
                raw, error=("malformed", "core must be bytes and signatures 64 bytes")
            )
        core = _decode(outer["core"], "core", typed=False)
    except _DecodeFailure as exc:
        return ParsedLink(raw, error=(exc.kind, str(exc)))
    if not isinstance(core, dict) or not set(_COMMON) <= set(core):
        return ParsedLink(raw, error=("malformed", f"core lacks fields {sorted(_COMMON)}"))
    if not _fits(core, _COMMON_SHAPE):
        bad = [k for k, check in _COMMON.items() if not check(core[k])]
        return ParsedLink(raw, error=("malformed", f"core field(s) {bad} mistyped"))
    core_bytes = outer["core"]
    return ParsedLink(
        raw,
        core_bytes,
        core,
        outer["sig"],
        outer.get("sig2"),
        None,
        link_id(core_bytes),
    )

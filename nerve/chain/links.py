"""Link format: constants, the core schema, and a tolerant parser for verification.

See :mod:`nerve.chain` for the format. :func:`parse_link` never raises: it returns a
:class:`ParsedLink` carrying either the decoded envelope and core, or the break kind
(``malformed`` / ``non-canonical``) and why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
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


def digest(data: bytes) -> bytes:
    """blake3 of ``data`` (32 bytes)."""
    return blake3.blake3(data).digest()


def link_id(core: bytes) -> bytes:
    """A link's id: blake3 of its core bytes."""
    return digest(core)


def _uint(v: object) -> bool:
    return isinstance(v, int) and v >= 0


def _text(v: object) -> bool:
    return isinstance(v, str)


def _sized(n: int) -> Callable[[object], bool]:
    return lambda v: isinstance(v, bytes) and len(v) == n


def _hl(v: object) -> bool:
    return isinstance(v, dict) and all(isinstance(x, int | str) for x in v.values())


def _energy(v: object) -> bool:
    return isinstance(v, dict) and all(isinstance(x, int) for x in v.values())


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


def schema_error(core: Mapping[str, Any], has_sig2: bool) -> str | None:
    """Why ``core`` does not match its kind's fields, or None."""
    spec = {**_COMMON, **_KIND_FIELDS.get(core["kind"], {})}
    if core["kind"] not in _KIND_FIELDS:
        return f"unknown kind {core['kind']!r}"
    if set(core) != set(spec):
        return f"{core['kind']} fields are {sorted(core)}, expected {sorted(spec)}"
    bad = [k for k, check in spec.items() if not check(core[k])]
    if bad:
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

    @property
    def id(self) -> bytes:
        return link_id(self.core_bytes)


def _decode(data: bytes, what: str) -> Any:
    """Strict det-CBOR decode; ``_DecodeFailure`` says whether it is non-canonical or junk.

    Bytes the strict decoder refuses are non-canonical if a lenient decoder reads them as
    values det-CBOR could encode, and malformed otherwise.
    """
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


def parse_link(raw: bytes) -> ParsedLink:
    try:
        outer = _decode(raw, "link")
        if not isinstance(outer, dict) or set(outer) - {"sig2"} != {"core", "sig"}:
            return ParsedLink(raw, error=("malformed", "link is not a {core, sig[, sig2]} map"))
        sigs = [outer["sig"], outer.get("sig2", b"\0" * SIG_SIZE)]
        if not isinstance(outer["core"], bytes) or not all(_sized(SIG_SIZE)(s) for s in sigs):
            return ParsedLink(
                raw, error=("malformed", "core must be bytes and signatures 64 bytes")
            )
        core = _decode(outer["core"], "core")
    except _DecodeFailure as exc:
        return ParsedLink(raw, error=(exc.kind, str(exc)))
    if not isinstance(core, dict) or not set(_COMMON) <= set(core):
        return ParsedLink(raw, error=("malformed", f"core lacks fields {sorted(_COMMON)}"))
    bad = [k for k, check in _COMMON.items() if not check(core[k])]
    if bad:
        return ParsedLink(raw, error=("malformed", f"core field(s) {bad} mistyped"))
    return ParsedLink(raw, outer["core"], core, outer["sig"], outer.get("sig2"))

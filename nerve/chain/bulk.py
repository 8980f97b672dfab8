"""Many links parsed at once: plain decision and checkpoint links in one pass over a batch.

:func:`parse_links` gives exactly the list ``[parse_link(raw) for raw in raws]`` would.
A link it takes in bulk is one :func:`~nerve.chain.links.parse_link` would parse the same
way (a canonical ``{sig, core}`` envelope around a canonical core that fits its kind's
schema); any other link goes through ``parse_link`` itself, which names what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import blake3
import cbor2

from nerve.chain.links import (
    _CORE_KEY,
    _INT_MAX,
    _KEY_ORDER,
    _SIG_PART,
    _SPECS,
    SIG_SIZE,
    ParsedLink,
    _energy,
    _hl,
    _remember_order,
    _Sized,
    _text,
    _uint,
    parse_link,
)

_PREFIX = b"\xa2" + _SIG_PART  # a link without sig2: map of 2, "sig" first
_SIG_AT = len(_PREFIX)
_CORE_AT = _SIG_AT + SIG_SIZE
_HEAD_AT = _CORE_AT + len(_CORE_KEY)
_BULK_KINDS = ("decision", "checkpoint")


@dataclass(frozen=True, slots=True)
class _Plain:
    """One kind's fields in det-CBOR key order, with each value's exact type, compiled so a
    decoded core is checked in a few calls into C."""

    order: tuple[str, ...]
    types: tuple[type, ...]
    uints: Callable[[Mapping[str, Any]], tuple[int, ...]]
    sized: Callable[[Mapping[str, Any]], tuple[bytes, ...]]
    sizes: tuple[int, ...]
    maps: tuple[tuple[str, Callable[[object], bool]], ...]


def _type_of(check: Callable[[object], bool]) -> type:
    if check is _uint:
        return int
    if check is _text:
        return str
    return bytes if isinstance(check, _Sized) else dict


def _plain(spec: Mapping[str, Callable[[object], bool]]) -> _Plain:
    order = tuple(sorted(spec, key=lambda k: (len(k.encode()), k.encode())))
    sized = [k for k in order if isinstance(spec[k], _Sized)]
    sizes = tuple(spec[k].n for k in sized)  # type: ignore[attr-defined]
    return _Plain(
        order,
        tuple(_type_of(spec[k]) for k in order),
        itemgetter(*[k for k in order if spec[k] is _uint]),
        itemgetter(*sized),
        sizes,
        tuple((k, spec[k]) for k in order if spec[k] in (_hl, _energy)),
    )


_PLAIN = {kind: _plain(_SPECS[kind]) for kind in _BULK_KINDS}


def _fits(core: Any) -> bool:
    """True if ``core`` is a map whose keys are its kind's, in det-CBOR order, and whose
    values have the kind's exact types, ranges and sizes (what ``fits_schema`` and the key
    order check of ``parse_link`` would find together)."""
    if type(core) is not dict:
        return False
    kind = core.get("kind")
    plain = _PLAIN.get(kind) if type(kind) is str else None
    if plain is None or tuple(core) != plain.order:
        return False
    if tuple(map(type, core.values())) != plain.types:
        return False
    uints = plain.uints(core)
    if min(uints) < 0 or max(uints) > _INT_MAX:
        return False
    if tuple(map(len, plain.sized(core))) != plain.sizes:
        return False
    for key, check in plain.maps:
        value = core[key]
        if not check(value):
            return False
        keys = tuple(value)
        ordered = _KEY_ORDER.get(keys)
        if not (_remember_order(keys) if ordered is None else ordered):
            return False
    return True


def _core_of(raw: bytes) -> bytes | None:
    """The core of a ``{sig, core}`` envelope written in det-CBOR form, else None."""
    if raw[:_SIG_AT] != _PREFIX or raw[_CORE_AT:_HEAD_AT] != _CORE_KEY or len(raw) <= _HEAD_AT:
        return None
    head = raw[_HEAD_AT]
    if head == 0x59:  # 2-byte length: cores of 256 bytes to 64 KiB, the usual case
        size, start = int.from_bytes(raw[_HEAD_AT + 1 : _HEAD_AT + 3], "big"), _HEAD_AT + 3
        shortest = size >= 256
    elif head == 0x58:
        size, start = raw[_HEAD_AT + 1] if len(raw) > _HEAD_AT + 1 else -1, _HEAD_AT + 2
        shortest = size >= 24
    else:
        size, start, shortest = head - 0x40, _HEAD_AT + 1, 0x40 <= head < 0x58
    return raw[start:] if shortest and len(raw) - start == size else None


def _fast(raw: bytes) -> ParsedLink | None:
    """The link ``parse_link`` would make of ``raw``, if ``raw`` is a plain decision or
    checkpoint link; None for anything else."""
    core = _core_of(raw)
    if core is None:
        return None
    try:
        value = cbor2.loads(core)
    except Exception:  # cbor2 raises several types on junk; parse_link names the problem
        return None
    # cbor2 re-encodes a decoded value with the shortest heads, in the order its maps were
    # written; with the key order checked in _fits, equal bytes mean the input was canonical.
    if not _fits(value) or cbor2.dumps(value) != core:
        return None
    sig = raw[_SIG_AT:_CORE_AT]
    return ParsedLink(raw, core, value, sig, None, None, blake3.blake3(core).digest(), True)


def parse_any(raw: bytes) -> ParsedLink:
    """``parse_link(raw)``, a plain link on a short path."""
    return _fast(raw) or parse_link(raw)


def parse_links(raws: Sequence[bytes]) -> list[ParsedLink]:
    """``[parse_link(raw) for raw in raws]``, the plain links on a short path."""
    return [_fast(raw) or parse_link(raw) for raw in map(bytes, raws)]

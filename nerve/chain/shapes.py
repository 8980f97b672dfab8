"""The two common link shapes as byte patterns: a plain decision or checkpoint link, checked
and its fields found in one regex match over its exact bytes, with no decoding.

A link :func:`plain_fields` accepts is one :func:`~nerve.chain.links.parse_link` parses
without complaint and ``fits`` its kind, canonical by construction: the pattern spells out
the ``{sig, core}`` envelope, every key of the kind in det-CBOR order, every integer with
its shortest head, every byte string with its size, every text as ASCII of the length its
head gives. On top, ``v`` is 1, ``trust`` at most 3 and ``decision`` one of ``SEALABLE`` (a
link outside those is a break, which the full path names). The maps ``hl`` and ``energy``
take the key lists :func:`learn` was shown; anything else returns None.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from nerve.canonical import det_cbor
from nerve.chain.links import _SPECS, FORMAT_VERSION, _energy, _hl, _in_det_order, _Sized, _uint
from nerve.chain.records import SEALABLE


class Plain(NamedTuple):
    """What verification reads of a plain link; ``cp`` is a checkpoint's (size, head, root)."""

    sig: bytes
    core: bytes
    seq: int
    epoch: int
    log: bytes
    prev: bytes
    cp: tuple[int, bytes, bytes] | None


def _alt(parts: Iterable[bytes]) -> bytes:
    return b"(?:" + b"|".join(parts) + b")"


def _b(n: int) -> bytes:
    return b"\\x%02x" % n


def _int_item(major: int) -> bytes:
    """Any integer of CBOR major type ``major`` (0 or 1) written with its shortest head."""
    m = major << 5
    return _alt(
        (
            b"[%s-%s]" % (_b(m), _b(m + 23)),
            _b(m + 24) + rb"[\x18-\xff]",
            _b(m + 25) + rb"[\x01-\xff].",
            _b(m + 26) + rb"(?:[\x01-\xff].|\x00[\x01-\xff])..",
            _b(m + 27)
            + rb"(?:[\x01-\xff]...|\x00[\x01-\xff]..|\x00\x00[\x01-\xff].|\x00\x00\x00[\x01-\xff])"
            + b"....",
        )
    )


_UINT = _int_item(0)
_INT = _alt((_UINT, _int_item(1)))
_ASCII = rb"[\x00-\x7f]"
# ASCII text up to 255 bytes: one branch per length, each led by its head byte.
_TEXT = _alt(
    [_b(0x60 + n) + _ASCII + b"{%d}" % n for n in range(24)]
    + [rb"\x78" + _alt(_b(n) + _ASCII + b"{%d}" % n for n in range(24, 256))]
)
_NEVER = b"(?!)"


def _lit(value: object) -> bytes:
    return re.escape(det_cbor(value))


def _map(keys: tuple[str, ...], value: bytes) -> bytes:
    return _b(0xA0 + len(keys)) + b"".join(_lit(k) + value for k in keys)


_CAPTURED = frozenset(("seq", "epoch", "log", "prev", "size", "head", "root"))
_FIXED = {
    "v": _lit(FORMAT_VERSION),
    "trust": rb"[\x00-\x03]",
    "decision": _alt(_lit(outcome) for outcome in SEALABLE),
}


def _item(name: str, check: Callable[[object], bool], maps: Mapping[str, bytes]) -> bytes:
    if name in _FIXED:
        item = _FIXED[name]
    elif check is _uint:
        item = _UINT
    elif isinstance(check, _Sized):  # the head, then the bytes (captured without it)
        head = re.escape(det_cbor(bytes(check.n))[: -check.n])
        return head + _captured(name, b".{%d}" % check.n)
    else:
        item = maps.get(name, _TEXT)
    return _captured(name, item)


def _captured(name: str, item: bytes) -> bytes:
    return b"(?P<%s>%s)" % (name.encode(), item) if name in _CAPTURED else item


def _core(kind: str, maps: Mapping[str, bytes]) -> bytes:
    spec = _SPECS[kind]
    order = sorted(spec, key=lambda k: (len(k.encode()), k.encode()))
    parts = [_lit(k) + (_lit(kind) if k == "kind" else _item(k, spec[k], maps)) for k in order]
    return _b(0xA0 + len(order)) + b"".join(parts)


_ENVELOPE = rb"\xa2\x63sig\x58\x40(?P<sig>.{64})\x64core"


def _compile(head: bytes, core: bytes) -> re.Pattern[bytes]:
    return re.compile(_ENVELOPE + head + b"(?P<core>" + core + b")", re.DOTALL)


# A decision core is over 255 bytes (two length bytes), a checkpoint's under (one).
_CHECKPOINT = _compile(rb"\x58(?P<n>[\x18-\xff])", _core("checkpoint", {}))
_DECISION_HEAD = rb"\x59(?P<n>[\x01-\xff].)"
_HL: list[tuple[str, ...]] = []
_ENERGY: list[tuple[str, ...]] = []
_LEARN_CAP = 8  # key lists per map; a chain has a few
_LOCK = threading.Lock()


def _decision() -> re.Pattern[bytes]:
    maps = {
        "hl": _alt(_map(keys, _alt((_INT, _TEXT))) for keys in _HL) if _HL else _NEVER,
        "energy": _alt(_map(keys, _INT) for keys in _ENERGY) if _ENERGY else _NEVER,
    }
    return _compile(_DECISION_HEAD, _core("decision", maps))


_DECISION = _decision()


def _learnable(keys: tuple[Any, ...], known: list[tuple[str, ...]]) -> bool:
    return (
        keys not in known
        and len(known) < _LEARN_CAP
        and 0 < len(keys) < 24
        and all(type(k) is str and k.isascii() and len(k) < 24 for k in keys)
        and _in_det_order(keys)
    )


def learn(core: Mapping[str, Any]) -> None:
    """Take the ``hl`` and ``energy`` key lists of a decision core the full parser accepted."""
    global _DECISION
    hl, energy = core.get("hl"), core.get("energy")
    if not (_hl(hl) and _energy(energy)):
        return
    hl_keys, energy_keys = tuple(hl), tuple(energy)  # type: ignore[arg-type]
    if hl_keys in _HL and energy_keys in _ENERGY:
        return
    with _LOCK:
        grew = False
        for keys, known in ((hl_keys, _HL), (energy_keys, _ENERGY)):
            if _learnable(keys, known):
                known.append(keys)
                grew = True
        if grew:
            _DECISION = _decision()


def _uint_of(item: bytes) -> int:
    return item[0] if len(item) == 1 else int.from_bytes(item[1:], "big")


def plain_fields(raw: bytes) -> Plain | None:
    """The fields of a plain decision or checkpoint link, or None for any other bytes."""
    m = _DECISION.fullmatch(raw)
    cp = None
    if m is None:
        m = _CHECKPOINT.fullmatch(raw)
        if m is None:
            return None
        size, head, root = m.group("size", "head", "root")
        cp = (_uint_of(size), head, root)
    sig, n, core, seq, epoch, log, prev = m.group("sig", "n", "core", "seq", "epoch", "log", "prev")
    if int.from_bytes(n, "big") != len(core):
        return None
    return Plain(sig, core, _uint_of(seq), _uint_of(epoch), log, prev, cp)

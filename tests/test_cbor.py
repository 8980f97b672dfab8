"""Deterministic CBOR: round trips, strict rejections with byte offsets, cbor2 agreement."""

from __future__ import annotations

from typing import Any

import cbor2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nerve.canonical import CBOR_INT_MAX, CBOR_INT_MIN, det_cbor, det_cbor_decode
from nerve.errors import EventError

ints = st.integers(min_value=CBOR_INT_MIN, max_value=CBOR_INT_MAX)
scalars = ints | st.binary(max_size=40) | st.text(max_size=20)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=6), inner, max_size=5)
    ),
    max_leaves=25,
)


@given(values)
def test_round_trip(value: Any) -> None:
    assert det_cbor_decode(det_cbor(value)) == value


@given(values)
def test_decoded_bytes_re_encode_identically(value: Any) -> None:
    data = det_cbor(value)
    assert det_cbor(det_cbor_decode(data)) == data


@given(values)
def test_agrees_with_cbor2_canonical(value: Any) -> None:
    assert det_cbor(value) == cbor2.dumps(value, canonical=True)


@pytest.mark.parametrize(
    ("value", "hex_"),
    [
        (0, "00"),
        (23, "17"),
        (24, "1818"),
        (255, "18ff"),
        (256, "190100"),
        (65536, "1a00010000"),
        (2**32, "1b0000000100000000"),
        (-1, "20"),
        (-(2**64), "3bffffffffffffffff"),
        (b"\x01\x02", "420102"),
        ("a", "6161"),
        ([1, [2]], "820181 02".replace(" ", "")),
        ({"bb": 1, "a": 2, "c": 3}, "a3616102616303626262 01".replace(" ", "")),
    ],
)
def test_known_encodings(value: Any, hex_: str) -> None:
    assert det_cbor(value).hex() == hex_
    assert cbor2.dumps(value, canonical=True).hex() == hex_


def test_keys_sort_length_first() -> None:
    assert list(det_cbor_decode(det_cbor({"zz": 0, "b": 1, "aaa": 2}))) == ["b", "zz", "aaa"]


@pytest.mark.parametrize(
    "value",
    [1.5, True, False, None, {1: 2}, {b"k": 1}, 2**64, -(2**64) - 1, object(), "\ud800"],
)
def test_encoder_rejects(value: Any) -> None:
    with pytest.raises(EventError, match="det-CBOR"):
        det_cbor(value)


def test_encoder_rejects_deep_nesting() -> None:
    deep: Any = 0
    for _ in range(70):
        deep = [deep]
    with pytest.raises(EventError, match="nesting"):
        det_cbor(deep)


@pytest.mark.parametrize(
    ("hex_", "what", "offset"),
    [
        ("1817", "non-shortest", 0),
        ("190017", "non-shortest", 0),
        ("1a0000ffff", "non-shortest", 0),
        ("1b00000000ffffffff", "non-shortest", 0),
        ("5801ff", "non-shortest", 0),
        ("82011817", "non-shortest", 2),
        ("a261610161620100", "trailing", 7),
        ("a2616201616101", "unsorted", 4),
        ("a2616101616102", "duplicated", 4),
        ("a2626161016162 01".replace(" ", ""), "unsorted", 5),
        ("a10102", "not a text string", 1),
        ("f93c00", "floats", 0),
        ("f5", "floats, bools", 0),
        ("f6", "null", 0),
        ("8201f4", "bools", 2),
        ("c240", "tags", 0),
        ("5f4101ff", "indefinite", 0),
        ("9f01ff", "indefinite", 0),
        ("1c", "reserved", 0),
        ("", "truncated", 0),
        ("19 01".replace(" ", ""), "truncated", 0),
        ("4301", "truncated", 0),
        ("8301", "truncated", 0),
        ("a16161", "truncated", 3),
        ("62c328", "UTF-8", 0),
    ],
)
def test_decoder_rejects_with_offset(hex_: str, what: str, offset: int) -> None:
    with pytest.raises(EventError) as info:
        det_cbor_decode(bytes.fromhex(hex_))
    message = str(info.value)
    assert what in message
    assert message.endswith(f"at byte {offset}")


def test_decoder_rejects_deep_nesting() -> None:
    with pytest.raises(EventError, match="nesting"):
        det_cbor_decode(b"\x81" * 70 + b"\x00")


def test_decoder_bounds_huge_declared_counts() -> None:
    with pytest.raises(EventError, match="truncated"):
        det_cbor_decode(bytes.fromhex("9bffffffffffffffff"))


@given(values, st.data())
def test_any_cut_is_rejected(value: Any, data: st.DataObject) -> None:
    encoded = det_cbor(value)
    cut = data.draw(st.integers(min_value=0, max_value=len(encoded) - 1))
    with pytest.raises(EventError):
        det_cbor_decode(encoded[:cut])

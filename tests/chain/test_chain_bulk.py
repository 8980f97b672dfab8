"""The batch link parser gives exactly what the link-by-link parser gives, on any bytes."""

from __future__ import annotations

import functools

import cbor2
from hypothesis import given, settings
from hypothesis import strategies as st
from nacl.signing import SigningKey

from nerve.attention.detector import Highlight
from nerve.attention.gate import Gate, GateConfig, UserContext
from nerve.canonical import det_cbor, det_cbor_decode
from nerve.chain import DOMAIN, ChainWriter, Keyring, verify_chain
from nerve.chain.bulk import parse_links
from nerve.chain.links import parse_link
from tests.helpers.damage import HOW, damaged

SEED = b"\x33" * 32


@functools.cache
def _chain() -> tuple[bytes, ...]:
    """Genesis, decisions (some with a long probe name, some with 6-byte scores), checkpoints."""
    keyring = Keyring.ephemeral(SEED)
    writer = ChainWriter.create(keyring, nonce=b"\x44" * 16, checkpoint_every=4)
    gate = Gate(GateConfig(surface_cost_uj=100, budget_capacity_uj=250, refill_uj_per_s=20))
    for i in range(14):
        probe = "novelty" if i % 3 else "value:" + "x" * 40 + ".per_min"
        hl = Highlight(probe, 900 + i, 400, 50, 600 + i * 2**40, i)
        decision = gate.decide(hl, UserContext(), i * 10**9)
        writer.append_decision(i.to_bytes(32, "big"), i % 4, hl, decision, i * 10**9)
    return tuple(writer.links)


def _same(links: list[bytes]) -> None:
    assert parse_links(links) == [parse_link(raw) for raw in links]


def test_a_sound_chain_parses_the_same() -> None:
    _same(list(_chain()))
    assert all(link.fits for link in parse_links(list(_chain())))


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 13),
    st.sampled_from(HOW),
    st.integers(0, 10**6),
    st.integers(0, 255),
)
def test_any_damaged_link_parses_the_same(index: int, how: str, at: int, byte: int) -> None:
    links = list(_chain())
    links[index] = damaged(links[index], how, at, byte)
    _same(links)


def _resigned(index: int, core: bytes) -> list[bytes]:
    outer = det_cbor_decode(_chain()[index])
    outer["core"] = core
    outer["sig"] = SigningKey(SEED).sign(DOMAIN + core).signature
    links = list(_chain())
    links[index] = det_cbor(outer)
    return links


def _core(index: int) -> bytes:
    return bytes(det_cbor_decode(_chain()[index])["core"])


def test_bytes_after_a_validly_signed_core_are_non_canonical() -> None:
    links = _resigned(3, _core(3) + b"\x00")  # cbor2.loads alone ignores trailing bytes
    _same(links)
    report = verify_chain(links)
    assert report.first_break is not None
    assert (report.first_break.seq, report.first_break.kind) == (3, "non-canonical")


def test_a_bignum_in_an_unsigned_field_is_malformed() -> None:
    core = cbor2.loads(_core(3))
    core["t"] = 2**64  # cbor2 writes a tag-2 bignum and reads it back the same
    loose = cbor2.dumps(core)
    assert cbor2.dumps(cbor2.loads(loose)) == loose
    links = _resigned(3, loose)
    _same(links)
    report = verify_chain(links)
    assert report.first_break is not None and report.first_break.seq == 3
    assert report.first_break.kind == "malformed"

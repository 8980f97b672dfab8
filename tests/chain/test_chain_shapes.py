"""The byte shapes of plain links: what they accept, the full parser accepts the same way, and
verification reports exactly what it reports without them."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nacl.signing import SigningKey

from nerve.attention.detector import Highlight
from nerve.attention.gate import Gate, GateConfig, UserContext
from nerve.canonical import det_cbor, det_cbor_decode
from nerve.chain import DOMAIN, ChainReport, ChainWriter, Keyring, shapes, verify_chain
from nerve.chain import verify as verify_module
from nerve.chain.links import parse_link
from nerve.chain.records import SEALABLE
from nerve.chain.shapes import learn, plain_fields
from tests.helpers.damage import HOW, damaged

SEED = b"\x55" * 32
PROBES = ("novelty", "value:" + "x" * 40 + ".per_min", "v" * 23, "w" * 24, "")


def _fresh(patch: pytest.MonkeyPatch) -> None:
    """No key lists learned yet (other tests' accepted links teach them too)."""
    patch.setattr(shapes, "_HL", [])
    patch.setattr(shapes, "_ENERGY", [])
    patch.setattr(shapes, "_DECISION", shapes._decision())


@pytest.fixture(autouse=True, scope="module")
def _own_shapes() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        _fresh(patch)
        yield


@functools.cache
def _chain() -> tuple[bytes, ...]:
    """Genesis, decisions (short, long and empty probes, negative and 6-byte highlight
    figures), a checkpoint after every 4."""
    writer = ChainWriter.create(Keyring.ephemeral(SEED), nonce=b"\x66" * 16, checkpoint_every=4)
    gate = Gate(GateConfig(surface_cost_uj=100, budget_capacity_uj=250, refill_uj_per_s=20))
    for i in range(18):
        hl = Highlight(PROBES[i % len(PROBES)], 900 - 300 * i, -400, 50, 600 + i * 2**40, i)
        decision = gate.decide(hl, UserContext(), i * 10**9)
        writer.append_decision(i.to_bytes(32, "big"), i % 4, hl, decision, i * 10**9)
    return tuple(writer.links)


def _learned() -> tuple[bytes, ...]:
    links = _chain()
    learn(parse_link(links[1]).core)
    return links


def _full_path_report(links: list[bytes]) -> ChainReport:
    """What verification reports with every link parsed in full (no byte shapes)."""
    saved = verify_module.plain_fields
    verify_module.plain_fields = lambda raw: None  # type: ignore[assignment]
    try:
        return verify_chain(links)
    finally:
        verify_module.plain_fields = saved


def _same_report(links: list[bytes]) -> ChainReport:
    report = verify_chain(links)
    assert report == _full_path_report(links)
    return report


def _reads_alike(raw: bytes) -> None:
    """If the shape takes ``raw``, the full parser finds a sound plain link with its fields."""
    fields = plain_fields(raw)
    if fields is None:
        return
    link = parse_link(raw)
    core = link.core
    assert link.error is None and link.fits and link.sig2 is None
    assert core["kind"] in ("decision", "checkpoint") and core["v"] == 1
    if core["kind"] == "decision":
        assert core["trust"] <= 3 and core["decision"] in SEALABLE
    cp = (core["size"], core["head"], core["root"]) if core["kind"] == "checkpoint" else None
    expected = (link.sig, link.core_bytes, core["seq"], core["epoch"], core["log"], core["prev"])
    assert (*expected, cp) == tuple(fields)


def test_every_plain_link_of_a_sound_chain_takes_its_shape() -> None:
    links = _learned()
    assert [plain_fields(raw) is None for raw in links] == [True] + [False] * (len(links) - 1)
    for raw in links:
        _reads_alike(raw)
    assert _same_report(list(links)).ok


def test_an_accepted_links_shape_is_learned(monkeypatch: pytest.MonkeyPatch) -> None:
    _fresh(monkeypatch)
    writer = ChainWriter.create(Keyring.ephemeral(SEED), nonce=b"\x67" * 16)
    hl = Highlight("novelty", 1, 2, 3, 4, 5)
    writer.append_decision(bytes(32), 1, hl, Gate().decide(hl, UserContext(), 0), 0)
    raw = writer.links[1]
    core = det_cbor_decode(det_cbor_decode(raw)["core"])
    core["hl"]["zz_new"] = 1  # a key list no link showed before
    resigned = _resigned(raw, det_cbor(core))
    assert plain_fields(resigned) is None
    assert _same_report([writer.links[0], resigned]).ok
    assert plain_fields(resigned) is not None
    core["hl"]["zz_newer"] = 2
    broken = _resigned(raw, det_cbor(core))
    assert not _same_report([writer.links[0], resigned, broken]).ok  # a duplicate seq
    assert plain_fields(broken) is None  # a link not accepted teaches nothing


def _resigned(raw: bytes, core: bytes) -> bytes:
    outer = det_cbor_decode(raw)
    outer["core"] = core
    outer["sig"] = SigningKey(SEED).sign(DOMAIN + core).signature
    return det_cbor(outer)


def _core(index: int) -> bytes:
    return bytes(det_cbor_decode(_chain()[index])["core"])


def _edited(index: int, core: bytes) -> list[bytes]:
    links = list(_learned())
    links[index] = _resigned(links[index], core)
    return links


def _changed(index: int, **fields: Any) -> bytes:
    core = det_cbor_decode(_core(index))
    core.update(fields)
    return det_cbor(core)


def _longer_seq_head(index: int) -> bytes:
    head = det_cbor(index)
    return _core(index).replace(b"\x63seq" + head, b"\x63seq\x18" + head, 1)


D, C = 7, 5  # a decision link (probe "novelty") and a checkpoint


def _cases() -> Iterator[tuple[int, bytes, str, str]]:
    """(position, a re-signed core for it, the kind and message verification reports)."""
    yield D, _longer_seq_head(D), "non-canonical", "core: "
    yield C, _longer_seq_head(C), "non-canonical", "core: "
    yield D, _core(D).replace(b"\x67novelty", b"\x78\x07novelty"), "non-canonical", "core: "
    yield D, _core(D) + b"\x00", "non-canonical", "core: "
    yield C, _core(C) + b"\x00", "non-canonical", "core: "
    yield D, _changed(D, trust=4), "malformed", "trust 4 or decision 'hold:budget' unknown"
    yield (
        D,
        _changed(D, decision="hold:nope"),
        "malformed",
        "trust 1 or decision 'hold:nope' unknown",
    )
    yield D, _changed(D, v=2), "malformed", "format version 2 is not 1"
    yield C, _changed(C, v=2), "malformed", "format version 2 is not 1"
    yield C, _changed(C, size=99), "forked", "checkpoint commits to a different history"
    yield (
        D,
        cbor2.dumps({**cbor2.loads(_core(D)), "trust": True}),
        "malformed",
        "field(s) ['trust']",
    )


@pytest.mark.parametrize(("index", "core", "kind", "message"), list(_cases()))
def test_an_odd_link_is_judged_by_the_full_parser(
    index: int, core: bytes, kind: str, message: str
) -> None:
    links = _edited(index, core)
    _reads_alike(links[index])
    report = _same_report(links)
    assert report.first_break is not None and report.first_break.seq == index
    assert report.first_break.kind == kind
    assert report.first_break.message.startswith(message)


def test_a_sound_link_of_another_shape_takes_the_full_path() -> None:
    last = len(_chain()) - 1
    links = _edited(last, _changed(last, probe="naïve"))  # not ASCII
    assert plain_fields(links[last]) is None
    assert _same_report(links).ok


def test_a_non_canonical_core_names_what_the_parser_names() -> None:
    links = _edited(D, _longer_seq_head(D))
    report = verify_chain(links)
    assert report.first_break is not None
    assert (report.first_break.kind, report.first_break.message) == parse_link(links[D]).error


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 17),
    st.sampled_from(HOW),
    st.integers(0, 10**6),
    st.integers(0, 255),
    st.booleans(),
)
def test_any_damaged_link_is_reported_as_without_shapes(
    index: int, how: str, at: int, byte: int, resign: bool
) -> None:
    links = list(_learned())
    raw = damaged(_core(index) if resign else links[index], how, at, byte)
    links[index] = _resigned(links[index], raw) if resign else raw
    _reads_alike(links[index])
    _same_report(links)


@functools.cache
def _long() -> tuple[bytes, ...]:
    """Almost three chunks of the pool's work, with a rotation inside the second."""
    writer = ChainWriter.create(Keyring.ephemeral(SEED), nonce=b"\x68" * 16, checkpoint_every=50)
    gate = Gate()
    for i in range(700):
        if i == 400:
            writer.rotate()
        hl = Highlight("novelty", i, 2, 3, 4, 5)
        writer.append_decision(i.to_bytes(32, "big"), 1, hl, gate.decide(hl, UserContext(), i), i)
    return tuple(writer.links)


@pytest.mark.parametrize("at", [None, 3, 300, 409, 520, 715])
def test_a_long_chain_breaks_where_the_full_path_breaks(at: int | None) -> None:
    links = list(_long())
    assert len(links) > 2 * verify_module._CHUNK
    if at is not None:
        raw = bytearray(links[at])
        raw[-1] ^= 1
        links[at] = bytes(raw)
    report = _same_report(links)
    assert report.ok == (at is None)
    assert report.first_break is None or report.first_break.seq == at
    kinds = [det_cbor_decode(det_cbor_decode(raw)["core"])["kind"] for raw in _long()]
    rotated = kinds.index("rotate") < report.links
    assert report.epoch == rotated

"""The sealed surfacing chain: every tampering is caught at the exact seq, with its kind."""

from __future__ import annotations

import dataclasses
import functools
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nacl.signing import SigningKey

from nerve.attention.detector import Highlight
from nerve.attention.gate import Gate, GateConfig, UserContext
from nerve.canonical import det_cbor, det_cbor_decode
from nerve.chain import (
    DOMAIN,
    EXIT_CODES,
    ChainReport,
    ChainWriter,
    FileSink,
    Keyring,
    MerkleAccumulator,
    TrustRecord,
    inclusion_proof,
    leaf_hash,
    link_id,
    merkle_root,
    node_hash,
    peek_log_id,
    read_link_file,
    trust_path,
    verify_chain,
    verify_inclusion,
)
from nerve.chain.keys import verifies
from nerve.errors import ChainError, ConfigError, EventError

SEED = b"\x11" * 32
NONCE = b"\x22" * 16
GATE = GateConfig(surface_cost_uj=100, budget_capacity_uj=250, refill_uj_per_s=20)


def _decide(writer: ChainWriter, gate: Gate, i: int, salt: int = 0) -> None:
    h = Highlight("novelty", 900, 400, 50, 600 + i, i)
    ctx = UserContext(engagement_milli=(i * 97) % 1000, active_modality="visual")
    d = gate.decide(h, ctx, i * 1_000_000_000)
    event = (i + 1000 * salt).to_bytes(32, "big")
    writer.append_decision(event, i % 4, h, d, i * 1_000_000_000)


def _grow(writer: ChainWriter, start: int, stop: int, salt: int = 0) -> ChainWriter:
    gate = Gate(GATE)
    for i in range(start, stop):
        _decide(writer, gate, i, salt)
    return writer


@functools.cache
def _chain() -> tuple[bytes, ...]:
    """20 links: genesis, decisions, a checkpoint after every 5 (seq 6, 12, 18), a decision."""
    writer = ChainWriter.create(Keyring.ephemeral(SEED), nonce=NONCE, checkpoint_every=5)
    return _grow(writer, 0, 16).links


def _kinds(links: tuple[bytes, ...] | list[bytes]) -> list[str]:
    return [det_cbor_decode(det_cbor_decode(raw)["core"])["kind"] for raw in links]


def _record() -> TrustRecord:
    return TrustRecord.from_report(verify_chain(_chain()))


def _break(links: list[bytes], **kw: Any) -> tuple[int, str]:
    report = verify_chain(links, **kw)
    assert report.first_break is not None, "tampering went unnoticed"
    assert report.links == report.first_break.seq
    return report.first_break.seq, report.first_break.kind


def _reseal(
    raw: bytes, change: Callable[[dict[str, Any]], None], key: SigningKey | None = None
) -> bytes:
    """Edit a link's core; keep its signature unless ``key`` re-signs it."""
    outer = det_cbor_decode(raw)
    core = det_cbor_decode(outer["core"])
    change(core)
    outer["core"] = det_cbor(core)
    if key is not None:
        outer["sig"] = key.sign(DOMAIN + outer["core"]).signature
    return det_cbor(outer)


def _replaced(index: int, raw: bytes) -> list[bytes]:
    links = list(_chain())
    links[index] = raw
    return links


def _bump(value: Any) -> Any:
    if isinstance(value, int):
        return value + 1
    if isinstance(value, bytes):
        return bytes([value[0] ^ 1]) + value[1:]
    if isinstance(value, str):
        return "checkpoint" if value == "decision" else value + "x"
    return {**value, "probe": "salience"} if "probe" in value else {**value, "estimated_uj": 7}


# --- a sound chain ------------------------------------------------------------------------------


def test_sound_chain_verifies() -> None:
    links = _chain()
    assert len(links) == 20
    assert [i for i, k in enumerate(_kinds(links)) if k != "decision"] == [0, 6, 12, 18]
    report = verify_chain(links, pinned_key=Keyring.ephemeral(SEED).public_key())
    assert (report.ok, report.links, report.exit_code, report.first_break) == (True, 20, 0, None)
    assert report.anchor is not None and report.anchor.size == 19
    assert report.to_json()["break"] is None
    assert peek_log_id(links) == report.log_id


def test_verification_is_deterministic() -> None:
    again = ChainWriter.create(Keyring.ephemeral(SEED), nonce=NONCE, checkpoint_every=5)
    assert _grow(again, 0, 16).links == _chain()
    first, second = verify_chain(_chain()), verify_chain(again.links)
    assert first.ok and second.ok
    assert (first.ids, first.anchor, first.log_id) == (second.ids, second.anchor, second.log_id)


# --- the mutation matrix -------------------------------------------------------------------------

DECISION_FIELDS = [
    "v",
    "epoch",
    "seq",
    "prev",
    "kind",
    "event",
    "trust",
    "probe",
    "value",
    "cost",
    "decision",
    "charged_uj",
    "budget_uj",
    "hl",
    "t",
    "energy",
]


@pytest.mark.parametrize("name", DECISION_FIELDS)
def test_editing_a_decision_field_is_edited(name: str) -> None:
    tampered = _reseal(_chain()[8], lambda core: core.update({name: _bump(core[name])}))
    assert _break(_replaced(8, tampered)) == (8, "edited")


@pytest.mark.parametrize("name", ["size", "head", "root"])
def test_editing_a_checkpoint_field_is_edited(name: str) -> None:
    tampered = _reseal(_chain()[12], lambda core: core.update({name: _bump(core[name])}))
    assert _break(_replaced(12, tampered)) == (12, "edited")


def test_editing_the_log_id_is_forked() -> None:
    tampered = _reseal(_chain()[8], lambda core: core.update(log=_bump(core["log"])))
    assert _break(_replaced(8, tampered)) == (8, "forked")


def test_editing_the_last_link_has_no_witness() -> None:
    tampered = _reseal(_chain()[19], lambda core: core.update(decision="surface", cost=0))
    assert _break(_replaced(19, tampered)) == (19, "bad-signature")


def test_editing_then_resigning_with_another_key() -> None:
    other = SigningKey(b"\x33" * 32)
    resigned = _reseal(_chain()[8], lambda core: core.update(cost=0), key=other)
    assert _break(_replaced(8, resigned)) == (8, "edited")


def test_forged_signature_over_the_same_core() -> None:
    forged = _reseal(_chain()[8], lambda core: None, key=SigningKey(b"\x33" * 32))
    assert _break(_replaced(8, forged)) == (8, "bad-signature")


def test_forged_link_appended_by_another_key() -> None:
    extra = _reseal(_chain()[19], lambda c: c.update(seq=20), key=SigningKey(b"\x33" * 32))
    assert _break([*_chain(), extra]) == (20, "bad-signature")


def test_a_signature_verifies_only_whole_under_its_key() -> None:
    signer = SigningKey(SEED)
    key, core = bytes(signer.verify_key), b"a core"
    sig = signer.sign(DOMAIN + core).signature
    assert verifies(key, core, sig)
    assert not verifies(key, core + b"!", sig)
    assert not verifies(key, core, sig[:63])  # a short signature does not borrow the domain
    assert not verifies(key, core[1:], sig + core[:1])
    assert not verifies(key[:31], core, sig)
    assert not verifies(bytes(SigningKey(b"\x33" * 32).verify_key), core, sig)
    assert not verifies(key, core, bytearray(sig))  # type: ignore[arg-type]


@pytest.mark.parametrize("index", [3, 8, 12, 19])
def test_bit_flips_in_the_signature(index: int) -> None:
    raw = _chain()[index]
    start = raw.index(det_cbor_decode(raw)["sig"])
    for pos in range(start, start + 64):
        flipped = bytearray(raw)
        flipped[pos] ^= 0x80
        assert _break(_replaced(index, bytes(flipped))) == (index, "bad-signature")


CORE_FLIP_KINDS = {"edited", "malformed", "non-canonical", "forked"}


@pytest.mark.parametrize("index", [1, 8, 12])
def test_bit_flips_in_the_core(index: int) -> None:
    """A flip in a middle link's core: edited, or forked if it hits the log id, or
    malformed / non-canonical if it breaks the encoding."""
    raw = _chain()[index]
    core = det_cbor_decode(raw)["core"]
    start, seen = raw.index(core), set()
    for pos in range(start, start + len(core)):
        flipped = bytearray(raw)
        flipped[pos] ^= 0x04
        seq, kind = _break(_replaced(index, bytes(flipped)))
        assert seq == index
        seen.add(kind)
    assert "edited" in seen
    assert seen <= CORE_FLIP_KINDS


@pytest.mark.parametrize("index", [1, 7, 10, 12, 17])
def test_excising_a_link(index: int) -> None:
    links = list(_chain())
    del links[index]
    assert _break(links) == (index, "excised")


def test_excising_the_genesis() -> None:
    assert _break(list(_chain()[1:])) == (0, "excised")


def test_excising_a_run_of_links() -> None:
    links = list(_chain())
    del links[5:9]
    assert _break(links) == (5, "excised")


@pytest.mark.parametrize(("a", "b"), [(0, 1), (4, 5), (3, 9), (11, 12), (18, 19)])
def test_swapping_two_links(a: int, b: int) -> None:
    links = list(_chain())
    links[a], links[b] = links[b], links[a]
    assert _break(links) == (a, "reordered")


def test_moving_a_link_backwards() -> None:
    links = list(_chain())
    links.insert(14, links.pop(3))  # seq 4 now sits at position 3, seq 3 comes later
    assert _break(links) == (3, "reordered")


@pytest.mark.parametrize(("index", "at"), [(5, 6), (5, 12), (0, 20), (19, 20)])
def test_duplicating_a_link(index: int, at: int) -> None:
    links = list(_chain())
    links.insert(at, links[index])
    assert _break(links) == (at, "duplicated")


def test_non_canonical_core_even_if_validly_signed() -> None:
    outer = det_cbor_decode(_chain()[8])
    core = det_cbor_decode(outer["core"])
    loose = cbor2.dumps(dict(reversed(list(core.items()))))  # keys out of order
    outer["core"] = loose
    outer["sig"] = SigningKey(SEED).sign(DOMAIN + loose).signature
    assert _break(_replaced(8, det_cbor(outer))) == (8, "non-canonical")


def _resigned(index: int, core: bytes) -> list[bytes]:
    """The chain with link ``index``'s core replaced by ``core``, validly signed."""
    outer = det_cbor_decode(_chain()[index])
    outer["core"] = core
    outer["sig"] = SigningKey(SEED).sign(DOMAIN + core).signature
    return _replaced(index, det_cbor(outer))


def test_a_longer_integer_head_is_non_canonical_even_if_validly_signed() -> None:
    core = det_cbor(det_cbor_decode(det_cbor_decode(_chain()[8])["core"]))
    head = det_cbor(8)  # seq 8 is one byte; write it as 0x18 0x08 instead
    longer = core.replace(b"\x63seq" + head, b"\x63seq\x18\x08", 1)
    assert longer != core
    assert _break(_resigned(8, longer)) == (8, "non-canonical")


def test_nested_map_keys_out_of_order_are_non_canonical_even_if_validly_signed() -> None:
    core = det_cbor_decode(det_cbor_decode(_chain()[8])["core"])
    core["hl"] = dict(reversed(list(core["hl"].items())))
    loose = b"".join(  # det-CBOR for every field, but the highlight map written as it stands
        [cbor2.dumps(core)[:1]]
        + [det_cbor(k) + (cbor2.dumps(v) if k == "hl" else det_cbor(v)) for k, v in _sorted(core)]
    )
    assert cbor2.loads(loose) == core and loose != det_cbor(core)
    assert _break(_resigned(8, loose)) == (8, "non-canonical")


def test_a_repeated_core_key_is_non_canonical_even_if_validly_signed() -> None:
    core = det_cbor(det_cbor_decode(det_cbor_decode(_chain()[8])["core"]))
    count = core[0] & 0x1F
    repeated = bytes([0xA0 | (count + 1)]) + core[1:] + det_cbor("seq") + det_cbor(8)
    assert _break(_resigned(8, repeated)) == (8, "non-canonical")


def _sorted(core: dict[str, Any]) -> list[tuple[str, Any]]:
    return sorted(core.items(), key=lambda kv: (len(kv[0].encode()), kv[0].encode()))


def test_non_canonical_envelope() -> None:
    outer = det_cbor_decode(_chain()[8])
    loose = cbor2.dumps({"core": outer["core"], "sig": outer["sig"]})  # "core" before "sig"
    assert _break(_replaced(8, loose)) == (8, "non-canonical")


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\xff",
        b"\xa0",
        det_cbor([1]),
        det_cbor({"core": b"", "sig": b"x"}),
        det_cbor({"core": det_cbor({"v": 1}), "sig": bytes(64)}),
        cbor2.dumps({"core": 1.5, "sig": 2}),
    ],
)
def test_malformed_links(raw: bytes) -> None:
    assert _break(_replaced(9, raw)) == (9, "malformed")


def test_empty_chain_is_truncated() -> None:
    assert _break([]) == (0, "truncated")


def test_a_chain_not_begun_is_no_damage_unless_links_were_accepted() -> None:
    report = verify_chain([], empty_ok=True)
    assert (report.ok, report.links, report.exit_code) == (True, 0, 0)
    assert _break([], trusted=_record(), empty_ok=True) == (0, "truncated")


def test_audit_verify_on_a_workspace_whose_daemon_never_ran(tmp_path: Path) -> None:
    from nerve.workspace import init_workspace
    from tests.conftest import run_cli

    root = init_workspace(tmp_path / "ws").root
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    proc = run_cli("--workspace", str(root), "audit", "verify", check=False, env=env)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    assert "no links yet" in proc.stdout


@pytest.mark.parametrize("last", [True, False], ids=["last-link", "inside"])
def test_a_checkpoint_resigned_by_the_chain_key_over_a_wrong_root_is_caught(last: bool) -> None:
    """Size and head right, root wrong, signed by the chain's own key: only the root
    comparison can catch it."""
    key = SigningKey(SEED)
    wrong = _reseal(_chain()[18], lambda core: core.update(root=_bump(core["root"])), key=key)
    links = _replaced(18, wrong)
    assert _kinds([wrong]) == ["checkpoint"]
    assert _break(links[:19] if last else links) == (18, "forked")


# --- against a trust record ---------------------------------------------------------------------


def test_truncation_against_the_trust_record() -> None:
    record = _record()
    assert (record.size, record.head) == (19, verify_chain(_chain()).ids[18])
    assert _break(list(_chain()[:15]), trusted=record) == (15, "truncated")
    assert _break(list(_chain()[:18]), trusted=record) == (18, "truncated")
    assert verify_chain(_chain()[:19], trusted=record).ok  # the unsealed tail may be lost
    assert verify_chain(list(_chain()[:15])).ok  # without a record a cut prefix looks fine


def _regrown(keep: int, stop: int) -> list[bytes]:
    """The first ``keep`` links of :func:`_chain`, then other decisions: a rolled-back copy."""
    older = list(_chain()[:keep])
    writer = ChainWriter.resume(older, Keyring.ephemeral(SEED), checkpoint_every=5)
    return list(_grow(writer, 8, stop, salt=1).links)


def test_rollback_is_reported_where_history_diverged() -> None:
    regrown = _regrown(10, 20)
    assert verify_chain(regrown).ok  # on its own it is a fine chain
    report = verify_chain(regrown, trusted=_record())
    assert _break(regrown, trusted=_record()) == (10, "rolled-back")
    assert report.links == 10 and "diverged here" in str(report.first_break)


def test_a_shorter_rolled_back_copy_is_rolled_back_not_truncated() -> None:
    assert _break(_regrown(4, 9), trusted=_record()) == (4, "rolled-back")


def test_a_record_without_ids_still_catches_rollback_at_its_checkpoint() -> None:
    legacy = dataclasses.replace(_record(), ids=())
    assert _break(_regrown(10, 20), trusted=legacy) == (18, "rolled-back")


def test_the_accepted_ids_survive_save_and_load(tmp_path: Path) -> None:
    path = trust_path(_record().log_id, tmp_path)
    _record().save(path)
    loaded = TrustRecord.load(path)
    assert loaded is not None and loaded.ids == verify_chain(_chain()).ids[:19]
    assert _break(_regrown(10, 20), trusted=loaded) == (10, "rolled-back")


def test_ids_on_file_are_extended_in_place_and_ignored_when_they_disagree(
    tmp_path: Path,
) -> None:
    first = TrustRecord.from_report(verify_chain(_chain()[:8]))
    path = trust_path(first.log_id, tmp_path)
    first.save(path)
    first.accept(verify_chain(_chain())).save(path)
    assert path.with_suffix(".ids").read_bytes() == b"".join(verify_chain(_chain()).ids[:19])
    path.with_suffix(".ids").write_bytes(bytes(32 * 19))  # not this record's ids
    loaded = TrustRecord.load(path)
    assert loaded is not None and loaded.ids == ()


def test_equivocation_is_forked() -> None:
    branch = ChainWriter.resume(list(_chain()[:10]), Keyring.ephemeral(SEED), checkpoint_every=5)
    branch = _grow(branch, 8, 16, salt=2)
    spliced = list(_chain()[:11]) + list(branch.links[11:])
    assert _break(spliced) == (11, "forked")


def test_splice_from_another_log() -> None:
    other = ChainWriter.create(Keyring.ephemeral(SEED), nonce=b"\x44" * 16, checkpoint_every=5)
    other = _grow(other, 0, 16)
    spliced = list(_chain()[:7]) + list(other.links[7:])
    assert _break(spliced) == (7, "forked")


def test_fresh_genesis_against_the_trust_record() -> None:
    fresh = _grow(ChainWriter.create(Keyring.ephemeral(SEED), checkpoint_every=5), 0, 16).links
    assert _break(list(fresh), trusted=_record()) == (0, "fresh-genesis")
    assert verify_chain(fresh, pinned_key=Keyring.ephemeral(SEED).public_key()).ok


def test_unknown_genesis_key() -> None:
    stranger = Keyring.ephemeral(b"\x55" * 32).public_key()
    assert _break(list(_chain()), pinned_key=stranger) == (0, "unknown-key")


def test_accepting_advances_the_record(tmp_path: Path) -> None:
    record = TrustRecord.from_report(verify_chain(_chain()[:5]))
    assert record.size == 1  # only the genesis anchors it so far
    report = verify_chain(_chain(), trusted=record)
    newer = record.accept(report)
    assert newer.size == 19
    path = trust_path(newer.log_id, tmp_path / "trust")
    newer.save(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert TrustRecord.load(path) == newer
    assert TrustRecord.load(tmp_path / "none.json") is None


def test_accept_refuses_an_inconsistent_report() -> None:
    record = _record()
    with pytest.raises(ChainError):
        record.accept(verify_chain(_chain()[:10]))
    with pytest.raises(ChainError):
        record.accept(verify_chain([]))
    fresh = _grow(ChainWriter.create(Keyring.ephemeral(SEED), checkpoint_every=5), 0, 16).links
    with pytest.raises(ChainError):
        record.accept(verify_chain(fresh))


def test_trust_dir_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert trust_path(b"\x01" * 32) == tmp_path / "nerve" / "trust" / ("01" * 32 + ".json")
    monkeypatch.delenv("XDG_STATE_HOME")
    assert trust_path(b"\x01" * 32).parent == Path.home() / ".local/state/nerve/trust"


def test_bad_trust_record_file(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text("{")
    with pytest.raises(ChainError):
        TrustRecord.load(path)
    path.write_text('{"log_id": "00"}')
    with pytest.raises(ChainError):
        TrustRecord.load(path)


# --- key rotation ---------------------------------------------------------------------------------


@functools.cache
def _rotated() -> tuple[tuple[bytes, ...], bytes]:
    """Genesis, 4 decisions, a rotate (seq 5), 4 more; returns links and the retired seed."""
    ring = Keyring.ephemeral(SEED)
    writer = _grow(ChainWriter.create(ring, nonce=NONCE, checkpoint_every=0), 0, 4)
    writer.rotate()
    _grow(writer, 4, 8)
    return writer.links, SEED


def test_rotation_verifies() -> None:
    links, _ = _rotated()
    assert _kinds(links)[5] == "rotate"
    report = verify_chain(links)
    assert (report.ok, report.epoch) == (True, 1)
    assert report.key != Keyring.ephemeral(SEED).public_key()


def test_old_key_cannot_sign_after_rotation() -> None:
    links, old_seed = _rotated()
    old = SigningKey(old_seed)
    as_old_epoch = _reseal(links[-1], lambda c: c.update(seq=10, epoch=0, prev=_id(links[-1])), old)
    assert _break([*links, as_old_epoch]) == (10, "unknown-key")
    as_new_epoch = _reseal(links[-1], lambda c: c.update(seq=10, prev=_id(links[-1])), old)
    assert _break([*links, as_new_epoch]) == (10, "bad-signature")


def test_rotate_link_needs_the_new_keys_signature() -> None:
    links, _ = _rotated()
    outer = det_cbor_decode(links[5])
    outer["sig2"] = SigningKey(b"\x66" * 32).sign(DOMAIN + outer["core"]).signature
    assert _break([*links[:5], det_cbor(outer), *links[6:]]) == (5, "bad-signature")
    del outer["sig2"]
    assert _break([*links[:5], det_cbor(outer), *links[6:]]) == (5, "malformed")


def test_excising_the_rotate_link() -> None:
    links, _ = _rotated()
    assert _break([*links[:5], *links[6:]]) == (5, "excised")


def _id(raw: bytes) -> bytes:
    return link_id(det_cbor_decode(raw)["core"])


# --- any mutation -----------------------------------------------------------------------------

mutations = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 19), st.integers(0, 10_000), st.integers(0, 7)),
    st.tuples(st.just("delete"), st.integers(0, 18), st.just(0), st.just(0)),
    st.tuples(st.just("swap"), st.integers(0, 19), st.integers(0, 19), st.just(0)),
    st.tuples(st.just("copy"), st.integers(0, 19), st.integers(0, 20), st.just(0)),
    st.tuples(st.just("junk"), st.integers(0, 19), st.integers(0, 255), st.just(0)),
)


def _mutate(kind: str, a: int, b: int, c: int) -> list[bytes]:
    links = list(_chain())
    if kind == "flip":
        raw = bytearray(links[a])
        raw[b % len(raw)] ^= 1 << c
        links[a] = bytes(raw)
    elif kind == "delete":
        del links[a]
    elif kind == "swap":
        links[a], links[b] = links[b], links[a]
    elif kind == "copy":
        links.insert(b, links[a])
    else:
        links[a] = bytes([b]) * 40
    return links


@settings(max_examples=150, deadline=None)
@given(mutations)
def test_any_mutation_breaks_at_the_first_changed_position(
    mutation: tuple[str, int, int, int],
) -> None:
    links, original = _mutate(*mutation), list(_chain())
    changed = next(
        (i for i, (x, y) in enumerate(zip(links, original, strict=False)) if x != y), None
    )
    if changed is None and len(links) == len(original):
        return  # a swap of a link with itself
    changed = min(len(links), len(original)) if changed is None else changed
    report = verify_chain(links, trusted=_record())
    assert report.first_break is not None
    assert report.first_break.seq == changed


# --- writer, sinks, keyring ---------------------------------------------------------------------


def test_file_sink_round_trip_and_resume(tmp_path: Path) -> None:
    path = tmp_path / "chain.bin"
    ring = Keyring.open(tmp_path / "keys")
    writer = _grow(
        ChainWriter.create(ring, sink=FileSink(path, fsync=False), checkpoint_every=4), 0, 6
    )
    assert read_link_file(path) == list(writer.links)
    resumed = ChainWriter.resume(
        read_link_file(path),
        Keyring.open(tmp_path / "keys"),
        sink=FileSink(path, fsync=False),
        checkpoint_every=4,
    )
    _grow(resumed, 6, 10)
    links = read_link_file(path)
    assert verify_chain(links).ok
    assert _kinds(links).count("checkpoint") == 2
    with path.open("ab") as f:
        f.write(b"\x00\x00\x01")
    with pytest.raises(ChainError, match="torn"):
        read_link_file(path)


def test_resume_refuses_a_broken_chain() -> None:
    links = list(_chain())
    del links[4]
    with pytest.raises(ChainError, match="excised"):
        ChainWriter.resume(links, Keyring.ephemeral(SEED))
    with pytest.raises(ChainError):
        ChainWriter.resume(_chain(), Keyring.ephemeral(b"\x77" * 32))


def test_a_failing_sink_leaves_the_chain_unchanged() -> None:
    calls: list[bytes] = []

    def flaky(link: bytes) -> None:
        if len(calls) == 2:
            raise OSError("disk full")
        calls.append(link)

    writer = ChainWriter.create(Keyring.ephemeral(SEED), sink=flaky, checkpoint_every=0)
    _grow(writer, 0, 1)
    with pytest.raises(OSError):
        _grow(writer, 1, 2)
    assert writer.links == tuple(calls)
    assert verify_chain(writer.links).ok


def test_checkpoint_on_demand() -> None:
    writer = ChainWriter.create(Keyring.ephemeral(SEED), checkpoint_every=0)
    assert writer.checkpoint() is None
    _grow(writer, 0, 3)
    assert writer.checkpoint() is not None
    assert writer.checkpoint() is None
    assert writer.checkpoint(force=True) is not None
    assert _kinds(writer.links) == [
        "genesis",
        "decision",
        "decision",
        "decision",
        "checkpoint",
        "checkpoint",
    ]
    assert verify_chain(writer.links).ok


def test_inclusion_proofs_from_the_writer() -> None:
    writer = _grow(ChainWriter.create(Keyring.ephemeral(SEED), checkpoint_every=3), 0, 9)
    ids = verify_chain(writer.links).ids
    for index, lid in enumerate(ids):
        proof = writer.inclusion_proof(index)
        assert verify_inclusion(lid, index, len(ids), proof, writer.root())
        assert not verify_inclusion(lid, (index + 1) % len(ids), len(ids), proof, writer.root())


def test_key_files_are_owner_only(tmp_path: Path) -> None:
    folder = tmp_path / "keys"
    ring = Keyring.open(folder)
    key_file = folder / "chain-0.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert Keyring.open(folder).public_key() == ring.public_key()
    writer = ChainWriter.create(ring)
    writer.rotate()
    assert sorted(p.name for p in folder.iterdir()) == ["chain-1.key"]
    assert stat.S_IMODE((folder / "chain-1.key").stat().st_mode) == 0o600
    assert Keyring.open(folder).epoch == 1
    os.chmod(folder / "chain-1.key", 0o644)
    with pytest.raises(ConfigError, match="readable by others"):
        Keyring.open(folder)


def test_resume_finishes_an_interrupted_rotation(tmp_path: Path) -> None:
    ring = Keyring.open(tmp_path / "keys")
    writer = _grow(ChainWriter.create(ring), 0, 2)
    ring.rotate()  # crash: the new key is on disk, its rotate link never written
    resumed = ChainWriter.resume(writer.links, Keyring.open(tmp_path / "keys"))
    assert _kinds(resumed.links)[-1] == "rotate"
    assert verify_chain(resumed.links).epoch == 1


def test_exit_codes_are_distinct() -> None:
    assert len(set(EXIT_CODES.values())) == len(EXIT_CODES) == 13
    assert EXIT_CODES["ok"] == 0
    assert all(code >= 10 for kind, code in EXIT_CODES.items() if kind != "ok")
    assert ChainReport(0, None).exit_code == 0


# --- Merkle tree --------------------------------------------------------------------------------


def test_merkle_small_trees() -> None:
    a, b, c = b"a", b"b", b"c"
    assert merkle_root([a]) == leaf_hash(a)
    assert merkle_root([a, b]) == node_hash(leaf_hash(a), leaf_hash(b))
    assert merkle_root([a, b, c]) == node_hash(node_hash(leaf_hash(a), leaf_hash(b)), leaf_hash(c))


@pytest.mark.parametrize("n", range(34))
def test_accumulator_matches_the_tree(n: int) -> None:
    leaves = [i.to_bytes(4, "big") for i in range(n)]
    acc = MerkleAccumulator()
    for leaf in leaves:
        acc.append(leaf)
    assert acc.root() == merkle_root(leaves)
    for i, leaf in enumerate(leaves):
        proof = inclusion_proof(leaves, i)
        assert verify_inclusion(leaf, i, n, proof, acc.root())
        assert not verify_inclusion(leaf + b"x", i, n, proof, acc.root())
        if proof:
            assert not verify_inclusion(leaf, i, n, proof[:-1], acc.root())


@pytest.mark.parametrize(
    ("event", "trust", "t"), [(b"x", 1, 0), (bytes(32), 4, 0), (bytes(32), 1, -1)]
)
def test_writer_refuses_bad_decision_inputs(event: bytes, trust: int, t: int) -> None:
    writer = ChainWriter.create(Keyring.ephemeral(SEED))
    h = Highlight("novelty", 900, 400, 50, 600, 0)
    d = Gate().decide(h, UserContext(), 0)
    with pytest.raises(EventError):
        writer.append_decision(event, trust, h, d, t)
    assert writer.size == 1


@pytest.mark.parametrize(
    ("name", "kind"),
    [("key", "malformed"), ("nonce", "malformed"), ("epoch", "edited"), ("prev", "edited")],
)
def test_editing_the_genesis(name: str, kind: str) -> None:
    """Key and nonce are bound by the log id; other fields are witnessed by link 1."""
    tampered = _reseal(_chain()[0], lambda core: core.update({name: _bump(core[name])}))
    assert _break(_replaced(0, tampered)) == (0, kind)


@pytest.mark.parametrize(
    ("name", "kind"), [("new_epoch", "edited"), ("new_key", "bad-signature"), ("seq", "edited")]
)
def test_editing_the_rotate_link(name: str, kind: str) -> None:
    """An edited new_key no longer verifies the next link, so nothing witnesses the edit."""
    links, _ = _rotated()
    tampered = _reseal(links[5], lambda core: core.update({name: _bump(core[name])}))
    assert _break([*links[:5], tampered, *links[6:]]) == (5, kind)


# --- the parser's fast path accepts only det-CBOR ----------------------------------------------

_cbor_values = st.recursive(
    st.integers(-(2**64), 2**64 - 1) | st.binary(max_size=40) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=5)
    ),
    max_leaves=12,
)


@given(_cbor_values, st.booleans(), st.integers(0, 10_000), st.integers(0, 255))
def test_the_fast_decoder_accepts_only_canonical_bytes(
    value: Any, canonical: bool, at: int, byte: int
) -> None:
    """Whatever the bytes (det-CBOR, cbor2's own order, or either with one byte changed),
    what the fast path accepts re-encodes in det-CBOR to exactly those bytes."""
    from nerve.chain.links import _fast_decode

    data = bytearray(det_cbor(value) if canonical else cbor2.dumps(value))
    if at < len(data):
        data[at] = byte
    decoded = _fast_decode(bytes(data))
    if decoded is not None:
        assert det_cbor(decoded) == bytes(data)

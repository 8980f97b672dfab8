"""`nerve.fleet.head` on its own: a head and a registration are signed under their own
domains, read back whole, and refused (with the place named) when damaged."""

from __future__ import annotations

import json
import re

import blake3
import pytest
from nacl.signing import SigningKey

from nerve.canonical import canonical_json
from nerve.fleet.head import DOMAIN, REGISTRATION_DOMAIN, Head, HeadError, Registration, live_digest

BODY = {"host": "alpha", "node": "n1", "seq": 7, "head": "ab" * 32, "segments": ["s1", "s2"],
        "rows": 12, "digest": "cd" * 32, "time_ns": 1}  # fmt: skip


def _head(key: SigningKey | None = None) -> Head:
    return Head.sign(BODY, key or SigningKey(b"\x01" * 32))


def test_a_head_is_signed_under_its_domain_by_the_key_it_names() -> None:
    key = SigningKey(b"\x01" * 32)
    head = _head(key)
    assert head.key == bytes(key.verify_key) and head.verifies()
    assert (head.host, head.seq, head.hash, head.segments) == ("alpha", 7, "ab" * 32, ["s1", "s2"])
    key.verify_key.verify(DOMAIN + canonical_json(head.body), head.sig)
    assert Head(head.body, bytes(key.sign(canonical_json(head.body)).signature)).verifies() is False


def test_a_head_with_a_changed_field_or_another_key_does_not_verify() -> None:
    head = _head()
    assert not Head({**head.body, "seq": 8}, head.sig).verifies()
    other = bytes(SigningKey(b"\x02" * 32).verify_key).hex()
    assert not Head({**head.body, "key": other}, head.sig).verifies()
    assert not Head({**head.body, "key": "00"}, head.sig).verifies()  # not a key at all


def test_a_head_reads_back_whole() -> None:
    head = _head()
    data = head.to_bytes()
    assert json.loads(data) == {"body": head.body, "sig": head.sig.hex()}
    assert Head.parse(data, "h.json") == head


@pytest.mark.parametrize(
    ("data", "says"),
    [(b"not json", "h.json: not a signed head (JSON with body and sig)"),
     (b"[]", "h.json: not a signed head"), (b'{"body": {}}', "h.json: not a signed head"),
     (b'{"body": {}, "sig": "zz"}', "h.json: not a signed head"),
     (b'{"body": {"host": "a"}, "sig": ""}',
      "h.json: head lacks node, seq, head, segments, rows, digest, key, time_ns"),
     (b'{"body": [], "sig": ""}', "h.json: head lacks host, node"),
     (json.dumps({"body": {**BODY, "key": "", "seq": "7"}, "sig": ""}).encode(),
      "h.json: head's segments or seq has the wrong type"),
     (json.dumps({"body": {**BODY, "key": "", "segments": "s1"}, "sig": ""}).encode(),
      "h.json: head's segments or seq has the wrong type")],
)  # fmt: skip
def test_a_damaged_head_is_refused_naming_its_place(data: bytes, says: str) -> None:
    with pytest.raises(HeadError, match="^" + re.escape(says)):
        Head.parse(data, "h.json")


def test_live_digest_is_blake3_over_the_ids_in_order() -> None:
    ids = [b"\x01" * 32, b"\x02" * 32]
    assert live_digest(ids) == blake3.blake3(b"".join(ids)).hexdigest()
    assert live_digest([]) == blake3.blake3().hexdigest()


def test_a_registration_round_trips_and_names_only_its_head() -> None:
    key = SigningKey(b"\x01" * 32)
    head = _head(key)
    reg = Registration.of(head, key)
    assert reg.to_text() == f"v1.7.{'ab' * 32}.{head.key.hex()}.{reg.sig.hex()}"
    again = Registration.parse("alpha", reg.to_text(), "snapshot 3")
    assert again == reg and again.verifies() and again.names(head)
    body = {"host": "alpha", "seq": 7, "head": "ab" * 32, "key": head.key.hex()}
    key.verify_key.verify(REGISTRATION_DOMAIN + canonical_json(body), reg.sig)
    assert not Registration.parse("beta", reg.to_text(), "s").verifies()  # another host's
    assert not again.names(Head({**head.body, "host": "beta"}, head.sig))
    assert not again.names(Head({**head.body, "seq": 8}, head.sig))
    assert not again.names(Head({**head.body, "head": "ef" * 32}, head.sig))
    assert not again.names(_head(SigningKey(b"\x02" * 32)))


@pytest.mark.parametrize(
    "text", ["v2.7.ab.00.00", "v1.x.ab.00.00", "v1.7.ab.zz.00", "v1.7.ab.00", "v1.7.ab.00.00.00"]
)
def test_a_damaged_registration_is_refused_naming_its_place(text: str) -> None:
    with pytest.raises(HeadError, match=r"^snapshot 3: not a nerve registration$"):
        Registration.parse("alpha", text, "snapshot 3")


def test_a_registration_with_a_bad_key_does_not_verify() -> None:
    reg = Registration.of(_head(), SigningKey(b"\x01" * 32))
    assert not Registration(reg.host, reg.seq, reg.hash, b"\x00", reg.sig).verifies()
    assert not Registration(reg.host, reg.seq + 1, reg.hash, reg.key, reg.sig).verifies()

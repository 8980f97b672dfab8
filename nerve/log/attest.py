"""Attested trust: an event is ``Attested`` only with a signature nerve can check.

Sense v0.1 §2 reserves ``Attested`` for data vouched for cryptographically. nerve accepts an
event at that trust level (from ``nerve emit``, the socket, ``nerve import``) only when a
``trust.attestation`` event follows it in the same batch, holding an Ed25519 signature
(RFC 8032) by a key listed in ``nerve.yaml`` (``attestation.keys``) over its **claim**::

    claim = b"nerve.attest.v1\\x00" + fields 3-9 of the id preimage
            (kind, subject, source, trust, valid_time_ns, payload_cid, line; each a u32
            big-endian length then the bytes, exactly as in the id preimage)

The claim leaves out ``hlc`` and ``node``, which the writer stamps on arrival, so a device
signs before it sends. The attestation event (source ``vendor:1024``, trust ``FirstParty``)
has the payload ``{"claim": blake3(claim) hex, "key": hex, "sig": hex}`` and is stored, so
anyone can check it again later; ``nerve tail --all --json`` exports both events, and
``nerve import`` accepts the pair. On ``emit`` input a device may instead put
``"attestation": {"key": hex, "sig": hex}`` on the event itself; nerve then writes the
attestation event. Senses cannot declare ``Attested``: a sense has no key the workspace pins
(a device with one emits through the socket). Anything else is refused with a
:class:`~nerve.errors.TrustError` naming this rule.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import blake3

from nerve.errors import EventError, TrustError
from nerve.events import NERVE_SOURCE, Trust, cid
from nerve.log.drafts import Draft

ATTEST_KIND = "trust.attestation"
DOMAIN = b"nerve.attest.v1\x00"
RULE = (
    "Attested needs an Ed25519 signature over the event's claim by a key pinned in "
    "nerve.yaml attestation.keys"
)
_HINT = (
    'send "attestation": {"key": <hex>, "sig": <hex>} with the event, or give it trust '
    "FirstParty, Inferred or Untrusted"
)


class Claimed(Protocol):
    """What a claim covers: a draft or a stored event."""

    @property
    def kind(self) -> str: ...
    @property
    def subject(self) -> str: ...
    @property
    def source(self) -> int: ...
    @property
    def trust(self) -> int: ...
    @property
    def valid_time_ns(self) -> int | None: ...
    @property
    def payload(self) -> bytes: ...
    @property
    def line(self) -> str: ...


def claim(item: Claimed) -> bytes:
    """The bytes an attestation signs: the domain, then fields 3-9 of the id preimage."""
    valid = b"" if item.valid_time_ns is None else struct.pack(">q", item.valid_time_ns)
    fields = (
        item.kind.encode(), item.subject.encode(), struct.pack(">I", item.source),
        bytes((int(item.trust),)), valid, cid(item.payload), item.line.encode(),
    )  # fmt: skip
    return DOMAIN + b"".join(struct.pack(">I", len(f)) + f for f in fields)


def sign(seed: bytes, item: Claimed) -> dict[str, str]:
    """``{"key", "sig"}``: what a device holding the Ed25519 ``seed`` sends with ``item``."""
    from nacl.signing import SigningKey

    key = SigningKey(seed)
    return {"key": key.verify_key.encode().hex(), "sig": key.sign(claim(item)).signature.hex()}


def attestation_draft(item: Claimed, attestation: Any) -> Draft:
    """The ``trust.attestation`` event for ``attestation`` (``{"key", "sig"}``) of ``item``."""
    if not (
        isinstance(attestation, dict)
        and set(attestation) == {"key", "sig"}
        and all(isinstance(v, str) for v in attestation.values())
    ):
        raise EventError('attestation must be {"key": <hex>, "sig": <hex>}', field="attestation")
    body = {"claim": blake3.blake3(claim(item)).hexdigest(), **attestation}
    return Draft.control(ATTEST_KIND, "", f"attestation by key {attestation['key'][:16]}", body)


def check_batch(
    items: Sequence[Claimed], keys: Iterable[str], numbers: Sequence[int] | None = None
) -> None:
    """Raise :class:`TrustError` for the first ``Attested`` item that the next item does not
    attest with a valid signature by one of ``keys`` (hex Ed25519 public keys). ``numbers``
    are the items' places in a larger request (0-based), for the error's text and field."""
    pinned = set(keys)
    for index, item in enumerate(items):
        if item.trust != Trust.ATTESTED:
            continue
        after = items[index + 1] if index + 1 < len(items) else None
        problem = _problem(item, after, pinned)
        if problem:
            number = numbers[index] if numbers else index
            raise TrustError(
                f"event {number + 1}: trust Attested refused: {problem} (rule: {RULE})",
                field=f"events[{number}].trust" if numbers else "trust",
                hint=_HINT,
            )


def _problem(item: Claimed, after: Claimed | None, pinned: set[str]) -> str | None:
    if after is None or after.kind != ATTEST_KIND or after.source != NERVE_SOURCE:
        return "no trust.attestation event follows it"
    try:
        body = json.loads(after.payload)
        digest, key, sig = str(body["claim"]), str(body["key"]), bytes.fromhex(body["sig"])
    except (ValueError, KeyError, TypeError):
        return "its trust.attestation payload is not {claim, key, sig}"
    if digest != blake3.blake3(claim(item)).hexdigest():
        return "its attestation is for another claim"
    if key not in pinned:
        return f"key {key[:16]}… is not pinned" if pinned else "the workspace pins no key"
    return None if _verifies(key, claim(item), sig) else "the signature does not verify"


def _verifies(key: str, message: bytes, sig: bytes) -> bool:
    from nacl.exceptions import BadSignatureError
    from nacl.signing import VerifyKey

    try:
        VerifyKey(bytes.fromhex(key)).verify(message, sig)
    except (BadSignatureError, ValueError, TypeError):
        return False
    return True


def drafts_of_object(obj: Any) -> list[Draft]:
    """One emit object (JSON lines, the socket) as its draft, and the ``trust.attestation``
    draft after it when it carries an ``attestation``."""
    from nerve.log.wire import draft_from_json

    if not (isinstance(obj, dict) and "attestation" in obj):
        return [Draft(**draft_from_json(obj))]
    draft = Draft(**draft_from_json({k: v for k, v in obj.items() if k != "attestation"}))
    return [draft, attestation_draft(draft, obj["attestation"])]

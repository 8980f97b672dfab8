"""The sealed surfacing log (Sense v0.1 §8): signed, hash-chained gate decisions.

**Links.** A link is the det-CBOR map ``{"core": bytes, "sig": bytes[, "sig2": bytes]}``.
``core`` is itself det-CBOR: a map with ``v`` (1), ``log`` (32-byte log id), ``epoch`` (key
epoch), ``seq`` (0, 1, …), ``prev`` (id of the previous link; 32 zero bytes at seq 0) and
``kind`` plus the kind's fields:

- ``genesis`` (seq 0 only): ``key`` (the first public key), ``nonce`` (16 random bytes
  chosen at genesis); the log id is ``blake3(key + nonce)``.
- ``decision``: ``event``, ``trust``, ``probe``, ``value``, ``cost``, ``decision``,
  ``charged_uj``, ``budget_uj`` (left), ``hl`` (highlight map), ``t`` (HLC physical ns),
  ``energy`` (the charge's :class:`~nerve.attention.energy.Energy` map).
- ``checkpoint``: ``size`` (links so far, itself included), ``head`` (id of the previous
  link) and ``root`` (RFC 6962 Merkle root, blake3 with 0x00/0x01 domain bytes, over the
  ids of links ``0..seq-1``).
- ``rotate``: ``new_key``, ``new_epoch`` (= ``epoch + 1``); signed by the old key (``sig``)
  and the new key (``sig2``). Later links carry the new epoch and are signed by the new key.

A link's id is ``blake3(core)``; signatures are Ed25519 over ``DOMAIN + core``.

**Verification** (:func:`verify_chain`) reports the first break at a position ``seq`` (the
seq the link there should carry; every link before it verified). The position is exact; the
kind names what the evidence shows. At each position the checks run in this order:

1. ``duplicated``: the exact bytes of an earlier link.
2. ``malformed``: not decodable, wrong envelope, a common field missing or mistyped;
   ``non-canonical``: decodable CBOR of allowed types, but not in det-CBOR form.
3. Position 0 must be a genesis link; one claiming a later seq is judged by rule 7. Its log
   id must be ``blake3(key + nonce)`` (``malformed``); against a trust record another log
   id is ``fresh-genesis``; a key other than the pinned one (``pinned_key``, else the
   record's) is ``unknown-key``.
4. ``forked``: a later link names another log (a splice from another chain).
5. The signature does not verify under the current key. Then, first that applies:
   ``edited`` if the NEXT link verifies, carries the next seq and its ``prev`` is not this
   link's id (an authentic witness sealed different content here: edits of any field,
   a re-signed edit); the seq rule 7 (a link of a later epoch whose rotation was excised);
   ``unknown-key`` if it claims an epoch other than the current one (a retired or never
   announced key); else ``bad-signature`` (a forged or damaged signature, or an edit with
   no later witness, e.g. of the last link).
6. ``malformed``: the fields do not match the kind, or ``v`` is not 1.
7. ``seq`` ahead of the position: ``reordered`` if a later link of this log claims the
   missing seq, else ``excised``; ``seq`` behind the position: ``reordered``.
8. ``forked``: an authentic link whose ``prev`` is not the previous link's id (two
   histories signed by one key).
9. Kind rules for an authentic link: wrong epoch, unknown trust or outcome, a bad rotation
   (not epoch + 1, same key) are ``malformed``; a checkpoint whose size, head or root
   disagrees with the links shown is ``forked``; a rotate link whose ``sig2`` does not
   verify under its ``new_key`` is ``bad-signature``.
10. Against a :class:`TrustRecord` (the last checkpoint this verifier accepted): an
    authentic link other than the one accepted at its seq is ``rolled-back`` at the first
    such seq, where history diverged (it was rewound and re-grown); a record that kept no
    per-link ids catches it at the recorded checkpoint. After the last link, fewer links
    than the recorded size
    is ``truncated`` at the first missing seq (a deleted tail and an older copy that was
    not extended look the same). An empty chain is ``truncated`` at 0.

The verifier's :class:`TrustRecord` lives outside the daemon's data folder, by default in
``$XDG_STATE_HOME/nerve/trust/<log-id-hex>.json`` (``~/.local/state/...`` without it).
:meth:`TrustRecord.accept` returns the advanced record after a successful verification.

Modules: ``links`` (format, schema, parser), ``bulk`` (the same parser on a short path for
many plain links), ``shapes`` (plain links checked as byte patterns, for verification),
``merkle`` (RFC 6962 tree), ``keys`` (keyring), ``verify`` (:func:`verify_chain`), ``trust``
(:class:`TrustRecord`) and ``writer`` (:class:`ChainWriter`, :class:`FileSink`).

Exit codes (:data:`EXIT_CODES`): 0 ok, 10 edited, 11 excised, 12 reordered, 13 duplicated,
14 bad-signature, 15 unknown-key, 16 non-canonical, 17 malformed, 18 truncated,
19 rolled-back, 20 forked, 21 fresh-genesis.
"""

from __future__ import annotations

from nerve.chain.keys import Keyring
from nerve.chain.links import DOMAIN, EXIT_CODES, FORMAT_VERSION, BreakKind, link_id
from nerve.chain.merkle import (
    MerkleAccumulator,
    inclusion_proof,
    leaf_hash,
    merkle_root,
    node_hash,
    verify_inclusion,
)
from nerve.chain.trust import TrustRecord, default_trust_dir, trust_path
from nerve.chain.verify import Anchor, Break, ChainReport, peek_log_id, verify_chain
from nerve.chain.writer import ChainWriter, FileSink, Sink, read_link_file

__all__ = [
    "DOMAIN",
    "EXIT_CODES",
    "FORMAT_VERSION",
    "Anchor",
    "Break",
    "BreakKind",
    "ChainReport",
    "ChainWriter",
    "FileSink",
    "Keyring",
    "MerkleAccumulator",
    "Sink",
    "TrustRecord",
    "default_trust_dir",
    "inclusion_proof",
    "leaf_hash",
    "link_id",
    "merkle_root",
    "node_hash",
    "peek_log_id",
    "read_link_file",
    "trust_path",
    "verify_chain",
    "verify_inclusion",
]

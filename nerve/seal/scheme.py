"""The forward-secure key schedule: per-epoch Ed25519 keys from a one-way state chain,
their public keys committed at set-up by a Merkle root.

    s_0            32 random bytes, made at set-up
    s_{n+1}      = blake3(derive_key "nerve.seal/v1 state", s_n)
    seed_n       = blake3(derive_key "nerve.seal/v1 key", s_n)   (epoch n's Ed25519 seed)
    leaf_n       = epoch n's Ed25519 public key (32 bytes)
    root         = the RFC 6962 Merkle tree hash (blake3, 0x00/0x01 domain bytes, as the
                   surfacing chain's checkpoints) over leaf_0 .. leaf_{H-1}, H = 2^bits

This is the hash-chain-of-keys construction of Bellare and Yee ("Forward-security in
private-key cryptography", CT-RSA 2003) with a Merkle commitment to the public keys
(Merkle, "A certified digital signature", CRYPTO '89), as in the MMM scheme of Malkin,
Micciancio and Miner (EUROCRYPT 2002): whoever holds ``s_n`` can make epoch n's key and
every later one, never an earlier one.
"""

from __future__ import annotations

from collections.abc import Sequence

import blake3
from nacl.bindings import crypto_sign_seed_keypair
from nacl.signing import SigningKey

from nerve.chain.merkle import leaf_hash, node_hash

STATE_CONTEXT = "nerve.seal/v1 state"
KEY_CONTEXT = "nerve.seal/v1 key"
MAX_BITS = 20


def next_state(state: bytes) -> bytes:
    """``s_{n+1}`` from ``s_n`` (one way)."""
    return blake3.blake3(state, derive_key_context=STATE_CONTEXT).digest()


def epoch_key(state: bytes) -> SigningKey:
    """Epoch n's signing key from ``s_n``."""
    return SigningKey(blake3.blake3(state, derive_key_context=KEY_CONTEXT).digest())


def public_keys(state: bytes, count: int) -> list[bytes]:
    """The public keys of epochs 0 .. count-1, from ``s_0`` (set-up only; the same keys
    :func:`epoch_key` makes, one layer down: this runs 65,536 times)."""
    keys = []
    for _ in range(count):
        seed = blake3.blake3(state, derive_key_context=KEY_CONTEXT).digest()
        keys.append(crypto_sign_seed_keypair(seed)[0])
        state = next_state(state)
    return keys


class KeyTree:
    """The Merkle tree over the epoch public keys (a power of two of them), kept whole so a
    seal's inclusion proof is a walk up the levels."""

    def __init__(self, leaves: Sequence[bytes]) -> None:
        size = len(leaves)
        if size < 1 or size & (size - 1):
            raise ValueError(f"the key tree needs a power of two of leaves, not {size}")
        self.leaves = list(leaves)
        level = [leaf_hash(leaf) for leaf in leaves]
        self.levels = [level]
        while len(level) > 1:
            level = [node_hash(level[i], level[i + 1]) for i in range(0, len(level), 2)]
            self.levels.append(level)

    @property
    def root(self) -> bytes:
        return self.levels[-1][0]

    @property
    def size(self) -> int:
        return len(self.leaves)

    def proof(self, index: int) -> list[bytes]:
        """The audit path of leaf ``index``, bottom first (RFC 6962 for a full tree)."""
        return [level[(index >> depth) ^ 1] for depth, level in enumerate(self.levels[:-1])]

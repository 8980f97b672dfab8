"""RFC 6962-shaped Merkle tree over blake3, with 0x00 leaf and 0x01 node domain bytes.

:func:`merkle_root` is the Merkle Tree Hash; :func:`inclusion_proof` and
:func:`verify_inclusion` are the audit path and its check (RFC 9162 §2.1.3);
:class:`MerkleAccumulator` gives the same root incrementally.
"""

from __future__ import annotations

from collections.abc import Sequence

import blake3

from nerve.errors import ChainError


def _h(data: bytes) -> bytes:
    return blake3.blake3(data).digest()


def leaf_hash(data: bytes) -> bytes:
    return _h(b"\x00" + data)


def node_hash(left: bytes, right: bytes) -> bytes:
    return _h(b"\x01" + left + right)


def _split(n: int) -> int:
    """The largest power of two strictly below ``n`` (``n >= 2``)."""
    return 1 << ((n - 1).bit_length() - 1)


def merkle_root(leaves: Sequence[bytes]) -> bytes:
    """RFC 6962 Merkle Tree Hash of ``leaves`` (the empty tree hashes to ``blake3(b"")``)."""
    if not leaves:
        return _h(b"")
    if len(leaves) == 1:
        return leaf_hash(leaves[0])
    k = _split(len(leaves))
    return node_hash(merkle_root(leaves[:k]), merkle_root(leaves[k:]))


def inclusion_proof(leaves: Sequence[bytes], index: int) -> list[bytes]:
    """RFC 6962 audit path for ``leaves[index]``, bottom first."""
    if not 0 <= index < len(leaves):
        raise ChainError(f"leaf {index} is outside a tree of {len(leaves)}")
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if index < k:
        return [*inclusion_proof(leaves[:k], index), merkle_root(leaves[k:])]
    return [*inclusion_proof(leaves[k:], index - k), merkle_root(leaves[:k])]


def verify_inclusion(
    leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> bool:
    """True if ``proof`` shows ``leaf`` at ``index`` in the tree of ``size`` with ``root``."""
    if not 0 <= index < size:
        return False
    fn, sn, r = index, size - 1, leaf_hash(leaf)
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root


class MerkleAccumulator:
    """Appends leaves one at a time and gives the RFC 6962 root in O(log n)."""

    def __init__(self) -> None:
        # Subtree hashes, left to right; their heights are the set bits of the leaf count,
        # so a new leaf merges with as many peaks as the count has trailing one bits.
        self._peaks: list[bytes] = []
        self._size = 0

    def append(self, leaf: bytes) -> None:
        peaks, size = self._peaks, self._size
        top = _h(b"\x00" + leaf)
        while size & 1:
            top = _h(b"\x01" + peaks.pop() + top)
            size >>= 1
        peaks.append(top)
        self._size += 1

    def copy(self) -> MerkleAccumulator:
        other = MerkleAccumulator()
        other._peaks, other._size = list(self._peaks), self._size
        return other

    def root(self) -> bytes:
        if not self._peaks:
            return _h(b"")
        acc = self._peaks[-1]
        for peak in reversed(self._peaks[:-1]):
            acc = node_hash(peak, acc)
        return acc

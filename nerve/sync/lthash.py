"""The shared digest's multiset hash: LtHash16 (Lewi, Kim, Maykov and Weis, "Securing
Update Propagation with Homomorphic Hashing", IACR ePrint 2019/227), the lattice
instance of Bellare and Micciancio's AdHash.

An event id is expanded with blake3's extendable output to 1,024 lanes of 16 bits; a set's
hash is the lane-wise sum, modulo 2^16, of its members' vectors. The sum is the same in any
order and grows by one addition per new event, so a device keeps it up to date without
reading its history again. Finding two different sets with the same sum is the short
integer solution problem over this lattice (about 200 bits of security for these sizes, in
the paper's analysis); a plain 256-bit AdHash sum would be broken by Wagner's generalised
birthday attack, which is why the vector is this wide.
"""

from __future__ import annotations

import blake3
import numpy as np

__all__ = ["LANES", "add_ids", "from_bytes", "to_bytes", "zero"]

LANES = 1024
_WIDTH = 2 * LANES  # bytes of one element's vector
_TAG = b"nerve.sync.lthash16\0"  # keeps these vectors apart from any other use of an id
_CHUNK = 4096  # ids expanded at a time (8 MiB of vectors)


def zero() -> np.ndarray:
    """The hash of the empty set."""
    return np.zeros(LANES, dtype=np.uint16)


def add_ids(total: np.ndarray, ids: bytes) -> np.ndarray:
    """``total`` plus the vector of every 32-byte id in ``ids`` (concatenated)."""
    if len(ids) % 32:
        raise ValueError(f"ids must be 32 bytes each, got {len(ids)} bytes")
    out = total.copy()
    step = 32 * _CHUNK
    for start in range(0, len(ids), step):
        piece = ids[start : start + step]
        vectors = b"".join(
            blake3.blake3(_TAG + piece[at : at + 32]).digest(length=_WIDTH)
            for at in range(0, len(piece), 32)
        )
        lanes = np.frombuffer(vectors, dtype="<u2").reshape(-1, LANES)
        out += lanes.sum(axis=0, dtype=np.uint16)  # both wrap: arithmetic modulo 2^16
    return out


def to_bytes(total: np.ndarray) -> bytes:
    """The sum as 2,048 little-endian bytes (what is stored and hashed for display)."""
    return total.astype("<u2").tobytes()


def from_bytes(data: bytes) -> np.ndarray:
    """A sum read back from :func:`to_bytes`; ``ValueError`` if it is not one."""
    if len(data) != _WIDTH:
        raise ValueError(f"a sum is {_WIDTH} bytes, got {len(data)}")
    return np.frombuffer(data, dtype="<u2").astype(np.uint16)

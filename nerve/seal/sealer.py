"""Setting sealing up, and sealing each epoch as it comes (the daemon's part).

:func:`setup` makes ``s_0``, writes the public keys and the seed, and returns the seed; the
secret state is written once, owner-only. :class:`Sealer` seals every epoch due, oldest
first, each with its own key, then moves the state on and overwrites the old one.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nerve import fsio
from nerve.canonical import canonical_json
from nerve.seal import scheme
from nerve.seal.note import Seal, parse, sign
from nerve.seal.seed import Seed
from nerve.seal.store import SealDir, SealError

DEFAULT_BITS = 16


@dataclass(frozen=True)
class Heads:
    """What a seal commits to: the manifest's records and head, the chain's links and head."""

    records: int
    manifest_head: bytes
    links: int
    chain_head: bytes


Certify = Callable[[bytes], tuple[dict[str, Any], bytes]]  # message -> (identity, signature)


def setup_message(seed: Seed) -> bytes:
    """What the identity key signs to certify a set-up."""
    return f"nerve.seal.setup/v1\n{seed.text()}\n".encode()


def setup(
    folder: Path,
    epoch_s: int,
    *,
    bits: int = DEFAULT_BITS,
    now_ns: int | None = None,
    certify: Certify | None = None,
) -> Seed:
    """A new set-up in ``folder`` (refused if one is there): the seed to keep elsewhere."""
    store = SealDir(fsio.private_dir(folder))
    if store.exists() or store.state_path.exists():
        raise SealError(f"{store.setup_path}: sealing is already set up; a seed is shown once")
    if not 1 <= bits <= scheme.MAX_BITS or epoch_s < 1:
        raise SealError(f"epoch {epoch_s} s or horizon 2^{bits} is out of range")
    state = bytearray(os.urandom(32))
    tree = scheme.KeyTree(scheme.public_keys(bytes(state), 1 << bits))
    start = (time.time_ns() if now_ns is None else now_ns) // 1_000_000_000
    seed = Seed(tree.root, start, epoch_s, bits)
    try:
        fsio.write_private(store.keys_path, b"".join(tree.leaves), site="seal.keys")
        store.write_state(0, state, new=True)
        state[:] = bytes(32)
        body: dict[str, Any] = {"seed": seed.text()}
        if certify is not None:
            identity, sig = certify(setup_message(seed))
            body |= {"identity": identity, "certificate": sig.hex()}
        fsio.write_private(store.setup_path, canonical_json(body) + b"\n", site="seal.setup")
    except BaseException:  # a set-up half written is no set-up: the next try starts clean
        state[:] = bytes(32)
        for path in (store.setup_path, store.state_path, store.keys_path):
            with contextlib.suppress(OSError):
                path.unlink()
        raise
    return seed


class Sealer:
    """Seals epochs with the state in a seal folder; ``heads`` reads what to commit to."""

    def __init__(self, folder: Path, heads: Callable[[], Heads]) -> None:
        self.store = SealDir(folder)
        self.seed = self.store.seed()
        self.tree = scheme.KeyTree(self.store.public_keys())
        if self.tree.root != self.seed.root or self.tree.size != self.seed.horizon:
            raise SealError(f"{self.store.keys_path}: the public keys do not match the seed")
        self._heads = heads
        self.last = max((parse(n)[0].epoch for n in self.store.notes()), default=-1)
        self.sealed = 0  # seals written by this sealer

    def due(self, now_ns: int) -> bool:
        return self.seed.epoch_at(now_ns) > self.last

    def seal_due(self, now_ns: int | None = None) -> list[int]:
        """Seal every epoch from the state's up to now's (a daemon that was down seals the
        epochs it missed, late and each with its own key). Returns the epochs sealed."""
        now = time.time_ns() if now_ns is None else now_ns
        epoch, state = self.store.read_state()
        current = self.seed.epoch_at(now)
        if current >= self.seed.horizon:
            raise SealError(f"epoch {current} is past the set-up's horizon; run seal-setup anew")
        done: list[int] = []
        heads = self._heads() if current >= epoch else None
        while heads is not None and epoch <= current:
            if epoch > self.last:
                self._write(epoch, bytes(state), heads, now)
                done.append(epoch)
            epoch, state = self._advance(epoch, state)
        state[:] = bytes(32)
        return done

    def _write(self, epoch: int, state: bytes, heads: Heads, now: int) -> None:
        key = scheme.epoch_key(state)
        seal = Seal(
            self.seed.origin,
            heads.records,
            heads.manifest_head,
            epoch,
            now,
            heads.links,
            heads.chain_head,
            bytes(key.verify_key),
            tuple(self.tree.proof(epoch)),
        )
        self.store.append(epoch, sign(seal, key))
        self.last = epoch
        self.sealed += 1

    def _advance(self, epoch: int, state: bytearray) -> tuple[int, bytearray]:
        """The next epoch's state, written over this one's (synced); this one wiped."""
        following = bytearray(scheme.next_state(bytes(state)))
        self.store.write_state(epoch + 1, following)
        state[:] = bytes(32)
        return epoch + 1, following


def describe(folder: Path) -> dict[str, Any]:
    """The set-up as stored (seed, identity), for status and ``seal-setup``'s echo."""
    return json.loads(fsio.read_bytes(SealDir(folder).setup_path))  # type: ignore[no-any-return]

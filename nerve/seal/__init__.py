"""Epoch seals: a log that proves its own past (issue 46; the reference is docs/sealing.md).

Every epoch the daemon writes a **seal** (:mod:`nerve.seal.note`, a C2SP signed note) that
commits to the manifest's head, the surfacing chain's head, the epoch and the time, signed
with that epoch's own key (:mod:`nerve.seal.scheme`). The keys evolve one way and the old
secret is overwritten as the epoch moves (:class:`~nerve.seal.sealer.Sealer`), so whoever
takes the machine later cannot re-seal the past. A **verification seed**
(:class:`~nerve.seal.seed.Seed`), printed once by ``nerve audit seal-setup``, lets anyone
check every seal (:func:`~nerve.seal.verify.verify`). The identity key that certifies a
set-up may live in a PKCS#11 token (:mod:`nerve.seal.token`).
"""

from __future__ import annotations

from nerve.seal.note import Seal
from nerve.seal.sealer import Heads, Sealer, setup
from nerve.seal.seed import Seed
from nerve.seal.store import SealDir, SealError
from nerve.seal.verify import SealReport, read_log, verify

__all__ = [
    "Heads",
    "Seal",
    "SealDir",
    "SealError",
    "SealReport",
    "Sealer",
    "Seed",
    "read_log",
    "setup",
    "verify",
]

"""The verification seed: what a verifier keeps off the machine.

Compact text ``nerve-seal1-<root hex>-<start>-<epoch>-<bits>``: the key tree's root (64 hex
digits), the start of epoch 0 (Unix seconds), the epoch length (seconds) and the horizon
(2^bits epochs). Nothing secret: it lets anyone check seals, and no one make them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nerve.errors import UsageError

_SEED = re.compile(r"^nerve-seal1-([0-9a-f]{64})-(\d{1,12})-(\d{1,9})-(\d{1,2})$")


@dataclass(frozen=True)
class Seed:
    root: bytes
    start_s: int  # when epoch 0 began (Unix seconds)
    epoch_s: int  # the epoch length (seconds)
    bits: int  # the horizon is 2^bits epochs

    @property
    def horizon(self) -> int:
        return 1 << self.bits

    @property
    def origin(self) -> str:
        """The seals' origin line and signature name: this set-up's own."""
        return f"nerve.seal/{self.root.hex()[:16]}"

    def text(self) -> str:
        return f"nerve-seal1-{self.root.hex()}-{self.start_s}-{self.epoch_s}-{self.bits}"

    def epoch_at(self, now_ns: int) -> int:
        """The epoch ``now_ns`` falls in (negative before the start)."""
        return (now_ns // 1_000_000_000 - self.start_s) // self.epoch_s

    def starts_ns(self, epoch: int) -> int:
        """When ``epoch`` begins, Unix ns."""
        return (self.start_s + epoch * self.epoch_s) * 1_000_000_000

    @classmethod
    def parse(cls, text: str) -> Seed:
        found = _SEED.match(text.strip())
        if found is None:
            raise UsageError(
                f"--seed {text.strip()[:80]!r} is not a verification seed "
                "(nerve-seal1-<root>-<start>-<epoch>-<bits>, as seal-setup printed it)"
            )
        root, start, epoch, bits = found.groups()
        if int(epoch) < 1 or not 1 <= int(bits) <= 20:
            raise UsageError(f"--seed: epoch {epoch} s or horizon 2^{bits} is out of range")
        return cls(bytes.fromhex(root), int(start), int(epoch), int(bits))

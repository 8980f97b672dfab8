"""The chain writer: seals gate decisions, checkpoints and key rotations as signed links."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nacl.signing import SigningKey

from nerve.canonical import det_cbor
from nerve.chain.keys import Keyring
from nerve.chain.links import (
    DEFAULT_CHECKPOINT_EVERY,
    DOMAIN,
    FORMAT_VERSION,
    ID_SIZE,
    NONCE_SIZE,
    ZERO_ID,
    digest,
    link_id,
)
from nerve.chain.merkle import MerkleAccumulator, inclusion_proof
from nerve.chain.records import SealedDecision, SealedHighlight
from nerve.chain.verify import Break, ChainReport, verify_chain
from nerve.errors import ChainError, EventError

Sink = Callable[[bytes], None]
_FRAME = struct.Struct(">I")


class FileSink:
    """A sink that appends each link to ``path`` as a 4-byte big-endian length + the bytes."""

    def __init__(self, path: Path, *, fsync: bool = True) -> None:
        self.path, self.fsync = Path(path), fsync

    def __call__(self, link: bytes) -> None:
        with self.path.open("ab") as f:
            f.write(_FRAME.pack(len(link)) + link)
            f.flush()
            if self.fsync:
                os.fsync(f.fileno())


def read_link_file(path: Path) -> list[bytes]:
    """The links a :class:`FileSink` wrote; ``ChainError`` on a torn frame."""
    data, out, pos = Path(path).read_bytes(), [], 0
    while pos < len(data):
        end = pos + 4 + (_FRAME.unpack_from(data, pos)[0] if pos + 4 <= len(data) else len(data))
        if end > len(data):
            raise ChainError(f"{path}: torn link frame at byte {pos}")
        out.append(data[pos + 4 : end])
        pos = end
    return out


class ChainWriter:
    """Seals gate decisions as links; build with :meth:`create` or :meth:`resume`.

    Each link is passed to ``sink`` (e.g. the event log) before the writer's state advances,
    so a failing sink leaves the chain unchanged. A checkpoint follows every
    ``checkpoint_every`` other links (0 turns that off) and :meth:`checkpoint` adds one on
    demand (for a timer).
    """

    def __init__(
        self,
        keyring: Keyring,
        log_id: bytes,
        epoch: int,
        *,
        sink: Sink | None = None,
        checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY,
    ) -> None:
        self.keyring, self.log_id, self.epoch = keyring, log_id, epoch
        self.sink, self.checkpoint_every = sink, checkpoint_every
        self._links: list[bytes] = []
        self._ids: list[bytes] = []
        self._acc = MerkleAccumulator()
        self.since_checkpoint = 0

    @classmethod
    def create(
        cls,
        keyring: Keyring,
        *,
        sink: Sink | None = None,
        nonce: bytes | None = None,
        checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY,
    ) -> ChainWriter:
        """Start a new log: a random (or given) nonce and a genesis link."""
        nonce = os.urandom(NONCE_SIZE) if nonce is None else nonce
        key = keyring.public_key()
        writer = cls(
            keyring,
            digest(key + nonce),
            keyring.epoch,
            sink=sink,
            checkpoint_every=checkpoint_every,
        )
        writer._seal("genesis", {"key": key, "nonce": nonce})
        return writer

    @classmethod
    def resume(
        cls,
        links: Sequence[bytes],
        keyring: Keyring,
        *,
        sink: Sink | None = None,
        checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY,
    ) -> ChainWriter:
        """Continue an existing chain after verifying it; finishes an interrupted rotation."""
        report = verify_chain(links)
        if report.first_break is not None or report.log_id is None:
            b = report.first_break or Break(0, "truncated", "no links")
            raise ChainError(f"cannot resume: chain breaks at seq {b.seq} ({b.kind}): {b.message}")
        if keyring.public_key(report.epoch) != report.key:
            raise ChainError(f"keyring's epoch-{report.epoch} key is not the chain's")
        writer = cls(
            keyring, report.log_id, report.epoch, sink=sink, checkpoint_every=checkpoint_every
        )
        writer._load(links, report)
        if keyring.epoch == report.epoch + 1:
            writer.rotate()
        return writer

    def _load(self, links: Iterable[bytes], report: ChainReport) -> None:
        self._links = [bytes(raw) for raw in links]
        self._ids = list(report.ids)
        for lid in self._ids:
            self._acc.append(lid)
        self.since_checkpoint = report.since_checkpoint

    @property
    def links(self) -> tuple[bytes, ...]:
        return tuple(self._links)

    @property
    def size(self) -> int:
        return len(self._ids)

    @property
    def head(self) -> bytes:
        return self._ids[-1]

    def root(self) -> bytes:
        """Merkle root over every link id so far."""
        return self._acc.root()

    def inclusion_proof(self, index: int) -> list[bytes]:
        """Audit path for link ``index`` in the tree over all link ids so far."""
        return inclusion_proof(self._ids, index)

    def append_decision(
        self,
        event_id: bytes,
        trust: int,
        highlight: SealedHighlight,
        decision: SealedDecision,
        t_ns: int,
    ) -> bytes:
        """Seal one gate decision (held or surfaced); return its link bytes.

        A checkpoint may follow it (through the sink) when one is due.
        """
        _check_decision_inputs(event_id, trust, t_ns)
        raw = self._seal(
            "decision",
            {
                "event": event_id,
                "trust": int(trust),
                "probe": highlight.probe,
                "value": decision.value_milli,
                "cost": decision.cost_milli,
                "decision": decision.outcome,
                "charged_uj": decision.charged_uj,
                "budget_uj": decision.budget_after_uj,
                "hl": highlight.to_cbor_map(),
                "t": t_ns,
                "energy": decision.energy.to_cbor_map(),
            },
        )
        self._counted()
        return raw

    def checkpoint(self, *, force: bool = False) -> bytes | None:
        """Seal a checkpoint; ``None`` if nothing was added since the last (unless forced)."""
        if not force and self.since_checkpoint == 0:
            return None
        fields = {"size": self.size + 1, "head": self.head, "root": self.root()}
        raw = self._seal("checkpoint", fields)
        self.since_checkpoint = 0
        return raw

    def rotate(self) -> bytes:
        """Move to a new key: a rotate link signed by old and new key, then retire the old."""
        new_epoch = self.keyring.epoch if self.keyring.epoch > self.epoch else self.keyring.rotate()
        if new_epoch != self.epoch + 1:
            raise ChainError(f"keyring is at epoch {new_epoch}; the chain at {self.epoch}")
        new_key = self.keyring.signing_key(new_epoch)
        pub = bytes(new_key.verify_key.encode())
        raw = self._seal("rotate", {"new_key": pub, "new_epoch": new_epoch}, cosigner=new_key)
        old, self.epoch = self.epoch, new_epoch
        self.keyring.retire(old)
        self._counted()
        return raw

    def _counted(self) -> None:
        self.since_checkpoint += 1
        if self.checkpoint_every and self.since_checkpoint >= self.checkpoint_every:
            self.checkpoint()

    def _seal(
        self, kind: str, fields: Mapping[str, Any], cosigner: SigningKey | None = None
    ) -> bytes:
        """Build, sign and hand one link to the sink; only then advance the state."""
        prev = self._ids[-1] if self._ids else ZERO_ID
        common = {"v": FORMAT_VERSION, "log": self.log_id, "epoch": self.epoch}
        core = det_cbor({**common, "seq": self.size, "prev": prev, "kind": kind, **fields})
        envelope = {"core": core, "sig": _sign(self.keyring.signing_key(self.epoch), core)}
        if cosigner is not None:
            envelope["sig2"] = _sign(cosigner, core)
        raw = det_cbor(envelope)
        if self.sink is not None:
            self.sink(raw)
        self._links.append(raw)
        self._ids.append(link_id(core))
        self._acc.append(self._ids[-1])
        return raw


def _sign(key: SigningKey, core: bytes) -> bytes:
    return bytes(key.sign(DOMAIN + core).signature)


def _check_decision_inputs(event_id: bytes, trust: int, t_ns: int) -> None:
    if not isinstance(event_id, bytes) or len(event_id) != ID_SIZE:
        raise EventError(f"event id must be {ID_SIZE} bytes, got {event_id!r}")
    if isinstance(trust, bool) or trust not in (0, 1, 2, 3):
        raise EventError(f"trust {trust!r} is not 0..3")
    if isinstance(t_ns, bool) or not isinstance(t_ns, int) or t_ns < 0:
        raise EventError(f"t_ns {t_ns!r} must be a non-negative integer")

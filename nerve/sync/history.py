"""The shared history: which of this device's events leave it, the peers' logs, and the
shared digest every device computes the same way.

**Shared events.** An event of this device (its ``node`` is this workspace's node) is shared
unless ``sync.keep_local`` names its source, kind or sense (its subject), or the privacy
screen would change it. Each peer's shared events are kept in a log of their own under
``data/sync/peers/<token>/`` (an ordinary nerve log, written only by the sync engine, always
in the peer's HLC order), so nothing ever has to be inserted into the middle of a log.

**Shared digest.** blake3 over the 32-byte ids of every shared event of every device this
device holds (its own shared events and its peer logs), ordered as the log orders: by HLC
(physical, logical), then node, then id. Two devices hold the same shared history exactly
when their shared digests (and counts) are equal.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import blake3
import pyarrow as pa
import pyarrow.compute as pc

from nerve.clock import HLC_ZERO, Hlc
from nerve.events import ErasedEvent, Event, parse_source

if TYPE_CHECKING:
    from nerve.privacy.policy import Policy
    from nerve.sync.settings import KeepLocal

__all__ = [
    "OwnKeys",
    "SharedDigest",
    "Sharing",
    "digest_of",
    "own_shared",
    "peer_roots",
    "shared_digest",
]

_KEYS = ["physical_ns", "logical", "node", "id"]


class Sharing:
    """The one predicate for what leaves this device (see the module docstring)."""

    def __init__(self, keep: KeepLocal, policy: Policy) -> None:
        self._sources = {parse_source(s) for s in keep.sources}
        self._kinds, self._senses = set(keep.kinds), set(keep.senses)
        self._policy = policy

    def kept(self, source: int, kind: str, subject: str) -> bool:
        """True when ``keep_local`` names this source, kind or sense."""
        return source in self._sources or kind in self._kinds or subject in self._senses

    def shares(self, event: Event | ErasedEvent) -> bool:
        """True when ``event`` may leave the device."""
        if self.kept(event.source, event.kind, event.subject):
            return False
        if event.kind == "payload.erased" or isinstance(event, ErasedEvent):
            return False  # erasures do not travel yet: the whole event or nothing
        plan = self._policy.plan(event.source, event.kind, event.subject)
        return not plan.verdict(event.line, event.payload, event.subject).changed


def own_shared(root: Path, node: str, sharing: Sharing, since: Hlc = HLC_ZERO) -> list[Event]:
    """This device's shared events after ``since``, in log order."""
    from nerve.log.codec import stored_events
    from nerve.log.reader import snapshot, table_since

    table = table_since(snapshot(root), since)
    table = table.filter(pc.equal(table.column("node"), node))
    return [e for e in stored_events(table) if isinstance(e, Event) and sharing.shares(e)]


def peer_roots(folder: Path) -> Iterator[tuple[str, Path]]:
    """(token, log root) of every peer log under ``data/sync/peers``."""
    base = folder / "peers"
    if base.is_dir():
        for entry in sorted(base.iterdir()):
            if (entry / "log").is_dir():
                yield entry.name, entry / "log"


@dataclass(frozen=True)
class SharedDigest:
    """The shared digest, how many events it covers, and per node how many and the newest."""

    digest: str
    events: int
    nodes: dict[str, tuple[int, Hlc]]

    def to_json(self) -> dict[str, Any]:
        nodes = {n: [c, list(h)] for n, (c, h) in sorted(self.nodes.items())}
        return {"digest": self.digest, "events": self.events, "nodes": nodes}


def shared_digest(root: Path, node: str, sharing: Sharing, peers: Path) -> SharedDigest:
    """The shared digest over this device's shared events and every peer log."""
    return digest_of(_key_table(own_shared(root, node, sharing)), peers)


def digest_of(own: pa.Table, peers: Path) -> SharedDigest:
    """The shared digest over ``own`` (the sort keys of this device's shared events) and
    every peer log under ``peers``."""
    parts = [own, *(_peer_keys(peer_root) for _, peer_root in peer_roots(peers))]
    table = pa.concat_tables(parts).sort_by([(k, "ascending") for k in _KEYS])
    ids = b"".join(table.column("id").to_pylist())  # one update: the same hash, far faster
    return SharedDigest(blake3.blake3(ids).hexdigest(), table.num_rows, _per_node(table))


class OwnKeys:
    """The sort keys of this device's shared events, kept across rounds (the daemon computes
    the shared digest every round): each read decodes only the events past the newest it
    saw, as a log grows only at its end; it starts over when rows went (the count is not
    what it was plus the new rows: segments archived) or a new event is an erasure."""

    def __init__(self, root: Path, node: str, sharing: Sharing) -> None:
        self.root, self.node, self.sharing = root, node, sharing
        self._keys, self._upto, self._count = _key_table([]), HLC_ZERO, 0

    def read(self) -> pa.Table:
        """The keys of every shared event of this device now."""
        from nerve.log.reader import snapshot, table_since

        snap = snapshot(self.root)
        new = table_since(snap, self._upto)
        if self._count + new.num_rows != snap.count or _has_erasure(new):
            self._keys, self._upto, self._count = _key_table([]), HLC_ZERO, 0
            new = table_since(snap, HLC_ZERO)
        if new.num_rows:
            self._keys = pa.concat_tables([self._keys, _key_table(self._shared(new))])
            self._upto, self._count = snap.newest, snap.count
        return self._keys

    def _shared(self, table: pa.Table) -> list[Event]:
        from nerve.log.codec import stored_events

        mine = table.filter(pc.equal(table.column("node"), self.node))
        return [e for e in stored_events(mine) if isinstance(e, Event) and self.sharing.shares(e)]


def _has_erasure(table: pa.Table) -> bool:
    return bool(table.num_rows) and bool(
        pc.any(pc.equal(table.column("kind"), "payload.erased")).as_py()
    )


def _key_table(events: list[Event]) -> pa.Table:
    return pa.table(
        {
            "physical_ns": pa.array([e.hlc.physical_ns for e in events], pa.int64()),
            "logical": pa.array([e.hlc.logical for e in events], pa.int64()),
            "node": pa.array([e.node for e in events], pa.string()),
            "id": pa.array([e.id for e in events], pa.binary()),
        }
    )


def _peer_keys(root: Path) -> pa.Table:
    """The sort keys of a peer log's events (all of them are the peer's)."""
    from nerve.log.reader import snapshot, table_since

    table = table_since(snapshot(root), HLC_ZERO, _KEYS)
    return pa.table(
        {
            "physical_ns": table.column("physical_ns").cast(pa.int64()),
            "logical": table.column("logical").cast(pa.int64()),
            "node": table.column("node").cast(pa.string()),
            "id": table.column("id").cast(pa.binary()),
        }
    )


def _per_node(table: pa.Table) -> dict[str, tuple[int, Hlc]]:
    out: dict[str, tuple[int, Hlc]] = {}
    nodes = table.column("node").to_pylist()
    phys, logi = table.column("physical_ns").to_pylist(), table.column("logical").to_pylist()
    for n, p, lg in zip(nodes, phys, logi, strict=True):
        count = out[n][0] + 1 if n in out else 1
        out[n] = (count, Hlc(p, lg))
    return out

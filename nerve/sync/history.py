"""The shared history: which of this device's events leave it, the peers' logs, and the
shared digest every device computes the same way.

**Shared events.** An event of this device (its ``node`` is this workspace's node) is shared
unless ``sync.keep_local`` names its source, kind or sense (its subject), or the privacy
screen would change it. Each peer's shared events are kept in a log of their own under
``data/sync/peers/<token>/`` (an ordinary nerve log, written only by the sync engine, always
in the peer's HLC order), so nothing ever has to be inserted into the middle of a log.

**Shared digest** (version 2, shown as ``v2-<hex>``): the LtHash16 multiset hash
(:mod:`nerve.sync.lthash`) of the 32-byte ids of every shared event this device holds (its
own shared events and its peer logs), then blake3 of the 2,048-byte sum. It does not depend
on order, so a device keeps one running sum per log (:class:`SharedTally`, stored in
``data/sync/digest.json``) and adds only the events that arrived since the last round. Two
devices hold the same shared history exactly when their shared digests (and counts) are equal.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import blake3
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from nerve import fsio
from nerve.clock import HLC_ZERO, Hlc
from nerve.events import parse_source
from nerve.log.codec import fixed_bytes
from nerve.log.paths import LogPaths
from nerve.sync import lthash

if TYPE_CHECKING:
    from nerve.log.reader import Snapshot
    from nerve.privacy.policy import Policy
    from nerve.sync.settings import KeepLocal

__all__ = [
    "DIGEST_VERSION",
    "SharedDigest",
    "SharedTally",
    "Sharing",
    "files_seen",
    "own_shared",
    "peer_roots",
    "shared_digest",
    "shared_rows",
]

DIGEST_VERSION = 2
SAVE_EVERY_NS = 30 * 10**9  # tallies that only moved on are stored at most this often
ERASED_KIND = "payload.erased"
SHARE_CHUNK = 65_536
PEER_COLUMNS = ["id", "node", "physical_ns", "logical", "kind"]  # what a tally reads of a log
OWN_COLUMNS = [*PEER_COLUMNS, "source", "subject", "line", "payload"]  # and what screening does


class Sharing:
    """The one predicate for what leaves this device (see the module docstring)."""

    def __init__(self, keep: KeepLocal, policy: Policy) -> None:
        self._sources = {parse_source(s) for s in keep.sources}
        self._kinds, self._senses = set(keep.kinds), set(keep.senses)
        self._policy = policy
        settings = keep.model_dump_json() + policy.config.model_dump_json()
        # what the kept own tally depends on: a changed setting starts it over
        self.signature = blake3.blake3(settings.encode()).hexdigest()[:32]

    def kept(self, source: int, kind: str, subject: str) -> bool:
        """True when ``keep_local`` names this source, kind or sense."""
        return source in self._sources or kind in self._kinds or subject in self._senses

    def shares(
        self, source: int, kind: str, subject: str, line: str | None, payload: bytes | None
    ) -> bool:
        """True when an event with these fields may leave the device (an erased one, with
        no line or payload, never does)."""
        if line is None or payload is None or self.kept(source, kind, subject):
            return False
        if kind == ERASED_KIND:
            return False  # erasures do not travel yet: the whole event or nothing
        plan = self._policy.plan(source, kind, subject)
        return not plan.verdict(line, payload, subject).changed


def shared_rows(table: pa.Table, node: str, sharing: Sharing) -> pa.Table:
    """The rows of ``table`` that are ``node``'s shared events (one predicate call a row)."""
    mine = table.filter(pc.equal(table.column("node"), node))
    keep: list[bool] = []
    for start in range(0, mine.num_rows, SHARE_CHUNK):  # Python objects for a chunk at a time
        part = mine.slice(start, SHARE_CHUNK)
        cols = [
            part.column(n).to_pylist() for n in ("source", "kind", "subject", "line", "payload")
        ]
        keep += [sharing.shares(*row) for row in zip(*cols, strict=True)]
    return mine.filter(pa.array(keep, pa.bool_()))


def own_shared(snap: Snapshot, node: str, sharing: Sharing, since: Hlc = HLC_ZERO) -> pa.Table:
    """This device's shared events in ``snap`` after ``since``, in log order, as stored rows."""
    from nerve.log.reader import table_since

    return shared_rows(table_since(snap, since), node, sharing)


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


def shown_digest(total: np.ndarray) -> str:
    """The digest as status shows it: its version, then blake3 of the LtHash sum."""
    return f"v{DIGEST_VERSION}-{blake3.blake3(lthash.to_bytes(total)).hexdigest()}"


def shared_digest(root: Path, node: str, sharing: Sharing, peers: Path) -> SharedDigest:
    """The shared digest computed afresh from every log (what :class:`SharedTally` keeps)."""
    from nerve.log.reader import snapshot, table_since

    tallies = [Tally.of(own_shared(snapshot(root), node, sharing))]
    tallies += [Tally.of(table_since(snapshot(r), HLC_ZERO)) for _, r in peer_roots(peers)]
    return combine(tallies)


def combine(tallies: list[Tally]) -> SharedDigest:
    """One shared digest over the logs' tallies."""
    total = lthash.zero()
    nodes: dict[str, tuple[int, Hlc]] = {}
    for tally in tallies:
        total += tally.total
        if tally.events:
            count, newest = nodes.get(tally.node, (0, HLC_ZERO))
            nodes[tally.node] = (count + tally.events, max(newest, tally.newest))
    return SharedDigest(shown_digest(total), sum(t.events for t in tallies), nodes)


@dataclass
class Tally:
    """The running sum of one log's shared events and what it was taken over: ``rows`` and
    ``upto`` (the log's whole count and newest stamp when last read), ``events``, ``node``
    and ``newest`` (the shared events counted, whose node, the newest of them)."""

    rows: int = 0
    upto: Hlc = HLC_ZERO
    events: int = 0
    node: str = ""
    newest: Hlc = HLC_ZERO
    total: np.ndarray = field(default_factory=lthash.zero)

    @classmethod
    def of(cls, shared: pa.Table) -> Tally:
        """The tally of a table of shared events (``rows`` and ``upto`` left for the caller)."""
        tally = cls()
        tally.add(shared)
        return tally

    def add(self, shared: pa.Table) -> None:
        """Count the shared events in ``shared`` (rows after every one counted so far)."""
        if not shared.num_rows:
            return
        self.total = lthash.add_ids(self.total, fixed_bytes(shared.column("id")))
        self.events += shared.num_rows
        last = shared.slice(shared.num_rows - 1)
        self.node = str(last.column("node")[0].as_py())
        self.newest = Hlc(last.column("physical_ns")[0].as_py(), last.column("logical")[0].as_py())

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "upto": list(self.upto),
            "events": self.events,
            "node": self.node,
            "newest": list(self.newest),
            "sum": lthash.to_bytes(self.total).hex(),
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Tally:
        """A stored tally; ``KeyError``/``TypeError``/``ValueError`` if it is not one."""
        return cls(
            int(body["rows"]),
            Hlc(*body["upto"]),
            int(body["events"]),
            str(body["node"]),
            Hlc(*body["newest"]),
            lthash.from_bytes(bytes.fromhex(body["sum"])),
        )


class SharedTally:
    """The shared digest kept up to date across rounds: one :class:`Tally` per log (this
    device's, named by its sharing settings, and each peer log), stored in
    ``data/sync/digest.json`` (at once after a start-over, else at most every
    ``SAVE_EVERY_NS``: an older stored tally only moves on further at the next start). A
    round reads a log only when its files changed (a cheap ``stat``), and then only its rows
    past the tally's ``upto``, as a log grows only at its end. A tally starts over from the
    whole log when it is missing or unreadable, when the count is not what it was plus the
    new rows (segments archived), or when a new row is an erasure (the erased event leaves
    the shared history)."""

    def __init__(self, folder: Path, root: Path, node: str, sharing: Sharing) -> None:
        self.folder, self.root, self.node, self.sharing = folder, root, node, sharing
        self._own = f"own-{sharing.signature}"
        self._tallies = self._load()
        self._seen: dict[str, tuple[Any, ...]] = {}
        self._snaps: dict[Path, tuple[tuple[Any, ...], Snapshot]] = {}
        self._saved_ns, self._dirty = 0, False
        self._read: tuple[Snapshot, Hlc, pa.Table] | None = None  # the last rows_since
        self._screened: tuple[pa.Table, pa.Table] | None = None  # the last screen

    @property
    def path(self) -> Path:
        return self.folder / "digest.json"

    def read(self) -> SharedDigest:
        """The shared digest now."""
        logs = {self._own: self.root, **dict(peer_roots(self.folder))}
        for name in set(self._tallies) - set(logs):
            del self._tallies[name]
        started_over = False
        for name, root in logs.items():
            moved = self._update(name, root)
            self._dirty = self._dirty or bool(moved)
            started_over = started_over or moved == "over"
        if self._dirty and (started_over or time.monotonic_ns() - self._saved_ns > SAVE_EVERY_NS):
            self._save()
        return combine(list(self._tallies.values()))

    def snapshot(self, root: Path) -> Snapshot:
        """A snapshot of the log at ``root``: the one taken last while its files are as they
        were (the round's send and its digest read this device's log once)."""
        return self._snapshot(root, files_seen(root))

    def rows_since(self, snap: Snapshot, since: Hlc) -> pa.Table:
        """The rows of ``snap`` after ``since``, in the columns a batch carries (no payload
        address: not recomputed for a whole segment): read once when the round's send and
        its digest ask for the same (the digest's tally was taken where the last send ended)."""
        from nerve.log.checked import WIRE_COLUMNS
        from nerve.log.reader import table_since

        if self._read is None or self._read[0] is not snap or self._read[1] != since:
            self._read = (snap, since, table_since(snap, since, WIRE_COLUMNS))
        return self._read[2]

    def screen(self, rows: pa.Table) -> pa.Table:
        """This device's shared events among ``rows`` (screened once for send and digest)."""
        if self._screened is None or self._screened[0] is not rows:
            self._screened = (rows, shared_rows(rows, self.node, self.sharing))
        return self._screened[1]

    def drop_reads(self) -> None:
        """Let go of the rows kept for :meth:`rows_since` and :meth:`screen` (a round's)."""
        self._read = self._screened = None

    def _snapshot(self, root: Path, seen: tuple[Any, ...]) -> Snapshot:
        from nerve.log.reader import snapshot

        kept = self._snaps.get(root)
        if kept is None or kept[0] != seen:  # read again only past the tail it read then
            kept = self._snaps[root] = (seen, snapshot(root, kept[1] if kept else None))
        return kept[1]

    def _update(self, name: str, root: Path) -> str:
        """Bring one log's tally up to date: ``""`` when it did not move, ``"on"`` when it
        took new rows, ``"over"`` when it started over from the whole log."""
        seen = files_seen(root)
        if self._seen.get(name) == seen and name in self._tallies:
            return ""
        snap = self._snapshot(root, seen)
        self._seen[name] = seen
        tally = self._tallies.get(name)
        if tally is not None and (tally.rows, tally.upto) == (snap.count, snap.newest):
            return ""
        return self._advance(name, tally, snap)

    def _advance(self, name: str, tally: Tally | None, snap: Snapshot) -> str:
        from nerve.log.reader import table_since

        own = name == self._own
        new = None
        if tally is not None:
            new = self.rows_since(snap, tally.upto) if own else table_since(snap, tally.upto)
        how = "on"
        if tally is None or new is None or not _continues(tally, new, snap):
            columns = OWN_COLUMNS if own else PEER_COLUMNS
            tally, new, how = Tally(), table_since(snap, HLC_ZERO, columns), "over"
        tally.add(self.screen(new) if own else new)
        tally.rows, tally.upto = snap.count, snap.newest
        self._tallies[name] = tally
        return how

    def _load(self) -> dict[str, Tally]:
        try:
            body = json.loads(fsio.read_bytes(self.path))
            if body.get("v") != DIGEST_VERSION:
                return {}
            return {str(k): Tally.from_json(v) for k, v in body["logs"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}  # missing or torn: every log is read again

    def _save(self) -> None:
        logs = {k: t.to_json() for k, t in sorted(self._tallies.items())}
        text = json.dumps({"v": DIGEST_VERSION, "logs": logs}, sort_keys=True).encode()
        fsio.private_dir(self.folder)
        fsio.replace_unsynced(self.path, text, site="sync.digest")
        self._dirty, self._saved_ns = False, time.monotonic_ns()


def files_seen(root: Path) -> tuple[Any, ...]:
    """What a log's manifest and WAL files look like to ``stat`` (inode, size, mtime): every
    append, seal, compaction, erasure and archive changes it."""
    paths = LogPaths(root)
    out: list[Any] = []
    with contextlib.suppress(FileNotFoundError):
        out.append(_stat(paths.manifest))
    with contextlib.suppress(FileNotFoundError):
        out += [_stat(Path(e.path)) for e in os.scandir(paths.wal)]
    return tuple(sorted(out))


def _stat(path: Path) -> tuple[str, int, int, int]:
    st = os.stat(path, follow_symlinks=False)
    return (path.name, st.st_ino, st.st_size, st.st_mtime_ns)


def _continues(tally: Tally, new: pa.Table, snap: Snapshot) -> bool:
    """True when ``new`` (the rows past ``tally.upto``) is all that changed since the tally:
    no rows went (the count adds up) and none of the new ones is an erasure."""
    return tally.rows + new.num_rows == snap.count and not _has_erasure(new)


def _has_erasure(table: pa.Table) -> bool:
    return bool(table.num_rows) and bool(
        pc.any(pc.equal(table.column("kind"), ERASED_KIND)).as_py()
    )

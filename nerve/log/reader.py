"""Reading the log without the writer's lock: a consistent snapshot of segments + tail."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import blake3
import pyarrow as pa

from nerve.clock import HLC_ZERO, Hlc
from nerve.errors import LogDamageWarning, LogError
from nerve.events import Event
from nerve.log import segments as seg
from nerve.log.codec import EMPTY, events_from_table
from nerve.log.manifest import SegmentInfo, read_manifest
from nerve.log.paths import LogPaths
from nerve.log.wal import WalScan, scan

SNAPSHOT_TRIES = 20


@dataclass(frozen=True)
class Snapshot:
    """Live segments (HLC order) and the unsealed tail, as of one manifest head."""

    paths: LogPaths
    segments: list[SegmentInfo]
    tail: pa.Table
    head: str

    @property
    def files(self) -> list[Path]:
        return [self.paths.segment(s.name) for s in self.segments]

    @property
    def count(self) -> int:
        return sum(s.rows for s in self.segments) + int(self.tail.num_rows)

    @property
    def newest(self) -> Hlc:
        if self.tail.num_rows:
            col_p, col_l = self.tail.column("physical_ns"), self.tail.column("logical")
            return Hlc(col_p[-1].as_py(), col_l[-1].as_py())
        return self.segments[-1].max_hlc if self.segments else HLC_ZERO


def snapshot(root: Path) -> Snapshot:
    """Read manifest, then tail, then check the manifest did not move; retry if it did.

    Damaged WAL bytes (not a torn append in progress) hide the events after them: that is
    issued as a :class:`~nerve.errors.LogDamageWarning` naming the file, never silently.
    """
    paths = LogPaths(Path(root))
    for _ in range(SNAPSHOT_TRIES):
        state = read_manifest(paths.manifest)
        try:
            scans = [scan(p, strict=False) for g, p in paths.wal_files() if g > state.sealed_gen]
        except FileNotFoundError:
            continue  # a seal finished between listing and reading
        if read_manifest(paths.manifest).head == state.head:
            _warn_damage(paths, scans)
            tables = [t for s in scans for t in s.tables]
            tail = pa.concat_tables(tables) if tables else EMPTY
            return Snapshot(paths, state.segments(), tail, state.head)
    raise LogError(f"{paths.root}: the log kept changing while reading it; try again")


def _warn_damage(paths: LogPaths, scans: list[WalScan]) -> None:
    for index, found in enumerate(scans):
        if found.damaged or (found.torn and index < len(scans) - 1):
            warnings.warn(
                f"{found.path}: damaged bytes at byte {found.good_end}; events stored after "
                "them are not shown (`nerve replay --verify` reports the damage)",
                LogDamageWarning,
                stacklevel=3,
            )


def table_since(
    snap: Snapshot, since: Hlc = HLC_ZERO, columns: list[str] | None = None
) -> pa.Table:
    """All events strictly after ``since`` in HLC order, as one table."""
    parts: list[pa.Table] = []
    for info, path in zip(snap.segments, snap.files, strict=True):
        if info.max_hlc <= since:
            continue
        table = seg.read_since(path, since) if since > HLC_ZERO else seg.read_segment(path)
        parts.append(table)
    parts.append(seg.after(snap.tail, since))
    table = pa.concat_tables(parts) if parts else EMPTY
    return table.select(columns) if columns else table


def events_since(root: Path, since: Hlc = HLC_ZERO) -> Iterator[Event]:
    """Sense v0.1's ``events_since``: events strictly after ``since``, in HLC order."""
    snap = snapshot(root)
    for info, path in zip(snap.segments, snap.files, strict=True):
        if info.max_hlc > since:
            yield from events_from_table(seg.read_since(path, since))
    yield from events_from_table(seg.after(snap.tail, since))


def _id_views(col: pa.ChunkedArray | pa.Array) -> Iterator[memoryview]:
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    for chunk in chunks:
        if len(chunk):
            buf = chunk.buffers()[1]
            yield memoryview(buf)[chunk.offset * 32 : (chunk.offset + len(chunk)) * 32]


@dataclass(frozen=True)
class Digest:
    events: int
    digest: str


def replay_digest(root: Path) -> Digest:
    """blake3 over every event id (32 raw bytes each) in HLC order; reads only the ids."""
    snap = snapshot(root)
    hasher = blake3.blake3(max_threads=blake3.blake3.AUTO)
    for path in snap.files:
        for view in _id_views(seg.read_segment(path, ["id"]).column("id")):
            hasher.update(view)
    for view in _id_views(snap.tail.column("id")):
        hasher.update(view)
    return Digest(snap.count, hasher.hexdigest())

"""Reading the log without the writer's lock: a consistent snapshot of segments + tail."""

from __future__ import annotations

import os
import struct
import warnings
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import blake3
import numpy as np
import pyarrow as pa

from nerve import fsio
from nerve.clock import HLC_ZERO, Hlc
from nerve.errors import LogDamageWarning, LogError
from nerve.events import ErasedEvent, Event
from nerve.log import archive, crypt
from nerve.log import segments as seg
from nerve.log.codec import EMPTY, fixed_bytes, stored_events
from nerve.log.erasure import ERASED_KIND
from nerve.log.lazy import pc
from nerve.log.manifest import ManifestState, SegmentInfo, read_manifest
from nerve.log.paths import LogPaths
from nerve.log.wal import MAX_FRAME, WalScan, decode_frame, frame_magics, read_header, scan

SNAPSHOT_TRIES = 20


@dataclass(frozen=True)
class TailFile:
    """One WAL file as a snapshot read it: its inode, the blake3 of its bytes up to the end
    of its good frames, and its scan."""

    inode: int
    prefix: bytes
    scan: WalScan


@dataclass(frozen=True)
class Snapshot:
    """Live segments (HLC order) and the unsealed tail, as of one manifest head."""

    paths: LogPaths
    segments: list[SegmentInfo]
    tail: pa.Table
    head: str
    wal: tuple[TailFile, ...] = ()  # each tail file as read (for a later snapshot)

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


def snapshot(root: Path, previous: Snapshot | None = None) -> Snapshot:
    """Read manifest, then tail, then check the manifest did not move; retry if it did.

    With ``previous`` (an earlier snapshot of the same log), a WAL file it read is read
    again only past the frames it held then, while the manifest's head is the same and the
    file is the same file, no shorter than what was read (a WAL only grows at its end, and
    a recovery only cuts a torn frame past the good ones): a log that took a few events
    costs a few frames, not its whole tail.

    Damaged WAL bytes (not a torn append in progress) hide the events after them: that is
    issued as a :class:`~nerve.errors.LogDamageWarning` naming the file, never silently.
    """
    paths = LogPaths(Path(root))
    crypt.cipher_for(paths.root)  # an encrypted log: unlocked here, or a clear refusal
    for _ in range(SNAPSHOT_TRIES):
        state = read_manifest(paths.manifest)
        known = {f.scan.path: f for f in previous.wal} if previous else {}
        known = known if previous and previous.head == state.head else {}
        try:
            files = [p for g, p in paths.wal_files() if g > state.sealed_gen]
            read = tuple(_read_tail_file(p, known.get(p)) for p in files)
        except FileNotFoundError:
            continue  # a seal finished between listing and reading
        if read_manifest(paths.manifest).head == state.head:
            scans = [f.scan for f in read]
            _warn_damage(paths, scans)
            tables = [t for s in scans for t in s.tables]
            tail = pa.concat_tables(tables) if tables else EMPTY
            segments = _present(paths, state.segments())
            return Snapshot(paths, segments, tail, state.head, read)
    raise LogError(f"{paths.root}: the log kept changing while reading it; try again")


def _read_tail_file(path: Path, before: TailFile | None) -> TailFile:
    """One WAL file: only past ``before``'s good frames when it is the same file with the
    same bytes up to their end, else whole."""
    data = fsio.read_bytes(path)
    inode = os.stat(path, follow_symlinks=False).st_ino
    if before is not None and _same_start(before, inode, data):
        old = before.scan
        new = scan(path, strict=False, start=old.good_end)
        both = replace(new, tables=old.tables + new.tables, frames=old.frames + new.frames)
        return TailFile(inode, _prefix(path, both.good_end, data), both)
    found = scan(path, strict=False)
    return TailFile(inode, _prefix(path, found.good_end, data), found)


def _same_start(before: TailFile, inode: int, data: bytes) -> bool:
    """True when ``data`` (a file with ``inode``) begins with the good frames ``before`` read."""
    end = before.scan.good_end
    return before.inode == inode and len(data) >= end and _prefix_of(data, end) == before.prefix


def _prefix(path: Path, end: int, data: bytes) -> bytes:
    """blake3 of the file's first ``end`` bytes (read again if it grew past ``data``)."""
    if len(data) < end:
        data = fsio.read_bytes(path)
    return _prefix_of(data, end)


def _prefix_of(data: bytes, end: int) -> bytes:
    return blake3.blake3(memoryview(data)[:end]).digest()


def _present(paths: LogPaths, segments: list[SegmentInfo]) -> list[SegmentInfo]:
    """The live segments whose file is there; a gone one (deleted, or not a regular file)
    is left out with a :class:`~nerve.errors.LogDamageWarning`, so readers show the rest."""
    out = []
    for info in segments:
        if fsio.is_regular(paths.segment(info.name)):
            out.append(info)
            continue
        warnings.warn(
            f"{paths.segment(info.name)}: live segment is missing or not a regular file; its "
            f"{info.rows} events (HLC {info.min_hlc} to {info.max_hlc}) are not shown "
            "(`nerve repair` rebuilds it from the files it replaced, or records the loss)",
            LogDamageWarning,
            stacklevel=4,
        )
    return out


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
    """All events strictly after ``since`` in HLC order, as one table (only ``columns``: a
    whole segment is then read for those alone, so a payload address not asked for is not
    recomputed)."""
    parts: list[pa.Table] = []
    for info, path in zip(snap.segments, snap.files, strict=True):
        if info.max_hlc <= since:
            continue
        table = seg.read_since(path, since) if since > HLC_ZERO else seg.read_segment(path, columns)
        parts.append(table.select(columns) if columns else table)
    tail = seg.after(snap.tail, since)
    parts.append(tail.select(columns) if columns else tail)
    table = seg.concat(parts) if parts else EMPTY
    return table.select(columns) if columns else table


def events_since(root: Path, since: Hlc = HLC_ZERO) -> Iterator[Event | ErasedEvent]:
    """Sense v0.1's ``events_since``: events strictly after ``since``, in HLC order (an
    erased one as an :class:`~nerve.events.ErasedEvent`)."""
    snap = snapshot(root)
    for info, path in zip(snap.segments, snap.files, strict=True):
        if info.max_hlc > since:
            with seg.reading(path):
                events = stored_events(seg.read_since(path, since))
            yield from events
    yield from stored_events(seg.after(snap.tail, since))


def _id_views(col: pa.ChunkedArray | pa.Array) -> Iterator[memoryview]:
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    for chunk in chunks:
        if len(chunk):
            buf = chunk.buffers()[1]
            yield memoryview(buf)[chunk.offset * 32 : (chunk.offset + len(chunk)) * 32]


@dataclass(frozen=True)
class Checkpoint:
    """The digest over the events before a ``payload.erased`` event: what the digest was
    when the forget began (the erasure itself is one more event)."""

    erasure: str  # the payload.erased event's id (hex)
    events: int
    digest: str

    def to_json(self) -> dict[str, Any]:
        return {"erasure": self.erasure, "events": self.events, "digest": self.digest}


class IdHasher:
    """The replay digest, fed table by table; notes a :class:`Checkpoint` before the first
    of each run of ``payload.erased`` events when given the kind column."""

    def __init__(self) -> None:
        self._hasher = blake3.blake3(max_threads=blake3.blake3.AUTO)
        self.events = 0
        self.checkpoints: list[Checkpoint] = []
        self._last_kind = ""

    def feed(self, ids: pa.ChunkedArray | pa.Array, kinds: Any = None) -> None:
        marks = [] if kinds is None else _erasure_starts(kinds, self._last_kind)
        start = 0
        raw = None
        for row in marks:
            raw = raw if raw is not None else fixed_bytes(ids)
            self._hasher.update(raw[start * 32 : row * 32])
            self.events += row - start
            digest = self._hasher.copy().hexdigest()
            self.checkpoints.append(
                Checkpoint(raw[row * 32 : row * 32 + 32].hex(), self.events, digest)
            )
            start = row
        if raw is None:
            for view in _id_views(ids):
                self._hasher.update(view)
        else:
            self._hasher.update(raw[start * 32 :])
        self.events += len(ids) - start
        if kinds is not None and len(kinds):
            self._last_kind = str(kinds[len(kinds) - 1].as_py())

    def hexdigest(self) -> str:
        return self._hasher.hexdigest()


def _erasure_starts(kinds: Any, before: str) -> list[int]:
    """Rows starting a run of ``payload.erased`` events (``before``: the kind just ahead)."""
    hits = np.asarray(pc.equal(kinds, ERASED_KIND).to_numpy(zero_copy_only=False), dtype=bool)
    if not hits.any():
        return []
    ahead = np.concatenate(([before == ERASED_KIND], hits[:-1]))
    return [int(i) for i in np.flatnonzero(hits & ~ahead)]


@dataclass(frozen=True)
class Digest:
    events: int
    digest: str
    checkpoints: tuple[Checkpoint, ...] = ()
    coverage: archive.Coverage = field(default_factory=archive.Coverage)


def feed_archives(
    state: ManifestState, folders: Sequence[Path], hasher: IdHasher, *, full: bool = False
) -> archive.Coverage:
    """Find the archives the manifest moved segments to; when every one is found intact,
    feed their ids to ``hasher`` (so the digest covers the whole history)."""
    found = [archive.locate(p, folders, full=full) for p in archive.parts(state)]
    coverage = archive.Coverage(found)
    if coverage.whole:
        for part in coverage.parts:
            for table in archive.archived_ids(part):
                hasher.feed(table.column("id"), table.column("kind"))
    return coverage


def replay_digest(root: Path, archives: Sequence[Path] = ()) -> Digest:
    """blake3 over every event id (32 raw bytes each) in HLC order; reads only the ids (and
    the kinds, once the log holds an erasure, for the checkpoints before each). Segments
    moved to archives are read from ``archives`` (or the folder recorded) when reachable."""
    snap = snapshot(root)
    state = read_manifest(snap.paths.manifest)
    erased = bool(state.erasures)
    hasher = IdHasher()
    coverage = feed_archives(state, archives, hasher)
    columns = ["id", "kind"] if erased else ["id"]
    for path in snap.files:
        table = seg.read_segment(path, columns)
        hasher.feed(table.column("id"), table.column("kind") if erased else None)
    hasher.feed(snap.tail.column("id"), snap.tail.column("kind"))
    points = tuple(hasher.checkpoints) if coverage.whole else ()  # a partial count misleads
    return Digest(hasher.events, hasher.hexdigest(), points, coverage)


# -- following the log: only the bytes not yet seen ---------------------------------------

_WAL_HEADER = struct.Struct(">4sIQ")  # the layout nerve.log.wal documents
_WAL_FRAME = struct.Struct(">III")


def _new_frames(path: Path, offset: int) -> tuple[list[pa.Table], int]:
    """Whole, checksummed frames of a WAL file from byte ``offset`` on, and where they end.

    A partial frame (a commit being written) or a bad one ends the read; the next read
    starts there again.
    """
    with os.fdopen(fsio.open_read(path), "rb") as handle:
        if os.fstat(handle.fileno()).st_size < offset:
            offset = 0  # the file was cut back: read it again; the caller drops what it had
        header = handle.read(_WAL_HEADER.size)
        if len(header) < _WAL_HEADER.size:
            return [], 0
        magics = frame_magics(read_header(path, header)[1])
        offset = max(offset, _WAL_HEADER.size)
        handle.seek(offset)
        data = handle.read()
    tables: list[pa.Table] = []
    pos = 0
    while pos + _WAL_FRAME.size <= len(data):
        magic, length, crc = _WAL_FRAME.unpack_from(data, pos)
        start, end = pos + _WAL_FRAME.size, pos + _WAL_FRAME.size + length
        if magic not in magics or length > MAX_FRAME or end > len(data):
            break
        body = memoryview(data)[start:end]
        if zlib.crc32(body) != crc:
            break
        tables.append(decode_frame(magic, body, path, offset + pos))
        pos = end
    return tables, offset + pos


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class TailReader:
    """Events appended after ``since``, read as a writer appends them (``nerve tail -f``).

    Each :meth:`poll` reads only what is new: the WAL bytes past the last frame it read,
    and a segment only if a seal took events it had not read yet from the WAL. The manifest
    is re-read only when its file changed, and a poll that raced a seal is read again.
    """

    def __init__(self, root: Path, since: Hlc = HLC_ZERO) -> None:
        self.paths = LogPaths(Path(root))
        self.since = since
        self._offsets: dict[int, int] = {}  # WAL generation -> bytes read
        self._manifest: ManifestState | None = None
        self._manifest_stamp: tuple[int, int, int] | None = None

    def poll(self) -> pa.Table:
        """Every event after the newest one returned so far, in HLC order (maybe none)."""
        for _ in range(SNAPSHOT_TRIES):
            state = self._read_manifest()
            try:
                parts, offsets = self._read(state)
            except FileNotFoundError:
                continue  # a seal removed a WAL file while we read: read again
            if _stamp(self.paths.manifest) != self._manifest_stamp:
                continue  # a seal or compaction finished meanwhile: read again
            self._offsets = offsets
            table = seg.concat(parts) if parts else EMPTY
            if table.num_rows:
                newest = Hlc(
                    table.column("physical_ns")[-1].as_py(), table.column("logical")[-1].as_py()
                )
                self.since = max(self.since, newest)
            return table
        raise LogError(f"{self.paths.root}: the log kept changing while reading it; try again")

    def _read_manifest(self) -> ManifestState:
        stamp = _stamp(self.paths.manifest)
        if self._manifest is None or stamp != self._manifest_stamp:
            self._manifest = read_manifest(self.paths.manifest)
            self._manifest_stamp = stamp
        return self._manifest

    def _read(self, state: ManifestState) -> tuple[list[pa.Table], dict[int, int]]:
        since = self.since
        parts = [
            seg.read_since(self.paths.segment(info.name), since)
            for info in state.segments()
            if info.max_hlc > since  # sealed before this reader saw it in the WAL
        ]
        offsets: dict[int, int] = {}
        for gen, path in self.paths.wal_files():
            if gen <= state.sealed_gen:
                continue
            tables, offsets[gen] = _new_frames(path, self._offsets.get(gen, 0))
            parts += tables
        return [after for t in parts if (after := seg.after(t, since)).num_rows], offsets

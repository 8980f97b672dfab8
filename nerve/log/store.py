"""The event log: one writer appending through the WAL, sealing into segments.

Layout under the log folder (a workspace's ``data/log``)::

    LOCK                  the single-writer lock, naming its holder
    manifest.jsonl        hash-chained records of live segments
    segments/<b3>.parquet sealed, HLC-sorted, content-named
    wal/<gen>.wal         unsealed tail, one file per generation
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from nerve.clock import DEFAULT_MAX_OFFSET_NS, HLC_ZERO, Hlc, HybridClock
from nerve.errors import EventError, LogCorrupt, OrderError
from nerve.events import NERVE_SOURCE, Event, Trust, check_kind, check_source, payload_bytes
from nerve.log import segments as seg
from nerve.log.codec import EMPTY, build_table, events_from_table, table_from_events
from nerve.log.lock import WriterLock
from nerve.log.manifest import ManifestState, SegmentInfo, append_record, read_manifest
from nerve.log.wal import WalWriter, fsync_dir, scan, wal_gen

IMPORT_FRAME_ROWS = 65_536


@dataclass(frozen=True)
class LogPaths:
    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.jsonl"

    @property
    def segments(self) -> Path:
        return self.root / "segments"

    @property
    def wal(self) -> Path:
        return self.root / "wal"

    @property
    def lock(self) -> Path:
        return self.root / "LOCK"

    def segment(self, name: str) -> Path:
        return seg.segment_path(self.segments, name)

    def wal_files(self) -> list[tuple[int, Path]]:
        if not self.wal.is_dir():
            return []
        found = [(wal_gen(p), p) for p in self.wal.iterdir()]
        return sorted((g, p) for g, p in found if g is not None)

    def ensure(self) -> None:
        for folder in (self.root, self.segments, self.wal):
            folder.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True, slots=True)
class Draft:
    """An event before the writer stamps it."""

    kind: str = "observation"
    source: int = NERVE_SOURCE
    trust: int = Trust.UNTRUSTED
    line: str = ""
    payload: bytes = b""
    subject: str = ""
    valid_time_ns: int | None = None

    @classmethod
    def of(
        cls,
        kind: str = "observation",
        *,
        source: int = NERVE_SOURCE,
        trust: int = Trust.UNTRUSTED,
        line: str = "",
        payload: Any = None,
        subject: str = "",
        valid_time_ns: int | None = None,
    ) -> Draft:
        """Validate fields and encode the payload (bytes as given, else canonical JSON)."""
        check_kind(kind)
        check_source(source)
        if int(trust) not in (0, 1, 2, 3):
            raise EventError(f"trust {trust!r} is not 0..3")
        return cls(
            kind, source, int(trust), str(line), payload_bytes(payload), str(subject), valid_time_ns
        )

    @classmethod
    def control(cls, kind: str, subject: str, line: str, payload: Any) -> Draft:
        """A first-party record of nerve's own doing (state, errors, runs, configuration).

        On the daemon's hot path: source and trust are constants, so only the kind is checked.
        """
        check_kind(kind)
        return cls(
            kind,
            NERVE_SOURCE,
            Trust.FIRST_PARTY,
            str(line),
            payload_bytes(payload),
            str(subject),
            None,
        )


@dataclass(frozen=True)
class CompactResult:
    merged: int  # segments replaced
    written: int  # segments written
    rows: int


class EventLog:
    """The single writer. Appends are durable (per the policy) before they return."""

    def __init__(
        self,
        root: Path,
        *,
        node: str,
        durability: str = "fsync",
        clock: HybridClock | None = None,
        seal_max_events: int = 100_000,
        seal_max_age_ns: int = 300 * 10**9,
        retire_grace_ns: int = 60 * 10**9,
        max_offset_ns: int = DEFAULT_MAX_OFFSET_NS,
        now_ns: Callable[[], int] = time.time_ns,
        background_seal: bool = False,
    ) -> None:
        """``background_seal``: appends never seal by size themselves; the caller runs
        :meth:`maybe_seal` from another thread (the daemon does, every second)."""
        if durability not in ("fsync", "os"):
            raise EventError(f"durability {durability!r} must be 'fsync' or 'os'")
        if not node:
            raise EventError("node must not be empty")
        self.paths = LogPaths(Path(root))
        self.paths.ensure()
        self.node = node
        self.sync = durability == "fsync"
        self.seal_max_events = seal_max_events
        self.seal_max_age_ns = seal_max_age_ns
        self.retire_grace_ns = retire_grace_ns
        self.background_seal = background_seal
        self._now = now_ns
        self._mutex = threading.RLock()  # the WAL and the tail
        self._seal_lock = threading.RLock()  # seals and compactions, one at a time
        self._lock = WriterLock(self.paths.lock)
        try:
            self.clock = clock or HybridClock(max_offset_ns=max_offset_ns)
            self._recover()
        except BaseException:
            self._lock.release()
            raise

    # -- opening -----------------------------------------------------------------------

    def _recover(self) -> None:
        """Finish or undo whatever a crash interrupted, then seed the clock."""
        self.manifest = read_manifest(self.paths.manifest)
        self._check_live_segments()
        self._remove_orphans()
        pending = self._recover_wal()
        newest = self.manifest.max_hlc() or HLC_ZERO
        for table in pending:
            if table.num_rows:
                newest = max(newest, _last_stamp(table))
        self._newest = newest
        self.clock.seed(newest)

    def _check_live_segments(self) -> None:
        for info in self.manifest.segments():
            if not self.paths.segment(info.name).exists():
                raise LogCorrupt(
                    f"{self.paths.segment(info.name)}: live segment is missing",
                    hint="run `nerve replay --verify` for a full report",
                )

    def _remove_orphans(self) -> None:
        known, now = self.manifest.known(), self._now()
        for path in self.paths.segments.iterdir():
            name = path.name.removesuffix(".parquet")
            if path.name.startswith(".tmp-") or name not in known:
                path.unlink()  # an interrupted seal: its WAL still holds the events
            elif (
                name in self.manifest.retired
                and now - self.manifest.retired[name] > self.retire_grace_ns
            ):
                path.unlink()

    def _recover_wal(self) -> list[pa.Table]:
        files = self.paths.wal_files()
        for gen, path in files:
            if gen <= self.manifest.sealed_gen:
                path.unlink()  # sealed before the crash; only the delete was lost
        live = [(g, p) for g, p in files if g > self.manifest.sealed_gen]
        scans = [scan(p) for _, p in live]
        last_gen = max([self.manifest.sealed_gen, *(g for g, _ in live)]) + (0 if live else 1)
        if scans and scans[-1].torn:
            self._wal = WalWriter(
                self.paths.wal, last_gen, sync=self.sync, truncate_to=scans[-1].good_end
            )
        else:
            self._wal = WalWriter(self.paths.wal, last_gen, sync=self.sync)
        fsync_dir(self.paths.wal)
        self._tail: list[pa.Table] = [t for s in scans for t in s.tables]
        self._wal.rows = sum(t.num_rows for t in self._tail)
        self._tail_since_ns = self._now()
        if len(live) > 1:
            self.seal()  # an interrupted seal left older generations behind: finish it
        return self._tail

    # -- appending ---------------------------------------------------------------------

    @property
    def newest(self) -> Hlc:
        return self._newest

    @property
    def tail_rows(self) -> int:
        return self._wal.rows

    def append(self, kind: str = "observation", **fields: Any) -> Event:
        """Append one event and return it, stamped, once it is durable."""
        table = self.append_drafts([Draft.of(kind, **fields)])
        return events_from_table(table)[0]

    def append_drafts(self, drafts: Sequence[Draft]) -> pa.Table:
        """Append a batch as one group commit; returns the stored rows."""
        if not drafts:
            return EMPTY
        return self.append_columns(
            kind=[d.kind for d in drafts],
            subject=[d.subject for d in drafts],
            source=[d.source for d in drafts],
            trust=[d.trust for d in drafts],
            valid_time_ns=[d.valid_time_ns for d in drafts],
            payload=[d.payload for d in drafts],
            line=[d.line for d in drafts],
        )

    def append_columns(
        self,
        *,
        kind: Sequence[str],
        subject: Sequence[str],
        source: Sequence[int],
        trust: Sequence[int],
        valid_time_ns: Sequence[int | None],
        payload: Sequence[bytes],
        line: Sequence[str],
    ) -> pa.Table:
        """The fast path: already-validated columns, stamped as one run of the clock."""
        with self._mutex:
            count = len(kind)
            first = self.clock.reserve(count)
            table = build_table(
                (first.physical_ns, first.logical, count),
                node=self.node,
                kind=kind,
                subject=subject,
                source=source,
                trust=trust,
                valid_time_ns=valid_time_ns,
                payload=payload,
                line=line,
            )
            self._commit(table, Hlc(first.physical_ns, first.logical + count - 1))
        self._seal_if_due()
        return table

    def _commit(self, table: pa.Table, last: Hlc) -> None:
        self._wal.commit(table)  # durable (under fsync) before anything below changes
        if not self._tail:
            self._tail_since_ns = self._now()
        self._tail.append(table)
        self._newest = max(self._newest, last)

    def _seal_if_due(self) -> None:
        """Seal by size after an append, unless a background caller does it (the daemon)."""
        if not self.background_seal and self.tail_rows >= self.seal_max_events:
            self.seal()

    def import_events(self, events: Iterable[Event]) -> int:
        """Append whole events (their stamps and nodes kept). All or nothing on bad order."""
        evs = list(events)
        with self._mutex:
            _check_import_order(evs, self._newest)
            if evs:
                self.clock.receive(evs[-1].hlc)
            for start in range(0, len(evs), IMPORT_FRAME_ROWS):
                chunk = evs[start : start + IMPORT_FRAME_ROWS]
                self._commit(table_from_events(chunk), chunk[-1].hlc)
        self._seal_if_due()
        return len(evs)

    # -- sealing and compaction --------------------------------------------------------

    def maybe_seal(self) -> SegmentInfo | None:
        """Seal if the tail is big or old enough."""
        with self._mutex:
            rows, age = self._wal.rows, self._now() - self._tail_since_ns
        if rows >= self.seal_max_events or (rows and age >= self.seal_max_age_ns):
            return self.seal()
        return None

    def seal(self) -> SegmentInfo | None:
        """Turn every unsealed WAL generation into one segment. ``None`` if nothing to seal.

        Only the WAL rotation holds the append lock; the segment is written while appends
        go on into the next generation.
        """
        with self._seal_lock:
            with self._mutex:
                if not self._tail:
                    return None
                old, tables = self._wal, self._tail
                self._wal = WalWriter(self.paths.wal, old.gen + 1, sync=self.sync)
                self._tail = []
                old.close()
            info = seg.write_segment(self.paths.segments, pa.concat_tables(tables))
            body = {
                "op": "seal",
                "add": [info.to_json()],
                "remove": [],
                "wal_gen": old.gen,
                "time_ns": self._now(),
            }
            append_record(self.paths.manifest, self.manifest, body)
            for gen, path in self.paths.wal_files():
                if gen <= old.gen:
                    path.unlink()
            fsync_dir(self.paths.wal)
            return info

    def compact(self, *, target_rows: int = 1_000_000) -> CompactResult:
        """Merge runs of adjacent small segments; one manifest record per merged run."""
        with self._seal_lock:
            merged = written = rows = 0
            for run in _small_runs(self.manifest.segments(), target_rows):
                table = pa.concat_tables(
                    [seg.read_segment(self.paths.segment(s.name)) for s in run]
                )
                info = seg.write_segment(self.paths.segments, table)
                append_record(
                    self.paths.manifest,
                    self.manifest,
                    {
                        "op": "compact",
                        "add": [info.to_json()],
                        "remove": [s.name for s in run],
                        "time_ns": self._now(),
                    },
                )
                merged, written, rows = merged + len(run), written + 1, rows + info.rows
            self._remove_orphans()
            return CompactResult(merged, written, rows)

    def close(self) -> None:
        with self._seal_lock, self._mutex:
            self._wal.close()
            self._lock.release()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _last_stamp(table: pa.Table) -> Hlc:
    return Hlc(table.column("physical_ns")[-1].as_py(), table.column("logical")[-1].as_py())


def _check_import_order(events: list[Event], newest: Hlc) -> None:
    prev: tuple[Hlc, str, bytes] | None = None
    for index, ev in enumerate(events):
        key = (ev.hlc, ev.node, ev.id)
        if index == 0 and ev.hlc <= newest:
            raise OrderError(
                f"event 1 has stamp {ev.hlc}, not after the log's newest {newest}; "
                "nothing was imported"
            )
        if prev is not None and key <= prev:
            raise OrderError(
                f"event {index + 1} (stamp {ev.hlc}) does not sort after event "
                f"{index} (stamp {prev[0]}); nothing was imported"
            )
        prev = key


def _small_runs(segments: list[SegmentInfo], target_rows: int) -> list[list[SegmentInfo]]:
    runs: list[list[SegmentInfo]] = []
    current: list[SegmentInfo] = []
    total = 0
    for info in segments:
        if info.rows >= target_rows or total + info.rows > target_rows:
            if len(current) > 1:
                runs.append(current)
            current, total = [], 0
        if info.rows < target_rows:
            current.append(info)
            total += info.rows
    if len(current) > 1:
        runs.append(current)
    return runs


def default_node() -> str:
    """The host id stored in events: ``NERVE_NODE`` or the host name."""
    return os.environ.get("NERVE_NODE") or os.uname().nodename or "localhost"


def manifest_state(root: Path) -> ManifestState:
    return read_manifest(LogPaths(root).manifest)

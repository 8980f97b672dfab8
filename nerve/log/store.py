"""The event log: one writer appending through the WAL, sealing into segments.

Layout under the log folder (a workspace's ``data/log``)::

    LOCK                  the single-writer lock, naming its holder
    manifest.jsonl        hash-chained records of live segments
    segments/<b3>.parquet sealed, HLC-sorted, content-named
    wal/<gen>.wal         unsealed tail, one file per generation
"""

from __future__ import annotations

import contextlib
import datetime
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from nerve import fsio
from nerve.clock import DEFAULT_MAX_OFFSET_NS, HLC_ZERO, Hlc, HybridClock
from nerve.errors import EventError, LogCorrupt, LogError, NerveError, OrderError
from nerve.events import ErasedEvent, Event
from nerve.log import archive, crypt, erasure, recovery, salvage
from nerve.log import segments as seg
from nerve.log.batchkeys import KEY_KIND, BatchKeys, check_key, key_draft
from nerve.log.codec import (
    EMPTY,
    SCHEMA,
    SMALL_BATCH,
    Row,
    build_table,
    events_from_table,
    small_rows,
    table_from_events,
    table_from_rows,
    table_from_stored,
)
from nerve.log.drafts import Draft
from nerve.log.fields import EventFields
from nerve.log.lock import WriterLock
from nerve.log.manifest import ManifestState, SegmentInfo, append_record, read_manifest
from nerve.log.paths import LogPaths
from nerve.log.unsealed import Unsealed
from nerve.log.wal import WalWriter

__all__ = ["CompactResult", "EventLog", "LogPaths", "default_node", "manifest_state"]

IMPORT_FRAME_ROWS = 65_536


@dataclass(frozen=True)
class CompactResult:
    """What a compaction did: segments merged away, segments written, the rows they hold."""

    merged: int  # segments replaced
    written: int  # segments written
    rows: int

    def to_json(self) -> dict[str, int]:
        return {"merged": self.merged, "written": self.written, "rows": self.rows}


class EventLog:
    """The single writer. Appends are durable (per the policy) before they return.

    A failed append is refused and leaves the log as it was. A failed seal keeps every
    unsealed generation on disk and in memory, and is retried by the next seal; appends
    go on meanwhile, and :attr:`seal_error` says what went wrong.
    """

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
        repair: bool = False,
    ) -> None:
        """``background_seal``: appends never seal by size themselves; the caller runs
        :meth:`maybe_seal` from another thread (the daemon does, every second).
        ``repair``: open a damaged log, keeping what is good and recording the rest."""
        if durability not in ("fsync", "os"):
            raise EventError(f"durability {durability!r} must be 'fsync' or 'os'")
        if not node:
            raise EventError("node must not be empty")
        self.paths = LogPaths(Path(root))
        # An encrypted log is unlocked before anything is touched: a wrong key writes nothing
        self.cipher = crypt.cipher_for(self.paths.root)
        self.paths.ensure()
        self.node = node
        self.sync = durability == "fsync"
        self.seal_max_events = seal_max_events
        self.seal_max_age_ns = seal_max_age_ns
        self.retire_grace_ns = retire_grace_ns
        self.background_seal = background_seal
        self.seal_error: NerveError | OSError | None = None
        self.recovered: list[str] = []
        self._now = now_ns
        self._mutex = threading.RLock()  # the WAL and the tail
        self._seal_lock = threading.RLock()  # seals and compactions, one at a time
        self._keys: BatchKeys | None = None
        self._gone: set[str] = set()  # retired segments already deleted
        # Each durable frame, in stamp order: called in the committing thread under the
        # append lock, so a hook must be quick and must not raise (the daemon's followers).
        self.on_commit: list[Callable[[pa.Table], None]] = []
        self._lock = WriterLock(self.paths.lock)
        try:
            self.paths.tighten()
            self.clock = clock or HybridClock(max_offset_ns=max_offset_ns)
            self._recover(repair)
            self._record_recovery()
        except BaseException:
            if hasattr(self, "_wal"):
                self._wal.close()
            self._lock.release()
            raise

    # -- opening -----------------------------------------------------------------------

    def _recover(self, repair: bool) -> None:
        """Settle what a crash left, refuse (or, repairing, record) damage; seed the clock."""
        self.manifest = read_manifest(self.paths.manifest)
        if self.manifest.read_only:
            raise LogError(
                f"{self.paths.root}: is an archive (read-only): nothing appends to it",
                hint="read it with `nerve --workspace DIR replay --verify`, query or tail",
            )
        self._check_live_segments(repair)
        found = recovery.take_over_wal(self.paths, self.manifest, repair=repair)
        self.recovered += found.notes
        self._settle_segments(found)
        self._account_for_gaps(found, repair)
        self._wal = WalWriter(
            self.paths.wal,
            found.current_gen,
            sync=self.sync,
            truncate_to=found.truncate_to,
            cipher=self.cipher,
        )
        fsio.fsync_dir(self.paths.wal, site="wal.dirsync")
        self._pending: list[tuple[int, Unsealed]] = [(g, Unsealed(t)) for g, t in found.pending]
        self._tail = Unsealed(found.current)
        self._wal.rows = self._tail.rows
        self._tail_since_ns = self._now()
        newest = self.manifest.max_hlc() or HLC_ZERO
        for table in found.tables():
            if table.num_rows:
                newest = max(newest, _last_stamp(table))
        self._newest = newest
        self.clock.seed(newest)
        if self._pending:
            self._try_seal()  # an interrupted seal left older generations behind: finish it

    def _check_live_segments(self, repair: bool) -> None:
        """Refuse a live segment that is gone (or not a regular file); a repair rebuilds it
        from the files it replaced, or records what is lost (:mod:`nerve.log.salvage`)."""
        broken = salvage.gone(self.paths, self.manifest)
        if not broken:
            return
        if not repair:
            path = self.paths.segment(broken[0].name)
            what = "is missing" if not os.path.lexists(path) else "is not a regular file"
            raise LogCorrupt(
                f"{path}: live segment {what}",
                hint="`nerve replay --verify` reports it; `nerve repair` rebuilds it from the "
                "files it replaced, or records what is lost",
            )
        for info in broken:
            path = self.paths.segment(info.name)
            if os.path.lexists(path):
                recovery.quarantine(self.paths, path)
        found = salvage.salvage(self.paths, self.manifest, broken)
        append_record(self.paths.manifest, self.manifest, found.body(self._now()))
        self.recovered += found.notes

    def _settle_segments(self, found: recovery.WalFound) -> None:
        orphans = recovery.settle_segments(
            self.paths,
            self.manifest,
            recovery.ids_of_tables(found.tables()),
            now_ns=self._now(),
            grace_ns=self.retire_grace_ns,
        )
        for path in orphans.redundant:
            fsio.unlink(path, site="segment.unlink", missing_ok=True)
        for path in orphans.quarantine:
            kept = recovery.quarantine(self.paths, path)
            self.recovered.append(
                f"{path.name}: a segment file the manifest does not list and that does not "
                f"fit beside the live ones; moved to {kept.relative_to(self.paths.root)}"
            )
        if orphans.adopt:
            self._adopt(orphans.adopt, found)

    def _adopt(self, infos: list[SegmentInfo], found: recovery.WalFound) -> None:
        """Record verified segments the manifest lost; they also account for lost seals."""
        body: dict[str, Any] = {
            "op": "adopt",
            "add": [i.to_json() for i in infos],
            "remove": [],
            "time_ns": self._now(),
        }
        live_gens = [g for g, _ in found.pending] + ([found.current_gen] if found.tables() else [])
        below = [g for g in found.missing if not live_gens or g < min(live_gens)]
        if below:
            body["wal_gen"] = max(below)
            found.missing = [g for g in found.missing if g not in below]
        append_record(self.paths.manifest, self.manifest, body)
        rows = sum(i.rows for i in infos)
        self.recovered.append(
            f"re-adopted {len(infos)} segment(s) ({rows} events) the manifest did not list"
        )

    def _account_for_gaps(self, found: recovery.WalFound, repair: bool) -> None:
        if not found.missing:
            return
        gens = ", ".join(str(g) for g in found.missing)
        if not repair:
            raise LogCorrupt(
                f"{self.paths.wal}: WAL generation(s) {gens} are missing and the manifest "
                "does not account for them: their events are lost",
                hint=recovery.REPAIR_HINT,
            )
        body = {"op": "repair", "add": [], "remove": [], "time_ns": self._now()}
        append_record(self.paths.manifest, self.manifest, {**body, "lost_wal_gens": found.missing})
        self.recovered.append(f"WAL generation(s) {gens} were missing: written off as lost")

    def _record_recovery(self) -> None:
        """Put what recovery had to do on the record, as an event of the log itself."""
        if not self.recovered:
            return
        line = "log recovered: " + "; ".join(self.recovered)
        self.append_drafts(
            [Draft.control("log.recovered", "log", line[:1000], {"notes": self.recovered})]
        )

    # -- appending ---------------------------------------------------------------------

    @property
    def newest(self) -> Hlc:
        return self._newest

    @property
    def tail_rows(self) -> int:
        pending = sum(u.rows for _, u in self._pending) if self._pending else 0
        return int(self._wal.rows + pending)

    def append(self, kind: str = "observation", **fields: Any) -> Event:
        """Append one event and return it, stamped, once it is durable."""
        table = self.append_drafts([Draft.of(kind, **fields)])
        return events_from_table(table)[0]

    def append_drafts(self, drafts: Sequence[Draft], *, key: str | None = None) -> pa.Table:
        """Append a batch as one group commit; returns the stored rows.

        With ``key``, a retried batch is stored once: a key seen before returns the rows
        stored the first time and appends nothing (see :mod:`nerve.log.batchkeys`).
        """
        if key is not None:
            return self._append_keyed(drafts, key)
        if not drafts:
            return EMPTY
        return self.append_columns(EventFields.of(drafts))

    def append_columns(self, fields: EventFields) -> pa.Table:
        """The fast path: already-validated columns, stamped as one run of the clock."""
        with self._mutex:
            table = self._stamp_and_commit(fields, returning=True)
        self._seal_if_due()
        if table is None:  # pragma: no cover - returning=True always builds it
            raise AssertionError("append built no table")
        return table

    def append_count(self, fields: EventFields) -> int:
        """:meth:`append_columns` for a caller that does not need the stored rows back: the
        same commit, durable before it returns, but a small batch builds no Arrow table
        unless an ``on_commit`` hook takes one. Returns how many events were appended."""
        with self._mutex:
            self._stamp_and_commit(fields, returning=False)
        self._seal_if_due()
        return len(fields)

    def _stamp_and_commit(self, fields: EventFields, *, returning: bool) -> pa.Table | None:
        count = len(fields)
        first = self.clock.reserve(count)
        stamps = (first.physical_ns, first.logical, count)
        last = Hlc(first.physical_ns, first.logical + count - 1)
        if count > SMALL_BATCH:
            table = build_table(stamps, node=self.node, fields=fields)
            self._commit(table, last)
            return table
        return self._commit_rows(small_rows(stamps, node=self.node, fields=fields), last, returning)

    def _commit(self, table: pa.Table, last: Hlc) -> None:
        self._wal.commit(table)  # durable (under fsync) before anything below changes
        self._mark_tail()
        self._tail.add_table(table)
        self._committed(table, last)

    def _commit_rows(self, rows: list[Row], last: Hlc, returning: bool) -> pa.Table | None:
        """Commit a small batch as a small frame; its table is built only if wanted, and then
        the tail keeps that table (rows are built into Arrow once, not again at a flush)."""
        keyed = self._keys is not None and any(row[3] == KEY_KIND for row in rows)
        table = table_from_rows(rows) if returning or keyed or self.on_commit else None
        self._wal.commit_rows(rows)  # durable (under fsync) before anything below changes
        self._mark_tail()
        if table is None:
            self._tail.add_rows(rows)
        else:
            self._tail.add_table(table)
        self._committed(table, last)
        return table

    def _mark_tail(self) -> None:
        if not self._tail:
            self._tail_since_ns = self._now()

    def _committed(self, table: pa.Table | None, last: Hlc) -> None:
        self._newest = max(self._newest, last)
        if table is None:
            return
        if self._keys is not None:
            self._keys.observe(table)
        for hook in self.on_commit:
            hook(table)

    def _append_keyed(self, drafts: Sequence[Draft], key: str) -> pa.Table:
        check_key(key)
        with self._mutex:
            stored = self._batch_keys().lookup(key)
            if stored is not None:
                return stored
            count = len(drafts)
            first = self.clock.reserve(count + 1)
            last = Hlc(first.physical_ns, first.logical + count - 1) if count else None
            marker = key_draft(key, count, first if count else None, last)
            fields = EventFields.of([*drafts, marker])
            stamps = (first.physical_ns, first.logical, count + 1)
            table = build_table(stamps, node=self.node, fields=fields)
            self._commit(table, Hlc(first.physical_ns, first.logical + count))
        self._seal_if_due()
        return table.slice(0, count)

    def _batch_keys(self) -> BatchKeys:
        if self._keys is None:
            self._keys = BatchKeys(self._now, self._rows_between)
            self._keys.load(self.paths.segments, self.manifest.segments(), self._unsealed())
        return self._keys

    def _rows_between(self, first: Hlc, last: Hlc) -> pa.Table:
        """Stored rows stamped from ``first`` to ``last`` inclusive, in order."""
        parts = [
            seg.read_since(self.paths.segment(s.name), _before(first))
            for s in self.manifest.segments()
            if s.max_hlc >= first and s.min_hlc <= last
        ]
        parts += [seg.after(t, _before(first)) for t in self._unsealed()]
        table = seg.concat(parts) if parts else EMPTY
        return seg.up_to(table, last)

    def _unsealed(self) -> list[pa.Table]:
        with self._mutex:  # the current generation is read under the append lock only
            pending, current = [u for _, u in self._pending], self._tail.tables()
        return [t for u in pending for t in u.tables()] + current

    def _seal_if_due(self) -> None:
        """Seal by size after an append, unless a background caller does it (the daemon).

        The append is already durable: a seal that fails here is kept in
        :attr:`seal_error` and retried by the next seal, never reported as the append's.
        """
        if not self.background_seal and self.tail_rows >= self.seal_max_events:
            self._try_seal()

    def _try_seal(self) -> None:
        try:
            self.seal()
        except (NerveError, OSError) as exc:
            self.seal_error = exc

    def import_events(
        self, events: Iterable[Event | ErasedEvent], *, key: str | None = None
    ) -> int:
        """Append whole events (their stamps and nodes kept). All or nothing on bad order.

        A copy of a log with erasures holds erased events (:class:`ErasedEvent`) and the
        ``payload.erased`` events that name them; those go straight into a sealed segment,
        as erased rows, with the erasures recorded as carried out (the WAL holds whole
        events only). A ``payload.erased`` must come with every event it names."""
        evs = list(events)
        erased = any(e.erased for e in evs)
        _check_erasures_carried(evs)
        with self._seal_lock if erased else contextlib.nullcontext(), self._mutex:
            if key is not None:
                check_key(key)
                stored = self._batch_keys().lookup(key)
                if stored is not None:
                    return int(stored.num_rows)
            _check_import_order(evs, self._newest)
            if evs:
                self.clock.receive(evs[-1].hlc)
            marker = None
            if key is not None:
                first, last = (evs[0].hlc, evs[-1].hlc) if evs else (None, None)
                marker = EventFields.of([key_draft(key, len(evs), first, last)])
            if erased:
                self._import_sealed(evs, marker)
            else:
                whole = [e for e in evs if isinstance(e, Event)]
                for start in range(0, len(whole), IMPORT_FRAME_ROWS):
                    chunk = whole[start : start + IMPORT_FRAME_ROWS]
                    self._commit(table_from_events(chunk), chunk[-1].hlc)
                if marker is not None:
                    self._stamp_and_commit(marker, returning=False)
        self._seal_if_due()
        return len(evs)

    def import_table(self, table: pa.Table) -> int:
        """Append whole events given as columns (:data:`nerve.log.checked.WIRE_COLUMNS`,
        stamps and nodes kept, in log order): checked as :meth:`import_events` checks each
        event, column by column (:func:`nerve.log.checked.checked_events`), then committed
        as they are. All or nothing."""
        from nerve.log.checked import checked_events

        table = checked_events(table)
        if not table.num_rows:
            return 0
        with self._mutex:
            _check_table_order(table, self._newest)
            self.clock.receive(_last_stamp(table))
            for start in range(0, table.num_rows, IMPORT_FRAME_ROWS):
                chunk = table.slice(start, IMPORT_FRAME_ROWS)
                self._commit(chunk, _last_stamp(chunk))
        self._seal_if_due()
        return int(table.num_rows)

    def _import_sealed(self, evs: list[Event | ErasedEvent], marker: EventFields | None) -> None:
        """Seal the tail, then write ``evs`` (and the batch key's record, ``marker``) as one
        segment of their own, in one manifest record (seal lock and mutex held): the
        segments stay in HLC order, and a keyed import is stored whole or not at all."""
        if self._tail or self._pending:
            self.seal()
        table = table_from_stored(evs)
        last = evs[-1].hlc
        if marker is not None:
            first = self.clock.reserve(1)
            last = first
            rows = small_rows((first.physical_ns, first.logical, 1), node=self.node, fields=marker)
            key_table = table_from_rows(rows).select(SCHEMA.names).cast(table.schema)
            table = pa.concat_tables([table, key_table])
        carried = [e.id for e in erasure.erasures_in(table) if _all_erased(e, evs)]
        self._record_segment(table, {"op": "import", "remove": [], "erasure": carried})
        self._committed(table, last)

    # -- sealing and compaction --------------------------------------------------------

    def seal_due_in_ns(self) -> int | None:
        """How long until :meth:`maybe_seal` would seal: 0 now, None while nothing is to seal
        (an empty tail); else until the tail reaches ``seal_max_age``."""
        with self._mutex:
            rows, since, retry = self.tail_rows, self._tail_since_ns, bool(self._pending)
        if retry or rows >= self.seal_max_events or len(self.manifest.retired) > len(self._gone):
            return 0
        if not rows:
            return None
        return max(0, since + self.seal_max_age_ns - self._now())

    def maybe_seal(self) -> SegmentInfo | None:
        """Seal if the tail is big or old enough, or a failed seal left generations behind."""
        with self._mutex:
            rows, age = self.tail_rows, self._now() - self._tail_since_ns
            retry = bool(self._pending)
        if len(self.manifest.retired) > len(self._gone):
            with self._seal_lock:
                self._drop_retired()
        if retry or rows >= self.seal_max_events or (rows and age >= self.seal_max_age_ns):
            return self.seal()
        return None

    def seal(self) -> SegmentInfo | None:
        """Turn every unsealed WAL generation into one segment. ``None`` if nothing to seal.

        Only the WAL rotation holds the append lock; the segment is written while appends
        go on into the next generation. If writing fails, the rotated generations stay
        pending (on disk and here) and the next seal includes them.
        """
        with self._seal_lock:
            with self._mutex:
                if self._tail:
                    self._rotate()
                batch = list(self._pending)
            if not batch:
                return None
            info = self._write_sealed(batch)
            with self._mutex:
                del self._pending[: len(batch)]
            self.seal_error = None
            self._drop_sealed_wal(batch[-1][0])
            return info

    def _rotate(self) -> None:
        """Open the next generation; the current one joins the pending list."""
        old = self._wal
        self._wal = WalWriter(self.paths.wal, old.gen + 1, sync=self.sync, cipher=self.cipher)
        self._pending.append((old.gen, self._tail))
        self._tail = Unsealed()
        old.close()

    def _write_sealed(self, batch: list[tuple[int, Unsealed]]) -> SegmentInfo:
        tables = [t for _, u in batch for t in u.tables()]
        body = {"op": "seal", "remove": [], "wal_gen": batch[-1][0]}
        return self._record_segment(pa.concat_tables(tables), body)

    def _record_segment(self, table: pa.Table, body: dict[str, Any]) -> SegmentInfo:
        """Write ``table`` as a segment, then the manifest record that adds it. A record
        that fails takes the unrecorded file with it (its events are still elsewhere)."""
        info = seg.write_segment(self.paths.segments, table)
        try:
            append_record(
                self.paths.manifest,
                self.manifest,
                {**body, "add": [info.to_json()], "time_ns": self._now()},
            )
        except BaseException:
            self._discard_unrecorded(info.name)
            raise
        return info

    def _discard_unrecorded(self, name: str) -> None:
        """Delete a segment no record names; never while a record may name it (a failed
        record that could not be cut back): the next open adopts or drops it."""
        if not self.manifest.uncertain and name not in self.manifest.known():
            with contextlib.suppress(OSError):
                self.paths.segment(name).unlink()

    def _drop_sealed_wal(self, sealed_gen: int) -> None:
        """Delete generations the manifest now says are sealed; a failure here loses nothing
        (the next open drops them), so it is not the seal's failure."""
        with contextlib.suppress(OSError):
            for gen, path in self.paths.wal_files():
                if gen <= sealed_gen:
                    fsio.unlink(path, site="wal.unlink")
            fsio.fsync_dir(self.paths.wal, site="wal.dirsync")

    def compact(self, *, target_rows: int = 1_000_000) -> CompactResult:
        """Merge runs of adjacent small segments, and rewrite any segment still stored with
        the v1 (unsigned) types; one manifest record per run."""
        with self._seal_lock:
            merged = written = rows = 0
            for run in self._compaction_runs(target_rows):
                table = seg.concat([seg.read_segment(self.paths.segment(s.name)) for s in run])
                body = {"op": "compact", "remove": [s.name for s in run]}
                info = self._record_segment(table, body)
                merged, written, rows = merged + len(run), written + 1, rows + info.rows
            self._drop_retired()
            return CompactResult(merged, written, rows)

    def _compaction_runs(self, target_rows: int) -> list[list[SegmentInfo]]:
        segments = self.manifest.segments()
        runs = _small_runs(segments, target_rows)
        merged = {s.name for run in runs for s in run}
        old = [s for s in segments if s.name not in merged and self._stored_v1(s)]
        return runs + [[s] for s in old]

    def _stored_v1(self, info: SegmentInfo) -> bool:
        return seg.stored_v1(self.paths.segment(info.name))

    def _drop_retired(self, *, grace_ns: int | None = None) -> None:
        """Delete segments compacted, erased or archived away once readers have had their
        grace period; a failure keeps the file for the next try (it is no longer live)."""
        now, grace = self._now(), self.retire_grace_ns if grace_ns is None else grace_ns
        for name, since in list(self.manifest.retired.items()):
            if name in self._gone or now - since < grace:
                continue
            path = self.paths.segment(name)
            with contextlib.suppress(OSError):
                fsio.unlink(path, site="segment.unlink", missing_ok=True)
                self._gone.add(name)

    # -- erasure (see nerve.log.erasure) -----------------------------------------------

    def erase(
        self, predicate: erasure.Predicate, *, reason: str, selection: dict[str, Any]
    ) -> erasure.Plan:
        """Erase the payload and line of every event ``predicate`` selects, all or nothing.

        Seals the tail first (so every stored event can be selected), finishes any erasure
        an interrupted call left pending, writes the erased copies, appends the
        ``payload.erased`` event(s), then swaps the segments in one manifest record.
        """
        with self._seal_lock:
            self.seal()
            self.finish_erasures()
            plan = erasure.rewrite(self.paths.segments, self._live_files(), predicate)
            if not plan.found:
                return plan
            try:
                stored = self.append_drafts(erasure.drafts(plan, reason, selection))
            except BaseException:
                self._discard_rewrite(plan)
                raise
            ids = [bytes(i).hex() for i in stored.column("id").to_pylist()]
            plan.erasures = ids
            try:
                self._record_rewrite(plan, ids)
            except (NerveError, OSError) as exc:
                raise LogError(
                    f"the erasure is recorded (payload.erased {ids[0][:12]}) but the segments "
                    f"could not be swapped: {exc}",
                    hint="the next `nerve forget` (or daemon start) finishes it",
                ) from exc
            self._drop_retired()
            return plan

    def finish_erasures(self) -> int:
        """Carry out ``payload.erased`` events no rewrite record names; how many there were."""
        with self._seal_lock:
            found = erasure.finish_pending(
                self.paths.segments, self._live_files(), self._unsealed(), self.manifest.erasures
            )
            if found is None:
                return 0
            plan, ids = found
            self._record_rewrite(plan, ids)
            self._drop_retired()
            return len(ids)

    def archive(self, before: Hlc, to: Path, *, vacuum: bool = False) -> list[SegmentInfo]:
        """Move the oldest segments wholly before ``before`` into the archive folder ``to``
        (see :mod:`nerve.log.archive`); the segments moved. ``vacuum``: delete every
        retired file now instead of after the reader grace."""
        with self._seal_lock:
            self.finish_erasures()  # an erasure must not be left pending on archived rows
            picked, body = archive.move_out(
                self.paths, self.manifest, before, to, self._unsealed(), self._now
            )
            if body is not None:
                append_record(self.paths.manifest, self.manifest, body)
            self._drop_retired(grace_ns=0 if vacuum else None)
            return picked

    def _live_files(self) -> list[tuple[SegmentInfo, Path]]:
        return [(s, self.paths.segment(s.name)) for s in self.manifest.segments()]

    def _record_rewrite(self, plan: erasure.Plan, erasures: list[str]) -> None:
        body = {**erasure.record_body(plan, erasures), "time_ns": self._now()}
        try:
            append_record(self.paths.manifest, self.manifest, body)
        except BaseException:
            self._discard_rewrite(plan)
            raise

    def _discard_rewrite(self, plan: erasure.Plan) -> None:
        for _, new in plan.replaced:
            self._discard_unrecorded(new.name)

    def close(self) -> None:
        with self._seal_lock, self._mutex:
            self._wal.close()
            self._lock.release()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _before(stamp: Hlc) -> Hlc:
    """The greatest stamp before ``stamp`` (so "after it" includes ``stamp``)."""
    if stamp.logical:
        return Hlc(stamp.physical_ns, stamp.logical - 1)
    return Hlc(stamp.physical_ns - 1, 2**32 - 1)


def _last_stamp(table: pa.Table) -> Hlc:
    return Hlc(table.column("physical_ns")[-1].as_py(), table.column("logical")[-1].as_py())


def _check_erasures_carried(events: list[Event | ErasedEvent]) -> None:
    """Each imported ``payload.erased`` names only events of the same import: one naming a
    log's own events would have them erased by the next forget."""
    ids = {e.id.hex() for e in events}
    for index, ev in enumerate(events):
        if isinstance(ev, ErasedEvent) or ev.kind != erasure.ERASED_KIND:
            continue
        try:
            named = erasure.Erasure.parse(ev.id, ev.payload).events
        except (ValueError, KeyError, TypeError):
            raise EventError(
                f"event {index + 1}: kind {ev.kind!r} cannot be sent: its payload does not "
                "list what it erased; nothing was imported",
                field="kind",
            ) from None
        if not ids.issuperset(named):
            raise EventError(
                f"event {index + 1}: kind {ev.kind!r} cannot be sent without every event it "
                "erased (import it with the rest of the copied log); nothing was imported",
                field="kind",
            )


def _all_erased(found: erasure.Erasure, events: list[Event | ErasedEvent]) -> bool:
    """True when every event the erasure names is erased in ``events`` (it was carried out;
    else it is pending, and the next forget carries it out)."""
    gone = {e.id.hex() for e in events if e.erased}
    return all(eid in gone for eid in found.events)


def _check_import_order(events: Sequence[Event | ErasedEvent], newest: Hlc) -> None:
    prev: tuple[Hlc, str, bytes] | None = None
    for index, ev in enumerate(events):
        key = (ev.hlc, ev.node, ev.id)
        if index == 0 and ev.hlc <= newest:
            raise _not_after(ev.hlc, newest)
        if prev is not None and key <= prev:
            raise OrderError(
                f"event {index + 1} (stamp {ev.hlc}) does not sort after event "
                f"{index} (stamp {prev[0]}); nothing was imported"
            )
        prev = key


def _not_after(first: Hlc, newest: Hlc) -> OrderError:
    """An import that starts at or before the log's newest event: when each was, in UTC, and
    what to do (a log only grows at its end)."""

    def when(stamp: Hlc) -> str:
        moment = datetime.datetime.fromtimestamp(stamp.physical_ns / 1e9, datetime.UTC)
        return moment.strftime("%Y-%m-%d %H:%M:%S UTC")

    return OrderError(
        f"event 1 has stamp {first} ({when(first)}), not after the log's newest {newest} "
        f"({when(newest)}): a log only grows at its end, so nothing was imported",
        hint="import into a new workspace (nerve init DIR, then nerve -w DIR import FILE), "
        "or export only newer events (nerve tail --json --since STAMP)",
    )


def _check_table_order(table: pa.Table, newest: Hlc) -> None:
    """``_check_import_order`` for a table: the first row after ``newest``, each row after
    the one before it (by stamp, then node and id)."""
    physical = table.column("physical_ns").to_numpy()
    logical = table.column("logical").to_numpy()
    first = Hlc(int(physical[0]), int(logical[0]))
    if first <= newest:
        raise _not_after(first, newest)
    later = (physical[1:] > physical[:-1]) | (
        (physical[1:] == physical[:-1]) & (logical[1:] > logical[:-1])
    )
    same = (physical[1:] == physical[:-1]) & (logical[1:] == logical[:-1])
    nodes, ids = table.column("node").to_pylist, table.column("id").to_pylist
    for at in np.flatnonzero(~later):
        i = int(at)
        key = [(n, bytes(d)) for n, d in zip(nodes()[i : i + 2], ids()[i : i + 2], strict=True)]
        if not (same[i] and key[1] > key[0]):
            raise OrderError(
                f"event {i + 2} (stamp {Hlc(int(physical[i + 1]), int(logical[i + 1]))}) "
                f"does not sort after event {i + 1}; nothing was imported"
            )


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

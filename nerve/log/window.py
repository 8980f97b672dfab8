"""The newest events of a time window, read newest first: `nerve tail -n 20` on a log of
millions of events reads the unsealed tail and the last row group or two, not every segment.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from nerve.clock import HLC_ZERO, LOGICAL_MAX, Hlc
from nerve.errors import LogCorrupt
from nerve.log import segments as seg
from nerve.log.codec import EMPTY, conform
from nerve.log.reader import Snapshot
from nerve.log.select import TailFilter

_STAMP_COLUMNS = ["physical_ns", "logical"]
TAIL_SLICE = 8192  # unsealed rows read at a time, newest first


@dataclass(frozen=True)
class Window:
    """The newest matching events (HLC order) and how many older ones matched too (counted
    up to the limit asked for)."""

    table: pa.Table
    older: int


def before(stamp: Hlc) -> Hlc:
    """The stamp just before ``stamp``: reading "after" it includes ``stamp`` itself."""
    if stamp.logical:
        return Hlc(stamp.physical_ns, stamp.logical - 1)
    return Hlc(stamp.physical_ns - 1, LOGICAL_MAX) if stamp.physical_ns else HLC_ZERO


def newest(
    snap: Snapshot,
    count: int | None,
    filt: TailFilter,
    *,
    since: Hlc = HLC_ZERO,
    until: Hlc | None = None,
    count_older: int = 0,
) -> Window:
    """The last ``count`` events (all if None) stamped after ``since`` and at or before
    ``until`` that ``filt`` keeps; older matches are counted, up to ``count_older``.

    Parts are read newest first and reading stops once enough are found; a row group's
    HLC statistics skip it when it lies outside the window.
    """
    want = count
    parts: list[pa.Table] = []
    older = 0
    for part in _parts_newest_first(snap, since, until):
        if want is not None and want <= 0:
            if older >= count_older:
                break
            older += _count(part.read([*_STAMP_COLUMNS, *filt.columns]), filt, since, until)
            continue
        table = _clip(filt.apply(part.read()), since, until)
        if want is not None and table.num_rows > want:
            older += table.num_rows - want
            table = table.slice(table.num_rows - want)
        if table.num_rows:
            parts.append(table)
            want = None if want is None else want - table.num_rows
    parts.reverse()
    table = seg.concat(parts) if parts else EMPTY
    return Window(table, min(older, count_older))


def _clip(table: pa.Table, since: Hlc, until: Hlc | None) -> pa.Table:
    table = seg.after(table, since)
    return seg.up_to(table, until) if until is not None else table


def _count(table: pa.Table, filt: TailFilter, since: Hlc, until: Hlc | None) -> int:
    return int(_clip(filt.apply(table), since, until).num_rows)


@dataclass(frozen=True)
class _Part:
    """One readable piece of the log: the unsealed tail, or one row group of a segment."""

    path: Path | None
    group: int
    tail: pa.Table | None = None

    def read(self, columns: list[str] | None = None) -> pa.Table:
        if self.tail is not None:
            return self.tail.select(columns) if columns else self.tail
        assert self.path is not None
        with seg.reading(self.path):
            wanted = seg.with_cid_source(columns)
            table = conform(
                pq.ParquetFile(seg.source(self.path)).read_row_group(self.group, columns=wanted)
            )
            return table if wanted == columns else table.select(columns)


def _parts_newest_first(snap: Snapshot, since: Hlc, until: Hlc | None) -> Iterator[_Part]:
    # the tail is one chunk per WAL frame: newest slices first, each made one chunk
    rows = snap.tail.num_rows
    for end in range(rows, 0, -TAIL_SLICE):
        start = max(0, end - TAIL_SLICE)
        yield _Part(None, 0, snap.tail.slice(start, end - start).combine_chunks())
    for info, path in zip(reversed(snap.segments), reversed(snap.files), strict=True):
        if info.max_hlc <= since:
            break  # segments are in HLC order: every older one is out of the window too
        if until is not None and info.min_hlc > until:
            continue
        yield from _row_groups(path, since, until)


def _row_groups(path: Path, since: Hlc, until: Hlc | None) -> Iterator[_Part]:
    try:
        meta = pq.ParquetFile(seg.source(path)).metadata
    except (pa.ArrowInvalid, OSError) as exc:
        raise LogCorrupt(f"{path}: cannot be read as Parquet: {exc}") from None
    column = meta.schema.names.index("physical_ns")
    for group in reversed(range(meta.num_row_groups)):
        stats = meta.row_group(group).column(column).statistics
        if stats is not None and stats.has_min_max:
            if stats.max < since.physical_ns:
                return
            if until is not None and stats.min > until.physical_ns:
                continue
        yield _Part(path, group)

"""What `nerve tail` reads: the newest events of a window, then new ones as they come.

- :func:`read_tail` — the last N matching events, read newest first (a tail of a
  million-event log reads the unsealed tail and the newest row group or two).
- :func:`read_devices` — the same over this device's log and every peer log ``nerve sync``
  keeps, merged in log order, each event with its device.
- :func:`follow` — new events as they are stored (see :mod:`nerve.tail.follow`).
- :func:`tail_filter` / :func:`name_warnings` — kinds and sources as people type them,
  with nerve's bookkeeping kinds (``nerve.events.BOOKKEEPING_KINDS``) hidden unless asked.
- :func:`parse_instant` / :func:`format_times` — ``--since 10m``, ISO times, HLC stamps.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from nerve.clock import HLC_ZERO, Hlc
from nerve.errors import EventError, UsageError
from nerve.events import (
    NERVE_KINDS,
    NERVE_SOURCE,
    NERVE_SOURCE_NAME,
    VENDOR_MIN,
    SourceClass,
    display_source,
    parse_source,
)
from nerve.log import segments as seg
from nerve.log.lazy import pc
from nerve.log.reader import Snapshot, snapshot
from nerve.log.select import TailFilter
from nerve.log.window import before, newest
from nerve.tail.batch import Batch
from nerve.tail.follow import follow, follow_tables
from nerve.tail.when import format_times, parse_instant
from nerve.workspace import WorkspaceDir

__all__ = [
    "Batch",
    "Tail",
    "TailFilter",
    "TextFilter",
    "follow",
    "follow_devices",
    "follow_tables",
    "format_times",
    "name_warnings",
    "parse_instant",
    "read_devices",
    "read_tail",
    "tail_filter",
]


@dataclass(frozen=True)
class Tail:
    """The events shown, how many older ones matched too (counted up to what was asked),
    and the log's newest stamp when it was read (following starts after it)."""

    batch: Batch
    older: int
    newest: Hlc
    cursors: tuple[tuple[Path, Hlc], ...] = ()  # with all devices: each log's newest stamp


def read_tail(
    ws: WorkspaceDir,
    *,
    count: int | None,
    filt: TailFilter,
    since: Hlc | None = None,
    until: Hlc | None = None,
    count_older: int = 0,
) -> Tail:
    """The last ``count`` matching events (all if None), from ``since`` to ``until`` (both
    included, either open)."""
    snap = snapshot(ws.log_root)
    lower = before(since) if since is not None else HLC_ZERO
    window = newest(snap, count, filt, since=lower, until=until, count_older=count_older)
    return Tail(Batch(window.table), window.older, snap.newest)


_ORDER = [("physical_ns", "ascending"), ("logical", "ascending"), ("node", "ascending")]


def read_devices(
    ws: WorkspaceDir,
    *,
    count: int | None,
    filt: TailFilter,
    since: Hlc | None = None,
    until: Hlc | None = None,
    device: str | None = None,
) -> Tail:
    """The last ``count`` events ``filt`` keeps (all if None) of this device's log and every
    peer log, in log order (HLC, then node, then id), each with its device: the name from
    the sync group, else its node (see :func:`nerve.query.device_logs`); ``device`` keeps
    one device's. Each log is read for its own newest ``count`` (a peer log holds one
    device's events, so that is exact); ``.older`` is not counted (0)."""
    from nerve.log.codec import EMPTY
    from nerve.query import device_logs  # reads files only, but imports DuckDB: not at start

    own, names, roots = device_logs(ws.log_root)
    lower = before(since) if since is not None else HLC_ZERO
    tables: list[pa.Table] = []
    cursors = []
    for root, name in [(ws.log_root, own), *((r, "") for r in roots)]:
        snap = snapshot(root)
        cursors.append((root, snap.newest))
        if device is not None and name and name != device:
            continue  # a named device's log holds none of another's
        table = newest(snap, count, filt, since=lower, until=until).table
        tables.append(_with_devices(table, name, names, device))
    latest = max(stamp for _, stamp in cursors)
    table, shown = _merged(tables, EMPTY)
    if count is not None and table.num_rows > count:
        table, shown = table.slice(table.num_rows - count), shown[len(shown) - count :]
    return Tail(Batch(table, devices=shown), 0, latest, tuple(cursors))


def _with_devices(
    table: pa.Table, name: str, names: dict[str, str], device: str | None
) -> pa.Table:
    """``table`` with a ``_device`` column (``name``, else the node's name, else the node);
    only ``device``'s rows when one is given."""
    shown = [name or names.get(n, n) for n in table.column("node").to_pylist()]
    table = table.append_column("_device", pa.array(shown, pa.string()))
    if device is not None:
        table = table.filter(pc.equal(table.column("_device"), device))
    return table


def _merged(tables: list[pa.Table], empty: pa.Table) -> tuple[pa.Table, list[str]]:
    """The tables' rows in log order (HLC, node, id), and their ``_device`` column."""
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return empty, []
    merged = pa.concat_tables(tables, promote_options="permissive")
    merged = merged.take(pc.sort_indices(merged, [*_ORDER, ("id", "ascending")]))
    shown = [str(d) for d in merged.column("_device").to_pylist()]
    return merged.drop_columns(["_device"]), shown


def follow_devices(
    ws: WorkspaceDir,
    *,
    filt: TailFilter,
    cursors: tuple[tuple[Path, Hlc], ...],
    device: str | None = None,
    poll_s: float = 0.2,
    stop_after_s: float | None = None,
) -> Iterator[Batch]:
    """Each batch of matching events stored after ``cursors`` (:attr:`Tail.cursors`) in
    this log or any peer log, a peer log that appears later read from its start; polled
    every ``poll_s``, each log from its own newest (a peer's events arrive late, with older
    stamps than this log's newest: a batch is in log order, batches in the order stored);
    ``stop_after_s``: ends then."""
    from nerve.log.codec import EMPTY
    from nerve.log.reader import TailReader
    from nerve.query import device_logs

    readers = {root: TailReader(root, stamp) for root, stamp in cursors}
    started = time.monotonic()
    while stop_after_s is None or time.monotonic() - started < stop_after_s:
        own, names, roots = device_logs(ws.log_root)
        tables = []
        for root, name in [(ws.log_root, own), *((r, "") for r in roots)]:
            table = readers.setdefault(root, TailReader(root)).poll()
            if table.num_rows:
                tables.append(_with_devices(filt.apply(table), name, names, device))
        table, shown = _merged(tables, EMPTY)
        if table.num_rows:
            yield Batch(table, devices=shown)
        time.sleep(poll_s)


@dataclass(frozen=True)
class TextFilter(TailFilter):
    """A :class:`TailFilter` that also keeps only the events of these senses (their
    subject) and whose line holds ``grep`` (any case). Applied where the rows are read, so
    a daemon follower, which filters by kind and source, sends a superset."""

    subjects: tuple[str, ...] = ()
    grep: str = ""

    @property
    def everything(self) -> bool:
        return super().everything and not (self.subjects or self.grep)

    @property
    def narrows(self) -> bool:
        """Whether it reads more than kind and source (so a count of only those overcounts)."""
        return bool(self.subjects or self.grep)

    @property
    def columns(self) -> list[str]:
        return [
            *super().columns,
            *(["subject"] if self.subjects else []),
            *(["line"] if self.grep else []),
        ]

    def mask(self, table: pa.Table | pa.RecordBatch) -> pa.ChunkedArray | pa.Array:
        keep = super().mask(table)
        names = table.schema.names
        if self.subjects and "subject" in names:
            wanted = pa.array(self.subjects, pa.string())
            keep = pc.and_(keep, pc.is_in(table.column("subject"), wanted))
        if self.grep and "line" in names:
            found = pc.match_substring(table.column("line"), self.grep, ignore_case=True)
            keep = pc.and_(keep, pc.fill_null(found, False))  # an erased line holds nothing
        return keep


def tail_filter(
    kinds: list[str],
    sources: list[str],
    *,
    all_kinds: bool,
    senses: list[str] | None = None,
    grep: str = "",
) -> TextFilter:
    """A filter from ``--kind`` / ``--source`` values (``nerve`` names nerve's own source),
    ``--sense`` names and ``--grep`` text; an unknown source class is a
    :class:`UsageError` suggesting the nearest name."""
    return TextFilter(
        tuple(kinds),
        tuple(_source(text) for text in sources),
        () if all_kinds or kinds else TailFilter.of(None, None, all_kinds=False).hidden,
        subjects=tuple(senses or ()),
        grep=grep,
    )


def _source(text: str) -> int:
    if text.strip().lower() == NERVE_SOURCE_NAME:
        return NERVE_SOURCE
    try:
        return parse_source(text)
    except EventError:
        known = [*(s.name.lower() for s in SourceClass), NERVE_SOURCE_NAME]
        raise UsageError(
            f"{text!r} is not a source class{_guess(text.strip().lower(), known)} "
            f"(one of {', '.join(known)}, or vendor:<code>)"
        ) from None


def _guess(word: str, known: list[str]) -> str:
    close = difflib.get_close_matches(word, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def name_warnings(ws: WorkspaceDir, filt: TailFilter) -> list[str]:
    """A line for each ``--kind`` / ``--source`` / ``--sense`` that matches nothing known:
    kinds in the log or nerve's own, standard classes, ``nerve``, vendor codes and subjects
    in the log. The log is read (one column) only when a name is not among nerve's own."""
    odd_kinds = [k for k in filt.kinds if k not in NERVE_KINDS]
    odd_sources = [s for s in filt.sources if s >= VENDOR_MIN and s != NERVE_SOURCE]
    senses = list(getattr(filt, "subjects", ()))
    if not (odd_kinds or odd_sources or senses):
        return []
    snap = snapshot(ws.log_root)
    messages = _sense_warnings(snap, senses) if senses else []
    if odd_kinds:
        present = _present(snap, "kind")
        known = sorted(set(NERVE_KINDS) | {str(k) for k in present})
        messages += [f"no kind {k!r}{_guess(k, known)}" for k in odd_kinds if k not in present]
    if odd_sources:
        codes = _present(snap, "source")
        messages += [
            f"no source {display_source(s)!r} in this log" for s in odd_sources if s not in codes
        ]
    return messages


def _sense_warnings(snap: Snapshot, senses: list[str]) -> list[str]:
    """``no sense 'cpuu'; did you mean 'cpu'?`` for a ``--sense`` no event names."""
    present = {str(s) for s in _present(snap, "subject") if s}
    return [f"no sense {s!r}{_guess(s, sorted(present))}" for s in senses if s not in present]


def _present(snap: Snapshot, column: str) -> set[object]:
    """The distinct values of one column over the whole log."""
    found = set(snap.tail.column(column).unique().to_pylist())
    for path in snap.files:
        table = pq.read_table(seg.source(path), columns=[column])
        found.update(pa.chunked_array(table.column(column)).unique().to_pylist())
    return found

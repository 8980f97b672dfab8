"""A query over the whole log, read once per sealed segment: a segment's file is named by
the blake3 of its bytes and never changes, so what a query found in it is kept (in this
process, up to 100,000 rows) and only the unsealed tail is read again.
Callers fold the parts into one answer. A query over a span of time skips the segments whose
rows all lie outside it, and one for the newest rows reads the segments newest first, only
until the rows it holds are newer than any the next could add (each segment's first and last
time are read once, like its rows).

Only a connection :func:`nerve.query.connect` opened reads this way (its ``events`` are the
log's segments and tail); on any other (an agent's screened rows) the query reads ``events``
as written.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import duckdb

from nerve.query import EVENT_COLUMNS, TAIL, segment_sources

__all__ = ["by_segment", "newest_by_segment"]

_KEPT_ROWS = 100_000  # the rows kept, over every part
_found: OrderedDict[tuple[str, str, tuple[Any, ...], str], list[Any]] = OrderedDict()
_held = 0
_lock = threading.Lock()
_spans: dict[str, tuple[int, int] | None] = {}  # a segment's first and last time (None: no rows)
_T = "coalesce(valid_time_ns, physical_ns)"
Span = tuple[int, int]
"""``[start_ns, end_ns)``: the times, ``coalesce(valid_time_ns, physical_ns)``, a query reads."""


def _same(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return row


def by_segment(
    conn: duckdb.DuckDBPyConnection,
    sql: str,
    args: Sequence[Any] = (),
    convert: Callable[[tuple[Any, ...]], Any] = _same,
    *,
    within: Span | None = None,
) -> list[list[Any]]:
    """``sql`` (reading ``events``) run over each sealed segment and over the tail: each
    part's rows, each passed through ``convert`` (a segment's are kept converted). One part,
    over ``events``, on a connection not opened by :func:`nerve.query.connect`. A segment
    holding no row (with ``within``: no row in those times, the only ones ``sql`` reads) is
    not read and gives no part, so ``sql`` must give no row over no rows (no aggregate
    without a GROUP BY)."""
    sources = segment_sources(conn)
    if sources is None:
        return [[convert(r) for r in conn.execute(sql, list(args)).fetchall()]]
    read = [s for s in sources if _meets(_span(conn, s), within)]
    parts = [_segment(conn, source, sql, tuple(args), convert) for source in read]
    return [*parts, [convert(r) for r in _over(conn, TAIL, sql, args)]]


def newest_by_segment(
    conn: duckdb.DuckDBPyConnection,
    sql: str,
    args: Sequence[Any],
    convert: Callable[[tuple[Any, ...]], tuple[tuple[int, ...], Any]],
    limit: int,
    *,
    within: Span | None = None,
) -> list[tuple[tuple[int, ...], Any]]:
    """The parts of :func:`by_segment` that can hold the newest ``limit`` rows, as one list:
    ``convert`` gives each row's place (its time first) and the row. The tail is read, then
    the segments from the one whose last time is the newest, until ``limit`` rows are held
    and the next segment's last time is older than the ``limit``-th newest held (it could
    add none of the newest). Callers sort the places and keep the first ``limit``."""
    sources = segment_sources(conn)
    if sources is None:
        return [convert(r) for r in conn.execute(sql, list(args)).fetchall()]
    found = [convert(r) for r in _over(conn, TAIL, sql, args)]
    times = sorted((place[0] for place, _ in found), reverse=True)[:limit]  # the newest held
    spans = [(span, s) for s in sources if (span := _span(conn, s)) and _meets(span, within)]
    for span, source in sorted(spans, key=lambda placed: placed[0][1], reverse=True):
        if len(times) >= limit and span[1] < times[limit - 1]:
            break  # this segment and every older one end before the newest rows held
        part = _segment(conn, source, sql, tuple(args), convert)
        found += part
        times += [place[0] for place, _ in part]
        times.sort(reverse=True)  # runs already in order: cheap
        del times[limit:]
    return found


def _meets(span: tuple[int, int] | None, within: Span | None) -> bool:
    """Whether a segment of ``span`` (None: it holds no rows) may hold a row ``within``."""
    if span is None:
        return False
    return within is None or (span[0] < within[1] and span[1] >= within[0])


def _span(conn: duckdb.DuckDBPyConnection, source: str) -> tuple[int, int] | None:
    """The segment's first and last time (None when it holds no rows), read once."""
    with _lock:
        if source in _spans:
            return _spans[source]
    lo, hi = conn.execute(f"SELECT min({_T}), max({_T}) FROM {source}").fetchone() or (None, None)
    span = None if lo is None or hi is None else (int(lo), int(hi))
    with _lock:
        if len(_spans) > 100_000:  # segments a long-lived process no longer reads
            _spans.clear()
        _spans[source] = span
    return span


def _segment(
    conn: duckdb.DuckDBPyConnection,
    source: str,
    sql: str,
    args: tuple[Any, ...],
    convert: Callable[[tuple[Any, ...]], Any],
) -> list[Any]:
    global _held
    key = (source, sql, args, f"{convert.__module__}.{convert.__qualname__}")
    with _lock:
        rows = _found.get(key)
        if rows is not None:
            _found.move_to_end(key)
            return rows
    rows = [convert(r) for r in _over(conn, source, sql, args)]
    with _lock:
        if key not in _found:
            _found[key], _held = rows, _held + len(rows)
        while _held > _KEPT_ROWS and len(_found) > 1:
            _held -= len(_found.popitem(last=False)[1])
    return rows


def _over(
    conn: duckdb.DuckDBPyConnection, source: str, sql: str, args: Sequence[Any]
) -> list[tuple[Any, ...]]:
    events = f"events AS (SELECT {EVENT_COLUMNS} FROM {source})"
    query = sql.strip()
    if query[:5].upper() == "WITH ":  # one WITH list: events first, then the query's own
        query = f"WITH {events}, {query[5:]}"
    else:
        query = f"WITH {events} {query}"
    return conn.execute(query, list(args)).fetchall()

"""A query over the whole log, read once per sealed segment: a segment's file is named by
the blake3 of its bytes and never changes, so what a query found in it is kept (in this
process, up to 100,000 rows) and only the unsealed tail is read again.
Callers fold the parts into one answer.

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

from nerve.query import EVENT_COLUMNS, segment_sources

__all__ = ["by_segment"]

_KEPT_ROWS = 100_000  # the rows kept, over every part
_found: OrderedDict[tuple[str, str, tuple[Any, ...], str], list[Any]] = OrderedDict()
_held = 0
_lock = threading.Lock()


def _same(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return row


def by_segment(
    conn: duckdb.DuckDBPyConnection,
    sql: str,
    args: Sequence[Any] = (),
    convert: Callable[[tuple[Any, ...]], Any] = _same,
) -> list[list[Any]]:
    """``sql`` (reading ``events``) run over each sealed segment and over the tail: each
    part's rows, each passed through ``convert`` (a segment's are kept converted). One part,
    over ``events``, on a connection not opened by :func:`nerve.query.connect`."""
    sources = segment_sources(conn)
    if sources is None:
        return [[convert(r) for r in conn.execute(sql, list(args)).fetchall()]]
    parts = [_segment(conn, source, sql, tuple(args), convert) for source in sources]
    return [*parts, [convert(r) for r in _over(conn, "_tail", sql, args)]]


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

"""A query over the whole log, read once per sealed segment: a segment's file is named by
the blake3 of its bytes and never changes, so what a query found in it is kept (in this
process) and only the unsealed tail is read again. Callers fold the parts into one answer.

Only a connection :func:`nerve.query.connect` opened reads this way (its ``events`` are the
log's segments and tail); on any other (an agent's screened rows) the query reads ``events``
as written.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import duckdb

from nerve.query import EVENT_COLUMNS, segment_sources

__all__ = ["by_segment"]

_KEPT = 1_024
_found: OrderedDict[tuple[str, str, tuple[Any, ...]], list[tuple[Any, ...]]] = OrderedDict()
_lock = threading.Lock()


def by_segment(
    conn: duckdb.DuckDBPyConnection, sql: str, args: Sequence[Any] = ()
) -> list[list[tuple[Any, ...]]]:
    """``sql`` (reading ``events``) run over each sealed segment and over the tail, each
    part's rows; one part, over ``events``, on a connection not opened by
    :func:`nerve.query.connect`."""
    sources = segment_sources(conn)
    if sources is None:
        return [conn.execute(sql, list(args)).fetchall()]
    parts = [_segment(conn, source, sql, tuple(args)) for source in sources]
    return [*parts, _over(conn, "_tail", sql, args)]


def _segment(
    conn: duckdb.DuckDBPyConnection, source: str, sql: str, args: tuple[Any, ...]
) -> list[tuple[Any, ...]]:
    key = (source, sql, args)
    with _lock:
        rows = _found.get(key)
        if rows is not None:
            _found.move_to_end(key)
            return rows
    rows = _over(conn, source, sql, args)
    with _lock:
        _found[key] = rows
        while len(_found) > _KEPT:
            _found.popitem(last=False)
    return rows


def _over(
    conn: duckdb.DuckDBPyConnection, source: str, sql: str, args: Sequence[Any]
) -> list[tuple[Any, ...]]:
    rows = f"WITH events AS (SELECT {EVENT_COLUMNS} FROM {source}) {sql}"
    return conn.execute(rows, list(args)).fetchall()

"""One in-memory DuckDB database for the whole ``nerve ui`` process, a cursor per read.

Opening a database costs tens of milliseconds (more on a busy machine); a cursor is a new
connection to the same one, with its own registered tables and temporary views, so requests
stay apart and run in parallel threads. Functions are the database's: registered once.
"""

from __future__ import annotations

import threading

import duckdb

__all__ = ["cursor"]

_LOCK = threading.Lock()
_BASE: list[duckdb.DuckDBPyConnection] = []


def cursor() -> duckdb.DuckDBPyConnection:
    """A new connection to the process's database (``nerve_blake3`` registered)."""
    from nerve.query import register_blake3

    with _LOCK:
        if not _BASE:
            base = duckdb.connect()
            base.execute("SET enable_progress_bar_print = false")
            register_blake3(base)
            _BASE.append(base)
        return _BASE[0].cursor()

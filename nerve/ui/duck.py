"""One in-memory DuckDB database for the whole ``nerve ui`` process, a cursor per read.

Opening a database costs tens of milliseconds (more on a busy machine); a cursor is a new
connection to the same one, with its own registered tables and temporary views, so requests
stay apart and run in parallel threads. Functions and file systems are the database's:
registered once.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import duckdb

__all__ = ["cursor", "parquet"]

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}


def _base() -> duckdb.DuckDBPyConnection:
    from nerve.query import register_blake3

    with _LOCK:
        if "base" not in _STATE:
            base = duckdb.connect()
            base.execute("SET enable_progress_bar_print = false")
            register_blake3(base)
            _STATE["base"] = base
        return _STATE["base"]  # type: ignore[no-any-return]


def cursor() -> duckdb.DuckDBPyConnection:
    """A new connection to the process's database (``nerve_blake3`` registered)."""
    return _base().cursor()


def parquet(paths: list[str]) -> str:
    """``read_parquet`` over segment files, for any cursor: an encrypted log's are read
    through its file system (:mod:`nerve.encfs`), registered on first use."""
    from nerve.log.crypt import is_encrypted
    from nerve.query import parquet_sql

    files = [Path(p) for p in paths]
    if files and is_encrypted(files[0].parent.parent):
        from nerve.encfs import register

        base = _base()
        with _LOCK:
            if "encrypted" not in _STATE:
                register(base)
                _STATE["encrypted"] = True
    return parquet_sql(files)

"""Read-only SQL for agents: DuckDB locked to the log's own files, with a row cap and a clock.

:func:`open_sandbox` builds the same ``events`` view and projections as ``nerve query``, then
turns off everything that reaches outside them, and locks the configuration so no statement
can turn it back on:

- the rows are read before the lock and held in memory, privacy applied, so SQL sees
  only them: no segment file (``read_parquet``) nor the raw tail is reachable;
- ``enable_external_access = false`` with no allowed path: ``read_csv('/etc/passwd')``,
  ``ATTACH 'x.db'``, ``COPY … TO`` a file, ``INSTALL`` / ``LOAD`` of extensions all fail
  with DuckDB's permission error;
- no spilling to disk (``temp_directory = ''``), no extension auto-install or auto-load, no
  Python replacement scans (a query cannot name a Python object of this process);
- ``memory_limit`` and ``threads`` bounded, then ``lock_configuration = true``.

:func:`run_sql` also refuses, before DuckDB runs anything, text that is not exactly one
``SELECT`` (``DESCRIBE``, ``SUMMARIZE``, ``SHOW``, ``FROM …`` and ``VALUES`` are SELECTs to
DuckDB): ``PRAGMA``, ``SET``, ``CREATE``, ``COPY``, ``ATTACH`` … never reach the engine.
Rows stop at ``limit`` (one more is read to know that there were more) and a query still
running after ``timeout_ms`` is interrupted (``conn.interrupt()`` from a timer thread).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from nerve.canonical import jsonable, loads_bounded
from nerve.errors import AccessRefused, EventError, UsageError
from nerve.query import (
    TAIL,
    Devices,
    define_views,
    device_logs,
    load_projections,
    register_peers,
    register_snapshot,
    source_sql,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from nerve.api import Workspace

__all__ = ["Shown", "SqlResult", "open_sandbox", "run_sql"]

MEMORY_LIMIT = "1GB"
THREADS = 2
_SQL_HINT = (
    "one SELECT over events or a projection, e.g. SELECT kind, count(*) FROM events GROUP BY ALL"
)


Shown = Callable[["pa.Table"], "pa.Table"]
_SHOWN = "_events_shown"


def open_sandbox(ws: Workspace, shown: Shown | None = None) -> duckdb.DuckDBPyConnection:
    """A connection over the log as it is now that reads no file at all.

    The snapshot's rows are read once, passed through ``shown`` (the privacy rules applied
    to stored events: :meth:`nerve.privacy.screen.Screen.rows`) and held in memory; ``events``
    and every projection are views over those rows only, and ``all_events`` over those and
    the synced peers' rows, read and screened the same way. The segment files and the
    unsealed tails are not reachable from SQL: the raw rows are never left registered.
    """
    snap = ws.log.snapshot()
    conn = duckdb.connect()
    try:
        conn.execute("SET enable_progress_bar_print = false")  # DuckDB prints it on stdout
        register_snapshot(conn, snap)
        rows = conn.sql(f"SELECT * FROM {source_sql(snap)}").to_arrow_table()
        conn.unregister(TAIL)
        conn.register(_SHOWN, shown(rows) if shown is not None else rows)
        devices = _screened_peers(conn, ws.log_root, shown)
        define_views(
            conn,
            _SHOWN,
            load_projections(ws.settings.projection_dirs()),
            ws.settings.views(),
            devices=devices,
        )
        _lock(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _screened_peers(
    conn: duckdb.DuckDBPyConnection, log_root: Path, shown: Shown | None
) -> Devices:
    """The peer logs' rows, screened as the own rows are, registered as ``_peers_shown``
    (their raw tails registered only while they are read)."""
    own, names, roots = device_logs(log_root)
    source = register_peers(conn, roots)
    if source is None:
        return Devices(own, names)
    rows = conn.sql(f"SELECT * FROM {source}").to_arrow_table()
    for i in range(len(roots)):
        conn.unregister(f"_peer_tail_{i}")
    conn.register(_PEERS_SHOWN, shown(rows) if shown is not None else rows)
    return Devices(own, names, _PEERS_SHOWN)


_PEERS_SHOWN = "_peers_shown"


LOCKED: tuple[tuple[str, object], ...] = (
    ("python_enable_replacements", False),
    ("autoinstall_known_extensions", False),
    ("autoload_known_extensions", False),
    ("allowed_paths", []),
    ("allowed_directories", []),
    ("temp_directory", ""),
    ("enable_external_access", False),
    ("memory_limit", MEMORY_LIMIT),
    ("threads", THREADS),
    ("lock_configuration", True),
)
"""The DuckDB settings a sandbox connection is held to, set in this order: no Python variable
read as a table, no extension, no file, nothing spilled to disk; the last locks them all."""


def _lock(conn: duckdb.DuckDBPyConnection) -> None:
    """Set :data:`LOCKED` on ``conn``."""
    for name, value in LOCKED:
        conn.execute(f"SET {name} = ?", [value])


@dataclass(frozen=True)
class SqlResult:
    """Columns, rows as JSON values, and whether rows were left out at ``limit``."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool


def run_sql(
    conn: duckdb.DuckDBPyConnection,
    sql: str,
    *,
    limit: int,
    timeout_ms: int,
    max_bytes: int | None = None,
) -> SqlResult:
    """The first ``limit`` rows of one SELECT; :class:`AccessRefused` for anything else, a
    file outside the log, or a query still running after ``timeout_ms``.

    Rows stop too once they hold about ``max_bytes`` of text: what follows (the privacy
    screen, the JSON) then handles no more than a call may return, however large a value
    the SQL made (``repeat('x', 10**8)``)."""
    statement = _one_select(conn, sql)
    timer = threading.Timer(timeout_ms / 1000, conn.interrupt)
    timer.start()
    try:
        rel = conn.sql(statement)
        json_columns = {i for i, kind in enumerate(rel.types) if str(kind) == "JSON"}
        rows, cut = _fetch(conn.execute(statement), limit, max_bytes)
    except duckdb.InterruptException:
        raise AccessRefused(
            f"the query ran longer than {timeout_ms / 1000:g} s and was stopped",
            hint="narrow it (a WHERE on ts, a LIMIT, no cross join), or raise mcp.query_timeout",
        ) from None
    except duckdb.PermissionException as exc:
        raise AccessRefused(
            f"the query reaches outside this workspace's log ({_first_line(exc)}); only events "
            "and the projections can be read",
            hint=_SQL_HINT,
        ) from None
    except duckdb.Error as exc:
        raise UsageError(f"query failed: {_first_line(exc)}", hint=_SQL_HINT) from None
    finally:
        timer.cancel()
    columns = list(rel.columns)
    out = [[_cell(v, i in json_columns) for i, v in enumerate(row)] for row in rows[:limit]]
    return SqlResult(columns, out, truncated=cut or len(rows) > limit)


_FETCH = 64


def _fetch(
    cursor: duckdb.DuckDBPyConnection, limit: int, max_bytes: int | None
) -> tuple[list[Any], bool]:
    """Rows streamed until ``limit + 1`` or ``max_bytes``; and whether the bytes cut them
    short. The rows after them are never computed."""
    rows: list[Any] = []
    size = 0
    while len(rows) <= limit:
        chunk = cursor.fetchmany(min(_FETCH, limit + 1 - len(rows)))
        if not chunk:
            return rows, False
        for row in chunk:
            size += _size(row)
            if max_bytes is not None and size > max_bytes:
                return rows, True
            rows.append(row)
    return rows, False


def _size(value: Any) -> int:
    """About how many bytes ``value`` takes as JSON (bytes as hex), without building it."""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, bytes | bytearray | memoryview):
        return 2 * len(value) + 2
    if isinstance(value, dict):
        return sum(_size(k) + _size(v) for k, v in value.items()) + 2
    if isinstance(value, list | tuple):
        return sum(_size(v) + 1 for v in value) + 2
    return 8


def _one_select(conn: duckdb.DuckDBPyConnection, sql: str) -> str:
    try:
        statements = conn.extract_statements(sql)
    except duckdb.Error as exc:
        raise UsageError(f"query failed: {_first_line(exc)}", hint=_SQL_HINT) from None
    if len(statements) != 1:
        raise AccessRefused(
            f"the query holds {len(statements)} statements; exactly one SELECT is allowed",
            hint=_SQL_HINT,
        )
    kind, text = statements[0].type, str(statements[0].query).strip()
    if kind != duckdb.StatementType.SELECT:
        name = text.split()[0].upper()  # as written: INSTALL is a LOAD to DuckDB
        raise AccessRefused(
            f"{name} statements are refused: this connection is read-only (one SELECT only)",
            hint=_SQL_HINT,
        )
    return text


def _first_line(exc: BaseException) -> str:
    """DuckDB's message without its ``LINE 1: …`` excerpt."""
    return str(exc).strip().split("\n\n")[0].replace("\n", " ")


def _cell(value: Any, is_json: bool = False) -> Any:
    """A value as JSON: JSON columns parsed, bytes as hex, times as ISO text, NaN as text."""
    if is_json and isinstance(value, str):
        try:
            return loads_bounded(value)
        except (EventError, ValueError):
            return value
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _cell(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_cell(v) for v in value]
    return jsonable(value)

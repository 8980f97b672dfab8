"""One sense's data, as SQL: its observations flattened into columns, its state history, and
the views it ships.

In nerve a sense's data are its events. :func:`sense_views` adds, on a connection from
:meth:`nerve.workspace.WorkspaceDir.connect`, three kinds of temporary views for one sense:

- ``observations``: the sense's ``observation`` events (subject = the sense's name, which is
  what the kernel gives an observation that names no subject of its own), one row each:
  ``ts``, ``physical_ns``, ``logical``, ``source_name``, ``line``, then one column per
  top-level key of the payloads, typed from the log (DuckDB's ``json_group_structure``:
  integers ``BIGINT``, reals ``DOUBLE``, text ``VARCHAR``, booleans ``BOOLEAN``, anything
  nested or mixed ``JSON``). A payload key named like a fixed column becomes ``data_<key>``.
  Payloads that are not objects give one ``value`` column (``JSON``).
- ``states``: its ``sense.state`` history: ``ts``, ``physical_ns``, ``logical``, ``reason``,
  ``duration_ms``, ``state`` (``JSON``).
- each ``senses/<name>/*.sql`` file (one SELECT, which may read the two views above):
  a view named ``<name>__<file stem>``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nerve.errors import ConfigError, UsageError

if TYPE_CHECKING:
    import duckdb

__all__ = ["FIXED_COLUMNS", "sense_schema", "sense_views"]

FIXED_COLUMNS = ("ts", "physical_ns", "logical", "source_name", "line")
_SCALARS = {
    "UBIGINT": "BIGINT",
    "BIGINT": "BIGINT",
    "DOUBLE": "DOUBLE",
    "VARCHAR": "VARCHAR",
    "BOOLEAN": "BOOLEAN",
}


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def payload_columns(conn: duckdb.DuckDBPyConnection, sense: str) -> list[tuple[str, str]]:
    """``(key, SQL type)`` for each top-level payload key of ``sense``'s observations."""
    row = conn.execute(
        "SELECT json_group_structure(data) FROM events "
        "WHERE kind = 'observation' AND subject = ? AND data IS NOT NULL",
        [sense],
    ).fetchone()
    if row is None or row[0] is None:
        return []
    structure = json.loads(row[0])
    if not isinstance(structure, dict):
        return [("value", _WHOLE)]
    return [(key, _type(kind)) for key, kind in structure.items()]


_WHOLE = "WHOLE"  # payloads that are not objects: the whole payload is one column


def _type(kind: Any) -> str:
    return _SCALARS.get(kind, "JSON") if isinstance(kind, str) else "JSON"


def _observations_sql(sense: str, columns: list[tuple[str, str]]) -> str:
    picked = list(FIXED_COLUMNS)
    for key, kind in columns:
        name = f"data_{key}" if key in FIXED_COLUMNS else key
        if kind == _WHOLE:
            expr = "data"
        elif kind == "JSON":
            expr = f"data -> {_literal('$.' + json.dumps(key))}"
        else:
            expr = f"TRY_CAST(data ->> {_literal('$.' + json.dumps(key))} AS {kind})"
        picked.append(f"{expr} AS {_ident(name)}")
    return (
        f"SELECT {', '.join(picked)} FROM events "
        f"WHERE kind = 'observation' AND subject = {_literal(sense)} "
        "ORDER BY physical_ns, logical"
    )


def _states_sql(sense: str) -> str:
    return (
        "SELECT ts, physical_ns, logical, data ->> 'reason' AS reason, "
        "TRY_CAST(data ->> 'duration_ms' AS DOUBLE) AS duration_ms, data -> 'state' AS state "
        f"FROM events WHERE kind = 'sense.state' AND subject = {_literal(sense)} "
        "ORDER BY physical_ns, logical"
    )


def sense_views(conn: duckdb.DuckDBPyConnection, sense: str, folder: Path | None) -> list[str]:
    """Create the sense's views on ``conn``; their names. ``folder`` is ``senses/<name>/``
    (its ``*.sql`` files become views), or None when the sense has none."""
    import duckdb

    known = conn.execute(
        "SELECT count(*) FROM events WHERE subject = ? AND kind IN ('observation', 'sense.state')",
        [sense],
    ).fetchone()
    if folder is None and (known is None or known[0] == 0):
        raise UsageError(f"no sense {sense!r}: nothing in the log and no senses/{sense}/ folder")
    columns = payload_columns(conn, sense)
    conn.execute(f"CREATE OR REPLACE TEMP VIEW observations AS {_observations_sql(sense, columns)}")
    conn.execute(f"CREATE OR REPLACE TEMP VIEW states AS {_states_sql(sense)}")
    made = ["observations", "states"]
    for path in sorted(folder.glob("*.sql")) if folder is not None else []:
        name = f"{sense}__{path.stem}"
        sql = path.read_text(encoding="utf-8").strip().rstrip(";")
        try:
            conn.execute(f"CREATE OR REPLACE TEMP VIEW {_ident(name)} AS {sql}")
        except duckdb.Error as exc:
            raise ConfigError(f"{path}: sense view does not load: {exc}") from None
        made.append(name)
    return made


def sense_schema(conn: duckdb.DuckDBPyConnection, views: list[str]) -> list[tuple[str, str, str]]:
    """``(view, column, type)`` for each column of ``views``."""
    rows = []
    for view in views:
        for column, kind, *_ in conn.execute(f"DESCRIBE {_ident(view)}").fetchall():
            rows.append((view, str(column), str(kind)))
    return rows

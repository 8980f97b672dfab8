"""``nerve fleet query``: SQL over every host's events, reading only the files it must.

The Iceberg scan is planned with the time filter, so only files whose ``physical_ns``
bounds reach the window are listed (the manifests' statistics, no data read); a host
filter keeps only that host's files. DuckDB then reads those files through pyarrow
datasets (projection and filters pushed down) as the view ``fleet_events``: the columns of
``events`` plus ``host``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nerve.fleet.warehouse import Warehouse, host_of

__all__ = ["FleetPlan", "connect_fleet", "plan"]


@dataclass(frozen=True)
class FleetPlan:
    files: dict[str, list[str]]  # host -> file URIs to read
    total: int  # files the table holds
    since_ns: int | None

    @property
    def read(self) -> int:
        return sum(len(v) for v in self.files.values())


def plan(
    wh: Warehouse, *, since_ns: int | None = None, hosts: list[str] | None = None
) -> FleetPlan:
    if wh.table.current_snapshot() is None:
        return FleetPlan({}, 0, since_ns)
    total = len(wh.data_files())
    row_filter = "True" if since_ns is None else f"physical_ns >= {int(since_ns)}"
    files: dict[str, list[str]] = {}
    for task in wh.table.scan(row_filter=row_filter).plan_files():
        host = host_of(task.file.file_path)
        if host is not None and (not hosts or host in hosts):
            files.setdefault(host, []).append(task.file.file_path)
    return FleetPlan(files, total, since_ns)


def connect_fleet(wh: Warehouse, fleet: FleetPlan) -> Any:
    """A DuckDB connection with ``fleet_events`` over the planned files."""
    import duckdb
    import pyarrow as pa
    import pyarrow.dataset as ds

    from nerve.fleet.warehouse import table_schema
    from nerve.query import EVENT_COLUMNS

    conn = duckdb.connect()
    conn.execute("SET enable_progress_bar_print = false")
    parts = []
    for index, (host, uris) in enumerate(sorted(fleet.files.items())):
        filesystem, _ = wh.fs_path(uris[0])
        paths = [wh.fs_path(u)[1] for u in uris]
        name = f"_fleet_{index}"
        dataset = ds.FileSystemDataset.from_paths(
            paths, schema=table_schema(), format=ds.ParquetFileFormat(), filesystem=filesystem
        )  # from the paths alone: no listing, no footer read before the query
        conn.register(name, dataset)
        host_sql = host.replace("'", "''")
        parts.append(f"SELECT *, '{host_sql}' AS host FROM {name}")
    if not parts:  # an empty table still has the view, with no rows
        empty = pa.Table.from_batches([], schema=table_schema())
        conn.register("_fleet_empty", empty)
        parts.append("SELECT *, ''::VARCHAR AS host FROM _fleet_empty")
    where = "" if fleet.since_ns is None else f" WHERE physical_ns >= {int(fleet.since_ns)}"
    source = "(" + " UNION ALL ".join(parts) + ")"
    conn.execute(
        f"CREATE OR REPLACE TEMP VIEW fleet_events AS SELECT {EVENT_COLUMNS}, host "
        f"FROM {source}{where}"
    )
    return conn

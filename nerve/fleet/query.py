"""``nerve fleet query``: SQL over every host's events, reading only the files it must.

The Iceberg scan is planned with the time filter, so only files whose ``physical_ns``
bounds reach the window are listed (the manifests' statistics, no data read); a host
filter keeps only that host's files. DuckDB then reads those files through pyarrow
datasets (projection and filters pushed down) as the view ``fleet_events``: the columns of
``events`` plus ``host``.

The view holds what every Iceberg engine reads: a file registered twice is read twice, and
a file with delete files is read through pyiceberg with them applied. Such a table no
longer holds what its hosts sealed; the plan says so (``warnings``) and ``fleet verify``
fails it.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import blake3

from nerve.fleet.warehouse import FleetError, Warehouse, host_of, segment_name, write_local

__all__ = ["FleetPlan", "connect_fleet", "plan"]


@dataclass(frozen=True)
class FleetPlan:
    files: dict[str, list[str]]  # host -> file URIs to read
    total: int  # files the table holds
    since_ns: int | None
    deletes: dict[str, Any] = field(default_factory=dict)  # uri -> its task, with deletes
    warnings: list[str] = field(default_factory=list)

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
    deletes: dict[str, Any] = {}
    for task in wh.table.scan(row_filter=row_filter).plan_files():
        host = host_of(task.file.file_path)
        if host is not None and (not hosts or host in hosts):
            files.setdefault(host, []).append(task.file.file_path)
            if task.delete_files:
                deletes[task.file.file_path] = task
    return FleetPlan(files, total, since_ns, deletes, _warnings(files, deletes))


def _warnings(files: dict[str, list[str]], deletes: dict[str, Any]) -> list[str]:
    twice = sum(n - 1 for group in files.values() for n in Counter(group).values() if n > 1)
    out = []
    if twice:
        out.append(f"{twice} file(s) are registered more than once and read as often")
    if deletes:
        out.append(f"{len(deletes)} file(s) have delete files applied: rows the hosts sealed")
    return [w + " (the table is not what the hosts shipped: run `nerve fleet verify`)" for w in out]


WarehouseSource = Warehouse | Callable[[], Warehouse]  # a table, or how to open it if needed


def _opened(wh: WarehouseSource) -> Warehouse:
    return wh if isinstance(wh, Warehouse) else wh()


def connect_fleet(wh: WarehouseSource, fleet: FleetPlan, cache: Path | None = None) -> Any:
    """A DuckDB connection with ``fleet_events`` over the planned files (``wh``: the
    table, or a function opening it, called only if a file must be fetched or read
    through it).

    With ``cache`` (a folder), each file is read from there, fetched on first use: a file's
    name is the blake3 of its bytes, so a cached copy is checked once and never goes stale.
    Without, the files are read from the store through pyarrow datasets.
    """
    import duckdb

    from nerve.query import EVENT_COLUMNS, register_blake3

    conn = duckdb.connect()
    conn.execute("SET enable_progress_bar_print = false")
    register_blake3(conn)
    local = fetch(wh, fleet, cache) if cache is not None else None
    parts = []
    for index, (host, all_uris) in enumerate(sorted(fleet.files.items())):
        host_sql = host.replace("'", "''")
        uris = [u for u in all_uris if u not in fleet.deletes]
        for count, uri in enumerate(u for u in all_uris if u in fleet.deletes):
            name = f"_fleet_{index}_deleted_{count}"
            conn.register(name, _with_deletes(_opened(wh), fleet.deletes[uri]))
            parts.append(f"SELECT *, '{host_sql}' AS host FROM {name}")
        if not uris:
            continue
        if local is not None:
            names = ", ".join("'" + str(local[u]).replace("'", "''") + "'" for u in uris)
            source = f"read_parquet([{names}])"
        else:
            source = f"_fleet_{index}"
            conn.register(source, _dataset(_opened(wh), uris))
        parts.append(f"SELECT *, '{host_sql}' AS host FROM {source}")
    if not parts:  # an empty table still has the view, with no rows
        conn.register("_fleet_empty", _empty())
        parts.append("SELECT *, ''::VARCHAR AS host FROM _fleet_empty")
    where = "" if fleet.since_ns is None else f" WHERE physical_ns >= {int(fleet.since_ns)}"
    source = "(" + " UNION ALL BY NAME ".join(parts) + ")"
    conn.execute(
        f"CREATE OR REPLACE TEMP VIEW fleet_events AS SELECT {EVENT_COLUMNS}, host "
        f"FROM {source}{where}"
    )
    return conn


def _dataset(wh: Warehouse, uris: list[str]) -> Any:
    import pyarrow.dataset as ds

    from nerve.fleet.warehouse import table_schema

    filesystem, _ = wh.fs_path(uris[0])
    paths = [wh.fs_path(u)[1] for u in uris]
    return ds.FileSystemDataset.from_paths(
        paths, schema=table_schema(), format=ds.ParquetFileFormat(), filesystem=filesystem
    )  # from the paths alone: no listing, no footer read before the query


def _with_deletes(wh: Warehouse, task: Any) -> Any:
    """The file's rows as pyiceberg reads them: its delete files applied."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan

    metadata = wh.table.metadata
    scan = ArrowScan(metadata, wh.table.io, metadata.schema(), AlwaysTrue())
    return scan.to_table([task])


def _empty() -> Any:
    import pyarrow as pa

    from nerve.fleet.warehouse import table_schema

    return pa.Table.from_batches([], schema=table_schema())


FETCH_THREADS = 8


def fetch(wh: WarehouseSource, fleet: FleetPlan, cache: Path) -> dict[str, Path]:
    """Every planned file in ``cache`` (fetched and blake3-checked if missing); uri -> path.
    A local warehouse is read in place."""
    from concurrent.futures import ThreadPoolExecutor

    uris = [u for group in fleet.files.values() for u in group]
    if all(u.startswith("file://") for u in uris):
        from nerve.fleet.warehouse import local_path

        return {u: local_path(u) for u in uris}
    cache.mkdir(parents=True, exist_ok=True)
    paths = {u: cache / f"{segment_name(u)}.parquet" for u in uris}
    missing = [u for u in dict.fromkeys(uris) if not paths[u].exists()]
    for uri in set(uris) - set(missing):
        os.utime(paths[uri])  # recently used: evicted last
    if not missing:
        return paths
    store = _opened(wh)  # opened once, before the threads

    def one(uri: str) -> None:
        data = store.read(uri)
        if data is None:
            raise FleetError(
                f"{uri}: registered, but the store does not have it (run fleet verify)"
            )
        if blake3.blake3(data).hexdigest() != segment_name(uri):
            raise FleetError(f"{uri}: its bytes do not hash to its name (run fleet verify)")
        write_local(paths[uri], data)

    with ThreadPoolExecutor(FETCH_THREADS) as pool:
        list(pool.map(one, missing))
    return paths


def trim_cache(cache: Path, limit_bytes: int) -> int:
    """Drop the least recently used files until the cache fits; returns bytes dropped."""
    files = sorted(cache.glob("*.parquet"), key=lambda p: p.stat().st_mtime)
    total = sum(p.stat().st_size for p in files)
    dropped = 0
    for path in files:
        if total - dropped <= limit_bytes:
            break
        size = path.stat().st_size
        path.unlink(missing_ok=True)
        dropped += size
    return dropped

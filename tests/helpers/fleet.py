"""Simulated hosts for the fleet tests: workspaces whose sealed segments span a month."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from nerve.clock import Hlc
from nerve.events import Event, SourceClass, Trust
from nerve.workspace import WorkspaceDir, init_workspace

HOUR = 3600 * 10**9
AGES_H = (24 * 30, 48, 0.5)  # a segment from last month, one from two days ago, one recent


def fleet_yaml(host: str, warehouse: str, **extra: Any) -> str:
    lines = ["log:", "  durability: os", "fleet:", f"  warehouse: {json.dumps(warehouse)}"]
    lines.append(f"  host: {host}")
    lines += [f"  {key}: {json.dumps(value)}" for key, value in extra.items() if value is not None]
    return "\n".join(lines) + "\n"


def make_host(
    root: Path,
    host: str,
    warehouse: str,
    *,
    rows: int = 200,
    ages_h: tuple[float, ...] = AGES_H,
    **extra: Any,
) -> WorkspaceDir:
    """A workspace holding one sealed segment of ``rows`` events per age, oldest first."""
    init_workspace(root)
    (root / "nerve.yaml").write_text(fleet_yaml(host, warehouse, **extra))
    ws = WorkspaceDir.at(root)
    now = time.time_ns()
    with ws.open_log() as log:
        for age in ages_h:
            start = now - int(age * HOUR)
            log.import_events(_events(host, start, rows))
            log.seal()
    return ws


def _events(host: str, start: int, rows: int) -> list[Event]:
    return [
        Event(
            Hlc(start + i * 1000, 0),
            f"node-{host}",
            "secret" if i % 10 == 0 else "observation",
            f"s{i % 5}",
            int(SourceClass.SHELL),
            Trust.FIRST_PARTY,
            None,
            {"host": host, "i": i},
            f"{host} event {i}",
        )
        for i in range(rows)
    ]


def add_segment(ws: WorkspaceDir, rows: int = 50) -> None:
    """One more sealed segment of events stamped now."""
    host = ws.root.name
    with ws.open_log() as log:
        log.import_events(_events(host, max(time.time_ns(), log_newest(log) + 1), rows))
        log.seal()


def log_newest(log: Any) -> int:
    newest = log.manifest.max_hlc()
    return int(newest.physical_ns) if newest else 0


def register_position_deletes(wh: Any, data_uri: str, positions: list[int]) -> str:
    """Register a position-delete file against ``data_uri`` as another Iceberg writer
    would (pyiceberg writes no delete manifests itself): the rows at ``positions`` vanish
    from every engine's scan. Returns the delete file's URI."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.manifest import (
        DataFile,
        DataFileContent,
        FileFormat,
        ManifestContent,
        ManifestEntry,
        ManifestEntryStatus,
        ManifestWriterV2,
    )
    from pyiceberg.typedef import Record

    def field(name: str, kind: Any, ident: int) -> pa.Field:
        return pa.field(name, kind, nullable=False, metadata={b"PARQUET:field_id": str(ident)})

    schema = pa.schema(
        [field("file_path", pa.string(), 2147483546), field("pos", pa.int64(), 2147483545)]
    )
    rows = pa.table({"file_path": [data_uri] * len(positions), "pos": positions}, schema=schema)
    uri = f"{wh.location}/data/deletes-{len(positions)}-{time.time_ns()}.parquet"
    filesystem, path = wh.fs_path(uri)
    with filesystem.open_output_stream(path) as out:
        pq.write_table(rows, out)
    size = filesystem.get_file_info(path).size
    delete = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES,
        file_path=uri,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=len(positions),
        file_size_in_bytes=size,
    )
    delete.spec_id = 0

    class DeleteWriter(ManifestWriterV2):
        def content(self) -> ManifestContent:
            return ManifestContent.DELETES

        @property
        def _meta(self) -> dict[str, str]:
            return {**super()._meta, "content": "deletes"}

    with wh.table.transaction() as tx:
        producer = tx.update_snapshot().fast_append()
        metadata = tx.table_metadata
        out_file = wh.table.io.new_output(f"{wh.location}/metadata/deletes-{time.time_ns()}.avro")
        with DeleteWriter(
            metadata.spec(), metadata.schema(), out_file, producer._snapshot_id, "deflate"
        ) as writer:
            writer.add(
                ManifestEntry.from_args(
                    status=ManifestEntryStatus.ADDED,
                    snapshot_id=producer._snapshot_id,
                    sequence_number=None,
                    file_sequence_number=None,
                    data_file=delete,
                )
            )
        manifest = writer.to_manifest_file()
        existing = producer._existing_manifests
        producer._existing_manifests = lambda: [*existing(), manifest]  # type: ignore[method-assign]
        with producer:
            pass
    return uri


def register_again(wh: Any, data_uri: str) -> None:
    """Register an already registered file a second time (a plain fast append)."""
    from nerve.fleet.ship import _data_file
    from nerve.fleet.warehouse import local_path

    with wh.table.transaction() as tx:
        data_file = _data_file(tx.table_metadata, data_uri, local_path(data_uri))
        with tx.update_snapshot().fast_append() as append:
            append.append_data_file(data_file)

"""``nerve fleet maintain``: table upkeep that keeps what ``fleet verify`` needs.

1. **Rewrite manifests**: one merge commit folds the many small manifests (one per ship)
   into few, so planning reads few files.
2. **Expire snapshots**: every snapshot older than ``keep_s`` goes, except the current one.
   What verify and the next ship read, each host's signed registration, is a table
   property, which no expiry touches (a table shipped to before registrations moved there
   keeps each such host's newest snapshot until the host ships again).
3. **Remove orphans**: files under ``metadata/`` that no kept snapshot or metadata version
   names, older than ``grace_s`` (a ship or maintain still under way may have written
   files it has not committed yet).

Each commit goes through the same retry as a ship's, and each attempt recomputes from the
table as it is, so maintains on several hosts at once, and ships meanwhile, are safe.
Segment objects are not touched here: each host's ship sweeps its own.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from nerve.fleet.warehouse import FleetError, Warehouse

__all__ = ["MaintainResult", "maintain"]

# Kept small, so metadata.json's log of earlier versions stays short and old versions go.
METADATA_PROPERTIES = {
    "write.metadata.previous-versions-max": "10",
    "write.metadata.delete-after-commit.enabled": "true",
}


@dataclass
class MaintainResult:
    snapshots_before: int = 0
    snapshots_after: int = 0
    manifests_before: int = 0
    manifests_after: int = 0
    metadata_bytes_before: int = 0
    metadata_bytes_after: int = 0
    orphans_removed: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def maintain(wh: Warehouse, *, keep_s: float = 3600.0, grace_s: float = 3600.0) -> MaintainResult:
    started = time.perf_counter()
    result = MaintainResult(
        snapshots_before=len(wh.table.metadata.snapshots),
        manifests_before=_manifest_count(wh),
        metadata_bytes_before=metadata_bytes(wh),
    )
    if wh.table.current_snapshot() is not None:
        wh.commit(_rewrite_manifests)
        wh.commit(lambda w: _expire(w, keep_s))
    result.orphans_removed = _remove_orphans(wh, grace_s)
    wh.refresh()
    result.snapshots_after = len(wh.table.metadata.snapshots)
    result.manifests_after = _manifest_count(wh)
    result.metadata_bytes_after = metadata_bytes(wh)
    result.seconds = round(time.perf_counter() - started, 3)
    return result


def metadata_bytes(wh: Warehouse) -> int:
    """Size of the table's current metadata.json."""
    filesystem, path = wh.fs_path(str(wh.table.metadata_location))
    size = filesystem.get_file_info(path).size
    return int(size or 0)


def _manifest_count(wh: Warehouse) -> int:
    snapshot = wh.table.current_snapshot()
    return 0 if snapshot is None else len(snapshot.manifests(wh.table.io))


def _rewrite_manifests(wh: Warehouse) -> None:
    """A merge commit with no files: every data manifest binned into few (target size)."""
    from pyiceberg.table import TableProperties

    key = TableProperties.MANIFEST_MIN_MERGE_COUNT
    before = wh.table.properties.get(key)
    if _manifest_count(wh) <= 1:
        return
    with wh.transaction() as tx:
        tx.set_properties(**METADATA_PROPERTIES, **{key: "2"})
        props = {"nerve.maintain": "rewrite-manifests"}
        with tx.update_snapshot(snapshot_properties=props).merge_append():
            pass
        if before is None:
            tx.remove_properties(key)
        else:
            tx.set_properties(**{key: before})


def _expire(wh: Warehouse, keep_s: float) -> None:
    from pyiceberg.table.update.snapshot import ExpireSnapshots

    ids = _expirable(wh, keep_s)
    if not ids:
        return
    with wh.transaction() as tx:
        ExpireSnapshots(tx).by_ids(ids).commit()


def _expirable(wh: Warehouse, keep_s: float) -> list[int]:
    """Snapshots older than ``keep_s``, less the current one, refs', and the newest of each
    host whose registration is still in a snapshot (shipped before registrations moved
    into the table's properties, and not since)."""
    metadata = wh.table.metadata
    keep = {ref.snapshot_id for ref in metadata.refs.values()}
    moved = wh.registrations()
    newest: dict[str, int] = {}
    for snap in metadata.snapshots:  # oldest first
        props = snap.summary.additional_properties if snap.summary else {}
        if "nerve.host" in props and props["nerve.host"] not in moved:
            newest[props["nerve.host"]] = snap.snapshot_id
    keep |= set(newest.values())
    cutoff_ms = (time.time() - keep_s) * 1000
    return [
        s.snapshot_id
        for s in metadata.snapshots
        if s.snapshot_id not in keep and s.timestamp_ms < cutoff_ms
    ]


def _remove_orphans(wh: Warehouse, grace_s: float) -> int:
    from pyarrow import fs as pafs

    wh.refresh()
    referenced = _referenced(wh)
    filesystem, folder = wh.fs_path(f"{wh.location}/metadata")
    try:
        entries = filesystem.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
    except OSError as exc:
        raise FleetError(f"cannot list {wh.location}/metadata: {exc}") from None
    cutoff = time.time() - grace_s
    removed = 0
    for entry in entries:
        if entry.type != pafs.FileType.File or entry.base_name in referenced:
            continue
        if entry.mtime is not None and entry.mtime.timestamp() > cutoff:
            continue  # possibly a commit still under way
        wh.delete(f"{wh.location}/metadata/{entry.base_name}")
        removed += 1
    return removed


def _referenced(wh: Warehouse) -> set[str]:
    """Base names of every metadata file a kept version or snapshot names."""
    metadata = wh.table.metadata
    names = {_base(str(wh.table.metadata_location))}
    names |= {_base(entry.metadata_file) for entry in metadata.metadata_log}
    for snap in metadata.snapshots:
        names.add(_base(snap.manifest_list))
        names |= {_base(m.manifest_path) for m in snap.manifests(wh.table.io)}
    return names


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]

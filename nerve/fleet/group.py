"""Group commits: ships under way at once register together, in one Iceberg commit.

One thread per table and process commits at a time. A ship that only adds files and finds
another thread committing waits, with its request (the files' Iceberg entries and its
signed registration) in memory: the next commit takes it, and the ship is done without a
commit or a reload of its own. A ship that lost a race to another process also writes its
request to ``<files>/<ns>/<table>/requests/<host>.json``, and every commit takes the open
requests it finds there along with its own, so a stampede of ships lands in a few commits
instead of one per host.

A request names the registration the table held for its host when it was made (its
``base``); it is committed only while the table still holds that one, so a request never
registers a file twice, nor lands after a newer ship of its host. The registration is the
host's own signature: a committer carries it, it cannot make one. A ship that drops files
(compaction, erasure) commits alone, as it must find the entries it removes.
"""

from __future__ import annotations

import contextlib
import copy
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from nerve.fleet.warehouse import (
    REGISTRATION_PREFIX,
    FleetError,
    Warehouse,
    prepare_transaction,
    property_head,
    registration_value,
)

__all__ = [
    "MAX_BATCH",
    "Request",
    "commit_group",
    "commit_in_turn",
    "data_file_of",
    "request_entry",
]

MAX_BATCH = 64  # requests per commit at most: a commit's manifest stays small


@dataclass(frozen=True)
class Request:
    host: str
    base: str | None  # the registration text the table held for the host, or None
    registration: str  # the new signed registration's text
    conflicts: int  # races the requesting ship had lost when it wrote this
    files: list[dict[str, Any]]  # request_entry() of each file to add

    def to_bytes(self) -> bytes:
        body = {
            "host": self.host,
            "base": self.base,
            "registration": self.registration,
            "conflicts": self.conflicts,
            "files": self.files,
        }
        return json.dumps(body, sort_keys=True).encode()

    @classmethod
    def parse(cls, data: bytes) -> Request | None:
        try:
            obj = json.loads(data)
            return cls(
                str(obj["host"]),
                None if obj["base"] is None else str(obj["base"]),
                str(obj["registration"]),
                int(obj["conflicts"]),
                list(obj["files"]),
            )
        except (ValueError, KeyError, TypeError):
            return None  # a torn or foreign object: not a request, skipped


def request_uri(wh: Warehouse, host: str) -> str:
    return f"{wh.files_root}/requests/{host}.json"


def request_entry(uri: str, size: int, stats: dict[str, Any]) -> dict[str, Any]:
    """A file's Iceberg entry as JSON: path, size, and pyiceberg's serialized statistics
    (maps keyed by field id; bounds as hex)."""
    entry: dict[str, Any] = {"path": uri, "size": size}
    for key, value in stats.items():
        if isinstance(value, dict):
            entry[key] = {str(k): v.hex() if isinstance(v, bytes) else v for k, v in value.items()}
        else:
            entry[key] = value
    return entry


def data_file_of(metadata: Any, entry: dict[str, Any]) -> Any:
    """The ``DataFile`` a request entry describes (an unpartitioned table's)."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    def ints(name: str) -> dict[int, int]:
        return {int(k): int(v) for k, v in entry[name].items()}

    def raw(name: str) -> dict[int, bytes]:
        return {int(k): bytes.fromhex(v) for k, v in entry[name].items()}

    return DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=entry["path"],
        file_format=FileFormat.PARQUET,
        partition=Record(),
        file_size_in_bytes=int(entry["size"]),
        sort_order_id=None,
        spec_id=metadata.default_spec_id,
        equality_ids=None,
        key_metadata=None,
        record_count=int(entry["record_count"]),
        column_sizes=ints("column_sizes"),
        value_counts=ints("value_counts"),
        null_value_counts=ints("null_value_counts"),
        nan_value_counts=ints("nan_value_counts"),
        lower_bounds=raw("lower_bounds"),
        upper_bounds=raw("upper_bounds"),
        split_offsets=[int(x) for x in entry["split_offsets"] or []],
    )


def groupable(wh: Warehouse) -> bool:
    return bool(wh.table.metadata.spec().is_unpartitioned())


def current(wh: Warehouse, host: str) -> str | None:
    """The registration text the table holds for ``host`` in its properties, or None."""
    value = wh.table.metadata.properties.get(REGISTRATION_PREFIX + host)
    return None if value is None else value.split(" ", 1)[0]


def open_requests(wh: Warehouse, mine: Request, most: int = MAX_BATCH - 1) -> list[Request]:
    """Other hosts' requests the table can take now: readable, signed by the key the table
    knows for the host (or by any, for a host not yet registered), and based on the
    registration the table holds."""
    from pyarrow import fs as pafs

    filesystem, path = wh.fs_path(f"{wh.files_root}/requests")
    try:
        entries = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except OSError:
        return []  # others' requests are a bonus: this ship commits its own regardless
    found = []
    for entry in entries:
        host = entry.base_name.removesuffix(".json")
        if host == mine.host or not entry.base_name.endswith(".json"):
            continue
        try:
            data = wh.read(request_uri(wh, host))
        except FleetError:
            continue  # withdrawn meanwhile, or unreadable: not taken
        request = Request.parse(data) if data else None
        if request is not None and request.host == host and _takeable(wh, request):
            found.append(request)
        if len(found) >= most:
            break
    return found


def _takeable(wh: Warehouse, request: Request) -> bool:
    if current(wh, request.host) != request.base:
        return False  # committed already, or its host moved on: not this request's turn
    new = property_head(request.host, request.registration)
    if new is None or not new.verifies():
        return False
    known = wh.table_head(request.host)
    return known is None or known.key == new.key


class _Queue:
    """A table's committer in this process: one commit at a time, and the requests of the
    ships waiting for it, handed over in memory (a request file is only for others)."""

    def __init__(self) -> None:
        self.changed = threading.Condition()  # guards the rest; notified after each turn
        self.busy = False  # a thread is committing
        self.waiting: list[_Waiting] = []


@dataclass
class _Waiting:
    request: Request
    conflicts: int
    table: Any = None  # the table after the commit that took this request, once taken


_QUEUES: dict[str, _Queue] = {}
_QUEUES_LOCK = threading.Lock()


def _queue(wh: Warehouse) -> _Queue:
    with _QUEUES_LOCK:
        return _QUEUES.setdefault(f"{wh.resolved.catalog}\n{wh.resolved.table}", _Queue())


def commit_in_turn(
    wh: Warehouse, mine: Request, lost: int, snapshot_props: dict[str, str]
) -> int | None:
    """Commit ``mine`` with the requests waiting in this process and the open ones in the
    store, on the table as the catalog holds it now; one committing thread per table in
    this process (a process shipping for many workspaces is one committer for them all).
    Returns how many hosts the commit registered, or None when another thread's commit
    took ``mine`` meanwhile (``wh`` then holds the table as that commit left it: no
    reload). Raises what ``commit_group`` raises; the others' requests it carried wait
    for the next turn."""
    queue = _queue(wh)
    entry = _Waiting(mine, lost)
    with queue.changed:
        queue.waiting.append(entry)
        while queue.busy and entry.table is None:
            queue.changed.wait()
        if entry.table is not None:  # taken by the commit before
            wh.table = entry.table
            return None
        queue.busy = True
        queue.waiting.remove(entry)
        others = [w for w in queue.waiting if w.request.host != mine.host][: MAX_BATCH - 1]
        for w in others:
            queue.waiting.remove(w)
    taken: list[Request] = []
    try:
        wh.refresh()  # others may have committed since this ship loaded the table
        taken = commit_group(wh, mine, lost, snapshot_props, others)
        return len(taken)
    finally:
        with queue.changed:
            for w in others:
                if w.request in taken:  # a table of its own: a later commit moves only it
                    w.table = copy.copy(wh.table)
            left = [w for w in others if w.table is None]  # their ships commit them
            queue.waiting[:0] = left
            queue.busy = False
            queue.changed.notify_all()


def commit_group(
    wh: Warehouse,
    mine: Request,
    lost: int,
    snapshot_props: dict[str, str],
    waiting: list[_Waiting] | None = None,
) -> list[Request]:
    """One commit of ``mine``, the requests ``waiting`` in this process that the table can
    take, and the open requests found in the store; returns the requests it registered.
    Raises what the catalog raises when the race is lost, and a
    lost race too when the table no longer holds the registration ``mine`` is based on
    (the caller reloads and works out its change again)."""
    from pyiceberg.exceptions import CommitFailedException

    if current(wh, mine.host) != mine.base:
        raise CommitFailedException(f"host {mine.host!r}: registered meanwhile by another ship")
    near = [w.request for w in waiting or () if _takeable(wh, w.request)]
    conflicts = {w.request.host: w.conflicts for w in waiting or ()}
    batch = [mine, *near]
    if len(batch) < MAX_BATCH:
        hosts = {r.host for r in batch}
        found = open_requests(wh, mine, MAX_BATCH - len(batch))
        batch += [r for r in found if r.host not in hosts]
    now_ms = time.time_ns() // 1_000_000
    with wh.transaction() as tx:
        prepare_transaction(tx)
        metadata = tx.table_metadata
        files = [data_file_of(metadata, e) for r in batch for e in r.files]
        props = {
            REGISTRATION_PREFIX + r.host: registration_value(
                r.registration, now_ms, lost if r is mine else conflicts.get(r.host, r.conflicts)
            )
            for r in batch
        }
        tx.set_properties(**props)
        summary = {**snapshot_props, "nerve.ship.hosts": str(len(batch))}
        with tx.update_snapshot(snapshot_properties=summary).fast_append() as change:
            for data_file in files:
                change.append_data_file(data_file)
    return batch


def withdraw(wh: Warehouse, host: str) -> None:
    """Remove the host's request (its ship is committed); a failure leaves a request whose
    base no longer matches, which no committer takes."""
    with contextlib.suppress(FleetError):
        wh.delete(request_uri(wh, host))

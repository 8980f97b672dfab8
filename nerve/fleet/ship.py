"""``nerve fleet ship``: this host's sealed segments into the fleet's Iceberg table.

1. Each live segment not yet in the store is uploaded under its content name, then read
   back and its blake3 checked (one already there with the right bytes is left alone).
2. The manifest and a signed head over it go up beside them.
3. One Iceberg commit registers the new files (``add_files``-style: nothing is rewritten)
   and drops the ones the host no longer holds (compacted, erased, archived), with the head
   in the snapshot's properties. A commit that loses a race reloads and recomputes.

What the host has registered is read from its own newest snapshot's signed head (in the
table's metadata), not from a scan of every host's manifests; only a ship that drops files
scans, to find the entries it removes. A host name whose head another key signed is
refused before anything is written: a ship never deletes what another key signed.

The table decides what is registered, so a ship killed at any instant and run again
registers every segment exactly once: before the commit nothing is registered, after it
everything is.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import blake3

from nerve.errors import UsageError
from nerve.fleet.head import Head, HeadError, Registration, live_digest
from nerve.fleet.warehouse import (
    FleetError,
    Warehouse,
    host_of,
    open_warehouse,
    resolve,
    segment_name,
    ship_lock,
)
from nerve.log.manifest import ManifestState, SegmentInfo, read_manifest
from nerve.log.paths import LogPaths
from nerve.workspace import Workspace

__all__ = ["ShipResult", "fleet_settings", "ship"]

UPLOAD_THREADS = 8


@dataclass
class ShipResult:
    host: str
    seq: int
    uploaded: int = 0  # files put this ship
    reused: int = 0  # files already in the store, bytes checked
    added: int = 0  # files registered by this ship's commit
    removed: int = 0  # files the commit dropped
    conflicts: int = 0  # commits lost to another writer, each retried after a backoff
    bytes: int = 0
    snapshot: int | None = None
    commit_s: float = 0.0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per step

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def fleet_settings(ws: Workspace) -> Any:
    cfg = ws.config.fleet
    if cfg is None:
        raise UsageError(
            f"{ws.config_path}: no fleet section",
            hint="add one with `nerve fleet init --warehouse URI`",
        )
    return cfg


def ship(ws: Workspace, *, hook: Callable[[str], None] | None = None) -> ShipResult:
    """Ship what is sealed and not yet in the table; ``hook(step)`` is called between steps
    (tests kill the process there)."""
    _refuse_encrypted(ws)
    started = time.perf_counter()
    resolved = resolve(fleet_settings(ws), ws.data)
    hook = hook or (lambda _: None)
    with ship_lock(ws.data):
        try:
            result = _ship_locked(ws, resolved, hook, started)
        except FleetError as exc:
            _record_failure(ws.data, resolved.host, exc)
            raise
    result.seconds = time.perf_counter() - started
    try:
        _record(ws.data, result)
    except OSError as exc:  # the ship is done: say so, and what could not be noted locally
        result.problems.append(
            f"shipped: {result.added} segment(s) registered, {result.removed} dropped "
            f"(snapshot {result.snapshot}, manifest record {result.seq}); only the local note "
            f"of it ({state_path(ws.data)}) could not be written: {exc.strerror or exc}. "
            "Nothing needs shipping again; `fleet status` shows this ship once the note is "
            "written by the next one"
        )
    return result


def _refuse_encrypted(ws: Workspace) -> None:
    """An encrypted workspace is not shipped: the table would hold ciphertext no Iceberg
    engine reads, or the plaintext this workspace keeps off its own disk."""
    from nerve.log.crypt import is_encrypted

    if is_encrypted(ws.log_root):
        raise FleetError(
            f"{ws.root} is encrypted at rest: fleet ship refuses to send its segments "
            "(Iceberg engines cannot read them, and shipping plaintext would undo the "
            "encryption); nothing was shipped",
            hint="ship from a plain workspace, or set fleet.ship: off for this one",
        )


def _ship_locked(
    ws: Workspace, resolved: Any, hook: Callable[[str], None], started: float
) -> ShipResult:
    wh = open_warehouse(resolved)
    paths = LogPaths(ws.log_root)
    state = read_manifest(paths.manifest)
    result = ShipResult(resolved.host, len(state.records) - 1)
    step = _Steps(result.timings, hook, started)
    step("open")
    if not state.records:
        return result
    key = _signing_key(ws)
    ours = bytes(key.verify_key.encode())
    before = _stored_head(wh, resolved.host)  # the last ship's, before this one replaces it
    _claim(wh, resolved.host, ours, before)
    live = state.segments()
    registered = _registered_now(wh, resolved.host, ours, before)
    _upload(wh, paths, live, result, hook, set(registered))
    step("upload")
    head = _sign(ws, wh, paths, state, live, key)
    wh.write(
        f"{wh.host_dir(resolved.host)}/manifest.jsonl",
        paths.manifest.read_bytes()[: state.size],
    )
    step("manifest")
    wh.write(f"{wh.host_dir(resolved.host)}/head.json", head.to_bytes())
    step("head")
    _register(wh, paths, _Shipping(head, key, before), live, result)
    step("commit")
    _sweep(wh, resolved.host, {s.name for s in live}, result, head.key)
    step("sweep")
    return result


def _signing_key(ws: Workspace) -> Any:
    from nerve.chain.keys import Keyring

    return Keyring.open(ws.data / "keys").signing_key()


def _stored_head(wh: Warehouse, host: str) -> Head | None:
    """The host's head.json in the store, or None (absent or unreadable: verify reports it;
    an unreadable head proves nothing)."""
    data = wh.read(f"{wh.host_dir(host)}/head.json")
    try:
        return Head.parse(data, "head.json") if data else None
    except HeadError:
        return None


@dataclass(frozen=True)
class _Shipping:
    """This ship's new head, the key that signs its registration, and the head.json it
    found (the previous ship's)."""

    head: Head
    key: Any
    before: Head | None


def _claim(wh: Warehouse, host: str, ours: bytes, stored: Head | None) -> None:
    """Refuse a host name another key has shipped as (its newest head in the table, or its
    head.json in the store): two workspaces sharing a name must not overwrite each other."""
    theirs = wh.table_head(host) or stored
    if theirs is not None and theirs.key != ours:
        raise FleetError(
            f"host {host!r} in {wh.resolved.table} is signed by another key "
            f"({theirs.key.hex()[:16]}…; this workspace's is {ours.hex()[:16]}…): another "
            "workspace ships under this name. Nothing was uploaded, registered or deleted",
            hint="give this workspace a name of its own: fleet.host in nerve.yaml "
            "(unset, it is the machine's name plus data/fleet/id)",
        )


class _Steps:
    """Seconds spent in each step (for ``--json`` and the bench); calls ``hook`` after each."""

    def __init__(self, timings: dict[str, float], hook: Callable[[str], None], start: float):
        self.timings, self.hook, self.last = timings, hook, start

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = round(now - self.last, 4)
        self.last = now
        self.hook(name)


def _refuse_v1(paths: LogPaths, live: list[SegmentInfo]) -> None:
    from nerve.log import segments as seg

    old = [s.name for s in live if seg.stored_v1(paths.segment(s.name))]
    if old:
        raise UsageError(
            f"{len(old)} segment(s) still use the v1 column types Iceberg cannot hold "
            f"(first: {old[0][:12]})",
            hint="rewrite them with `nerve compact`, then ship again",
        )


def _upload(
    wh: Warehouse,
    paths: LogPaths,
    live: list[SegmentInfo],
    result: ShipResult,
    step: Callable[[str], None],
    registered: set[str],
) -> None:
    host = wh.resolved.host
    todo = [s for s in live if s.name not in registered]
    _refuse_v1(paths, todo)  # what is registered was v2 when it shipped: read no footer again
    stored = _stored(wh, host) if todo else {}  # one listing, not a request per file

    def put(info: SegmentInfo) -> tuple[bool, int]:
        data = paths.segment(info.name).read_bytes()
        if blake3.blake3(data).hexdigest() != info.name:
            raise FleetError(
                f"{paths.segment(info.name)}: bytes do not match the name",
                hint="run `nerve replay --verify`",
            )
        uri = wh.segment_uri(host, info.name)
        if stored.get(info.name) == len(data) and _matches(wh.read(uri), info.name):
            return False, 0  # already there whole (a ship killed before its commit)
        wh.write(uri, data)
        if not _matches(wh.read(uri), info.name):
            raise FleetError(f"{uri}: the upload read back with other bytes")
        step("upload")
        return True, len(data)

    with ThreadPoolExecutor(UPLOAD_THREADS) as pool:
        for fresh, size in pool.map(put, todo):
            result.uploaded += fresh
            result.reused += not fresh
            result.bytes += size


def _matches(data: bytes | None, name: str) -> bool:
    return data is not None and blake3.blake3(data).hexdigest() == name


def _host_files(wh: Warehouse, host: str) -> list[Any]:
    return [f for f in wh.data_files() if host_of(f.file_path) == host]


def _sign(
    ws: Workspace,
    wh: Warehouse,
    paths: LogPaths,
    state: ManifestState,
    live: list[SegmentInfo],
    key: Any,
) -> Head:
    from nerve.log import segments as seg
    from nerve.log.codec import fixed_bytes

    ids = [fixed_bytes(seg.read_segment(paths.segment(s.name), ["id"]).column("id")) for s in live]
    body = {
        "host": wh.resolved.host,
        "node": ws.node,
        "table": wh.resolved.table,
        "seq": len(state.records) - 1,
        "head": state.head,
        "segments": [s.name for s in live],
        "rows": sum(s.rows for s in live),
        "min": list(live[0].min_hlc) if live else None,
        "max": list(live[-1].max_hlc) if live else None,
        "digest": live_digest(ids),
        "time_ns": time.time_ns(),
    }
    return Head.sign(body, key)


def _register(
    wh: Warehouse, paths: LogPaths, shipping: _Shipping, live: list[SegmentInfo], result: ShipResult
) -> None:
    host = wh.resolved.host
    head = shipping.head
    wanted = {s.name: s for s in live}
    lost: list[float] = []

    def attempt(wh: Warehouse) -> tuple[int, int, int | None]:
        _claim(wh, host, head.key, None)  # again, against the table as it is now
        have = _registered_now(wh, host, head.key, shipping.before)
        add = [n for n in wanted if n not in have]
        drop = [f for n, f in _droppable(wh, host, have, wanted).items()]
        if not add and not drop:
            return 0, 0, None
        props = _properties(head, shipping.key, len(lost))
        with wh.table.transaction() as tx:
            _ensure_name_mapping(tx)
            _optional_cid(tx)
            metadata = tx.table_metadata  # a deep copy per access: taken once
            files = [_data_file(metadata, wh.segment_uri(host, n), paths.segment(n)) for n in add]
            producer = tx.update_snapshot(snapshot_properties=props)
            with producer.overwrite() if drop else producer.fast_append() as change:
                for data_file in files:
                    change.append_data_file(data_file)
                for data_file in drop:
                    change.delete_data_file(data_file)
        snapshot = wh.table.current_snapshot()
        return len(add), len(drop), snapshot.snapshot_id if snapshot else None

    began = time.perf_counter()
    try:
        result.added, result.removed, result.snapshot = wh.commit(attempt, lost=lost)
    finally:
        result.conflicts = len(lost)
    result.commit_s = time.perf_counter() - began


def _registered_now(wh: Warehouse, host: str, key: bytes, stored: Head | None) -> dict[str, Any]:
    """What the table registers for ``host`` (name -> DataFile, or None): its newest
    snapshot's signed registration names a record, and the head.json of that record names
    its segments (files and registration are one commit), so no manifest is read. A scan
    only when they do not match (a ship killed between head.json and its commit)."""
    found = wh.table_head(host)
    if found is not None and found.key == key and found.verifies():
        if found.segments is not None:  # a whole head, as older tables carry
            return dict.fromkeys(found.segments)
        if stored is not None and found.names(stored) and stored.verifies():
            return dict.fromkeys(stored.segments)
    return {segment_name(f.file_path): f for f in _host_files(wh, host)}


def _droppable(
    wh: Warehouse, host: str, have: dict[str, Any], wanted: dict[str, SegmentInfo]
) -> dict[str, Any]:
    """The registered files the host no longer holds; a scan only when there are some."""
    gone = [n for n in have if n not in wanted]
    if not gone:
        return {}
    files = {segment_name(f.file_path): f for f in _host_files(wh, host)}
    return {n: files[n] for n in gone if n in files}


def _properties(head: Head, key: Any, conflicts: int) -> dict[str, str]:
    """The host, the signed registration of its head (record, hash, key: a fixed size, so
    metadata.json grows by the same few hundred bytes per host however many segments it
    holds), and the races this ship lost before this commit."""
    props = {"nerve.host": head.host, "nerve.registration": Registration.of(head, key).to_text()}
    if conflicts:
        props["nerve.ship.conflicts"] = str(conflicts)
    return props


def _ensure_name_mapping(tx: Any) -> None:
    """Segments carry no Iceberg field ids; a name mapping lets every engine read them. (And
    a table made before nerve retried its own commits gets that setting.)"""
    if tx.table_metadata.properties.get("commit.retry.num-retries") != "0":
        tx.set_properties(**{"commit.retry.num-retries": "0"})
    if tx.table_metadata.name_mapping() is None:
        mapping = tx.table_metadata.schema().name_mapping.model_dump_json()
        tx.set_properties(**{"schema.name-mapping.default": mapping})


def _optional_cid(tx: Any) -> None:
    """A table made before segments stored payload_cid for erased rows alone declares it
    required: make it optional (a compatible change) before registering such a file."""
    from nerve.fleet.warehouse import FORMAT

    if tx.table_metadata.schema().find_field("payload_cid").required:
        with tx.update_schema() as update:
            update.update_column("payload_cid", required=False)
        tx.set_properties(**{"nerve.format": FORMAT})


def _data_file(metadata: Any, uri: str, local: Path) -> Any:
    """The Iceberg ``DataFile`` for a shipped segment, from its local copy's footer (the
    same bytes), so registering costs no read of the store."""
    import pyarrow.parquet as pq
    from pyiceberg.io.pyarrow import (
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
    )
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat

    meta = pq.read_metadata(local)
    schema = metadata.schema()
    stats = data_file_statistics_from_parquet_metadata(
        parquet_metadata=meta,
        stats_columns=compute_statistics_plan(schema, metadata.properties),
        parquet_column_mapping=parquet_path_to_id_mapping(schema),
    )
    return DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=uri,
        file_format=FileFormat.PARQUET,
        partition=stats.partition(metadata.spec(), schema),
        file_size_in_bytes=local.stat().st_size,
        sort_order_id=None,
        spec_id=metadata.default_spec_id,
        equality_ids=None,
        key_metadata=None,
        **stats.to_serialized_dict(),
    )


def _stored(wh: Warehouse, host: str) -> dict[str, int]:
    """The host's segment objects in the store: name -> size (one listing)."""
    from pyarrow import fs as pafs

    folder = f"{wh.host_dir(host)}/segments"
    filesystem, path = wh.fs_path(folder)
    try:
        entries = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except OSError as exc:
        raise FleetError(f"cannot list {folder}: {exc}") from None
    return {
        e.base_name.removesuffix(".parquet"): int(e.size)
        for e in entries
        if e.base_name.endswith(".parquet") and e.size is not None
    }


def _sweep(wh: Warehouse, host: str, live: set[str], result: ShipResult, key: bytes) -> None:
    """Delete this host's objects the table no longer names and the host no longer holds:
    segments compacted or erased away (an erased payload must not linger in the store),
    and uploads a killed ship left behind. Only while the host's newest head is ours."""
    newest = wh.table_head(host)
    if newest is not None and newest.key != key:
        result.problems.append(f"host {host!r}: another key shipped meanwhile; nothing deleted")
        return
    try:
        stored = _stored(wh, host)
    except FleetError as exc:
        result.problems.append(str(exc))
        return
    folder = f"{wh.host_dir(host)}/segments"
    for name in stored:
        if name not in live:  # live = registered now
            try:
                wh.delete(f"{folder}/{name}.parquet")
            except FleetError as exc:
                result.problems.append(str(exc))


def state_path(data_dir: Path) -> Path:
    return data_dir / "fleet" / "state.json"


def _record(data_dir: Path, result: ShipResult) -> None:
    from nerve.canonical import canonical_json
    from nerve.fleet.warehouse import write_local

    body = {**result.to_json(), "time_ns": time.time_ns()}
    write_local(state_path(data_dir), canonical_json(body) + b"\n")


def _record_failure(data_dir: Path, host: str, exc: FleetError) -> None:
    """A failed ship, counted, for `fleet status` (a ship that keeps losing says so)."""
    from nerve.canonical import canonical_json
    from nerve.fleet.warehouse import write_local

    before = last_ship(data_dir) or {}
    failure = before.get("failure") or {}
    body = {
        **before,
        "host": host,
        "failure": {
            "failures": int(failure.get("failures", 0)) + 1,
            "message": str(exc),
            "time_ns": time.time_ns(),
        },
    }
    with contextlib.suppress(OSError):  # the error itself is what the caller reports
        write_local(state_path(data_dir), canonical_json(body) + b"\n")


def last_ship(data_dir: Path) -> dict[str, Any] | None:
    try:
        obj = json.loads(state_path(data_dir).read_bytes())
    except (OSError, ValueError):
        return None
    return obj if isinstance(obj, dict) else None

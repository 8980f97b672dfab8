"""``nerve fleet ship``: this host's sealed segments into the fleet's Iceberg table.

1. Each live segment not yet in the store is uploaded under its content name, then read
   back and its blake3 checked (one already there with the right bytes is left alone);
   the manifest goes up meanwhile.
2. A signed head over the manifest goes up beside them.
3. One Iceberg commit registers the new files (``add_files``-style: nothing is rewritten)
   and drops the ones the host no longer holds (compacted, erased, archived), and sets the
   host's signed registration as a table property. A commit that loses a race reloads and
   recomputes; a ship that must wait hands its request to the next commit (``group``).

What the host has registered is read from its registration (in the table's metadata) and
the head.json of that record, not from a scan of every host's manifests; only a ship that
drops files scans, to find the entries it removes. A host name whose head another key
signed is refused before anything is written: a ship never deletes what another key signed.

The table decides what is registered, so a ship killed at any instant and run again
registers every segment exactly once: before the commit nothing is registered, after it
everything is.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import blake3

from nerve.errors import UsageError
from nerve.fleet import group
from nerve.fleet.group import Request
from nerve.fleet.head import Head, HeadError, Registration, live_digest
from nerve.fleet.settings import fleet_config
from nerve.fleet.warehouse import (
    REGISTRATION_PREFIX,
    FleetError,
    Warehouse,
    host_of,
    open_warehouse,
    prepare_transaction,
    registration_value,
    resolve,
    segment_name,
    ship_lock,
)
from nerve.log.manifest import ManifestState, SegmentInfo, read_manifest
from nerve.log.paths import LogPaths
from nerve.workspace import WorkspaceDir

__all__ = ["ShipResult", "fleet_config", "ship"]

UPLOAD_THREADS = 8


@dataclass
class ShipResult:
    host: str
    seq: int
    uploaded: int = 0  # files put this ship
    reused: int = 0  # files already in the store, bytes checked
    added: int = 0  # files registered by this ship's commit
    removed: int = 0  # files the commit dropped
    conflicts: int = 0  # commits lost to another writer (races), each followed by a reload
    retries: int = 0  # commits tried again after a lost race (not when another's took ours)
    bytes: int = 0
    snapshot: int | None = None
    commit_s: float = 0.0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per step

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def ship(ws: WorkspaceDir, *, hook: Callable[[str], None] | None = None) -> ShipResult:
    """Ship what is sealed and not yet in the table; ``hook(step)`` is called between steps
    (tests kill the process there)."""
    _refuse_encrypted(ws)
    started = time.perf_counter()
    resolved = resolve(fleet_config(ws), ws.data)
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


def _refuse_encrypted(ws: WorkspaceDir) -> None:
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
    ws: WorkspaceDir, resolved: Any, hook: Callable[[str], None], started: float
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
    manifest = (f"{wh.host_dir(resolved.host)}/manifest.jsonl", paths.manifest.read_bytes())

    def sign(ids: dict[str, bytes]) -> Head:  # in the upload's threads, beside the uploads
        head = _sign(ws, wh, state, live, key, ids)
        wh.write(f"{wh.host_dir(resolved.host)}/head.json", head.to_bytes())
        return head

    # the manifest goes up beside the segments: verify reads it only up to the head's record
    beside = (manifest[0], manifest[1][: state.size])
    head, stored = _upload(wh, paths, live, result, hook, set(registered), beside, sign)
    step("upload")
    step("manifest")
    step("head")
    _register(wh, paths, _Shipping(head, key, before), live, result)
    step("commit")
    _sweep(wh, resolved.host, {s.name for s in live}, result, head.key, stored)
    step("sweep")
    return result


def _signing_key(ws: WorkspaceDir) -> Any:
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


def _refuse_v1(name: str) -> None:
    raise UsageError(
        f"segment {name[:12]} still uses the v1 column types Iceberg cannot hold",
        hint="rewrite it with `nerve compact`, then ship again",
    )


def _upload(
    wh: Warehouse,
    paths: LogPaths,
    live: list[SegmentInfo],
    result: ShipResult,
    step: Callable[[str], None],
    registered: set[str],
    beside: tuple[str, bytes],
    sign: Callable[[dict[str, bytes]], Head],
) -> tuple[Head, dict[str, int] | None]:
    """Upload what is not registered, ``beside`` (an object to put meanwhile) and the head
    ``sign`` makes from every live segment's ids (read in the same threads); returns the
    head and the host's objects in the store after the uploads (None: not listed)."""
    from nerve.log import segments as seg
    from nerve.log.codec import fixed_bytes

    host = wh.resolved.host
    todo = [s for s in live if s.name not in registered]
    stored = _stored(wh, host) if todo else None  # one listing, not a request per file
    before = dict(stored or {})
    metadata = wh.table.metadata  # the commit's is most likely the same: its key says

    def ids(info: SegmentInfo) -> bytes:
        return bytes(fixed_bytes(seg.read_segment(paths.segment(info.name), ["id"]).column("id")))

    parsed: dict[str, Future[bytes]] = {s.name: Future() for s in todo}

    def put(info: SegmentInfo) -> tuple[bool, int]:
        # the file is read once: its bytes are checked, uploaded, compared with what reads
        # back, and parsed in memory for the v1 check, the statistics and the ids
        local = paths.segment(info.name)
        data = local.read_bytes()
        if blake3.blake3(data).hexdigest() != info.name:
            raise FleetError(f"{local}: bytes do not match the name", hint=_REPLAY_HINT)
        footer = _Footer(data)
        if footer.v1:  # what is registered was v2 when it shipped: its footer is not read
            parsed[info.name].set_exception(UsageError("v1 segment"))
            _refuse_v1(info.name)
        parsed[info.name].set_result(footer.ids())  # the head is signed beside the uploads
        uri = wh.segment_uri(host, info.name)
        fresh = not (before.get(info.name) == len(data) and wh.read(uri) == data)
        if fresh:  # else already there whole (a ship killed before its commit)
            wh.write(uri, data)
            if wh.read(uri) != data:  # the local bytes hash to the name: equal bytes do
                raise FleetError(f"{uri}: the upload read back with other bytes")
            step("upload")
        _remember_statistics(metadata, local, footer.metadata, len(data))
        return fresh, len(data) if fresh else 0

    with ThreadPoolExecutor(UPLOAD_THREADS) as pool:
        puts = [pool.submit(put, info) for info in todo]  # the uploads first: they wait most
        found = {s.name: parsed.get(s.name) or pool.submit(ids, s) for s in live}
        other = pool.submit(wh.write, *beside)
        # a head may name segments not yet up: none is registered before the commit
        head = pool.submit(lambda: sign({n: f.result() for n, f in found.items()}))
        for info, done in zip(todo, puts, strict=True):
            try:
                fresh, size = done.result()
            finally:  # a put that failed before parsing leaves no sign waiting
                parsed[info.name].cancel()
            result.uploaded += fresh
            result.reused += not fresh
            result.bytes += size
            if stored is not None:
                stored[info.name] = size if fresh else before[info.name]
        other.result()
        return head.result(), stored


_REPLAY_HINT = "run `nerve replay --verify`"


class _Footer:
    """A segment's Parquet footer and id column, parsed from its bytes in memory."""

    def __init__(self, data: bytes) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from nerve.log.codec import is_v1

        self.file = pq.ParquetFile(pa.BufferReader(data))
        self.metadata = self.file.metadata
        self.v1 = is_v1(self.file.schema_arrow)

    def ids(self) -> bytes:
        from nerve.log.codec import conform, fixed_bytes

        return bytes(fixed_bytes(conform(self.file.read(columns=["id"])).column("id")))


def _host_files(wh: Warehouse, host: str) -> list[Any]:
    return [f for f in wh.data_files() if host_of(f.file_path) == host]


def _sign(
    ws: WorkspaceDir,
    wh: Warehouse,
    state: ManifestState,
    live: list[SegmentInfo],
    key: Any,
    ids: dict[str, bytes],
) -> Head:
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
        "digest": live_digest([ids[s.name] for s in live]),
        "time_ns": time.time_ns(),
    }
    return Head.sign(body, key)


def _register(
    wh: Warehouse, paths: LogPaths, shipping: _Shipping, live: list[SegmentInfo], result: ShipResult
) -> None:
    host = wh.resolved.host
    head = shipping.head
    mine = Registration.of(head, shipping.key).to_text()
    wanted = {s.name: s for s in live}
    lost: list[float] = []
    sent: list[Request] = []  # this ship's request, once written
    tried = [0]  # commits this ship sent
    fresh: list[None] = []  # the table was loaded for this commit (a group commit loads it)

    def attempt(wh: Warehouse) -> tuple[int, int, int | None]:
        _claim(wh, host, head.key, None)  # again, against the table as it is now
        if group.current(wh, host) == mine:  # registered: by another's group commit, or before
            return (sum(len(r.files) for r in sent), 0, None)
        have = _registered_now(wh, host, head.key, shipping.before)
        add = [n for n in wanted if n not in have]
        drop = [f for n, f in _droppable(wh, host, have, wanted).items()]
        if not add and not drop:
            return 0, 0, None
        if drop or not group.groupable(wh):
            if not fresh:  # committed on the table as loaded: load it first
                wh.refresh()
                fresh.append(None)
                return attempt(wh)
            tried[0] += 1
            return _commit_alone(wh, paths, mine, add, drop, len(lost))
        request = _request(wh, paths, host, mine, add, len(lost))
        if lost and (not sent or sent[-1] != request):
            # lost a race: the next winner, in any process, may take this ship's files
            wh.write(group.request_uri(wh, host), request.to_bytes())
            sent[:] = [request]
        try:
            hosts = group.commit_in_turn(wh, request, len(lost), _summary(len(lost)))
        except BaseException:
            tried[0] += 1
            raise
        if hosts is not None:  # None: another thread's commit took it, nothing tried here
            tried[0] += 1
            result.timings["group_hosts"] = hosts
        return len(add), 0, _current_snapshot(wh)

    began = time.perf_counter()
    try:
        # on the table as this ship loaded it: its host's registration changes only by its
        # own ships (one at a time), so the request is right; the committer reloads
        result.added, result.removed, result.snapshot = wh.commit(attempt, lost=lost)
    finally:
        result.conflicts, result.retries = len(lost), max(0, tried[0] - 1)
        if sent:
            group.withdraw(wh, host)
    result.commit_s = time.perf_counter() - began


def _current_snapshot(wh: Warehouse) -> int | None:
    snapshot = wh.table.current_snapshot()
    return snapshot.snapshot_id if snapshot else None


def _summary(conflicts: int) -> dict[str, str]:
    """The snapshot's own properties: the races its committer lost first (the hosts'
    registrations are table properties, so expired snapshots take nothing verify needs)."""
    return {"nerve.ship.conflicts": str(conflicts)} if conflicts else {}


def _request(
    wh: Warehouse, paths: LogPaths, host: str, mine: str, add: list[str], conflicts: int
) -> Request:
    metadata = wh.table.metadata
    files = []
    for name in add:
        stats, size = _statistics(metadata, paths.segment(name))
        files.append(group.request_entry(wh.segment_uri(host, name), size, stats))
    return Request(host, group.current(wh, host), mine, conflicts, files)


def _commit_alone(
    wh: Warehouse, paths: LogPaths, mine: str, add: list[str], drop: list[Any], conflicts: int
) -> tuple[int, int, int | None]:
    """One commit of this host's change alone (it drops files, or the table is partitioned)."""
    host = wh.resolved.host
    value = registration_value(mine, time.time_ns() // 1_000_000, conflicts)
    with wh.transaction() as tx:
        prepare_transaction(tx)
        tx.set_properties(**{REGISTRATION_PREFIX + host: value})
        metadata = tx.table_metadata  # read once: each read applies the staged changes
        files = [_data_file(metadata, wh.segment_uri(host, n), paths.segment(n)) for n in add]
        producer = tx.update_snapshot(snapshot_properties=_summary(conflicts))
        with producer.overwrite() if drop else producer.fast_append() as change:
            for data_file in files:
                change.append_data_file(data_file)
            for data_file in drop:
                change.delete_data_file(data_file)
    return len(add), len(drop), _current_snapshot(wh)


def _registered_now(wh: Warehouse, host: str, key: bytes, stored: Head | None) -> dict[str, Any]:
    """What the table registers for ``host`` (name -> DataFile, or None): its signed
    registration names a record, and the head.json of that record names its segments
    (files and registration are one commit), so no manifest is read. Nothing when the
    host has neither a registration nor a head.json (it never shipped: a commit writes
    head.json first). A scan only when they do not match (a ship killed between
    head.json and its commit)."""
    found = wh.table_head(host)
    if found is None and stored is None:
        return {}
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


_PLAN: list[Any] = [None]  # (key, (statistics plan, column mapping)) of the last table


def _plan_key(metadata: Any) -> tuple[Any, ...]:
    """What a segment's statistics depend on besides its bytes."""
    metrics = sorted(kv for kv in metadata.properties.items() if kv[0].startswith("write.metadata"))
    return (metadata.table_uuid, metadata.current_schema_id, tuple(metrics))


def _footer_stats(metadata: Any, local: Path, footer: Any = None) -> Any:
    """pyiceberg's statistics of a shipped segment from its local copy's footer (the same
    bytes; ``footer``: already parsed), so registering costs no read of the store."""
    import pyarrow.parquet as pq
    from pyiceberg.io.pyarrow import (
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
    )

    key = _plan_key(metadata)
    known = _PLAN[0]
    if known is None or known[0] != key:  # one plan per table, schema and settings
        schema = metadata.schema()
        plan = (
            compute_statistics_plan(schema, metadata.properties),
            parquet_path_to_id_mapping(schema),
        )
        known = _PLAN[0] = (key, plan)
    columns, mapping = known[1]
    return data_file_statistics_from_parquet_metadata(
        parquet_metadata=pq.read_metadata(local) if footer is None else footer,
        stats_columns=columns,
        parquet_column_mapping=mapping,
    )


_STATS: dict[tuple[Any, ...], tuple[dict[str, Any], int]] = {}  # the newest few thousand
_STATS_LOCK = threading.Lock()


def _statistics(metadata: Any, local: Path) -> tuple[dict[str, Any], int]:
    """A segment's serialized statistics (for a request) and its size; worked out once per
    table settings (a segment's name is its content's hash), in the upload's threads."""
    found = _STATS.get((*_plan_key(metadata), local.name))
    return found or _remember_statistics(metadata, local)


def _remember_statistics(
    metadata: Any, local: Path, footer: Any = None, size: int | None = None
) -> tuple[dict[str, Any], int]:
    key = (*_plan_key(metadata), local.name)
    stats = _footer_stats(metadata, local, footer).to_serialized_dict()
    found = stats, local.stat().st_size if size is None else size
    with _STATS_LOCK:
        _STATS[key] = found
        while len(_STATS) > 4096:
            _STATS.pop(next(iter(_STATS)))
    return found


def _data_file(metadata: Any, uri: str, local: Path) -> Any:
    """The Iceberg ``DataFile`` for a shipped segment."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat

    stats = _footer_stats(metadata, local)
    return DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=uri,
        file_format=FileFormat.PARQUET,
        partition=stats.partition(metadata.spec(), metadata.schema()),
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


def _sweep(
    wh: Warehouse,
    host: str,
    live: set[str],
    result: ShipResult,
    key: bytes,
    stored: dict[str, int] | None,
) -> None:
    """Delete this host's objects the table no longer names and the host no longer holds:
    segments compacted or erased away (an erased payload must not linger in the store),
    and uploads a killed ship left behind. Only while the host's newest head is ours.
    ``stored``: the objects as this ship left them (one ship at a time per host), or None
    to list them."""
    newest = wh.table_head(host)
    if newest is not None and newest.key != key:
        result.problems.append(f"host {host!r}: another key shipped meanwhile; nothing deleted")
        return
    try:
        stored = _stored(wh, host) if stored is None else stored
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

"""``nerve fleet verify``: what the table holds for each host is what that host recorded.

For each host:

- its newest signed head (``head.json``) verifies, under the key pinned the first time the
  host was seen (a different key is reported, never taken);
- neither it nor the head in the table's newest snapshot for the host is older than the
  newest one this verifier accepted before (an old head replayed, a rolled-back table);
- the uploaded manifest's hash chain reaches that head, and folds to the segments it names;
- the files the table registers for the host are exactly those segments, each once, each
  present and each with the blake3 its name says;
- nothing in the table changes what an engine's scan of them returns: no delete file
  (position or equality) applies to them, their row counts and time bounds are the files'
  own, and the schema and name mapping read each column as the column of that name;
- the ids in those files, in HLC order, hash to the digest the head reports.

Verify reads the scan every Iceberg engine plans (data files with their delete files), not
a list of file names.

Pins (``<trust dir>/<table id>.json``) live outside any workspace's data folder.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import blake3

from nerve import fsio
from nerve.canonical import canonical_json
from nerve.errors import LogCorrupt
from nerve.fleet.head import Head, HeadError
from nerve.fleet.warehouse import (
    Warehouse,
    host_of,
    property_head,
    segment_name,
    snapshot_head,
    write_local,
)
from nerve.log.manifest import read_manifest

__all__ = ["CODES", "HostReport", "verify_fleet"]

# Exit codes, most serious first: the code of a run is the smallest of its problems'.
CODES = {
    "altered": 3,  # a file's bytes do not match its content name
    "key-changed": 4,  # a head signed by a key other than the one pinned for the host
    "bad-head": 5,  # a head whose signature fails, or a manifest that does not reach it
    "rolled-back": 6,  # a head (or the table) older than one accepted before
    "missing": 7,  # a segment the head names that the table or the store lacks
    "extra": 8,  # a registered file the head does not name
    "digest": 9,  # the ids in the files do not hash to the head's digest
    "duplicate": 10,  # a file registered more than once (engines read it twice)
    "deletes": 11,  # delete files registered against a host's file (engines read fewer rows)
    "metadata": 12,  # row counts, bounds, schema or name mapping that change a scan
}


@dataclass
class HostReport:
    host: str
    seq: int | None = None
    files: int = 0
    rows: int = 0
    digest: str | None = None
    problems: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def fail(self, kind: str, message: str) -> None:
        self.problems.append((kind, message))

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "ok": self.ok,
            "seq": self.seq,
            "files": self.files,
            "rows": self.rows,
            "digest": self.digest,
            "problems": [{"kind": k, "code": CODES[k], "message": m} for k, m in self.problems],
            "notes": self.notes,
        }


def exit_code(reports: list[HostReport]) -> int:
    codes = [CODES[kind] for r in reports for kind, _ in r.problems]
    return min(codes, default=0)


class Pins:
    """Per table: each host's key (pinned on first sight) and newest accepted head."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.hosts: dict[str, dict[str, Any]] = json.loads(path.read_bytes())["hosts"]
        except FileNotFoundError:
            self.hosts = {}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise LogCorrupt(f"{path}: unreadable fleet pins: {exc}") from None

    def save(self) -> None:
        """Replace the pins whole and durably (a pin lost to a crash would let the next
        verify pin whatever key it meets first)."""
        fsio.private_dir(self.path.parent)
        write_local(self.path, canonical_json({"hosts": self.hosts}) + b"\n")


def pins_path(wh: Warehouse, trust_dir: Path) -> Path:
    ident = blake3.blake3(f"{wh.location}\n{wh.resolved.table}".encode()).hexdigest()[:24]
    return trust_dir / "fleet" / f"{ident}.json"


VERIFY_THREADS = 8


def verify_fleet(
    wh: Warehouse,
    trust_dir: Path,
    *,
    hosts: list[str] | None = None,
    repin: bool = False,
    threads: int = VERIFY_THREADS,
    on_report: Callable[[HostReport], None] | None = None,
) -> list[HostReport]:
    """Check every host (or those named), ``threads`` hosts at once; accepted heads and
    first-seen keys are pinned. Memory stays bounded: a thread holds one file at a time
    and hashes its ids as it goes. ``on_report`` gets each host's report as it is done;
    the list returned is in host order."""
    pins = Pins(pins_path(wh, trust_dir))
    tasks: dict[str, list[Any]] = {}
    for task in wh.scan_tasks():
        tasks.setdefault(host_of(task.file.file_path) or "?", []).append(task)
    table_heads = _table_heads(wh)
    schema_problems = _schema_problems(wh)
    known = sorted(set(tasks) | set(table_heads) | set(pins.hosts) | set(_stored_hosts(wh)))

    def one(host: str) -> HostReport:
        found = _Found(tasks.get(host, []), table_heads.get(host), schema_problems)
        report = _verify_host(wh, host, found, pins, repin)
        if on_report is not None:
            on_report(report)
        return report

    with ThreadPoolExecutor(max(1, threads)) as pool:
        reports = list(pool.map(one, hosts or known))
    pins.save()
    return reports


def _schema_problems(wh: Warehouse) -> list[str]:
    """The table must read each segment column as that column: same names, types and
    optionality as a segment, and a name mapping that maps each name to its own field."""
    from nerve.fleet.warehouse import table_schema

    schema = wh.table.schema()
    problems = []
    if [f.name for f in schema.fields] != [f.name for f in table_schema()]:
        problems.append("the table's schema no longer names a segment's columns as they are")
    mapping = wh.table.metadata.name_mapping()
    if mapping is not None:
        ids = {f.name: f.field_id for f in schema.fields}
        for field in mapping:
            if any(ids.get(name) not in (None, field.field_id) for name in field.names):
                problems.append(
                    f"the table's name mapping reads column {field.names[0]!r} as field "
                    f"{field.field_id}, not its own (engines read another column's values)"
                )
    return problems


@dataclass(frozen=True)
class _Found:
    """What the table holds for one host: its scan tasks, its newest snapshot's head, and
    the table-wide problems (schema, name mapping) that change every host's scan."""

    tasks: list[Any]
    table_head: Head | None
    table_problems: list[str]


def _table_heads(wh: Warehouse) -> dict[str, Head]:
    """What the table registers per host: its registration property, or (a table shipped
    to before registrations moved there) the head in its newest snapshot."""
    heads: dict[str, Any] = {}
    for snap in wh.table.snapshots():  # oldest first
        props = snap.summary.additional_properties if snap.summary else {}
        host = props.get("nerve.host")
        found = snapshot_head(host, props, snap.snapshot_id) if host else None
        if found is not None:  # an unreadable one: reported against the host if it matters
            heads[found.host] = found
    for host, value in wh.registrations().items():
        found = property_head(host, value)
        if found is not None:
            heads[host] = found
    return heads


def _stored_hosts(wh: Warehouse) -> list[str]:
    from pyarrow import fs as pafs

    filesystem, path = wh.fs_path(f"{wh.files_root}/hosts")
    try:
        entries = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except OSError:
        return []
    return [e.base_name for e in entries if e.type == pafs.FileType.Directory]


def _verify_host(wh: Warehouse, host: str, found: _Found, pins: Pins, repin: bool) -> HostReport:
    files = [t.file for t in found.tasks]
    table_head = found.table_head
    report = HostReport(host, files=len(files), rows=sum(int(f.record_count) for f in files))
    uri = f"{wh.host_dir(host)}/head.json"
    data = wh.read(uri)
    if data is None:
        report.fail("missing", f"{uri}: no signed head (the host never finished a ship)")
        return report
    try:
        head = Head.parse(data, uri)
    except HeadError as exc:
        report.fail("bad-head", str(exc))
        return report
    report.seq = head.seq
    if not _trusted(head, table_head, pins, report, repin):
        return report
    if table_head is not None and table_head.seq < head.seq:
        report.notes.append(
            f"head.json (record {head.seq}) is newer than the table's (record {table_head.seq}):"
            " a ship did not finish, or changed no files"
        )
    _check_manifest(wh, host, head, report)
    for message in found.table_problems:
        report.fail("metadata", message)
    if report.ok:
        _check_files(wh, head, found.tasks, report)
    if report.ok:
        pins.hosts[host] = {
            "key": head.key.hex(),
            "seq": head.seq,
            "head": head.hash,
            "verified_ns": time.time_ns(),
        }
    return report


def _trusted(
    head: Head, table_head: Head | None, pins: Pins, report: HostReport, repin: bool
) -> bool:
    pinned = pins.hosts.get(report.host)
    if table_head is not None and not _agrees(head, table_head, report):
        return False
    for label, candidate in (("head.json", head), ("the table's newest snapshot", table_head)):
        if candidate is None:
            continue
        if pinned and not repin and candidate.key.hex() != pinned["key"]:
            report.fail(
                "key-changed",
                f"{label} is signed by key {candidate.key.hex()[:16]}…, not the pinned "
                f"{str(pinned['key'])[:16]}… (if the host's key really changed: "
                f"--repin --host {report.host})",
            )
            return False
        if not candidate.verifies() or candidate.host != report.host:
            report.fail("bad-head", f"{label}: the signature does not verify (edited or replaced)")
            return False
    if pinned and int(pinned["seq"]) > head.seq:
        report.fail(
            "rolled-back",
            f"head.json is at manifest record {head.seq}, older than record {pinned['seq']} "
            "accepted before (an old head replayed)",
        )
        return False
    if table_head is not None and table_head.seq > head.seq:
        report.fail(
            "rolled-back",
            f"head.json is at manifest record {head.seq}, older than record {table_head.seq} "
            "the table already registered (an old head replayed)",
        )
        return False
    if pinned and table_head is not None and int(pinned["seq"]) > table_head.seq:
        report.fail(
            "rolled-back",
            f"the table's newest snapshot for the host is at record {table_head.seq}, older "
            f"than record {pinned['seq']} accepted before (the table was rolled back)",
        )
        return False
    return True


def _agrees(head: Head, table_head: Head, report: HostReport) -> bool:
    """The table registers this head: under its key (whatever the pins say: ``--repin``
    cannot settle a table and a head.json that disagree), and at its record the same hash."""
    if table_head.key != head.key:
        report.fail(
            "key-changed",
            f"head.json is signed by key {head.key.hex()[:16]}…, the table's newest snapshot "
            f"by {table_head.key.hex()[:16]}… (re-signed by another key?)",
        )
        return False
    if table_head.seq == head.seq and table_head.hash != head.hash:
        report.fail(
            "bad-head",
            f"the table registers manifest record {head.seq} as head {table_head.hash[:16]}…, "
            f"head.json signs {head.hash[:16]}… (not the head the table registered)",
        )
        return False
    return True


def _check_manifest(wh: Warehouse, host: str, head: Head, report: HostReport) -> None:
    uri = f"{wh.host_dir(host)}/manifest.jsonl"
    data = wh.read(uri)
    if data is None:
        report.fail("missing", f"{uri}: the manifest is missing")
        return
    end = _prefix_end(data, head.seq)
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".jsonl") as tmp:
        tmp.write(data[:end])
        tmp.flush()
        try:
            state = read_manifest(Path(tmp.name), strict_tail=True)
        except LogCorrupt as exc:
            report.fail("bad-head", f"{uri}: {str(exc).split(': ', 1)[-1]}")
            return
    if state.head != head.hash or len(state.records) != head.seq + 1:
        report.fail("bad-head", f"{uri}: its record {head.seq} is not the one the head signs")
        return
    if [s.name for s in state.segments()] != head.segments:
        report.fail("bad-head", f"{uri}: folds to other segments than the head names")


def _prefix_end(data: bytes, seq: int) -> int:
    """Byte length of the first ``seq + 1`` lines (the manifest may have grown since)."""
    end = -1
    for _ in range(seq + 1):
        end = data.find(b"\n", end + 1)
        if end < 0:
            return len(data)
    return end + 1


def _check_files(wh: Warehouse, head: Head, tasks: list[Any], report: HostReport) -> None:
    _check_scan(tasks, report)
    registered = {segment_name(t.file.file_path): t.file for t in tasks}
    wanted = head.segments
    for name in wanted:
        if name not in registered:
            report.fail("missing", f"segment {name[:16]}… is named by the head but not registered")
    named = set(wanted)
    for name, data_file in registered.items():
        if name not in named:
            report.fail("extra", f"{data_file.file_path}: registered; the head does not name it")
    digest = blake3.blake3()  # over the ids file by file: one file in memory at a time
    for name in wanted:
        if name not in registered:
            continue
        uri = registered[name].file_path
        data = wh.read(uri)
        if data is None:
            report.fail("missing", f"{uri}: registered, but the store no longer has it")
        elif blake3.blake3(data).hexdigest() != name:
            report.fail("altered", f"{uri}: its bytes do not hash to its name (swapped or edited)")
        else:
            digest.update(_read_checked(wh, registered[name], data, report))
        del data
    if report.ok:
        report.digest = digest.hexdigest()  # what live_digest() gives over the same ids
        if report.digest != head.body["digest"]:
            report.fail(
                "digest",
                f"the files' ids hash to {report.digest[:16]}…, "
                f"the head says {str(head.body['digest'])[:16]}…",
            )


def _check_scan(tasks: list[Any], report: HostReport) -> None:
    """What the manifests add to the files: a second entry, or delete files, change what
    every engine reads though each file's bytes are intact."""
    seen: dict[str, int] = {}
    for task in tasks:
        seen[task.file.file_path] = seen.get(task.file.file_path, 0) + 1
        for delete in sorted(task.delete_files, key=lambda d: str(d.file_path)):
            kind = str(getattr(delete.content, "name", delete.content)).lower().replace("_", "-")
            report.fail(
                "deletes",
                f"{task.file.file_path}: a {kind} file ({delete.file_path}, "
                f"{delete.record_count} row(s)) applies to it: engines read fewer rows "
                "than the host sealed",
            )
    for path, count in seen.items():
        if count > 1:
            report.fail(
                "duplicate",
                f"{path}: registered {count} times (engines read its events {count} times)",
            )


def _read_checked(wh: Warehouse, data_file: Any, data: bytes, report: HostReport) -> bytes:
    """The file's ids; its row count and time bounds in the table must be the file's own
    (engines answer counts from the first, and skip files by the second)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from nerve.log.codec import fixed_bytes

    table = pq.read_table(pa.BufferReader(data), columns=["id", "physical_ns"])
    uri = data_file.file_path
    if int(data_file.record_count) != table.num_rows:
        report.fail(
            "metadata",
            f"{uri}: the table says {data_file.record_count} rows, the file holds {table.num_rows}",
        )
    if table.num_rows:
        low, high = pc.min_max(table.column("physical_ns")).values()
        _check_bounds(wh, data_file, int(low.as_py()), int(high.as_py()), report)
    return fixed_bytes(table.column("id"))


def _check_bounds(wh: Warehouse, data_file: Any, low: int, high: int, report: HostReport) -> None:
    from pyiceberg.conversions import from_bytes
    from pyiceberg.types import LongType

    field = wh.table.schema().find_field("physical_ns").field_id
    lower = (data_file.lower_bounds or {}).get(field)
    upper = (data_file.upper_bounds or {}).get(field)
    if (lower is not None and int(from_bytes(LongType(), lower)) > low) or (
        upper is not None and int(from_bytes(LongType(), upper)) < high
    ):
        report.fail(
            "metadata",
            f"{data_file.file_path}: the table's physical_ns bounds do not cover the file's "
            "events (a time filter would skip them)",
        )

"""Sealed segments: immutable Parquet files named by the blake3 of their bytes."""

from __future__ import annotations

import collections
import contextlib
import os
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import blake3
import pyarrow as pa

from nerve import fsio
from nerve.clock import Hlc
from nerve.errors import EventError, LogCorrupt, one_line
from nerve.log import crypt
from nerve.log.codec import ERASABLE_SCHEMA, SCHEMA, conform, fixed_bytes, is_v1, stored_form
from nerve.log.lazy import pc, pq
from nerve.log.manifest import SegmentInfo

ROW_GROUP = 131_072
SORT_KEYS = [
    ("physical_ns", "ascending"),
    ("logical", "ascending"),
    ("node", "ascending"),
    ("id", "ascending"),
]
# Writer options, chosen by measurement (bench/footprint_bench.py, an hour of the bundled
# senses): zstd level 3 stores ~30% fewer bytes than snappy, level 9 ~10% fewer again (19
# only 4% more, at many times the time); a segment is written once, so 9 is worth it;
# delta encoding of the two clocks ~2%; dictionaries matter little for size but keep
# kind/subject scans cheap. The hashes are random bytes: compressing them gains nothing, so
# ``payload_cid``, which is blake3(payload), is stored only for erased rows (stored_form).
_RAW_COLUMNS = ("id", "payload_cid")
_DELTA_COLUMNS = ("physical_ns", "valid_time_ns")
ZSTD_LEVEL = 9


def sort_events(table: pa.Table) -> pa.Table:
    """HLC order, ties broken by node then id. Skips the sort when already ordered."""
    if table.num_rows < 2 or _is_sorted(table):
        return table
    return table.sort_by(SORT_KEYS)


def _is_sorted(table: pa.Table) -> bool:
    phys = table.column("physical_ns").to_numpy()
    logi = table.column("logical").to_numpy()
    dp = phys[1:] - phys[:-1]
    if (dp < 0).any():
        return False
    same = dp == 0
    return not (same & (logi[1:] <= logi[:-1])).any()


def encode_table(table: pa.Table) -> bytes:
    """A sorted table as the bytes of a segment (the writer options chosen by measurement)."""
    sink = pa.BufferOutputStream()
    packed = [name for name in SCHEMA.names if name not in _RAW_COLUMNS]
    pq.write_table(
        stored_form(table),
        sink,
        row_group_size=ROW_GROUP,
        compression={name: ("zstd" if name in packed else "none") for name in SCHEMA.names},
        compression_level=dict.fromkeys(packed, ZSTD_LEVEL),
        use_dictionary=["node", "kind", "subject", "source", "trust", "line"],
        column_encoding=dict.fromkeys(_DELTA_COLUMNS, "DELTA_BINARY_PACKED"),
        write_statistics=["physical_ns", "logical", "kind", "source"],
    )
    data: bytes = sink.getvalue().to_pybytes()
    return data


def ids_root(ids: bytes) -> str:
    return blake3.blake3(ids).hexdigest()


def write_segment(folder: Path, table: pa.Table) -> SegmentInfo:
    """Write a sorted table crash-safely and return its manifest entry.

    temp file in the same folder → fsync → rename to ``<blake3>.parquet`` → fsync folder.
    A table holding erased rows is written with :data:`ERASABLE_SCHEMA`; any other keeps
    :data:`SCHEMA`, so segments without erasures are byte-for-byte what they always were.
    """
    table = sort_events(table.select(SCHEMA.names).cast(schema_for(table)))
    data = encode_table(table)
    cipher = crypt.cipher_for(folder.parent)
    if cipher is not None:  # an encrypted log: the name is over the bytes on disk
        data = cipher.encrypt_file(data)
    name = blake3.blake3(data).hexdigest()
    tmp = folder / f".tmp-{secrets.token_hex(8)}.parquet"
    final = folder / f"{name}.parquet"
    try:
        fd = fsio.open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            fsio.write_all(fd, data, site="segment.write", path=tmp)
            fsio.fsync(fd, site="segment.fsync", path=tmp)
        finally:
            os.close(fd)
        fsio.rename(tmp, final, site="segment.rename")
        fsio.fsync_dir(folder, site="segment.dirsync")
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return SegmentInfo(
        name,
        table.num_rows,
        _hlc_at(table, 0),
        _hlc_at(table, -1),
        ids_root(fixed_bytes(table.column("id"))),
    )


def schema_for(table: pa.Table) -> pa.Schema:
    erased = table.column("payload").null_count or table.column("line").null_count
    return ERASABLE_SCHEMA if erased else SCHEMA


def concat(tables: list[pa.Table]) -> pa.Table:
    """Tables of events as one; a segment with erased rows has nullable payload and line."""
    if len({t.schema for t in tables}) > 1:
        return pa.concat_tables(tables, promote_options="default")
    return pa.concat_tables(tables)


def _hlc_at(table: pa.Table, index: int) -> Hlc:
    row = index if index >= 0 else table.num_rows + index
    return Hlc(table.column("physical_ns")[row].as_py(), table.column("logical")[row].as_py())


def segment_path(folder: Path, name: str) -> Path:
    return folder / f"{name}.parquet"


def check_regular(path: Path) -> None:
    """Refuse a segment path that is not a regular file at once (a FIFO would block the
    Parquet reader forever, a folder would be read as a dataset)."""
    if fsio.is_regular(path):
        return
    if not os.path.lexists(path):
        raise FileNotFoundError(2, "live segment is missing", str(path))
    raise LogCorrupt(f"{path}: is not a regular file (a FIFO, device, folder or link)")


def source(path: Path) -> Path | pa.BufferReader:
    """What the Parquet reader should read for a segment: the file itself, or for an
    encrypted one its plaintext in memory (kept a while: segments never change)."""
    if not crypt.is_encrypted(path.parent.parent) or not crypt.encrypted_file(path):
        return path  # a plain log's segment: one stat, no extra open
    return pa.BufferReader(plaintext(path))


def plaintext(path: Path) -> pa.Buffer:
    """An encrypted segment's Parquet bytes (a small cache by name: names are addresses)."""
    key = str(path)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    data = _arrow_owned(crypt.open_bytes(fsio.read_bytes(path), path))
    with _CACHE_LOCK:
        _CACHE[key] = data
        while len(_CACHE) > 1 and sum(b.size for b in _CACHE.values()) > _CACHE_BYTES:
            _CACHE.popitem(last=False)
    return data


def _arrow_owned(data: bytes | memoryview) -> pa.Buffer:
    """A copy in memory Arrow allocated (see nerve.log.buffers: why not Python's)."""
    sink = pa.BufferOutputStream()
    sink.write(data)
    buffer: pa.Buffer = sink.getvalue()
    return buffer


_CACHE: collections.OrderedDict[str, pa.Buffer] = collections.OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_BYTES = 256 << 20


@contextlib.contextmanager
def reading(path: Path) -> Iterator[None]:
    """Any failure to read ``path`` as a segment, but its absence, as :class:`LogCorrupt`
    naming the file."""
    try:
        yield
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError, UnicodeDecodeError, KeyError) as exc:  # KeyError: a field
        raise LogCorrupt(f"{path}: cannot be read as Parquet: {one_line(exc)}") from None
    except (LogCorrupt, EventError) as exc:  # a row that is not an event is a corrupt file
        raise LogCorrupt(f"{path}: {one_line(exc)}") from None


# The Parquet physical type each column of the log may be stored as (today's and v1's):
# Arrow aborts the process, rather than raising, on some columns whose footer disagrees.
_PHYSICAL = {
    "physical_ns": {"INT64"}, "logical": {"INT64", "INT32"}, "source": {"INT64", "INT32"},
    "trust": {"INT32", "INT64"}, "valid_time_ns": {"INT64"}, "node": {"BYTE_ARRAY"},
    "kind": {"BYTE_ARRAY"}, "subject": {"BYTE_ARRAY"}, "payload": {"BYTE_ARRAY"},
    "line": {"BYTE_ARRAY"}, "payload_cid": {"FIXED_LEN_BYTE_ARRAY", "BYTE_ARRAY"},
    "id": {"FIXED_LEN_BYTE_ARRAY", "BYTE_ARRAY"},
}  # fmt: skip


def opened(path: Path) -> Any:
    """The segment's Parquet file, its footer checked: each of the log's columns stored as a
    type it may have (:class:`LogCorrupt` naming the column otherwise)."""
    file = pq.ParquetFile(source(path))
    schema = file.schema
    for index in range(len(schema)):
        column = schema.column(index)
        allowed = _PHYSICAL.get(column.name)
        if allowed is not None and column.physical_type not in allowed:
            raise LogCorrupt(f"column {column.name} is stored as {column.physical_type}")
    return file


def read_segment(path: Path, columns: list[str] | None = None) -> pa.Table:
    check_regular(path)
    with reading(path):
        wanted = with_cid_source(columns)
        table = complete(conform(opened(path).read(columns=wanted)), wanted)
        return table if wanted == columns else table.select(columns)


def complete(table: pa.Table, columns: list[str] | None = None) -> pa.Table:
    """``table`` when it holds every column asked for (all of the log's by default); a
    segment without one is corrupt (:class:`LogCorrupt` naming them)."""
    missing = [name for name in columns or SCHEMA.names if name not in table.schema.names]
    if missing:
        raise LogCorrupt(f"has no column {', '.join(missing)}")
    return table


def with_cid_source(columns: list[str] | None) -> list[str] | None:
    """The columns to read for ``columns``: ``payload`` too when ``payload_cid`` is asked for,
    since most rows' address is recomputed from it."""
    if columns is not None and "payload_cid" in columns and "payload" not in columns:
        return [*columns, "payload"]
    return columns


def stored_v1(path: Path) -> bool:
    """True for a segment written with the v1 (unsigned) column types; reads the footer."""
    check_regular(path)
    with reading(path):
        return is_v1(pq.read_schema(source(path)))


def read_since(path: Path, since: Hlc) -> pa.Table:
    """Rows strictly after ``since``, using the physical_ns statistics to skip row groups."""
    check_regular(path)
    with reading(path):
        file = opened(path)
        groups = [i for i in range(file.num_row_groups) if _ends_at_or_after(file, i, since)]
        table = file.read_row_groups(groups) if groups else file.schema_arrow.empty_table()
        return after(complete(conform(table)), since)


def _ends_at_or_after(file: Any, group: int, since: Hlc) -> bool:
    """Whether row group ``group`` may hold a row at or after ``since``'s physical time (by
    its ``physical_ns`` statistics; a group without them is read). Chosen by hand rather than
    through ``read_table(filters=...)``, which hangs on some corrupt footers."""
    names = [file.schema.column(i).name for i in range(len(file.schema))]
    if "physical_ns" not in names:
        return True
    # Only that column's chunk metadata is built: Arrow aborts the process on some damaged
    # chunk metadata (a level histogram of the wrong size), so the others are not touched.
    column = file.metadata.row_group(group).column(names.index("physical_ns"))
    if column.physical_type != "INT64":  # pyarrow aborts reading such statistics
        raise LogCorrupt(f"physical_ns is stored as {column.physical_type}")
    stats = column.statistics
    if stats is None or not stats.has_min_max:
        return True
    return bool(stats.max >= since.physical_ns)


def after(table: pa.Table, since: Hlc) -> pa.Table:
    """The rows of an HLC-ordered table stamped strictly after ``since``."""
    if table.num_rows == 0 or since == (0, 0):
        return table
    return table.filter(_stamp_mask(table, since, pc.greater, pc.greater))


def of_kind(table: pa.Table, kind: str) -> pa.Table | None:
    """The rows of one kind, or None if there are none. A commit's listeners call this on
    every commit, and most hold no row of the kind they want: the distinct kinds tell."""
    kinds = table.column("kind")
    if kind not in pc.unique(kinds).to_pylist():
        return None
    return table.filter(pc.equal(kinds, kind))


def up_to(table: pa.Table, last: Hlc) -> pa.Table:
    """The rows of an HLC-ordered table stamped at or before ``last``."""
    if table.num_rows == 0:
        return table
    return table.filter(_stamp_mask(table, last, pc.less, pc.less_equal))


def _stamp_mask(table: pa.Table, stamp: Hlc, beyond: Any, at: Any) -> pa.ChunkedArray:
    """Rows whose physical time is ``beyond`` the stamp's, or equal with a logical ``at``."""
    phys, logi = table.column("physical_ns"), table.column("logical")
    return pc.or_(
        beyond(phys, stamp.physical_ns),
        pc.and_(pc.equal(phys, stamp.physical_ns), at(logi, stamp.logical)),
    )

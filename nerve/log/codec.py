"""Events as Arrow columns: the schema, batch id computation, and the JSON wire form.

The batch path builds every row's id preimage with Arrow kernels (the same bytes as
``nerve.events.id_preimage``) and then hashes each row; tests hold the two paths equal.
"""

from __future__ import annotations

import functools
import itertools
import json
import struct
from collections.abc import Iterable, Sequence

import blake3
import numpy as np
import pyarrow as pa

from nerve.clock import Hlc
from nerve.errors import LogCorrupt
from nerve.events import (
    ID_TAG,
    ErasedEvent,
    Event,
    Trust,
    source_name,
    trust_name,
)
from nerve.log.fields import EventFields
from nerve.log.lazy import pc
from nerve.log.wire import (
    payload_text,
)

__all__ = [  # the JSON half is nerve.log.wire
    "COLUMNS",
    "EMPTY",
    "ERASABLE_SCHEMA",
    "SCHEMA",
    "STORED_SCHEMA",
    "build_table",
    "events_from_table",
    "fixed_bytes",
    "hash_each",
    "ids_of",
    "kept_hashes",
    "preimages",
    "rows_of",
    "small_rows",
    "stored_events",
    "table_from_events",
    "table_from_rows",
    "wire_lines",
]


def _schema(logical: pa.DataType, source: pa.DataType, trust: pa.DataType) -> pa.Schema:
    return pa.schema(
        [
            pa.field("physical_ns", pa.int64(), nullable=False),
            pa.field("logical", logical, nullable=False),
            pa.field("node", pa.string(), nullable=False),
            pa.field("kind", pa.string(), nullable=False),
            pa.field("subject", pa.string(), nullable=False),
            pa.field("source", source, nullable=False),
            pa.field("trust", trust, nullable=False),
            pa.field("valid_time_ns", pa.int64(), nullable=True),
            pa.field("payload_cid", pa.binary(32), nullable=False),
            pa.field("payload", pa.binary(), nullable=False),
            pa.field("line", pa.string(), nullable=False),
            pa.field("id", pa.binary(32), nullable=False),
        ]
    )


# Signed types only: Iceberg (and Spark, Trino) has no unsigned integers, so segments can be
# registered in an Iceberg table as they are. Values keep their ranges (logical and source
# fit 32 unsigned bits, trust 0..3); only the stored type is wider.
SCHEMA = _schema(pa.int64(), pa.int64(), pa.int32())
# What segments and WAL frames held before: readers still accept it (see ``conform``).
SCHEMA_V1 = _schema(pa.uint32(), pa.uint32(), pa.uint8())
COLUMNS = SCHEMA.names
EMPTY = pa.Table.from_batches([], schema=SCHEMA)  # empty_table() would import pandas


def _erasable(schema: pa.Schema) -> pa.Schema:
    return pa.schema(
        [f.with_nullable(True) if f.name in ("payload", "line") else f for f in schema]
    )


# A segment holding erased rows (nerve.log.erasure): their payload and line are null.
ERASABLE_SCHEMA = _erasable(SCHEMA)
# What any segment file may hold (the Iceberg table's schema): also payload_cid may be null,
# since a segment stores it for erased rows alone (see ``stored_form``).
STORED_SCHEMA = pa.schema(
    [f.with_nullable(True) if f.name == "payload_cid" else f for f in ERASABLE_SCHEMA]
)
_V1_SCHEMAS = (SCHEMA_V1, _erasable(SCHEMA_V1))
_WIDEN = {"logical": pa.int64(), "source": pa.int64(), "trust": pa.int32()}


def is_v1(schema: pa.Schema) -> bool:
    """True for a table (or a column selection of one) stored with the unsigned v1 types."""
    return any(
        name in schema.names and schema.field(name).type != kind for name, kind in _WIDEN.items()
    )


# The types a stored column may have: today's, or v1's.
_STORED_TYPES = {f.name: (f.type, SCHEMA_V1.field(f.name).type) for f in SCHEMA}


def check_types(schema: pa.Schema) -> None:
    """Refuse a table whose columns hold other types than a segment or frame may store."""
    for field in schema:
        allowed = _STORED_TYPES.get(field.name)
        if allowed is not None and field.type not in allowed:
            raise LogCorrupt(
                f"column {field.name!r} holds {field.type}, not {allowed[0]} as the log stores it"
            )


def conform(table: pa.Table, payload_hashes: bytes | None = None) -> pa.Table:
    """A table read from a segment or WAL frame of any version, in today's types, with every
    ``payload_cid`` present (see :func:`stored_form`). ``payload_hashes``: ``hash_each`` of
    its payload column, when the caller has it already. Other column types are refused
    (:class:`LogCorrupt`, naming the column)."""
    check_types(table.schema)
    if is_v1(table.schema):
        fields = [f.with_type(_WIDEN[f.name]) if f.name in _WIDEN else f for f in table.schema]
        table = table.cast(pa.schema(fields, metadata=table.schema.metadata))
    return _filled_cids(table, payload_hashes)


def stored_form(table: pa.Table) -> pa.Table:
    """A table as a segment stores it: ``payload_cid`` only where the payload is gone (an
    erased row: the proof of what was there). Elsewhere it is ``blake3(payload)`` by
    definition and readers recompute it, which saves 32 incompressible bytes an event."""
    at = table.schema.get_field_index("payload_cid")
    cids = table.column(at)
    kept = pc.if_else(pc.is_null(table.column("payload")), cids, pa.scalar(None, cids.type))
    return table.set_column(at, table.schema.field(at).with_nullable(True), kept)


def _filled_cids(table: pa.Table, hashes: bytes | None) -> pa.Table:
    at = table.schema.get_field_index("payload_cid")
    if at < 0:
        return table
    cids, field = table.column(at), table.schema.field(at)
    if cids.null_count:
        payload = table.column("payload")
        hashes = hash_each(payload) if hashes is None else hashes
        computed = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(32), len(payload), [None, pa.py_buffer(hashes)]
        )
        cids = pc.coalesce(cids, computed)
    elif not field.nullable:
        return table
    return table.set_column(at, field.with_nullable(False), cids)


def _u32(value: int) -> bytes:
    return struct.pack(">I", value)


# The preimage's runs of fixed-width fields, each packed into one record per row (numpy
# packs a record's fields without gaps), so a batch's preimages join eight parts, not twenty.
_TAG = _u32(len(ID_TAG)) + ID_TAG + _u32(12)  # the tag, then the stamp's length
_TAG_FIELD = np.frombuffer(_TAG, f"V{len(_TAG)}")[0]
_HEAD = np.dtype([("tag", f"V{len(_TAG)}"), ("p", ">u8"), ("l", ">u4"), ("node", ">u4")])
_LENGTH_ONLY = np.dtype([("n", ">u4")])
_SOURCE_TRUST_RUN = [("n4", ">u4"), ("source", ">u4"), ("n1", ">u4"), ("trust", "u1")]
_VALID_TIMES = {"none": [("n0", ">u4")], "all": [("n8", ">u4"), ("vt", ">i8")], "mixed": []}
_CID = [("n32", ">u4"), ("cid", "V32")]
_VT_DTYPE = np.dtype([("n", ">u4"), ("v", ">i8")])


def _as_binary(packed: np.ndarray) -> pa.Array:
    """A packed record array as a binary array, one element per record (no copy)."""
    count, width = len(packed), packed.dtype.itemsize
    offsets = np.arange(0, (count + 1) * width, width, dtype=np.int32)
    return pa.Array.from_buffers(
        pa.binary(), count, [None, pa.py_buffer(offsets), pa.py_buffer(packed)]
    )


def _lengths(values: pa.Array) -> np.ndarray:
    lengths: np.ndarray = pc.binary_length(values).fill_null(0).to_numpy(zero_copy_only=False)
    return lengths


def _length_field(values: pa.Array) -> pa.Array:
    packed = np.empty(len(values), _LENGTH_ONLY)
    packed["n"] = _lengths(values)
    return _as_binary(packed)


def _valid_time_field(col: pa.Array) -> pa.Array:
    """The valid-time field of a batch holding both present and absent valid times."""
    count = len(col)
    packed = np.empty(count, dtype=_VT_DTYPE)
    packed["n"] = 8
    packed["v"] = pc.fill_null(col, 0).to_numpy(zero_copy_only=False)
    absent = pa.scalar(_u32(0), pa.binary())
    return pc.if_else(pc.is_null(col), absent, _as_binary(packed))


def preimages(batch: pa.Table | pa.RecordBatch, *, line: bool = True) -> pa.Array:
    """Every row's id preimage (see ``nerve.events.id_preimage``) as one binary array.

    ``line=False`` leaves out the last field: what an erased row still holds."""
    if isinstance(batch, pa.Table):
        batch = batch.combine_chunks().to_batches()[0] if batch.num_rows else None
        if batch is None:
            return pa.array([], pa.binary())
    count = batch.num_rows
    col = batch.column
    node, kind, subject = (col(name).cast(pa.binary()) for name in ("node", "kind", "subject"))
    head = np.empty(count, _HEAD)
    head["tag"] = _TAG_FIELD
    head["p"] = col("physical_ns").to_numpy(zero_copy_only=False)
    head["l"] = col("logical").to_numpy(zero_copy_only=False)
    head["node"] = _lengths(node)
    # source, trust, the valid time, the payload address and the line's length are one run
    # of fixed width, unless some rows have a valid time and others not
    valid = col("valid_time_ns")
    shape = "none" if valid.null_count == count else "all" if not valid.null_count else "mixed"
    after = _CID + ([("line", ">u4")] if line else [])
    mid = np.empty(
        count, _SOURCE_TRUST_RUN + _VALID_TIMES[shape] + (after if shape != "mixed" else [])
    )
    mid["n4"], mid["n1"] = 4, 1
    mid["source"] = col("source").to_numpy(zero_copy_only=False)
    mid["trust"] = col("trust").to_numpy(zero_copy_only=False)
    if shape == "none":
        mid["n0"] = 0
    elif shape == "all":
        mid["n8"] = 8
        mid["vt"] = valid.to_numpy(zero_copy_only=False)
    rest = mid if shape != "mixed" else np.empty(count, after)
    rest["n32"] = 32
    rest["cid"] = np.frombuffer(fixed_bytes(col("payload_cid")), "V32")
    text = col("line").cast(pa.binary()) if line else None
    if text is not None:
        rest["line"] = _lengths(text)
    middle = [_as_binary(mid)]
    if shape == "mixed":
        middle += [_valid_time_field(valid), _as_binary(rest)]
    parts = [_as_binary(head), node, _length_field(kind), kind, _length_field(subject), subject]
    parts += [*middle, *([text] if text is not None else [])]
    return pc.binary_join_element_wise(*parts, b"")


def hash_each(values: pa.Array | pa.ChunkedArray) -> bytes:
    """blake3 of every element of a binary array, concatenated (32 bytes each)."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    out: list[bytes] = []
    hasher = blake3.blake3()
    update, digest, reset, append = hasher.update, hasher.digest, hasher.reset, out.append
    for raw in chunks:
        chunk = raw.cast(pa.binary())
        if len(chunk) == 0:
            continue
        offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32)
        bounds = offsets[chunk.offset : chunk.offset + len(chunk) + 1].tolist()
        buf = chunk.buffers()[2]
        # Slicing bytes is cheaper per row than slicing a memoryview of the Arrow buffer.
        data = buf.to_pybytes() if buf is not None else b""
        for start, end in itertools.pairwise(bounds):
            update(data[start:end])
            append(digest())
            reset()
    return b"".join(out)


def _hash_values(values: Sequence[bytes], array: pa.Array) -> bytes:
    """``hash_each(array)`` for an array just made from the list ``values``: hashed from the
    list when it holds only bytes-like items, which saves slicing each element out again."""
    if type(values) is list:
        out: list[bytes] = []
        hasher = blake3.blake3()
        update, digest, reset, append = hasher.update, hasher.digest, hasher.reset, out.append
        try:
            for value in values:
                update(value)
                append(digest())
                reset()
        except (TypeError, BufferError, ValueError):  # e.g. text, which Arrow stores as UTF-8
            pass
        else:
            return b"".join(out)
    return hash_each(array)


def ids_of(batch: pa.Table | pa.RecordBatch) -> bytes:
    """Recompute every row's event id from its other columns."""
    return hash_each(preimages(batch))


def kept_hashes(batch: pa.Table | pa.RecordBatch) -> bytes:
    """blake3 of every row's preimage without its line (32 bytes each): what binds the
    fields an erasure keeps, since the id can no longer be recomputed from them."""
    return hash_each(preimages(batch, line=False))


def fixed_bytes(col: pa.Array | pa.ChunkedArray) -> bytes:
    """The raw bytes of a fixed_size_binary(32) column, concatenated."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    parts = []
    for chunk in chunks:
        width = chunk.type.byte_width
        buf = chunk.buffers()[1]
        parts.append(buf[chunk.offset * width : (chunk.offset + len(chunk)) * width].to_pybytes())
    return b"".join(parts)


def build_table(
    stamps: Sequence[Hlc] | tuple[int, int, int],
    *,
    node: str | Sequence[str],
    fields: EventFields,
) -> pa.Table:
    """Columns in, a table with payload addresses and event ids out.

    ``stamps`` is either one stamp per row or ``(physical_ns, first_logical, count)`` for a
    run of consecutive logical values, which is what one group commit reserves.
    """
    if len(fields) <= SMALL_BATCH:
        return table_from_rows(small_rows(stamps, node=node, fields=fields))
    return _bulk_table(stamps, node, fields)


def _bulk_table(
    stamps: Sequence[Hlc] | tuple[int, int, int],
    node: str | Sequence[str],
    fields: EventFields,
) -> pa.Table:
    """``build_table`` with Arrow kernels: ids hashed from preimages built column-wise."""
    count = len(fields)
    if isinstance(stamps, tuple) and len(stamps) == 3 and isinstance(stamps[0], int):
        physical = pa.array(np.full(count, stamps[0], dtype=np.int64))
        logical = pa.array(np.arange(stamps[1], stamps[1] + count, dtype=np.int64))
    else:
        physical = pa.array([s[0] for s in stamps], pa.int64())
        logical = _ranged([s[1] for s in stamps], pa.uint32(), pa.int64())
    nodes = _repeat(node, count) if isinstance(node, str) else pa.array(node, pa.string())
    payloads = pa.array(fields.payload, pa.binary())
    cids = _hash_values(fields.payload, payloads)
    columns = [
        physical,
        logical,
        nodes,
        pa.array(fields.kind, pa.string()),
        pa.array(fields.subject, pa.string()),
        _ranged(fields.source, pa.uint32(), pa.int64()),
        _ranged(fields.trust, pa.uint8(), pa.int32()),
        pa.array(fields.valid_time_ns, pa.int64()),
        pa.FixedSizeBinaryArray.from_buffers(pa.binary(32), count, [None, pa.py_buffer(cids)]),
        payloads,
        pa.array(fields.line, pa.string()),
    ]
    partial = pa.RecordBatch.from_arrays(columns, names=COLUMNS[:-1])
    ids = ids_of(partial)
    id_col = pa.FixedSizeBinaryArray.from_buffers(pa.binary(32), count, [None, pa.py_buffer(ids)])
    return pa.Table.from_batches([pa.RecordBatch.from_arrays([*columns, id_col], schema=SCHEMA)])


# At most this many rows, ids are hashed row by row in Python: per call, Arrow's compute
# kernels cost more than the work itself (a compute's observations are one to a few rows,
# a daemon's group commit a few dozen). The two cost the same near 128 rows.
SMALL_BATCH = 128


def _stamp_pairs(stamps: Sequence[Hlc] | tuple[int, int, int], count: int) -> list[tuple[int, int]]:
    if isinstance(stamps, tuple) and len(stamps) == 3 and isinstance(stamps[0], int):
        first, logical = stamps[0], stamps[1]
        return [(first, logical + i) for i in range(count)]
    return [(s[0], s[1]) for s in stamps]


# One stored row in ``SCHEMA``'s column order: what a small WAL frame holds.
Row = tuple[int, int, str, str, str, int, int, int | None, bytes, bytes, str, bytes]
_STRUCT = pa.struct(list(SCHEMA))
_I64_MIN, _I64_MAX, _U32_MAX = -(1 << 63), (1 << 63) - 1, (1 << 32) - 1


def small_rows(
    stamps: Sequence[Hlc] | tuple[int, int, int],
    *,
    node: str | Sequence[str],
    fields: EventFields,
) -> list[Row]:
    """``build_table``'s rows for a few events as Python tuples, without Arrow.

    Ids hash the bytes of ``events.id_preimage``. Values of the plain types (``str``,
    ``int``, ``bytes``, in range) are taken as they are; a batch holding anything else goes
    through the Arrow path, so it is refused (or converted) exactly as ``build_table`` would.
    """
    count = len(fields)
    nodes = [node] * count if isinstance(node, str) else node
    if isinstance(stamps, tuple) and len(stamps) == 3 and isinstance(stamps[0], int):
        pairs = [(stamps[0], stamps[1] + i) for i in range(count)]
    else:
        pairs = _stamp_pairs(stamps, count)
    f = fields
    columns = (nodes, f.kind, f.subject, f.source, f.trust, f.valid_time_ns, f.payload, f.line)
    out: list[Row] = []
    for (p, lo), nd, k, s, src, tr, vt, pl, ln in zip(pairs, *columns, strict=True):
        if not _plain(p, lo, nd, k, s, src, tr, vt, pl, ln):
            return rows_of(_bulk_table(stamps, node, fields))
        cid = blake3.blake3(pl).digest()
        text = ln.encode()
        preimage = b"".join(
            (
                _TAG,
                _STAMP.pack(p, lo),
                _text_fields(nd, k, s),
                _SOURCE_TRUST.pack(4, src, 1, tr),
                _NO_VALID_TIME if vt is None else _VALID_TIME.pack(8, vt),
                _CID_LENGTH,
                cid,
                _LENGTH.pack(len(text)),
                text,
            )
        )
        out.append((p, lo, nd, k, s, src, tr, vt, cid, pl, ln, blake3.blake3(preimage).digest()))
    return out


# ``events.id_preimage``'s fields, packed a few at a time (tests hold the two equal).
_STAMP = struct.Struct(">QI")
_LENGTH = struct.Struct(">I")
_SOURCE_TRUST = struct.Struct(">IIIB")  # u32 4, source, u32 1, trust
_VALID_TIME = struct.Struct(">Iq")
_NO_VALID_TIME, _CID_LENGTH = _u32(0), _u32(32)


@functools.lru_cache(maxsize=1024)
def _text_fields(*texts: str) -> bytes:
    """Text fields of the preimage (each a length, then UTF-8): node, kind and subject,
    which repeat from one append to the next."""
    return b"".join(_LENGTH.pack(len(data)) + data for data in (t.encode() for t in texts))


def _plain(
    p: object,
    lo: object,
    node: object,
    kind: object,
    subject: object,
    source: object,
    trust: object,
    valid_time_ns: object,
    payload: object,
    line: object,
) -> bool:
    """True if a row's values need no conversion and lie in the ranges the id encodes."""
    return (
        type(p) is int
        and 0 <= p <= _I64_MAX
        and type(lo) is int
        and 0 <= lo <= _U32_MAX
        and type(node) is str
        and type(kind) is str
        and type(subject) is str
        and type(source) is int
        and 0 <= source <= _U32_MAX
        and type(trust) is int
        and 0 <= trust <= 255
        and (
            valid_time_ns is None
            or (type(valid_time_ns) is int and _I64_MIN <= valid_time_ns <= _I64_MAX)
        )
        and type(payload) is bytes
        and type(line) is str
    )


def table_from_rows(rows: Sequence[Row]) -> pa.Table:
    """Rows (``SCHEMA`` order, as :func:`small_rows` makes them) as a table: one conversion."""
    if not rows:
        return EMPTY
    batch = pa.RecordBatch.from_struct_array(pa.array(rows, _STRUCT))
    return pa.Table.from_batches([batch], schema=SCHEMA)


def rows_of(table: pa.Table) -> list[Row]:
    """A table's rows as tuples in ``SCHEMA`` order (the inverse of :func:`table_from_rows`)."""
    columns = [table.column(name).to_pylist() for name in COLUMNS]
    return list(zip(*columns, strict=True))


def _ranged(values: Sequence[int], narrow: pa.DataType, stored: pa.DataType) -> pa.Array:
    """Values checked against the range the id preimage encodes, in the stored type."""
    return pa.array(values, narrow).cast(stored)


def _repeat(text: str, count: int) -> pa.Array:
    """A string column holding ``text`` ``count`` times, built without a Python list."""
    data = text.encode()
    offsets = np.arange(0, (count + 1) * len(data), len(data) or 1, dtype=np.int32)[: count + 1]
    if not data:
        offsets = np.zeros(count + 1, dtype=np.int32)
    return pa.StringArray.from_buffers(
        count, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data * count)
    )


def table_from_events(events: Iterable[Event]) -> pa.Table:
    """Build a table from already-formed events (ids recomputed and cross-checked)."""
    evs = list(events)
    if not evs:
        return EMPTY
    table = build_table(
        [e.hlc for e in evs],
        node=[e.node for e in evs],
        fields=EventFields(
            kind=[e.kind for e in evs],
            subject=[e.subject for e in evs],
            source=[e.source for e in evs],
            trust=[int(e.trust) for e in evs],
            valid_time_ns=[e.valid_time_ns for e in evs],
            payload=[e.payload for e in evs],
            line=[e.line for e in evs],
        ),
    )
    return table


def table_from_stored(events: Sequence[Event | ErasedEvent]) -> pa.Table:
    """Whole events (ids recomputed) and erased ones (their stored id and payload address
    kept, payload and line null) as one table in ``events``' order."""
    whole = table_from_events([e for e in events if isinstance(e, Event)])
    gone = [e for e in events if isinstance(e, ErasedEvent)]
    if not gone:
        return whole
    nulls = [None] * len(gone)
    erased = pa.table(
        {
            "physical_ns": [e.hlc.physical_ns for e in gone],
            "logical": [e.hlc.logical for e in gone],
            "node": [e.node for e in gone],
            "kind": [e.kind for e in gone],
            "subject": [e.subject for e in gone],
            "source": [e.source for e in gone],
            "trust": [int(e.trust) for e in gone],
            "valid_time_ns": [e.valid_time_ns for e in gone],
            "payload_cid": [e.payload_cid for e in gone],
            "payload": nulls,
            "line": nulls,
            "id": [e.id for e in gone],
        },
        schema=ERASABLE_SCHEMA,
    )
    both = pa.concat_tables([whole.select(SCHEMA.names).cast(ERASABLE_SCHEMA), erased])
    order = {e.id: i for i, e in enumerate(events)}
    at = [order[bytes(x)] for x in both.column("id").to_pylist()]
    return both.take(pa.array(sorted(range(len(at)), key=at.__getitem__)))


def stored_events(table: pa.Table) -> list[Event | ErasedEvent]:
    """Rows as events, an erased row as an :class:`ErasedEvent` (its stored id kept)."""
    if not table.column("line").null_count:
        return list(events_from_table(table))
    out: list[Event | ErasedEvent] = []
    for r in table.to_pylist():
        if r["line"] is not None:
            out += events_from_table(pa.Table.from_pylist([r], schema=table.schema))
            continue
        out.append(
            ErasedEvent(
                Hlc(r["physical_ns"], r["logical"]),
                r["node"],
                r["kind"],
                r["subject"],
                r["source"],
                _trust(r["trust"]),
                r["valid_time_ns"],
                r["payload_cid"],
                r["id"],
            )
        )
    return out


def _trust(value: int) -> Trust:
    """A stored trust level; a value no level has is damage, named like any other field's."""
    try:
        return Trust(value)
    except ValueError:
        raise LogCorrupt(f"field trust: {value!r} is not a trust level") from None


def events_from_table(table: pa.Table) -> list[Event]:
    """Materialise rows as :class:`Event` objects (recomputing ids; slow path for APIs)."""
    rows = table.to_pylist()
    return [
        Event(
            hlc=Hlc(r["physical_ns"], r["logical"]),
            node=r["node"],
            kind=r["kind"],
            subject=r["subject"],
            source=r["source"],
            trust=_trust(r["trust"]),
            valid_time_ns=r["valid_time_ns"],
            payload=r["payload"],
            line=r["line"],
        )
        for r in rows
    ]


_TEXT = json.encoder.encode_basestring  # a JSON string literal, non-ASCII kept (C)
_WIRE_COLUMNS = ("physical_ns", "logical", "id", "kind", "line", "node", "payload")
_WIRE_TAIL = ("payload_cid", "source", "subject", "trust", "valid_time_ns")


def wire_lines(table: pa.Table) -> list[str]:
    """Every row in the wire form as one JSON line (no newline), column by column.

    The value is ``row_to_json(row)``'s and the text ``json.dumps(…, sort_keys=True,
    separators=(",", ":"), ensure_ascii=False)``'s, built without a dict per row, except that
    a canonical payload is spliced in as stored (its JCS number text, e.g. ``0.00001`` where
    Python writes ``1e-05``), so a re-import addresses the same bytes. This is what
    ``nerve tail --json`` prints, fast enough to follow a busy log.
    """
    if not table.num_rows:
        return []
    col = {name: table.column(name).to_pylist() for name in (*_WIRE_COLUMNS, *_WIRE_TAIL)}
    sources = {code: _TEXT(source_name(code)) for code in set(col["source"])}
    trusts = {code: _TEXT(trust_name(code)) for code in set(col["trust"])}
    return [
        f'{{{"" if payload is not None else _ERASED}"hlc":[{p},{lo}],"id":"{eid.hex()}",'
        f'"kind":{_TEXT(kind)},{"" if line is None else f"{_LINE}{_TEXT(line)},"}'
        f'"node":{_TEXT(node)},{"" if payload is None else payload_text(payload) + ","}'
        f'"payload_cid":"{pcid.hex()}",'
        f'"source":{sources[src]},"subject":{_TEXT(subject)},"trust":{trusts[trust]},'
        f'"valid_time_ns":{"null" if vt is None else vt}}}'
        for p, lo, eid, kind, line, node, payload, pcid, src, subject, trust, vt in zip(
            *(col[name] for name in (*_WIRE_COLUMNS, *_WIRE_TAIL)), strict=True
        )
    ]


_ERASED, _LINE = '"erased":true,', '"line":'

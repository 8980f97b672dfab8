"""Whole events arriving as columns (a sync peer's batch): the checks
:func:`nerve.log.wire.event_from_json` makes of one event, made column by column, so a batch
of thousands is checked with a few Arrow kernels and one hashing pass instead of an object
per event.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from nerve.clock import LOGICAL_MAX
from nerve.errors import EventError
from nerve.events import SOURCE_MAX, VENDOR_MIN, SourceClass, check_kind
from nerve.log.codec import SCHEMA, fixed_bytes, hash_each, ids_of
from nerve.log.lazy import pc

__all__ = ["WIRE_COLUMNS", "checked_events"]

# What a batch carries: every stored column but the payload address, which is recomputed.
WIRE_COLUMNS = [name for name in SCHEMA.names if name != "payload_cid"]
_WIRE_SCHEMA = pa.schema([SCHEMA.field(name) for name in WIRE_COLUMNS])


def checked_events(table: pa.Table) -> pa.Table:
    """``table`` (the columns of :data:`WIRE_COLUMNS`) as the log stores it, with payload
    addresses computed; ``EventError`` naming the first row whose field is out of range or
    whose id does not match its fields."""
    table = _typed(table)
    if not table.num_rows:
        return table.add_column(8, SCHEMA.field("payload_cid"), pa.array([], pa.binary(32)))
    _check_ranges(table)
    cids = hash_each(table.column("payload"))
    cid_col = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(32), table.num_rows, [None, pa.py_buffer(cids)]
    )
    table = table.add_column(8, SCHEMA.field("payload_cid"), cid_col)
    computed = ids_of(table)
    if computed != fixed_bytes(table.column("id")):
        row = _first_difference(computed, fixed_bytes(table.column("id")))
        raise EventError(f"event {row + 1}: id does not match the fields (recomputed)")
    return table


def _typed(table: pa.Table) -> pa.Table:
    """The wire columns in the log's types, valid UTF-8, none missing where not allowed."""
    missing = [name for name in WIRE_COLUMNS if name not in table.column_names]
    if missing:
        raise EventError(f"missing column(s): {', '.join(missing)}")
    try:
        table = table.select(WIRE_COLUMNS).cast(_WIRE_SCHEMA)
        table.validate(full=True)  # offsets in range, strings valid UTF-8
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise EventError(f"a batch's columns do not hold events: {exc}") from None
    for name in WIRE_COLUMNS:
        if name != "valid_time_ns" and table.column(name).null_count:
            raise EventError(f"{name} is missing in some event", field=name)
    return table.combine_chunks()


def _check_ranges(table: pa.Table) -> None:
    """Every field in its range, as :func:`nerve.events.validate_fields` checks one event."""
    physical = table.column("physical_ns").to_numpy()
    logical = table.column("logical").to_numpy()
    source = table.column("source").to_numpy()
    trust = table.column("trust").to_numpy()
    standard = (source >= 0) & (source < len(SourceClass))
    vendor = (source >= VENDOR_MIN) & (source <= SOURCE_MAX)
    checks = [
        ("hlc", (physical >= 0) & (logical >= 0) & (logical <= LOGICAL_MAX)),
        ("source", standard | vendor),
        ("trust", (trust >= 0) & (trust <= 3)),
        ("node", pc.binary_length(table.column("node")).to_numpy() > 0),
    ]
    for name, good in checks:
        if not good.all():
            row = int(np.argmin(good))
            raise EventError(f"event {row + 1}: {name} is out of range", field=name)
    for kind in pc.unique(table.column("kind")).to_pylist():
        check_kind(kind)


def _first_difference(a: bytes, b: bytes) -> int:
    """The index of the first 32-byte item where ``a`` and ``b`` differ."""
    return next(i for i in range(0, len(a), 32) if a[i : i + 32] != b[i : i + 32]) // 32

"""A batch travels as columns (box version 2) and is checked column by column on arrival:
the same events as one by one, every field out of range or id that does not match refused,
the order the log keeps enforced; a version 1 batch (JSON events) is still read."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from nerve.errors import EventError, OrderError
from nerve.log.checked import WIRE_COLUMNS, checked_events
from nerve.log.codec import SCHEMA, events_from_table
from nerve.log.drafts import Draft
from nerve.log.reader import snapshot, table_since
from nerve.log.store import EventLog
from nerve.log.wire import event_to_json
from nerve.sync.box import open_box, seal_batch, seal_box
from nerve.sync.engine import _events_of

KEY = bytes(range(32))


def _events(tmp_path: Path, count: int = 50) -> pa.Table:
    with EventLog(tmp_path / "src", node="beta") as log:
        drafts = [
            Draft.of(
                "observation" if i % 3 else "sense.state",
                line=f"line {i} é",
                subject="s" if i % 2 else "",
                payload={"n": i} if i % 4 else None,
                valid_time_ns=i if i % 5 else None,
            )
            for i in range(count)
        ]
        log.append_drafts(drafts)
    return table_since(snapshot(tmp_path / "src"))


def _wire(table: pa.Table) -> pa.Table:
    return table.select(WIRE_COLUMNS)


def test_a_checked_batch_is_the_stored_table(tmp_path: Path) -> None:
    stored = _events(tmp_path)
    assert checked_events(_wire(stored)).equals(stored.select(SCHEMA.names).cast(SCHEMA))


def _with(table: pa.Table, name: str, values: list[object]) -> pa.Table:
    at = table.schema.get_field_index(name)
    return table.set_column(
        at, table.schema.field(at), pa.array(values, table.schema.field(at).type)
    )


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("line", "changed", "id does not match"),
        ("payload", b"{}", "id does not match"),
        ("trust", 7, "trust is out of range"),
        ("source", 900, "source is out of range"),
        ("logical", -1, "hlc is out of range"),
        ("node", "", "node is out of range"),
        ("kind", "Not A Kind", "must be a lower-case dotted name"),
    ],
)
def test_a_field_out_of_range_or_an_id_that_does_not_match_is_refused(
    tmp_path: Path, name: str, value: object, message: str
) -> None:
    wire = _wire(_events(tmp_path, 5))
    values = wire.column(name).to_pylist()
    values[3] = value
    with pytest.raises(EventError, match=message):
        checked_events(_with(wire, name, values))


def test_a_batch_with_text_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    wire = _wire(_events(tmp_path, 3))
    raw = pa.array([b"ok", b"\xff\xfe", b"ok"], pa.binary()).view(pa.string())
    at = wire.schema.get_field_index("line")
    with pytest.raises(EventError, match="do not hold events"):
        checked_events(wire.set_column(at, wire.schema.field(at), raw))


def test_an_import_keeps_the_log_order(tmp_path: Path) -> None:
    wire = _wire(_events(tmp_path, 6))
    with EventLog(tmp_path / "peer", node="alpha") as peer:
        with pytest.raises(OrderError, match="event 4"):
            peer.import_table(pa.concat_tables([wire.slice(0, 3), wire.slice(2, 1)]))
        assert peer.import_table(wire.slice(0, 3)) == 3
        with pytest.raises(OrderError, match="event 1"):
            peer.import_table(wire.slice(2))
        assert peer.import_table(wire.slice(3)) == 3
    assert table_since(snapshot(tmp_path / "peer")).column("id").equals(wire.column("id"))


def test_a_batch_box_carries_its_columns_and_a_version_1_box_is_still_read(
    tmp_path: Path,
) -> None:
    stored = _events(tmp_path, 20)
    head = {"v": 2, "node": "beta", "since": [0, 0]}
    body = open_box(KEY, seal_batch(KEY, head, _wire(stored)))
    assert body["since"] == [0, 0] and _events_of(body).equals(_wire(stored))
    old = {"v": 1, "node": "beta", "since": [0, 0]}
    old["events"] = [event_to_json(e) for e in events_from_table(stored)]
    assert _events_of(open_box(KEY, seal_box(KEY, old))).equals(_wire(stored))

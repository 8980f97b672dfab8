"""`replay --verify` tells an erasure from tampering, at the exact file, row and field.

A tamperer here rewrites a segment *and* re-chains the manifest around it (new content
name, records re-hashed), so only the row-level checks can catch the change.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import blake3
import hypothesis.strategies as st
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings

from nerve.canonical import canonical_json
from nerve.events import SourceClass
from nerve.log import erasure
from nerve.log import segments as seg
from nerve.log.drafts import Draft
from nerve.log.manifest import read_manifest
from nerve.log.reader import replay_digest, snapshot, table_since
from nerve.log.store import EventLog
from nerve.log.verify import verify

SHELL = int(SourceClass.SHELL)


def _log(root: Path) -> EventLog:
    log = EventLog(root, node="n", seal_max_events=10**9)
    for s in range(2):
        log.append_drafts(
            [
                Draft.of(source=SHELL if i % 2 else 1, line=f"line {s}.{i}", payload={"i": i})
                for i in range(8)
            ]
        )
        log.seal()
    return log


def _erase_shell(log: EventLog) -> None:
    log.erase(lambda t: pc.equal(t.column("source"), SHELL), reason="test", selection={})
    log.seal()  # the payload.erased event into a segment too


def _segment_with_erasures(root: Path) -> str:
    for info in read_manifest(root / "manifest.jsonl").segments():
        table = seg.read_segment(root / "segments" / f"{info.name}.parquet", ["line"])
        if table.column("line").null_count:
            return info.name
    raise AssertionError("no segment holds an erased row")


def _tamper(root: Path, name: str, change: Callable[[pa.Table], pa.Table]) -> str:
    """Rewrite segment ``name`` with ``change`` applied, under a new content name, record
    its rows, range and id root, and re-chain the manifest: the chain, the file names and
    the segment's own record all check out."""
    table = change(seg.read_segment(root / "segments" / f"{name}.parquet"))
    new = seg.write_segment(root / "segments", table)
    (root / "segments" / f"{name}.parquet").unlink()
    records = [json.loads(x) for x in (root / "manifest.jsonl").read_text().splitlines()]
    prev = "0" * 64
    lines = []
    for seq, rec in enumerate(records):
        rec["remove"] = [new.name if n == name else n for n in rec.get("remove", [])]
        rec["add"] = [new.to_json() if a["segment"] == name else a for a in rec.get("add", [])]
        rec["seq"], rec["prev"] = seq, prev
        line = canonical_json(rec)
        prev = blake3.blake3(line).hexdigest()
        lines.append(line)
    (root / "manifest.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return new.name


def _set(table: pa.Table, column: str, row: int, value: object) -> pa.Table:
    values = table.column(column).to_pylist()
    values[row] = value
    index = table.schema.get_field_index(column)
    field = table.schema.field(column).with_nullable(True)
    return table.set_column(index, field, pa.array(values, field.type))


def _first(table: pa.Table, erased: bool) -> int:
    lines = table.column("line").to_pylist()
    return next(i for i, line in enumerate(lines) if (line is None) == erased)


def test_an_erasure_verifies_with_notes_naming_the_event_and_count(tmp_path: Path) -> None:
    with _log(tmp_path / "log") as log:
        _erase_shell(log)
    report = verify(tmp_path / "log")
    assert report.ok and not report.warnings
    (note,) = report.notes
    erased = table_since(snapshot(tmp_path / "log"))
    event = erased.filter(pc.equal(erased.column("kind"), erasure.ERASED_KIND))
    assert note.file == f"payload.erased {event.column('id')[0].as_py().hex()[:12]} (test)"
    assert note.message.startswith("8 events' payload and line erased")
    assert "checked against the segments' id roots" in note.message


def test_a_missing_payload_no_erasure_names_is_corruption_at_its_row(tmp_path: Path) -> None:
    root = tmp_path / "log"
    _log(root).close()
    name = read_manifest(root / "manifest.jsonl").segments()[1].name
    new = _tamper(root, name, lambda t: erasure.erase_rows(t, np.array([3])))
    report = verify(root)
    assert not report.ok
    first = report.problems[0]
    assert (first.file, first.row, first.field) == (f"log/segments/{new}.parquet", 3, "payload")
    assert "no payload.erased event names this event" in first.message


def test_a_changed_field_of_an_erased_row_is_caught_at_its_row(tmp_path: Path) -> None:
    root = tmp_path / "log"
    with _log(root) as log:
        _erase_shell(log)
    name = _segment_with_erasures(root)
    row = _first(seg.read_segment(root / "segments" / f"{name}.parquet"), erased=True)
    new = _tamper(root, name, lambda t: _set(t, "subject", row, "forged"))
    first = verify(root).problems[0]
    assert (first.file, first.row, first.field) == (f"log/segments/{new}.parquet", row, "id")
    assert "fields changed since payload.erased" in first.message


def test_a_line_put_back_on_an_erased_row_is_caught(tmp_path: Path) -> None:
    root = tmp_path / "log"
    with _log(root) as log:
        _erase_shell(log)
    name = _segment_with_erasures(root)
    row = _first(seg.read_segment(root / "segments" / f"{name}.parquet"), erased=True)
    new = _tamper(root, name, lambda t: _set(t, "line", row, "made up"))
    first = verify(root).problems[0]
    assert (first.file, first.row, first.field) == (f"log/segments/{new}.parquet", row, "line")


def test_a_changed_line_beside_erasures_is_still_caught_at_its_row(tmp_path: Path) -> None:
    root = tmp_path / "log"
    with _log(root) as log:
        _erase_shell(log)
    name = _segment_with_erasures(root)
    row = _first(seg.read_segment(root / "segments" / f"{name}.parquet"), erased=False)
    new = _tamper(root, name, lambda t: _set(t, "line", row, "edited"))
    first = verify(root).problems[0]
    assert (first.file, first.row, first.field) == (f"log/segments/{new}.parquet", row, "id")


def test_an_erased_row_s_id_is_checked_against_the_id_root(tmp_path: Path) -> None:
    """Its id cannot be recomputed, but the rewrite that erased it had to keep the id root
    the segment was sealed with: a changed id shows there, and no erasure names it."""
    root = tmp_path / "log"
    with _log(root) as log:
        _erase_shell(log)
    name = _segment_with_erasures(root)
    row = _first(seg.read_segment(root / "segments" / f"{name}.parquet"), erased=True)
    new = _tamper(root, name, lambda t: _set(t, "id", row, b"\x07" * 32))
    report = verify(root)
    messages = [p.message for p in report.problems]
    assert any("rewrite of segment" in m and "changes its ids" in m for m in messages)
    unnamed = [p for p in report.problems if p.file == f"log/segments/{new}.parquet"]
    assert (unnamed[0].row, unnamed[0].field) == (row, "payload")


def test_a_rewrite_that_drops_a_row_is_not_an_erasure(tmp_path: Path) -> None:
    root = tmp_path / "log"
    with _log(root) as log:
        _erase_shell(log)
    name = _segment_with_erasures(root)
    _tamper(root, name, lambda t: t.slice(0, t.num_rows - 1))
    report = verify(root)
    assert not report.ok
    assert "changes its ids (an erasure keeps every id): not an erasure" in str(report.problems)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sources=st.sets(st.sampled_from([0, 1, 5]), min_size=1),
    every=st.integers(min_value=1, max_value=5),
)
def test_any_selection_keeps_the_digest_and_erases_exactly_it(
    tmp_path_factory: object, sources: set[int], every: int
) -> None:
    root = Path(tmp_path_factory.mktemp("log")) / "log"  # type: ignore[attr-defined]
    with EventLog(root, node="n", seal_max_events=10**9) as log:
        for s in range(3):
            log.append_drafts(
                [
                    Draft.of(source=(s + i) % 3 * 2 + (i % 2), line=f"{s}/{i}", payload=[s, i])
                    for i in range(10)
                ]
            )
            log.seal()
        before = table_since(snapshot(root))
        digest = replay_digest(root).digest

        def picked(t: pa.Table) -> pa.Array:
            wanted = pc.is_in(t.column("source"), pa.array(sorted(sources), pa.int64()))
            nth = pc.equal(pc.bit_wise_and(t.column("logical"), every), 0)
            return pc.and_(wanted, nth)

        expected = set(before.filter(picked(before)).column("id").to_pylist())
        plan = log.erase(picked, reason="prop", selection={})
    after = table_since(snapshot(root))
    erased = set(after.filter(pc.is_null(after.column("line"))).column("id").to_pylist())
    assert erased == expected and plan.count == len(expected)
    report = verify(root)
    assert report.ok
    if expected:
        assert report.checkpoints[0].digest == digest
    else:
        assert replay_digest(root).digest == digest


def test_the_kept_preimage_is_the_id_preimage_without_the_line() -> None:
    """As conformance/README.md documents it: fields 0-8 of the id preimage."""
    from nerve.clock import Hlc
    from nerve.events import Event, id_preimage
    from nerve.log.codec import kept_hashes, table_from_events

    event = Event(
        Hlc(1_700_000_000_000_000_000, 3),
        "n",
        "observation",
        "s",
        5,
        1,
        None,
        b'{"a":1}',
        "the line",
    )
    full = id_preimage(
        event.hlc,
        event.node,
        event.kind,
        event.subject,
        event.source,
        event.trust,
        event.valid_time_ns,
        event.payload_cid,
        event.line,
    )
    without = full[: -(4 + len(event.line.encode()))]
    assert kept_hashes(table_from_events([event])) == blake3.blake3(without).digest()

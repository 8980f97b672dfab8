"""Checks a mutation of nerve's code once left alive: each test fails when its check goes.

- the writer refusing an older WAL generation that ends torn (only the newest may);
- ``replay --verify``'s HLC-order check, overlapping-segment check and id-root check;
- the kinds a forget may never erase, each named here (not read from the set under test).
"""

from __future__ import annotations

import os
from pathlib import Path

import blake3
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from nerve import fsio
from nerve.clock import Hlc
from nerve.errors import LogCorrupt, NerveError
from nerve.log import segments as seg
from nerve.log.codec import fixed_bytes
from nerve.log.drafts import Draft
from nerve.log.manifest import SegmentInfo, append_record, read_manifest
from nerve.log.reader import events_since
from nerve.log.store import EventLog
from nerve.log.verify import verify
from nerve.log.wal import wal_name


def _events(root: Path, count: int = 6) -> pa.Table:
    """A log of ``count`` events in one sealed segment; that segment's rows."""
    with EventLog(root, node="m") as log:
        log.append_drafts([Draft.of(source=1, line=f"e{i}") for i in range(count)])
        info = log.seal()
    assert info is not None
    return seg.read_segment(root / "segments" / f"{info.name}.parquet")


# -- 21: an older generation that ends torn ----------------------------------------------


def test_an_older_wal_generation_that_ends_torn_is_refused_and_reported(tmp_path: Path) -> None:
    root = tmp_path / "log"
    with EventLog(root, node="m", seal_max_events=10**9) as log:
        log.append_drafts([Draft.of(source=1, line=f"e{i}") for i in range(3)])
        older = log._wal.gen
        with fsio.inject("segment.write"), pytest.raises((NerveError, OSError)):
            log.seal()  # rotated, but not sealed: two live generations
        log.append(source=1, line="newer")
    path = root / "wal" / wal_name(older)
    os.truncate(path, path.stat().st_size - 5)  # its last frame cut mid-way
    with pytest.raises(LogCorrupt, match="only the newest generation may end mid-frame"):
        EventLog(root, node="m")
    report = verify(root)
    assert any("yet it is not the newest generation" in str(p) for p in report.problems)


# -- 22: verify's order, overlap and id-root checks ---------------------------------------


def _record(root: Path, table: pa.Table, *, root_of: pa.Table | None = None) -> SegmentInfo:
    """Store ``table`` as it is (unsorted if so) under its blake3 name, and record it with
    the true rows and stamps (and the id root of ``root_of``, else its own)."""
    data = seg.encode_table(table)
    name = blake3.blake3(data).hexdigest()
    (root / "segments" / f"{name}.parquet").write_bytes(data)
    first, last = table.slice(0, 1), table.slice(table.num_rows - 1, 1)
    info = SegmentInfo(
        name,
        table.num_rows,
        _stamp(first),
        _stamp(last),
        seg.ids_root(fixed_bytes((root_of or table).column("id"))),
    )
    path = root / "manifest.jsonl"
    append_record(path, read_manifest(path), {"op": "adopt", "add": [info.to_json()], "remove": []})
    return info


def _stamp(row: pa.Table) -> Hlc:

    return Hlc(row.column("physical_ns")[0].as_py(), row.column("logical")[0].as_py())


def _fresh(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    EventLog(root, node="m").close()
    return root


def test_verify_catches_a_segment_out_of_hlc_order(tmp_path: Path) -> None:
    rows = _events(tmp_path / "source")
    root = _fresh(tmp_path, "log")
    swapped = pa.concat_tables([rows.slice(3), rows.slice(0, 3)])  # ids intact, order not
    _record(root, swapped)
    problems = [str(p) for p in verify(root).problems]
    assert any("events are out of HLC order" in p for p in problems), problems


def test_verify_catches_overlapping_segments(tmp_path: Path) -> None:
    rows = _events(tmp_path / "source")
    root = _fresh(tmp_path, "log")
    evens = rows.take(pa.array([0, 2, 4]))
    odds = rows.take(pa.array([1, 3, 5]))  # each sorted, their ranges interleave
    _record(root, evens)
    _record(root, odds)
    problems = [str(p) for p in verify(root).problems]
    assert any("overlaps the one before it" in p for p in problems), problems


def test_verify_catches_ids_that_do_not_give_the_recorded_root(tmp_path: Path) -> None:
    rows = _events(tmp_path / "source")
    root = _fresh(tmp_path, "log")
    other = _events(tmp_path / "other")  # same count of rows, other ids
    info = _record(root, rows, root_of=other)
    problems = [str(p) for p in verify(root).problems]
    assert any("ids do not match the manifest's root" in p for p in problems), problems
    assert info.rows == other.num_rows


# -- 24: what a forget may never erase ---------------------------------------------------

NEVER_ERASED = ("payload.erased", "batch.key", "chain.link", "attention.snapshot")


@pytest.mark.parametrize("kind", NEVER_ERASED)
def test_a_forget_never_erases_the_records_nerve_verifies_itself_by(
    tmp_path: Path, kind: str
) -> None:
    root = tmp_path / "log"
    with EventLog(root, node="m") as log:
        log.append_drafts(
            [
                Draft.control(kind, "s", "keep me", {"k": 1}),
                Draft.of(source=1, line="forget me"),
            ]
        )
        plan = log.erase(
            lambda t: pc.is_valid(t.column("line")), reason="all", selection={"all": True}
        )
    assert plan.count == 1 and plan.protected == 1
    kept = [e for e in events_since(root) if e.kind == kind and e.subject == "s"]
    assert len(kept) == 1 and not kept[0].erased and kept[0].line == "keep me"

"""A segment stores payload_cid only for erased rows; every reader recomputes the rest."""

from __future__ import annotations

from pathlib import Path

import blake3
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nerve.log.codec import fixed_bytes
from nerve.log.drafts import Draft
from nerve.log.reader import snapshot, table_since
from nerve.log.store import EventLog
from nerve.log.verify import verify
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli


def _segment(root: Path) -> Path:
    return next((root / "segments").glob("*.parquet"))


def _sealed(root: Path) -> tuple[Path, pa.Table]:
    """A log of one sealed segment (``_fill``'s events): its path and its stored rows."""
    with EventLog(root, node="n") as log:
        _fill(log)
        log.seal()
    path = _segment(root)
    return path, pq.read_table(path)


def _fill(log: EventLog, count: int = 6) -> None:
    payloads = [{"i": i} for i in range(count - 1)] + [None]  # one empty payload
    log.append_drafts([Draft.of(source=1, line=f"e{i}", payload=p) for i, p in enumerate(payloads)])


def test_a_segment_stores_no_address_a_reader_can_recompute(tmp_path: Path) -> None:
    with EventLog(tmp_path, node="n") as log:
        _fill(log)
        log.seal()
    stored = pq.read_table(_segment(tmp_path))
    assert stored.column("payload_cid").null_count == stored.num_rows
    assert pq.read_schema(_segment(tmp_path)).field("payload_cid").nullable
    table = table_since(snapshot(tmp_path))
    assert table.schema.field("payload_cid").nullable is False
    cids = fixed_bytes(table.column("payload_cid"))
    payloads = table.column("payload").to_pylist()
    assert cids == b"".join(blake3.blake3(p).digest() for p in payloads)
    assert verify(tmp_path).ok


def test_a_changed_payload_is_still_caught_by_its_id(tmp_path: Path) -> None:
    path, table = _sealed(tmp_path)
    payload = table.column("payload").to_pylist()
    payload[2] = b'{"i":99}'
    altered = table.set_column(
        table.schema.get_field_index("payload"), "payload", pa.array(payload, pa.binary())
    )
    pq.write_table(altered, path)
    report = verify(tmp_path)
    assert not report.ok
    assert any(p.field == "id" and p.row == 2 for p in report.problems)


def test_an_address_stored_beside_its_payload_is_checked_against_it(tmp_path: Path) -> None:
    """A segment may keep a row's address (an erasure keeps it); kept beside a payload, it
    must be that payload's blake3. A wrong one is reported at its row, a right one is not
    (the rewritten file no longer matches its name either, which is reported apart)."""

    def row_problems() -> list[tuple[str | None, int | None, bool]]:
        found = [p for p in verify(tmp_path).problems if p.row is not None]
        return [(p.field, p.row, "do not match payload_cid" in p.message) for p in found]

    path, table = _sealed(tmp_path)
    payloads = table.column("payload").to_pylist()
    cids: list[bytes | None] = [None] * table.num_rows
    cids[1] = blake3.blake3(payloads[1]).digest()  # right: verify stays clean
    at = table.schema.get_field_index("payload_cid")
    kept = pa.array(cids, pa.binary(32))
    pq.write_table(table.set_column(at, table.schema.field(at), kept), path)
    assert row_problems() == []
    cids[3] = blake3.blake3(b"something else").digest()
    pq.write_table(
        table.set_column(at, table.schema.field(at), pa.array(cids, pa.binary(32))), path
    )
    assert row_problems() == [("payload", 3, True)]


@pytest.fixture
def workspace(tmp_path: Path) -> WorkspaceDir:
    ws = init_workspace(tmp_path / "ws")
    with ws.open_log() as log:
        _fill(log)
        log.seal()
    return ws


def test_queries_see_every_address_and_an_erased_row_keeps_its_own(workspace: WorkspaceDir) -> None:
    root = str(workspace.root)
    sql = "SELECT line, payload, payload_cid FROM events WHERE kind = 'observation'"
    rows = workspace.connect().execute(sql).fetchall()
    assert rows and all(cid == blake3.blake3(p).digest() for _, p, cid in rows)
    secret = next(cid for line, _, cid in rows if line == "e3")
    run_cli("-w", root, "forget", "--cid", secret.hex())
    (live,) = snapshot(workspace.log_root).files
    stored = pq.read_table(live)
    kept = [
        (line, cid)
        for line, cid in zip(
            stored.column("line").to_pylist(), stored.column("payload_cid").to_pylist(), strict=True
        )
        if cid is not None
    ]
    assert kept == [(None, secret)]  # the erased row: the proof of what was there
    erased = (
        workspace.connect()
        .execute("SELECT payload, payload_cid FROM events WHERE erased")
        .fetchall()
    )
    assert erased == [(None, secret)]
    shown = run_cli("-w", root, "payload", rows[0][2].hex()).stdout
    assert shown.strip() == rows[0][1].decode()


def test_a_view_export_leaves_the_address_to_nerve_and_a_copy_holds_it(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    root = str(workspace.root)
    views, copy = tmp_path / "views.duckdb", tmp_path / "copy.duckdb"
    run_cli("-w", root, "export", "--duckdb", str(views))
    run_cli("-w", root, "export", "--duckdb", str(copy), "--copy")
    sql = "SELECT payload, payload_cid FROM events WHERE kind = 'observation' ORDER BY line"
    with duckdb.connect(str(views), read_only=True) as conn:
        assert {cid for _, cid in conn.execute(sql).fetchall()} == {None}
    with duckdb.connect(str(copy), read_only=True) as conn:
        rows = conn.execute(sql).fetchall()
    assert rows and all(cid == blake3.blake3(p).digest() for p, cid in rows)

"""Each kind of tampering is caught by `nerve replay --verify`, which names the place."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from nerve.log.drafts import Draft
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli


def _build(ws: WorkspaceDir) -> None:
    with ws.open_log() as log:
        for batch in range(3):
            log.append_drafts(
                [Draft.of(source=i % 4, line=f"b{batch}-{i}", payload={"i": i}) for i in range(10)]
            )
            log.seal()
        for i in range(3):  # three separate WAL frames
            log.append(source=5, line=f"tail{i}")


def _segments(ws: WorkspaceDir) -> list[Path]:
    records = [json.loads(x) for x in (ws.log_root / "manifest.jsonl").read_text().splitlines()]
    return [ws.log_root / "segments" / f"{r['add'][0]['segment']}.parquet" for r in records]


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def flip_segment_byte(ws: WorkspaceDir) -> str:
    seg = _segments(ws)[1]
    _flip(seg, seg.stat().st_size // 2)
    return seg.name


def edit_a_row(ws: WorkspaceDir) -> str:
    seg = _segments(ws)[0]
    table = pq.read_table(seg)
    lines = table.column("line").to_pylist()
    lines[3] = "forged"
    table = table.set_column(table.schema.get_field_index("line"), "line", pa.array(lines))
    pq.write_table(table, seg)
    return f"{seg.name} row 3 field id"


def reorder_rows(ws: WorkspaceDir) -> str:
    seg = _segments(ws)[2]
    table = pq.read_table(seg)
    order = pa.array([1, 0, *range(2, table.num_rows)])
    pq.write_table(pc.take(table, order), seg)
    return seg.name


def delete_segment(ws: WorkspaceDir) -> str:
    seg = _segments(ws)[1]
    seg.unlink()
    return f"{seg.name}: live segment is missing"


def flip_wal_frame(ws: WorkspaceDir) -> str:
    wal = next((ws.log_root / "wal").iterdir())
    _flip(wal, 40)  # inside the first frame; two good frames follow
    return wal.name


def flip_manifest_byte(ws: WorkspaceDir) -> str:
    path = ws.log_root / "manifest.jsonl"
    text = path.read_text().replace('"rows":10', '"rows":11', 1)
    path.write_text(text)
    return "manifest.jsonl: line 2: prev does not match the hash of line 1"


def swap_manifest_records(ws: WorkspaceDir) -> str:
    path = ws.log_root / "manifest.jsonl"
    lines = path.read_text().splitlines()
    lines[0], lines[1] = lines[1], lines[0]
    path.write_text("\n".join(lines) + "\n")
    return "manifest.jsonl: line 1"


@pytest.mark.parametrize(
    "tamper",
    [
        flip_segment_byte,
        edit_a_row,
        reorder_rows,
        delete_segment,
        flip_wal_frame,
        flip_manifest_byte,
        swap_manifest_records,
    ],
)
def test_verify_names_the_first_corrupt_thing(
    workspace: WorkspaceDir, tamper: Callable[[WorkspaceDir], str]
) -> None:
    _build(workspace)
    clean = run_cli("--workspace", str(workspace.root), "replay", "--verify", "--json")
    assert json.loads(clean.stdout)["ok"] is True
    where = tamper(workspace)
    proc = run_cli("--workspace", str(workspace.root), "replay", "--verify", "--json", check=False)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["ok"] is False
    first = report["problems"][0]
    described = (
        f"{first['file']}"
        + (f" row {first['row']}" if first["row"] is not None else "")
        + (f" field {first['field']}" if first["field"] else "")
        + f": {first['message']}"
    )
    assert where in described, described


def test_verify_text_output_names_the_file(workspace: WorkspaceDir) -> None:
    _build(workspace)
    name = flip_segment_byte(workspace)
    proc = run_cli("--workspace", str(workspace.root), "replay", "--verify", check=False)
    assert proc.returncode == 1
    assert name in proc.stderr and "verify   FAILED" in proc.stdout


def test_a_column_of_another_type_is_named_by_verify_and_by_readers(
    workspace: WorkspaceDir,
) -> None:
    """A segment rewritten with a column of another type (here the payload as integers) is
    reported with the column's name, by verify and by a reader such as `nerve tail`; neither
    shows a traceback."""
    _build(workspace)
    seg = _segments(workspace)[0]
    table = pq.read_table(seg)
    at = table.schema.get_field_index("payload")
    pq.write_table(table.set_column(at, "payload", pa.array(range(table.num_rows))), seg)
    root = str(workspace.root)
    proc = run_cli("--workspace", root, "replay", "--verify", "--json", check=False)
    assert proc.returncode == 1
    messages = [p["message"] for p in json.loads(proc.stdout)["problems"]]
    assert "cannot be read as an event segment: column 'payload' holds int64" in " ".join(messages)
    tail = run_cli("--workspace", root, "tail", "-n", "100", check=False)
    assert tail.returncode != 0
    assert seg.name in tail.stderr and "column 'payload' holds int64" in tail.stderr
    assert "Traceback" not in tail.stderr + proc.stderr

"""`nerve sense schema` / `nerve sense query`: a sense's observations as columns (seed 001's
per-sense database, event-sourced), its state history, and the views it ships."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from nerve.workspace import init_workspace
from tests.conftest import run_cli
from tests.daemon_util import COUNTER, write_sense

EVENTS = [
    {"subject": "disk", "payload": {"path": "/", "used": 0.95, "n": 3, "tags": ["a"], "ts": "x"}},
    {"subject": "disk", "payload": {"path": "/home", "used": 0.5, "n": 4, "ok": True}},
    {"subject": "other", "payload": {"path": "/elsewhere", "used": 1.0}},
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = init_workspace(tmp_path / "ws")
    write_sense(ws.root, "disk", COUNTER)
    (ws.root / "senses" / "disk" / "full.sql").write_text(
        "SELECT path, used FROM observations WHERE used > 0.9;\n"
    )
    lines = [json.dumps({"source": "endpoint", "line": "disk use", **e}) for e in EVENTS]
    (ws.root / "batch.jsonl").write_text("\n".join(lines) + "\n")
    run_cli("--workspace", str(ws.root), "emit", "--jsonl", str(ws.root / "batch.jsonl"))
    return ws.root


def _nerve(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("--workspace", str(root), "sense", *args, check=False)


def test_schema_shows_the_payload_columns_typed_from_the_log(root: Path) -> None:
    shown = _nerve(root, "schema", "disk", "--json")
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    columns = {(r["view"], r["column"]): r["type"] for r in rows}
    assert columns[("observations", "path")] == "VARCHAR"
    assert columns[("observations", "used")] == "DOUBLE"
    assert columns[("observations", "n")] == "BIGINT"
    assert columns[("observations", "ok")] == "BOOLEAN"
    assert columns[("observations", "tags")] == "JSON"
    assert columns[("observations", "data_ts")] == "VARCHAR"  # `ts` is a fixed column
    assert columns[("observations", "ts")].startswith("TIMESTAMP")
    assert {c for v, c in columns if v == "states"} >= {"ts", "reason", "state"}
    assert columns[("disk__full", "used")] == "DOUBLE"


def test_query_reads_the_flattened_observations_and_the_senses_views(root: Path) -> None:
    paths = _nerve(
        root, "query", "disk", "SELECT path, n, ok FROM observations ORDER BY n", "--csv"
    )
    assert paths.stdout.splitlines() == ["path,n,ok", "/,3,", "/home,4,True"]
    full = _nerve(root, "query", "disk", "SELECT path FROM disk__full", "--json")
    assert [json.loads(line) for line in full.stdout.splitlines()] == [{"path": "/"}]
    every = _nerve(root, "query", "disk", "--json")  # no SQL: every observation
    assert [json.loads(line)["path"] for line in every.stdout.splitlines()] == ["/", "/home"]
    states = _nerve(root, "query", "disk", "SELECT count(*) AS n FROM states", "--json")
    assert json.loads(states.stdout) == {"n": 0}


def test_unknown_senses_and_bad_views_are_named(root: Path) -> None:
    ghost = _nerve(root, "schema", "ghost")
    assert ghost.returncode == 2 and "no sense 'ghost'" in ghost.stderr
    bad = root / "senses" / "disk" / "broken.sql"
    bad.write_text("SELECT nope FROM observations")
    failed = _nerve(root, "schema", "disk")
    assert failed.returncode == 1 and f"{bad}: sense view does not load" in failed.stderr
    bad.unlink()
    wrong = _nerve(root, "query", "disk", "SELECT * FROM nowhere")
    assert wrong.returncode == 2 and "nowhere" in wrong.stderr

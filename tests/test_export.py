"""`nerve export --duckdb`: a file plain DuckDB opens, checked in a process without nerve."""

from __future__ import annotations

import json
import os
import stat
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from nerve.events import SourceClass, Trust
from nerve.log.drafts import Draft
from nerve.log.reader import snapshot
from nerve.log.store import EventLog
from nerve.resources import bundled
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli
from tests.daemon_util import started

# Salience per observation next to its event's text columns: needs `nerve_settings` too.
JOINED = (
    "SELECT e.source_name, e.trust_name, e.line, e.data->>'i' AS i, s.salience_milli, "
    "s.novelty_milli, s.uncertainty_milli FROM events e JOIN salience s USING (id) "
    "ORDER BY e.physical_ns, e.logical"
)

# Runs in a fresh interpreter that must never import nerve: argv is FILE and SQL.
PLAIN = """
import json, sys
import duckdb
conn = duckdb.connect(sys.argv[1], read_only=True)
def rows(sql):
    rel = conn.execute(sql)
    names = [d[0] for d in rel.description]
    return [dict(zip(names, r)) for r in rel.fetchall()]
views = [r["view_name"] for r in rows("SELECT view_name FROM duckdb_views() WHERE NOT internal")]
print(json.dumps({
    "count": rows("SELECT count(*) AS n FROM events")[0]["n"],
    "columns": rows("SELECT column_name, column_type FROM (DESCRIBE events)"),
    "views": {v: rows(f'SELECT count(*) AS n FROM "{v}"')[0]["n"] for v in views},
    "window": rows("SELECT attention_window FROM nerve_settings")[0]["attention_window"],
    "result": rows(sys.argv[2]),
    "nerve_imported": any(m == "nerve" or m.startswith("nerve.") for m in sys.modules),
}, default=str))
"""


def plain(path: Path, sql: str = JOINED, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Open ``path`` with duckdb alone (-I: no cwd or PYTHONPATH on the import path)."""
    proc = subprocess.run(
        [sys.executable, "-I", "-c", PLAIN, str(path), sql],
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if check and proc.returncode != 0:
        raise AssertionError(proc.stderr)
    return proc


def cli(ws: WorkspaceDir, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run_cli("--workspace", str(ws.root), *args, check=check)


def query(ws: WorkspaceDir, sql: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in cli(ws, "query", "--json", sql).stdout.splitlines()]


def drafts(start: int, count: int) -> list[Draft]:
    sources = [SourceClass.SHELL, SourceClass.FILE_CHANGE, SourceClass.SHELL, 2000]
    return [
        Draft(
            source=int(sources[i % len(sources)]),
            trust=int(Trust.INFERRED if i % 3 else Trust.FIRST_PARTY),
            line=f"event {i}",
            payload=json.dumps({"i": i}).encode(),
        )
        for i in range(start, start + count)
    ]


@pytest.fixture
def ws(tmp_path: Path) -> WorkspaceDir:
    """Events in a sealed segment and in the WAL; window 3; one projection of its own."""
    ws = init_workspace(tmp_path / "ws")
    ws.config_path.write_text("senses: {}\nattention:\n  window: 3\n")
    (ws.root / "projections" / "lines.sql").write_text("SELECT line FROM events ORDER BY line")
    with WorkspaceDir(ws.root).open_log() as log:
        log.append_drafts(drafts(0, 12))
        log.seal()
        log.append_drafts(drafts(12, 7))
    snap = snapshot(ws.log_root)
    assert len(snap.segments) == 1 and snap.tail.num_rows == 7
    return WorkspaceDir(ws.root)


def test_plain_duckdb_reads_everything_nerve_does(ws: WorkspaceDir, tmp_path: Path) -> None:
    out = tmp_path / "out" / "nerve.duckdb"
    out.parent.mkdir()
    result = json.loads(cli(ws, "export", "--duckdb", str(out), "--json").stdout)
    assert (result["events"], result["sealed"], result["unsealed"]) == (19, 7, 0)
    assert result["segments"] == 2 and result["copied"] is False
    bundled_views = sorted(p.stem for p in bundled("projections").glob("*.sql"))
    assert sorted(result["views"]) == sorted(["events", "focus_spells", "lines", *bundled_views])
    assert sorted(os.listdir(out.parent)) == ["nerve.duckdb"]  # no temp file left
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    with out.open("rb") as f:  # DuckDB 1.3, nerve's floor, reads storage versions up to 66
        head = f.read(20)
    assert head[8:12] == b"DUCK" and struct.unpack_from("<Q", head, 12)[0] <= 66

    seen = json.loads(plain(out).stdout)
    assert seen["nerve_imported"] is False
    assert seen["count"] == query(ws, "SELECT count(*) AS n FROM events")[0]["n"] == 19
    assert seen["columns"] == query(ws, "SELECT column_name, column_type FROM (DESCRIBE events)")
    assert {"source_name", "trust_name"} <= {c["column_name"] for c in seen["columns"]}
    assert set(seen["views"]) == set(result["views"]) and seen["views"]["lines"] == 19
    assert seen["window"] == 3
    assert seen["result"] == query(ws, JOINED)
    assert {r["source_name"] for r in seen["result"]} == {"shell", "file_change", "vendor:2000"}
    assert seen["result"][3]["salience_milli"] == 333  # 1 of the last 3, not of 64


def test_projections_are_plain_sql_reading_nerve_settings(ws: WorkspaceDir) -> None:
    for path in bundled("projections").glob("*.sql"):
        assert "{{" not in path.read_text(), path
    conn = ws.connect()
    assert conn.execute("SELECT attention_window FROM nerve_settings").fetchall() == [(3,)]


@pytest.mark.parametrize("where", ["missing/x.duckdb", "taken.duckdb", "folder", "file/x.duckdb"])
def test_a_bad_path_is_refused_and_nothing_changes(
    ws: WorkspaceDir, tmp_path: Path, where: str
) -> None:
    place = tmp_path / "place"
    (place / "folder").mkdir(parents=True)
    (place / "taken.duckdb").write_text("mine")
    (place / "file").write_text("a file")
    before = sorted(str(p.relative_to(place)) for p in place.rglob("*"))
    proc = cli(ws, "export", "--duckdb", str(place / where), check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    message, *rest = proc.stderr.splitlines()
    assert message.startswith("UsageError: ") and str(place / where) in message
    assert all(line.startswith("hint: ") for line in rest)
    assert sorted(str(p.relative_to(place)) for p in place.rglob("*")) == before
    assert (place / "taken.duckdb").read_text() == "mine"
    assert snapshot(ws.log_root).tail.num_rows == 7  # refused before sealing anything


def test_a_failed_export_leaves_nothing(ws: WorkspaceDir, tmp_path: Path) -> None:
    (ws.root / "projections" / "broken.sql").write_text("SELECT nope FROM events")
    out = tmp_path / "out" / "nerve.duckdb"
    out.parent.mkdir()
    proc = cli(ws, "export", "--duckdb", str(out), check=False)
    assert proc.returncode == 1 and "broken.sql: projection does not load" in proc.stderr
    assert os.listdir(out.parent) == []


def test_an_empty_log_exports_typed_empty_views(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    out = tmp_path / "empty.duckdb"
    assert "exported 0 events in 0 segments" in cli(ws, "export", "--duckdb", str(out)).stdout
    seen = json.loads(plain(out, "SELECT * FROM events").stdout)
    assert seen["count"] == 0 and seen["result"] == [] and set(seen["views"].values()) == {0}
    assert [c["column_name"] for c in seen["columns"]][:4] == [
        "physical_ns",
        "logical",
        "node",
        "kind",
    ]


def test_compaction_stales_views_but_not_a_copy(ws: WorkspaceDir, tmp_path: Path) -> None:
    views, copied = tmp_path / "views.duckdb", tmp_path / "copied.duckdb"
    cli(ws, "export", "--duckdb", str(views))
    assert "copied into the file" in cli(ws, "export", "--duckdb", str(copied), "--copy").stdout
    gone = [str(f) for f in snapshot(ws.log_root).files]
    with EventLog(ws.log_root, node="test", retire_grace_ns=0) as log:
        assert log.compact().merged == 2  # and deletes what it merged at once
    assert not any(Path(f).exists() for f in gone)

    proc = plain(views, check=False)
    assert proc.returncode != 0 and "No files found that match the pattern" in proc.stderr
    assert any(f in proc.stderr for f in gone)  # the message README quotes, naming the file
    with duckdb.connect(str(views), read_only=True) as conn:
        assert [r[0] for r in conn.execute("SELECT path FROM nerve_segments").fetchall()] == gone
    assert json.loads(plain(copied).stdout)["result"] == query(ws, JOINED)

    cli(ws, "export", "--duckdb", str(views), "--force")
    assert json.loads(plain(views).stdout)["result"] == query(ws, JOINED)


def test_export_seals_through_a_running_daemon(ws: WorkspaceDir, tmp_path: Path) -> None:
    out = tmp_path / "live.duckdb"
    with started(ws.root):
        cli(ws, "emit", "--source", "shell", "--line", "while running")
        result = json.loads(cli(ws, "export", "--duckdb", str(out), "--json").stdout)
        assert result["sealed"] >= 1 + 7  # the daemon's own events, the WAL's and this one
    seen = json.loads(plain(out, "SELECT line FROM events WHERE line = 'while running'").stdout)
    assert seen["count"] == result["events"] and seen["result"] == [{"line": "while running"}]

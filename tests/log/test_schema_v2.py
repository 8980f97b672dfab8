"""Segments moved from unsigned to signed column types (Iceberg has no unsigned integers).

``data/v1-log.tar.gz`` is a log written by nerve before the change: three sealed segments
(two rewritten by a forget) and an unsealed WAL tail of 50 events. Its replay digest and a
query over it were recorded by that version; this one must read, verify and compact it with
the same answers.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from nerve.log import segments as seg
from nerve.log.codec import SCHEMA_V1
from nerve.log.manifest import read_manifest
from nerve.log.paths import LogPaths
from tests.conftest import run_cli

DATA = Path(__file__).parent.parent / "data" / "v1-log.tar.gz"
DIGEST = "61e9766242963314bf09905c431f17ed1b4ebb20cb62d61c3522ea7ed0049f37"
BEFORE_FORGET = "cc327b83db2dd469e93f29f7a32457f6a80dae8a196e8370a9e56ce119e26876"


@pytest.fixture
def old_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    run_cli("init", str(ws))
    with tarfile.open(DATA) as tar:
        tar.extractall(ws / "data", filter="data")
    return ws


def _replay(ws: Path, *extra: str) -> dict[str, object]:
    out = run_cli("-w", str(ws), "replay", "--json", *extra).stdout
    result: dict[str, object] = json.loads(out)
    return result


def _live_schemas(ws: Path) -> list[object]:
    paths = LogPaths(ws / "data" / "log")
    state = read_manifest(paths.manifest)
    return [pq.read_schema(paths.segment(s.name)).remove_metadata() for s in state.segments()]


def test_the_fixture_is_a_v1_log(old_ws: Path) -> None:
    schemas = _live_schemas(old_ws)
    assert len(schemas) == 3
    assert all(s.field("logical").type == SCHEMA_V1.field("logical").type for s in schemas)


def test_an_old_log_replays_and_verifies_unchanged(old_ws: Path) -> None:
    report = _replay(old_ws, "--verify")
    assert report["ok"] is True, report["problems"]
    assert (report["digest"], report["events"]) == (DIGEST, 951)
    assert report["checkpoints"][0]["digest"] == BEFORE_FORGET  # type: ignore[index]


def test_queries_see_signed_types_whatever_the_file(old_ws: Path) -> None:
    sql = "SELECT count(*), sum(source), max(logical), typeof(any_value(source)) FROM events"
    out = run_cli("-w", str(old_ws), "query", sql, "--json").stdout
    row = json.loads(out.splitlines()[0])
    assert list(row.values()) == [951, 760000004824, 299, "BIGINT"]


def test_compact_rewrites_old_segments_and_keeps_the_digest(old_ws: Path) -> None:
    run_cli("-w", str(old_ws), "seal")  # the v1 WAL frames become a v2 segment
    run_cli("-w", str(old_ws), "compact", "--target-rows", "10")  # nothing is small: rewrite
    schemas = _live_schemas(old_ws)
    assert len(schemas) == 4
    assert not any(seg.is_v1(s) for s in schemas)  # type: ignore[arg-type]
    report = _replay(old_ws, "--verify")
    assert report["ok"] is True, report["problems"]
    assert (report["digest"], report["events"]) == (DIGEST, 951)
    assert report["checkpoints"][0]["digest"] == BEFORE_FORGET  # type: ignore[index]
    run_cli("-w", str(old_ws), "emit", "-s", "shell", "--line", "after the change")
    assert _replay(old_ws, "--verify")["events"] == 952


def test_ship_refuses_v1_segments_until_compacted(
    old_ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    warehouse = (tmp_path / "warehouse").as_uri()
    run_cli("-w", str(old_ws), "fleet", "init", "--warehouse", warehouse, "--host", "old")
    proc = run_cli("-w", str(old_ws), "fleet", "ship", check=False)
    assert proc.returncode == 2 and "v1 column types" in proc.stderr
    assert "nerve compact" in proc.stderr
    run_cli("-w", str(old_ws), "seal")
    run_cli("-w", str(old_ws), "compact", "--target-rows", "10")
    run_cli("-w", str(old_ws), "fleet", "ship")
    assert run_cli("-w", str(old_ws), "fleet", "verify").returncode == 0

"""nerve fleet with a real Iceberg REST catalog: SeaweedFS's (``weed server`` with its
Iceberg port, SigV4-signed with the S3 keys) over an S3 Tables bucket on loopback. The same
ship, query, verify, refusal and upkeep checks as with the SQLite catalog."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nerve.fleet.verify import CODES
from nerve.fleet.warehouse import host_of, open_warehouse, resolve, segment_name
from nerve.log.manifest import read_manifest
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.helpers.fleet import add_segment, make_host
from tests.helpers.seaweed import S3Server, seaweed, table_bucket

HOSTS = ("north", "south", "east")


@pytest.fixture(autouse=True)
def _verifier_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "verifier-state"))


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    with seaweed(tmp_path_factory.mktemp("seaweed"), iceberg=True) as server:
        yield server


@pytest.fixture
def hosts(s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, WorkspaceDir]:
    """Three hosts configured for a table bucket of their own (one per test)."""
    for key, value in s3.env.items():
        monkeypatch.setenv(key, value)
    warehouse = table_bucket(s3, tmp_path.name.lower().replace("_", "-")[-40:].strip("-"))
    extra = {"catalog": s3.catalog, "endpoint": s3.endpoint, "rest_signing": "s3tables"}
    extra["files"] = f"s3://{s3.bucket}/{tmp_path.name}"  # the table bucket takes no others
    made = {h: make_host(tmp_path / h, h, warehouse, **extra) for h in HOSTS}  # type: ignore[arg-type]
    args = ["fleet", "init", "--warehouse", warehouse, "--catalog", str(s3.catalog)]
    args += ["--endpoint", s3.endpoint, "--host", "north", "--rest-signing", "s3tables"]
    run_cli("-w", str(made["north"].root), *args)
    return made


def _ship(ws: WorkspaceDir, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "nerve", "-w", str(ws.root), "fleet", "ship", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def _wh(ws: WorkspaceDir) -> object:
    cfg = ws.config.fleet
    assert cfg is not None
    return open_warehouse(resolve(cfg, ws.data))


def test_concurrent_ships_query_and_verify_through_the_rest_catalog(
    s3: S3Server, hosts: dict[str, WorkspaceDir]
) -> None:
    add_segment(hosts["south"])
    procs = [_ship(ws, s3.env) for ws in hosts.values()]
    procs.append(_ship(hosts["south"], s3.env))  # a second registrar for one host
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    wh = _wh(hosts["north"])
    registered = sorted(
        (host_of(f.file_path), segment_name(f.file_path))
        for f in wh.data_files()  # type: ignore[attr-defined]
    )
    expected = sorted(
        (h, s.name)
        for h, ws in hosts.items()
        for s in read_manifest(ws.log_root / "manifest.jsonl").segments()
    )
    assert registered == expected  # every segment of every host, each once
    sql = "SELECT host, count(*) AS n FROM fleet_events GROUP BY host ORDER BY host"
    out = run_cli("-w", str(hosts["east"].root), "fleet", "query", sql, "--json").stdout
    assert [json.loads(line)["n"] for line in out.splitlines()] == [600, 600, 650]
    east = str(hosts["east"].root)
    assert run_cli("-w", east, "fleet", "verify", check=False).returncode == 0
    maintained = json.loads(
        run_cli("-w", east, "fleet", "maintain", "--keep", "0s", "--grace", "0s", "--json").stdout
    )
    assert maintained["snapshots_after"] <= len(HOSTS) + 1
    assert maintained["manifests_after"] == 1
    assert run_cli("-w", east, "fleet", "verify", check=False).returncode == 0
    victim = next(
        f.file_path
        for f in wh.data_files()  # type: ignore[attr-defined]
        if host_of(f.file_path) == "north"
    )
    s3.filesystem().delete_file(victim.removeprefix("s3://"))  # type: ignore[attr-defined]
    proc = run_cli("-w", east, "fleet", "verify", "--json", check=False)
    assert proc.returncode == CODES["missing"]
    report = {h["host"]: h for h in json.loads(proc.stdout)["hosts"]}
    assert not report["north"]["ok"] and report["south"]["ok"] and report["east"]["ok"]


def test_a_second_workspace_under_a_taken_name_is_refused_by_the_rest_catalog(
    s3: S3Server, hosts: dict[str, WorkspaceDir], tmp_path: Path
) -> None:
    north = hosts["north"]
    assert run_cli("-w", str(north.root), "fleet", "ship", check=False).returncode == 0
    cfg = north.config.fleet
    assert cfg is not None
    extra = {"catalog": s3.catalog, "endpoint": s3.endpoint, "rest_signing": "s3tables"}
    extra["files"] = str(cfg.files)
    clone = make_host(tmp_path / "clone", "north", cfg.warehouse, rows=20, **extra)  # type: ignore[arg-type]
    proc = run_cli("-w", str(clone.root), "fleet", "ship", check=False)
    assert proc.returncode == 1 and "signed by another key" in proc.stderr
    assert run_cli("-w", str(north.root), "fleet", "verify", check=False).returncode == 0

"""nerve fleet against a real S3-compatible server (SeaweedFS on loopback).

Three hosts ship concurrently to one bucket and one SQLite catalog; a fourth ship of an
already-shipping host races them; then a query answers across all hosts and verify passes,
and a file deleted from the bucket is caught.
"""

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
from tests.helpers.seaweed import S3Server, seaweed

HOSTS = ("north", "south", "east")


@pytest.fixture(autouse=True)
def _verifier_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pins go to the verifier's state folder: a temporary one here, never the home's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "verifier-state"))


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    with seaweed(tmp_path_factory.mktemp("seaweed")) as server:
        yield server


@pytest.fixture
def s3_env(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for key, value in s3.env.items():
        monkeypatch.setenv(key, value)
    return s3.env


def _ship_proc(ws: WorkspaceDir, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "nerve", "-w", str(ws.root), "fleet", "ship", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def test_hosts_ship_concurrently_to_s3_and_the_fleet_verifies(
    s3: S3Server, s3_env: dict[str, str], tmp_path: Path
) -> None:
    warehouse = f"s3://{s3.bucket}/{tmp_path.name}"
    catalog = f"sqlite:///{tmp_path / 'catalog.db'}"
    hosts = {
        h: make_host(tmp_path / h, h, warehouse, catalog=catalog, endpoint=s3.endpoint)
        for h in HOSTS
    }
    run_cli(
        "-w",
        str(hosts["north"].root),
        "fleet",
        "init",
        "--warehouse",
        warehouse,
        "--catalog",
        catalog,
        "--endpoint",
        s3.endpoint,
        "--host",
        "north",
    )
    add_segment(hosts["south"])
    procs = [_ship_proc(ws, s3_env) for ws in hosts.values()]
    procs.append(_ship_proc(hosts["south"], s3_env))  # a second registrar for one host
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    cfg = hosts["north"].config.fleet
    assert cfg is not None
    wh = open_warehouse(resolve(cfg, hosts["north"].data))
    registered = sorted((host_of(f.file_path), segment_name(f.file_path)) for f in wh.data_files())
    expected = sorted(
        (h, s.name)
        for h, ws in hosts.items()
        for s in read_manifest(ws.log_root / "manifest.jsonl").segments()
    )
    assert registered == expected  # every segment of every host, each once
    assert all(f.file_path.startswith(f"s3://{s3.bucket}/") for f in wh.data_files())

    sql = "SELECT host, count(*) AS n FROM fleet_events GROUP BY host ORDER BY host"
    out = run_cli("-w", str(hosts["east"].root), "fleet", "query", sql, "--json").stdout
    counts = [json.loads(line) for line in out.splitlines()]
    assert counts == [
        {"host": "east", "n": 600},
        {"host": "north", "n": 600},
        {"host": "south", "n": 650},
    ]

    proc = run_cli("-w", str(hosts["east"].root), "fleet", "verify", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    victim = next(f.file_path for f in wh.data_files() if host_of(f.file_path) == "north")
    s3.filesystem().delete_file(victim.removeprefix("s3://"))  # type: ignore[attr-defined]
    proc = run_cli("-w", str(hosts["east"].root), "fleet", "verify", "--json", check=False)
    assert proc.returncode == CODES["missing"]
    report = {h["host"]: h for h in json.loads(proc.stdout)["hosts"]}
    assert not report["north"]["ok"] and report["south"]["ok"] and report["east"]["ok"]


def test_missing_credentials_are_a_clear_error(
    s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none.ini"))
    ws = make_host(
        tmp_path / "west", "west", f"s3://{s3.bucket}/x", endpoint=s3.endpoint, rows=5, ages_h=(1,)
    )
    proc = run_cli("-w", str(ws.root), "fleet", "ship", check=False)
    assert proc.returncode == 2
    assert "no S3 credentials" in proc.stderr and "AWS_ACCESS_KEY_ID" in proc.stderr
    creds = tmp_path / "creds.ini"
    creds.write_text("[default]\naws_access_key_id = a\naws_secret_access_key = b\n")
    creds.chmod(0o644)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    proc = run_cli("-w", str(ws.root), "fleet", "ship", check=False)
    assert proc.returncode == 1 and "readable by others" in proc.stderr

"""`fleet query` reuses a plan made for the table's current metadata file, and plans
again as soon as a ship (or anything else) commits a new one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nerve.fleet import plancache
from nerve.fleet.settings import fleet_config
from nerve.fleet.ship import ship
from nerve.fleet.warehouse import resolve
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.helpers.fleet import add_segment, make_host

COUNT = "SELECT host, count(*) AS n FROM fleet_events GROUP BY host ORDER BY host"


@pytest.fixture(autouse=True)
def _verifier_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "verifier-state"))


@pytest.fixture
def hosts(tmp_path: Path) -> dict[str, WorkspaceDir]:
    warehouse = (tmp_path / "warehouse").as_uri()
    made = {h: make_host(tmp_path / h, h, warehouse, rows=50) for h in ("alpha", "beta")}
    run_cli("-w", str(made["alpha"].root), "fleet", "init", "--warehouse", warehouse)
    for ws in made.values():
        ship(ws)
    return made


def _counts(ws: WorkspaceDir) -> dict[str, int]:
    out = run_cli("-w", str(ws.root), "fleet", "query", COUNT, "--json").stdout
    return {row["host"]: row["n"] for row in map(json.loads, out.splitlines())}


def _plans(ws: WorkspaceDir) -> dict[str, dict[str, object]]:
    return json.loads((ws.data / "fleet" / plancache.PLANS).read_text())


def test_a_kept_plan_is_used_for_its_table_state_only(hosts: dict[str, WorkspaceDir]) -> None:
    alpha, beta = hosts["alpha"], hosts["beta"]
    first = _counts(alpha)
    assert set(first) == {"alpha", "beta"}
    plans = _plans(alpha)
    location = plancache.metadata_location(resolve(fleet_config(alpha), alpha.data))
    assert location is not None and [json.loads(k)[0] for k in plans] == [location]
    # the kept plan is what the next query reads: drop beta's files from it, and beta is gone
    (key,) = plans
    files = plans[key]["files"]
    assert isinstance(files, dict)
    del files["beta"]
    (alpha.data / "fleet" / plancache.PLANS).write_text(json.dumps(plans))
    assert _counts(alpha) == {"alpha": first["alpha"]}
    # a ship commits a new metadata file: the query plans again and sees all of it
    add_segment(beta)
    ship(beta)
    assert _counts(alpha) == {"alpha": first["alpha"], "beta": first["beta"] + 50}
    assert len(_plans(alpha)) == 2


def test_a_damaged_plan_file_is_planned_again(hosts: dict[str, WorkspaceDir]) -> None:
    alpha = hosts["alpha"]
    first = _counts(alpha)
    kept = alpha.data / "fleet" / plancache.PLANS
    foreign = json.dumps({key: {"files": 3} for key in _plans(alpha)})  # the right key
    for junk in ('{"x": [1, 2', foreign):
        kept.write_text(junk)
        assert _counts(alpha) == first


def test_a_repeated_query_loads_no_pyiceberg(hosts: dict[str, WorkspaceDir]) -> None:
    alpha = hosts["alpha"]
    _counts(alpha)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    nerve = [sys.executable, "-X", "importtime", "-m", "nerve", "-w", str(alpha.root)]
    proc = subprocess.run(
        [*nerve, "fleet", "query", COUNT, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert len(proc.stdout.splitlines()) == 2
    assert "pyiceberg" not in proc.stderr and "sqlalchemy" not in proc.stderr

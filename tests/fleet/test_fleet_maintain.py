"""``nerve fleet maintain``: fewer snapshots, manifests and metadata bytes, and what verify
needs is kept: each host still verifies, and tampering after upkeep is still caught."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nerve.fleet.ship import ship
from nerve.fleet.verify import CODES
from nerve.fleet.warehouse import Warehouse, host_of, open_warehouse, resolve
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.helpers.fleet import add_segment, make_host

HOSTS = ("alpha", "beta", "gamma")


@pytest.fixture(autouse=True)
def _verifier_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "verifier-state"))


def _wh(ws: WorkspaceDir) -> Warehouse:
    cfg = ws.config.fleet
    assert cfg is not None
    return open_warehouse(resolve(cfg, ws.data))


@pytest.fixture
def shipped(tmp_path: Path) -> dict[str, WorkspaceDir]:
    """Three hosts, each shipped three times (nine snapshots, nine manifests)."""
    warehouse = (tmp_path / "warehouse").as_uri()
    hosts = {h: make_host(tmp_path / h, h, warehouse, rows=20, ages_h=(3,)) for h in HOSTS}
    run_cli("-w", str(hosts["alpha"].root), "fleet", "init", "--warehouse", warehouse)
    for _ in range(3):
        for ws in hosts.values():
            ship(ws)
            add_segment(ws, rows=10)
    return hosts


def _maintain(ws: WorkspaceDir) -> dict[str, int]:
    args = ("fleet", "maintain", "--keep", "0s", "--grace", "0s", "--json")
    return json.loads(run_cli("-w", str(ws.root), *args).stdout)


def _verify(ws: WorkspaceDir, *args: str) -> int:
    return run_cli("-w", str(ws.root), "fleet", "verify", *args, check=False).returncode


def test_maintain_shrinks_the_table_and_every_host_still_verifies(
    shipped: dict[str, WorkspaceDir],
) -> None:
    alpha = shipped["alpha"]
    assert _verify(alpha) == 0  # pins each host's head
    result = _maintain(alpha)
    assert result["snapshots_before"] == 9 and result["manifests_before"] == 9
    assert result["snapshots_after"] == 1  # the merged current one: registrations are properties
    assert result["manifests_after"] == 1
    assert result["metadata_bytes_after"] < result["metadata_bytes_before"]
    assert result["orphans_removed"] > 0
    assert _verify(alpha) == 0
    sql = "SELECT host, count(*) AS n FROM fleet_events GROUP BY host ORDER BY host"
    out = run_cli("-w", str(alpha.root), "fleet", "query", sql, "--json").stdout
    assert [json.loads(line)["n"] for line in out.splitlines()] == [40, 40, 40]
    for ws in shipped.values():  # ships after upkeep register what is new, once
        assert ship(ws).added == 1
    assert _verify(alpha) == 0
    assert _maintain(alpha)["snapshots_after"] == 1


def test_tampering_after_maintain_is_still_caught(shipped: dict[str, WorkspaceDir]) -> None:
    beta = shipped["beta"]
    wh = _wh(beta)
    head = Path(f"{wh.host_dir('beta')}/head.json".removeprefix("file://"))
    old = head.read_bytes()
    ship(beta)
    assert _verify(beta) == 0
    _maintain(beta)
    head.write_bytes(old)  # an old head replayed
    assert _verify(beta, "--host", "beta") == CODES["rolled-back"]
    ship(beta)  # puts the newest head back
    assert _verify(beta, "--host", "beta") == 0
    wh.refresh()
    victim = next(f.file_path for f in wh.data_files() if host_of(f.file_path) == "gamma")
    Path(victim.removeprefix("file://")).unlink()
    assert _verify(beta, "--host", "gamma") == CODES["missing"]


def test_two_maintainers_at_once_keep_every_host_verifiable(
    shipped: dict[str, WorkspaceDir],
) -> None:
    import os
    import subprocess
    import sys

    alpha = shipped["alpha"]
    assert _verify(alpha) == 0
    add_segment(shipped["gamma"], rows=10)  # two new segments: a ship under way meanwhile
    # the default grace: files younger than it may belong to a commit still under way
    args = ["fleet", "maintain", "--keep", "0s", "--grace", "1h", "--json"]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "nerve", "-w", str(shipped[h].root), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        for h in ("alpha", "beta")
    ]
    assert ship(shipped["gamma"]).added == 2
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert _verify(alpha) == 0  # each host still proves what it sealed
    assert _maintain(alpha)["snapshots_after"] == 1


def test_the_daemon_maintains_on_its_schedule(shipped: dict[str, WorkspaceDir]) -> None:
    from tests.daemon_util import started

    beta = shipped["beta"]
    text = beta.config_path.read_text()
    beta.config_path.write_text(text + "  maintain_interval: 2\n  maintain_keep: 0\n")
    wh = _wh(beta)
    assert len(wh.table.metadata.snapshots) == 9
    with started(beta.root) as daemon:

        def upkept() -> bool:
            wh.refresh()
            return len(wh.table.metadata.snapshots) == 1

        daemon.wait_for(upkept, 60, "a scheduled maintain")
        log = beta.data / "daemon.log"
        daemon.wait_for(lambda: "fleet maintain: snapshots 9 -> 1" in log.read_text(), 30, "log")
    assert _verify(beta) == 0


def test_a_table_loaded_before_maintain_plans_the_current_snapshot(
    shipped: dict[str, WorkspaceDir],
) -> None:
    stale = _wh(shipped["alpha"])  # loaded now; maintain below removes its snapshot's files
    old = stale.table.current_snapshot()
    ship(shipped["beta"])
    _maintain(shipped["alpha"])
    files = stale.data_files()  # planned the current snapshot instead of failing
    assert stale.table.current_snapshot() != old
    assert len(files) == len(_wh(shipped["alpha"]).data_files())

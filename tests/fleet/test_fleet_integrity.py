"""The fleet table is the truth only if ship and verify read all of it: hosts that share a
name, a file registered twice, delete files, metadata that changes a scan, and a ship whose
local note fails after its commit."""

from __future__ import annotations

import contextlib
import errno
import json
from pathlib import Path

import pytest

from nerve import fsio
from nerve.errors import NerveError
from nerve.fleet.ship import ship
from nerve.fleet.verify import CODES
from nerve.fleet.warehouse import Warehouse, host_of, open_warehouse, resolve
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli
from tests.helpers.fleet import make_host, register_again, register_position_deletes


@pytest.fixture(autouse=True)
def _verifier_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "verifier-state"))


def _wh(ws: WorkspaceDir) -> Warehouse:
    cfg = ws.config.fleet
    assert cfg is not None
    return open_warehouse(resolve(cfg, ws.data))


def _files(wh: Warehouse, host: str) -> list[str]:
    return sorted(f.file_path for f in wh.data_files() if host_of(f.file_path) == host)


def _local(uri: str) -> Path:
    return Path(uri.removeprefix("file://"))


def _shipped(tmp_path: Path, host: str = "alpha", **extra: object) -> WorkspaceDir:
    warehouse = (tmp_path / "warehouse").as_uri()
    ws = make_host(tmp_path / host, host, warehouse, **extra)  # type: ignore[arg-type]
    run_cli("-w", str(ws.root), "fleet", "init", "--warehouse", warehouse)
    ship(ws)
    return ws


def _verify(ws: WorkspaceDir) -> tuple[int, dict[str, object]]:
    proc = run_cli("-w", str(ws.root), "fleet", "verify", "--json", check=False)
    return proc.returncode, json.loads(proc.stdout)


def _count(ws: WorkspaceDir) -> tuple[int, str]:
    sql = "SELECT count(*) AS n FROM fleet_events"
    proc = run_cli("-w", str(ws.root), "fleet", "query", sql, "--json")
    return json.loads(proc.stdout)["n"], proc.stderr


def _kinds(report: dict[str, object], host: str) -> list[str]:
    entry = next(h for h in report["hosts"] if h["host"] == host)  # type: ignore[attr-defined]
    return sorted({p["kind"] for p in entry["problems"]})


def test_a_second_workspace_with_the_same_host_name_is_refused(tmp_path: Path) -> None:
    first = _shipped(tmp_path, "twin")
    wh = _wh(first)
    before = _files(wh, "twin")
    head_before = _local(f"{wh.host_dir('twin')}/head.json").read_bytes()
    clone = make_host(tmp_path / "clone", "twin", (tmp_path / "warehouse").as_uri(), rows=30)
    proc = run_cli("-w", str(clone.root), "fleet", "ship", check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "signed by another key" in proc.stderr and "Traceback" not in proc.stderr
    assert "fleet.host" in proc.stderr
    wh.refresh()
    assert _files(wh, "twin") == before and all(_local(f).exists() for f in before)
    assert _local(f"{wh.host_dir('twin')}/head.json").read_bytes() == head_before
    code, _ = _verify(first)
    assert code == 0


def test_the_default_host_name_differs_between_workspaces(tmp_path: Path) -> None:
    warehouse = (tmp_path / "warehouse").as_uri()
    names = []
    for name in ("one", "two"):
        ws = init_workspace(tmp_path / name)
        ws.config_path.write_text(f"fleet:\n  warehouse: {json.dumps(warehouse)}\n")
        cfg = WorkspaceDir.at(ws.root).config.fleet
        assert cfg is not None
        names.append(resolve(cfg, ws.data).host)
        assert resolve(cfg, ws.data).host == names[-1]  # stable for the workspace
    assert names[0] != names[1]
    assert names[0].rsplit("-", 1)[0] == names[1].rsplit("-", 1)[0]  # the machine's name


def test_a_file_registered_twice_fails_verify(tmp_path: Path) -> None:
    ws = _shipped(tmp_path)
    wh = _wh(ws)
    assert _verify(ws)[0] == 0
    register_again(wh, _files(wh, "alpha")[0])
    count, warning = _count(ws)
    assert count == 800  # as every engine reads it: that file's 200 events twice
    assert "registered more than once" in warning
    code, report = _verify(ws)
    assert code == CODES["duplicate"]
    assert _kinds(report, "alpha") == ["duplicate"]


def test_a_position_delete_file_fails_verify_and_query_reads_what_engines_read(
    tmp_path: Path,
) -> None:
    ws = _shipped(tmp_path)
    wh = _wh(ws)
    assert _verify(ws)[0] == 0
    register_position_deletes(wh, _files(wh, "alpha")[0], [0, 7])
    wh.refresh()
    assert sum(1 for _ in wh.table.scan().to_arrow().to_pylist()) == 598  # pyiceberg's read
    count, warning = _count(ws)
    assert count == 598 and "delete files applied" in warning
    code, report = _verify(ws)
    assert code == CODES["deletes"]
    assert _kinds(report, "alpha") == ["deletes"]


def test_a_row_count_the_file_does_not_hold_fails_verify(tmp_path: Path) -> None:
    from pyiceberg.manifest import DATA_FILE_TYPE

    from nerve.fleet.ship import _data_file
    from nerve.fleet.warehouse import local_path

    ws = _shipped(tmp_path, rows=20, ages_h=(1,))
    wh = _wh(ws)
    (uri,) = _files(wh, "alpha")
    with wh.table.transaction() as tx:  # the same file, its count changed (engines trust it)
        old = next(f for f in wh.data_files() if f.file_path == uri)
        new = _data_file(tx.table_metadata, uri, local_path(uri))
        fields = DATA_FILE_TYPE[2].fields
        new._data[fields.index(DATA_FILE_TYPE[2].field_by_name("record_count"))] = 19
        with tx.update_snapshot().overwrite() as change:
            change.delete_data_file(old)
            change.append_data_file(new)
    code, report = _verify(ws)
    assert code == CODES["metadata"]
    assert _kinds(report, "alpha") == ["metadata"]


def test_an_eio_after_the_commit_says_the_ship_was_done(tmp_path: Path) -> None:
    warehouse = (tmp_path / "warehouse").as_uri()
    ws = make_host(tmp_path / "alpha", "alpha", warehouse, rows=20, ages_h=(1,))
    run_cli("-w", str(ws.root), "fleet", "init", "--warehouse", warehouse)
    with contextlib.ExitStack() as stack:
        faults = []

        def after_commit(step: str) -> None:  # the disk breaks once the table has the ship
            if step == "commit":
                faults.append(stack.enter_context(fsio.inject("fleet.write", err=errno.EIO)))

        result = ship(ws, hook=after_commit)
    assert faults[0].fired == 1
    assert result.snapshot is not None and result.added == 1
    (problem,) = result.problems
    assert problem.startswith("shipped: 1 segment(s) registered")
    assert "Nothing needs shipping again" in problem and "free some space" not in problem
    assert _verify(ws)[0] == 0
    again = ship(ws)
    assert (again.added, again.uploaded) == (0, 0)


def test_a_commit_that_keeps_losing_shows_in_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyiceberg.exceptions import CommitFailedException

    from nerve.fleet import warehouse

    ws = make_host(tmp_path / "alpha", "alpha", (tmp_path / "w").as_uri(), rows=20, ages_h=(1,))
    run_cli("-w", str(ws.root), "fleet", "init", "--warehouse", (tmp_path / "w").as_uri())
    monkeypatch.setattr(warehouse, "BACKOFF_S", 0.0)
    monkeypatch.setattr(warehouse, "COMMIT_DEADLINE_S", 0.5)

    def lose(self: object, *args: object, **kwargs: object) -> None:
        raise CommitFailedException("another writer committed first")

    monkeypatch.setattr("pyiceberg.table.Transaction.commit_transaction", lose)
    with pytest.raises(NerveError, match="races in a row over"):
        ship(ws)
    monkeypatch.undo()
    status = json.loads(run_cli("-w", str(ws.root), "fleet", "status", "--json").stdout)
    mine = next(s for s in status if s["host"] == "alpha")
    assert mine["failures"] == 1 and "races in a row" in mine["failure"]
    ship(ws)
    status = json.loads(run_cli("-w", str(ws.root), "fleet", "status", "--json").stdout)
    mine = next(s for s in status if s["host"] == "alpha")
    assert mine["failures"] == 0 and mine["files"] == 1


def test_auto_ship_slots_are_stable_per_host_and_spread_over_the_interval() -> None:
    from nerve.runtime.shipper import next_slot, slot_offset

    hour = 3600
    offsets = [slot_offset(f"host-{i}", hour) for i in range(1000)]
    assert offsets == [slot_offset(f"host-{i}", hour) for i in range(1000)]
    per_minute = [0] * 60
    for offset in offsets:
        per_minute[int(offset // 60)] += 1
    assert max(per_minute) <= 35 and min(per_minute) >= 5  # ~17 a minute, none on the hour
    now = 1_700_000_000.0
    slot = next_slot(now, "host-1", hour)
    assert now < slot <= now + hour
    assert (slot - slot_offset("host-1", hour)) % hour == 0
    assert next_slot(slot, "host-1", hour) == slot + hour


@pytest.mark.parametrize(
    ("section", "says"),
    [
        ("warehouse: ftp://x", "fleet.warehouse: must be a file:// or s3:// URI (got 'ftp://x')"),
        ("table: nodot", "fleet.table: must be namespace.table (got 'nodot')"),
        ("host: -bad", "fleet.host: host '-bad': letters"),
    ],
)
def test_a_bad_fleet_setting_names_the_value_it_got(
    workspace: WorkspaceDir, section: str, says: str
) -> None:
    with workspace.config_path.open("a") as f:
        f.write(f"fleet:\n  {section}\n")
    proc = run_cli("-w", str(workspace.root), "validate", check=False)
    assert proc.returncode == 1 and says in proc.stderr, proc.stderr

"""Group commits: ships under way at once register together, each file exactly once, and
a request is taken only while the table still holds the registration it was based on."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from nerve.fleet import group
from nerve.fleet.ship import ship
from nerve.fleet.verify import verify_fleet
from nerve.fleet.warehouse import Warehouse, host_of, open_warehouse, resolve, segment_name
from nerve.log.manifest import read_manifest
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.helpers.fleet import add_segment, make_host

HOSTS = tuple(f"g{i}" for i in range(6))


@pytest.fixture(autouse=True)
def _verifier_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "verifier-state"))


@pytest.fixture
def hosts(tmp_path: Path) -> dict[str, WorkspaceDir]:
    warehouse = (tmp_path / "warehouse").as_uri()
    made = {h: make_host(tmp_path / h, h, warehouse, rows=20, ages_h=(2,)) for h in HOSTS}
    run_cli("-w", str(made[HOSTS[0]].root), "fleet", "init", "--warehouse", warehouse)
    return made


def _wh(ws: WorkspaceDir) -> Warehouse:
    cfg = ws.config.fleet
    assert cfg is not None
    return open_warehouse(resolve(cfg, ws.data))


def _registered(wh: Warehouse) -> list[tuple[str | None, str]]:
    wh.refresh()
    return sorted((host_of(f.file_path), segment_name(f.file_path)) for f in wh.data_files())


def _wanted(hosts: dict[str, WorkspaceDir]) -> list[tuple[str | None, str]]:
    return sorted(
        (h, s.name)
        for h, ws in hosts.items()
        for s in read_manifest(ws.log_root / "manifest.jsonl").segments()
    )


def test_ships_at_once_land_in_fewer_commits_each_file_once(
    hosts: dict[str, WorkspaceDir], tmp_path: Path
) -> None:
    at_commit = threading.Barrier(len(HOSTS))

    def hook(step: str) -> None:
        if step == "head":  # every ship reaches its commit at the same moment
            at_commit.wait(timeout=60)

    with ThreadPoolExecutor(len(HOSTS)) as pool:
        results = list(pool.map(lambda ws: ship(ws, hook=hook), hosts.values()))
    assert all(r.added == 1 for r in results)
    wh = _wh(hosts[HOSTS[0]])
    assert _registered(wh) == _wanted(hosts)  # every segment of every host, each once
    assert len(wh.table.metadata.snapshots) < len(HOSTS)  # some commit carried several hosts
    assert sum(r.retries for r in results) == 0  # a ship another's commit took tried nothing
    reports = verify_fleet(wh, tmp_path / "trust")
    assert [(r.host, r.ok) for r in reports] == [(h, True) for h in HOSTS]
    assert not list((tmp_path / "warehouse").rglob("requests/*.json"))  # all withdrawn


def _request_of(ws: WorkspaceDir, wh: Warehouse) -> group.Request:
    """The request ``ws``'s next ship would make (its files uploaded, its head written),
    made by running that ship up to its commit."""

    class Stop(Exception):
        pass

    def hook(step: str) -> None:
        if step == "head":
            raise Stop

    with pytest.raises(Stop):
        ship(ws, hook=hook)
    from nerve.fleet.ship import _request  # the same entry a waiting ship writes

    host = ws.root.name
    head = json.loads(Path(f"{wh.host_dir(host)}/head.json".removeprefix("file://")).read_bytes())
    from nerve.chain.keys import Keyring
    from nerve.fleet.head import Head, Registration
    from nerve.log.paths import LogPaths

    parsed = Head(head["body"], bytes.fromhex(head["sig"]))
    key = Keyring.open(ws.data / "keys").signing_key()
    mine = Registration.of(parsed, key).to_text()
    wh.refresh()
    return _request(wh, LogPaths(ws.log_root), host, mine, parsed.segments, 0)


def test_a_request_is_taken_only_on_its_base_and_with_its_signature(
    hosts: dict[str, WorkspaceDir], tmp_path: Path
) -> None:
    first, second, third = (hosts[h] for h in HOSTS[:3])
    wh = _wh(first)
    request = _request_of(second, wh)
    uri = Path(group.request_uri(wh, second.root.name).removeprefix("file://"))
    uri.parent.mkdir(parents=True, exist_ok=True)
    stale = group.Request(request.host, "v1.9.x.y.z", request.registration, 0, request.files)
    uri.write_bytes(stale.to_bytes())  # based on a registration the table never held
    ship(first)
    assert [h for h, _ in _registered(wh)] == [first.root.name]
    forged = request.registration.rsplit(".", 1)[0] + "." + "00" * 64
    uri.write_bytes(group.Request(request.host, None, forged, 0, request.files).to_bytes())
    add_segment(first)
    ship(first)  # a signature that does not verify: not taken either
    assert {h for h, _ in _registered(wh)} == {first.root.name}
    uri.write_bytes(request.to_bytes())  # as the waiting ship wrote it: taken by the next commit
    ship(third)
    assert {h for h, _ in _registered(wh)} == {h.root.name for h in (first, second, third)}
    assert ship(second).added == 0  # the second's files were registered by the third's commit
    assert _registered(wh) == sorted(
        (h, s.name)
        for h, ws in hosts.items()
        if h in HOSTS[:3]
        for s in read_manifest(ws.log_root / "manifest.jsonl").segments()
    )
    reports = verify_fleet(wh, tmp_path / "trust", hosts=list(HOSTS[:3]))
    assert all(r.ok for r in reports), [r.problems for r in reports]


def test_ships_waiting_in_one_process_hand_over_in_memory(
    hosts: dict[str, WorkspaceDir], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ship waiting for this process's committer writes no request file and loads the
    table again only when it commits itself: the committer takes its request in memory."""
    written: list[str] = []
    loads = [0]
    real_write, real_refresh = Warehouse.write, Warehouse.refresh

    def write(self: Warehouse, uri: str, data: bytes) -> None:
        written.append(uri)
        real_write(self, uri, data)

    def refresh(self: Warehouse) -> None:
        loads[0] += 1
        real_refresh(self)

    monkeypatch.setattr(Warehouse, "write", write)
    monkeypatch.setattr(Warehouse, "refresh", refresh)
    at_commit = threading.Barrier(len(HOSTS))

    def hook(step: str) -> None:
        if step == "head":
            at_commit.wait(timeout=60)

    with ThreadPoolExecutor(len(HOSTS)) as pool:
        results = list(pool.map(lambda ws: ship(ws, hook=hook), hosts.values()))
    commits = sum("group_hosts" in r.timings for r in results)
    assert sum(r.timings.get("group_hosts", 0) for r in results) == len(HOSTS)
    assert commits < len(HOSTS) and loads[0] == commits  # one load per commit, none per wait
    assert not [uri for uri in written if "/requests/" in uri]
    monkeypatch.undo()
    assert _registered(_wh(hosts[HOSTS[0]])) == _wanted(hosts)

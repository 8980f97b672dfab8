"""A host is its name and its key: a ship trusts no head.json another key signed, a name
another key shipped under is refused, and verify refuses a table that registers another
key's or another record's head, even with ``--repin``. And what the fleet writes on this
machine (a local warehouse's objects, ``data/fleet/``, the verifier's pins) is fsynced,
file and folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nacl.signing import SigningKey

from nerve.chain.keys import Keyring
from nerve.fleet.head import Head, Registration
from nerve.fleet.ship import ship, state_path
from nerve.fleet.verify import CODES, pins_path, verify_fleet
from nerve.fleet.warehouse import (
    REGISTRATION_PREFIX,
    Warehouse,
    host_of,
    open_warehouse,
    registration_value,
    resolve,
)
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.helpers.fleet import add_segment, make_host
from tests.helpers.synced import synced_paths

HOSTS = ("alpha", "beta")


@pytest.fixture(autouse=True)
def _verifier_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "verifier-state"))


@pytest.fixture
def fleet(tmp_path: Path) -> dict[str, WorkspaceDir]:
    """Two hosts of two sealed segments each, shipped to a local warehouse."""
    warehouse = (tmp_path / "warehouse").as_uri()
    hosts = {h: make_host(tmp_path / h, h, warehouse, rows=40, ages_h=(48, 1)) for h in HOSTS}
    run_cli("-w", str(hosts["alpha"].root), "fleet", "init", "--warehouse", warehouse)
    for ws in hosts.values():
        ship(ws)
    return hosts


def _wh(ws: WorkspaceDir) -> Warehouse:
    cfg = ws.config.fleet
    assert cfg is not None
    return open_warehouse(resolve(cfg, ws.data))


def _head_path(wh: Warehouse, host: str) -> Path:
    return Path(f"{wh.host_dir(host)}/head.json".removeprefix("file://"))


def _verify(ws: WorkspaceDir, *args: str) -> tuple[int, str]:
    proc = run_cli("-w", str(ws.root), "fleet", "verify", *args, check=False)
    return proc.returncode, proc.stdout


def _beta_head(wh: Warehouse, ours: Head) -> bytes:
    """Another host's head.json, signed by that host's key."""
    return _head_path(wh, "beta").read_bytes()


def _resigned(wh: Warehouse, ours: Head) -> bytes:
    """Our head's record and hash, naming no segment, signed by another key."""
    body = {k: v for k, v in ours.body.items() if k != "key"} | {"segments": []}
    return Head.sign(body, SigningKey.generate()).to_bytes()


def _edited(wh: Warehouse, ours: Head) -> bytes:
    """Our head naming no segment, under our signature (which no longer verifies)."""
    return Head({**ours.body, "segments": []}, ours.sig).to_bytes()


def test_a_ship_trusts_no_head_json_another_key_signed(fleet: dict[str, WorkspaceDir]) -> None:
    alpha, wh = fleet["alpha"], _wh(fleet["alpha"])
    path = _head_path(wh, "alpha")
    for forge in (_beta_head, _resigned, _edited):
        # a head.json naming none of alpha's registered segments, at the registered record
        path.write_bytes(forge(wh, Head.parse(path.read_bytes(), "head")))
        add_segment(alpha, rows=20)
        result = ship(alpha)
        assert (result.added, result.removed) == (1, 0), forge  # not all its files again
    wh.refresh()
    names = [f.file_path for f in wh.data_files() if host_of(f.file_path) == "alpha"]
    assert len(names) == len(set(names)) == 5
    code, out = _verify(alpha)
    assert code == 0, out


def test_a_name_whose_stored_head_another_key_signed_is_refused(tmp_path: Path) -> None:
    """Only a head.json in the store (a ship of another workspace killed before its
    commit): the name is still taken, and nothing is uploaded or registered."""
    warehouse = (tmp_path / "warehouse").as_uri()
    first = make_host(tmp_path / "first", "first", warehouse, rows=20, ages_h=(1,))
    run_cli("-w", str(first.root), "fleet", "init", "--warehouse", warehouse)
    ship(first)
    wh = _wh(first)
    other = SigningKey.generate()
    head = Head.parse(_head_path(wh, "first").read_bytes(), "head")
    lone = {k: v for k, v in head.body.items() if k != "key"} | {"host": "lone"}
    _head_path(wh, "lone").parent.mkdir(parents=True)
    _head_path(wh, "lone").write_bytes(Head.sign(lone, other).to_bytes())
    ws = make_host(tmp_path / "lone", "lone", warehouse, rows=20, ages_h=(1,))
    proc = run_cli("-w", str(ws.root), "fleet", "ship", check=False)
    assert proc.returncode == 1 and "signed by another key" in proc.stderr, proc.stderr
    wh.refresh()
    assert not [f for f in wh.data_files() if host_of(f.file_path) == "lone"]
    assert not (_head_path(wh, "lone").parent / "segments").exists()


def test_repin_does_not_accept_a_head_json_the_table_says_another_key_signed(
    fleet: dict[str, WorkspaceDir], tmp_path: Path
) -> None:
    beta, wh = fleet["beta"], _wh(fleet["beta"])
    assert _verify(beta)[0] == 0
    head = Head.parse(_head_path(wh, "beta").read_bytes(), "head")
    body = {k: v for k, v in head.body.items() if k != "key"}
    _head_path(wh, "beta").write_bytes(Head.sign(body, SigningKey.generate()).to_bytes())
    for args in ((), ("--repin",)):
        code, out = _verify(beta, "--host", "beta", *args)
        assert code == CODES["key-changed"], (args, out)
        assert "re-signed by another key" in out
    pins = json.loads(pins_path(wh, tmp_path / "verifier-state" / "nerve").read_bytes())
    assert pins["hosts"]["beta"]["key"] == head.key.hex()  # the pin stays the host's own


def test_a_registration_naming_another_head_at_the_same_record_is_refused(
    fleet: dict[str, WorkspaceDir],
) -> None:
    alpha, wh = fleet["alpha"], _wh(fleet["alpha"])
    head = Head.parse(_head_path(wh, "alpha").read_bytes(), "head")
    key = Keyring.open(alpha.data / "keys").signing_key()  # the host's own key signs it
    other = Head.sign({**head.body, "head": "0" * 64}, key)
    text = Registration.of(other, key).to_text()
    with wh.transaction() as tx:
        tx.set_properties(**{REGISTRATION_PREFIX + "alpha": registration_value(text, 0, 0)})
    code, out = _verify(alpha, "--host", "alpha")
    assert code == CODES["bad-head"], out
    assert "not the head the table registered" in out


def test_what_the_fleet_writes_here_is_fsynced_file_and_folder(
    fleet: dict[str, WorkspaceDir], tmp_path: Path
) -> None:
    alpha, wh = fleet["alpha"], _wh(fleet["alpha"])
    add_segment(alpha, rows=20)
    with synced_paths() as synced:
        ship(alpha)
    host = Path(wh.host_dir("alpha").removeprefix("file://"))
    head, manifest = host / "head.json", host / "manifest.jsonl"
    assert {str(host), str(host / "segments"), str(state_path(alpha.data).parent)} <= set(synced)
    for path in (head, manifest, state_path(alpha.data)):  # each synced under its temp name
        assert any(Path(s).name.startswith(f".{path.name}.") for s in synced), (path, synced)
    assert sum(Path(s).parent == host / "segments" for s in synced) == 1  # the new segment
    trust = tmp_path / "trust"
    wh.refresh()
    with synced_paths() as synced:
        assert all(r.ok for r in verify_fleet(wh, trust))
    pins = pins_path(wh, trust)
    assert str(pins.parent) in synced
    assert any(Path(s).name.startswith(f".{pins.name}.") for s in synced), synced
    assert sorted(json.loads(pins.read_bytes())["hosts"]) == ["alpha", "beta"]


def test_a_waiting_request_signed_by_another_key_is_not_taken(
    fleet: dict[str, WorkspaceDir],
) -> None:
    """A request for a registered host whose registration verifies, but under a key other
    than the one the table knows for the host: no committer carries it."""
    from nerve.fleet import group
    from nerve.fleet.ship import _request
    from nerve.log.paths import LogPaths

    alpha, beta, wh = fleet["alpha"], fleet["beta"], _wh(fleet["alpha"])
    base = group.current(wh, "beta")
    add_segment(beta, rows=20)

    class Stop(Exception):
        pass

    def stop(step: str) -> None:
        if step == "head":
            raise Stop

    with pytest.raises(Stop):
        ship(beta, hook=stop)  # uploaded, head.json written, not committed
    head = Head.parse(_head_path(wh, "beta").read_bytes(), "head")
    other = SigningKey.generate()
    theirs = Head({**head.body, "key": bytes(other.verify_key.encode()).hex()}, b"")
    forged = Registration.of(theirs, other)  # beta's record and hash, another key
    assert forged.verifies() and forged.key != head.key
    wh.refresh()
    newest = head.segments[-1:]
    request = _request(wh, LogPaths(beta.log_root), "beta", forged.to_text(), newest, 0)
    assert request.base == base
    uri = Path(group.request_uri(wh, "beta").removeprefix("file://"))
    uri.parent.mkdir(parents=True, exist_ok=True)
    uri.write_bytes(request.to_bytes())
    add_segment(alpha, rows=20)
    ship(alpha)
    wh.refresh()
    assert group.current(wh, "beta") == base  # beta's registration untouched
    assert ship(beta).added == 1  # its own ship registers the new segment
    code, out = _verify(beta)
    assert code == 0, out


def test_an_encrypted_workspace_keeps_nothing_of_a_fleet_query(
    fleet: dict[str, WorkspaceDir], tmp_path: Path
) -> None:
    """Other hosts' events in plaintext stay out of an encrypted workspace's ``data/``: no
    fetched file and no plan is kept (a plain workspace keeps its plan)."""
    warehouse = (tmp_path / "warehouse").as_uri()
    key, ws = tmp_path / "q.key", tmp_path / "q"
    run_cli("init", "--encrypt", "--key-file", str(key), str(ws))
    with (ws / "nerve.yaml").open("a") as config:
        config.write(f"fleet:\n  warehouse: {json.dumps(warehouse)}\n  host: q\n")
    sql = "SELECT count(*) AS n FROM fleet_events"
    env = {"NERVE_KEY_FILE": str(key)}
    rows = run_cli("-w", str(ws), "fleet", "query", sql, "--json", env=env)
    assert json.loads(rows.stdout)["n"] == 160
    assert not (ws / "data" / "fleet").exists() or not any((ws / "data" / "fleet").rglob("*"))
    plain = fleet["alpha"]
    run_cli("-w", str(plain.root), "fleet", "query", sql, "--json")
    assert (plain.data / "fleet" / "plans.json").exists()

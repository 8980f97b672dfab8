"""nerve fleet on the embedded default: a file:// warehouse and a SQLite catalog.

Three simulated hosts (workspaces) ship to one table; queries, verification and status
run through the real CLI; each kind of tampering is caught with its own exit code.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from nacl.signing import SigningKey

from nerve.canonical import canonical_json
from nerve.fleet.head import Head
from nerve.fleet.query import plan
from nerve.fleet.ship import ship
from nerve.fleet.verify import CODES
from nerve.fleet.warehouse import Warehouse, host_of, open_warehouse, resolve, segment_name
from nerve.log.manifest import read_manifest
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.helpers.fleet import add_segment, make_host

HOSTS = ("alpha", "beta", "gamma")


@pytest.fixture(autouse=True)
def _verifier_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pins go to the verifier's state folder: a temporary one here, never the home's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "verifier-state"))


@pytest.fixture
def fleet(tmp_path: Path) -> dict[str, WorkspaceDir]:
    """Three hosts with three sealed segments each, shipped."""
    warehouse = (tmp_path / "warehouse").as_uri()
    hosts = {h: make_host(tmp_path / h, h, warehouse) for h in HOSTS}
    run_cli("-w", str(hosts["alpha"].root), "fleet", "init", "--warehouse", warehouse)
    for ws in hosts.values():
        ship(ws)
    return hosts


def _wh(ws: WorkspaceDir) -> Warehouse:
    cfg = ws.config.fleet
    assert cfg is not None
    return open_warehouse(resolve(cfg, ws.data))


def _verify(ws: WorkspaceDir, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("-w", str(ws.root), "fleet", "verify", *args, check=False)


def _files(wh: Warehouse, host: str) -> list[str]:
    return sorted(f.file_path for f in wh.data_files() if host_of(f.file_path) == host)


def _local(uri: str) -> Path:
    return Path(uri.removeprefix("file://"))


def test_three_hosts_ship_query_and_verify(fleet: dict[str, WorkspaceDir]) -> None:
    alpha = fleet["alpha"]
    sql = (
        "SELECT host, count(*) AS n, count(DISTINCT node) AS nodes FROM fleet_events "
        "GROUP BY host ORDER BY host"
    )
    out = run_cli("-w", str(alpha.root), "fleet", "query", sql, "--json").stdout
    assert [json.loads(line) for line in out.splitlines()] == [
        {"host": h, "n": 600, "nodes": 1} for h in HOSTS
    ]
    proc = _verify(alpha)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [line.split(":")[0] for line in proc.stdout.splitlines()] == [
        f"ok    {h}" for h in HOSTS
    ]
    status = json.loads(run_cli("-w", str(alpha.root), "fleet", "status", "--json").stdout)
    assert [(s["host"], s["files"], s["rows"], s["behind_segments"]) for s in status] == [
        (h, 3, 600, 0) for h in HOSTS
    ]
    assert all(s["verify"]["ok"] for s in status)


def test_a_second_ship_changes_nothing(fleet: dict[str, WorkspaceDir]) -> None:
    again = ship(fleet["beta"])
    assert (again.uploaded, again.added, again.removed, again.snapshot) == (0, 0, 0, None)
    assert len(_files(_wh(fleet["beta"]), "beta")) == 3


def test_new_segments_ship_and_status_shows_the_lag(fleet: dict[str, WorkspaceDir]) -> None:
    gamma = fleet["gamma"]
    add_segment(gamma)
    status = json.loads(run_cli("-w", str(gamma.root), "fleet", "status", "--json").stdout)
    mine = next(s for s in status if s["host"] == "gamma")
    assert mine["behind_segments"] == 1 and mine["behind_s"] > 0
    result = ship(gamma)
    assert (result.uploaded, result.added) == (1, 1)
    assert _verify(gamma).returncode == 0


def test_since_reads_only_the_files_that_reach_the_window(fleet: dict[str, WorkspaceDir]) -> None:
    wh = _wh(fleet["alpha"])
    hour_ago = time.time_ns() - 3600 * 10**9
    recent = plan(wh, since_ns=hour_ago)
    assert (recent.read, recent.total) == (3, 9)  # one per host: last month's are not read
    assert plan(wh, since_ns=hour_ago, hosts=["beta"]).read == 1
    assert plan(wh).read == 9
    out = run_cli(
        "-w",
        str(fleet["alpha"].root),
        "fleet",
        "query",
        "--since",
        "1h",
        "--host",
        "beta",
        "SELECT host, count(*) AS n FROM fleet_events GROUP BY ALL",
        "--json",
    ).stdout
    assert json.loads(out) == {"host": "beta", "n": 200}


def test_a_deleted_file_is_missing(fleet: dict[str, WorkspaceDir]) -> None:
    wh = _wh(fleet["alpha"])
    _local(_files(wh, "beta")[0]).unlink()
    proc = _verify(fleet["alpha"])
    assert proc.returncode == CODES["missing"], proc.stdout
    assert "FAIL  beta: missing:" in proc.stdout and "no longer has it" in proc.stdout
    assert "ok    alpha" in proc.stdout and "ok    gamma" in proc.stdout


def test_verify_runs_hosts_in_parallel_and_names_the_tampered_one(
    fleet: dict[str, WorkspaceDir], tmp_path: Path
) -> None:
    from nerve.fleet.verify import verify_fleet

    for ws in fleet.values():  # a second segment each: the digest spans files
        add_segment(ws)
        ship(ws)
    wh = _wh(fleet["alpha"])
    serial = verify_fleet(wh, tmp_path / "serial", threads=1)
    assert [(r.host, r.ok) for r in serial] == [(h, True) for h in HOSTS]
    victim = _local(_files(wh, "gamma")[-1])
    victim.write_bytes(victim.read_bytes()[:-1] + b"\0")  # one byte changed
    seen: list[str] = []
    reports = verify_fleet(
        wh, tmp_path / "parallel", threads=3, on_report=lambda r: seen.append(r.host)
    )
    assert sorted(seen) == list(HOSTS)  # each host reported once, as it was done
    assert [r.host for r in reports] == list(HOSTS)  # the list in host order
    assert [r.host for r in reports if not r.ok] == ["gamma"]
    assert [k for k, _ in reports[2].problems] == ["altered"]
    assert [r.digest for r in reports[:2]] == [r.digest for r in serial[:2]]  # same digests


def test_a_swapped_file_is_altered(fleet: dict[str, WorkspaceDir]) -> None:
    wh = _wh(fleet["alpha"])
    first, second = _files(wh, "gamma")[:2]
    _local(first).write_bytes(_local(second).read_bytes())
    proc = _verify(fleet["alpha"], "--json")
    assert proc.returncode == CODES["altered"]
    report = json.loads(proc.stdout)
    gamma = next(h for h in report["hosts"] if h["host"] == "gamma")
    assert [p["kind"] for p in gamma["problems"]] == ["altered"]


def _head_path(wh: Warehouse, host: str) -> Path:
    return _local(f"{wh.host_dir(host)}/head.json")


def test_a_replaced_head_is_refused(fleet: dict[str, WorkspaceDir]) -> None:
    wh = _wh(fleet["alpha"])
    path = _head_path(wh, "alpha")
    head = Head.parse(path.read_bytes(), "head")
    forged = Head({**head.body, "segments": head.segments[1:]}, head.sig)
    path.write_bytes(forged.to_bytes())
    proc = _verify(fleet["alpha"], "--host", "alpha")
    assert proc.returncode == CODES["bad-head"], proc.stdout
    assert "signature does not verify" in proc.stdout


def test_an_old_head_replayed_is_a_rollback(fleet: dict[str, WorkspaceDir]) -> None:
    beta = fleet["beta"]
    wh = _wh(beta)
    old = _head_path(wh, "beta").read_bytes()
    add_segment(beta)
    ship(beta)
    assert _verify(beta).returncode == 0  # pins record 3 for beta
    _head_path(wh, "beta").write_bytes(old)
    proc = _verify(beta, "--host", "beta")
    assert proc.returncode == CODES["rolled-back"], proc.stdout
    assert "old head replayed" in proc.stdout


def test_a_head_signed_by_another_key_is_reported(fleet: dict[str, WorkspaceDir]) -> None:
    gamma = fleet["gamma"]
    assert _verify(gamma).returncode == 0  # pins gamma's key
    wh = _wh(gamma)
    head = Head.parse(_head_path(wh, "gamma").read_bytes(), "head")
    body = {k: v for k, v in head.body.items() if k != "key"}
    _head_path(wh, "gamma").write_bytes(Head.sign(body, SigningKey.generate()).to_bytes())
    proc = _verify(gamma, "--host", "gamma")
    assert proc.returncode == CODES["key-changed"], proc.stdout
    assert "re-signed by another key" in proc.stdout or "not the pinned" in proc.stdout


def test_a_registered_file_the_head_does_not_name_is_extra(fleet: dict[str, WorkspaceDir]) -> None:
    from nerve.fleet.ship import _data_file
    from nerve.fleet.warehouse import prepare_transaction

    alpha = fleet["alpha"]
    wh = _wh(alpha)
    foreign = _files(wh, "beta")[0]
    uri = wh.segment_uri("alpha", segment_name(foreign))
    _local(uri).write_bytes(_local(foreign).read_bytes())
    with wh.table.transaction() as tx:
        prepare_transaction(tx)
        with tx.update_snapshot().fast_append() as append:
            append.append_data_file(_data_file(tx.table_metadata, uri, _local(foreign)))
    proc = _verify(alpha, "--host", "alpha")
    assert proc.returncode == CODES["extra"], proc.stdout


def test_a_signed_head_with_the_wrong_digest_is_caught(fleet: dict[str, WorkspaceDir]) -> None:
    from nerve.chain.keys import Keyring

    alpha = fleet["alpha"]
    wh = _wh(alpha)
    head = Head.parse(_head_path(wh, "alpha").read_bytes(), "head")
    body = {k: v for k, v in head.body.items() if k != "key"} | {"digest": "0" * 64}
    key = Keyring.open(alpha.data / "keys").signing_key()
    _head_path(wh, "alpha").write_bytes(Head.sign(body, key).to_bytes())
    proc = _verify(alpha, "--host", "alpha")
    assert proc.returncode == CODES["digest"], proc.stdout


def test_forget_and_compact_follow_into_the_table(fleet: dict[str, WorkspaceDir]) -> None:
    alpha = fleet["alpha"]
    wh = _wh(alpha)
    before = _files(wh, "alpha")
    run_cli("-w", str(alpha.root), "forget", "--kind", "secret")
    run_cli("-w", str(alpha.root), "compact")
    result = ship(alpha)
    assert result.removed == 3 and result.added == 1
    wh.refresh()
    after = _files(wh, "alpha")
    live = [s.name for s in read_manifest(alpha.log_root / "manifest.jsonl").segments()]
    assert [segment_name(f) for f in after] == live
    assert not any(_local(f).exists() for f in before)  # erased payloads do not linger
    assert _verify(alpha).returncode == 0
    sql = (
        "SELECT count(*) FILTER (WHERE erased) AS gone, count(*) AS n FROM fleet_events "
        "WHERE host = 'alpha' AND kind = 'secret'"
    )
    out = run_cli("-w", str(alpha.root), "fleet", "query", sql, "--json").stdout
    assert json.loads(out) == {"gone": 60, "n": 60}


KILL_SCRIPT = """
import sys
from pathlib import Path
from nerve.fleet.ship import ship
from nerve.workspace import WorkspaceDir
ship(WorkspaceDir.at(Path(sys.argv[1])))
"""


def test_sigkill_at_random_instants_registers_each_segment_once(tmp_path: Path) -> None:
    warehouse = (tmp_path / "warehouse").as_uri()
    ws = make_host(tmp_path / "delta", "delta", warehouse, rows=2000, ages_h=(5, 4, 3, 2, 1))
    run_cli("-w", str(ws.root), "fleet", "init", "--warehouse", warehouse)
    rng = random.Random(12)
    outcomes = []
    for round_ in range(8):
        if round_ % 2:
            add_segment(ws, rows=500)
        proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(ws.root)])
        time.sleep(rng.uniform(0.3, 3.0))  # import, catalog, upload, commit: anywhere
        proc.send_signal(signal.SIGKILL)
        outcomes.append(proc.wait())
    ship(ws)
    wh = _wh(ws)
    names = [segment_name(f.file_path) for f in wh.data_files()]
    live = [s.name for s in read_manifest(ws.log_root / "manifest.jsonl").segments()]
    assert sorted(names) == sorted(live)  # each once: no duplicate, none missing
    assert _verify(ws).returncode == 0
    assert -signal.SIGKILL in outcomes  # the kills landed (some ships may have finished)


def test_config_refuses_secrets_and_explains_a_missing_section(tmp_path: Path) -> None:
    ws = make_host(tmp_path / "eps", "eps", (tmp_path / "w").as_uri(), rows=5, ages_h=(1,))
    proc = run_cli("-w", str(ws.root), "fleet", "ship", check=False)
    assert proc.returncode == 2 and "no fleet table" in proc.stderr
    text = ws.config_path.read_text()
    ws.config_path.write_text(text + "  secret_access_key: abc\n")
    proc = run_cli("-w", str(ws.root), "validate", check=False)
    assert proc.returncode == 1
    assert "nerve.yaml:6:3" in proc.stdout + proc.stderr
    assert "credentials never go in nerve.yaml" in proc.stdout + proc.stderr
    ws.config_path.write_text("log:\n  durability: os\n")
    proc = run_cli("-w", str(ws.root), "fleet", "ship", check=False)
    assert proc.returncode == 2 and "no fleet section" in proc.stderr
    assert "nerve fleet init --warehouse" in proc.stderr


def test_init_writes_the_section_once(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    run_cli("init", str(root))
    before = (root / "nerve.yaml").read_text()
    run_cli("-w", str(root), "fleet", "init", "--warehouse", str(tmp_path / "w"), "--host", "h1")
    text = (root / "nerve.yaml").read_text()
    assert text.startswith(before) and "fleet:\n" in text
    run_cli("-w", str(root), "fleet", "init", "--warehouse", str(tmp_path / "w"), "--host", "h1")
    assert (root / "nerve.yaml").read_text() == text  # the same settings: nothing to add
    proc = run_cli(
        "-w", str(root), "fleet", "init", "--warehouse", str(tmp_path / "x"), check=False
    )
    assert proc.returncode == 2 and "already has a fleet section" in proc.stderr
    proc = run_cli(
        "-w", str(root), "fleet", "query", "SELECT count(*) AS n FROM fleet_events", "--json"
    )
    assert json.loads(proc.stdout) == {"n": 0}


def test_a_second_engine_reads_the_table(fleet: dict[str, WorkspaceDir]) -> None:
    """ClickHouse (chDB, embedded) reads the table from its Iceberg metadata alone; the host
    is the file path's. chDB reads files only under its working folder, hence the cwd."""
    wh = _wh(fleet["alpha"])
    location = _local(wh.location)
    sql = (
        "SELECT extract(_path, '/hosts/([^/]+)/') AS host, count() AS n, "
        f"countIf(kind = 'secret') AS secrets FROM icebergLocal('{location}') "
        "GROUP BY host ORDER BY host"
    )
    code = "import sys, chdb; print(chdb.query(sys.argv[1], 'CSV'))"
    proc = subprocess.run(
        [sys.executable, "-c", code, sql],
        cwd=location.parent.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert proc.stdout.strip().splitlines() == [f'"{h}",600,60' for h in HOSTS]


def test_the_head_body_is_canonical_and_signed_with_a_domain(
    fleet: dict[str, WorkspaceDir],
) -> None:
    from nacl.signing import VerifyKey

    from nerve.fleet.head import DOMAIN

    wh = _wh(fleet["alpha"])
    raw = json.loads(_head_path(wh, "alpha").read_bytes())
    body = canonical_json(raw["body"])
    VerifyKey(bytes.fromhex(raw["body"]["key"])).verify(DOMAIN + body, bytes.fromhex(raw["sig"]))
    assert raw["body"]["host"] == "alpha" and len(raw["body"]["segments"]) == 3


def test_the_daemon_ships_after_each_seal_when_auto(tmp_path: Path) -> None:
    from tests.daemon_util import started

    warehouse = (tmp_path / "warehouse").as_uri()
    ws = make_host(tmp_path / "zeta", "zeta", warehouse, rows=20, ages_h=(2,), ship="auto")
    run_cli(
        "-w",
        str(ws.root),
        "fleet",
        "init",
        "--warehouse",
        warehouse,
        "--host",
        "zeta",
        "--ship",
        "auto",
    )
    with started(ws.root) as daemon:
        wh = _wh(ws)

        def registered() -> list[str]:
            wh.refresh()
            return _files(wh, "zeta")

        assert len(daemon.wait_for(registered, 60, "the first ship")) == 1
        run_cli("-w", str(ws.root), "emit", "-s", "shell", "--line", "after start")
        run_cli("-w", str(ws.root), "seal")
        daemon.wait_for(lambda: len(registered()) == 2, 60, "a ship after the seal")
    log = (ws.data / "daemon.log").read_text()
    assert "fleet: shipped 1 segment(s)" in log
    assert _verify(ws).returncode == 0


def test_a_failing_ship_is_reported_and_retried_by_the_daemon(tmp_path: Path) -> None:
    from tests.daemon_util import started

    warehouse = (tmp_path / "warehouse").as_uri()
    ws = make_host(tmp_path / "eta", "eta", warehouse, rows=20, ages_h=(2,), ship="auto")
    with started(ws.root) as daemon:  # no table yet: every ship fails until init
        daemon.wait_for(
            lambda: "fleet ship failed" in (ws.data / "daemon.log").read_text(), 60, "a failure"
        )
        run_cli(
            "-w",
            str(ws.root),
            "fleet",
            "init",
            "--warehouse",
            warehouse,
            "--host",
            "eta",
            "--ship",
            "auto",
        )
        daemon.wait_for(
            lambda: "fleet ship succeeded after" in (ws.data / "daemon.log").read_text(),
            90,
            "the retry",
        )
    assert "no fleet table" in (ws.data / "daemon.log").read_text()


def test_without_the_fleet_extra_init_says_how_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    from nerve.errors import UsageError
    from nerve.fleet.setup import init_fleet
    from nerve.workspace import init_workspace

    ws = init_workspace(tmp_path / "ws")
    before = ws.config_path.read_bytes()
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "pyiceberg" else real(name, *a),
    )
    with pytest.raises(UsageError, match="needs pyiceberg") as caught:
        init_fleet(ws, {"warehouse": (tmp_path / "w").as_uri()})
    assert "pip install -e '.[fleet]'" in (caught.value.hint or "")
    assert ws.config_path.read_bytes() == before


def test_a_table_that_required_every_payload_cid_is_evolved_on_ship(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import blake3

    from nerve.fleet import warehouse
    from nerve.log.codec import ERASABLE_SCHEMA

    url = (tmp_path / "warehouse").as_uri()
    ws = make_host(tmp_path / "old", "old", url, rows=20, ages_h=(1,))
    cfg = ws.config.fleet
    assert cfg is not None
    with monkeypatch.context() as patch:  # the table as an earlier nerve made it
        patch.setattr(warehouse, "table_schema", lambda: ERASABLE_SCHEMA)
        patch.setitem(warehouse.TABLE_PROPERTIES, "nerve.format", "nerve-segment-v2")
        made = open_warehouse(resolve(cfg, ws.data), create=True)
    assert made.table.schema().find_field("payload_cid").required
    ship(ws)
    table = _wh(ws).table
    assert not table.schema().find_field("payload_cid").required
    assert table.properties["nerve.format"] == warehouse.FORMAT
    sql = "SELECT payload, payload_cid FROM fleet_events"
    out = run_cli("-w", str(ws.root), "fleet", "query", sql, "--json").stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 20
    assert all(
        bytes.fromhex(r["payload_cid"]) == blake3.blake3(bytes.fromhex(r["payload"])).digest()
        for r in rows
    )
    assert _verify(ws).returncode == 0


def test_a_load_of_an_unchanged_table_reuses_its_metadata(fleet: dict[str, WorkspaceDir]) -> None:
    """A metadata file never changes once written: a load that finds the table where this
    process last saw it parses nothing again, and one after a commit sees the commit."""
    wh = _wh(fleet["alpha"])
    seen = wh.table.metadata
    wh.refresh()
    assert wh.table.metadata is seen
    add_segment(fleet["beta"])
    assert ship(fleet["beta"]).added == 1  # through a warehouse of its own
    wh.refresh()
    assert wh.table.metadata is not seen
    assert wh.table.metadata.last_sequence_number == seen.last_sequence_number + 1
    assert len(_files(wh, "beta")) == 4


def test_a_new_segment_is_read_from_disk_once(
    fleet: dict[str, WorkspaceDir], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its bytes are checked, uploaded, compared with the read-back and parsed (v1 check,
    statistics, ids) in memory: no footer or column read of the file by path."""
    from nerve.log import segments

    gamma = fleet["gamma"]
    add_segment(gamma)
    new = read_manifest(gamma.log_root / "manifest.jsonl").segments()[-1].name
    opened: list[str] = []
    real = segments.read_segment

    def read_segment(path: Path, columns: list[str] | None = None) -> object:
        opened.append(path.stem)
        return real(path, columns)

    monkeypatch.setattr(segments, "read_segment", read_segment)
    monkeypatch.setattr(segments, "stored_v1", lambda path: opened.append(path.stem))
    assert ship(gamma).added == 1
    assert new not in opened and len(opened) == 3  # the registered ones: ids for the head
    assert _verify(gamma).returncode == 0

"""Every device's events seen, each with its device (issue 45 point 6): ``all_events`` in
``nerve query`` and ``nerve tail --all-devices`` over a workspace whose ``data/sync/peers``
holds a real peer log, stored the way the sync engine stores one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nerve.log.drafts import Draft
from nerve.log.reader import events_since
from nerve.log.store import EventLog
from nerve.sync.group import Group, Transport
from nerve.sync.ops import device_names
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli


def _own(ws: WorkspaceDir, line: str) -> None:
    with EventLog(ws.log_root, node="alpha") as log:
        log.append_drafts([Draft.of("observation", line=line)])


def _theirs(source: Path, line: str) -> None:
    with EventLog(source, node="beta") as log:
        log.append_drafts([Draft.of("observation", line=line)])


def _peer(ws: WorkspaceDir, source: Path, token: str, device: str) -> None:
    """The events of ``source`` into a peer log under ``data/sync/peers/<token>``, with the
    ``device.json`` the engine writes beside it."""
    root = ws.data / "sync" / "peers" / token / "log"
    root.parent.mkdir(parents=True, exist_ok=True)
    with EventLog(root, node="alpha") as peer:
        held = peer.newest
        peer.import_events([e for e in events_since(source) if e.hlc > held])
    node = "beta"
    text = json.dumps({"node": node, "device": device}, sort_keys=True)
    (root.parent / "device.json").write_text(text)


@pytest.fixture
def synced(tmp_path: Path) -> WorkspaceDir:
    """A device named ``laptop`` (node alpha) and one peer, ``desk`` (node beta): their
    events interleave in time (a1 b1 a2 b2 a3), and one of the peer's holds a secret."""
    ws = init_workspace(tmp_path / "alpha")
    (ws.root / "nerve.yaml").write_text("node: alpha\n")
    ws = WorkspaceDir.at(ws.root)
    Group.new("home", Transport("nats", "nats://x"), "laptop").save(ws.data / "sync")
    source = tmp_path / "beta-src"
    _own(ws, "a1 ls")
    _theirs(source, "b1 make")
    _own(ws, "a2 git status")
    _theirs(source, "b2 export TOKEN=ghp_" + "A" * 36)
    _own(ws, "a3 pytest")
    _peer(ws, source, "p0", "desk")
    assert device_names(ws) == {"alpha": "laptop", "beta": "desk"}  # what sync itself says
    return ws


def cli(ws: WorkspaceDir, *args: str) -> str:
    env = {**os.environ, "COLUMNS": "200"}
    return run_cli("--workspace", str(ws.root), *args, env=env).stdout


def query(ws: WorkspaceDir, sql: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in cli(ws, "query", "--json", sql).splitlines()]


def test_all_events_holds_every_device_s_events_each_with_its_device(
    synced: WorkspaceDir,
) -> None:
    sql = "SELECT device, node, line FROM all_events WHERE kind = 'observation' ORDER BY ts, node"
    found = query(synced, sql)
    assert [(r["device"], r["line"][:2]) for r in found] == [
        ("laptop", "a1"),
        ("desk", "b1"),
        ("laptop", "a2"),
        ("desk", "b2"),
        ("laptop", "a3"),
    ]
    own = query(synced, "SELECT count(*) AS n FROM events")
    every = query(synced, "SELECT count(*) AS n FROM all_events")
    peers = sum(1 for _ in events_since(synced.data / "sync" / "peers" / "p0" / "log"))
    assert every[0]["n"] == own[0]["n"] + peers  # events stays this device's own log


def test_an_unnamed_device_is_shown_by_its_node(synced: WorkspaceDir) -> None:
    (synced.data / "sync" / "peers" / "p0" / "device.json").unlink()
    group = json.loads((synced.data / "sync" / "group.json").read_text())
    (synced.data / "sync" / "group.json").write_text(json.dumps({**group, "device": ""}))
    sql = "SELECT DISTINCT device FROM all_events ORDER BY device"
    assert [r["device"] for r in query(synced, sql)] == [
        "alpha",
        "beta",
    ]


def test_all_events_is_there_without_peers_and_query_help_names_it(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "solo")
    with EventLog(ws.log_root, node="solo") as log:
        log.append_drafts([Draft.of("observation", line="x")])
    found = query(ws, "SELECT DISTINCT device FROM all_events")
    assert found == [{"device": "solo"}]
    assert "all_events" in cli(ws, "query", "--help")


def test_tail_all_devices_merges_in_log_order_with_each_device(synced: WorkspaceDir) -> None:
    out = cli(synced, "tail", "--all-devices")
    rows = [line.split("\t") for line in out.splitlines()]
    assert [(r[6], r[7][:2]) for r in rows] == [
        ("laptop", "a1"),
        ("desk", "b1"),
        ("laptop", "a2"),
        ("desk", "b2"),
        ("laptop", "a3"),
    ]
    assert "desk" not in cli(synced, "tail")  # without the flag: this device's log alone


def test_tail_device_keeps_one_device_and_n_counts_after_merging(synced: WorkspaceDir) -> None:
    lines = cli(synced, "tail", "--device", "desk").splitlines()
    assert [line.split("\t")[7][:2] for line in lines] == ["b1", "b2"]
    assert cli(synced, "tail", "--device", "nowhere") == ""
    last = cli(synced, "tail", "--all-devices", "-n", "2").splitlines()
    assert [line.split("\t")[7][:2] for line in last] == ["b2", "a3"]


def test_tail_json_and_csv_carry_the_device(synced: WorkspaceDir) -> None:
    events = [json.loads(x) for x in cli(synced, "tail", "--all-devices", "--json").splitlines()]
    shown = [(e["device"], e["line"][:2]) for e in events if e["kind"] == "observation"]
    assert shown == [("laptop", "a1"), ("desk", "b1"), ("laptop", "a2"), ("desk", "b2"),
                     ("laptop", "a3")]  # fmt: skip
    assert all(list(e) == sorted(e) for e in events)  # still sorted keys
    header = cli(synced, "tail", "--device", "laptop", "--csv").splitlines()[0]
    assert header == "time,source,kind,subject,trust,node,device,line"


def test_an_agent_s_sql_sees_peer_rows_screened_as_its_own(synced: WorkspaceDir) -> None:
    import nerve
    from nerve.errors import NerveError
    from nerve.mcp import tools
    from nerve.mcp.budgets import Allowance
    from nerve.privacy.screen import Screen

    ws = nerve.open(synced.root)
    call = tools.Call(ws, Screen(ws.settings.config.privacy), Allowance(500, 1 << 20), 5_000)
    sql = "SELECT device, line FROM all_events WHERE kind = 'observation' ORDER BY ts"
    lines = [tuple(r) for r in tools.query(call, sql).rows]
    assert lines[3] == ("desk", "b2 export TOKEN=[redacted:github-token]")
    assert [r[0] for r in lines] == ["laptop", "desk", "laptop", "desk", "laptop"]
    for raw in (
        "SELECT * FROM _peer_tail_0",
        "SELECT string_agg(reverse(line), '') FROM all_events",
    ):
        try:
            shown = str(tools.query(call, raw).model_dump())
        except NerveError as exc:
            shown = str(exc)
        assert "A" * 36 not in shown and ("A" * 36)[::-1] not in shown


def test_following_every_device_gives_a_peer_s_late_events_older_than_this_log_s_newest(
    synced: WorkspaceDir, tmp_path: Path
) -> None:
    from nerve.tail import Batch, follow_devices, read_devices, tail_filter

    source = tmp_path / "beta-src"
    _theirs(source, "b3 stamped before a4, synced after it")
    _own(synced, "a4 cargo test")
    filt = tail_filter([], [], all_kinds=False)
    tail = read_devices(synced, count=None, filt=filt)
    assert [x[:2] for x in tail.batch.columns()["line"]] == ["a1", "b1", "a2", "b2", "a3", "a4"]
    more = follow_devices(synced, filt=filt, cursors=tail.cursors, poll_s=0.02, stop_after_s=30)
    _peer(synced, source, "p0", "desk")  # b3 arrives now, older than a4
    late = next(more, None)
    assert late is not None, "b3 was not given"
    assert (late.devices, [x[:2] for x in late.columns()["line"]]) == (["desk"], ["b3"])
    _own(synced, "a5 make")
    assert next(more, Batch()).devices == ["laptop"]

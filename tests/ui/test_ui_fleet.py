"""`nerve ui` in a fleet, in process: the host filter on the events and timeline pages reads
that host's shipped segments (this host's own: its log), privacy rules apply to them too, and
the health page shows each host's lag and last verify."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

import nerve
from nerve import api
from nerve.fleet.ship import ship
from nerve.ui.app import build_app
from nerve.ui.auth import Keys, token_path
from nerve.ui.guard import Served
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.helpers.browser import login_path
from tests.helpers.fleet import fleet_yaml, make_host

BASE = "http://127.0.0.1:8765"
ROWS = 40


def _door(ws: Any) -> api.Workspace:
    """The front door over a workspace the test made as a folder."""
    return nerve.open(ws.root)


@pytest.fixture(scope="module")
def alpha(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkspaceDir]:
    root = tmp_path_factory.mktemp("uifleet")
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(root / "state"))
    warehouse = (root / "warehouse").as_uri()
    hosts = {h: make_host(root / h, h, warehouse, rows=ROWS) for h in ("alpha", "beta")}
    run_cli("-w", str(hosts["alpha"].root), "fleet", "init", "--warehouse", warehouse)
    for ws in hosts.values():
        ship(ws)
    yield hosts["alpha"]
    mp.undo()


def client(ws: WorkspaceDir) -> TestClient:
    c = TestClient(
        build_app(_door(ws), Keys(token_path(_door(ws))), Served("127.0.0.1", 8765)),
        base_url=BASE,
    )
    assert c.get(login_path(_door(ws)), follow_redirects=False).status_code == 303
    return c


def as_json(c: TestClient, path: str) -> Any:
    r = c.get(path, headers={"accept": "application/json"})
    assert r.status_code == 200, r.text
    return r.json()


def test_the_host_filter_reads_that_hosts_shipped_events(alpha: WorkspaceDir) -> None:
    c = client(alpha)
    mine = as_json(c, "/events?since=3d&all=1&size=500")
    assert mine["hosts"] == ["alpha", "beta"] and mine["host"] == ""
    assert {e["line"].split()[0] for e in mine["events"]} == {"alpha"}
    beta = as_json(c, "/events?since=3d&all=1&size=500&host=beta")
    assert beta["host"] == "beta" and beta["total"] == 2 * ROWS  # two of its segments reach 3d
    assert {e["line"].split()[0] for e in beta["events"]} == {"beta"}
    found = as_json(c, "/events?since=3d&host=beta&text=beta+event+7")
    assert [e["line"] for e in found["events"]] == ["beta event 7"] * 2
    one = found["events"][0]
    page = c.get(f"/events/{one['id']}?host=beta")
    assert page.status_code == 200 and "beta event 7" in page.text
    assert c.get(f"/events/{one['id']}").status_code == 404  # not in this host's log
    html = c.get("/events?since=3d&host=beta").text
    assert '<option value="beta" selected>' in html and f"/events/{one['id']}?host=beta" in html
    assert as_json(c, "/events?since=3d&all=1&size=500&host=alpha")["total"] == mine["total"]
    r = c.get("/events?host=nosuch", headers={"accept": "application/json"})
    assert r.status_code == 400 and "no host 'nosuch'" in r.json()["message"]


def test_the_timeline_counts_the_chosen_host(alpha: WorkspaceDir) -> None:
    c = client(alpha)
    beta = as_json(c, "/timeline/counts?since=3d&host=beta")
    assert sum(beta["counts"]) == 2 * ROWS and beta["host"] == "beta"
    assert {e["line"].split()[0] for e in beta["events"]} == {"beta"}
    page = c.get("/timeline/counts?since=3d&host=beta").text
    assert "host=beta" in page  # zoom and links keep the host


def test_privacy_rules_apply_to_other_hosts_rows(alpha: WorkspaceDir) -> None:
    c = client(alpha)
    yaml = alpha.root / "nerve.yaml"
    before = yaml.read_text()
    warehouse = (alpha.root.parent / "warehouse").as_uri()
    yaml.write_text(
        fleet_yaml("alpha", warehouse)
        + "privacy:\n  rules:\n    - {name: codename, regex: 'beta event 7\\b'}\n"
    )
    try:
        span = as_json(c, "/events?since=3d&size=1")["window"]
        span_q = f"since={span['since_ns']}&until={span['until_ns']}"
        hidden = as_json(c, f"/events?{span_q}&host=beta&text=beta+event+7")
        absent = as_json(c, f"/events?{span_q}&host=beta&text=zeta+event+7")
        assert hidden == absent and hidden["total"] == 0
        assert (
            sum(as_json(c, f"/timeline/counts?{span_q}&host=beta")["counts"]) == 2 * ROWS
        )  # counted once
        assert "beta event 7<" not in c.get("/events?since=3d&host=beta&size=500").text
    finally:
        yaml.write_text(before)


def test_health_shows_each_hosts_ship_lag_and_verify(alpha: WorkspaceDir) -> None:
    c = client(alpha)
    assert run_cli("-w", str(alpha.root), "fleet", "verify", check=False).returncode == 0
    rows = {h["host"]: h for h in as_json(c, "/health")["fleet"]}
    assert set(rows) == {"alpha", "beta"}
    for host in ("alpha", "beta"):
        assert rows[host]["files"] == 3 and rows[host]["last_ship"]
        assert rows[host]["verify"]["ok"] is True
    assert rows["alpha"]["behind_segments"] == 0
    html = c.get("/health").text
    assert 'id="fleet"' in html and "beta" in html and "ok" in html

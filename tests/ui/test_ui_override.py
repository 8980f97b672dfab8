"""A held run overridden from `nerve ui`'s page, in process against a real daemon: a POST
with the session's CSRF value and an explicit confirmation, recorded as the CLI records it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

import nerve
from nerve import api
from nerve.ui.app import build_app
from nerve.ui.auth import Keys, token_path
from nerve.ui.data import OVERRIDE_WHERE
from nerve.ui.guard import Served
from nerve.workspace import WorkspaceDir
from tests.helpers.browser import login_path
from tests.helpers.held import held_run
from tests.helpers.workflows import Flows

BASE = "http://127.0.0.1:8765"


def _door(ws: Any) -> api.Workspace:
    """The front door over a workspace the test made as a folder."""
    return nerve.open(ws.root)


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Flows, str, TestClient]]:
    root = tmp_path_factory.mktemp("override")
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(root / "state"))
    try:
        with held_run(root / "ws") as (daemon, run):
            ws = _door(WorkspaceDir(root / "ws"))
            app = build_app(ws, Keys(token_path(ws)), Served("127.0.0.1", 8765))
            c = TestClient(app, base_url=BASE)
            assert c.get(login_path(ws), follow_redirects=False).status_code == 303
            yield daemon, run, c
    finally:
        mp.undo()


def csrf(c: TestClient) -> str:
    page = c.get("/senses").text
    marker = 'name="csrf-token" content="'
    start = page.index(marker) + len(marker)
    return page[start : page.index('"', start)]


def test_a_held_run_is_overridden_from_the_page_and_recorded(
    held: tuple[Flows, str, TestClient],
) -> None:
    daemon, run, c = held
    page = c.get("/senses").text
    assert 'action="/do/override"' in page and f'value="{run}"' in page
    token_ = csrf(c)
    refused = [
        ({"run": run, "reason": "ship it", "confirm": "yes"}, 403),  # no CSRF value
        ({"csrf": token_, "run": run, "reason": "ship it"}, 400),  # not confirmed
        ({"csrf": token_, "run": run, "reason": " ", "confirm": "yes"}, 400),  # no reason
        ({"csrf": "x" * 20, "run": run, "reason": "ship it", "confirm": "yes"}, 403),
    ]
    for form, status in refused:
        assert c.post("/do/override", data=form).status_code == status, form
    evil = {"origin": "http://evil.example"}
    form = {"csrf": token_, "run": run, "reason": "ship it", "confirm": "yes"}
    assert c.post("/do/override", data=form, headers=evil).status_code == 403
    assert daemon.status(run) == "held" and not daemon.events("workflow.override", run)
    r = c.post("/do/override", data=form, headers={"accept": "application/json"})
    assert r.status_code == 200 and r.json()["status"] == "completed", r.text
    daemon.wait_status(run, "completed")
    record = daemon.events("workflow.override", run)[0]["data"]
    assert (record["checks"], record["reason"], record["tty"]) == (
        ["sections"],
        "ship it",
        OVERRIDE_WHERE,
    )
    assert record["by"] and record["reasons"][0]["reason"] == "failed"
    assert daemon.events("workflow.status", run)[-1]["data"]["overridden"] is True
    again = c.post("/do/override", data=form, headers={"accept": "application/json"})
    assert again.status_code == 400 and "held" in again.json()["message"]

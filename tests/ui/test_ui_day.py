"""The day at a glance (``/``) in process, on the generated workday (tests/helpers/workday.py):
time per app, window title and category with time away apart, the commands, the gate's
decisions; the totals equal the SQL over ``focus_spells`` and ``nerve ask``, on it and on the
recorded real day (tests/helpers/day.py), where they also match what the person did; category
rules edited through the page change the page and ``nerve query``."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from nerve.recall.asking import ask
from nerve.recall.day import time_per_sql
from nerve.recall.facts.activity import _duration
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli
from tests.helpers import workday
from tests.helpers.day import Day
from tests.helpers.uiclient import as_json, logged_in

DAY = "/?day=2026-05-06"
MIN = 60 * 10**9
# the workday's spells on 2026-05-06: xterm 09:00-09:40 and 15:21-15:30 (now), firefox
# 09:40-10:00 and 10:30-14:00 (away 10:00-10:30), code 14:00-15:21
APPS = {"firefox": 230 * MIN, "code": 81 * MIN, "xterm": 49 * MIN}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkspaceDir]:
    root = tmp_path_factory.mktemp("uiday")
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(root / "state"))
    mp.setenv("TZ", "UTC")
    time.tzset()
    mp.setattr("time.time_ns", lambda: workday.NOW)
    yield workday.record(init_workspace(root / "ws"))
    mp.undo()
    time.tzset()


def client(ws: WorkspaceDir) -> TestClient:
    return logged_in(ws.root)


def visible(html: str) -> str:
    """The page's text as a person sees it (tags, attributes and the head left out)."""
    body = html[html.index("<body>") :]
    return re.sub(r"<[^>]+>", " ", body)


def test_the_day_shows_time_per_app_title_and_away(ws: WorkspaceDir) -> None:
    c = client(ws)
    day = as_json(c, DAY)
    assert {a["app"]: a["ns"] for a in day["apps"]} == APPS
    assert day["away_ns"] == 30 * MIN and day["active_ns"] == sum(APPS.values())
    titles = {(t["app"], t["title"]): t["ns"] for t in day["titles"]}
    assert titles[("code", "main.py — x")] == 75 * MIN
    assert [f["command"] for f in day["failed"]] == ["false", "cargo build", "make test"]
    assert {f["folder"] for f in day["folders"]} == {"/home/u", "/home/u/src/x", "/home/u/src/y"}
    assert [d["outcome"] for d in day["decisions"]] == ["hold:value", "surface"]
    assert day["decisions"][1]["why"].startswith("surfaced: its value 0.9 beat")
    text = visible(c.get(DAY).text)
    for shown in ("firefox", "3 h 50 min", "Docs — Mozilla Firefox", "1 h 21 min", "30 min"):
        assert shown in text, shown
    assert "cargo build" in text and "exit 101" in text and "15:26" in text
    assert not re.search(r"\d{19}|\d{2}:\d{2}:\d{2}\.\d{6}", text)  # no HLC, no ISO µs
    link = re.search(r'href="(/timeline\?[^"]+)">timeline<', c.get(DAY).text)
    assert link and "since=2026-05-06%2000%3A00&amp;until=2026-05-07%2000%3A00" in link.group(1)


def test_the_default_day_is_the_last_with_events_and_a_week_reaches_back(
    ws: WorkspaceDir,
) -> None:
    c = client(ws)
    assert as_json(c, "/")["day"] == "2026-05-06"
    week = as_json(c, "/?day=2026-05-06&span=week")
    assert {a["app"]: a["ns"] for a in week["apps"]}["code"] == APPS["code"] + 60 * MIN
    yesterday = as_json(c, "/?day=2026-05-05")
    assert yesterday["apps"] == [{"app": "code", "ns": 60 * MIN}]
    r = c.get("/?day=yesterdayish")
    assert r.status_code == 400 and "yesterdayish&#39; is not a date like" in r.text


def test_totals_equal_the_sql_and_ask(ws: WorkspaceDir) -> None:
    day = as_json(client(ws), DAY)
    sql = time_per_sql("app")
    for name, value in (("$since", workday.at("00:00")), ("$until", workday.at("00:00", 7))):
        sql = sql.replace(name, str(value))
    sql = sql.replace("$now", str(workday.NOW))
    out = run_cli("--workspace", str(ws.root), "query", sql, "--json").stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert {r["app"]: r["ns"] for r in rows} == {a["app"]: a["ns"] for a in day["apps"]}
    said = ask(ws, "time per app today", record=False, now_ns=workday.NOW, tz=UTC).text
    lines = [f"- {a['app']}: {_duration(a['ns'])}" for a in day["apps"]]
    assert said.splitlines()[1:] == lines, said


def test_the_recorded_days_totals_equal_the_sql_ask_and_what_was_done(
    recorded_day_copy: Day, monkeypatch: pytest.MonkeyPatch
) -> None:
    day = recorded_day_copy
    monkeypatch.setenv("XDG_STATE_HOME", str(day.root.parent / "state"))
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    monkeypatch.setattr("time.time_ns", lambda: day.now_ns)
    try:
        apps = {a["app"]: a["ns"] for a in as_json(logged_in(day.root), "/?day=2026-12-05")["apps"]}
        midnight = int(datetime(2026, 12, 5, tzinfo=UTC).timestamp()) * 10**9
        args = {"$since": midnight, "$until": midnight + 86_400 * 10**9, "$now": day.now_ns}
        sql = time_per_sql("app")
        for name, value in args.items():
            sql = sql.replace(name, str(value))
        out = run_cli("--workspace", str(day.root), "query", sql, "--json").stdout
        said = ask(
            WorkspaceDir(day.root), "time per app today", record=False, now_ns=day.now_ns, tz=UTC
        )
    finally:
        monkeypatch.undo()
        time.tzset()
    assert {r["app"]: r["ns"] for r in map(json.loads, out.splitlines())} == apps
    assert said.text.splitlines()[1:] == [f"- {a}: {_duration(ns)}" for a, ns in apps.items()]
    done = _focused_not_idle(day.plan)
    assert apps.keys() == done.keys() == {"XTerm", "Vim", "Firefox"}
    for app, ns in apps.items():  # the focus and idle senses sample: a few seconds either way
        assert abs(ns - done[app]) < 10 * 10**9, (app, ns, done[app])


def _focused_not_idle(plan: dict[str, Any]) -> dict[str, int]:
    """Per app, the ns its windows had focus in the plan, less the time the person was idle."""
    idle = [(i["last_input"]["ns"], i["input_again"]["ns"]) for i in plan["idle"]]
    out: dict[str, int] = {}
    for f in plan["focus"]:
        lo, hi = f["start"]["ns"], f["end"]["ns"]
        away = sum(max(0, min(hi, b) - max(lo, a)) for a, b in idle)
        out[f["app"]] = out.get(f["app"], 0) + hi - lo - away
    return out


def _csrf(c: TestClient) -> str:
    page = c.get(DAY).text
    marker = 'name="csrf-token" content="'
    start = page.index(marker) + len(marker)
    return page[start : page.index('"', start)]


def test_category_rules_edited_on_the_page_change_the_day_and_nerve_query(
    ws: WorkspaceDir,
) -> None:
    c = client(ws)
    form = {"name": ["Work > Code", "Work > Terminal", "Reading"], "app": ["code", "xterm", ""]}
    form["title"] = ["", "", "firefox"]
    assert c.post("/do/categories", data=form).status_code == 403  # no CSRF value: refused
    r = c.post("/do/categories", data={**form, "csrf": _csrf(c)}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/#categories"
    cats = {x["category"]: x["ns"] for x in as_json(c, DAY)["categories"]}
    assert cats["Work"] == APPS["code"] + APPS["xterm"] and cats["Reading"] == APPS["firefox"]
    assert cats["Work > Code"] == APPS["code"]
    assert (
        "categories:" in ws.config_path.read_text()
        and "Work > Terminal" in ws.config_path.read_text()
    )
    out = run_cli(
        "--workspace", str(ws.root), "query", "--json",
        "SELECT DISTINCT app, category FROM focus_spells WHERE NOT afk ORDER BY app",
    ).stdout  # fmt: skip
    assert "Work > Code" in out and "Reading" in out
    kinds = run_cli(
        "--workspace", str(ws.root), "query",
        "SELECT count(*) AS n FROM events WHERE kind = 'categories.set'",
    ).stdout  # fmt: skip
    assert "1" in kinds
    bad = {"name": ["Broken"], "app": ["(unclosed"], "title": [""], "csrf": _csrf(c)}
    r = c.post("/do/categories", data=bad)
    assert r.status_code == 400 and 'id="rules-error"' in r.text
    assert 'value="(unclosed"' in r.text and "<nav>" in r.text  # kept what was typed
    assert (
        "Work &gt; Code" in ws.config_path.read_text()
        or "Work > Code" in ws.config_path.read_text()
    )


def test_a_day_without_focus_says_so_instead_of_zero_seconds(tmp_path: Path) -> None:
    """On a machine with no display (a fresh checkout's `nerve dev` on a server) the day has
    no focused window: no "0 s in focus · 0 s away" as if that had been measured."""
    root = init_workspace(tmp_path / "ws").root
    run_cli("-w", str(root), "emit", "-q", "--source", "shell", "--line", "make")
    shown = " ".join(visible(logged_in(root).get("/").text).split())
    assert "in focus ·" not in shown and "0 s away" not in shown, shown[:600]
    assert "No focused windows were recorded then, so no time in focus or away" in shown


def test_an_unknown_address_gets_a_styled_page_with_the_navigation(ws: WorkspaceDir) -> None:
    r = client(ws).get("/no/such/page")
    assert r.status_code == 404 and "<nav>" in r.text and "/static/app.css" in r.text
    assert "no page at /no/such/page" in r.text


def test_a_zoomed_timeline_keeps_human_times_in_its_form(ws: WorkspaceDir) -> None:
    since, until = workday.at("14:00"), workday.at("15:00")
    page = client(ws).get(f"/timeline/counts?since={since}&until={until}").text
    assert 'name="since" value="2026-05-06 14:00:00"' in page
    assert 'name="until" value="2026-05-06 15:00:00"' in page

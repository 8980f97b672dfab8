"""`nerve ui` in process: every page and its JSON twin through an ASGI client, against a real
log with attention decisions sealed in the chain."""

from __future__ import annotations

import csv
import io
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

import nerve
from nerve import api, logops
from nerve.attention.reason import thousandths
from nerve.events import BOOKKEEPING_KINDS
from nerve.log.drafts import Draft
from nerve.log.reader import replay_digest
from nerve.ui.app import build_app
from nerve.ui.auth import Keys, cookie_name, token_path
from nerve.ui.clock import moment_after
from nerve.ui.guard import Served
from nerve.workspace import WorkspaceDir
from tests.helpers.browser import attended_workspace, login_path

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"
PAGES = ["/", "/?span=week", "/timeline", "/timeline?since=1h", "/timeline/counts",
         "/events", "/live", "/sql",
         "/attention", "/senses", "/privacy", "/health"]  # fmt: skip


def _door(ws: Any) -> api.Workspace:
    """The front door over a workspace the test made as a folder."""
    return nerve.open(ws.root)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkspaceDir]:
    root = tmp_path_factory.mktemp("ui")
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(root / "state"))
    ws = attended_workspace(root / "ws")
    logops.emit(ws, [Draft.of(source=5, line="deploy finished: exit 0", payload={"cmd": "deploy"})])
    yield ws
    mp.undo()


def client(ws: WorkspaceDir) -> TestClient:
    """A client logged in through the login URL, as a browser would be."""
    app = build_app(_door(ws), Keys(token_path(_door(ws))), Served("127.0.0.1", PORT))
    c = TestClient(app, base_url=BASE)
    r = c.get(login_path(_door(ws)), follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/"
    return c


def as_json(c: TestClient, path: str, **kw: Any) -> Any:
    r = c.get(path, headers={"accept": "application/json"}, **kw)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    return r.json()


@pytest.mark.parametrize("path", PAGES)
def test_every_page_answers_html_and_its_json_twin(ws: WorkspaceDir, path: str) -> None:
    c = client(ws)
    page = c.get(path)
    assert page.status_code == 200, page.text
    assert page.headers["content-type"].startswith("text/html")
    assert "<nav>" in page.text and "Content-Security-Policy" not in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert isinstance(as_json(c, path), dict)


def test_timeline_aggregates_the_day_on_the_server(ws: WorkspaceDir) -> None:
    data = as_json(client(ws), "/timeline/counts?since=1h&buckets=48")
    assert len(data["counts"]) == 48
    digest = replay_digest(ws.log_root)
    assert sum(data["counts"]) == digest.events  # every event of the log is in the hour
    sources = {lane["source"] for lane in data["lanes"] if not lane["subject"]}
    assert {"shell", "endpoint", "app_focus"} <= sources
    outcomes = {m["outcome"] for m in data["decisions"]}
    assert "surface" in outcomes and {"hold:value", "hold:budget"} & outcomes
    assert len(data["events"]) == 50  # a table twin of the newest in view, never the log
    w = data["window"]
    conn = ws.connect()
    try:
        newest = conn.execute(
            "SELECT id FROM events WHERE physical_ns >= ? AND physical_ns < ? AND kind NOT IN "
            "(SELECT unnest(?::VARCHAR[])) ORDER BY physical_ns DESC, logical DESC LIMIT 50",
            [w["since_ns"], w["until_ns"], sorted(BOOKKEEPING_KINDS)],
        ).fetchall()
    finally:
        conn.close()
    assert [e["id"] for e in data["events"]] == [bytes(r[0]).hex() for r in newest]


def test_timeline_shades_a_pause(ws: WorkspaceDir) -> None:
    c = client(ws)
    c.post("/do/pause", data={"csrf": _csrf(c)})
    try:
        view = as_json(c, "/timeline/counts?since=1h")
        assert view["paused"] and view["paused"][-1]["to"] == view["window"]["until_ns"]
        assert as_json(c, "/privacy")["capture"]["paused"] is True
        page = c.get("/privacy").text  # only the action that applies is offered
        assert 'id="resume"' in page and 'id="pause"' not in page
    finally:
        c.post("/do/resume", data={"csrf": _csrf(c)})
    assert as_json(c, "/privacy")["capture"]["paused"] is False
    page = c.get("/privacy").text
    assert 'id="pause"' in page and 'id="resume"' not in page


def test_an_events_window_over_days_gives_the_day_of_both_ends(ws: WorkspaceDir) -> None:
    c = client(ws)
    page = c.get("/events?since=7d").text
    title = re.sub(r"<[^>]+>", "", page.split("<h1>", 1)[1].split("</h1>", 1)[0])
    days = re.findall(r"\d\d [A-Z][a-z]{2} \d\d:\d\d:\d\d", title)
    assert len(days) == 2 and days[0] != days[1], title
    noon = int(time.mktime((2026, 12, 7, 12, 0, 0, 0, 0, -1))) * 10**9
    assert moment_after(noon, noon - 60 * 10**9, now_ns=noon) == "12:00:00"  # one day: times


@pytest.mark.parametrize("path", ["/events?since=1h", "/live"])
def test_the_line_column_keeps_its_header_on_a_phone(ws: WorkspaceDir, path: str) -> None:
    """A phone hides the fourth column on, but the line (app.css keys on ``.line``): its
    header must carry the class its cells do, or the column shows with no name."""
    head = client(ws).get(path).text.split("<thead>", 1)[1].split("</thead>", 1)[0]
    assert '<th class="line">line</th>' in head, head


def test_events_search_filters_and_highlights(ws: WorkspaceDir) -> None:
    c = client(ws)
    data = as_json(c, "/events?text=deploy&since=1h")
    assert [e["line"] for e in data["events"]] == ["deploy finished: exit 0"]
    page = c.get("/events?text=deploy&since=1h").text
    assert "<mark>deploy</mark> finished" in page
    shells = as_json(c, "/events?source=shell&since=1h&size=5")
    assert len(shells["events"]) == 5 and shells["more"]
    assert {e["source"] for e in shells["events"]} == {"shell"}
    untrusted = as_json(c, "/events?trust=Untrusted&since=1h")
    assert untrusted["events"] and {e["trust"] for e in untrusted["events"]} == {"Untrusted"}


def test_events_page_through_and_download(ws: WorkspaceDir) -> None:
    c = client(ws)
    first = as_json(c, "/events?source=shell&since=1h&size=10")
    second = as_json(c, "/events?source=shell&since=1h&size=10&page=1")
    assert not {e["id"] for e in first["events"]} & {e["id"] for e in second["events"]}
    r = c.get("/events?source=shell&since=1h&size=10&format=csv")
    assert r.headers["content-disposition"].startswith("attachment")
    rows = list(csv.reader(io.StringIO(r.text)))
    assert rows[0][:3] == ["time", "hlc", "id"] and len(rows) == 11
    assert [row[2] for row in rows[1:]] == [e["id"] for e in first["events"]]


def test_event_permalink_shows_context(ws: WorkspaceDir) -> None:
    c = client(ws)
    target = as_json(c, "/events?source=shell&since=1h&size=20")["events"][10]
    ctx = as_json(c, f"/events/{target['id']}")
    assert ctx["event"]["id"] == target["id"]
    assert ctx["before"] and ctx["after"]
    assert ctx["before"][-1]["hlc"] < target["hlc"] < ctx["after"][0]["hlc"]
    assert c.get("/events/00ff").status_code == 404
    assert c.get("/events/not-hex").status_code == 404


def test_sql_runs_in_the_sandbox_and_downloads_csv(ws: WorkspaceDir) -> None:
    c = client(ws)
    q = "SELECT source_name, count(*) AS n FROM events GROUP BY ALL ORDER BY n DESC"
    data = as_json(c, "/sql", params={"q": q})
    assert data["columns"] == ["source_name", "n"] and data["rows"][0][0] == "shell"
    r = c.get("/sql", params={"q": q, "format": "csv"})
    assert r.text.splitlines()[0] == "source_name,n"
    assert 'id="chart"' in c.get("/sql", params={"q": q}).text


def test_attention_lists_decisions_and_the_chain_verifies(ws: WorkspaceDir) -> None:
    c = client(ws)
    data = as_json(c, "/attention")
    assert data["chain"]["ok"] is True and data["chain"]["links"] > 0
    held = [d for d in data["decisions"] if str(d["outcome"]).startswith("hold:")]
    assert held and all(d["why"].startswith("held") for d in held)
    one = as_json(c, f"/attention/{held[0]['chain_seq']}")
    link = one["link"]
    assert link["verified_through_here"] is True
    assert {"seq", "prev", "sig", "id"} <= set(link) or {"seq", "prev", "id"} <= set(link)
    assert one["led_to_it"]["event"]["id"] == held[0]["source_event"]
    assert "verifies" in c.get(f"/attention/{held[0]['chain_seq']}").text
    assert c.get("/attention/99999").status_code == 404


def test_attention_says_value_and_budget_as_the_why_does(ws: WorkspaceDir) -> None:
    """A value as the why says it (1, not 1000 thousandths), a budget grouped (1,000,000)."""
    c = client(ws)
    decisions = as_json(c, "/attention")["decisions"]
    page = c.get("/attention").text
    cells = re.findall(r'<td class="value">([^<]*)</td>', page)
    budgets = re.findall(r'<td class="budget">([^<]*)</td>', page)
    assert cells == [thousandths(d["value_milli"]) for d in decisions], cells
    big = [b for b in budgets if len(b.split(" → ")[0]) > 3]
    assert big and all("," in b for b in big), budgets


def test_senses_health_and_access_without_a_daemon(ws: WorkspaceDir) -> None:
    c = client(ws)
    assert as_json(c, "/senses")["daemon"] is False
    health = as_json(c, "/health?verify=1")
    assert health["daemon"]["running"] is False
    assert health["replay"]["ok"] is True
    assert health["replay"]["digest"] == replay_digest(ws.log_root).digest
    assert as_json(c, "/privacy")["records"] == []


def test_forget_previews_then_erases(ws: WorkspaceDir) -> None:
    c = client(ws)
    logops.emit(ws, [Draft.of(source=5, line="secret plan alpha", payload={"x": 1})])
    form = {"csrf": _csrf(c), "match": "secret plan alpha", "reason": "test"}
    preview = c.post("/do/forget", data=form, headers={"accept": "application/json"}).json()
    assert preview["dry_run"] is True and preview["erased"] == 1
    assert as_json(c, "/events?text=secret+plan&since=1h")["events"]  # nothing changed yet
    page = c.post("/do/forget", data=form).text
    assert 'id="forget-confirm"' in page and 'value="yes"' in page
    done = c.post(
        "/do/forget", data={**form, "confirm": "yes"}, headers={"accept": "application/json"}
    )
    assert done.json()["dry_run"] is False and done.json()["erased"] == 1
    assert not as_json(c, "/events?text=secret+plan&since=1h")["events"]
    assert not logops.replay(ws, full=True).problems  # verify tells the erasure from tampering
    erased = as_json(c, "/events?kind=observation&since=1h&size=500")["events"]
    assert any(e["erased"] and e["line"] == "[erased]" for e in erased)


def test_live_stream_sends_new_events_once(ws: WorkspaceDir) -> None:
    from nerve.ui import data

    f = data.Filters()
    first, cursor = data.live_batch(_door(ws), f, None)
    assert len(first) <= data.LIVE_BACKLOG_ROWS and cursor is not None
    logops.emit(ws, [Draft.of(source=5, line=f"live {i}", payload={}) for i in range(3)])
    rows, cursor2 = data.live_batch(_door(ws), f, cursor)
    assert [r["line"] for r in rows] == ["live 0", "live 1", "live 2"]
    again, cursor3 = data.live_batch(_door(ws), f, cursor2)
    assert again == [] and cursor3 == cursor2
    hidden = data.Filters(sources=("endpoint",))
    logops.emit(ws, [Draft.of(source=5, line="not endpoint", payload={})])
    rows, cursor4 = data.live_batch(_door(ws), hidden, cursor3)
    assert rows == [] and cursor4 != cursor3  # the cursor moves past what the filter hides


def test_a_live_tail_opens_on_the_last_minutes_not_on_nothing(tmp_path: Path) -> None:
    import time

    from nerve.clock import Hlc
    from nerve.events import Event, Trust
    from nerve.ui import data
    from nerve.workspace import init_workspace

    ws = init_workspace(tmp_path / "ws")
    hour_ago = time.time_ns() - 3600 * 10**9
    old = [
        Event(hlc=Hlc(hour_ago + i, 0), node="n", kind="observation", source=5,
              trust=Trust.FIRST_PARTY, line=f"old {i}", payload={})
        for i in range(3)
    ]  # fmt: skip
    with ws.open_log() as log:  # stamped an hour ago: outside the opening minutes
        log.import_events(old)
    logops.emit(ws, [Draft.of(source=5, line=f"new {i}", payload={}) for i in range(60)])
    first, cursor = data.live_batch(_door(ws), data.Filters(), None)
    lines = [r["line"] for r in first]
    assert lines == [f"new {i}" for i in range(10, 60)]  # the newest fifty, oldest first
    assert cursor is not None and not data.live_batch(_door(ws), data.Filters(), cursor)[0]
    hidden, _ = data.live_batch(_door(ws), data.Filters(sources=("endpoint",)), None)
    assert hidden == []


def test_live_stream_endpoint_speaks_sse(ws: WorkspaceDir) -> None:
    c = client(ws)
    with c.stream("GET", "/live/stream") as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        first = next(r.iter_lines())
        assert first.startswith(": nerve live tail")


def _csrf(c: TestClient) -> str:
    page = c.get("/privacy").text
    marker = 'name="csrf-token" content="'
    start = page.index(marker) + len(marker)
    return page[start : page.index('"', start)]


def test_pages_name_only_static_files_that_ship_with_their_licences() -> None:
    import re

    from nerve.ui import app as ui_app

    here = Path(ui_app.__file__).parent
    named = set()
    for template in (here / "templates").glob("*.html"):
        named |= set(re.findall(r'"/static/([^"]+)"', template.read_text()))
    assert named and all((here / "static" / n).is_file() for n in named)
    vendored = [p.name for p in (here / "static" / "vendor").iterdir()]
    licences = (here / "static" / "LICENSES.md").read_text()
    for name in vendored:
        if not name.endswith(".LICENSE"):
            assert name in licences and (here / "static" / "vendor").glob("*.LICENSE")
    assert "<script>" not in "".join(t.read_text() for t in (here / "templates").glob("*.html"))


def test_pages_are_compressed_but_the_live_tail_is_not(ws: WorkspaceDir) -> None:
    c = client(ws)
    assert c.get("/static/vendor/htmx-2.0.11.min.js").headers["content-encoding"] == "gzip"
    assert c.get("/timeline/counts?since=1h").headers["content-encoding"] == "gzip"
    with c.stream("GET", "/live/stream") as r:
        assert "content-encoding" not in r.headers
        assert next(r.iter_lines()).startswith(": nerve live tail")


def test_live_stream_resumes_from_the_last_event_id(ws: WorkspaceDir) -> None:
    import json

    from nerve.ui import data

    _, cursor = data.live_batch(_door(ws), data.Filters(), None)
    logops.emit(ws, [Draft.of(source=5, line=f"resumed {i}", payload={}) for i in range(3)])
    c = client(ws)
    with c.stream("GET", "/live/stream", headers={"last-event-id": str(cursor)}) as r:
        lines = r.iter_lines()
        sent = next(line for line in lines if line.startswith("data: "))
    rows = json.loads(sent.removeprefix("data: "))
    assert [row["line"] for row in rows] == ["resumed 0", "resumed 1", "resumed 2"]
    assert c.get("/live/stream?after=junk").status_code == 400


def test_a_stop_ends_the_server_even_with_a_live_tail_open(ws: WorkspaceDir) -> None:
    import os
    import subprocess
    import urllib.request

    from tests.helpers.browser import ui_process

    env = {"XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]}
    with ui_process(ws.root, env) as ui:
        cookie = Keys(token_path(_door(ws))).cookie()
        port = int(ui.base.rsplit(":", 1)[1])
        req = urllib.request.Request(
            f"{ui.base}/live/stream", headers={"cookie": f"{cookie_name(port)}={cookie}"}
        )
        stream = urllib.request.urlopen(req, timeout=30)
        assert stream.readline().startswith(b": nerve live tail")
        try:
            assert ui.stop() == 0  # SIGTERM: a clean exit, not a wait for the tab to close
        except subprocess.TimeoutExpired:
            pytest.fail("nerve ui did not stop while a live tail was open")
        finally:
            stream.close()


def test_a_csv_download_runs_no_formula(ws: WorkspaceDir) -> None:
    c = client(ws)
    q = "SELECT '=1+1' AS a, '\tx' AS b, '\r=2' AS c, 'plain' AS d, -1 AS n"
    rows = list(csv.reader(io.StringIO(c.get("/sql", params={"q": q, "format": "csv"}).text)))
    assert rows[1] == ["'=1+1", "'\tx", "'\r=2", "plain", "-1"]

"""`nerve ui` against hostile requests: no login, a wrong or rotated token, a foreign Host
(DNS rebinding), cross-site writes, script stored in events, SQL that tries to get out."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

import nerve
from nerve import api, logops, tokens
from nerve.errors import UsageError
from nerve.events import SourceClass
from nerve.log.drafts import Draft
from nerve.ui.app import build_app
from nerve.ui.auth import Keys, cookie_name, token, token_path
from nerve.ui.guard import Served
from nerve.workspace import WorkspaceDir
from tests.helpers.browser import XSS, attended_workspace, login_path

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"
PAGES = ["/", "/?span=week", "/timeline", "/timeline/counts",
         "/events", "/events/00", "/live", "/live/stream",
         "/sql?q=SELECT+1", "/attention", "/attention/0", "/senses", "/privacy", "/health",
         "/static/app.js"]  # fmt: skip
GHP = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"


def _door(ws: Any) -> api.Workspace:
    """The front door over a workspace the test made as a folder."""
    return nerve.open(ws.root)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkspaceDir]:
    root = tmp_path_factory.mktemp("hostile")
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(root / "state"))
    ws = attended_workspace(root / "ws", cycles=2)
    (ws.root / "nerve.yaml").write_text("senses: {}\nprivacy:\n  detectors: {enabled: false}\n")
    ws = WorkspaceDir(ws.root)
    logops.emit(ws, [Draft.of(source=5, line=x, payload={"note": x}) for x in XSS])
    focus = {"event": "focus", "app": "<b>app</b>", "title": XSS[0]}  # the day page's titles
    logops.emit(ws, [Draft.of(source=SourceClass.APP_FOCUS, line="focus", payload=focus)])
    logops.emit(ws, [Draft.of(source=5, line=f"export GITHUB_TOKEN={GHP}", payload={})])
    logops.emit(ws, [Draft.of(source=5, line="payroll for alice", payload={})])
    yield ws
    mp.undo()


def app(ws: WorkspaceDir, **kw: bool) -> TestClient:
    served = Served("127.0.0.1", PORT, **kw)
    return TestClient(build_app(_door(ws), Keys(token_path(_door(ws))), served), base_url=BASE)


def logged_in(ws: WorkspaceDir) -> TestClient:
    c = app(ws)
    assert c.get(login_path(_door(ws)), follow_redirects=False).status_code == 303
    return c


def csrf(c: TestClient) -> str:
    page = c.get("/privacy").text
    marker = 'name="csrf-token" content="'
    start = page.index(marker) + len(marker)
    return page[start : page.index('"', start)]


def paused(c: TestClient) -> bool:
    r = c.get("/privacy", headers={"accept": "application/json"})
    return bool(r.json()["capture"]["paused"])


@pytest.mark.parametrize("path", PAGES)
def test_no_login_no_page(ws: WorkspaceDir, path: str) -> None:
    c = app(ws)
    for accept in ("text/html", "application/json"):
        r = c.get(path, headers={"accept": accept})
        assert r.status_code == 401, path
        assert "not logged in" in r.text and "<nav>" not in r.text


def test_a_wrong_token_logs_nobody_in(ws: WorkspaceDir) -> None:
    secret = token(_door(ws))  # the token exists: a matcher that takes anything is caught
    code = login_path(_door(ws)).split("=", 1)[1]
    c = app(ws)
    for offered in ["x" * 43, secret, secret[:-1], secret[:1], "", code[:-1], code + "0"]:
        r = c.get(f"/login?token={offered}", follow_redirects=False)
        assert r.status_code == 401 and "set-cookie" not in r.headers, offered
    assert c.get("/login", follow_redirects=False).status_code == 401
    c.cookies.set(cookie_name(PORT), "forged.0.0.0000")
    assert c.get("/").status_code == 401
    for bearer in ["nope", secret[:-1], secret[:1], "", secret + "x", code]:
        assert c.get("/", headers={"authorization": f"Bearer {bearer}"}).status_code == 401
    assert c.get("/", headers={"authorization": f"Bearer {secret}"}).status_code == 200


def test_token_comparison_is_whole_and_exact(ws: WorkspaceDir) -> None:
    secret = token(_door(ws))
    assert tokens.matches(secret, secret)
    for offered in ["", secret[:1], secret[:-1], secret + "x", secret.upper(), " " + secret]:
        assert not tokens.matches(secret, offered), offered
    assert not tokens.matches(None, "") and not tokens.matches("", "")


def test_a_login_link_works_once(ws: WorkspaceDir) -> None:
    path = login_path(_door(ws))
    c = app(ws)
    first = c.get(path, follow_redirects=False)
    assert first.status_code == 303 and c.get("/").status_code == 200
    history = TestClient(c.app, base_url=BASE)  # the same server, the browser's history
    again = history.get(path, follow_redirects=False)
    assert again.status_code == 401 and "set-cookie" not in again.headers
    assert c.get("/").status_code == 200  # the session it made lives on


def test_the_cookie_is_httponly_strict_and_the_token_owner_only(ws: WorkspaceDir) -> None:
    r = app(ws).get(login_path(_door(ws)), follow_redirects=False)
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    assert token(_door(ws)) not in r.headers["set-cookie"]  # the cookie is not the token
    assert stat.S_IMODE(os.stat(token_path(_door(ws))).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(token_path(_door(ws)).parent).st_mode) == 0o700


def test_rotating_the_token_ends_every_session(ws: WorkspaceDir) -> None:
    c = logged_in(ws)
    old, stale = token(_door(ws)), login_path(_door(ws))
    assert c.get("/").status_code == 200
    token(_door(ws), rotate=True)
    assert c.get("/").status_code == 401
    assert app(ws).get(f"/login?token={old}", follow_redirects=False).status_code == 401
    assert app(ws).get(stale, follow_redirects=False).status_code == 401
    assert logged_in(ws).get("/").status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8765", "127.0.0.1:9999",
                                  "localhost.evil.example:8765", ""])  # fmt: skip
def test_a_foreign_host_is_refused_even_logged_in(ws: WorkspaceDir, host: str) -> None:
    c = logged_in(ws)
    r = c.get("/", headers={"host": host})
    assert r.status_code == 403 and "<nav>" not in r.text
    assert c.get("/", headers={"host": f"localhost:{PORT}"}).status_code == 200


def test_cross_site_posts_change_nothing(ws: WorkspaceDir) -> None:
    c = logged_in(ws)
    good = csrf(c)
    evil = {"origin": "http://evil.example"}
    assert c.post("/do/pause", data={"csrf": good}, headers=evil).status_code == 403
    site = {"sec-fetch-site": "cross-site"}
    assert c.post("/do/pause", data={"csrf": good}, headers=site).status_code == 403
    assert c.post("/do/pause", data={}).status_code == 403  # no CSRF value
    assert c.post("/do/pause", data={"csrf": "0" * 64}).status_code == 403
    assert c.post("/do/pause", headers={"x-csrf-token": "0" * 64}).status_code == 403
    assert c.get("/do/pause").status_code == 405  # a write is never a GET
    other = logged_in(ws)
    assert c.post("/do/pause", data={"csrf": csrf(other)}).status_code == 403  # another session's
    assert not paused(c)
    ok = c.post("/do/pause", data={"csrf": good}, headers={"origin": BASE})
    assert ok.status_code == 200 and paused(c)
    assert c.post("/do/resume", headers={"x-csrf-token": good}).status_code == 200
    assert not paused(c)


def test_no_cors_ever(ws: WorkspaceDir) -> None:
    c = logged_in(ws)
    r = c.get("/events", headers={"accept": "application/json"})
    assert not any(k.lower().startswith("access-control-") for k in r.headers)
    pre = c.options("/do/pause", headers={"origin": BASE, "access-control-request-method": "POST"})
    assert pre.status_code == 405
    assert not any(k.lower().startswith("access-control-") for k in pre.headers)


def test_every_answer_carries_the_csp(ws: WorkspaceDir) -> None:
    c = logged_in(ws)
    for r in (c.get("/"), c.get("/static/app.js"), app(ws).get("/")):
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert "frame-ancestors 'none'" in csp
        assert r.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/timeline",
        "/timeline/counts?since=1h",
        "/events?since=1h",
        "/events?text=pwned&since=1h",
    ],
)
def test_script_in_events_is_shown_as_text(ws: WorkspaceDir, path: str) -> None:
    page = logged_in(ws).get(path).text
    shown = "<mark>pwned</mark>" if "text=" in path else "pwned"
    assert f"&lt;script&gt;window.__{shown} = 1&lt;/script&gt;" in page
    assert "<script>window" not in page
    assert "<img src=x" not in page and "onerror=" not in page.replace("onerror=&#34;", "")
    assert 'href="javascript:' not in page
    assert "<script>" not in page.replace('<script src="/static/', "")  # no inline script at all


def test_script_in_a_payload_is_escaped_on_its_page(ws: WorkspaceDir) -> None:
    c = logged_in(ws)
    hits = c.get("/events?text=onerror&since=1h", headers={"accept": "application/json"}).json()
    page = c.get(f"/events/{hits['events'][0]['id']}").text
    assert "&lt;img src=x onerror=" in page and "<img" not in page


HOSTILE_SQL = {
    "COPY (SELECT * FROM events) TO '/tmp/nerve-ui-out.csv'": "COPY statements are refused",
    "SELECT * FROM read_csv('/etc/passwd')": "reaches outside this workspace's log",
    "SELECT * FROM read_text('/etc/hostname')": "reaches outside this workspace's log",
    "ATTACH '/tmp/nerve-ui.db' AS other": "ATTACH statements are refused",
    "INSTALL httpfs": "INSTALL statements are refused",
    "PRAGMA database_list": "PRAGMA statements are refused",
    "SET enable_external_access = true": "SET statements are refused",
    "SELECT 1; DROP VIEW events": "exactly one SELECT",
    "SELECT * FROM events'; --": "query failed",
}


@pytest.mark.parametrize("sql", list(HOSTILE_SQL))
def test_sql_cannot_escape_the_sandbox(ws: WorkspaceDir, sql: str) -> None:
    c = logged_in(ws)
    r = c.get("/sql", params={"q": sql}, headers={"accept": "application/json"})
    assert r.status_code == 400
    assert HOSTILE_SQL[sql] in r.json()["message"]
    assert not os.path.exists("/tmp/nerve-ui-out.csv")
    html = c.get("/sql", params={"q": sql})
    assert html.status_code == 400 and HOSTILE_SQL[sql].split()[0] in html.text


def test_a_rule_added_later_hides_old_text_on_every_page(ws: WorkspaceDir) -> None:
    c = logged_in(ws)
    found = c.get("/events?text=GITHUB_TOKEN&since=1h", headers={"accept": "application/json"})
    assert GHP in found.json()["events"][0]["line"]  # stored while detectors were off
    yaml = "senses: {}\nprivacy:\n  rules:\n    - {name: payroll, regex: 'payroll', action: drop}\n"
    (ws.root / "nerve.yaml").write_text(yaml)
    try:
        shown = ("/timeline?since=1h", "/timeline/counts?since=1h", "/events?since=1h")
        for path in (*shown, "/events?since=1h&text=GITHUB"):
            page = c.get(path).text
            assert GHP not in page and "payroll for alice" not in page
        assert "[redacted:" in c.get("/events?since=1h").text
        assert GHP not in c.get("/sql", params={"q": "SELECT line FROM events"}).text
        q = "SELECT count(*) FROM events WHERE line LIKE '%payroll%'"
        assert c.get("/sql", params={"q": q, "format": "json"}).json()["rows"] == [[0]]
        assert not c.get("/events?text=ghp_&since=1h&format=json").json()["events"]
    finally:
        (ws.root / "nerve.yaml").write_text("senses: {}\nprivacy:\n  detectors: {enabled: false}\n")


def test_serving_beyond_loopback_needs_allow_remote(ws: WorkspaceDir) -> None:
    from nerve.ui.server import serve

    with pytest.raises(UsageError, match="not a loopback address"):
        serve(ws, "0.0.0.0", 0)
    c = app(ws, allow_remote=True)
    assert c.get("/", headers={"host": "nerve.example:8765"}).status_code == 401  # token still


def test_redaction_counts_by_rule_never_the_text(ws: WorkspaceDir) -> None:
    (ws.root / "nerve.yaml").write_text(
        "senses: {}\nprivacy:\n  rules:\n    - {name: codename, regex: 'bluebird'}\n"
    )
    try:
        logops.emit(WorkspaceDir(ws.root), [Draft.of(source=5, line="bluebird and bluebird")])
        c = logged_in(ws)
        got = c.get("/privacy", headers={"accept": "application/json"}).json()["redactions"]
        assert {"rule": "codename", "events": 1, "matches": 2} in got
        assert "bluebird" not in c.get("/privacy").text
    finally:
        (ws.root / "nerve.yaml").write_text("senses: {}\nprivacy:\n  detectors: {enabled: false}\n")


def test_the_token_command_prints_and_rotates(
    ws: WorkspaceDir, capsys: pytest.CaptureFixture[str]
) -> None:
    from nerve.cli.main import run

    def cli(*words: str) -> None:
        with pytest.raises(SystemExit) as done:
            run(["--workspace", str(ws.root), "ui", *words])
        assert done.value.code in (0, None)

    cli("token")
    first = capsys.readouterr().out.strip()
    assert first == token(_door(ws))
    c = logged_in(ws)
    cli("token", "--rotate")
    second = capsys.readouterr().out.strip()
    assert second != first and second == token(_door(ws))
    assert c.get("/").status_code == 401  # the old session ended with the old token


def test_ui_beyond_loopback_is_a_usage_error_at_the_cli(
    ws: WorkspaceDir, capsys: pytest.CaptureFixture[str]
) -> None:
    from nerve.cli.main import run

    with pytest.raises(SystemExit) as done:
        run(["--workspace", str(ws.root), "ui", "--host", "0.0.0.0"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("UsageError: ") and "--allow-remote" in err and "Traceback" not in err


SESAME = "sesame-7Qx9-hunter"
RULE_YAML = (
    "senses: {}\nprivacy:\n  rules:\n    - {name: opensesame, regex: 'sesame-7Qx9-hunter'}\n"
)


def test_a_search_cannot_tell_that_a_redacted_secret_matched(ws: WorkspaceDir) -> None:
    from nerve.ui import data

    cursor = data.live_batch(_door(ws), data.Filters(), None)[1]
    logops.emit(ws, [Draft.of(source=5, line=f"door code {SESAME}", payload={"note": SESAME})])
    c = logged_in(ws)
    span = f"since={cursor.physical_ns - 10**9}&until={cursor.physical_ns + 3_600 * 10**9}"
    assert c.get(f"/events?text={SESAME}&{span}&format=json").json()["total"] == 1  # stored raw
    (ws.root / "nerve.yaml").write_text(RULE_YAML)
    try:
        for needle in (SESAME, "e-7Qx9-h", "7qx9"):
            absent = "Zw" * (len(needle) // 2) + "Zw"[: len(needle) % 2]

            def asked(text: str, fmt: str) -> str:
                r = c.get(f"/events?text={text}&{span}&format={fmt}")
                assert r.status_code == 200
                return r.text.replace(text, "@")

            for fmt in ("json", "csv", "html"):
                assert asked(needle, fmt) == asked(absent, fmt), (needle, fmt)
            assert not data.live_batch(_door(ws), data.Filters(text=needle), cursor)[0]
            q = f"SELECT count(*) FROM events WHERE line ILIKE '%{needle}%'"
            assert c.get("/sql", params={"q": q, "format": "json"}).json()["rows"] == [[0]]
        shown = c.get(f"/events?text=[redacted:opensesame]&{span}&format=json").json()
        assert shown["total"] == 1 and SESAME not in str(shown)  # the redacted text is searched
        live = data.live_batch(_door(ws), data.Filters(text="redacted:opensesame"), cursor)[0]
        assert [e["line"] for e in live] == ["door code [redacted:opensesame]"]
        (ws.root / "nerve.yaml").write_text("senses: {}\n")  # the detectors: on by default
        hour = f"since={cursor.physical_ns - 3_600 * 10**9}&until={cursor.physical_ns + 10**12}"
        for needle in (GHP, GHP[6:20]):
            a, b = (
                c.get(f"/events?text={t}&{hour}&format=json").json()
                for t in (needle, "Q" * len(needle))
            )
            assert a == b and a["total"] == 0, needle
    finally:
        (ws.root / "nerve.yaml").write_text("senses: {}\nprivacy:\n  detectors: {enabled: false}\n")

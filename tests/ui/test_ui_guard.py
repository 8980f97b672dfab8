"""The UI's guard by itself, in front of a page that only reports what reached it: Host,
Origin, method, login by cookie or token, CSRF, the cookie's renewal and the headers every
answer carries. In process through Starlette's TestClient, with a real token file."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from nerve.ui.auth import Keys, Lifetimes, cookie_name
from nerve.ui.guard import CSP, HEADERS, Guard, Message, Receive, Scope, Send, Served, set_cookie

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"
TOKEN = "t0ken-for-the-guard-tests"


class _Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


class _Page:
    """An ASGI page that answers 200 with its own header and keeps each scope it was given."""

    def __init__(self) -> None:
        self.scopes: list[Scope] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scopes.append(scope)
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"x-page", b"1")]})
        await send({"type": "http.response.body", "body": b"page"})

    def state(self) -> dict[str, Any]:
        return dict(self.scopes[-1].get("state", {}))


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    path = tmp_path / "ui.token"
    path.write_text(TOKEN + "\n")
    return Keys(path, Lifetimes(login=600, idle=7_200, session=86_400), clock=_Clock())


def _client(keys: Keys, served: Served | None = None) -> tuple[TestClient, _Page]:
    page = _Page()
    guard = Guard(page, keys, served or Served("127.0.0.1", PORT))
    return TestClient(guard, base_url=BASE), page


def _bearer(token: str = TOKEN) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def _cookie(keys: Keys, port: int = PORT) -> tuple[str, dict[str, str]]:
    value = keys.cookie()
    return value.split(".")[0], {"cookie": f"{cookie_name(port)}={value}"}


def test_every_answer_carries_the_security_headers_after_the_page_s_own(keys: Keys) -> None:
    c, _ = _client(keys)
    for r in (c.get("/", headers=_bearer()), c.get("/"), c.put("/", headers=_bearer())):
        pairs = list(r.headers.raw)
        assert [p for p in pairs if p in HEADERS] == HEADERS, r.status_code
        assert "access-control-allow-origin" not in r.headers
    ok = c.get("/", headers=_bearer())
    assert ok.text == "page" and ok.headers["x-page"] == "1"
    assert ok.headers["content-security-policy"] == CSP
    assert ok.headers.raw[0] == (b"x-page", b"1")  # the page's own first, then the guard's


def test_a_host_that_is_not_this_server_is_refused(keys: Keys) -> None:
    c, page = _client(keys)
    for host in ("evil.example", "127.0.0.1:8766", "", "localhost:9"):
        r = c.get("/", headers={**_bearer(), "host": host})
        assert r.status_code == 403 and r.text == f"refused: Host {host!r} is not this server\n"
    assert not page.scopes
    for host in ("127.0.0.1:8765", "localhost:8765", "[::1]:8765", "localhost"):
        assert c.get("/", headers={**_bearer(), "host": host}).status_code == 200, host


def test_the_address_served_and_allow_remote_widen_the_hosts_taken(keys: Keys) -> None:
    served, _ = _client(keys, Served("10.0.0.5", PORT))
    assert served.get("/", headers={**_bearer(), "host": "10.0.0.5:8765"}).status_code == 200
    assert served.get("/", headers={**_bearer(), "host": "10.0.0.6:8765"}).status_code == 403
    remote, _ = _client(keys, Served("0.0.0.0", PORT, allow_remote=True))
    assert remote.get("/", headers={**_bearer(), "host": "10.0.0.6:8765"}).status_code == 200


def test_a_request_from_another_site_is_refused(keys: Keys) -> None:
    c, page = _client(keys)
    r = c.post("/", headers={**_bearer(), "origin": "http://evil.example"})
    assert r.status_code == 403
    assert r.text == "refused: cross-origin request from 'http://evil.example'\n"
    r = c.post("/", headers={**_bearer(), "origin": f"https://127.0.0.1:{PORT}"})
    assert r.status_code == 403
    r = c.post("/", headers={**_bearer(), "sec-fetch-site": "cross-site"})
    assert r.status_code == 403 and r.text == "refused: cross-site request\n"
    assert not page.scopes
    same = {"origin": BASE, "sec-fetch-site": "same-origin"}
    assert c.post("/", headers={**_bearer(), **same}).status_code == 200
    assert c.post("/", headers={**_bearer(), "sec-fetch-site": "same-site"}).status_code == 200


def test_only_get_head_and_post_reach_a_page(keys: Keys) -> None:
    c, page = _client(keys)
    for method in ("PUT", "DELETE", "PATCH", "OPTIONS"):
        r = c.request(method, "/", headers=_bearer())
        assert r.status_code == 405 and r.text == "method not allowed\n", method
    assert not page.scopes
    for method in ("GET", "HEAD", "POST"):
        assert c.request(method, "/", headers=_bearer()).status_code == 200, method


def test_without_a_login_only_the_login_page_is_reached(keys: Keys) -> None:
    c, page = _client(keys)
    for path in ("/", "/events", "/login/x", "/static/app.js"):
        r = c.get(path)
        assert r.status_code == 401, path
        assert r.text == (
            "not logged in: open the login URL `nerve ui` printed "
            "(or `nerve ui token` for the token)\n"
        )
    assert not page.scopes
    assert c.get("/login").status_code == 200
    assert page.state() == {}  # no session is looked for on the open page
    assert c.put("/login").status_code == 405  # the open page still takes only three methods


def test_the_token_as_bearer_logs_in_without_csrf(keys: Keys) -> None:
    c, page = _client(keys)
    for scheme in ("Bearer", "bearer", "BEARER"):
        assert c.post("/", headers={"authorization": f"{scheme}  {TOKEN} "}).status_code == 200
        assert page.state() == {"session": "bearer", "csrf": ""}
    for wrong in (_bearer("nope"), _bearer(""), {"authorization": f"Basic {TOKEN}"}):
        assert c.get("/", headers=wrong).status_code == 401, wrong
    bad = {**_bearer(), "x-csrf-token": "anything"}
    assert c.post("/", headers=bad).status_code == 200  # a bearer has no CSRF to check


def test_a_session_cookie_logs_in_with_its_csrf_value(keys: Keys) -> None:
    c, page = _client(keys)
    sid, cookie = _cookie(keys)
    assert c.get("/events", headers=cookie).status_code == 200
    assert page.state() == {"session": sid, "csrf": keys.csrf(sid)}
    other_port = _cookie(keys, PORT + 1)[1]
    for bad in (other_port, {"cookie": "\x00;;=\x7f"}, {"cookie": f"{cookie_name(PORT)}=x.1.2.z"}):
        assert c.get("/", headers=bad).status_code == 401, bad


def test_a_post_with_a_cookie_checks_the_csrf_header_and_else_leaves_it_to_the_form(
    keys: Keys,
) -> None:
    c, page = _client(keys)
    sid, cookie = _cookie(keys)
    r = c.post("/", headers={**cookie, "x-csrf-token": "forged"})
    assert r.status_code == 403 and r.text == "refused: bad CSRF token\n"
    assert not page.scopes
    assert c.post("/", headers={**cookie, "x-csrf-token": keys.csrf(sid)}).status_code == 200
    assert page.state()["csrf_checked"] is True
    assert c.post("/", headers=cookie).status_code == 200
    assert page.state()["csrf_checked"] is False
    assert c.get("/", headers={**cookie, "x-csrf-token": "forged"}).status_code == 200
    assert "csrf_checked" not in page.state()  # a GET changes nothing: no check


def test_a_cookie_seen_a_minute_ago_is_renewed_on_the_answer(keys: Keys) -> None:
    c, page = _client(keys)
    clock = keys.clock
    assert isinstance(clock, _Clock)
    sid, cookie = _cookie(keys)
    fresh = c.get("/", headers=cookie)
    assert "set-cookie" not in fresh.headers and "renewed" not in page.state()
    clock.now += 61
    r = c.get("/", headers=cookie)
    assert r.status_code == 200 and "renewed" not in page.state()  # taken out before the page
    renewed = keys.cookie(sid, int(clock.now - 61))
    assert r.headers["set-cookie"] == set_cookie(PORT, renewed, 86_400)
    assert r.headers.raw[-1] == (b"set-cookie", set_cookie(PORT, renewed, 86_400).encode())


def test_the_session_cookie_is_http_only_strict_and_for_the_whole_server() -> None:
    assert set_cookie(8765, "v.1.2.m", 3600) == (
        "nerve_ui_8765=v.1.2.m; HttpOnly; Max-Age=3600; Path=/; SameSite=strict"
    )


def test_what_is_not_http_passes_to_the_app_untouched(keys: Keys) -> None:
    page = _Page()
    guard = Guard(page, keys, Served("127.0.0.1", PORT))
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "lifespan.startup"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope: Scope = {"type": "lifespan", "headers": [(b"host", b"evil.example")]}
    asyncio.run(guard(scope, receive, send))
    assert page.scopes == [scope] and scope == {"type": "lifespan", "headers": scope["headers"]}


def test_a_server_that_gives_no_state_in_its_scope_is_served_too(keys: Keys) -> None:
    page = _Page()
    guard = Guard(page, keys, Served("127.0.0.1", PORT))
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    host = [(b"host", f"127.0.0.1:{PORT}".encode())]
    for path, status in (("/login", 200), ("/", 401)):
        scope: Scope = {"type": "http", "method": "GET", "path": path, "headers": host}
        asyncio.run(guard(scope, receive, send))
        assert sent[-2]["status"] == status, path

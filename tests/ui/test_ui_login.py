"""`nerve ui`'s sessions: a login link works once and for an hour, a session ends when idle or
old (``ui:`` in nerve.yaml), and its cookie names the port so two servers keep theirs apart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import nerve
from nerve import api, fsio
from nerve.ui.app import build_app
from nerve.ui.auth import (
    Keys,
    Lifetimes,
    Session,
    cookie_name,
    local_path,
    login_url,
    token,
    token_path,
)
from nerve.ui.guard import Served
from nerve.workspace import init_workspace

HOUR = 3_600.0


class _Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[api.Workspace]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = init_workspace(tmp_path / "ws").root
    (root / "nerve.yaml").write_text("ui: {login: 10m, idle: 2h, session: 1d}\n")
    ws = nerve.open(root)
    token(ws)
    yield ws


def _served(ws: api.Workspace, clock: _Clock, port: int = 8765) -> tuple[TestClient, Keys]:
    keys = Keys(token_path(ws), Lifetimes.of(ws), clock=clock)
    app = build_app(ws, keys, Served("127.0.0.1", port))
    return TestClient(app, base_url=f"http://127.0.0.1:{port}"), keys


def _log_in(c: TestClient, keys: Keys) -> None:
    r = c.get(f"/login?token={keys.login_code()}", follow_redirects=False)
    assert r.status_code == 303, r.text


def test_the_ui_section_sets_the_lifetimes(ws: api.Workspace) -> None:
    assert Lifetimes.of(ws) == Lifetimes(login=600, idle=2 * HOUR, session=24 * HOUR)
    assert Lifetimes() == Lifetimes(login=HOUR, idle=12 * HOUR, session=7 * 24 * HOUR)


def test_a_login_link_dies_after_its_lifetime_unused(ws: api.Workspace) -> None:
    clock = _Clock()
    c, keys = _served(ws, clock)
    code = keys.login_code()
    clock.now += 601
    assert c.get(f"/login?token={code}", follow_redirects=False).status_code == 401
    fresh = keys.login_code()
    clock.now += 599
    assert c.get(f"/login?token={fresh}", follow_redirects=False).status_code == 303


def test_an_idle_session_ends_and_a_used_one_is_renewed(ws: api.Workspace) -> None:
    clock = _Clock()
    c, keys = _served(ws, clock)
    _log_in(c, keys)
    for _ in range(4):  # an hour and a half apart, each request renews the idle clock
        clock.now += 1.5 * HOUR
        r = c.get("/health", headers={"accept": "application/json"})
        assert r.status_code == 200
        assert cookie_name(8765) in r.headers["set-cookie"]
    clock.now += 2 * HOUR + 1
    assert c.get("/health").status_code == 401


def test_a_session_ends_a_day_after_login_however_used(ws: api.Workspace) -> None:
    clock = _Clock()
    c, keys = _served(ws, clock)
    _log_in(c, keys)
    for _ in range(23):
        clock.now += HOUR
        assert c.get("/health").status_code == 200
    clock.now += HOUR + 1
    assert c.get("/health").status_code == 401


def test_the_cookie_names_its_port_and_lasts_as_long_as_the_session(ws: api.Workspace) -> None:
    clock = _Clock()
    one, keys_one = _served(ws, clock, 8765)
    two, keys_two = _served(ws, clock, 8766)
    r = one.get(f"/login?token={keys_one.login_code()}", follow_redirects=False)
    cookie = r.headers["set-cookie"]
    assert cookie.startswith("nerve_ui_8765=") and "Max-Age=86400" in cookie
    _log_in(two, keys_two)
    jar = {cookie_name(8765): one.cookies[cookie_name(8765)],
           cookie_name(8766): two.cookies[cookie_name(8766)]}  # fmt: skip
    assert jar[cookie_name(8765)] != jar[cookie_name(8766)]
    both = "; ".join(f"{k}={v}" for k, v in jar.items())  # a browser sends both to each
    for c in (TestClient(one.app, base_url="http://127.0.0.1:8765"),
              TestClient(two.app, base_url="http://127.0.0.1:8766")):  # fmt: skip
        assert c.get("/health", headers={"cookie": both}).status_code == 200
    stray = f"{cookie_name(8766)}={jar[cookie_name(8766)]}"
    fresh = TestClient(one.app, base_url="http://127.0.0.1:8765")
    assert fresh.get("/health", headers={"cookie": stray}).status_code == 401


def test_a_forged_or_altered_cookie_is_no_session(ws: api.Workspace) -> None:
    clock = _Clock()
    c, keys = _served(ws, clock)
    real = keys.cookie()
    sid, began, seen, mac = real.split(".")
    for forged in [f"{sid}.{int(began) + HOUR:.0f}.{seen}.{mac}", f"{sid}.{began}.{seen}.",
                   f"{sid}.{began}.{seen}", f"{sid}.{began}.{seen}.{mac[:-1]}", ".".join(
                   [sid, began, str(int(clock.now) + 10**6), mac])]:  # fmt: skip
        fresh = TestClient(c.app, base_url="http://127.0.0.1:8765")
        assert (
            fresh.get("/health", headers={"cookie": f"nerve_ui_8765={forged}"}).status_code == 401
        )
    fresh = TestClient(c.app, base_url="http://127.0.0.1:8765")
    assert fresh.get("/health", headers={"cookie": f"nerve_ui_8765={real}"}).status_code == 200


def test_a_login_code_from_a_minute_ahead_is_taken_and_no_further(ws: api.Workspace) -> None:
    clock = _Clock()
    _, keys = _served(ws, clock)
    clock.now += 61
    early, ahead = keys.login_code(), keys.login_code()
    clock.now -= 61  # a code stamped by a clock 61 s ahead
    assert not keys.redeem(early)
    clock.now += 1  # 60 s ahead
    assert keys.redeem(ahead)


def test_a_session_holds_to_the_last_second_of_its_idle_time(ws: api.Workspace) -> None:
    clock = _Clock()
    _, keys = _served(ws, clock)
    cookie = keys.cookie()
    clock.now += 2 * HOUR
    assert keys.session(cookie) is not None
    clock.now += 1
    assert keys.session(cookie) is None


def test_a_cookie_is_renewed_a_minute_after_it_was_seen(ws: api.Workspace) -> None:
    clock = _Clock()
    _, keys = _served(ws, clock)
    cookie = keys.cookie()
    clock.now += 59
    assert keys.session(cookie) == Session(cookie.split(".")[0])
    clock.now += 1
    renewed = keys.session(cookie)
    assert renewed is not None and renewed.renewed is not None
    assert renewed.renewed.split(".")[1:3] == [cookie.split(".")[1], str(int(clock.now))]


def test_the_token_is_written_at_its_fault_site(ws: api.Workspace) -> None:
    with fsio.inject("ui.token") as fault, pytest.raises(OSError):
        token(ws, rotate=True)
    assert fault.fired == 1


@pytest.mark.parametrize(
    ("given", "goes_to"),
    [("/attention/7", "/attention/7"), ("/a!b?c=d", "/a!b?c=d"), ("//evil", "/"),
     ("https://evil", "/"), ("/a\\b", "/"), ("/a b", "/"), ("/a\tb", "/"), ("", "/")],
)  # fmt: skip
def test_a_login_goes_on_only_to_a_page_of_this_server(given: str, goes_to: str) -> None:
    assert local_path(given) == goes_to


def test_the_login_url_names_the_page_to_show_when_given() -> None:
    base = "http://127.0.0.1:8765"
    assert login_url(base, "c0de") == f"{base}/login?token=c0de"
    assert login_url(base, "c0de", "/events?q=a b") == f"{base}/login?token=c0de&next=/"
    assert login_url(base, "c0de", "/attention/7") == f"{base}/login?token=c0de&next=/attention/7"
    assert login_url(base, "c0de", "//evil") == f"{base}/login?token=c0de&next=/"

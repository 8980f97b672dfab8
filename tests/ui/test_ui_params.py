"""Every page's query parameters given junk: a one-line 400 (or the page), never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

import nerve
from nerve.ui.app import build_app
from nerve.ui.auth import Keys, token, token_path
from nerve.ui.guard import Served
from tests.helpers.browser import attended_workspace

PORT = 8765
JUNK = ["abc", "-1", "0", "1.5", "1e9", " ", "\x00", "%ff", "9" * 5_000, "-" + "9" * 5_000,
        str(2**63), str(2**63 - 1), str(-(2**63)), str(2**64), "1" + "0" * 20, "9999d",
        "1000000000h", "2026-13-45", "1970-01-01", "9999-12-31T23:59:59"]  # fmt: skip
ROUTES = {
    "/": ["day", "span"],
    "/timeline": ["day", "since", "until"],
    "/timeline/counts": ["since", "until", "buckets", "min", "host"],
    "/events": ["since", "until", "page", "size", "text", "source", "kind", "subject", "trust",
                "all", "host", "col", "format"],
    "/events/00": ["host"],
    "/sql": ["q", "format"],
    "/attention": [],
    "/senses": [],
    "/privacy": [],
    "/health": ["verify"],
    "/live": [],
}  # fmt: skip
PATHS = ["/events/{}", "/attention/{}"]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    root = tmp_path_factory.mktemp("params")
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(root / "state"))
    ws = nerve.open(attended_workspace(root / "ws", cycles=1).root)
    app = build_app(ws, Keys(token_path(ws)), Served("127.0.0.1", PORT))
    c = TestClient(app, base_url=f"http://127.0.0.1:{PORT}", raise_server_exceptions=False)
    c.headers["authorization"] = f"Bearer {token(ws)}"
    yield c
    mp.undo()


def _cases() -> Iterator[Any]:
    for route, names in ROUTES.items():
        for name in names:
            yield pytest.param(route, name, id=f"{route}?{name}")


def _refused_or_shown(r: Any, what: str) -> None:
    assert r.status_code < 500, f"{what}: {r.status_code} {r.text[:300]}"
    if r.status_code == 400 and "json" in r.headers["content-type"]:
        assert "\n" not in r.json()["message"], what


@pytest.mark.parametrize(("route", "name"), list(_cases()))
def test_junk_in_a_query_parameter_is_never_a_500(
    client: TestClient, route: str, name: str
) -> None:
    for i, value in enumerate(JUNK):
        accept = ("application/json", "text/html")[i % 2]  # the page and its twin in turn
        r = client.get(route, params={name: value}, headers={"accept": accept})
        _refused_or_shown(r, f"{route}?{name}={value[:20]!r}")


@pytest.mark.parametrize("pattern", PATHS)
def test_junk_in_a_path_is_never_a_500(client: TestClient, pattern: str) -> None:
    for value in [v for v in JUNK if v.strip() and "\x00" not in v and "%" not in v]:
        r = client.get(pattern.format(value), headers={"accept": "application/json"})
        _refused_or_shown(r, pattern.format(value[:20]))


@pytest.mark.parametrize(
    "query", ["min=abc", f"until={2**63}", "since=" + "9" * 5_000, f"page={2**63 // 100 + 1}"]
)
def test_the_reported_parameters_are_a_one_line_400(client: TestClient, query: str) -> None:
    route = "/events" if query.startswith("page") else "/timeline/counts"
    r = client.get(f"{route}?{query}", headers={"accept": "application/json"})
    assert r.status_code == 400, r.text[:300]
    assert (
        r.json()["error"] == "UsageError" and query.split("=", maxsplit=1)[0] in r.json()["message"]
    )


def test_live_stream_junk_after_is_a_400(client: TestClient) -> None:
    for value in JUNK:
        if value in ("0", "1.5", str(2**63 - 1)):
            continue  # stamps: a stream that never ends
        r = client.get("/live/stream", params={"after": value})
        assert r.status_code == 400, value[:20]

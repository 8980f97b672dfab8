"""A `nerve ui` app in this process, logged in, for tests that read its pages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

import nerve
from nerve.ui.app import build_app
from nerve.ui.auth import Keys, token_path
from nerve.ui.guard import Served
from tests.helpers.browser import login_path

PORT = 8765


def logged_in(root: Path, port: int = PORT) -> TestClient:
    """A client of the workspace at ``root``'s UI holding a session cookie."""
    door = nerve.open(root)
    app = build_app(door, Keys(token_path(door)), Served("127.0.0.1", port))
    c = TestClient(app, base_url=f"http://127.0.0.1:{port}")
    assert c.get(login_path(door), follow_redirects=False).status_code == 303
    return c


def as_json(c: TestClient, path: str) -> Any:
    """A page's JSON twin (status 200 asserted)."""
    r = c.get(path, headers={"accept": "application/json"})
    assert r.status_code == 200, r.text
    return r.json()

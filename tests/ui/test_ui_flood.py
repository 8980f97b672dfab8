"""`nerve ui` under a local crowd: 2,000 connections that never finish a request, against the
real server at the default open-file limit; the owner still gets in, and the server lives."""

from __future__ import annotations

from pathlib import Path

import nerve
from nerve.ui.auth import token
from nerve.workspace import init_workspace
from tests.helpers.browser import ui_process
from tests.helpers.flood import alive, crowd, default_file_limit, status, within


def test_the_owner_gets_in_while_two_thousand_connections_hang(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    root = init_workspace(tmp_path / "ws").root
    with ui_process(root, env, default_file_limit) as ui:
        port = int(ui.base.rsplit(":", 1)[1])
        bearer = {"authorization": "Bearer " + token(nerve.open(root), environ=env)}

        def owner() -> int:
            return status(f"{ui.base}/health", {**bearer, "accept": "application/json"})

        with crowd(port) as held:
            assert held >= 1_900
            assert within(6, owner) == 200
            assert alive(ui.proc)
        assert within(6, owner) == 200
        assert ui.stop() == 0

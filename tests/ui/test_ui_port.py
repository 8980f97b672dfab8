"""`nerve ui` listens on a fixed port (ui.port in nerve.yaml, default 5290; --port wins), and
on the next free one, said on stderr, when that one is taken."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from nerve.config.models import UI_PORT, UiConfig
from nerve.errors import UsageError
from nerve.ui.server import PORT_TRIES, free_port, listen_near
from nerve.workspace import init_workspace
from tests.helpers.browser import UiProcess


def _workspace(tmp_path: Path, port: int) -> Path:
    ws = init_workspace(tmp_path / "ws")
    with (ws.root / "nerve.yaml").open("a") as yaml:
        yaml.write(f"\nui:\n  port: {port}\n")
    return ws.root


def _port(ui: UiProcess) -> int:
    return int(ui.base.rsplit(":", 1)[1])


def test_the_default_port_is_fixed() -> None:
    assert UiConfig().port == UI_PORT == 5290


def test_ui_port_in_nerve_yaml_is_used(tmp_path: Path) -> None:
    port = free_port()
    ui = UiProcess(_workspace(tmp_path, port), {}, args=())
    try:
        assert ui.base == f"http://127.0.0.1:{port}"
    finally:
        assert ui.stop() == 0, ui.err
    assert ui.err.splitlines()[0].startswith("nerve ui: open the URL")  # nothing taken: no note


def test_the_port_flag_wins_over_nerve_yaml(tmp_path: Path) -> None:
    other = free_port()
    ui = UiProcess(_workspace(tmp_path, free_port()), {}, args=("--port", str(other)))
    try:
        assert _port(ui) == other
    finally:
        ui.stop()


def test_a_taken_port_is_said_in_one_line_and_the_next_free_one_is_used(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        ui = UiProcess(_workspace(tmp_path, port), {}, args=())
        try:
            used = _port(ui)
            assert port < used <= port + PORT_TRIES
        finally:
            ui.stop()
    assert ui.err.splitlines()[0] == f"nerve ui: port {port} is taken; using {used}"


def test_every_port_taken_is_a_usage_error_naming_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("nerve.ui.server.PORT_TRIES", 1)
    with socket.socket() as a, socket.socket() as b:
        a.bind(("127.0.0.1", 0))
        a.listen()
        port = a.getsockname()[1]
        try:
            b.bind(("127.0.0.1", port + 1))
        except OSError:
            pytest.skip(f"port {port + 1} is in use by another process")
        b.listen()
        with pytest.raises(UsageError, match=f"ports {port}-{port + 1} are all taken"):
            listen_near("127.0.0.1", port, print)


def test_at_a_terminal_ui_says_it_is_starting_before_the_seconds_of_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person sees a line at once, not a silent terminal until the login URL (a pipe, as
    UiProcess reads, gets only the URL's lines)."""
    import sys

    import nerve.ui.server
    from nerve.cli.main import run
    from tests.helpers.terminal import FakeTerminal

    served: list[str] = []
    root = _workspace(tmp_path, free_port())
    monkeypatch.setattr(nerve.ui.server, "serve", lambda *a, **k: served.append("served"))
    monkeypatch.setattr(sys, "stderr", FakeTerminal())
    with pytest.raises(SystemExit) as done:
        run(["-w", str(root), "ui"])
    assert done.value.code in (0, None) and served == ["served"]
    assert sys.stderr.getvalue() == "nerve ui: starting…\n"  # type: ignore[attr-defined]

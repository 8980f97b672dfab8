"""Two devices on this machine (two workspaces, two real daemons, a real nats-server on
loopback) joined by `nerve sync join` reach the same shared digest within seconds of each
new event; the server's stored bytes hold none of the planted plaintext."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from nerve.workspace import WorkspaceDir
from tests.helpers.natsd import NatsServer
from tests.sync.conftest import all_verify, cli, code_of, device, running, status

MARKER = "zebra-marker-7f3a"


def _in_sync_with(ws: WorkspaceDir, events: int) -> dict[str, object] | None:
    found = status(ws)
    devices = found["devices"]
    assert isinstance(devices, list)
    if found["in_sync"] and all(d["events"] == events for d in devices) and len(devices) == 2:
        return found
    return None


def _wait(check: object, timeout: float) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():  # type: ignore[operator]
            return time.monotonic() - start
        time.sleep(0.2)
    raise AssertionError(f"not in sync within {timeout} s")


@pytest.mark.slow  # two daemons start in ~15 s each on a busy machine
def test_two_daemons_converge_within_seconds_and_the_server_holds_no_plaintext(
    tmp_path: Path, server: NatsServer
) -> None:
    a, b = device(tmp_path, "alpha"), device(tmp_path, "beta")
    code = code_of(cli(a, "sync", "init", "--nats", server.url, "--device", "laptop"))
    cli(b, "sync", "join", code, "--device", "desk")
    with running(a, b):
        cli(a, "emit", "--source", "endpoint", "--line", f"{MARKER} on the laptop")
        took = _wait(lambda: _in_sync_with(b, _shared(a) + _shared(b)), 20)
        cli(b, "emit", "--source", "endpoint", "--line", "on the desk")
        took = max(took, _wait(lambda: _in_sync_with(a, _shared(a) + _shared(b)), 20))
        both = [status(a), status(b)]
    assert both[0] == both[1] and both[0]["in_sync"] is True, both
    names = {d["node"]: d["device"] for d in both[0]["devices"]}  # type: ignore[union-attr]
    assert names == {"alpha": "laptop", "beta": "desk"}
    print(f"converged {took:.2f} s after the slower of two new events")
    assert took < 10, took
    stored = subprocess.run(["grep", "-rl", MARKER, str(server.store)], capture_output=True)
    assert stored.returncode == 1, stored.stdout  # 1: no file holds it
    assert b"laptop" not in _all_bytes(server.store) and b"alpha" not in _all_bytes(server.store)
    for ws in (a, b):
        assert "verify   ok" in cli(ws, "replay", "--verify")
        assert all_verify(ws)


def _shared(ws: WorkspaceDir) -> int:
    """How many events of ``ws``'s own node its log holds (all shared: no keep_local)."""
    from nerve.log.reader import snapshot, table_since

    table = table_since(snapshot(ws.log_root), columns=["node"])
    return sum(1 for n in table.column("node").to_pylist() if n == ws.node)


def _all_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())

"""Bad and large input through a real daemon: structured refusals on the socket, senses that
return what cannot be stored, a deep state already in the log, and batches over 1 MiB."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nerve.runtime.ipc import encode
from nerve.workspace import init_workspace
from tests.conftest import run_cli
from tests.daemon_util import Daemon, write_sense

DEEP_STATE = """
initial_state = {"n": 0}
def compute(state):
    deep = 1
    for _ in range(200):
        deep = [deep]
    return {"state": {"n": state["n"] + 1, "deep": deep}}
"""
DEEP_OBSERVATION = """
from nerve import Observation, Result
initial_state = {"n": 0}
def compute(state):
    deep = []
    for _ in range(100_000):
        deep = [deep]
    seen = Observation(source="endpoint", line="d", payload=deep)
    return Result(state=state, observations=[seen])
"""
CONFIG = """
senses:
  deepstate: {interval: 300ms}
  deepobs: {interval: 300ms}
"""


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    ws = init_workspace(tmp_path / "ws")
    write_sense(ws.root, "deepstate", DEEP_STATE)
    write_sense(ws.root, "deepobs", DEEP_OBSERVATION)
    (ws.root / "nerve.yaml").write_text(CONFIG)
    with ws.open_log() as log:  # a state stored before the limit: the daemon must still start
        deep = b'{"state":' + b"[" * 5000 + b"]" * 5000 + b"}"
        log.append("sense.state", source=1024, subject="deepstate", line="old", payload=deep)
    d = Daemon(ws.root)
    d.start()
    try:
        yield d
    finally:
        d.stop()


def _exchange(path: Path, *lines: bytes) -> list[dict[str, Any]]:
    """Send each line on one connection and read one reply per line."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(path))
        replies, data = [], b""
        for line in lines:
            sock.sendall(line)
            while b"\n" not in data:
                chunk = sock.recv(1 << 16)
                assert chunk, "the daemon closed the connection"
                data += chunk
            reply, _, data = data.partition(b"\n")
            replies.append(json.loads(reply))
        return replies


def _error(reply: dict[str, Any]) -> dict[str, Any]:
    assert reply["ok"] is False and isinstance(reply["error"], dict), reply
    return dict(reply["error"])


def test_socket_refusals_are_structured_and_the_connection_survives(daemon: Daemon) -> None:
    emit = {"type": "emit", "events": [{"source": "shell"}, {"source": "shell", "kind": [1]}]}
    lone = {"type": "emit", "events": [{"source": "shell", "line": "a\ud800"}]}
    deep = b'{"type":"emit","events":[{"source":"shell","payload":' + b"[" * 100_000
    deep += b"]" * 100_000 + b"}]}\n"
    replies = _exchange(
        daemon.socket,
        encode(emit),
        encode(lone),
        deep,
        b"junk\n",
        b'{"type":"nope"}\n',
        b'{"type":"trigger-sense","sense":"ghost"}\n',
        encode({"type": "status"}),
    )
    kind, text, nested, junk, unknown, ghost, status = replies
    assert _error(kind) == {
        "type": "EventError",
        "message": "event 2: kind must be a string, got list",
        "field": "events[1].kind",
    }
    assert (
        _error(text)["field"] == "events[0].line"
        and "not valid Unicode" in text["error"]["message"]
    )
    assert _error(nested)["type"] == "EventError" and _error(nested)["field"] == "events[0].payload"
    assert "nests 100000 levels" in nested["error"]["message"]
    assert _error(junk)["type"] == "UsageError" and "not valid JSON" in junk["error"]["message"]
    assert _error(unknown)["type"] == "UsageError" and _error(unknown)["field"] == "type"
    assert _error(ghost) == {
        "type": "SenseError",
        "message": "unknown sense 'ghost'",
        "field": "sense",
    }
    assert status["ok"] and status["status"]["pid"] == daemon.pid()
    assert not daemon.events("observation")  # the good first event of a refused batch too
    proc = run_cli("--workspace", str(daemon.root), "sense", "trigger", "ghost", check=False)
    assert proc.returncode == 1 and proc.stderr.startswith("SenseError: unknown sense 'ghost'")


def test_senses_returning_what_cannot_be_stored_get_errors(daemon: Daemon) -> None:
    def by_sense() -> dict[str, list[dict[str, Any]]]:
        found: dict[str, list[dict[str, Any]]] = {}
        for event in daemon.events("sense.error"):
            found.setdefault(event["subject"], []).append(event["data"])
        return found if len(found.get("deepstate", [])) >= 2 and "deepobs" in found else {}

    errors = daemon.wait_for(by_sense, what="errors from both senses")
    restore, *rest = errors["deepstate"]
    assert restore["kind"] == "state-restore"  # the deep state stored before it started
    assert any(
        e["kind"] == "unserialisable" and "state nests 201 levels" in e["error"] for e in rest
    ), rest
    assert any(
        e["kind"] == "unserialisable" and "payload nests too many levels" in e["error"]
        for e in errors["deepobs"]
    ), errors["deepobs"]
    assert not daemon.events("observation", "deepobs")
    status = daemon.request({"type": "status"})
    assert status["ok"] and status["status"]["segments"] == 0

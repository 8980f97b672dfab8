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
from tests.daemon_util import Daemon, started, write_sense

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
    with started(ws.root) as d:
        yield d


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


@pytest.fixture
def quiet(tmp_path: Path) -> Iterator[Daemon]:
    """A daemon with no senses: nothing but what a test sends is appended."""
    ws = init_workspace(tmp_path / "quiet")
    (ws.root / "nerve.yaml").write_text("senses: {}\n")
    with started(ws.root) as d:
        yield d


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
        "hint": _error(ghost)["hint"],
    }
    assert _error(ghost)["hint"].startswith("the senses are: ")
    assert status["ok"] and status["status"]["pid"] == daemon.pid()
    assert not daemon.events("observation")  # the good first event of a refused batch too
    proc = run_cli("--workspace", str(daemon.root), "sense", "trigger", "ghost", check=False)
    assert proc.returncode == 1 and proc.stderr.startswith("SenseError: unknown sense 'ghost'")
    proc = run_cli("--workspace", str(daemon.root), "sense", "trigger", "deepobz", check=False)
    assert "hint: did you mean 'deepobs'?" in proc.stderr


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


def _big_batch(count: int, key: str) -> str:
    """JSON lines of ``count`` events, about 600 bytes each, numbered under ``key``."""
    return "".join(
        json.dumps({"source": "shell", "line": f"{i:06d} " + "x" * 560, "payload": {key: i}}) + "\n"
        for i in range(count)
    )


def test_batches_over_a_request_stream_through_the_daemon(quiet: Daemon, tmp_path: Path) -> None:
    daemon, ws = quiet, str(quiet.root)
    batch = _big_batch(3000, "i")  # 1.8 MB: more than one request may carry
    assert len(batch.encode()) > 1 << 20
    out = run_cli("--workspace", ws, "emit", "--jsonl", "-", "--json", input=batch).stdout
    stored = [json.loads(line) for line in out.splitlines()]
    assert [row["payload"]["i"] for row in stored] == list(range(3000))
    numbered = [e["data"] for e in daemon.events("observation", "")]
    assert [d["i"] for d in numbered if "i" in d] == list(range(3000))
    other = init_workspace(tmp_path / "other")
    run_cli("--workspace", str(other.root), "emit", "--jsonl", "-", input=_big_batch(2500, "j"))
    dump = run_cli("--workspace", str(other.root), "tail", "--all", "--json").stdout
    proc = run_cli("--workspace", ws, "import", "-", input=dump)
    assert "imported 2500 events" in proc.stderr
    numbered = [e["data"] for e in daemon.events("observation", "")]
    assert [d["j"] for d in numbered if "j" in d] == list(range(2500))
    assert run_cli("--workspace", ws, "seal").returncode == 0
    status = daemon.request({"type": "status"})["status"]
    assert status["segments"] == 1  # counted off the event loop, refreshed after the seal


def test_a_batch_sent_in_parts_is_all_or_nothing(quiet: Daemon) -> None:
    def part(first: int, count: int, **extra: Any) -> bytes:
        events = [{"source": "shell", "line": f"e{i}"} for i in range(first, first + count)]
        return encode({"type": "emit", "events": events, **extra})

    before = len(quiet.events())
    bad = json.loads(part(3, 2, stage="s1"))
    bad["events"][1]["valid_time_ns"] = 2**70
    held, refused, after = _exchange(
        quiet.socket,
        part(0, 3, stage="s1", more=True),
        encode(bad),
        part(5, 1, stage="s1"),  # the refusal dropped the stage: this is a batch of its own
    )
    assert held == {"ok": True, "staged": 3}
    assert _error(refused)["field"] == "events[4].valid_time_ns"  # counted across the parts
    assert refused["error"]["message"].startswith("event 5: valid_time_ns")
    assert [e["line"] for e in after["events"]] == ["e5"]
    assert [e["line"] for e in quiet.events()[before:]] == ["e5"]
    replies = _exchange(
        quiet.socket,
        part(0, 2, stage="s2", more=True),
        part(2, 2, stage="s2", more=True),
        encode({"type": "import", "events": [], "stage": "s2"}),
        part(4, 1, stage="s2"),
    )
    assert (
        _error(replies[2])["field"] == "stage"
        and "opened by a 'emit'" in replies[2]["error"]["message"]
    )
    assert [e["line"] for e in replies[3]["events"]] == ["e4"]
    assert [e["line"] for e in quiet.events()[before:]] == ["e5", "e4"]

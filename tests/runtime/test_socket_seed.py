"""Seed 001's daemon IPC, unchanged: its client connects to the workspace root's nerve.sock and
sends the seed's exact requests; the replies have the shapes its parser accepts."""

from __future__ import annotations

import json
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nerve.workspace import init_workspace
from tests.daemon_util import COUNTER, Daemon, started, write_sense
from tests.helpers.workflows import write_workflow

CONFIG = """
senses:
  cpu-usage: {group: system, interval: 200ms, throttle: 100ms, timeout: 5s}
  idle: {group: system}
workflows:
  hello: {}
"""
HELLO = """
from nerve.flow import END, Start

def greet(start, messages):
    return f"hello {start.prompt}"

roles = {"greet": greet}

def moderator(context, round, max_rounds):
    return "greet" if isinstance(context, Start) else END
"""


def seed_call(path: Path, line: bytes) -> Any:
    """What seed 001's client does: one JSON line out, the first line back, parsed."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(path))
        sock.sendall(line)
        data = b""
        while b"\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data.split(b"\n", 1)[0])


def is_sense_info(value: Any) -> bool:
    """Seed 001's isSenseInfo, as its CLI checks each entry of a list-senses reply."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("group"), str)
        and all(
            value.get(key, "missing") is None or isinstance(value.get(key), int | float)
            for key in ("throttle", "timeout", "lastSignalTs")
        )
    )


def is_trigger_reply(value: Any) -> bool:
    """Seed 001's parseDaemonResponse accepts ok: true, or ok: false with a string error."""
    return isinstance(value, dict) and (
        value.get("ok") is True
        or (value.get("ok") is False and isinstance(value.get("error"), str))
    )


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    ws = init_workspace(tmp_path_factory.mktemp("seedsock") / "ws")
    write_sense(ws.root, "cpu-usage", COUNTER)
    write_sense(ws.root, "idle", COUNTER)
    write_workflow(ws.root, "hello", HELLO)
    (ws.root / "nerve.yaml").write_text(CONFIG)
    with started(ws.root) as d:
        yield d


def test_the_seed_socket_is_at_the_root_and_owner_only(daemon: Daemon) -> None:
    path = daemon.root / "nerve.sock"
    mode = path.lstat().st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    assert daemon.socket.exists()  # nerve's own socket is still there


def test_list_senses_has_the_seed_fields(daemon: Daemon) -> None:
    path = daemon.root / "nerve.sock"

    def signalled() -> dict[str, Any] | None:  # no sense listens: the signal is not stored
        reply = seed_call(path, b'{"type":"list-senses"}\n')
        cpu = next(s for s in reply["senses"] if s["name"] == "cpu-usage")
        return reply if cpu["lastSignalTs"] is not None else None

    reply = daemon.wait_for(signalled, what="a cpu-usage signal")
    assert reply["ok"] is True and all(is_sense_info(s) for s in reply["senses"])
    senses = {s["name"]: s for s in reply["senses"]}
    cpu, idle = senses["cpu-usage"], senses["idle"]
    assert (cpu["group"], cpu["throttle"], cpu["timeout"]) == ("system", 100, 5000)
    assert isinstance(cpu["lastSignalTs"], int) and cpu["lastSignalTs"] > 1_600_000_000_000
    assert (idle["throttle"], idle["timeout"], idle["lastSignalTs"]) == (None, None, None)
    assert cpu["throttle_ms"] == 100 and "computes" in cpu  # nerve's own fields beside them
    # nerve's socket answers with the same fields
    assert daemon.request({"type": "list-senses"})["senses"][0].keys() >= cpu.keys() - {"last_ns"}


def test_triggers_in_the_seeds_shapes(daemon: Daemon) -> None:
    path = daemon.root / "nerve.sock"
    sense = seed_call(path, b'{"type":"trigger-sense","sense":"idle"}\n')
    assert sense == {"ok": True}
    daemon.wait_for(lambda: daemon.events("sense.state", "idle"), what="idle computed")
    line = b'{"type":"trigger-workflow","workflow":"hello","prompt":"seed","maxRounds":100}\n'
    started_run = seed_call(path, line)
    assert is_trigger_reply(started_run) and started_run["ok"] is True
    runs = [e["data"] for e in daemon.events("workflow.requested", "hello")]
    assert any(r["prompt"] == "seed" and r["max_rounds"] == 100 for r in runs)
    refusals = [
        b'{"type":"trigger-sense","sense":"ghost"}\n',
        b'{"type":"trigger-workflow","workflow":"ghost","prompt":"","maxRounds":100}\n',
        b'{"type":"no-such-request"}\n',
        b"not json\n",
    ]
    for request in refusals:
        reply = seed_call(path, request)
        assert is_trigger_reply(reply) and reply["ok"] is False, reply
    ghost = seed_call(path, refusals[1])
    assert ghost["error"] == "WorkflowError: unknown workflow 'ghost'"
    # nerve's own socket keeps nerve's error object
    mine = daemon.request({"type": "trigger-workflow", "workflow": "ghost"})
    assert mine["error"]["type"] == "WorkflowError"


def test_the_seed_socket_goes_away_with_the_daemon(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    (ws.root / "nerve.yaml").write_text("senses: {}\n")
    with started(ws.root):
        assert (ws.root / "nerve.sock").exists()
    assert not (ws.root / "nerve.sock").exists()
    # a file that is not a socket is left alone, and the daemon still starts
    (ws.root / "nerve.sock").write_text("mine\n")
    with started(ws.root) as d:
        assert d.request({"type": "status"})["ok"] is True
        log = (ws.root / "data" / "daemon.log").read_text()
        assert "no seed-compatible socket at" in log
    assert (ws.root / "nerve.sock").read_text() == "mine\n"

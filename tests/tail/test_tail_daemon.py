"""`nerve tail -f` through a running daemon: events pushed as they are committed, once each,
in order; a subscriber that hangs up or falls behind never holds the kernel back."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.daemon_util import Daemon, started
from tests.helpers.lines import LineReader

FILLER = "x" * 400  # big enough that a few thousand events fill any pipe or socket buffer


@pytest.fixture
def daemon(workspace: WorkspaceDir) -> Iterator[Daemon]:
    (workspace.root / "nerve.yaml").write_text("senses: {}\nlog: {durability: os}\n")
    with started(workspace.root) as d:
        yield d


def emit_batch(root: Path, start: int, count: int) -> None:
    lines = (
        json.dumps({"source": "shell", "line": f"e{i}", "payload": {"pad": FILLER}})
        for i in range(start, start + count)
    )
    run_cli("--workspace", str(root), "emit", "--jsonl", "-", input="\n".join(lines) + "\n")


def status(d: Daemon) -> dict[str, object]:
    reply = d.request({"type": "status"})
    assert reply["ok"], reply
    return reply["status"]  # type: ignore[no-any-return]


def tail_f(root: Path, *args: str) -> subprocess.Popen[bytes]:
    argv = ["--workspace", str(root), "tail", "-f", "--json", *args]
    return subprocess.Popen(
        [sys.executable, "-m", "nerve", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def test_follow_through_the_daemon_gives_each_event_once_in_order(daemon: Daemon) -> None:
    root = daemon.root
    run_cli("--workspace", str(root), "emit", "--source", "shell", "--line", "before")
    follower = tail_f(root, "-n", "1", "--kind", "observation")
    try:
        out = LineReader(follower)
        lines = out.take(1, timeout=30)
        daemon.wait_for(lambda: status(daemon)["followers"] == 1, what="a subscriber")
        for i in range(3):
            run_cli("--workspace", str(root), "emit", "--source", "network", "--line", f"after {i}")
        emit_batch(root, 0, 50)
        lines += out.take(53, timeout=30)
    finally:
        follower.kill()
        follower.communicate()
    got = [json.loads(line)["line"] for line in lines]
    assert got == ["before", "after 0", "after 1", "after 2", *(f"e{i}" for i in range(50))]
    stored = {e["line"]: e for e in daemon.events(kind="observation")}
    assert json.loads(lines[1])["id"] == stored["after 0"]["id"].hex()  # the wire form, whole
    daemon.wait_for(lambda: status(daemon)["followers"] == 0, what="the subscriber to go")
    run_cli("--workspace", str(root), "emit", "--source", "shell", "--line", "still writing")
    assert daemon.events(kind="observation")[-1]["line"] == "still writing"


def test_a_subscriber_that_hangs_up_does_not_disturb_the_kernel(daemon: Daemon) -> None:
    for _ in range(3):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(daemon.socket))
            sock.sendall(b'{"type":"follow","filter":{"kinds":["observation"]}}\n')
            reply = json.loads(sock.makefile("rb").readline())
            assert reply["ok"] and len(reply["joined"]) == 2
    emit_batch(daemon.root, 0, 10)
    daemon.wait_for(lambda: status(daemon)["followers"] == 0, what="hung-up subscribers to go")
    assert [e["line"] for e in daemon.events(kind="observation")] == [f"e{i}" for i in range(10)]


def test_a_slow_subscriber_is_dropped_with_the_stamp_to_resume_from(daemon: Daemon) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(daemon.socket))
        sock.sendall(b'{"type":"follow","filter":{"sources":[5]}}\n')
        stream = sock.makefile("rb")
        assert json.loads(stream.readline())["ok"]
        for start in range(0, 36_000, 12_000):  # not reading: the daemon's queue fills
            emit_batch(daemon.root, start, 12_000)
        assert status(daemon)["followers_dropped"] == 1  # the kernel went on regardless
        lines = [json.loads(line) for line in stream]  # then the daemon closed it
    *events, final = lines
    assert final["type"] == "dropped" and final["resume"] == events[-1]["hlc"]
    assert [e["line"] for e in events] == [f"e{i}" for i in range(len(events))]
    assert 0 < len(events) < 36_000


def test_a_dropped_tail_reads_the_log_and_loses_nothing(daemon: Daemon) -> None:
    follower = tail_f(daemon.root, "-n", "0", "--kind", "observation")
    try:
        daemon.wait_for(lambda: status(daemon)["followers"] == 1, what="a subscriber")
        for start in range(0, 36_000, 12_000):  # its stdout is not read: it falls behind
            emit_batch(daemon.root, start, 12_000)
        assert status(daemon)["followers_dropped"] == 1
        lines = LineReader(follower).take(36_000, timeout=120)
        daemon.wait_for(lambda: status(daemon)["followers"] == 1, what="it to subscribe again")
    finally:
        follower.kill()
        follower.communicate()
    assert [json.loads(line)["line"] for line in lines] == [f"e{i}" for i in range(36_000)]

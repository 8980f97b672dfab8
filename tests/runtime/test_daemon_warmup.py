"""A starting daemon answers `status` and stores emits before its warm-up (restoring the
last run, loading senses and extensions) has finished; everything else waits for it."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from nerve.clock import Hlc
from nerve.errors import DaemonError
from nerve.runtime.senses import ended_cleanly, last_alive_ns
from nerve.workspace import WorkspaceDir, init_workspace
from tests.daemon_util import COUNTER, Daemon, write_sense

# A real daemon whose warm-up waits, as it begins reading the log back, for a gate the
# test opens: what answers before the gate opens answers before the warm-up is done.
HELD_WARM_UP = """
import pathlib, sys, time
from nerve.runtime import daemon, kernel
from nerve.workspace import WorkspaceDir

root = pathlib.Path(sys.argv[1])
gate = root / "gate"
real = kernel.stored_states

def held(*args, **kwargs):
    (gate / "warming").touch()
    deadline = time.monotonic() + 120
    while not (gate / "open").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return real(*args, **kwargs)

kernel.stored_states = held
daemon.run_foreground(WorkspaceDir.at(root), echo=sys.stderr)
"""


TWO_SENSES = """senses:
  counter: {interval: 1h}
  second: {path: senses/counter, interval: 1h}
"""


def _status(d: Daemon) -> dict[str, Any] | None:
    try:
        reply = d.request({"type": "status"})
    except DaemonError:
        return None
    return reply["status"] if reply.get("ok") else None


def _emit(d: Daemon, kind: str, line: str) -> dict[str, Any]:
    event = {"kind": kind, "source": "shell", "line": line, "subject": "warm"}
    return d.request({"type": "emit", "events": [event]})


def _in_thread(fn: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out


def test_status_and_emits_are_answered_before_the_warm_up_ends(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    write_sense(ws.root, "counter", COUNTER)
    (ws.root / "nerve.yaml").write_text("senses:\n  counter: {interval: 1h}\n")
    d = Daemon(ws.root)
    gate = ws.root / "gate"
    gate.mkdir()
    with (ws.root / "data" / "held.log").open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", HELD_WARM_UP, str(ws.root)], stdout=err, stderr=err
        )
    try:
        d.wait_for((gate / "warming").exists, timeout=90, what="the warm-up to begin")
        # ordering, not a clock: all of this happens while the warm-up is held
        status = d.wait_for(lambda: _status(d), timeout=90, what="status during the warm-up")
        assert status["warming"] is True and status["senses"] == 0
        assert status["capture"] is None  # a recorded pause is not read back yet
        early = _emit(d, "observation", "early")
        assert early["ok"] and early["events"][0]["line"] == "early"
        listing, listed = _in_thread(lambda: d.request({"type": "list-senses"}))
        restored, stored = _in_thread(lambda: _emit(d, "sense.state", "by hand"))
        listing.join(0.5)
        assert not listed and not stored  # they wait for the warm-up
        assert not (gate / "open").exists()
        # an edit made while warming up (the config was read before it) is what runs
        (ws.root / "nerve.yaml").write_text(TWO_SENSES)
        (gate / "open").touch()
        listing.join(60)
        restored.join(60)
        assert [s["name"] for s in listed[0]["senses"]] == ["counter", "second"]
        assert stored[0]["ok"]
        done = d.wait_for(lambda: (s := _status(d)) and not s["warming"] and s, timeout=60)
        assert done["senses"] == 2
    finally:
        (gate / "open").touch()
        d.stop()
        proc.wait(timeout=60)
    kinds = [(e["kind"], e["line"]) for e in d.events() if e["subject"] in ("daemon", "warm")]
    assert kinds[0] == ("observation", "early")  # stored before the start is on record,
    assert kinds[1][0] == "daemon.started"  # which marks the warm-up's end (as it always did)
    assert kinds[2] == ("sense.state", "by hand")


def test_the_warm_up_reads_the_log_as_the_daemon_found_it(tmp_path: Path) -> None:
    """A daemon takes emits (and might record its start) before reading back how the last
    run ended: ``upto`` keeps those out of the answer."""
    ws: WorkspaceDir = init_workspace(tmp_path / "ws")
    with ws.open_log() as log:
        log.append("daemon.started", subject="daemon", line="first run")
        stopped = log.append("daemon.stopped", subject="daemon", line="stopped")
        found = log.newest
        log.append("daemon.started", subject="daemon", line="this run")
        log.append("observation", subject="warm", line="an emit during the warm-up")
    assert found == stopped.hlc
    assert ended_cleanly(ws, upto=found)
    assert not ended_cleanly(ws)  # the newest start has no stop after it
    assert last_alive_ns(ws, upto=found) == stopped.hlc.physical_ns
    assert last_alive_ns(ws) != stopped.hlc.physical_ns
    assert ended_cleanly(ws, upto=Hlc(0, 0))  # nothing before: no run to have ended
    assert last_alive_ns(ws, upto=Hlc(0, 0)) is None


def test_the_query_process_keeps_the_views_read_last_past_a_bad_edit(tmp_path: Path) -> None:
    """The daemon's queries (its warm-up's among them) go on over the projections of the
    configuration it runs when nerve.yaml is edited into something it rejects."""
    from nerve.runtime.queries import QueryChild

    ws = init_workspace(tmp_path / "ws")
    with ws.open_log() as log:
        log.append("observation", subject="warm", line="one")
    child = QueryChild()
    try:
        first = child.connect(ws.root).execute("SELECT count(*) FROM events").fetchone()
        (ws.root / "nerve.yaml").write_text("senses:\n  x: {interval: 10x}\n")
        again = child.connect(ws.root).execute("SELECT count(*) FROM events").fetchone()
    finally:
        child.close()
    assert first == again == (1,)


def test_a_daemon_slow_to_answer_is_there_and_a_dead_socket_is_not(tmp_path: Path) -> None:
    """`ping` (how every command tells "through the daemon" from "straight to the log"):
    a listener that takes the request but has not answered yet holds the log."""
    import socket

    from nerve.runtime import ipc

    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()
    try:
        assert ipc.ping(path, timeout=0.2)  # accepted by the kernel, never answered
        quits = threading.Thread(target=_close_each, args=(server, 2), daemon=True)
        quits.start()
        assert not ipc.ping(path, timeout=30)  # closed without a word
        quits.join(30)
    finally:
        server.close()
    assert not ipc.ping(path, timeout=0.2)  # nobody listens on the file left behind


def _close_each(server: Any, count: int) -> None:
    """Take ``count`` connections (the one left waiting above first) and close each."""
    for _ in range(count):
        server.accept()[0].close()

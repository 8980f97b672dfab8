"""A real daemon process, driven over its Unix socket."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from nerve.workspace import init_workspace
from tests.conftest import run_cli
from tests.daemon_util import COUNTER, Daemon, started, write_sense

HANG = """
import time
initial_state = {"n": 0}
def compute(state):
    if state["n"] >= 1:
        time.sleep(60)
    return {"state": {"n": state["n"] + 1}}
"""
CRASH = """
import os
initial_state = {"n": 0}
def compute(state):
    if state["n"] == 1:
        os._exit(3)
    return {"state": {"n": state["n"] + 1}}
"""
BAD_STATE = """
initial_state = {"n": 0}
def compute(state):
    if state["n"] == 2:
        return {"state": {"n": object()}}
    return {"state": {"n": state["n"] + 1}}
"""
TRIGGERS = """
initial_state = {"n": 0}
def compute(state):
    n = state["n"] + 1
    wf = "nope|5|go" if n == 1 else ("cleanup|0|x" if n == 2 else "cleanup|3|tidy up")
    return {"state": {"n": n}, "workflow": wf}
"""
RAISES = """
initial_state = {"n": 0}
def compute(state):
    if state["n"] == 1:
        raise RuntimeError("sensor unplugged")
    return {"state": {"n": state["n"] + 1}}
"""
CONFIG = """
senses:
  counter: {group: a, interval: 200ms}
  echo: {group: b, path: senses/counter, on: [counter], throttle: 1s}
  late: {group: c, path: senses/counter, interval: 100ms, grace_period: 4s}
  hang: {group: h, interval: 300ms, timeout: 1s}
  crash: {group: x, interval: 300ms}
  badstate: {group: a, interval: 200ms}
  triggers: {group: b, interval: 300ms}
  raises: {group: a, interval: 300ms}
workflows:
  cleanup: {concurrency: 1}
"""


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    ws = init_workspace(tmp_path / "ws")
    for name, code in (
        ("counter", COUNTER),
        ("hang", HANG),
        ("crash", CRASH),
        ("badstate", BAD_STATE),
        ("triggers", TRIGGERS),
        ("raises", RAISES),
    ):
        write_sense(ws.root, name, code)
    (ws.root / "nerve.yaml").write_text(CONFIG)
    with started(ws.root) as d:
        yield d


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _computes(d: Daemon, sense: str) -> list[dict[str, object]]:
    return d.events("sense.state", sense)


def test_scheduling_errors_and_isolation(daemon: Daemon) -> None:
    daemon.wait_for(lambda: len(_computes(daemon, "counter")) >= 15, what="15 counter computes")
    counter = _computes(daemon, "counter")
    span_s = (counter[-1]["physical_ns"] - counter[0]["physical_ns"]) / 1e9  # type: ignore[operator]
    # interval: one compute per 200 ms, never more
    assert len(counter) <= span_s * 5 + 2
    # on + throttle: echo follows counter's signals but at most once a second
    echo = _computes(daemon, "echo")
    gaps = [(b["physical_ns"] - a["physical_ns"]) / 1e9 for a, b in itertools.pairwise(echo)]  # type: ignore[operator]
    # Stamps are commit times, so single gaps jitter; none may be far under the window,
    # and on average they must respect it.
    assert echo and all(g >= 0.8 for g in gaps), gaps
    assert not gaps or sum(gaps) / len(gaps) >= 0.95, gaps
    assert all(str(e["data"]["reason"]).startswith("on:counter") for e in echo)  # type: ignore[index]
    # grace: nothing from `late` in its first 4 s (longer than a worker takes to start, so
    # an ignored grace shows), then its 100 ms interval takes over
    daemon.wait_for(lambda: len(_computes(daemon, "late")) >= 3, what="late computes")
    first_late = min(e["physical_ns"] for e in _computes(daemon, "late"))  # type: ignore[type-var]
    started_ev = daemon.events("daemon.started")[-1]["physical_ns"]
    delay_s = (first_late - started_ev) / 1e9  # type: ignore[operator]
    assert 3.9 <= delay_s <= 9.0, f"late first computed {delay_s:.2f} s after the start"
    # a hung compute is killed at its timeout; its group restarts; others keep running
    daemon.wait_for(
        lambda: any(e["data"]["kind"] == "timeout" for e in daemon.events("sense.error", "hang")),
        what="hang timeout",
    )
    restarts = daemon.events("sense.restart")
    assert any(r["subject"] == "h" and "hung" in r["data"]["reason"] for r in restarts)
    # a compute that kills its worker: error, restart, and the sense carries on
    daemon.wait_for(
        lambda: any(e["data"]["kind"] == "crash" for e in daemon.events("sense.error", "crash")),
        what="crash error",
    )
    assert any(r["subject"] == "x" for r in daemon.events("sense.restart"))
    # unserialisable state: an error, state unchanged
    daemon.wait_for(lambda: daemon.events("sense.error", "badstate"), what="badstate error")
    err = daemon.events("sense.error", "badstate")[0]["data"]
    assert err["kind"] == "unserialisable"
    states = [e["data"]["state"]["n"] for e in _computes(daemon, "badstate")]
    assert states[:2] == [1, 2] and 3 not in states
    # an exception: an error event each time, the state stays where it was
    daemon.wait_for(lambda: len(daemon.events("sense.error", "raises")) >= 2, what="raises errors")
    errors = daemon.events("sense.error", "raises")
    assert all(e["data"]["kind"] == "exception" for e in errors)
    assert "RuntimeError: sensor unplugged" in errors[0]["data"]["error"]
    assert [e["data"]["state"]["n"] for e in _computes(daemon, "raises")] == [1]
    # other groups kept computing throughout
    before = len(_computes(daemon, "counter"))
    daemon.wait_for(lambda: len(_computes(daemon, "counter")) > before, what="counter computing")


def test_workflow_triggers_are_validated(daemon: Daemon) -> None:
    daemon.wait_for(lambda: len(_computes(daemon, "triggers")) >= 3, what="three trigger computes")
    rejected = daemon.events("workflow.rejected", "triggers")
    assert any("unknown workflow 'nope'" in r["data"]["error"] for r in rejected)
    assert any("max_rounds" in r["data"]["error"] for r in rejected)
    requested = daemon.events("workflow.requested", "cleanup")
    assert requested and requested[0]["data"]["max_rounds"] == 3
    assert (
        requested[0]["data"]["prompt"] == "tidy up" and requested[0]["data"]["sense"] == "triggers"
    )
    # the computes that carried rejected triggers still counted
    assert [e["data"]["state"]["n"] for e in _computes(daemon, "triggers")][:3] == [1, 2, 3]


def _raw(sock_path: Path, payload: bytes, *, shutdown: bool = False) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(sock_path))
        sock.sendall(payload)
        if shutdown:
            sock.shutdown(socket.SHUT_WR)
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        return data


def test_socket_is_private_and_survives_junk(daemon: Daemon) -> None:
    mode = stat.S_IMODE(daemon.socket.stat().st_mode)
    assert mode == 0o600
    assert b'"ok":false' in _raw(daemon.socket, b"this is not json\n")
    assert b"string" in _raw(daemon.socket, b"[1,2,3]\n")
    assert b"unknown request type" in _raw(daemon.socket, b'{"type":"explode"}\n')
    assert b"incomplete request" in _raw(daemon.socket, b'{"type":"sta', shutdown=True)
    assert b"larger than" in _raw(daemon.socket, b"x" * (2 << 20) + b"\n")
    assert b"non-empty string" in _raw(daemon.socket, b'{"type":"trigger-sense"}\n')
    assert b"unknown sense" in _raw(daemon.socket, b'{"type":"trigger-sense","sense":"ghost"}\n')
    status = daemon.request({"type": "status"})
    assert status["ok"] and status["status"]["pid"] == daemon.pid()


def test_cli_writes_go_through_the_daemon_and_second_daemon_is_refused(daemon: Daemon) -> None:
    ws = str(daemon.root)
    out = run_cli(
        "--workspace", ws, "emit", "--source", "shell", "--line", "via daemon", "--json"
    ).stdout
    assert '"line":"via daemon"' in out
    assert run_cli("--workspace", ws, "seal").returncode == 0
    proc = run_cli("--workspace", ws, "daemon", "start", check=False)
    assert proc.returncode == 1 and f"pid {daemon.pid()}" in proc.stderr
    proc = run_cli("--workspace", ws, "daemon", "run", check=False, timeout=30)
    assert proc.returncode == 1 and "already running" in proc.stderr
    trig = run_cli("--workspace", ws, "sense", "trigger", "counter")
    assert "triggered counter" in trig.stdout
    listing = run_cli("--workspace", ws, "sense", "list", "--json").stdout
    assert '"name":"counter"' in listing and '"computes":' in listing
    status = run_cli("--workspace", ws, "status").stdout
    assert f"pid {daemon.pid()}" in status


def test_hot_reload_good_and_bad(daemon: Daemon) -> None:
    config = daemon.root / "nerve.yaml"
    loaded = len(daemon.events("config.loaded"))
    fresh = "  fresh: {group: a, path: senses/counter, interval: 100ms}\n"
    config.write_text(CONFIG.replace("senses:\n", "senses:\n" + fresh))
    daemon.wait_for(lambda: _computes(daemon, "fresh"), what="the new sense to compute")
    assert len(daemon.events("config.loaded")) > loaded
    config.write_text(CONFIG.replace("interval: 200ms", "interval: 10x"))
    daemon.wait_for(lambda: daemon.events("config.rejected"), what="config.rejected")
    rejected = daemon.events("config.rejected")[-1]["data"]
    assert "invalid duration" in rejected["error"] and "nerve.yaml:3" in rejected["error"]
    before = len(_computes(daemon, "fresh"))  # the old configuration keeps running:
    daemon.wait_for(lambda: len(_computes(daemon, "fresh")) > before, what="fresh computing")
    write_sense(daemon.root, "counter", "def compute(state:\n")  # a syntax error
    daemon.wait_for(lambda: len(daemon.events("config.rejected")) >= 2, what="code edit rejected")


def test_kill_9_then_restart_keeps_every_sense_state(daemon: Daemon) -> None:
    daemon.wait_for(lambda: len(_computes(daemon, "counter")) >= 5, what="some computes")
    pid = daemon.pid()
    os.kill(pid, signal.SIGKILL)
    daemon.wait_for(lambda: not _alive(pid), what="the killed daemon to be gone")
    last = {}
    for ev in daemon.events("sense.state"):
        last[ev["subject"]] = ev["data"]["state"]
    proc = run_cli("--workspace", str(daemon.root), "replay", "--verify", "--json")
    assert '"ok":true' in proc.stdout
    daemon.start()
    daemon.wait_for(lambda: len(daemon.events("daemon.started")) >= 2, what="restart")
    restart_ns = daemon.events("daemon.started")[-1]["physical_ns"]
    daemon.wait_for(
        lambda: [e for e in _computes(daemon, "counter") if e["physical_ns"] > restart_ns],
        what="a compute after restart",
    )
    first_after = next(e for e in _computes(daemon, "counter") if e["physical_ns"] > restart_ns)
    assert first_after["data"]["state"]["n"] == last["counter"]["n"] + 1
    state = run_cli("--workspace", str(daemon.root), "sense", "state", "counter").stdout
    assert '"n":' in state
    daemon.stop()
    proc = run_cli("--workspace", str(daemon.root), "replay", "--verify", "--json")
    assert '"ok":true' in proc.stdout


def test_bad_config_is_reported_by_validate_and_start(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "bad")
    (ws.root / "nerve.yaml").write_text(
        "senses:\n  cpu:\n    interval: 10x\n    on: [ghost]\nreflexes:\n  - workflow: cleanup\n"
    )
    proc = run_cli("--workspace", str(ws.root), "validate", check=False)
    assert proc.returncode == 1
    assert "nerve.yaml:3:5: senses.cpu.interval: invalid duration" in proc.stderr
    assert "senses.cpu.on[0]: unknown sense 'ghost'" in proc.stderr
    assert "reflexes only schedule senses" in proc.stderr
    proc = run_cli("--workspace", str(ws.root), "daemon", "start", check=False)
    assert proc.returncode == 1 and "invalid duration" in proc.stderr
    (ws.root / "nerve.yaml").write_text("senses:\n  ghost: {interval: 1s}\n")
    proc = run_cli("--workspace", str(ws.root), "validate", check=False)
    assert proc.returncode == 1 and "no senses/ghost/sense.py" in proc.stderr


def test_undecodable_stored_state_falls_back_to_initial_state(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    write_sense(ws.root, "counter", COUNTER)
    (ws.root / "nerve.yaml").write_text("senses:\n  counter: {interval: 200ms}\n")
    junk = json.dumps(
        {
            "kind": "sense.state",
            "subject": "counter",
            "source": "vendor:1024",
            "payload_b64": "/w==",
        }
    )  # not JSON: the stored state cannot be decoded
    run_cli("--workspace", str(ws.root), "emit", "--jsonl", "-", input=junk + "\n")
    d = Daemon(ws.root)
    d.start()
    try:
        d.wait_for(lambda: d.events("sense.error", "counter"), what="a state-restore error")
        d.wait_for(lambda: len(_computes(d, "counter")) >= 2, what="computes")
    finally:
        d.stop()
    assert d.events("sense.error", "counter")[0]["data"]["kind"] == "state-restore"
    states = [e["data"] for e in _computes(d, "counter")]
    assert states[1]["state"] == {"n": 1}  # the junk one first, then initial_state + 1
    history = run_cli(
        "--workspace", str(ws.root), "sense", "history", "counter", "-n", "500", "--json"
    ).stdout
    assert '"kind":"sense.error"' in history and '"kind":"sense.state"' in history


def test_the_daemon_seals_by_age_and_by_size(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    config = ws.root / "nerve.yaml"
    segments = ws.root / "data" / "log" / "segments"

    def sealed() -> int:
        return len(list(segments.glob("*.parquet"))) if segments.exists() else 0

    def emit(count: int) -> None:
        batch = tmp_path / "batch.jsonl"
        lines = [json.dumps({"source": "shell", "line": f"e{i}"}) for i in range(count)]
        batch.write_text("\n".join(lines) + "\n")
        run_cli("--workspace", str(ws.root), "emit", "--jsonl", str(batch))

    config.write_text("senses: {}\nlog: {seal_max_age: 1s}\n")
    with started(ws.root) as daemon:
        daemon.wait_for(lambda: sealed() >= 1, what="the start's own events sealed by age")
        before = sealed()
        emit(1)  # nothing else is written: only the age deadline can seal this
        daemon.wait_for(lambda: sealed() > before, what="a seal by age")
    config.write_text("senses: {}\nlog: {seal_max_age: 1h, seal_max_events: 20}\n")
    with started(ws.root) as daemon:
        before = sealed()
        emit(25)  # only the size limit can seal within the hour
        daemon.wait_for(lambda: sealed() > before, what="a seal by size")
        # the count status shows is refreshed once the seal has been recorded
        daemon.wait_for(
            lambda: daemon.request({"type": "status"})["status"]["segments"] == sealed(),
            what="status to count the segments",
        )

"""The cheap host reads behind the processes and network senses (Linux), against psutil, and
the senses' psutil fallback where they do not apply."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from nerve.machine import procs, sockets
from nerve.machine.deadband import Band, Deadband
from tests.runtime.test_senses_builtin import initial, load, poll, run

pytestmark = pytest.mark.skipif(not procs.available(), reason="needs a Linux /proc")


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock


def test_a_proc_scan_sees_a_process_as_psutil_does(child: subprocess.Popen[bytes]) -> None:
    found = {s.pid: s for s in procs.scan() or []}
    mine = found[child.pid]
    theirs = psutil.Process(child.pid)
    assert mine.name == theirs.name()
    assert mine.create_time == theirs.create_time()  # the same (pid, create_time) key
    assert mine.rss_bytes > 0 and mine.cpu_s >= 0
    assert procs.real_uid(child.pid) == theirs.uids().real


def test_netlink_lists_a_listening_socket_and_its_holder(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    [mine] = [s for s in sockets.listening() or [] if s.port == port]
    assert mine.address == "127.0.0.1" and mine.inode > 0
    assert sockets.holders({mine.inode}) == {mine.inode: psutil.Process().pid}


def _no_psutil_scans(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the Linux path must not scan through psutil")

    monkeypatch.setattr(psutil, "net_connections", refused)
    monkeypatch.setattr(psutil, "process_iter", refused)


def test_the_network_sense_finds_ports_without_reading_every_connection(
    listener: socket.socket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_psutil_scans(monkeypatch)
    state = run("network", initial("network"), tmp_path).state
    key = f"127.0.0.1:{listener.getsockname()[1]}"
    assert state["ports"][key]["pid"] == psutil.Process().pid
    again = run("network", state, tmp_path).state
    assert again["ports"][key]["pid"] == psutil.Process().pid  # known: not looked up again


def test_the_processes_sense_scans_without_psutil(
    child: subprocess.Popen[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_psutil_scans(monkeypatch)
    state = run("processes", initial("processes"), tmp_path).state
    assert state["known"][str(child.pid)] == psutil.Process(child.pid).create_time()


def test_without_the_fast_paths_the_senses_use_psutil(
    child: subprocess.Popen[bytes],
    listener: socket.socket,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(procs, "scan", lambda: None)
    monkeypatch.setattr(sockets, "listening", lambda: None)
    state = run("processes", initial("processes"), tmp_path).state
    assert str(child.pid) in state["known"]
    ports = run("network", initial("network"), tmp_path).state["ports"]
    assert f"127.0.0.1:{listener.getsockname()[1]}" in ports


def test_a_busy_process_gets_its_cpu_share_from_the_scan(tmp_path: Path) -> None:
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        sense = load("processes")
        list(sense._snapshot())  # the shares are over the time between two scans

        def busy() -> bool:
            return any(p.pid == hog.pid and p.cpu_percent >= 10 for p in sense._snapshot())

        assert poll(busy, timeout=20)
    finally:
        hog.kill()
        hog.wait()


# --- report on change, with keyframes ---------------------------------------------------------


def test_a_reading_is_news_when_it_moves_by_its_band_or_a_keyframe_is_due() -> None:
    sent = Deadband(warmup=0)
    bands = {"busy": Band(50), "load": Band(25, 0.1)}
    second = 10**9
    assert sent.news("cpu", {"busy": 20, "load": 100}, bands, 60 * second, now_ns=0)  # first
    assert not sent.news("cpu", {"busy": 60, "load": 120}, bands, 60 * second, now_ns=5 * second)
    assert sent.news("cpu", {"busy": 70, "load": 100}, bands, 60 * second, now_ns=10 * second)
    assert not sent.news("cpu", {"busy": 70, "load": 109}, bands, 60 * second, now_ns=20 * second)
    assert sent.news("cpu", {"busy": 70, "load": 400}, bands, 60 * second, now_ns=21 * second)
    assert sent.news("cpu", {"busy": 70, "load": 400}, bands, 60 * second, now_ns=81 * second)
    assert sent.news("cpu", {"busy": 70}, bands, 60 * second, now_ns=82 * second)  # other keys
    assert sent.news("cpu", {"busy": 70}, bands, 0, now_ns=83 * second)  # 0: every compute


def test_a_key_s_first_readings_are_all_news_so_attention_learns_a_baseline_at_once() -> None:
    sent, bands, second = Deadband(warmup=3), {"busy": Band(50)}, 10**9
    quiet = [sent.news("cpu", {"busy": 20}, bands, 60 * second, i * second) for i in range(5)]
    assert quiet == [True, True, True, False, False]
    assert sent.news("net", {"busy": 20}, bands, 60 * second, now_ns=6 * second)  # its own count
    sent.forget("cpu")  # a worker that restarts warms up again
    assert sent.news("cpu", {"busy": 20}, bands, 60 * second, now_ns=7 * second)
    assert sent.news("cpu", {"busy": 20}, bands, 60 * second, now_ns=8 * second)


def test_a_bad_keyframe_option_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"senses\.cpu\.options\.keyframe_s"):
        run("cpu", initial("cpu"), tmp_path, keyframe_s=-1)


def test_a_quiet_cpu_sends_nothing_until_its_keyframe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sense = load("cpu")
    monkeypatch.setattr(sense, "_sent", Deadband(warmup=0))
    monkeypatch.setattr(sense.psutil, "cpu_percent", lambda interval=None, percpu=False: 3.0)
    monkeypatch.setattr(sense.psutil, "getloadavg", lambda: (0.5, 0.5, 0.5))
    monkeypatch.setattr(sense, "_measuring", False)
    assert not run("cpu", initial("cpu"), tmp_path).observations  # the measure starts
    assert run("cpu", initial("cpu"), tmp_path).observations  # the first reading is sent
    assert not run("cpu", initial("cpu"), tmp_path).observations  # nothing moved
    monkeypatch.setattr(sense.psutil, "cpu_percent", lambda interval=None, percpu=False: 90.0)
    [busy] = run("cpu", initial("cpu"), tmp_path).observations
    assert busy.payload["readings"]["busy_permille"] == 900


def test_a_held_network_reading_is_counted_in_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sense = load("network")
    state = run("network", initial("network"), tmp_path).state  # the baseline
    monkeypatch.setattr(sense, "_news", lambda ctx, current, listening: False)
    held = run("network", state, tmp_path)
    assert not [o for o in held.observations if "nic" in o.payload]
    assert held.state["total"] == state["total"]  # the base stays that of the last report
    held_at = time.monotonic_ns()
    monkeypatch.setattr(sense, "_news", lambda ctx, current, listening: True)
    [sent] = [o for o in run("network", held.state, tmp_path).observations if "nic" in o.payload]
    # the report spans the held compute too: its bytes are in it
    assert sent.payload["interval_ms"] >= (held_at - state["t_ns"]) // 1_000_000

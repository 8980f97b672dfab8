"""The cheap host reads behind the processes and network senses (Linux), against psutil, and
the senses' psutil fallback where they do not apply."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from nerve.host import procs, sockets
from tests.test_senses_builtin import initial, load, poll, run

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

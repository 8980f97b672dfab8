"""A real daemon in a workspace whose socket path is past ``sun_path``'s 107 bytes: it
starts, answers ``status``, ``emit`` and ``tail -f``, refuses a second, stops, and clears
what a killed one left; a path no system call takes is one line at ``nerve start``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from nerve.runtime.sockaddr import path_max
from nerve.workspace import init_workspace
from tests.conftest import run_cli
from tests.daemon_util import Daemon, started
from tests.helpers.lines import LineReader
from tests.helpers.longpath import path_of


def _long_workspace(base: Path, size: int) -> Path:
    """A workspace whose ``data/nerve.sock`` is ``size`` bytes long."""
    root = path_of(base, size, "data/nerve.sock").parent.parent
    init_workspace(root)
    (root / "nerve.yaml").write_text("senses: {}\nlog: {durability: os}\n")
    return root


def _follow(root: Path) -> subprocess.Popen[bytes]:
    argv = ["--workspace", str(root), "tail", "-f", "--json", "-n", "0", "--kind", "observation"]
    return subprocess.Popen(
        [sys.executable, "-m", "nerve", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _emit(root: Path, line: str) -> None:
    run_cli("--workspace", str(root), "emit", "--source", "shell", "--line", line)


def _follows_what_is_emitted(d: Daemon) -> None:
    follower = _follow(d.root)
    try:
        d.wait_for(lambda: d.request({"type": "status"})["status"]["followers"] == 1)
        _emit(d.root, "after")
        got = json.loads(LineReader(follower).take(1, timeout=30)[0])
    finally:
        follower.kill()
        follower.communicate()
    assert got["line"] == "after"


def _killed(d: Daemon) -> None:
    """SIGKILL the daemon: its socket stays behind, nobody listening."""
    pid = d.pid()
    os.kill(pid, signal.SIGKILL)
    d.wait_for(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie")
    assert d.socket.is_socket()


@pytest.mark.slow
def test_a_daemon_at_a_long_socket_path_does_all_it_does_at_a_short_one(tmp_path: Path) -> None:
    """A real daemon at a 150-byte socket path (the first length past the limit, 108, is
    bound and connected by the unit tests in test_socket_path_length.py)."""
    root = _long_workspace(tmp_path, 150)
    assert len(os.fsencode(Daemon(root).socket)) == 150
    with started(root) as d:
        status = run_cli("--workspace", str(root), "status").stdout
        assert "running" in status
        _emit(root, "before")
        _follows_what_is_emitted(d)
        second = run_cli("--workspace", str(root), "start", check=False)
        assert second.returncode == 1 and "already running" in second.stderr
        _killed(d)
        d.start()  # over the socket the killed one left
        assert d.request({"type": "status"})["ok"]
        assert [e["line"] for e in d.events("observation")] == ["before", "after"]
    assert not d.socket.exists()
    assert "not running" in run_cli("--workspace", str(root), "status", check=False).stdout


def test_a_socket_path_past_path_max_is_one_line_at_start(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    socket = path_of(ws.root, path_max() + 100).relative_to(ws.root)
    (ws.root / "nerve.yaml").write_text(f"senses: {{}}\ndaemon: {{socket: {socket}}}\n")
    proc = run_cli("--workspace", str(ws.root), "start", check=False)
    assert proc.returncode == 1, proc.stderr
    first, *rest = proc.stderr.splitlines()
    assert first.startswith("DaemonError: socket path is") and "PATH_MAX" in first
    assert first.endswith(str(ws.root / socket))
    assert "Traceback" not in proc.stderr and all(line.startswith("hint:") for line in rest)

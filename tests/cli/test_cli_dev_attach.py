"""`nerve dev` beside a `nerve start` daemon: a viewer of it; Ctrl+C leaves the daemon running."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from nerve.dev.attach import frame_from
from nerve.dev.view import render
from tests.conftest import run_cli
from tests.daemon_util import COUNTER, started, write_sense

CONFIG = "senses:\n  counter: {group: a, interval: 200ms}\n"


def _dev_on_a_terminal(root: Path) -> tuple[subprocess.Popen[bytes], int]:
    """`nerve dev` on an 80×24 pseudo-terminal that is its controlling terminal."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "nerve", "--workspace", str(root), "dev"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),  # noqa: PLW1509
        env={**os.environ, "TERM": "xterm-256color", "NO_COLOR": "1"},
    )
    os.close(slave)
    return proc, master


def _read(master: int, until: bytes, buffer: bytearray, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while until not in buffer and time.monotonic() < deadline:
        if select.select([master], [], [], 0.2)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            buffer += chunk
    return until in buffer


def test_dev_views_a_running_daemon_and_ctrl_c_leaves_it_running(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    write_sense(root, "counter", COUNTER)
    (root / "nerve.yaml").write_text(CONFIG)
    with started(root) as daemon:
        pid = daemon.pid()
        proc, master = _dev_on_a_terminal(root)
        screen = bytearray()
        try:
            drawn = _read(master, b"count ", screen)  # the counter's latest line, drawn
            os.write(master, b"\x03")  # Ctrl+C, typed
            _read(master, b"runs on", screen)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            os.close(master)
        text = screen.decode(errors="replace")
        assert drawn and "already running" not in text, text[-2000:]
        assert proc.returncode == 0 and f"the daemon runs on (pid {pid})" in text
        status = run_cli("--workspace", str(root), "status", check=False)
        assert status.returncode == 0 and f"pid {pid}" in status.stdout
        assert daemon.pid() == pid


def test_the_viewer_draws_what_status_answers() -> None:
    health = {
        "pid": 77,
        "workspace": "/ws",
        "uptime_s": 65.0,
        "events": 1234,
        "segments": 2,
        "sense_results": [
            {"name": "cpu", "group": "system", "computes": 9, "errors": 0,
             "last_ns": 1_750_000_000 * 10**9, "last_result": "cpu 12% load1 0.5"},
        ],
        "capture": {"paused": False},
    }  # fmt: skip
    snap = frame_from(health, now_s=1_750_000_002.0, rate=3.0)
    assert snap.pid == 77 and snap.senses[0].latest == "cpu 12% load1 0.5"
    assert snap.started_s == 1_750_000_002.0 - 65.0 and snap.events == 1234
    assert render(snap, 80, 24) is not None


class _Viewed:
    """What `attach.view` asks of a workspace, answering as a running daemon would. At the
    second refresh a Ctrl+C arrives while an object's destructor runs: Python drops an
    exception raised there, so a view that waits for KeyboardInterrupt would not stop."""

    def __init__(self, log: Path) -> None:
        self.calls, self.log = 0, log
        self.daemon = SimpleNamespace(status=self.status, log_path=lambda: self.log)
        self.events = SimpleNamespace(read=self.read)

    def status(self) -> Any:
        from nerve.errors import DaemonError

        self.calls += 1
        if self.calls == 2:
            _InterruptedOnCollect()  # collected at once: its __del__ takes the Ctrl+C
        if self.calls > 6:
            raise DaemonError("the view did not stop on Ctrl+C")
        health = {"pid": 77, "events": self.calls, "sense_results": []}
        return SimpleNamespace(running=True, health=health)

    def read(self, **_: Any) -> Any:
        return SimpleNamespace(batch=SimpleNamespace(table=None))


class _InterruptedOnCollect:
    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)


def test_a_ctrl_c_that_arrives_inside_a_destructor_still_leaves_the_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nerve.dev import attach

    monkeypatch.setattr(attach, "REFRESH_S", 0.01)
    ws, before = _Viewed(tmp_path / "daemon.log"), signal.getsignal(signal.SIGINT)
    assert attach.view(ws) == 77  # type: ignore[arg-type]  # left on Ctrl+C, not on a stop
    assert ws.calls in {2, 3}
    assert signal.getsignal(signal.SIGINT) == before  # the handler it found is put back

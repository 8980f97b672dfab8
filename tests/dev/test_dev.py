"""`nerve dev` and `nerve daemon run` as a person runs them: started in a terminal's process
group, stopped by Ctrl+C (SIGINT to the whole group) or SIGTERM, with no traceback from any
process, and their own log printed as lines when piped."""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest

from nerve.log.verify import verify
from nerve.runtime import children
from tests.daemon_util import COUNTER, Daemon, write_sense
from tests.helpers.lines import LineReader

BLOCKS = """
import sys, time
initial_state = {"n": 0}
def compute(state):
    print("blocked in compute", file=sys.stderr, flush=True)
    time.sleep(600)
    return {"state": state}
"""
CONFIG = """
senses:
  counter: {group: a, interval: 200ms}
  blocker: {group: b, interval: 1s, timeout: 10m}
"""
STAMPED = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S")


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    write_sense(root, "counter", COUNTER)
    write_sense(root, "blocker", BLOCKS)
    (root / "nerve.yaml").write_text(CONFIG)
    return root


def _spawn(root: Path, *args: str, **kwargs: Any) -> subprocess.Popen[bytes]:
    """``nerve ARGS`` as the leader of its own process group, as a shell starts a job."""
    return subprocess.Popen(
        [sys.executable, "-m", "nerve", "--workspace", str(root), *args],
        start_new_session=True,
        env={**os.environ, "NO_COLOR": "1"},
        **kwargs,
    )


def _read_until(reader: LineReader, needle: str, timeout: float = 90) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while not any(needle in line for line in seen):
        seen += reader.take(1, max(0.1, deadline - time.monotonic()))
    return seen


def _assert_clean(text: str) -> None:
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_dev_piped_stops_cleanly_with_a_sense_blocked_in_compute(
    tmp_path: Path, sig: signal.Signals
) -> None:
    root = _workspace(tmp_path)
    proc = _spawn(root, "dev", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    reader = LineReader(proc)
    try:
        before = _read_until(reader, "blocked in compute")  # relayed from the worker
    finally:
        os.killpg(proc.pid, sig)  # the whole group, as a terminal sends Ctrl+C
        rest, err = proc.communicate(timeout=90)
    out = "\n".join(before) + "\n" + reader.buffer.decode() + rest.decode()
    _assert_clean(out + err.decode())
    assert proc.returncode == 0, err.decode()
    assert err == b""
    assert "nerve " in before[0] and " started: workspace " in before[0]
    assert "2 senses (blocker, counter)" in before[0]
    assert f"stopping ({sig.name})" in out
    assert re.search(rf"stopped \({sig.name}\); log at [\d,]+ events in \d+ segments", out)
    assert all(STAMPED.match(line) for line in out.splitlines() if line), out
    kinds = [e["kind"] for e in Daemon(root).events()]
    assert kinds[-1] == "daemon.stopped" and "sense.error" not in kinds
    assert verify(root / "data" / "log").ok


def test_daemon_run_prints_its_log_on_stderr_and_in_the_file(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / "nerve.yaml").write_text("senses:\n  counter: {group: a, interval: 200ms}\n")
    proc = _spawn(root, "daemon", "run", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err_reader = LineReader(proc)
    assert proc.stderr is not None
    err_reader.fd = proc.stderr.fileno()  # the log is on stderr here
    try:
        _read_until(err_reader, " started: ")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0 and out == b"", err.decode()
    _assert_clean(err.decode())
    logged = (root / "data" / "daemon.log").read_text()
    assert "stopped (SIGTERM)" in logged
    shown = err_reader.buffer.decode() + err.decode()
    assert logged.splitlines()[-1] in shown.splitlines()


def _pty_dev(root: Path, cols: int, rows: int) -> tuple[subprocess.Popen[bytes], int]:
    """`nerve dev` on a pseudo-terminal of ``cols`` × ``rows`` that is its controlling
    terminal, so Ctrl+C typed there reaches its process group."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
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


def _read_pty(master: int, until: bytes, buffer: bytearray, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while until not in buffer and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                return until in buffer
            if not chunk:
                break
            buffer += chunk
    return until in buffer


def test_dev_view_on_an_80x24_terminal_draws_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    proc, master = _pty_dev(root, 80, 24)
    screen = bytearray()
    try:
        drawn = _read_pty(master, b"count 3", screen, 90)  # a sense's latest line, drawn
        os.write(master, b"\x03")  # Ctrl+C, typed
        _read_pty(master, b"stopped (SIGINT)", screen, 90)
        proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(master)
    text = screen.decode(errors="replace")
    assert drawn, text[-3000:]
    _assert_clean(text)
    assert proc.returncode == 0, text[-3000:]
    assert "\x1b[?1049h" in text and "\x1b[?1049l" in text  # the alternate screen, left
    assert "counter: count" not in text  # the latest line does not repeat the sense name
    assert "stopped (SIGINT); log at" in text.split("\x1b[?1049l")[-1]


CHILD = """
import sys
from nerve.runtime.children import detach
print("spawned", flush=True)
sys.stdin.readline()
detach()
print("detached", flush=True)
sys.stdin.readline()
"""


def test_a_stop_signal_for_the_daemons_group_during_a_spawn_spares_the_worker() -> None:
    """A worker is in the daemon's process group between fork and its own setpgid; a
    Ctrl+C or SIGTERM sent to the group then is held, and the worker drops it."""
    with children.spawning():
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
    assert proc.stdin is not None and proc.stdout is not None
    reader = LineReader(proc)
    assert reader.take(1, 60) == ["spawned"]
    for sig in (signal.SIGINT, signal.SIGTERM):  # as if sent to the group in that instant
        os.kill(proc.pid, sig)
    proc.stdin.write(b"go\n")
    proc.stdin.flush()
    assert reader.take(1, 60) == ["detached"]
    os.kill(proc.pid, signal.SIGINT)  # ignored from now on
    os.kill(proc.pid, signal.SIGTERM)  # but SIGTERM ends it as usual
    assert proc.wait(timeout=60) == -signal.SIGTERM
    proc.stdin.close()
    proc.stdout.close()

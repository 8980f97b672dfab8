"""Ctrl+C during a long command: one line on stderr, exit 130, within a second."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nerve.cli.interrupt import LINE
from nerve.workspace import WorkspaceDir

LONG_QUERY = "SELECT count(*) FROM range(10000000000)"
STREAMED = "SELECT * FROM range(10000000000)"


def _started(proc: subprocess.Popen[str], library: str, timeout: float = 30) -> None:
    """Wait until the process has loaded ``library`` (it is past start-up, in the query)."""
    maps = Path(f"/proc/{proc.pid}/maps")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"nerve ended early: {proc.communicate()}")
        if library in maps.read_text():
            time.sleep(0.5)  # the query is running
            return
        time.sleep(0.05)
    raise AssertionError(f"{library} never loaded")


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc")
@pytest.mark.parametrize(
    ("flags", "sql"),
    [([], LONG_QUERY), (["--json"], LONG_QUERY), (["--csv"], LONG_QUERY), (["--json"], STREAMED)],
)
def test_ctrl_c_during_a_long_query_exits_130_with_one_line(
    workspace: WorkspaceDir, flags: list[str], sql: str
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "nerve", "-w", str(workspace.root), "query", *flags, sql],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        _started(proc, "duckdb")
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert err == LINE
    assert took < 1.0, took

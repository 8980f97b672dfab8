"""`nerve daemon logs`: the daemon's own log, one stamped line per event of its life."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from nerve.runtime.daemon import tail_text
from nerve.workspace import init_workspace
from tests.conftest import run_cli
from tests.daemon_util import COUNTER, Daemon, started, write_sense
from tests.helpers.lines import LineReader

CONFIG = "senses:\n  counter: {group: a, interval: 200ms}\n"
STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"


def _logs(d: Daemon, *args: str) -> str:
    return run_cli("--workspace", str(d.root), "daemon", "logs", *args).stdout


def _wait_logged(d: Daemon, text: str) -> str:
    """The line saying ``text``, as `nerve daemon logs` shows it once the file has it."""
    log = d.root / "data" / "daemon.log"
    d.wait_for(lambda: text in log.read_text(), what=repr(text))
    return next(line for line in _logs(d).splitlines() if text in line)


def _follower(root: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nerve",
            "--workspace",
            str(root),
            "daemon",
            "logs",
            "-f",
            "-n",
            "1",
        ],
        stdout=subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )


def _take_until(reader: LineReader, text: str, timeout: float = 60) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while not any(text in line for line in seen):
        seen += reader.take(1, max(0.1, deadline - time.monotonic()))
    return seen


def test_daemon_logs_show_start_reloads_restarts_and_stop(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    write_sense(ws.root, "counter", COUNTER)
    (ws.root / "nerve.yaml").write_text(CONFIG)
    with started(ws.root) as d:
        banner = next(line for line in _logs(d).splitlines() if " started: " in line)
        assert re.fullmatch(
            rf"{STAMP} nerve [\w.+-]+ started: workspace {ws.root}, pid {d.pid()}, "
            rf"socket {d.socket}, 1 senses \(counter\), log at [\d,]+ events in \d+ segments",
            banner,
        ), banner
        follower = _follower(ws.root)
        reader = LineReader(follower)
        try:
            assert reader.take(1, 60)  # it runs: what is written next is new
            fresh = "  fresh: {group: a, path: senses/counter, interval: 300ms}\n"
            (ws.root / "nerve.yaml").write_text(CONFIG + fresh)
            reloaded = "configuration reloaded (edit): 2 senses (counter, fresh)"
            _wait_logged(d, reloaded)
            followed = _take_until(reader, reloaded)
        finally:
            follower.kill()
            follower.communicate()  # closes its pipe
        assert re.fullmatch(rf"{STAMP} {re.escape(reloaded)}", followed[-1]), followed
        (ws.root / "nerve.yaml").write_text(CONFIG.replace("200ms", "10x"))
        rejected = _wait_logged(d, "configuration edit rejected")
        assert "invalid duration" in rejected and "warning: configuration edit" in rejected
        worker = d.request({"type": "status"})["status"]["groups"]["a"]["pid"]
        os.kill(worker, signal.SIGKILL)
        restarted = _wait_logged(d, "group a worker restarted")
        assert f"(pid {worker} -> " in restarted and "worker exited with code -9" in restarted
        last = _logs(d, "-n", "1")
        assert last.count("\n") == 1 and last.rstrip("\n") == _logs(d).splitlines()[-1]
        os.kill(d.pid(), signal.SIGTERM)  # as a service manager stops it
        _wait_logged(d, "stopped (SIGTERM); log at")
    text = (ws.root / "data" / "daemon.log").read_text()
    assert "stopping (SIGTERM)" in text and "Traceback" not in text


def test_tail_text_reads_only_the_last_lines(tmp_path: Path) -> None:
    path = tmp_path / "daemon.log"
    path.write_text("".join(f"line {i} " + "x" * 300 + "\n" for i in range(1000)))
    assert tail_text(path, 2).splitlines() == [f"line {i} " + "x" * 300 for i in (998, 999)]
    assert tail_text(path, 0) == ""  # not every line, as a [-0:] slice would give
    assert len(tail_text(path, 1000).splitlines()) == 1000
    assert tail_text(tmp_path / "missing.log", 5) == "(no daemon log yet)"


def test_nerve_logs_pages_back_with_offset(tmp_path: Path) -> None:
    """Seed 001's `nerve logs [-n N] [--offset K]`: the top-level alias of `daemon logs`."""
    ws = init_workspace(tmp_path / "ws")
    (ws.root / "data" / "daemon.log").write_text("".join(f"line {i}\n" for i in range(10)))

    def logs(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli("--workspace", str(ws.root), "logs", *args, check=False)

    newest = logs("-n", "3")
    assert newest.stdout.splitlines() == ["line 7", "line 8", "line 9"]
    assert "earlier lines: nerve logs --offset 3 -n 3" in newest.stderr
    page = logs("--offset", "3", "-n", "3")
    assert page.stdout.splitlines() == ["line 4", "line 5", "line 6"]
    assert "--offset 6 -n 3" in page.stderr
    first = logs("--offset", "8", "-n", "3")
    assert first.stdout.splitlines() == ["line 0", "line 1"] and first.stderr == ""
    assert logs("--offset", "20").stdout == ""
    negative = logs("--offset", "-5", "-n", "50")
    assert negative.returncode == 1 and "--offset must be 0 or more, got -5" in negative.stderr
    assert (
        logs("-n", "2").stdout
        == run_cli("--workspace", str(ws.root), "daemon", "logs", "-n", "2").stdout
    )

"""The `processes` sense reports a busy process's start by the compute after the one that first
saw it, in a real daemon: a `yes` that runs for a few intervals gets its `process started`
within two intervals of starting; one that lives a fraction of an interval gets none."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.daemon_util import Daemon, started

INTERVAL_S = 1.0
SLACK_S = 4.0  # a loaded runner computes late; the rule's own bound is two intervals
# cpu_percent low enough that a `yes` sharing a busy runner's cores still reaches it
CONFIG = f"""senses:
  processes:
    interval: {int(INTERVAL_S * 1000)}ms
    options: {{notable: [], cpu_percent: 10}}
"""


def _started(daemon: Daemon, pid: int) -> list[dict[str, Any]]:
    return [
        row
        for row in daemon.events(kind="observation", subject="processes")
        if row["data"].get("event") == "started" and row["data"].get("pid") == pid
    ]


def _computes(daemon: Daemon) -> int:
    results = daemon.request({"type": "status"})["status"]["sense_results"]
    return next((r["computes"] for r in results if r["name"] == "processes"), 0)


def test_a_busy_process_is_reported_within_two_intervals(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "nerve.yaml").write_text(CONFIG)
    with started(root) as daemon:
        daemon.wait_for(lambda: _computes(daemon) >= 2, timeout=60, what="the baseline")
        brief = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(INTERVAL_S / 5)
        brief.kill()
        brief.wait()
        began = time.time()
        busy = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL)
        try:
            (row,) = daemon.wait_for(
                lambda: _started(daemon, busy.pid), timeout=30, what="the start of yes"
            )
            waited = time.time() - began
        finally:
            busy.kill()
            busy.wait()
        seen = _computes(daemon)
        daemon.wait_for(lambda: _computes(daemon) >= seen + 2, timeout=30, what="two computes")
        assert _started(daemon, brief.pid) == []  # a fraction of an interval: not reported
    assert waited <= 2 * INTERVAL_S + SLACK_S, f"reported {waited:.1f} s after it started"
    assert row["data"]["name"] == "yes" and row["data"]["why"] == "cpu"
    assert abs(row["data"]["start_time"] - began) <= 2  # stamped with its start
    print(f"process started yes: recorded {waited:.2f} s after it began")

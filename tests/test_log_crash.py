"""SIGKILL a real writer process at random moments; every acknowledged event survives once."""

from __future__ import annotations

import collections
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from nerve.log.reader import events_since
from nerve.log.verify import verify
from tests.helpers.lines import LineReader

HELPER = Path(__file__).parent / "helpers" / "crash_writer.py"


def _run_and_kill(root: Path, round_no: int, delay: float) -> list[str]:
    """Start a writer, wait for its first acknowledged batch, let it run ``delay`` seconds
    more and SIGKILL it; return every line it acknowledged."""
    proc = subprocess.Popen(
        [sys.executable, str(HELPER), str(root), str(round_no)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # Timed from the first acknowledgement, not from the spawn: on a loaded machine
        # the interpreter and its imports alone can take longer than the delay.
        reader = LineReader(proc)
        first = reader.take(1, timeout=60)
        time.sleep(delay)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, err
    # The last line may be cut mid-write: only whole lines were acknowledged.
    rest = (reader.buffer + out).decode("utf-8").split("\n")[:-1]
    return [line for line in first + rest if line]


def test_sigkill_at_random_moments_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    root = tmp_path / "log"
    rng = random.Random(2024)
    acked: list[str] = []
    for round_no in range(10):
        acked += _run_and_kill(root, round_no, rng.uniform(0.2, 1.0))
    stored = [e.line for e in events_since(root)]
    counts = collections.Counter(stored)
    assert not [line for line, n in counts.items() if n > 1], "duplicated events"
    missing = set(acked) - set(counts)
    assert not missing, f"{len(missing)} acknowledged events lost"
    assert len(acked) > 100
    report = verify(root)
    assert report.ok, report.problems

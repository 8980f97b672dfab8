"""The README opens with the two commands, and the first one's job runs on the bundled workspace."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.compute as pc

from nerve.log.reader import snapshot, table_since

ROOT = Path(__file__).resolve().parent.parent


def _commands() -> list[str]:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert lines[0] == "```", "the README must open with the two commands"
    return lines[1:3]


def test_readme_opens_with_setup_and_test_commands() -> None:
    first, second = _commands()
    assert first.startswith("python3 -m venv .venv && .venv/bin/pip install") and first.endswith(
        "nerve dev"
    )
    assert second.endswith(".venv/bin/python -m pytest -q -n 4") and "'.[test]'" in second
    assert (
        second in (ROOT / ".ci" / "run").read_text()
        or "grep -m1" in (ROOT / ".ci" / "run").read_text()
    )


def test_first_command_runs_the_daemon_on_the_bundled_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "bundled"
    ws.mkdir()
    shutil.copy(ROOT / "nerve.yaml", ws / "nerve.yaml")
    proc = subprocess.Popen(
        [sys.executable, "-m", "nerve", "--workspace", str(ws), "dev"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        deadline = time.monotonic() + 40
        seen: set[str] = set()
        while time.monotonic() < deadline and not {"cpu", "memory"} <= seen:
            time.sleep(0.5)
            if (ws / "data" / "log").exists():
                table = table_since(snapshot(ws / "data" / "log"))
                seen = set(
                    table.filter(pc.equal(table.column("kind"), "observation"))
                    .column("subject")
                    .to_pylist()
                )
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    subjects = set(table_since(snapshot(ws / "data" / "log")).column("subject").to_pylist())
    assert {"cpu", "memory"} <= subjects, subjects
    assert "daemon" in subjects  # daemon.started / daemon.stopped

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


def _python_session() -> str:
    """The code block of the README's "Python" section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_python_session_runs_as_written(tmp_path: Path) -> None:
    """Open, a query to pandas, a plot, why a highlight was held, verify: on a log that
    holds surfaced and held decisions, from the workspace folder as an analyst would."""
    from tests.helpers.attended import attended_workspace

    ws = attended_workspace(tmp_path / "ws")
    env = {**os.environ, "MPLBACKEND": "Agg", "NERVE_WORKSPACE": ""}
    proc = subprocess.run(
        [sys.executable, "-c", _python_session()],
        cwd=ws.root,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    held = [line for line in lines if line.startswith("seq ")]
    assert held and all(": worth " in line and "hold:" in line for line in held), lines
    printed = subprocess.run(
        [sys.executable, "-m", "nerve", "replay"], cwd=ws.root, capture_output=True, text=True
    ).stdout
    digest = printed.split("digest  ", 1)[1].split()[0]
    assert lines[-1].startswith("verify ok: ") and lines[-1].endswith(f"digest {digest}")
    assert (ws.root / "observations.png").stat().st_size > 0

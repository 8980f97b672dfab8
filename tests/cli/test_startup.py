"""Start-up imports only what a command uses: the light verbs never load the query stack."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nerve.workspace import init_workspace
from tests.daemon_util import COUNTER, Daemon, started, write_sense

HEAVY = {"duckdb", "pyarrow", "numpy", "pandas"}
# Runs the real entry point, then reports which heavy packages ended up loaded.
PROBE = """
import sys
from nerve.cli.main import run
try:
    run(sys.argv[1:])
except SystemExit as done:
    code = done.code
else:
    code = 0
heavy = sorted({m.split('.')[0] for m in sys.modules} & {'duckdb', 'pyarrow', 'numpy', 'pandas'})
print('HEAVY=' + ','.join(heavy), file=sys.stderr)
print('CODE=' + str(code), file=sys.stderr)
"""


def _loaded(*argv: str, cwd: Path | None = None) -> tuple[set[str], str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1", "NERVE_WORKSPACE": ""},
    )
    lines = proc.stderr.splitlines()
    heavy = next(x for x in lines if x.startswith("HEAVY=")).removeprefix("HEAVY=")
    code = next(x for x in lines if x.startswith("CODE=")).removeprefix("CODE=")
    return {h for h in heavy.split(",") if h}, code, proc.stdout


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    ws = init_workspace(tmp_path_factory.mktemp("startup") / "ws")
    write_sense(ws.root, "counter", COUNTER)
    (ws.root / "nerve.yaml").write_text("senses:\n  counter: {interval: 1h}\n")
    with started(ws.root) as d:
        yield d


def test_help_and_version_load_nothing_heavy(tmp_path: Path) -> None:
    for argv in (["--help"], ["--version"], ["tail", "--help"], []):
        heavy, code, out = _loaded(*argv, cwd=tmp_path)
        assert heavy == set(), (argv, heavy)
        assert code in ("0", "None", "2"), (argv, code)  # no arguments: help, exit 2 (click)
        assert out or code == "2"  # no arguments: click prints the help on stderr


def test_verbs_through_a_running_daemon_load_nothing_heavy(daemon: Daemon) -> None:
    ws = ["--workspace", str(daemon.root)]
    for argv in (
        ["status"],
        ["emit", "--source", "shell", "--line", "light", "-q"],
        ["sense", "trigger", "counter"],
    ):
        heavy, code, _ = _loaded(*ws, *argv)
        assert code in ("0", "None") and heavy == set(), (argv, heavy, code)
    assert any(e["line"] == "light" for e in daemon.events("observation"))


def test_stop_when_nothing_runs_loads_nothing_heavy(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "idle")
    heavy, code, out = _loaded("--workspace", str(ws.root), "stop")
    assert heavy == set() and code in ("0", "None") and "not running" in out


def test_a_query_does_load_duckdb(tmp_path: Path) -> None:
    """The probe can see a heavy import: the test above cannot pass by accident."""
    ws = init_workspace(tmp_path / "q")
    heavy, code, _ = _loaded("--workspace", str(ws.root), "query", "SELECT 1")
    assert "duckdb" in heavy and code in ("0", "None")

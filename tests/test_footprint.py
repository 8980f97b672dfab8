"""What the daemon costs: libraries it never uses stay unloaded, and what a compute that
changed nothing records (see README, "What a compute records")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.daemon_util import started

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def bundled(tmp_path: Path) -> Path:
    """A copy of the repository's own workspace: nerve.yaml and the built-in senses."""
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy2(ROOT / "nerve.yaml", ws / "nerve.yaml")
    shutil.copytree(ROOT / "senses", ws / "senses", ignore=shutil.ignore_patterns("__pycache__"))
    return ws


def _mapped(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


def test_the_daemon_never_loads_pandas(bundled: Path) -> None:
    with started(bundled) as d:
        d.wait_for(lambda: d.events("observation", "cpu"), what="a cpu observation")
        maps = _mapped(d.pid())
        status = d.request({"type": "status"})
    assert "libarrow" in maps  # it built arrays and stored them: the probe has happened
    assert "pandas" not in maps
    assert status["ok"]

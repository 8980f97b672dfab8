from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nerve.workspace import WorkspaceDir, init_workspace
from tests.helpers import hypothesis_profile  # noqa: F401  (no per-example deadline)
from tests.helpers.day import Day, copy_day, unpack_day
from tests.helpers.incli import needs_process, run_in_process

ROOT = Path(__file__).resolve().parent.parent


def run_cli(
    *args: str,
    cwd: Path | None = None,
    input: str | None = None,
    check: bool = True,
    timeout: float = 60,
    env: dict[str, str] | None = None,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run the real ``nerve`` CLI: in this process through its entry point, or in a
    subprocess for what only a process shows (``process=True``, or see
    :func:`tests.helpers.incli.needs_process`)."""
    if not process and not needs_process(args, env):
        proc = run_in_process(args, cwd=cwd, input=input, env=env)
        if check and proc.returncode != 0:
            raise AssertionError(f"nerve {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
        return proc
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "nerve", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"nerve {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def pytest_configure(config: pytest.Config) -> None:
    """Under xdist (``-n 4``), tests are handed out by work stealing rather than in fixed
    batches: a worker that runs out takes half of a busy one's queue, so the long end-to-end
    tests (benches, fault classes) do not keep one worker running long after the others."""
    if getattr(config.option, "dist", "no") == "load":
        config.option.dist = "worksteal"


@pytest.fixture
def workspace(tmp_path: Path) -> WorkspaceDir:
    return init_workspace(tmp_path / "ws")


@pytest.fixture
def log_root(tmp_path: Path) -> Path:
    return tmp_path / "log"


@pytest.fixture(autouse=True)
def _own_state_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trust anchors and tokens go under ``$XDG_STATE_HOME``, the user workspace's pointer
    under ``$XDG_CONFIG_HOME``: each test gets its own, so no test reads what another
    accepted, and nothing lands in the real home folder."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    # the user workspace's pointer (nerve setup) is under $XDG_CONFIG_HOME: a person's own
    # must not become the workspace of a test run outside any nerve.yaml
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


@pytest.fixture(scope="session")
def recorded_day(tmp_path_factory: pytest.TempPathFactory) -> Day:
    """The recorded real day (``tests/fixtures/day/``), unpacked once per session: read it,
    never write to it (``recorded_day_copy`` is a private copy for a test that writes)."""
    return unpack_day(tmp_path_factory.mktemp("day"))


@pytest.fixture
def recorded_day_copy(recorded_day: Day, tmp_path: Path) -> Day:
    """A writable copy of the recorded real day for one test."""
    return copy_day(recorded_day, tmp_path / "day")

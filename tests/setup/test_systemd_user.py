"""`nerve setup` under a real `systemd --user` (tests/helpers/systemd_user.py): the unit
starts and the daemon answers, a killed daemon is restarted, `nerve service status|logs`
show it, and `nerve setup --undo` stops and removes it, leaving HOME as it was."""

from __future__ import annotations

import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from tests.helpers.systemd_user import UserManager, systemd_user, why_not
from tests.setup.test_setup_plan import snapshot

NERVE = str(Path(sys.executable).parent / "nerve")
UNIT = "nerve.service"

T = TypeVar("T")

_CANNOT = why_not()
pytestmark = pytest.mark.skipif(_CANNOT is not None, reason=f"a real systemd --user: {_CANNOT}")


@pytest.fixture
def manager() -> Iterator[UserManager]:
    """A `systemd --user` for a HOME holding a .bashrc, in a folder with a short name (the
    daemon's socket path in the workspace has at most 107 bytes; pytest's are longer)."""
    with tempfile.TemporaryDirectory(prefix="sd") as folder:
        home = Path(folder) / "home"
        home.mkdir()
        (home / ".bashrc").write_text("# mine\n")
        with systemd_user(Path(folder), home) as running:
            yield running


def _until(manager: UserManager, what: str, check: Callable[[], T | None]) -> T:
    """``check()`` once it is truthy, polled; after 15 s fails naming ``what``, with what
    the manager says of the unit."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    said = manager.systemctl("status", "--no-pager", "--lines=0", UNIT).stdout
    pytest.fail(f"not within 15 s: {what}\n{said}")


def _answering_pid(manager: UserManager) -> int | None:
    """The pid `nerve status` reports from the running daemon, None while none answers."""
    shown = manager.run([NERVE, "status"]).stdout
    found = re.search(r"^running\s+pid (\d+)", shown, re.MULTILINE)
    return int(found.group(1)) if found else None


def _main_pid(manager: UserManager, old: int = 0) -> int | None:
    """The unit's main pid once it is active and running, if it is not ``old``."""
    props = manager.show(UNIT, "MainPID", "ActiveState", "SubState")
    running = (props.get("ActiveState"), props.get("SubState")) == ("active", "running")
    pid = int(props.get("MainPID", "0"))
    return pid if running and pid not in (0, old) else None


def _logged_start(manager: UserManager, pid: int) -> bool:
    """Whether `nerve service logs` shows the daemon ``pid`` started (it writes that line
    once warmed up, a moment after it first answers)."""
    logs = manager.run([NERVE, "service", "logs"])
    assert logs.returncode == 0, logs.stderr
    return any(" started: workspace " in line for line in logs.stdout.splitlines()
               if f" pid {pid}," in line)  # fmt: skip


@pytest.mark.slow  # 17 s alone, most of it the unit's 5 s restart delay and two daemon starts
def test_setup_runs_the_daemon_under_systemd_which_restarts_it_and_undo_removes_it(
    manager: UserManager,
) -> None:
    before = snapshot(manager.home)
    made = manager.run([NERVE, "setup", "--yes", "--shell", "bash"])
    assert made.returncode == 0, made.stderr
    assert "did not start it" not in made.stdout
    first = _until(manager, "the unit runs", lambda: _main_pid(manager))
    assert _until(manager, "the daemon answers", lambda: _answering_pid(manager)) == first

    os.kill(first, signal.SIGKILL)  # while it warms up: a crash as early as any
    second = _until(manager, "systemd restarts it", lambda: _main_pid(manager, first))
    assert manager.show(UNIT, "NRestarts") == {"NRestarts": "1"}
    assert _until(manager, "the new daemon answers", lambda: _answering_pid(manager)) == second
    _until(manager, "`nerve service logs` shows it started", lambda: _logged_start(manager, second))
    status = manager.run([NERVE, "service", "status"])
    assert status.returncode == 0 and "active (running)" in status.stdout
    assert f"Main PID: {second} " in status.stdout

    undone = manager.run([NERVE, "setup", "--undo", "--yes"], timeout=30)
    assert undone.returncode == 0, undone.stderr
    assert "did not stop it" not in undone.stdout
    assert manager.show(UNIT, "LoadState", "ActiveState") == {
        "LoadState": "not-found",
        "ActiveState": "inactive",
    }
    assert snapshot(manager.home) == before

"""A newcomer's first hour, scripted, in a fresh temporary HOME.

The README's first command installs nerve into ``.venv`` and runs ``.venv/bin/nerve``; this
test uses that program (the venv running the tests, whose ``nerve`` is beside its Python;
building a fresh venv costs minutes) with this tree first on ``PYTHONPATH``. It runs
``nerve setup --yes --watch DIR``, starts the daemon as the installed service would (the
unit's own ``ExecStart``), opens a real interactive bash on a pty that reads the ``~/.bashrc``
setup wrote, runs a command that fails, then ``cd /`` and ``nerve ask "which commands
failed?"`` in that shell (``nerve`` is not on its PATH: the hook file names the program),
checks that ``nerve ui`` answers, stops everything, and ``nerve setup --undo`` leaves HOME
byte-identical to before.
"""

from __future__ import annotations

import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.shellpty import Shell
from tests.setup.test_setup_plan import snapshot

ROOT = Path(__file__).resolve().parent.parent
NERVE = Path(sys.executable).parent / "nerve"  # the README's .venv/bin/nerve

pytestmark = pytest.mark.slow


def _env(home: Path, run: Path) -> dict[str, str]:
    """A login's environment: HOME and the XDG folders under it (left to their defaults),
    no nerve on PATH, the runtime folder outside HOME (the hook's scratch file goes there)."""
    return {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "XDG_RUNTIME_DIR": str(run),
        "XDG_CONFIG_HOME": "",  # empty: the defaults under HOME, as on a fresh login
        "XDG_DATA_HOME": "",
        "XDG_STATE_HOME": "",
        "NO_COLOR": "1",
        "LANG": "C.UTF-8",
    }


def _nerve(env: dict[str, str], *args: str, cwd: str = "/") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(NERVE), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def _service_argv(home: Path) -> list[str]:
    """What the installed systemd unit runs."""
    unit = (home / ".config" / "systemd" / "user" / "nerve.service").read_text()
    line = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    return shlex.split(line.removeprefix("ExecStart="))


def _wait(check: object, what: str, timeout: float = 40) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def _serving(daemon: subprocess.Popen[bytes], env: dict[str, str]) -> bool:
    """Whether the daemon answers ``nerve status``; its stderr if it ended instead."""
    if daemon.poll() is not None:
        err = daemon.stderr.read().decode() if daemon.stderr else ""
        raise AssertionError(f"the daemon ended ({daemon.returncode}): {err}")
    return _nerve(env, "status").returncode == 0


def _recorded(env: dict[str, str], command: str) -> bool:
    return command in _nerve(env, "tail", "--sense", "shell").stdout


def _ui_answers(env: dict[str, str]) -> None:
    """``nerve ui`` from ``/`` serves the user workspace: its login URL answers 200."""
    proc = subprocess.Popen(
        [str(NERVE), "ui"], cwd="/", env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().decode().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.stderr else url
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with browser.open(url, timeout=20) as page:  # the login sets a cookie, then redirects
            assert page.status == 200 and b"nerve" in page.read()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A temporary folder with a short path: the daemon's socket path in the workspace must
    fit AF_UNIX's 108 bytes, and pytest-xdist's temporary folders are long."""
    folder = Path(tempfile.mkdtemp(prefix="nv-", dir="/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_newcomers_first_hour(short_tmp: Path) -> None:
    tmp_path = short_tmp
    home, run, shell_dir = tmp_path / "home", tmp_path / "run", tmp_path / "shell"
    for folder in (home / "notes", run, shell_dir):
        folder.mkdir(parents=True)
    (home / ".bashrc").write_text("# a newcomer's own bashrc\nexport EDITOR=vi\n")
    before = snapshot(home)
    env = _env(home, run)
    made = _nerve(env, "setup", "--yes", "--watch", str(home / "notes"), "--shell", "bash")
    assert made.returncode == 0, made.stderr
    ws = home / ".local" / "share" / "nerve"
    daemon = subprocess.Popen(
        _service_argv(home), cwd="/", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    shell = None
    try:
        _wait(lambda: _serving(daemon, env), "the daemon", timeout=90)
        assert _nerve(env, "status").stdout.startswith(f"workspace {ws} (your workspace")
        shell = Shell("bash", shell_dir, None, startup=home / ".bashrc", env=env)
        shell.type(f"cd {home / 'notes'}")
        assert "No such file" in shell.type("ls /no-such-folder")
        shell.type("cd /")
        _wait(lambda: _recorded(env, "ls /no-such-folder"), "the failed command in the log")
        answer = shell.type('nerve ask "which commands failed?"')
        assert "ls /no-such-folder" in answer, answer
        _ui_answers(env)
    finally:
        if shell is not None:
            shell.close()
        daemon.send_signal(signal.SIGTERM)
        _, err = daemon.communicate(timeout=60)
    assert daemon.returncode == 0, err
    undone = _nerve(env, "setup", "--undo", "--yes", cwd=str(home))
    assert undone.returncode == 0, undone.stderr
    assert snapshot(home) == before

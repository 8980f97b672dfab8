"""`nerve setup` in a temporary HOME: what it makes, that a second run makes nothing, that
`--undo` leaves HOME as it was, where commands find the user workspace, and the service
files (systemd-analyze verify, plistlib)."""

from __future__ import annotations

import hashlib
import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nerve.setup.plan import Places, hook_path, make, plan, rc_line, refresh_hooks
from nerve.setup.service import Manager, launchd_plist, service_file, systemd_unit
from nerve.shellhook import written_version
from nerve.version import __version__
from tests.conftest import run_cli

NERVE = Path(sys.executable).parent / "nerve"


def _env(home: Path) -> dict[str, str]:
    """A person's environment with HOME at ``home`` and no XDG folders of its own."""
    return {"HOME": str(home), "XDG_DATA_HOME": "", "XDG_CONFIG_HOME": "", "NERVE_WORKSPACE": ""}


def snapshot(home: Path) -> dict[str, tuple[int, str]]:
    """Every path under ``home``: its mode and, for a file, the digest of its bytes."""
    seen = {}
    for path in sorted(home.rglob("*")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        seen[str(path.relative_to(home))] = (path.lstat().st_mode, digest)
    return seen


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME holding a .bashrc and a .zshrc whose last line has no newline."""
    home = tmp_path / "home"
    (home / "code").mkdir(parents=True)
    (home / ".bashrc").write_text("# mine\nalias ll='ls -l'\n")
    (home / ".zshrc").write_text("setopt no_beep")
    for key, value in _env(home).items():
        monkeypatch.setenv(key, value)
    return home


def _setup(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("setup", *args, cwd=home, env={**_env(home), "PATH": "/usr/bin:/bin"})


def test_setup_makes_each_change_once_and_undo_leaves_home_as_it_was(home: Path) -> None:
    before = snapshot(home)
    made = _setup(home, "--yes", "--watch", str(home / "code"), "--shell", "bash")
    ws = home / ".local" / "share" / "nerve"
    lines = made.stdout.splitlines()
    assert f"+ make the workspace {ws}" in lines
    assert f"+ add to {home / '.bashrc'}: {rc_line('bash', hook_path(ws, 'bash'))}" in lines
    assert (home / ".config" / "nerve" / "workspace").read_text() == f"{ws}\n"
    assert f'paths: ["{home / "code"}"]' in (ws / "nerve.yaml").read_text()
    assert (home / ".config" / "systemd" / "user" / "nerve.service").is_file()
    assert (home / ".bashrc").read_text().endswith(rc_line("bash", hook_path(ws, "bash")) + "\n")
    # a second run makes nothing
    assert _setup(home, "--yes", "--shell", "bash").stdout.startswith("nothing to do")
    # every change, and only those, outside the workspace, the rc files and the service folder
    changed = {p for p, v in snapshot(home).items() if before.get(p) != v}
    outside = {p for p in changed if not p.startswith((".local", ".config"))}
    assert outside == {".bashrc"}
    undone = _setup(home, "--undo", "--yes")
    assert "- take back: make the workspace" in undone.stdout
    assert snapshot(home) == before


def test_the_rc_line_keeps_a_file_without_a_last_newline_byte_identical(home: Path) -> None:
    before = (home / ".zshrc").read_bytes()
    _setup(home, "--yes", "--shell", "zsh", "--no-service")
    assert (home / ".zshrc").read_text().startswith("setopt no_beep\n[ -r ")
    _setup(home, "--undo", "--yes")
    assert (home / ".zshrc").read_bytes() == before


def test_commands_outside_any_workspace_use_the_user_workspace(home: Path) -> None:
    _setup(home, "--yes", "--shell", "bash", "--no-service")
    ws = home / ".local" / "share" / "nerve"
    elsewhere = home / "code"
    run_cli("emit", "--source", "shell", "--line", "from elsewhere", cwd=elsewhere)
    shown = run_cli("status", cwd=elsewhere, check=False)
    assert shown.returncode == 3
    assert shown.stdout.splitlines()[0] == (
        f"workspace {ws} (your workspace, named in {home / '.config' / 'nerve' / 'workspace'})"
    )
    assert "from elsewhere" in run_cli("tail", cwd=elsewhere).stdout
    # --workspace, NERVE_WORKSPACE and a nerve.yaml above the folder still win
    other = home / "other"
    run_cli("init", str(other))
    assert (
        f"workspace {other} (--workspace)"
        in run_cli("status", "-w", str(other), check=False).stdout
    )
    env = {**_env(home), "NERVE_WORKSPACE": str(other)}
    assert "(NERVE_WORKSPACE)" in run_cli("status", cwd=elsewhere, env=env, check=False).stdout
    assert f"(nerve.yaml in {other})" in run_cli("status", cwd=other, check=False).stdout


def test_without_setup_a_folder_outside_any_workspace_is_still_a_usage_error(home: Path) -> None:
    proc = run_cli("tail", cwd=home, check=False)
    assert proc.returncode == 2 and "nerve setup" in proc.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_rc_line_is_silent_when_the_hook_file_is_gone(tmp_path: Path, shell: str) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"needs {shell}")
    rc = tmp_path / "rc"
    strict = "" if shell == "fish" else "set -eu\n"
    rc.write_text(strict + rc_line(shell, tmp_path / "gone" / f"hook.{shell}") + "\necho ok\n")
    argv = (
        [shell, "--no-config"] if shell == "fish" else [shell, "-f"] if shell == "zsh" else [shell]
    )
    proc = subprocess.run(
        [*argv, "-c", f"source {rc}"],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
    )
    assert (proc.returncode, proc.stdout.strip(), proc.stderr) == (0, "ok", "")


def test_an_upgrade_rewrites_the_hook_files_an_older_nerve_wrote(home: Path) -> None:
    _setup(home, "--yes", "--shell", "bash", "--no-service")
    ws = home / ".local" / "share" / "nerve"
    path = hook_path(ws, "bash")
    path.write_text(path.read_text().replace(f"# nerve {__version__} ", "# nerve 0.0.1 ", 1))
    assert refresh_hooks(ws, NERVE) == [path]
    assert written_version(path.read_text()) == __version__
    assert refresh_hooks(ws, NERVE) == []


def test_the_hook_file_appends_to_the_workspace_spool_and_names_this_nerve(home: Path) -> None:
    _setup(home, "--yes", "--shell", "bash", "--no-service")
    ws = home / ".local" / "share" / "nerve"
    text = hook_path(ws, "bash").read_text()
    assert f"alias nerve='{NERVE}'" in text
    assert f"__nerve_spool='{ws}/shell/shell.spool'" in text
    assert f'spool: "{ws}/shell/shell.spool"' in (ws / "nerve.yaml").read_text()


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_the_systemd_unit_verifies(tmp_path: Path) -> None:
    ws = tmp_path / "my space"  # a space and a % in the paths are quoted
    ws.mkdir()
    unit = tmp_path / "nerve.service"
    unit.write_text(systemd_unit(NERVE, ws))
    proc = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(unit)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert f'ExecStart="{NERVE}" "--workspace" "{ws}" "daemon" "run"' in unit.read_text()
    assert "Restart=on-failure" in unit.read_text() and "KillMode=mixed" in unit.read_text()


def test_the_launchd_agent_is_a_valid_plist_naming_this_nerve(tmp_path: Path) -> None:
    agent = plistlib.loads(launchd_plist(NERVE, tmp_path).encode())
    assert agent["ProgramArguments"] == [str(NERVE), "--workspace", str(tmp_path), "daemon", "run"]
    assert agent["Label"] == "org.nerve.daemon" and agent["RunAtLoad"] is True
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    env = {"HOME": str(tmp_path)}
    placed = service_file(NERVE, tmp_path, env, "darwin")
    assert placed.path == tmp_path / "Library" / "LaunchAgents" / "org.nerve.daemon.plist"


def test_on_macos_setup_uses_application_support_and_launchctl(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def run(argv: object) -> subprocess.CompletedProcess[str]:
        calls.append(list(argv))  # type: ignore[call-overload]
        return subprocess.CompletedProcess(argv, 0, "", "")

    places = Places({"HOME": str(tmp_path), "PATH": ""}, "darwin", NERVE)
    steps = plan(places, shells=["zsh"])
    make(steps, places, lambda _line: None, Manager("darwin", run))
    support = tmp_path / "Library" / "Application Support" / "nerve"
    assert (support / "nerve.yaml").is_file() and (support / "workspace").is_file()
    assert (tmp_path / "Library" / "LaunchAgents" / "org.nerve.daemon.plist").is_file()
    assert calls == [["launchctl", "bootstrap", f"gui/{os.getuid()}", str(steps[-1].path)]]

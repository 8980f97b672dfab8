"""The user service that runs ``nerve daemon run`` from login to logout and restarts it after
a crash: a systemd user unit on Linux, a launchd agent on macOS.

Linux: ``$XDG_CONFIG_HOME/systemd/user/nerve.service`` (else ``~/.config/systemd/user``),
started with ``systemctl --user enable --now nerve.service``; its output goes to the user
journal (``journalctl --user -u nerve.service``). macOS:
``~/Library/LaunchAgents/org.nerve.daemon.plist``, started with ``launchctl bootstrap
gui/UID``; its output goes to ``service.log`` in the workspace. Where the service manager
cannot be reached (no ``systemd --user``, a container) the file is still put in place and the
message says so; ``nerve daemon start`` runs the daemon meanwhile.
"""

from __future__ import annotations

import os
import plistlib
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from nerve import userdirs

__all__ = [
    "LABEL",
    "UNIT",
    "Manager",
    "ServiceFile",
    "launchd_plist",
    "service_file",
    "systemd_unit",
]

UNIT = "nerve.service"
LABEL = "org.nerve.daemon"

Run = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def _run(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """Run a service manager's command, its output captured (a missing program: exit 127; no
    answer within 30 s: exit 124, as ``timeout`` says it)."""
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=30, check=False)
    except FileNotFoundError:
        return subprocess.CompletedProcess(list(argv), 127, "", f"{argv[0]}: not found")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(list(argv), 124, "", f"{argv[0]}: no answer in 30 s")


def _unit_word(text: str) -> str:
    """``text`` as one double-quoted word of a systemd command line."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("%", "%%").replace("$", "$$") + '"'


def daemon_argv(nerve: Path, workspace: Path) -> list[str]:
    """What the service runs: this nerve's daemon, in the foreground, on ``workspace``."""
    return [str(nerve), "--workspace", str(workspace), "daemon", "run"]


def systemd_unit(nerve: Path, workspace: Path) -> str:
    """The systemd user unit's text.

    ``KillMode=mixed``: a stop sends SIGTERM to the daemon alone, which stops its workers in
    order (:mod:`nerve.runtime.children`); whatever is left once it has exited is killed."""
    command = " ".join(_unit_word(word) for word in daemon_argv(nerve, workspace))
    return (
        "# written by `nerve setup` (`nerve setup --undo` removes it)\n"
        "[Unit]\n"
        f"Description=nerve daemon for {workspace}\n"
        "\n[Service]\n"
        "Type=simple\n"
        f"ExecStart={command}\n"
        "KillMode=mixed\n"
        "Restart=on-failure\n"
        "RestartSec=5\n"
        "\n[Install]\n"
        "WantedBy=default.target\n"
    )


def launchd_plist(nerve: Path, workspace: Path) -> str:
    """The launchd agent's property list."""
    agent = {
        "Label": LABEL,
        "ProgramArguments": daemon_argv(nerve, workspace),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "WorkingDirectory": str(workspace),
        "StandardOutPath": str(workspace / "service.log"),
        "StandardErrorPath": str(workspace / "service.log"),
    }
    return plistlib.dumps(agent).decode("utf-8")


@dataclass(frozen=True)
class ServiceFile:
    """Where the service's file goes on this platform, and its text."""

    path: Path
    text: str


def service_file(
    nerve: Path,
    workspace: Path,
    environ: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> ServiceFile:
    """The unit (Linux) or agent (macOS) for ``workspace``, and where it is installed."""
    if userdirs.is_mac(platform):
        folder = userdirs.home(environ) / "Library" / "LaunchAgents"
        return ServiceFile(folder / f"{LABEL}.plist", launchd_plist(nerve, workspace))
    config = userdirs.config_home(environ, platform).parent
    return ServiceFile(config / "systemd" / "user" / UNIT, systemd_unit(nerve, workspace))


class Manager:
    """The platform's service manager, told to start, stop, show and read the service.

    ``run`` runs one command (a test passes a recorder); each method returns the manager's
    answer as text and whether it succeeded."""

    def __init__(self, platform: str | None = None, run: Run | None = None) -> None:
        self.mac = userdirs.is_mac(platform)
        self.run = run or _run

    def _target(self) -> str:
        return f"gui/{os.getuid()}"

    def start(self, path: Path) -> tuple[bool, str]:
        """Load and start the installed service file."""
        if self.mac:
            return self._all([["launchctl", "bootstrap", self._target(), str(path)]])
        return self._all(
            [
                ["systemctl", "--user", "daemon-reload"],
                ["systemctl", "--user", "enable", "--now", UNIT],
            ]
        )

    def stop(self) -> tuple[bool, str]:
        """Stop the service and unload it (before its file is removed)."""
        if self.mac:
            return self._all([["launchctl", "bootout", f"{self._target()}/{LABEL}"]])
        return self._all([["systemctl", "--user", "disable", "--now", UNIT]])

    def status(self) -> tuple[bool, str]:
        """The manager's own account of the service."""
        if self.mac:
            return self._all([["launchctl", "print", f"{self._target()}/{LABEL}"]])
        return self._all([["systemctl", "--user", "status", "--no-pager", UNIT]])

    def logs(self, workspace: Path, lines: int) -> tuple[bool, str]:
        """The service's recent output (empty when the journal holds none: no journald)."""
        if self.mac:
            return self._all([["tail", "-n", str(lines), str(workspace / "service.log")]])
        argv = ["journalctl", "--user", "-u", UNIT, "-n", str(lines), "--no-pager", "-q"]
        return self._all([argv])

    def _all(self, commands: list[list[str]]) -> tuple[bool, str]:
        """Run ``commands`` in turn until one fails; whether all ran, and what they said."""
        said = []
        for argv in commands:
            done = self.run(argv)
            said.append((done.stdout + done.stderr).strip())
            if done.returncode != 0:
                return False, "\n".join(s for s in said if s)
        return True, "\n".join(s for s in said if s)

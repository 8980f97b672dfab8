"""A real desktop's notification service for tests: Xvfb, a D-Bus session bus of its own and
Debian's dunst, which prints each notification it shows (``-print``) and runs a notification's
action through its context menu (``dunstctl context``, whose menu program here picks the
action a test names)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

TOOLS = ("Xvfb", "dbus-daemon", "dunst", "dunstctl")
PICK = """#!/bin/sh
cat > "{menu}"
grep -F -- "$(sed -n 1p "{choice}")" "{menu}" | grep -m1 -F -- "$(sed -n 2p "{choice}")"
"""
RC = """[global]
    dmenu = {pick}
[urgency_normal]
    timeout = 0
"""


@dataclass
class Desk:
    env: dict[str, str]  # DISPLAY and DBUS_SESSION_BUS_ADDRESS, over os.environ
    printed: Path
    choice: Path

    def notifications(self) -> list[dict[str, str]]:
        """Each notification dunst showed: its summary, body and app name."""
        text = self.printed.read_text(errors="replace") if self.printed.exists() else ""
        found = []
        for block in text.split("\n}\n"):
            fields = dict(re.findall(r"^\s*(summary|body|appname): '(.*)'$", block, re.M))
            if "summary" in fields:
                found.append(fields)
        return found

    def press(self, title: str, summary: str = "") -> None:
        """Run the action titled ``title`` of a shown notification (the newest, or the one
        whose summary is ``summary``), as a person would. A notification's first action
        uses it up: desktop-notifier forgets it then, as the person's click closes it."""
        self.choice.write_text(f"{title}\n{summary}\n")
        subprocess.run(["dunstctl", "context"], env=self.env, check=True, timeout=20)


def _up(env: dict[str, str]) -> bool:
    done = subprocess.run(["dunstctl", "is-paused"], env=env, capture_output=True, timeout=10)
    return done.returncode == 0


@contextlib.contextmanager
def notification_desk(tmp: Path) -> Iterator[Desk]:
    """Xvfb + a session bus + dunst, torn down after."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing {', '.join(missing)} (.ci/run installs them)")
    tmp.mkdir(parents=True, exist_ok=True)
    read_end, write_end = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-screen", "0", "800x600x24", "-nolisten", "tcp", "-displayfd", str(write_end)],
        stderr=subprocess.DEVNULL,
        pass_fds=(write_end,),
    )
    os.close(write_end)
    with os.fdopen(read_end) as chosen:
        display = f":{chosen.readline().strip()}"
    bus = subprocess.run(
        ["dbus-daemon", "--session", "--print-address=1", "--print-pid=1", "--fork"],
        capture_output=True, text=True, check=True, timeout=20,
    )  # fmt: skip
    address, pid = bus.stdout.split()[:2]
    env = {**os.environ, "DISPLAY": display, "DBUS_SESSION_BUS_ADDRESS": address}
    choice, menu, pick = tmp / "choice", tmp / "menu", tmp / "pick.sh"
    pick.write_text(PICK.format(menu=menu, choice=choice))
    pick.chmod(0o755)
    (tmp / "dunstrc").write_text(RC.format(pick=pick))
    printed = tmp / "dunst.out"
    with printed.open("w") as out:
        dunst = subprocess.Popen(
            ["dunst", "-config", str(tmp / "dunstrc"), "-print"],
            env=env, stdout=out, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not _up(env):
            assert time.monotonic() < deadline, "dunst did not come up"
            time.sleep(0.1)
        yield Desk(env, printed, choice)
    finally:
        for proc in (dunst, xvfb):
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGTERM)

"""A real ``systemd --user`` for tests, started as root in a private mount namespace.

systemd decides it was "booted with systemd" when ``/run/systemd/system`` exists; that folder
must never be made on the host itself (other tools would think systemd is PID 1), so the
manager runs in its own mount namespace (``unshare -m``) in which a temporary folder holding
an empty ``system/`` is bind-mounted over ``/run/systemd``. It is first moved into cgroups of
its own (one per mounted hierarchy), where it makes its slices. ``HOME`` and
``XDG_RUNTIME_DIR`` are temporary folders. Every command that speaks to it runs in the same
namespace (``nsenter -t PID -m``); from the host's, ``systemctl --user`` says ``offline``.

Teardown: ``systemctl --user exit`` (the manager stops its units), SIGKILL for whatever is
left in its cgroups, the cgroups removed; the mount goes with the namespace's last process.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

SYSTEMD = Path("/lib/systemd/systemd")
CGROUPS = Path("/sys/fs/cgroup")
START_S = 15.0

# The shell run inside the new namespace: join the cgroups, mount, then become the manager.
_START = """set -e
for group in "$@"; do echo $$ > "$group/cgroup.procs"; done
mount --bind "$NERVE_TEST_RUN" /run/systemd
exec "$NERVE_TEST_SYSTEMD" --user
"""


def why_not() -> str | None:
    """Why a real ``systemd --user`` cannot run here, or None when it can."""
    if os.geteuid() != 0:
        return "needs root (a mount namespace and cgroups of its own)"
    if not SYSTEMD.is_file():
        return f"needs systemd ({SYSTEMD} is not there)"
    for tool in ("unshare", "nsenter", "mount"):
        if shutil.which(tool) is None:
            return f"needs {tool} (util-linux)"
    if not cgroup_roots():
        return f"no writable cgroup hierarchy under {CGROUPS}"
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare -m fails here: {probe.stderr.strip()}"
    return None


def cgroup_roots() -> list[Path]:
    """The cgroup hierarchies a manager needs a group in: the unified one and the named
    ``systemd`` one on a hybrid layout, the root alone on a pure cgroup v2 one."""
    hybrid = [CGROUPS / "unified", CGROUPS / "systemd"]
    found = [root for root in hybrid if (root / "cgroup.procs").is_file()]
    if not found and (CGROUPS / "cgroup.controllers").is_file():
        found = [CGROUPS]
    return [root for root in found if os.access(root, os.W_OK)]


class UserManager:
    """A running ``systemd --user``: its pid, its HOME and runtime folder, and a way to run
    commands where it can be reached."""

    def __init__(self, proc: subprocess.Popen[bytes], home: Path, runtime: Path) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.home = home
        self.runtime = runtime

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment a command of this user gets: HOME, the runtime folder, a plain
        PATH and nothing of the XDG folders of the test's own user."""
        return {
            "HOME": str(self.home),
            "XDG_RUNTIME_DIR": str(self.runtime),
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
            **(extra or {}),
        }

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` in the manager's mount namespace with :meth:`env`."""
        words = [f"{k}={v}" for k, v in self.env(env).items()]
        full = ["nsenter", "-t", str(self.pid), "-m", "--", "env", "-i", *words, *argv]
        return subprocess.run(
            full, cwd=cwd or self.home, capture_output=True, text=True, timeout=timeout
        )

    def systemctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``systemctl --user ARGS`` spoken to this manager."""
        return self.run(["systemctl", "--user", *args])

    def show(self, unit: str, *props: str) -> dict[str, str]:
        """Properties of ``unit`` as the manager has them (``MainPID``, ``ActiveState`` …)."""
        said = self.systemctl("show", "-p", ",".join(props), unit).stdout
        return dict(line.split("=", 1) for line in said.splitlines() if "=" in line)

    def wait_running(self, timeout: float = START_S) -> str:
        """Wait until the manager says it is up (``running``, or ``degraded`` with a unit
        failed); what it said last."""
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline and self.proc.poll() is None:
            state = self.systemctl("is-system-running").stdout.strip()
            if state in ("running", "degraded"):
                return state
            time.sleep(0.1)
        return state


@contextlib.contextmanager
def systemd_user(folder: Path, home: Path) -> Iterator[UserManager]:
    """A ``systemd --user`` for ``home``, its runtime and mount folders in ``folder``; raises
    ``RuntimeError`` with its output when it does not come up."""
    runtime, run = folder / "runtime", folder / "run-systemd"
    runtime.mkdir(mode=0o700)
    (run / "system").mkdir(parents=True)
    name = f"nerve-test-{os.getpid()}-{secrets.token_hex(3)}"
    groups = [root / name for root in cgroup_roots()]
    for group in groups:
        group.mkdir()
    out = (folder / "systemd.out").open("wb")
    env = {
        "HOME": str(home),
        "XDG_RUNTIME_DIR": str(runtime),
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "NERVE_TEST_RUN": str(run),
        "NERVE_TEST_SYSTEMD": str(SYSTEMD),
    }
    argv = ["unshare", "-m", "--propagation", "private", "sh", "-c", _START, "start"]
    proc = subprocess.Popen(
        [*argv, *map(str, groups)], env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out
    )
    manager = UserManager(proc, home, runtime)
    try:
        state = manager.wait_running()
        if state not in ("running", "degraded"):
            said = (folder / "systemd.out").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"systemd --user did not come up ({state or 'no answer'}): {said}")
        yield manager
    finally:
        _stop(manager, groups)
        out.close()


def _stop(manager: UserManager, groups: list[Path]) -> None:
    """Stop the manager and everything it started, and remove its cgroups."""
    if manager.proc.poll() is None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            manager.systemctl("exit")
            manager.proc.wait(timeout=10)
    if manager.proc.poll() is None:
        manager.proc.kill()
        manager.proc.wait()
    for group in groups:
        _remove_group(group)


def _remove_group(group: Path) -> None:
    """SIGKILL every process left in ``group`` and its children, then remove them, deepest
    first (a killed process leaves its group a moment later)."""
    folders = sorted((p for p in group.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
    deadline = time.monotonic() + 5
    for each in [*folders, group]:
        while each.exists():
            try:
                for pid in (each / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
                each.rmdir()
            except FileNotFoundError:
                break  # the manager removed it meanwhile
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

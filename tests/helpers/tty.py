"""Run the real CLI with its stdout on a pseudo-terminal, as a person's shell would."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import selectors
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path


class TtyProcess:
    """``nerve ARGS`` with stdout on a pty of ``columns`` × 24 and stderr on a pipe."""

    def __init__(self, *args: str, columns: int = 100, env: dict[str, str] | None = None) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        self.master, self.output = master, b""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nerve", *args],
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=subprocess.PIPE,
            env={**os.environ, "TERM": "xterm-256color", **(env or {})},
            cwd=Path(__file__).resolve().parents[2],
        )
        os.close(slave)

    def read_until(self, done: object, timeout: float = 30) -> str:
        """Read until ``done(text)`` is true (``None``: until the process closes the pty)."""
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(self.master, selectors.EVENT_READ)
            while done is None or not done(self.text):  # type: ignore[operator]
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise AssertionError(f"timed out; the terminal showed {self.text!r}")
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    chunk = b""
                if not chunk:
                    if done is None:
                        break
                    raise AssertionError(f"the terminal closed after {self.text!r}")
                self.output += chunk
        return self.text

    @property
    def text(self) -> str:
        """What the terminal showed, styles (SGR sequences) taken out; other escapes kept."""
        shown = self.output.decode("utf-8", "replace").replace("\r\n", "\n")
        return re.sub(r"\x1b\[[0-9;]*m", "", shown)

    def finish(self, timeout: float = 60) -> tuple[str, str, int]:
        """Wait for the process to exit; its terminal text, stderr and exit code."""
        self.read_until(None, timeout)
        _, err = self.proc.communicate(timeout=timeout)
        os.close(self.master)
        return self.text, err.decode(), self.proc.returncode

    def kill(self) -> str:
        self.proc.kill()
        _, err = self.proc.communicate()
        os.close(self.master)
        return err.decode()


def run_tty(
    *args: str, columns: int = 100, env: dict[str, str] | None = None
) -> tuple[str, str, int]:
    return TtyProcess(*args, columns=columns, env=env).finish()

"""Read a child process's stdout line by line with a deadline: a silent child fails the
test with what it did print, instead of blocking it in ``readline()``."""

from __future__ import annotations

import os
import selectors
import subprocess
import time


class LineReader:
    """Whole lines from ``proc.stdout`` (opened in binary mode)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        self.fd, self.buffer = proc.stdout.fileno(), b""

    def take(self, count: int, timeout: float) -> list[str]:
        """The next ``count`` lines; raise ``AssertionError`` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(self.fd, selectors.EVENT_READ)
            while self.buffer.count(b"\n") < count:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise AssertionError(f"{count} lines not read in {timeout} s: {self.buffer!r}")
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    raise AssertionError(f"stdout closed after {self.buffer!r}")
                self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n", count)
        return [line.decode("utf-8") for line in lines]

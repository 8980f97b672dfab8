"""The single-writer lock: an OS advisory lock on ``data/log/LOCK`` naming its holder."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path

from nerve import fsio
from nerve.errors import WriterLocked


class WriterLock:
    """Held for the life of a writer; the OS drops it if the process dies."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = fsio.open_file(path, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = describe_holder(path)
            os.close(self._fd)
            raise WriterLocked(
                f"the event log at {path.parent} already has a writer: {holder}",
                hint="stop that process, or write through it (`nerve emit` does so for a daemon)",
            ) from None
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "argv": " ".join(sys.argv[:4]),
            "since_ns": time.time_ns(),
        }
        with contextlib.suppress(OSError):  # the name is a courtesy; the lock is what counts
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, json.dumps(info).encode(), 0)

    def release(self) -> None:
        if self._fd >= 0:
            try:
                with contextlib.suppress(OSError):  # a disk error must not keep the lock held
                    os.ftruncate(self._fd, 0)
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = -1


def describe_holder(path: Path) -> str:
    """Who holds the lock, as far as the lock file says."""
    try:
        info = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        info = {}
    if not info:
        return "another process (it has not written its name yet)"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.get("since_ns", 0) / 1e9))
    return f"pid {info.get('pid')} on {info.get('host')} ({info.get('argv')}) since {since}"

"""Which files and folders a block of code fsyncs: ``os.fsync`` and ``os.fdatasync``
patched to note the path each synced descriptor names (read from ``/proc/self/fd``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def synced_paths() -> Iterator[list[str]]:
    """Yields the list of paths synced in the block, in order (the real sync still runs)."""
    synced: list[str] = []
    real = {name: getattr(os, name) for name in ("fsync", "fdatasync")}

    def noting(call: Callable[[int], Any]) -> Callable[[Any], Any]:
        def sync(fd: Any) -> Any:
            number = fd if isinstance(fd, int) else fd.fileno()
            synced.append(os.readlink(f"/proc/self/fd/{number}"))
            return call(fd)

        return sync

    for name, call in real.items():
        setattr(os, name, noting(call))
    try:
        yield synced
    finally:
        for name, call in real.items():
            setattr(os, name, call)

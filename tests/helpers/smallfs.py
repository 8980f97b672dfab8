"""A small tmpfs to fill up: a real full disk for tests (skipped where mounting is not allowed)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_tmpfs(mnt: Path, size: str = "4m") -> Iterator[Path]:
    mnt.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip() or 'not permitted'}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(folder: Path, leave: int) -> None:
    """A ballast file taking all but about ``leave`` bytes of the file system."""
    stats = os.statvfs(folder)
    with (folder / "ballast").open("wb") as f:
        f.write(b"\0" * max(0, stats.f_bavail * stats.f_frsize - leave))

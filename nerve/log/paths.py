"""Where a log's files live, under its root (a workspace's ``data/log``)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from nerve import fsio
from nerve.log import segments as seg
from nerve.log.wal import wal_gen


@dataclass(frozen=True)
class LogPaths:
    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.jsonl"

    @property
    def segments(self) -> Path:
        return self.root / "segments"

    @property
    def wal(self) -> Path:
        return self.root / "wal"

    @property
    def lock(self) -> Path:
        return self.root / "LOCK"

    @property
    def quarantine(self) -> Path:
        return self.root / "quarantine"

    def segment(self, name: str) -> Path:
        return seg.segment_path(self.segments, name)

    def wal_files(self) -> list[tuple[int, Path]]:
        if not self.wal.is_dir():
            return []
        found = [(wal_gen(p), p) for p in self.wal.iterdir()]
        return sorted((g, p) for g, p in found if g is not None)

    def ensure(self) -> None:
        """Create the folders owner-only; refuse a symlink planted at any of them."""
        for folder in (self.root, self.segments, self.wal):
            fsio.private_dir(folder)

    def tighten(self) -> None:
        """Make files an older nerve wrote world-readable owner-only."""
        for folder in (self.segments, self.wal):
            for path in folder.iterdir():
                with contextlib.suppress(OSError):
                    if not path.is_symlink() and path.stat().st_mode & 0o077:
                        os.chmod(path, fsio.FILE_MODE)

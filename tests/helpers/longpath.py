"""Paths of an exact length in bytes, for sockets past ``sun_path``'s 107."""

from __future__ import annotations

import os
from pathlib import Path


def path_of(base: Path, size: int, tail: str = "nerve.sock") -> Path:
    """A path of exactly ``size`` bytes under ``base`` ending in ``tail``, through folders of
    at most 200 bytes (a file name may hold 255)."""
    room = size - len(os.fsencode(base / tail))
    assert room >= 2, f"{base} leaves no room for a {size}-byte path"
    path = base
    while room > 256:
        path, room = path / ("d" * 200), room - 201
    path = path / ("e" * (room - 1)) / tail
    assert len(os.fsencode(path)) == size
    return path

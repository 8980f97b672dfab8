"""Reading ``nerve.yaml`` and sense code for a reload, and the records a reload leaves.

A bad edit is refused whole (``config.rejected``, naming what is wrong) and the running
configuration is kept; a good one is recorded as ``config.loaded``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from nerve.config import load_config
from nerve.config.issues import InvalidConfig
from nerve.config.models import NerveConfig
from nerve.errors import NerveError
from nerve.runtime.senses import Layout, check_sense_file, layout
from nerve.workspace import WorkspaceDir

# What a hostile or broken file may raise while it is read (a reload must survive each).
READ_ERRORS = (NerveError, ValueError, RecursionError, MemoryError)


def read_config(ws: WorkspaceDir) -> NerveConfig:
    """``nerve.yaml`` parsed and checked, and every sense file it names readable."""
    config = load_config(ws.config_path)
    for group in layout(ws, config).specs.values():
        for spec in group.values():
            check_sense_file(Path(spec.path))
    return config


def rejected(exc: BaseException, reason: str) -> tuple[str, dict[str, Any]]:
    """The ``config.rejected`` record's line and payload."""
    issues = [str(i) for i in exc.issues] if isinstance(exc, InvalidConfig) else []
    line = f"edit rejected: {str(exc).splitlines()[0]}"
    return line, {"error": str(exc), "issues": issues, "reason": reason}


def loaded(config: NerveConfig, lay: Layout, reason: str) -> tuple[str, dict[str, Any]]:
    """The ``config.loaded`` record's line and payload."""
    payload = {
        "reason": reason,
        "senses": sorted(config.senses),
        "groups": sorted(lay.specs),
        "workflows": sorted(config.workflows),
    }
    return f"configuration loaded ({reason})", payload


def stamp(path: Path) -> tuple[int, int, int] | None:
    """What tells an edited file from the one read before: inode, size and change time."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


async def edited_since(
    ws: WorkspaceDir, seen: tuple[int, int, int] | None, config: NerveConfig
) -> tuple[NerveConfig, BaseException | None]:
    """nerve.yaml again if it was edited since ``seen`` (the socket answers while the daemon
    warms up, so an edit may land meanwhile); a bad edit keeps ``config`` and says why."""
    if stamp(ws.config_path) == seen:
        return config, None
    try:
        return await asyncio.to_thread(read_config, ws), None
    except READ_ERRORS as exc:
        return config, exc

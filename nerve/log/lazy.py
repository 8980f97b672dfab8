"""``pyarrow.compute`` and ``pyarrow.parquet``, imported when first used rather than with
the log.

Importing ``pyarrow.compute`` wraps every Arrow compute function in Python (~50 ms), and
``pyarrow.parquet`` brings Arrow's filesystems and OpenSSL (~100 ms): a command that appends
one event or reads a chain link uses neither, so the log's modules reach them through
``pc`` and ``pq``.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["pc", "pq"]


class _Lazy:
    def __init__(self, module: str) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(importlib.import_module(self._module), name)
        setattr(self, name, value)  # found directly from now on
        return value


pc: Any = _Lazy("pyarrow.compute")
pq: Any = _Lazy("pyarrow.parquet")
